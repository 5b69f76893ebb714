/* test_engine.c - the loader end to end on small generated datasets:
 * order identical for every depth / thread count / budget, --no-shuffle
 * equals the packed input, resume after every batch (across epochs), ranks
 * disjoint and complete, a corrupt block mid-stream, open errors, close
 * mid-stream, padded and byte-limited batches, the open-time minimum budget
 * is enough to read to the end, a loader waits for host budget room held by
 * another loader. */
#include "engine.h"
#include "hostbudget.h"
#include "ringfeed.h"
#include "testutil.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef rf_test_dataset dataset;

/* Record r of shard s: a header naming it, then a length that varies
 * (including empty payload tails) so batches and blocks are uneven. */
static size_t make_record(uint32_t s, uint32_t r, uint8_t *buf, size_t cap, void *arg)
{
	(void)arg;
	size_t len = (size_t)snprintf((char *)buf, 64, "s%u-r%u:", s, r);
	size_t extra = (r * 37u + s * 11u) % 300u;
	for (size_t i = 0; i < extra && len + i < cap; i++)
		buf[len + i] = (uint8_t)('a' + (r + i) % 26);
	return len + extra;
}

static void make_dataset(dataset *d, uint32_t nshards, uint32_t records, uint64_t block_bytes)
{
	rf_test_dataset_make(d, "engine", nshards, records, 512, block_bytes, make_record, NULL);
}

typedef struct run {
	uint64_t *ids;
	size_t n, cap;
	uint64_t batches;
	int rc; /* RF_END or the error */
	char msg[RF_ERROR_MSG_BYTES];
} run;

static void run_add(run *r, uint64_t id)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->ids = realloc(r->ids, r->cap * sizeof(*r->ids));
	}
	r->ids[r->n++] = id;
}

static void batch_ids(run *r, const rf_batch *b)
{
	for (uint32_t i = 0; i < b->records; i++) {
		if (b->row_bytes)
			run_add(r, rf_test_rec_id(b->payload + (uint64_t)i * b->row_bytes,
			                          b->lengths[i]));
		else
			run_add(r, rf_test_rec_id(b->payload + b->offsets[i],
			                          (uint32_t)(b->offsets[i + 1] - b->offsets[i])));
	}
}

#define ALL UINT64_MAX

/* Reads up to max_batches (ALL: to the end); saves the state into state/state_len. */
static void read_loader(rf_loader *l, run *r, uint64_t max_batches, uint8_t *state,
                        size_t *state_len)
{
	r->rc = 0;
	for (;;) {
		if (r->batches == max_batches)
			break;
		rf_batch *b = NULL;
		int rc = rf_next(l, &b, 3000);
		if (rc != 0) {
			r->rc = rc;
			snprintf(r->msg, sizeof(r->msg), "%s", rf_last_error(l));
			break;
		}
		batch_ids(r, b);
		r->batches++;
		rf_release(l, b);
	}
	if (state)
		assert_int_equal(rf_state_save(l, state, state_len), 0);
}

static run read_all(const dataset *d, const char *const *kv)
{
	rf_config *c = rf_test_config(d, kv);
	rf_error err = {0};
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open: %s", err.msg);
	run r = {0};
	read_loader(l, &r, ALL, NULL, NULL);
	rf_close(l);
	return r;
}

static void assert_same_run(const run *a, const run *b)
{
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->ids, b->ids, a->n * sizeof(uint64_t));
}

static void test_no_shuffle_is_packed_order(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 200, 2048);
	const char *kv[] = {"shuffle=0", "batch=7", "budget=8MiB", NULL};
	run r = read_all(&d, kv);
	assert_int_equal(r.rc, RF_END);
	assert_int_equal(r.n, d.total);
	assert_memory_equal(r.ids, d.ids, d.total * sizeof(uint64_t));
	assert_int_equal(r.batches, (d.total + 6) / 7);
	free(r.ids);
	rf_test_dataset_free(&d);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Same records, same order, for every depth, thread count and budget. */
static void test_order_independent_of_depth_threads_budget(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 4, 150, 1024);
	const char *base[] = {"seed=7",  "shuffle_window=50", "batch=5",     "epochs=2",
	                      "depth=1", "threads=1",         "budget=4MiB", NULL};
	run ref = read_all(&d, base);
	assert_int_equal(ref.rc, RF_END);
	assert_int_equal(ref.n, 2 * d.total);
	/* Every record once per epoch, and the shuffle did shuffle. */
	uint64_t *sorted = malloc(d.total * sizeof(uint64_t));
	uint64_t *expect = malloc(d.total * sizeof(uint64_t));
	memcpy(sorted, ref.ids, d.total * sizeof(uint64_t));
	memcpy(expect, d.ids, d.total * sizeof(uint64_t));
	qsort(sorted, d.total, sizeof(uint64_t), cmp_u64);
	qsort(expect, d.total, sizeof(uint64_t), cmp_u64);
	assert_memory_equal(sorted, expect, d.total * sizeof(uint64_t));
	assert_memory_not_equal(ref.ids, d.ids, d.total * sizeof(uint64_t));
	/* Every depth 1..64 (thread count cycling 1..4, two budgets)... */
	for (int depth = 1; depth <= 64; depth++) {
		char dk[16], tk[16];
		snprintf(dk, sizeof(dk), "depth=%d", depth);
		snprintf(tk, sizeof(tk), "threads=%d", 1 + depth % 4);
		const char *kv[] = {"seed=7",
		                    "shuffle_window=50",
		                    "batch=5",
		                    "epochs=2",
		                    dk,
		                    tk,
		                    depth % 2 ? "budget=3MiB" : "budget=32MiB",
		                    NULL};
		run r = read_all(&d, kv);
		assert_int_equal(r.rc, RF_END);
		assert_same_run(&ref, &r);
		free(r.ids);
	}
	/* ... and the full grid on a few. */
	const char *depths[] = {"depth=1", "depth=2", "depth=3", "depth=8", "depth=64"};
	const char *threads[] = {"threads=1", "threads=2", "threads=4"};
	const char *budgets[] = {"budget=3MiB", "budget=64MiB"};
	for (size_t i = 0; i < 5; i++)
		for (size_t j = 0; j < 3; j++)
			for (size_t k = 0; k < 2; k++) {
				const char *kv[] = {
				    "seed=7",  "shuffle_window=50", "batch=5",  "epochs=2",
				    depths[i], threads[j],          budgets[k], NULL};
				run r = read_all(&d, kv);
				assert_int_equal(r.rc, RF_END);
				assert_same_run(&ref, &r);
				free(r.ids);
			}
	free(sorted);
	free(expect);
	free(ref.ids);
	rf_test_dataset_free(&d);
}

/* Saving after batch k and resuming gives exactly the rest, for every k,
 * across the epoch boundary. */
static void test_resume_every_batch(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 40, 512);
	const char *kv[] = {"seed=3",  "shuffle_window=16", "batch=9",     "epochs=2",
	                    "depth=4", "threads=2",         "budget=4MiB", NULL};
	run ref = read_all(&d, kv);
	assert_int_equal(ref.rc, RF_END);
	for (uint64_t k = 0; k <= ref.batches; k++) {
		rf_config *c = rf_test_config(&d, kv);
		rf_error err = {0};
		rf_loader *l = rf_open(c, &err);
		assert_non_null(l);
		run first = {0};
		uint8_t st[128];
		size_t st_len = sizeof(st);
		read_loader(l, &first, k, st, &st_len);
		rf_close(l);
		assert_int_equal(rf_config_set_resume(c, st, st_len, &err), 0);
		l = rf_open(c, &err);
		rf_config_free(c);
		if (!l)
			fail_msg("resume open at k=%llu: %s", (unsigned long long)k, err.msg);
		run rest = {0};
		read_loader(l, &rest, ALL, NULL, NULL);
		rf_close(l);
		if (rest.rc != RF_END)
			fail_msg("k=%llu of %llu: %d %s", (unsigned long long)k,
			         (unsigned long long)ref.batches, rest.rc, rest.msg);
		assert_int_equal(first.n + rest.n, ref.n);
		assert_memory_equal(first.ids, ref.ids, first.n * sizeof(uint64_t));
		assert_memory_equal(rest.ids, ref.ids + first.n, rest.n * sizeof(uint64_t));
		free(first.ids);
		free(rest.ids);
	}
	free(ref.ids);
	rf_test_dataset_free(&d);
}

static void test_ranks_disjoint_complete(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 5, 60, 700);
	uint64_t *all = NULL;
	size_t n = 0;
	for (int shuffle = 0; shuffle < 2; shuffle++) {
		n = 0;
		free(all);
		all = malloc(d.total * sizeof(uint64_t));
		for (int rank = 0; rank < 3; rank++) {
			char rk[16], sh[16];
			snprintf(rk, sizeof(rk), "rank=%d", rank);
			snprintf(sh, sizeof(sh), "shuffle=%d", shuffle);
			const char *kv[] = {"world=3", rk, sh, "seed=9", "batch=4", NULL};
			run r = read_all(&d, kv);
			assert_int_equal(r.rc, RF_END);
			assert_true(n + r.n <= d.total);
			memcpy(all + n, r.ids, r.n * sizeof(uint64_t));
			n += r.n;
			free(r.ids);
		}
		assert_int_equal(n, d.total);
		uint64_t *expect = malloc(d.total * sizeof(uint64_t));
		memcpy(expect, d.ids, d.total * sizeof(uint64_t));
		qsort(all, n, sizeof(uint64_t), cmp_u64);
		qsort(expect, n, sizeof(uint64_t), cmp_u64);
		assert_memory_equal(all, expect, n * sizeof(uint64_t));
		free(expect);
	}
	free(all);
	rf_test_dataset_free(&d);
}

/* Flips a byte inside block `b` of a shard (its frame, found via the index). */
static void corrupt_block(const char *path, uint32_t b)
{
	rf_shard_index *ix = NULL;
	rf_error err = {0};
	assert_int_equal(rf_index_read_file(path, &ix, &err), 0);
	assert_true(b < ix->blocks);
	uint64_t at = ix->block[b].offset + ix->block[b].compressed_bytes / 2;
	rf_index_free(ix);
	unsigned char *buf = NULL;
	long n = rf_test_read_file(path, &buf);
	assert_true(n > 0 && (uint64_t)n > at);
	buf[at] ^= 0x5a;
	assert_int_equal(rf_test_write_file(path, buf, (size_t)n), 0);
	free(buf);
}

static void test_corrupt_block_mid_stream(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 200, 2048);
	rf_shard_index *ix = NULL;
	rf_error err = {0};
	assert_int_equal(rf_index_read_file(d.path[1], &ix, &err), 0);
	uint64_t bad_first = 200 + ix->block[2].first_record; /* packed position */
	rf_index_free(ix);
	corrupt_block(d.path[1], 2);
	const char *threads[] = {"threads=1", "threads=3"};
	const char *depths[] = {"depth=1", "depth=16"};
	for (int t = 0; t < 2; t++)
		for (int k = 0; k < 2; k++) {
			const char *kv[] = {"shuffle=0", "batch=6", threads[t], depths[k], NULL};
			run r = read_all(&d, kv);
			assert_int_equal(r.rc, RF_E_CORRUPT);
			/* Every batch before the one holding the first bad record. */
			assert_int_equal(r.n, bad_first / 6 * 6);
			assert_memory_equal(r.ids, d.ids, r.n * sizeof(uint64_t));
			assert_non_null(strstr(r.msg, "shard-01.rfs"));
			assert_non_null(strstr(r.msg, "block 2"));
			free(r.ids);
		}
	/* Shuffled: the error still comes, after delivering only good records. */
	const char *kv[] = {"seed=1", "shuffle_window=100", "batch=6", NULL};
	run r = read_all(&d, kv);
	assert_int_equal(r.rc, RF_E_CORRUPT);
	assert_non_null(strstr(r.msg, "block 2"));
	assert_true(r.n < d.total);
	free(r.ids);
	rf_test_dataset_free(&d);
}

static void expect_open_error(const dataset *d, const char *const *kv, const char *extra_url,
                              int code, const char *needle)
{
	rf_config *c = rf_test_config(d, kv);
	rf_error err = {0};
	if (extra_url)
		assert_int_equal(rf_config_add_url(c, extra_url, &err), 0);
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (l)
		rf_close(l);
	assert_null(l);
	assert_int_equal(err.code, code);
	if (!strstr(err.msg, needle))
		fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_open_errors(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 2, 100, 4096);
	char missing[700];
	snprintf(missing, sizeof(missing), "%s/missing.rfs", d.dir);
	expect_open_error(&d, NULL, missing, -ENOENT, "missing.rfs");
	const char *rank[] = {"rank=3", "world=3", NULL};
	expect_open_error(&d, rank, NULL, -EINVAL, "rank 3");
	const char *budget[] = {"budget=1MiB", "batch=100000", NULL};
	expect_open_error(&d, budget, NULL, RF_E_BUDGET, "needs at least");
	const char *starved[] = {"world=1000", "rank=1", "epochs=0", NULL};
	expect_open_error(&d, starved, NULL, -EINVAL, "no records");
	dataset none = {.dir = d.dir, .nshards = 0};
	expect_open_error(&none, NULL, NULL, -EINVAL, "no shards");
	char empty_dir[700];
	snprintf(empty_dir, sizeof(empty_dir), "%s/empty", d.dir);
	assert_int_equal(rf_test_sh(NULL, "mkdir -p '%s'", empty_dir), 0);
	expect_open_error(&none, NULL, empty_dir, -ENOENT, "no .rfs");
	expect_open_error(&none, NULL, "gopher://x/y.rfs", -EPROTONOSUPPORT, "gopher");
	/* A directory expands to its shards in name order. */
	const char *ns[] = {"shuffle=0", NULL};
	rf_config *c = rf_test_config(&none, ns);
	rf_error err = {0};
	assert_int_equal(rf_config_add_url(c, d.dir, &err), 0);
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	assert_non_null(l);
	run r = {0};
	read_loader(l, &r, ALL, NULL, NULL);
	rf_close(l);
	assert_int_equal(r.n, d.total);
	assert_memory_equal(r.ids, d.ids, d.total * sizeof(uint64_t));
	free(r.ids);
	rf_test_dataset_free(&d);
}

/* Closing after a batch or none, with reads and decodes in flight. */
static void test_close_mid_stream(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 4, 300, 1024);
	for (int i = 0; i < 12; i++) {
		char depth[16];
		snprintf(depth, sizeof(depth), "depth=%d", 1 + i * 5);
		const char *kv[] = {depth, "threads=2", "batch=3", "epochs=0", NULL};
		rf_config *c = rf_test_config(&d, kv);
		rf_error err = {0};
		rf_loader *l = rf_open(c, &err);
		rf_config_free(c);
		assert_non_null(l);
		run r = {0};
		read_loader(l, &r, (uint64_t)(i % 3), NULL, NULL);
		if (i % 2) { /* keep one batch held over the close */
			rf_batch *b = NULL;
			assert_int_equal(rf_next(l, &b, 3000), 0);
		}
		rf_close(l);
		free(r.ids);
	}
	rf_test_dataset_free(&d);
}

static void test_padded_and_byte_batches(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 2, 80, 1024);
	/* Padded rows without truncate: records are up to ~315 bytes. */
	const char *pad_err[] = {"shuffle=0", "pad_to=100", NULL};
	run r = read_all(&d, pad_err);
	assert_int_equal(r.rc, -EINVAL);
	assert_non_null(strstr(r.msg, "pad_to"));
	free(r.ids);
	const char *pad_ok[] = {"shuffle=0", "pad_to=400", "batch=16", NULL};
	r = read_all(&d, pad_ok);
	assert_int_equal(r.rc, RF_END);
	assert_int_equal(r.n, d.total);
	assert_memory_equal(r.ids, d.ids, d.total * sizeof(uint64_t));
	free(r.ids);
	/* Byte-limited batches keep every record, in order. */
	const char *bytes[] = {"shuffle=0", "batch_bytes=1000", NULL};
	r = read_all(&d, bytes);
	assert_int_equal(r.rc, RF_END);
	assert_int_equal(r.n, d.total);
	assert_memory_equal(r.ids, d.ids, d.total * sizeof(uint64_t));
	assert_true(r.batches > d.total / 10);
	free(r.ids);
	rf_test_dataset_free(&d);
}

/* Called from workers and from the consumer at once: atomic counters. */
typedef struct counting_alloc {
	long live, calls;
	uint64_t bytes;
} counting_alloc;

static void *count_alloc(void *ctx, size_t bytes)
{
	counting_alloc *a = ctx;
	__atomic_add_fetch(&a->live, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&a->calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&a->bytes, bytes, __ATOMIC_RELAXED);
	return malloc(bytes);
}

static void count_free(void *ctx, void *ptr, size_t bytes)
{
	counting_alloc *a = ctx;
	__atomic_sub_fetch(&a->live, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&a->bytes, bytes, __ATOMIC_RELAXED);
	free(ptr);
}

/* Batch memory from the caller's allocator: same records, every byte given
 * back (also for batches still queued or held at close). */
static void test_custom_allocator(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 2, 120, 1024);
	const char *kv[] = {"seed=4", "batch=7", "depth=6", NULL};
	run ref = read_all(&d, kv);
	for (int held = 0; held < 2; held++) {
		counting_alloc a = {0};
		rf_allocator al = {.alloc = count_alloc, .free = count_free, .ctx = &a};
		rf_config *c = rf_test_config(&d, kv);
		assert_int_equal(rf_config_set_allocator(c, &al), 0);
		rf_error err = {0};
		rf_loader *l = rf_open(c, &err);
		rf_config_free(c);
		assert_non_null(l);
		run r = {0};
		read_loader(l, &r, held ? 3 : ALL, NULL, NULL);
		if (held) {
			rf_batch *b = NULL;
			assert_int_equal(rf_next(l, &b, 20000), 0); /* kept over the close */
		} else {
			assert_int_equal(r.rc, RF_END);
			assert_same_run(&ref, &r);
		}
		rf_close(l);
		assert_true(a.calls > 0);
		assert_int_equal(a.live, 0);
		assert_int_equal(a.bytes, 0);
		free(r.ids);
	}
	free(ref.ids);
	rf_test_dataset_free(&d);
}

/* Depth changed mid-stream (the controller's hook) changes nothing in the
 * records delivered. */
static void test_depth_change_mid_stream(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 150, 1024);
	const char *kv[] = {"seed=8", "batch=5", "depth=2", "epochs=2", NULL};
	run ref = read_all(&d, kv);
	rf_config *c = rf_test_config(&d, kv);
	rf_error err = {0};
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	assert_non_null(l);
	rf_engine *e = (rf_engine *)l;
	run r = {0};
	const uint32_t depths[] = {64, 1, 17, 3, 4096, 9};
	for (size_t i = 0; i < RF_ARRAY_LEN(depths); i++) {
		read_loader(l, &r, r.batches + 11, NULL, NULL);
		rf_engine_lock(e);
		rf_engine_depth_set(e, depths[i]);
		assert_int_equal(e->sched->depth, depths[i]);
		rf_engine_unlock(e);
	}
	read_loader(l, &r, ALL, NULL, NULL);
	rf_close(l);
	assert_int_equal(r.rc, RF_END);
	assert_same_run(&ref, &r);
	free(r.ids);
	free(ref.ids);
	rf_test_dataset_free(&d);
}

/* The budget rf_open asks for at least (on a budget below it). */
static unsigned long long open_minimum(const dataset *d, const char *const *kv)
{
	rf_config *c = rf_test_config(d, kv);
	rf_error err = {0};
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (l)
		rf_close(l);
	assert_null(l);
	const char *at = strstr(err.msg, "needs at least ");
	if (!at)
		fail_msg("no minimum in '%s'", err.msg);
	return strtoull(at + strlen("needs at least "), NULL, 10);
}

/* The minimum budget rf_open asks for is enough to read to the end: a batch
 * spanning several shuffle windows, one straddling window boundaries, and
 * no window at all, with one and several threads. */
static void test_open_minimum_suffices(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 400, 1024);
	const char *shapes[][3] = {{"shuffle_window=8", "batch=40", "epochs=2"},
	                           {"shuffle_window=8", "batch=20", "epochs=1"},
	                           {"shuffle=0", "batch=13", "epochs=1"}};
	const char *threads[] = {"threads=1", "threads=3"};
	for (size_t i = 0; i < RF_ARRAY_LEN(shapes); i++) {
		const char *ref_kv[] = {"seed=5", shapes[i][0], shapes[i][1], shapes[i][2], NULL};
		run ref = read_all(&d, ref_kv);
		assert_int_equal(ref.rc, RF_END);
		for (size_t t = 0; t < RF_ARRAY_LEN(threads); t++) {
			const char *small[] = {"seed=5",      shapes[i][0], shapes[i][1],
			                       shapes[i][2],  threads[t],   "depth=64",
			                       "budget=1MiB", NULL};
			unsigned long long need = open_minimum(&d, small);
			assert_true(need > 1048576);
			char budget[48];
			snprintf(budget, sizeof(budget), "budget=%llu", need);
			small[6] = budget;
			run r = read_all(&d, small);
			if (r.rc != RF_END)
				fail_msg("%s %s %s at %s: %s", shapes[i][0], shapes[i][1],
				         threads[t], budget, r.msg);
			assert_same_run(&ref, &r);
			free(r.ids);
		}
		free(ref.ids);
	}
	rf_test_dataset_free(&d);
}

/* Another loader of the host: takes every byte of the host total that
 * comes free for hold_ms, then gives them all back. */
typedef struct hog {
	rf_hostbudget *hb;
	int hold_ms;
	uint64_t held;
} hog;

static void *hog_main(void *arg)
{
	hog *h = arg;
	uint64_t end = rf_now_ns() + (uint64_t)h->hold_ms * 1000000ull;
	while (rf_now_ns() < end) {
		for (uint64_t chunk = 1u << 20; chunk > 0; chunk /= 4)
			while (rf_hostbudget_reserve(h->hb, chunk) == 0)
				h->held += chunk;
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
	}
	rf_hostbudget_release(h->hb, h->held);
	return NULL;
}

/* A loader whose needed work the host total refuses (other loaders hold it
 * all for a while; its own floor lowered to nothing so that it must ask)
 * waits for them instead of failing with "budget too small", and delivers
 * the same records. */
static void test_host_budget_wait(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 3, 400, 1024);
	char name[64], total[48] = "host_budget=8MiB";
	snprintf(name, sizeof(name), "host_budget_name=test-engine-%d", (int)getpid());
	const char *ref_kv[] = {"seed=3", "shuffle_window=8", "batch=40", "depth=1", NULL};
	run ref = read_all(&d, ref_kv);
	const char *kv[] = {"seed=3",      "shuffle_window=8", "batch=40", "depth=1",
	                    "budget=4MiB", "threads=2",        total,      name,
	                    NULL};
	rf_config *c = rf_test_config(&d, kv);
	rf_error err = {0};
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open: %s", err.msg);
	rf_engine *e = (rf_engine *)l;
	pthread_mutex_lock(&e->budget.mu);
	e->budget.host_floor_bytes = 0;
	pthread_mutex_unlock(&e->budget.mu);
	hog h = {.hold_ms = 400};
	assert_int_equal(
	    rf_hostbudget_open(name + strlen("host_budget_name="), 8u << 20, &h.hb, &err), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, hog_main, &h), 0);
	run r = {0};
	read_loader(l, &r, ALL, NULL, NULL);
	pthread_join(t, NULL);
	rf_budget_snapshot sn;
	rf_budget_snapshot_get(&e->budget, &sn);
	rf_close(l);
	rf_hostbudget_close(h.hb);
	if (r.rc != RF_END)
		fail_msg("%s", r.msg);
	assert_same_run(&ref, &r);
	assert_true(h.held > 0);
	assert_true(sn.host_refusals > 0);
	free(r.ids);
	free(ref.ids);
	rf_test_dataset_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_shuffle_is_packed_order),
	    cmocka_unit_test(test_order_independent_of_depth_threads_budget),
	    cmocka_unit_test(test_resume_every_batch),
	    cmocka_unit_test(test_ranks_disjoint_complete),
	    cmocka_unit_test(test_corrupt_block_mid_stream),
	    cmocka_unit_test(test_open_errors),
	    cmocka_unit_test(test_close_mid_stream),
	    cmocka_unit_test(test_padded_and_byte_batches),
	    cmocka_unit_test(test_custom_allocator),
	    cmocka_unit_test(test_depth_change_mid_stream),
	    cmocka_unit_test(test_open_minimum_suffices),
	    cmocka_unit_test(test_host_budget_wait),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
