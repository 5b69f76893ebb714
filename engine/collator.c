/* collator.c - the collator and the fillers: whichever worker finds the
 * next batch's records resident plans it (rf_collate_plan), strictly in
 * stream order, one collator at a time (collating); it reserves the batch
 * (RF_MEM_BATCH, memory from the loader's allocator), locates its records
 * and queues it in the ready queue and the fill queue; any worker then
 * copies its records (rf_fill_one), in any order. The collator stage: the
 * only writer of e->coll (the collation cursor, the stream's end, the skip
 * policy's counts) and e->fill (the fill queue and cursor), collator.h; it
 * releases units whose records every filled batch has copied. (collate.c
 * is the pure batch planner it calls.) */
#include "engine.h"
#include "hostbudget.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

/* Releases units whose records have all been copied into filled batches.
 * Only the collator calls it (it alone moves tail_seq). mu held. */
static void rf_release_emitted(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	bool any = false;
	while (e->ring->tail_seq < e->ring->frontier_seq) {
		rf_unit_slot *u = rf_slot(e, e->ring->tail_seq);
		bool done = u->epoch < e->fill->epoch ||
		            (u->epoch == e->fill->epoch && u->release_pos <= e->fill->pos);
		if (!done)
			break;
		rf_unit_release(e, u);
		rf_ring_tail_advance(e);
		any = true;
	}
	/* A mixture's units are released out of order (a low-weight source's
	 * window outlives many units after it): their memory goes now, their
	 * slots when the tail reaches them. */
	for (uint64_t s = e->ring->tail_seq;
	     rf_plan_is_mix(e->coll->plan) && s < e->ring->frontier_seq; s++) {
		rf_unit_slot *u = rf_slot(e, s);
		if ((u->epoch < e->fill->epoch ||
		     (u->epoch == e->fill->epoch && u->release_pos <= e->fill->pos)) &&
		    rf_unit_release_early(e, u))
			any = true;
	}
	if (any)
		rf_engine_wake_loop(e);
}

/* The collator's cursor is its own while it runs (coll.running: one at a
 * time), with or without mu: RF_NO_TSA here and in rf_coll_locate. */
static rf_unit_slot *rf_coll_slot(rf_engine *e, uint64_t pos, uint32_t *record) RF_NO_TSA
{
	size_t unit;
	rf_plan_locate(e->coll->plan, pos, &unit, record);
	return rf_slot(e, e->coll->base_seq + (unit - e->coll->first_unit));
}

/* The collator's record callback: most consecutive positions fall in the
 * unit of the previous one (always without a record shuffle), so that unit
 * is tried before the plan's binary search. The hint is only ever a unit the
 * collator found resident, and only the collator releases units (moving
 * tail_seq), so the slot is stable while seq >= tail_seq. */
static rf_unit_slot *rf_coll_locate(rf_engine *e, uint64_t pos, uint32_t *rec) RF_NO_TSA
{
	uint64_t p = rf_plan_stream_to_plan(e->coll->plan, pos);
	uint64_t seq = e->coll->base_seq + (e->coll->hint_unit - e->coll->first_unit);
	rf_unit_slot *u = rf_slot(e, seq);
	uint32_t r;
	if (e->coll->hint_unit != SIZE_MAX && seq >= e->ring->tail_seq &&
	    p >= u->first_plan_record && p - u->first_plan_record < u->records) {
		r = (uint32_t)(p - u->first_plan_record);
	} else {
		size_t unit;
		rf_plan_locate(e->coll->plan, pos, &unit, &r);
		e->coll->hint_unit = unit;
		u = rf_slot(e, e->coll->base_seq + (unit - e->coll->first_unit));
	}
	*rec = r;
	return u;
}

static void rf_coll_record(void *ctx, uint64_t pos, const uint8_t **data, uint32_t *len)
{
	uint32_t r;
	rf_unit_slot *u = rf_coll_locate(ctx, pos, &r);
	if (u->state == RF_U_SKIPPED) { /* left out of the batch (rf_coll_emit) */
		*data = NULL;
		*len = 0;
		return;
	}
	uint32_t start = rf_record_end(u->ends, (int64_t)r - 1);
	*data = u->base + start;
	*len = rf_record_end(u->ends, r) - start;
}

/* Stream positions from coll_pos whose records are resident: every unit
 * before the first undecoded one is resident, and a window is usable only
 * when all its units are (its records are permuted across them). mu held. */
static uint64_t rf_resident_end(rf_engine *e, rf_unit_slot **failed) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t epoch, first;
	*failed = NULL;
	if (e->ring->frontier_seq < e->sched->seq) {
		rf_unit_slot *u = rf_slot(e, e->ring->frontier_seq);
		epoch = u->epoch;
		first = u->first_plan_record;
		if (u->state == RF_U_FAILED && epoch == e->coll->epoch)
			*failed = u;
	} else {
		epoch = e->sched->epoch;
		first = e->sched->done ? UINT64_MAX : e->sched->next_first;
		if (e->sched->done)
			epoch = UINT64_MAX;
	}
	if (epoch != e->coll->epoch)
		return epoch > e->coll->epoch ? e->coll->records : e->coll->pos;
	return RF_MIN(e->coll->records, rf_plan_resident_stream(e->coll->plan, first));
}

/* The failed unit's window is settled when every unit starting before the
 * window's end is decoded or failed. mu held. */
static bool rf_window_settled(rf_engine *e, uint64_t window_end) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	for (uint64_t s = e->ring->frontier_seq; s < e->sched->seq; s++) {
		rf_unit_slot *u = rf_slot(e, s);
		if (u->epoch != e->coll->epoch || u->first_plan_record >= window_end)
			return true;
		if (u->state != RF_U_DECODED && u->state != RF_U_FAILED && u->state != RF_U_SKIPPED)
			return false;
	}
	return e->sched->epoch != e->coll->epoch || e->sched->next_first >= window_end;
}

/* With a failed unit in reach: the exact count of positions from coll_pos
 * before the first record that lives in a failed unit (UINT64_MAX: wait).
 * mu held. */
static uint64_t rf_available_before_failure(rf_engine *e, rf_unit_slot *f, rf_unit_slot **which)
    RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t wplan = rf_plan_window_end(e->coll->plan, f->first_plan_record);
	if (!rf_window_settled(e, wplan)) {
		rf_sched_need(e->sched, e->coll->global_start + wplan);
		return UINT64_MAX;
	}
	uint64_t wend = RF_MIN(e->coll->records, rf_plan_resident_stream(e->coll->plan, wplan));
	for (uint64_t p = e->coll->pos; p < wend; p++) {
		uint32_t r;
		rf_unit_slot *u = rf_coll_slot(e, p, &r);
		if (u->state == RF_U_FAILED) {
			*which = u;
			return p - e->coll->pos;
		}
	}
	*which = f;
	return wend - e->coll->pos;
}

static void rf_need(rf_engine *e, uint64_t pos) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t g = e->coll->global_start + rf_plan_need(e->coll->plan, pos);
	if (rf_sched_need(e->sched, g))
		rf_engine_wake_loop(e);
}

/* Moves the collator to the next epoch. mu held (dropped while planning). */
static int rf_coll_next_epoch(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t next = e->coll->epoch + 1;
	if (next >= e->epoch_end) {
		rf_engine_finish(e, RF_END, NULL);
		return 0;
	}
	const rf_epoch_info *ep = rf_epoch_slot(e, next);
	if (!ep->valid || ep->epoch != next)
		return 0; /* the scheduler has not reached it yet; it kicks us */
	rf_error err = {0};
	rf_plan *plan = e->coll->plan; /* the collator's (running): set at open */
	rf_engine_unlock(e);
	int rc = rf_plan_epoch(plan, next, &err);
	rf_engine_lock(e);
	if (rc < 0) {
		rf_engine_finish(e, rc, err.msg);
		return 0;
	}
	rf_sched_epoch_retire(e->sched, e->coll->epoch);
	e->coll->epoch = next;
	e->coll->pos = 0;
	e->coll->batch = 0;
	e->coll->skip_blocks = 0;
	e->coll->skip_records = 0;
	e->coll->base_seq = ep->base_seq;
	e->coll->first_unit = ep->first_unit;
	e->coll->hint_unit = SIZE_MAX;
	e->coll->records = ep->records;
	e->coll->global_start = ep->global_start;
	e->coll->global = ep->global_start;
	rf_release_emitted(e);
	rf_need(e, 1);
	return 1;
}

/* The stream position of the first record of unit u that this rank emits
 * (its windows' records come in permuted order): searched in the window
 * of its first record. mu held. */
static uint64_t rf_unit_first_pos(rf_engine *e, const rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	const rf_plan *p = e->coll->plan;
	uint64_t a = rf_plan_resident_stream(p, u->first_plan_record);
	uint64_t b = rf_plan_resident_stream(p, rf_plan_window_end(p, u->first_plan_record));
	for (uint64_t pos = a; pos < b; pos++) {
		uint32_t r;
		if (rf_coll_slot(e, pos, &r) == u)
			return pos;
	}
	return b;
}

/* The skip policy leaves out a damaged block, never a whole shard: a skip
 * that would leave out every block of u's shard in this epoch is refused
 * (the stream fails naming the shard: a stale layout, a truncated or
 * rewritten shard, not a bad block). mu held. */
static bool rf_coll_skip_whole_shard(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_shard *sh = &e->shards[u->shard];
	if (sh->skipped_epoch != e->coll->epoch) {
		sh->skipped_epoch = e->coll->epoch;
		sh->skipped_blocks = 0;
	}
	if (sh->skipped_blocks + 1 < sh->index->blocks)
		return false;
	char m[RF_ERROR_MSG_BYTES];
	snprintf(m, sizeof(m),
	         "shard %s: every one of its %u block(s) failed; the skip policy leaves out "
	         "damaged blocks, never a whole shard: %s",
	         sh->name, sh->index->blocks, u->err_msg ? u->err_msg : "failed");
	free(u->err_msg);
	u->err_msg = strdup(m);
	return true;
}

/* The skip policy: unit u failed and its first record is needed at
 * stream position pos. Within the epoch's bounds it is skipped (its records are left
 * out of their batches, every position stays where it was); the count is
 * of blocks met, a block met before a resume position is already in the
 * resumed counts. Returns true when skipped. mu held. */
static bool rf_coll_skip_unit(rf_engine *e, rf_unit_slot *u, uint64_t pos) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->skip_blocks_max == 0 || rf_coll_skip_whole_shard(e, u))
		return false;
	bool counted = e->coll->epoch == e->resume_epoch && e->resume_pos > 0 &&
	               rf_unit_first_pos(e, u) < e->resume_pos;
	uint32_t blocks = e->coll->skip_blocks + (counted ? 0 : 1);
	uint64_t records = e->coll->skip_records + (counted ? 0 : u->records);
	if (blocks > e->skip_blocks_max || (e->skip_records_max && records > e->skip_records_max))
		return false;
	e->coll->skip_blocks = blocks;
	e->coll->skip_records = records;
	e->shards[u->shard].skipped_blocks++;
	rf_skip *s = &e->coll->skip_log[e->coll->skips++ % RF_SKIP_LOG];
	*s = (rf_skip){.shard = u->shard,
	               .block = u->block,
	               .records = u->records,
	               .epoch = e->coll->epoch,
	               .position = pos};
	snprintf(s->error, sizeof(s->error), "%s", u->err_msg ? u->err_msg : "failed");
	rf_unit_set(e, u, RF_U_SKIPPED);
	rf_frontier_advance(e);
	return true;
}

static void rf_coll_fail_unit(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	char m[RF_ERROR_MSG_BYTES];
	snprintf(m, sizeof(m), "%s (epoch %llu, batch %llu, stream position %llu)",
	         u->err_msg ? u->err_msg : "failed", (unsigned long long)e->coll->epoch,
	         (unsigned long long)e->coll->batch, (unsigned long long)e->coll->pos);
	rf_engine_finish(e, u->err_code, m);
}

static void rf_ref_record(void *ctx, uint64_t pos, const uint8_t **data, uint32_t *len)
{
	const rf_ebatch *b = ctx;
	const rf_rec_ref *r = &b->refs[pos - b->pub.first_record];
	*data = r->data;
	*len = r->len;
}

/* Fails the stream when the next batch cannot get memory and nothing can
 * free any; else the next release kicks the collator. mu held. */
static int rf_coll_no_budget(rf_engine *e, uint64_t reserve) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_memwait_asked(e->memwait, reserve);
	if (e->ready->head == e->ready->tail && e->ready->held == 0 &&
	    !rf_engine_host_wait(e, reserve, "the next batch")) {
		char m[RF_ERROR_MSG_BYTES];
		snprintf(m, sizeof(m),
		         "budget too small: the batch at stream position %llu of epoch %llu "
		         "needs %llu bytes and nothing else can be freed",
		         (unsigned long long)e->coll->pos, (unsigned long long)e->coll->epoch,
		         (unsigned long long)reserve);
		rf_engine_finish(e, RF_E_BUDGET, m);
		return RF_E_BUDGET;
	}
	e->coll->wait_budget = !e->coll->final;
	return e->coll->final ? RF_E_BUDGET : 0;
}

/* Reserves and allocates one batch of n records (bytes from
 * rf_collate_plan) and locates its records; a worker fills it. The batch
 * takes its place in the ready queue now, so batches stay in order however
 * fills finish. mu held; dropped while locating. Returns 1, 0 (wait for
 * budget) or a negative error (finished). */
static int rf_coll_emit(rf_engine *e, long n, uint64_t bytes) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t reserve = e->default_alloc ? rf_pool_class_bytes(bytes) : bytes;
	if (rf_budget_reserve(&e->budget, RF_MEM_BATCH, reserve, 0) < 0) {
		rf_memwait_blocked(e->memwait, true);
		return rf_coll_no_budget(e, reserve);
	}
	rf_memwait_granted(e->memwait);
	e->st->batch_reserved += reserve;
	uint64_t pos = e->coll->pos;
	rf_ebatch *b = NULL; /* recycled: no allocation in the steady state */
	int rc = rf_ebatch_get(e, (uint32_t)n, &b);
	if (rc == -ENOBUFS) {
		rf_budget_release(&e->budget, RF_MEM_BATCH, reserve);
		e->st->batch_reserved -= reserve;
		rf_memwait_blocked(e->memwait, true);
		return rf_coll_no_budget(e, reserve);
	}
	rf_rec_ref *refs = b ? b->refs : NULL;
	rf_engine_unlock(e);
	void *mem = refs ? e->alloc.alloc(e->alloc.ctx, bytes) : NULL;
	long kept = 0;
	rf_mixst_counts mix = {0};
	for (long i = 0; mem && i < n; i++) {
		uint32_t r;
		rf_unit_slot *u = rf_coll_locate(e, pos + (uint64_t)i, &r);
		if (u->state == RF_U_SKIPPED) /* a skipped block's record is left out */
			continue;
		rf_coll_record(e, pos + (uint64_t)i, &refs[kept].data, &refs[kept].len);
		rf_mixst_record(e, &mix, u->shard, refs[kept].len);
		if (e->fields.n)
			rf_fields_ref(u, r, &refs[kept]);
		kept++;
	}
	rf_engine_lock(e);
	if (!mem) {
		if (b)
			rf_ebatch_put(e, b);
		rf_budget_release(&e->budget, RF_MEM_BATCH, reserve);
		rf_engine_finish(e, -ENOMEM, "out of memory for a batch");
		return -ENOMEM;
	}
	*b = (rf_ebatch){.magic = RF_BATCH_MAGIC,
	                 .n = (uint32_t)kept,
	                 .skipped = (uint32_t)(n - kept),
	                 .skip_blocks = e->coll->skip_blocks,
	                 .skip_records = e->coll->skip_records,
	                 .refs = refs,
	                 .refs_cap = b->refs_cap,
	                 .mem = mem,
	                 .mem_bytes = bytes,
	                 .reserved_bytes = reserve,
	                 .end_pos = pos + (uint64_t)n,
	                 .mix = mix};
	b->pub.epoch = e->coll->epoch;
	b->pub.index = e->coll->batch;
	b->pub.first_record = pos;
	e->coll->pos += (uint64_t)n;
	e->coll->global += (uint64_t)n;
	b->global_end = e->coll->global;
	e->coll->batch++;
	if (e->coll->batches++ == 0)
		e->coll->first_batch_ns = rf_now_ns();
	e->coll->total_records += (uint64_t)n;
	e->st->produced++;
	rf_ready_push(e, b);
	e->fill->q[e->fill->q_tail++ % RF_READY_MAX] = b;
	rf_engine_wake_workers(e, 1); /* a filler */
	return 1;
}

/* Copies one planned batch's records (any worker, any order). mu held;
 * dropped while copying. */
void rf_fill_one(rf_engine *e, rf_ebatch *b) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_engine_unlock(e);
	rf_batch pub = b->pub;
	if (e->fields.n)
		rf_fields_fill(&e->fields, b);
	else
		rf_collate_fill(&e->cp, rf_ref_record, b, pub.first_record, b->n, b->mem,
		                b->mem_bytes, &b->pub);
	b->pub.epoch = pub.epoch;
	b->pub.index = pub.index;
	b->pub.first_record = pub.first_record;
	rf_engine_lock(e);
	b->filled = true; /* its refs stay with it, for its next use (recycle.c) */
	bool moved = false;
	while (e->fill->scan < e->ready->tail &&
	       e->ready->q[e->fill->scan % RF_READY_MAX]->filled) {
		rf_ebatch *f = e->ready->q[e->fill->scan % RF_READY_MAX];
		e->fill->epoch = f->pub.epoch;
		e->fill->pos = f->end_pos;
		e->fill->scan++;
		moved = true;
	}
	if (moved) {
		rf_engine_wake_consumer(e);
		e->coll->kick = true; /* the collator releases the units now copied */
	}
}

/* Builds the next batch if it can. Returns 1 when it made progress (a batch
 * or an epoch change), 0 when it must wait. mu held. */
static int rf_collate_one(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->stop || e->coll->final || e->ready->tail - e->ready->head >= e->sched->depth)
		return 0;
	if (e->coll->pos >= e->coll->records)
		return rf_coll_next_epoch(e);
	rf_unit_slot *failed = NULL, *which = NULL;
	uint64_t end = rf_resident_end(e, &failed);
	uint64_t avail = end > e->coll->pos ? end - e->coll->pos : 0;
	if (failed) {
		avail = rf_available_before_failure(e, failed, &which);
		if (avail == UINT64_MAX)
			return 0;
		if (avail == 0) {
			if (rf_coll_skip_unit(e, which, e->coll->pos))
				return 1;
			rf_coll_fail_unit(e, which);
			return 0;
		}
	}
	if (avail == 0) {
		rf_need(e, e->coll->pos + 1);
		return 0;
	}
	uint64_t bytes = 0;
	rf_error err = {0};
	uint64_t pos = e->coll->pos, records = e->coll->records; /* ours while running */
	rf_engine_unlock(e);
	long n = rf_collate_plan(&e->cp, rf_coll_record, e, pos, avail, records, &bytes, &err);
	rf_engine_lock(e);
	if (n < 0) {
		rf_engine_finish(e, (int)n, err.msg);
		return 0;
	}
	if (n == 0) {
		/* the batch needs the failed unit's record at coll_pos + avail */
		if (failed && rf_coll_skip_unit(e, which, e->coll->pos + avail))
			return 1;
		if (failed)
			rf_coll_fail_unit(e, which);
		else
			rf_need(e, e->coll->pos + avail + 1);
		return 0;
	}
	bytes += rf_fields_extra_bytes(&e->fields, (uint64_t)n);
	return rf_coll_emit(e, n, bytes) > 0;
}

/* A host budget object that shrank or was re-initialised under this loader
 * no longer enforces anything: the stream ends naming it, whether or not a
 * reservation is waiting on the host total (each batch taken runs the
 * collator, so the check follows the consumer). mu held. */
static void rf_host_check(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_error herr = {0};
	if (e->host && !e->coll->final && rf_hostbudget_verify(e->host, &herr) < 0)
		rf_engine_finish(e, herr.code, herr.msg);
}

void rf_collate_run(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->coll->running)
		return;
	rf_host_check(e);
	e->coll->running = true;
	do {
		e->coll->kick = false;
		e->coll->wait_budget = false;
		rf_release_emitted(e);
		while (rf_collate_one(e) > 0) {
		}
	} while (e->coll->kick && !e->stop && !e->coll->final);
	e->coll->running = false;
	if (e->sched->wait_budget)
		rf_engine_wake_loop(e); /* its no-progress check needs an idle collator */
}

/* ------------------------------------------------------------ at open */

int rf_coll_plan_new(rf_engine *e, const rf_plan_params *pp, rf_error *err) RF_ALONE
{
	return rf_engine_plan_new(e, pp, &e->coll->plan, err);
}

void rf_coll_start(rf_engine *e, uint64_t epoch, uint64_t at, uint64_t batch, size_t first,
                   uint64_t records, uint32_t skip_blocks, uint64_t skip_records,
                   bool ended) RF_ALONE
{
	e->coll->skip_blocks = skip_blocks;
	e->coll->skip_records = skip_records;
	e->coll->epoch = epoch;
	e->coll->pos = at;
	e->coll->batch = batch;
	e->coll->first_unit = first;
	e->coll->hint_unit = SIZE_MAX;
	e->fill->epoch = epoch;
	e->fill->pos = at;
	e->coll->records = records;
	e->coll->global = at;
	if (ended)
		rf_coll_final_set(e->coll, RF_END, NULL, "");
}

rf_ebatch *rf_fill_pop(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->fill->q_head == e->fill->q_tail)
		return NULL;
	return e->fill->q[e->fill->q_head++ % RF_READY_MAX];
}
