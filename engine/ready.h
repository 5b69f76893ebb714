/* ready.h - the ready queue's stage (ready.c): batches the collator
 * planned, in stream order, and the batches the consumer holds. Only
 * ready.c writes rf_ready (tests/cli_house.sh checks): the collator pushes,
 * rf_next takes, rf_release gives back. mu held for every one. */
#ifndef RF_READY_H
#define RF_READY_H

#include "list.h"
#include "tsa.h"
#include <stdbool.h>
#include <stdint.h>

#define RF_READY_MAX 4096 /* ready queue capacity (depth bound) */

typedef struct rf_engine rf_engine;
struct rf_ebatch;

/* the ready queue and the batches the consumer holds (mu) */
typedef struct rf_engine_ready {
	struct rf_ebatch *q[RF_READY_MAX];
	uint64_t head, tail;
	uint32_t held;     /* batches handed out, not yet released */
	rf_list held_list; /* of rf_ebatch (held) */
} rf_ready;

/* The collator queues a planned batch (a worker fills it later). */
void rf_ready_push(rf_engine *e, struct rf_ebatch *b) RF_REQUIRES(rf_engine_mu);
/* The head batch, when it is filled: taken off the queue and held by the
 * consumer; NULL when none is ready. */
struct rf_ebatch *rf_ready_take(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* The consumer gave a held batch back. */
void rf_ready_give_back(rf_engine *e, struct rf_ebatch *b) RF_REQUIRES(rf_engine_mu);
/* At close: every queued and held batch, off the queue, one at a time
 * (NULL: none left). */
struct rf_ebatch *rf_ready_drain(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* The bytes the held batches reserved (the held stall's message). */
uint64_t rf_ready_held_bytes(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* Batches queued (filled or not). */
static inline uint64_t rf_ready_count(const rf_ready *r) RF_REQUIRES(rf_engine_mu)
{
	return r->tail - r->head;
}
#endif
