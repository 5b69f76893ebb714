/* pool.c - size-classed, mmap-backed buffer pool (see pool.h). */
#include "pool.h"
#include "util.h"

#include <stdlib.h>
#include <sys/mman.h>

#define RF_POOL_MIN_BYTES 4096ull
#define RF_POOL_STEP_BITS 4 /* 16 classes per power of two: at most 6.25% unused */
#define RF_POOL_STEPS     (1u << RF_POOL_STEP_BITS)
#define RF_POOL_CLASSES   (RF_POOL_STEPS * 64)
#define RF_POOL_IDLE_SHARE 32           /* idle buffers kept: at most limit / 32 ... */
#define RF_POOL_IDLE_MAX   (8ull << 20) /* ... and at most 8 MiB */

typedef struct rf_pool_free_buf {
	struct rf_pool_free_buf *next;
} rf_pool_free_buf;

struct rf_pool {
	pthread_mutex_t mu;
	rf_budget *budget;
	uint64_t mapped_bytes, idle_bytes;
	rf_pool_free_buf *idle[RF_POOL_CLASSES];
};

int rf_pool_new(rf_budget *budget, rf_pool **out)
{
	rf_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	p->budget = budget;
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

/* Unmaps idle buffers (any class) until at most keep_bytes stay idle.
 * Called with the lock held. */
static void rf_pool_trim(rf_pool *p, uint64_t keep_bytes)
{
	for (unsigned c = RF_POOL_CLASSES; c-- > 0 && p->idle_bytes > keep_bytes;) {
		while (p->idle[c] && p->idle_bytes > keep_bytes) {
			rf_pool_free_buf *b = p->idle[c];
			p->idle[c] = b->next;
			unsigned top = c / RF_POOL_STEPS, sub = c % RF_POOL_STEPS;
			uint64_t step =
			    top >= RF_POOL_STEP_BITS ? 1ull << (top - RF_POOL_STEP_BITS) : 1;
			uint64_t bytes = (1ull << top) + sub * step;
			munmap(b, bytes);
			p->idle_bytes -= bytes;
			p->mapped_bytes -= bytes;
		}
	}
}

/* Idle bytes kept: what the budget leaves room for (limit - reserved:
 * everything in use is reserved, so mapped <= limit), and at most
 * 1/RF_POOL_IDLE_SHARE of the limit (and RF_POOL_IDLE_MAX), so that resident memory follows the
 * budget's use (memory truth) rather than its past peaks. */
static uint64_t rf_pool_idle_allowed(rf_pool *p)
{
	uint64_t used = rf_budget_used(p->budget);
	uint64_t limit = p->budget->limit_bytes;
	uint64_t room = used < limit ? limit - used : 0;
	return RF_MIN(room, RF_MIN(limit / RF_POOL_IDLE_SHARE, RF_POOL_IDLE_MAX));
}

void *rf_pool_get(rf_pool *p, uint64_t class_bytes)
{
	unsigned c = rf_pool_class_index(class_bytes);
	pthread_mutex_lock(&p->mu);
	rf_pool_free_buf *b = p->idle[c];
	if (b) {
		p->idle[c] = b->next;
		p->idle_bytes -= class_bytes;
		pthread_mutex_unlock(&p->mu);
		return b;
	}
	rf_pool_trim(p, rf_pool_idle_allowed(p));
	p->mapped_bytes += class_bytes;
	pthread_mutex_unlock(&p->mu);
	/* Populated: the pages are resident from the start, as the budget
	 * counts them (reserved = resident, not "resident once touched"). */
	void *m = mmap(NULL, class_bytes, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m == MAP_FAILED) {
		pthread_mutex_lock(&p->mu);
		p->mapped_bytes -= class_bytes;
		pthread_mutex_unlock(&p->mu);
		return NULL;
	}
	return m;
}

void rf_pool_put(rf_pool *p, void *buf, uint64_t class_bytes)
{
	if (!buf)
		return;
	unsigned c = rf_pool_class_index(class_bytes);
	rf_pool_free_buf *b = buf;
	pthread_mutex_lock(&p->mu);
	b->next = p->idle[c];
	p->idle[c] = b;
	p->idle_bytes += class_bytes;
	rf_pool_trim(p, rf_pool_idle_allowed(p));
	pthread_mutex_unlock(&p->mu);
}

uint64_t rf_pool_mapped_bytes(rf_pool *p)
{
	pthread_mutex_lock(&p->mu);
	uint64_t v = p->mapped_bytes;
	pthread_mutex_unlock(&p->mu);
	return v;
}

void rf_pool_free(rf_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	rf_pool_trim(p, 0);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
