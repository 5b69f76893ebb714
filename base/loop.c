/* loop.c - the event loop's common half (see loop.h): the fixed table of op
 * slots with generations, ids, cancellation, dispatch, registered-region
 * bookkeeping, rf_loop_drive: what the backends (loop_uring.c,
 * loop_epoll.c) call back into. The choice of backend, which names their
 * ops tables, is loop_open.c, above both.
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

void rf_loop_free_table(rf_loop *loop)
{
	free(loop->ops);
	free(loop->free_slots);
	free(loop);
}

int rf_loop_alloc(rf_loop **out, uint32_t ops_max, rf_error *err)
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
