/* test_loop.c - the event loop on each backend (io_uring, then epoll):
 * reads, timers, cancel (no callback), stale completions, a full slot
 * table, cross-thread wake, free with ops in flight, registered regions
 * (READ_FIXED on io_uring; -EOPNOTSUPP and plain reads on epoll). */
#include "loop.h"
#include "testutil.h"
#include "util.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The backend every test of the running group asks for. */
static uint32_t backend = RF_LOOP_IO_URING;

static int loop_new_sized(rf_loop **out, uint32_t ops_max, rf_error *err)
{
	rf_loop_opts o = {.ops_max = ops_max, .backend = backend};
	if (ops_max == 0) /* the 0 of rf_loop_new_sized, not opts' default */
		return rf_loop_new_sized(out, 0, err);
	int rc = rf_loop_new_opts(out, &o, err);
	if (rc == 0)
		assert_int_equal(rf_loop_backend_of(*out), backend);
	return rc;
}

static int loop_new(rf_loop **out, rf_error *err)
{
	return loop_new_sized(out, RF_LOOP_OPS_MAX, err);
}

typedef struct hit {
	int calls;
	int res;
} hit;

static void on_hit(void *arg, int res)
{
	hit *h = arg;
	h->calls++;
	h->res = res;
}

static void run_until(rf_loop *loop, const int *flag, int want)
{
	uint64_t deadline = rf_now_ns() + 5000000000ull;
	while (*flag < want && rf_now_ns() < deadline)
		assert_true(rf_loop_run_once(loop, 100000000ull) >= 0);
}

static void drain(rf_loop *loop)
{
	uint64_t deadline = rf_now_ns() + 5000000000ull;
	while (rf_loop_pending(loop) > 0 && rf_now_ns() < deadline)
		assert_true(rf_loop_run_once(loop, 50000000ull) >= 0);
	assert_int_equal(rf_loop_pending(loop), 0);
}

/* A file of n bytes (byte i is i * mul + add) in a fresh directory, open
 * for reading, and a loop: for the read tests. */
typedef struct file_loop {
	char *dir;
	int fd;
	rf_loop *loop;
} file_loop;

static file_loop file_loop_new(void *data, size_t n, unsigned mul, unsigned add)
{
	file_loop f = {.dir = rf_test_tmpdir("loop")};
	char path[600];
	snprintf(path, sizeof(path), "%s/f", f.dir);
	for (size_t i = 0; i < n; i++)
		((uint8_t *)data)[i] = (uint8_t)(i * mul + add);
	assert_int_equal(rf_test_write_file(path, data, n), 0);
	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(f.fd >= 0);
	rf_error err = {0};
	assert_int_equal(loop_new(&f.loop, &err), 0);
	return f;
}

static void file_loop_free(file_loop *f)
{
	rf_loop_free(f->loop);
	close(f->fd);
	rf_test_rmtree(f->dir);
	free(f->dir);
}

static void test_read_file(void **state)
{
	(void)state;
	char data[10000];
	file_loop f = file_loop_new(data, sizeof(data), 7, 3);
	rf_loop *loop = f.loop;
	int fd = f.fd;
	char buf[3000];
	hit h = {0};
	int64_t id = rf_loop_read(loop, fd, buf, sizeof(buf), 5000, on_hit, &h);
	assert_true(id >= 0);
	assert_int_equal(rf_loop_pending(loop), 1);
	run_until(loop, &h.calls, 1);
	assert_int_equal(h.calls, 1);
	assert_int_equal(h.res, (int)sizeof(buf));
	assert_memory_equal(buf, data + 5000, sizeof(buf));
	/* Short read at the end of the file; a bad fd fails with -EBADF. */
	hit h2 = {0}, h3 = {0};
	assert_true(rf_loop_read(loop, fd, buf, sizeof(buf), 9000, on_hit, &h2) >= 0);
	assert_true(rf_loop_read(loop, 987, buf, 10, 0, on_hit, &h3) >= 0);
	run_until(loop, &h2.calls, 1);
	run_until(loop, &h3.calls, 1);
	assert_int_equal(h2.res, 1000);
	assert_int_equal(h3.res, -EBADF);
	assert_int_equal(rf_loop_pending(loop), 0);
	file_loop_free(&f);
}

static void test_timers_and_cancel(void **state)
{
	(void)state;
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	hit fast = {0}, slow = {0}, cancelled = {0};
	int64_t a = rf_loop_timer(loop, 1000000ull, on_hit, &fast);
	int64_t b = rf_loop_timer(loop, 60ull * 1000000000ull, on_hit, &cancelled);
	int64_t c = rf_loop_timer(loop, 20000000ull, on_hit, &slow);
	assert_true(a >= 0 && b >= 0 && c >= 0);
	assert_true(a != b && b != c);
	rf_loop_cancel(loop, b);
	rf_loop_cancel(loop, b);      /* twice: ignored */
	rf_loop_cancel(loop, 123456); /* unknown: ignored */
	run_until(loop, &slow.calls, 1);
	assert_int_equal(fast.calls, 1);
	assert_int_equal(fast.res, 0);
	assert_int_equal(slow.calls, 1);
	drain(loop);
	assert_int_equal(cancelled.calls, 0);
	/* Cancelling a finished op is ignored and cannot touch a reused slot. */
	hit again = {0};
	int64_t d = rf_loop_timer(loop, 1000000ull, on_hit, &again);
	rf_loop_cancel(loop, a);
	rf_loop_cancel(loop, c);
	run_until(loop, &again.calls, 1);
	assert_int_equal(again.calls, 1);
	assert_true(d >= 0);
	rf_loop_free(loop);
}

/* A read on an empty pipe stays pending; cancelling it must produce no
 * callback even though the kernel completes it (-ECANCELED), and the slot
 * is reused with a new generation. */
static void test_stale_completion(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	char buf[16];
	hit h = {0};
	int64_t id = rf_loop_read(loop, p[0], buf, sizeof(buf), (uint64_t)-1, on_hit, &h);
	assert_true(id >= 0);
	assert_true(rf_loop_run_once(loop, 10000000ull) >= 0); /* submitted, pending */
	assert_int_equal(rf_loop_pending(loop), 1);
	rf_loop_cancel(loop, id);
	assert_int_equal(rf_loop_pending(loop), 1); /* the kernel still owns it */
	drain(loop);
	assert_int_equal(h.calls, 0);
	/* Data written now must not reach the cancelled op; a new read gets it. */
	assert_int_equal(write(p[1], "hello", 5), 5);
	hit h2 = {0};
	int64_t id2 = rf_loop_read(loop, p[0], buf, sizeof(buf), (uint64_t)-1, on_hit, &h2);
	assert_true(id2 >= 0 && id2 != id);
	run_until(loop, &h2.calls, 1);
	assert_int_equal(h.calls, 0);
	assert_int_equal(h2.res, 5);
	rf_loop_free(loop);
	close(p[0]);
	close(p[1]);
}

/* Two completions in one tick: whichever runs first cancels the other, which
 * must then not run (its CQE is already in the completion queue). */
typedef struct pair {
	rf_loop *loop;
	int64_t id[2];
	int calls[2];
} pair;

static void on_pair0(void *arg, int res)
{
	pair *pr = arg;
	pr->calls[0]++;
	rf_loop_cancel(pr->loop, pr->id[1]);
}

static void on_pair1(void *arg, int res)
{
	pair *pr = arg;
	pr->calls[1]++;
	rf_loop_cancel(pr->loop, pr->id[0]);
}

static void test_cancel_in_same_tick(void **state)
{
	(void)state;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	pair pr = {0};
	assert_int_equal(loop_new(&pr.loop, NULL), 0);
	char b0[64], b1[64];
	pr.id[0] = rf_loop_read(pr.loop, fd, b0, sizeof(b0), 0, on_pair0, &pr);
	pr.id[1] = rf_loop_read(pr.loop, fd, b1, sizeof(b1), 0, on_pair1, &pr);
	int total = 0;
	for (int i = 0; i < 100 && rf_loop_pending(pr.loop) > 0; i++)
		total += rf_loop_run_once(pr.loop, 10000000ull);
	assert_int_equal(rf_loop_pending(pr.loop), 0);
	/* Both may have completed in separate ticks (then both ran); if they
	 * completed together, exactly one ran. Either way each ran at most once
	 * and the handled count matches the callbacks. */
	assert_true(pr.calls[0] <= 1 && pr.calls[1] <= 1);
	assert_true(pr.calls[0] + pr.calls[1] >= 1);
	assert_int_equal(total, pr.calls[0] + pr.calls[1]);
	rf_loop_free(pr.loop);
	close(fd);
}

static void test_slots_full(void **state)
{
	(void)state;
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	static int64_t ids[RF_LOOP_OPS_MAX];
	hit h = {0};
	for (int i = 0; i < RF_LOOP_OPS_MAX; i++) {
		ids[i] = rf_loop_timer(loop, 3600ull * 1000000000ull, on_hit, &h);
		assert_true(ids[i] >= 0);
	}
	assert_int_equal(rf_loop_timer(loop, 1, on_hit, &h), -EAGAIN);
	assert_int_equal(rf_loop_read(loop, 0, NULL, 0, 0, on_hit, &h), -EAGAIN);
	assert_int_equal(rf_loop_pending(loop), RF_LOOP_OPS_MAX);
	assert_true(rf_loop_run_once(loop, 0) >= 0);
	for (int i = 0; i < RF_LOOP_OPS_MAX; i++)
		rf_loop_cancel(loop, ids[i]);
	drain(loop);
	assert_int_equal(h.calls, 0);
	hit ok = {0};
	assert_true(rf_loop_timer(loop, 1000, on_hit, &ok) >= 0);
	run_until(loop, &ok.calls, 1);
	assert_int_equal(ok.calls, 1);
	rf_loop_free(loop);
}

/* A table sized at creation: 0 and more than the limit are refused; a
 * 2-slot table is full at 2 and takes a new op once a completion frees one. */
static void test_sized_table(void **state)
{
	(void)state;
	rf_loop *loop = NULL;
	rf_error err = {0};
	assert_int_equal(loop_new_sized(&loop, 0, &err), -EINVAL);
	assert_null(loop);
	assert_int_equal(loop_new_sized(&loop, RF_LOOP_OPS_LIMIT + 1, &err), -EINVAL);
	assert_int_equal(loop_new_sized(&loop, 2, &err), 0);
	assert_int_equal(rf_loop_ops_max(loop), 2);
	hit h = {0};
	assert_true(rf_loop_timer(loop, 1000, on_hit, &h) >= 0);
	assert_true(rf_loop_timer(loop, 3600ull * 1000000000ull, on_hit, &h) >= 0);
	assert_int_equal(rf_loop_timer(loop, 1, on_hit, &h), -EAGAIN);
	run_until(loop, &h.calls, 1);
	assert_true(rf_loop_timer(loop, 1000, on_hit, &h) >= 0);
	run_until(loop, &h.calls, 2);
	assert_int_equal(rf_loop_pending(loop), 1);
	rf_loop_free(loop); /* cancels the hour-long one */
	assert_int_equal(h.calls, 2);
}

static void *waker(void *arg)
{
	usleep(50000);
	rf_loop_wake(arg);
	return NULL;
}

static void test_wake_from_thread(void **state)
{
	(void)state;
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	assert_int_equal(rf_loop_run_once(loop, 0), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, waker, loop), 0);
	uint64_t t0 = rf_now_ns();
	assert_true(rf_loop_run_once(loop, 20ull * 1000000000ull) >= 0);
	uint64_t waited = rf_now_ns() - t0;
	pthread_join(t, NULL);
	assert_true(waited < 10ull * 1000000000ull);
	/* A wake before the wait also makes the next wait return. */
	rf_loop_wake(loop);
	t0 = rf_now_ns();
	assert_true(rf_loop_run_once(loop, 20ull * 1000000000ull) >= 0);
	assert_true(rf_now_ns() - t0 < 10ull * 1000000000ull);
	rf_loop_free(loop);
}

/* The loop is created on one thread and run on another (the single issuer is
 * whoever runs it first). */
static void *run_on_thread(void *arg)
{
	rf_loop *loop = arg;
	hit h = {0};
	if (rf_loop_timer(loop, 1000000ull, on_hit, &h) < 0)
		return (void *)1;
	uint64_t deadline = rf_now_ns() + 5000000000ull;
	while (h.calls == 0 && rf_now_ns() < deadline)
		if (rf_loop_run_once(loop, 100000000ull) < 0)
			return (void *)2;
	rf_loop_free(loop);
	return h.calls == 1 ? NULL : (void *)3;
}

static void test_other_thread(void **state)
{
	(void)state;
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	pthread_t t;
	void *res = (void *)99;
	assert_int_equal(pthread_create(&t, NULL, run_on_thread, loop), 0);
	pthread_join(t, &res);
	assert_null(res);
}

/* Freeing with reads in flight cancels and drains them without callbacks. */
static void test_free_in_flight(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	char *buf = malloc(4 * 64);
	hit h = {0};
	for (int i = 0; i < 4; i++)
		assert_true(rf_loop_read(loop, p[0], buf + i * 64, 64, (uint64_t)-1, on_hit, &h) >=
		            0);
	assert_true(rf_loop_timer(loop, 3600ull * 1000000000ull, on_hit, &h) >= 0);
	assert_true(rf_loop_run_once(loop, 1000000ull) >= 0);
	rf_loop_free(loop);
	assert_int_equal(h.calls, 0);
	free(buf); /* safe: the kernel is done with it */
	close(p[0]);
	close(p[1]);
}

/* rf_loop_drive: before_sleep runs before every wait and bounds it;
 * RF_LOOP_STOP returns before any wait or dispatch; until ends the drive. */
typedef struct drive_ctx {
	hit h;
	int sleeps, stop_after;
} drive_ctx;

static bool drive_until(void *arg)
{
	return ((drive_ctx *)arg)->h.calls >= 3;
}

static uint64_t drive_before_sleep(void *arg)
{
	drive_ctx *d = arg;
	d->sleeps++;
	return d->sleeps > d->stop_after ? RF_LOOP_STOP : 1000000ull;
}

static void test_drive(void **state)
{
	(void)state;
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	drive_ctx d = {.stop_after = 0};
	assert_true(rf_loop_timer(loop, 0, on_hit, &d.h) >= 0);
	assert_int_equal(rf_loop_drive(loop, drive_until, drive_before_sleep, &d), 0);
	assert_int_equal(d.sleeps, 1);  /* asked once, stopped at once */
	assert_int_equal(d.h.calls, 0); /* nothing ran: no tick happened */
	d.stop_after = 1000;
	for (int i = 0; i < 2; i++)
		assert_true(rf_loop_timer(loop, 2000000ull * (uint64_t)(i + 1), on_hit, &d.h) >= 0);
	assert_int_equal(rf_loop_drive(loop, drive_until, drive_before_sleep, &d), 0);
	assert_int_equal(d.h.calls, 3); /* until held: the drive returned */
	assert_true(d.sleeps >= 3);     /* the 1 ms waits did not cover the 4 ms timer in one */
	assert_true(d.sleeps <= 1000);
	assert_int_equal(rf_loop_drive(loop, drive_until, NULL, &d), 0); /* holds: no tick */
	rf_loop_free(loop);
}

/* Registered regions: add, find (whole ranges only), READ_FIXED into one
 * (and into its middle), remove, a full table, bad arguments. */
/* epoll has no registered buffers: adding one is -EOPNOTSUPP (the loader
 * says so once and counts it), none is ever found, and a READ_FIXED is a
 * plain read (into memory no region holds, which io_uring would refuse). */
static void regions_epoll(void)
{
	uint8_t data[20000];
	file_loop f = file_loop_new(data, sizeof(data), 13, 1);
	static uint8_t mem[8192];
	assert_int_equal(rf_loop_region_add(f.loop, mem, sizeof(mem)), -EOPNOTSUPP);
	assert_int_equal(rf_loop_region_find(f.loop, mem, 1), -1);
	assert_int_equal(rf_loop_region_remove(f.loop, mem), 0);
	hit h = {0};
	assert_true(rf_loop_read_fixed(f.loop, f.fd, mem + 100, 5000, 3000, 0, on_hit, &h) >= 0);
	run_until(f.loop, &h.calls, 1);
	assert_int_equal(h.res, 5000);
	assert_memory_equal(mem + 100, data + 3000, 5000);
	file_loop_free(&f);
}

static void test_regions(void **state)
{
	(void)state;
	if (backend == RF_LOOP_EPOLL) {
		regions_epoll();
		return;
	}
	uint8_t data[20000];
	file_loop f = file_loop_new(data, sizeof(data), 13, 1);
	rf_loop *loop = f.loop;
	int fd = f.fd;
	static uint8_t mem[RF_LOOP_REGIONS_MAX + 1][8192];
	assert_int_equal(rf_loop_region_find(loop, mem[0], 1), -1);
	int idx = rf_loop_region_add(loop, mem[0], sizeof(mem[0]));
	assert_true(idx >= 0);
	assert_int_equal(rf_loop_region_find(loop, mem[0], sizeof(mem[0])), idx);
	assert_int_equal(rf_loop_region_find(loop, mem[0] + 100, 8000), idx);
	assert_int_equal(rf_loop_region_find(loop, mem[0] + 100, 8100), -1); /* runs past its end */
	assert_int_equal(rf_loop_region_find(loop, mem[1], 1), -1);
	hit h = {0};
	assert_true(rf_loop_read_fixed(loop, fd, mem[0] + 100, 5000, 3000, idx, on_hit, &h) >= 0);
	run_until(loop, &h.calls, 1);
	assert_int_equal(h.res, 5000);
	assert_memory_equal(mem[0] + 100, data + 3000, 5000);
	/* Memory outside the region: the kernel refuses the fixed read. */
	hit h2 = {0};
	assert_true(rf_loop_read_fixed(loop, fd, mem[1], 100, 0, idx, on_hit, &h2) >= 0);
	run_until(loop, &h2.calls, 1);
	assert_int_equal(h2.res, -EFAULT);
	assert_int_equal(rf_loop_region_remove(loop, mem[0]), sizeof(mem[0]));
	assert_int_equal(rf_loop_region_find(loop, mem[0], 1), -1);
	assert_int_equal(rf_loop_region_remove(loop, mem[0]), 0); /* again: nothing */
	/* A full table (8 MiB pinned: a process without CAP_IPC_LOCK at the
	 * default RLIMIT_MEMLOCK may be refused first, -ENOMEM, and stops here) */
	for (unsigned i = 0; i < RF_LOOP_REGIONS_MAX; i++) {
		int rc = rf_loop_region_add(loop, mem[i], sizeof(mem[i]));
		if (rc == -ENOMEM) {
			print_message(
			    "RLIMIT_MEMLOCK refused region %u: the full table is not checked\n", i);
			drain(loop);
			file_loop_free(&f);
			return;
		}
		assert_true(rc >= 0);
	}
	assert_int_equal(rf_loop_region_add(loop, mem[RF_LOOP_REGIONS_MAX], 64), -ENOSPC);
	assert_int_equal(rf_loop_region_find(loop, mem[RF_LOOP_REGIONS_MAX - 1] + 8000, 192),
	                 rf_loop_region_find(loop, mem[RF_LOOP_REGIONS_MAX - 1], 1));
	rf_loop_region_remove(loop, mem[7]);
	assert_true(rf_loop_region_add(loop, mem[RF_LOOP_REGIONS_MAX], 64) >= 0); /* its slot */
	assert_int_equal(rf_loop_region_add(loop, NULL, 64), -EINVAL);
	assert_int_equal(rf_loop_region_add(loop, mem[0], 0), -EINVAL);
	drain(loop);
	file_loop_free(&f);
}

/* Polls: a pipe's read end is not ready until written; two polls of one
 * fd both fire (epoll registers the second through a dup); a cancelled one
 * does not; a regular file is always ready. */
static void test_polls(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	hit a = {0}, b = {0}, c = {0}, w = {0};
	assert_true(rf_loop_poll(loop, p[0], POLLIN, on_hit, &a) >= 0);
	assert_true(rf_loop_poll(loop, p[0], POLLIN, on_hit, &b) >= 0);
	int64_t cid = rf_loop_poll(loop, p[0], POLLIN, on_hit, &c);
	assert_true(cid >= 0);
	assert_true(rf_loop_poll(loop, p[1], POLLOUT, on_hit, &w) >= 0);
	run_until(loop, &w.calls, 1);
	assert_true(w.res & POLLOUT);
	assert_int_equal(a.calls + b.calls + c.calls, 0);
	rf_loop_cancel(loop, cid);
	assert_int_equal(write(p[1], "x", 1), 1);
	run_until(loop, &a.calls, 1);
	run_until(loop, &b.calls, 1);
	assert_true(a.res & POLLIN);
	assert_true(b.res & POLLIN);
	drain(loop);
	assert_int_equal(c.calls, 0);
	char path[] = "/tmp/rf-test-loop-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	hit f = {0};
	assert_true(rf_loop_poll(loop, fd, POLLIN, on_hit, &f) >= 0);
	run_until(loop, &f.calls, 1);
	assert_true(f.res & POLLIN);
	rf_loop_free(loop);
	close(fd);
	close(p[0]);
	close(p[1]);
}

/* Two reads at a non-blocking pipe's position: one byte written completes
 * one of them; the other waits (epoll: its read found nothing and re-armed)
 * until the next byte. */
static void test_pipe_reads_wait(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	char b0[8], b1[8];
	hit h0 = {0}, h1 = {0};
	assert_true(rf_loop_read(loop, p[0], b0, sizeof(b0), UINT64_MAX, on_hit, &h0) >= 0);
	assert_true(rf_loop_read(loop, p[0], b1, sizeof(b1), UINT64_MAX, on_hit, &h1) >= 0);
	assert_true(rf_loop_run_once(loop, 1000000ull) >= 0);
	assert_int_equal(write(p[1], "a", 1), 1);
	int calls = 0;
	for (int i = 0; i < 50 && calls < 1; i++) {
		assert_true(rf_loop_run_once(loop, 10000000ull) >= 0);
		calls = h0.calls + h1.calls;
	}
	assert_int_equal(h0.calls + h1.calls, 1);
	assert_int_equal(h0.calls ? h0.res : h1.res, 1);
	assert_int_equal(rf_loop_pending(loop), 1);
	assert_int_equal(write(p[1], "b", 1), 1);
	run_until(loop, h0.calls ? &h1.calls : &h0.calls, 1);
	assert_int_equal(h0.res, 1);
	assert_int_equal(h1.res, 1);
	assert_int_equal(b0[0] + b1[0], 'a' + 'b');
	rf_loop_free(loop);
	close(p[0]);
	close(p[1]);
}

/* Timers fire in deadline order whatever order they were set in, the same
 * deadline in any order; cancelled ones in the middle never fire. */
typedef struct order {
	int seen[64], n;
} order;

static order *order_of;
static void on_order(void *arg, int res)
{
	assert_int_equal(res, 0);
	order_of->seen[order_of->n++] = (int)(intptr_t)arg;
}

static void test_timer_order(void **state)
{
	(void)state;
	rf_loop *loop;
	assert_int_equal(loop_new(&loop, NULL), 0);
	order o = {0};
	order_of = &o;
	int64_t ids[64];
	for (int i = 0; i < 64; i++) { /* deadlines (i * 37) % 64 ms: a permutation */
		int k = (i * 37) % 64;
		ids[i] =
		    rf_loop_timer(loop, (uint64_t)k * 1000000ull, on_order, (void *)(intptr_t)k);
		assert_true(ids[i] >= 0);
	}
	for (int i = 0; i < 64; i += 5)
		rf_loop_cancel(loop, ids[i]);
	drain(loop);
	assert_int_equal(o.n, 64 - 13);
	for (int i = 1; i < o.n; i++)
		assert_true(o.seen[i - 1] < o.seen[i]);
	for (int i = 0; i < o.n; i++)
		assert_int_not_equal((o.seen[i] * 45) % 64 % 5, 0); /* 37 * 45 = 1 (mod 64) */
	rf_loop_free(loop);
}

/* Many reads at once (more than the epoll backend's threads): every one
 * lands, with its own bytes. */
static void test_many_reads(void **state)
{
	(void)state;
	static uint8_t data[1 << 16], out[256][256];
	file_loop f = file_loop_new(data, sizeof(data), 5, 9);
	hit h[256] = {{0}};
	for (int i = 0; i < 256; i++)
		assert_true(
		    rf_loop_read(f.loop, f.fd, out[i], 256, (uint64_t)i * 256, on_hit, &h[i]) >= 0);
	drain(f.loop);
	for (int i = 0; i < 256; i++) {
		assert_int_equal(h[i].calls, 1);
		assert_int_equal(h[i].res, 256);
		assert_memory_equal(out[i], data + i * 256, 256);
	}
	file_loop_free(&f);
}

/* The choice itself: opts win over $RINGFEED_IO_BACKEND, which AUTO takes;
 * a bad name or thread count is refused with the name in the message. */
static void test_backend_choice(void **state)
{
	(void)state;
	rf_loop *loop = NULL;
	rf_error err = {0};
	setenv("RINGFEED_IO_BACKEND", "epoll", 1);
	rf_loop_opts o = {.backend = RF_LOOP_AUTO};
	assert_int_equal(rf_loop_new_opts(&loop, &o, &err), 0);
	assert_int_equal(rf_loop_backend_of(loop), RF_LOOP_EPOLL);
	assert_int_equal(rf_loop_read_threads(loop), RF_LOOP_READ_THREADS_DEFAULT);
	assert_string_equal(rf_loop_fallback(loop), "");
	rf_loop_free(loop);
	o.backend = backend;
	assert_int_equal(rf_loop_new_opts(&loop, &o, &err), 0);
	assert_int_equal(rf_loop_backend_of(loop), backend);
	rf_loop_free(loop);
	setenv("RINGFEED_IO_BACKEND", "uring", 1);
	o.backend = RF_LOOP_AUTO;
	assert_int_equal(rf_loop_new_opts(&loop, &o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "RINGFEED_IO_BACKEND: 'uring' is not"));
	unsetenv("RINGFEED_IO_BACKEND");
	o.read_threads = RF_LOOP_READ_THREADS_MAX + 1;
	assert_int_equal(rf_loop_new_opts(&loop, &o, &err), -EINVAL);
	o.read_threads = 1;
	o.backend = RF_LOOP_EPOLL;
	assert_int_equal(rf_loop_new_opts(&loop, &o, &err), 0);
	assert_int_equal(rf_loop_read_threads(loop), 1);
	rf_loop_free(loop);
	uint32_t b = 99;
	assert_int_equal(rf_loop_backend_parse("io_uring", &b), 0);
	assert_int_equal(b, RF_LOOP_IO_URING);
	assert_int_equal(rf_loop_backend_parse("epol", &b), -EINVAL);
	assert_string_equal(rf_loop_backend_name(RF_LOOP_EPOLL), "epoll");
}

static int use_uring(void **state)
{
	(void)state;
	backend = RF_LOOP_IO_URING;
	return 0;
}

static int use_epoll(void **state)
{
	(void)state;
	backend = RF_LOOP_EPOLL;
	return 0;
}

#define LOOP_TESTS                                                                                 \
	cmocka_unit_test(test_read_file), cmocka_unit_test(test_timers_and_cancel),                \
	    cmocka_unit_test(test_stale_completion), cmocka_unit_test(test_cancel_in_same_tick),   \
	    cmocka_unit_test(test_slots_full), cmocka_unit_test(test_sized_table),                 \
	    cmocka_unit_test(test_wake_from_thread), cmocka_unit_test(test_other_thread),          \
	    cmocka_unit_test(test_free_in_flight), cmocka_unit_test(test_drive),                   \
	    cmocka_unit_test(test_regions), cmocka_unit_test(test_polls),                          \
	    cmocka_unit_test(test_timer_order), cmocka_unit_test(test_many_reads),                 \
	    cmocka_unit_test(test_backend_choice), cmocka_unit_test(test_pipe_reads_wait)

/* Both backends; where io_uring is blocked (a container), its half cannot
 * run: the epoll half runs and the test reports skip (77), not pass. */
int main(void)
{
	const struct CMUnitTest tests[] = {LOOP_TESTS};
	rf_loop *probe = NULL;
	rf_loop_opts o = {.backend = RF_LOOP_IO_URING};
	rf_error err = {0};
	bool uring = rf_loop_new_opts(&probe, &o, &err) == 0;
	rf_loop_free(probe);
	int failed = 0;
	if (uring)
		failed += cmocka_run_group_tests_name("io_uring", tests, use_uring, NULL);
	else
		print_message("io_uring is not available here (%s): its group is skipped\n",
		              err.msg);
	failed += cmocka_run_group_tests_name("epoll", tests, use_epoll, NULL);
	return failed ? 1 : uring ? 0 : 77;
}
