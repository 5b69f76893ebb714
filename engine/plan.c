/* plan.c - the visitation order (see plan.h): shard permutation, rank slices,
 * block permutation, and the windowed record permutation. Pure: no I/O, no
 * threads, no clocks. The window permutation is computed on demand, one
 * window at a time, and cached (two windows, so a batch straddling a window
 * boundary does not recompute), which bounds memory by the window size. */
#include "plan.h"
#include "rng.h"
#include "util.h"

#include <stdlib.h>

/* Keys that separate the streams of the three shuffles. */
enum { TAG_SHARDS = 0x5348, TAG_BLOCKS = 0x424c, TAG_WINDOW = 0x574e };

#define WINDOW_SLOTS 2

typedef struct plan_window {
	uint64_t number; /* window number, UINT64_MAX when the slot is empty */
	uint64_t used;   /* clock of the last use, for replacement */
	uint32_t *perm;  /* window_cap entries */
} plan_window;

/* Mutable cache behind a const plan: locate is a lookup for its callers. Not
 * thread-safe: one thread (the collator) locates at a time. */
typedef struct plan_cache {
	uint64_t clock;
	plan_window slot[WINDOW_SLOTS];
} plan_cache;

struct rf_plan {
	rf_plan_params p;
	uint64_t window; /* effective window: 1 when not shuffling */
	uint32_t nshards;
	uint64_t *shard_first;   /* nshards + 1: first block of each shard in block_records */
	uint32_t *block_records; /* records per block, all shards */
	uint64_t total_blocks;
	uint64_t total_records;
	uint64_t nonempty_blocks;
	uint32_t min_records;  /* fewest records in a non-empty block (0: none) */
	uint64_t slice_max;    /* most blocks any rank gets */
	uint32_t *shard_order; /* nshards */
	rf_unit *units;        /* slice_max */
	size_t unit_count;
	uint64_t epoch;
	uint64_t epoch_records;
	uint32_t window_cap; /* entries per cached window permutation */
	plan_cache *cache;
	uint64_t memory_bytes;
};

static int plan_check(const rf_plan_params *p, const rf_shard_index *const *shards,
                      uint32_t nshards, rf_error *err)
{
	if (!p || !shards || nshards == 0)
		return rf_fail(err, -EINVAL, "plan: no shards");
	if (p->world == 0 || p->rank >= p->world)
		return rf_fail(err, -EINVAL, "plan: rank %u is not below world size %u", p->rank,
		               p->world);
	if (p->shuffle && p->shuffle_window > RF_PLAN_WINDOW_MAX)
		return rf_fail(err, -EINVAL,
		               "plan: shuffle window %u records exceeds the maximum %u",
		               p->shuffle_window, RF_PLAN_WINDOW_MAX);
	uint64_t blocks = 0;
	for (uint32_t s = 0; s < nshards; s++) {
		const rf_shard_index *ix = shards[s];
		if (!ix || (ix->blocks > 0 && !ix->block))
			return rf_fail(err, -EINVAL, "plan: shard %u has no index", s);
		if (ix->blocks > RF_INDEX_BLOCKS_MAX)
			return rf_fail(err, -EINVAL, "plan: shard %u has %u blocks, more than %u",
			               s, ix->blocks, RF_INDEX_BLOCKS_MAX);
		blocks += ix->blocks;
	}
	if (blocks > RF_PLAN_UNITS_MAX)
		return rf_fail(err, -E2BIG,
		               "plan: %llu blocks in all shards, more than the %u a plan holds",
		               (unsigned long long)blocks, RF_PLAN_UNITS_MAX);
	for (uint32_t s = 0; s < nshards; s++) {
		uint64_t sum = 0;
		for (uint32_t b = 0; b < shards[s]->blocks; b++)
			sum += shards[s]->block[b].records;
		if (sum != shards[s]->records)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "plan: shard %u index says %llu records but its blocks hold %llu", s,
			    (unsigned long long)shards[s]->records, (unsigned long long)sum);
	}
	return 0;
}

static void plan_copy_blocks(rf_plan *plan, const rf_shard_index *const *shards)
{
	uint64_t k = 0;
	plan->min_records = 0;
	for (uint32_t s = 0; s < plan->nshards; s++) {
		plan->shard_first[s] = k;
		for (uint32_t b = 0; b < shards[s]->blocks; b++) {
			uint32_t n = shards[s]->block[b].records;
			plan->block_records[k++] = n;
			plan->total_records += n;
			if (n == 0)
				continue;
			plan->nonempty_blocks++;
			if (plan->min_records == 0 || n < plan->min_records)
				plan->min_records = n;
		}
	}
	plan->shard_first[plan->nshards] = k;
	plan->total_blocks = k;
}

static int plan_alloc(rf_plan *plan, rf_error *err)
{
	uint64_t n = plan->nshards;
	plan->shard_first = calloc(n + 1, sizeof(*plan->shard_first));
	plan->shard_order = calloc(n, sizeof(*plan->shard_order));
	plan->cache = calloc(1, sizeof(*plan->cache));
	if (!plan->shard_first || !plan->shard_order || !plan->cache)
		return rf_fail(err, -ENOMEM, "plan: out of memory for %llu shards",
		               (unsigned long long)n);
	plan->memory_bytes = sizeof(*plan) + sizeof(*plan->cache) +
	                     (n + 1) * sizeof(*plan->shard_first) + n * sizeof(*plan->shard_order);
	return 0;
}

static int plan_alloc_blocks(rf_plan *plan, uint64_t blocks, rf_error *err)
{
	uint64_t w = plan->p.world;
	plan->slice_max = (blocks + w - 1) / w;
	plan->block_records = calloc(blocks ? blocks : 1, sizeof(uint32_t));
	plan->units = calloc(plan->slice_max ? plan->slice_max : 1, sizeof(rf_unit));
	if (!plan->block_records || !plan->units)
		return rf_fail(err, -ENOMEM, "plan: out of memory for %llu blocks",
		               (unsigned long long)blocks);
	plan->memory_bytes += blocks * sizeof(uint32_t) + plan->slice_max * sizeof(rf_unit);
	return 0;
}

static int plan_alloc_windows(rf_plan *plan, rf_error *err)
{
	uint64_t cap = RF_MIN(plan->window, plan->total_records);
	plan->window_cap = (uint32_t)cap;
	for (int i = 0; i < WINDOW_SLOTS; i++)
		plan->cache->slot[i].number = UINT64_MAX;
	if (plan->window <= 1 || cap == 0)
		return 0;
	for (int i = 0; i < WINDOW_SLOTS; i++) {
		plan->cache->slot[i].perm = calloc(cap, sizeof(uint32_t));
		if (!plan->cache->slot[i].perm)
			return rf_fail(err, -ENOMEM,
			               "plan: out of memory for a window of %llu records",
			               (unsigned long long)cap);
	}
	plan->memory_bytes += WINDOW_SLOTS * cap * sizeof(uint32_t);
	return 0;
}

int rf_plan_new(const rf_plan_params *p, const rf_shard_index *const *shards, uint32_t nshards,
                rf_plan **out, rf_error *err)
{
	*out = NULL;
	RF_TRY(plan_check(p, shards, nshards, err));
	rf_plan *plan = calloc(1, sizeof(*plan));
	if (!plan)
		return rf_fail(err, -ENOMEM, "plan: out of memory");
	plan->p = *p;
	plan->window = p->shuffle && p->shuffle_window > 1 ? p->shuffle_window : 1;
	plan->nshards = nshards;
	plan->epoch = UINT64_MAX;
	uint64_t blocks = 0;
	for (uint32_t s = 0; s < nshards; s++)
		blocks += shards[s]->blocks;
	int rc = plan_alloc(plan, err);
	if (rc == 0)
		rc = plan_alloc_blocks(plan, blocks, err);
	if (rc == 0) {
		plan_copy_blocks(plan, shards);
		rc = plan_alloc_windows(plan, err);
	}
	if (rc < 0) {
		rf_plan_free(plan);
		return rc;
	}
	*out = plan;
	return 0;
}

void rf_plan_free(rf_plan *plan)
{
	if (!plan)
		return;
	if (plan->cache)
		for (int i = 0; i < WINDOW_SLOTS; i++)
			free(plan->cache->slot[i].perm);
	free(plan->cache);
	free(plan->shard_first);
	free(plan->block_records);
	free(plan->shard_order);
	free(plan->units);
	free(plan);
}

/* Appends the blocks [first, end) of shard s, permuted when shuffling. */
static void plan_add_run(rf_plan *plan, uint64_t epoch, uint32_t s, uint64_t first, uint64_t end)
{
	rf_unit *run = plan->units + plan->unit_count;
	uint64_t n = end - first;
	for (uint64_t i = 0; i < n; i++) {
		run[i] = (rf_unit){.shard = s, .block = (uint32_t)(first + i)};
		run[i].records = plan->block_records[plan->shard_first[s] + first + i];
	}
	if (plan->p.shuffle && n > 1) {
		rf_rng rng;
		rf_rng_init(&rng, plan->p.seed, TAG_BLOCKS, epoch, s, plan->p.rank);
		for (uint64_t i = n; i > 1; i--) {
			uint64_t j = rf_rng_below(&rng, i);
			rf_unit t = run[i - 1];
			run[i - 1] = run[j];
			run[j] = t;
		}
	}
	plan->unit_count += n;
}

/* Window arithmetic: the release position of a unit is the end of the window
 * holding its last record; an empty unit inherits the previous one's, so
 * release positions never decrease along the units. */
static void plan_positions(rf_plan *plan)
{
	uint64_t pos = 0, release = 0, w = plan->window;
	for (size_t i = 0; i < plan->unit_count; i++) {
		rf_unit *u = &plan->units[i];
		u->first_plan_record = pos;
		pos += u->records;
		if (u->records > 0)
			release = (pos + w - 1) / w * w;
		u->release_pos = release;
	}
	plan->epoch_records = pos;
	for (size_t i = 0; i < plan->unit_count; i++)
		plan->units[i].release_pos = RF_MIN(plan->units[i].release_pos, pos);
}

int rf_plan_epoch(rf_plan *plan, uint64_t epoch, rf_error *err)
{
	(void)err;
	for (uint32_t s = 0; s < plan->nshards; s++)
		plan->shard_order[s] = s;
	if (plan->p.shuffle) {
		rf_rng rng;
		rf_rng_init(&rng, plan->p.seed, TAG_SHARDS, epoch, 0, 0);
		rf_rng_shuffle_u32(&rng, plan->shard_order, plan->nshards);
	}
	uint64_t b = plan->total_blocks, w = plan->p.world, r = plan->p.rank;
	uint64_t lo = r * b / w, hi = (r + 1) * b / w, start = 0;
	plan->unit_count = 0;
	for (uint32_t k = 0; k < plan->nshards && start < hi; k++) {
		uint32_t s = plan->shard_order[k];
		uint64_t nb = plan->shard_first[s + 1] - plan->shard_first[s];
		uint64_t a = RF_MAX(lo, start), e = RF_MIN(hi, start + nb);
		if (a < e)
			plan_add_run(plan, epoch, s, a - start, e - start);
		start += nb;
	}
	plan->epoch = epoch;
	plan_positions(plan);
	for (int i = 0; i < WINDOW_SLOTS; i++)
		plan->cache->slot[i].number = UINT64_MAX;
	return 0;
}

uint64_t rf_plan_epoch_records(const rf_plan *plan)
{
	return plan->epoch_records;
}

size_t rf_plan_unit_count(const rf_plan *plan)
{
	return plan->unit_count;
}

const rf_unit *rf_plan_unit(const rf_plan *plan, size_t i)
{
	return i < plan->unit_count ? &plan->units[i] : NULL;
}

/* The permutation of window `number` (n records), from the cache or computed. */
static const uint32_t *plan_window_perm(const rf_plan *plan, uint64_t number, uint32_t n)
{
	plan_cache *c = plan->cache;
	plan_window *victim = &c->slot[0];
	c->clock++;
	for (int i = 0; i < WINDOW_SLOTS; i++) {
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
	rf_rng_init(&rng, plan->p.seed, TAG_WINDOW, plan->epoch, plan->p.rank, number);
	rf_rng_shuffle_u32(&rng, victim->perm, n);
	victim->number = number;
	victim->used = c->clock;
	return victim->perm;
}

uint64_t rf_plan_stream_to_plan(const rf_plan *plan, uint64_t stream_pos)
{
	uint64_t w = plan->window;
	if (w <= 1 || stream_pos >= plan->epoch_records)
		return stream_pos;
	uint64_t number = stream_pos / w, first = number * w;
	uint32_t n = (uint32_t)RF_MIN(w, plan->epoch_records - first);
	return first + plan_window_perm(plan, number, n)[stream_pos - first];
}

void rf_plan_locate(const rf_plan *plan, uint64_t stream_pos, size_t *unit, uint32_t *record)
{
	*unit = plan->unit_count;
	*record = 0;
	if (stream_pos >= plan->epoch_records)
		return;
	uint64_t p = rf_plan_stream_to_plan(plan, stream_pos);
	/* Last unit whose first record is <= p: never an empty one (an empty
	 * unit shares its first record with the next unit). */
	size_t lo = 0, hi = plan->unit_count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (plan->units[mid].first_plan_record <= p)
			lo = mid;
		else
			hi = mid;
	}
	*unit = lo;
	*record = (uint32_t)(p - plan->units[lo].first_plan_record);
}

size_t rf_plan_first_unit_needed(const rf_plan *plan, uint64_t stream_pos)
{
	size_t lo = 0, hi = plan->unit_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (plan->units[mid].release_pos <= stream_pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t rf_plan_units_in_window_max(const rf_plan *plan)
{
	if (plan->nonempty_blocks == 0)
		return 0;
	uint64_t m = plan->min_records;
	uint64_t bound = plan->window <= 1 ? 1 : (plan->window + m - 1) / m + 1;
	bound = RF_MIN(bound, plan->nonempty_blocks);
	bound = RF_MIN(bound, plan->slice_max);
	return (uint32_t)RF_MIN(bound, UINT32_MAX);
}

uint64_t rf_plan_memory_bytes(const rf_plan *plan)
{
	return plan->memory_bytes;
}

uint64_t rf_plan_hash(const rf_plan *plan, uint64_t h)
{
	const rf_plan_params *p = &plan->p;
	h = rf_mix64(h ^ p->seed);
	h = rf_mix64(h ^ ((uint64_t)p->rank << 32 | p->world));
	h = rf_mix64(h ^ ((uint64_t)p->shuffle << 32 | plan->window));
	h = rf_mix64(h ^ plan->nshards);
	for (uint32_t s = 0; s < plan->nshards; s++) {
		uint64_t first = plan->shard_first[s], end = plan->shard_first[s + 1];
		h = rf_mix64(h ^ (end - first));
		for (uint64_t b = first; b < end; b++)
			h = rf_mix64(h ^ plan->block_records[b]);
	}
	return h;
}
