/* api.c - the public loader API: rf_open (URLs -> shard indexes -> plan ->
 * budget checks -> threads), rf_next / rf_release / rf_state_save on the
 * consumer's side, and rf_close (also mid-stream). The stats live in
 * stats.c. */
#include "engine.h"
#include "hostbudget.h"
#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define RF_DECODER_SCRATCH_BYTES (256u << 10) /* one zstd DCtx, generously */

static void *rf_default_alloc(void *ctx, size_t bytes)
{
	return rf_pool_get(ctx, rf_pool_class_bytes(bytes));
}

static void rf_default_free(void *ctx, void *ptr, size_t bytes)
{
	rf_pool_put(ctx, ptr, rf_pool_class_bytes(bytes));
}

/* ------------------------------------------------------------- teardown */

static void rf_batch_free(rf_engine *e, rf_ebatch *b)
{
	free(b->refs);
	rf_budget_release(&e->budget, RF_MEM_BATCH, b->reserved_bytes);
	e->alloc.free(e->alloc.ctx, b->mem, b->mem_bytes);
	b->magic = 0;
	free(b);
}

static void rf_engine_stop_threads(rf_engine *e)
{
	pthread_mutex_lock(&e->mu);
	e->stop = true;
	pthread_cond_broadcast(&e->work_cv);
	pthread_cond_broadcast(&e->ready_cv);
	pthread_cond_broadcast(&e->open_cv);
	pthread_mutex_unlock(&e->mu);
	for (uint32_t i = 0; i < e->workers_started; i++)
		pthread_join(e->workers[i], NULL);
	e->workers_started = 0;
	/* The loop thread tears down only after seeing workers_done under mu, and
	 * clears e->loop under mu: waking it here cannot touch a freed loop. */
	pthread_mutex_lock(&e->mu);
	e->workers_done = true;
	if (e->loop)
		rf_loop_wake(e->loop);
	pthread_mutex_unlock(&e->mu);
	if (e->loop_started) {
		pthread_join(e->loop_thread, NULL);
		e->loop_started = false;
	}
}

static void rf_engine_free(rf_engine *e)
{
	rf_engine_stop_threads(e);
	/* Threads are gone and the ring is drained: every buffer is ours. */
	while (e->ready_head != e->ready_tail)
		rf_batch_free(e, e->ready[e->ready_head++ % RF_READY_MAX]);
	for (rf_ebatch *b = e->held_list; b;) {
		rf_ebatch *next = b->next;
		rf_batch_free(e, b);
		b = next;
	}
	if (e->ring) {
		for (uint64_t s = e->tail_seq; s < e->sched_seq; s++) {
			rf_unit_slot *u = rf_slot(e, s);
			rf_read *rd = u->read;
			u->read = NULL; /* set only on units not decoded yet */
			if (rd && --rd->units_left == 0)
				rf_read_free(e, rd);
			rf_unit_release(e, u);
		}
	}
	rf_control_free(e);
	rf_plan_free(e->p_sched);
	rf_plan_free(e->p_coll);
	free(e->seq);
	free(e->ring);
	free(e->jobs);
	free(e->rereads);
	free(e->workers);
	free(e->indexes);
	rf_shards_free(e->shards, e->nshards);
	rf_pool_free(e->pool);
	rf_budget_destroy(&e->budget); /* gives its host bytes back first */
	rf_hostbudget_close(e->host);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->work_cv);
	pthread_cond_destroy(&e->ready_cv);
	pthread_cond_destroy(&e->open_cv);
	rf_config_free(e->cfg);
	e->magic = 0;
	free(e);
}

/* ----------------------------------------------------------------- open */

/* Starts the loop thread and waits for it to read every shard's index. */
static int rf_open_indexes(rf_engine *e, rf_error *err)
{
	for (uint32_t i = 0; i < e->nshards; i++) {
		e->shards[i].engine = (struct rf_engine *)e;
		e->shards[i].idx = i;
	}
	e->rereads_max = (uint32_t)rf_cfg(e->cfg, RF_CFG_retries);
	int rc = pthread_create(&e->loop_thread, NULL, rf_sched_main, e);
	if (rc != 0)
		return rf_fail(err, -rc, "cannot start the loop thread: %s", strerror(rc));
	e->loop_started = true;
	pthread_mutex_lock(&e->mu);
	while (e->open_stage == 0)
		pthread_cond_wait(&e->open_cv, &e->mu);
	pthread_mutex_unlock(&e->mu);
	if (e->open_code < 0)
		return rf_fail(err, e->open_code, "%s", e->open_msg);
	e->indexes = calloc(e->nshards, sizeof(*e->indexes));
	if (!e->indexes)
		return rf_fail(err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < e->nshards; i++)
		e->indexes[i] = e->shards[i].index;
	return 0;
}

/* Reserves open-phase metadata (RF_MEM_METADATA) before it is allocated;
 * rf_open_budget trues the total up. what: the message's subject. */
static int rf_open_meta(rf_engine *e, uint64_t bytes, const char *what, rf_error *err)
{
	if (rf_budget_reserve(&e->budget, RF_MEM_METADATA, bytes, 0) == 0) {
		e->open_meta_bytes += bytes;
		return 0;
	}
	char lim[32], held[32];
	return rf_fail(err, RF_E_BUDGET,
	               "budget %s is too small for %s: %llu more bytes needed on top of the %s "
	               "of metadata held so far (raise budget)",
	               rf_fmt_bytes(e->budget.limit_bytes, lim, sizeof(lim)), what,
	               (unsigned long long)bytes,
	               rf_fmt_bytes(e->open_meta_bytes, held, sizeof(held)));
}

/* A shard's entry and its strings (the name shares the URL's when equal). */
static uint64_t rf_shard_entry_bytes(const rf_shard *s)
{
	uint64_t n = sizeof(*s) + strlen(s->url) + 1;
	return s->name == s->url ? n : n + strlen(s->name) + 1;
}

/* The shard list (allocated by expand: reserved at once, before any index). */
static int rf_open_shard_list(rf_engine *e, rf_error *err)
{
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < e->nshards; i++)
		bytes += rf_shard_entry_bytes(&e->shards[i]);
	char what[64];
	snprintf(what, sizeof(what), "the list of %u shard(s)", e->nshards);
	return rf_open_meta(e, bytes, what, err);
}

/* The most one plan of these shards can take (plan.c: per shard, per block,
 * per unit of the largest rank slice, two cached window permutations);
 * rf_open_plan reserves it before planning and keeps what the plans report. */
static uint64_t rf_plan_bytes_bound(const rf_engine *e, uint64_t window)
{
	uint64_t blocks = 0, records = 0, world = rf_cfg(e->cfg, RF_CFG_world);
	for (uint32_t i = 0; i < e->nshards; i++) {
		blocks += e->indexes[i]->blocks;
		records += e->indexes[i]->records;
	}
	uint64_t units = (blocks + world - 1) / world + 1;
	return 4096 + (uint64_t)(e->nshards + 1) * (sizeof(uint64_t) + sizeof(uint32_t)) +
	       (blocks + 1) * sizeof(uint32_t) + units * sizeof(rf_unit) +
	       4 * RF_MIN(window, records) * sizeof(uint32_t);
}

/* The largest batch: batch_records records of the largest record (or
 * pad_to), limited by batch_bytes. */
static uint64_t rf_batch_worst(const rf_engine *e, uint32_t largest_record, uint64_t records)
{
	uint64_t n = RF_MIN((uint64_t)e->cp.batch_records, RF_MAX(records, 1));
	uint64_t payload;
	if (e->cp.pad_to)
		payload = n * e->cp.pad_to;
	else if (e->cp.batch_bytes)
		payload = RF_MIN(n * largest_record, RF_MAX(e->cp.batch_bytes, largest_record));
	else
		payload = n * largest_record;
	uint64_t bytes = rf_collate_bytes((uint32_t)n, payload);
	return e->default_alloc ? rf_pool_class_bytes(bytes) : bytes;
}

/* Joins the host budget (host_budget > 0), holding this loader's minimum
 * working set from it for the loader's life (see budget.h). */
static int rf_open_host_budget(rf_engine *e, uint64_t floor_bytes, rf_error *err)
{
	uint64_t total = rf_cfg(e->cfg, RF_CFG_host_budget);
	if (total == 0)
		return 0;
	const char *name = rf_cfg_str(e->cfg, RF_CFG_host_budget_name);
	RF_TRY(rf_hostbudget_open(name ? name : "default", total, &e->host, err));
	return rf_budget_attach_host(&e->budget, e->host, floor_bytes,
	                             (uint32_t)rf_cfg(e->cfg, RF_CFG_host_loaders),
	                             RF_HOSTBUDGET_FLOOR_MS, err);
}

/* The most units with records that a span of `span` plan positions starting
 * at a multiple of `align` touches in the plan's current epoch (exact for that
 * epoch). rf_plan_units_in_window_max bounds every epoch but assumes all the
 * smallest blocks side by side, which overstates real datasets (each shard's
 * short last block) many times over. */
static uint32_t rf_span_units(const rf_plan *plan, uint64_t align, uint64_t span)
{
	size_t n = rf_plan_unit_count(plan);
	uint64_t records = rf_plan_epoch_records(plan);
	uint32_t best = 0;
	size_t lo = 0; /* first unit ending after the span's start */
	for (uint64_t start = 0; start < records; start += align) {
		uint64_t end = RF_MIN(records, start + span);
		while (lo < n && rf_plan_unit(plan, lo)->first_plan_record +
		                         rf_plan_unit(plan, lo)->records <=
		                     start)
			lo++;
		uint32_t count = 0;
		for (size_t u = lo; u < n && rf_plan_unit(plan, u)->first_plan_record < end; u++)
			count +=
			    rf_plan_unit(plan, u)->records > 0 && !rf_plan_unit(plan, u)->unused;
		best = RF_MAX(best, count);
	}
	return best;
}

/* The plan positions whose units must be resident together for one batch
 * (a span starting at a multiple of *align): every shuffle window
 * its records fall in (a batch of more records than a window spans several
 * windows; the collator plans it only once all of them are resident), plus
 * the next window when a batch can straddle a window boundary; without a
 * window, the blocks one batch covers (two batch-sized spans when batches
 * need not start at multiples of the batch size). */
static uint64_t rf_batch_span(const rf_engine *e, uint64_t avg_record_bytes, uint64_t *align)
{
	uint64_t w = e->window, b = e->cp.batch_records;
	/* With world > 1 (or a re-split resume) the rank's local plan positions
	 * do not start on a window or batch boundary: count one span more. */
	bool aligned = rf_plan_params_of(e->p_sched)->world == 1 && !e->cfg->has_resume;
	bool fixed = e->cp.batch_bytes == 0 && aligned; /* batches start at multiples of b */
	if (!fixed)
		b = RF_MIN(b, RF_MAX(1, e->cp.batch_bytes / RF_MAX(1, avg_record_bytes)));
	if (w > 1) {
		uint64_t span = (b + w - 1) / w * w;
		bool straddle = !fixed || (b % w != 0 && w % b != 0);
		*align = w;
		return straddle ? span + w : span;
	}
	*align = b;
	return fixed ? b : 2 * b;
}

/* The unit ring holds every unit from the oldest one not released to the
 * end of what the collator waits for: all the units one batch's windows
 * touch, in any epoch (a window of 5000 one-block records that a batch
 * straddles is 10000 units, more than RF_UNITS_RING: the scheduler stopped
 * at the ring's end while the collator waited for the window's last units).
 * At least RF_UNITS_RING (room to read ahead), a power of 2. */
static uint64_t rf_ring_units(const rf_engine *e, uint64_t span_records)
{
	uint64_t need = rf_plan_span_units_max(e->p_sched, span_records) + 2ull * e->threads + 2;
	uint64_t ring = RF_UNITS_RING;
	while (ring < need)
		ring *= 2;
	return ring;
}

/* What the largest resident unit of an in_place shard holds: its stored
 * bytes (the read's buffer, kept as its records' bytes) and its record
 * table; 0 for other formats (their slab is the decoded bytes). */
static uint64_t rf_resident_unit_bytes(const rf_engine *e, const rf_shard *s)
{
	if (!s->in_place)
		return 0;
	uint64_t most = 0;
	for (uint32_t b = 0; b < s->index->blocks; b++)
		most = RF_MAX(most, rf_unit_slab_bytes(s, &s->index->block[b]));
	return most + rf_pool_class_bytes((uint64_t)s->index->largest_block_compressed_bytes +
	                                  e->read_align);
}

/* Budget check at open: one window of the largest blocks (compressed +
 * decoded), one batch, the metadata and the decoders must fit. */
static int rf_open_budget(rf_engine *e, rf_error *err)
{
	uint32_t big_c = 0, big_d = 0, big_r = 0;
	uint64_t records = 0, meta = 0;
	for (uint32_t i = 0; i < e->nshards; i++) {
		const rf_shard_index *ix = e->indexes[i];
		big_c = RF_MAX(big_c, ix->largest_block_compressed_bytes);
		big_d = RF_MAX(big_d, ix->largest_block_decoded_bytes);
		big_r = RF_MAX(big_r, ix->largest_record_bytes);
		records += ix->records;
		meta += e->shards[i].fmt_held + rf_shard_entry_bytes(&e->shards[i]) +
		        rf_source_memory_bytes(e->shards[i].src);
	}
	meta += rf_plan_memory_bytes(e->p_sched) + rf_plan_memory_bytes(e->p_coll);
	uint64_t scratch = (uint64_t)e->threads * RF_DECODER_SCRATCH_BYTES;
	uint64_t blocks = 0, decoded = 0;
	for (uint32_t i = 0; i < e->nshards; i++) {
		blocks += e->indexes[i]->blocks;
		decoded += e->indexes[i]->decoded_bytes;
	}
	uint64_t align, span = rf_batch_span(e, decoded / RF_MAX(records, 1), &align);
	e->ring_units = rf_ring_units(e, span);
	meta += e->ring_units * (sizeof(rf_unit_slot) + sizeof(uint64_t)) + sizeof(*e);
	e->block_records_avg = RF_MAX(1, records / RF_MAX(blocks, 1));
	/* Resident blocks need their decoded slabs; only blocks in flight also
	 * hold compressed bytes, and one at a time is enough to make progress. */
	uint32_t units = RF_MAX(1, rf_span_units(e->p_sched, align, span));
	rf_fetch_options fo;
	rf_config_fetch_options(e->cfg, &fo);
	e->read_align = fo.direct_io != RF_DIRECT_IO_OFF ? 4096u : 0; /* O_DIRECT's alignment */
	uint64_t slab = rf_pool_class_bytes(big_d);
	for (uint32_t i = 0; i < e->nshards; i++)
		slab = RF_MAX(slab, rf_resident_unit_bytes(e, &e->shards[i]));
	uint64_t frame = rf_pool_class_bytes((uint64_t)big_c + e->read_align);
	e->batch_worst_bytes = rf_batch_worst(e, big_r, records);
	uint64_t need = units * slab + frame + e->batch_worst_bytes + meta + scratch;
	if (need > e->budget.limit_bytes) {
		char b[6][32];
		return rf_fail(err, RF_E_BUDGET,
		               "budget %s is too small: needs at least %llu bytes (%s): %u decoded "
		               "block(s) of %s for one batch's shuffle window(s), one compressed "
		               "block of %s, one batch of %s, %s of metadata and decoders",
		               rf_fmt_bytes(e->budget.limit_bytes, b[0], sizeof(b[0])),
		               (unsigned long long)need, rf_fmt_bytes(need, b[1], sizeof(b[1])),
		               units, rf_fmt_bytes(slab, b[2], sizeof(b[2])),
		               rf_fmt_bytes(frame, b[3], sizeof(b[3])),
		               rf_fmt_bytes(e->batch_worst_bytes, b[4], sizeof(b[4])),
		               rf_fmt_bytes(meta + scratch, b[5], sizeof(b[5])));
	}
	RF_TRY(rf_open_host_budget(e, need, err));
	/* the open phase reserved most of it as it allocated: true it up */
	if (meta > e->open_meta_bytes)
		rf_budget_reserve(&e->budget, RF_MEM_METADATA, meta - e->open_meta_bytes, 0);
	else
		rf_budget_release(&e->budget, RF_MEM_METADATA, e->open_meta_bytes - meta);
	e->open_meta_bytes = meta;
	rf_budget_reserve(&e->budget, RF_MEM_SCRATCH, scratch, 0);
	e->fixed_bytes = meta + scratch;
	e->stage_bytes = (units + 2ull * e->threads + 1) * (slab + frame);
	return 0;
}

/* Sets both plans' sequence for the resumed epoch. */
static int rf_open_sequence(rf_engine *e, uint64_t epoch, uint64_t start, rf_error *err)
{
	const rf_segment *segs = e->seq_set ? e->seq : NULL;
	RF_TRY(rf_plan_set_sequence(e->p_sched, epoch, segs, e->nseq, start, err));
	RF_TRY(rf_plan_set_sequence(e->p_coll, epoch, segs, e->nseq, start, err));
	e->seq_epoch = epoch;
	return 0;
}

/* A saved position in `now`'s terms: the same partition (world and tail
 * policy) continues at the saved record (any batch size); another one takes
 * what no rank of the saved world had taken, re-split over this world. */
static int rf_open_resume(rf_engine *e, rf_position *saved, rf_position *now, rf_error *err)
{
	RF_TRY(rf_state_check(saved, now, err));
	if (saved->epoch < e->epoch_first)
		return rf_fail(err, -EINVAL, "resume state is at epoch %llu, before epoch %llu",
		               (unsigned long long)saved->epoch,
		               (unsigned long long)e->epoch_first);
	now->epoch = saved->epoch;
	now->skipped = saved->skipped;
	now->skipped_blocks = saved->skipped_blocks;
	if (saved->world == now->world && saved->pad == now->pad) {
		now->record = saved->record;
		now->batch = saved->batch;
		e->seq = saved->segs;
		e->nseq = saved->nsegs;
		e->seq_set = saved->has_seq;
		saved->segs = NULL;
		saved->nsegs = 0;
	} else {
		RF_TRY(rf_state_remaining(saved, &e->seq, &e->nseq, err));
		e->seq_set = true;
		if (e->nseq == 0) { /* every record of the epoch was taken */
			now->epoch++;
			now->skipped = now->skipped_blocks = 0;
			e->seq_set = false;
		}
	}
	if (now->epoch >= e->epoch_end)
		return 0;
	return rf_open_sequence(e, now->epoch, now->record, err);
}

/* Batches of `records` records from `start` on, after `done` batches. */
static uint64_t rf_epoch_batches(const rf_engine *e, uint64_t records, uint64_t start,
                                 uint64_t done)
{
	if (e->cp.batch_bytes > 0)
		return 0; /* byte-limited: known only once read (world 1 only) */
	uint64_t b = e->cp.batch_records, left = records > start ? records - start : 0;
	return done + (left + b - 1) / b;
}

/* The counts of the first epoch and of every later one (for the stats). */
static void rf_open_counts(rf_engine *e, uint64_t epoch, uint64_t records, uint64_t at,
                           uint64_t done)
{
	e->ep_first = (struct rf_epoch_count){
	    .epoch = epoch, .records = records, .batches = rf_epoch_batches(e, records, at, done)};
	rf_plan_epoch_tail(e->p_sched, &e->ep_first.tail);
	if (epoch >= e->epoch_end) /* the saved run had already ended */
		e->ep_first.records = e->ep_first.batches = 0;
	uint64_t n = rf_plan_total_records(e->p_sched);
	e->ep_next.records = rf_plan_partition(e->p_sched, n, 0, &e->ep_next.tail);
	e->ep_next.batches = rf_epoch_batches(e, e->ep_next.records, 0, 0);
}

/* Plans, resume position and the first epoch's bookkeeping. */
static int rf_open_plan(rf_engine *e, rf_error *err)
{
	const rf_config *c = e->cfg;
	bool drop_last = rf_cfg(c, RF_CFG_drop_last) != 0 && e->cp.batch_bytes == 0;
	rf_plan_params pp = {.seed = rf_cfg(c, RF_CFG_seed),
	                     .rank = (uint32_t)rf_cfg(c, RF_CFG_rank),
	                     .world = (uint32_t)rf_cfg(c, RF_CFG_world),
	                     .shuffle = rf_cfg(c, RF_CFG_shuffle) != 0,
	                     .shuffle_window = (uint32_t)rf_cfg(c, RF_CFG_shuffle_window),
	                     .pad = rf_cfg(c, RF_CFG_pad_tail) != 0,
	                     .drop_last = drop_last ? e->cp.batch_records : 0};
	e->window = pp.shuffle && pp.shuffle_window > 1 ? pp.shuffle_window : 1;
	uint64_t bound = 2 * rf_plan_bytes_bound(e, e->window);
	char what[96];
	snprintf(what, sizeof(what), "the plans (two, of %u shard(s))", e->nshards);
	RF_TRY(rf_open_meta(e, bound, what, err));
	RF_TRY(rf_plan_new(&pp, e->indexes, e->nshards, &e->p_sched, err));
	RF_TRY(rf_plan_new(&pp, e->indexes, e->nshards, &e->p_coll, err));
	uint64_t planned = rf_plan_memory_bytes(e->p_sched) + rf_plan_memory_bytes(e->p_coll);
	rf_budget_release(&e->budget, RF_MEM_METADATA, bound);
	e->open_meta_bytes -= bound;
	RF_TRY(rf_open_meta(e, planned, what, err));
	rf_position pos = {.epoch = e->epoch_first};
	rf_state_identity(e->p_sched, &pos);
	e->seq_epoch = UINT64_MAX;
	if (c->has_resume) {
		rf_position saved;
		RF_TRY(rf_state_decode(c->resume_buf, c->resume_len, &saved, err));
		int rc = rf_open_resume(e, &saved, &pos, err);
		rf_position_clear(&saved);
		RF_TRY(rc);
	}
	e->pos = pos;
	e->coll_skip_blocks = pos.skipped_blocks;
	e->coll_skip_records = pos.skipped;
	e->resume_epoch = pos.epoch;
	e->resume_pos = pos.record;
	e->pos.segs = e->seq;
	e->pos.nsegs = e->nseq;
	uint64_t epoch = pos.epoch;
	RF_TRY(rf_plan_epoch(e->p_sched, epoch, err));
	RF_TRY(rf_plan_epoch(e->p_coll, epoch, err));
	uint64_t records = rf_plan_epoch_records(e->p_sched);
	if (pos.record > records)
		return rf_fail(err, -EINVAL, "resume state is at record %llu of an epoch of %llu",
		               (unsigned long long)pos.record, (unsigned long long)records);
	if (records == 0 && e->epoch_end == UINT64_MAX)
		return rf_fail(
		    err, -EINVAL,
		    "rank %llu of %llu gets no records in epoch %llu (too few blocks for "
		    "the world size?): endless epochs would never deliver a batch",
		    (unsigned long long)rf_cfg(c, RF_CFG_rank),
		    (unsigned long long)rf_cfg(c, RF_CFG_world), (unsigned long long)epoch);
	rf_open_counts(e, epoch, records, pos.record, pos.batch);
	uint64_t at = pos.record;
	size_t first = rf_plan_first_unit_needed(e->p_sched, at);
	rf_epoch_info *ep = rf_epoch_slot(e, epoch);
	*ep = (rf_epoch_info){.valid = true,
	                      .epoch = epoch,
	                      .records = records,
	                      .first_unit = first,
	                      .units = rf_plan_unit_count(e->p_sched)};
	ep->span = RF_MAX(records, rf_plan_epoch_plan_records(e->p_sched));
	e->sched_epoch = e->coll_epoch = epoch;
	e->sched_unit = first;
	e->sched_next_first =
	    first < ep->units ? rf_plan_unit(e->p_sched, first)->first_plan_record : ep->span;
	e->coll_pos = at;
	e->coll_batch = pos.batch;
	e->coll_first_unit = first;
	e->coll_hint_unit = SIZE_MAX;
	e->fill_epoch = epoch;
	e->fill_pos = at;
	e->coll_records = records;
	e->coll_global = e->consumer_global = at;
	e->need_global = rf_plan_need(e->p_sched, at + 1);
	if (epoch >= e->epoch_end) { /* the saved run had already ended */
		e->sched_done = true;
		e->coll_final = true;
		e->final_code = RF_END;
	}
	return 0;
}

static int rf_open_threads(rf_engine *e, rf_error *err)
{
	e->ring = calloc(e->ring_units, sizeof(*e->ring));
	e->jobs = calloc(e->ring_units, sizeof(*e->jobs));
	e->rereads = calloc(e->ring_units, sizeof(*e->rereads));
	e->workers = calloc(e->threads, sizeof(*e->workers));
	if (!e->ring || !e->jobs || !e->rereads || !e->workers)
		return rf_fail(err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < e->threads; i++) {
		int rc = pthread_create(&e->workers[i], NULL, rf_worker_main, e);
		if (rc != 0)
			return rf_fail(err, -rc, "cannot start decode thread %u: %s", i,
			               strerror(rc));
		e->workers_started++;
	}
	pthread_mutex_lock(&e->mu);
	e->t_open_ns = rf_now_ns();
	e->go = true;
	e->coll_kick = true; /* e.g. a resume at an epoch's end has nothing to fetch */
	pthread_cond_broadcast(&e->open_cv);
	pthread_cond_signal(&e->work_cv);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

/* Settings that cannot give every rank the same batches, refused saying
 * why and what to set. */
static int rf_open_check_batches(const rf_engine *e, rf_error *err)
{
	if (e->cp.batch_bytes > 0 && rf_cfg(e->cfg, RF_CFG_world) > 1)
		return rf_fail(err, -EINVAL,
		               "batch_bytes with world %llu: byte-limited batches hold different "
		               "numbers of records, so ranks would take different numbers of "
		               "batches and a collective step would hang at the epoch's end; set "
		               "batch (records per batch) and batch_bytes=0",
		               (unsigned long long)rf_cfg(e->cfg, RF_CFG_world));
	if (e->cp.batch_bytes > 0 && rf_cfg(e->cfg, RF_CFG_drop_last))
		return rf_fail(err, -EINVAL,
		               "drop_last with batch_bytes: a byte-limited batch has no fixed size "
		               "to be partial against; set batch (records per batch) and "
		               "batch_bytes=0, or drop_last=0");
	return 0;
}

static int rf_engine_setup(rf_engine *e, const rf_config *cfg, rf_error *err)
{
	if (!(e->cfg = rf_config_dup(cfg)))
		return rf_fail(err, -ENOMEM, "out of memory");
	const rf_config *c = e->cfg;
	if (rf_cfg(c, RF_CFG_rank) >= rf_cfg(c, RF_CFG_world))
		return rf_fail(err, -EINVAL, "rank %llu is not below world size %llu",
		               (unsigned long long)rf_cfg(c, RF_CFG_rank),
		               (unsigned long long)rf_cfg(c, RF_CFG_world));
	rf_config_collate_params(c, &e->cp);
	RF_TRY(rf_collate_check(&e->cp, err));
	RF_TRY(rf_config_format_options(c, &e->fmt_opt, err));
	RF_TRY(rf_open_check_batches(e, err));
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	e->threads = (uint32_t)rf_cfg(c, RF_CFG_threads);
	if (e->threads == 0)
		e->threads = (uint32_t)RF_MAX(1, RF_MIN(cores, 64));
	e->depth = (uint32_t)rf_cfg(c, RF_CFG_depth);
	e->skip_blocks_max = (uint32_t)rf_cfg(c, RF_CFG_skip_blocks);
	e->skip_records_max = rf_cfg(c, RF_CFG_skip_records);
	e->request_bytes = rf_cfg(c, RF_CFG_request_size);
	e->epoch_first = rf_cfg(c, RF_CFG_epoch);
	e->epoch_end =
	    rf_cfg(c, RF_CFG_epochs) ? e->epoch_first + rf_cfg(c, RF_CFG_epochs) : UINT64_MAX;
	e->budget.limit_bytes = rf_cfg(c, RF_CFG_budget);
	if (rf_pool_new(&e->budget, &e->pool) < 0)
		return rf_fail(err, -ENOMEM, "out of memory");
	e->default_alloc = !c->has_alloc;
	e->alloc = c->has_alloc ? c->alloc
	                        : (rf_allocator){.alloc = rf_default_alloc,
	                                         .free = rf_default_free,
	                                         .ctx = e->pool};
	RF_TRY(rf_expand_urls(c, &e->shards, &e->nshards, err));
	RF_TRY(rf_open_shard_list(e, err));
	RF_TRY(rf_open_indexes(e, err));
	RF_TRY(rf_open_plan(e, err));
	RF_TRY(rf_open_budget(e, err));
	RF_TRY(rf_control_new(e, err));
	return rf_open_threads(e, err);
}

RF_API rf_loader *rf_open(const rf_config *cfg, rf_error *err)
{
	rf_error_clear(err);
	if (!cfg || cfg->magic == 0) {
		rf_fail(err, -EINVAL, "rf_open: no config");
		return NULL;
	}
	rf_engine *e = calloc(1, sizeof(*e));
	if (!e) {
		rf_fail(err, -ENOMEM, "out of memory");
		return NULL;
	}
	e->magic = RF_LOADER_MAGIC;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->work_cv, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* rf_next's deadlines */
	pthread_cond_init(&e->ready_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&e->open_cv, NULL);
	rf_budget_init(&e->budget, 0);
	rf_error local = {0};
	int rc = rf_engine_setup(e, cfg, err ? err : &local);
	if (rc < 0) {
		rf_engine_free(e);
		return NULL;
	}
	return (rf_loader *)e;
}

void rf_engine_depth_set(rf_engine *e, uint32_t depth)
{
	e->depth = RF_MAX(1u, RF_MIN(depth, (uint32_t)RF_READY_MAX));
	e->coll_kick = true;
	if (!e->collating)
		pthread_cond_signal(&e->work_cv);
	rf_engine_wake_loop(e);
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
static void rf_consumer_moved(rf_engine *e, bool released)
{
	uint64_t ready = e->ready_tail - e->ready_head;
	if (ready <= e->depth / 2 || (released && e->coll_wait_budget)) {
		e->coll_kick = true;
		if (!e->collating)
			pthread_cond_signal(&e->work_cv);
	}
	if ((released && e->sched_wait_budget) || e->consumer_global >= e->wake_mark) {
		e->wake_mark = e->consumer_global + RF_MAX(1, e->block_records_avg / 2);
		rf_engine_wake_loop(e);
	}
}

/* A batch can be handed out (the head of the queue is filled), or the
 * stream has ended after the last queued batch, or the loader is closing. */
static bool rf_ready_or_done(const rf_engine *e)
{
	bool empty = e->ready_head == e->ready_tail;
	return (!empty && e->ready[e->ready_head % RF_READY_MAX]->filled) || e->stop ||
	       (empty && e->coll_final);
}

/* The consumer holds the memory the producer waits for: no batch is ready,
 * every batch emitted is held, nothing is read, decoded or collated, and the
 * next batch (or a block it needs) waits for budget that only rf_release can
 * free. (A host budget's refusals have their own wait and message.) mu held. */
static bool rf_held_stall(const rf_engine *e)
{
	return e->held > 0 && e->ready_head == e->ready_tail && !e->coll_final && !e->stop &&
	       (e->coll_wait_budget || e->sched_wait_budget) && e->reads_inflight == 0 &&
	       e->jobs_head == e->jobs_tail && e->decoding == 0 && !e->collating &&
	       e->fillq_head == e->fillq_tail && e->host_wait_ns == 0;
}

/* True once rf_held_stall has held for RF_HELD_STALL_MS (across rf_next
 * calls: a caller may wait in short slices). mu held. */
static bool rf_held_stalled(rf_engine *e)
{
	if (!rf_held_stall(e)) {
		e->held_stall_ns = 0;
		return false;
	}
	uint64_t now = rf_now_ns();
	if (e->held_stall_ns == 0)
		e->held_stall_ns = now;
	return now - e->held_stall_ns >= RF_HELD_STALL_MS * 1000000ull;
}

static void rf_held_stall_message(rf_engine *e)
{
	uint64_t bytes = 0;
	for (const rf_ebatch *b = e->held_list; b; b = b->next)
		bytes += b->reserved_bytes;
	char lim[32], held[32];
	snprintf(e->last_error, sizeof(e->last_error),
	         "budget %s is held by the consumer: %u batch(es) of %llu bytes (%s) taken and "
	         "not released, and the next batch needs %llu more bytes that only rf_release "
	         "can free (release batches, or raise the budget)",
	         rf_fmt_bytes(e->budget.limit_bytes, lim, sizeof(lim)), e->held,
	         (unsigned long long)bytes, rf_fmt_bytes(bytes, held, sizeof(held)),
	         (unsigned long long)e->wait_budget_bytes);
}

/* Waits (in slices, to notice a held stall) for a batch, the end, a held
 * stall (RF_E_BUDGET) or the timeout (-ETIMEDOUT). mu held. */
static int rf_wait_ready(rf_engine *e, int timeout_ms)
{
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
		pthread_cond_timedwait(&e->ready_cv, &e->mu, &dl);
	}
	return 0;
}

RF_API int rf_next(rf_loader *l, rf_batch **out, int timeout_ms)
{
	rf_engine *e = rf_engine_of(l);
	if (!e || !out)
		return -EINVAL;
	*out = NULL;
	pthread_mutex_lock(&e->mu);
	uint64_t t0 = rf_now_ns();
	if (e->last_return_ns) { /* the consumer's own time since the last batch */
		e->st_busy_ns += t0 - e->last_return_ns;
		e->last_return_ns = 0;
	}
	/* A wait is time spent with no batch to take (not the call's own cost). */
	bool waits =
	    e->ready_head == e->ready_tail || !e->ready[e->ready_head % RF_READY_MAX]->filled;
	e->waiting_since_ns = waits ? t0 : 0;
	int rc = rf_wait_ready(e, timeout_ms);
	uint64_t t1 = rf_now_ns();
	if (waits)
		e->st_wait_ns += t1 - t0;
	e->waiting_since_ns = 0;
	if (rc == 0 && e->ready_head != e->ready_tail &&
	    e->ready[e->ready_head % RF_READY_MAX]->filled) {
		rf_ebatch *b = e->ready[e->ready_head++ % RF_READY_MAX];
		b->prev = NULL;
		b->next = e->held_list;
		if (e->held_list)
			e->held_list->prev = b;
		e->held_list = b;
		e->held++;
		e->st_batches++;
		e->st_records += b->pub.records;
		e->st_payload += b->pub.payload_bytes;
		e->pos.epoch = b->pub.epoch;
		e->pos.record = b->end_pos; /* skipped records too */
		e->pos.batch = b->pub.index + 1;
		e->pos.skipped = b->skip_records;
		e->pos.skipped_blocks = b->skip_blocks;
		e->st_skipped_records += b->skipped;
		e->consumer_global = b->global_end;
		e->last_return_ns = t1;
		rf_consumer_moved(e, false);
		*out = &b->pub;
	} else if (rc == 0) {
		rc = e->coll_final ? e->final_code : -ECANCELED;
		snprintf(e->last_error, sizeof(e->last_error), "%s",
		         rc == RF_END ? "" : e->final_msg);
	} else if (rc == RF_E_BUDGET) {
		rf_held_stall_message(e); /* not the stream's end: releases let it go on */
		e->held_stall_ns = 0;
	} else {
		snprintf(e->last_error, sizeof(e->last_error), "no batch within %d ms", timeout_ms);
		if (getenv("RF_DEBUG"))
			fprintf(
			    stderr,
			    "sched e%llu u%zu seq%llu done%d need%llu | tail%llu front%llu | coll "
			    "e%llu pos%llu/%llu final%d | ready%llu held%u reads%u jobs%llu\n",
			    (unsigned long long)e->sched_epoch, e->sched_unit,
			    (unsigned long long)e->sched_seq, e->sched_done,
			    (unsigned long long)e->need_global, (unsigned long long)e->tail_seq,
			    (unsigned long long)e->frontier_seq, (unsigned long long)e->coll_epoch,
			    (unsigned long long)e->coll_pos, (unsigned long long)e->coll_records,
			    e->coll_final, (unsigned long long)(e->ready_tail - e->ready_head),
			    e->held, e->reads_inflight,
			    (unsigned long long)(e->jobs_tail - e->jobs_head));
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

RF_API void rf_release(rf_loader *l, rf_batch *batch)
{
	rf_engine *e = rf_engine_of(l);
	rf_ebatch *b = (rf_ebatch *)batch;
	if (!e || !b || b->magic != RF_BATCH_MAGIC)
		return;
	pthread_mutex_lock(&e->mu);
	if (b->prev)
		b->prev->next = b->next;
	else
		e->held_list = b->next;
	if (b->next)
		b->next->prev = b->prev;
	e->held--;
	rf_budget_release(&e->budget, RF_MEM_BATCH, b->reserved_bytes);
	b->reserved_bytes = 0;
	b->magic = 0;
	rf_consumer_moved(e, true);
	pthread_mutex_unlock(&e->mu);
	e->alloc.free(e->alloc.ctx, b->mem, b->mem_bytes);
	free(b);
}

RF_API int rf_state_save(rf_loader *l, void *buf, size_t *len)
{
	rf_engine *e = rf_engine_of(l);
	if (!e || !len)
		return -EINVAL;
	pthread_mutex_lock(&e->mu);
	rf_position p = e->pos;
	pthread_mutex_unlock(&e->mu);
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
	return e ? e->last_error : "not a loader";
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
	rf_engine_stop_threads(e); /* the trace's last line is written and closed */
	int rc = rf_control_output_error(e, err);
	rf_engine_free(e);
	return rc;
}

RF_API const char *rf_version(void)
{
	return RF_VERSION_STRING;
}
