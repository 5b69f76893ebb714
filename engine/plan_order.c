/* plan_order.c - the epoch's global stream (see plan.h): shards permuted
 * (seed, epoch), blocks inside each shard permuted (seed, epoch, shard), the
 * plan order cut into windows each permuted (seed, epoch, window number).
 * Window permutations are computed on demand, one window at a time, and
 * cached (PLAN_WINDOW_SLOTS windows), which bounds memory by the window size.
 * Pure: no I/O, no threads, no clocks. */
#include "plan_int.h"
#include "rng.h"
#include "util.h"

/* Keys that separate the streams of the three shuffles. */
enum { TAG_SHARDS = 0x5348, TAG_BLOCKS = 0x424c, TAG_WINDOW = 0x574e };

/* The permutation of global window `number` (n records), cached or computed. */
const uint32_t *rf_plan_window_perm(const rf_plan *plan, uint64_t number, uint32_t n)
{
	plan_cache *c = plan->cache;
	plan_window *victim = &c->slot[0];
	c->clock++;
	for (int i = 0; i < PLAN_WINDOW_SLOTS; i++) {
		if (c->slot[i].number == number) {
			c->slot[i].used = c->clock;
			return c->slot[i].perm;
		}
		if (c->slot[i].used < victim->used)
			victim = &c->slot[i];
	}
	for (uint32_t i = 0; i < n; i++)
		victim->perm[i] = i;
	rf_rng rng;
	rf_rng_init(&rng, plan->p.seed, TAG_WINDOW, plan->epoch, number, 0);
	rf_rng_shuffle_u32(&rng, victim->perm, n);
	victim->number = number;
	victim->used = c->clock;
	return victim->perm;
}

uint32_t rf_plan_window_size(const rf_plan *plan, uint64_t number)
{
	return (uint32_t)RF_MIN(plan->window, plan->total_records - number * plan->window);
}

/* Global stream position -> global plan position. */
uint64_t rf_plan_global_to_plan(const rf_plan *plan, uint64_t x)
{
	uint64_t w = plan->window;
	if (w <= 1)
		return x;
	uint64_t number = x / w, first = number * w;
	return first +
	       rf_plan_window_perm(plan, number, rf_plan_window_size(plan, number))[x - first];
}

void rf_plan_shard_order(rf_plan *plan, uint64_t epoch)
{
	for (uint32_t s = 0; s < plan->nshards; s++)
		plan->shard_order[s] = s;
	if (plan->p.shuffle) {
		rf_rng rng;
		rf_rng_init(&rng, plan->p.seed, TAG_SHARDS, epoch, 0, 0);
		rf_rng_shuffle_u32(&rng, plan->shard_order, plan->nshards);
	}
	uint64_t at = 0;
	for (uint32_t k = 0; k < plan->nshards; k++) {
		uint32_t s = plan->shard_order[k];
		plan->shard_start[k] = at;
		for (uint64_t b = plan->shard_first[s]; b < plan->shard_first[s + 1]; b++)
			at += plan->block_records[b];
	}
	plan->shard_start[plan->nshards] = at;
}

/* The block order of shard s in this epoch, into block_perm. */
uint32_t rf_plan_block_order(rf_plan *plan, uint32_t s)
{
	uint32_t n = (uint32_t)(plan->shard_first[s + 1] - plan->shard_first[s]);
	for (uint32_t i = 0; i < n; i++)
		plan->block_perm[i] = i;
	/* a sequential layout's units decode in order only: its records are
	 * still shuffled by the windows */
	if (plan->p.shuffle && n > 1 && !plan->shard_seq[s]) {
		rf_rng rng;
		rf_rng_init(&rng, plan->p.seed, TAG_BLOCKS, plan->epoch, s, 0);
		rf_rng_shuffle_u32(&rng, plan->block_perm, n);
	}
	return n;
}
