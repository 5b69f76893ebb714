/* test_dist.c - the loader under distributed training, end to end on small
 * generated datasets with very uneven records per block (blocks of one
 * record, blocks of dozens, ranks with no block of their own): every rank
 * takes the same number of records and batches (stats agree, known at
 * open), the ranks' union is the epoch minus the dropped tail (or plus the
 * padded records), elastic resume on another world size and batch size
 * delivers exactly what no rank had taken, resizes compose, refusals name
 * the setting that differs, and the skip policy leaves out damaged blocks
 * within its bound, every other record at its position. */
#include "engine.h"
#include "ringfeed.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef rf_test_dataset dataset;

/* Every 9th record is larger than a block (a block of its own), the others
 * are small (a block holds dozens): records per block from 1 to ~60. */
static size_t make_record(uint32_t s, uint32_t r, uint8_t *buf, size_t cap, void *arg)
{
	(void)arg;
	size_t len = (size_t)snprintf((char *)buf, 64, "s%u-r%u:", s, r);
	size_t extra = r % 9 == 4 ? 1500 : r % 5;
	memset(buf + len, 'a' + (int)(r % 26), len + extra <= cap ? extra : 0);
	return len + extra;
}

static void make_dataset(dataset *d, uint32_t nshards, uint32_t records)
{
	rf_test_dataset_make(d, "dist", nshards, records, 4096, 1024, make_record, NULL);
}

/* The settings kv, then the space-separated "key=value" words of more
 * (errors_ok is the test's own word, not a setting). */
static rf_config *make_config(const dataset *d, const char *const *kv, const char *more)
{
	rf_config *c = rf_test_config(d, kv);
	rf_error err = {0};
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", more ? more : "");
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(t, '=');
		assert_non_null(eq);
		*eq = 0;
		if (!strcmp(t, "errors_ok"))
			continue;
		if (rf_config_set(c, t, eq + 1, &err) != 0)
			fail_msg("config %s: %s", t, err.msg);
	}
	return c;
}

typedef struct run {
	uint64_t *ids;
	size_t n, cap;
	uint64_t batches;
	uint32_t sizes[4096]; /* records per batch */
	int rc;
	char msg[RF_ERROR_MSG_BYTES];
	rf_stats st, st_end; /* taken at open and at the end */
	uint8_t state[1024];
	size_t state_len;
} run;

static void run_add(run *r, uint64_t id)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->ids = realloc(r->ids, r->cap * sizeof(*r->ids));
	}
	r->ids[r->n++] = id;
}

#define ALL UINT64_MAX

/* Opens (resuming from `resume` when given), reads up to max batches,
 * saves the state. */
static run read_rank(const dataset *d, const char *const *kv, const char *more,
                     const uint8_t *resume, size_t resume_len, uint64_t max)
{
	rf_config *c = make_config(d, kv, more);
	rf_error err = {0};
	if (resume)
		assert_int_equal(rf_config_set_resume(c, resume, resume_len, &err), 0);
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open (%s): %s", more ? more : "", err.msg);
	run r = {0};
	assert_int_equal(rf_stats_get(l, &r.st, sizeof(r.st)), 0);
	while (r.batches < max) {
		rf_batch *b = NULL;
		int rc = rf_next(l, &b, 5000);
		if (rc != 0) {
			r.rc = rc;
			snprintf(r.msg, sizeof(r.msg), "%s", rf_last_error(l));
			if (rc != RF_END && !strstr(more ? more : "", "errors_ok"))
				fail_msg("rf_next (%s): %s", more ? more : "", rf_last_error(l));
			break;
		}
		if (r.batches < 4096)
			r.sizes[r.batches] = b->records;
		for (uint32_t i = 0; i < b->records; i++)
			run_add(&r, rf_test_rec_id(b->payload + b->offsets[i],
			                           (uint32_t)(b->offsets[i + 1] - b->offsets[i])));
		r.batches++;
		rf_release(l, b);
	}
	r.state_len = sizeof(r.state);
	assert_int_equal(rf_state_save(l, r.state, &r.state_len), 0);
	assert_int_equal(rf_stats_get(l, &r.st_end, sizeof(r.st_end)), 0);
	rf_close(l);
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Counts how often each record of the dataset was delivered (ids sorted). */
typedef struct tally {
	uint64_t *sorted;
	uint32_t *count;
	uint64_t n;
} tally;

static tally tally_new(const dataset *d)
{
	tally t = {.n = d->total};
	t.sorted = malloc(d->total * sizeof(uint64_t));
	memcpy(t.sorted, d->ids, d->total * sizeof(uint64_t));
	qsort(t.sorted, d->total, sizeof(uint64_t), cmp_u64);
	t.count = calloc(d->total, sizeof(uint32_t));
	return t;
}

static void tally_add(tally *t, const run *r)
{
	for (size_t i = 0; i < r->n; i++) {
		uint64_t *at = bsearch(&r->ids[i], t->sorted, t->n, sizeof(uint64_t), cmp_u64);
		assert_non_null(at);
		t->count[at - t->sorted]++;
	}
}

/* Records delivered 0, 1 and more times. */
static void tally_counts(const tally *t, uint64_t *zero, uint64_t *once, uint64_t *more)
{
	*zero = *once = *more = 0;
	for (uint64_t i = 0; i < t->n; i++) {
		*zero += t->count[i] == 0;
		*once += t->count[i] == 1;
		*more += t->count[i] > 1;
	}
}

static void tally_free(tally *t)
{
	free(t->sorted);
	free(t->count);
}

static const char *const BASE[] = {"seed=5",    "shuffle_window=16", "budget=16MiB",
                                   "threads=2", "epochs=1",          NULL};

/* Equal counts for every world size, batch size and tail policy; union is
 * the epoch minus the tail (or plus the padding), each exactly once. */
static void test_equal_counts(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 70); /* 210 records */
	static const uint32_t worlds[] = {1, 2, 3, 4, 7, 16};
	static const uint32_t batches[] = {1, 4, 9};
	for (size_t wi = 0; wi < sizeof(worlds) / sizeof(worlds[0]); wi++)
		for (size_t bi = 0; bi < sizeof(batches) / sizeof(batches[0]); bi++)
			for (int mode = 0; mode < 3; mode++) { /* drop, pad, drop_last */
				uint32_t w = worlds[wi], b = batches[bi];
				tally t = tally_new(&d);
				uint64_t per = mode == 1 ? (d.total + w - 1) / w : d.total / w;
				uint64_t recs = mode == 2 ? per / b * b : per;
				for (uint32_t r = 0; r < w; r++) {
					char more[256];
					snprintf(
					    more, sizeof(more),
					    "world=%u rank=%u batch=%u pad_tail=%d drop_last=%d", w,
					    r, b, mode == 1, mode == 2);
					run x = read_rank(&d, BASE, more, NULL, 0, ALL);
					assert_int_equal(x.rc, RF_END);
					assert_int_equal(x.n, recs);
					assert_int_equal(x.batches, (recs + b - 1) / b);
					assert_int_equal(x.st.epoch_records, recs);
					assert_int_equal(x.st.epoch_batches, x.batches);
					assert_int_equal(x.st.epoch_records_dropped,
					                 mode == 1 ? 0 : d.total - per * w);
					assert_int_equal(x.st.epoch_records_padded,
					                 mode == 1 ? per * w - d.total : 0);
					tally_add(&t, &x);
					free(x.ids);
				}
				uint64_t zero, once, more;
				tally_counts(&t, &zero, &once, &more);
				if (mode == 1) {
					assert_int_equal(zero, 0);
					assert_true(more <= per * w - d.total);
				} else {
					assert_int_equal(more, 0);
					assert_int_equal(once, recs * w);
				}
				tally_free(&t);
			}
	rf_test_dataset_free(&d);
}

/* W ranks take k batches each; any rank's state (all identical) resumes on
 * W2 ranks (batch b2): before + after is the epoch, each record once, with
 * equal counts per new rank; only the two tails are missing. */
static void elastic(const dataset *d, uint32_t w, uint32_t b, uint64_t k, uint32_t w2, uint32_t b2)
{
	tally t = tally_new(d);
	uint8_t st[1024];
	size_t st_len = 0;
	for (uint32_t r = 0; r < w; r++) {
		char more[128];
		snprintf(more, sizeof(more), "world=%u rank=%u batch=%u", w, r, b);
		run x = read_rank(d, BASE, more, NULL, 0, k);
		if (r == 0) {
			memcpy(st, x.state, x.state_len);
			st_len = x.state_len;
		} else { /* any rank's state is the job's position */
			assert_int_equal(x.state_len, st_len);
			assert_memory_equal(x.state, st, st_len);
		}
		tally_add(&t, &x);
		free(x.ids);
	}
	uint64_t before = 0, z, m;
	tally_counts(&t, &z, &before, &m);
	uint64_t per = 0;
	for (uint32_t r = 0; r < w2; r++) {
		char more[128];
		snprintf(more, sizeof(more), "world=%u rank=%u batch=%u", w2, r, b2);
		run x = read_rank(d, BASE, more, st, st_len, ALL);
		assert_int_equal(x.rc, RF_END);
		if (r == 0)
			per = x.n;
		assert_int_equal(x.n, per); /* equal counts per new rank */
		if (w != w2)                /* a re-split epoch: its batches count from 0 */
			assert_int_equal(x.st.epoch_records, x.n);
		assert_int_equal(x.batches, (x.n + b2 - 1) / b2);
		tally_add(&t, &x);
		free(x.ids);
	}
	uint64_t zero, once, more;
	tally_counts(&t, &zero, &once, &more);
	if (more != 0)
		fail_msg("W=%u k=%llu W2=%u: %llu records delivered twice", w,
		         (unsigned long long)k, w2, (unsigned long long)more);
	uint64_t left = d->total - d->total % w - before; /* what no rank had taken */
	assert_int_equal(once, before + per * w2);
	assert_int_equal(per, w == w2 ? left / w : left / w2); /* tail of the re-split dropped */
	tally_free(&t);
}

static void test_elastic_resume(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 70); /* 210 records */
	static const uint32_t pairs[][2] = {{4, 2}, {4, 3}, {2, 5}, {3, 3}};
	for (size_t i = 0; i < 4; i++) {
		uint32_t w = pairs[i][0], w2 = pairs[i][1], b = 5;
		uint64_t batches = (d.total / w + b - 1) / b;
		uint64_t ks[] = {0, 1, batches / 2, batches - 1, batches};
		for (size_t j = 0; j < 5; j++)
			elastic(&d, w, b, ks[j], w2, b);
	}
	/* A batch-size change along with the world size, and alone. */
	elastic(&d, 4, 5, 3, 3, 8);
	elastic(&d, 3, 5, 4, 3, 2);
	rf_test_dataset_free(&d);
}

/* Two resizes within one epoch: 4 ranks, then 3, then 2. */
static void test_two_resizes(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 70);
	tally t = tally_new(&d);
	uint8_t st[1024], st2[1024];
	size_t st_len = 0, st2_len = 0;
	for (uint32_t r = 0; r < 4; r++) {
		char more[128];
		snprintf(more, sizeof(more), "world=4 rank=%u batch=4", r);
		run x = read_rank(&d, BASE, more, NULL, 0, 3);
		memcpy(st, x.state, x.state_len);
		st_len = x.state_len;
		tally_add(&t, &x);
		free(x.ids);
	}
	for (uint32_t r = 0; r < 3; r++) {
		char more[128];
		snprintf(more, sizeof(more), "world=3 rank=%u batch=3", r);
		run x = read_rank(&d, BASE, more, st, st_len, 4);
		if (r > 0) {
			assert_int_equal(x.state_len, st2_len);
			assert_memory_equal(x.state, st2, st2_len);
		}
		memcpy(st2, x.state, x.state_len);
		st2_len = x.state_len;
		tally_add(&t, &x);
		free(x.ids);
	}
	assert_true(st2_len > 96 && st2_len < 1024); /* the remaining segments, not records */
	/* The re-split epoch's state also resumes on its own world: each rank
	 * continues its slice of the re-split sequence (41 records left each). */
	tally same = tally_new(&d);
	memcpy(same.count, t.count, d.total * sizeof(uint32_t));
	for (uint32_t r = 0; r < 3; r++) {
		char more[128];
		snprintf(more, sizeof(more), "world=3 rank=%u batch=3", r);
		run x = read_rank(&d, BASE, more, st2, st2_len, ALL);
		assert_int_equal(x.rc, RF_END);
		assert_int_equal(x.n, 41);
		assert_int_equal(x.st.epoch_records, 53); /* its batches continue from 4 */
		tally_add(&same, &x);
		free(x.ids);
	}
	uint64_t z0, o0, m0;
	tally_counts(&same, &z0, &o0, &m0);
	assert_int_equal(m0, 0);
	assert_int_equal(o0, 48 + 36 + 123);
	tally_free(&same);
	uint64_t per = 0;
	for (uint32_t r = 0; r < 2; r++) {
		char more[128];
		snprintf(more, sizeof(more), "world=2 rank=%u batch=7", r);
		run x = read_rank(&d, BASE, more, st2, st2_len, ALL);
		assert_int_equal(x.rc, RF_END);
		if (r == 0)
			per = x.n;
		assert_int_equal(x.n, per);
		tally_add(&t, &x);
		free(x.ids);
	}
	uint64_t zero, once, more;
	tally_counts(&t, &zero, &once, &more);
	assert_int_equal(more, 0);
	/* 210 = 4 x 52 + 2 dropped; 48 taken; 160 left = 3 x 53 + 1 dropped;
	 * 36 taken; 123 left = 2 x 61 + 1 dropped. */
	assert_int_equal(per, 61);
	assert_int_equal(once, 48 + 36 + 2 * 61);
	tally_free(&t);
	rf_test_dataset_free(&d);
}

static void expect_refused(const dataset *d, const char *more, const uint8_t *st, size_t len,
                           const char *what)
{
	rf_config *c = make_config(d, BASE, more);
	rf_error err = {0};
	if (st)
		assert_int_equal(rf_config_set_resume(c, st, len, &err), 0);
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	assert_null(l);
	if (!strstr(err.msg, what))
		fail_msg("expected '%s' in: %s", what, err.msg);
}

static void test_refusals_name_the_difference(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 70);
	run x = read_rank(&d, BASE, "world=2 rank=1 batch=4", NULL, 0, 2);
	free(x.ids);
	expect_refused(&d, "seed=6", x.state, x.state_len, "seed differs: saved 5, now 6");
	expect_refused(&d, "shuffle=0", x.state, x.state_len, "shuffle differs: saved 1, now 0");
	expect_refused(&d, "shuffle_window=8", x.state, x.state_len,
	               "shuffle_window differs: saved 16, now 8");
	/* Byte-limited batches cannot give equal batch counts: refused, saying
	 * what to set. */
	expect_refused(&d, "world=2 batch_bytes=4KiB", NULL, 0, "set batch");
	expect_refused(&d, "drop_last=1 batch_bytes=4KiB", NULL, 0, "drop_last with batch_bytes");
	rf_test_dataset_free(&d);
	/* Another dataset (a shard fewer). */
	make_dataset(&d, 2, 70);
	expect_refused(&d, "", x.state, x.state_len, "another dataset: saved 3 shards");
	rf_test_dataset_free(&d);
}

/* Flips a byte inside block b of a shard (its frame, found via the index);
 * returns the block's packed records [first, first + records). */
static void corrupt_block(const dataset *d, uint32_t s, uint32_t b, uint64_t *first,
                          uint32_t *records)
{
	rf_shard_index *ix = NULL;
	rf_error err = {0};
	assert_int_equal(rf_index_read_file(d->path[s], &ix, &err), 0);
	assert_true(b < ix->blocks);
	uint64_t at = ix->block[b].offset + ix->block[b].compressed_bytes / 2;
	*first = (uint64_t)s * (d->total / d->nshards) + ix->block[b].first_record;
	*records = ix->block[b].records;
	rf_index_free(ix);
	unsigned char *buf = NULL;
	long n = rf_test_read_file(d->path[s], &buf);
	assert_true(n > 0 && (uint64_t)n > at);
	buf[at] ^= 0x5a;
	assert_int_equal(rf_test_write_file(d->path[s], buf, (size_t)n), 0);
	free(buf);
}

/* ids of `r` in batch i (from the per-batch sizes) */
static const uint64_t *batch_at(const run *r, uint64_t i, uint32_t *n)
{
	uint64_t at = 0;
	for (uint64_t k = 0; k < i; k++)
		at += r->sizes[k];
	*n = r->sizes[i];
	return r->ids + at;
}

static bool is_damaged(const dataset *d, uint64_t id, const uint64_t *first,
                       const uint32_t *records, int nbad)
{
	for (int k = 0; k < nbad; k++)
		for (uint32_t j = 0; j < records[k]; j++)
			if (d->ids[first[k] + j] == id)
				return true;
	return false;
}

/* Batch i of `got` is batch i of `ref` without the damaged blocks' records,
 * in the same order, for every batch of `got`. */
static void assert_ref_minus(const dataset *d, const run *ref, const run *got,
                             const uint64_t *first, const uint32_t *records, int nbad)
{
	for (uint64_t i = 0; i < got->batches; i++) {
		uint32_t nr, ng, k = 0;
		const uint64_t *a = batch_at(ref, i, &nr), *g = batch_at(got, i, &ng);
		for (uint32_t j = 0; j < nr; j++) {
			if (is_damaged(d, a[j], first, records, nbad))
				continue;
			assert_true(k < ng);
			assert_true(g[k] == a[j]);
			k++;
		}
		assert_int_equal(k, ng);
	}
}

static const char *const SKIP[] = {"seed=8",   "shuffle_window=16", "budget=16MiB", "threads=2",
                                   "epochs=1", "batch=5",           "retries=1",    NULL};

/* Two damaged blocks, a bound of two: everything else, every batch where it
 * was (smaller); the skips are reported; a resume after the first skip is
 * exact; a third damaged block fails the stream at its position. */
static void test_skip_policy(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 70);
	run ref = read_rank(&d, SKIP, NULL, NULL, 0, ALL);
	assert_int_equal(ref.rc, RF_END);
	uint64_t first[3];
	uint32_t records[3];
	corrupt_block(&d, 0, 3, &first[0], &records[0]);
	corrupt_block(&d, 2, 1, &first[1], &records[1]);
	run r = read_rank(&d, SKIP, "skip_blocks=2", NULL, 0, ALL);
	assert_int_equal(r.rc, RF_END);
	assert_int_equal(r.batches, ref.batches); /* positions unchanged */
	assert_ref_minus(&d, &ref, &r, first, records, 2);
	assert_int_equal(r.n, ref.n - records[0] - records[1]);
	assert_int_equal(r.st_end.blocks_skipped, 2);
	assert_int_equal(r.st_end.records_skipped, records[0] + records[1]);
	assert_int_equal(r.st_end.skips_listed, 2);
	for (int k = 0; k < 2; k++) {
		const rf_skip *s = &r.st_end.skips[k];
		assert_true((s->shard == 0 && s->block == 3) || (s->shard == 2 && s->block == 1));
		assert_int_equal(s->records, s->shard == 0 ? records[0] : records[1]);
		assert_non_null(strstr(s->error, "block"));
	}
	/* Resume after every batch: the rest is exactly the skipping run's rest
	 * (the skips met before the save are in the state: the bound of 2
	 * still holds). */
	for (uint64_t k = 1; k < r.batches; k += 3) {
		run a = read_rank(&d, SKIP, "skip_blocks=2", NULL, 0, k);
		run b = read_rank(&d, SKIP, "skip_blocks=2", a.state, a.state_len, ALL);
		assert_int_equal(b.rc, RF_END);
		assert_int_equal(a.n + b.n, r.n);
		assert_memory_equal(a.ids, r.ids, a.n * sizeof(uint64_t));
		assert_memory_equal(b.ids, r.ids + a.n, b.n * sizeof(uint64_t));
		free(a.ids);
		free(b.ids);
	}
	/* Without the policy the first damaged block stops the stream. */
	run none = read_rank(&d, SKIP, "errors_ok=1", NULL, 0, ALL);
	assert_int_equal(none.rc, RF_E_CORRUPT);
	free(none.ids);
	/* A third damaged block is past the bound: the stream fails there,
	 * every batch before it delivered as in the skipping run. */
	corrupt_block(&d, 1, 2, &first[2], &records[2]);
	run f = read_rank(&d, SKIP, "skip_blocks=2 errors_ok=1", NULL, 0, ALL);
	assert_int_equal(f.rc, RF_E_CORRUPT);
	assert_non_null(strstr(f.msg, "block"));
	assert_true(f.batches < ref.batches);
	assert_ref_minus(&d, &ref, &f, first, records, 3);
	/* the next batch of the reference holds a record of a damaged block the
	 * bound did not cover */
	uint32_t nn;
	const uint64_t *next = batch_at(&ref, f.batches, &nn);
	bool hit = false;
	for (uint32_t j = 0; j < nn; j++)
		hit |= is_damaged(&d, next[j], first, records, 3);
	assert_true(hit);
	free(f.ids);
	free(r.ids);
	free(ref.ids);
	rf_test_dataset_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_equal_counts),
	    cmocka_unit_test(test_elastic_resume),
	    cmocka_unit_test(test_two_resizes),
	    cmocka_unit_test(test_refusals_name_the_difference),
	    cmocka_unit_test(test_skip_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
