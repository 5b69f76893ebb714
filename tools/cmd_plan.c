/* cmd_plan.c - `ringfeed plan`: how deep must the read-ahead be to absorb a
 * pause at a consumption rate, and how many bytes does that hold per stage,
 * per loader and per host? Inputs from flags or from a trace. */
#include "commands.h"
#include "flags.h"
#include "json.h"
#include "plan_size.h"
#include "ringfeed.h"
#include "trace.h"

#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char plan_usage[] =
    "usage: ringfeed plan --rate R --pause T --compressed-bytes SIZE --decoded-bytes SIZE\n"
    "                     --collated-bytes SIZE [options]\n"
    "       ringfeed plan --from-trace TRACE --compressed-bytes ... [options]\n"
    "\n"
    "Depth D = ceil(r x T) ready batches covers a producer pause of T seconds at a\n"
    "consumption rate of r batches/s (coverage D / r; a bound, not a guarantee, and\n"
    "only while the producer keeps up on average). Per loader the stages hold:\n"
    "  fetch    F compressed batches in flight, F = ceil(r x latency) (>= 1)\n"
    "  decoded  F decoded batches\n"
    "  collated D ready batches + 1 held by the consumer\n"
    "and per host, that times --ranks. Warns when the host total exceeds the memory\n"
    "available.\n"
    "\n"
    "  --rate R                consumption rate r, batches/s\n"
    "  --pause T               pause to absorb, seconds\n"
    "  --compressed-bytes SIZE one batch's compressed (read) bytes, e.g. 4MiB\n"
    "  --decoded-bytes SIZE    one batch's decoded bytes\n"
    "  --collated-bytes SIZE   one collated batch buffer (alias --batch-bytes)\n"
    "  --ranks N               loaders per host (default 1)\n"
    "  --latency S             fetch latency for the in-flight allowance (default 0.1)\n"
    "  --in-flight N           batches in flight, instead of r x latency\n"
    "  --host-memory SIZE      memory available (default: MemAvailable of /proc/meminfo)\n"
    "  --pinned                collated buffers are pinned (page-locked) memory\n"
    "  --from-trace TRACE      r = median r_bps, T = longest producer pause (c_bps = 0)\n"
    "                          or longest wait; --rate / --pause override\n"
    "  --json                  one JSON object\n"
    "\n"
    "       ringfeed plan --mixture FILE [loader options] [--json]\n"
    "prints what one mixture epoch holds per source: its weight, records a pass,\n"
    "samples an epoch and the passes they make (the loader's own figures).\n";

typedef struct plan_opts {
	plan_in in;
	bool json, pinned, have_rate, have_pause, have_bytes[PLAN_STAGES];
	const char *trace_path;
	const char *memory_source;
} plan_opts;

typedef struct trace_inputs {
	double rate_bps, pause_s;
	size_t rate_samples;
	const char *pause_kind; /* "producer pause", "consumer wait" or "none" */
	size_t line_first, line_last;
} trace_inputs;

enum {
	P_RATE = 256,
	P_PAUSE,
	P_COMPRESSED,
	P_DECODED,
	P_COLLATED,
	P_RANKS,
	P_LATENCY,
	P_IN_FLIGHT,
	P_HOST_MEMORY,
	P_PINNED,
	P_FROM_TRACE,
	P_JSON,
	P_HELP
};

static const struct option plan_longopts[] = {
    {"rate", required_argument, NULL, P_RATE},
    {"pause", required_argument, NULL, P_PAUSE},
    {"compressed-bytes", required_argument, NULL, P_COMPRESSED},
    {"decoded-bytes", required_argument, NULL, P_DECODED},
    {"collated-bytes", required_argument, NULL, P_COLLATED},
    {"batch-bytes", required_argument, NULL, P_COLLATED},
    {"ranks", required_argument, NULL, P_RANKS},
    {"latency", required_argument, NULL, P_LATENCY},
    {"in-flight", required_argument, NULL, P_IN_FLIGHT},
    {"host-memory", required_argument, NULL, P_HOST_MEMORY},
    {"pinned", no_argument, NULL, P_PINNED},
    {"from-trace", required_argument, NULL, P_FROM_TRACE},
    {"json", no_argument, NULL, P_JSON},
    {"help", no_argument, NULL, P_HELP},
    {NULL, 0, NULL, 0},
};

static bool plan_stage_bytes(plan_opts *o, int stage, const char *flag, const char *a)
{
	o->have_bytes[stage] = true;
	return flag_bytes("plan", flag, a, 1, &o->in.batch_bytes[stage]);
}

static bool plan_opt(plan_opts *o, int c, const char *a)
{
	switch (c) {
	case P_RATE:
		o->have_rate = true;
		return flag_double("plan", "--rate", a, 1e-9, 1e9, &o->in.rate_bps);
	case P_PAUSE:
		o->have_pause = true;
		return flag_double("plan", "--pause", a, 0, 1e6, &o->in.pause_s);
	case P_COMPRESSED:
		return plan_stage_bytes(o, PLAN_FETCH, "--compressed-bytes", a);
	case P_DECODED:
		return plan_stage_bytes(o, PLAN_DECODED, "--decoded-bytes", a);
	case P_COLLATED:
		return plan_stage_bytes(o, PLAN_COLLATED, "--collated-bytes", a);
	case P_RANKS:
		return flag_u64("plan", "--ranks", a, 1, 65536, &o->in.ranks);
	case P_LATENCY:
		return flag_double("plan", "--latency", a, 0, 3600, &o->in.latency_s);
	case P_IN_FLIGHT:
		return flag_u64("plan", "--in-flight", a, 1, 1000000, &o->in.in_flight);
	case P_HOST_MEMORY:
		o->memory_source = "--host-memory";
		return flag_bytes("plan", "--host-memory", a, 1, &o->in.host_memory_bytes);
	case P_PINNED:
		o->pinned = true;
		return true;
	case P_FROM_TRACE:
		o->trace_path = a;
		return true;
	case P_JSON:
		o->json = true;
		return true;
	default:
		return false;
	}
}

static int plan_parse(int argc, char **argv, plan_opts *o)
{
	*o = (plan_opts){.in = {.latency_s = 0.1, .ranks = 1}};
	int c;
	while ((c = getopt_long(argc, argv, "", plan_longopts, NULL)) != -1) {
		if (c == P_HELP) {
			fputs(plan_usage, stdout);
			return 0;
		}
		if (c == '?' || !plan_opt(o, c, optarg))
			return c == '?' ? flag_usage_error("plan", "bad option") : 2;
	}
	if (optind < argc)
		return flag_usage_error("plan", "unexpected argument '%s'", argv[optind]);
	static const char *const flag[PLAN_STAGES] = {"--compressed-bytes", "--decoded-bytes",
	                                              "--collated-bytes"};
	for (int s = 0; s < PLAN_STAGES; s++)
		if (!o->have_bytes[s])
			return flag_usage_error("plan", "%s is required", flag[s]);
	if (!o->trace_path && (!o->have_rate || !o->have_pause))
		return flag_usage_error("plan",
		                        "--rate and --pause are required (or --from-trace)");
	if (!o->memory_source) {
		o->in.host_memory_bytes = proc_kib_field_bytes("/proc/meminfo", "MemAvailable");
		o->memory_source = o->in.host_memory_bytes ? "MemAvailable" : NULL;
	}
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_rate(const trace *t, size_t *samples)
{
	double *v = malloc(t->n * sizeof(double));
	size_t n = 0;
	for (size_t i = 0; v && i < t->n; i++)
		if (isfinite(t->pt[i].r_bps) && t->pt[i].r_bps > 0)
			v[n++] = t->pt[i].r_bps;
	*samples = n;
	double m = NAN;
	if (n) {
		qsort(v, n, sizeof(double), cmp_double);
		m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	}
	free(v);
	return m;
}

/* The longest run of intervals with c_bps = 0, else the longest wait. */
static void longest_pause(const trace *t, trace_inputs *ti)
{
	double run = 0, best = 0, prev_t = 0;
	size_t start = 0;
	ti->pause_kind = "none";
	for (size_t i = 0; i < t->n; i++) {
		double dt = t->pt[i].t_s - prev_t;
		prev_t = t->pt[i].t_s;
		if (!(t->pt[i].c_bps == 0)) {
			run = 0;
			continue;
		}
		if (run == 0)
			start = i + 1;
		run += dt;
		if (run > best) {
			best = run;
			ti->pause_kind = "producer pause";
			ti->line_first = start;
			ti->line_last = i + 1;
		}
	}
	for (size_t i = 0; best == 0 && i < t->n; i++) {
		if (t->pt[i].wait_s > ti->pause_s) {
			ti->pause_s = t->pt[i].wait_s;
			ti->pause_kind = "consumer wait";
			ti->line_first = ti->line_last = i + 1;
		}
	}
	if (best > 0)
		ti->pause_s = best;
}

static int plan_from_trace(plan_opts *o, trace_inputs *ti)
{
	trace t;
	char msg[512];
	if (trace_load(o->trace_path, &t, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "ringfeed plan: %s\n", msg);
		return 1;
	}
	memset(ti, 0, sizeof(*ti));
	ti->rate_bps = median_rate(&t, &ti->rate_samples);
	longest_pause(&t, ti);
	trace_free(&t);
	if (!o->have_rate && !(ti->rate_bps > 0)) {
		fprintf(stderr, "ringfeed plan: %s has no measured r_bps; give --rate\n",
		        o->trace_path);
		return 1;
	}
	if (!o->have_rate)
		o->in.rate_bps = ti->rate_bps;
	if (!o->have_pause)
		o->in.pause_s = ti->pause_s;
	return 0;
}

static const char *fmt(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < sizeof(unit) / sizeof(unit[0]))
		v /= 1024.0, u++;
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

static void print_text_trace(const plan_opts *o, const trace_inputs *ti)
{
	printf("from trace %s: median r_bps %.4g batches/s (%zu samples)%s; longest %s %.4g s",
	       o->trace_path, ti->rate_bps, ti->rate_samples, o->have_rate ? " (--rate wins)" : "",
	       ti->pause_kind, ti->pause_s);
	if (ti->line_first)
		printf(" (lines %zu-%zu)", ti->line_first, ti->line_last);
	printf("%s\n", o->have_pause ? " (--pause wins)" : "");
}

static void print_text_warning(const plan_opts *o, const plan_out *p)
{
	char a[32], b[32];
	if (!o->memory_source) {
		printf("host memory: unknown (no MemAvailable; give --host-memory)\n");
		return;
	}
	printf("host memory available: %s (%s): %s, %.1f%% of it\n",
	       fmt(o->in.host_memory_bytes, a, sizeof(a)), o->memory_source,
	       p->fits ? "fits" : "DOES NOT FIT",
	       100.0 * (double)p->host_total_bytes / (double)o->in.host_memory_bytes);
	if (p->fits)
		return;
	printf("warning: the host total %s exceeds the %s available; at most D = %llu ready "
	       "batches per loader fit (coverage %.4g s): cover a shorter pause, run fewer ranks "
	       "or use smaller batches\n",
	       fmt(p->host_total_bytes, a, sizeof(a)), fmt(o->in.host_memory_bytes, b, sizeof(b)),
	       (unsigned long long)p->depth_max, (double)p->depth_max / o->in.rate_bps);
}

static void print_text(const plan_opts *o, const plan_out *p)
{
	char a[32], b[32], c[32];
	printf("plan: r = %.6g batches/s, pause T = %.6g s, %llu rank(s) per host\n",
	       o->in.rate_bps, o->in.pause_s, (unsigned long long)o->in.ranks);
	printf("depth D = ceil(r x T) = %llu ready batches; in flight F = %llu batches%s\n",
	       (unsigned long long)p->depth, (unsigned long long)p->in_flight,
	       o->in.in_flight ? " (--in-flight)" : " (ceil(r x latency), at least 1)");
	printf("coverage D / r = %.6g s (a bound while the producer keeps up on average)\n",
	       p->coverage_s);
	printf("\n%-20s %12s %8s %14s %14s\n", "stage", "per batch", "batches", "per loader",
	       "per host");
	for (int s = 0; s < PLAN_STAGES; s++)
		printf("%-20s %12s %8llu %14s %14s\n",
		       s == PLAN_COLLATED && o->pinned ? "collated (pinned)" : plan_stage_name[s],
		       fmt(o->in.batch_bytes[s], a, sizeof(a)), (unsigned long long)p->count[s],
		       fmt(p->loader_bytes[s], b, sizeof(b)), fmt(p->host_bytes[s], c, sizeof(c)));
	printf("%-20s %12s %8s %14s %14s\n\n", "total", "", "",
	       fmt(p->loader_total_bytes, b, sizeof(b)), fmt(p->host_total_bytes, c, sizeof(c)));
	if (o->pinned)
		printf("pinned (page-locked, never swapped) per host: %s\n",
		       fmt(p->host_bytes[PLAN_COLLATED], a, sizeof(a)));
	print_text_warning(o, p);
}

static void print_json_trace(const plan_opts *o, const trace_inputs *ti)
{
	printf("\"from_trace\":");
	if (!o->trace_path) {
		printf("null,");
		return;
	}
	printf("{\"path\":");
	rf_json_fput(stdout, o->trace_path);
	printf(",\"rate_bps\":");
	json_number(stdout, ti->rate_bps);
	printf(",\"rate_samples\":%zu,\"pause_s\":%.9g,\"pause_kind\":", ti->rate_samples,
	       ti->pause_s);
	rf_json_fput(stdout, ti->pause_kind);
	printf(",\"line_first\":%zu,\"line_last\":%zu},", ti->line_first, ti->line_last);
}

static void print_json(const plan_opts *o, const plan_out *p, const trace_inputs *ti)
{
	printf("{\"rate_bps\":%.9g,\"pause_s\":%.9g,\"ranks\":%llu,", o->in.rate_bps, o->in.pause_s,
	       (unsigned long long)o->in.ranks);
	print_json_trace(o, ti);
	printf("\"depth_batches\":%llu,\"in_flight_batches\":%llu,\"coverage_s\":%.9g,\"stages\":{",
	       (unsigned long long)p->depth, (unsigned long long)p->in_flight, p->coverage_s);
	for (int s = 0; s < PLAN_STAGES; s++)
		printf("%s\"%s\":{\"batch_bytes\":%llu,\"batches\":%llu,\"loader_bytes\":%llu,"
		       "\"host_bytes\":%llu}",
		       s ? "," : "", plan_stage_name[s], (unsigned long long)o->in.batch_bytes[s],
		       (unsigned long long)p->count[s], (unsigned long long)p->loader_bytes[s],
		       (unsigned long long)p->host_bytes[s]);
	printf(
	    "},\"loader_bytes\":%llu,\"host_bytes\":%llu,\"pinned\":%s,\"pinned_host_bytes\":%llu,",
	    (unsigned long long)p->loader_total_bytes, (unsigned long long)p->host_total_bytes,
	    o->pinned ? "true" : "false",
	    (unsigned long long)(o->pinned ? p->host_bytes[PLAN_COLLATED] : 0));
	if (o->memory_source) {
		printf("\"host_memory_bytes\":%llu,\"host_memory_source\":",
		       (unsigned long long)o->in.host_memory_bytes);
		rf_json_fput(stdout, o->memory_source);
		printf(",\"fits\":%s,\"max_depth_batches\":%llu}\n", p->fits ? "true" : "false",
		       (unsigned long long)p->depth_max);
	} else {
		printf("\"host_memory_bytes\":null,\"host_memory_source\":null,\"fits\":null,"
		       "\"max_depth_batches\":null}\n");
	}
}

int cmd_plan(int argc, char **argv)
{
	if (rf_plan_is_mixture(argc, argv))
		return rf_plan_mixture(argc, argv);
	plan_opts o;
	int rc = plan_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	trace_inputs ti = {0};
	if (o.trace_path && (rc = plan_from_trace(&o, &ti)) != 0)
		return rc;
	plan_out p;
	if (plan_compute(&o.in, &p) < 0) {
		fprintf(stderr, "ringfeed plan: the byte totals do not fit in 64 bits\n");
		return 2;
	}
	if (o.json) {
		print_json(&o, &p, &ti);
		return 0;
	}
	if (o.trace_path)
		print_text_trace(&o, &ti);
	print_text(&o, &p);
	if (!p.fits)
		fprintf(stderr, "ringfeed plan: warning: the host total exceeds the memory "
		                "available\n");
	return 0;
}
