/* api.c - the public loader calls: rf_open (lifecycle.c builds the loader),
 * rf_next / rf_release / rf_state_save on the consumer's side, and rf_close
 * (also mid-stream). The stats live in stats.c. */
#include "engine.h"
#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

RF_API rf_loader *rf_open(const rf_config *cfg, rf_error *err)
{
	rf_error_clear(err);
	if (!cfg || cfg->magic == 0) {
		rf_fail(err, -EINVAL, "rf_open: no config");
		return NULL;
	}
	rf_error local = {0};
	rf_engine *e = rf_engine_new(cfg, err ? err : &local);
	if (e)
		e->cons->pid = getpid();
	return (rf_loader *)e;
}

/* A loader's threads live in the process that opened it: a forked child has
 * a copy of its memory (and of its lock, possibly held) but none of its
 * threads, so a call there would wait for ever. Refused (-ECHILD) before the
 * lock is taken; the message goes to the child's copy of the loader. */
int rf_engine_process_check(rf_engine *e)
{
	if (e->cons->pid == getpid())
		return 0;
	snprintf(e->cons->last_error, sizeof(e->cons->last_error),
	         "this loader was opened in process %ld; a forked child must open its own",
	         (long)e->cons->pid);
	return -ECHILD;
}

/* ------------------------------------------------------------- consumer */

static rf_engine *rf_engine_of(rf_loader *l)
{
	rf_engine *e = (rf_engine *)l;
	return e && e->magic == RF_LOADER_MAGIC ? e : NULL;
}

/* Tells the collator and the scheduler what the consumer did, with some
 * hysteresis so a consumer taking small batches fast does not cost a thread
 * wake-up per batch: the collator is kicked when the queue is half empty (or
 * it waits for memory), the scheduler when the consumer moved half a block
 * (or it waits for memory). mu held. */
static void rf_consumer_moved(rf_engine *e, bool released) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t ready = rf_ready_count(e->ready);
	if (ready <= e->sched->depth / 2 || (released && e->coll->wait_budget)) {
		rf_coll_kick(e->coll);
		if (!e->coll->running)
			rf_engine_wake_workers(e, 1);
	}
	if ((released && e->sched->wait_budget) || e->cons->global >= e->cons->wake_mark) {
		e->cons->wake_mark = e->cons->global + RF_MAX(1, e->block_records_avg / 2);
		rf_engine_wake_loop(e);
	}
}

/* A batch can be handed out (the head of the queue is filled), or the
 * stream has ended after the last queued batch, or the loader is closing. */
static bool rf_ready_or_done(const rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	bool empty = e->ready->head == e->ready->tail;
	return (!empty && e->ready->q[e->ready->head % RF_READY_MAX]->filled) || e->stop ||
	       (empty && e->coll->final);
}

/* The consumer holds the memory the producer waits for: no batch is ready,
 * every batch emitted is held, nothing is read, decoded or collated, and the
 * next batch (or a block it needs) waits for budget that only rf_release can
 * free. (A host budget's refusals have their own wait and message.) mu held. */
static bool rf_held_stall(const rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	return e->ready->held > 0 && e->ready->head == e->ready->tail && !e->coll->final &&
	       !e->stop && (e->coll->wait_budget || e->sched->wait_budget) &&
	       e->sched->reads_inflight == 0 && e->ring->jobs_head == e->ring->jobs_tail &&
	       e->ring->decoding == 0 && !e->coll->running && e->fill->q_head == e->fill->q_tail &&
	       e->memwait->host_since == 0;
}

/* True once rf_held_stall has held for RF_HELD_STALL_MS (across rf_next
 * calls: a caller may wait in short slices). mu held. */
static bool rf_held_stalled(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (!rf_held_stall(e)) {
		e->cons->held_stall_ns = 0;
		return false;
	}
	uint64_t now = rf_now_ns();
	if (e->cons->held_stall_ns == 0)
		e->cons->held_stall_ns = now;
	return now - e->cons->held_stall_ns >= RF_HELD_STALL_MS * 1000000ull;
}

static void rf_held_stall_message(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	uint64_t bytes = rf_ready_held_bytes(e);
	char lim[32], held[32];
	snprintf(e->cons->last_error, sizeof(e->cons->last_error),
	         "budget %s is held by the consumer: %u batch(es) of %llu bytes (%s) taken and "
	         "not released, and the next batch needs %llu more bytes that only rf_release "
	         "can free (release batches, or raise the budget)",
	         rf_fmt_bytes(e->budget.limit_bytes, lim, sizeof(lim)), e->ready->held,
	         (unsigned long long)bytes, rf_fmt_bytes(bytes, held, sizeof(held)),
	         (unsigned long long)e->memwait->asked);
}

/* Waits (in slices, to notice a held stall) for a batch, the end, a held
 * stall (RF_E_BUDGET) or the timeout (-ETIMEDOUT). mu held. */
static int rf_wait_ready(rf_engine *e, int timeout_ms) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t t_end = timeout_ms >= 0 ? rf_now_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
	while (!rf_ready_or_done(e)) {
		if (rf_held_stalled(e))
			return RF_E_BUDGET;
		uint64_t now = rf_now_ns();
		if (timeout_ms >= 0 && now >= t_end)
			return -ETIMEDOUT;
		uint64_t slice_ns = 100000000ull; /* re-check the stall */
		if (timeout_ms >= 0)
			slice_ns = RF_MIN(slice_ns, t_end - now);
		struct timespec dl;
		clock_gettime(CLOCK_MONOTONIC, &dl);
		uint64_t ns = (uint64_t)dl.tv_nsec + slice_ns;
		dl.tv_sec += (time_t)(ns / 1000000000ull);
		dl.tv_nsec = (long)(ns % 1000000000ull);
		e->wake.consumers_waiting++;
		e->wake.consumer_waits++;
		rf_cond_timedwait(e, &e->ready_cv, &dl);
		e->wake.consumers_waiting--;
		if (e->wake.consumers_woken > 0) /* a time-out may take a wake-up's place */
			e->wake.consumers_woken--;
	}
	return 0;
}

RF_API int rf_next(rf_loader *l, rf_batch **out, int timeout_ms)
{
	rf_engine *e = rf_engine_of(l);
	if (!e || !out)
		return -EINVAL;
	*out = NULL;
	RF_TRY(rf_engine_process_check(e));
	rf_engine_lock(e);
	if (e->cons->closing) { /* rf_close has begun: the loader is going away */
		snprintf(e->cons->last_error, sizeof(e->cons->last_error), "the loader is closed");
		rf_engine_unlock(e);
		return -ECANCELED;
	}
	e->cons->next_calls++;
	uint64_t t0 = rf_now_ns();
	if (e->st->last_return_ns) { /* the consumer's own time since the last batch */
		e->st->busy_ns += t0 - e->st->last_return_ns;
		e->st->last_return_ns = 0;
	}
	/* A wait is time spent with no batch to take (not the call's own cost). */
	bool waits =
	    e->ready->head == e->ready->tail || !e->ready->q[e->ready->head % RF_READY_MAX]->filled;
	e->st->waiting_since_ns = waits ? t0 : 0;
	uint32_t blocking = waits && e->mixst ? rf_ring_blocking_shard(e) : UINT32_MAX;
	int rc = rf_wait_ready(e, timeout_ms);
	uint64_t t1 = rf_now_ns();
	if (waits)
		e->st->wait_ns += t1 - t0;
	if (blocking != UINT32_MAX)
		rf_mixst_wait(e, blocking, t1 - t0);
	e->st->waiting_since_ns = 0;
	rf_ebatch *b;
	if (e->cons->closing) { /* a ready batch is not handed out: rf_close frees it */
		rc = -ECANCELED;
		snprintf(e->cons->last_error, sizeof(e->cons->last_error), "the loader is closed");
	} else if (rc == 0 && (b = rf_ready_take(e))) {
		rf_mixst_delivered(e, b);
		e->st->batches++;
		e->st->records += b->pub.records;
		e->st->payload += b->pub.payload_bytes;
		e->cons->pos.epoch = b->pub.epoch;
		e->cons->pos.record = b->end_pos; /* skipped records too */
		e->cons->pos.batch = b->pub.index + 1;
		e->cons->pos.skipped = b->skip_records;
		e->cons->pos.skipped_blocks = b->skip_blocks;
		e->st->skipped_records += b->skipped;
		e->cons->global = b->global_end;
		e->st->last_return_ns = t1;
		rf_consumer_moved(e, false);
		*out = &b->pub;
	} else if (rc == 0) {
		rc = e->coll->final ? e->coll->final_code : -ECANCELED;
		snprintf(e->cons->last_error, sizeof(e->cons->last_error), "%s",
		         rc == RF_END ? "" : e->coll->final_msg);
	} else if (rc == RF_E_BUDGET) {
		rf_held_stall_message(e); /* not the stream's end: releases let it go on */
		e->cons->held_stall_ns = 0;
	} else {
		snprintf(e->cons->last_error, sizeof(e->cons->last_error), "no batch within %d ms",
		         timeout_ms);
		if (getenv("RF_DEBUG"))
			fprintf(
			    stderr,
			    "sched e%llu u%zu seq%llu done%d need%llu | tail%llu front%llu | coll "
			    "e%llu pos%llu/%llu final%d | ready%llu held%u reads%u jobs%llu\n",
			    (unsigned long long)e->sched->epoch, e->sched->unit,
			    (unsigned long long)e->sched->seq, e->sched->done,
			    (unsigned long long)e->sched->need_global,
			    (unsigned long long)e->ring->tail_seq,
			    (unsigned long long)e->ring->frontier_seq,
			    (unsigned long long)e->coll->epoch, (unsigned long long)e->coll->pos,
			    (unsigned long long)e->coll->records, e->coll->final,
			    (unsigned long long)(e->ready->tail - e->ready->head), e->ready->held,
			    e->sched->reads_inflight,
			    (unsigned long long)(e->ring->jobs_tail - e->ring->jobs_head));
	}
	if (--e->cons->next_calls == 0 && e->cons->closing)
		pthread_cond_broadcast(&e->ready_cv); /* rf_close waits for this */
	rf_engine_unlock(e);
	return rc;
}

RF_API void rf_release(rf_loader *l, rf_batch *batch)
{
	rf_engine *e = rf_engine_of(l);
	rf_ebatch *b = (rf_ebatch *)batch;
	if (!e || !b || b->magic != RF_BATCH_MAGIC || rf_engine_process_check(e) < 0)
		return;
	rf_engine_lock(e);
	if (b->magic != RF_BATCH_MAGIC || !b->held_now) { /* released twice */
		rf_engine_unlock(e);
		return;
	}
	rf_ready_give_back(e, b);
	rf_budget_release(&e->budget, RF_MEM_BATCH, b->reserved_bytes);
	b->reserved_bytes = 0;
	void *mem = b->mem;
	uint64_t mem_bytes = b->mem_bytes;
	rf_ebatch_put(e, b); /* recycled (clears its magic) */
	rf_consumer_moved(e, true);
	rf_engine_unlock(e);
	e->alloc.free(e->alloc.ctx, mem, mem_bytes);
}

RF_API int rf_loader_shard_name(rf_loader *l, uint32_t shard, char *out, size_t cap)
{
	rf_engine *e = rf_engine_of(l);
	if (!e || !out || cap == 0)
		return -EINVAL;
	RF_TRY(rf_engine_process_check(e));
	/* the shard list is set at open and read-only until close */
	if (shard >= e->nshards)
		return -EINVAL;
	snprintf(out, cap, "%s", e->shards[shard].name);
	return 0;
}

RF_API int rf_state_save(rf_loader *l, void *buf, size_t *len)
{
	rf_engine *e = rf_engine_of(l);
	if (!e || !len)
		return -EINVAL;
	RF_TRY(rf_engine_process_check(e));
	rf_engine_lock(e);
	rf_position p = e->cons->pos;
	rf_engine_unlock(e);
	p.has_seq = e->seq_set && p.epoch == e->seq_epoch; /* seq: set at open, read-only */
	size_t need = rf_state_bytes(&p);
	if (!buf || *len < need) {
		bool ask = !buf;
		*len = need;
		return ask ? 0 : -ENOSPC;
	}
	int n = rf_state_encode(&p, buf, *len);
	if (n < 0)
		return n;
	*len = (size_t)n;
	return 0;
}

RF_API const char *rf_last_error(rf_loader *l)
{
	rf_engine *e = rf_engine_of(l);
	return e ? e->cons->last_error : "not a loader";
}

RF_API void rf_close(rf_loader *l)
{
	rf_close_checked(l, NULL);
}

RF_API int rf_close_checked(rf_loader *l, rf_error *err)
{
	rf_error_clear(err);
	rf_engine *e = rf_engine_of(l);
	if (!e)
		return l ? rf_fail(err, -EINVAL, "rf_close: not a loader") : 0;
	if (rf_engine_process_check(e) < 0) /* the threads to join are the parent's */
		return rf_fail(err, -ECHILD, "rf_close: %s", e->cons->last_error);
	rf_engine_lock(e);
	e->cons->closing = true; /* later rf_next calls are refused */
	e->stop = true;          /* and those in progress return (-ECANCELED) */
	pthread_cond_broadcast(&e->ready_cv);
	while (e->cons->next_calls > 0)
		rf_cond_wait(e, &e->ready_cv);
	rf_engine_unlock(e);
	rf_engine_stop_threads(e); /* the trace's last line is written and closed */
	int rc = rf_control_output_error(e, err);
	rf_engine_free(e);
	return rc;
}

RF_API const char *rf_version(void)
{
	return RF_VERSION_STRING;
}
