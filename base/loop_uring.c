/* loop_uring.c - the io_uring backend of the event loop (see loop_int.h):
 * one ring, an eventfd read for cross-thread wake-ups, timers as
 * IORING_OP_TIMEOUT, polls as IORING_OP_POLL_ADD, reads as IORING_OP_READ
 * (READ_FIXED into registered buffers), and run_once: submit, wait,
 * dispatch. An SQE's user_data is the op's id. */
#include "loop_int.h"
#include "util.h"

#include <liburing.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RF_URING_SQ_ENTRIES 1024
#define RF_URING_CQ_ENTRIES 8192
#define RF_URING_CQE_BATCH  64
/* user_data slot numbers outside the table: */
#define RF_URING_SLOT_WAKE   0xfffffff0u /* the eventfd read */
#define RF_URING_SLOT_CANCEL 0xfffffff1u /* an ASYNC_CANCEL request itself */

typedef struct rf_uring {
	struct io_uring ring;
	bool enabled; /* ring created IORING_SETUP_R_DISABLED until the loop thread enables it */
	bool wake_armed;
	bool regions_table; /* the sparse table of registered buffers exists */
	int efd;
	uint64_t efd_value;
} rf_uring;

static rf_uring *U(rf_loop *loop)
{
	return loop->impl;
}

/* Creates the ring. Preferred: one issuer with deferred task work (completions
 * are processed only when the loop thread waits: no IPIs, no surprises); the
 * ring starts disabled so whichever thread runs the loop becomes its issuer. */
static int rf_uring_ring_init(rf_uring *u, rf_error *err)
{
	struct io_uring_params p = {0};
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
	          IORING_SETUP_R_DISABLED;
	p.cq_entries = RF_URING_CQ_ENTRIES;
	int rc = io_uring_queue_init_params(RF_URING_SQ_ENTRIES, &u->ring, &p);
	if (rc == 0)
		return 0;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = RF_URING_CQ_ENTRIES;
	rc = io_uring_queue_init_params(RF_URING_SQ_ENTRIES, &u->ring, &p);
	if (rc < 0)
		return rf_fail(err, rc, "io_uring_queue_init: %s", strerror(-rc));
	u->enabled = true;
	return 0;
}

static int rf_uring_enable(rf_uring *u)
{
	if (u->enabled)
		return 0;
	/* liburing 2.3 declares io_uring_enable_rings but does not export it. */
	long rc =
	    syscall(__NR_io_uring_register, u->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (rc < 0)
		return -errno;
	u->enabled = true;
	return 0;
}

/* An SQE, flushing the submission queue when it is full. */
static struct io_uring_sqe *rf_uring_sqe(rf_uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	if (sqe)
		return sqe;
	if (rf_uring_enable(u) < 0 || io_uring_submit(&u->ring) < 0)
		return NULL;
	return io_uring_get_sqe(&u->ring);
}

static void rf_uring_arm_wake(rf_loop *loop)
{
	rf_uring *u = U(loop);
	if (u->wake_armed || loop->closing)
		return;
	struct io_uring_sqe *sqe = rf_uring_sqe(u);
	if (!sqe)
		return; /* retried at the next run_once */
	io_uring_prep_read(sqe, u->efd, &u->efd_value, sizeof(u->efd_value), 0);
	io_uring_sqe_set_data64(sqe, rf_loop_udata(0, RF_URING_SLOT_WAKE));
	u->wake_armed = true;
}

static int rf_uring_init(rf_loop *loop, const rf_loop_opts *opts, rf_error *err)
{
	(void)opts;
	rf_uring *u = calloc(1, sizeof(*u));
	if (!u)
		return rf_fail(err, -ENOMEM, "out of memory for the event loop");
	int rc = rf_uring_ring_init(u, err);
	if (rc < 0) {
		free(u);
		return rc;
	}
	u->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->efd < 0) {
		rc = -errno;
		io_uring_queue_exit(&u->ring);
		free(u);
		return rf_fail(err, rc, "eventfd: %s", strerror(-rc));
	}
	loop->impl = u;
	rf_uring_arm_wake(loop);
	return 0;
}

static void rf_uring_tag(rf_loop *loop, uint32_t slot, struct io_uring_sqe *sqe)
{
	io_uring_sqe_set_data64(sqe, rf_loop_udata(loop->ops[slot].gen, slot));
}

static int rf_uring_read(rf_loop *loop, uint32_t slot, int fd, void *buf, uint32_t len,
                         uint64_t offset, int fixed)
{
	struct io_uring_sqe *sqe = rf_uring_sqe(U(loop));
	if (!sqe)
		return -EAGAIN;
	if (fixed >= 0)
		io_uring_prep_read_fixed(sqe, fd, buf, len, offset, fixed);
	else
		io_uring_prep_read(sqe, fd, buf, len, offset);
	rf_uring_tag(loop, slot, sqe);
	return 0;
}

static int rf_uring_poll(rf_loop *loop, uint32_t slot, int fd, uint32_t mask)
{
	struct io_uring_sqe *sqe = rf_uring_sqe(U(loop));
	if (!sqe)
		return -EAGAIN;
	io_uring_prep_poll_add(sqe, fd, mask);
	rf_uring_tag(loop, slot, sqe);
	return 0;
}

static int rf_uring_timer(rf_loop *loop, uint32_t slot, uint64_t delay_ns)
{
	struct io_uring_sqe *sqe = rf_uring_sqe(U(loop));
	if (!sqe)
		return -EAGAIN;
	rf_loop_op *op = &loop->ops[slot];
	op->u.ts.tv_sec = (long long)(delay_ns / 1000000000ull);
	op->u.ts.tv_nsec = (long long)(delay_ns % 1000000000ull);
	io_uring_prep_timeout(sqe, &op->u.ts, 0, 0);
	rf_uring_tag(loop, slot, sqe);
	return 0;
}

/* Asks the kernel to cancel the request with this user_data (best effort:
 * the op is a zombie either way and its CQE frees the slot). */
static void rf_uring_submit_cancel(rf_uring *u, uint64_t udata)
{
	struct io_uring_sqe *sqe = rf_uring_sqe(u);
	if (!sqe)
		return;
	io_uring_prep_cancel64(sqe, udata, 0);
	io_uring_sqe_set_data64(sqe, rf_loop_udata(0, RF_URING_SLOT_CANCEL));
}

static void rf_uring_cancel(rf_loop *loop, uint32_t slot)
{
	rf_uring_submit_cancel(U(loop), rf_loop_udata(loop->ops[slot].gen, slot));
}

static int rf_uring_dispatch(rf_loop *loop, uint64_t udata, int res)
{
	if ((uint32_t)udata == RF_URING_SLOT_WAKE) {
		U(loop)->wake_armed = false;
		rf_uring_arm_wake(loop);
		return 0;
	}
	return rf_loop_complete(loop, udata, res); /* cancel requests: outside the table */
}

static int rf_uring_run_once(rf_loop *loop, uint64_t max_wait_ns)
{
	rf_uring *u = U(loop);
	int rc = rf_uring_enable(u);
	if (rc < 0)
		return rc;
	rf_uring_arm_wake(loop);
	struct __kernel_timespec ts = {
	    .tv_sec = (long long)(max_wait_ns / 1000000000ull),
	    .tv_nsec = (long long)(max_wait_ns % 1000000000ull),
	};
	struct io_uring_cqe *cqe = NULL;
	rc = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
	if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN)
		return rc;
	int handled = 0;
	struct io_uring_cqe *batch[RF_URING_CQE_BATCH];
	unsigned n;
	while ((n = io_uring_peek_batch_cqe(&u->ring, batch, RF_URING_CQE_BATCH)) > 0) {
		uint64_t udata[RF_URING_CQE_BATCH];
		int res[RF_URING_CQE_BATCH];
		for (unsigned i = 0; i < n; i++) {
			udata[i] = batch[i]->user_data;
			res[i] = batch[i]->res;
		}
		io_uring_cq_advance(&u->ring, n);
		for (unsigned i = 0; i < n; i++)
			handled += rf_uring_dispatch(loop, udata[i], res[i]);
	}
	return handled;
}

/* Sets the kernel's buffer `index` (base NULL clears it); the sparse table
 * is made on first use, by the thread that runs the ring. */
static int rf_uring_region_set(rf_loop *loop, unsigned index, void *base, size_t len)
{
	rf_uring *u = U(loop);
	int rc = rf_uring_enable(u);
	if (rc < 0)
		return rc;
	if (!u->regions_table) {
		if (!base)
			return 0;
		rc = io_uring_register_buffers_sparse(&u->ring, RF_LOOP_REGIONS_MAX);
		if (rc < 0)
			return rc;
		u->regions_table = true;
	}
	struct iovec iov = {.iov_base = base, .iov_len = len};
	__u64 tag = 0;
	rc = io_uring_register_buffers_update_tag(&u->ring, index, &iov, &tag, 1);
	return rc < 0 ? rc : 0;
}

static void rf_uring_wake(rf_loop *loop)
{
	uint64_t one = 1;
	/* EAGAIN means the counter is already non-zero: a wake-up is pending. */
	ssize_t w = write(U(loop)->efd, &one, sizeof(one));
	(void)w;
}

static bool rf_uring_busy(rf_loop *loop)
{
	return (loop->pending > 0 || U(loop)->wake_armed) && U(loop)->enabled;
}

static void rf_uring_fini(rf_loop *loop)
{
	rf_uring *u = U(loop);
	if (u->wake_armed)
		rf_uring_submit_cancel(u, rf_loop_udata(0, RF_URING_SLOT_WAKE));
	/* Bounded: a request the kernel cannot finish is abandoned. */
	rf_loop_drain(loop, rf_uring_busy);
	io_uring_queue_exit(&u->ring);
	close(u->efd);
	free(u);
	loop->impl = NULL;
}

const rf_loop_backend_ops rf_loop_uring_ops = {
    .id = RF_LOOP_IO_URING,
    .init = rf_uring_init,
    .read = rf_uring_read,
    .poll = rf_uring_poll,
    .timer = rf_uring_timer,
    .cancel = rf_uring_cancel,
    .run_once = rf_uring_run_once,
    .region_set = rf_uring_region_set,
    .wake = rf_uring_wake,
    .fini = rf_uring_fini,
};
