/* tune.c - the read-ahead controller's decisions (see tune.h): smoothed rates,
 * target coverage from pauses, bounded depth steps, Little's law for requests
 * in flight, a log-bucket latency histogram and the diagnosis in words. */
#include "tune.h"
#include "util.h"

#include <math.h>
#include <stdio.h>

#define RATE_MAX_BPS          1e6  /* a consumer doing no work: "as fast as it gets" */
#define SLOW_MARGIN           0.95 /* c below this share of r: the producer is slower */
#define FULL_FRACTION         0.9  /* queue "stayed full" in an interval */
#define ALWAYS_FULL_FRACTION  0.95
#define ALWAYS_FULL_INTERVALS 8
/* Consumer waits below this, summed over the recent intervals, are noise
 * (a wake-up, a lock); it is also the floor of the per-call wait that bench's
 * stall measurement still counts as "covered". */
#define WAIT_NOISE_S 0.005
/* A wait that a report prints as nonzero (%.3f s or %.1f%%). */
#define WAIT_SHOWN_S        0.0005
#define WAIT_SHOWN_FRACTION 0.0005
#define LAT_MEMORY_FACTOR   10.0 /* latency memory, in smoothing time constants */

static double finite_or_zero(double v)
{
	return isfinite(v) && v > 0 ? v : 0;
}

static int tune_fail(char *msg, size_t cap, const char *what)
{
	if (msg && cap)
		snprintf(msg, cap, "controller: %s", what);
	return -EINVAL;
}

int rf_tune_init(rf_tune *t, const rf_tune_params *p, char *err_msg, size_t cap)
{
	memset(t, 0, sizeof(*t));
	rf_tune_params q = *p;
	q.safety = q.safety > 0 ? q.safety : 1.5;
	q.cover_min_s = q.cover_min_s > 0 ? q.cover_min_s : 0.25;
	q.pause_memory = q.pause_memory ? RF_MIN(q.pause_memory, RF_TUNE_HISTORY) : 32;
	q.smooth_s = q.smooth_s > 0 ? q.smooth_s : 2.0;
	q.depth_min = q.depth_min ? q.depth_min : 1;
	q.step_max = q.step_max ? q.step_max : 256;
	q.connections_max = q.connections_max ? q.connections_max : 64;
	q.requests_per_batch = q.requests_per_batch > 0 ? q.requests_per_batch : 1.0;
	if (!isfinite(q.cover_s) || q.cover_s < 0 || !isfinite(q.safety) || !isfinite(q.smooth_s) ||
	    !isfinite(q.cover_min_s) || !isfinite(q.requests_per_batch))
		return tune_fail(err_msg, cap,
		                 "cover, safety, smoothing and requests must be finite");
	if (q.depth_max < q.depth_min)
		return tune_fail(err_msg, cap,
		                 "the budget allows fewer batches than the minimum depth");
	if (q.depth_initial == 0)
		q.depth_initial = RF_MIN(4u, q.depth_max);
	t->p = q;
	t->depth = q.depth_fixed ? RF_MIN(q.depth_fixed, q.depth_max)
	                         : RF_MAX(q.depth_min, RF_MIN(q.depth_initial, q.depth_max));
	t->last.depth = t->depth;
	t->last.inflight = 1;
	return 0;
}

void rf_tune_set_depth_max(rf_tune *t, uint32_t depth_max)
{
	t->p.depth_max = RF_MAX(depth_max, t->p.depth_min);
}

/* ------------------------------------------------------------- latency */

static int lat_bucket(double s)
{
	if (!(s > RF_TUNE_LAT_MIN_S))
		return 0;
	double i = floor(log2(s / RF_TUNE_LAT_MIN_S) * RF_TUNE_LAT_SUB);
	return i >= RF_TUNE_LAT_BUCKETS ? RF_TUNE_LAT_BUCKETS - 1 : (int)i;
}

void rf_tune_note_latency(rf_tune *t, double latency_s)
{
	latency_s = finite_or_zero(latency_s);
	t->lat_count[lat_bucket(latency_s)] += 1;
	t->lat_total += 1;
	t->lat_sum_s += latency_s;
	t->lat_max_s = RF_MAX(t->lat_max_s, latency_s);
}

double rf_tune_latency_quantile(const rf_tune *t, double q)
{
	if (t->lat_total <= 0)
		return 0;
	double want = RF_MAX(0.0, RF_MIN(1.0, q)) * t->lat_total, seen = 0;
	for (int i = 0; i < RF_TUNE_LAT_BUCKETS; i++) {
		seen += t->lat_count[i];
		if (seen >= want && t->lat_count[i] > 0) /* geometric middle of the bucket */
			return RF_MIN(RF_TUNE_LAT_MIN_S * exp2((i + 0.5) / RF_TUNE_LAT_SUB),
			              t->lat_max_s);
	}
	return t->lat_max_s;
}

double rf_tune_latency_mean(const rf_tune *t)
{
	return t->lat_total > 0 ? t->lat_sum_s / t->lat_total : 0;
}

double rf_tune_latency_max(const rf_tune *t)
{
	return t->lat_max_s;
}

static void lat_decay(rf_tune *t, double wall_s)
{
	double keep = exp(-wall_s / (LAT_MEMORY_FACTOR * t->p.smooth_s));
	for (int i = 0; i < RF_TUNE_LAT_BUCKETS; i++)
		t->lat_count[i] *= keep;
	t->lat_total *= keep;
	t->lat_sum_s *= keep;
}

/* ------------------------------------------------------- measurements */

static double smooth(double old, double sample, double alpha)
{
	return old > 0 ? old + alpha * (sample - old) : sample;
}

static void update_rates(rf_tune *t, const rf_tune_interval *in)
{
	double wall = finite_or_zero(in->wall_s);
	double alpha = 1.0 - exp(-wall / t->p.smooth_s);
	if (in->batches_consumed > 0) {
		double n = (double)in->batches_consumed;
		double busy = RF_MAX(finite_or_zero(in->consumer_busy_s), n / RATE_MAX_BPS);
		t->r_bps = smooth(t->r_bps, n / busy, alpha);
	}
	double pbusy = finite_or_zero(in->producer_busy_s);
	if (pbusy > 0) {
		double n = (double)in->batches_produced;
		double c = RF_MIN(n / pbusy, RATE_MAX_BPS);
		t->c_bps = t->c_bps > 0 || c > 0 ? smooth(t->c_bps, c, alpha) : 0;
	}
}

static void update_history(rf_tune *t, const rf_tune_interval *in)
{
	size_t slot = t->intervals % RF_TUNE_HISTORY;
	t->pause_s[slot] = finite_or_zero(in->pause_max_s);
	t->full_fraction[slot] =
	    in->queue_samples
	        ? (double)RF_MIN(in->queue_full, in->queue_samples) / in->queue_samples
	        : 0;
	t->wait_s[slot] = finite_or_zero(in->consumer_wait_s);
	t->wall_s[slot] = finite_or_zero(in->wall_s);
	t->intervals++;
}

static double recent_pause(const rf_tune *t)
{
	double m = 0;
	uint64_t n = RF_MIN(t->intervals, (uint64_t)t->p.pause_memory);
	for (uint64_t k = 1; k <= n; k++)
		m = RF_MAX(m, t->pause_s[(t->intervals - k) % RF_TUNE_HISTORY]);
	return m;
}

/* Whether the last `n` intervals (all of them, and at least n known) had the
 * queue full at least `fraction` of the time with no consumer wait. */
static int stayed_full(const rf_tune *t, uint64_t n, double fraction)
{
	if (t->intervals < n)
		return 0;
	for (uint64_t k = 1; k <= n; k++) {
		size_t slot = (t->intervals - k) % RF_TUNE_HISTORY;
		if (t->full_fraction[slot] < fraction || t->wait_s[slot] > 0)
			return 0;
	}
	return 1;
}

/* ------------------------------------------------------------ decisions */

static double target_cover(const rf_tune *t, double pause_s)
{
	if (t->p.cover_s > 0)
		return t->p.cover_s;
	double latency = t->p.safety * rf_tune_latency_quantile(t, 0.99);
	return RF_MAX(t->p.cover_min_s, RF_MAX(t->p.safety * pause_s, latency));
}

static uint32_t saturate_u32(double v)
{
	/* ceil, forgiving rounding noise: 2.0000000000000004 requests are 2 */
	return v >= (double)UINT32_MAX ? UINT32_MAX : v <= 0 ? 0 : (uint32_t)ceil(v - 1e-9);
}

static rf_tune_reason decide_depth(rf_tune *t, uint32_t target)
{
	const rf_tune_params *p = &t->p;
	if (p->depth_fixed) {
		t->depth = RF_MIN(p->depth_fixed, p->depth_max);
		return RF_TUNE_FIXED;
	}
	if (t->depth > p->depth_max) {
		t->depth = p->depth_max;
		return RF_TUNE_BUDGET_CUT;
	}
	if (t->r_bps <= 0)
		return RF_TUNE_HOLD; /* nothing measured: keep the initial depth */
	uint32_t want = RF_MIN(RF_MAX(target, p->depth_min), p->depth_max);
	if (want > t->depth) {
		uint32_t step = RF_MIN(RF_MAX(t->depth / 2, 1u), p->step_max);
		t->depth += RF_MIN(step, want - t->depth);
		return target > p->depth_max && t->depth == p->depth_max ? RF_TUNE_GROW_CAPPED
		                                                         : RF_TUNE_GROW;
	}
	uint32_t gap = t->depth - want;
	if (gap > t->depth / 16 && stayed_full(t, 2, FULL_FRACTION)) {
		t->depth -= RF_MIN(RF_MAX(t->depth / 8, 1u), gap);
		return RF_TUNE_SHRINK;
	}
	return RF_TUNE_HOLD;
}

static uint32_t decide_inflight(const rf_tune *t)
{
	double mean = rf_tune_latency_mean(t);
	if (t->r_bps <= 0 || mean <= 0)
		return t->last.inflight ? t->last.inflight : 1;
	double l = t->r_bps * t->p.requests_per_batch * mean;
	uint32_t n = saturate_u32(l);
	n = n < UINT32_MAX ? n + 1 : n;
	return RF_MAX(1u, RF_MIN(n, t->p.connections_max));
}

static rf_tune_diagnosis diagnose(const rf_tune *t, rf_tune_decision *d, double inventory)
{
	if (t->r_bps <= 0)
		return RF_TUNE_MEASURING;
	/* A fixed depth short of the pauses seen: during a pause the producer
	 * looks slow, but covering pauses is the depth's job. */
	if (t->p.depth_fixed && d->pause_recent_s > 0 && d->depth_target > t->depth)
		return RF_TUNE_DEPTH_SHORT;
	if (t->c_bps > 0 && t->c_bps < SLOW_MARGIN * t->r_bps) {
		d->stall_in_s = inventory / (t->r_bps - t->c_bps);
		return RF_TUNE_PRODUCER_SLOW;
	}
	if (d->depth_target > t->p.depth_max && t->depth >= t->p.depth_max)
		return RF_TUNE_BUDGET_BINDS;
	if (stayed_full(t, RF_MIN(ALWAYS_FULL_INTERVALS, RF_TUNE_HISTORY), ALWAYS_FULL_FRACTION))
		return RF_TUNE_ALWAYS_FULL;
	return RF_TUNE_OK;
}

const rf_tune_decision *rf_tune_step(rf_tune *t, const rf_tune_interval *in)
{
	rf_tune_decision d = {0};
	double wall = finite_or_zero(in->wall_s);
	update_rates(t, in);
	update_history(t, in);
	d.pause_recent_s = recent_pause(t);
	d.cover_target_s = target_cover(t, d.pause_recent_s);
	d.depth_target = t->r_bps > 0 ? saturate_u32(t->r_bps * d.cover_target_s) : t->depth;
	uint32_t before = t->depth;
	d.reason = decide_depth(t, d.depth_target);
	d.depth = t->depth;
	d.depth_change = (int64_t)t->depth - (int64_t)before;
	d.inflight = decide_inflight(t);
	d.r_bps = t->r_bps;
	d.c_bps = t->c_bps;
	double inventory = finite_or_zero(in->inventory_batches);
	d.coverage_s = t->r_bps > 0 ? inventory / t->r_bps : 0;
	d.wait_fraction = wall > 0 ? RF_MIN(1.0, finite_or_zero(in->consumer_wait_s) / wall) : 0;
	d.diagnosis = diagnose(t, &d, inventory);
	lat_decay(t, wall);
	t->last = d;
	t->last_in = *in;
	return &t->last;
}

uint32_t rf_tune_depth(const rf_tune *t)
{
	return t->depth;
}

/* ------------------------------------------------------------- in words */

/* The consumer's wait and the wall time over the last n intervals (at most
 * those known): the span a recent verdict was reached over. */
static void recent_wait(const rf_tune *t, uint64_t n, double *wait_s, double *wall_s)
{
	*wait_s = *wall_s = 0;
	n = RF_MIN(RF_MIN(n, t->intervals), (uint64_t)RF_TUNE_HISTORY);
	for (uint64_t k = 1; k <= n; k++) {
		size_t slot = (t->intervals - k) % RF_TUNE_HISTORY;
		*wait_s += t->wait_s[slot];
		*wall_s += t->wall_s[slot];
	}
}

/* Whether the figures show a wait at all, as a report prints them. */
static bool waited(const rf_tune_figures *f)
{
	return f->wait_s >= WAIT_SHOWN_S || f->wait_fraction >= WAIT_SHOWN_FRACTION;
}

/* The verdict is over the last intervals; the figures may span the whole
 * run, where the consumer may have waited before the queue filled. */
static int explain_always_full(const rf_tune *t, const rf_tune_figures *f, char *buf, size_t cap)
{
	double r = f->r_bps, wait, wall;
	recent_wait(t, ALWAYS_FULL_INTERVALS, &wait, &wall);
	int n = snprintf(buf, cap,
	                 "over the last %.1f s the queue stayed full and the consumer did not "
	                 "wait: the producer (%.1f batches/s) keeps ahead of the consumer "
	                 "(%.1f batches/s); more depth buys nothing (depth %u covers %.2f s)",
	                 wall, f->c_bps, r, f->depth, r > 0 ? f->depth / r : 0.0);
	size_t used = n > 0 ? RF_MIN((size_t)n, cap ? cap - 1 : 0) : 0;
	int m = waited(f) ? snprintf(buf + used, cap - used,
	                             "; earlier the consumer waited %.1f%% of the time (%.3f "
	                             "s), during pauses or while the queue first filled",
	                             100 * f->wait_fraction, f->wait_s)
	                  : snprintf(buf + used, cap - used, "; the consumer never waited");
	return n < 0 || m < 0 ? -1 : n + m;
}

/* "Too short" only with the wait that shows it: a fixed depth that the
 * consumer never waited behind (over the intervals the pauses were seen in)
 * covered them, whatever margin the automatic depth would add. */
static int explain_depth_short(const rf_tune *t, const rf_tune_figures *f, char *buf, size_t cap)
{
	const rf_tune_decision *d = &t->last;
	double r = f->r_bps, wait, wall;
	recent_wait(t, t->p.pause_memory, &wait, &wall);
	if (wait >= WAIT_NOISE_S && waited(f))
		return snprintf(
		    buf, cap,
		    "fixed depth too short for the pauses: depth %u covers %.2f s at the "
		    "consumer's %.1f batches/s, the pauses seen (longest recent %.2f s) call "
		    "for %.2f s, %u batches (automatic depth, the default, sizes it); the "
		    "consumer waited %.1f%% of the time (%.3f s), %.3f s of it in the last %.1f s",
		    f->depth, r > 0 ? f->depth / r : 0.0, r, d->pause_recent_s, d->cover_target_s,
		    d->depth_target, 100 * f->wait_fraction, f->wait_s, wait, wall);
	return snprintf(buf, cap,
	                "fixed depth %u covers %.2f s at the consumer's %.1f batches/s and held "
	                "through the pauses seen (longest recent %.2f s): the consumer waited "
	                "%.3f s in the last %.1f s and %.1f%% of the time (%.3f s) over the run; "
	                "the automatic depth would keep %.2f s, %u batches, for margin",
	                f->depth, r > 0 ? f->depth / r : 0.0, r, d->pause_recent_s, wait, wall,
	                100 * f->wait_fraction, f->wait_s, d->cover_target_s, d->depth_target);
}

const char *rf_tune_diagnosis_name(rf_tune_diagnosis d)
{
	static const char *const names[RF_TUNE_DIAGNOSES] = {
	    "measuring", "ok", "producer_slow", "budget_binds", "always_full", "depth_short"};
	return (unsigned)d < RF_TUNE_DIAGNOSES ? names[d] : "unknown";
}

const char *rf_tune_reason_name(rf_tune_reason r)
{
	static const char *const names[RF_TUNE_REASONS] = {"hold",   "grow",       "grow_capped",
	                                                   "shrink", "budget_cut", "fixed"};
	return (unsigned)r < RF_TUNE_REASONS ? names[r] : "unknown";
}

/* The likely bottleneck of a producer slower than its consumer. */
static int explain_bottleneck(const rf_tune *t, const rf_tune_figures *f, char *buf, size_t cap)
{
	const rf_tune_interval *in = &t->last_in;
	double busy = f->decode_busy_fraction;
	if (busy >= 0.85)
		return snprintf(buf, cap, "decode threads (busy %.0f%% of the time)", 100 * busy);
	if (in->inflight == 0)
		/* Nothing is waiting on storage: the producer is short of CPU (the
		 * decoders share the cores with the loop thread and the batch copies). */
		return snprintf(buf, cap,
		                "CPU: no read waits on storage; decode threads busy %.0f%% of the "
		                "time, sharing the cores with reading and collation",
		                100 * busy);
	if (in->inflight >= t->p.connections_max)
		return snprintf(
		    buf, cap, "latency: all %u connections busy at fetch p50 %.2f ms, p99 %.2f ms",
		    t->p.connections_max, f->fetch_p50_ms, f->fetch_p99_ms);
	return snprintf(buf, cap,
	                "storage bandwidth or latency (fetch p50 %.2f ms, p99 %.2f ms, %u requests "
	                "in flight)",
	                f->fetch_p50_ms, f->fetch_p99_ms, in->inflight);
}

static int explain_producer_slow(const rf_tune *t, const rf_tune_figures *f, char *buf, size_t cap)
{
	char why[200];
	double r = f->r_bps, c = f->c_bps;
	explain_bottleneck(t, f, why, sizeof(why));
	if (c >= r) /* slower lately, not over the figures' span */
		return snprintf(buf, cap,
		                "producer slower than consumer in the last intervals (over the run "
		                "it sustained %.1f batches/s, the consumer took %.1f batches/s); "
		                "likely bottleneck: %s",
		                c, r, why);
	return snprintf(buf, cap,
	                "producer slower than consumer: it sustains %.1f batches/s, the "
	                "consumer takes %.1f batches/s; more depth cannot fix this, the "
	                "inventory of %.0f batches postpones the first stall by %.1f s; "
	                "likely bottleneck: %s",
	                c, r, f->inventory_batches, f->inventory_batches / (r - c), why);
}

int rf_tune_explain_figures(const rf_tune *t, const rf_tune_figures *f, char *buf, size_t cap)
{
	const rf_tune_decision *d = &t->last;
	double r = f->r_bps, c = f->c_bps;
	switch (d->diagnosis) {
	case RF_TUNE_PRODUCER_SLOW:
		return explain_producer_slow(t, f, buf, cap);
	case RF_TUNE_BUDGET_BINDS:
		return snprintf(buf, cap,
		                "budget binds: it allows %u batches, %.2f s of coverage at the "
		                "consumer's %.1f batches/s (producer %.1f batches/s), short of the "
		                "%.2f s target; longest recent pause %.2f s",
		                t->p.depth_max, r > 0 ? t->p.depth_max / r : 0.0, r, c,
		                d->cover_target_s, d->pause_recent_s);
	case RF_TUNE_ALWAYS_FULL:
		return explain_always_full(t, f, buf, cap);
	case RF_TUNE_DEPTH_SHORT:
		return explain_depth_short(t, f, buf, cap);
	case RF_TUNE_OK:
		return snprintf(
		    buf, cap,
		    "ok: depth %u covers %.2f s (target %.2f s) at the consumer's %.1f "
		    "batches/s; producer %.1f batches/s; consumer waited %.1f%% of the time",
		    f->depth, r > 0 ? f->depth / r : 0.0, d->cover_target_s, r, c,
		    100 * f->wait_fraction);
	default:
		return snprintf(buf, cap,
		                "measuring: too few controller intervals to judge yet (consumer "
		                "%.1f batches/s, producer %.1f batches/s so far)",
		                r, c);
	}
}

int rf_tune_explain(const rf_tune *t, char *buf, size_t cap)
{
	const rf_tune_decision *d = &t->last;
	rf_tune_figures f = {.r_bps = d->r_bps,
	                     .c_bps = d->c_bps,
	                     .depth = d->depth,
	                     .inventory_batches = d->coverage_s * d->r_bps,
	                     .wait_fraction = d->wait_fraction,
	                     .wait_s = d->wait_fraction * t->last_in.wall_s,
	                     .decode_busy_fraction = t->last_in.decode_busy_fraction,
	                     .fetch_p50_ms = 1e3 * rf_tune_latency_quantile(t, 0.5),
	                     .fetch_p99_ms = 1e3 * rf_tune_latency_quantile(t, 0.99)};
	return rf_tune_explain_figures(t, &f, buf, cap);
}
