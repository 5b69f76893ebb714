/* dio.c - the loader's read buffers registered with the loop's ring (see
 * dio.h). The loop's region table is the loop thread's; `mu` guards only
 * the mirror of which bases are registered and the queue of those the pool
 * is about to unmap, which the pool's hook (any thread) writes. A base the
 * hook queued is unregistered by the loop thread before it registers or
 * reads into anything: memory mapped again at the same address is never
 * read into through the old registration's pages. */
#include "dio.h"
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>

struct rf_dio {
	pthread_mutex_t mu;
	bool refused;                        /* the kernel refused once: plain reads from then on */
	uint32_t n RF_GUARDED_BY(rf_dio_mu); /* bases registered */
	uint32_t gone_n RF_GUARDED_BY(rf_dio_mu);                     /* queued by the hook */
	uintptr_t base[RF_LOOP_REGIONS_MAX] RF_GUARDED_BY(rf_dio_mu); /* registered */
	uintptr_t
	    gone[RF_LOOP_REGIONS_MAX] RF_GUARDED_BY(rf_dio_mu); /* unmapped, still registered */
};

/* The mirror's lock (base/tsa.h: its level in the lock order, checked in
 * debug builds; the analysis's acquire and release). */
static void rf_dio_lock(rf_dio *d) RF_ACQUIRE(rf_dio_mu) RF_NO_TSA
{
	rf_lock_order_take(RF_LOCK_DIO);
	pthread_mutex_lock(&d->mu);
}

static void rf_dio_unlock(rf_dio *d) RF_RELEASE(rf_dio_mu) RF_NO_TSA
{
	pthread_mutex_unlock(&d->mu);
	rf_lock_order_give(RF_LOCK_DIO);
}

/* The pool's hook: a registered base about to be unmapped is queued. */
static void rf_dio_on_unmap(void *ctx, void *buf, uint64_t bytes)
{
	(void)bytes;
	rf_dio *d = ctx;
	rf_dio_lock(d);
	for (uint32_t i = 0; i < d->n; i++) {
		if (d->base[i] != (uintptr_t)buf)
			continue;
		d->base[i] = d->base[--d->n];
		d->gone[d->gone_n++] = (uintptr_t)buf;
		break;
	}
	rf_dio_unlock(d);
}

void rf_dio_start(rf_engine *e)
{
	e->dio = NULL;
	if (e->read_align == 0) /* direct_io off */
		return;
	/* its own bytes, reserved as scratch for the run (short: plain reads) */
	if (rf_budget_reserve(&e->budget, RF_MEM_SCRATCH, sizeof(rf_dio), 0) < 0)
		return;
	rf_dio *d = calloc(1, sizeof(*d));
	if (!d) {
		rf_budget_release(&e->budget, RF_MEM_SCRATCH, sizeof(rf_dio));
		return;
	}
	pthread_mutex_init(&d->mu, NULL);
	e->dio = d;
	rf_pool_set_unmap_hook(e->pool, rf_dio_on_unmap, d);
}

void rf_dio_tick(rf_engine *e)
{
	rf_dio *d = e->dio;
	if (!d)
		return;
	rf_dio_lock(d);
	while (d->gone_n > 0)
		rf_fetch_buffers_unregister(e->fetch, (void *)d->gone[--d->gone_n]);
	rf_dio_unlock(d);
}

/* Said once per loader: why its reads stay plain. */
static void rf_dio_refused(rf_engine *e, int rc, uint64_t bytes)
{
	e->dio->refused = true;
	if (rc == -EOPNOTSUPP) { /* the epoll backend: O_DIRECT preads into aligned buffers */
		fprintf(stderr,
		        "ringfeed: direct I/O: the epoll backend has no registered buffers: "
		        "plain reads into the aligned buffers\n");
		return;
	}
	fprintf(stderr,
	        "ringfeed: direct I/O: io_uring refused to register a read buffer of %llu bytes "
	        "(%s%s): plain reads from now on\n",
	        (unsigned long long)bytes, strerror(-rc),
	        rc == -ENOMEM ? "; RLIMIT_MEMLOCK (ulimit -l) too small" : "");
}

void rf_dio_buffer(rf_engine *e, void *base, uint64_t bytes)
{
	rf_dio *d = e->dio;
	if (!d || d->refused || bytes > RF_LOOP_REGION_BYTES_MAX)
		return;
	rf_dio_tick(e);
	rf_dio_lock(d);
	bool known = false;
	for (uint32_t i = 0; i < d->n && !known; i++)
		known = d->base[i] == (uintptr_t)base;
	bool room = d->n + d->gone_n < RF_LOOP_REGIONS_MAX;
	rf_dio_unlock(d);
	if (known || !room)
		return; /* registered already; or the table is full: a plain read */
	/* Ours until the read ends: the pool cannot unmap it meanwhile. */
	int rc = rf_fetch_buffers_register(e->fetch, base, bytes);
	if (rc == -ENOSPC)
		return;
	if (rc < 0) {
		rf_dio_refused(e, rc, bytes);
		return;
	}
	rf_dio_lock(d);
	d->base[d->n++] = (uintptr_t)base;
	rf_dio_unlock(d);
}

void rf_dio_stop(rf_engine *e)
{
	rf_dio *d = e->dio;
	if (!d)
		return;
	rf_pool_set_unmap_hook(e->pool, NULL, NULL);
	rf_dio_tick(e);
	rf_dio_lock(d);
	while (d->n > 0)
		rf_fetch_buffers_unregister(e->fetch, (void *)d->base[--d->n]);
	rf_dio_unlock(d);
	pthread_mutex_destroy(&d->mu);
	free(d);
	rf_budget_release(&e->budget, RF_MEM_SCRATCH, sizeof(rf_dio));
	e->dio = NULL;
}
