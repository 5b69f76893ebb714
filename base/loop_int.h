/* loop_int.h - what base/loop.c (the op table, ids, regions, selection)
 * shares with its two backends, base/loop_uring.c and base/loop_epoll.c:
 * the op slot, the loop struct, and the backend's table of functions.
 * Nothing outside base/loop*.c includes it. */
#ifndef RF_LOOP_INT_H
#define RF_LOOP_INT_H

#include "loop.h"

#include <linux/time_types.h>
#include <stdatomic.h>
#include <stddef.h>

#define RF_LOOP_DRAIN_NS (10ull * 1000000000ull) /* rf_loop_free waits at most this */

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
	union {
		struct __kernel_timespec ts; /* io_uring timers: read by the kernel at submit */
		struct {
			uint64_t deadline_ns;
			uint32_t heap_pos;
		} timer; /* epoll timers: a place in the timer heap */
		struct {
			int fd;      /* registered with epoll (a dup when `dup`) */
			bool dup;    /* the caller's fd had another poll: ours is a dup */
			bool stream; /* a read at the fd's position (offset -1): read when readable
			              */
			void *buf;
			uint32_t len;
		} poll; /* epoll polls and stream reads */
	} u;
	_Atomic uint32_t cancel_gen; /* epoll: a pool thread skips a read cancelled before it ran */
} rf_loop_op;

typedef struct rf_loop_backend_ops {
	rf_loop_backend id;
	/* Sets up loop->impl; -errno with err set. */
	int (*init)(rf_loop *loop, const rf_loop_opts *opts, rf_error *err);
	/* Issues op `slot` (taken, LIVE); -EAGAIN when the backend has no room.
	 * fixed: a registered region's index, or -1. */
	int (*read)(rf_loop *loop, uint32_t slot, int fd, void *buf, uint32_t len, uint64_t offset,
	            int fixed);
	int (*poll)(rf_loop *loop, uint32_t slot, int fd, uint32_t mask);
	int (*timer)(rf_loop *loop, uint32_t slot, uint64_t delay_ns);
	/* The op is a ZOMBIE now: its completion (or the backend's own) frees it. */
	void (*cancel)(rf_loop *loop, uint32_t slot);
	int (*run_once)(rf_loop *loop, uint64_t max_wait_ns);
	/* Sets registered region `index` (base NULL clears it). */
	int (*region_set)(rf_loop *loop, unsigned index, void *base, size_t len);
	void (*wake)(rf_loop *loop);
	/* Drains every op (bounded by RF_LOOP_DRAIN_NS) and frees loop->impl. */
	void (*fini)(rf_loop *loop);
} rf_loop_backend_ops;

extern const rf_loop_backend_ops rf_loop_uring_ops;
extern const rf_loop_backend_ops rf_loop_epoll_ops;

struct rf_loop {
	const rf_loop_backend_ops *be;
	void *impl;       /* the backend's */
	unsigned pending; /* slots LIVE or ZOMBIE */
	unsigned nfree;
	uint32_t ops_max;           /* table size, fixed at creation */
	uint32_t read_threads;      /* epoll: the pool's bound */
	uint32_t *free_slots;       /* ops_max */
	rf_loop_op *ops;            /* ops_max */
	rf_loop_deferred *deferred; /* freed after the drain in rf_loop_free */
	bool closing;               /* rf_loop_free is draining */
	uint32_t regions_used;
	rf_loop_region regions[RF_LOOP_REGIONS_MAX]; /* index = the backend's buffer index */
	char fallback[RF_LOOP_FALLBACK_BYTES]; /* why auto did not take io_uring ("" if it did) */
};

/* loop_pool.c: the epoll backend's pread threads. Requests and completions
 * are bounded by the op table (each holds a slot until dispatched). */
typedef struct rf_loop_pool rf_loop_pool;
/* Up to threads_max threads, started as reads need them; a completion that
 * finds the queue empty writes wake_fd (an eventfd). */
int rf_loop_pool_new(rf_loop_pool **out, rf_loop *loop, uint32_t threads_max, int wake_fd,
                     rf_error *err);
/* Queues a read of op udata (offset (uint64_t)-1: read(2) at the fd's
 * position); -errno when no thread could be started. */
int rf_loop_pool_submit(rf_loop_pool *p, uint64_t udata, int fd, void *buf, uint32_t len,
                        uint64_t offset);
/* Takes up to max completions; returns how many. */
uint32_t rf_loop_pool_take(rf_loop_pool *p, uint64_t *udata, int *res, uint32_t max);
bool rf_loop_pool_has_done(rf_loop_pool *p);
/* Stops and joins the threads; with reads still running (the drain gave
 * up), detaches them and leaves the pool allocated (they still use it). */
void rf_loop_pool_free(rf_loop_pool *p, bool running);

/* Generations use 31 bits so an id is a non-negative int64_t. */
static inline uint64_t rf_loop_udata(uint32_t gen, uint32_t slot)
{
	return (uint64_t)gen << 32 | slot;
}

/* The op table of a loop of ops_max slots (loop.c), and its free. */
int rf_loop_alloc(rf_loop **out, uint32_t ops_max, rf_error *err);
void rf_loop_free_table(rf_loop *loop);

/* Handles one completion (udata as rf_loop_udata): a stale or cancelled one
 * only frees its slot. Returns 1 when a callback ran, else 0. */
int rf_loop_complete(rf_loop *loop, uint64_t udata, int res);
/* rf_loop_free's drain: runs the loop until busy(loop) is false or the
 * bound passes. */
void rf_loop_drain(rf_loop *loop, bool (*busy)(rf_loop *loop));

#endif
