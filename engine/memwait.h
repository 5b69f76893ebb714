/* memwait.h - the producers' waits for memory (e->memwait; mu held): what
 * the last refused batch or needed read asked for, whether the last
 * reservation failed, and since when the host total has refused needed
 * work. The collator and the scheduler note their refusals and grants here,
 * rf_next reads them to say why the consumer waits. Its movers are these
 * inline functions; units.c, which judges the host total's waits, owns it
 * (tests/cli_house.sh checks that no other file writes it otherwise). */
#ifndef RF_MEMWAIT_H
#define RF_MEMWAIT_H

#include "tsa.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct rf_engine_memwait {
	uint64_t asked;      /* what the last refused batch or needed read asked for */
	bool blocked;        /* the last reservation attempt failed */
	uint64_t host_since; /* since when the host total refused needed work (0: not) */
} rf_memwait;

/* A reservation of `bytes` failed (the batch, or a read the next batch needs). */
static inline void rf_memwait_asked(rf_memwait *w, uint64_t bytes) RF_REQUIRES(rf_engine_mu)
{
	w->asked = bytes;
}
static inline void rf_memwait_blocked(rf_memwait *w, bool blocked) RF_REQUIRES(rf_engine_mu)
{
	w->blocked = blocked;
}
/* A reservation succeeded: the host total is not refusing now. */
static inline void rf_memwait_granted(rf_memwait *w) RF_REQUIRES(rf_engine_mu)
{
	w->blocked = false;
	w->host_since = 0;
}
/* The host total refuses needed work: since when (now, the first time). */
static inline uint64_t rf_memwait_host_since(rf_memwait *w, uint64_t now) RF_REQUIRES(rf_engine_mu)
{
	if (w->host_since == 0)
		w->host_since = now;
	return w->host_since;
}
#endif
