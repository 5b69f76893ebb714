/* loop_epoll.c - the epoll backend of the event loop (see loop_int.h), for
 * where io_uring is blocked: polls are one-shot epoll registrations (added
 * when armed, removed when they fire or are cancelled), timers a binary heap
 * of deadlines that bounds epoll_wait's timeout, file reads go to the pread
 * threads of loop_pool.c, reads at an fd's position (pipes) are read when
 * epoll says readable, and an eventfd wakes the loop for both the pool's
 * completions and rf_loop_wake. Completions the backend makes itself (a
 * cancel, a poll on an fd epoll cannot watch) wait in a ready queue for the
 * next run_once, so no callback runs inside the call that issued or
 * cancelled an op. Registered buffers do not exist here (-EOPNOTSUPP):
 * READ_FIXED is a plain read. */
#include "loop_int.h"
#include "util.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define RF_EPOLL_EVENTS  256
#define RF_EPOLL_BATCH   64
#define RF_EPOLL_WAKE    UINT64_MAX /* epoll data of the eventfd */
#define RF_EPOLL_NO_HEAP UINT32_MAX

typedef struct rf_epoll {
	int epfd;
	int efd;
	bool efd_registered;
	rf_loop_pool *pool;
	uint32_t heap_n;
	uint32_t *heap; /* ops_max: timer slots, earliest deadline first */
	uint32_t ready_head, ready_n;
	uint64_t *ready_udata; /* ops_max: completions for the next run_once */
	int *ready_res;
} rf_epoll;

static rf_epoll *E(rf_loop *loop)
{
	return loop->impl;
}

static void rf_epoll_release(rf_epoll *e)
{
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->efd >= 0)
		close(e->efd);
	free(e->heap);
	free(e->ready_udata);
	free(e->ready_res);
	free(e);
}

static int rf_epoll_fds(rf_epoll *e, rf_error *err)
{
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0)
		return rf_fail(err, -errno, "epoll_create1: %s", strerror(errno));
	e->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->efd < 0)
		return rf_fail(err, -errno, "eventfd: %s", strerror(errno));
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = RF_EPOLL_WAKE};
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->efd, &ev) < 0)
		return rf_fail(err, -errno, "epoll_ctl(eventfd): %s", strerror(errno));
	return 0;
}

static int rf_epoll_init(rf_loop *loop, const rf_loop_opts *opts, rf_error *err)
{
	rf_epoll *e = calloc(1, sizeof(*e));
	if (!e)
		return rf_fail(err, -ENOMEM, "out of memory for the event loop");
	e->epfd = e->efd = -1;
	e->heap = calloc(loop->ops_max, sizeof(*e->heap));
	e->ready_udata = calloc(loop->ops_max, sizeof(*e->ready_udata));
	e->ready_res = calloc(loop->ops_max, sizeof(*e->ready_res));
	int rc = !e->heap || !e->ready_udata || !e->ready_res
	             ? rf_fail(err, -ENOMEM, "out of memory for the event loop")
	             : rf_epoll_fds(e, err);
	if (rc == 0)
		rc = rf_loop_pool_new(&e->pool, loop, opts->read_threads, e->efd, err);
	if (rc < 0) {
		rf_epoll_release(e);
		return rc;
	}
	loop->impl = e;
	return 0;
}

/* A completion for the next run_once (loop thread; one per slot at most). */
static void rf_epoll_ready(rf_loop *loop, uint32_t slot, int res)
{
	rf_epoll *e = E(loop);
	uint32_t at = (e->ready_head + e->ready_n) % loop->ops_max;
	e->ready_udata[at] = rf_loop_udata(loop->ops[slot].gen, slot);
	e->ready_res[at] = res;
	e->ready_n++;
}

/* ---- the timer heap (deadline order; each op knows its place) */

static bool rf_heap_before(rf_loop *loop, uint32_t a, uint32_t b)
{
	return loop->ops[a].u.timer.deadline_ns < loop->ops[b].u.timer.deadline_ns;
}

static void rf_heap_put(rf_loop *loop, uint32_t pos, uint32_t slot)
{
	E(loop)->heap[pos] = slot;
	loop->ops[slot].u.timer.heap_pos = pos;
}

static void rf_heap_up(rf_loop *loop, uint32_t pos)
{
	uint32_t *h = E(loop)->heap, slot = h[pos];
	while (pos > 0 && rf_heap_before(loop, slot, h[(pos - 1) / 2])) {
		rf_heap_put(loop, pos, h[(pos - 1) / 2]);
		pos = (pos - 1) / 2;
	}
	rf_heap_put(loop, pos, slot);
}

static void rf_heap_down(rf_loop *loop, uint32_t pos)
{
	rf_epoll *e = E(loop);
	uint32_t slot = e->heap[pos];
	for (;;) {
		uint32_t c = 2 * pos + 1;
		if (c >= e->heap_n)
			break;
		if (c + 1 < e->heap_n && rf_heap_before(loop, e->heap[c + 1], e->heap[c]))
			c++;
		if (!rf_heap_before(loop, e->heap[c], slot))
			break;
		rf_heap_put(loop, pos, e->heap[c]);
		pos = c;
	}
	rf_heap_put(loop, pos, slot);
}

static void rf_heap_remove(rf_loop *loop, uint32_t slot)
{
	rf_epoll *e = E(loop);
	uint32_t pos = loop->ops[slot].u.timer.heap_pos;
	loop->ops[slot].u.timer.heap_pos = RF_EPOLL_NO_HEAP;
	uint32_t last = e->heap[--e->heap_n];
	if (pos == e->heap_n)
		return;
	rf_heap_put(loop, pos, last);
	rf_heap_down(loop, pos);
	rf_heap_up(loop, loop->ops[last].u.timer.heap_pos);
}

static int rf_epoll_timer(rf_loop *loop, uint32_t slot, uint64_t delay_ns)
{
	rf_epoll *e = E(loop);
	uint64_t now = rf_now_ns();
	loop->ops[slot].u.timer.deadline_ns =
	    delay_ns > UINT64_MAX - now ? UINT64_MAX : now + delay_ns;
	rf_heap_put(loop, e->heap_n++, slot);
	rf_heap_up(loop, e->heap_n - 1);
	return 0;
}

/* ---- polls and reads */

/* Registers op `slot` for events on fd (one-shot); a second poll of one fd
 * registers a dup of it (epoll keeps one registration per fd). */
static int rf_epoll_arm(rf_loop *loop, uint32_t slot, int fd, uint32_t events)
{
	rf_loop_op *op = &loop->ops[slot];
	struct epoll_event ev = {.events = events | EPOLLONESHOT,
	                         .data.u64 = rf_loop_udata(op->gen, slot)};
	op->u.poll.fd = fd;
	op->u.poll.dup = false;
	if (epoll_ctl(E(loop)->epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
		return 0;
	int rc = -errno;
	op->u.poll.fd = -1;
	if (rc != -EEXIST)
		return rc;
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d < 0)
		return -errno;
	if (epoll_ctl(E(loop)->epfd, EPOLL_CTL_ADD, d, &ev) < 0) {
		rc = -errno;
		close(d);
		return rc;
	}
	op->u.poll.fd = d;
	op->u.poll.dup = true;
	return 0;
}

static void rf_epoll_disarm(rf_loop *loop, uint32_t slot)
{
	rf_loop_op *op = &loop->ops[slot];
	(void)epoll_ctl(E(loop)->epfd, EPOLL_CTL_DEL, op->u.poll.fd, NULL);
	if (op->u.poll.dup)
		close(op->u.poll.fd);
	op->u.poll.fd = -1;
}

static int rf_epoll_poll(rf_loop *loop, uint32_t slot, int fd, uint32_t mask)
{
	loop->ops[slot].u.poll.stream = false;
	int rc = rf_epoll_arm(loop, slot, fd, mask & (POLLIN | POLLOUT | POLLPRI));
	if (rc == -EPERM) { /* a regular file: always ready, as poll(2) says */
		loop->ops[slot].u.poll.fd = -1;
		rf_epoll_ready(loop, slot, (int)(mask & (POLLIN | POLLOUT)));
		return 0;
	}
	return rc;
}

static int rf_epoll_read(rf_loop *loop, uint32_t slot, int fd, void *buf, uint32_t len,
                         uint64_t offset, int fixed)
{
	(void)fixed; /* no registered buffers here: a plain read */
	rf_loop_op *op = &loop->ops[slot];
	atomic_store_explicit(&op->cancel_gen, 0, memory_order_relaxed);
	op->u.poll.stream = false;
	op->u.poll.fd = -1;
	uint64_t udata = rf_loop_udata(op->gen, slot);
	if (offset != UINT64_MAX)
		return rf_loop_pool_submit(E(loop)->pool, udata, fd, buf, len, offset);
	/* At the fd's position (a pipe): read once epoll says it is readable. */
	op->u.poll.stream = true;
	op->u.poll.buf = buf;
	op->u.poll.len = len;
	int rc = rf_epoll_arm(loop, slot, fd, EPOLLIN);
	if (rc == -EPERM) { /* a regular file: never blocks */
		op->u.poll.stream = false;
		rc = rf_loop_pool_submit(E(loop)->pool, udata, fd, buf, len, offset);
	}
	return rc;
}

static bool rf_epoll_in_epoll(const rf_loop_op *op)
{
	return op->kind != RF_OP_TIMER && op->u.poll.fd >= 0 &&
	       (op->kind == RF_OP_POLL || op->u.poll.stream);
}

static void rf_epoll_cancel(rf_loop *loop, uint32_t slot)
{
	rf_loop_op *op = &loop->ops[slot];
	if (op->kind == RF_OP_TIMER) {
		rf_heap_remove(loop, slot);
		rf_epoll_ready(loop, slot, -ECANCELED);
	} else if (rf_epoll_in_epoll(op)) {
		rf_epoll_disarm(loop, slot);
		rf_epoll_ready(loop, slot, -ECANCELED);
	} else if (op->kind == RF_OP_READ) {
		/* In the pool: skipped if not started; its completion frees the slot. */
		atomic_store_explicit(&op->cancel_gen, op->gen, memory_order_relaxed);
	}
	/* else: a poll already in the ready queue, which frees the slot */
}

/* An epoll event for op udata: a poll's revents, or a stream read's bytes. */
static int rf_epoll_event(rf_loop *loop, uint64_t udata, uint32_t events)
{
	uint32_t slot = (uint32_t)udata;
	if (slot >= loop->ops_max)
		return 0;
	rf_loop_op *op = &loop->ops[slot];
	if (op->state != RF_OP_LIVE || op->gen != (uint32_t)(udata >> 32))
		return 0; /* cancelled earlier in this tick: already disarmed */
	int fd = op->u.poll.fd;
	int res = (int)(events & (POLLIN | POLLOUT | POLLPRI | POLLERR | POLLHUP));
	if (op->kind == RF_OP_READ) {
		ssize_t n;
		do
			n = read(fd, op->u.poll.buf, op->u.poll.len);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno == EAGAIN) { /* a non-blocking fd drained by another: wait on */
			struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
			                         .data.u64 = udata};
			if (epoll_ctl(E(loop)->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
				return 0;
		}
		res = n < 0 ? -errno : (int)RF_MIN((size_t)n, (size_t)INT32_MAX);
	}
	rf_epoll_disarm(loop, slot);
	return rf_loop_complete(loop, udata, res);
}

/* ---- run_once */

static int rf_epoll_timeout_ms(rf_loop *loop, uint64_t max_wait_ns)
{
	rf_epoll *e = E(loop);
	if (e->ready_n > 0 || rf_loop_pool_has_done(e->pool))
		return 0;
	uint64_t wait = max_wait_ns;
	if (e->heap_n > 0) {
		uint64_t at = loop->ops[e->heap[0]].u.timer.deadline_ns, now = rf_now_ns();
		wait = RF_MIN(wait, at > now ? at - now : 0);
	}
	if (wait >= (uint64_t)INT_MAX * 1000000ull)
		return INT_MAX;                        /* ~25 days: and no overflow rounding up */
	return (int)((wait + 999999ull) / 1000000ull); /* never early */
}

static int rf_epoll_fire_timers(rf_loop *loop)
{
	rf_epoll *e = E(loop);
	uint64_t now = rf_now_ns();
	int handled = 0;
	for (uint32_t n = 0; n < loop->ops_max && e->heap_n > 0; n++) {
		uint32_t slot = e->heap[0];
		if (loop->ops[slot].u.timer.deadline_ns > now)
			break;
		rf_heap_remove(loop, slot);
		handled += rf_loop_complete(loop, rf_loop_udata(loop->ops[slot].gen, slot), 0);
	}
	return handled;
}

static int rf_epoll_pool_done(rf_loop *loop)
{
	uint64_t udata[RF_EPOLL_BATCH];
	int res[RF_EPOLL_BATCH];
	int handled = 0;
	for (uint32_t total = 0; total < loop->ops_max;) {
		uint32_t n = rf_loop_pool_take(E(loop)->pool, udata, res, RF_EPOLL_BATCH);
		if (n == 0)
			break;
		for (uint32_t i = 0; i < n; i++)
			handled += rf_loop_complete(loop, udata[i], res[i]);
		total += n;
	}
	return handled;
}

/* The ready queue as it stands (callbacks may add to it: next tick). */
static int rf_epoll_ready_done(rf_loop *loop)
{
	rf_epoll *e = E(loop);
	int handled = 0;
	for (uint32_t n = e->ready_n; n > 0; n--) {
		uint64_t udata = e->ready_udata[e->ready_head];
		int res = e->ready_res[e->ready_head];
		e->ready_head = (e->ready_head + 1) % loop->ops_max;
		e->ready_n--;
		handled += rf_loop_complete(loop, udata, res);
	}
	return handled;
}

static int rf_epoll_run_once(rf_loop *loop, uint64_t max_wait_ns)
{
	rf_epoll *e = E(loop);
	struct epoll_event ev[RF_EPOLL_EVENTS];
	int n = epoll_wait(e->epfd, ev, RF_EPOLL_EVENTS, rf_epoll_timeout_ms(loop, max_wait_ns));
	if (n < 0 && errno != EINTR)
		return -errno;
	int handled = 0;
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u64 == RF_EPOLL_WAKE) {
			uint64_t v;
			ssize_t r =
			    read(e->efd, &v, sizeof(v)); /* before the pool's queue: no lost wake */
			(void)r;
			continue;
		}
		handled += rf_epoll_event(loop, ev[i].data.u64, ev[i].events);
	}
	handled += rf_epoll_pool_done(loop);
	handled += rf_epoll_fire_timers(loop);
	handled += rf_epoll_ready_done(loop);
	return handled;
}

static int rf_epoll_region_set(rf_loop *loop, unsigned index, void *base, size_t len)
{
	(void)loop, (void)index, (void)len;
	return base ? -EOPNOTSUPP : 0;
}

static void rf_epoll_wake(rf_loop *loop)
{
	uint64_t one = 1;
	/* EAGAIN means the counter is already non-zero: a wake-up is pending. */
	ssize_t w = write(E(loop)->efd, &one, sizeof(one));
	(void)w;
}

static bool rf_epoll_busy(rf_loop *loop)
{
	return loop->pending > 0;
}

static void rf_epoll_fini(rf_loop *loop)
{
	rf_epoll *e = E(loop);
	rf_loop_drain(loop, rf_epoll_busy);
	bool running = loop->pending > 0;
	rf_loop_pool_free(e->pool, running);
	if (running)
		e->efd = -1; /* a read still running may write it: left open */
	rf_epoll_release(e);
	loop->impl = NULL;
}

const rf_loop_backend_ops rf_loop_epoll_ops = {
    .id = RF_LOOP_EPOLL,
    .init = rf_epoll_init,
    .read = rf_epoll_read,
    .poll = rf_epoll_poll,
    .timer = rf_epoll_timer,
    .cancel = rf_epoll_cancel,
    .run_once = rf_epoll_run_once,
    .region_set = rf_epoll_region_set,
    .wake = rf_epoll_wake,
    .fini = rf_epoll_fini,
};
