/* sched.c - the loop thread: runs the open phase (open.c), then walks the
 * plan ahead of the consumer as far as depth and budget allow, reserving
 * bytes before each read and coalescing adjacent blocks of one shard into
 * one read (run phase). Read completions hand units to the decode workers.
 * Nothing here blocks except the wait inside the loop driver. */
#include "engine.h"
#include "util.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#define RF_COALESCE_UNITS_MAX 64
#define RF_LOOP_WAIT_NS       100000000ull

/* ------------------------------------------------------------- run phase */

static void rf_latency_add(rf_engine *e, uint64_t ns) RF_REQUIRES(rf_engine_mu)
{
	e->st->lat_ms[e->st->lat_count % RF_LATENCY_SAMPLES] = (double)ns / 1e6;
	e->st->lat_count++;
}

/* Publishes the fetch layer's counters (loop-thread data) to the stats,
 * at every read's end: a block's read and a unit's re-read alike (the last
 * reads of a run are often re-reads; counting only the first kind left
 * their retries and the data cache's re-reads out of the final stats). */
static void rf_sched_counters(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_fetch_counters fc;
	rf_fetch_counters_get(e->fetch, &fc);
	e->st->fetch_retries = fc.retries;
	e->st->fetch_hedges = fc.hedges;
	e->st->fetch_hedges_won = fc.hedges_won;
	e->st->fetch_resumes = fc.resumes;
	e->st->fetch_resumed_bytes = fc.resumed_bytes;
	e->st->direct_bytes = fc.direct_bytes;
	e->st->direct_refused = fc.direct_refused;
	e->st->fixed_reads = fc.fixed_reads;
	e->st->fixed_bytes = fc.fixed_bytes;
	e->st->register_refused = fc.register_refused;
	e->st->cache = fc;
}

static void rf_on_read(void *arg, int64_t res, const char *msg)
{
	rf_read *rd = arg;
	rf_engine *e = rd->e;
	rf_engine_lock(e);
	e->sched->reads_inflight--;
	uint64_t took = rf_now_ns() - rd->t_issue_ns;
	rf_latency_add(e, took);
	rf_control_note_fetch(e, rd->shard, took);
	rf_mixst_fetch(e, rd->shard, took);
	rf_sched_counters(e);
	if (res < 0) {
		e->st->fetch_errors++;
		for (uint32_t i = 0; i < rd->units; i++) {
			rf_unit_slot *u = rf_slot(e, rd->first_seq + i);
			char m[RF_ERROR_MSG_BYTES];
			snprintf(m, sizeof(m), "shard %s: block %u: read failed: %s",
			         e->shards[u->shard].name, u->block,
			         msg ? msg : strerror((int)-res));
			rf_unit_fail(e, u, (int)res, m);
			u->read = NULL;
		}
		if (e->indexes[rd->shard]->sequential)
			rf_seq_wake(e);
		rf_read_free(e, rd);
		rf_coll_kick(e->coll);
		rf_engine_wake_workers(e, 1); /* the collator, to meet the failure */
	} else {
		e->st->fetched_bytes += rd->len;
		uint32_t jobs = 0;
		for (uint32_t i = 0; i < rd->units; i++)
			jobs += rf_unit_fetched(e, rf_slot(e, rd->first_seq + i));
		rf_engine_wake_workers(e, jobs); /* one per decode job */
	}
	rf_engine_unlock(e);
}

/* A re-read of one unit's frame finished, or the read of the bytes a
 * sequential unit's decoder asked for (RF_SUB_MORE) (arg: its slot, which
 * stays put while the unit is READING). */
static void rf_on_reread(void *arg, int64_t res, const char *msg)
{
	rf_unit_slot *u = arg;
	rf_read *rd = u->read;
	rf_engine *e = rd->e;
	rf_engine_lock(e);
	e->sched->reads_inflight--;
	rf_sched_counters(e);
	if (res < 0) {
		char m[RF_ERROR_MSG_BYTES];
		if (u->sub == RF_SUB_MORE)
			snprintf(m, sizeof(m),
			         "shard %s: block %u: the read of [%llu, +%u) its stream's decoder "
			         "needed failed: %s",
			         e->shards[u->shard].name, u->block, (unsigned long long)rd->offset,
			         u->src_len, msg ? msg : strerror((int)-res));
		else
			snprintf(
			    m, sizeof(m),
			    "shard %s: block %u: failed its checksum, and re-read %u failed: %s",
			    e->shards[u->shard].name, u->block, u->rereads,
			    msg ? msg : strerror((int)-res));
		e->st->fetch_errors++;
		rf_unit_fail(e, u, (int)res, m);
		u->read = NULL;
		rf_unit_sub_set(e, u, RF_SUB_NONE);
		rf_seq_state_put(e, u);
		if (--rd->units_left == 0)
			rf_read_free(e, rd);
		if (e->indexes[u->shard]->sequential)
			rf_seq_wake(e);
		rf_coll_kick(e->coll);
	} else {
		e->st->fetched_bytes += u->src_len;
		if (u->sub == RF_SUB_MORE) /* the decode continues after it */
			rf_unit_sub_set(e, u, RF_SUB_AGAIN);
		rf_unit_set(e, u, RF_U_FETCHED); /* its turn came before it decoded first */
		rf_ring_job_push(e, u->seq);
	}
	rf_engine_wake_workers(e, 1);
	rf_engine_unlock(e);
}

/* Issues the re-reads queued by the workers (corrupt frames). mu held;
 * dropped around the source calls. */
static void rf_sched_rereads(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t seq;
	while (!e->stop && rf_ring_reread_pop(e, &seq)) {
		rf_unit_slot *u = rf_slot(e, seq);
		rf_read *rd = u->read;
		rf_source *src = e->shards[u->shard].src;
		rf_engine_unlock(e);
		int rc = rf_source_read(src, rd->offset + u->src_at, u->src_len,
		                        rd->buf + u->src_at, rf_on_reread, u);
		rf_engine_lock(e);
		if (rc == -EAGAIN && e->sched->reads_inflight > 1) {
			rf_ring_reread_unpop(
			    e); /* no room in the loop: again when a read completes */
			break;
		}
		if (rc < 0) {
			rf_engine_unlock(e);
			rf_on_reread(u, rc, "could not start the re-read");
			rf_engine_lock(e);
		}
	}
}

/* Moves the scheduler to the next epoch when the current one is fully
 * admitted. Returns true when there is a unit to look at. mu held; drops it
 * while computing the plan. */
static bool rf_sched_epoch_ready(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->sched->unit < rf_epoch_slot(e, e->sched->epoch)->units)
		return true;
	uint64_t next = e->sched->epoch + 1;
	if (e->sched->done || next >= e->epoch_end) {
		e->sched->done = true;
		return false;
	}
	if (next > e->coll->epoch + 1)
		return false; /* at most one epoch ahead of the collator */
	rf_error err = {0};
	rf_plan *plan = e->sched->plan; /* the loop thread's: set at open */
	rf_engine_unlock(e);
	int rc = rf_plan_epoch(plan, next, &err);
	rf_engine_lock(e);
	if (rc < 0) {
		rf_engine_finish(e, rc, err.msg);
		return false;
	}
	const rf_epoch_info *prev = rf_epoch_slot(e, e->sched->epoch);
	rf_epoch_info *ep = &e->sched->epochs[next % RF_EPOCH_SLOTS];
	*ep = (rf_epoch_info){.valid = true,
	                      .epoch = next,
	                      .records = rf_plan_epoch_records(e->sched->plan),
	                      .global_start = prev->global_start + prev->span,
	                      .base_seq = e->sched->seq,
	                      .first_unit = 0,
	                      .units = rf_plan_unit_count(e->sched->plan)};
	ep->span = RF_MAX(ep->records, rf_plan_epoch_plan_records(e->sched->plan));
	e->sched->epoch = next;
	e->sched->unit = 0;
	e->sched->next_first =
	    ep->units ? rf_plan_unit(e->sched->plan, 0)->first_plan_record : ep->span;
	rf_coll_kick(e->coll); /* the collator may be waiting for this epoch */
	rf_engine_wake_workers(e, 1);
	/* A rank can have no blocks in an epoch (fewer blocks than ranks): the
	 * epoch is set up for the collator, and the next call moves past it. */
	return ep->units > 0;
}

/* Batches' worth of records ahead of the consumer that the scheduler fetches. */
static uint64_t rf_lookahead_global(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t per_batch = e->cp.batch_records;
	if (e->cp.batch_bytes > 0 && e->coll->batches > 0)
		per_batch = RF_MAX(1, e->coll->total_records / e->coll->batches);
	else if (e->cp.batch_bytes > 0)
		per_batch = RF_MIN(per_batch, 64);
	return e->cons->global + (uint64_t)(e->sched->depth + 1) * per_batch + e->window;
}

static void rf_slot_init(rf_engine *e, const rf_unit *pu, rf_read *rd) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_unit_slot *u = rf_slot(e, e->sched->seq);
	const rf_block_info *bi = &e->indexes[pu->shard]->block[pu->block];
	*u = (rf_unit_slot){.seq = e->sched->seq,
	                    .epoch = e->sched->epoch,
	                    .unit = (uint32_t)e->sched->unit,
	                    .shard = pu->shard,
	                    .block = pu->block,
	                    .records = pu->records,
	                    .first_plan_record = pu->first_plan_record,
	                    .release_pos = pu->release_pos,
	                    .read = rd,
	                    .src_at = rd ? bi->offset - rd->offset : 0,
	                    .src_len = bi->compressed_bytes,
	                    .slab_bytes = rd ? rf_unit_slab_bytes(&e->shards[pu->shard], bi) : 0};
	rf_unit_set(e, u, rd ? RF_U_READING : RF_U_DECODED);
	e->sched->seq++;
	e->sched->unit++;
	const rf_epoch_info *ep = rf_epoch_slot(e, e->sched->epoch);
	e->sched->next_first = e->sched->unit < ep->units
	                           ? rf_plan_unit(e->sched->plan, e->sched->unit)->first_plan_record
	                           : ep->span;
}

/* Counts units from sched_unit that one read can cover: same shard,
 * consecutive blocks whose bytes follow each other (a format's units may
 * leave gaps between them), same need class, within
 * request_size. A format whose
 * units are stored as they decode keeps each read's buffer as its records'
 * bytes until the unit is released: one unit per read, so a unit's bytes
 * never pin its neighbours'. */
static uint32_t rf_run_length(rf_engine *e, uint64_t limit_global, bool needed, uint32_t max,
                              uint64_t *comp_bytes, uint64_t *dec_bytes) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	const rf_epoch_info *ep = rf_epoch_slot(e, e->sched->epoch);
	const rf_unit *first = rf_plan_unit(e->sched->plan, e->sched->unit);
	const rf_shard *sh = &e->shards[first->shard];
	const rf_shard_index *ix = sh->index;
	uint32_t n = 0;
	*comp_bytes = *dec_bytes = 0;
	if (sh->in_place || ix->sequential) /* sequential: a unit's buffer takes its MORE reads */
		max = 1;
	while (e->sched->unit + n < ep->units && n < max &&
	       e->sched->seq + n - e->ring->tail_seq < e->ring->units) {
		const rf_unit *pu = rf_plan_unit(e->sched->plan, e->sched->unit + n);
		const rf_block_info *bi = &ix->block[pu->block];
		uint64_t g = ep->global_start + pu->first_plan_record;
		if (n > 0 &&
		    (pu->shard != first->shard || pu->block != first->block + n ||
		     pu->records == 0 || pu->unused || (g < e->sched->need_global) != needed ||
		     g >= limit_global || *comp_bytes + bi->compressed_bytes > e->request_bytes ||
		     bi->offset != ix->block[first->block].offset + *comp_bytes))
			break;
		*comp_bytes += bi->compressed_bytes;
		*dec_bytes += rf_unit_slab_bytes(sh, bi);
		n++;
	}
	return n;
}

/* A read's buffer and its units' decoded slabs, allocated when they are
 * reserved (so the budget's bytes are resident bytes: the pool maps them
 * populated), outside the mutex (populating takes time). The read and its
 * slots in READING belong to the loop thread: mu not needed. */
static int rf_read_memory(rf_engine *e, rf_read *rd)
{
	uint8_t *base = rf_pool_get(e->pool, rd->buf_bytes);
	if (!base)
		return -ENOMEM;
	rf_dio_buffer(e, base, rd->buf_bytes); /* direct_io: READ_FIXED into it */
	rd->buf_shift = e->read_align ? (uint32_t)(rd->offset % e->read_align) : 0;
	rd->buf = base + rd->buf_shift;
	for (uint32_t i = 0; i < rd->units; i++) {
		rf_unit_slot *u = rf_slot(e, rd->first_seq + i);
		if (u->slab_bytes && !(u->slab = rf_pool_get(e->pool, u->slab_bytes)))
			return -ENOMEM;
	}
	return 0;
}

/* No progress is possible: the unit the next batch needs does not fit, and
 * nothing held anywhere can free memory. mu held. */
static bool rf_budget_deadlocked(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	return e->ready->head == e->ready->tail && e->ready->held == 0 &&
	       e->sched->reads_inflight == 0 && e->ring->jobs_head == e->ring->jobs_tail &&
	       e->ring->decoding == 0 && !e->coll->running;
}

/* A needed unit does not fit: remember to retry on a release, and end the
 * stream when nothing anywhere can free memory. mu held. */
static void rf_sched_no_budget(rf_engine *e, const rf_unit *pu, bool needed, uint64_t bytes)
    RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	e->sched->wait_budget = true;
	if (needed)
		rf_memwait_asked(e->memwait, bytes);
	if (!needed || !rf_budget_deadlocked(e) ||
	    rf_engine_host_wait(e, bytes, "a block the next batch needs"))
		return;
	char used[32], lim[32], m[RF_ERROR_MSG_BYTES];
	snprintf(m, sizeof(m),
	         "budget too small: the batch at stream position %llu of epoch %llu needs "
	         "block %u of shard %s (%llu more bytes) while %s of the %s budget is in use "
	         "(raise budget, lower shuffle_window or batch)",
	         (unsigned long long)e->coll->pos, (unsigned long long)e->coll->epoch, pu->block,
	         e->shards[pu->shard].name, (unsigned long long)bytes,
	         rf_fmt_bytes(rf_budget_used(&e->budget), used, sizeof(used)),
	         rf_fmt_bytes(e->budget.limit_bytes, lim, sizeof(lim)));
	rf_engine_finish(e, RF_E_BUDGET, m);
}

/* The loop's op table (or the store's queue) is full: keep the read, with
 * its memory, and start it again once another read completes and frees a
 * slot. That is backpressure, not a failure; only when no other read is in
 * flight (nothing will free a slot) does the read fail. Returns true when
 * parked. mu not held. */
static bool rf_read_park(rf_engine *e, rf_read *rd)
{
	RF_MU_NOT_HELD(e);
	rf_engine_lock(e);
	bool park = e->sched->reads_inflight > 1 && !e->stop;
	if (park)
		e->sched->parked = rd;
	rf_engine_unlock(e);
	return park;
}

/* Starts a read whose units are in READING (allocating its memory first
 * when `memory`). mu not held. */
static void rf_read_start(rf_engine *e, rf_read *rd, bool memory)
{
	RF_MU_NOT_HELD(e);
	int rc = memory ? rf_read_memory(e, rd) : 0;
	if (rc == 0 && rd->len == 0) { /* a unit of empty records (token files): done */
		rf_on_read(rd, 0, NULL);
		return;
	}
	if (rc == 0) {
		rc = rf_source_read(e->shards[rd->shard].src, rd->offset, rd->len, rd->buf,
		                    rf_on_read, rd);
		if (rc == -EAGAIN && rf_read_park(e, rd))
			return;
	}
	if (rc < 0) {
		char m[RF_ERROR_MSG_BYTES];
		snprintf(m, sizeof(m), "could not start the read of [%llu, %llu): %s",
		         (unsigned long long)rd->offset, (unsigned long long)(rd->offset + rd->len),
		         strerror(-rc));
		rf_on_read(rd, rc, m);
	}
}

/* Starts the parked read again. Returns false while it still waits for
 * room. mu held; dropped around the source call. */
static bool rf_sched_unpark(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_read *rd = e->sched->parked;
	if (!rd)
		return true;
	e->sched->parked = NULL;
	rf_engine_unlock(e);
	rf_read_start(e, rd, false);
	rf_engine_lock(e);
	return e->sched->parked == NULL;
}

/* Fills the read and its unit slots and starts it. mu held; dropped around
 * the source call. */
static void rf_sched_issue(rf_engine *e, rf_read *rd, const rf_unit *pu, uint32_t n)
    RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	const rf_block_info *bi = &e->indexes[pu->shard]->block[pu->block];
	rd->e = e;
	rd->offset = bi->offset;
	rd->first_seq = e->sched->seq;
	rd->units = rd->units_left = n;
	rd->shard = pu->shard;
	rd->t_issue_ns = rf_now_ns();
	for (uint32_t k = 0; k < n; k++) {
		const rf_unit *ku = rf_plan_unit(e->sched->plan, e->sched->unit);
		e->st->read_records += ku->records;
		rf_slot_init(e, ku, rd);
	}
	e->sched->reads_inflight++;
	e->st->reads++;
	rf_engine_unlock(e);
	rf_read_start(e, rd, true);
	rf_engine_lock(e);
}

/* Reserves the bytes of a run of units and its read buffer (at least
 * buf_min bytes); NULL (and nothing reserved) when the budget or memory
 * says no. mu held. */
static rf_read *rf_sched_reserve(rf_engine *e, uint64_t comp, uint64_t buf_min, uint64_t dec,
                                 uint64_t headroom) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t fetch_bytes = rf_pool_class_bytes(RF_MAX(comp, buf_min) + e->read_align);
	if (rf_budget_reserve(&e->budget, RF_MEM_FETCH, fetch_bytes, headroom + dec) < 0)
		return NULL;
	if (rf_budget_reserve(&e->budget, RF_MEM_DECODED, dec, headroom) < 0) {
		rf_budget_release(&e->budget, RF_MEM_FETCH, fetch_bytes);
		return NULL;
	}
	rf_read *rd = NULL;
	int rc = rf_read_get(e, &rd); /* recycled: no allocation in the steady state */
	if (rc < 0) {
		rf_budget_release(&e->budget, RF_MEM_FETCH, fetch_bytes);
		rf_budget_release(&e->budget, RF_MEM_DECODED, dec);
		if (rc == -ENOMEM)
			rf_engine_finish(e, -ENOMEM, "out of memory for a read");
		return NULL;
	}
	rd->buf = NULL; /* rf_read_memory, outside the mutex */
	rd->buf_bytes = fetch_bytes;
	rd->len = comp;
	return rd;
}

/* Admits and issues one read (one or more units). Returns false when the
 * scheduler must wait. mu held; dropped around the source call. */
static bool rf_sched_one(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	/* A parked read goes first, also when it holds the last units. Needed
	 * reads skip the in-flight target, not reads_max: a window of more
	 * blocks than the loop has slots is read as slots free. */
	if (e->stop || e->coll->final || !rf_sched_unpark(e) ||
	    e->sched->reads_inflight >= e->reads_max)
		return false;
	if (!rf_sched_epoch_ready(e))
		return false;
	/* the first batch is planned: no read past it at the open's connections
	 * (the next tick sets them back first) */
	if (e->open->start_held && e->coll->batches > 0)
		return false;
	if (e->sched->seq - e->ring->tail_seq >= e->ring->units)
		return false;
	const rf_epoch_info *ep = rf_epoch_slot(e, e->sched->epoch);
	const rf_unit *pu = rf_plan_unit(e->sched->plan, e->sched->unit);
	uint64_t g = ep->global_start + pu->first_plan_record;
	bool needed = g < e->sched->need_global;
	uint64_t limit = RF_MAX(rf_lookahead_global(e), e->sched->need_global);
	/* Beyond depth, keep a few blocks per decoder in flight anyway: decoding
	 * needs parallel work even when a batch is a fraction of a block. */
	if (e->sched->seq - e->ring->frontier_seq < 2ull * e->threads)
		limit += 2ull * e->threads * e->block_records_avg;
	if (!needed && (g >= limit || e->sched->reads_inflight >= e->sched->inflight_cap))
		return false;
	if (pu->records == 0 || pu->unused) { /* nothing of it to emit: no fetch */
		rf_slot_init(e, pu, NULL);
		rf_frontier_advance(e);
		if (pu->unused) { /* its plan positions count as resident now */
			rf_coll_kick(e->coll);
			if (!e->coll->running)
				rf_engine_wake_workers(e, 1);
		}
		return true;
	}
	uint64_t comp, dec;
	/* a sequential unit's buffer also takes the reads its decoder asks for
	 * (rf_more_queue): as large as its shard's largest unit, even for an
	 * empty or small one, so that entering a stream takes few reads */
	const rf_shard_index *ix = e->indexes[pu->shard];
	uint64_t buf_min = ix->sequential ? ix->largest_block_compressed_bytes : 0;
	uint32_t n = rf_run_length(e, limit, needed, RF_COALESCE_UNITS_MAX, &comp, &dec);
	rf_read *rd = rf_sched_reserve(e, comp, buf_min, dec, needed ? 0 : e->batch_worst_bytes);
	while (!rd && n > 1 && !e->coll->final) { /* a shorter read may fit */
		n = rf_run_length(e, limit, needed, n / 2, &comp, &dec);
		rd = rf_sched_reserve(e, comp, buf_min, dec, needed ? 0 : e->batch_worst_bytes);
	}
	rf_memwait_blocked(e->memwait, !rd);
	if (!rd) {
		if (!e->coll->final)
			rf_sched_no_budget(
			    e, pu, needed,
			    rf_pool_class_bytes(RF_MAX(comp, buf_min) + e->read_align) + dec);
		return false;
	}
	rf_memwait_granted(e->memwait);
	rf_sched_issue(e, rd, pu, n);
	return true;
}

/* Full: the producer is held back by the depth: at most the batch being
 * collated missing, or idle above half the depth (the consumer kicks the
 * collator once the queue falls to half). */
static bool rf_queue_full(const rf_engine *e, uint64_t n) RF_REQUIRES(rf_engine_mu)
{
	return n > 0 && (n + 1 >= RF_MAX(e->sched->depth, 2u) ||
	                 (n > e->sched->depth / 2 && !e->coll->running && !e->coll->kick));
}

static void rf_sample_queue(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t n = e->ready->tail - e->ready->head;
	bool full = rf_queue_full(e, n);
	e->st->q_samples++;
	if (n == 0) {
		e->st->q_empty++;
		if (e->st->q_last_extreme > 0)
			e->st->q_swings++;
		e->st->q_last_extreme = -1;
	} else if (full) {
		e->st->q_full++;
		if (e->st->q_last_extreme < 0)
			e->st->q_swings++;
		e->st->q_last_extreme = 1;
	}
	if (full || e->memwait->blocked)
		e->st->q_held_back++;
}

static void rf_on_sample(void *arg, int res)
{
	rf_engine *e = arg;
	rf_engine_lock(e);
	bool live = !e->coll->final || e->ready->tail != e->ready->head;
	if (live)
		rf_sample_queue(e);
	rf_engine_unlock(e);
	/* Once the stream has ended and been taken, nothing is left to sample. */
	if (live)
		rf_loop_timer(e->loop, RF_SAMPLE_PERIOD_NS, rf_on_sample, e);
}

/* Between ticks of the run phase: schedules as far as depth and budget
 * allow; stops once the engine stopped and its workers are done. */
static uint64_t rf_run_before_sleep(void *ctx)
{
	rf_engine *e = ctx;
	atomic_store(&e->wake_pending, false);
	rf_dio_tick(e);
	if (e->open->start_held) { /* before any read of this tick (loop thread's) */
		rf_engine_lock(e);
		bool started = e->coll->batches > 0 || e->coll->final || e->stop;
		rf_engine_unlock(e);
		rf_open_start_end(e, started);
	}
	rf_engine_lock(e);
	if (e->stop && e->workers_done) {
		rf_engine_unlock(e);
		return RF_LOOP_STOP;
	}
	e->sched->wait_budget = false;
	rf_sched_rereads(e);
	while (!e->stop && rf_sched_one(e)) {
	}
	if (e->memwait->host_since && e->coll->wait_budget && !e->coll->running) {
		rf_coll_kick(e->coll); /* retry the batch the host total refused */
		rf_engine_wake_workers(e, 1);
	}
	/* the first batch came while this tick read: the open's connections go
	 * at once, before the next read (rf_sched_one stopped for it) */
	bool drop = e->open->start_held && e->coll->batches > 0;
	rf_engine_unlock(e);
	return drop ? 0 : RF_LOOP_WAIT_NS;
}

static void rf_run_phase(rf_engine *e)
{
	rf_dio_start(e);
	rf_loop_timer(e->loop, RF_SAMPLE_PERIOD_NS, rf_on_sample, e);
	rf_control_start(e);
	int rc;
	while ((rc = rf_loop_drive(e->loop, NULL, rf_run_before_sleep, e)) < 0) {
		rf_engine_lock(e);
		rf_engine_finish(e, rc, "event loop failed");
		rf_engine_unlock(e);
	}
}

/* The fetch layer's own buffers (hedged reads) in the fetch category. A
 * hedge leaves at least its own size free (headroom) for the scheduler's
 * next reservation, and lives one request at most. The budget has its own
 * lock; this runs on the loop thread without mu. */
static int rf_fetch_mem_reserve(void *ctx, uint64_t bytes)
{
	rf_engine *e = ctx;
	RF_MU_NOT_HELD(e);
	return rf_budget_reserve(&e->budget, RF_MEM_FETCH, bytes, bytes);
}

static void rf_fetch_mem_release(void *ctx, uint64_t bytes)
{
	rf_engine *e = ctx;
	RF_MU_NOT_HELD(e);
	rf_budget_release(&e->budget, RF_MEM_FETCH, bytes);
}

static void rf_sched_teardown(rf_engine *e)
{
	rf_control_finish(e);
	for (uint32_t i = 0; i < e->nshards; i++) {
		rf_source_close(e->shards[i].src);
		e->shards[i].src = NULL;
	}
	rf_dio_stop(e);
	rf_engine_lock(e);
	if (e->fetch)
		rf_sched_counters(e); /* the last figures, the cache's before it stops */
	e->fetch_shown = NULL;
	rf_engine_unlock(e);
	rf_fetch_free(e->fetch);
	e->fetch = NULL;
	rf_engine_lock(e);
	rf_loop *loop = e->loop;
	e->loop = NULL; /* wakers (all under mu) no longer reach it */
	rf_engine_unlock(e);
	rf_loop_free(loop); /* drains every read: their buffers are safe to free after */
}

void *rf_sched_main(void *arg)
{
	rf_engine *e = arg;
	rf_error err = {0};
	rf_fetch_options fo;
	rf_config_fetch_options(e->cfg, &fo);
	fo.mem_reserve = rf_fetch_mem_reserve; /* hedge buffers come out of the budget */
	fo.mem_release = rf_fetch_mem_release;
	fo.mem_ctx = e;
	rf_loop *loop = NULL;
	uint32_t ops = e->cfg->test_loop_ops ? e->cfg->test_loop_ops : RF_LOOP_OPS_MAX;
	int rc = rf_fetch_loop_new(&fo, ops, &loop, &err);
	rf_engine_lock(e);
	e->loop = loop; /* published under mu: rf_close may look at it */
	e->reads_max = e->cfg->test_reads_max ? e->cfg->test_reads_max : RF_MAX(1u, ops / 2);
	rf_engine_unlock(e);
	if (rc == 0)
		rc = rf_fetch_new(e->loop, &fo, &e->fetch, &err);
	rf_engine_lock(e);
	e->fetch_shown = e->fetch;
	rf_engine_unlock(e);
	bool loop_failed = rc < 0;
	if (!loop_failed)
		rc = rf_open_phase(e);
	rf_engine_lock(e);
	rf_open_phase_end(e, rc, loop_failed ? err.msg : NULL);
	pthread_cond_broadcast(&e->open_cv);
	while (e->open->phase == RF_PHASE_INDEXED && !e->stop)
		rf_cond_wait(e, &e->open_cv);
	bool go = e->open->phase == RF_PHASE_RUNNING && !e->stop;
	rf_engine_unlock(e);
	if (go)
		rf_run_phase(e);
	if (e->loop)
		rf_sched_teardown(e);
	rf_open_slots_free(e); /* after the loop: no open read writes into them now */
	return NULL;
}

/* ------------------------------------------------------------ at open */

int rf_sched_plan_new(rf_engine *e, const rf_plan_params *pp, rf_error *err) RF_ALONE
{
	return rf_engine_plan_new(e, pp, &e->sched->plan, err);
}

void rf_sched_start(rf_engine *e, uint64_t epoch, size_t first, uint64_t next_first, uint64_t at,
                    bool done) RF_ALONE
{
	e->sched->epoch = epoch;
	e->sched->unit = first;
	e->sched->next_first = next_first;
	e->sched->need_global = rf_plan_need(e->sched->plan, at + 1);
	e->sched->done = done;
}
