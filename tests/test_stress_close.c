/* test_stress_close.c - the consumer going away at bad moments, through the
 * public API only:
 *   - rf_close while every read is held by an injected stall (the injector's
 *     `inject` config key): close returns without waiting for the stall, and
 *     (ASan build) nothing leaks;
 *   - 200 open/close cycles, closing at different points (right after open,
 *     mid-stream with a batch held, with injected errors and corruption in
 *     flight): the process's open file descriptors are the same before and
 *     after, and resident memory stays bounded (plain build; the ASan build
 *     checks leaks instead).
 * Nothing here decides pass/fail by timing: a close that waited for the
 * stall would hang the test until CTest's timeout. */
#include "ringfeed.h"
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__)
#define RF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RF_TEST_ASAN 1
#endif
#endif
#ifndef RF_TEST_ASAN
#define RF_TEST_ASAN 0
#endif

typedef struct dataset {
	char *dir;
	char path[8][600];
	uint32_t nshards;
} dataset;

static void make_dataset(dataset *d, uint32_t nshards, uint32_t records)
{
	memset(d, 0, sizeof(*d));
	d->dir = rf_test_tmpdir("stress-close");
	d->nshards = nshards;
	char buf[256];
	for (uint32_t s = 0; s < nshards; s++) {
		snprintf(d->path[s], sizeof(d->path[s]), "%s/shard-%02u.rfs", d->dir, s);
		rf_writer_options o = {.block_bytes = 1024, .level = 1};
		rf_error err = {0};
		rf_writer *w = rf_writer_open(d->path[s], &o, &err);
		assert_non_null(w);
		for (uint32_t r = 0; r < records; r++) {
			int len = snprintf(buf, sizeof(buf), "%08u:%.*s", s * records + r,
			                   (int)(r * 37u % 150u),
			                   "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
			                   "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
			                   "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
			assert_int_equal(rf_writer_add(w, buf, (size_t)len, &err), 0);
		}
		assert_int_equal(rf_writer_close(w, NULL, &err), 0);
	}
}

static void free_dataset(dataset *d)
{
	rf_test_rmtree(d->dir);
	free(d->dir);
}

static rf_loader *open_loader(const dataset *d, const char *const *kv)
{
	rf_config *c = rf_config_new();
	rf_error err = {0};
	for (uint32_t s = 0; s < d->nshards; s++)
		assert_int_equal(rf_config_add_url(c, d->path[s], &err), 0);
	for (; *kv; kv++) {
		char key[64];
		const char *eq = strchr(*kv, '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - *kv), *kv);
		if (rf_config_set(c, key, eq + 1, &err) != 0)
			fail_msg("config %s: %s", *kv, err.msg);
	}
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open: %s", err.msg);
	return l;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Records arrive numbered and in order (no shuffle): none lost or repeated. */
static void check_batch(const rf_batch *b, uint64_t *expect)
{
	for (uint32_t i = 0; i < b->records; i++) {
		const uint8_t *p = b->payload + b->offsets[i];
		assert_true(b->offsets[i + 1] - b->offsets[i] >= 9);
		char num[9];
		memcpy(num, p, 8);
		num[8] = '\0';
		assert_int_equal(strtoull(num, NULL, 10), *expect);
		(*expect)++;
	}
}

/* Reads go through an injector whose stall windows are [2 s, 20 s) of every
 * 20 s period (stall=18s/20s), each read also waiting 100 ms so the run
 * cannot reach the end within a window. The consumer takes batches until
 * none comes inside a stall window, then closes with a batch held. The close
 * must return inside that same window: it did not wait for the stall. (A
 * slow machine that misses the first window only makes the test longer.) */
#define STALL_S  18.0
#define PERIOD_S 20.0

static void test_close_during_stall(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 4, 3000);
	const char *kv[] = {
	    "shuffle=0", "depth=1",           "batch=8",
	    "threads=2", "request_size=4096", "inject=seed=1,latency=100ms,stall=18s/20s",
	    NULL};
	double t0 = now_s(); /* a little before the injector's clock starts */
	rf_loader *l = open_loader(&d, kv);
	uint64_t expect = 0, batches = 0;
	rf_batch *held = NULL;
	int rc = 0;
	double t1 = t0;
	for (;;) {
		assert_true(now_s() - t0 < 3 * PERIOD_S); /* bounded: two windows at most */
		rf_batch *b = NULL;
		rc = rf_next(l, &b, 300);
		t1 = now_s();
		double phase = fmod(t1 - t0, PERIOD_S);
		if (rc == -ETIMEDOUT && batches > 0 && phase > PERIOD_S - STALL_S + 0.5 &&
		    phase < PERIOD_S - 1.0)
			break; /* nothing comes, inside a stall window */
		if (rc == -ETIMEDOUT)
			continue;
		assert_int_equal(rc, 0);
		check_batch(b, &expect);
		batches++;
		if (held)
			rf_release(l, held);
		held = b;
	}
	assert_true(expect < 12000); /* the stall stopped the stream */
	rf_close(l);
	double t2 = now_s();
	printf("info: %llu batches (%llu records) before a stall at %.2f s; rf_close took %.3f s "
	       "with reads stalled and a batch held\n",
	       (unsigned long long)batches, (unsigned long long)expect, t1 - t0, t2 - t1);
	/* the close returned inside the stall window it started in */
	assert_int_equal((long)((t2 - t0) / PERIOD_S), (long)((t1 - t0) / PERIOD_S));
	free_dataset(&d);
}

static int fd_count(void)
{
	DIR *dir = opendir("/proc/self/fd");
	assert_non_null(dir);
	int n = 0;
	for (struct dirent *de; (de = readdir(dir));)
		n += de->d_name[0] != '.';
	closedir(dir);
	return n - 1; /* the directory's own descriptor */
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* One cycle: open, maybe read (some batches kept over the close), close. */
static void cycle(const dataset *d, int i)
{
	char seed[64];
	snprintf(seed, sizeof(seed), "inject=seed=%d,latency=1ms,error=0.1,corrupt=0.1", i);
	const char *plain[] = {"threads=2", "batch=16", "depth=4", "shuffle=0", NULL};
	const char *faulty[] = {"threads=2", "batch=16", "depth=4", "shuffle=0", seed, NULL};
	rf_loader *l = open_loader(d, i % 4 == 3 ? faulty : plain);
	int take = (int[]){0, 1, 5, 2}[i % 4];
	uint64_t expect = 0;
	rf_batch *keep = NULL;
	for (int k = 0; k < take; k++) {
		rf_batch *b = NULL;
		assert_int_equal(rf_next(l, &b, -1), 0);
		check_batch(b, &expect);
		if (k == 0 && i % 2 == 0)
			keep = b; /* held over the close */
		else
			rf_release(l, b);
	}
	(void)keep;
	rf_close(l);
}

static void test_open_close_cycles(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 2, 400);
	cycle(&d, 0); /* first-use allocations (libc, curl) before counting */
	int fds0 = fd_count();
	long rss20 = 0;
	for (int i = 1; i <= 200; i++) {
		cycle(&d, i);
		if (i == 20)
			rss20 = rss_kib();
	}
	int fds1 = fd_count();
	long rss200 = rss_kib();
	printf("info: 200 cycles: fds %d -> %d, RSS %ld KiB after 20, %ld KiB after 200%s\n", fds0,
	       fds1, rss20, rss200, RF_TEST_ASAN ? " (ASan: leaks checked at exit)" : "");
	assert_int_equal(fds1, fds0);
	if (!RF_TEST_ASAN)
		assert_true(rss200 - rss20 < 32 * 1024); /* 180 more cycles: no growth */
	free_dataset(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_close_during_stall),
	    cmocka_unit_test(test_open_close_cycles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
