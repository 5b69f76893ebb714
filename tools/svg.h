/* svg.h - the few SVG primitives `ringfeed report` draws with: text (escaped),
 * lines, rectangles, polylines and polygons, and "nice" axis ticks. No
 * plotting dependency: the file is plain SVG 1.1 text. */
#ifndef RF_TOOLS_SVG_H
#define RF_TOOLS_SVG_H

#include <stddef.h>
#include <stdio.h>

typedef struct svg_style {
	const char *stroke; /* NULL: none */
	const char *fill;   /* NULL: none */
	double width;
	const char *dash; /* NULL: solid */
	double opacity;   /* fill opacity; 0 means 1 */
} svg_style;

void svg_begin(FILE *f, double width, double height, const char *title);
void svg_end(FILE *f);
/* anchor: "start", "middle" or "end"; weight "normal" or "bold". */
void svg_text(FILE *f, double x, double y, const char *anchor, double size, const char *weight,
              const char *fill, const char *text);
/* Writes text with &, <, >, " escaped and control bytes dropped. */
void svg_escape(FILE *f, const char *text);
void svg_line(FILE *f, double x1, double y1, double x2, double y2, const svg_style *s);
void svg_rect(FILE *f, double x, double y, double w, double h, const svg_style *s);
/* Polyline through n points; points with a non-finite y break the line. */
void svg_polyline(FILE *f, const double *x, const double *y, size_t n, const svg_style *s);
/* Closed polygon between the curves ytop and ybot over x (area fill). */
void svg_band(FILE *f, const double *x, const double *ytop, const double *ybot, size_t n,
              const svg_style *s);
/* Step area over a baseline: interval i (x[i-1]..x[i]) at height y[i]; a
 * non-finite y[i] sits on the baseline. */
void svg_steps(FILE *f, const double *x, const double *y, size_t n, double base,
               const svg_style *s);

/* A tick step of 1, 2 or 5 x 10^k giving about `ticks` ticks over range. */
double svg_nice_step(double range, int ticks);
/* Formats a tick value without trailing noise ("0.25", "1500", "2e+06"). */
void svg_fmt_tick(double v, double step, char *buf, size_t cap);

#endif
