/* test_api.c - the public contract for embedders (include/ringfeed.h):
 * rf_version, rf_stats_get's size argument (an older, smaller rf_stats gets a
 * consistent prefix and nothing past it is written), and a cfg that may be
 * freed right after rf_open. */
#include "ringfeed.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static char shard[512];

static int setup(void **state)
{
	(void)state;
	dir = rf_test_tmpdir("api");
	snprintf(shard, sizeof(shard), "%s/s.rfs", dir);
	rf_writer_options o = {.block_bytes = 4096, .level = 1};
	rf_error err = {0};
	rf_writer *w = rf_writer_open(shard, &o, &err);
	if (!w)
		return -1;
	char rec[64];
	for (int i = 0; i < 2000; i++) {
		int n = snprintf(rec, sizeof(rec), "record-%d", i);
		if (rf_writer_add(w, rec, (size_t)n, &err) < 0)
			return -1;
	}
	return rf_writer_close(w, NULL, &err);
}

static int teardown(void **state)
{
	(void)state;
	rf_test_rmtree(dir);
	free(dir);
	return 0;
}

static rf_loader *open_loader(void)
{
	rf_error err = {0};
	rf_config *cfg = rf_config_new();
	assert_non_null(cfg);
	assert_int_equal(rf_config_set(cfg, "batch", "16", &err), 0);
	assert_int_equal(rf_config_set(cfg, "budget", "16MiB", &err), 0);
	assert_int_equal(rf_config_add_url(cfg, shard, &err), 0);
	rf_loader *l = rf_open(cfg, &err);
	/* the loader copied what it needs: cfg may go now */
	rf_config_free(cfg);
	assert_non_null(l);
	return l;
}

static void test_version(void **state)
{
	(void)state;
	assert_non_null(rf_version());
	assert_string_equal(rf_version(), RF_VERSION_STRING);
}

static void test_stats_sizes(void **state)
{
	(void)state;
	rf_loader *l = open_loader();
	rf_batch *b;
	for (int i = 0; i < 10; i++) {
		assert_int_equal(rf_next(l, &b, -1), 0);
		rf_release(l, b);
	}
	/* An old caller's struct: the first RF_STATS_BYTES_MIN bytes, in a
	 * buffer with a sentinel right after it. */
	size_t old = RF_STATS_BYTES_MIN;
	unsigned char *buf = malloc(sizeof(rf_stats) + 64);
	assert_non_null(buf);
	memset(buf, 0xA5, sizeof(rf_stats) + 64);
	assert_int_equal(rf_stats_get(l, (rf_stats *)buf, old), 0);
	for (size_t i = old; i < sizeof(rf_stats) + 64; i++)
		assert_int_equal(buf[i], 0xA5);
	rf_stats *p = (rf_stats *)buf;
	assert_true(p->batches == 10);
	assert_true(p->records == 160);
	assert_true(p->threads >= 1);
	assert_true(p->budget_bytes == 16u << 20);
	/* mid-struct (an older version with the controller fields) */
	size_t mid = offsetof(rf_stats, trace_lines);
	memset(buf, 0xA5, sizeof(rf_stats) + 64);
	assert_int_equal(rf_stats_get(l, (rf_stats *)buf, mid), 0);
	assert_int_equal(buf[mid], 0xA5);
	assert_true(p->batches == 10 && p->depth_batches >= 1);
	/* a newer caller's larger struct: the tail is zeroed */
	memset(buf, 0xA5, sizeof(rf_stats) + 64);
	assert_int_equal(rf_stats_get(l, (rf_stats *)buf, sizeof(rf_stats) + 64), 0);
	for (size_t i = sizeof(rf_stats); i < sizeof(rf_stats) + 64; i++)
		assert_int_equal(buf[i], 0);
	assert_true(p->batches == 10);
	/* stats and JSON from one snapshot: the same figures to the digit */
	static char json[1 << 16];
	assert_true(rf_stats_get_json(l, p, sizeof(rf_stats), json, sizeof(json)) > 0);
	char want[96];
	snprintf(want, sizeof(want), "\"consumer_rate_bps\":%.3f,\"producer_rate_bps\":%.3f,",
	         p->consumer_rate_bps, p->producer_rate_bps);
	assert_non_null(strstr(json, want));
	snprintf(want, sizeof(want), "\"elapsed_s\":%.6f,", p->elapsed_s);
	assert_non_null(strstr(json, want));
	assert_int_equal(rf_stats_get_json(l, p, old - 1, json, sizeof(json)), -EINVAL);
	/* too small, NULL, not a loader */
	assert_int_equal(rf_stats_get(l, p, old - 1), -EINVAL);
	assert_int_equal(rf_stats_get(l, NULL, sizeof(rf_stats)), -EINVAL);
	assert_int_equal(rf_stats_get(NULL, p, sizeof(rf_stats)), -EINVAL);
	free(buf);
	rf_close(l);
}

static void test_close_with_held_batches(void **state)
{
	(void)state;
	rf_loader *l = open_loader();
	rf_batch *b[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(rf_next(l, &b[i], -1), 0);
	rf_release(l, b[1]);
	/* rf_close frees the two batches still held (ASan checks no leak) */
	rf_close(l);
	rf_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_version),
	    cmocka_unit_test(test_stats_sizes),
	    cmocka_unit_test(test_close_with_held_batches),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
