/* test_mix_rebase.c - a mixture's weights changed at a resume (issue 25 item
 * 5; mix_rebase.h), against its definition. A mixture read with weights w1
 * on W ranks stops mid-epoch (every rank at record p); the resume gives new
 * weights w2 on W2 ranks. Checked, on ordinals (each source's samples of its
 * own endless stream, whose pass and record are weight-independent):
 * - nothing delivered before the change comes again, and after it each
 *   source gives exactly its next ordinals not yet delivered, in order (no
 *   record repeats inside its pass, none is skipped);
 * - each record is the one the source's ordinal names (against the
 *   uninterrupted stream's own ordinal -> record map);
 * - every prefix from the change holds w2's shares within 1;
 * - the saved epoch keeps its size; the W2 ranks take equal slices whose
 *   concatenation is the world-1 stream;
 * - a second change composes (w2 -> w3 on another world);
 * - the encoding round-trips and every damaged byte is refused. */
#include "mix.h"
#include "mix_rebase.h"
#include "mixds.h"
#include "plan.h"
#include "state.h"
#include "testutil.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define K       3
#define ORD_MAX 200000u /* ordinals tracked per source */

/* K sources of shards[i] shards, 1..3 blocks of 1..9 records */
static mixds make_ds(const uint32_t *shards, uint64_t seed)
{
	return mixds_make(K, shards, 3, 1, 9, seed);
}

static rf_plan *new_plan(const mixds *d, const uint64_t *w, uint32_t world, uint32_t rank,
                         uint32_t window, const uint32_t *wins)
{
	rf_plan_params pp = {
	    .seed = 77, .rank = rank, .world = world, .shuffle = true, .shuffle_window = window};
	rf_plan_mix_params mp = {.sources = K, .first = d->first, .weight = w, .windows = wins};
	rf_plan *plan = NULL;
	rf_error err = {0};
	if (rf_plan_new_mix(&pp, (const rf_shard_index *const *)d->ix, d->nshards, &mp, &plan,
	                    &err) != 0)
		fail_msg("rf_plan_new_mix: %s", err.msg);
	return plan;
}

typedef struct smp {
	uint32_t k;
	uint64_t rec; /* record number inside its source */
} smp;

/* One rank's stream of `epoch` (with sequence seq when given). */
static smp *stream(rf_plan *plan, const mixds *d, uint64_t epoch, const rf_segment *seq,
                   uint32_t nseq, uint64_t *n_out)
{
	rf_error err = {0};
	if (seq && rf_plan_set_sequence(plan, epoch, seq, nseq, 0, &err) != 0)
		fail_msg("rf_plan_set_sequence: %s", err.msg);
	if (rf_plan_epoch(plan, epoch, &err) != 0)
		fail_msg("rf_plan_epoch: %s", err.msg);
	uint64_t n = rf_plan_epoch_records(plan);
	smp *out = calloc(n ? n : 1, sizeof(*out));
	assert_non_null(out);
	for (uint64_t q = 0; q < n; q++) {
		size_t u;
		uint32_t r;
		rf_plan_locate(plan, q, &u, &r);
		assert_true(u < rf_plan_unit_count(plan));
		const rf_unit *un = rf_plan_unit(plan, u);
		assert_true(r < un->records);
		uint64_t need = rf_plan_need(plan, q + 1);
		assert_true(un->first_plan_record + un->records <= need);
		assert_true(un->release_pos > q);
		out[q].k = d->shard_src[un->shard];
		out[q].rec =
		    d->shard_first[un->shard] + d->ix[un->shard]->block[un->block].first_record + r;
		assert_int_equal(rf_plan_mix_source_of(plan, q), out[q].k);
	}
	*n_out = n;
	return out;
}

/* The uninterrupted world-1 stream's ordinal -> record map, per source, for
 * `epochs` epochs of weights w (M samples an epoch). */
static uint64_t *ord_map(const mixds *d, const uint64_t *w, uint32_t window, uint32_t epochs,
                         uint64_t *have)
{
	uint64_t *map = malloc((size_t)K * ORD_MAX * sizeof(uint64_t));
	assert_non_null(map);
	memset(map, 0xff, (size_t)K * ORD_MAX * sizeof(uint64_t));
	rf_plan *plan = new_plan(d, w, 1, 0, window, NULL);
	uint64_t c[K] = {0};
	for (uint32_t e = 0; e < epochs; e++) {
		uint64_t n;
		smp *s = stream(plan, d, e, NULL, 0, &n);
		for (uint64_t q = 0; q < n; q++) {
			uint32_t k = s[q].k;
			if (c[k] < ORD_MAX)
				map[(size_t)k * ORD_MAX + c[k]] = s[q].rec;
			c[k]++;
		}
		free(s);
	}
	rf_plan_free(plan);
	for (uint32_t k = 0; k < K; k++)
		have[k] = c[k] < ORD_MAX ? c[k] : ORD_MAX;
	return map;
}

typedef struct world_state {
	uint64_t *w;
	const rf_mix_rebase *rb; /* the change in force (NULL: none) */
	uint64_t samples, epoch, record;
	uint32_t world;
	rf_segment *seq; /* the epoch's sequence (NULL: whole) */
	uint32_t nseq;
} world_state;

/* Ordinals gone in epoch `st->epoch` when every rank stood at st->record:
 * those delivered, and the partition's tail (never given, as in an
 * uninterrupted run): marks del[k][o]; returns how many. */
static uint64_t mark_delivered(const world_state *st, uint8_t **del)
{
	rf_mix *m = NULL;
	rf_error err = {0};
	assert_int_equal(rf_mix_new(&m, K, st->w, 1, &err), 0);
	rf_position p = {.dataset_records = st->samples,
	                 .world = st->world,
	                 .epoch = st->epoch,
	                 .record = st->record,
	                 .has_seq = st->seq != NULL,
	                 .segs = st->seq,
	                 .nsegs = st->nseq};
	/* taken = the epoch's positions less what remains */
	rf_segment *rem = NULL;
	uint32_t nrem = 0;
	assert_int_equal(rf_state_remaining(&p, &rem, &nrem, &err), 0);
	uint64_t len = rf_mix_rebase_epoch_len(st->rb, st->samples, st->epoch);
	uint64_t g0 = rf_mix_rebase_g0(st->rb, st->samples, st->epoch);
	uint8_t *left = calloc(len, 1), *inseq = calloc(len, 1);
	assert_true(left && inseq);
	for (uint32_t i = 0; i < nrem; i++)
		memset(left + rem[i].start, 1, rem[i].records);
	if (st->seq)
		for (uint32_t i = 0; i < st->nseq; i++)
			memset(inseq + st->seq[i].start, 1, st->seq[i].records);
	else
		memset(inseq, 1, len);
	/* the ranks' parts of the sequence up to record (the tail is never given) */
	uint64_t slen = 0;
	for (uint64_t x = 0; x < len; x++)
		slen += inseq[x];
	uint64_t slice = slen / st->world, taken = 0, at = 0;
	for (uint64_t x = 0; x < len; x++) {
		if (!inseq[x])
			continue;
		uint64_t r = at / (slice ? slice : 1), off = at % (slice ? slice : 1);
		at++;
		bool tail = !slice || r >= st->world; /* never given: the partition's tail */
		bool given = !tail && off < st->record;
		assert_true(tail || given == !left[x]); /* rf_state_remaining agrees */
		if (!given && !tail)
			continue;
		uint64_t o;
		uint32_t k = rf_mix_source(m, g0 + x, &o);
		o = rf_mix_rebase_o(st->rb, k, o);
		assert_true(o < ORD_MAX);
		assert_false(del[k][o]);
		del[k][o] = 1;
		taken++;
	}
	free(left);
	free(inseq);
	free(rem);
	rf_mix_free(m);
	return taken;
}

/* After the change rb (weights w2, world W2): the world-1 stream of the
 * rebased epoch and the next, checked; the delivered marks extended. */
static void check_after(const mixds *d, const uint64_t *w2, const rf_mix_rebase *rb,
                        uint64_t samples, uint32_t world2, uint32_t window, uint8_t **del,
                        const uint64_t *map, const uint64_t *have)
{
	rf_error err = {0};
	rf_mix *m = NULL;
	assert_int_equal(rf_mix_new(&m, K, w2, 1, &err), 0);
	uint64_t wsum = 0;
	for (uint32_t k = 0; k < K; k++)
		wsum += w2[k];
	/* the next ordinal each source must give: its first not delivered */
	uint64_t next[K];
	for (uint32_t k = 0; k < K; k++)
		for (next[k] = 0; next[k] < ORD_MAX && del[k][next[k]]; next[k]++)
			;
	uint64_t total = 0, cnt[K] = {0};
	for (uint64_t e = rb->epoch; e < rb->epoch + 2; e++) {
		rf_segment seg = {0, rb->length};
		bool rest = e == rb->epoch && rb->length < samples;
		rf_plan *p1 = new_plan(d, w2, 1, 0, window, rb->window);
		assert_int_equal(rf_plan_mix_set_rebase(p1, rb, samples, &err), 0);
		uint64_t n1;
		smp *s1 = stream(p1, d, e, rest ? &seg : NULL, 1, &n1);
		assert_int_equal(n1, e == rb->epoch ? rb->length : samples);
		for (uint64_t q = 0; q < n1; q++, total++) {
			uint64_t i;
			uint32_t k = rf_mix_source(m, total, &i);
			assert_int_equal(k, s1[q].k);
			cnt[k]++;
			for (uint32_t j = 0; j < K; j++) {
				__int128 diff =
				    (__int128)cnt[j] * wsum - (__int128)(total + 1) * w2[j];
				assert_true(diff < (__int128)wsum && diff > -(__int128)wsum);
			}
			uint64_t o = rf_mix_rebase_o(rb, k, i);
			assert_int_equal(o, next[k]); /* its next ordinal not delivered */
			assert_true(o < ORD_MAX);
			del[k][o] = 1;
			while (next[k] < ORD_MAX && del[k][next[k]])
				next[k]++;
			if (o < have[k]) /* the record that ordinal names */
				assert_int_equal(s1[q].rec, map[(size_t)k * ORD_MAX + o]);
			assert_int_equal(rf_mix_rebase_i(rb, k, o), i);
		}
		/* W2 ranks: equal slices, together the world-1 stream's prefix */
		uint64_t slice = UINT64_MAX;
		for (uint32_t r = 0; r < world2; r++) {
			rf_plan *pr = new_plan(d, w2, world2, r, window, rb->window);
			assert_int_equal(rf_plan_mix_set_rebase(pr, rb, samples, &err), 0);
			uint64_t n;
			smp *s = stream(pr, d, e, rest ? &seg : NULL, 1, &n);
			if (slice == UINT64_MAX)
				slice = n;
			assert_int_equal(n, slice);
			for (uint64_t q = 0; q < n; q++) {
				assert_int_equal(s[q].k, s1[r * slice + q].k);
				assert_int_equal(s[q].rec, s1[r * slice + q].rec);
			}
			free(s);
			rf_plan_free(pr);
		}
		free(s1);
		rf_plan_free(p1);
	}
	rf_mix_free(m);
}

static rf_mix_rebase *change(const world_state *st, uint32_t window, rf_error *err)
{
	/* the windows in force: the first weights' (or the change's) */
	rf_plan_params pp = {.world = 1, .shuffle = true, .shuffle_window = window};
	uint32_t wins[K];
	for (uint32_t k = 0; k < K; k++) {
		uint32_t x = rf_plan_mix_window(&pp, st->w, K, k);
		wins[k] = x > 1 ? x : 1;
	}
	rf_mix *old = NULL;
	assert_int_equal(rf_mix_new(&old, K, st->w, 1, err), 0);
	rf_position p = {.dataset_records = st->samples,
	                 .world = st->world,
	                 .epoch = st->epoch,
	                 .record = st->record,
	                 .has_seq = st->seq != NULL,
	                 .segs = st->seq,
	                 .nsegs = st->nseq};
	rf_segment *rem = NULL;
	uint32_t nrem = 0;
	assert_int_equal(rf_state_remaining(&p, &rem, &nrem, err), 0);
	rf_mix_rebase *rb = NULL;
	rf_segment *taken = NULL;
	uint32_t ntaken = 0;
	assert_int_equal(rf_state_taken(&p, &taken, &ntaken, err), 0);
	int rc = rf_mix_rebase_compose(old, st->rb, st->samples, st->epoch, rem, nrem, taken,
	                               ntaken, wins, &rb, err);
	free(taken);
	if (rc != 0)
		fail_msg("compose: %s", err->msg);
	free(rem);
	rf_mix_free(old);
	return rb;
}

static void round_trip(const rf_mix_rebase *rb, uint64_t samples)
{
	size_t n = rf_mix_rebase_bytes(rb);
	uint8_t *b = malloc(n), *c = malloc(n);
	assert_true(b && c);
	rf_mix_rebase_encode(rb, b);
	rf_error err = {0};
	rf_mix_rebase *back = NULL;
	assert_int_equal(rf_mix_rebase_decode(b, n, K, samples, rb->epoch, &back, &err), 0);
	rf_mix_rebase_encode(back, c);
	assert_memory_equal(b, c, n);
	rf_mix_rebase_free(back);
	/* the encoding is checked, not trusted: a change after the state's
	 * epoch, a length past the epoch, an empty range, a wrong count */
	if (rb->epoch > 0)
		assert_int_not_equal(
		    rf_mix_rebase_decode(b, n, K, samples, rb->epoch - 1, &back, &err), 0);
	memcpy(c, b, n);
	rf_store_le64(c + 8, samples + 1);
	assert_int_not_equal(rf_mix_rebase_decode(c, n, K, samples, rb->epoch, &back, &err), 0);
	if (rb->nranges > 0) {
		memcpy(c, b, n);
		rf_store_le64(c + 20 + 16 * K + 8, 0); /* the first range empty */
		assert_int_not_equal(rf_mix_rebase_decode(c, n, K, samples, rb->epoch, &back, &err),
		                     0);
	}
	memcpy(c, b, n);
	rf_store_le32(c + 16, rb->nranges + 1); /* a count the bytes do not hold */
	assert_int_not_equal(rf_mix_rebase_decode(c, n, K, samples, rb->epoch, &back, &err), 0);
	free(b);
	free(c);
}

static void run_case(const uint32_t *shards, uint64_t seed, const uint64_t *w1, const uint64_t *w2,
                     const uint64_t *w3, uint32_t W, uint32_t W2, uint32_t W3, uint32_t window)
{
	mixds d = make_ds(shards, seed);
	rf_error err = {0};
	rf_plan *probe = new_plan(&d, w1, 1, 0, window, NULL);
	uint64_t samples = rf_plan_total_records(probe);
	rf_plan_free(probe);
	uint64_t have[K];
	uint64_t *map = ord_map(&d, w1, window, 6, have);
	uint8_t *del[K];
	for (uint32_t k = 0; k < K; k++)
		assert_non_null(del[k] = calloc(ORD_MAX, 1));
	/* epoch 1, a third of the way: epoch 0 is delivered whole (less its tail) */
	world_state st = {
	    .w = (uint64_t *)w1, .samples = samples, .epoch = 0, .record = 0, .world = W};
	st.record = samples / W; /* epoch 0 whole on W ranks */
	mark_delivered(&st, del);
	st.epoch = 1;
	st.record = samples / W / 3;
	mark_delivered(&st, del);
	rf_mix_rebase *rb = change(&st, window, &err);
	assert_int_equal(rb->epoch, 1);
	round_trip(rb, samples);
	check_after(&d, w2, rb, samples, W2, window, del, map, have);
	/* a second change composes: w2 -> w3, a quarter into the rebased epoch's
	 * rest on W2 ranks (the state's sequence is that rest) */
	if (w3) {
		for (uint32_t k = 0; k < K; k++)
			memset(del[k], 0, ORD_MAX);
		st.epoch = 0;
		st.record = samples / W;
		mark_delivered(&st, del);
		st.epoch = 1;
		st.record = samples / W / 3;
		mark_delivered(&st, del);
		rf_segment rest = {0, rb->length};
		world_state s2 = {.w = (uint64_t *)w2,
		                  .rb = rb,
		                  .samples = samples,
		                  .epoch = 1,
		                  .record = rb->length / W2 / 4,
		                  .world = W2,
		                  .seq = rb->length < samples ? &rest : NULL,
		                  .nseq = 1};
		mark_delivered(&s2, del);
		rf_mix_rebase *rb2 = change(&s2, window, &err);
		round_trip(rb2, samples);
		check_after(&d, w3, rb2, samples, W3, window, del, map, have);
		rf_mix_rebase_free(rb2);
	}
	rf_mix_rebase_free(rb);
	for (uint32_t k = 0; k < K; k++)
		free(del[k]);
	free(map);
	mixds_free(&d);
}

static void test_reweight(void **state)
{
	(void)state;
	const uint32_t shards[K] = {3, 6, 2};
	const uint64_t w1[K] = {500000, 300000, 200000}, w2[K] = {100000, 100000, 800000},
	               w3[K] = {333333, 333333, 333334};
	run_case(shards, 1, w1, w1, NULL, 3, 1, 1, 1); /* no change: a plain re-split */
	run_case(shards, 1, w1, w2, w3, 3, 2, 4, 1);
	run_case(shards, 2, w1, w2, w3, 1, 1, 1, 8);
	run_case(shards, 3, w2, w1, w3, 4, 3, 2, 5);
	const uint64_t z1[K] = {999000, 1000, 0}, z2[K] = {1000, 999000, 0};
	run_case(shards, 4, z1, z2, NULL, 2, 5, 1, 1);
	const uint64_t x1[K] = {1, 1, 1}, x2[K] = {0, 0, 1};
	run_case(shards, 5, x1, x2, x1, 3, 3, 3, 4);
}

/* A change at an epoch's end: the next epoch whole under the new weights. */
static void test_reweight_at_epoch_end(void **state)
{
	(void)state;
	const uint32_t shards[K] = {2, 4, 3};
	mixds d = make_ds(shards, 9);
	const uint64_t w1[K] = {1, 2, 3}, w2[K] = {3, 2, 1};
	rf_plan *probe = new_plan(&d, w1, 1, 0, 1, NULL);
	uint64_t samples = rf_plan_total_records(probe);
	rf_plan_free(probe);
	rf_error err = {0};
	world_state st = {.w = (uint64_t *)w1, .samples = samples, .epoch = 2, .world = 2};
	st.record = samples / 2;
	rf_mix_rebase *rb = change(&st, 1, &err);
	assert_int_equal(rb->epoch, 3);
	assert_int_equal(rb->length, samples);
	uint64_t have[K];
	uint64_t *map = ord_map(&d, w1, 1, 8, have);
	uint8_t *del[K];
	for (uint32_t k = 0; k < K; k++)
		assert_non_null(del[k] = calloc(ORD_MAX, 1));
	for (st.epoch = 0; st.epoch < 3; st.epoch++)
		mark_delivered(&st, del);
	check_after(&d, w2, rb, samples, 2, 1, del, map, have);
	for (uint32_t k = 0; k < K; k++)
		free(del[k]);
	free(map);
	rf_mix_rebase_free(rb);
	mixds_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_reweight),
	                                   cmocka_unit_test(test_reweight_at_epoch_end)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
