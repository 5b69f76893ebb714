/* test_plan.c - the visitation order: determinism, exactly-once coverage
 * across ranks, manifest order without shuffle, the window arithmetic that
 * resume and memory release rely on, and input checks. Shard indexes are
 * built in memory (only block record counts matter to a plan). */
#include "plan.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define RF_ARRAY_LEN_T(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ fixtures */

typedef struct dataset {
	uint32_t nshards;
	rf_shard_index **ix;
	uint64_t *first_global; /* global number of each shard's record 0 */
	uint64_t records;
} dataset;

static rf_shard_index *make_index(const uint32_t *records, uint32_t blocks)
{
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	assert_non_null(ix);
	ix->blocks = blocks;
	ix->block = calloc(blocks ? blocks : 1, sizeof(*ix->block));
	assert_non_null(ix->block);
	for (uint32_t b = 0; b < blocks; b++) {
		ix->block[b].records = records[b];
		ix->block[b].first_record = ix->records;
		ix->records += records[b];
	}
	return ix;
}

static void free_index(rf_shard_index *ix)
{
	free(ix->block);
	free(ix);
}

/* shapes: blocks per shard listed as record counts, shards separated by -1. */
static dataset make_dataset(const int *shape, size_t n)
{
	dataset d = {0};
	d.ix = calloc(n + 1, sizeof(*d.ix));
	d.first_global = calloc(n + 1, sizeof(uint64_t));
	uint32_t buf[256];
	uint32_t blocks = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || shape[i] < 0) {
			d.first_global[d.nshards] = d.records;
			d.ix[d.nshards] = make_index(buf, blocks);
			d.records += d.ix[d.nshards]->records;
			d.nshards++;
			blocks = 0;
			continue;
		}
		buf[blocks++] = (uint32_t)shape[i];
	}
	return d;
}

static void free_dataset(dataset *d)
{
	for (uint32_t s = 0; s < d->nshards; s++)
		free_index(d->ix[s]);
	free(d->ix);
	free(d->first_global);
}

/* Odd shapes: empty shard, 0-record blocks (first, middle, last), single
 * records, one big block. */
static const int SHAPE[] = {3, 0, 5, -1, -1, 7,  -1, 1, 1, 1,  1, -1, 0,  -1, 0, 2, 9,
                            4, 0, 6, -1, 10, -1, 2,  3, 0, -1, 1, -1, 13, 1,  0, 0, 4};

static dataset shape_dataset(void)
{
	return make_dataset(SHAPE, RF_ARRAY_LEN_T(SHAPE));
}

static rf_plan *new_plan(const dataset *d, uint64_t seed, uint32_t rank, uint32_t world,
                         bool shuffle, uint32_t window)
{
	rf_plan_params p = {.seed = seed,
	                    .rank = rank,
	                    .world = world,
	                    .shuffle = shuffle,
	                    .shuffle_window = window};
	rf_plan *plan = NULL;
	rf_error err = {0};
	int rc = rf_plan_new(&p, (const rf_shard_index *const *)d->ix, d->nshards, &plan, &err);
	if (rc != 0)
		fail_msg("rf_plan_new: %s", err.msg);
	return plan;
}

/* The global record number (manifest order) at stream position pos. */
static uint64_t global_at(const rf_plan *plan, const dataset *d, uint64_t pos)
{
	size_t u;
	uint32_t r;
	rf_plan_locate(plan, pos, &u, &r);
	assert_true(u < rf_plan_unit_count(plan));
	const rf_unit *unit = rf_plan_unit(plan, u);
	assert_true(r < unit->records);
	const rf_shard_index *ix = d->ix[unit->shard];
	assert_true(unit->block < ix->blocks);
	assert_int_equal(unit->records, ix->block[unit->block].records);
	return d->first_global[unit->shard] + ix->block[unit->block].first_record + r;
}

/* The stream of one (rank, epoch), as global record numbers (malloc'd). */
static uint64_t *stream_of(rf_plan *plan, const dataset *d, uint64_t epoch, uint64_t *n)
{
	rf_error err = {0};
	assert_int_equal(rf_plan_epoch(plan, epoch, &err), 0);
	*n = rf_plan_epoch_records(plan);
	uint64_t *out = calloc(*n ? *n : 1, sizeof(uint64_t));
	for (uint64_t i = 0; i < *n; i++)
		out[i] = global_at(plan, d, i);
	return out;
}

/* --------------------------------------------------------------- tests */

static void test_exactly_once_across_ranks(void **state)
{
	(void)state;
	dataset d = shape_dataset();
	static const uint32_t windows[] = {1, 2, 3, 7, 64};
	uint32_t *seen = calloc(d.records, sizeof(uint32_t));
	for (uint32_t world = 1; world <= 5; world++)
		for (size_t wi = 0; wi < RF_ARRAY_LEN_T(windows); wi++)
			for (uint64_t epoch = 0; epoch < 3; epoch++) {
				memset(seen, 0, d.records * sizeof(uint32_t));
				for (uint32_t rank = 0; rank < world; rank++) {
					rf_plan *plan =
					    new_plan(&d, 42, rank, world, true, windows[wi]);
					uint64_t n;
					uint64_t *s = stream_of(plan, &d, epoch, &n);
					for (uint64_t i = 0; i < n; i++)
						seen[s[i]]++;
					free(s);
					rf_plan_free(plan);
				}
				/* Each record once, but the records % world of the
				 * tail, which no rank takes (the default: drop). */
				uint64_t unseen = 0;
				for (uint64_t g = 0; g < d.records; g++) {
					if (seen[g] > 1)
						fail_msg("world %u window %u epoch %llu: record "
						         "%llu seen %u times",
						         world, windows[wi],
						         (unsigned long long)epoch,
						         (unsigned long long)g, seen[g]);
					unseen += seen[g] == 0;
				}
				assert_int_equal(unseen, d.records % world);
			}
	free(seen);
	free_dataset(&d);
}

/* The partition's property, for world sizes 1..16, batch sizes 1, 3 and 8,
 * every tail policy and several windows, over the odd shapes (blocks of one
 * record, empty blocks and shards; with 16 ranks most ranks have no block of
 * their own): every rank the same records (and so batches); the union is the
 * epoch minus the dropped tail, each once, or plus the padded records, which
 * repeat the epoch stream's first ones. */
static void check_partition(const dataset *d, uint32_t world, uint32_t batch, int mode,
                            uint32_t window, uint32_t *seen)
{
	uint64_t n = d->records, per = mode == 1 ? (n + world - 1) / world : n / world;
	uint64_t recs = mode == 2 ? per / batch * batch : per;
	memset(seen, 0, n * sizeof(uint32_t));
	for (uint32_t rank = 0; rank < world; rank++) {
		rf_plan_params p = {.seed = 11,
		                    .rank = rank,
		                    .world = world,
		                    .shuffle = true,
		                    .shuffle_window = window,
		                    .pad = mode == 1,
		                    .drop_last = mode == 2 ? batch : 0};
		rf_plan *plan = NULL;
		rf_error err = {0};
		assert_int_equal(
		    rf_plan_new(&p, (const rf_shard_index *const *)d->ix, d->nshards, &plan, &err),
		    0);
		uint64_t got;
		uint64_t *s = stream_of(plan, d, 2, &got);
		assert_int_equal(got, recs); /* equal on every rank: batches ceil(recs / batch) */
		rf_plan_tail t;
		rf_plan_epoch_tail(plan, &t);
		assert_int_equal(t.dropped_records, mode == 1 ? 0 : n - per * world);
		assert_int_equal(t.padded_records, mode == 1 ? per * world - n : 0);
		assert_int_equal(t.drop_last_records, per - recs);
		for (uint64_t i = 0; i < got; i++) {
			seen[s[i]]++;
			/* a padded record is the stream's record at position - n */
			uint64_t g = rf_plan_stream_global(plan, i);
			assert_true(g < n);
			if ((uint64_t)rank * per + i >= n)
				assert_int_equal(g, (uint64_t)rank * per + i - n);
		}
		free(s);
		rf_plan_free(plan);
	}
	uint64_t zero = 0, once = 0, twice = 0;
	for (uint64_t g = 0; g < n; g++) {
		zero += seen[g] == 0;
		once += seen[g] == 1;
		twice += seen[g] == 2;
		assert_true(seen[g] <= 2);
	}
	if (mode == 1) {
		assert_int_equal(zero, 0);
		assert_int_equal(twice, per * world - n);
	} else {
		assert_int_equal(twice, 0);
		assert_int_equal(once, recs * world);
	}
}

static void test_equal_slices_property(void **state)
{
	(void)state;
	dataset d = shape_dataset();
	static const uint32_t batches[] = {1, 3, 8}, windows[] = {1, 7, 64};
	uint32_t *seen = calloc(d.records, sizeof(uint32_t));
	for (uint32_t world = 1; world <= 16; world++)
		for (size_t b = 0; b < RF_ARRAY_LEN_T(batches); b++)
			for (int mode = 0; mode < 3; mode++)
				for (size_t w = 0; w < RF_ARRAY_LEN_T(windows); w++)
					check_partition(&d, world, batches[b], mode, windows[w],
					                seen);
	free(seen);
	free_dataset(&d);
}

static void test_determinism(void **state)
{
	(void)state;
	dataset d = shape_dataset();
	rf_plan *a = new_plan(&d, 7, 0, 1, true, 5);
	rf_plan *b = new_plan(&d, 7, 0, 1, true, 5);
	rf_plan *c = new_plan(&d, 8, 0, 1, true, 5);
	uint64_t na, nb, nc;
	uint64_t *sa = stream_of(a, &d, 3, &na), *sb = stream_of(b, &d, 3, &nb);
	uint64_t *sc = stream_of(c, &d, 3, &nc);
	assert_int_equal(na, d.records);
	assert_int_equal(na, nb);
	assert_memory_equal(sa, sb, na * sizeof(uint64_t));
	assert_int_equal(na, nc);
	assert_memory_not_equal(sa, sc, na * sizeof(uint64_t));
	/* Another epoch of the same plan is another order; recomputing an epoch
	 * gives the same order again. */
	uint64_t n4, n3;
	uint64_t *s4 = stream_of(a, &d, 4, &n4);
	assert_memory_not_equal(sa, s4, na * sizeof(uint64_t));
	uint64_t *s3 = stream_of(a, &d, 3, &n3);
	assert_memory_equal(sa, s3, na * sizeof(uint64_t));
	free(sa), free(sb), free(sc), free(s4), free(s3);
	rf_plan_free(a), rf_plan_free(b), rf_plan_free(c);
	free_dataset(&d);
}

static void test_no_shuffle_is_manifest_order(void **state)
{
	(void)state;
	dataset d = shape_dataset();
	for (uint32_t world = 1; world <= 5; world++) {
		uint64_t next = 0;
		for (uint32_t rank = 0; rank < world; rank++) {
			/* The window is ignored without shuffle. */
			rf_plan *plan = new_plan(&d, 99, rank, world, false, 16);
			for (uint64_t epoch = 0; epoch < 2; epoch++) {
				uint64_t n;
				uint64_t *s = stream_of(plan, &d, epoch, &n);
				for (uint64_t i = 0; i < n; i++)
					assert_int_equal(s[i], next + i);
				free(s);
				if (epoch == 1)
					next += n;
			}
			assert_int_equal(rf_plan_units_in_window_max(plan), 1);
			rf_plan_free(plan);
		}
		assert_int_equal(next, d.records - d.records % world);
	}
	free_dataset(&d);
}

/* Window w of the stream is a permutation of window w of the plan order. */
static void test_window_permutation(void **state)
{
	(void)state;
	int ishape[40];
	for (int i = 0; i < 40; i++)
		ishape[i] = 25;
	dataset d = make_dataset(ishape, 40);
	rf_plan *plan = new_plan(&d, 1, 0, 1, true, 64);
	rf_error err = {0};
	assert_int_equal(rf_plan_epoch(plan, 0, &err), 0);
	uint64_t n = rf_plan_epoch_records(plan), moved = 0;
	assert_int_equal(n, 1000);
	uint8_t *hit = calloc(n, 1);
	for (uint64_t s = 0; s < n; s++) {
		uint64_t p = rf_plan_stream_to_plan(plan, s);
		assert_int_equal(p / 64, s / 64);
		assert_int_equal(hit[p], 0);
		hit[p] = 1;
		moved += p != s;
	}
	assert_true(moved > n / 2); /* shuffled, not the identity */
	/* Jumping between windows (as resume and straddling batches do) gives
	 * the same mapping as the sequential walk. */
	for (uint64_t k = 0; k < 200; k++) {
		uint64_t s = (k * 7919) % n;
		uint64_t p1 = rf_plan_stream_to_plan(plan, s);
		uint64_t p2 = rf_plan_stream_to_plan(plan, (s + 500) % n);
		assert_int_equal(rf_plan_stream_to_plan(plan, s), p1);
		assert_int_equal(rf_plan_stream_to_plan(plan, (s + 500) % n), p2);
	}
	free(hit);
	rf_plan_free(plan);
	free_dataset(&d);
}

static void check_release(rf_plan *plan, uint64_t window)
{
	uint64_t n = rf_plan_epoch_records(plan);
	size_t units = rf_plan_unit_count(plan);
	uint64_t *last = calloc(units ? units : 1, sizeof(uint64_t));
	for (size_t i = 1; i < units; i++)
		assert_true(rf_plan_unit(plan, i)->release_pos >=
		            rf_plan_unit(plan, i - 1)->release_pos);
	for (uint64_t pos = 0; pos < n; pos++) {
		size_t u;
		uint32_t r;
		rf_plan_locate(plan, pos, &u, &r);
		assert_true(rf_plan_unit(plan, u)->release_pos > pos);
		last[u] = pos + 1;
		size_t f = rf_plan_first_unit_needed(plan, pos);
		assert_true(f <= u);
		for (size_t i = 0; i < f; i++)
			assert_true(rf_plan_unit(plan, i)->release_pos <= pos);
	}
	for (size_t i = 0; i < units; i++) {
		const rf_unit *unit = rf_plan_unit(plan, i);
		if (unit->records == 0 || unit->unused)
			continue;
		/* Released once its last record is emitted, at a window end (of
		 * the global stream: a rank's slice starts anywhere in a window). */
		assert_true(last[i] <= unit->release_pos);
		assert_true(rf_plan_stream_global(plan, unit->release_pos) % window == 0 ||
		            unit->release_pos == n);
		/* A unit of a rank's last, shared window may hold none of the rank's
		 * records there: it is released at the slice's end, within the next
		 * window. */
		uint64_t slack = rf_plan_params_of(plan)->world == 1 ? window : 2 * window;
		assert_true(unit->release_pos - last[i] < slack);
	}
	assert_int_equal(rf_plan_first_unit_needed(plan, n), units);
	size_t u;
	uint32_t r;
	rf_plan_locate(plan, n, &u, &r);
	assert_int_equal(u, units);
	free(last);
}

/* Every unit whose records fall in a window, counted per window. */
static void check_window_units(rf_plan *plan, uint64_t window)
{
	uint64_t n = rf_plan_epoch_records(plan);
	uint32_t bound = rf_plan_units_in_window_max(plan);
	for (uint64_t first = 0; first < n; first += window) {
		uint32_t count = 0;
		uint64_t end = first + window < n ? first + window : n;
		/* The stream window is a permutation of the same plan window, so
		 * the units touched are those whose plan records meet it. */
		for (size_t i = 0; i < rf_plan_unit_count(plan); i++) {
			const rf_unit *unit = rf_plan_unit(plan, i);
			uint64_t a = unit->first_plan_record, b = a + unit->records;
			if (unit->records > 0 && a < end && b > first)
				count++;
		}
		if (count > bound)
			fail_msg("window at %llu touches %u units, bound %u",
			         (unsigned long long)first, count, bound);
	}
}

static void test_release_and_resume_points(void **state)
{
	(void)state;
	dataset d = shape_dataset();
	static const uint32_t windows[] = {1, 2, 3, 5, 8, 13, 64, 1000};
	for (uint32_t world = 1; world <= 5; world++)
		for (size_t wi = 0; wi < RF_ARRAY_LEN_T(windows); wi++)
			for (uint32_t rank = 0; rank < world; rank++) {
				rf_plan *plan = new_plan(&d, 5, rank, world, true, windows[wi]);
				for (uint64_t epoch = 0; epoch < 3; epoch++) {
					rf_error err = {0};
					assert_int_equal(rf_plan_epoch(plan, epoch, &err), 0);
					check_release(plan, windows[wi]);
					check_window_units(plan, windows[wi]);
				}
				rf_plan_free(plan);
			}
	free_dataset(&d);
}

static void test_units_in_window_bound(void **state)
{
	(void)state;
	/* Smallest non-empty block holds 2 records: a window of 10 spans at most
	 * ceil(10/2)+1 = 6 units; 0-record blocks do not lower the minimum. */
	static const int shape[] = {2, 0, 8, 8, -1, 0, 30, 2, 2, 2, 2, 2, 2, 2, 2};
	dataset d = make_dataset(shape, RF_ARRAY_LEN_T(shape));
	rf_plan *plan = new_plan(&d, 3, 0, 1, true, 10);
	assert_int_equal(rf_plan_units_in_window_max(plan), 6);
	for (uint64_t epoch = 0; epoch < 20; epoch++) {
		rf_error err = {0};
		assert_int_equal(rf_plan_epoch(plan, epoch, &err), 0);
		check_window_units(plan, 10);
	}
	rf_plan_free(plan);
	/* Capped by the non-empty blocks (a window of the whole dataset's stream
	 * may hold records of several ranks' slices). */
	plan = new_plan(&d, 3, 0, 4, true, 1000);
	assert_int_equal(rf_plan_units_in_window_max(plan), 12);
	rf_plan_free(plan);
	free_dataset(&d);
	/* No records at all: nothing to hold, an empty stream. */
	static const int empty[] = {0, 0, -1, 0};
	d = make_dataset(empty, RF_ARRAY_LEN_T(empty));
	plan = new_plan(&d, 3, 0, 1, true, 10);
	assert_int_equal(rf_plan_units_in_window_max(plan), 0);
	rf_error err = {0};
	assert_int_equal(rf_plan_epoch(plan, 0, &err), 0);
	assert_int_equal(rf_plan_epoch_records(plan), 0);
	assert_int_equal(rf_plan_unit_count(plan), 0); /* 0-record blocks are no units */
	assert_int_equal(rf_plan_first_unit_needed(plan, 0), 0);
	rf_plan_free(plan);
	free_dataset(&d);
}

/* The most units any span of `span` plan positions touches in the plan's
 * current epoch, counted unit by unit. */
static uint64_t span_units_seen(const rf_plan *plan, uint64_t span)
{
	size_t n = rf_plan_unit_count(plan);
	uint64_t best = 0;
	for (size_t a = 0; a < n; a++) {
		uint64_t start = rf_plan_unit(plan, a)->first_plan_record, count = 0;
		for (size_t u = a; u < n && rf_plan_unit(plan, u)->first_plan_record < start + span;
		     u++)
			count++;
		/* the span may also start inside unit a - 1 */
		if (count + (a > 0) > best)
			best = count + (a > 0);
	}
	return best < n ? best : n;
}

static void test_span_units_bound(void **state)
{
	(void)state;
	/* The unit ring's size: nine 2-record blocks, two of 8 and one of 30
	 * over two shards (0-record blocks are no units). 10 records hold at
	 * most five 2-record blocks, plus two cut by the span's ends; 20 hold
	 * nine; 1000 all twelve. */
	static const int shape[] = {2, 0, 8, 8, -1, 0, 30, 2, 2, 2, 2, 2, 2, 2, 2};
	dataset d = make_dataset(shape, RF_ARRAY_LEN_T(shape));
	rf_plan *plan = new_plan(&d, 3, 0, 1, true, 10);
	assert_int_equal(rf_plan_span_units_max(plan, 1), 2);
	assert_int_equal(rf_plan_span_units_max(plan, 10), 7);
	assert_int_equal(rf_plan_span_units_max(plan, 20), 11);
	assert_int_equal(rf_plan_span_units_max(plan, 1000), 12);
	static const uint64_t spans[] = {1, 3, 10, 20, 40};
	for (uint64_t epoch = 0; epoch < 20; epoch++) {
		rf_error err = {0};
		assert_int_equal(rf_plan_epoch(plan, epoch, &err), 0);
		for (size_t i = 0; i < RF_ARRAY_LEN_T(spans); i++)
			assert_true(span_units_seen(plan, spans[i]) <=
			            rf_plan_span_units_max(plan, spans[i]));
	}
	rf_plan_free(plan);
	free_dataset(&d);
}

static void test_more_ranks_than_blocks(void **state)
{
	(void)state;
	static const int shape[] = {4, -1, 5};
	dataset d = make_dataset(shape, RF_ARRAY_LEN_T(shape));
	uint64_t total = 0;
	for (uint32_t rank = 0; rank < 5; rank++) {
		rf_plan *plan = new_plan(&d, 0, rank, 5, true, 4);
		rf_error err = {0};
		assert_int_equal(rf_plan_epoch(plan, 0, &err), 0);
		size_t used = 0;
		for (size_t i = 0; i < rf_plan_unit_count(plan); i++)
			used += !rf_plan_unit(plan, i)->unused;
		assert_int_equal(used, 1); /* one record: one block read */
		assert_int_equal(rf_plan_epoch_records(plan), 1);
		total += rf_plan_epoch_records(plan);
		rf_plan_free(plan);
	}
	assert_int_equal(total, 5); /* 9 - 9 % 5: every rank one record */
	free_dataset(&d);
}

static void test_bad_input(void **state)
{
	(void)state;
	dataset d = shape_dataset();
	const rf_shard_index *const *ix = (const rf_shard_index *const *)d.ix;
	rf_plan *plan = NULL;
	rf_error err = {0};
	rf_plan_params p = {.seed = 1, .rank = 3, .world = 3, .shuffle = true, .shuffle_window = 4};
	assert_int_equal(rf_plan_new(&p, ix, d.nshards, &plan, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "rank 3"));
	assert_null(plan);
	p.rank = 0;
	p.world = 0;
	assert_int_equal(rf_plan_new(&p, ix, d.nshards, &plan, &err), -EINVAL);
	p.world = 1;
	assert_int_equal(rf_plan_new(&p, ix, 0, &plan, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no shards"));
	p.shuffle_window = RF_PLAN_WINDOW_MAX + 1;
	assert_int_equal(rf_plan_new(&p, ix, d.nshards, &plan, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "window"));
	p.shuffle_window = 4;
	d.ix[2]->records++; /* index total disagrees with its blocks */
	assert_int_equal(rf_plan_new(&p, ix, d.nshards, &plan, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "shard 2"));
	d.ix[2]->records--;
	uint32_t blocks = d.ix[2]->blocks;
	d.ix[2]->blocks = RF_INDEX_BLOCKS_MAX + 1;
	assert_int_equal(rf_plan_new(&p, ix, d.nshards, &plan, &err), -EINVAL);
	d.ix[2]->blocks = blocks;
	assert_int_equal(rf_plan_new(&p, ix, d.nshards, &plan, &err), 0);
	assert_true(rf_plan_memory_bytes(plan) > 0);
	assert_true(rf_plan_memory_bytes(plan) < 4096);
	rf_plan_free(plan);
	free_dataset(&d);
}

/* The total-blocks bound: five shards of 16M blocks, rejected before any
 * block entry is read. */
static void test_too_many_blocks(void **state)
{
	(void)state;
	rf_block_info blocks[1] = {{0}}; /* never read: the count is checked first */
	rf_shard_index ix = {.blocks = RF_INDEX_BLOCKS_MAX, .block = blocks};
	const rf_shard_index *list[5] = {&ix, &ix, &ix, &ix, &ix};
	rf_plan_params p = {.world = 1, .shuffle = true, .shuffle_window = 4};
	rf_plan *plan = NULL;
	rf_error err = {0};
	assert_int_equal(rf_plan_new(&p, list, 5, &plan, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "blocks"));
	assert_null(plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exactly_once_across_ranks),
	    cmocka_unit_test(test_equal_slices_property),
	    cmocka_unit_test(test_determinism),
	    cmocka_unit_test(test_no_shuffle_is_manifest_order),
	    cmocka_unit_test(test_window_permutation),
	    cmocka_unit_test(test_release_and_resume_points),
	    cmocka_unit_test(test_units_in_window_bound),
	    cmocka_unit_test(test_span_units_bound),
	    cmocka_unit_test(test_more_ranks_than_blocks),
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_too_many_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
