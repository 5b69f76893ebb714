/* test_engine_allocs.c - the steady state allocates nothing per read or per
 * batch: this test binary replaces malloc, calloc and realloc (forwarding
 * to glibc's own) to count every allocation the process makes, reads a
 * dataset for several epochs, and checks that the allocations made after
 * the first epoch stay a small constant while the reads and batches number
 * in the hundreds. A count, never a time. Skipped under AddressSanitizer,
 * which owns malloc itself. */
#include "ringfeed.h"
#include "testutil.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define RF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RF_TEST_ASAN 1
#endif
#endif

#ifndef RF_TEST_ASAN
static atomic_ulong allocs;

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}
#endif

#define EPOCHS 5

#ifndef RF_TEST_ASAN
static char *make_shards(uint32_t nshards, uint32_t records, char paths[][600])
{
	char *dir = rf_test_tmpdir("allocs");
	uint8_t buf[400];
	for (uint32_t s = 0; s < nshards; s++) {
		snprintf(paths[s], 600, "%s/shard-%02u.rfs", dir, s);
		rf_writer_options o = {.block_bytes = 8192, .level = 1};
		rf_error err = {0};
		rf_writer *w = rf_writer_open(paths[s], &o, &err);
		assert_non_null(w);
		for (uint32_t r = 0; r < records; r++) {
			size_t len = (size_t)snprintf((char *)buf, 64, "s%u-r%u:", s, r);
			size_t extra = (r * 37u + s * 11u) % 300u;
			memset(buf + len, 'a' + (int)(r % 26), extra);
			assert_int_equal(rf_writer_add(w, buf, len + extra, &err), 0);
		}
		assert_int_equal(rf_writer_close(w, NULL, &err), 0);
	}
	return dir;
}

typedef struct epoch_count {
	uint64_t batches, allocs;
} epoch_count;

/* Reads every epoch; per epoch, its batches and the allocations made from
 * its first batch to the next epoch's first batch. */
static void read_counting(const char *const *kv, char paths[][600], uint32_t nshards,
                          epoch_count *ec, rf_stats *st)
{
	rf_config *c = rf_config_new();
	rf_error err = {0};
	for (uint32_t s = 0; s < nshards; s++)
		assert_int_equal(rf_config_add_url(c, paths[s], &err), 0);
	for (; *kv; kv += 2)
		assert_int_equal(rf_config_set(c, kv[0], kv[1], &err), 0);
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open: %s", err.msg);
	uint64_t epoch = UINT64_MAX, mark = 0;
	for (;;) {
		rf_batch *b = NULL;
		int rc = rf_next(l, &b, 10000);
		if (rc == RF_END)
			break;
		if (rc != 0)
			fail_msg("rf_next: %d %s", rc, rf_last_error(l));
		if (b->epoch != epoch) {
			uint64_t now = atomic_load(&allocs);
			if (epoch != UINT64_MAX)
				ec[epoch].allocs = now - mark;
			mark = now;
			epoch = b->epoch;
		}
		ec[b->epoch].batches++;
		rf_release(l, b);
	}
	ec[epoch].allocs = atomic_load(&allocs) - mark;
	assert_int_equal(rf_stats_get(l, st, sizeof(*st)), 0);
	rf_close(l);
}
#endif

/* Epochs 2..N allocate a bounded number of times in all (pools fill up in
 * the first epoch), not once or more per read or per batch. */
static void check_steady(const char *const *kv)
{
#ifdef RF_TEST_ASAN
	(void)kv;
	rf_test_skip("AddressSanitizer owns malloc: the allocation count needs the plain build\n");
#else
	char paths[4][600];
	char *dir = make_shards(4, 3000, paths);
	epoch_count ec[EPOCHS] = {{0}};
	rf_stats st;
	read_counting(kv, paths, 4, ec, &st);
	uint64_t later = 0, batches = 0;
	for (int i = 1; i < EPOCHS; i++) {
		print_message("epoch %d: %llu batches, %llu allocations\n", i,
		              (unsigned long long)ec[i].batches, (unsigned long long)ec[i].allocs);
		later += ec[i].allocs;
		batches += ec[i].batches;
	}
	assert_true(batches >= 4 * 300); /* hundreds of batches and reads per epoch */
	assert_true(st.blocks_decoded >= 4 * 100);
	/* bounded: far fewer than one per batch (the old code: two per batch and
	 * one per read) */
	if (later > 32)
		fail_msg("%llu allocations in epochs 2..%d over %llu batches (%llu blocks in all)",
		         (unsigned long long)later, EPOCHS, (unsigned long long)batches,
		         (unsigned long long)st.blocks_decoded);
	rf_test_rmtree(dir);
	free(dir);
#endif
}

static void test_steady_state_fixed_batches(void **state)
{
	(void)state;
	const char *kv[] = {"batch", "32", "epochs", "5", "threads", "2", "depth", "8", NULL};
	check_steady(kv);
}

static void test_steady_state_shuffled_byte_batches(void **state)
{
	(void)state;
	const char *kv[] = {"batch_bytes", "6000", "epochs",         "5",   "threads", "2",
	                    "shuffle",     "1",    "shuffle_window", "512", NULL};
	check_steady(kv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_steady_state_fixed_batches),
	    cmocka_unit_test(test_steady_state_shuffled_byte_batches),
	};
	return rf_test_run_group(tests, NULL, NULL);
}
