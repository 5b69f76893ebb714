/* cmd_sim.c - `ringfeed sim`, the queue lab: how long does an inventory of
 * ready batches last against a consumer, with producer stalls? Fluid model
 * by default, seeded discrete-event trials with --discrete (tools/sim.h). */
#include "commands.h"
#include "flags.h"
#include "sim.h"
#include "sim_mix.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char sim_usage[] =
    "usage: ringfeed sim --mu RATE [options]\n"
    "\n"
    "Fluid model of the ready inventory: the producer adds --lambda batches/s\n"
    "(0 inside a stall), the consumer removes --mu batches/s; prints the inventory\n"
    "at each step and the time it first empties (solved exactly inside a step).\n"
    "\n"
    "  --lambda RATE        producer rate, batches/s (default 0)\n"
    "  --mu RATE            consumer rate, batches/s (required, > 0)\n"
    "  --initial N          batches ready at t = 0 (default 0)\n"
    "  --capacity N         most batches the queue holds (default: unbounded)\n"
    "  --stall START:DUR    producer stall window in seconds (repeatable, up to 64)\n"
    "  --step SECONDS       output step (default 0.1)\n"
    "  --until SECONDS      run to this time (default: until the inventory empties,\n"
    "                       at most 1000 steps); at most 100000 steps\n"
    "  --json               one JSON object: the series [{t, inventory}] and empty_at_s\n"
    "  --trace FILE         also write the run as a trace (docs/trace.md)\n"
    "  --batch-bytes SIZE   bytes per batch in the trace's memory figures (default 1MiB)\n"
    "\n"
    "Discrete-event mode (--discrete): whole batches with lognormal costs of mean\n"
    "1/mu (consumer) and 1/lambda (producer), over many seeded trials; reports D/r\n"
    "and the distribution of the actual time to first empty. D/r is a bound on the\n"
    "average, not a guarantee for any one run.\n"
    "  --discrete           run the discrete-event trials\n"
    "  --trials N           trials (default 1000, at most 100000)\n"
    "  --seed N             random seed (default 1)\n"
    "  --cost-cv X          coefficient of variation of a consumer batch cost (default 0.5)\n"
    "  --producer-cv X      same for a producer batch (default 0)\n"
    "\n"
    "Mixture (--mixture FILE, with the loader's options as `read` takes them): the\n"
    "epoch's samples and each source's share come from a loader opened on it (as\n"
    "`plan --mixture`); every source of weight w > 0 is needed in every prefix of\n"
    "the stream, so a source that alone delivers RATE batches/s carries at most\n"
    "RATE / w: the producer runs at the least of these (and --lambda), and a\n"
    "source's stall stalls it. Prints each source's figures and which source the\n"
    "consumer waited on at the first empty.\n"
    "  --mixture FILE       the mixture file (docs/format.md)\n"
    "  --source-lambda K:RATE  source K's rate alone, batches/s (repeatable)\n"
    "  --source-stall K:START:DUR  a stall of source K (repeatable; with --stall at\n"
    "                       most 64 windows)\n";

typedef struct sim_opts {
	sim_params p;
	sim_discrete_params d;
	bool json, discrete, have_mu, have_lambda;
	const char *trace;
	uint64_t batch_bytes;
	bool mixture; /* --mixture: mix holds it */
	sim_mix mix;
} sim_opts;

enum {
	O_LAMBDA = 256,
	O_MU,
	O_INITIAL,
	O_CAPACITY,
	O_STALL,
	O_STEP,
	O_UNTIL,
	O_JSON,
	O_TRACE,
	O_BATCH_BYTES,
	O_DISCRETE,
	O_TRIALS,
	O_SEED,
	O_COST_CV,
	O_PRODUCER_CV,
	O_SOURCE_LAMBDA,
	O_SOURCE_STALL,
	O_HELP
};

static const struct option sim_longopts[] = {
    {"lambda", required_argument, NULL, O_LAMBDA},
    {"mu", required_argument, NULL, O_MU},
    {"initial", required_argument, NULL, O_INITIAL},
    {"capacity", required_argument, NULL, O_CAPACITY},
    {"stall", required_argument, NULL, O_STALL},
    {"step", required_argument, NULL, O_STEP},
    {"until", required_argument, NULL, O_UNTIL},
    {"json", no_argument, NULL, O_JSON},
    {"trace", required_argument, NULL, O_TRACE},
    {"batch-bytes", required_argument, NULL, O_BATCH_BYTES},
    {"discrete", no_argument, NULL, O_DISCRETE},
    {"trials", required_argument, NULL, O_TRIALS},
    {"seed", required_argument, NULL, O_SEED},
    {"cost-cv", required_argument, NULL, O_COST_CV},
    {"producer-cv", required_argument, NULL, O_PRODUCER_CV},
    {"source-lambda", required_argument, NULL, O_SOURCE_LAMBDA},
    {"source-stall", required_argument, NULL, O_SOURCE_STALL},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

#define RATE_MAX  1e9
#define COUNT_MAX 1e12
#define TIME_MAX  1e9

static bool sim_stall_opt(sim_opts *o, const char *arg)
{
	if (o->p.stalls >= SIM_STALLS_MAX) {
		flag_usage_error("sim", "--stall: at most %d windows", SIM_STALLS_MAX);
		return false;
	}
	if (sim_parse_stall(arg, &o->p.stall[o->p.stalls]) < 0) {
		flag_usage_error("sim",
		                 "--stall: '%s' is not START:DURATION (seconds, start >= 0, "
		                 "duration > 0)",
		                 arg);
		return false;
	}
	o->p.stalls++;
	return true;
}

/* Applies one option; false on a bad value (message printed). */
static bool sim_opt(sim_opts *o, int c, const char *a)
{
	switch (c) {
	case O_LAMBDA:
		o->have_lambda = true;
		return flag_double("sim", "--lambda", a, 0, RATE_MAX, &o->p.lambda_bps);
	case O_MU:
		o->have_mu = true;
		return flag_double("sim", "--mu", a, 1e-9, RATE_MAX, &o->p.mu_bps);
	case O_INITIAL:
		return flag_double("sim", "--initial", a, 0, COUNT_MAX, &o->p.initial);
	case O_CAPACITY:
		return flag_double("sim", "--capacity", a, 1e-9, COUNT_MAX, &o->p.capacity);
	case O_STALL:
		return sim_stall_opt(o, a);
	case O_STEP:
		return flag_double("sim", "--step", a, 1e-9, TIME_MAX, &o->p.step_s);
	case O_UNTIL:
		return flag_double("sim", "--until", a, 1e-9, TIME_MAX, &o->p.until_s);
	case O_JSON:
		o->json = true;
		return true;
	case O_TRACE:
		o->trace = a;
		return true;
	case O_BATCH_BYTES:
		return flag_bytes("sim", "--batch-bytes", a, 1, &o->batch_bytes);
	case O_DISCRETE:
		o->discrete = true;
		return true;
	case O_TRIALS:
		return flag_u64("sim", "--trials", a, 1, SIM_TRIALS_MAX, &o->d.trials);
	case O_SEED:
		return flag_u64("sim", "--seed", a, 0, UINT64_MAX, &o->d.seed);
	case O_COST_CV:
		return flag_double("sim", "--cost-cv", a, 0, 10, &o->d.cost_cv);
	case O_PRODUCER_CV:
		return flag_double("sim", "--producer-cv", a, 0, 10, &o->d.producer_cv);
	case O_SOURCE_LAMBDA:
	case O_SOURCE_STALL:
		if (!o->mixture) {
			flag_usage_error("sim",
			                 "--source-lambda and --source-stall need --mixture");
			return false;
		}
		return c == O_SOURCE_LAMBDA ? sim_mix_source_lambda(&o->mix, a)
		                            : sim_mix_source_stall(&o->mix, &o->p, a);
	default:
		return false;
	}
}

static int sim_parse_opts(int argc, char **argv, sim_opts *o);

/* sim's own option named by arg ("--name" or "--name=value"), or NULL. */
static const struct option *sim_own(const char *arg)
{
	if (strncmp(arg, "--", 2) != 0)
		return NULL;
	size_t n = strcspn(arg + 2, "=");
	for (const struct option *so = sim_longopts; so->name; so++)
		if (strlen(so->name) == n && !strncmp(so->name, arg + 2, n))
			return so;
	return NULL;
}

/* With --mixture: the loader's options go into the mixture's config, sim's
 * own stay in kept (for getopt). Returns -1 to go on, else the exit code. */
static int sim_split_args(sim_opts *o, int argc, char **argv, char **kept, int *nkept)
{
	kept[(*nkept)++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const struct option *so = sim_own(argv[i]);
		if (so) {
			kept[(*nkept)++] = argv[i];
			if (so->has_arg == required_argument && !strchr(argv[i], '=') &&
			    i + 1 < argc)
				kept[(*nkept)++] = argv[++i];
			continue;
		}
		int used = sim_mix_loader_flag(&o->mix, argc, argv, i);
		if (used <= 0)
			return used == 0 ? flag_usage_error("sim", "unknown option '%s'", argv[i])
			                 : 2;
		i += used - 1;
	}
	kept[*nkept] = NULL;
	return -1;
}

/* Parses argv into o; returns -1 to go on, else the exit code. */
static int sim_parse(int argc, char **argv, sim_opts *o)
{
	*o = (sim_opts){.p = {.capacity = INFINITY, .step_s = 0.1},
	                .d = {.trials = 1000, .seed = 1, .cost_cv = 0.5},
	                .batch_bytes = 1u << 20};
	if (sim_mix_wanted(argc, argv)) {
		o->mixture = true;
		if (sim_mix_init(&o->mix) < 0) {
			fprintf(stderr, "ringfeed sim: out of memory\n");
			return 1;
		}
		char **kept = calloc((size_t)argc + 1, sizeof(*kept));
		int nkept = 0;
		int rc = kept ? sim_split_args(o, argc, argv, kept, &nkept) : 1;
		if (rc < 0)
			rc = sim_parse_opts(nkept, kept, o);
		free(kept);
		return rc;
	}
	return sim_parse_opts(argc, argv, o);
}

/* The options proper (with --mixture, sim's own only). */
static int sim_parse_opts(int argc, char **argv, sim_opts *o)
{
	int c;
	while ((c = getopt_long(argc, argv, "", sim_longopts, NULL)) != -1) {
		if (c == O_HELP) {
			fputs(sim_usage, stdout);
			return 0;
		}
		if (c == '?' || !sim_opt(o, c, optarg))
			return c == '?' ? flag_usage_error("sim", "bad option") : 2;
	}
	if (optind < argc)
		return flag_usage_error("sim", "unexpected argument '%s'", argv[optind]);
	if (!o->have_mu)
		return flag_usage_error("sim", "--mu is required");
	if (o->mixture) {
		int rc = sim_mix_resolve(&o->mix, &o->p, o->have_lambda);
		if (rc != 0)
			return rc;
	}
	char msg[160];
	if (sim_check(&o->p, msg, sizeof(msg)) < 0)
		return flag_usage_error("sim", "%s", msg);
	if (o->discrete && (o->p.initial != floor(o->p.initial) ||
	                    (isfinite(o->p.capacity) && o->p.capacity != floor(o->p.capacity))))
		return flag_usage_error("sim", "--discrete counts whole batches: --initial and "
		                               "--capacity must be whole numbers");
	o->d.horizon_s = o->p.until_s > 0 ? o->p.until_s : 3600.0;
	return -1;
}

static void print_fluid_text(const sim_opts *o, const sim_result *r)
{
	const sim_params *p = &o->p;
	printf("fluid model: lambda %g batches/s, mu %g batches/s, initial %g, capacity ",
	       p->lambda_bps, p->mu_bps, p->initial);
	if (isfinite(p->capacity))
		printf("%g", p->capacity);
	else
		printf("unbounded");
	printf(", step %g s, %zu stall window(s)\n", p->step_s, p->stalls);
	printf("%12s %12s %10s  %s\n", "t_s", "inventory", "wait_s", "event");
	for (size_t i = 0; i < r->points; i++) {
		const sim_point *pt = &r->point[i];
		/* |x| < 1e-9 is the arithmetic's rounding, shown as 0 */
		double inv = fabs(pt->inventory) < 1e-9 ? 0 : pt->inventory;
		double wait_s = fabs(pt->wait_s) < 1e-9 ? 0 : pt->wait_s;
		printf("%12.6g %12.6g %10.6f  %s\n", pt->t_s, inv, wait_s, pt->event);
	}
	if (isnan(r->empty_at_s))
		printf("never empties within %g s\n", r->point[r->points - 1].t_s);
	else
		printf("first empty at %.15g s\n", r->empty_at_s);
	printf("D / r = %.15g s (initial inventory / consumer rate)\n", p->initial / p->mu_bps);
}

static void print_params_json(const sim_params *p)
{
	printf("\"lambda_bps\":%.15g,\"mu_bps\":%.15g,\"initial\":%.15g,\"capacity\":",
	       p->lambda_bps, p->mu_bps, p->initial);
	json_number(stdout, p->capacity);
	printf(",\"step_s\":%.15g,\"until_s\":", p->step_s);
	json_number(stdout, p->until_s > 0 ? p->until_s : NAN);
	printf(",\"stalls\":[");
	for (size_t i = 0; i < p->stalls; i++)
		printf("%s{\"start_s\":%.15g,\"duration_s\":%.15g}", i ? "," : "",
		       p->stall[i].start_s, p->stall[i].dur_s);
	printf("],\"predicted_s\":%.15g,", p->initial / p->mu_bps);
}

static void print_fluid_json(const sim_opts *o, const sim_result *r)
{
	printf("{\"model\":\"fluid\",");
	print_params_json(&o->p);
	printf("\"series\":[");
	for (size_t i = 0; i < r->points; i++)
		printf("%s{\"t\":%.15g,\"inventory\":%.15g}", i ? "," : "", r->point[i].t_s,
		       r->point[i].inventory);
	printf("],\"empty_at_s\":");
	json_number(stdout, r->empty_at_s);
	if (o->mixture)
		sim_mix_print_json(&o->mix, &o->p, r->empty_at_s);
	printf("}\n");
}

static const double quantile_q[] = {0.0, 0.10, 0.50, 0.90, 1.0};
static const char *const quantile_name[] = {"min", "p10", "median", "p90", "max"};

static void print_discrete_text(const sim_opts *o, const sim_result *fl,
                                const sim_discrete_result *d)
{
	printf("discrete-event model: %llu trials, seed %llu, consumer cost lognormal mean %.6g s "
	       "cv %g, producer cv %g\n",
	       (unsigned long long)d->trials, (unsigned long long)o->d.seed, 1.0 / o->p.mu_bps,
	       o->d.cost_cv, o->d.producer_cv);
	printf("predicted D / r: %.6g s; fluid model empties at ", d->predicted_s);
	if (isnan(fl->empty_at_s))
		printf("never (within %g s)\n", fl->point[fl->points - 1].t_s);
	else
		printf("%.6g s\n", fl->empty_at_s);
	printf("time to first empty:");
	for (size_t i = 0; i < 5; i++) {
		double v = sim_quantile(d, quantile_q[i]);
		if (isfinite(v))
			printf("  %s %.4g s", quantile_name[i], v);
		else
			printf("  %s never", quantile_name[i]);
	}
	printf("\n");
	printf("ran dry before D / r in %llu of %llu trials (%.1f%%); mean %.4g s over those that "
	       "emptied; never emptied within %g s or %llu events: %llu\n",
	       (unsigned long long)d->before_predicted, (unsigned long long)d->trials,
	       100.0 * (double)d->before_predicted / (double)d->trials, d->mean_s, o->d.horizon_s,
	       (unsigned long long)d->events_per_trial_max, (unsigned long long)d->never);
}

static void print_discrete_json(const sim_opts *o, const sim_result *fl,
                                const sim_discrete_result *d)
{
	printf("{\"model\":\"discrete\",");
	print_params_json(&o->p);
	printf("\"trials\":%llu,\"seed\":%llu,\"cost_cv\":%.15g,\"producer_cv\":%.15g,"
	       "\"horizon_s\":%.15g,\"fluid_empty_at_s\":",
	       (unsigned long long)d->trials, (unsigned long long)o->d.seed, o->d.cost_cv,
	       o->d.producer_cv, o->d.horizon_s);
	json_number(stdout, fl->empty_at_s);
	printf(",\"empty_at_s\":{");
	for (size_t i = 0; i < 5; i++) {
		printf("%s\"%s\":", i ? "," : "", quantile_name[i]);
		json_number(stdout, sim_quantile(d, quantile_q[i]));
	}
	printf(",\"mean\":");
	json_number(stdout, d->mean_s);
	printf("},\"before_predicted\":%llu,\"never\":%llu,\"events_per_trial_max\":%llu",
	       (unsigned long long)d->before_predicted, (unsigned long long)d->never,
	       (unsigned long long)d->events_per_trial_max);
	if (o->mixture)
		sim_mix_print_json(&o->mix, &o->p, fl->empty_at_s);
	printf("}\n");
}

static int sim_trace(const sim_opts *o, const sim_result *r)
{
	FILE *f = fopen(o->trace, "w");
	if (!f) {
		fprintf(stderr, "ringfeed sim: cannot write trace '%s': %s\n", o->trace,
		        strerror(errno));
		return 1;
	}
	int rc = sim_write_trace(f, &o->p, r, o->batch_bytes);
	if (fclose(f) != 0 || rc < 0) {
		fprintf(stderr, "ringfeed sim: error writing trace '%s'\n", o->trace);
		return 1;
	}
	return 0;
}

static int sim_run_discrete(const sim_opts *o, const sim_result *fl)
{
	sim_discrete_result d;
	if (sim_discrete(&o->p, &o->d, &d) < 0) {
		fprintf(stderr, "ringfeed sim: out of memory for %llu trials\n",
		        (unsigned long long)o->d.trials);
		return 1;
	}
	if (o->json)
		print_discrete_json(o, fl, &d);
	else
		print_discrete_text(o, fl, &d);
	sim_discrete_free(&d);
	return 0;
}

static int sim_run(sim_opts *o)
{
	sim_result r;
	if (sim_fluid(&o->p, &r) < 0) {
		fprintf(stderr, "ringfeed sim: out of memory\n");
		return 1;
	}
	int rc = o->trace ? sim_trace(o, &r) : 0;
	if (rc == 0 && o->mixture && !o->json)
		sim_mix_print_text(&o->mix, &o->p, r.empty_at_s);
	if (rc == 0 && o->discrete)
		rc = sim_run_discrete(o, &r);
	else if (rc == 0 && o->json)
		print_fluid_json(o, &r);
	else if (rc == 0)
		print_fluid_text(o, &r);
	sim_result_free(&r);
	return rc;
}

int cmd_sim(int argc, char **argv)
{
	sim_opts o;
	int rc = sim_parse(argc, argv, &o);
	if (rc < 0)
		rc = sim_run(&o);
	if (o.mixture)
		sim_mix_free(&o.mix);
	return rc;
}
