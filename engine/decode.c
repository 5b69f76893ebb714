/* decode.c - the worker threads: each owns one rf_decoder and decodes
 * fetched blocks into pool slabs reserved and allocated at admission (blocks finish in any
 * order); whichever worker finds the next batch's records resident collates
 * it, strictly in stream order, one collator at a time. Batch memory comes
 * from the loader's allocator and is reserved as RF_MEM_BATCH. */
#include "engine.h"
#include "hostbudget.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- units */

void rf_unit_release(rf_engine *e, rf_unit_slot *u)
{
	rf_read *rd = u->read; /* a decoded in_place unit's records are its bytes */
	if (rd && --rd->units_left == 0)
		rf_read_free(e, rd);
	if (u->slab_bytes) {
		rf_budget_release(&e->budget, RF_MEM_DECODED, u->slab_bytes);
		if (u->slab)
			rf_pool_put(e->pool, u->slab, u->slab_bytes);
	}
	free(u->err_msg);
	memset(u, 0, sizeof(*u));
}

void rf_frontier_advance(rf_engine *e)
{
	for (; e->frontier_seq < e->sched_seq; e->frontier_seq++) {
		uint8_t st = rf_slot(e, e->frontier_seq)->state;
		if (st != RF_U_DECODED && st != RF_U_SKIPPED) /* skipped: resident as nothing */
			break;
	}
}

/* Releases units whose records have all been copied into filled batches.
 * Only the collator calls it (it alone moves tail_seq). mu held. */
static void rf_release_emitted(rf_engine *e)
{
	bool any = false;
	while (e->tail_seq < e->frontier_seq) {
		rf_unit_slot *u = rf_slot(e, e->tail_seq);
		bool done = u->epoch < e->fill_epoch ||
		            (u->epoch == e->fill_epoch && u->release_pos <= e->fill_pos);
		if (!done)
			break;
		rf_unit_release(e, u);
		e->tail_seq++;
		any = true;
	}
	if (any)
		rf_engine_wake_loop(e);
}

void rf_engine_finish(rf_engine *e, int code, const char *msg)
{
	if (e->coll_final)
		return;
	e->coll_final = true;
	e->final_code = code;
	snprintf(e->final_msg, sizeof(e->final_msg), "%s", msg ? msg : "");
	pthread_cond_broadcast(&e->ready_cv);
	rf_engine_wake_loop(e);
}

/* Needed work (bytes, for `what`) did not fit and nothing here can free
 * memory. When only the host total refused it, the bytes are held by other
 * loaders, which give them back as their consumers go: keep waiting (the
 * loop thread retries every tick) for up to RF_HOSTBUDGET_FLOOR_MS, then end
 * the stream naming the host budget. Returns true while waiting. mu held. */
bool rf_engine_host_wait(rf_engine *e, uint64_t bytes, const char *what)
{
	if (!rf_budget_host_bound(&e->budget, bytes))
		return false;
	rf_error herr = {0};
	if (rf_hostbudget_error(e->host, &herr) < 0) {
		rf_engine_finish(e, herr.code, herr.msg); /* waiting cannot mend it */
		return true;
	}
	uint64_t now = rf_now_ns();
	if (e->host_wait_ns == 0)
		e->host_wait_ns = now;
	if (now - e->host_wait_ns < RF_HOSTBUDGET_FLOOR_MS * 1000000ull)
		return true;
	char m[RF_ERROR_MSG_BYTES];
	rf_hostbudget_info h = {0};
	rf_hostbudget_info_get(e->host, &h);
	snprintf(m, sizeof(m),
	         "host budget '%s' had no room for %s (%llu bytes) for %d ms: %llu of %llu "
	         "bytes held by %u loader(s) (raise --host-budget or lower the loaders' "
	         "budgets)",
	         rf_hostbudget_name(e->host), what, (unsigned long long)bytes,
	         RF_HOSTBUDGET_FLOOR_MS, (unsigned long long)h.used_bytes,
	         (unsigned long long)h.total_bytes, h.members);
	rf_engine_finish(e, RF_E_BUDGET, m);
	return true;
}

/* ----------------------------------------------------------- collation */

static rf_unit_slot *rf_coll_slot(rf_engine *e, uint64_t pos, uint32_t *record)
{
	size_t unit;
	rf_plan_locate(e->p_coll, pos, &unit, record);
	return rf_slot(e, e->coll_base_seq + (unit - e->coll_first_unit));
}

/* The collator's record callback: most consecutive positions fall in the
 * unit of the previous one (always without a record shuffle), so that unit
 * is tried before the plan's binary search. The hint is only ever a unit the
 * collator found resident, and only the collator releases units (moving
 * tail_seq), so the slot is stable while seq >= tail_seq. */
static void rf_coll_record(void *ctx, uint64_t pos, const uint8_t **data, uint32_t *len)
{
	rf_engine *e = ctx;
	uint64_t p = rf_plan_stream_to_plan(e->p_coll, pos);
	uint64_t seq = e->coll_base_seq + (e->coll_hint_unit - e->coll_first_unit);
	rf_unit_slot *u = rf_slot(e, seq);
	uint32_t r;
	if (e->coll_hint_unit != SIZE_MAX && seq >= e->tail_seq && p >= u->first_plan_record &&
	    p - u->first_plan_record < u->records) {
		r = (uint32_t)(p - u->first_plan_record);
	} else {
		size_t unit;
		rf_plan_locate(e->p_coll, pos, &unit, &r);
		e->coll_hint_unit = unit;
		u = rf_slot(e, e->coll_base_seq + (unit - e->coll_first_unit));
	}
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
static uint64_t rf_resident_end(rf_engine *e, rf_unit_slot **failed)
{
	uint64_t epoch, first;
	*failed = NULL;
	if (e->frontier_seq < e->sched_seq) {
		rf_unit_slot *u = rf_slot(e, e->frontier_seq);
		epoch = u->epoch;
		first = u->first_plan_record;
		if (u->state == RF_U_FAILED && epoch == e->coll_epoch)
			*failed = u;
	} else {
		epoch = e->sched_epoch;
		first = e->sched_done ? UINT64_MAX : e->sched_next_first;
		if (e->sched_done)
			epoch = UINT64_MAX;
	}
	if (epoch != e->coll_epoch)
		return epoch > e->coll_epoch ? e->coll_records : e->coll_pos;
	return RF_MIN(e->coll_records, rf_plan_resident_stream(e->p_coll, first));
}

/* The failed unit's window is settled when every unit starting before the
 * window's end is decoded or failed. mu held. */
static bool rf_window_settled(rf_engine *e, uint64_t window_end)
{
	for (uint64_t s = e->frontier_seq; s < e->sched_seq; s++) {
		rf_unit_slot *u = rf_slot(e, s);
		if (u->epoch != e->coll_epoch || u->first_plan_record >= window_end)
			return true;
		if (u->state != RF_U_DECODED && u->state != RF_U_FAILED && u->state != RF_U_SKIPPED)
			return false;
	}
	return e->sched_epoch != e->coll_epoch || e->sched_next_first >= window_end;
}

/* With a failed unit in reach: the exact count of positions from coll_pos
 * before the first record that lives in a failed unit (UINT64_MAX: wait).
 * mu held. */
static uint64_t rf_available_before_failure(rf_engine *e, rf_unit_slot *f, rf_unit_slot **which)
{
	uint64_t wplan = rf_plan_window_end(e->p_coll, f->first_plan_record);
	if (!rf_window_settled(e, wplan)) {
		e->need_global = RF_MAX(e->need_global, e->coll_global_start + wplan);
		return UINT64_MAX;
	}
	uint64_t wend = RF_MIN(e->coll_records, rf_plan_resident_stream(e->p_coll, wplan));
	for (uint64_t p = e->coll_pos; p < wend; p++) {
		uint32_t r;
		rf_unit_slot *u = rf_coll_slot(e, p, &r);
		if (u->state == RF_U_FAILED) {
			*which = u;
			return p - e->coll_pos;
		}
	}
	*which = f;
	return wend - e->coll_pos;
}

static void rf_need(rf_engine *e, uint64_t pos)
{
	uint64_t g = e->coll_global_start + rf_plan_need(e->p_coll, pos);
	if (g > e->need_global) {
		e->need_global = g;
		rf_engine_wake_loop(e);
	}
}

/* Moves the collator to the next epoch. mu held (dropped while planning). */
static int rf_coll_next_epoch(rf_engine *e)
{
	uint64_t next = e->coll_epoch + 1;
	if (next >= e->epoch_end) {
		rf_engine_finish(e, RF_END, NULL);
		return 0;
	}
	rf_epoch_info *ep = rf_epoch_slot(e, next);
	if (!ep->valid || ep->epoch != next)
		return 0; /* the scheduler has not reached it yet; it kicks us */
	rf_error err = {0};
	pthread_mutex_unlock(&e->mu);
	int rc = rf_plan_epoch(e->p_coll, next, &err);
	pthread_mutex_lock(&e->mu);
	if (rc < 0) {
		rf_engine_finish(e, rc, err.msg);
		return 0;
	}
	rf_epoch_slot(e, e->coll_epoch)->valid = false;
	e->coll_epoch = next;
	e->coll_pos = 0;
	e->coll_batch = 0;
	e->coll_skip_blocks = 0;
	e->coll_skip_records = 0;
	e->coll_base_seq = ep->base_seq;
	e->coll_first_unit = ep->first_unit;
	e->coll_hint_unit = SIZE_MAX;
	e->coll_records = ep->records;
	e->coll_global_start = ep->global_start;
	e->coll_global = ep->global_start;
	rf_release_emitted(e);
	rf_need(e, 1);
	return 1;
}

/* The stream position of the first record of unit u that this rank emits
 * (its windows' records come in permuted order): searched in the window
 * of its first record. mu held. */
static uint64_t rf_unit_first_pos(rf_engine *e, const rf_unit_slot *u)
{
	const rf_plan *p = e->p_coll;
	uint64_t a = rf_plan_resident_stream(p, u->first_plan_record);
	uint64_t b = rf_plan_resident_stream(p, rf_plan_window_end(p, u->first_plan_record));
	for (uint64_t pos = a; pos < b; pos++) {
		uint32_t r;
		if (rf_coll_slot(e, pos, &r) == u)
			return pos;
	}
	return b;
}

/* The skip policy: unit u failed and its first record is needed at
 * stream position pos. Within the epoch's bounds it is skipped (its records are left
 * out of their batches, every position stays where it was); the count is
 * of blocks met, a block met before a resume position is already in the
 * resumed counts. Returns true when skipped. mu held. */
static bool rf_coll_skip_unit(rf_engine *e, rf_unit_slot *u, uint64_t pos)
{
	if (e->skip_blocks_max == 0)
		return false;
	bool counted = e->coll_epoch == e->resume_epoch && e->resume_pos > 0 &&
	               rf_unit_first_pos(e, u) < e->resume_pos;
	uint32_t blocks = e->coll_skip_blocks + (counted ? 0 : 1);
	uint64_t records = e->coll_skip_records + (counted ? 0 : u->records);
	if (blocks > e->skip_blocks_max || (e->skip_records_max && records > e->skip_records_max))
		return false;
	e->coll_skip_blocks = blocks;
	e->coll_skip_records = records;
	rf_skip *s = &e->skip_log[e->skips++ % RF_SKIP_LOG];
	*s = (rf_skip){.shard = u->shard,
	               .block = u->block,
	               .records = u->records,
	               .epoch = e->coll_epoch,
	               .position = pos};
	snprintf(s->error, sizeof(s->error), "%s", u->err_msg ? u->err_msg : "failed");
	u->state = RF_U_SKIPPED;
	rf_frontier_advance(e);
	return true;
}

static void rf_coll_fail_unit(rf_engine *e, rf_unit_slot *u)
{
	char m[RF_ERROR_MSG_BYTES];
	snprintf(m, sizeof(m), "%s (epoch %llu, batch %llu, stream position %llu)",
	         u->err_msg ? u->err_msg : "failed", (unsigned long long)e->coll_epoch,
	         (unsigned long long)e->coll_batch, (unsigned long long)e->coll_pos);
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
static int rf_coll_no_budget(rf_engine *e, uint64_t reserve)
{
	e->wait_budget_bytes = reserve;
	if (e->ready_head == e->ready_tail && e->held == 0 &&
	    !rf_engine_host_wait(e, reserve, "the next batch")) {
		char m[RF_ERROR_MSG_BYTES];
		snprintf(m, sizeof(m),
		         "budget too small: the batch at stream position %llu of epoch %llu "
		         "needs %llu bytes and nothing else can be freed",
		         (unsigned long long)e->coll_pos, (unsigned long long)e->coll_epoch,
		         (unsigned long long)reserve);
		rf_engine_finish(e, RF_E_BUDGET, m);
		return RF_E_BUDGET;
	}
	e->coll_wait_budget = !e->coll_final;
	return e->coll_final ? RF_E_BUDGET : 0;
}

/* Reserves and allocates one batch of n records (bytes from
 * rf_collate_plan) and locates its records; a worker fills it. The batch
 * takes its place in the ready queue now, so batches stay in order however
 * fills finish. mu held; dropped while locating. Returns 1, 0 (wait for
 * budget) or a negative error (finished). */
static int rf_coll_emit(rf_engine *e, long n, uint64_t bytes)
{
	uint64_t reserve = e->default_alloc ? rf_pool_class_bytes(bytes) : bytes;
	if (rf_budget_reserve(&e->budget, RF_MEM_BATCH, reserve, 0) < 0) {
		e->budget_blocked = true;
		return rf_coll_no_budget(e, reserve);
	}
	e->budget_blocked = false;
	e->st_batch_reserved += reserve;
	e->host_wait_ns = 0;
	uint64_t pos = e->coll_pos;
	pthread_mutex_unlock(&e->mu);
	rf_ebatch *b = calloc(1, sizeof(*b));
	rf_rec_ref *refs = b ? malloc((size_t)n * sizeof(*refs)) : NULL;
	void *mem = refs ? e->alloc.alloc(e->alloc.ctx, bytes) : NULL;
	long kept = 0;
	for (long i = 0; mem && i < n; i++) {
		rf_coll_record(e, pos + (uint64_t)i, &refs[kept].data, &refs[kept].len);
		kept += refs[kept].data != NULL; /* a skipped block's record is left out */
	}
	pthread_mutex_lock(&e->mu);
	if (!mem) {
		free(refs);
		free(b);
		rf_budget_release(&e->budget, RF_MEM_BATCH, reserve);
		rf_engine_finish(e, -ENOMEM, "out of memory for a batch");
		return -ENOMEM;
	}
	*b = (rf_ebatch){.magic = RF_BATCH_MAGIC,
	                 .n = (uint32_t)kept,
	                 .skipped = (uint32_t)(n - kept),
	                 .skip_blocks = e->coll_skip_blocks,
	                 .skip_records = e->coll_skip_records,
	                 .refs = refs,
	                 .mem = mem,
	                 .mem_bytes = bytes,
	                 .reserved_bytes = reserve,
	                 .end_pos = pos + (uint64_t)n};
	b->pub.epoch = e->coll_epoch;
	b->pub.index = e->coll_batch;
	b->pub.first_record = pos;
	e->coll_pos += (uint64_t)n;
	e->coll_global += (uint64_t)n;
	b->global_end = e->coll_global;
	e->coll_batch++;
	e->coll_batches++;
	e->coll_total_records += (uint64_t)n;
	e->st_produced++;
	e->ready[e->ready_tail++ % RF_READY_MAX] = b;
	e->fillq[e->fillq_tail++ % RF_READY_MAX] = b;
	pthread_cond_signal(&e->work_cv);
	return 1;
}

/* Copies one planned batch's records (any worker, any order). mu held;
 * dropped while copying. */
static void rf_fill_one(rf_engine *e, rf_ebatch *b)
{
	pthread_mutex_unlock(&e->mu);
	rf_batch pub = b->pub;
	rf_collate_fill(&e->cp, rf_ref_record, b, pub.first_record, b->n, b->mem, b->mem_bytes,
	                &b->pub);
	b->pub.epoch = pub.epoch;
	b->pub.index = pub.index;
	b->pub.first_record = pub.first_record;
	free(b->refs);
	pthread_mutex_lock(&e->mu);
	b->refs = NULL;
	b->filled = true;
	bool moved = false;
	while (e->fill_scan < e->ready_tail && e->ready[e->fill_scan % RF_READY_MAX]->filled) {
		rf_ebatch *f = e->ready[e->fill_scan % RF_READY_MAX];
		e->fill_epoch = f->pub.epoch;
		e->fill_pos = f->end_pos;
		e->fill_scan++;
		moved = true;
	}
	if (moved) {
		pthread_cond_broadcast(&e->ready_cv);
		e->coll_kick = true; /* the collator releases the units now copied */
	}
}

/* Builds the next batch if it can. Returns 1 when it made progress (a batch
 * or an epoch change), 0 when it must wait. mu held. */
static int rf_collate_one(rf_engine *e)
{
	if (e->stop || e->coll_final || e->ready_tail - e->ready_head >= e->depth)
		return 0;
	if (e->coll_pos >= e->coll_records)
		return rf_coll_next_epoch(e);
	rf_unit_slot *failed = NULL, *which = NULL;
	uint64_t end = rf_resident_end(e, &failed);
	uint64_t avail = end > e->coll_pos ? end - e->coll_pos : 0;
	if (failed) {
		avail = rf_available_before_failure(e, failed, &which);
		if (avail == UINT64_MAX)
			return 0;
		if (avail == 0) {
			if (rf_coll_skip_unit(e, which, e->coll_pos))
				return 1;
			rf_coll_fail_unit(e, which);
			return 0;
		}
	}
	if (avail == 0) {
		rf_need(e, e->coll_pos + 1);
		return 0;
	}
	uint64_t bytes = 0;
	rf_error err = {0};
	pthread_mutex_unlock(&e->mu);
	long n = rf_collate_plan(&e->cp, rf_coll_record, e, e->coll_pos, avail, e->coll_records,
	                         &bytes, &err);
	pthread_mutex_lock(&e->mu);
	if (n < 0) {
		rf_engine_finish(e, (int)n, err.msg);
		return 0;
	}
	if (n == 0) {
		/* the batch needs the failed unit's record at coll_pos + avail */
		if (failed && rf_coll_skip_unit(e, which, e->coll_pos + avail))
			return 1;
		if (failed)
			rf_coll_fail_unit(e, which);
		else
			rf_need(e, e->coll_pos + avail + 1);
		return 0;
	}
	return rf_coll_emit(e, n, bytes) > 0;
}

/* A host budget object that shrank or was re-initialised under this loader
 * no longer enforces anything: the stream ends naming it, whether or not a
 * reservation is waiting on the host total (each batch taken runs the
 * collator, so the check follows the consumer). mu held. */
static void rf_host_check(rf_engine *e)
{
	rf_error herr = {0};
	if (e->host && !e->coll_final && rf_hostbudget_verify(e->host, &herr) < 0)
		rf_engine_finish(e, herr.code, herr.msg);
}

void rf_collate_run(rf_engine *e)
{
	if (e->collating)
		return;
	rf_host_check(e);
	e->collating = true;
	do {
		e->coll_kick = false;
		e->coll_wait_budget = false;
		rf_release_emitted(e);
		while (rf_collate_one(e) > 0) {
		}
	} while (e->coll_kick && !e->stop && !e->coll_final);
	e->collating = false;
	if (e->sched_wait_budget)
		rf_engine_wake_loop(e); /* its no-progress check needs an idle collator */
}

/* -------------------------------------------------------------- decode */

/* A frame that fails its checksum may have been damaged in transit: the
 * loop thread reads the same range again into the same buffer, at most
 * rereads_max times per unit. The unit keeps its read (the buffer stays
 * alive) and its slab; reads_inflight counts it so the budget deadlock
 * check waits for it. Returns false when out of re-reads. mu held. */
static bool rf_reread_queue(rf_engine *e, rf_unit_slot *u)
{
	if (u->rereads >= e->rereads_max || e->stop || !e->rereads)
		return false;
	u->rereads++;
	u->state = RF_U_READING;
	e->st_rereads++;
	e->reads_inflight++;
	e->rereads[e->rereads_tail++ & (e->ring_units - 1)] = u->seq;
	rf_engine_wake_loop(e);
	return true;
}

/* The open-time budget check sized the worst batch from the index's largest
 * record: a record larger than that is a lying index, reported as corrupt
 * input (naming the record) rather than as a "budget too small" later. */
static int rf_records_check(const rf_shard_index *ix, uint32_t block, const uint32_t *ends,
                            const char *url, rf_error *err)
{
	const rf_block_info *bi = &ix->block[block];
	for (uint32_t r = 0; r < bi->records; r++) {
		uint32_t len = rf_record_end(ends, r) - rf_record_end(ends, (int64_t)r - 1);
		if (len > ix->largest_record_bytes)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: block %u: record %u (record %llu of the shard) is %u "
			    "bytes, larger than the index's largest record of %u bytes "
			    "(corrupt index)",
			    url, block, r, (unsigned long long)(bi->first_record + r), len,
			    ix->largest_record_bytes);
	}
	return 0;
}

static void rf_decode_one(rf_engine *e, rf_decoder *dec, uint64_t seq)
{
	rf_unit_slot *u = rf_slot(e, seq);
	u->state = RF_U_DECODING;
	e->decoding++;
	pthread_mutex_unlock(&e->mu);
	rf_error err = {0};
	const rf_shard *sh = &e->shards[u->shard];
	const rf_shard_index *ix = sh->index;
	uint64_t t0 = rf_now_ns();
	uint8_t *slab = u->slab; /* allocated with the read (sched.c) */
	rf_unit_records recs = {0};
	int rc = slab ? sh->fmt->decode(dec, ix, sh->fmt_priv, u->block, u->read->buf + u->src_at,
	                                u->src_len, slab, u->slab_bytes, &recs, sh->name, &err)
	              : rf_fail(&err, -ENOMEM, "shard %s: block %u: no memory for its slab",
	                        sh->name, u->block);
	bool index_lies = false; /* the frame passed its checksum: re-reading cannot help */
	if (rc == 0 && recs.records != ix->block[u->block].records)
		rc = rf_fail(&err, RF_E_CORRUPT,
		             "shard %s: block %u: decoded %u records, the layout says %u", sh->name,
		             u->block, recs.records, ix->block[u->block].records);
	if (rc == 0) {
		rc = rf_records_check(ix, u->block, recs.ends, sh->name, &err);
		index_lies = rc < 0;
	}
	uint64_t t1 = rf_now_ns();
	pthread_mutex_lock(&e->mu);
	e->st_decode_ns += t1 - t0;
	e->decoding--;
	if (rc == RF_E_CORRUPT && !index_lies && rf_reread_queue(e, u))
		return;
	rf_read *rd = u->read;
	u->read = NULL;
	if (rc < 0) {
		if (u->rereads) {
			size_t l = strlen(err.msg);
			snprintf(err.msg + l, sizeof(err.msg) - l, " (still after %u re-reads)",
			         u->rereads);
		}
		rf_unit_fail(e, u, rc, err.msg); /* returns the slab */
	} else {
		u->slab = slab;
		u->base = recs.base;
		u->ends = recs.ends;
		u->state = RF_U_DECODED;
		e->st_decoded_bytes += ix->block[u->block].decoded_bytes;
		e->st_blocks++;
		if (sh->in_place) {
			u->read = rd; /* its bytes are the records: kept until the unit goes */
			rd = NULL;
		}
	}
	if (rd && --rd->units_left == 0)
		rf_read_free(e, rd);
	rf_frontier_advance(e);
	rf_engine_wake_loop(e);
}

void *rf_worker_main(void *arg)
{
	rf_engine *e = arg;
	rf_decoder *dec = rf_decoder_new();
	pthread_mutex_lock(&e->mu);
	if (!dec)
		rf_engine_finish(e, -ENOMEM, "out of memory for a decoder");
	while (!e->stop) {
		if (e->fillq_head != e->fillq_tail) {
			rf_fill_one(e, e->fillq[e->fillq_head++ % RF_READY_MAX]);
			continue;
		}
		if (dec && e->jobs_head != e->jobs_tail) {
			uint64_t seq = e->jobs[e->jobs_head++ & (e->ring_units - 1)];
			rf_decode_one(e, dec, seq);
			e->coll_kick = true;
		}
		if (e->coll_kick && !e->collating) {
			rf_collate_run(e);
			continue;
		}
		bool work = e->fillq_head != e->fillq_tail ||
		            (dec && e->jobs_head != e->jobs_tail) ||
		            (e->coll_kick && !e->collating);
		/* stop may have been set (and broadcast) while mu was dropped above */
		if (!work && !e->stop)
			pthread_cond_wait(&e->work_cv, &e->mu);
	}
	pthread_mutex_unlock(&e->mu);
	rf_decoder_free(dec);
	return NULL;
}
