/* ready.c - the ready queue's stage (ready.h): the batches the collator
 * planned, in stream order, and the batches the consumer holds. The only
 * writer of e->ready-> mu held for every call. */
#include "engine.h"

void rf_ready_push(rf_engine *e, rf_ebatch *b) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	e->ready->q[e->ready->tail++ % RF_READY_MAX] = b;
}

rf_ebatch *rf_ready_take(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->ready->head == e->ready->tail || !e->ready->q[e->ready->head % RF_READY_MAX]->filled)
		return NULL;
	rf_ebatch *b = e->ready->q[e->ready->head++ % RF_READY_MAX];
	rf_list_push_front(&e->ready->held_list, &b->held);
	b->held_now = true;
	e->ready->held++;
	return b;
}

void rf_ready_give_back(rf_engine *e, rf_ebatch *b) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	b->held_now = false;
	rf_list_remove(&e->ready->held_list, &b->held);
	e->ready->held--;
}

rf_ebatch *rf_ready_drain(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->ready->head != e->ready->tail)
		return e->ready->q[e->ready->head++ % RF_READY_MAX];
	rf_ebatch *b = rf_list_entry_or_null(e->ready->held_list.head, rf_ebatch, held);
	if (b)
		rf_ready_give_back(e, b);
	return b;
}

uint64_t rf_ready_held_bytes(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t bytes = 0;
	rf_list_for_each(n, next, &e->ready->held_list) bytes +=
	    rf_list_entry(n, rf_ebatch, held)->reserved_bytes;
	return bytes;
}
