/* control.c - the read-ahead controller inside the engine. A loop timer
 * (tune_interval, default 200 ms; nothing sleeps) closes one measurement
 * interval: the consumer's own time and waits, batches produced over the time
 * the producer was not held back (queue full or budget), queue occupancy
 * samples, the longest fetch, decode threads' busy time and the inventory
 * ahead of the consumer. tune.c decides the depth (bounded by what the budget
 * allows, re-evaluated each interval from the measured batch size) and the
 * reads to keep in flight (Little's law, within `connections`); this file
 * applies them, counts the changes and writes one trace line per interval
 * (docs/trace.md) from the loop thread. */
#include "engine.h"
#include "json.h"
#include "util.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define RF_PAUSE_MIN_NS   100000000ull /* a fetch this slow may be a pause ... */
#define RF_PAUSE_P50_MULT 4.0          /* ... when it is also 4x the median */
#define RF_TRACE_LINE_MAX 4096
#define RF_PAUSE_SOURCES  8 /* sources whose pauses are kept (the most pausing) */

typedef struct rf_pause_source {
	uint32_t shard;
	uint64_t pauses, longest_ns;
	uint64_t end_ns; /* end of its current pause episode */
} rf_pause_source;

typedef struct rf_control {
	rf_tune t;
	bool auto_depth;
	uint32_t fixed;
	uint64_t interval_ns;
	int64_t timer;
	uint64_t t_last_ns;
	/* totals at the end of the last interval */
	uint64_t s_batches, s_busy_ns, s_wait_ns, s_produced, s_decode_ns;
	uint64_t s_q_samples, s_q_empty, s_q_full, s_held_back;
	uint32_t depth_max, depth_peak;
	uint64_t depth_changes, dir_changes;
	int last_dir;
	char event[320];
	rf_pause_source psrc[RF_PAUSE_SOURCES];
	uint32_t npsrc;
	uint64_t pause_end_ns; /* end of the current pause episode (any source) */
	/* trace */
	int trace_fd;
	char *trace_path;
	uint64_t trace_lines;
	int trace_err_code; /* the negative errno that stopped the trace, or 0 */
	char trace_err[256];
} rf_control;

/* ------------------------------------------------------------ budget */

/* Bytes the budget has per batch: measured once batches exist, else the
 * worst case. mu held. */
static uint64_t rf_batch_bytes(const rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->coll->batches > 0)
		return RF_MAX(1, e->st->batch_reserved / e->coll->batches);
	return RF_MAX(1, e->batch_worst_bytes);
}

/* The largest depth the budget allows: what is left after the fixed part and
 * the blocks being read and decoded, in batches, less one held by the
 * consumer. mu held. */
static uint32_t rf_depth_max(const rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint64_t limit = e->budget.limit_bytes, taken = e->fixed_bytes + e->stage_bytes;
	uint64_t spare = limit > taken ? limit - taken : 0;
	uint64_t n = spare / rf_batch_bytes(e);
	n = n > 1 ? n - 1 : 1;
	return (uint32_t)RF_MIN(n, (uint64_t)RF_READY_MAX - 1);
}

int rf_control_new(rf_engine *e, rf_error *err)
{
	rf_control *c = calloc(1, sizeof(*c));
	if (!c)
		return rf_fail(err, -ENOMEM, "out of memory");
	e->ctl = c;
	c->trace_fd = -1;
	c->fixed = (uint32_t)rf_cfg(e->cfg, RF_CFG_depth);
	c->auto_depth = c->fixed == 0;
	c->interval_ns = rf_cfg(e->cfg, RF_CFG_tune_interval);
	rf_engine_lock(e); /* the loop thread waits for go: no one else looks */
	c->depth_max = rf_depth_max(e);
	rf_engine_unlock(e);
	rf_tune_params p = {.cover_s = (double)rf_cfg(e->cfg, RF_CFG_cover) / 1e9,
	                    .depth_max = RF_MAX(c->depth_max, c->fixed),
	                    .depth_fixed = c->fixed,
	                    .connections_max = (uint32_t)rf_cfg(e->cfg, RF_CFG_connections)};
	char msg[200];
	if (rf_tune_init(&c->t, &p, msg, sizeof(msg)) < 0)
		return rf_fail(err, -EINVAL, "%s", msg);
	c->t.last.reason = c->auto_depth ? RF_TUNE_HOLD : RF_TUNE_FIXED;
	c->depth_peak = rf_tune_depth(&c->t);
	rf_engine_lock(e);
	rf_sched_depth_set(e->sched, c->depth_peak);
	rf_sched_inflight_cap_set(e->sched, p.connections_max);
	rf_engine_unlock(e);
	const char *path = rf_cfg_str(e->cfg, RF_CFG_trace);
	if (path) {
		c->trace_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (c->trace_fd < 0) {
			int code = errno;
			char shown[512]; /* a URL-shaped name is shown redacted */
			rf_url_redact(path, shown, sizeof(shown));
			return rf_fail(err, -code, "trace %s: cannot open: %s", shown,
			               strerror(code));
		}
		if (!(c->trace_path = strdup(path)))
			return rf_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

void rf_control_free(rf_engine *e)
{
	rf_control *c = e->ctl;
	if (!c)
		return;
	if (c->trace_fd >= 0)
		close(c->trace_fd);
	free(c->trace_path);
	free(c);
	e->ctl = NULL;
}

/* --------------------------------------------------------- measuring */

/* A pause is an episode, not a fetch: the slow fetches that overlap in time
 * (all the reads caught by one storage stall) are one pause, counted once
 * overall and once per source; its length is the longest of them. A fetch
 * that took ns and ended at now spanned [now - ns, now]. */
static bool rf_pause_new(uint64_t *end_ns, uint64_t now, uint64_t ns)
{
	bool fresh = now - ns >= *end_ns;
	*end_ns = RF_MAX(*end_ns, now);
	return fresh;
}

/* Counts a pause against its source; a full table replaces its least pausing
 * entry. mu held. */
static void rf_pause_source_note(rf_control *c, uint32_t shard, uint64_t now, uint64_t ns)
{
	rf_pause_source *p = NULL, *least = NULL;
	for (uint32_t i = 0; i < c->npsrc && !p; i++) {
		if (c->psrc[i].shard == shard)
			p = &c->psrc[i];
		else if (!least || c->psrc[i].pauses < least->pauses)
			least = &c->psrc[i];
	}
	if (!p) {
		p = c->npsrc < RF_PAUSE_SOURCES ? &c->psrc[c->npsrc++] : least;
		*p = (rf_pause_source){.shard = shard};
	}
	p->pauses += rf_pause_new(&p->end_ns, now, ns);
	p->longest_ns = RF_MAX(p->longest_ns, ns);
}

void rf_control_note_fetch(rf_engine *e, uint32_t shard, uint64_t ns) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_control *c = e->ctl;
	if (!c)
		return;
	double p50 = rf_tune_latency_quantile(&c->t, 0.5);
	rf_tune_note_latency(&c->t, (double)ns / 1e9);
	e->st->iv_pause_ns = RF_MAX(e->st->iv_pause_ns, ns);
	if (ns >= RF_PAUSE_MIN_NS && (double)ns / 1e9 >= RF_PAUSE_P50_MULT * p50) {
		uint64_t now = rf_now_ns();
		ns = RF_MIN(ns, now);
		e->st->pauses += rf_pause_new(&c->pause_end_ns, now, ns);
		rf_pause_source_note(c, shard, now, ns);
		if (ns > e->st->pause_longest_ns) {
			e->st->pause_longest_ns = ns;
			e->st->pause_longest_shard = shard;
		}
	}
}

/* The global stream position of the unit at seq, or of the scheduler's next
 * unit when seq is the scheduler's. mu held. */
static uint64_t rf_unit_global(rf_engine *e, uint64_t seq) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (seq >= e->sched->seq) {
		const rf_epoch_info *ep = rf_epoch_slot(e, e->sched->epoch);
		return ep->global_start + e->sched->next_first;
	}
	const rf_unit_slot *u = rf_slot(e, seq);
	const rf_epoch_info *ep = rf_epoch_slot(e, u->epoch);
	if (!ep->valid || ep->epoch != u->epoch)
		return e->coll->global;
	return ep->global_start + u->first_plan_record;
}

void rf_control_inventory(rf_engine *e, double *ready, double *decoded, double *inflight)
    RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	double per_batch = e->coll->batches
	                       ? (double)e->coll->total_records / (double)e->coll->batches
	                       : (double)RF_MAX(1, e->cp.batch_records);
	per_batch = RF_MAX(per_batch, 1.0);
	*ready = (double)(e->ready->tail - e->ready->head);
	uint64_t cg = e->coll->global;
	uint64_t fg = RF_MAX(rf_unit_global(e, e->ring->frontier_seq), cg);
	uint64_t sg = RF_MAX(rf_unit_global(e, e->sched->seq), fg);
	*decoded = (double)(fg - cg) / per_batch;
	*inflight = (double)(sg - fg) / per_batch;
}

/* Fills one interval's measurements and moves the snapshots. mu held. */
static void rf_control_measure(rf_engine *e, uint64_t now, rf_tune_interval *in)
    RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_control *c = e->ctl;
	double wall = (double)(now - c->t_last_ns) / 1e9;
	uint64_t busy = e->st->busy_ns + (e->st->last_return_ns ? now - e->st->last_return_ns : 0);
	uint64_t wait =
	    e->st->wait_ns + (e->st->waiting_since_ns ? now - e->st->waiting_since_ns : 0);
	uint64_t samples = e->st->q_samples - c->s_q_samples;
	uint64_t held = e->st->q_held_back - c->s_held_back;
	*in = (rf_tune_interval){
	    .wall_s = wall,
	    .batches_consumed = e->st->batches - c->s_batches,
	    .consumer_busy_s = (double)(busy - c->s_busy_ns) / 1e9,
	    .consumer_wait_s = (double)(wait - c->s_wait_ns) / 1e9,
	    .batches_produced = e->st->produced - c->s_produced,
	    .producer_busy_s = e->coll->final ? 0
	                       : samples      ? wall * (double)(samples - held) / (double)samples
	                                      : wall,
	    .queue_samples = (uint32_t)RF_MIN(samples, UINT32_MAX),
	    .queue_empty = (uint32_t)RF_MIN(e->st->q_empty - c->s_q_empty, UINT32_MAX),
	    .queue_full = (uint32_t)RF_MIN(e->st->q_full - c->s_q_full, UINT32_MAX),
	    .pause_max_s = (double)e->st->iv_pause_ns / 1e9,
	    .decode_busy_fraction = RF_MIN(1.0, (double)(e->st->decode_ns - c->s_decode_ns) / 1e9 /
	                                            RF_MAX(1e-9, wall * e->threads)),
	    .inflight = e->sched->reads_inflight};
	double r, d, f;
	rf_control_inventory(e, &r, &d, &f);
	in->inventory_batches = r + d + f;
	c->s_batches = e->st->batches;
	c->s_busy_ns = busy;
	c->s_wait_ns = wait;
	c->s_produced = e->st->produced;
	c->s_decode_ns = e->st->decode_ns;
	c->s_q_samples = e->st->q_samples;
	c->s_q_empty = e->st->q_empty;
	c->s_q_full = e->st->q_full;
	c->s_held_back = e->st->q_held_back;
	e->st->iv_pause_ns = 0;
	c->t_last_ns = now;
}

/* ----------------------------------------------------------- deciding */

static void rf_control_event(rf_control *c, const rf_tune_decision *d, uint32_t before)
{
	c->event[0] = '\0';
	if (d->depth_change == 0)
		return;
	const char *why = "";
	switch (d->reason) {
	case RF_TUNE_GROW:
		why = "growing toward r x T";
		break;
	case RF_TUNE_GROW_CAPPED:
		why = "growing toward r x T, stopped at the budget's limit";
		break;
	case RF_TUNE_SHRINK:
		why = "queue stayed full and nobody waited";
		break;
	case RF_TUNE_BUDGET_CUT:
		why = "the budget allows fewer batches now";
		break;
	default:
		why = rf_tune_reason_name(d->reason);
	}
	snprintf(c->event, sizeof(c->event),
	         "depth %u -> %u (%s): %s; target %u = %.1f batches/s x %.2f s (longest recent "
	         "pause %.2f s), budget allows %u",
	         before, d->depth, rf_tune_reason_name(d->reason), why, d->depth_target, d->r_bps,
	         d->cover_target_s, d->pause_recent_s, c->t.p.depth_max);
}

/* Requests per batch: records per batch over records per read. mu held. */
static double rf_requests_per_batch(const rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->st->read_records == 0 || e->coll->batches == 0)
		return 1.0;
	double per_batch = (double)e->coll->total_records / (double)e->coll->batches;
	double per_read = (double)e->st->read_records / (double)e->st->reads;
	return RF_MAX(per_batch / RF_MAX(per_read, 1.0), 1e-6);
}

/* One interval: measure, decide, apply. mu held. */
static const rf_tune_decision *rf_control_step(rf_engine *e, uint64_t now) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_control *c = e->ctl;
	rf_tune_interval in;
	rf_control_measure(e, now, &in);
	c->depth_max = rf_depth_max(e);
	rf_tune_set_depth_max(&c->t, c->auto_depth ? c->depth_max : RF_MAX(c->depth_max, c->fixed));
	c->t.p.requests_per_batch = rf_requests_per_batch(e);
	uint32_t before = e->sched->depth;
	const rf_tune_decision *d = rf_tune_step(&c->t, &in);
	if (c->auto_depth && d->depth != before)
		rf_engine_depth_set(e, d->depth);
	rf_sched_inflight_cap_set(e->sched, d->r_bps > 0 ? d->inflight : c->t.p.connections_max);
	if (e->sched->depth != before) {
		int dir = e->sched->depth > before ? 1 : -1;
		c->depth_changes++;
		if (c->last_dir && dir != c->last_dir)
			c->dir_changes++;
		c->last_dir = dir;
		c->depth_peak = RF_MAX(c->depth_peak, e->sched->depth);
	}
	rf_control_event(c, d, before);
	return d;
}

int rf_control_pauses_json(rf_engine *e, char *buf, size_t cap) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_control *c = e->ctl;
	size_t n = 0;
	int k = snprintf(buf, cap, "[");
	for (uint32_t i = 0; c && k >= 0 && (size_t)k < cap - n && i < c->npsrc; i++) {
		n += (size_t)k;
		char url[600];
		const rf_pause_source *p = &c->psrc[i];
		rf_json_escape(url, sizeof(url),
		               p->shard < e->nshards ? e->shards[p->shard].name : "");
		k = snprintf(
		    buf + n, cap - n, "%s{\"source\":\"%s\",\"pauses\":%llu,\"longest_s\":%.6f}",
		    i ? "," : "", url, (unsigned long long)p->pauses, (double)p->longest_ns / 1e9);
	}
	if (k < 0 || (size_t)k >= cap - n)
		return -ENOSPC;
	n += (size_t)k;
	k = snprintf(buf + n, cap - n, "]");
	return k < 0 || (size_t)k >= cap - n ? -ENOSPC : (int)(n + (size_t)k);
}

/* ------------------------------------------------------------- trace */

/* "null" for an unknown (zero) rate, else the number. */
static const char *rf_num_or_null(char *buf, size_t cap, double v, bool known)
{
	if (!known || !isfinite(v) || v < 0)
		return "null";
	snprintf(buf, cap, "%.6g", v);
	return buf;
}

/* One trace line for the interval just decided. mu held. */
static int rf_trace_format(rf_engine *e, const rf_tune_decision *d, const rf_tune_interval *in,
                           char *line, size_t cap) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_control *c = e->ctl;
	double ready, dec, fl;
	rf_control_inventory(e, &ready, &dec, &fl);
	rf_budget_snapshot b;
	rf_budget_snapshot_get(&e->budget, &b);
	char rb[32], cb[32], cv[32], ev[700] = "";
	double craw =
	    in->producer_busy_s > 0 ? (double)in->batches_produced / in->producer_busy_s : 0;
	if (c->event[0]) {
		char esc[640];
		rf_json_escape(esc, sizeof(esc), c->event);
		snprintf(ev, sizeof(ev), ",\"event\":\"%s\"", esc);
	}
	if (e->coll->skips > 0) { /* the skip policy's blocks so far, and the last one */
		const rf_skip *k = rf_coll_last_skip(e->coll);
		size_t l = strlen(ev);
		snprintf(ev + l, sizeof(ev) - l,
		         ",\"blocks_skipped\":%llu,\"last_skip\":{\"shard\":%u,\"block\":%u,"
		         "\"records\":%u,\"epoch\":%llu,\"position\":%llu}",
		         (unsigned long long)e->coll->skips, k->shard, k->block, k->records,
		         (unsigned long long)k->epoch, (unsigned long long)k->position);
	}
	return snprintf(
	    line, cap,
	    "{\"t_s\":%.4f,\"depth\":%u,\"ready\":%.0f,\"decoded\":%.3f,\"in_flight\":%.3f,"
	    "\"mem\":{\"fetch\":%llu,\"decoded\":%llu,\"batch\":%llu,\"scratch\":%llu,"
	    "\"metadata\":%llu},\"budget_bytes\":%llu,\"r_bps\":%s,\"c_bps\":%s,\"wait_s\":%.6f,"
	    "\"coverage_s\":%s,\"depth_max\":%u,\"depth_target\":%u,\"reason\":\"%s\","
	    "\"inflight_target\":%u,\"reads_in_flight\":%u,\"pause_s\":%.6f,"
	    "\"cover_target_s\":%.4f,\"diagnosis\":\"%s\"%s}\n",
	    (double)(c->t_last_ns - e->st->t_open_ns) / 1e9, e->sched->depth, ready, dec, fl,
	    (unsigned long long)b.cur_bytes[RF_MEM_FETCH],
	    (unsigned long long)b.cur_bytes[RF_MEM_DECODED],
	    (unsigned long long)b.cur_bytes[RF_MEM_BATCH],
	    (unsigned long long)b.cur_bytes[RF_MEM_SCRATCH],
	    (unsigned long long)b.cur_bytes[RF_MEM_METADATA], (unsigned long long)b.limit_bytes,
	    rf_num_or_null(rb, sizeof(rb), d->r_bps, d->r_bps > 0),
	    rf_num_or_null(cb, sizeof(cb), craw, in->producer_busy_s > 0),
	    in->consumer_wait_s > 0 ? in->consumer_wait_s : 0.0,
	    rf_num_or_null(cv, sizeof(cv), d->coverage_s, d->r_bps > 0), c->t.p.depth_max,
	    d->depth_target, rf_tune_reason_name(d->reason), d->inflight, in->inflight,
	    in->pause_max_s, d->cover_target_s, rf_tune_diagnosis_name(d->diagnosis), ev);
}

/* Writes a line (loop thread, mu not held): one write() per interval to the
 * page cache; a failure stops the trace and is reported in the stats. */
static void rf_trace_write(rf_engine *e, const char *line, size_t len)
{
	RF_MU_NOT_HELD(e);
	rf_control *c = e->ctl;
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(c->trace_fd, line + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;
			rf_engine_lock(e);
			c->trace_err_code = -err;
			snprintf(c->trace_err, sizeof(c->trace_err), "trace %s: write failed: %s",
			         c->trace_path, strerror(err));
			close(c->trace_fd);
			c->trace_fd = -1;
			rf_engine_unlock(e);
			return;
		}
		done += (size_t)n;
	}
	rf_engine_lock(e);
	c->trace_lines++;
	rf_engine_unlock(e);
}

static void rf_control_interval(rf_engine *e)
{
	rf_control *c = e->ctl;
	char line[RF_TRACE_LINE_MAX];
	int n = -1;
	rf_engine_lock(e);
	const rf_tune_decision *d = rf_control_step(e, rf_now_ns());
	if (c->trace_fd >= 0)
		n = rf_trace_format(e, d, &c->t.last_in, line, sizeof(line));
	rf_engine_unlock(e);
	if (n > 0 && (size_t)n < sizeof(line))
		rf_trace_write(e, line, (size_t)n);
}

static void rf_on_tune_timer(void *arg, int res)
{
	rf_engine *e = arg;
	(void)res;
	rf_control_interval(e);
	rf_engine_lock(e);
	bool live = !e->coll->final || e->ready->tail != e->ready->head;
	rf_engine_unlock(e);
	/* Once the stream has ended and been taken, the last line comes at close. */
	e->ctl->timer =
	    live ? rf_loop_timer(e->loop, e->ctl->interval_ns, rf_on_tune_timer, e) : -1;
}

void rf_control_start(rf_engine *e)
{
	rf_control *c = e->ctl;
	rf_engine_lock(e);
	c->t_last_ns = e->st->t_open_ns;
	rf_engine_unlock(e);
	c->timer = rf_loop_timer(e->loop, c->interval_ns, rf_on_tune_timer, e);
}

/* The last line, then the trace is closed: a failed close (a full or
 * remote file system reports late) stops it like a failed write. */
void rf_control_finish(rf_engine *e)
{
	rf_control *c = e->ctl;
	if (!c || c->trace_fd < 0)
		return;
	rf_engine_lock(e);
	bool some = rf_now_ns() > c->t_last_ns + 1000000ull;
	rf_engine_unlock(e);
	if (some)
		rf_control_interval(e);
	if (c->trace_fd < 0)
		return;
	int rc = close(c->trace_fd) < 0 && errno != EINTR ? -errno : 0;
	c->trace_fd = -1;
	if (rc < 0) {
		rf_engine_lock(e);
		c->trace_err_code = rc;
		snprintf(c->trace_err, sizeof(c->trace_err), "trace %s: write failed: %s",
		         c->trace_path, strerror(-rc));
		rf_engine_unlock(e);
	}
}

int rf_control_output_error(const rf_engine *e, rf_error *err)
{
	const rf_control *c = e->ctl;
	if (!c || !c->trace_err_code)
		return 0;
	return rf_fail(err, c->trace_err_code, "%s", c->trace_err);
}

/* ------------------------------------------------------------- stats */

void rf_control_stats(rf_engine *e, rf_stats *s) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_control *c = e->ctl;
	if (!c)
		return;
	const rf_tune_decision *d = &c->t.last;
	s->depth_auto = c->auto_depth;
	s->depth_max_batches = c->depth_max;
	s->depth_target_batches = d->depth_target;
	s->depth_peak_batches = c->depth_peak;
	s->inflight_target = e->sched->inflight_cap;
	s->depth_changes = c->depth_changes;
	s->depth_direction_changes = c->dir_changes;
	s->intervals = c->t.intervals;
	s->cover_target_s = d->cover_target_s;
	s->stall_in_s = d->stall_in_s;
	s->batch_bytes_avg = rf_batch_bytes(e);
	s->pauses = e->st->pauses;
	s->pause_longest_s = (double)e->st->pause_longest_ns / 1e9;
	if (e->st->pause_longest_ns && e->st->pause_longest_shard < e->nshards)
		snprintf(s->pause_longest_source, sizeof(s->pause_longest_source), "%s",
		         e->shards[e->st->pause_longest_shard].name);
	snprintf(s->depth_reason, sizeof(s->depth_reason), "%s", rf_tune_reason_name(d->reason));
	snprintf(s->diagnosis, sizeof(s->diagnosis), "%s", rf_tune_diagnosis_name(d->diagnosis));
	s->trace_lines = c->trace_lines;
	snprintf(s->trace_error, sizeof(s->trace_error), "%s", c->trace_err);
}

/* The diagnosis in the stats' own figures (whole-run rates, the depth now,
 * the sampled fetch latencies), after the rest of s is filled: a report
 * printing both never shows two values for one figure. mu held. */
void rf_control_explain(rf_engine *e, rf_stats *s) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_control *c = e->ctl;
	if (!c)
		return;
	rf_tune_figures f = {
	    .r_bps = s->consumer_rate_bps,
	    .c_bps = s->producer_rate_bps,
	    .depth = s->depth_batches,
	    .inventory_batches = s->inventory_batches,
	    .wait_fraction = s->elapsed_s > 0 ? RF_MIN(1.0, s->consumer_wait_s / s->elapsed_s) : 0,
	    .wait_s = s->consumer_wait_s,
	    .decode_busy_fraction = s->decode_busy_fraction,
	    .fetch_p50_ms = s->fetch_latency_p50_ms,
	    .fetch_p99_ms = s->fetch_latency_p99_ms};
	rf_tune_explain_figures(&c->t, &f, s->diagnosis_text, sizeof(s->diagnosis_text));
}
