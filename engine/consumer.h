/* consumer.h - the consumer's stage (api.c): what rf_next, rf_release and
 * rf_state_save keep between calls: the public calls' guard, the position
 * the consumer reached (what a state saves), when it last woke the
 * scheduler, a held-budget stall's start and the last error's text. Only
 * api.c writes rf_consumer (tests/cli_house.sh checks); rf_open sets the
 * start position through rf_consumer_start. */
#ifndef RF_CONSUMER_H
#define RF_CONSUMER_H

#include "collate.h"
#include "ringfeed.h"
#include "tsa.h"
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rf_engine_consumer {
	/* The public calls' guard: the process that opened the loader (a forked
	 * child's calls are refused, set once by rf_open), and, under mu, rf_next
	 * calls in progress and whether rf_close has begun (it refuses new
	 * rf_next calls and waits on ready_cv for these to return) */
	pid_t pid;
	uint32_t next_calls RF_GUARDED_BY(rf_engine_mu);
	bool closing RF_GUARDED_BY(rf_engine_mu);
	rf_position pos RF_GUARDED_BY(rf_engine_mu); /* pos.segs: e->seq (set at open) */
	/* stream position after the last batch taken (the run's, lookahead) */
	uint64_t global RF_GUARDED_BY(rf_engine_mu);
	/* consumer position that next wakes the scheduler */
	uint64_t wake_mark RF_GUARDED_BY(rf_engine_mu);
	/* since when only rf_release can free memory (0: not) */
	uint64_t held_stall_ns RF_GUARDED_BY(rf_engine_mu);
	char last_error[RF_ERROR_MSG_BYTES]; /* the calling thread's (rf_error_message) */
} rf_consumer;

/* rf_open: the consumer starts at pos (a resumed state's, or an epoch's
 * start), global its place in the run. mu held or no thread started. */
static inline void rf_consumer_start(rf_consumer *c, const rf_position *pos, uint64_t global)
    RF_REQUIRES(rf_engine_mu)
{
	c->pos = *pos;
	c->global = global;
}
#endif
