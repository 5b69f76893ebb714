/* plan.c - the visitation order (see plan.h): the epoch's global stream
 * (shard permutation, block permutation, windowed record permutation over the
 * whole dataset), the sequence (the stream, or what an elastic resume left of
 * it), and this rank's equal slice of the sequence as pieces and units. Pure:
 * no I/O, no threads, no clocks. Window permutations are computed on demand,
 * one window at a time, and cached (two windows), which bounds memory by the
 * window size. */
#include "plan.h"
#include "rng.h"
#include "util.h"

#include <stdlib.h>

/* Keys that separate the streams of the three shuffles. */
enum { TAG_SHARDS = 0x5348, TAG_BLOCKS = 0x424c, TAG_WINDOW = 0x574e };

#define WINDOW_SLOTS 2

typedef struct plan_window {
	uint64_t number; /* global window number, UINT64_MAX when the slot is empty */
	uint64_t used;   /* clock of the last use, for replacement */
	uint32_t *perm;  /* window_cap entries */
} plan_window;

/* Mutable cache behind a const plan: locate is a lookup for its callers. Not
 * thread-safe: one thread (the collator) locates at a time. */
typedef struct plan_cache {
	uint64_t clock;
	plan_window slot[WINDOW_SLOTS];
} plan_cache;

/* A contiguous range of the global stream in this rank's part. */
typedef struct plan_piece {
	uint64_t x, len; /* global stream range [x, x + len) */
	uint64_t wa, wb; /* global plan range of its windows */
	uint64_t q;      /* local stream position of x */
	uint64_t p;      /* local plan position of its first unit */
	uint64_t g;      /* global plan position of its first unit */
	uint64_t plen;   /* records of its units */
	size_t u0, u1;   /* its units */
} plan_piece;

struct rf_plan {
	rf_plan_params p;
	uint64_t window; /* effective window: 1 when not shuffling */
	uint32_t nshards;
	uint64_t *shard_first;   /* nshards + 1: first block of each shard in block_records */
	uint32_t *block_records; /* records per block, all shards */
	uint64_t total_blocks;
	uint64_t total_records; /* N */
	uint64_t nonempty_blocks;
	uint32_t min_records; /* fewest records in a non-empty block (0: none) */
	uint32_t shard_blocks_max;
	uint32_t *shard_order; /* nshards */
	uint64_t *shard_start; /* nshards + 1: global plan position of each shard in order */
	uint32_t *block_perm;  /* shard_blocks_max: scratch */
	uint8_t *marks;        /* window_cap: scratch for boundary windows */
	rf_unit *units;
	size_t unit_count, units_cap;
	plan_piece *pieces;
	uint32_t npieces, pieces_cap;
	rf_segment *seq; /* the override sequence of seq_epoch */
	uint64_t *seq_prefix;
	uint32_t nseq;
	uint64_t seq_epoch, seq_start;
	rf_segment whole;
	uint64_t epoch;
	uint64_t epoch_records, plan_records, slice;
	rf_plan_tail tail;
	uint32_t window_cap; /* entries per cached window permutation */
	plan_cache *cache;
	uint64_t memory_bytes;
};

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
	plan->shard_start = calloc(n + 1, sizeof(*plan->shard_start));
	plan->cache = calloc(1, sizeof(*plan->cache));
	plan->block_records = calloc(blocks ? blocks : 1, sizeof(uint32_t));
	if (!plan->shard_first || !plan->shard_order || !plan->shard_start || !plan->cache ||
	    !plan->block_records)
		return rf_fail(err, -ENOMEM, "plan: out of memory for %llu shards",
		               (unsigned long long)n);
	plan->memory_bytes = sizeof(*plan) + sizeof(*plan->cache) +
	                     (n + 1) * (2 * sizeof(uint64_t)) + n * sizeof(uint32_t) +
	                     blocks * sizeof(uint32_t);
	return 0;
}

static int plan_alloc_scratch(rf_plan *plan, rf_error *err)
{
	uint64_t cap = RF_MIN(plan->window, plan->total_records);
	plan->window_cap = (uint32_t)cap;
	for (int i = 0; i < WINDOW_SLOTS; i++)
		plan->cache->slot[i].number = UINT64_MAX;
	plan->block_perm = calloc(RF_MAX(plan->shard_blocks_max, 1), sizeof(uint32_t));
	plan->marks = calloc(RF_MAX(cap, 1), 1);
	if (!plan->block_perm || !plan->marks)
		return rf_fail(err, -ENOMEM, "plan: out of memory for its scratch");
	plan->memory_bytes += (uint64_t)plan->shard_blocks_max * sizeof(uint32_t) + cap;
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

/* Grows the unit array to hold `n` units. */
static int plan_units_reserve(rf_plan *plan, size_t n, rf_error *err)
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

static int plan_pieces_reserve(rf_plan *plan, uint32_t n, rf_error *err)
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
		rc = plan_units_reserve(plan, plan_units_bound(plan, per_rank, 2), err);
	if (rc == 0)
		rc = plan_pieces_reserve(plan, 4, err);
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
	RF_TRY(plan_pieces_reserve(plan, pieces, err));
	uint64_t per_rank = (segs ? records : plan->total_records) / plan->p.world + 1;
	return plan_units_reserve(plan, plan_units_bound(plan, per_rank, pieces), err);
}

/* ------------------------------------------------------------ the stream */

/* The permutation of global window `number` (n records), cached or computed. */
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
	rf_rng_init(&rng, plan->p.seed, TAG_WINDOW, plan->epoch, number, 0);
	rf_rng_shuffle_u32(&rng, victim->perm, n);
	victim->number = number;
	victim->used = c->clock;
	return victim->perm;
}

static uint32_t plan_window_size(const rf_plan *plan, uint64_t number)
{
	return (uint32_t)RF_MIN(plan->window, plan->total_records - number * plan->window);
}

/* Global stream position -> global plan position. */
static uint64_t plan_global_to_plan(const rf_plan *plan, uint64_t x)
{
	uint64_t w = plan->window;
	if (w <= 1)
		return x;
	uint64_t number = x / w, first = number * w;
	return first + plan_window_perm(plan, number, plan_window_size(plan, number))[x - first];
}

static void plan_shard_order(rf_plan *plan, uint64_t epoch)
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
static uint32_t plan_block_order(rf_plan *plan, uint32_t s)
{
	uint32_t n = (uint32_t)(plan->shard_first[s + 1] - plan->shard_first[s]);
	for (uint32_t i = 0; i < n; i++)
		plan->block_perm[i] = i;
	if (plan->p.shuffle && n > 1) {
		rf_rng rng;
		rf_rng_init(&rng, plan->p.seed, TAG_BLOCKS, plan->epoch, s, 0);
		rf_rng_shuffle_u32(&rng, plan->block_perm, n);
	}
	return n;
}

/* ------------------------------------------------------- the rank's part */

static void plan_add_piece(rf_plan *plan, uint64_t x, uint64_t len)
{
	plan_piece *last = plan->npieces ? &plan->pieces[plan->npieces - 1] : NULL;
	if (last && last->x + last->len == x) {
		last->len += len;
		return;
	}
	plan->pieces[plan->npieces++] = (plan_piece){.x = x, .len = len};
}

/* Sequence position (below the sequence's length) -> segment index. */
static uint32_t plan_seq_find(const rf_segment *seq, const uint64_t *prefix, uint32_t n,
                              uint64_t pos)
{
	uint32_t lo = 0, hi = n;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (prefix[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	(void)seq;
	return lo;
}

/* This rank's slice of the sequence, as pieces of the global stream. */
static void plan_pieces(rf_plan *plan, const rf_segment *seq, const uint64_t *prefix, uint32_t nseq,
                        uint64_t length, uint64_t from, uint64_t count)
{
	plan->npieces = 0;
	while (count > 0) {
		uint64_t at = from % length;
		uint32_t j = plan_seq_find(seq, prefix, nseq, at);
		uint64_t off = at - prefix[j];
		uint64_t take = RF_MIN(count, seq[j].records - off);
		if (take == 0)
			break; /* unreachable: the last segment starting at or before `at` holds it
			        */
		plan_add_piece(plan, seq[j].start + off, take);
		from += take;
		count -= take;
	}
}

/* Appends the units of the blocks overlapping the piece's windows. */
static int plan_piece_units(rf_plan *plan, plan_piece *pc, uint64_t local_plan, rf_error *err)
{
	uint64_t w = plan->window, n = plan->total_records;
	pc->wa = pc->x / w * w;
	pc->wb = RF_MIN(n, (pc->x + pc->len + w - 1) / w * w);
	uint32_t lo = 0, hi = plan->nshards; /* last shard starting at or before wa */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (plan->shard_start[mid] <= pc->wa)
			lo = mid;
		else
			hi = mid;
	}
	pc->u0 = plan->unit_count;
	pc->p = local_plan;
	pc->g = UINT64_MAX;
	for (uint32_t k = lo; k < plan->nshards && plan->shard_start[k] < pc->wb; k++) {
		uint32_t s = plan->shard_order[k], nb = plan_block_order(plan, s);
		uint64_t pos = plan->shard_start[k];
		for (uint32_t i = 0; i < nb && pos < pc->wb; i++) {
			uint32_t b = plan->block_perm[i];
			uint32_t rec = plan->block_records[plan->shard_first[s] + b];
			if (rec == 0 || pos + rec <= pc->wa) {
				pos += rec;
				continue;
			}
			RF_TRY(plan_units_reserve(plan, plan->unit_count + 1, err));
			if (pc->g == UINT64_MAX)
				pc->g = pos;
			uint64_t rel = RF_MIN(n, (pos + rec + w - 1) / w * w);
			rel = rel > pc->x ? RF_MIN(rel - pc->x, pc->len) : 0;
			plan->units[plan->unit_count++] =
			    (rf_unit){.shard = s,
			              .block = b,
			              .records = rec,
			              .unused = true,
			              .first_plan_record = local_plan + (pos - pc->g),
			              .release_pos = pc->q + rel};
			pos += rec;
		}
	}
	if (pc->g == UINT64_MAX)
		pc->g = pc->wa;
	pc->u1 = plan->unit_count;
	pc->plen = 0;
	for (size_t u = pc->u0; u < pc->u1; u++)
		pc->plen += plan->units[u].records;
	return 0;
}

/* Marks used the units of piece pc holding a plan position in [a, b). */
static void plan_use_range(rf_plan *plan, const plan_piece *pc, uint64_t a, uint64_t b)
{
	for (size_t u = pc->u0; u < pc->u1 && a < b; u++) {
		rf_unit *un = &plan->units[u];
		uint64_t gs = pc->g + (un->first_plan_record - pc->p), ge = gs + un->records;
		if (gs < b && ge > a)
			un->unused = false;
	}
}

/* A boundary window k of the piece only partly in its stream range: marks
 * used the units holding the plan positions of its in-range records. */
static void plan_use_window(rf_plan *plan, const plan_piece *pc, uint64_t k)
{
	uint64_t w = plan->window, first = k * w;
	uint32_t n = plan_window_size(plan, k);
	uint64_t a = RF_MAX(pc->x, first), b = RF_MIN(pc->x + pc->len, first + n);
	if (a == first && b == first + n) {
		plan_use_range(plan, pc, first, first + n);
		return;
	}
	const uint32_t *perm = plan_window_perm(plan, k, n);
	memset(plan->marks, 0, n);
	for (uint64_t i = a; i < b; i++)
		plan->marks[perm[i - first]] = 1;
	for (size_t u = pc->u0; u < pc->u1; u++) {
		rf_unit *un = &plan->units[u];
		uint64_t gs = pc->g + (un->first_plan_record - pc->p), ge = gs + un->records;
		uint64_t s = RF_MAX(gs, first), e = RF_MIN(ge, first + n);
		for (uint64_t g = s; g < e && un->unused; g++)
			if (plan->marks[g - first])
				un->unused = false;
	}
}

static void plan_piece_use(rf_plan *plan, const plan_piece *pc)
{
	uint64_t w = plan->window;
	if (pc->len == 0)
		return;
	if (w <= 1) {
		plan_use_range(plan, pc, pc->x, pc->x + pc->len);
		return;
	}
	uint64_t ka = pc->wa / w, kb = (pc->wb - 1) / w;
	plan_use_window(plan, pc, ka);
	if (kb > ka)
		plan_use_window(plan, pc, kb);
	if (kb > ka + 1)
		plan_use_range(plan, pc, (ka + 1) * w, kb * w);
}

uint64_t rf_plan_partition(const rf_plan *plan, uint64_t length, uint64_t start, rf_plan_tail *tail)
{
	uint64_t w = plan->p.world;
	uint64_t s = length == 0 ? 0 : plan->p.pad ? (length + w - 1) / w : length / w;
	uint64_t eff = s;
	if (plan->p.drop_last > 0 && start <= s)
		eff = start + (s - start) / plan->p.drop_last * plan->p.drop_last;
	*tail = (rf_plan_tail){.sequence_records = length,
	                       .slice_records = s,
	                       .dropped_records = plan->p.pad ? 0 : length - s * w,
	                       .padded_records = plan->p.pad ? s * w - length : 0,
	                       .drop_last_records = s - eff};
	return eff;
}

/* The partition: S per rank, this rank's count after drop_last, the tail. */
static void plan_partition(rf_plan *plan, uint64_t length, uint64_t start, uint64_t *from,
                           uint64_t *count)
{
	*count = rf_plan_partition(plan, length, start, &plan->tail);
	plan->slice = plan->tail.slice_records;
	*from = (uint64_t)plan->p.rank * plan->slice;
}

int rf_plan_epoch(rf_plan *plan, uint64_t epoch, rf_error *err)
{
	plan->epoch = epoch;
	for (int i = 0; i < WINDOW_SLOTS; i++)
		plan->cache->slot[i].number = UINT64_MAX;
	plan_shard_order(plan, epoch);
	bool over = epoch == plan->seq_epoch && plan->seq;
	uint64_t whole_prefix[2] = {0, plan->total_records};
	const rf_segment *seq = over ? plan->seq : &plan->whole;
	uint32_t nseq = over ? plan->nseq : 1;
	uint64_t *prefix = over ? plan->seq_prefix : whole_prefix;
	uint64_t length = 0;
	for (uint32_t i = 0; i < nseq; i++) {
		prefix[i] = length;
		length += seq[i].records;
	}
	prefix[nseq] = length;
	uint64_t from, count;
	plan_partition(plan, length, epoch == plan->seq_epoch ? plan->seq_start : 0, &from, &count);
	if (count > 0)
		plan_pieces(plan, seq, prefix, nseq, length, from, count);
	else
		plan->npieces = 0;
	plan->unit_count = 0;
	uint64_t q = 0, p = 0;
	for (uint32_t i = 0; i < plan->npieces; i++) {
		plan_piece *pc = &plan->pieces[i];
		pc->q = q;
		RF_TRY(plan_piece_units(plan, pc, p, err));
		plan_piece_use(plan, pc);
		q += pc->len;
		p += pc->plen;
	}
	plan->epoch_records = q;
	plan->plan_records = p;
	return 0;
}

uint64_t rf_plan_epoch_records(const rf_plan *plan)
{
	return plan->epoch_records;
}

uint64_t rf_plan_epoch_plan_records(const rf_plan *plan)
{
	return plan->plan_records;
}

uint64_t rf_plan_total_records(const rf_plan *plan)
{
	return plan->total_records;
}

void rf_plan_epoch_tail(const rf_plan *plan, rf_plan_tail *out)
{
	*out = plan->tail;
}

const rf_plan_params *rf_plan_params_of(const rf_plan *plan)
{
	return &plan->p;
}

uint32_t rf_plan_shard_count(const rf_plan *plan)
{
	return plan->nshards;
}

size_t rf_plan_unit_count(const rf_plan *plan)
{
	return plan->unit_count;
}

const rf_unit *rf_plan_unit(const rf_plan *plan, size_t i)
{
	return i < plan->unit_count ? &plan->units[i] : NULL;
}

/* ------------------------------------------------------------- lookups */

/* The piece holding local stream position q (< E). */
static const plan_piece *plan_piece_at_stream(const rf_plan *plan, uint64_t q)
{
	uint32_t lo = 0, hi = plan->npieces;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (plan->pieces[mid].q <= q)
			lo = mid;
		else
			hi = mid;
	}
	return &plan->pieces[lo];
}

/* The piece holding local plan position p (< P). */
static const plan_piece *plan_piece_at_plan(const rf_plan *plan, uint64_t p)
{
	uint32_t lo = 0, hi = plan->npieces;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (plan->pieces[mid].p <= p)
			lo = mid;
		else
			hi = mid;
	}
	return &plan->pieces[lo];
}

uint64_t rf_plan_stream_global(const rf_plan *plan, uint64_t stream_pos)
{
	if (stream_pos >= plan->epoch_records)
		return UINT64_MAX;
	const plan_piece *pc = plan_piece_at_stream(plan, stream_pos);
	return pc->x + (stream_pos - pc->q);
}

uint64_t rf_plan_stream_to_plan(const rf_plan *plan, uint64_t stream_pos)
{
	if (stream_pos >= plan->epoch_records)
		return plan->plan_records;
	const plan_piece *pc = plan_piece_at_stream(plan, stream_pos);
	uint64_t g = plan_global_to_plan(plan, pc->x + (stream_pos - pc->q));
	return pc->p + (g - pc->g);
}

void rf_plan_locate(const rf_plan *plan, uint64_t stream_pos, size_t *unit, uint32_t *record)
{
	*unit = plan->unit_count;
	*record = 0;
	if (stream_pos >= plan->epoch_records)
		return;
	const plan_piece *pc = plan_piece_at_stream(plan, stream_pos);
	uint64_t p = pc->p + (plan_global_to_plan(plan, pc->x + (stream_pos - pc->q)) - pc->g);
	size_t lo = pc->u0, hi = pc->u1; /* last unit of the piece starting at or before p */
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

uint64_t rf_plan_resident_stream(const rf_plan *plan, uint64_t plan_pos)
{
	if (plan_pos >= plan->plan_records)
		return plan->epoch_records;
	const plan_piece *pc = plan_piece_at_plan(plan, plan_pos);
	uint64_t g = pc->g + (plan_pos - pc->p);
	if (g >= pc->wb)
		return pc->q + pc->len;
	uint64_t full = g / plan->window * plan->window; /* windows below are complete */
	return pc->q + (full > pc->x ? RF_MIN(full - pc->x, pc->len) : 0);
}

uint64_t rf_plan_need(const rf_plan *plan, uint64_t stream_pos)
{
	if (stream_pos == 0)
		return 0;
	if (stream_pos > plan->epoch_records)
		return plan->plan_records;
	const plan_piece *pc = plan_piece_at_stream(plan, stream_pos - 1);
	uint64_t x = pc->x + (stream_pos - 1 - pc->q), w = plan->window;
	uint64_t we = RF_MIN(plan->total_records, (x / w + 1) * w);
	return pc->p + RF_MIN(pc->plen, we - pc->g);
}

uint64_t rf_plan_window_end(const rf_plan *plan, uint64_t plan_pos)
{
	if (plan_pos >= plan->plan_records)
		return plan->plan_records;
	const plan_piece *pc = plan_piece_at_plan(plan, plan_pos);
	uint64_t g = RF_MAX(pc->g + (plan_pos - pc->p), pc->wa), w = plan->window;
	uint64_t we = RF_MIN(plan->total_records, (g / w + 1) * w);
	return pc->p + RF_MIN(pc->plen, we - pc->g);
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
	return plan->memory_bytes;
}

uint64_t rf_plan_dataset_hash(const rf_plan *plan)
{
	uint64_t h = rf_mix64(0x44415441ull ^ plan->nshards);
	for (uint32_t s = 0; s < plan->nshards; s++) {
		uint64_t first = plan->shard_first[s], end = plan->shard_first[s + 1];
		h = rf_mix64(h ^ (end - first));
		for (uint64_t b = first; b < end; b++)
			h = rf_mix64(h ^ plan->block_records[b]);
	}
	return h;
}
