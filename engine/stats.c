/* stats.c - rf_stats_get and rf_stats_json: rates, waits, queue occupancy
 * (sampled by the loop thread), bytes per budget category, fetch latency. */
#include "engine.h"
#include "json.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

static int rf_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The percentiles of the n latencies in v (copied out under mu; sorted
 * here, without it). */
static void rf_latency_stats(double *v, size_t n, rf_stats *s)
{
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), rf_cmp_double);
	s->fetch_latency_p50_ms = v[n / 2];
	s->fetch_latency_p90_ms = v[RF_MIN(n - 1, n * 9 / 10)];
	s->fetch_latency_p99_ms = v[RF_MIN(n - 1, n * 99 / 100)];
	s->fetch_latency_max_ms = v[n - 1];
}

/* The data cache's counters. mu held. */
static void rf_stats_data_cache(rf_engine *e, rf_stats *s) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	/* the cache's own counters now, not as of the last read's end: its
	 * writer thread may have turned it off since */
	rf_fetch_counters now;
	const rf_fetch_counters *c = &e->st->cache;
	if (e->fetch_shown) {
		rf_fetch_cache_counters_get(e->fetch_shown, &now);
		c = &now;
	}
	s->data_cache_hits = c->cache_hits;
	s->data_cache_misses = c->cache_misses;
	s->data_cache_hit_bytes = c->cache_hit_bytes;
	s->data_cache_store_bytes = c->cache_store_bytes;
	s->data_cache_written_bytes = c->cache_written_bytes;
	s->data_cache_write_skipped = c->cache_write_skipped;
	s->data_cache_not_admitted = c->cache_not_admitted;
	s->data_cache_verify_failures = c->cache_verify_failures;
	s->data_cache_removed_files = c->cache_removed_files;
	s->data_cache_used_bytes = c->cache_used_bytes;
	s->data_cache_admit_fraction = c->cache_admit_fraction;
	snprintf(s->data_cache_off, sizeof(s->data_cache_off), "%s", c->cache_off);
	s->data_cache_claim_waits = c->cache_claim_waits;
	s->data_cache_claim_served = c->cache_claim_served;
	s->data_cache_claim_timeouts = c->cache_claim_timeouts;
	s->data_cache_evictions = c->cache_evictions;
	s->data_cache_evicted_bytes = c->cache_evicted_bytes;
	s->data_cache_rereads = c->cache_rereads;
}

/* Wake-ups and the lock's hold times. mu held. */
static void rf_stats_wake(rf_engine *e, rf_stats *s) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	s->wakeups_workers = e->wake.workers;
	s->wakeups_consumer = e->wake.consumer;
	s->wakeups_loop = e->wake.loop;
	s->waits_workers = e->wake.worker_waits;
	s->waits_consumer = e->wake.consumer_waits;
	s->lock_acquisitions = e->hold.acquisitions;
	s->lock_hold_max_us = (double)e->hold.max_ns / 1e3;
	s->lock_hold_total_s = (double)e->hold.total_ns / 1e9;
	if (e->hold.max_given_at)
		snprintf(s->lock_hold_max_at, sizeof(s->lock_hold_max_at), "%s > %s",
		         e->hold.max_taken_at, e->hold.max_given_at);
}

/* ,"blocks_skipped":N,"skips":[...]} (the object's end). */
static int rf_stats_json_skips(const rf_stats *s, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, ",\"blocks_skipped\":%llu,\"skips\":[",
	                 (unsigned long long)s->blocks_skipped);
	for (uint32_t i = 0; i < s->skips_listed && n >= 0 && (size_t)n < cap; i++) {
		const rf_skip *k = &s->skips[i];
		char esc[6 * sizeof(k->error) + 3];
		rf_json_quote(esc, sizeof(esc), k->error);
		n += snprintf(buf + n, cap - (size_t)n,
		              "%s{\"shard\":%u,\"block\":%u,\"records\":%u,\"epoch\":%llu,"
		              "\"position\":%llu,\"error\":%s}",
		              i ? "," : "", k->shard, k->block, k->records,
		              (unsigned long long)k->epoch, (unsigned long long)k->position, esc);
	}
	if (n >= 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, "]}");
	return n;
}

/* Where the defaults came from, and why the index cache is off; written
 * over the closing brace before it, ending with one. */
static int rf_stats_json_defaults(const rf_stats *s, char *buf, size_t cap)
{
	char threads[6 * sizeof(s->threads_source) + 3],
	    host[6 * sizeof(s->host_budget_source) + 3], icache[6 * sizeof(s->index_cache_off) + 3];
	rf_json_quote(threads, sizeof(threads), s->threads_source);
	rf_json_quote(host, sizeof(host), s->host_budget_source);
	rf_json_quote(icache, sizeof(icache), s->index_cache_off);
	return snprintf(buf, cap,
	                ",\"threads_source\":%s,\"host_budget_source\":%s,"
	                "\"index_cache_off\":%s}",
	                threads, host, icache);
}

/* This rank's counts for the consumer's epoch. mu held. */
static void rf_stats_epoch(rf_engine *e, rf_stats *s) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	s->rank = (uint32_t)rf_cfg(e->cfg, RF_CFG_rank);
	s->world = (uint32_t)rf_cfg(e->cfg, RF_CFG_world);
	s->epoch = e->cons->pos.epoch;
	const struct rf_epoch_count *c =
	    s->epoch == e->st->ep_first.epoch ? &e->st->ep_first : &e->st->ep_next;
	s->epoch_records = c->records;
	s->epoch_batches = c->batches;
	s->epoch_records_dropped = c->tail.dropped_records;
	s->epoch_records_padded = c->tail.padded_records;
	s->epoch_records_drop_last = c->tail.drop_last_records;
	s->epoch_batches_later = e->st->ep_next.batches;
	s->records_skipped = e->st->skipped_records;
	s->blocks_skipped = e->coll->skips;
	s->skips_listed = (uint32_t)RF_MIN(e->coll->skips, RF_SKIP_LOG);
	for (uint32_t i = 0; i < s->skips_listed; i++)
		s->skips[i] =
		    e->coll->skip_log[(e->coll->skips - s->skips_listed + i) % RF_SKIP_LOG];
}

/* Which loop backend runs (mu held: e->loop is published under it). */
static void rf_stats_loop(rf_engine *e, rf_stats *s)
{
	if (!e->loop)
		return;
	snprintf(s->io_backend, sizeof(s->io_backend), "%s",
	         rf_loop_backend_name(rf_loop_backend_of(e->loop)));
	s->io_read_threads = rf_loop_read_threads(e->loop);
	snprintf(s->io_backend_fallback, sizeof(s->io_backend_fallback), "%s",
	         rf_loop_fallback(e->loop));
}

static int rf_stats_fill(rf_loader *l, rf_stats *s)
{
	rf_engine *e = (rf_engine *)l;
	if (!e || e->magic != RF_LOADER_MAGIC || !s)
		return -EINVAL;
	RF_TRY(rf_engine_process_check(e));
	memset(s, 0, sizeof(*s));
	double lat[RF_LATENCY_SAMPLES];
	rf_budget_snapshot b;
	rf_budget_snapshot_get(&e->budget, &b);
	rf_engine_lock(e);
	double elapsed = (double)(rf_now_ns() - e->st->t_open_ns) / 1e9;
	s->elapsed_s = elapsed;
	s->batches = e->st->batches;
	s->records = e->st->records;
	s->payload_bytes = e->st->payload;
	s->decoded_bytes = e->st->decoded_bytes;
	s->fetched_bytes = e->st->fetched_bytes;
	s->blocks_decoded = e->st->blocks;
	uint64_t now = rf_now_ns();
	uint64_t wait =
	    e->st->wait_ns + (e->st->waiting_since_ns ? now - e->st->waiting_since_ns : 0);
	uint64_t busy = e->st->busy_ns + (e->st->last_return_ns ? now - e->st->last_return_ns : 0);
	s->consumer_wait_s = (double)wait / 1e9;
	s->consumer_busy_s = (double)busy / 1e9;
	/* r: batches over the consumer's own time (a consumer doing no work at
	 * all is capped, as in tune.c, at 1e6 batches/s) */
	s->consumer_rate_bps =
	    e->st->batches
	        ? (double)e->st->batches / RF_MAX(s->consumer_busy_s, (double)e->st->batches / 1e6)
	        : 0;
	double full = e->st->q_samples ? (double)e->st->q_full / (double)e->st->q_samples : 0;
	double held = e->st->q_samples ? (double)e->st->q_held_back / (double)e->st->q_samples : 0;
	double producing = elapsed * (1.0 - held);
	s->producer_rate_bps = producing > 0 ? (double)e->st->produced / producing : 0;
	s->ready_batches = (uint32_t)(e->ready->tail - e->ready->head);
	double ready;
	rf_control_inventory(e, &ready, &s->decoded_batches, &s->inflight_batches);
	s->inventory_batches = ready + s->decoded_batches + s->inflight_batches;
	s->coverage_s = s->consumer_rate_bps > 0 ? s->inventory_batches / s->consumer_rate_bps : 0;
	s->depth_batches = e->sched->depth;
	s->decode_busy_fraction =
	    RF_MIN(1.0, (double)e->st->decode_ns / 1e9 / RF_MAX(1e-9, elapsed * e->threads));
	rf_control_stats(e, s);
	s->queue_samples = e->st->q_samples;
	if (e->st->q_samples) {
		s->queue_empty_fraction = (double)e->st->q_empty / (double)e->st->q_samples;
		s->queue_full_fraction = full;
		s->queue_partial_fraction = 1.0 - s->queue_empty_fraction - full;
	}
	s->queue_swings = e->st->q_swings;
	s->budget_bytes = b.limit_bytes;
	rf_stats_epoch(e, s);
	memcpy(s->mem_bytes, b.cur_bytes, sizeof(s->mem_bytes));
	memcpy(s->mem_peak_bytes, b.peak_bytes, sizeof(s->mem_peak_bytes));
	s->mem_peak_total_bytes = b.peak_total_bytes;
	size_t nlat = (size_t)RF_MIN(e->st->lat_count, (uint64_t)RF_LATENCY_SAMPLES);
	memcpy(lat, e->st->lat_ms, nlat * sizeof(*lat));
	rf_stats_wake(e, s);
	s->fetch_errors = e->st->fetch_errors;
	s->fetch_retries = e->st->fetch_retries;
	s->fetch_hedges = e->st->fetch_hedges;
	s->fetch_hedges_won = e->st->fetch_hedges_won;
	s->fetch_resumes = e->st->fetch_resumes;
	s->fetch_resumed_bytes = e->st->fetch_resumed_bytes;
	s->open_fetched_bytes = e->st->open_fetched_bytes;
	s->index_cache_hits = e->open->cache_hits; /* written by the open phase, done by now */
	s->index_cache_misses = e->open->cache_misses;
	s->index_cache_puts = e->open->cache_puts;
	s->index_cache_stale_drops = e->st->index_cache_stale_drops;
	s->open_shards = e->open->done; /* the open phase's: done by now */
	s->open_s = (double)e->open->took_ns / 1e9;
	s->open_concurrency = e->open->slots_max;
	s->open_inflight_max = e->open->inflight_max;
	s->open_connections = e->open->connections;
	s->open_progress_lines = e->open->said;
	s->open_reads = e->st->open_reads;
	if (e->coll->first_batch_ns > e->open->t0_ns && e->open->t0_ns)
		s->first_batch_s = (double)(e->coll->first_batch_ns - e->open->t0_ns) / 1e9;
	s->start_connections_s = (double)e->open->start_held_ns / 1e9;
	s->index_bundle_opens = e->open->bundle_opens;
	s->index_bundle_drops = e->open->bundle_drops;
	s->stream_skipped_bytes = e->st->stream_skipped_bytes;
	s->stream_more_reads = e->st->stream_more_reads;
	snprintf(s->threads_source, sizeof(s->threads_source), "%s", e->threads_source);
	snprintf(s->host_budget_source, sizeof(s->host_budget_source), "%s", e->host_source);
	snprintf(s->index_cache_off, sizeof(s->index_cache_off), "%s", e->index_cache_off);
	rf_stats_data_cache(e, s);
	s->direct_bytes = e->st->direct_bytes;
	s->direct_refused_files = e->st->direct_refused;
	s->fixed_reads = e->st->fixed_reads;
	s->fixed_bytes = e->st->fixed_bytes;
	s->direct_register_refused = e->st->register_refused;
	s->rereads = e->st->rereads;
	s->threads = e->threads;
	rf_stats_loop(e, s);
	rf_control_explain(e, s); /* last: in the figures above */
	rf_mixst_explain(e, s);
	rf_engine_unlock(e);
	rf_latency_stats(lat, nlat, s);
	return 0;
}

/* One snapshot, copied out as far as the caller's struct goes (an older
 * caller's smaller rf_stats is a prefix of ours: the struct only grows). */
static void rf_stats_copy_out(const rf_stats *s, rf_stats *out, size_t out_bytes)
{
	size_t n = RF_MIN(out_bytes, sizeof(*s));
	memcpy(out, s, n);
	if (out_bytes > n)
		memset((char *)out + n, 0, out_bytes - n);
}

RF_API int rf_stats_get(rf_loader *l, rf_stats *out, size_t out_bytes)
{
	if (!out || out_bytes < RF_STATS_BYTES_MIN)
		return -EINVAL;
	rf_stats s;
	RF_TRY(rf_stats_fill(l, &s));
	rf_stats_copy_out(&s, out, out_bytes);
	return 0;
}

/* The controller's part of the JSON object (after the base keys). */
static int rf_stats_json_control(const rf_stats *s, char *buf, size_t cap)
{
	char reason[80], diag[80], text[1100], src[600], terr[600];
	return snprintf(
	    buf, cap,
	    ",\"depth_auto\":%s,\"depth_target_batches\":%u,\"depth_peak_batches\":%u,"
	    "\"inflight_target\":%u,\"depth_changes\":%llu,\"depth_direction_changes\":%llu,"
	    "\"intervals\":%llu,\"depth_reason\":%s,\"cover_target_s\":%.6f,"
	    "\"consumer_busy_s\":%.6f,\"decode_busy_fraction\":%.6f,\"inventory_batches\":%.3f,"
	    "\"decoded_batches\":%.3f,\"inflight_batches\":%.3f,\"fetch_latency_p90_ms\":%.3f,"
	    "\"pauses\":%llu,\"pause_longest_s\":%.6f,\"pause_longest_source\":%s,"
	    "\"stall_in_s\":%.6f,\"batch_bytes_avg\":%llu,\"diagnosis\":%s,"
	    "\"diagnosis_text\":%s,\"trace_lines\":%llu,\"trace_error\":%s",
	    s->depth_auto ? "true" : "false", s->depth_target_batches, s->depth_peak_batches,
	    s->inflight_target, (unsigned long long)s->depth_changes,
	    (unsigned long long)s->depth_direction_changes, (unsigned long long)s->intervals,
	    rf_json_quote(reason, sizeof(reason), s->depth_reason), s->cover_target_s,
	    s->consumer_busy_s, s->decode_busy_fraction, s->inventory_batches, s->decoded_batches,
	    s->inflight_batches, s->fetch_latency_p90_ms, (unsigned long long)s->pauses,
	    s->pause_longest_s, rf_json_quote(src, sizeof(src), s->pause_longest_source),
	    s->stall_in_s, (unsigned long long)s->batch_bytes_avg,
	    rf_json_quote(diag, sizeof(diag), s->diagnosis),
	    rf_json_quote(text, sizeof(text), s->diagnosis_text),
	    (unsigned long long)s->trace_lines,
	    s->trace_error[0] ? rf_json_quote(terr, sizeof(terr), s->trace_error) : "null");
}

/* Wake-ups and the lock's hold times (after the controller's keys). */
static int rf_stats_json_wake(const rf_stats *s, char *buf, size_t cap)
{
	char at[6 * sizeof(s->lock_hold_max_at) + 3];
	return snprintf(
	    buf, cap,
	    ",\"wakeups_workers\":%llu,\"wakeups_consumer\":%llu,\"wakeups_loop\":%llu,"
	    "\"waits_workers\":%llu,\"waits_consumer\":%llu,\"lock_acquisitions\":%llu,"
	    "\"lock_hold_max_us\":%.3f,\"lock_hold_total_s\":%.6f,\"lock_hold_max_at\":%s",
	    (unsigned long long)s->wakeups_workers, (unsigned long long)s->wakeups_consumer,
	    (unsigned long long)s->wakeups_loop, (unsigned long long)s->waits_workers,
	    (unsigned long long)s->waits_consumer, (unsigned long long)s->lock_acquisitions,
	    s->lock_hold_max_us, s->lock_hold_total_s,
	    rf_json_quote(at, sizeof(at), s->lock_hold_max_at));
}

/* The data cache (one block; the policy is the admitted fraction). */
static int rf_stats_json_data_cache(const rf_stats *s, char *buf, size_t cap)
{
	char off[6 * sizeof(s->data_cache_off) + 3];
	return snprintf(
	    buf, cap,
	    ",\"data_cache_hits\":%llu,\"data_cache_misses\":%llu,\"data_cache_hit_bytes\":%llu,"
	    "\"data_cache_store_bytes\":%llu,\"data_cache_written_bytes\":%llu,"
	    "\"data_cache_write_skipped\":%llu,\"data_cache_not_admitted\":%llu,"
	    "\"data_cache_verify_failures\":%llu,\"data_cache_removed_files\":%llu,"
	    "\"data_cache_used_bytes\":%llu,\"data_cache_policy\":\"stable subset by hash\","
	    "\"data_cache_admit_fraction\":%.6f,\"data_cache_off\":%s,"
	    "\"data_cache_claim_waits\":%llu,\"data_cache_claim_served\":%llu,"
	    "\"data_cache_claim_timeouts\":%llu,\"data_cache_evictions\":%llu,"
	    "\"data_cache_evicted_bytes\":%llu,\"data_cache_rereads\":%llu",
	    (unsigned long long)s->data_cache_hits, (unsigned long long)s->data_cache_misses,
	    (unsigned long long)s->data_cache_hit_bytes,
	    (unsigned long long)s->data_cache_store_bytes,
	    (unsigned long long)s->data_cache_written_bytes,
	    (unsigned long long)s->data_cache_write_skipped,
	    (unsigned long long)s->data_cache_not_admitted,
	    (unsigned long long)s->data_cache_verify_failures,
	    (unsigned long long)s->data_cache_removed_files,
	    (unsigned long long)s->data_cache_used_bytes, s->data_cache_admit_fraction,
	    rf_json_quote(off, sizeof(off), s->data_cache_off),
	    (unsigned long long)s->data_cache_claim_waits,
	    (unsigned long long)s->data_cache_claim_served,
	    (unsigned long long)s->data_cache_claim_timeouts,
	    (unsigned long long)s->data_cache_evictions,
	    (unsigned long long)s->data_cache_evicted_bytes,
	    (unsigned long long)s->data_cache_rereads);
}

/* The open phase (one block). */
static int rf_stats_json_open(const rf_stats *s, char *buf, size_t cap)
{
	return snprintf(buf, cap,
	                ",\"open_shards\":%llu,\"open_s\":%.3f,\"open_concurrency\":%u,"
	                "\"open_inflight_max\":%u,\"open_connections\":%u,"
	                "\"open_progress_lines\":%u,\"open_reads\":%llu,\"fetch_resumes\":%llu,"
	                "\"fetch_resumed_bytes\":%llu,\"first_batch_s\":%.3f,"
	                "\"start_connections_s\":%.3f,\"index_bundle_opens\":%llu,"
	                "\"index_bundle_drops\":%llu",
	                (unsigned long long)s->open_shards, s->open_s, s->open_concurrency,
	                s->open_inflight_max, s->open_connections, s->open_progress_lines,
	                (unsigned long long)s->open_reads, (unsigned long long)s->fetch_resumes,
	                (unsigned long long)s->fetch_resumed_bytes, s->first_batch_s,
	                s->start_connections_s, (unsigned long long)s->index_bundle_opens,
	                (unsigned long long)s->index_bundle_drops);
}

/* The JSON object of the snapshot snap, taken from l. */
static int rf_stats_json_of(rf_loader *l, const rf_stats *snap, char *buf, size_t cap)
{
	const rf_stats s = *snap;
	double el = s.elapsed_s > 0 ? s.elapsed_s : 1e-9;
	int n = snprintf(
	    buf, cap,
	    "{\"elapsed_s\":%.6f,\"batches\":%llu,\"records\":%llu,\"payload_bytes\":%llu,"
	    "\"decoded_bytes\":%llu,\"fetched_bytes\":%llu,\"blocks_decoded\":%llu,"
	    "\"batches_per_s\":%.3f,\"records_per_s\":%.3f,\"decoded_bytes_per_s\":%.3f,"
	    "\"consumer_wait_s\":%.6f,\"consumer_wait_fraction\":%.6f,"
	    "\"consumer_rate_bps\":%.3f,\"producer_rate_bps\":%.3f,\"coverage_s\":%.6f,"
	    "\"depth_batches\":%u,\"depth_max_batches\":%u,\"ready_batches\":%u,"
	    "\"queue_samples\":%llu,\"queue_empty_fraction\":%.6f,"
	    "\"queue_partial_fraction\":%.6f,\"queue_full_fraction\":%.6f,\"queue_swings\":%llu,"
	    "\"budget_bytes\":%llu,\"mem_bytes\":{\"fetch\":%llu,\"decoded\":%llu,\"batch\":%llu,"
	    "\"scratch\":%llu,\"metadata\":%llu},\"mem_peak_bytes\":{\"fetch\":%llu,"
	    "\"decoded\":%llu,\"batch\":%llu,\"scratch\":%llu,\"metadata\":%llu},"
	    "\"mem_peak_total_bytes\":%llu,\"fetch_latency_p50_ms\":%.3f,"
	    "\"fetch_latency_p99_ms\":%.3f,\"fetch_latency_max_ms\":%.3f,\"fetch_retries\":%llu,"
	    "\"fetch_errors\":%llu,\"records_skipped\":%llu,\"rereads\":%llu,\"threads\":%u",
	    s.elapsed_s, (unsigned long long)s.batches, (unsigned long long)s.records,
	    (unsigned long long)s.payload_bytes, (unsigned long long)s.decoded_bytes,
	    (unsigned long long)s.fetched_bytes, (unsigned long long)s.blocks_decoded,
	    (double)s.batches / el, (double)s.records / el, (double)s.decoded_bytes / el,
	    s.consumer_wait_s, s.consumer_wait_s / el, s.consumer_rate_bps, s.producer_rate_bps,
	    s.coverage_s, s.depth_batches, s.depth_max_batches, s.ready_batches,
	    (unsigned long long)s.queue_samples, s.queue_empty_fraction, s.queue_partial_fraction,
	    s.queue_full_fraction, (unsigned long long)s.queue_swings,
	    (unsigned long long)s.budget_bytes, (unsigned long long)s.mem_bytes[0],
	    (unsigned long long)s.mem_bytes[1], (unsigned long long)s.mem_bytes[2],
	    (unsigned long long)s.mem_bytes[3], (unsigned long long)s.mem_bytes[4],
	    (unsigned long long)s.mem_peak_bytes[0], (unsigned long long)s.mem_peak_bytes[1],
	    (unsigned long long)s.mem_peak_bytes[2], (unsigned long long)s.mem_peak_bytes[3],
	    (unsigned long long)s.mem_peak_bytes[4], (unsigned long long)s.mem_peak_total_bytes,
	    s.fetch_latency_p50_ms, s.fetch_latency_p99_ms, s.fetch_latency_max_ms,
	    (unsigned long long)s.fetch_retries, (unsigned long long)s.fetch_errors,
	    (unsigned long long)s.records_skipped, (unsigned long long)s.rereads, s.threads);
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	int m = snprintf(buf + n, cap - (size_t)n,
	                 ",\"rank\":%u,\"world\":%u,\"epoch\":%llu,\"epoch_records\":%llu,"
	                 "\"epoch_batches\":%llu,\"epoch_records_dropped\":%llu,"
	                 "\"epoch_records_padded\":%llu,\"epoch_records_drop_last\":%llu,"
	                 "\"epoch_batches_later\":%llu",
	                 s.rank, s.world, (unsigned long long)s.epoch,
	                 (unsigned long long)s.epoch_records, (unsigned long long)s.epoch_batches,
	                 (unsigned long long)s.epoch_records_dropped,
	                 (unsigned long long)s.epoch_records_padded,
	                 (unsigned long long)s.epoch_records_drop_last,
	                 (unsigned long long)s.epoch_batches_later);
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -ENOSPC;
	n += m;
	m = rf_stats_json_control(&s, buf + n, cap - (size_t)n);
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -ENOSPC;
	n += m;
	char pauses[6144]; /* RF_PAUSE_SOURCES entries, URLs escaped */
	char iob[40], iofb[200];
	rf_engine *e = (rf_engine *)l;
	rf_engine_lock(e);
	int p = rf_control_pauses_json(e, pauses, sizeof(pauses));
	rf_engine_unlock(e);
	m = snprintf(
	    buf + n, cap - (size_t)n,
	    ",\"fetch_hedges\":%llu,\"fetch_hedges_won\":%llu,\"open_fetched_bytes\":%llu,"
	    "\"index_cache_hits\":%llu,\"index_cache_misses\":%llu,"
	    "\"index_cache_puts\":%llu,\"index_cache_stale_drops\":%llu,"
	    "\"direct_bytes\":%llu,\"direct_refused_files\":%llu,"
	    "\"fixed_reads\":%llu,\"fixed_bytes\":%llu,\"direct_register_refused\":%llu,"
	    "\"stream_skipped_bytes\":%llu,\"stream_more_reads\":%llu,\"io_backend\":%s,"
	    "\"io_read_threads\":%u,\"io_backend_fallback\":%s,\"pauses_by_source\":%s",
	    (unsigned long long)s.fetch_hedges, (unsigned long long)s.fetch_hedges_won,
	    (unsigned long long)s.open_fetched_bytes, (unsigned long long)s.index_cache_hits,
	    (unsigned long long)s.index_cache_misses, (unsigned long long)s.index_cache_puts,
	    (unsigned long long)s.index_cache_stale_drops, (unsigned long long)s.direct_bytes,
	    (unsigned long long)s.direct_refused_files, (unsigned long long)s.fixed_reads,
	    (unsigned long long)s.fixed_bytes, (unsigned long long)s.direct_register_refused,
	    (unsigned long long)s.stream_skipped_bytes, (unsigned long long)s.stream_more_reads,
	    rf_json_quote(iob, sizeof(iob), s.io_backend), s.io_read_threads,
	    s.io_backend_fallback[0] ? rf_json_quote(iofb, sizeof(iofb), s.io_backend_fallback)
	                             : "null",
	    p > 0 ? pauses : "[]");
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -ENOSPC;
	n += m;
	m = rf_stats_json_wake(&s, buf + n, cap - (size_t)n);
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -ENOSPC;
	n += m;
	m = rf_stats_json_data_cache(&s, buf + n, cap - (size_t)n);
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -ENOSPC;
	n += m;
	m = rf_stats_json_open(&s, buf + n, cap - (size_t)n);
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -ENOSPC;
	n += m;
	m = rf_mixst_json(e, buf + n, cap - (size_t)n);
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -ENOSPC;
	n += m;
	m = rf_stats_json_skips(&s, buf + n, cap - (size_t)n);
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -ENOSPC;
	n += m;
	m = rf_stats_json_defaults(&s, buf + n - 1, cap - (size_t)n + 1);
	if (m < 0 || (size_t)m >= cap - (size_t)n + 1)
		return -ENOSPC;
	n += m - 1;
	/* The host budget's figures go last, inside the object. */
	int h = rf_budget_host_json(&e->budget, buf + n - 1, cap - (size_t)n + 1);
	return h < 0 ? h : n - 1 + h;
}

RF_API int rf_stats_json(rf_loader *l, char *buf, size_t cap)
{
	rf_stats s;
	RF_TRY(rf_stats_fill(l, &s));
	return rf_stats_json_of(l, &s, buf, cap);
}

RF_API int rf_stats_get_json(rf_loader *l, rf_stats *out, size_t out_bytes, char *buf, size_t cap)
{
	if (!out || out_bytes < RF_STATS_BYTES_MIN)
		return -EINVAL;
	rf_stats s;
	RF_TRY(rf_stats_fill(l, &s));
	rf_stats_copy_out(&s, out, out_bytes);
	return rf_stats_json_of(l, &s, buf, cap);
}
