/* test_tune.c - the controller's decisions: convergence on a steady
 * consumer without oscillation, the budget's depth limit, shrinking when the
 * queue stays full, pause-derived targets, Little's law, latency
 * percentiles, and a diagnosis naming both rates in every case. The
 * consumer and producer are simulated (1 ms steps, no clocks). */
#include "testutil.h"
#include "tune.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------- simulation */

typedef struct sim {
	double r, c;        /* true consumer / producer rates, batches/s */
	double jitter;      /* batch cost varies by +-jitter (fraction) */
	double pause_until; /* producer stalled until this time */
	double now, ready, made, work_left;
	int working;
	uint64_t rng;
} sim;

static double sim_rand(sim *s) /* uniform [0, 1), deterministic */
{
	s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(s->rng >> 11) / 9007199254740992.0;
}

/* One controller interval of `wall` seconds at the current depth. */
static rf_tune_interval sim_interval(sim *s, uint32_t depth, double wall)
{
	rf_tune_interval in = {.wall_s = wall};
	const double dt = 0.001;
	for (int k = 0; k < (int)lround(wall / dt); k++, s->now += dt) {
		if (s->now >= s->pause_until && s->ready < depth) {
			s->made += s->c * dt;
			in.producer_busy_s += dt;
			while (s->made >= 1 && s->ready < depth) {
				s->ready++, s->made--;
				in.batches_produced++;
			}
		}
		if (s->working) {
			s->work_left -= dt;
			in.consumer_busy_s += dt;
			s->working = s->work_left > 0;
		}
		if (!s->working) {
			if (s->ready >= 1) {
				s->ready--;
				in.batches_consumed++;
				s->working = 1;
				s->work_left = (1 + s->jitter * (2 * sim_rand(s) - 1)) / s->r;
			} else {
				in.consumer_wait_s += dt;
			}
		}
		in.queue_samples++;
		in.queue_empty += s->ready < 1;
		in.queue_full += s->ready + 1 >= depth;
	}
	in.inventory_batches = s->ready;
	return in;
}

static rf_tune new_tune(rf_tune_params p)
{
	rf_tune t;
	char msg[200];
	if (rf_tune_init(&t, &p, msg, sizeof(msg)) != 0)
		fail_msg("rf_tune_init: %s", msg);
	return t;
}

/* Both rates as the message prints them. */
static void assert_names_rates(const rf_tune *t)
{
	char msg[600], r[40], c[40];
	rf_tune_explain(t, msg, sizeof(msg));
	snprintf(r, sizeof(r), "%.1f batches/s", t->last.r_bps);
	snprintf(c, sizeof(c), "%.1f batches/s", t->last.c_bps);
	if (!strstr(msg, r) || !strstr(msg, c))
		fail_msg("rates %s / %s missing in: %s", r, c, msg);
}

/* ---------------------------------------------------------------- tests */

static void test_converges_without_oscillating(void **state)
{
	(void)state;
	rf_tune t = new_tune((rf_tune_params){.cover_s = 1.0, .depth_max = 1000});
	sim s = {.r = 100, .c = 400, .jitter = 0.1, .rng = 1};
	uint32_t depth[400];
	int reached = -1;
	for (int i = 0; i < 400; i++) {
		rf_tune_interval in = sim_interval(&s, rf_tune_depth(&t), 0.1);
		depth[i] = rf_tune_step(&t, &in)->depth;
		assert_true(depth[i] <= 1000);
		if (reached < 0 && depth[i] >= 95)
			reached = i;
	}
	assert_true(reached >= 0 && reached < 100); /* within 10 s */
	uint32_t lo = UINT32_MAX, hi = 0;
	int turns = 0, dir = 0;
	for (int i = reached; i < 400; i++) {
		lo = depth[i] < lo ? depth[i] : lo;
		hi = depth[i] > hi ? depth[i] : hi;
		int d = i > 0 ? (depth[i] > depth[i - 1]) - (depth[i] < depth[i - 1]) : 0;
		if (d != 0 && dir != 0 && d != dir)
			turns++;
		dir = d ? d : dir;
	}
	if (lo < 95 || hi > 115 || turns > 1)
		fail_msg("settled in [%u, %u] with %d reversals", lo, hi, turns);
	assert_in_range(t.last.r_bps, 90, 110);
	assert_true(t.last.c_bps > 300);
	assert_int_equal(t.last.diagnosis, RF_TUNE_ALWAYS_FULL);
	assert_names_rates(&t);
}

static void test_never_beyond_budget(void **state)
{
	(void)state;
	rf_tune t = new_tune((rf_tune_params){.cover_s = 2.0, .depth_max = 50});
	sim s = {.r = 100, .c = 1000, .rng = 2};
	for (int i = 0; i < 100; i++) {
		rf_tune_interval in = sim_interval(&s, rf_tune_depth(&t), 0.1);
		assert_true(rf_tune_step(&t, &in)->depth <= 50);
	}
	assert_int_equal(t.last.depth, 50);
	assert_true(t.last.depth_target >= 190);
	assert_int_equal(t.last.diagnosis, RF_TUNE_BUDGET_BINDS);
	char msg[600];
	rf_tune_explain(&t, msg, sizeof(msg));
	assert_non_null(strstr(msg, "allows 50 batches"));
	assert_non_null(strstr(msg, "0.50 s of coverage"));
	assert_names_rates(&t);
	/* The budget shrinks: the depth follows at once, not by steps. */
	rf_tune_set_depth_max(&t, 20);
	rf_tune_interval in = sim_interval(&s, rf_tune_depth(&t), 0.1);
	const rf_tune_decision *d = rf_tune_step(&t, &in);
	assert_int_equal(d->depth, 20);
	assert_int_equal(d->reason, RF_TUNE_BUDGET_CUT);
}

static void test_shrinks_when_always_full(void **state)
{
	(void)state;
	rf_tune t =
	    new_tune((rf_tune_params){.cover_s = 0.5, .depth_max = 1000, .depth_initial = 400});
	sim s = {.r = 100, .c = 500, .rng = 3};
	uint32_t prev = 400;
	for (int i = 0; i < 200; i++) {
		rf_tune_interval in = sim_interval(&s, rf_tune_depth(&t), 0.1);
		const rf_tune_decision *d = rf_tune_step(&t, &in);
		assert_true(d->depth <= prev);                /* only down */
		assert_true(prev - d->depth <= prev / 8 + 1); /* in bounded steps */
		prev = d->depth;
	}
	assert_in_range(t.last.depth, 50, 56); /* the target, within the dead band */
	/* A consumer that waits keeps its depth even above target. */
	rf_tune u =
	    new_tune((rf_tune_params){.cover_s = 0.5, .depth_max = 1000, .depth_initial = 400});
	sim slow = {.r = 100, .c = 80, .rng = 4};
	for (int i = 0; i < 100; i++) {
		rf_tune_interval in = sim_interval(&slow, rf_tune_depth(&u), 0.1);
		assert_int_equal(rf_tune_step(&u, &in)->depth, 400);
	}
	assert_int_equal(u.last.diagnosis, RF_TUNE_PRODUCER_SLOW);
}

static void test_pause_derived_target(void **state)
{
	(void)state;
	rf_tune t = new_tune((rf_tune_params){.depth_max = 10000, .pause_memory = 20});
	sim s = {.r = 100, .c = 1000, .rng = 5};
	for (int i = 0; i < 100; i++) {
		rf_tune_interval in = sim_interval(&s, rf_tune_depth(&t), 0.1);
		if (i == 5)
			in.pause_max_s = 2.0;
		const rf_tune_decision *d = rf_tune_step(&t, &in);
		if (i >= 5 && i < 5 + 20)
			assert_true(fabs(d->cover_target_s - 3.0) < 1e-9); /* safety 1.5 x 2 s */
		if (i == 24)
			assert_in_range(d->depth, 280, 320);
	}
	/* The pause aged out: back to the floor, and the depth followed down. */
	assert_true(fabs(t.last.cover_target_s - 0.25) < 1e-9);
	assert_in_range(t.last.depth, 25, 30);
}

static void test_fixed_depth(void **state)
{
	(void)state;
	rf_tune t = new_tune((rf_tune_params){.cover_s = 5, .depth_max = 100, .depth_fixed = 7});
	sim s = {.r = 100, .c = 1000, .rng = 6};
	for (int i = 0; i < 30; i++) {
		rf_tune_interval in = sim_interval(&s, rf_tune_depth(&t), 0.1);
		const rf_tune_decision *d = rf_tune_step(&t, &in);
		assert_int_equal(d->depth, 7);
		assert_int_equal(d->reason, RF_TUNE_FIXED);
	}
	assert_true(t.last.r_bps > 90); /* still measures */
}

static void test_latency_and_littles_law(void **state)
{
	(void)state;
	rf_tune t = new_tune((rf_tune_params){
	    .cover_s = 1, .depth_max = 100, .connections_max = 8, .requests_per_batch = 2});
	assert_true(rf_tune_latency_quantile(&t, 0.5) == 0);
	for (int i = 1; i <= 1000; i++)
		rf_tune_note_latency(&t, i * 1e-4); /* 0.1 .. 100 ms */
	assert_in_range(1e3 * rf_tune_latency_quantile(&t, 0.5), 45, 55);
	assert_in_range(1e3 * rf_tune_latency_quantile(&t, 0.99), 90, 100);
	assert_true(fabs(rf_tune_latency_max(&t) - 0.1) < 1e-12);
	assert_true(fabs(rf_tune_latency_mean(&t) - 0.05005) < 1e-9);
	/* Outliers land in the end buckets, never outside. */
	rf_tune_note_latency(&t, 1e9);
	rf_tune_note_latency(&t, -1);
	rf_tune_note_latency(&t, NAN);
	assert_true(rf_tune_latency_quantile(&t, 1.0) <= 1e9);
	/* r = 50/s, 2 requests a batch, mean latency 20 ms: 2 in flight + 1. */
	rf_tune u = new_tune((rf_tune_params){
	    .cover_s = 1, .depth_max = 100, .connections_max = 8, .requests_per_batch = 2});
	for (int i = 0; i < 100; i++)
		rf_tune_note_latency(&u, 0.02);
	rf_tune_interval in = {.wall_s = 1, .batches_consumed = 50, .consumer_busy_s = 1};
	assert_int_equal(rf_tune_step(&u, &in)->inflight, 3);
	/* r = 500/s: 20 wanted, capped by the 8 connections. */
	rf_tune v = u;
	v.r_bps = 0;
	in.batches_consumed = 500;
	assert_int_equal(rf_tune_step(&v, &in)->inflight, 8);
}

/* Hand-made intervals for each diagnosis. */
static void test_diagnosis_words(void **state)
{
	(void)state;
	rf_tune_params p = {.cover_s = 1, .depth_max = 500, .connections_max = 4};
	rf_tune t = new_tune(p);
	rf_tune_interval in = {0};
	rf_tune_step(&t, &in);
	assert_int_equal(t.last.diagnosis, RF_TUNE_MEASURING);
	assert_names_rates(&t);
	char msg[600];
	/* Producer at 60/s, consumer at 100/s, decode threads saturated. */
	in = (rf_tune_interval){.wall_s = 1,
	                        .batches_consumed = 60,
	                        .consumer_busy_s = 0.6,
	                        .consumer_wait_s = 0.4,
	                        .batches_produced = 60,
	                        .producer_busy_s = 1,
	                        .queue_samples = 100,
	                        .queue_empty = 40,
	                        .inventory_batches = 12,
	                        .decode_busy_fraction = 0.97};
	rf_tune_step(&t, &in);
	assert_int_equal(t.last.diagnosis, RF_TUNE_PRODUCER_SLOW);
	assert_names_rates(&t);
	rf_tune_explain(&t, msg, sizeof(msg));
	assert_non_null(strstr(msg, "postpones the first stall by 0.3 s")); /* 12 / (100 - 60) */
	assert_non_null(strstr(msg, "decode threads"));
	in.decode_busy_fraction = 0.3;
	in.inflight = 4;
	rf_tune_step(&t, &in);
	rf_tune_explain(&t, msg, sizeof(msg));
	assert_non_null(strstr(msg, "connections"));
	in.inflight = 2; /* reads outstanding, but not every connection */
	rf_tune_step(&t, &in);
	rf_tune_explain(&t, msg, sizeof(msg));
	assert_non_null(strstr(msg, "storage bandwidth or latency"));
	in.inflight = 0; /* nothing waits on storage: short of CPU */
	in.decode_busy_fraction = 0.7;
	rf_tune_step(&t, &in);
	rf_tune_explain(&t, msg, sizeof(msg));
	assert_non_null(strstr(msg, "CPU: no read waits on storage; decode threads busy 70%"));
	/* Budget binds: a 200/s consumer with a 1 s target and a budget of 50. */
	rf_tune b = new_tune((rf_tune_params){.cover_s = 1, .depth_max = 50, .depth_initial = 50});
	in = (rf_tune_interval){.wall_s = 1,
	                        .batches_consumed = 200,
	                        .consumer_busy_s = 1,
	                        .batches_produced = 200,
	                        .producer_busy_s = 0.5,
	                        .queue_samples = 10,
	                        .queue_full = 5,
	                        .pause_max_s = 0.8};
	rf_tune_step(&b, &in);
	assert_int_equal(b.last.diagnosis, RF_TUNE_BUDGET_BINDS);
	assert_names_rates(&b);
	rf_tune_explain(&b, msg, sizeof(msg));
	assert_non_null(strstr(msg, "pause 0.80 s"));
	/* OK: partly full queue, producer ahead, depth at target. */
	rf_tune o =
	    new_tune((rf_tune_params){.cover_s = 0.5, .depth_max = 500, .depth_initial = 50});
	in = (rf_tune_interval){.wall_s = 1,
	                        .batches_consumed = 100,
	                        .consumer_busy_s = 1,
	                        .batches_produced = 100,
	                        .producer_busy_s = 0.5,
	                        .queue_samples = 10,
	                        .queue_full = 5,
	                        .inventory_batches = 40};
	rf_tune_step(&o, &in);
	assert_int_equal(o.last.diagnosis, RF_TUNE_OK);
	assert_int_equal(o.last.depth, 50);
	assert_names_rates(&o);
	/* Always full over 8 intervals, nobody waiting. */
	in.queue_full = 10;
	for (int i = 0; i < 8; i++)
		rf_tune_step(&o, &in);
	assert_int_equal(o.last.diagnosis, RF_TUNE_ALWAYS_FULL);
	assert_names_rates(&o);
	rf_tune_explain(&o, msg, sizeof(msg));
	assert_non_null(strstr(msg, "more depth buys nothing"));
	assert_string_equal(rf_tune_diagnosis_name(RF_TUNE_ALWAYS_FULL), "always_full");
	assert_string_equal(rf_tune_reason_name(RF_TUNE_SHRINK), "shrink");
}

static void test_bad_params(void **state)
{
	(void)state;
	rf_tune t;
	char msg[200] = "";
	rf_tune_params p = {.depth_min = 10, .depth_max = 5};
	assert_int_equal(rf_tune_init(&t, &p, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "minimum depth"));
	p = (rf_tune_params){.cover_s = NAN, .depth_max = 5};
	assert_int_equal(rf_tune_init(&t, &p, msg, sizeof(msg)), -EINVAL);
	/* Garbage measurements do not poison the rates. */
	p = (rf_tune_params){.cover_s = 1, .depth_max = 5};
	assert_int_equal(rf_tune_init(&t, &p, NULL, 0), 0);
	rf_tune_interval in = {.wall_s = NAN,
	                       .batches_consumed = 3,
	                       .consumer_busy_s = -1,
	                       .producer_busy_s = INFINITY,
	                       .inventory_batches = NAN};
	const rf_tune_decision *d = rf_tune_step(&t, &in);
	assert_true(isfinite(d->r_bps) && isfinite(d->c_bps) && isfinite(d->coverage_s));
	assert_true(d->depth <= 5);
}

/* The words from the decision, the numbers from the caller's figures (a
 * report's whole-run rates): depth / r, not inventory / r, is what the depth
 * covers; a fixed depth short of the pauses seen is said so. */
static void test_explain_in_given_figures(void **state)
{
	(void)state;
	rf_tune o =
	    new_tune((rf_tune_params){.cover_s = 0.5, .depth_max = 500, .depth_initial = 50});
	rf_tune_interval in = {.wall_s = 1,
	                       .batches_consumed = 100,
	                       .consumer_busy_s = 1,
	                       .batches_produced = 100,
	                       .producer_busy_s = 0.5,
	                       .queue_samples = 10,
	                       .queue_full = 5,
	                       .inventory_batches = 2};
	rf_tune_step(&o, &in);
	assert_int_equal(o.last.diagnosis, RF_TUNE_OK);
	rf_tune_figures f = {.r_bps = 80, .c_bps = 300, .depth = 40, .wait_fraction = 0.125};
	char msg[600];
	rf_tune_explain_figures(&o, &f, msg, sizeof(msg));
	if (!strstr(msg, "depth 40 covers 0.50 s") || !strstr(msg, "consumer's 80.0 batches/s") ||
	    !strstr(msg, "producer 300.0 batches/s") || !strstr(msg, "waited 12.5%"))
		fail_msg("not in the given figures: %s", msg);
	/* a fixed depth of 2 under 0.8 s pauses, the consumer waiting behind it */
	rf_tune d = new_tune((rf_tune_params){.depth_fixed = 2, .depth_max = 500});
	in.pause_max_s = 0.8;
	in.consumer_wait_s = 0.1;
	rf_tune_step(&d, &in);
	assert_int_equal(d.last.diagnosis, RF_TUNE_DEPTH_SHORT);
	assert_string_equal(rf_tune_diagnosis_name(RF_TUNE_DEPTH_SHORT), "depth_short");
	f.depth = 2;
	rf_tune_explain_figures(&d, &f, msg, sizeof(msg));
	if (!strstr(msg, "fixed depth too short") || !strstr(msg, "depth 2 covers 0.03 s"))
		fail_msg("depth_short words: %s", msg);
}

/* The words never contradict the figures printed next to them: a verdict
 * reached over the last intervals is said to be that, not the whole run's,
 * and "too short" needs a wait to show it (issue 16 item 5). */
static void test_words_agree_with_figures(void **state)
{
	(void)state;
	rf_tune o =
	    new_tune((rf_tune_params){.cover_s = 0.5, .depth_max = 500, .depth_initial = 50});
	rf_tune_interval in = {.wall_s = 0.1,
	                       .batches_consumed = 10,
	                       .consumer_busy_s = 0.1,
	                       .batches_produced = 10,
	                       .producer_busy_s = 0.05,
	                       .queue_samples = 10,
	                       .queue_full = 10,
	                       .inventory_batches = 40};
	for (int i = 0; i < 8; i++)
		rf_tune_step(&o, &in);
	assert_int_equal(o.last.diagnosis, RF_TUNE_ALWAYS_FULL);
	/* the run's consumer waited 0.308 s (5.2%) earlier, during stalls */
	rf_tune_figures f = {
	    .r_bps = 100, .c_bps = 200, .depth = 50, .wait_fraction = 0.052, .wait_s = 0.308};
	char msg[600];
	rf_tune_explain_figures(&o, &f, msg, sizeof(msg));
	if (strstr(msg, "never wait") || strstr(msg, "always full") ||
	    !strstr(msg, "over the last 0.8 s the queue stayed full") ||
	    !strstr(msg, "waited 5.2% of the time (0.308 s)") ||
	    !strstr(msg, "more depth buys nothing"))
		fail_msg("always_full words against a run that waited: %s", msg);
	f.wait_fraction = 0, f.wait_s = 0;
	rf_tune_explain_figures(&o, &f, msg, sizeof(msg));
	if (!strstr(msg, "the consumer never waited"))
		fail_msg("always_full words, nobody waited: %s", msg);

	/* A fixed depth of 2 under 0.5 s pauses, nobody waiting: it covered them. */
	rf_tune d = new_tune((rf_tune_params){.depth_fixed = 2, .depth_max = 500});
	in.queue_full = 5;
	in.pause_max_s = 0.5;
	in.consumer_wait_s = 0;
	for (int i = 0; i < 4; i++)
		rf_tune_step(&d, &in);
	assert_int_equal(d.last.diagnosis, RF_TUNE_DEPTH_SHORT);
	f = (rf_tune_figures){.r_bps = 100, .c_bps = 200, .depth = 2};
	rf_tune_explain_figures(&d, &f, msg, sizeof(msg));
	if (strstr(msg, "too short") || !strstr(msg, "depth 2 covers 0.02 s") ||
	    !strstr(msg, "waited 0.000 s in the last 0.4 s"))
		fail_msg("depth_short words, nobody waited: %s", msg);
	/* the same, the consumer waiting behind it: now it is too short */
	in.consumer_wait_s = 0.05;
	rf_tune_step(&d, &in);
	f.wait_fraction = 0.1, f.wait_s = 0.05;
	rf_tune_explain_figures(&d, &f, msg, sizeof(msg));
	if (!strstr(msg, "fixed depth too short") || !strstr(msg, "waited 10.0% of the time") ||
	    !strstr(msg, "0.050 s of it in the last 0.5 s"))
		fail_msg("depth_short words, the consumer waited: %s", msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_converges_without_oscillating),
	    cmocka_unit_test(test_never_beyond_budget),
	    cmocka_unit_test(test_shrinks_when_always_full),
	    cmocka_unit_test(test_pause_derived_target),
	    cmocka_unit_test(test_fixed_depth),
	    cmocka_unit_test(test_latency_and_littles_law),
	    cmocka_unit_test(test_diagnosis_words),
	    cmocka_unit_test(test_bad_params),
	    cmocka_unit_test(test_explain_in_given_figures),
	    cmocka_unit_test(test_words_agree_with_figures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
