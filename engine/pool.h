/* pool.h - memory for fetch buffers, decoded slabs and (by default) batches:
 * mmap'd buffers in size classes (16 per power of two, so at most 6.25% is
 * wasted), reused through free lists so the steady state neither faults
 * pages in nor calls the kernel. New buffers are mapped populated (resident
 * as soon as reserved). Idle buffers are unmapped as soon as mapped bytes
 * would exceed the budget limit minus what the budget has reserved
 * elsewhere, and beyond 1/32 of the limit or 32 MiB (the longest idle
 * first): resident memory stays within the budget and follows its use.
 * Thread-safe. */
#ifndef RF_POOL_H
#define RF_POOL_H

#include "budget.h"

typedef struct rf_pool rf_pool;

#define RF_POOL_IDLE_MAX (32ull << 20) /* idle bytes kept at most, by default */

int rf_pool_new(rf_budget *budget, rf_pool **out);
void rf_pool_free(rf_pool *pool); /* every buffer must have been put back */
/* The size class holding n bytes (what a caller reserves in the budget). */
uint64_t rf_pool_class_bytes(uint64_t n);
/* A buffer of class_bytes (from rf_pool_class_bytes), or NULL. */
void *rf_pool_get(rf_pool *pool, uint64_t class_bytes);
void rf_pool_put(rf_pool *pool, void *buf, uint64_t class_bytes);
uint64_t rf_pool_mapped_bytes(rf_pool *pool);
/* fn(ctx, buf, class_bytes) runs just before the pool unmaps an idle
 * buffer, on whichever thread trims, with the pool's lock held (fn must not
 * call the pool). NULL removes it; once this returns no call is running. */
typedef void (*rf_pool_unmap_fn)(void *ctx, void *buf, uint64_t class_bytes);
void rf_pool_set_unmap_hook(rf_pool *pool, rf_pool_unmap_fn fn, void *ctx);
/* The most idle bytes kept (default RF_POOL_IDLE_MAX, 32 MiB: a shuffle
 * window's slabs); still at most 1/8 of the limit and the budget's room. A
 * mixture holds a window per source, which come back at other times. */
void rf_pool_set_idle_max(rf_pool *pool, uint64_t bytes);

#endif
