/* scheduler.h - the scheduler's stage (sched.c, the loop thread): its cursor
 * over the plan, the reads it has in flight, and what the collator asks of
 * it. Only sched.c writes rf_sched (tests/cli_house.sh checks); the other
 * stages call the functions below (the inline ones are sched.c's too: they
 * live here so that units.c and the collator can call them without a
 * circle between the files). mu held for every one. */
#ifndef RF_SCHEDULER_H
#define RF_SCHEDULER_H

#include "plan.h"
#include "tsa.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rf_engine rf_engine;
struct rf_read;

#define RF_EPOCH_SLOTS 4 /* epochs known at once (collator's + scheduler's) */

typedef struct rf_epoch_info {
	bool valid;
	uint64_t epoch;
	uint64_t records;      /* E: records of this rank in the epoch */
	uint64_t global_start; /* position of its record 0 in the run (lookahead) */
	uint64_t span;         /* run positions it takes: max(records, plan records) */
	uint64_t base_seq;     /* seq of unit first_unit */
	size_t first_unit;     /* first unit fetched (after a resume) */
	size_t units;
} rf_epoch_info;

/* the scheduler's cursor (loop thread; published under mu) */
typedef struct rf_engine_sched {
	rf_plan *plan;
	uint64_t epoch;
	size_t unit;
	uint64_t seq;        /* next seq to admit */
	uint64_t next_first; /* first_plan_record of the next unit to admit (the epoch's
	                        span, plan records or more, when none) */
	bool done;           /* every unit of the last epoch admitted */
	uint32_t reads_inflight;
	struct rf_read *parked; /* admitted, but the loop (or store) had no room to start
	                           it: started again before anything else (loop thread) */
	uint64_t need_global;   /* units starting before this global position are needed now */
	bool wait_budget;       /* a read did not fit: a release must wake the loop */
	uint32_t depth;         /* read-ahead depth in batches (the controller's or fixed) */
	uint32_t inflight_cap;  /* reads in flight beyond the needed ones (Little's law) */
	rf_epoch_info epochs[RF_EPOCH_SLOTS]; /* by epoch % RF_EPOCH_SLOTS */
} rf_sched;

/* The loop thread's body. */
void *rf_sched_main(void *arg);
/* At open: the scheduler's plan (0, or an error in err). */
int rf_sched_plan_new(rf_engine *e, const rf_plan_params *pp, rf_error *err);
/* At open, after the resume: the cursor at `first` (the first unit the
 * position at record `at` of `epoch` needs); done when the run had ended. */
void rf_sched_start(rf_engine *e, uint64_t epoch, size_t first, uint64_t next_first, uint64_t at,
                    bool done);

/* The collator needs units starting before global position g now: true
 * when that raised the mark (the loop should be woken). */
static inline bool rf_sched_need(rf_sched *s, uint64_t g) RF_REQUIRES(rf_engine_mu)
{
	if (g <= s->need_global)
		return false;
	s->need_global = g;
	return true;
}
/* The read-ahead depth (rf_open, the controller, rf_set_depth) and the
 * reads in flight beyond the needed ones (the controller). */
static inline void rf_sched_depth_set(rf_sched *s, uint32_t depth) RF_REQUIRES(rf_engine_mu)
{
	s->depth = depth;
}
static inline void rf_sched_inflight_cap_set(rf_sched *s, uint32_t cap) RF_REQUIRES(rf_engine_mu)
{
	s->inflight_cap = cap;
}
/* rf_open: the first epoch; the collator: an epoch it has finished. */
static inline void rf_sched_epoch_set(rf_sched *s, const rf_epoch_info *ep)
    RF_REQUIRES(rf_engine_mu)
{
	s->epochs[ep->epoch % RF_EPOCH_SLOTS] = *ep;
}
static inline void rf_sched_epoch_retire(rf_sched *s, uint64_t epoch) RF_REQUIRES(rf_engine_mu)
{
	s->epochs[epoch % RF_EPOCH_SLOTS].valid = false;
}
/* A decode worker handed a unit back for another read (rereads queue). */
static inline void rf_sched_reread_started(rf_sched *s) RF_REQUIRES(rf_engine_mu)
{
	s->reads_inflight++;
}
#endif
