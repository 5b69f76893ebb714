/* trace.h - reads a ringfeed trace (docs/trace.md): one JSON object per
 * line, one line per interval. Every line is checked; the first bad one
 * is an error naming the file and the line number. */
#ifndef RF_TOOLS_TRACE_H
#define RF_TOOLS_TRACE_H

#include <stddef.h>

#define TRACE_LINES_MAX       1000000
#define TRACE_LINE_BYTES_MAX  65536
#define TRACE_EVENT_BYTES_MAX 240
#define TRACE_MEM_CATEGORIES  5

extern const char *const trace_mem_name[TRACE_MEM_CATEGORIES];

typedef struct trace_point {
	double t_s;
	double depth, ready, decoded, in_flight; /* batches */
	double mem_bytes[TRACE_MEM_CATEGORIES];  /* fetch, decoded, batch, scratch, metadata */
	double budget_bytes;
	double r_bps, c_bps; /* NAN when the line says null (not measured yet) */
	double wait_s;
	double coverage_s; /* NAN when null */
	double pause_s;    /* the loader's longest fetch of the interval; NAN when absent */
	char *event;       /* NULL when none */
} trace_point;

typedef struct trace {
	trace_point *pt;
	size_t n;
	size_t cap;
} trace;

/* Loads path into *out. Returns 0, or -1 with msg set ("FILE:LINE: ..."). */
int trace_load(const char *path, trace *out, char *msg, size_t msg_cap);
void trace_free(trace *t);

#endif
