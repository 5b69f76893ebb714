/* mixstats.c - a mixture's figures per source (issue 25): records and
 * bytes delivered against the source's weight, its passes and position,
 * its fetch latency, and how much of the consumer's wait it held (the wait
 * is charged to the source of the unit the stream was blocked on), and a
 * sentence for the diagnosis naming a source that holds most of the wait.
 * Counters are written under mu (fetches, waits) or by the one collator at
 * a time (records, bytes: relaxed atomics, read by the stats). */
#include "engine.h"
#include "json.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RF_MIXST_JSON_MAX 64 /* sources listed in the stats (the rest counted) */

struct rf_mixst {
	uint32_t k;
	uint32_t *shard_src; /* nshards */
	struct rf_mixst_src {
		uint64_t records, bytes;    /* delivered (collated) */
		uint64_t fetches, fetch_ns; /* reads completed, their time */
		uint64_t wait_ns;           /* the consumer's wait charged to it */
	} * src;
};

int rf_mixst_open(rf_engine *e, rf_error *err) RF_ALONE
{
	if (e->nsources == 0)
		return 0;
	rf_mixst *m = calloc(1, sizeof(*m));
	if (m) {
		m->k = e->nsources;
		m->shard_src = calloc(e->nshards ? e->nshards : 1, sizeof(*m->shard_src));
		m->src = calloc(m->k, sizeof(*m->src));
	}
	if (!m || !m->shard_src || !m->src) {
		rf_mixst_free(m);
		return rf_fail(err, -ENOMEM, "out of memory for a mixture's figures");
	}
	for (uint32_t k = 0; k < m->k; k++)
		for (uint32_t s = e->src_first[k]; s < e->src_first[k + 1]; s++)
			m->shard_src[s] = k;
	e->mixst = m;
	return 0;
}

void rf_mixst_free(rf_mixst *m)
{
	if (!m)
		return;
	free(m->shard_src);
	free(m->src);
	free(m);
}

/* Counted per batch (delivered when the consumer takes it) for up to
 * RF_MIXST_INLINE sources; beyond, when collated (the figures say which). */
void rf_mixst_record(rf_engine *e, rf_mixst_counts *c, uint32_t shard, uint32_t bytes)
{
	rf_mixst *m = e->mixst;
	if (!m || shard >= e->nshards)
		return;
	uint32_t k = m->shard_src[shard];
	if (m->k <= RF_MIXST_INLINE) {
		c->records[k]++;
		c->bytes[k] += bytes;
		return;
	}
	__atomic_fetch_add(&m->src[k].records, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->src[k].bytes, bytes, __ATOMIC_RELAXED);
}

void rf_mixst_delivered(rf_engine *e, const rf_ebatch *b) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_mixst *m = e->mixst;
	if (!m || m->k > RF_MIXST_INLINE)
		return;
	for (uint32_t k = 0; k < m->k; k++) {
		__atomic_fetch_add(&m->src[k].records, b->mix.records[k], __ATOMIC_RELAXED);
		__atomic_fetch_add(&m->src[k].bytes, b->mix.bytes[k], __ATOMIC_RELAXED);
	}
}

void rf_mixst_fetch(rf_engine *e, uint32_t shard, uint64_t ns) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_mixst *m = e->mixst;
	if (!m || shard >= e->nshards)
		return;
	m->src[m->shard_src[shard]].fetches++;
	m->src[m->shard_src[shard]].fetch_ns += ns;
}

void rf_mixst_wait(rf_engine *e, uint32_t shard, uint64_t ns) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_mixst *m = e->mixst;
	if (!m || shard >= e->nshards)
		return;
	m->src[m->shard_src[shard]].wait_ns += ns;
}

/* The source holding most of the wait, when it holds more than half of
 * it and the wait is worth a word (5% of the run): its index, else -1. */
static int rf_mixst_slow(const rf_mixst *m, double elapsed_s, double *share)
{
	uint64_t all = 0, most = 0;
	int at = -1;
	for (uint32_t k = 0; k < m->k; k++) {
		all += m->src[k].wait_ns;
		if (m->src[k].wait_ns > most)
			most = m->src[k].wait_ns, at = (int)k;
	}
	if (all == 0 || (double)all / 1e9 < 0.05 * elapsed_s || most * 2 <= all)
		return -1;
	*share = (double)most / (double)all;
	return at;
}

void rf_mixst_explain(rf_engine *e, rf_stats *s) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_mixst *m = e->mixst;
	double share;
	int k = m ? rf_mixst_slow(m, s->elapsed_s, &share) : -1;
	if (k < 0)
		return;
	char name[160];
	rf_url_redact(e->cfg->urls[e->cfg->src_url[k]], name, sizeof(name));
	size_t n = strlen(s->diagnosis_text);
	snprintf(s->diagnosis_text + n, sizeof(s->diagnosis_text) - n,
	         "%sThe slow source is source %d, %s: %.0f%% of the consumer's wait.", n ? " " : "",
	         k + 1, name, share * 100);
}

int rf_mixst_json(rf_engine *e, char *buf, size_t cap)
{
	rf_mixst *m = e->mixst;
	if (!m)
		return snprintf(buf, cap, ",\"sources\":null");
	rf_engine_lock(e);
	uint64_t total = 0;
	for (uint32_t k = 0; k < m->k; k++)
		total += __atomic_load_n(&m->src[k].records, __ATOMIC_RELAXED);
	uint64_t wait_all = 0;
	for (uint32_t k = 0; k < m->k; k++)
		wait_all += m->src[k].wait_ns;
	uint64_t *counts = calloc(m->k, sizeof(uint64_t));
	if (!counts) {
		rf_engine_unlock(e);
		return -ENOMEM;
	}
	int n = snprintf(buf, cap, ",\"sources\":[");
	for (uint32_t k = 0; k < m->k && k < RF_MIXST_JSON_MAX && n > 0 && (size_t)n < cap; k++) {
		const struct rf_mixst_src *s = &m->src[k];
		uint64_t rec = __atomic_load_n(&s->records, __ATOMIC_RELAXED);
		uint64_t per_pass, ord, wn, wd;
		rf_plan_mix_source_info(e->sched->plan, k, e->cons->pos.epoch, counts, &per_pass,
		                        &ord, &wn, &wd);
		char url[512], q[1100];
		rf_url_redact(e->cfg->urls[e->cfg->src_url[k]], url, sizeof(url));
		n += snprintf(
		    buf + n, cap - (size_t)n,
		    "%s{\"source\":%u,\"name\":%s,\"weight\":%.6f,\"share\":%.6f,"
		    "\"records\":%llu,\"bytes\":%llu,\"records_per_pass\":%llu,"
		    "\"epoch_start_position\":%llu,\"epoch_start_pass\":%llu,"
		    "\"fetches\":%llu,\"fetch_latency_avg_ms\":%.3f,\"consumer_wait_s\":%.6f,"
		    "\"consumer_wait_share\":%.6f}",
		    k ? "," : "", k + 1, rf_json_quote(q, sizeof(q), url),
		    wd ? (double)wn / (double)wd : 0, total ? (double)rec / (double)total : 0,
		    (unsigned long long)rec,
		    (unsigned long long)__atomic_load_n(&s->bytes, __ATOMIC_RELAXED),
		    (unsigned long long)per_pass, (unsigned long long)ord,
		    (unsigned long long)(per_pass ? ord / per_pass : 0),
		    (unsigned long long)s->fetches,
		    s->fetches ? (double)s->fetch_ns / 1e6 / (double)s->fetches : 0,
		    (double)s->wait_ns / 1e9, wait_all ? (double)s->wait_ns / (double)wait_all : 0);
	}
	if (n > 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n,
		              "],\"sources_unlisted\":%u,\"sources_records_counted\":\"%s\"",
		              m->k > RF_MIXST_JSON_MAX ? m->k - RF_MIXST_JSON_MAX : 0,
		              m->k <= RF_MIXST_INLINE ? "delivered" : "collated");
	rf_engine_unlock(e);
	free(counts);
	return n;
}
