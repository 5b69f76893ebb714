/* test_plan_mix.c - a mixture's plan (plan.h, rf_plan_new_mix), against its
 * definition: for weights (0.999/0.001, ten sources, random ones), world
 * sizes 1..8, shuffle windows and drop_last, every prefix of the mixture
 * stream holds each source within 1 of its share, ranks get equal slices
 * whose concatenation is the world-1 stream, each source's records come
 * pass by pass with every record once a pass (a new order each pass), and
 * the engine's window contract holds (a position's unit is needed before
 * it, resident at it, and released only after it). Sources are built in
 * memory (only record counts matter to a plan). */
#include "mix.h"
#include "mixds.h"
#include "plan.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

typedef struct msrc {
	uint32_t nshards;
	uint64_t records;
} msrc;

/* k sources of shards[i] shards, 1..4 blocks of 0..maxrec records */
static mixds make_mix(uint32_t k, const uint32_t *shards, uint32_t maxrec, uint64_t seed)
{
	return mixds_make(k, shards, 4, 0, maxrec, seed);
}

typedef struct rec {
	uint32_t src;
	uint64_t id; /* record number inside its source */
} rec;

/* Rank `rank`'s stream of one epoch, checking the engine's contract. */
static rec *rank_stream(const mixds *d, const uint64_t *w, const rf_plan_params *pp,
                        uint64_t samples, uint64_t epoch, uint64_t *n_out, rf_plan **keep)
{
	rf_plan_mix_params mp = {
	    .sources = d->k, .first = d->first, .weight = w, .samples = samples};
	rf_plan *plan = NULL;
	rf_error err = {0};
	int rc =
	    rf_plan_new_mix(pp, (const rf_shard_index *const *)d->ix, d->nshards, &mp, &plan, &err);
	if (rc != 0)
		fail_msg("rf_plan_new_mix: %s", err.msg);
	if (rf_plan_epoch(plan, epoch, &err) != 0)
		fail_msg("rf_plan_epoch: %s", err.msg);
	uint64_t n = rf_plan_epoch_records(plan);
	rec *out = calloc(n ? n : 1, sizeof(*out));
	assert_non_null(out);
	for (uint64_t q = 0; q < n; q++) {
		size_t u;
		uint32_t r;
		rf_plan_locate(plan, q, &u, &r);
		assert_true(u < rf_plan_unit_count(plan));
		const rf_unit *un = rf_plan_unit(plan, u);
		assert_false(un->unused);
		assert_true(r < un->records);
		/* needed before q, resident at q, released after q */
		uint64_t need = rf_plan_need(plan, q + 1);
		assert_true(un->first_plan_record + un->records <= need);
		assert_true(rf_plan_resident_stream(plan, need) >= q + 1);
		assert_true(un->release_pos > q);
		assert_int_equal(rf_plan_stream_to_plan(plan, q), un->first_plan_record + r);
		const rf_shard_index *ix = d->ix[un->shard];
		out[q].src = d->shard_src[un->shard];
		out[q].id = d->shard_first[un->shard] + ix->block[un->block].first_record + r;
		if (q % 13 == 0)
			assert_int_equal(rf_plan_mix_source_of(plan, q), out[q].src);
	}
	/* merged plan positions grow with the units */
	for (size_t u = 1; u < rf_plan_unit_count(plan); u++)
		assert_true(rf_plan_unit(plan, u)->first_plan_record ==
		            rf_plan_unit(plan, u - 1)->first_plan_record +
		                rf_plan_unit(plan, u - 1)->records);
	*n_out = n;
	if (keep)
		*keep = plan;
	else
		rf_plan_free(plan);
	return out;
}

/* The mixture's own definition, checked on the world-1 stream of `epochs`
 * epochs: prefixes within 1, each source pass by pass, every record once a
 * pass. */
static void check_definition(const mixds *d, const uint64_t *w, const rf_plan_params *pp,
                             uint32_t epochs)
{
	uint64_t total = 0;
	uint64_t *cnt = calloc(d->k, sizeof(uint64_t));
	uint64_t *sum = calloc(d->k, sizeof(uint64_t));
	uint64_t wsum = 0;
	for (uint32_t i = 0; i < d->k; i++)
		wsum += w[i];
	uint8_t **seen = calloc(d->k, sizeof(*seen));
	uint64_t *pass_seen = calloc(d->k, sizeof(uint64_t));
	assert_true(cnt && sum && seen && pass_seen);
	for (uint32_t i = 0; i < d->k; i++)
		assert_non_null(seen[i] = calloc(d->src_records[i] + 1, 1));
	for (uint32_t e = 0; e < epochs; e++) {
		uint64_t n;
		rec *s = rank_stream(d, w, pp, 0, e, &n, NULL);
		for (uint64_t q = 0; q < n; q++) {
			uint32_t k = s[q].src;
			cnt[k]++;
			total++;
			/* within 1 of the share (weights are exact in millionths) */
			for (uint32_t i = 0; i < d->k; i++) {
				__int128 diff = (__int128)cnt[i] * wsum - (__int128)total * w[i];
				assert_true(diff < (__int128)wsum && diff > -(__int128)wsum);
			}
			/* pass by pass: a record seen twice only after its pass is whole */
			assert_false(seen[k][s[q].id]);
			seen[k][s[q].id] = 1;
			if (++pass_seen[k] == d->src_records[k]) {
				memset(seen[k], 0, d->src_records[k]);
				pass_seen[k] = 0;
			}
		}
		free(s);
	}
	for (uint32_t i = 0; i < d->k; i++)
		free(seen[i]);
	free(seen);
	free(pass_seen);
	free(cnt);
	free(sum);
}

/* Ranks: equal slices whose concatenation is the world-1 stream's prefix. */
static void check_ranks(const mixds *d, const uint64_t *w, rf_plan_params pp, uint32_t world,
                        uint64_t epoch)
{
	uint64_t n1;
	pp.world = 1;
	pp.rank = 0;
	uint32_t dl = pp.drop_last;
	pp.drop_last = 0;
	rec *all = rank_stream(d, w, &pp, 0, epoch, &n1, NULL);
	pp.world = world;
	pp.drop_last = dl;
	uint64_t at = 0, slice = UINT64_MAX;
	for (uint32_t r = 0; r < world; r++) {
		pp.rank = r;
		uint64_t n;
		rec *s = rank_stream(d, w, &pp, 0, epoch, &n, NULL);
		if (slice == UINT64_MAX)
			slice = n;
		assert_int_equal(n, slice); /* equal batches per rank */
		if (dl)
			assert_int_equal(n % dl, 0);
		uint64_t from = (uint64_t)r * (n1 / world);
		for (uint64_t q = 0; q < n; q++) {
			assert_int_equal(s[q].src, all[from + q].src);
			assert_int_equal(s[q].id, all[from + q].id);
		}
		at += n;
		free(s);
	}
	assert_true(at <= n1);
	assert_true(n1 - at < (uint64_t)world * (dl ? dl + 1 : 1));
	free(all);
}

static void test_two_sources(void **state)
{
	(void)state;
	uint32_t shards[2] = {5, 2};
	mixds d = make_mix(2, shards, 30, 1);
	uint64_t w[2] = {500000, 500000};
	rf_plan_params pp = {.seed = 7, .world = 1, .shuffle = true, .shuffle_window = 16};
	check_definition(&d, w, &pp, 3);
	for (uint32_t world = 1; world <= 8; world++)
		check_ranks(&d, w, pp, world, 1);
	pp.shuffle = false;
	check_definition(&d, w, &pp, 2);
	check_ranks(&d, w, pp, 3, 0);
	mixds_free(&d);
}

static void test_extreme_weights(void **state)
{
	(void)state;
	uint32_t shards[2] = {6, 3};
	mixds d = make_mix(2, shards, 40, 2);
	uint64_t w[2] = {999000, 1000};
	rf_plan_params pp = {.seed = 3, .world = 1, .shuffle = true, .shuffle_window = 8};
	check_definition(&d, w, &pp, 2);
	for (uint32_t world = 1; world <= 4; world++)
		check_ranks(&d, w, pp, world, 0);
	mixds_free(&d);
}

static void test_ten_sources(void **state)
{
	(void)state;
	uint32_t shards[10] = {1, 2, 3, 1, 2, 1, 4, 1, 2, 1};
	mixds d = make_mix(10, shards, 12, 3);
	uint64_t seed = 11;
	for (int t = 0; t < 3; t++) {
		uint64_t w[10];
		/* the first set has 6-digit weights (a long period, built once a
		 * plan: checked on one epoch and one world), the others coarse ones */
		for (int i = 0; i < 10; i++)
			w[i] = t == 0 ? 1000 + mixds_rng(&seed) % 900000
			              : 1000 * (1 + mixds_rng(&seed) % 900);
		rf_plan_params pp = {.seed = (uint64_t)t,
		                     .world = 1,
		                     .shuffle = t != 1,
		                     .shuffle_window = t == 2 ? 1 : 32};
		check_definition(&d, w, &pp, t == 0 ? 1 : 2);
		for (uint32_t world = t == 0 ? 3 : 1; world <= (t == 0 ? 3u : 8u); world += 3) {
			pp.drop_last = world == 4 ? 5 : 0;
			check_ranks(&d, w, pp, world, 1);
		}
	}
	mixds_free(&d);
}

/* Up- and sub-sampling: a small source at weight 0.5 beside a large one
 * repeats every record the same number of times (+-1) a mixture epoch, in a
 * new order each pass; the large source continues where it stopped. */
static void test_up_and_sub_sampling(void **state)
{
	(void)state;
	uint32_t shards[2] = {2, 40};
	mixds d = make_mix(2, shards, 50, 4);
	uint64_t w[2] = {500000, 500000};
	rf_plan_params pp = {.seed = 5, .world = 1, .shuffle = true, .shuffle_window = 8};
	uint64_t n;
	rec *s = rank_stream(&d, w, &pp, 0, 0, &n, NULL);
	uint64_t small = d.src_records[0], big = d.src_records[1];
	assert_true(small < big);
	uint32_t *times = calloc(small, sizeof(uint32_t));
	assert_non_null(times);
	uint64_t from_small = 0, from_big = 0;
	rec *first_pass = calloc(small, sizeof(rec)), *second = calloc(small, sizeof(rec));
	assert_true(first_pass && second);
	for (uint64_t q = 0; q < n; q++) {
		if (s[q].src == 0) {
			if (from_small < small)
				first_pass[from_small] = s[q];
			else if (from_small < 2 * small)
				second[from_small - small] = s[q];
			times[s[q].id]++;
			from_small++;
		} else {
			from_big++;
		}
	}
	assert_int_equal(from_big, big); /* the largest weight's source: once an epoch */
	uint32_t lo = UINT32_MAX, hi = 0;
	for (uint64_t i = 0; i < small; i++) {
		lo = times[i] < lo ? times[i] : lo;
		hi = times[i] > hi ? times[i] : hi;
	}
	assert_true(hi - lo <= 1);
	assert_true(lo >= 2);
	assert_memory_not_equal(first_pass, second, small * sizeof(rec)); /* a new order */
	free(first_pass);
	free(second);
	free(times);
	free(s);
	/* the large source sub-sampled: weight 0.1 of it continues across epochs */
	uint64_t w2[2] = {900000, 100000};
	uint64_t seen = 0, n0, n1;
	rec *e0 = rank_stream(&d, w2, &pp, 0, 0, &n0, NULL);
	rec *e1 = rank_stream(&d, w2, &pp, 0, 1, &n1, NULL);
	uint8_t *got = calloc(big, 1);
	assert_non_null(got);
	for (uint64_t q = 0; q < n0; q++)
		if (e0[q].src == 1) {
			assert_false(got[e0[q].id]);
			got[e0[q].id] = 1;
			seen++;
		}
	for (uint64_t q = 0; q < n1 && seen < big; q++)
		if (e1[q].src == 1) {
			assert_false(got[e1[q].id]); /* the next epoch does not repeat them */
			got[e1[q].id] = 1;
			seen++;
		}
	free(got);
	free(e0);
	free(e1);
	mixds_free(&d);
}

static void test_refusals(void **state)
{
	(void)state;
	uint32_t shards[2] = {1, 1};
	mixds d = make_mix(2, shards, 5, 6);
	uint64_t w[2] = {1, 1};
	rf_plan_params pp = {.seed = 1, .world = 2, .rank = 2, .shuffle = true};
	rf_plan_mix_params mp = {.sources = 2, .first = d.first, .weight = w};
	rf_plan *p = NULL;
	rf_error err = {0};
	assert_true(rf_plan_new_mix(&pp, (const rf_shard_index *const *)d.ix, d.nshards, &mp, &p,
	                            &err) < 0);
	pp.rank = 0;
	uint32_t bad[3] = {0, 2, 2};
	mp.first = bad;
	assert_true(rf_plan_new_mix(&pp, (const rf_shard_index *const *)d.ix, d.nshards, &mp, &p,
	                            &err) < 0);
	assert_non_null(strstr(err.msg, "source 2 has no shards"));
	mixds_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_sources), cmocka_unit_test(test_extreme_weights),
	    cmocka_unit_test(test_ten_sources), cmocka_unit_test(test_up_and_sub_sampling),
	    cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
