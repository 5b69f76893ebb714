/* loop.c - the io_uring event loop (see loop.h): a fixed table of op slots
 * with generations, an eventfd for cross-thread wake-ups, timers as
 * IORING_OP_TIMEOUT, and one function (rf_loop_run_once) that submits, waits
 * and dispatches.
 *
 * Slot life: FREE -> LIVE (SQE prepared, callback wanted) -> FREE when its CQE
 * is dispatched. A cancel turns LIVE into ZOMBIE: the callback is dropped at
 * once, but the slot stays taken until the kernel's CQE for it arrives, so
 * rf_loop_pending() counts every request the kernel may still be working on
 * (a cancelled read may still write its buffer until then) and rf_loop_free()
 * can drain them all before the ring goes away. */
#include "loop.h"
#include "util.h"

#include <liburing.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RF_LOOP_SQ_ENTRIES 1024
#define RF_LOOP_CQ_ENTRIES 8192
#define RF_LOOP_CQE_BATCH  64
/* user_data slot numbers outside the table: */
#define RF_LOOP_SLOT_WAKE   0xfffffff0u /* the eventfd read */
#define RF_LOOP_SLOT_CANCEL 0xfffffff1u /* an ASYNC_CANCEL request itself */
#define RF_LOOP_DRAIN_NS    (10ull * 1000000000ull)

enum rf_op_state { RF_OP_FREE = 0, RF_OP_LIVE, RF_OP_ZOMBIE };
enum rf_op_kind { RF_OP_READ = 1, RF_OP_POLL, RF_OP_TIMER };

typedef struct rf_loop_region {
	uintptr_t base; /* 0: free */
	size_t len;
} rf_loop_region;

typedef struct rf_loop_op {
	uint32_t gen;
	uint8_t state; /* enum rf_op_state */
	uint8_t kind;  /* enum rf_op_kind */
	rf_loop_cb cb;
	void *arg;
	struct __kernel_timespec ts; /* timers: read by the kernel at submit time */
} rf_loop_op;

struct rf_loop {
	struct io_uring ring;
	bool enabled; /* ring created IORING_SETUP_R_DISABLED until the loop thread enables it */
	bool wake_armed;
	bool closing; /* rf_loop_free is draining: do not re-arm the wake read */
	int efd;
	uint64_t efd_value;
	unsigned pending; /* slots LIVE or ZOMBIE */
	unsigned nfree;
	uint32_t ops_max;           /* table size, fixed at rf_loop_new_sized */
	uint32_t *free_slots;       /* ops_max */
	rf_loop_op *ops;            /* ops_max */
	rf_loop_deferred *deferred; /* freed after the drain in rf_loop_free */
	bool regions_table;         /* the sparse table of registered buffers exists */
	uint32_t regions_used;
	rf_loop_region regions[RF_LOOP_REGIONS_MAX]; /* index = the kernel's buffer index */
};

/* Generations use 31 bits so an id is a non-negative int64_t equal to the
 * SQE's user_data. */
static int64_t rf_loop_id(uint32_t gen, uint32_t slot)
{
	return (int64_t)((uint64_t)gen << 32 | slot);
}

static uint64_t rf_loop_udata(uint32_t gen, uint32_t slot)
{
	return (uint64_t)gen << 32 | slot;
}

/* Creates the ring. Preferred: one issuer with deferred task work (completions
 * are processed only when the loop thread waits: no IPIs, no surprises); the
 * ring starts disabled so whichever thread runs the loop becomes its issuer. */
static int rf_loop_ring_init(rf_loop *loop, rf_error *err)
{
	struct io_uring_params p = {0};
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
	          IORING_SETUP_R_DISABLED;
	p.cq_entries = RF_LOOP_CQ_ENTRIES;
	int rc = io_uring_queue_init_params(RF_LOOP_SQ_ENTRIES, &loop->ring, &p);
	if (rc == 0)
		return 0;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = RF_LOOP_CQ_ENTRIES;
	rc = io_uring_queue_init_params(RF_LOOP_SQ_ENTRIES, &loop->ring, &p);
	if (rc < 0)
		return rf_fail(err, rc, "io_uring_queue_init: %s", strerror(-rc));
	loop->enabled = true;
	return 0;
}

static int rf_loop_enable(rf_loop *loop)
{
	if (loop->enabled)
		return 0;
	/* liburing 2.3 declares io_uring_enable_rings but does not export it. */
	long rc = syscall(__NR_io_uring_register, loop->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS,
	                  NULL, 0);
	if (rc < 0)
		return -errno;
	loop->enabled = true;
	return 0;
}

/* An SQE, flushing the submission queue when it is full. */
static struct io_uring_sqe *rf_loop_sqe(rf_loop *loop)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&loop->ring);
	if (sqe)
		return sqe;
	if (rf_loop_enable(loop) < 0 || io_uring_submit(&loop->ring) < 0)
		return NULL;
	return io_uring_get_sqe(&loop->ring);
}

static void rf_loop_arm_wake(rf_loop *loop)
{
	if (loop->wake_armed || loop->closing)
		return;
	struct io_uring_sqe *sqe = rf_loop_sqe(loop);
	if (!sqe)
		return; /* retried at the next run_once */
	io_uring_prep_read(sqe, loop->efd, &loop->efd_value, sizeof(loop->efd_value), 0);
	io_uring_sqe_set_data64(sqe, rf_loop_udata(0, RF_LOOP_SLOT_WAKE));
	loop->wake_armed = true;
}

static void rf_loop_free_table(rf_loop *loop)
{
	free(loop->ops);
	free(loop->free_slots);
	free(loop);
}

int rf_loop_new_sized(rf_loop **out, uint32_t ops_max, rf_error *err)
{
	*out = NULL;
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
	int rc = rf_loop_ring_init(loop, err);
	if (rc < 0) {
		rf_loop_free_table(loop);
		return rc;
	}
	loop->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (loop->efd < 0) {
		rc = -errno;
		io_uring_queue_exit(&loop->ring);
		rf_loop_free_table(loop);
		return rf_fail(err, rc, "eventfd: %s", strerror(-rc));
	}
	for (uint32_t i = 0; i < ops_max; i++)
		loop->free_slots[i] = ops_max - 1 - i;
	loop->nfree = ops_max;
	rf_loop_arm_wake(loop);
	*out = loop;
	return 0;
}

int rf_loop_new(rf_loop **out, rf_error *err)
{
	return rf_loop_new_sized(out, RF_LOOP_OPS_MAX, err);
}

/* Takes a slot and an SQE for a new op; returns the slot or -EAGAIN. */
static int64_t rf_loop_take(rf_loop *loop, uint8_t kind, rf_loop_cb cb, void *arg,
                            struct io_uring_sqe **sqe)
{
	if (loop->nfree == 0)
		return -EAGAIN;
	*sqe = rf_loop_sqe(loop);
	if (!*sqe)
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

static int64_t rf_loop_commit(rf_loop *loop, uint32_t slot, struct io_uring_sqe *sqe)
{
	uint32_t gen = loop->ops[slot].gen;
	io_uring_sqe_set_data64(sqe, rf_loop_udata(gen, slot));
	return rf_loop_id(gen, slot);
}

int64_t rf_loop_read(rf_loop *loop, int fd, void *buf, uint32_t len, uint64_t offset, rf_loop_cb cb,
                     void *arg)
{
	struct io_uring_sqe *sqe;
	int64_t slot = rf_loop_take(loop, RF_OP_READ, cb, arg, &sqe);
	if (slot < 0)
		return slot;
	io_uring_prep_read(sqe, fd, buf, len, offset);
	return rf_loop_commit(loop, (uint32_t)slot, sqe);
}

int64_t rf_loop_read_fixed(rf_loop *loop, int fd, void *buf, uint32_t len, uint64_t offset,
                           int index, rf_loop_cb cb, void *arg)
{
	struct io_uring_sqe *sqe;
	int64_t slot = rf_loop_take(loop, RF_OP_READ, cb, arg, &sqe);
	if (slot < 0)
		return slot;
	io_uring_prep_read_fixed(sqe, fd, buf, len, offset, index);
	return rf_loop_commit(loop, (uint32_t)slot, sqe);
}

/* Sets the kernel's buffer `index` to iov (an empty iovec clears it). */
static int rf_loop_region_update(rf_loop *loop, unsigned index, void *base, size_t len)
{
	struct iovec iov = {.iov_base = base, .iov_len = len};
	__u64 tag = 0;
	int rc = io_uring_register_buffers_update_tag(&loop->ring, index, &iov, &tag, 1);
	return rc < 0 ? rc : 0;
}

int rf_loop_region_add(rf_loop *loop, void *base, size_t len)
{
	if (!base || len == 0 || len > RF_LOOP_REGION_BYTES_MAX)
		return -EINVAL;
	if (loop->regions_used == RF_LOOP_REGIONS_MAX)
		return -ENOSPC;
	int rc = rf_loop_enable(loop); /* registration needs a live ring: this thread's */
	if (rc < 0)
		return rc;
	if (!loop->regions_table) {
		rc = io_uring_register_buffers_sparse(&loop->ring, RF_LOOP_REGIONS_MAX);
		if (rc < 0)
			return rc;
		loop->regions_table = true;
	}
	unsigned i = 0;
	while (loop->regions[i].base)
		i++;
	rc = rf_loop_region_update(loop, i, base, len);
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
		(void)rf_loop_region_update(loop, i, NULL, 0);
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

int64_t rf_loop_poll(rf_loop *loop, int fd, uint32_t mask, rf_loop_cb cb, void *arg)
{
	struct io_uring_sqe *sqe;
	int64_t slot = rf_loop_take(loop, RF_OP_POLL, cb, arg, &sqe);
	if (slot < 0)
		return slot;
	io_uring_prep_poll_add(sqe, fd, mask);
	return rf_loop_commit(loop, (uint32_t)slot, sqe);
}

int64_t rf_loop_timer(rf_loop *loop, uint64_t delay_ns, rf_loop_cb cb, void *arg)
{
	struct io_uring_sqe *sqe;
	int64_t slot = rf_loop_take(loop, RF_OP_TIMER, cb, arg, &sqe);
	if (slot < 0)
		return slot;
	rf_loop_op *op = &loop->ops[slot];
	op->ts.tv_sec = (long long)(delay_ns / 1000000000ull);
	op->ts.tv_nsec = (long long)(delay_ns % 1000000000ull);
	io_uring_prep_timeout(sqe, &op->ts, 0, 0);
	return rf_loop_commit(loop, (uint32_t)slot, sqe);
}

/* Asks the kernel to cancel the request with this user_data (best effort:
 * the op is a zombie either way and its CQE frees the slot). */
static void rf_loop_submit_cancel(rf_loop *loop, uint64_t udata)
{
	struct io_uring_sqe *sqe = rf_loop_sqe(loop);
	if (!sqe)
		return;
	io_uring_prep_cancel64(sqe, udata, 0);
	io_uring_sqe_set_data64(sqe, rf_loop_udata(0, RF_LOOP_SLOT_CANCEL));
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
	rf_loop_submit_cancel(loop, rf_loop_udata(op->gen, slot));
}

/* Handles one completion. The slot is freed before the callback runs so the
 * callback may issue new ops (even into the same slot, with a new generation). */
static int rf_loop_dispatch(rf_loop *loop, uint64_t udata, int res)
{
	uint32_t slot = (uint32_t)udata;
	uint32_t gen = (uint32_t)(udata >> 32);
	if (slot == RF_LOOP_SLOT_WAKE) {
		loop->wake_armed = false;
		rf_loop_arm_wake(loop);
		return 0;
	}
	if (slot >= loop->ops_max)
		return 0; /* cancel requests, liburing's own timeout */
	rf_loop_op *op = &loop->ops[slot];
	if (op->state == RF_OP_FREE || op->gen != gen)
		return 0; /* stale: not ours any more */
	bool live = op->state == RF_OP_LIVE;
	rf_loop_cb cb = op->cb;
	void *arg = op->arg;
	uint8_t kind = op->kind;
	op->state = RF_OP_FREE;
	op->cb = NULL;
	op->arg = NULL;
	loop->free_slots[loop->nfree++] = slot;
	loop->pending--;
	if (!live || !cb)
		return 0; /* cancelled: its owner no longer wants it */
	if (kind == RF_OP_TIMER && res == -ETIME)
		res = 0;
	cb(arg, res);
	return 1;
}

int rf_loop_run_once(rf_loop *loop, uint64_t max_wait_ns)
{
	int rc = rf_loop_enable(loop);
	if (rc < 0)
		return rc;
	rf_loop_arm_wake(loop);
	struct __kernel_timespec ts = {
	    .tv_sec = (long long)(max_wait_ns / 1000000000ull),
	    .tv_nsec = (long long)(max_wait_ns % 1000000000ull),
	};
	struct io_uring_cqe *cqe = NULL;
	rc = io_uring_submit_and_wait_timeout(&loop->ring, &cqe, 1, &ts, NULL);
	if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN)
		return rc;
	int handled = 0;
	struct io_uring_cqe *batch[RF_LOOP_CQE_BATCH];
	unsigned n;
	while ((n = io_uring_peek_batch_cqe(&loop->ring, batch, RF_LOOP_CQE_BATCH)) > 0) {
		uint64_t udata[RF_LOOP_CQE_BATCH];
		int res[RF_LOOP_CQE_BATCH];
		for (unsigned i = 0; i < n; i++) {
			udata[i] = batch[i]->user_data;
			res[i] = batch[i]->res;
		}
		io_uring_cq_advance(&loop->ring, n);
		for (unsigned i = 0; i < n; i++)
			handled += rf_loop_dispatch(loop, udata[i], res[i]);
	}
	return handled;
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
	uint64_t one = 1;
	/* EAGAIN means the counter is already non-zero: a wake-up is pending. */
	ssize_t w = write(loop->efd, &one, sizeof(one));
	(void)w;
}

unsigned rf_loop_pending(const rf_loop *loop)
{
	return loop->pending;
}

uint32_t rf_loop_ops_max(const rf_loop *loop)
{
	return loop->ops_max;
}

void rf_loop_free(rf_loop *loop)
{
	if (!loop)
		return;
	for (uint32_t s = 0; s < loop->ops_max; s++)
		if (loop->ops[s].state == RF_OP_LIVE)
			rf_loop_cancel(loop, rf_loop_id(loop->ops[s].gen, s));
	loop->closing = true;
	if (loop->wake_armed)
		rf_loop_submit_cancel(loop, rf_loop_udata(0, RF_LOOP_SLOT_WAKE));
	/* Drain: a cancelled read may still be writing its buffer; wait for every
	 * CQE (bounded: a request the kernel cannot finish is abandoned). */
	uint64_t deadline = rf_now_ns() + RF_LOOP_DRAIN_NS;
	while ((loop->pending > 0 || loop->wake_armed) && loop->enabled && rf_now_ns() < deadline) {
		if (rf_loop_run_once(loop, 50000000ull) < 0)
			break;
	}
	io_uring_queue_exit(&loop->ring);
	close(loop->efd);
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
