/* trace.c - the trace reader behind `ringfeed report` and `ringfeed plan
 * --from-trace`: jansson parses each line; every key is type- and
 * range-checked before use (see docs/trace.md for the format). */
#include "trace.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const trace_mem_name[TRACE_MEM_CATEGORIES] = {"fetch", "decoded", "batch", "scratch",
                                                          "metadata"};

typedef struct line_ctx {
	const char *path;
	size_t line;
	char *msg;
	size_t cap;
} line_ctx;

static int line_fail(const line_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int line_fail(const line_ctx *c, const char *fmt, ...)
{
	int n = snprintf(c->msg, c->cap, "%s:%zu: ", c->path, c->line);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < c->cap)
		vsnprintf(c->msg + n, c->cap - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* A required finite number >= 0; nullable keys may be null (NAN). */
static int get_num(const line_ctx *c, json_t *obj, const char *key, bool nullable, double *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return line_fail(c, "missing key \"%s\"", key);
	if (nullable && json_is_null(v)) {
		*out = NAN;
		return 0;
	}
	if (!json_is_number(v))
		return line_fail(c, "\"%s\" is not a number%s", key, nullable ? " or null" : "");
	double d = json_number_value(v);
	if (!isfinite(d) || d < 0)
		return line_fail(c, "\"%s\" is %g; expected a finite number >= 0", key, d);
	*out = d;
	return 0;
}

static int get_mem(const line_ctx *c, json_t *obj, trace_point *p)
{
	json_t *mem = json_object_get(obj, "mem");
	if (!json_is_object(mem))
		return line_fail(c, "\"mem\" is missing or not an object");
	for (int i = 0; i < TRACE_MEM_CATEGORIES; i++) {
		json_t *v = json_object_get(mem, trace_mem_name[i]);
		if (!json_is_number(v) || json_number_value(v) < 0)
			return line_fail(c, "\"mem\".\"%s\" is missing or not a number >= 0",
			                 trace_mem_name[i]);
		p->mem_bytes[i] = json_number_value(v);
	}
	return 0;
}

static int get_event(const line_ctx *c, json_t *obj, trace_point *p)
{
	json_t *v = json_object_get(obj, "event");
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return line_fail(c, "\"event\" is not a string");
	size_t len = json_string_length(v);
	if (len > TRACE_EVENT_BYTES_MAX)
		len = TRACE_EVENT_BYTES_MAX; /* labels only; the trace file keeps the rest */
	p->event = strndup(json_string_value(v), len);
	if (!p->event)
		return line_fail(c, "out of memory");
	return 0;
}

static int parse_point(const line_ctx *c, json_t *obj, trace_point *p)
{
	if (!json_is_object(obj))
		return line_fail(c, "not a JSON object");
	if (get_num(c, obj, "t_s", false, &p->t_s) < 0 ||
	    get_num(c, obj, "depth", false, &p->depth) < 0 ||
	    get_num(c, obj, "ready", false, &p->ready) < 0 ||
	    get_num(c, obj, "decoded", false, &p->decoded) < 0 ||
	    get_num(c, obj, "in_flight", false, &p->in_flight) < 0 || get_mem(c, obj, p) < 0 ||
	    get_num(c, obj, "budget_bytes", false, &p->budget_bytes) < 0 ||
	    get_num(c, obj, "r_bps", true, &p->r_bps) < 0 ||
	    get_num(c, obj, "c_bps", true, &p->c_bps) < 0 ||
	    get_num(c, obj, "wait_s", false, &p->wait_s) < 0 ||
	    get_num(c, obj, "coverage_s", true, &p->coverage_s) < 0)
		return -1;
	p->pause_s = NAN; /* optional: only the loader writes it */
	if (json_object_get(obj, "pause_s") && get_num(c, obj, "pause_s", false, &p->pause_s) < 0)
		return -1;
	return get_event(c, obj, p);
}

static int add_line(const line_ctx *c, trace *t, const char *buf, size_t len)
{
	if (t->n == TRACE_LINES_MAX)
		return line_fail(c, "more than %d lines", TRACE_LINES_MAX);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		trace_point *pt = realloc(t->pt, cap * sizeof(*pt));
		if (!pt)
			return line_fail(c, "out of memory");
		t->pt = pt;
		t->cap = cap;
	}
	json_error_t jerr;
	json_t *obj = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!obj)
		return line_fail(c, "bad JSON at column %d: %s", jerr.column, jerr.text);
	trace_point *p = &t->pt[t->n];
	memset(p, 0, sizeof(*p));
	int rc = parse_point(c, obj, p);
	json_decref(obj);
	if (rc < 0) {
		free(p->event);
		return -1;
	}
	if (t->n > 0 && p->t_s < t->pt[t->n - 1].t_s) {
		free(p->event);
		return line_fail(c, "t_s %g goes back in time (previous line: %g)", p->t_s,
		                 t->pt[t->n - 1].t_s);
	}
	t->n++;
	return 0;
}

/* Reads one line (without its newline) into buf, at most TRACE_LINE_BYTES_MAX
 * bytes. Returns its length, -1 at the end of the file, -2 when too long, -3
 * on a NUL byte. */
static long read_line(FILE *f, char *buf)
{
	long len = 0;
	int ch;
	while ((ch = getc(f)) != EOF && ch != '\n') {
		if (ch == 0)
			return -3;
		if (len == TRACE_LINE_BYTES_MAX)
			return -2;
		buf[len++] = (char)ch;
	}
	return ch == EOF && len == 0 ? -1 : len;
}

static int read_lines(FILE *f, line_ctx *c, trace *out)
{
	char *buf = malloc(TRACE_LINE_BYTES_MAX);
	if (!buf)
		return line_fail(c, "out of memory");
	int rc = 0;
	long len;
	while (rc == 0 && (len = read_line(f, buf)) != -1) {
		c->line++;
		if (len == -2)
			rc = line_fail(c, "line longer than %d bytes", TRACE_LINE_BYTES_MAX);
		else if (len == -3)
			rc = line_fail(c, "NUL byte in the line");
		else if (len == 0)
			rc = line_fail(c, "empty line (expected one JSON object per line)");
		else
			rc = add_line(c, out, buf, (size_t)len);
	}
	if (rc == 0 && ferror(f))
		rc = line_fail(c, "read error: %s", strerror(errno));
	free(buf);
	return rc;
}

int trace_load(const char *path, trace *out, char *msg, size_t msg_cap)
{
	memset(out, 0, sizeof(*out));
	line_ctx c = {.path = path, .msg = msg, .cap = msg_cap};
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(msg, msg_cap, "%s: %s", path, strerror(errno));
		return -1;
	}
	int rc = read_lines(f, &c, out);
	fclose(f);
	if (rc == 0 && out->n == 0) {
		snprintf(msg, msg_cap, "%s: the trace has no lines", path);
		rc = -1;
	}
	if (rc < 0)
		trace_free(out);
	return rc;
}

void trace_free(trace *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->pt[i].event);
	free(t->pt);
	memset(t, 0, sizeof(*t));
}
