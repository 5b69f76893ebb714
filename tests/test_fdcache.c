/* test_fdcache.c - the bounded descriptor set of the file source: at most
 * files_max descriptors open, the least recently used idle one closed first,
 * busy ones never closed (-EAGAIN instead), errors naming the path. */
#include "fdcache.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct env {
	char *dir;
	char path[4][600];
	rf_fd_slot slot[4];
	rf_fdcache *c;
	char msg[700];
} env;

static int setup(void **state)
{
	env *e = calloc(1, sizeof(*e));
	e->dir = rf_test_tmpdir("fdcache");
	for (int i = 0; i < 4; i++) {
		snprintf(e->path[i], sizeof(e->path[i]), "%s/f%d", e->dir, i);
		assert_int_equal(rf_test_write_file(e->path[i], "abcd", 4), 0);
		rf_fd_slot_init(&e->slot[i]);
	}
	assert_int_equal(rf_fdcache_new(2, &e->c), 0);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	env *e = *state;
	for (int i = 0; i < 4; i++)
		rf_fdcache_drop(e->c, &e->slot[i]);
	rf_fdcache_free(e->c);
	rf_test_rmtree(e->dir);
	free(e->dir);
	free(e);
	return 0;
}

static int acquire(env *e, int i)
{
	return rf_fdcache_acquire(e->c, &e->slot[i], e->path[i], false, e->msg, sizeof(e->msg));
}

static int acquire_direct(env *e, int i)
{
	return rf_fdcache_acquire(e->c, &e->slot[i], e->path[i], true, e->msg, sizeof(e->msg));
}

static rf_fdcache_counters counters(env *e)
{
	rf_fdcache_counters k;
	rf_fdcache_counters_get(e->c, &k);
	return k;
}

static void test_lru_eviction(void **state)
{
	env *e = *state;
	int a = acquire(e, 0);
	assert_true(a >= 0);
	char b4[4];
	assert_int_equal(pread(a, b4, 4, 0), 4);
	rf_fdcache_release(e->c, &e->slot[0]);
	assert_true(acquire(e, 1) >= 0);
	rf_fdcache_release(e->c, &e->slot[1]);
	/* 0 is idle and open: acquired again without an open */
	assert_int_equal(acquire(e, 0), a);
	rf_fdcache_release(e->c, &e->slot[0]);
	assert_int_equal(counters(e).opens, 2);
	/* full: the third file closes the least recently used (1, not 0) */
	assert_true(acquire(e, 2) >= 0);
	rf_fdcache_release(e->c, &e->slot[2]);
	rf_fdcache_counters k = counters(e);
	assert_int_equal(k.open_now, 2);
	assert_int_equal(k.evictions, 1);
	assert_int_equal(e->slot[1].fd, -1);
	assert_int_equal(e->slot[0].fd, a);
	assert_true(k.open_max <= 2);
}

static void test_busy_is_never_closed(void **state)
{
	env *e = *state;
	int a = acquire(e, 0), b = acquire(e, 1);
	assert_true(a >= 0 && b >= 0);
	/* both have reads in flight: the third waits */
	assert_int_equal(acquire(e, 2), -EAGAIN);
	assert_int_equal(counters(e).open_now, 2);
	/* a second read of an open file needs no new descriptor */
	assert_int_equal(acquire(e, 0), a);
	rf_fdcache_release(e->c, &e->slot[0]);
	assert_int_equal(acquire(e, 2), -EAGAIN); /* 0 still has one read */
	rf_fdcache_release(e->c, &e->slot[0]);
	int c = acquire(e, 2);
	assert_true(c >= 0);
	assert_int_equal(e->slot[0].fd, -1);
	assert_int_equal(e->slot[1].fd, b);
	/* a busy slot dropped (its source closed) gives its room back */
	rf_fdcache_drop(e->c, &e->slot[1]);
	assert_int_equal(counters(e).open_now, 1);
	assert_true(acquire(e, 3) >= 0);
}

static void test_errors_name_the_path(void **state)
{
	env *e = *state;
	rf_fd_slot s;
	rf_fd_slot_init(&s);
	char missing[700];
	snprintf(missing, sizeof(missing), "%s/none", e->dir);
	assert_int_equal(rf_fdcache_acquire(e->c, &s, missing, false, e->msg, sizeof(e->msg)),
	                 -ENOENT);
	assert_non_null(strstr(e->msg, missing));
	assert_int_equal(counters(e).open_now, 0);
	assert_int_equal(s.fd, -1);
}

/* The process is out of descriptors (a low RLIMIT_NOFILE): with one of ours
 * busy the answer is wait, with none it is the error. */
static void test_process_limit(void **state)
{
	env *e = *state;
	rf_fdcache_free(e->c);
	assert_int_equal(rf_fdcache_new(64, &e->c), 0);
	assert_true(acquire(e, 0) >= 0);
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	int fill[1024], n = 0;
	while (n < 1024 && (fill[n] = open(e->path[3], O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	low = old;
	low.rlim_cur = (rlim_t)fill[n - 1] + 1; /* nothing above the last fd */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(acquire(e, 1), -EAGAIN);
	rf_fdcache_release(e->c, &e->slot[0]);
	/* idle: closed to make room, so the open succeeds */
	assert_true(acquire(e, 1) >= 0);
	rf_fdcache_release(e->c, &e->slot[1]);
	rf_fdcache_drop(e->c, &e->slot[1]);
	/* the dropped descriptor is taken by a plain open: none left, none of ours */
	int extra = open(e->path[3], O_RDONLY | O_CLOEXEC);
	assert_true(extra >= 0);
	int rc = acquire(e, 2);
	assert_true(rc == -EMFILE || rc == -ENFILE);
	assert_non_null(strstr(e->msg, e->path[2]));
	close(extra);
	while (n > 0)
		close(fill[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

/* A filesystem that refuses O_DIRECT at open (tmpfs before Linux 6.6). */
static int open_refusing_direct(const char *path, int flags)
{
	if (flags & O_DIRECT)
		return -EINVAL;
	int fd = open(path, flags);
	return fd >= 0 ? fd : -errno;
}

/* stderr into a file while the refusals happen: the first is said, naming
 * the file and its filesystem, the second only counted. */
static void refusals_said_once(env *e)
{
	char log[700];
	snprintf(log, sizeof(log), "%s/stderr.txt", e->dir);
	fflush(stderr);
	int saved = dup(2), lf = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(saved >= 0 && lf >= 0);
	assert_true(dup2(lf, 2) >= 0);
	close(lf);
	for (int i = 2; i < 4; i++) {
		assert_true(acquire_direct(e, i) >= 0);
		assert_false(e->slot[i].direct);
		rf_fdcache_release(e->c, &e->slot[i]);
	}
	fflush(stderr);
	assert_true(dup2(saved, 2) >= 0);
	close(saved);
	char text[2000] = {0};
	FILE *f = fopen(log, "r");
	assert_non_null(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	char *first = strstr(text, "refused O_DIRECT");
	assert_non_null(first);
	assert_null(strstr(first + 1, "refused O_DIRECT"));
	assert_non_null(strstr(text, e->path[2]));
	assert_null(strstr(text, e->path[3]));
	assert_non_null(strchr(text, '('));
}

static void test_direct_refused_falls_back(void **state)
{
	env *e = *state;
	rf_fdcache_set_open(e->c, open_refusing_direct);
	refusals_said_once(e);
	for (int i = 2; i < 4; i++)
		rf_fdcache_drop(e->c, &e->slot[i]);
	int fd = rf_fdcache_acquire(e->c, &e->slot[0], e->path[0], true, e->msg, sizeof(e->msg));
	assert_true(fd >= 0);
	assert_false(e->slot[0].direct);
	char b4[4];
	assert_int_equal(pread(fd, b4, 4, 0), 4);
	assert_memory_equal(b4, "abcd", 4);
	rf_fdcache_release(e->c, &e->slot[0]);
	/* idle and refused: not opened again for each read */
	assert_int_equal(
	    rf_fdcache_acquire(e->c, &e->slot[0], e->path[0], true, e->msg, sizeof(e->msg)), fd);
	rf_fdcache_release(e->c, &e->slot[0]);
	rf_fdcache_counters k = counters(e);
	assert_int_equal(k.direct_refused, 3);
	assert_int_equal(k.opens, 3);
	/* a real open(2) with O_DIRECT where the filesystem allows it */
	rf_fdcache_set_open(e->c, NULL);
	int probe = open(e->path[1], O_RDONLY | O_DIRECT);
	if (probe >= 0) {
		close(probe);
		assert_true(acquire_direct(e, 1) >= 0);
		assert_true(e->slot[1].direct);
		rf_fdcache_release(e->c, &e->slot[1]);
	}
}

static void test_default_size(void **state)
{
	(void)state;
	rf_fdcache *c = NULL;
	assert_int_equal(rf_fdcache_new(0, &c), 0);
	rf_fdcache_counters k;
	rf_fdcache_counters_get(c, &k);
	assert_true(k.files_max >= 4 && k.files_max <= RF_FDCACHE_FILES_MAX);
	rf_fdcache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lru_eviction, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_busy_is_never_closed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_errors_name_the_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_process_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_direct_refused_falls_back, setup, teardown),
	    cmocka_unit_test(test_default_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
