/* plan.c - the plan object (see plan.h, plan_int.h): checks and copies what
 * it needs of the shard indexes (records per block), owns the plan's memory
 * (reserved arrays, the window cache, scratch), takes the sequence of an
 * epoch after an elastic resume, and answers the dataset-wide questions
 * (bounds on units per window or span, the dataset's hash). Pure: no I/O, no
 * threads, no clocks. The order itself is plan_order.c's, the rank's part
 * plan_rank.c's. */
#include "plan_int.h"
#include "rng.h"
#include "util.h"

#include <stdlib.h>

static int plan_check_shards(const rf_shard_index *const *shards, uint32_t nshards, rf_error *err)
{
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
		const rf_shard_index *ix = shards[s];
		uint64_t sum = 0;
		for (uint32_t b = 0; b < ix->blocks; b++)
			sum += ix->block[b].records;
		if (sum != ix->records)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "plan: shard %u index says %llu records but its blocks hold %llu", s,
			    (unsigned long long)ix->records, (unsigned long long)sum);
	}
	return 0;
}

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
	return plan_check_shards(shards, nshards, err);
}

static void plan_copy_blocks(rf_plan *plan, const rf_shard_index *const *shards)
{
	uint64_t k = 0;
	plan->min_records = 0;
	for (uint32_t s = 0; s < plan->nshards; s++) {
		plan->shard_first[s] = k;
		plan->shard_seq[s] = shards[s]->sequential != 0;
		plan->shard_blocks_max = RF_MAX(plan->shard_blocks_max, shards[s]->blocks);
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

static int plan_alloc(rf_plan *plan, uint64_t blocks, rf_error *err)
{
	uint64_t n = plan->nshards;
	plan->shard_first = calloc(n + 1, sizeof(*plan->shard_first));
	plan->shard_order = calloc(n, sizeof(*plan->shard_order));
	plan->shard_seq = calloc(n ? n : 1, 1);
	plan->shard_start = calloc(n + 1, sizeof(*plan->shard_start));
	plan->cache = calloc(1, sizeof(*plan->cache));
	plan->block_records = calloc(blocks ? blocks : 1, sizeof(uint32_t));
	if (!plan->shard_first || !plan->shard_order || !plan->shard_seq || !plan->shard_start ||
	    !plan->cache || !plan->block_records)
		return rf_fail(err, -ENOMEM, "plan: out of memory for %llu shards",
		               (unsigned long long)n);
	plan->memory_bytes = sizeof(*plan) + sizeof(*plan->cache) +
	                     (n + 1) * (2 * sizeof(uint64_t)) + n * (sizeof(uint32_t) + 1) +
	                     blocks * sizeof(uint32_t);
	return 0;
}

static int plan_alloc_scratch(rf_plan *plan, rf_error *err)
{
	uint64_t cap = RF_MIN(plan->window, plan->total_records);
	plan->window_cap = (uint32_t)cap;
	for (int i = 0; i < PLAN_WINDOW_SLOTS; i++)
		plan->cache->slot[i].number = UINT64_MAX;
	plan->block_perm = calloc(RF_MAX(plan->shard_blocks_max, 1), sizeof(uint32_t));
	plan->marks = calloc(RF_MAX(cap, 1), 1);
	if (!plan->block_perm || !plan->marks)
		return rf_fail(err, -ENOMEM, "plan: out of memory for its scratch");
	plan->memory_bytes += (uint64_t)plan->shard_blocks_max * sizeof(uint32_t) + cap;
	if (plan->window <= 1 || cap == 0)
		return 0;
	for (int i = 0; i < PLAN_WINDOW_SLOTS; i++) {
		plan->cache->slot[i].perm = calloc(cap, sizeof(uint32_t));
		if (!plan->cache->slot[i].perm)
			return rf_fail(err, -ENOMEM,
			               "plan: out of memory for a window of %llu records",
			               (unsigned long long)cap);
	}
	plan->memory_bytes += PLAN_WINDOW_SLOTS * cap * sizeof(uint32_t);
	return 0;
}

/* Grows the unit array to hold `n` units. */
int rf_plan_units_reserve(rf_plan *plan, size_t n, rf_error *err)
{
	if (n <= plan->units_cap)
		return 0;
	size_t cap = RF_MAX(n, plan->units_cap + plan->units_cap / 2);
	rf_unit *u = realloc(plan->units, cap * sizeof(*u));
	if (!u)
		return rf_fail(err, -ENOMEM, "plan: out of memory for %zu units", cap);
	plan->memory_bytes += (cap - plan->units_cap) * sizeof(*u);
	plan->units = u;
	plan->units_cap = cap;
	return 0;
}

int rf_plan_pieces_reserve(rf_plan *plan, uint32_t n, rf_error *err)
{
	if (n <= plan->pieces_cap)
		return 0;
	plan_piece *p = realloc(plan->pieces, n * sizeof(*p));
	if (!p)
		return rf_fail(err, -ENOMEM, "plan: out of memory for %u pieces", n);
	plan->memory_bytes += (uint64_t)(n - plan->pieces_cap) * sizeof(*p);
	plan->pieces = p;
	plan->pieces_cap = n;
	return 0;
}

/* Units a rank's part of `records` records in `pieces` pieces can touch:
 * each piece covers its records plus two partial windows. */
static size_t plan_units_bound(const rf_plan *plan, uint64_t records, uint32_t pieces)
{
	if (plan->nonempty_blocks == 0)
		return 1;
	uint64_t spread = records + 2ull * pieces * plan->window;
	uint64_t bound = spread / plan->min_records + 2ull * pieces;
	return (size_t)RF_MIN(bound, plan->nonempty_blocks + 2ull * pieces);
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
	plan->epoch = plan->seq_epoch = UINT64_MAX;
	uint64_t blocks = 0;
	for (uint32_t s = 0; s < nshards; s++)
		blocks += shards[s]->blocks;
	int rc = plan_alloc(plan, blocks, err);
	if (rc == 0) {
		plan_copy_blocks(plan, shards);
		plan->whole = (rf_segment){0, plan->total_records};
		rc = plan_alloc_scratch(plan, err);
	}
	uint64_t per_rank = plan->total_records / p->world + 1;
	if (rc == 0)
		rc = rf_plan_units_reserve(plan, plan_units_bound(plan, per_rank, 2), err);
	if (rc == 0)
		rc = rf_plan_pieces_reserve(plan, 4, err);
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
	if (plan->mix)
		plan->mixops->free(plan->mix);
	if (plan->cache)
		for (int i = 0; i < PLAN_WINDOW_SLOTS; i++)
			free(plan->cache->slot[i].perm);
	free(plan->cache);
	free(plan->shard_first);
	free(plan->block_records);
	free(plan->shard_order);
	free(plan->shard_seq);
	free(plan->shard_start);
	free(plan->block_perm);
	free(plan->marks);
	free(plan->units);
	free(plan->pieces);
	free(plan->seq);
	free(plan->seq_prefix);
	free(plan);
}

int rf_plan_set_sequence(rf_plan *plan, uint64_t epoch, const rf_segment *segs, uint32_t nsegs,
                         uint64_t start, rf_error *err)
{
	if (nsegs > RF_PLAN_SEGMENTS_MAX)
		return rf_fail(err, -E2BIG, "plan: a sequence of %u segments, more than %u", nsegs,
		               RF_PLAN_SEGMENTS_MAX);
	uint64_t records = 0;
	for (uint32_t i = 0; segs && i < nsegs; i++) {
		if (segs[i].start > plan->total_records ||
		    segs[i].records > plan->total_records - segs[i].start)
			return rf_fail(err, -EINVAL,
			               "plan: segment %u [%llu, +%llu) is outside the epoch's %llu "
			               "records",
			               i, (unsigned long long)segs[i].start,
			               (unsigned long long)segs[i].records,
			               (unsigned long long)plan->total_records);
		records += segs[i].records;
	}
	free(plan->seq);
	free(plan->seq_prefix);
	plan->seq = NULL;
	plan->seq_prefix = NULL;
	plan->nseq = 0;
	if (segs) {
		plan->seq = malloc((nsegs ? nsegs : 1) * sizeof(*plan->seq));
		plan->seq_prefix = malloc((nsegs + 1) * sizeof(*plan->seq_prefix));
		if (!plan->seq || !plan->seq_prefix)
			return rf_fail(err, -ENOMEM, "plan: out of memory for a sequence");
		memcpy(plan->seq, segs, nsegs * sizeof(*segs));
		plan->nseq = nsegs;
		plan->memory_bytes += (uint64_t)nsegs * 24 + 8;
	}
	plan->seq_epoch = epoch;
	plan->seq_start = start;
	uint32_t pieces = (segs ? nsegs : 1) + 2;
	RF_TRY(rf_plan_pieces_reserve(plan, pieces, err));
	uint64_t per_rank = (segs ? records : plan->total_records) / plan->p.world + 1;
	return rf_plan_units_reserve(plan, plan_units_bound(plan, per_rank, pieces), err);
}

uint64_t rf_plan_total_records(const rf_plan *plan)
{
	return plan->total_records;
}

const rf_plan_params *rf_plan_params_of(const rf_plan *plan)
{
	return &plan->p;
}

uint32_t rf_plan_shard_count(const rf_plan *plan)
{
	return plan->nshards;
}

uint32_t rf_plan_units_in_window_max(const rf_plan *plan)
{
	if (plan->mix)
		return plan->mixops->units_in_window_max(plan);
	if (plan->nonempty_blocks == 0)
		return 0;
	uint64_t m = plan->min_records;
	uint64_t bound = plan->window <= 1 ? 1 : (plan->window + m - 1) / m + 1;
	bound = RF_MIN(bound, plan->nonempty_blocks);
	return (uint32_t)RF_MIN(bound, UINT32_MAX);
}

/* Over the non-empty blocks of at most `t` records: how many, their records,
 * and the fewest records of a block above t (UINT64_MAX: none). */
static uint64_t plan_blocks_upto(const rf_plan *plan, uint64_t t, uint64_t *count, uint64_t *next)
{
	uint64_t blocks = plan->shard_first[plan->nshards], sum = 0;
	*count = 0;
	*next = UINT64_MAX;
	for (uint64_t b = 0; b < blocks; b++) {
		uint64_t r = plan->block_records[b];
		if (r > 0 && r <= t) {
			sum += r;
			(*count)++;
		} else if (r > t && r < *next) {
			*next = r;
		}
	}
	return sum;
}

uint64_t rf_plan_span_units_max(const rf_plan *plan, uint64_t span_records)
{
	if (plan->mix)
		return plan->mixops->span_units_max(plan, span_records);
	/* Inside the span lie whole blocks holding at most span_records records,
	 * at most the fewest-record ones side by side, and two more cut by its
	 * ends (0-record blocks are no units). Taking the fewest-record blocks first:
	 * every block of at most t records, for the largest t whose blocks fit
	 * (a binary search, no memory), then as many of the next size as fit. */
	uint64_t lo = 0, hi = UINT32_MAX, count, next;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		if (plan_blocks_upto(plan, mid, &count, &next) <= span_records)
			lo = mid;
		else
			hi = mid - 1;
	}
	uint64_t sum = plan_blocks_upto(plan, lo, &count, &next);
	uint64_t inside = count + (next == UINT64_MAX ? 0 : (span_records - sum) / next);
	return RF_MIN(plan->nonempty_blocks, inside + 2);
}

uint64_t rf_plan_memory_bytes(const rf_plan *plan)
{
	return plan->memory_bytes + (plan->mix ? plan->mixops->memory_bytes(plan) : 0);
}

uint64_t rf_plan_dataset_hash(const rf_plan *plan)
{
	if (plan->mix)
		return plan->mixops->hash(plan);
	uint64_t h = rf_mix64(0x44415441ull ^ plan->nshards);
	for (uint32_t s = 0; s < plan->nshards; s++) {
		uint64_t first = plan->shard_first[s], end = plan->shard_first[s + 1];
		h = rf_mix64(h ^ (end - first));
		for (uint64_t b = first; b < end; b++)
			h = rf_mix64(h ^ plan->block_records[b]);
	}
	return h;
}
