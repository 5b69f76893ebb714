/* ring.h - the unit ring's stage (units.c): the slots of admitted units,
 * the decode queue (jobs) and the re-read queue, and the two cursors over
 * the slots (tail: oldest not released; frontier: first not decoded). Only
 * units.c writes rf_ring (tests/cli_house.sh checks); the scheduler,
 * workers and collator call the functions below. mu held for every one. */
#ifndef RF_RING_H
#define RF_RING_H

#include "tsa.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct rf_engine rf_engine;
struct rf_unit_slot;

/* the unit ring and its queues (mu; slots by state, see units.c) */
typedef struct rf_engine_ring {
	struct rf_unit_slot *slots;
	uint64_t units;        /* slots: units admitted and not yet released (power of 2, at least
	                          what one batch's windows span: rf_memory_check) */
	uint64_t tail_seq;     /* oldest unit not released */
	uint64_t frontier_seq; /* first unit not DECODED */
	uint64_t *jobs;        /* decode queue of seqs (ring_units) */
	uint64_t jobs_head, jobs_tail;
	uint64_t *rereads; /* units whose frame failed its checksum: the loop thread reads
	                      them again (ring_units; a unit is queued once) */
	uint64_t rereads_head, rereads_tail;
	uint32_t decoding;
} rf_ring;

/* At open: the slots (a power of 2), then the arrays (0 or -ENOMEM). */
void rf_ring_size_set(rf_engine *e, uint64_t units);
int rf_ring_alloc(rf_engine *e);
void rf_ring_free(rf_engine *e);
/* The decode queue: a unit whose bytes are in; the next one (false: none). */
void rf_ring_job_push(rf_engine *e, uint64_t seq) RF_REQUIRES(rf_engine_mu);
bool rf_ring_job_pop(rf_engine *e, uint64_t *seq) RF_REQUIRES(rf_engine_mu);
/* The re-read queue (workers push, the loop thread pops). */
void rf_ring_reread_push(rf_engine *e, uint64_t seq) RF_REQUIRES(rf_engine_mu);
bool rf_ring_reread_pop(rf_engine *e, uint64_t *seq) RF_REQUIRES(rf_engine_mu);
/* The unit just popped goes back to the queue's head (the loop had no room). */
void rf_ring_reread_unpop(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* A worker starts / ends a decode outside mu (counted: the stall check). */
void rf_ring_decode_begin(rf_engine *e) RF_REQUIRES(rf_engine_mu);
void rf_ring_decode_end(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* The collator released the oldest unit (its slot is free again). */
void rf_ring_tail_advance(rf_engine *e) RF_REQUIRES(rf_engine_mu);
#endif
