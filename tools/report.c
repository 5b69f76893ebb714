/* report.c - lays out the trace report (see report.h). Points beyond two per
 * pixel are merged into buckets: maxima for counts, bytes and coverage, sums
 * for waits, means for rates, so peaks and waits are never hidden. */
#include "report.h"
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define W          1000.0
#define PLOT_X     80.0
#define PLOT_W     690.0
#define LEGEND_X   790.0
#define HEADER_H   96.0
#define PANEL_H    205.0
#define PLOT_TOP   30.0 /* from the panel's top to the plot's top */
#define PLOT_H     140.0
#define PANELS     5
#define POINTS_MAX 1400 /* two per pixel */
#define TICKS_MAX  20   /* per axis; nice steps give about 4 to 10 */

enum {
	S_T,
	S_READY,
	S_DEPTH,
	S_INV,
	S_MEM0,
	S_BUDGET = S_MEM0 + TRACE_MEM_CATEGORIES,
	S_R,
	S_C,
	S_WAIT_PCT,
	S_COVER,
	S_FIELDS
};

typedef struct series {
	double *v[S_FIELDS];
	size_t n;
	double tmin, tmax;
} series;

typedef struct panel {
	double x0, y0, w, h; /* plot area */
	double tmin, tmax, ymax, ystep;
	int legend_items;
} panel;

static const char *const mem_color[TRACE_MEM_CATEGORIES] = {"#4C78A8", "#72B7B2", "#54A24B",
                                                            "#EECA3B", "#B279A2"};

static double max_or_nan(double a, double b)
{
	return isnan(a) ? b : isnan(b) ? a : fmax(a, b);
}

/* Merges trace points [a, b) into bucket j. */
static void bucket(const trace *t, size_t a, size_t b, double t_prev, series *s, size_t j)
{
	double wait = 0, r = 0, c = 0, nr = 0, nc = 0;
	for (int k = 1; k < S_FIELDS; k++)
		s->v[k][j] = k == S_R || k == S_C || k == S_COVER ? NAN : 0;
	for (size_t i = a; i < b; i++) {
		const trace_point *p = &t->pt[i];
		s->v[S_READY][j] = fmax(s->v[S_READY][j], p->ready);
		s->v[S_DEPTH][j] = fmax(s->v[S_DEPTH][j], p->depth);
		s->v[S_INV][j] = fmax(s->v[S_INV][j], p->ready + p->decoded + p->in_flight);
		for (int m = 0; m < TRACE_MEM_CATEGORIES; m++)
			s->v[S_MEM0 + m][j] = fmax(s->v[S_MEM0 + m][j], p->mem_bytes[m]);
		s->v[S_BUDGET][j] = fmax(s->v[S_BUDGET][j], p->budget_bytes);
		s->v[S_COVER][j] = max_or_nan(s->v[S_COVER][j], p->coverage_s);
		wait += p->wait_s;
		if (!isnan(p->r_bps))
			r += p->r_bps, nr++;
		if (!isnan(p->c_bps))
			c += p->c_bps, nc++;
	}
	s->v[S_T][j] = t->pt[b - 1].t_s;
	s->v[S_R][j] = nr ? r / nr : NAN;
	s->v[S_C][j] = nc ? c / nc : NAN;
	double span = s->v[S_T][j] - t_prev;
	s->v[S_WAIT_PCT][j] = span > 0 ? fmin(100.0, 100.0 * wait / span) : NAN;
}

static int series_build(const trace *t, series *s)
{
	size_t n = t->n < POINTS_MAX ? t->n : POINTS_MAX;
	memset(s, 0, sizeof(*s));
	double *mem = malloc(n * S_FIELDS * sizeof(double));
	if (!mem)
		return -ENOMEM;
	for (int k = 0; k < S_FIELDS; k++)
		s->v[k] = mem + (size_t)k * n;
	double t_prev = t->pt[0].t_s > 0 ? 0 : NAN;
	for (size_t j = 0; j < n; j++) {
		size_t a = j * t->n / n, b = (j + 1) * t->n / n;
		bucket(t, a, b, t_prev, s, j);
		t_prev = s->v[S_T][j];
	}
	s->n = n;
	/* the first line's interval runs from 0 (docs/trace.md): show it */
	s->tmin = t->pt[0].t_s > 0 ? 0 : t->pt[0].t_s;
	s->tmax = t->pt[t->n - 1].t_s;
	if (!(s->tmax > s->tmin))
		s->tmax = s->tmin + fmax(1.0, fabs(s->tmin) * 1e-6); /* one instant */
	return 0;
}

static double px(const panel *p, double t)
{
	return p->x0 + (t - p->tmin) / (p->tmax - p->tmin) * p->w;
}

static double py(const panel *p, double v)
{
	return p->y0 + p->h - v / p->ymax * p->h;
}

static void panel_init(panel *p, const series *s, int index, double ymax)
{
	p->x0 = PLOT_X;
	p->y0 = HEADER_H + index * PANEL_H + PLOT_TOP;
	p->w = PLOT_W;
	p->h = PLOT_H;
	p->tmin = s->tmin;
	p->tmax = s->tmax;
	if (!(ymax > 0) || !isfinite(ymax))
		ymax = 1;
	p->ystep = svg_nice_step(ymax, 4);
	p->ymax = ceil(ymax / p->ystep - 1e-9) * p->ystep;
	p->legend_items = 0;
}

static void draw_axes(FILE *f, const panel *p, const char *title, bool time_label)
{
	static const svg_style grid = {.stroke = "#dddddd", .width = 1};
	static const svg_style frame = {.stroke = "#444444", .width = 1};
	char buf[64];
	svg_text(f, p->x0, p->y0 - 12, "start", 14, "bold", "#222222", title);
	for (int k = 0; k <= TICKS_MAX && k * p->ystep <= p->ymax * (1 + 1e-9); k++) {
		double v = k * p->ystep;
		svg_line(f, p->x0, py(p, v), p->x0 + p->w, py(p, v), &grid);
		svg_fmt_tick(v, p->ystep, buf, sizeof(buf));
		svg_text(f, p->x0 - 6, py(p, v) + 4, "end", 11, "normal", "#444444", buf);
	}
	double step = svg_nice_step(p->tmax - p->tmin, 8);
	double first = ceil(p->tmin / step - 1e-9) * step;
	for (int k = 0; k <= TICKS_MAX && first + k * step <= p->tmax + step * 1e-9; k++) {
		double t = first + k * step;
		svg_line(f, px(p, t), p->y0 + p->h, px(p, t), p->y0 + p->h + 4, &frame);
		svg_fmt_tick(t, step, buf, sizeof(buf));
		svg_text(f, px(p, t), p->y0 + p->h + 16, "middle", 11, "normal", "#444444", buf);
	}
	svg_rect(f, p->x0, p->y0, p->w, p->h, &frame);
	if (time_label)
		svg_text(f, p->x0 + p->w / 2, p->y0 + p->h + 32, "middle", 12, "normal", "#222222",
		         "time (s)");
}

/* One legend entry: a swatch (filled box or line) and its label. */
static void legend(FILE *f, panel *p, const char *color, bool area, const char *dash,
                   const char *label)
{
	double y = p->y0 + 8 + 18.0 * p->legend_items++;
	if (area) {
		svg_style s = {.fill = color, .opacity = 0.8};
		svg_rect(f, LEGEND_X, y - 6, 18, 10, &s);
	} else {
		svg_style s = {.stroke = color, .width = 2.5, .dash = dash};
		svg_line(f, LEGEND_X, y - 1, LEGEND_X + 18, y - 1, &s);
	}
	svg_text(f, LEGEND_X + 24, y + 3, "start", 12, "normal", "#222222", label);
}

/* Small squares at the points: a series of one to three points would
 * otherwise draw nothing visible (a polyline needs two). */
static void dots(FILE *f, const double *xs, const double *ys, size_t n, const char *color)
{
	if (n > 3)
		return;
	svg_style st = {.fill = color};
	for (size_t i = 0; i < n; i++)
		if (isfinite(ys[i]))
			svg_rect(f, xs[i] - 3, ys[i] - 3, 6, 6, &st);
}

/* Maps a field to pixel coordinates into xs / ys (scaled by 1/div). */
static void project(const panel *p, const series *s, int field, double div, double *xs, double *ys)
{
	for (size_t i = 0; i < s->n; i++) {
		xs[i] = px(p, s->v[S_T][i]);
		ys[i] = isnan(s->v[field][i]) ? NAN : py(p, s->v[field][i] / div);
	}
}

typedef struct canvas {
	FILE *f;
	const series *s;
	double *xs, *ya, *yb; /* scratch, s->n each */
} canvas;

static double field_max(const series *s, int field)
{
	double m = 0;
	for (size_t i = 0; i < s->n; i++)
		if (isfinite(s->v[field][i]))
			m = fmax(m, s->v[field][i]);
	return m;
}

static void panel_queue(canvas *c)
{
	panel p;
	double ymax = fmax(field_max(c->s, S_DEPTH), field_max(c->s, S_INV));
	panel_init(&p, c->s, 0, fmax(ymax, field_max(c->s, S_READY)));
	draw_axes(c->f, &p, "Ready queue and depth (batches)", false);
	project(&p, c->s, S_READY, 1, c->xs, c->ya);
	for (size_t i = 0; i < c->s->n; i++)
		c->yb[i] = py(&p, 0);
	svg_band(c->f, c->xs, c->ya, c->yb, c->s->n,
	         &(svg_style){.fill = "#4C78A8", .opacity = 0.45});
	svg_polyline(c->f, c->xs, c->ya, c->s->n, &(svg_style){.stroke = "#4C78A8", .width = 1.5});
	dots(c->f, c->xs, c->ya, c->s->n, "#4C78A8");
	legend(c->f, &p, "#4C78A8", true, NULL, "ready");
	project(&p, c->s, S_INV, 1, c->xs, c->ya);
	svg_polyline(c->f, c->xs, c->ya, c->s->n,
	             &(svg_style){.stroke = "#54A24B", .width = 1.5, .dash = "5,3"});
	dots(c->f, c->xs, c->ya, c->s->n, "#54A24B");
	legend(c->f, &p, "#54A24B", false, "5,3", "ready+decoded+in flight");
	project(&p, c->s, S_DEPTH, 1, c->xs, c->ya);
	svg_polyline(c->f, c->xs, c->ya, c->s->n, &(svg_style){.stroke = "#F58518", .width = 2.5});
	dots(c->f, c->xs, c->ya, c->s->n, "#F58518");
	legend(c->f, &p, "#F58518", false, NULL, "depth (target)");
}

static double mem_unit(double bytes, const char **name)
{
	static const char *const names[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double div = 1;
	int u = 0;
	while (u < 4 && bytes >= div * 1024)
		div *= 1024, u++;
	*name = names[u];
	return div;
}

/* "12.3 MiB": a size in its own unit (not the unit of a larger figure). */
static const char *fmt_size(double bytes, char *buf, size_t cap)
{
	const char *u;
	double div = mem_unit(bytes, &u);
	snprintf(buf, cap, div > 1 ? "%.1f %s" : "%.0f %s", bytes / div, u);
	return buf;
}

static double mem_top(const series *s)
{
	double top = 0;
	for (size_t i = 0; i < s->n; i++) {
		double sum = 0;
		for (int m = 0; m < TRACE_MEM_CATEGORIES; m++)
			sum += s->v[S_MEM0 + m][i];
		top = fmax(top, sum);
	}
	return top;
}

/* The axis follows the memory held; a budget far above it is named in the
 * legend instead of flattening the stack against the axis' bottom. */
static void panel_memory(canvas *c)
{
	const series *s = c->s;
	double top = mem_top(s), budget = field_max(s, S_BUDGET);
	bool budget_on_axis = budget > 0 && budget <= 2 * top;
	double axis = budget_on_axis ? fmax(top, budget) : top;
	const char *unit;
	double div = mem_unit(axis, &unit);
	char title[96], label[96], b1[32];
	snprintf(title, sizeof(title), "Memory by category, stacked, vs budget (%s)", unit);
	panel p;
	panel_init(&p, s, 1, axis / div);
	draw_axes(c->f, &p, title, false);
	for (int m = 0; m < TRACE_MEM_CATEGORIES; m++) {
		for (size_t i = 0; i < s->n; i++) {
			double below = 0;
			for (int k = 0; k < m; k++)
				below += s->v[S_MEM0 + k][i];
			c->xs[i] = px(&p, s->v[S_T][i]);
			c->ya[i] = py(&p, (below + s->v[S_MEM0 + m][i]) / div);
			c->yb[i] = py(&p, below / div);
		}
		svg_band(c->f, c->xs, c->ya, c->yb, s->n,
		         &(svg_style){.fill = mem_color[m], .opacity = 0.85});
		dots(c->f, c->xs, c->ya, s->n, mem_color[m]);
		legend(c->f, &p, mem_color[m], true, NULL, trace_mem_name[m]);
	}
	if (budget_on_axis) {
		project(&p, s, S_BUDGET, div, c->xs, c->ya);
		svg_polyline(c->f, c->xs, c->ya, s->n,
		             &(svg_style){.stroke = "#E45756", .width = 2.5, .dash = "8,4"});
		legend(c->f, &p, "#E45756", false, "8,4", "budget");
	} else if (budget > 0) {
		snprintf(label, sizeof(label), "budget %s", fmt_size(budget, b1, sizeof(b1)));
		legend(c->f, &p, "#E45756", false, "8,4", label);
		snprintf(label, sizeof(label), "(off the axis: the peak");
		svg_text(c->f, LEGEND_X, p.y0 + 8 + 18.0 * p.legend_items++ + 3, "start", 11,
		         "normal", "#666666", label);
		snprintf(label, sizeof(label), "is %.1f%% of it)", 100 * top / budget);
		svg_text(c->f, LEGEND_X, p.y0 + 8 + 18.0 * p.legend_items++ - 3, "start", 11,
		         "normal", "#666666", label);
	}
}

static double total_wait(const trace *t)
{
	double w = 0;
	for (size_t i = 0; i < t->n; i++)
		w += t->pt[i].wait_s;
	return w;
}

static void panel_wait(canvas *c, const trace *t)
{
	const series *s = c->s;
	char title[128];
	snprintf(title, sizeof(title), "Consumer waiting (%% of each interval; %.3g s in total)",
	         total_wait(t));
	panel p;
	/* small waits stay visible: the axis ends a little above the largest */
	double most = field_max(s, S_WAIT_PCT);
	panel_init(&p, s, 2, fmin(100, fmax(1, most * 1.25)));
	draw_axes(c->f, &p, title, false);
	/* step i covers x[i-1]..x[i]: the first interval starts at the axis' start */
	project(&p, s, S_WAIT_PCT, 1, c->xs + 1, c->ya + 1);
	c->xs[0] = px(&p, s->tmin);
	c->ya[0] = NAN;
	svg_steps(c->f, c->xs, c->ya, s->n + 1, py(&p, 0),
	          &(svg_style){.fill = "#E45756", .opacity = 0.85});
	legend(c->f, &p, "#E45756", true, NULL, "waiting");
	if (most <= 0)
		svg_text(c->f, p.x0 + p.w / 2, p.y0 + p.h / 2, "middle", 12, "normal", "#666666",
		         "the consumer never waited");
}

/* r and c on an axis scaled to r: a producer far faster than its consumer
 * (the usual case when nothing holds it back) would otherwise flatten r onto
 * zero. c above the axis is clipped at its top and named in the legend;
 * intervals without a c (the producer held back all interval) are bridged,
 * and counted in the legend. */
static void panel_rates(canvas *c)
{
	const series *s = c->s;
	double rmax = field_max(s, S_R), cmax = field_max(s, S_C);
	bool clip = rmax > 0 && cmax > 3 * rmax;
	panel p;
	panel_init(&p, s, 3, clip ? 3 * rmax : fmax(rmax, cmax));
	draw_axes(c->f, &p, "Consumer rate r and producer rate c (batches/s)", false);
	size_t k = 0, missing = 0;
	for (size_t i = 0; i < s->n; i++) {
		double v = s->v[S_C][i];
		if (isnan(v)) {
			missing++;
			continue;
		}
		c->xs[k] = px(&p, s->v[S_T][i]);
		c->ya[k++] = py(&p, fmin(v, p.ymax));
	}
	svg_polyline(c->f, c->xs, c->ya, k, &(svg_style){.stroke = "#F58518", .width = 2});
	dots(c->f, c->xs, c->ya, k, "#F58518");
	legend(c->f, &p, "#F58518", false, NULL, "c (producer)");
	char note[96];
	if (clip) {
		snprintf(note, sizeof(note), "clipped: up to %.0f", cmax);
		svg_text(c->f, LEGEND_X + 24, p.y0 + 8 + 18.0 * p.legend_items++ + 1, "start", 11,
		         "normal", "#666666", note);
	}
	if (missing) {
		snprintf(note, sizeof(note), "none in %zu of %zu (held back)", missing, s->n);
		svg_text(c->f, LEGEND_X + 24, p.y0 + 8 + 18.0 * p.legend_items++ + 1, "start", 11,
		         "normal", "#666666", note);
	}
	project(&p, s, S_R, 1, c->xs, c->ya);
	svg_polyline(c->f, c->xs, c->ya, s->n, &(svg_style){.stroke = "#4C78A8", .width = 2});
	dots(c->f, c->xs, c->ya, s->n, "#4C78A8");
	legend(c->f, &p, "#4C78A8", false, NULL, "r (consumer)");
}

static void panel_coverage(canvas *c)
{
	const series *s = c->s;
	panel p;
	panel_init(&p, s, 4, field_max(s, S_COVER));
	draw_axes(c->f, &p, "Coverage: inventory / r (s)", true);
	project(&p, s, S_COVER, 1, c->xs, c->ya);
	svg_polyline(c->f, c->xs, c->ya, s->n, &(svg_style){.stroke = "#54A24B", .width = 2});
	dots(c->f, c->xs, c->ya, s->n, "#54A24B");
	legend(c->f, &p, "#54A24B", false, NULL, "coverage");
	if (!(field_max(s, S_COVER) > 0))
		svg_text(c->f, p.x0 + p.w / 2, p.y0 + p.h / 2, "middle", 12, "normal", "#666666",
		         "no coverage yet: the consumer's rate r was not measured");
}

/* Numbered markers across every panel, and the list of events below. */
static double draw_events(canvas *c, const trace *t, double y)
{
	panel p;
	panel_init(&p, c->s, 0, 1);
	svg_style mark = {.stroke = "#888888", .width = 1, .dash = "2,3"};
	size_t k = 0, listed = 0;
	char buf[TRACE_EVENT_BYTES_MAX + 64];
	for (size_t i = 0; i < t->n && k < REPORT_EVENTS_MARKED; i++) {
		if (!t->pt[i].event)
			continue;
		double x = px(&p, t->pt[i].t_s);
		k++;
		for (int j = 0; j < PANELS; j++) {
			double top = HEADER_H + j * PANEL_H + PLOT_TOP;
			svg_line(c->f, x, top, x, top + PLOT_H, &mark);
		}
		snprintf(buf, sizeof(buf), "%zu", k);
		svg_text(c->f, x + 2, p.y0 + 11, "start", 10, "bold", "#555555", buf);
		if (listed < REPORT_EVENTS_LISTED) {
			snprintf(buf, sizeof(buf), "%zu.  t = %.4g s: %s", k, t->pt[i].t_s,
			         t->pt[i].event);
			svg_text(c->f, PLOT_X, y + 16.0 * (double)listed++, "start", 12, "normal",
			         "#222222", buf);
		}
	}
	size_t total = 0;
	for (size_t i = 0; i < t->n; i++)
		total += t->pt[i].event != NULL;
	if (total > listed) {
		snprintf(buf, sizeof(buf), "... and %zu more events (see the trace)",
		         total - listed);
		svg_text(c->f, PLOT_X, y + 16.0 * (double)listed++, "start", 12, "normal",
		         "#222222", buf);
	}
	return y + 16.0 * (double)listed;
}

#define PAUSE_MIN_S 0.1 /* a fetch this long is a pause (the loader's own threshold) */

/* Interval i's producer pause (a storage stall or no production) as [*a, *b]: the loader's longest
 * fetch when it reached PAUSE_MIN_S (ending at the interval's end), or the whole interval when the
 * producer delivered nothing while it could have (c = 0: how sim and the loader both mark a stalled
 * producer). */
static bool pause_of(const trace *t, size_t i, double *a, double *b)
{
	const trace_point *p = &t->pt[i];
	double prev = i ? t->pt[i - 1].t_s : fmin(0, p->t_s);
	*b = p->t_s;
	if (isfinite(p->pause_s) && p->pause_s >= PAUSE_MIN_S)
		*a = fmax(0, p->t_s - p->pause_s);
	else if (p->c_bps == 0)
		*a = prev;
	else
		return false;
	return true;
}

typedef struct pause_sum {
	size_t n;
	double longest_s;
} pause_sum;

/* Shades every producer pause across the panels (overlapping ones merged);
 * counts them for the header. */
static pause_sum draw_pauses(FILE *f, const series *s, const trace *t, bool draw)
{
	panel p;
	panel_init(&p, s, 0, 1);
	svg_style st = {.fill = "#E45756", .opacity = 0.18};
	pause_sum sum = {0};
	double a0 = NAN, b0 = NAN, a, b;
	for (size_t i = 0; i <= t->n; i++) {
		bool more = i < t->n && pause_of(t, i, &a, &b);
		if (more && isfinite(b0) && a <= b0) { /* overlaps the open one */
			b0 = fmax(b0, b);
			continue;
		}
		if (isfinite(b0)) {
			sum.n++;
			sum.longest_s = fmax(sum.longest_s, b0 - a0);
			double x = px(&p, a0), w = fmax(2, px(&p, b0) - x);
			for (int j = 0; draw && j < PANELS; j++)
				svg_rect(f, x, HEADER_H + j * PANEL_H + PLOT_TOP, w, PLOT_H, &st);
			a0 = b0 = NAN;
		}
		if (more)
			a0 = a, b0 = b;
	}
	return sum;
}

static size_t count_events(const trace *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		n += t->pt[i].event != NULL;
	return n < REPORT_EVENTS_LISTED ? n : REPORT_EVENTS_LISTED + 1;
}

static void header(FILE *f, const trace *t, const series *s, const char *name, pause_sum ps)
{
	char buf[600], peak[32], bud[32], pauses[96] = "";
	double mem_peak = 0, budget = 0, dmin = INFINITY, dmax = 0;
	for (size_t i = 0; i < t->n; i++) {
		const trace_point *p = &t->pt[i];
		double sum = 0;
		for (int m = 0; m < TRACE_MEM_CATEGORIES; m++)
			sum += p->mem_bytes[m];
		mem_peak = fmax(mem_peak, sum);
		budget = fmax(budget, p->budget_bytes);
		dmin = fmin(dmin, p->depth);
		dmax = fmax(dmax, p->depth);
	}
	snprintf(buf, sizeof(buf), "ringfeed trace report: %s", name);
	svg_text(f, PLOT_X, 28, "start", 18, "bold", "#111111", buf);
	double span = t->pt[t->n - 1].t_s - s->tmin, wait = total_wait(t);
	char depth[64];
	if (dmin == dmax)
		snprintf(depth, sizeof(depth), "%.4g", dmax);
	else
		snprintf(depth, sizeof(depth), "%.4g..%.4g", dmin, dmax);
	if (ps.n)
		snprintf(pauses, sizeof(pauses),
		         "  |  %zu producer pause%s (shaded, longest %.2f s)", ps.n,
		         ps.n == 1 ? "" : "s", ps.longest_s);
	snprintf(buf, sizeof(buf),
	         "%zu interval%s over %.4g s  |  depth %s batches  |  peak memory %s of the %s "
	         "budget",
	         t->n, t->n == 1 ? "" : "s", span, depth, fmt_size(mem_peak, peak, sizeof(peak)),
	         fmt_size(budget, bud, sizeof(bud)));
	svg_text(f, PLOT_X, 50, "start", 12, "normal", "#333333", buf);
	snprintf(buf, sizeof(buf), "consumer waited %.3g s (%.1f%% of the time)%s", wait,
	         span > 0 ? 100.0 * wait / span : 0.0, pauses);
	svg_text(f, PLOT_X, 66, "start", 12, "normal", "#333333", buf);
	if (t->n == 1)
		svg_text(f, PLOT_X, 84, "start", 11, "bold", "#B03030",
		         "Only one interval in this trace (a run shorter than two controller "
		         "intervals): each panel shows a single point, not a time series.");
	else if (s->n < t->n) {
		snprintf(
		    buf, sizeof(buf),
		    "%zu lines drawn as %zu points (maxima of counts and bytes, sums of waits, "
		    "means of rates)",
		    t->n, s->n);
		svg_text(f, PLOT_X, 84, "start", 11, "normal", "#666666", buf);
	}
}

int report_svg(FILE *f, const trace *t, const char *name)
{
	series s;
	if (t->n == 0 || series_build(t, &s) < 0)
		return -ENOMEM;
	double *scratch = malloc(3 * (s.n + 1) * sizeof(double)); /* + the axis' start */
	if (!scratch) {
		free(s.v[0]);
		return -ENOMEM;
	}
	canvas c = {
	    .f = f, .s = &s, .xs = scratch, .ya = scratch + s.n + 1, .yb = scratch + 2 * (s.n + 1)};
	double events_y = HEADER_H + PANELS * PANEL_H + 8;
	size_t listed = count_events(t);
	double height = events_y + (listed ? 20 + 16.0 * (double)listed : 0) + 10;
	char title[300];
	snprintf(title, sizeof(title), "ringfeed trace report: %s", name);
	svg_begin(f, W, height, title);
	header(f, t, &s, name, draw_pauses(f, &s, t, false));
	draw_pauses(f, &s, t, true);
	panel_queue(&c);
	panel_memory(&c);
	panel_wait(&c, t);
	panel_rates(&c);
	panel_coverage(&c);
	if (listed) {
		svg_text(f, PLOT_X, events_y + 8, "start", 14, "bold", "#222222", "Events");
		draw_events(&c, t, events_y + 28);
	}
	svg_end(f);
	free(scratch);
	free(s.v[0]);
	return ferror(f) ? -EIO : 0;
}
