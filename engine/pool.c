/* pool.c - size-classed, mmap-backed buffer pool (see pool.h). */
#include "pool.h"
#include "list.h"
#include "tsa.h"
#include "util.h"

#include <stdlib.h>
#include <sys/mman.h>

#define RF_POOL_MIN_BYTES 4096ull
#define RF_POOL_STEP_BITS 4 /* 16 classes per power of two: at most 6.25% unused */
#define RF_POOL_STEPS     (1u << RF_POOL_STEP_BITS)
#define RF_POOL_CLASSES   (RF_POOL_STEPS * 64)
/* Idle buffers kept: at most limit / RF_POOL_IDLE_SHARE and RF_POOL_IDLE_MAX
 * (32 MiB holds a default shuffle window's slabs, which come back together).
 * A share of 1/32 kept 8 MiB at a 256 MiB budget: fewer than two batches
 * of 64 samples of 100 KB, so every batch buffer was unmapped and mapped
 * again, zeroed (35% of a WebDataset read's CPU); 1/8 keeps them. */
#define RF_POOL_IDLE_SHARE 8
/* A miss takes an idle buffer of one of the next classes (at most 25%
 * larger) and shrinks it in place, instead of mapping a new one. */
#define RF_POOL_NEAR_CLASSES 4

/* An idle buffer's own first bytes: it sits in its class's list (most
 * recently put first, what rf_pool_get takes) and in one list of every idle
 * buffer by age (oldest first, what rf_pool_trim unmaps), so that the sizes
 * in steady use stay mapped and rarely needed ones go. */
typedef struct rf_pool_free_buf {
	rf_list_node in_class; /* its class's list */
	rf_list_node by_age;   /* the age list (head: oldest) */
	uint64_t bytes;
} rf_pool_free_buf;

struct rf_pool {
	pthread_mutex_t mu;
	rf_budget *budget;
	uint64_t mapped_bytes RF_GUARDED_BY(rf_pool_mu), idle_bytes RF_GUARDED_BY(rf_pool_mu);
	/* of rf_pool_free_buf, most recently put first */
	rf_list idle[RF_POOL_CLASSES] RF_GUARDED_BY(rf_pool_mu);
	rf_list age RF_GUARDED_BY(rf_pool_mu);               /* of rf_pool_free_buf, oldest first */
	rf_pool_unmap_fn unmap_fn RF_GUARDED_BY(rf_pool_mu); /* rf_pool_set_unmap_hook */
	void *unmap_ctx RF_GUARDED_BY(rf_pool_mu);
	uint64_t idle_max RF_GUARDED_BY(rf_pool_mu); /* rf_pool_set_idle_max */
};

/* The pool's lock (base/tsa.h: its level in the lock order, checked in
 * debug builds; the analysis's acquire and release). */
static void rf_pool_lock(rf_pool *p) RF_ACQUIRE(rf_pool_mu) RF_NO_TSA
{
	rf_lock_order_take(RF_LOCK_POOL);
	pthread_mutex_lock(&p->mu);
}

static void rf_pool_unlock(rf_pool *p) RF_RELEASE(rf_pool_mu) RF_NO_TSA
{
	pthread_mutex_unlock(&p->mu);
	rf_lock_order_give(RF_LOCK_POOL);
}

void rf_pool_set_idle_max(rf_pool *p, uint64_t bytes)
{
	rf_pool_lock(p);
	p->idle_max = bytes;
	rf_pool_unlock(p);
}

int rf_pool_new(rf_budget *budget, rf_pool **out)
{
	rf_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	p->budget = budget;
	rf_pool_set_idle_max(p, RF_POOL_IDLE_MAX);
	*out = p;
	return 0;
}

static unsigned rf_pool_class_index(uint64_t class_bytes)
{
	unsigned top = 63u - (unsigned)__builtin_clzll(class_bytes); /* floor log2 */
	uint64_t step = top >= RF_POOL_STEP_BITS ? 1ull << (top - RF_POOL_STEP_BITS) : 1;
	unsigned sub = (unsigned)((class_bytes - (1ull << top)) / step);
	return top * RF_POOL_STEPS + sub;
}

uint64_t rf_pool_class_bytes(uint64_t n)
{
	if (n <= RF_POOL_MIN_BYTES)
		return RF_POOL_MIN_BYTES;
	unsigned top = 63u - (unsigned)__builtin_clzll(n);
	uint64_t step = 1ull << (top - RF_POOL_STEP_BITS);
	return (n + step - 1) / step * step;
}

/* Adds an idle buffer: newest in the age list, first in its class list. */
static void rf_pool_link(rf_pool *p, rf_pool_free_buf *b, uint64_t bytes) RF_REQUIRES(rf_pool_mu)
{
	unsigned c = rf_pool_class_index(bytes);
	b->bytes = bytes;
	rf_list_push_front(&p->idle[c], &b->in_class);
	rf_list_push_back(&p->age, &b->by_age);
	p->idle_bytes += bytes;
}

/* Takes an idle buffer out of both lists. */
static void rf_pool_unlink(rf_pool *p, rf_pool_free_buf *b) RF_REQUIRES(rf_pool_mu)
{
	rf_list_remove(&p->idle[rf_pool_class_index(b->bytes)], &b->in_class);
	rf_list_remove(&p->age, &b->by_age);
	p->idle_bytes -= b->bytes;
}

/* Unmaps idle buffers, the longest idle first, until at most keep_bytes
 * stay idle. Called with the lock held. */
static void rf_pool_trim(rf_pool *p, uint64_t keep_bytes) RF_REQUIRES(rf_pool_mu)
{
	while (!rf_list_empty(&p->age) && p->idle_bytes > keep_bytes) {
		rf_pool_free_buf *b = rf_list_entry(p->age.head, rf_pool_free_buf, by_age);
		uint64_t bytes = b->bytes;
		rf_pool_unlink(p, b);
		if (p->unmap_fn)
			p->unmap_fn(p->unmap_ctx, b, bytes);
		munmap(b, bytes);
		p->mapped_bytes -= bytes;
	}
}

/* Idle bytes kept: what the budget leaves room for (limit - reserved:
 * everything in use is reserved, so mapped <= limit; with a host budget, no
 * more than the bytes held from it), and at most 1/RF_POOL_IDLE_SHARE of the
 * limit (and RF_POOL_IDLE_MAX), so that resident memory follows the budget's
 * use (memory truth) rather than its past peaks. */
static uint64_t rf_pool_idle_allowed(rf_pool *p) RF_REQUIRES(rf_pool_mu)
{
	uint64_t room = rf_budget_room(p->budget);
	uint64_t limit = p->budget->limit_bytes;
	return RF_MIN(room, RF_MIN(limit / RF_POOL_IDLE_SHARE, p->idle_max));
}

/* An idle buffer of a class just above c, shrunk in place to class_bytes
 * (mremap without MREMAP_MAYMOVE: the address stays, the tail's pages go
 * back to the kernel), or NULL. Fetch buffers and batches vary in size from
 * one to the next, so an exact class often misses while a near one is idle:
 * this keeps the steady state from mapping (and populating) new buffers.
 * Called with the lock held. */
static void *rf_pool_take_near(rf_pool *p, unsigned c, uint64_t class_bytes) RF_REQUIRES(rf_pool_mu)
{
	for (unsigned k = c + 1; k <= c + RF_POOL_NEAR_CLASSES && k < RF_POOL_CLASSES; k++) {
		rf_pool_free_buf *b =
		    rf_list_entry_or_null(p->idle[k].head, rf_pool_free_buf, in_class);
		if (!b)
			continue;
		uint64_t bytes = b->bytes;
		rf_pool_unlink(p, b);
		/* its tail is unmapped: a registration of the whole buffer
		 * (direct_io's READ_FIXED) must go before it is used again */
		if (p->unmap_fn)
			p->unmap_fn(p->unmap_ctx, b, bytes);
		if (mremap(b, bytes, class_bytes, 0) == MAP_FAILED) {
			rf_pool_link(p, b, bytes); /* stays idle as it was */
			return NULL;
		}
		p->mapped_bytes -= bytes - class_bytes;
		return b;
	}
	return NULL;
}

void *rf_pool_get(rf_pool *p, uint64_t class_bytes)
{
	unsigned c = rf_pool_class_index(class_bytes);
	rf_pool_lock(p);
	rf_pool_free_buf *b = rf_list_entry_or_null(p->idle[c].head, rf_pool_free_buf, in_class);
	if (b) {
		rf_pool_unlink(p, b);
		rf_pool_unlock(p);
		return b;
	}
	void *near = rf_pool_take_near(p, c, class_bytes);
	if (near) {
		rf_pool_unlock(p);
		return near;
	}
	rf_pool_trim(p, rf_pool_idle_allowed(p));
	p->mapped_bytes += class_bytes;
	rf_pool_unlock(p);
	/* Populated: the pages are resident from the start, as the budget
	 * counts them (reserved = resident, not "resident once touched"). */
	void *m = mmap(NULL, class_bytes, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m == MAP_FAILED) {
		rf_pool_lock(p);
		p->mapped_bytes -= class_bytes;
		rf_pool_unlock(p);
		return NULL;
	}
	return m;
}

void rf_pool_put(rf_pool *p, void *buf, uint64_t class_bytes)
{
	if (!buf)
		return;
	rf_pool_lock(p);
	rf_pool_link(p, buf, class_bytes);
	rf_pool_trim(p, rf_pool_idle_allowed(p));
	rf_pool_unlock(p);
}

void rf_pool_set_unmap_hook(rf_pool *p, rf_pool_unmap_fn fn, void *ctx)
{
	rf_pool_lock(p);
	p->unmap_fn = fn;
	p->unmap_ctx = ctx;
	rf_pool_unlock(p);
}

uint64_t rf_pool_mapped_bytes(rf_pool *p)
{
	rf_pool_lock(p);
	uint64_t v = p->mapped_bytes;
	rf_pool_unlock(p);
	return v;
}

void rf_pool_free(rf_pool *p)
{
	if (!p)
		return;
	rf_pool_lock(p);
	rf_pool_trim(p, 0);
	rf_pool_unlock(p);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
