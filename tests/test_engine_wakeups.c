/* test_engine_wakeups.c - wake-ups go only to threads that wait, and are
 * counted; the engine's lock reports its hold times. Counts, never times:
 * a consumer that polls (timeout 0) never waits, so it is never woken; a
 * worker or consumer is woken at most once per wait it entered; the lock
 * figures are consistent with each other and in the JSON. */
#include "ringfeed.h"
#include "testutil.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shards {
	char *dir;
	char path[4][600];
} shards;

static void make_shards(shards *d)
{
	d->dir = rf_test_tmpdir("wakeups");
	uint8_t buf[400];
	for (uint32_t s = 0; s < 4; s++) {
		snprintf(d->path[s], sizeof(d->path[s]), "%s/shard-%02u.rfs", d->dir, s);
		rf_writer_options o = {.block_bytes = 8192, .level = 1};
		rf_error err = {0};
		rf_writer *w = rf_writer_open(d->path[s], &o, &err);
		assert_non_null(w);
		for (uint32_t r = 0; r < 2000; r++) {
			size_t len = (size_t)snprintf((char *)buf, 64, "s%u-r%u:", s, r);
			size_t extra = (r * 37u + s * 11u) % 300u;
			memset(buf + len, 'a' + (int)(r % 26), extra);
			assert_int_equal(rf_writer_add(w, buf, len + extra, &err), 0);
		}
		assert_int_equal(rf_writer_close(w, NULL, &err), 0);
	}
}

static rf_loader *open_loader(const shards *d, const char *const *kv)
{
	rf_config *c = rf_config_new();
	rf_error err = {0};
	for (uint32_t s = 0; s < 4; s++)
		assert_int_equal(rf_config_add_url(c, d->path[s], &err), 0);
	for (; *kv; kv += 2)
		assert_int_equal(rf_config_set(c, kv[0], kv[1], &err), 0);
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open: %s", err.msg);
	return l;
}

/* Reads to the end, waiting inside rf_next (timeout_ms > 0) or polling
 * (timeout 0: rf_next never waits, it answers -ETIMEDOUT). */
static uint64_t read_to_end(rf_loader *l, int timeout_ms)
{
	uint64_t batches = 0;
	for (;;) {
		rf_batch *b = NULL;
		int rc = rf_next(l, &b, timeout_ms);
		if (rc == RF_END)
			return batches;
		if (rc == -ETIMEDOUT && timeout_ms == 0) {
			sched_yield();
			continue;
		}
		if (rc != 0)
			fail_msg("rf_next: %d %s", rc, rf_last_error(l));
		batches++;
		rf_release(l, b);
	}
}

static void print_wake(const rf_stats *s)
{
	print_message("batches %llu blocks %llu | workers: %llu wake-ups, %llu waits | consumer: "
	              "%llu, %llu | loop %llu | lock: %llu acquisitions, max %.1f us (%s), total "
	              "%.6f s\n",
	              (unsigned long long)s->batches, (unsigned long long)s->blocks_decoded,
	              (unsigned long long)s->wakeups_workers, (unsigned long long)s->waits_workers,
	              (unsigned long long)s->wakeups_consumer,
	              (unsigned long long)s->waits_consumer, (unsigned long long)s->wakeups_loop,
	              (unsigned long long)s->lock_acquisitions, s->lock_hold_max_us,
	              s->lock_hold_max_at, s->lock_hold_total_s);
}

/* A consumer that never waits is never woken (the old code broadcast to
 * ready_cv for every filled batch, waiting or not). */
static void test_polling_consumer_never_woken(void **state)
{
	(void)state;
	shards d;
	make_shards(&d);
	const char *kv[] = {"batch", "16", "epochs", "2", "threads", "2", NULL};
	rf_loader *l = open_loader(&d, kv);
	uint64_t batches = read_to_end(l, 0);
	rf_stats s;
	assert_int_equal(rf_stats_get(l, &s, sizeof(s)), 0);
	print_wake(&s);
	assert_true(batches > 500);
	assert_int_equal(s.waits_consumer, 0);
	assert_int_equal(s.wakeups_consumer, 0);
	assert_true(s.wakeups_workers <= s.waits_workers);
	rf_close(l);
	rf_test_rmtree(d.dir);
	free(d.dir);
}

/* Every wake-up goes to a thread that waits, one per wait at most (the old
 * code broadcast to every worker on each read's completion and signalled
 * for every batch, whether anyone waited or not); the loop's eventfd
 * writes are coalesced (one while a wake-up is pending). */
static void test_wakeups_only_to_waiters(void **state)
{
	(void)state;
	shards d;
	make_shards(&d);
	const char *kv[] = {"batch", "16", "epochs", "2", "threads", "4", "depth", "8", NULL};
	rf_loader *l = open_loader(&d, kv);
	uint64_t batches = read_to_end(l, 10000);
	rf_stats s;
	assert_int_equal(rf_stats_get(l, &s, sizeof(s)), 0);
	print_wake(&s);
	assert_true(batches > 500);
	assert_true(s.wakeups_workers <= s.waits_workers);
	assert_true(s.wakeups_consumer <= s.waits_consumer);
	/* bounded by the work: at most one worker per job (decode, fill, kick) */
	assert_true(s.wakeups_workers + s.wakeups_consumer <= 3 * (s.batches + s.blocks_decoded));
	assert_true(s.wakeups_loop <= 2 * (s.batches + s.blocks_decoded));
	rf_close(l);
	rf_test_rmtree(d.dir);
	free(d.dir);
}

/* The lock's figures: acquisitions counted, the longest hold inside the
 * total and named, all of it in the JSON. */
static void test_lock_hold_figures(void **state)
{
	(void)state;
	shards d;
	make_shards(&d);
	const char *kv[] = {"batch", "32", "epochs", "1", "threads", "2", NULL};
	rf_loader *l = open_loader(&d, kv);
	uint64_t batches = read_to_end(l, 10000);
	rf_stats s;
	char json[65536];
	int n = rf_stats_get_json(l, &s, sizeof(s), json, sizeof(json));
	assert_true(n > 0);
	print_wake(&s);
	assert_true(s.lock_acquisitions >= 2 * batches); /* rf_next and rf_release each */
	assert_true(s.lock_hold_max_us > 0);
	assert_true(s.lock_hold_total_s * 1e6 >= s.lock_hold_max_us);
	assert_non_null(strstr(s.lock_hold_max_at, " > "));
	const char *keys[] = {
	    "\"wakeups_workers\":",  "\"wakeups_consumer\":",  "\"wakeups_loop\":",
	    "\"waits_workers\":",    "\"waits_consumer\":",    "\"lock_acquisitions\":",
	    "\"lock_hold_max_us\":", "\"lock_hold_total_s\":", "\"lock_hold_max_at\":"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strstr(json, keys[i]))
			fail_msg("stats JSON lacks %s", keys[i]);
	rf_close(l);
	rf_test_rmtree(d.dir);
	free(d.dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_polling_consumer_never_woken),
	    cmocka_unit_test(test_wakeups_only_to_waiters),
	    cmocka_unit_test(test_lock_hold_figures),
	};
	return rf_test_run_group(tests, NULL, NULL);
}
