/* sim.c - the fluid and discrete-event models of the ready inventory behind
 * `ringfeed sim` (see sim.h for what each model assumes). */
#include "sim.h"
#include "flags.h"
#include "json.h"
#include "rng.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int sim_parse_stall(const char *text, sim_stall *out)
{
	char *end = NULL;
	if (!text || !*text)
		return -EINVAL;
	errno = 0;
	double start = strtod(text, &end);
	if (end == text || *end != ':' || errno == ERANGE)
		return -EINVAL;
	const char *d = end + 1;
	double dur = strtod(d, &end);
	if (end == d || *end != '\0' || errno == ERANGE)
		return -EINVAL;
	if (!isfinite(start) || !isfinite(dur) || start < 0 || dur <= 0 || start + dur > 1e9)
		return -EINVAL;
	out->start_s = start;
	out->dur_s = dur;
	return 0;
}

static int check_fail(char *msg, size_t cap, const char *text)
{
	snprintf(msg, cap, "%s", text);
	return -EINVAL;
}

int sim_check(const sim_params *p, char *msg, size_t cap)
{
	if (!(p->lambda_bps >= 0) || !isfinite(p->lambda_bps))
		return check_fail(msg, cap, "--lambda must be a finite rate >= 0");
	if (!(p->mu_bps > 0) || !isfinite(p->mu_bps))
		return check_fail(msg, cap, "--mu must be a finite rate > 0");
	if (!(p->initial >= 0) || !isfinite(p->initial))
		return check_fail(msg, cap, "--initial must be >= 0");
	if (!(p->capacity > 0))
		return check_fail(msg, cap, "--capacity must be > 0");
	if (p->initial > p->capacity)
		return check_fail(msg, cap, "--initial is larger than --capacity");
	if (!(p->step_s > 0) || !isfinite(p->step_s))
		return check_fail(msg, cap, "--step must be > 0 seconds");
	if (p->until_s != 0 && !(p->until_s >= p->step_s))
		return check_fail(msg, cap, "--until must be at least one --step");
	if (p->until_s / p->step_s > SIM_STEPS_MAX) {
		snprintf(msg, cap, "--until / --step is %.0f steps, more than the %d allowed",
		         ceil(p->until_s / p->step_s), SIM_STEPS_MAX);
		return -EINVAL;
	}
	if (p->stalls > SIM_STALLS_MAX)
		return check_fail(msg, cap, "too many --stall windows");
	for (size_t i = 0; i < p->stalls; i++)
		if (!(p->stall[i].start_s >= 0) || !(p->stall[i].dur_s > 0))
			return check_fail(msg, cap, "a --stall window has a bad start or duration");
	return 0;
}

size_t sim_fluid_points(const sim_params *p)
{
	if (p->until_s == 0)
		return SIM_STEPS_DEFAULT + 1;
	/* The tolerance keeps 1.0 / 0.1 from counting as 11 steps. */
	double steps = ceil(p->until_s / p->step_s - 1e-9);
	return (size_t)steps + 1;
}

static bool stalled_at(const sim_params *p, double t)
{
	for (size_t i = 0; i < p->stalls; i++)
		if (t >= p->stall[i].start_s && t < p->stall[i].start_s + p->stall[i].dur_s)
			return true;
	return false;
}

typedef struct fluid_state {
	double x;          /* inventory */
	double empty_at_s; /* NAN until the consumer first waits */
	double wait_s;     /* in the current step */
	double active_s;   /* producer time outside stalls in the current step */
} fluid_state;

/* One segment of constant rates: producer prod, consumer mu, for dt seconds. */
static void fluid_segment(const sim_params *p, double t0, double dt, double prod, fluid_state *s)
{
	double mu = p->mu_bps, net = prod - mu;
	if (s->x <= 0 && net < 0) { /* starved: the consumer takes what arrives */
		if (isnan(s->empty_at_s))
			s->empty_at_s = t0;
		s->x = 0;
		s->wait_s += dt * (1.0 - prod / mu);
		return;
	}
	if (net < 0 && s->x / -net <= dt) { /* empties inside the segment */
		double tz = s->x / -net;
		if (isnan(s->empty_at_s))
			s->empty_at_s = t0 + tz;
		s->x = 0;
		s->wait_s += (dt - tz) * (1.0 - prod / mu);
		return;
	}
	s->x += net * dt;
	if (s->x > p->capacity)
		s->x = p->capacity;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Advances the state from t0 to t1, splitting the step at stall edges. */
static void fluid_step(const sim_params *p, double t0, double t1, fluid_state *s)
{
	double cut[2 * SIM_STALLS_MAX + 2];
	size_t n = 0;
	cut[n++] = t0;
	for (size_t i = 0; i < p->stalls; i++) {
		double e[2] = {p->stall[i].start_s, p->stall[i].start_s + p->stall[i].dur_s};
		for (int k = 0; k < 2; k++)
			if (e[k] > t0 && e[k] < t1)
				cut[n++] = e[k];
	}
	cut[n++] = t1;
	qsort(cut, n, sizeof(cut[0]), cmp_double);
	s->wait_s = 0;
	s->active_s = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		double a = cut[i], dt = cut[i + 1] - a;
		if (dt <= 0)
			continue;
		bool stalled = stalled_at(p, a + dt / 2);
		if (!stalled)
			s->active_s += dt;
		fluid_segment(p, a, dt, stalled ? 0.0 : p->lambda_bps, s);
	}
}

static void event_add(sim_point *pt, const char *what, double v)
{
	size_t len = strlen(pt->event);
	if (len + 2 >= sizeof(pt->event))
		return;
	if (len)
		len += (size_t)snprintf(pt->event + len, sizeof(pt->event) - len, "; ");
	if (len < sizeof(pt->event))
		snprintf(pt->event + len, sizeof(pt->event) - len, "%s at %.6g s", what, v);
}

/* Names the stall edges and the first empty that fall in (t0, t1]
 * (in [0, 0] for the first point). */
static void note_events(const sim_params *p, double t0, double t1, const fluid_state *s, bool first,
                        bool emptied, sim_point *pt)
{
	for (size_t i = 0; i < p->stalls; i++) {
		double a = p->stall[i].start_s, b = a + p->stall[i].dur_s;
		if ((first && a == 0) || (a > t0 && a <= t1))
			event_add(pt, "producer stall begins", a);
		if (!first && b > t0 && b <= t1)
			event_add(pt, "producer stall ends", b);
	}
	if (emptied)
		event_add(pt, "inventory empty", s->empty_at_s);
}

int sim_fluid(const sim_params *p, sim_result *out)
{
	size_t max = sim_fluid_points(p);
	memset(out, 0, sizeof(*out));
	out->point = calloc(max, sizeof(sim_point));
	if (!out->point)
		return -ENOMEM;
	fluid_state s = {.x = p->initial, .empty_at_s = NAN};
	if (s.x <= 0 && (stalled_at(p, 0) || p->lambda_bps < p->mu_bps))
		s.empty_at_s = 0;
	sim_point *pt = &out->point[0];
	pt->inventory = s.x;
	pt->producer_bps = stalled_at(p, 0) ? 0 : p->lambda_bps;
	note_events(p, 0, 0, &s, true, !isnan(s.empty_at_s), pt);
	out->points = 1;
	for (size_t k = 1; k < max; k++) {
		if (p->until_s == 0 && !isnan(s.empty_at_s))
			break;
		double t0 = (double)(k - 1) * p->step_s, t1 = (double)k * p->step_s;
		if (p->until_s > 0 && t1 > p->until_s)
			t1 = p->until_s;
		bool was_empty = !isnan(s.empty_at_s);
		fluid_step(p, t0, t1, &s);
		pt = &out->point[out->points++];
		pt->t_s = t1;
		pt->inventory = s.x;
		pt->wait_s = s.wait_s;
		pt->producer_bps = p->lambda_bps * s.active_s / (t1 - t0);
		note_events(p, t0, t1, &s, false, !was_empty && !isnan(s.empty_at_s), pt);
	}
	out->empty_at_s = s.empty_at_s;
	return 0;
}

void sim_result_free(sim_result *r)
{
	free(r->point);
	r->point = NULL;
	r->points = 0;
}

int sim_write_trace(FILE *f, const sim_params *p, const sim_result *r, uint64_t batch_bytes)
{
	double depth = isfinite(p->capacity) ? p->capacity : ceil(p->initial);
	for (size_t i = 0; i < r->points; i++) {
		const sim_point *pt = &r->point[i];
		fprintf(
		    f,
		    "{\"t_s\":%.15g,\"depth\":%.15g,\"ready\":%.15g,\"decoded\":0,\"in_flight\":0,",
		    pt->t_s, depth, pt->inventory);
		fprintf(f,
		        "\"mem\":{\"fetch\":0,\"decoded\":0,\"batch\":%.0f,\"scratch\":0,"
		        "\"metadata\":0},\"budget_bytes\":%.0f,",
		        floor(pt->inventory * (double)batch_bytes), depth * (double)batch_bytes);
		fprintf(f, "\"r_bps\":%.15g,\"c_bps\":%.15g,\"wait_s\":%.15g,\"coverage_s\":%.15g",
		        p->mu_bps, pt->producer_bps, pt->wait_s, pt->inventory / p->mu_bps);
		if (pt->event[0]) {
			fputs(",\"event\":", f);
			rf_json_fput(f, pt->event);
		}
		fputs("}\n", f);
	}
	return ferror(f) ? -EIO : 0;
}

/* ------------------------------------------------------- discrete events */

typedef struct sim_rng {
	uint64_t s[4];
} sim_rng;

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(sim_rng *r) /* xoshiro256** */
{
	uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in (0, 1]. */
static double rng_unit(sim_rng *r)
{
	return ((double)(rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
}

/* A lognormal cost with the given mean and coefficient of variation. */
static double draw_cost(sim_rng *r, double mean, double cv)
{
	if (cv <= 0)
		return mean;
	double s2 = log1p(cv * cv), m = log(mean) - s2 / 2;
	double z = sqrt(-2.0 * log(rng_unit(r))) * cos(2.0 * M_PI * rng_unit(r));
	return exp(m + sqrt(s2) * z);
}

/* The time at which `work` seconds of producer activity started at t end,
 * with the clock frozen inside stall windows. */
static double producer_finish(const sim_params *p, double t, double work)
{
	for (size_t guard = 0; guard <= 2 * p->stalls + 1; guard++) {
		double next_start = INFINITY, resume = t;
		for (size_t i = 0; i < p->stalls; i++) {
			double a = p->stall[i].start_s, b = a + p->stall[i].dur_s;
			if (t >= a && t < b && b > resume)
				resume = b;
			else if (a > t && a < next_start)
				next_start = a;
		}
		if (resume > t) { /* inside a stall: wait for its end */
			t = resume;
			continue;
		}
		if (t + work <= next_start)
			return t + work;
		work -= next_start - t;
		t = next_start;
	}
	return t + work; /* every window passed */
}

typedef struct trial_clock {
	double t_p; /* next producer completion (INFINITY when idle) */
	double t_c; /* next time the consumer asks for a batch */
	double inv; /* ready batches */
	bool blocked;
} trial_clock;

/* One trial: returns the time of the consumer's first wait, or INFINITY. */
static double run_trial(const sim_params *p, const sim_discrete_params *d, sim_rng *r,
                        uint64_t events_max)
{
	double pm = p->lambda_bps > 0 ? 1.0 / p->lambda_bps : 0, cm = 1.0 / p->mu_bps;
	trial_clock c = {.t_p = INFINITY, .inv = p->initial};
	if (p->lambda_bps > 0)
		c.t_p = producer_finish(p, 0, draw_cost(r, pm, d->producer_cv));
	for (uint64_t ev = 0; ev < events_max; ev++) {
		if (c.t_p <= c.t_c) { /* a batch becomes ready */
			if (c.t_p > d->horizon_s)
				return INFINITY;
			c.inv += 1;
			c.blocked = c.inv >= p->capacity;
			c.t_p = c.blocked
			            ? INFINITY
			            : producer_finish(p, c.t_p, draw_cost(r, pm, d->producer_cv));
			continue;
		}
		if (c.t_c > d->horizon_s)
			return INFINITY;
		if (c.inv < 1)
			return c.t_c;
		c.inv -= 1;
		if (c.blocked) {
			c.blocked = false;
			c.t_p = producer_finish(p, c.t_c, draw_cost(r, pm, d->producer_cv));
		}
		c.t_c += draw_cost(r, cm, d->cost_cv);
	}
	return INFINITY;
}

int sim_discrete(const sim_params *p, const sim_discrete_params *d, sim_discrete_result *out)
{
	memset(out, 0, sizeof(*out));
	if (d->trials == 0 || d->trials > SIM_TRIALS_MAX)
		return -EINVAL;
	out->empty_at_s = calloc(d->trials, sizeof(double));
	if (!out->empty_at_s)
		return -ENOMEM;
	out->trials = d->trials;
	out->predicted_s = p->initial / p->mu_bps;
	out->events_per_trial_max = SIM_EVENTS_TOTAL_MAX / d->trials;
	sim_rng rng;
	uint64_t seed = d->seed;
	for (int i = 0; i < 4; i++)
		rng.s[i] = rf_splitmix64(&seed);
	double sum = 0;
	for (uint64_t i = 0; i < d->trials; i++) {
		double e = run_trial(p, d, &rng, out->events_per_trial_max);
		out->empty_at_s[i] = e;
		if (!isfinite(e)) {
			out->never++;
			continue;
		}
		sum += e;
		if (e < out->predicted_s)
			out->before_predicted++;
	}
	out->mean_s = out->never < d->trials ? sum / (double)(d->trials - out->never) : NAN;
	qsort(out->empty_at_s, d->trials, sizeof(double), cmp_double);
	return 0;
}

void sim_discrete_free(sim_discrete_result *r)
{
	free(r->empty_at_s);
	r->empty_at_s = NULL;
}

double sim_quantile(const sim_discrete_result *r, double q)
{
	if (r->trials == 0)
		return NAN;
	double rank = ceil(q * (double)r->trials);
	size_t i = rank < 1 ? 0 : (size_t)rank - 1;
	if (i >= r->trials)
		i = r->trials - 1;
	return r->empty_at_s[i];
}
