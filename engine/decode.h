/* decode.h - the decode stage (decode.c, the workers): sequential shards'
 * decoder states. Only decode.c writes rf_seqs (tests/cli_house.sh
 * checks); units.c gives a state back through rf_seqs_put (inline: units.c
 * calls no stage's file). mu held for every one. */
#ifndef RF_DECODE_H
#define RF_DECODE_H

#include "tsa.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct rf_engine rf_engine;
struct rf_format;

/* Sequential shards' decoder states (rf_format.decode_seq; decode.c):
 * threads + 1 of them when a shard is sequential, reserved at open, each
 * bound to the shard it last decoded (mu) */
typedef struct rf_seq_states {
	struct rf_seq_state {
		const struct rf_format *fmt;
		void *state; /* the format's (NULL until its first unit) */
		uint32_t shard;
		bool busy;     /* a worker decodes with it (outside mu) */
		bool stale;    /* bound to another shard: freed before its next use */
		uint64_t used; /* clock of its last use */
	} * v;
	uint32_t n;
	uint64_t clock;
} rf_seqs;

/* At open: n states (0 or -ENOMEM); freed at close. */
int rf_seqs_alloc(rf_engine *e, uint32_t n);
void rf_seqs_free(rf_engine *e);
/* A unit that held state `i` across its MORE reads is done with it. */
static inline void rf_seqs_put(rf_seqs *s, uint32_t i) RF_REQUIRES(rf_engine_mu)
{
	s->v[i].busy = false;
}

/* The workers' body. */
void *rf_worker_main(void *arg);
#endif
