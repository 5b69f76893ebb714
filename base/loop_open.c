/* loop_open.c - a new event loop and the choice of its backend (see
 * loop.h): the backend asked for (options, $RINGFEED_IO_BACKEND, auto),
 * io_uring's refusal remembered once per process and the fall-back to
 * epoll said once, and the backends' names. It names the backends' ops
 * tables (loop_uring.c, loop_epoll.c), which call only loop.c: references
 * run one way. */
#include "loop_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* AUTO's memory, once per process: io_uring_setup's refusal (0: none seen).
 * A seccomp filter or the sysctl holds for the whole process, so later loops
 * go to epoll without asking again, and the line is said once. */
static _Atomic int rf_loop_uring_refused;
static atomic_flag rf_loop_fallback_said = ATOMIC_FLAG_INIT;

static const char *const rf_loop_backend_names[] = {"auto", "io_uring", "epoll"};

int rf_loop_backend_parse(const char *name, uint32_t *out)
{
	for (uint32_t k = 0; name && k < RF_ARRAY_LEN(rf_loop_backend_names); k++) {
		if (!strcmp(name, rf_loop_backend_names[k])) {
			*out = k;
			return 0;
		}
	}
	return -EINVAL;
}

const char *rf_loop_backend_name(uint32_t backend)
{
	return backend < RF_ARRAY_LEN(rf_loop_backend_names) ? rf_loop_backend_names[backend] : "?";
}

rf_loop_backend rf_loop_backend_of(const rf_loop *loop)
{
	return loop->be->id;
}

uint32_t rf_loop_read_threads(const rf_loop *loop)
{
	return loop->be->id == RF_LOOP_EPOLL ? loop->read_threads : 0;
}

const char *rf_loop_fallback(const rf_loop *loop)
{
	return loop->fallback;
}

/* The backend asked for: opts, else $RINGFEED_IO_BACKEND, else AUTO. */
static int rf_loop_wanted(const rf_loop_opts *o, uint32_t *backend, rf_error *err)
{
	*backend = o->backend;
	if (o->backend > RF_LOOP_EPOLL)
		return rf_fail(err, -EINVAL,
		               "event loop: backend %u is not auto, io_uring or epoll", o->backend);
	const char *env = getenv("RINGFEED_IO_BACKEND");
	if (o->backend != RF_LOOP_AUTO || !env || !*env)
		return 0;
	if (rf_loop_backend_parse(env, backend) < 0)
		return rf_fail(err, -EINVAL,
		               "RINGFEED_IO_BACKEND: '%.40s' is not auto, io_uring or epoll", env);
	return 0;
}

static bool rf_loop_blocked(int rc)
{
	return rc == -EPERM || rc == -EACCES || rc == -ENOSYS;
}

/* AUTO after io_uring_setup refused with rc: epoll, said once per process. */
static void rf_loop_fall_back(rf_loop *loop, int rc)
{
	snprintf(loop->fallback, sizeof(loop->fallback), "io_uring_setup: %s", strerror(-rc));
	int expected = 0;
	atomic_compare_exchange_strong(&rf_loop_uring_refused, &expected, rc);
	if (atomic_flag_test_and_set(&rf_loop_fallback_said))
		return;
	fprintf(stderr,
	        "ringfeed: io_uring is blocked here (%s) — a container's seccomp profile or "
	        "kernel.io_uring_disabled; using epoll + %u read threads\n",
	        loop->fallback, loop->read_threads);
}

static int rf_loop_refused(int rc, rf_error *err)
{
	return rf_fail(err, rc,
	               "io_backend io_uring: io_uring_setup: %s — io_uring is blocked here (a "
	               "container's seccomp profile or kernel.io_uring_disabled); allow "
	               "io_uring_setup, io_uring_enter and io_uring_register (docker run "
	               "--security-opt seccomp=PROFILE, Kubernetes "
	               "securityContext.seccompProfile), or sysctl kernel.io_uring_disabled=0, "
	               "or use io_backend auto",
	               strerror(-rc));
}

/* Sets loop->be and its state for the backend wanted. */
static int rf_loop_start(rf_loop *loop, const rf_loop_opts *o, uint32_t want, rf_error *err)
{
	int refused = atomic_load(&rf_loop_uring_refused);
	if (want == RF_LOOP_EPOLL || (want == RF_LOOP_AUTO && refused)) {
		if (want == RF_LOOP_AUTO)
			rf_loop_fall_back(loop, refused);
		loop->be = &rf_loop_epoll_ops;
		return loop->be->init(loop, o, err);
	}
	loop->be = &rf_loop_uring_ops;
	rf_error uerr = {0};
	int rc = loop->be->init(loop, o, &uerr);
	if (rc == 0)
		return 0;
	if (!rf_loop_blocked(rc)) {
		if (err)
			*err = uerr;
		return rc;
	}
	if (want == RF_LOOP_IO_URING)
		return rf_loop_refused(rc, err);
	rf_loop_fall_back(loop, rc);
	loop->be = &rf_loop_epoll_ops;
	return loop->be->init(loop, o, err);
}

int rf_loop_new_opts(rf_loop **out, const rf_loop_opts *opts, rf_error *err)
{
	*out = NULL;
	rf_loop_opts o = *opts;
	if (o.ops_max == 0)
		o.ops_max = RF_LOOP_OPS_MAX;
	if (o.read_threads == 0)
		o.read_threads = RF_LOOP_READ_THREADS_DEFAULT;
	if (o.read_threads > RF_LOOP_READ_THREADS_MAX)
		return rf_fail(err, -EINVAL, "event loop: %u read threads is outside 1..%u",
		               o.read_threads, RF_LOOP_READ_THREADS_MAX);
	uint32_t want;
	RF_TRY(rf_loop_wanted(&o, &want, err));
	rf_loop *loop = NULL;
	RF_TRY(rf_loop_alloc(&loop, o.ops_max, err));
	loop->read_threads = o.read_threads;
	int rc = rf_loop_start(loop, &o, want, err);
	if (rc < 0) {
		rf_loop_free_table(loop);
		return rc;
	}
	*out = loop;
	return 0;
}

int rf_loop_new_sized(rf_loop **out, uint32_t ops_max, rf_error *err)
{
	*out = NULL;
	if (ops_max == 0)
		return rf_fail(err, -EINVAL, "event loop: 0 op slots is outside 1..%u",
		               RF_LOOP_OPS_LIMIT);
	rf_loop_opts o = {.ops_max = ops_max};
	return rf_loop_new_opts(out, &o, err);
}

int rf_loop_new(rf_loop **out, rf_error *err)
{
	return rf_loop_new_sized(out, RF_LOOP_OPS_MAX, err);
}
