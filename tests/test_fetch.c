/* test_fetch.c - the fetch layer with the local file source: open (size),
 * ranged reads, short reads continued, errors naming path and range,
 * unsupported schemes, close with reads in flight, the file's version
 * (rf_source_validator). */
#include "source.h"
#include "testutil.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct done {
	int calls;
	int64_t res;
	char msg[700];
} done;

static void on_done(void *arg, int64_t res, const char *msg)
{
	done *d = arg;
	d->calls++;
	d->res = res;
	snprintf(d->msg, sizeof(d->msg), "%s", msg ? msg : "");
}

static void spin(rf_loop *loop, const int *flag)
{
	uint64_t deadline = rf_now_ns() + 5000000000ull;
	while (*flag == 0 && rf_now_ns() < deadline)
		assert_true(rf_loop_run_once(loop, 50000000ull) >= 0);
	assert_true(*flag > 0);
}

typedef struct env {
	char *dir;
	char path[600];
	rf_loop *loop;
	rf_fetch *fetch;
	uint8_t data[100000];
} env;

static int setup(void **state)
{
	env *e = calloc(1, sizeof(*e));
	e->dir = rf_test_tmpdir("fetch");
	snprintf(e->path, sizeof(e->path), "%s/data.bin", e->dir);
	for (size_t i = 0; i < sizeof(e->data); i++)
		e->data[i] = (uint8_t)(i * 131 + (i >> 8));
	assert_int_equal(rf_test_write_file(e->path, e->data, sizeof(e->data)), 0);
	assert_int_equal(rf_loop_new(&e->loop, NULL), 0);
	assert_int_equal(rf_fetch_new(e->loop, NULL, &e->fetch, NULL), 0);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	env *e = *state;
	rf_fetch_free(e->fetch);
	rf_loop_free(e->loop);
	rf_test_rmtree(e->dir);
	free(e->dir);
	free(e);
	return 0;
}

static rf_source *open_ok(env *e, const char *url)
{
	rf_source *s = NULL;
	done d = {0};
	rf_error err = {0};
	assert_int_equal(rf_source_open(e->fetch, url, UINT64_MAX, &s, on_done, &d, &err), 0);
	spin(e->loop, &d.calls);
	assert_int_equal(d.res, 0);
	assert_int_equal(rf_source_size(s), sizeof(e->data));
	return s;
}

static void test_read_ranges(void **state)
{
	env *e = *state;
	rf_source *s = open_ok(e, e->path);
	assert_string_equal(rf_source_name(s), e->path);
	static uint8_t buf[100000];
	const uint64_t ranges[][2] = {{0, 100000}, {1, 1}, {99999, 1}, {4096, 65536}, {777, 12345}};
	for (size_t i = 0; i < RF_ARRAY_LEN(ranges); i++) {
		done d = {0};
		memset(buf, 0, sizeof(buf));
		assert_int_equal(rf_source_read(s, ranges[i][0], ranges[i][1], buf, on_done, &d),
		                 0);
		spin(e->loop, &d.calls);
		assert_int_equal(d.res, (int64_t)ranges[i][1]);
		assert_memory_equal(buf, e->data + ranges[i][0], ranges[i][1]);
	}
	/* Out of range and empty reads are refused at once. */
	done d = {0};
	assert_int_equal(rf_source_read(s, 99999, 2, buf, on_done, &d), -EINVAL);
	assert_int_equal(rf_source_read(s, UINT64_MAX, 2, buf, on_done, &d), -EINVAL);
	assert_int_equal(rf_source_read(s, 0, 0, buf, on_done, &d), -EINVAL);
	assert_int_equal(d.calls, 0);
	rf_source_close(s);
	/* file:// URLs name the same file. */
	char url[700];
	snprintf(url, sizeof(url), "file://%s", e->path);
	rf_source_close(open_ok(e, url));
}

/* The file shrinks after open: the first read is short (continued), the
 * continuation hits end of file -> an error naming path and range. */
static void test_short_read_then_eof(void **state)
{
	env *e = *state;
	rf_source *s = open_ok(e, e->path);
	assert_int_equal(truncate(e->path, 50000), 0);
	static uint8_t buf[100000];
	done d = {0};
	assert_int_equal(rf_source_read(s, 40000, 20000, buf, on_done, &d), 0);
	spin(e->loop, &d.calls);
	assert_int_equal(d.res, -EIO);
	assert_non_null(strstr(d.msg, e->path));
	assert_non_null(strstr(d.msg, "[40000, 60000)"));
	assert_non_null(strstr(d.msg, "50000"));
	assert_memory_equal(buf, e->data + 40000, 10000);
	rf_source_close(s);
}

static void test_open_errors(void **state)
{
	env *e = *state;
	rf_source *s = NULL;
	done d = {0};
	rf_error err = {0};
	char missing[700];
	snprintf(missing, sizeof(missing), "%s/nope.rfs", e->dir);
	assert_int_equal(rf_source_open(e->fetch, missing, UINT64_MAX, &s, on_done, &d, &err),
	                 -ENOENT);
	assert_non_null(strstr(err.msg, "nope.rfs"));
	assert_int_equal(rf_source_open(e->fetch, e->dir, UINT64_MAX, &s, on_done, &d, &err),
	                 -EINVAL);
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_int_equal(rf_source_open(e->fetch, e->path, 5, &s, on_done, &d, &err), -EIO);
	assert_non_null(strstr(err.msg, "manifest says 5"));
	assert_int_equal(
	    rf_source_open(e->fetch, "gopher://x/y", UINT64_MAX, &s, on_done, &d, &err),
	    -EPROTONOSUPPORT);
	assert_non_null(strstr(err.msg, "'gopher'"));
	assert_null(s);
	for (int i = 0; i < 3; i++)
		assert_true(rf_loop_run_once(e->loop, 1000000ull) >= 0);
	assert_int_equal(d.calls, 0);
	assert_int_equal(rf_loop_pending(e->loop), 0);
}

/* Closing with an open and reads in flight: no callback ever runs. */
static void test_close_in_flight(void **state)
{
	env *e = *state;
	rf_source *s = NULL;
	done o = {0}, d = {0};
	assert_int_equal(rf_source_open(e->fetch, e->path, UINT64_MAX, &s, on_done, &o, NULL), 0);
	rf_source_close(s);
	s = open_ok(e, e->path);
	static uint8_t buf[8][10000];
	for (int i = 0; i < 8; i++)
		assert_int_equal(rf_source_read(s, (uint64_t)i * 10000, 10000, buf[i], on_done, &d),
		                 0);
	rf_source_close(s);
	for (int i = 0; i < 20 && rf_loop_pending(e->loop) > 0; i++)
		assert_true(rf_loop_run_once(e->loop, 10000000ull) >= 0);
	assert_int_equal(o.calls, 0);
	assert_int_equal(d.calls, 0);
}

/* More sources than the process may hold descriptors, each with a read in
 * flight at once: reads wait for a descriptor of the bounded set and all
 * deliver their bytes. Before, every source kept a descriptor from open to
 * close, and the open past the limit failed with EMFILE. */
static void test_more_sources_than_descriptors(void **state)
{
	env *e = *state;
	enum { N = 60 };
	int probe = dup(0);
	assert_true(probe >= 0);
	close(probe);
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)probe + 24; /* room for fewer than N more */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	rf_fetch *f = NULL;
	assert_int_equal(rf_fetch_new(e->loop, NULL, &f, NULL), 0);
	static rf_source *src[N];
	static done d[N];
	static uint8_t buf[N][1000];
	for (int i = 0; i < N; i++) {
		done o = {0};
		rf_error err = {0};
		int rc = rf_source_open(f, e->path, UINT64_MAX, &src[i], on_done, &o, &err);
		if (rc < 0)
			print_error("source %d: %s\n", i, err.msg);
		assert_int_equal(rc, 0);
		spin(e->loop, &o.calls);
		assert_int_equal(o.res, 0);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(
		    rf_source_read(src[i], (uint64_t)i * 1000, 1000, buf[i], on_done, &d[i]), 0);
	for (int i = 0; i < N; i++) {
		spin(e->loop, &d[i].calls);
		if (d[i].res < 0)
			print_error("read %d: %s\n", i, d[i].msg);
		assert_int_equal(d[i].res, 1000);
		assert_memory_equal(buf[i], e->data + i * 1000, 1000);
	}
	for (int i = 0; i < N; i++)
		rf_source_close(src[i]);
	rf_fetch_free(f);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

/* direct_io on: ranges of every alignment read the same bytes as the page
 * cache does, in place where buffer and offset agree modulo 4096 (the
 * interior with O_DIRECT, the edges through a bounce block), through a bounce
 * buffer where they do not; the end of the file clips the last block (the
 * fallback where a filesystem refuses O_DIRECT: test_fdcache.c). */
static void direct_reads(env *e, const char *path, bool want_direct)
{
	rf_fetch_options opt;
	rf_fetch_options_init(&opt);
	opt.direct_io = RF_DIRECT_IO_ON;
	rf_fetch *f = NULL;
	assert_int_equal(rf_fetch_new(e->loop, &opt, &f, NULL), 0);
	rf_source *s = NULL;
	done o = {0};
	rf_error err = {0};
	assert_int_equal(rf_source_open(f, path, UINT64_MAX, &s, on_done, &o, &err), 0);
	spin(e->loop, &o.calls);
	assert_int_equal(o.res, 0);
	static uint8_t mem[100000 + 8192] __attribute__((aligned(4096)));
	/* registered: the reads that land in mem go as READ_FIXED (io_uring;
	 * the epoll backend has no registered buffers: refused, plain reads) */
	bool reg = rf_loop_backend_of(e->loop) == RF_LOOP_IO_URING;
	assert_int_equal(rf_fetch_buffers_register(f, mem, sizeof(mem)), reg ? 0 : -EOPNOTSUPP);
	const uint64_t ranges[][3] = {/* offset, len, buffer offset in mem */
	                              {0, 100000, 0},     {1000, 98000, 1000}, {5000, 95000, 904},
	                              {4096, 65536, 0},   {1, 1, 1},           {99999, 1, 7},
	                              {12345, 70000, 17}, {0, 4096, 0},        {90000, 10000, 0}};
	for (size_t i = 0; i < RF_ARRAY_LEN(ranges); i++) {
		done d = {0};
		uint8_t *buf = mem + ranges[i][2];
		memset(mem, 0xAA, sizeof(mem));
		assert_int_equal(rf_source_read(s, ranges[i][0], ranges[i][1], buf, on_done, &d),
		                 0);
		spin(e->loop, &d.calls);
		if (d.res < 0)
			print_error("range %zu: %s\n", i, d.msg);
		assert_int_equal(d.res, (int64_t)ranges[i][1]);
		assert_memory_equal(buf, e->data + ranges[i][0], ranges[i][1]);
		/* nothing written outside the range */
		for (uint64_t k = 0; k < ranges[i][2]; k++)
			assert_int_equal(mem[k], 0xAA);
		assert_int_equal(buf[ranges[i][1]], 0xAA);
	}
	rf_fetch_counters c;
	rf_fetch_counters_get(f, &c);
	assert_int_equal(c.direct_refused, want_direct ? 0 : 1);
	if (want_direct)
		assert_true(c.direct_bytes >= 100000);
	else
		assert_int_equal(c.direct_bytes, 0);
	assert_true(reg ? c.fixed_reads >= 1 : c.fixed_reads == 0);
	/* Edge blocks are reused: the first range's edge block serves the two
	 * next ones in place (and none is needed by {4096, 65536}, aligned);
	 * the five that are not in place ({1, 1}, {99999, 1}, {12345, 70000}
	 * whose buffer disagrees with its offset, {0, 4096} and {90000, 10000}
	 * under 64 KiB) each allocate their enclosing block. */
	assert_int_equal(c.bounce_allocs, want_direct ? 6 : 0);
	assert_true(reg ? c.fixed_bytes >= 65536 : c.fixed_bytes == 0);
	assert_int_equal(c.registered_bytes, reg ? sizeof(mem) : 0);
	assert_int_equal(c.register_error, reg ? 0 : -EOPNOTSUPP);
	/* unregistered: plain reads again, the same bytes */
	rf_fetch_buffers_unregister(f, mem);
	done d = {0};
	assert_int_equal(rf_source_read(s, 0, 100000, mem, on_done, &d), 0);
	spin(e->loop, &d.calls);
	assert_int_equal(d.res, 100000);
	assert_memory_equal(mem, e->data, 100000);
	uint64_t fixed = c.fixed_reads;
	rf_fetch_counters_get(f, &c);
	assert_int_equal(c.fixed_reads, fixed);
	assert_int_equal(c.registered_bytes, 0);
	rf_source_close(s);
	rf_fetch_free(f);
}

static void test_direct_io(void **state)
{
	env *e = *state;
	/* O_DIRECT where the test directory allows it (not tmpfs) */
	int fd = open(e->path, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		rf_test_skip("skipped: %s refuses O_DIRECT\n", e->dir);
	}
	close(fd);
	direct_reads(e, e->path, true);
}

/* The version of a local file: device, inode, size, mtime and ctime in ns,
 * as stat says; a new mtime is a new version, and so is a rewrite that puts
 * the size and mtime back (the ctime moves); the injector passes it on. */
static void test_validator_local(void **state)
{
	env *e = *state;
	struct stat st;
	assert_int_equal(stat(e->path, &st), 0);
	char want[RF_SOURCE_VALIDATOR_BYTES], got[RF_SOURCE_VALIDATOR_BYTES];
	snprintf(want, sizeof(want), "file:dev=%llu,ino=%llu,size=%llu,mtime_ns=%llu,ctime_ns=%llu",
	         (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	         (unsigned long long)st.st_size,
	         (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
	             (unsigned long long)st.st_mtim.tv_nsec,
	         (unsigned long long)st.st_ctim.tv_sec * 1000000000ull +
	             (unsigned long long)st.st_ctim.tv_nsec);
	rf_source *s = open_ok(e, e->path);
	assert_int_equal(rf_source_validator(s, got, sizeof(got)), strlen(want));
	assert_string_equal(got, want);
	/* a buffer too small gets "unknown", never a cut string */
	assert_int_equal(rf_source_validator(s, got, 10), 0);
	assert_string_equal(got, "");
	rf_source_close(s);
	/* the same bytes with another mtime: another version */
	struct timespec ts[2] = {{.tv_sec = 1000000000, .tv_nsec = 123456789},
	                         {.tv_sec = 1000000000, .tv_nsec = 123456789}};
	assert_int_equal(utimensat(AT_FDCWD, e->path, ts, 0), 0);
	s = open_ok(e, e->path);
	char again[RF_SOURCE_VALIDATOR_BYTES];
	assert_true(rf_source_validator(s, again, sizeof(again)) > 0);
	assert_string_not_equal(again, want);
	assert_non_null(strstr(again, ",mtime_ns=1000000000123456789"));
	rf_source_close(s);
	/* rewritten in place, size and mtime restored (cp -p, rsync --inplace
	 * -t): the ctime says it is another version */
	struct timespec pause = {0, 20000000};
	nanosleep(&pause, NULL);
	int fd = open(e->path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, e->data, 1, 0), 1);
	close(fd);
	assert_int_equal(utimensat(AT_FDCWD, e->path, ts, 0), 0);
	s = open_ok(e, e->path);
	char rewritten[RF_SOURCE_VALIDATOR_BYTES];
	assert_true(rf_source_validator(s, rewritten, sizeof(rewritten)) > 0);
	assert_non_null(strstr(rewritten, ",mtime_ns=1000000000123456789"));
	assert_string_not_equal(rewritten, again);
	rf_source_close(s);
	/* wrapped by the fault injector (where built in): the inner file's */
	rf_fetch_options opt;
	rf_fetch_options_init(&opt);
	opt.inject = "latency=1ms";
	rf_fetch *f = NULL;
	if (rf_fetch_new(e->loop, &opt, &f, NULL) < 0)
		return;
	rf_fetch_free(e->fetch);
	e->fetch = f;
	s = open_ok(e, e->path);
	assert_true(rf_source_validator(s, got, sizeof(got)) > 0);
	assert_string_equal(got, rewritten);
	rf_source_close(s);
}

static void test_inject_unavailable(void **state)
{
	env *e = *state;
	rf_fetch_options opt;
	rf_fetch_options_init(&opt);
	assert_int_equal(opt.retries, 5);
	opt.inject = "latency=10ms";
	rf_fetch *f = NULL;
	rf_error err = {0};
	int rc = rf_fetch_new(e->loop, &opt, &f, &err);
	if (rc == 0) { /* a fault injector is built in */
		rf_fetch_free(f);
		return;
	}
	assert_int_equal(rc, -ENOTSUP);
	assert_non_null(strstr(err.msg, "inject"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_read_ranges, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_short_read_then_eof, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_close_in_flight, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_more_sources_than_descriptors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_direct_io, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_inject_unavailable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_validator_local, setup, teardown),
	};
	return rf_test_run_group(tests, NULL, NULL);
}
