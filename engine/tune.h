/* tune.h - the read-ahead controller's decision logic, pure: no clocks, no
 * threads, no allocation. The engine measures, once per interval fills an
 * rf_tune_interval and calls rf_tune_step; in between it reports each fetch
 * latency (rf_tune_note_latency). The controller answers with the depth (in
 * batches), the requests to keep in flight, the rates, the coverage and a
 * diagnosis in plain words.
 *
 * Rules (DESIGN.md, "controller"):
 * - r (consumer batches/s, its own work time only) and c (producer batches/s
 *   of busy time) are smoothed over about `smooth_s` seconds;
 * - target coverage T = cover_s, or else safety x the longest pause seen in
 *   the last `pause_memory` intervals (at least safety x fetch p99 and
 *   cover_min_s); target depth = ceil(r x T) within [depth_min, depth_max];
 * - depth grows toward the target at most `step_max` batches (and at most
 *   half the current depth, at least 1) per interval; it shrinks toward the
 *   target only when the queue stayed full and nobody waited, by at most an
 *   eighth per interval, and not for a gap within the dead band (1/16 of the
 *   depth): a steady consumer converges and stays;
 * - requests in flight = ceil(r x requests_per_batch x mean fetch latency)
 *   + 1 (Little's law), within [1, connections_max]. */
#ifndef RF_TUNE_H
#define RF_TUNE_H

#include <stddef.h>
#include <stdint.h>

#define RF_TUNE_HISTORY     64 /* intervals remembered (pauses, queue, waits) */
#define RF_TUNE_LAT_SUB     8  /* histogram buckets per doubling (9% resolution) */
#define RF_TUNE_LAT_OCTAVES 28 /* 1 us .. 268 s */
#define RF_TUNE_LAT_BUCKETS (RF_TUNE_LAT_SUB * RF_TUNE_LAT_OCTAVES)
#define RF_TUNE_LAT_MIN_S   1e-6

typedef struct rf_tune_params {
	double cover_s;            /* target coverage; 0 = derived from observed pauses */
	double safety;             /* factor on observed pauses and latency (default 1.5) */
	double cover_min_s;        /* floor of a derived target (default 0.25 s) */
	uint32_t pause_memory;     /* intervals a pause counts (default 32, <= RF_TUNE_HISTORY) */
	double smooth_s;           /* rate smoothing time constant (default 2 s) */
	uint32_t depth_min;        /* default 1 */
	uint32_t depth_max;        /* largest depth the budget allows (>= depth_min) */
	uint32_t depth_initial;    /* default min(4, depth_max) */
	uint32_t depth_fixed;      /* > 0: depth is fixed (--depth N); still measures */
	uint32_t step_max;         /* most batches of growth per interval (default 256) */
	uint32_t connections_max;  /* cap on requests in flight (default 64) */
	double requests_per_batch; /* fetch requests per batch of records (default 1) */
} rf_tune_params;

/* What the engine measured over one interval. */
typedef struct rf_tune_interval {
	double wall_s; /* length of the interval */
	uint64_t batches_consumed;
	double consumer_busy_s; /* the consumer's own time between rf_next calls */
	double consumer_wait_s; /* time it spent waiting inside rf_next */
	uint64_t batches_produced;
	double producer_busy_s;      /* time the producer worked (not held back by depth/budget) */
	uint32_t queue_samples;      /* ready-queue length samples taken */
	uint32_t queue_empty;        /* of which 0 ready */
	uint32_t queue_full;         /* of which full: ready >= depth - 1 (at most the batch
	                                being collated missing) */
	double inventory_batches;    /* ready + decoded + in flight, in batches, now */
	double pause_max_s;          /* longest fetch pause observed (0: none) */
	double decode_busy_fraction; /* decode workers' busy time / (threads x wall), 0..1 */
	uint32_t inflight;           /* requests in flight now */
} rf_tune_interval;

typedef enum rf_tune_diagnosis {
	RF_TUNE_MEASURING = 0, /* no rate known yet */
	RF_TUNE_OK,
	RF_TUNE_PRODUCER_SLOW, /* c < r: depth only postpones the first stall */
	RF_TUNE_BUDGET_BINDS,  /* the target depth is beyond what the budget allows */
	RF_TUNE_ALWAYS_FULL,   /* queue always full, nobody waits: more depth buys nothing */
	RF_TUNE_DEPTH_SHORT,   /* a fixed depth (--depth N) below what the pauses seen call for */
	RF_TUNE_DIAGNOSES
} rf_tune_diagnosis;

typedef enum rf_tune_reason {
	RF_TUNE_HOLD = 0,    /* depth unchanged */
	RF_TUNE_GROW,        /* toward r x T */
	RF_TUNE_GROW_CAPPED, /* toward r x T, stopped at the budget's depth_max */
	RF_TUNE_SHRINK,      /* queue stayed full, nobody waited, depth above target */
	RF_TUNE_BUDGET_CUT,  /* depth_max fell below the depth */
	RF_TUNE_FIXED,       /* --depth N */
	RF_TUNE_REASONS
} rf_tune_reason;

typedef struct rf_tune_decision {
	uint32_t depth;       /* batches of read-ahead from now on */
	int64_t depth_change; /* this interval */
	rf_tune_reason reason;
	uint32_t depth_target; /* ceil(r x T) before the budget cap (saturated) */
	uint32_t inflight;     /* requests to keep in flight */
	double r_bps, c_bps;   /* smoothed consumer / producer rates (0: unknown) */
	double cover_target_s; /* T */
	double coverage_s;     /* inventory / r */
	double pause_recent_s; /* longest pause in memory */
	double wait_fraction;  /* consumer wait / wall, this interval */
	double stall_in_s;     /* PRODUCER_SLOW: inventory / (r - c) */
	rf_tune_diagnosis diagnosis;
} rf_tune_decision;

typedef struct rf_tune {
	rf_tune_params p;
	uint32_t depth;
	double r_bps, c_bps;
	uint64_t intervals;
	/* ring of the last RF_TUNE_HISTORY intervals */
	double pause_s[RF_TUNE_HISTORY];
	double full_fraction[RF_TUNE_HISTORY];
	double wait_s[RF_TUNE_HISTORY];
	double wall_s[RF_TUNE_HISTORY];
	/* fetch latency: decayed counts per log bucket, decayed sum for the mean */
	double lat_count[RF_TUNE_LAT_BUCKETS];
	double lat_total, lat_sum_s, lat_max_s;
	rf_tune_decision last;
	rf_tune_interval last_in;
} rf_tune;

/* Fills defaults for zero fields and checks; -EINVAL with a message in err_msg
 * (may be NULL) of cap bytes. */
int rf_tune_init(rf_tune *t, const rf_tune_params *p, char *err_msg, size_t cap);
/* The budget's depth limit changed (e.g. batch sizes learned). */
void rf_tune_set_depth_max(rf_tune *t, uint32_t depth_max);
void rf_tune_note_latency(rf_tune *t, double latency_s);
/* Latency quantile q in [0, 1] in seconds over recent fetches (0: none). */
double rf_tune_latency_quantile(const rf_tune *t, double q);
double rf_tune_latency_mean(const rf_tune *t);
double rf_tune_latency_max(const rf_tune *t);
/* Once per interval: updates the measurements, decides, returns the decision
 * (also kept in t->last). */
const rf_tune_decision *rf_tune_step(rf_tune *t, const rf_tune_interval *in);
uint32_t rf_tune_depth(const rf_tune *t);
const char *rf_tune_diagnosis_name(rf_tune_diagnosis d);
const char *rf_tune_reason_name(rf_tune_reason r);
/* The figures a diagnosis is stated in. A report that prints them as well
 * (rf_stats: whole-run rates, the depth now) passes its own, so the words
 * (from the last decision) and the numbers never disagree. */
typedef struct rf_tune_figures {
	double r_bps, c_bps; /* consumer / producer rate */
	uint32_t depth;      /* depth now; it covers depth / r seconds */
	double inventory_batches;
	double wait_fraction;        /* consumer wait / wall, 0..1 */
	double wait_s;               /* consumer wait, seconds (over the same span) */
	double decode_busy_fraction; /* 0..1 */
	double fetch_p50_ms, fetch_p99_ms;
} rf_tune_figures;
/* The last decision's diagnosis in plain words, in the figures of that
 * decision; returns the length (as snprintf: truncated when >= cap). */
int rf_tune_explain(const rf_tune *t, char *buf, size_t cap);
/* The same words, in the caller's figures. */
int rf_tune_explain_figures(const rf_tune *t, const rf_tune_figures *f, char *buf, size_t cap);

#endif
