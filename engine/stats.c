/* stats.c - rf_stats_get and rf_stats_json: rates, waits, queue occupancy
 * (sampled by the loop thread), bytes per budget category, fetch latency. */
#include "engine.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

static int rf_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void rf_latency_stats(rf_engine *e, rf_stats *s)
{
	size_t n = (size_t)RF_MIN(e->lat_count, (uint64_t)RF_LATENCY_SAMPLES);
	if (n == 0)
		return;
	double *v = malloc(n * sizeof(*v));
	if (!v)
		return;
	memcpy(v, e->lat_ms, n * sizeof(*v));
	qsort(v, n, sizeof(*v), rf_cmp_double);
	s->fetch_latency_p50_ms = v[n / 2];
	s->fetch_latency_p99_ms = v[RF_MIN(n - 1, n * 99 / 100)];
	s->fetch_latency_max_ms = v[n - 1];
	free(v);
}

RF_API int rf_stats_get(rf_loader *l, rf_stats *s)
{
	rf_engine *e = (rf_engine *)l;
	if (!e || e->magic != RF_LOADER_MAGIC || !s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	rf_budget_snapshot b;
	rf_budget_snapshot_get(&e->budget, &b);
	pthread_mutex_lock(&e->mu);
	double elapsed = (double)(rf_now_ns() - e->t_open_ns) / 1e9;
	s->elapsed_s = elapsed;
	s->batches = e->st_batches;
	s->records = e->st_records;
	s->payload_bytes = e->st_payload;
	s->decoded_bytes = e->st_decoded_bytes;
	s->fetched_bytes = e->st_fetched_bytes;
	s->blocks_decoded = e->st_blocks;
	s->consumer_wait_s = (double)e->st_wait_ns / 1e9;
	double busy = elapsed - s->consumer_wait_s;
	s->consumer_rate_bps = busy > 0 ? (double)e->st_batches / busy : 0;
	double full = e->q_samples ? (double)e->q_full / (double)e->q_samples : 0;
	double producing = elapsed * (1.0 - full);
	s->producer_rate_bps = producing > 0 ? (double)e->st_produced / producing : 0;
	s->ready_batches = (uint32_t)(e->ready_tail - e->ready_head);
	s->coverage_s = s->consumer_rate_bps > 0 ? s->ready_batches / s->consumer_rate_bps : 0;
	s->depth_batches = e->depth;
	uint64_t avg_batch = e->coll_batches ? b.peak_bytes[RF_MEM_BATCH] / RF_MAX(1, e->depth) : 0;
	uint64_t spare = b.limit_bytes > b.peak_total_bytes - b.peak_bytes[RF_MEM_BATCH]
	                     ? b.limit_bytes - (b.peak_total_bytes - b.peak_bytes[RF_MEM_BATCH])
	                     : 0;
	s->depth_max_batches =
	    avg_batch ? (uint32_t)RF_MIN(spare / avg_batch, (uint64_t)RF_READY_MAX) : e->depth;
	s->queue_samples = e->q_samples;
	if (e->q_samples) {
		s->queue_empty_fraction = (double)e->q_empty / (double)e->q_samples;
		s->queue_full_fraction = full;
		s->queue_partial_fraction = 1.0 - s->queue_empty_fraction - full;
	}
	s->queue_swings = e->q_swings;
	s->budget_bytes = b.limit_bytes;
	memcpy(s->mem_bytes, b.cur_bytes, sizeof(s->mem_bytes));
	memcpy(s->mem_peak_bytes, b.peak_bytes, sizeof(s->mem_peak_bytes));
	s->mem_peak_total_bytes = b.peak_total_bytes;
	rf_latency_stats(e, s);
	s->fetch_errors = e->st_fetch_errors;
	s->rereads = e->st_rereads;
	s->threads = e->threads;
	pthread_mutex_unlock(&e->mu);
	return 0;
}

RF_API int rf_stats_json(rf_loader *l, char *buf, size_t cap)
{
	rf_stats s;
	RF_TRY(rf_stats_get(l, &s));
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
	    "\"fetch_errors\":%llu,\"records_skipped\":%llu,\"rereads\":%llu,\"threads\":%u}",
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
	return n;
}
