/* collator.h - the collator's stage (collator.c: one worker at a time):
 * the collation cursor, the stream's end, the skip policy's counts and log,
 * and the fill queue (planned batches waiting for a worker to copy their
 * records). Only collator.c writes rf_coll and rf_fill (tests/cli_house.sh
 * checks); the other stages kick it, end the stream or take a batch to
 * fill through the functions below (the inline ones are the collator's
 * too: units.c and sched.c call them, and collator.c calls into units.c,
 * so they cannot live in collator.c without a circle). mu held for every
 * one. */
#ifndef RF_COLLATOR_H
#define RF_COLLATOR_H

#include "plan.h"
#include "ready.h"
#include "ringfeed.h"
#include "tsa.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One skip of the skip policy, for the stats. */
#define RF_SKIP_LOG 8

typedef struct rf_engine rf_engine;
struct rf_ebatch;

/* the collator (one worker at a time; mu) and the stream's end */
typedef struct rf_engine_coll {
	rf_plan *plan;
	bool running, kick;
	bool wait_budget; /* the next batch did not fit: a release must kick */
	uint64_t epoch, pos, batch, global;
	uint64_t base_seq, records, global_start; /* the collator's epoch */
	size_t first_unit;
	size_t hint_unit;                /* last unit located (fast path) */
	uint64_t total_records, batches; /* totals, for the batch estimate */
	uint64_t first_batch_ns;         /* when the first batch was planned (0: none yet) */
	bool final;                      /* END or error queued after the last batch */
	int final_code;                  /* RF_END or a negative error */
	char final_msg[RF_ERROR_MSG_BYTES];
	uint32_t skip_blocks;
	uint64_t skip_records;
	rf_skip skip_log[RF_SKIP_LOG];
	uint64_t skips; /* blocks skipped by the collator in this run */
} rf_coll;

/* batches planned by the collator, waiting for a worker to fill them (mu) */
typedef struct rf_engine_fill {
	struct rf_ebatch *q[RF_READY_MAX];
	uint64_t q_head, q_tail;
	uint64_t scan;       /* ready-queue index: batches before it are filled */
	uint64_t epoch, pos; /* every batch before this position is filled */
} rf_fill;

/* Collates what it can (one worker at a time). */
void rf_collate_run(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* Copies one planned batch's records (any worker); dropped while copying. */
void rf_fill_one(rf_engine *e, struct rf_ebatch *b) RF_REQUIRES(rf_engine_mu);
/* The next batch to fill, off the fill queue (NULL: none). */
struct rf_ebatch *rf_fill_pop(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* At open: the collator's plan (0, or an error in err). */
int rf_coll_plan_new(rf_engine *e, const rf_plan_params *pp, rf_error *err);
/* At open, after the resume: the cursor at record `at` of `epoch`
 * (records in it), batch `batch`, first unit `first`, skip counts as
 * saved; ended when the saved run had ended. */
void rf_coll_start(rf_engine *e, uint64_t epoch, uint64_t at, uint64_t batch, size_t first,
                   uint64_t records, uint32_t skip_blocks, uint64_t skip_records, bool ended);

/* Something changed that may let the collator go on (a unit decoded, a
 * batch released, the depth changed): it runs again soon. */
static inline void rf_coll_kick(rf_coll *c) RF_REQUIRES(rf_engine_mu)
{
	c->kick = true;
}
/* Marks the stream's end (RF_END) or error, after the batches queued:
 * false when it had ended already (the first end stands). */
static inline bool rf_coll_final_set(rf_coll *c, int code, const char *msg, const char *hint)
    RF_REQUIRES(rf_engine_mu)
{
	if (c->final)
		return false;
	c->final = true;
	c->final_code = code;
	snprintf(c->final_msg, sizeof(c->final_msg), "%s%s", msg ? msg : "", hint);
	return true;
}
/* The last skip logged (skips > 0). */
static inline const rf_skip *rf_coll_last_skip(const rf_coll *c)
{
	return &c->skip_log[(c->skips - 1) % RF_SKIP_LOG];
}
#endif
