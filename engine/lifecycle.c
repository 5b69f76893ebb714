/* lifecycle.c - a loader's life: rf_engine_new builds one (the config, the
 * shard list, the loop thread's open phase, the plans and the resume
 * position, the memory model's checks, the controller, the workers), and
 * rf_engine_stop_threads / rf_engine_free take it down (also mid-stream,
 * also half built). The public calls (api.c) use these. */
#include "engine.h"
#include "hostbudget.h"
#include "mix.h"
#include "mix_rebase.h"
#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *rf_default_alloc(void *ctx, size_t bytes)
{
	return rf_pool_get(ctx, rf_pool_class_bytes(bytes));
}

static void rf_default_free(void *ctx, void *ptr, size_t bytes)
{
	rf_pool_put(ctx, ptr, rf_pool_class_bytes(bytes));
}

static void rf_batch_free(rf_engine *e, rf_ebatch *b) RF_REQUIRES(rf_engine_mu)
{
	rf_budget_release(&e->budget, RF_MEM_BATCH, b->reserved_bytes);
	e->alloc.free(e->alloc.ctx, b->mem, b->mem_bytes);
	rf_ebatch_put(e, b); /* freed with the lists (rf_recycle_free) */
}

void rf_engine_stop_threads(rf_engine *e)
{
	rf_engine_lock(e);
	e->stop = true;
	pthread_cond_broadcast(&e->work_cv);
	pthread_cond_broadcast(&e->ready_cv);
	pthread_cond_broadcast(&e->open_cv);
	rf_engine_unlock(e);
	for (uint32_t i = 0; i < e->workers_started; i++)
		pthread_join(e->workers[i], NULL);
	e->workers_started = 0;
	/* The loop thread tears down only after seeing workers_done under mu, and
	 * clears e->loop under mu: waking it here cannot touch a freed loop. */
	rf_engine_lock(e);
	e->workers_done = true;
	if (e->loop)
		rf_loop_wake(e->loop);
	rf_engine_unlock(e);
	if (e->loop_started) {
		pthread_join(e->loop_thread, NULL);
		e->loop_started = false;
	}
}

void rf_engine_free(rf_engine *e) RF_ALONE
{
	rf_engine_stop_threads(e);
	/* Threads are gone and the ring is drained: every buffer is ours. */
	rf_engine_lock(e); /* no other thread is left: the helpers' contract */
	for (rf_ebatch *b; (b = rf_ready_drain(e));)
		rf_batch_free(e, b);
	if (e->ring->slots) {
		for (uint64_t s = e->ring->tail_seq; s < e->sched->seq; s++) {
			rf_unit_slot *u = rf_slot(e, s);
			rf_read *rd = u->read;
			u->read = NULL; /* set only on units not decoded yet */
			if (rd && --rd->units_left == 0)
				rf_read_free(e, rd);
			rf_unit_release(e, u);
		}
	}
	rf_recycle_free(e);
	rf_seqs_free(e);
	rf_engine_unlock(e);
	rf_control_free(e);
	rf_plan_free(e->sched->plan);
	rf_plan_free(e->coll->plan);
	free(e->seq);
	rf_ring_free(e);
	free(e->workers);
	free(e->indexes);
	free(e->mix_windows);
	rf_sources_free(e);
	rf_mixst_free(e->mixst);
	rf_fields_free(&e->fields);
	rf_shards_free(e->shards, e->nshards);
	rf_pool_free(e->pool);
	rf_budget_destroy(&e->budget); /* gives its host bytes back first */
	rf_hostbudget_close(e->host);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->work_cv);
	pthread_cond_destroy(&e->ready_cv);
	pthread_cond_destroy(&e->open_cv);
	rf_fmt_optset_free(e->fmt_opts);
	rf_config_free(e->cfg);
	e->magic = 0;
	free(e); /* the whole rf_engine_house: e is its first member */
}

/* Starts the loop thread and waits for it to read every shard's index. */
static int rf_open_indexes(rf_engine *e, rf_error *err)
{
	for (uint32_t i = 0; i < e->nshards; i++) {
		e->shards[i].engine = (struct rf_engine *)e;
		e->shards[i].idx = i;
	}
	e->rereads_max = (uint32_t)rf_cfg(e->cfg, RF_CFG_retries);
	int rc = rf_thread_start(&e->loop_thread, rf_sched_main, e);
	if (rc != 0) {
		char hint[RF_NODE_HINT_BYTES] = "";
		rf_node_oom_hint(hint, sizeof(hint)); /* a stack cannot be mapped */
		return rf_fail(err, -rc, "cannot start the loop thread: %s%s", strerror(rc), hint);
	}
	e->loop_started = true;
	rf_engine_lock(e);
	while (e->open->phase == RF_PHASE_OPENING)
		rf_cond_wait(e, &e->open_cv);
	rf_engine_unlock(e);
	if (e->open->code < 0)
		return rf_fail(err, e->open->code, "%s", e->open->msg);
	e->indexes = calloc(e->nshards, sizeof(*e->indexes));
	if (!e->indexes)
		return rf_fail(err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < e->nshards; i++)
		e->indexes[i] = e->shards[i].index;
	return 0;
}

/* Sets both plans' sequence for the resumed epoch. */
static int rf_open_sequence(rf_engine *e, uint64_t epoch, uint64_t start, rf_error *err) RF_ALONE
{
	const rf_segment *segs = e->seq_set ? e->seq : NULL;
	RF_TRY(rf_plan_set_sequence(e->sched->plan, epoch, segs, e->nseq, start, err));
	RF_TRY(rf_plan_set_sequence(e->coll->plan, epoch, segs, e->nseq, start, err));
	e->seq_epoch = epoch;
	return 0;
}

/* Both plans read through the weight change rb, `samples` an epoch. */
static int rf_open_rebase(rf_engine *e, const rf_mix_rebase *rb, uint64_t samples, rf_position *now,
                          rf_error *err) RF_ALONE
{
	RF_TRY(rf_memory_reserve_meta(e, 2 * rf_mix_rebase_memory(rb),
	                              "the mixture's weight change (two plans)", err));
	RF_TRY(rf_plan_mix_set_rebase(e->sched->plan, rb, samples, err));
	RF_TRY(rf_plan_mix_set_rebase(e->coll->plan, rb, samples, err));
	now->mix_rb = (struct rf_mix_rebase *)rf_plan_mix_rebase(e->sched->plan);
	now->dataset_records = now->mix_samples = samples;
	return 0;
}

/* A resume with other weights (issue 25 item 5, mix_rebase.h): what is
 * delivered stays delivered, each source continues from its own position,
 * and from here the new weights' schedule starts afresh over what each
 * source has still to give; the saved epoch keeps its size. With
 * stop_first an epoch is one pass of every source ended by the first to run
 * out, so its weights change only where an epoch ends. */
static int rf_open_reweight(rf_engine *e, rf_position *saved, rf_position *now,
                            rf_error *err) RF_ALONE
{
	char was[160], is[160];
	rf_state_mix_weights_str(saved, was, sizeof(was));
	rf_state_mix_weights_str(now, is, sizeof(is));
	rf_segment *rem = NULL;
	uint32_t nrem = 0;
	RF_TRY(rf_state_remaining(saved, &rem, &nrem, err));
	rf_mix_rebase *rb = NULL;
	int rc = 0;
	if (saved->mix_stop_first) {
		if (nrem > 0)
			rc = rf_fail(
			    err, -EINVAL,
			    "resume state: the mixture's weights differ (saved %s, now %s) in the "
			    "middle of epoch %llu; with mix_stop=first_exhausted an epoch is one "
			    "pass "
			    "of every source, ended by the first to run out, so its weights change "
			    "where an epoch ends: finish epoch %llu with the saved weights",
			    was, is, (unsigned long long)saved->epoch,
			    (unsigned long long)saved->epoch);
	} else {
		uint64_t *w = calloc(saved->mix_sources, sizeof(*w));
		rf_mix *old = NULL;
		if (!w)
			rc = rf_fail(err, -ENOMEM, "out of memory");
		for (uint32_t i = 0; rc == 0 && i < saved->mix_sources; i++)
			w[i] = saved->mix_src[3 * i + 2];
		if (rc == 0)
			rc = rf_mix_new(&old, saved->mix_sources, w, 1, err);
		rf_segment *taken = NULL;
		uint32_t ntaken = 0;
		if (rc == 0)
			rc = rf_state_taken(saved, &taken, &ntaken, err);
		if (rc == 0)
			rc = rf_mix_rebase_compose(old, saved->mix_rb, saved->mix_samples,
			                           saved->epoch, rem, nrem, taken, ntaken,
			                           e->mix_windows, &rb, err);
		rf_mix_free(old);
		free(taken);
		free(w);
		if (rc == 0)
			rc = rf_open_rebase(e, rb, saved->mix_samples, now, err);
	}
	free(rem);
	if (rc < 0) {
		rf_mix_rebase_free(rb);
		return rc;
	}
	uint64_t epoch = rb ? rb->epoch : saved->epoch + 1;
	uint64_t left = rb ? rb->length : rf_plan_total_records(e->sched->plan);
	now->epoch = epoch;
	now->record = now->batch = 0;
	if (epoch != saved->epoch) {
		now->skipped = now->skipped_blocks = 0;
	} else {
		now->skipped = saved->skipped;
		now->skipped_blocks = saved->skipped_blocks;
	}
	e->seq_set = left < rf_plan_total_records(e->sched->plan);
	if (e->seq_set) { /* the saved epoch's rest: new schedule samples [0, left) */
		e->seq = malloc(sizeof(*e->seq));
		if (!e->seq) {
			rf_mix_rebase_free(rb);
			return rf_fail(err, -ENOMEM, "out of memory");
		}
		e->seq[0] = (rf_segment){0, left};
		e->nseq = 1;
	}
	fprintf(stderr,
	        "ringfeed: resume: the mixture's weights changed (saved %s, now %s): from epoch "
	        "%llu%s on the new shares hold; delivered samples stay delivered and each source "
	        "continues from its own position\n",
	        was, is, (unsigned long long)epoch, e->seq_set ? "'s rest" : "");
	rf_mix_rebase_free(rb);
	if (now->epoch >= e->epoch_end)
		return 0;
	return rf_open_sequence(e, now->epoch, 0, err);
}

/* A saved position in `now`'s terms: the same partition (world and tail
 * policy) continues at the saved record (any batch size); another one takes
 * what no rank of the saved world had taken, re-split over this world. */
static int rf_open_resume(rf_engine *e, rf_position *saved, rf_position *now, rf_error *err)
{
	bool reweight = rf_state_mix_reweighted(saved, now);
	/* once the weights change, the saved epoch size stands unless
	 * mix_samples is given (then it must match); with stop_first the
	 * weights set it */
	if ((reweight || saved->mix_rb) && !saved->mix_stop_first &&
	    rf_cfg(e->cfg, RF_CFG_mix_samples) == 0)
		now->dataset_records = now->mix_samples = saved->mix_samples;
	RF_TRY(reweight ? rf_state_check_reweight(saved, now, err)
	                : rf_state_check(saved, now, err));
	if (saved->epoch >= e->epoch_end) /* epoch 2^64 - 1 too: no run reaches it */
		return e->epoch_end == UINT64_MAX
		           ? rf_fail(err, -EINVAL,
		                     "resume state is at epoch %llu, which no run reaches (a "
		                     "damaged or forged state?)",
		                     (unsigned long long)saved->epoch)
		           : rf_fail(err, -EINVAL,
		                     "resume state is at epoch %llu, past this run's last epoch "
		                     "%llu (epoch %llu, epochs %llu)",
		                     (unsigned long long)saved->epoch,
		                     (unsigned long long)(e->epoch_end - 1),
		                     (unsigned long long)e->epoch_first,
		                     (unsigned long long)(e->epoch_end - e->epoch_first));
	if (saved->epoch < e->epoch_first)
		return rf_fail(err, -EINVAL, "resume state is at epoch %llu, before epoch %llu",
		               (unsigned long long)saved->epoch,
		               (unsigned long long)e->epoch_first);
	if (reweight)
		return rf_open_reweight(e, saved, now, err);
	if (saved->mix_rb) /* a change made at an earlier resume */
		RF_TRY(rf_open_rebase(e, saved->mix_rb, saved->mix_samples, now, err));
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
                           uint64_t done) RF_ALONE
{
	e->st->ep_first = (struct rf_epoch_count){
	    .epoch = epoch, .records = records, .batches = rf_epoch_batches(e, records, at, done)};
	rf_plan_epoch_tail(e->sched->plan, &e->st->ep_first.tail);
	if (epoch >= e->epoch_end) /* the saved run had already ended */
		e->st->ep_first.records = e->st->ep_first.batches = 0;
	uint64_t n = rf_plan_total_records(e->sched->plan);
	e->st->ep_next.records = rf_plan_partition(e->sched->plan, n, 0, &e->st->ep_next.tail);
	e->st->ep_next.batches = rf_epoch_batches(e, e->st->ep_next.records, 0, 0);
}

/* The pool keeps a shuffle window's slabs idle (pool.h); a mixture holds a
 * window per source, each coming back at its own time: as many as its
 * weights hold heaviest-weight windows (sum over the largest, at most 4).
 * Measured (bench/mix_bench.sh): a 2-source mixture mapped 665 buffers
 * against the one dataset's 323 and spent 0.62x its CPU-seconds' rate. */
static void rf_open_pool_idle(rf_engine *e) RF_ALONE
{
	uint64_t sum = 0, max = 0;
	for (uint32_t i = 0; i < e->nsources; i++) {
		sum += e->cfg->src_weight[i];
		max = RF_MAX(max, e->cfg->src_weight[i]);
	}
	if (max > 0 && sum > max)
		rf_pool_set_idle_max(e->pool, RF_POOL_IDLE_MAX * RF_MIN((sum + max - 1) / max, 4));
}

/* A mixture resumed from a state of the same sources keeps the shuffle
 * windows that state's run started with (a weight change's, or those its
 * weights gave): a pass's record order depends on its source's window, and
 * new weights would scale it anew (mix_rebase.h). */
static int rf_open_mix_windows(rf_engine *e, const rf_plan_params *pp, const rf_position *saved,
                               rf_error *err) RF_ALONE
{
	uint32_t k = e->nsources;
	if (k == 0 || !saved || saved->mix_sources != k)
		return 0;
	e->mix_windows = calloc(k, sizeof(*e->mix_windows));
	uint64_t *w = calloc(k, sizeof(*w));
	if (!e->mix_windows || !w) {
		free(w);
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < k; i++)
		w[i] = saved->mix_src[3 * i + 2];
	for (uint32_t i = 0; i < k; i++) {
		uint32_t x =
		    saved->mix_rb ? saved->mix_rb->window[i] : rf_plan_mix_window(pp, w, k, i);
		e->mix_windows[i] = pp->shuffle && x > 1 ? x : 1;
	}
	free(w);
	return 0;
}

/* Plans, resume position and the first epoch's bookkeeping. */
static int rf_open_plan_from(rf_engine *e, rf_position *saved, rf_error *err) RF_ALONE;

static int rf_open_plan(rf_engine *e, rf_error *err) RF_ALONE
{
	const rf_config *c = e->cfg;
	if (!c->has_resume)
		return rf_open_plan_from(e, NULL, err);
	rf_position saved;
	RF_TRY(rf_state_decode(c->resume_buf, c->resume_len, &saved, err));
	int rc = rf_open_plan_from(e, &saved, err);
	rf_position_clear(&saved);
	return rc;
}

static int rf_open_plan_from(rf_engine *e, rf_position *saved, rf_error *err)
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
	RF_TRY(rf_open_mix_windows(e, &pp, saved, err));
	uint64_t bound = 2 * rf_memory_plan_bound(e, e->window);
	char what[96];
	snprintf(what, sizeof(what), "the plans (two, of %u shard(s))", e->nshards);
	RF_TRY(rf_memory_reserve_meta(e, bound, what, err));
	RF_TRY(rf_sched_plan_new(e, &pp, err));
	RF_TRY(rf_coll_plan_new(e, &pp, err));
	uint64_t planned =
	    rf_plan_memory_bytes(e->sched->plan) + rf_plan_memory_bytes(e->coll->plan);
	rf_budget_release(&e->budget, RF_MEM_METADATA, bound);
	rf_open_meta_sub(e->open, bound);
	RF_TRY(rf_memory_reserve_meta(e, planned, what, err));
	rf_position pos = {.epoch = e->epoch_first};
	rf_state_identity(e->sched->plan, &pos);
	for (uint32_t i = 0; i < e->nshards; i++)
		rf_state_content_add(&pos, e->shards[i].name, e->shards[i].fmt->name,
		                     e->indexes[i]);
	e->seq_epoch = UINT64_MAX;
	if (saved)
		RF_TRY(rf_open_resume(e, saved, &pos, err));
	pos.segs = e->seq;
	pos.nsegs = e->nseq;
	e->resume_epoch = pos.epoch;
	e->resume_pos = pos.record;
	uint64_t epoch = pos.epoch;
	RF_TRY(rf_plan_epoch(e->sched->plan, epoch, err));
	RF_TRY(rf_plan_epoch(e->coll->plan, epoch, err));
	uint64_t records = rf_plan_epoch_records(e->sched->plan);
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
	size_t first = rf_plan_first_unit_needed(e->sched->plan, at);
	rf_epoch_info ep = {.valid = true,
	                    .epoch = epoch,
	                    .records = records,
	                    .first_unit = first,
	                    .units = rf_plan_unit_count(e->sched->plan),
	                    .span = RF_MAX(records, rf_plan_epoch_plan_records(e->sched->plan))};
	rf_sched_epoch_set(e->sched, &ep);
	bool ended = epoch >= e->epoch_end; /* the saved run had already ended */
	rf_sched_start(e, epoch, first,
	               first < ep.units ? rf_plan_unit(e->sched->plan, first)->first_plan_record
	                                : ep.span,
	               at, ended);
	rf_coll_start(e, epoch, at, pos.batch, first, records, pos.skipped_blocks, pos.skipped,
	              ended);
	rf_consumer_start(e->cons, &pos, at);
	return 0;
}

static int rf_open_threads(rf_engine *e, rf_error *err)
{
	e->workers = calloc(e->threads, sizeof(*e->workers));
	if (rf_ring_alloc(e) < 0 || !e->workers || rf_recycle_seed(e) < 0)
		return rf_fail(err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < e->threads; i++) {
		int rc = rf_thread_start(&e->workers[i], rf_worker_main, e);
		if (rc != 0) { /* EAGAIN: no stack could be mapped (RLIMIT_AS, said) */
			char hint[RF_NODE_HINT_BYTES] = "";
			rf_node_oom_hint(hint, sizeof(hint));
			return rf_fail(err, -rc, "cannot start decode thread %u: %s%s", i,
			               strerror(rc), hint);
		}
		e->workers_started++;
	}
	rf_engine_lock(e);
	e->st->t_open_ns = rf_now_ns();
	rf_open_phase_set(e, RF_PHASE_RUNNING);
	rf_coll_kick(e->coll); /* e.g. a resume at an epoch's end has nothing to fetch */
	pthread_cond_broadcast(&e->open_cv);
	rf_engine_wake_workers(e, 1);
	rf_engine_unlock(e);
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
	RF_TRY(rf_config_format_options(c, &e->fmt_opts, err));
	RF_TRY(rf_open_check_batches(e, err));
	rf_node_limits node;
	rf_node_limits_read("", &node);
	RF_TRY(rf_default_threads(c, &node, &e->threads, e->threads_source,
	                          sizeof(e->threads_source), err));
	rf_engine_lock(e); /* no thread yet: for the analysis */
	rf_sched_depth_set(e->sched, (uint32_t)rf_cfg(c, RF_CFG_depth));
	rf_engine_unlock(e);
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
	RF_TRY(rf_open_sources(e, err));
	rf_open_pool_idle(e);
	RF_TRY(rf_memory_shard_list(e, err));
	RF_TRY(rf_open_indexes(e, err));
	RF_TRY(rf_sources_check(e, err));
	RF_TRY(rf_fields_open(e, err));
	RF_TRY(rf_open_plan(e, err));
	RF_TRY(rf_mixst_open(e, err));
	RF_TRY(rf_memory_check(e, err));
	RF_TRY(rf_control_new(e, err));
	return rf_open_threads(e, err);
}

rf_engine *rf_engine_new(const rf_config *cfg, rf_error *err)
{
	rf_engine_house *h = calloc(1, sizeof(*h));
	if (!h) {
		rf_fail(err, -ENOMEM, "out of memory");
		return NULL;
	}
	rf_engine *e = rf_engine_house_wire(h);
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
	if (rf_engine_setup(e, cfg, err) < 0) {
		rf_engine_free(e);
		return NULL;
	}
	return e;
}
