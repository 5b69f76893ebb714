/* svg.c - minimal SVG writer for the report (see svg.h). */
#include "svg.h"

#include <math.h>

/* Keeps every coordinate finite and within reach of a renderer, whatever the
 * data (huge values, sums that overflow to infinity). */
static double cl(double v)
{
	return isnan(v) ? 0 : fmin(fmax(v, -1e6), 1e6);
}

void svg_escape(FILE *f, const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		switch (*p) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			if (*p >= 0x20 && *p != 0x7f)
				fputc(*p, f);
		}
	}
}

void svg_begin(FILE *f, double width, double height, const char *title)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f,
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
	        "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, "
	        "Arial, sans-serif\">\n",
	        width, height, width, height);
	fputs("<title>", f);
	svg_escape(f, title);
	fputs("</title>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width,
	        height);
}

void svg_end(FILE *f)
{
	fputs("</svg>\n", f);
}

void svg_text(FILE *f, double x, double y, const char *anchor, double size, const char *weight,
              const char *fill, const char *text)
{
	fprintf(f,
	        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%.1f\" "
	        "font-weight=\"%s\" fill=\"%s\">",
	        cl(x), cl(y), anchor, size, weight, fill);
	svg_escape(f, text);
	fputs("</text>\n", f);
}

static void style_attrs(FILE *f, const svg_style *s)
{
	fprintf(f, " stroke=\"%s\" fill=\"%s\"", s->stroke ? s->stroke : "none",
	        s->fill ? s->fill : "none");
	if (s->stroke)
		fprintf(f, " stroke-width=\"%.2f\"", s->width > 0 ? s->width : 1.0);
	if (s->dash)
		fprintf(f, " stroke-dasharray=\"%s\"", s->dash);
	if (s->fill && s->opacity > 0)
		fprintf(f, " fill-opacity=\"%.2f\"", s->opacity);
}

void svg_line(FILE *f, double x1, double y1, double x2, double y2, const svg_style *s)
{
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"", cl(x1), cl(y1), cl(x2),
	        cl(y2));
	style_attrs(f, s);
	fputs("/>\n", f);
}

void svg_rect(FILE *f, double x, double y, double w, double h, const svg_style *s)
{
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", cl(x), cl(y),
	        fmax(cl(w), 0), fmax(cl(h), 0));
	style_attrs(f, s);
	fputs("/>\n", f);
}

void svg_polyline(FILE *f, const double *x, const double *y, size_t n, const svg_style *s)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && !isfinite(y[i]))
			i++;
		if (i >= n)
			break;
		fputs("<polyline points=\"", f);
		for (; i < n && isfinite(y[i]); i++)
			fprintf(f, "%.1f,%.1f ", cl(x[i]), cl(y[i]));
		fputs("\"", f);
		style_attrs(f, s);
		fputs(" stroke-linejoin=\"round\"/>\n", f);
	}
}

void svg_band(FILE *f, const double *x, const double *ytop, const double *ybot, size_t n,
              const svg_style *s)
{
	if (n == 0)
		return;
	fputs("<polygon points=\"", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%.1f,%.1f ", cl(x[i]), cl(ytop[i]));
	for (size_t i = n; i-- > 0;)
		fprintf(f, "%.1f,%.1f ", cl(x[i]), cl(ybot[i]));
	fputs("\"", f);
	style_attrs(f, s);
	fputs("/>\n", f);
}

double svg_nice_step(double range, int ticks)
{
	if (!(range > 0) || !isfinite(range))
		return 1;
	double raw = range / (ticks > 0 ? ticks : 1);
	double mag = pow(10, floor(log10(raw)));
	double r = raw / mag;
	double nice = r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10;
	return nice * mag;
}

void svg_fmt_tick(double v, double step, char *buf, size_t cap)
{
	if (fabs(v) < step * 1e-9)
		v = 0;
	int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
	if (decimals > 9)
		decimals = 9;
	if (fabs(v) >= 1e7)
		snprintf(buf, cap, "%.3g", v);
	else
		snprintf(buf, cap, "%.*f", decimals, v);
}

void svg_steps(FILE *f, const double *x, const double *y, size_t n, double base, const svg_style *s)
{
	if (n < 2)
		return;
	fprintf(f, "<polygon points=\"%.1f,%.1f ", cl(x[0]), cl(base));
	for (size_t i = 1; i < n; i++) {
		double v = isfinite(y[i]) ? y[i] : base;
		fprintf(f, "%.1f,%.1f %.1f,%.1f ", cl(x[i - 1]), cl(v), cl(x[i]), cl(v));
	}
	fprintf(f, "%.1f,%.1f\"", cl(x[n - 1]), cl(base));
	style_attrs(f, s);
	fputs("/>\n", f);
}
