/* test_inject_source.c - the fault injecting wrapper over the local file
 * source: the same bytes arrive under latency, errors, resets and short
 * reads (retried inside the wrapper); retries run out into a clear error;
 * corruption flips exactly one byte and a re-read recovers; the fault
 * sequence is a function of the seed and the read sequence only (not of
 * timing or concurrency); waits are loop timers; stalls hold reads; closing
 * with reads in flight runs no callback. */
#include "inject.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DATA_BYTES (1u << 20)

typedef struct done {
	int calls;
	int64_t res;
	uint64_t at_ns;
	char msg[700];
} done;

static void on_done(void *arg, int64_t res, const char *msg)
{
	done *d = arg;
	d->calls++;
	d->res = res;
	d->at_ns = rf_now_ns();
	snprintf(d->msg, sizeof(d->msg), "%s", msg ? msg : "");
}

/* Runs the loop until *flag reaches want (bounded: 20 s). */
static void spin_until(rf_loop *loop, const int *flag, int want)
{
	uint64_t deadline = rf_now_ns() + 20000000000ull;
	while (*flag < want && rf_now_ns() < deadline)
		assert_true(rf_loop_run_once(loop, 20000000ull) >= 0);
	assert_true(*flag >= want);
}

typedef struct env {
	char *dir;
	char path[600];
	uint8_t *data;
	rf_loop *loop;
} env;

static int setup(void **state)
{
	env *e = calloc(1, sizeof(*e));
	e->dir = rf_test_tmpdir("inject");
	snprintf(e->path, sizeof(e->path), "%s/data.bin", e->dir);
	e->data = malloc(DATA_BYTES);
	for (uint32_t i = 0; i < DATA_BYTES; i++)
		e->data[i] = (uint8_t)(i * 2654435761u >> 13);
	assert_int_equal(rf_test_write_file(e->path, e->data, DATA_BYTES), 0);
	assert_int_equal(rf_loop_new(&e->loop, NULL), 0);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	env *e = *state;
	rf_loop_free(e->loop);
	rf_test_rmtree(e->dir);
	free(e->dir);
	free(e->data);
	free(e);
	return 0;
}

static rf_fetch *fetch_with(env *e, const char *spec, uint32_t retries)
{
	rf_fetch_options opt;
	rf_fetch_options_init(&opt);
	opt.inject = spec;
	opt.retries = retries;
	rf_fetch *f = NULL;
	rf_error err = {0};
	if (rf_fetch_new(e->loop, &opt, &f, &err) < 0)
		fail_msg("rf_fetch_new('%s'): %s", spec, err.msg);
	return f;
}

static rf_source *open_ok(env *e, rf_fetch *f)
{
	rf_source *s = NULL;
	done d = {0};
	rf_error err = {0};
	assert_int_equal(rf_source_open(f, e->path, UINT64_MAX, &s, on_done, &d, &err), 0);
	assert_true(rf_source_is_injector(s));
	spin_until(e->loop, &d.calls, 1);
	assert_int_equal(d.res, 0);
	assert_int_equal(rf_source_size(s), DATA_BYTES);
	assert_string_equal(rf_source_name(s), e->path);
	return s;
}

/* The i-th range of a fixed, seed-independent sequence. */
static void range_of(unsigned i, uint64_t *off, uint64_t *len)
{
	uint64_t h = (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull;
	*len = 1 + (h >> 40) % 40000;
	*off = (h >> 8) % (DATA_BYTES - *len);
}

/* Many concurrent reads under every transient fault: exact bytes, and the
 * counters show each fault was injected and retried. */
static void test_same_bytes_under_faults(void **state)
{
	env *e = *state;
	rf_fetch *f =
	    fetch_with(e, "seed=3,latency=1ms,jitter=1ms,error=0.15,reset=0.15,short=0.15", 60);
	rf_source *s = open_ok(e, f);
	enum { N = 96, PAR = 16 };
	static uint8_t bufs[PAR][40000];
	for (unsigned base = 0; base < N; base += PAR) {
		done d[PAR] = {{0}};
		int calls = 0;
		for (unsigned j = 0; j < PAR; j++) {
			uint64_t off, len;
			range_of(base + j, &off, &len);
			memset(bufs[j], 0, sizeof(bufs[j]));
			assert_int_equal(rf_source_read(s, off, len, bufs[j], on_done, &d[j]), 0);
			assert_int_equal(d[j].calls, 0); /* never inside rf_source_read */
		}
		uint64_t deadline = rf_now_ns() + 20000000000ull;
		while (calls < PAR && rf_now_ns() < deadline) {
			assert_true(rf_loop_run_once(e->loop, 20000000ull) >= 0);
			calls = 0;
			for (unsigned j = 0; j < PAR; j++)
				calls += d[j].calls;
		}
		for (unsigned j = 0; j < PAR; j++) {
			uint64_t off, len;
			range_of(base + j, &off, &len);
			assert_int_equal(d[j].calls, 1);
			if (d[j].res != (int64_t)len)
				fail_msg("read %u: %lld (%s)", base + j, (long long)d[j].res,
				         d[j].msg);
			assert_memory_equal(bufs[j], e->data + off, len);
		}
	}
	rf_inject_stats st;
	assert_int_equal(rf_inject_stats_get(s, &st), 0);
	assert_true(st.reads == N);
	assert_true(st.errors > 0 && st.resets > 0 && st.shorts > 0);
	assert_true(st.corrupts == 0 && st.failed == 0);
	assert_true(st.retries == st.errors + st.resets + st.shorts);
	assert_true(st.attempts == st.reads + st.retries);
	rf_source_close(s);
	rf_fetch_free(f);
}

/* Reads the sequence one at a time; trace[i] = attempts of read i. */
static void run_sequence(env *e, const char *spec, unsigned n, bool concurrent, uint32_t *trace,
                         rf_inject_stats *st)
{
	rf_fetch *f = fetch_with(e, spec, 60);
	rf_source *s = open_ok(e, f);
	uint8_t *buf = malloc((size_t)n * 40000);
	done *d = calloc(n, sizeof(*d));
	int total = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t off, len;
		range_of(i, &off, &len);
		rf_inject_stats before;
		assert_int_equal(rf_inject_stats_get(s, &before), 0);
		assert_int_equal(
		    rf_source_read(s, off, len, buf + (size_t)i * 40000, on_done, &d[i]), 0);
		if (concurrent)
			continue;
		spin_until(e->loop, &d[i].calls, 1);
		rf_inject_stats after;
		assert_int_equal(rf_inject_stats_get(s, &after), 0);
		trace[i] = (uint32_t)(after.attempts - before.attempts);
	}
	uint64_t deadline = rf_now_ns() + 20000000000ull;
	while (concurrent && total < (int)n && rf_now_ns() < deadline) {
		assert_true(rf_loop_run_once(e->loop, 20000000ull) >= 0);
		total = 0;
		for (unsigned i = 0; i < n; i++)
			total += d[i].calls;
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t off, len;
		range_of(i, &off, &len);
		assert_int_equal(d[i].calls, 1);
		assert_int_equal(d[i].res, (int64_t)len);
		assert_memory_equal(buf + (size_t)i * 40000, e->data + off, len);
	}
	assert_int_equal(rf_inject_stats_get(s, st), 0);
	free(d);
	free(buf);
	rf_source_close(s);
	rf_fetch_free(f);
}

static void test_deterministic(void **state)
{
	env *e = *state;
	enum { N = 40 };
	const char *a = "seed=11,jitter=1ms,error=0.2,reset=0.2,short=0.2";
	const char *b = "seed=12,jitter=1ms,error=0.2,reset=0.2,short=0.2";
	uint32_t t1[N], t2[N], t3[N], unused[N];
	rf_inject_stats s1, s2, s3, s4;
	run_sequence(e, a, N, false, t1, &s1);
	run_sequence(e, a, N, false, t2, &s2);
	run_sequence(e, b, N, false, t3, &s3);
	assert_memory_equal(t1, t2, sizeof(t1)); /* same seed: same faults, read by read */
	assert_memory_equal(&s1, &s2, sizeof(s1));
	assert_memory_not_equal(t1, t3, sizeof(t1)); /* another seed: other faults */
	/* All reads in flight at once (completion order is up to the loop): the
	 * same faults, because decisions depend on the read, not the timing. */
	run_sequence(e, a, N, true, unused, &s4);
	assert_true(s4.errors == s1.errors && s4.resets == s1.resets && s4.shorts == s1.shorts);
	assert_true(s4.attempts == s1.attempts && s4.retries == s1.retries);
	assert_true(s1.errors + s1.resets + s1.shorts > 0);
}

static void expect_failure(env *e, const char *spec, uint32_t retries, int64_t code,
                           const char *what)
{
	rf_fetch *f = fetch_with(e, spec, retries);
	rf_source *s = open_ok(e, f);
	static uint8_t buf[5000];
	done d = {0};
	assert_int_equal(rf_source_read(s, 1000, 5000, buf, on_done, &d), 0);
	spin_until(e->loop, &d.calls, 1);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.res, code);
	char attempts[64];
	snprintf(attempts, sizeof(attempts), "attempt %u of %u", retries + 1, retries + 1);
	if (!strstr(d.msg, e->path) || !strstr(d.msg, "bytes [1000, 6000)") ||
	    !strstr(d.msg, what) || !strstr(d.msg, attempts))
		fail_msg("message: %s", d.msg);
	rf_inject_stats st;
	assert_int_equal(rf_inject_stats_get(s, &st), 0);
	assert_true(st.failed == 1 && st.attempts == retries + 1 && st.retries == retries);
	rf_source_close(s);
	rf_fetch_free(f);
}

static void test_retries_run_out(void **state)
{
	env *e = *state;
	expect_failure(e, "error=1", 2, -EIO, "injected I/O error");
	expect_failure(e, "reset=1", 3, -ECONNRESET, "injected connection reset");
	expect_failure(e, "short=1", 0, -EIO, "injected short read");
}

/* corrupt: the read "succeeds" with exactly one byte flipped; re-reading the
 * range (as a consumer does when the checksum fails) recovers the bytes. */
static void test_corrupt_then_reread(void **state)
{
	env *e = *state;
	rf_fetch *f = fetch_with(e, "seed=5,corrupt=0.5", 5);
	rf_source *s = open_ok(e, f);
	static uint8_t buf[20000];
	int corrupted = 0, clean = 0;
	for (int i = 0; i < 40 && !(corrupted >= 2 && clean >= 2); i++) {
		done d = {0};
		memset(buf, 0, sizeof(buf));
		assert_int_equal(rf_source_read(s, 300000, sizeof(buf), buf, on_done, &d), 0);
		spin_until(e->loop, &d.calls, 1);
		assert_int_equal(d.res, (int64_t)sizeof(buf));
		size_t diff = 0;
		for (size_t k = 0; k < sizeof(buf); k++)
			diff += buf[k] != e->data[300000 + k];
		assert_true(diff <= 1);
		corrupted += diff == 1;
		clean += diff == 0;
	}
	assert_true(corrupted >= 2 && clean >= 2);
	rf_inject_stats st;
	assert_int_equal(rf_inject_stats_get(s, &st), 0);
	assert_true(st.corrupts == (uint64_t)corrupted && st.retries == 0);
	rf_source_close(s);
	rf_fetch_free(f);
}

static void on_tick(void *arg, int res)
{
	(void)res;
	(*(int *)arg)++;
}

/* Latency is a loop timer: the read returns at once with an op pending, the
 * loop stays free for other work, and the bytes come no earlier than the
 * latency (timers never fire early). */
static void test_latency_is_a_timer(void **state)
{
	env *e = *state;
	rf_fetch *f = fetch_with(e, "latency=150ms", 0);
	rf_source *s = open_ok(e, f);
	static uint8_t buf[4096];
	done d = {0};
	int ticks = 0;
	uint64_t t0 = rf_now_ns();
	assert_int_equal(rf_source_read(s, 0, sizeof(buf), buf, on_done, &d), 0);
	assert_int_equal(d.calls, 0);
	assert_true(rf_loop_pending(e->loop) >= 1);
	assert_true(rf_loop_run_once(e->loop, 0) >= 0); /* nothing due yet: returns */
	assert_int_equal(d.calls, 0);
	/* Another timer on the same loop runs while the read waits. */
	assert_true(rf_loop_timer(e->loop, 1000000ull, on_tick, &ticks) >= 0);
	spin_until(e->loop, &ticks, 1);
	spin_until(e->loop, &d.calls, 1);
	assert_int_equal(d.res, (int64_t)sizeof(buf));
	assert_memory_equal(buf, e->data, sizeof(buf));
	assert_true(d.at_ns - t0 >= 150000000ull);
	rf_inject_stats st;
	assert_int_equal(rf_inject_stats_get(s, &st), 0);
	assert_true(st.delayed == 1);
	rf_source_close(s);
	rf_fetch_free(f);
}

/* stall=60ms/120ms: nothing completes inside a stall window (a small margin
 * covers the instructions between the check and the callback). */
static void test_stall_holds_reads(void **state)
{
	env *e = *state;
	rf_fetch *f = fetch_with(e, "latency=10ms,stall=60ms/120ms", 0);
	rf_source *s = open_ok(e, f);
	uint64_t epoch = rf_fetch_epoch_ns(f);
	static uint8_t buf[8192];
	rf_inject_stats st = {0};
	uint64_t deadline = rf_now_ns() + 5000000000ull;
	for (unsigned i = 0; (i < 12 || st.stalled == 0) && rf_now_ns() < deadline; i++) {
		done d = {0};
		assert_int_equal(rf_source_read(s, i * 1000, sizeof(buf), buf, on_done, &d), 0);
		spin_until(e->loop, &d.calls, 1);
		assert_int_equal(d.res, (int64_t)sizeof(buf));
		assert_memory_equal(buf, e->data + i * 1000, sizeof(buf));
		uint64_t phase = (d.at_ns - epoch) % 120000000ull;
		if (phase >= 60000000ull + 5000000ull)
			fail_msg("read %u completed %llu ms into a stall window", i,
			         (unsigned long long)(phase / 1000000ull - 60));
		assert_int_equal(rf_inject_stats_get(s, &st), 0);
	}
	assert_true(st.stalled > 0);
	rf_source_close(s);
	rf_fetch_free(f);
}

static void test_close_in_flight(void **state)
{
	env *e = *state;
	rf_fetch *f = fetch_with(e, "seed=1,latency=5ms,jitter=5ms,error=0.3,short=0.3", 10);
	rf_source *s = open_ok(e, f);
	static uint8_t buf[8][10000];
	done d = {0};
	for (int i = 0; i < 8; i++)
		assert_int_equal(rf_source_read(s, (uint64_t)i * 10000, 10000, buf[i], on_done, &d),
		                 0);
	/* Let some attempts start (inner reads in flight, backoffs armed). */
	for (int i = 0; i < 3; i++)
		assert_true(rf_loop_run_once(e->loop, 3000000ull) >= 0);
	int before = d.calls;
	rf_source_close(s);
	for (int i = 0; i < 20 && rf_loop_pending(e->loop) > 0; i++)
		assert_true(rf_loop_run_once(e->loop, 10000000ull) >= 0);
	assert_int_equal(d.calls, before);
	assert_int_equal(rf_loop_pending(e->loop), 0);
	rf_fetch_free(f);
}

static void test_bad_spec_and_bad_reads(void **state)
{
	env *e = *state;
	rf_fetch_options opt;
	rf_fetch_options_init(&opt);
	opt.inject = "seed=1,latency=oops";
	rf_fetch *f = NULL;
	rf_error err = {0};
	assert_int_equal(rf_fetch_new(e->loop, &opt, &f, &err), -EINVAL);
	assert_null(f);
	assert_non_null(strstr(err.msg, "'latency'"));
	assert_non_null(strstr(err.msg, "position 16"));
	f = fetch_with(e, "latency=1ms", 0);
	rf_source *s = open_ok(e, f);
	uint8_t buf[4];
	done d = {0};
	assert_int_equal(rf_source_read(s, DATA_BYTES - 1, 2, buf, on_done, &d), -EINVAL);
	assert_int_equal(rf_source_read(s, 0, 0, buf, on_done, &d), -EINVAL);
	assert_int_equal(rf_source_read(s, UINT64_MAX, 2, buf, on_done, &d), -EINVAL);
	rf_inject_stats st;
	assert_int_equal(rf_inject_stats_get(s, &st), 0);
	assert_true(st.reads == 0);
	assert_int_equal(d.calls, 0);
	rf_source_close(s);
	rf_fetch_free(f);
	/* The inner source's own errors pass through (no injected retries). */
	f = fetch_with(e, "latency=1ms", 3);
	s = open_ok(e, f);
	assert_int_equal(truncate(e->path, 1000), 0);
	static uint8_t big[1000];
	assert_int_equal(rf_source_read(s, 500, 1000, big, on_done, &d), 0);
	spin_until(e->loop, &d.calls, 1);
	assert_int_equal(d.res, -EIO);
	assert_non_null(strstr(d.msg, "end of file"));
	assert_int_equal(rf_inject_stats_get(s, &st), 0);
	assert_true(st.retries == 0 && st.attempts == 1);
	rf_source_close(s);
	rf_fetch_free(f);
	assert_int_equal(rf_inject_stats_get(NULL, &st), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_same_bytes_under_faults, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deterministic, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_retries_run_out, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_corrupt_then_reread, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_latency_is_a_timer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stall_holds_reads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_close_in_flight, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_spec_and_bad_reads, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
