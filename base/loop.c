/* loop.c - the event loop's common half (see loop.h): the fixed table of op
 * slots with generations, ids, cancellation, dispatch, registered-region
 * bookkeeping, rf_loop_drive, and the choice of backend (loop_uring.c or
 * loop_epoll.c, through rf_loop_backend_ops).
 *
 * Slot life: FREE -> LIVE (issued, callback wanted) -> FREE when its
 * completion is dispatched. A cancel turns LIVE into ZOMBIE: the callback is
 * dropped at once, but the slot stays taken until the backend's completion
 * for it arrives, so rf_loop_pending() counts every request that may still
 * be working (a cancelled read may still write its buffer until then) and
 * rf_loop_free() can drain them all before the backend goes away. */
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

static void rf_loop_free_table(rf_loop *loop)
{
	free(loop->ops);
	free(loop->free_slots);
	free(loop);
}

static int rf_loop_alloc(rf_loop **out, uint32_t ops_max, rf_error *err)
{
	if (ops_max == 0 || ops_max > RF_LOOP_OPS_LIMIT)
		return rf_fail(err, -EINVAL, "event loop: %u op slots is outside 1..%u", ops_max,
		               RF_LOOP_OPS_LIMIT);
	rf_loop *loop = calloc(1, sizeof(*loop));
	if (loop) {
		loop->ops = calloc(ops_max, sizeof(*loop->ops));
		loop->free_slots = calloc(ops_max, sizeof(*loop->free_slots));
	}
	if (!loop || !loop->ops || !loop->free_slots) {
		if (loop)
			rf_loop_free_table(loop);
		return rf_fail(err, -ENOMEM, "out of memory for the event loop");
	}
	loop->ops_max = ops_max;
	for (uint32_t i = 0; i < ops_max; i++)
		loop->free_slots[i] = ops_max - 1 - i;
	loop->nfree = ops_max;
	*out = loop;
	return 0;
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

/* Takes a slot for a new op; returns the slot or -EAGAIN. */
static int64_t rf_loop_take(rf_loop *loop, uint8_t kind, rf_loop_cb cb, void *arg)
{
	if (loop->nfree == 0)
		return -EAGAIN;
	uint32_t slot = loop->free_slots[--loop->nfree];
	rf_loop_op *op = &loop->ops[slot];
	op->gen = (op->gen + 1) & 0x7fffffffu;
	op->state = RF_OP_LIVE;
	op->kind = kind;
	op->cb = cb;
	op->arg = arg;
	loop->pending++;
	return slot;
}

static void rf_loop_release(rf_loop *loop, uint32_t slot)
{
	rf_loop_op *op = &loop->ops[slot];
	op->state = RF_OP_FREE;
	op->cb = NULL;
	op->arg = NULL;
	loop->free_slots[loop->nfree++] = slot;
	loop->pending--;
}

/* The op's id once the backend took it (rc 0), else the slot back and rc. */
static int64_t rf_loop_issued(rf_loop *loop, uint32_t slot, int rc)
{
	if (rc < 0) {
		rf_loop_release(loop, slot);
		return rc;
	}
	return (int64_t)rf_loop_udata(loop->ops[slot].gen, slot);
}

static int64_t rf_loop_read_any(rf_loop *loop, int fd, void *buf, uint32_t len, uint64_t offset,
                                int index, rf_loop_cb cb, void *arg)
{
	int64_t slot = rf_loop_take(loop, RF_OP_READ, cb, arg);
	if (slot < 0)
		return slot;
	int rc = loop->be->read(loop, (uint32_t)slot, fd, buf, len, offset, index);
	return rf_loop_issued(loop, (uint32_t)slot, rc);
}

int64_t rf_loop_read(rf_loop *loop, int fd, void *buf, uint32_t len, uint64_t offset, rf_loop_cb cb,
                     void *arg)
{
	return rf_loop_read_any(loop, fd, buf, len, offset, -1, cb, arg);
}

int64_t rf_loop_read_fixed(rf_loop *loop, int fd, void *buf, uint32_t len, uint64_t offset,
                           int index, rf_loop_cb cb, void *arg)
{
	return rf_loop_read_any(loop, fd, buf, len, offset, index, cb, arg);
}

int64_t rf_loop_poll(rf_loop *loop, int fd, uint32_t mask, rf_loop_cb cb, void *arg)
{
	int64_t slot = rf_loop_take(loop, RF_OP_POLL, cb, arg);
	if (slot < 0)
		return slot;
	return rf_loop_issued(loop, (uint32_t)slot, loop->be->poll(loop, (uint32_t)slot, fd, mask));
}

int64_t rf_loop_timer(rf_loop *loop, uint64_t delay_ns, rf_loop_cb cb, void *arg)
{
	int64_t slot = rf_loop_take(loop, RF_OP_TIMER, cb, arg);
	if (slot < 0)
		return slot;
	int rc = loop->be->timer(loop, (uint32_t)slot, delay_ns);
	return rf_loop_issued(loop, (uint32_t)slot, rc);
}

void rf_loop_cancel(rf_loop *loop, int64_t id)
{
	if (id < 0)
		return;
	uint32_t slot = (uint32_t)id;
	uint32_t gen = (uint32_t)((uint64_t)id >> 32);
	if (slot >= loop->ops_max)
		return;
	rf_loop_op *op = &loop->ops[slot];
	if (op->state != RF_OP_LIVE || op->gen != gen)
		return;
	op->state = RF_OP_ZOMBIE;
	op->cb = NULL;
	op->arg = NULL;
	loop->be->cancel(loop, slot);
}

/* The slot is freed before the callback runs so the callback may issue new
 * ops (even into the same slot, with a new generation). */
int rf_loop_complete(rf_loop *loop, uint64_t udata, int res)
{
	uint32_t slot = (uint32_t)udata;
	uint32_t gen = (uint32_t)(udata >> 32);
	if (slot >= loop->ops_max)
		return 0;
	rf_loop_op *op = &loop->ops[slot];
	if (op->state == RF_OP_FREE || op->gen != gen)
		return 0; /* stale: not ours any more */
	bool live = op->state == RF_OP_LIVE;
	rf_loop_cb cb = op->cb;
	void *arg = op->arg;
	uint8_t kind = op->kind;
	rf_loop_release(loop, slot);
	if (!live || !cb)
		return 0; /* cancelled: its owner no longer wants it */
	if (kind == RF_OP_TIMER && res == -ETIME)
		res = 0;
	cb(arg, res);
	return 1;
}

int rf_loop_region_add(rf_loop *loop, void *base, size_t len)
{
	if (!base || len == 0 || len > RF_LOOP_REGION_BYTES_MAX)
		return -EINVAL;
	if (loop->regions_used == RF_LOOP_REGIONS_MAX)
		return -ENOSPC;
	unsigned i = 0;
	while (loop->regions[i].base)
		i++;
	int rc = loop->be->region_set(loop, i, base, len);
	if (rc < 0)
		return rc;
	loop->regions[i] = (rf_loop_region){.base = (uintptr_t)base, .len = len};
	loop->regions_used++;
	return (int)i;
}

size_t rf_loop_region_remove(rf_loop *loop, const void *base)
{
	for (unsigned i = 0; base && i < RF_LOOP_REGIONS_MAX; i++) {
		if (loop->regions[i].base != (uintptr_t)base)
			continue;
		size_t len = loop->regions[i].len;
		(void)loop->be->region_set(loop, i, NULL, 0);
		loop->regions[i] = (rf_loop_region){0};
		loop->regions_used--;
		return len;
	}
	return 0;
}

int rf_loop_region_find(const rf_loop *loop, const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	for (unsigned i = 0, seen = 0; seen < loop->regions_used; i++) {
		const rf_loop_region *r = &loop->regions[i];
		if (!r->base)
			continue;
		seen++;
		if (a >= r->base && a - r->base <= r->len && len <= r->len - (a - r->base))
			return (int)i;
	}
	return -1;
}

int rf_loop_run_once(rf_loop *loop, uint64_t max_wait_ns)
{
	return loop->be->run_once(loop, max_wait_ns);
}

int rf_loop_drive(rf_loop *loop, rf_loop_until_fn until, rf_loop_before_sleep_fn before_sleep,
                  void *ctx)
{
	while (!until || !until(ctx)) {
		uint64_t wait_ns = before_sleep ? before_sleep(ctx) : RF_LOOP_DRIVE_WAIT_NS;
		if (wait_ns == RF_LOOP_STOP)
			break;
		int rc = rf_loop_run_once(loop, wait_ns);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void rf_loop_wake(rf_loop *loop)
{
	loop->be->wake(loop);
}

unsigned rf_loop_pending(const rf_loop *loop)
{
	return loop->pending;
}

uint32_t rf_loop_ops_max(const rf_loop *loop)
{
	return loop->ops_max;
}

void rf_loop_drain(rf_loop *loop, bool (*busy)(rf_loop *loop))
{
	uint64_t deadline = rf_now_ns() + RF_LOOP_DRAIN_NS;
	while (busy(loop) && rf_now_ns() < deadline) {
		if (rf_loop_run_once(loop, 50000000ull) < 0)
			break;
	}
}

void rf_loop_free(rf_loop *loop)
{
	if (!loop)
		return;
	for (uint32_t s = 0; s < loop->ops_max; s++)
		if (loop->ops[s].state == RF_OP_LIVE)
			rf_loop_cancel(loop, (int64_t)rf_loop_udata(loop->ops[s].gen, s));
	loop->closing = true;
	loop->be->fini(loop); /* drains: a cancelled read may still be writing its buffer */
	while (loop->deferred) {
		rf_loop_deferred *d = loop->deferred;
		loop->deferred = d->next;
		d->fn(d);
	}
	rf_loop_free_table(loop);
}

void rf_loop_defer(rf_loop *loop, rf_loop_deferred *node, void (*fn)(rf_loop_deferred *node))
{
	node->fn = fn;
	node->next = loop->deferred;
	loop->deferred = node;
}
