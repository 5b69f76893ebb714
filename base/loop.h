/* loop.h - the event loop: one loop, owned by one thread, over one of two
 * backends with one contract: io_uring (the fast path), or epoll + a timer
 * heap + a small bounded pool of pread threads (where io_uring is blocked:
 * a container's seccomp profile, kernel.io_uring_disabled).
 *
 * Every request is an "op" in a fixed table of slots (sized at creation); its id
 * (returned to the caller, and the SQE's user_data) is (generation << 32 |
 * slot). Cancelling an op bumps the slot's generation, so a completion that
 * arrives later is recognised as stale and dropped: callbacks never run for a
 * cancelled op. Callbacks run on the loop thread, inside rf_loop_run_once.
 * A full table is an answer (-EAGAIN), never a hidden allocation.
 * Only rf_loop_wake() may be called from other threads. */
#ifndef RF_LOOP_H
#define RF_LOOP_H

#include "ringfeed.h"
#include <stdbool.h>
#include <stdint.h>

#define RF_LOOP_OPS_MAX   4096       /* rf_loop_new's table */
#define RF_LOOP_OPS_LIMIT (1u << 20) /* rf_loop_new_sized's largest */

typedef struct rf_loop rf_loop;
/* res: bytes for reads, revents for polls, 0 for timers, or -errno. */
typedef void (*rf_loop_cb)(void *arg, int res);

/* Which backend: AUTO takes $RINGFEED_IO_BACKEND when set (auto, io_uring or
 * epoll), else io_uring, falling back to epoll when io_uring_setup answers
 * EPERM, EACCES or ENOSYS (said once per process on stderr, and remembered:
 * later loops of the process go to epoll at once). IO_URING refused is an
 * error saying how to allow it. */
typedef enum rf_loop_backend {
	RF_LOOP_AUTO = 0,
	RF_LOOP_IO_URING = 1,
	RF_LOOP_EPOLL = 2,
} rf_loop_backend;
#define RF_LOOP_READ_THREADS_DEFAULT 4u
#define RF_LOOP_READ_THREADS_MAX     16u
#define RF_LOOP_FALLBACK_BYTES       96
typedef struct rf_loop_opts {
	uint32_t ops_max;      /* the table (0: RF_LOOP_OPS_MAX; else 1..RF_LOOP_OPS_LIMIT) */
	uint32_t backend;      /* rf_loop_backend */
	uint32_t read_threads; /* epoll: pread threads at most (0: default; 1..MAX) */
} rf_loop_opts;
int rf_loop_new_opts(rf_loop **out, const rf_loop_opts *opts, rf_error *err);
int rf_loop_new(rf_loop **out, rf_error *err); /* RF_LOOP_OPS_MAX slots, AUTO */
/* A table of ops_max slots (1..RF_LOOP_OPS_LIMIT; small ones let tests fill it). */
int rf_loop_new_sized(rf_loop **out, uint32_t ops_max, rf_error *err);
/* "auto", "io_uring" or "epoll" into *out; -EINVAL for anything else. */
int rf_loop_backend_parse(const char *name, uint32_t *out);
const char *rf_loop_backend_name(uint32_t backend);
rf_loop_backend rf_loop_backend_of(const rf_loop *loop); /* IO_URING or EPOLL */
uint32_t rf_loop_read_threads(const rf_loop *loop);      /* epoll: the pool's bound; else 0 */
/* Why AUTO did not take io_uring ("io_uring_setup: Operation not permitted"),
 * or "" when it did or was not asked. */
const char *rf_loop_fallback(const rf_loop *loop);
void rf_loop_free(rf_loop *loop); /* cancels and drains every op first */

/* A read at offset (uint64_t)-1 reads at the fd's position (a pipe). */
int64_t rf_loop_read(rf_loop *loop, int fd, void *buf, uint32_t len, uint64_t offset, rf_loop_cb cb,
                     void *arg);
/* Registered buffers (io_uring_register_buffers into a sparse table made on
 * first use; the epoll backend has none: -EOPNOTSUPP): memory the kernel pins once, so a read into
 * it (IORING_OP_READ_FIXED) skips pinning its pages per request. Loop thread only (the ring's
 * single issuer). A region must stay mapped until removed (or the loop freed): the kernel holds its
 * pages, not its addresses. */
#define RF_LOOP_REGIONS_MAX      1024u
#define RF_LOOP_REGION_BYTES_MAX (1ull << 30) /* the kernel's limit per buffer */
/* Registers [base, base + len): its index, or -errno (-ENOMEM or -EPERM:
 * the kernel refused to pin it, RLIMIT_MEMLOCK for a process without
 * CAP_IPC_LOCK; -ENOSPC: every region taken; -EINVAL: len 0 or over the
 * limit; what the kernel says where it has no registered buffers). */
int rf_loop_region_add(rf_loop *loop, void *base, size_t len);
/* Unregisters the region that starts at base; returns its length (0: there
 * is none). Reads in flight into it finish into the pages they were given. */
size_t rf_loop_region_remove(rf_loop *loop, const void *base);
/* The index of the region that holds [p, p + len) whole, or -1. */
int rf_loop_region_find(const rf_loop *loop, const void *p, size_t len);
/* rf_loop_read into a registered region (index from rf_loop_region_find);
 * on epoll a plain read. */
int64_t rf_loop_read_fixed(rf_loop *loop, int fd, void *buf, uint32_t len, uint64_t offset,
                           int index, rf_loop_cb cb, void *arg);
/* One-shot poll (POLLIN/POLLOUT mask); re-arm after each completion. */
int64_t rf_loop_poll(rf_loop *loop, int fd, uint32_t mask, rf_loop_cb cb, void *arg);
int64_t rf_loop_timer(rf_loop *loop, uint64_t delay_ns, rf_loop_cb cb, void *arg);
/* Cancels a pending op: its callback will not run. Unknown/finished ids are ignored. */
void rf_loop_cancel(rf_loop *loop, int64_t id);
/* Memory a cancelled read may still write (an O_DIRECT bounce buffer):
 * fn(node) runs in rf_loop_free, after every completion has been drained. */
typedef struct rf_loop_deferred {
	struct rf_loop_deferred *next;
	void (*fn)(struct rf_loop_deferred *node);
} rf_loop_deferred;
void rf_loop_defer(rf_loop *loop, rf_loop_deferred *node, void (*fn)(rf_loop_deferred *node));
/* Submits pending SQEs, waits up to max_wait_ns for at least one completion
 * or a wake, and dispatches every completion. Returns completions handled or -errno. */
int rf_loop_run_once(rf_loop *loop, uint64_t max_wait_ns);
/* The one loop driver, for every owner of a loop: until until(ctx) holds,
 * runs before_sleep(ctx) (the owner's work between ticks: scheduling, starting
 * requests; it returns the longest wait in ns before the next tick, or
 * RF_LOOP_STOP to return at once) and then rf_loop_run_once with that wait.
 * Either hook may be NULL (no condition: only RF_LOOP_STOP ends it; no work:
 * RF_LOOP_DRIVE_WAIT_NS). Every wait ends early on a completion or a wake, so
 * the wait only bounds how late a condition set outside the loop is seen.
 * Returns 0, or the loop's -errno (calling it again goes on). */
#define RF_LOOP_DRIVE_WAIT_NS 100000000ull /* 100 ms */
#define RF_LOOP_STOP          UINT64_MAX
typedef bool (*rf_loop_until_fn)(void *ctx);
typedef uint64_t (*rf_loop_before_sleep_fn)(void *ctx);
int rf_loop_drive(rf_loop *loop, rf_loop_until_fn until, rf_loop_before_sleep_fn before_sleep,
                  void *ctx);
/* Thread-safe: makes a waiting rf_loop_run_once return (eventfd). */
void rf_loop_wake(rf_loop *loop);
unsigned rf_loop_pending(const rf_loop *loop); /* ops in flight */
uint32_t rf_loop_ops_max(const rf_loop *loop); /* the table's size */

#endif
