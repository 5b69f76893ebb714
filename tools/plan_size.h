/* plan_size.h - the sizing arithmetic behind `ringfeed plan`: depth to cover
 * a pause, the batches in flight to sustain a rate (Little's law), and the
 * bytes each stage holds per loader and per host. Pure; no I/O. */
#ifndef RF_TOOLS_PLAN_SIZE_H
#define RF_TOOLS_PLAN_SIZE_H

#include <stdbool.h>
#include <stdint.h>

enum { PLAN_FETCH, PLAN_DECODED, PLAN_COLLATED, PLAN_STAGES };

typedef struct plan_in {
	double rate_bps;                   /* r */
	double pause_s;                    /* T */
	double latency_s;                  /* fetch latency, for the in-flight allowance */
	uint64_t in_flight;                /* 0: ceil(r x latency), at least 1 */
	uint64_t batch_bytes[PLAN_STAGES]; /* compressed, decoded, collated */
	uint64_t ranks;
	uint64_t host_memory_bytes; /* 0: unknown */
} plan_in;

typedef struct plan_out {
	uint64_t depth;              /* D = ceil(r x T) */
	uint64_t in_flight;          /* F */
	uint64_t count[PLAN_STAGES]; /* batches held per stage */
	uint64_t loader_bytes[PLAN_STAGES];
	uint64_t host_bytes[PLAN_STAGES];
	uint64_t loader_total_bytes, host_total_bytes;
	double coverage_s;  /* D / r */
	bool fits;          /* host total <= host memory (or memory unknown) */
	uint64_t depth_max; /* largest D that fits (when memory is known) */
	bool depth_max_known;
} plan_out;

extern const char *const plan_stage_name[PLAN_STAGES];

/* Returns 0, or -ERANGE when a byte total does not fit in 64 bits. */
int plan_compute(const plan_in *in, plan_out *out);

#endif
