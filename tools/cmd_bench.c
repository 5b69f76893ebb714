/* cmd_bench.c - `ringfeed bench`, the main job: reads the built-in demo
 * dataset (created once under the user's cache directory) or the given
 * shards with a simulated consumer (--step-ms of work per batch) and reports
 * throughput, the consumer's waits, ready-queue occupancy, memory per budget
 * category against the budget, and peak RSS. Uses only ringfeed.h (base/json.h, and the
 * demo generator in tools/). */
#include "commands.h"
#include "cpu_cost.h"
#include "decode_limit.h"
#include "demo.h"
#include "flags.h"
#include "host_report.h"
#include "json.h"
#include "loader_opts.h"
#include "ringfeed.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct rf_bench_opts {
	double step_ms;
	bool json;
	uint64_t max_batches;
	uint64_t demo_bytes;
	unsigned demo_shards;
	int nurls;
	bool mixture; /* --mixture FILE: its sources, not the demo dataset */
	bool decode_limit;
	bool fetch_only;
	char **args; /* the shard arguments, for --decode-limit */
	char demo_dir[4096];
	const char *inject;       /* the fault spec (--inject or RINGFEED_INJECT) */
	double stall_s, period_s; /* its stall=S/P, for the stall-cover measurement */
	uint32_t compare_depth;   /* > 0: a second run at this fixed depth, side by side */
	const char *stats_path;   /* --stats FILE: the loader's stats JSON */
	bool quiet;               /* -q: no progress */
	bool demo_ready;          /* the demo dataset was prepared (once per command) */
	bool total_unknown; /* --world/--rank/--epochs/...: the manifest total is not the run's */
	uint64_t total_records; /* records the run will read (0: unknown) */
} rf_bench_opts;

#define RF_BENCH_STALLS_MAX 64

/* One injected stall as the consumer saw it: from the stall's start, how long
 * the inventory kept serving batches, against D / r. */
typedef struct rf_bench_stall {
	double start_s;  /* since rf_open */
	double served_s; /* until the consumer first waited (the stall length if never) */
	bool covered;    /* the consumer never waited during the stall */
	uint32_t depth, ready;
	double decoded; /* batches' worth decoded, not collated: they feed the stall too */
	double inventory, r_bps;
} rf_bench_stall;

static void rf_bench_usage(FILE *f)
{
	fprintf(f,
	        "usage: ringfeed bench [options] [SHARDS|DIRS|MANIFESTS...]\n\n"
	        "Reads a dataset through the loader with a simulated consumer and reports\n"
	        "batches/s, records/s, decoded MB/s, the consumer's wait, ready-queue occupancy,\n"
	        "memory per budget category and peak RSS. Without shards it reads the built-in\n"
	        "demo dataset, created once under $XDG_CACHE_HOME/ringfeed/demo\n"
	        "(default ~/.cache/ringfeed/demo).\n\n"
	        "  --step-ms X          simulated work per batch in ms (default 0: none)\n"
	        "  --batches N          stop after N batches (default: the whole run)\n"
	        "  --demo-bytes SIZE    demo dataset size (default 1GiB of record payload)\n"
	        "  --demo-shards N      demo dataset shards (default 64)\n"
	        "  --decode-limit       also decode every block in memory with the same threads\n"
	        "                       (the decode limit) and report the loader's ratio to it\n"
	        "  --fetch-only         only fetch every byte of the shards (whole objects in\n"
	        "                       --request-size ranges, --connections reads in flight),\n"
	        "                       decode nothing: the storage path alone\n"
	        "  --json               print one JSON object instead of the report\n"
	        "  --stats FILE         also write the loader's stats (one JSON object) to FILE\n"
	        "  --compare-depth N    then run again at a fixed depth of N (same consumer, same\n"
	        "                       faults) and show the consumer's wait side by side\n"
	        "  -q, --quiet          no progress on stderr\n"
	        "  --trace FILE         one JSON line per controller interval (docs/trace.md)\n"
	        "With --inject 'stall=S/P' (or RINGFEED_INJECT), bench measures, for each\n"
	        "stall, how long the ready inventory served the consumer (stall cover) and\n"
	        "compares it with D / r (depth over the consumer's rate).\n"
	        "  --help               this text\n\n");
	rf_cli_loader_help(f);
}

static int rf_bench_demo_dir(rf_bench_opts *o)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;
	if (xdg && *xdg)
		n = snprintf(o->demo_dir, sizeof(o->demo_dir), "%s/ringfeed/demo", xdg);
	else if (home && *home)
		n = snprintf(o->demo_dir, sizeof(o->demo_dir), "%s/.cache/ringfeed/demo", home);
	else
		n = snprintf(o->demo_dir, sizeof(o->demo_dir), "/tmp/ringfeed-demo-%u",
		             (unsigned)getuid());
	return n > 0 && (size_t)n < sizeof(o->demo_dir) ? 0 : -1;
}

/* A NAME to read (after the options or after `--`). */
static int rf_bench_name(rf_config *cfg, rf_bench_opts *o, char *a)
{
	rf_error err = {0};
	if (rf_config_add_url(cfg, a, &err) < 0) {
		fprintf(stderr, "ringfeed bench: %s\n", err.msg);
		return -1;
	}
	o->args[o->nurls++] = a;
	return 0;
}

static int rf_bench_args(int argc, char **argv, rf_config *cfg, rf_bench_opts *o)
{
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool v = i + 1 < argc;
		char *end = NULL;
		if (opts && !strcmp(a, "--")) {
			opts = false;
		} else if (!opts) {
			if (rf_bench_name(cfg, o, argv[i]) < 0)
				return -1;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			rf_bench_usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (!strcmp(a, "--stats") && v) {
			o->stats_path = argv[++i];
		} else if (!strcmp(a, "--compare-depth") && v) {
			uint64_t n;
			if (!flag_u64("bench", "--compare-depth", argv[++i], 1, 4096, &n))
				return -1;
			o->compare_depth = (uint32_t)n;
		} else if (!strcmp(a, "--decode-limit")) {
			o->decode_limit = true;
		} else if (!strcmp(a, "--fetch-only")) {
			o->fetch_only = true;
		} else if (!strcmp(a, "--step-ms") && v) {
			if (!flag_double("bench", "--step-ms", argv[++i], 0, 60000, &o->step_ms))
				return -1;
		} else if (!strcmp(a, "--batches") && v) {
			o->max_batches = strtoull(argv[++i], &end, 10);
			if (*end || argv[i][0] == '-' || !argv[i][0]) {
				fprintf(stderr, "ringfeed bench: --batches wants a count\n");
				return -1;
			}
		} else if (!strcmp(a, "--demo-bytes") && v) {
			rf_error err = {0};
			if (rf_parse_bytes(argv[++i], &o->demo_bytes, &err) < 0 || !o->demo_bytes) {
				fprintf(stderr, "ringfeed bench: --demo-bytes: %s\n", err.msg);
				return -1;
			}
		} else if (!strcmp(a, "--demo-shards") && v) {
			unsigned long n = strtoul(argv[++i], &end, 10);
			if (*end || n < 1 || n > 100000) {
				fprintf(stderr,
				        "ringfeed bench: --demo-shards wants 1 .. 100000\n");
				return -1;
			}
			o->demo_shards = (unsigned)n;
		} else if (a[0] == '-' && a[1]) {
			if (!strcmp(a, "--inject") && v)
				o->inject = argv[i + 1];
			else if (!strncmp(a, "--inject=", 9))
				o->inject = a + 9;
			static const char *const partial[] = {"--world", "--rank", "--epochs",
			                                      "--epoch"};
			for (size_t k = 0; k < sizeof(partial) / sizeof(partial[0]); k++)
				o->total_unknown |= !strncmp(a, partial[k], strlen(partial[k]));
			if (!strncmp(argv[i], "--mixture", 9))
				o->mixture = true;
			int used = rf_cli_loader_flag(cfg, argc, argv, i, "bench");
			if (used <= 0) {
				if (used == 0)
					fprintf(
					    stderr,
					    "ringfeed bench: unknown option '%s' (see --help)\n",
					    a);
				return -1;
			}
			i += used - 1;
		} else if (rf_bench_name(cfg, o, argv[i]) < 0) {
			return -1;
		}
	}
	return 0;
}

/* A duration like 2s, 500ms, 1.5s, 250us (the injector's units). */
static bool rf_bench_duration(const char *t, size_t len, double *out)
{
	char buf[64];
	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, t, len);
	buf[len] = '\0';
	char *end = NULL;
	double v = strtod(buf, &end);
	static const struct {
		const char *unit;
		double s;
	} units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"", 1.0}};
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		if (end != buf && !strcmp(end, units[u].unit) && isfinite(v) && v >= 0) {
			*out = v * units[u].s;
			return true;
		}
	}
	return false;
}

/* The stall=S/P item of a fault spec (the engine checks the whole spec). */
static void rf_bench_stall_spec(rf_bench_opts *o)
{
	const char *p = o->inject ? strstr(o->inject, "stall=") : NULL;
	if (!p)
		return;
	p += 6;
	size_t len = strcspn(p, ",");
	const char *slash = memchr(p, '/', len);
	double s, per;
	if (slash && rf_bench_duration(p, (size_t)(slash - p), &s) &&
	    rf_bench_duration(slash + 1, len - (size_t)(slash - p) - 1, &per) && s < per) {
		o->stall_s = s;
		o->period_s = per;
	}
}

/* Resets the peak-RSS mark (after the demo dataset was generated). */
static void rf_rss_reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

static void rf_sleep_ms(double ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
	                      .tv_nsec = (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

static double rf_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct rf_bench_result {
	double wall_s, open_s;
	double t_open0; /* before rf_open: the injector's stall clock starts about here */
	uint64_t rss_before_open;
	rf_bench_stall stalls[RF_BENCH_STALLS_MAX];
	unsigned nstalls;
	uint64_t batches, records, payload;
	int rc;
	rf_stats st;
	uint64_t rss_peak;
	char *stats_json;
	rf_decode_limit limit;
	bool has_limit;
	unsigned stats_slot; /* which static buffer holds stats_json */
	double cpu_s;        /* process user + sys from before rf_open to after rf_close */
} rf_bench_result;

#define RF_BENCH_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RF_BENCH_MIN(a, b) ((a) < (b) ? (a) : (b))

/* The stall-cover measurement around one rf_next call that started at
 * `before` and waited `wait` seconds. */
static void rf_bench_stall_note(rf_loader *l, const rf_bench_opts *o, rf_bench_result *r,
                                double before, double wait)
{
	if (o->period_s <= 0 || r->nstalls >= RF_BENCH_STALLS_MAX)
		return;
	rf_bench_stall *st = &r->stalls[r->nstalls];
	double start = r->t_open0 + (double)(r->nstalls + 1) * o->period_s - o->stall_s;
	if (before < start)
		return;
	if (st->r_bps == 0) { /* first call inside the stall: the inventory now */
		static rf_stats s;
		rf_stats_get(l, &s, sizeof(s));
		st->start_s = start - r->t_open0;
		st->depth = s.depth_batches;
		st->ready = s.ready_batches;
		st->decoded = s.decoded_batches;
		st->inventory = s.inventory_batches;
		st->r_bps = s.consumer_rate_bps > 0 ? s.consumer_rate_bps : 1e-9;
	}
	double threshold = o->step_ms / 2e3 > 0.005 ? o->step_ms / 2e3 : 0.005;
	if (wait > threshold || before > start + o->stall_s) {
		st->covered = wait <= threshold;
		st->served_s = st->covered ? o->stall_s : before - start;
		r->nstalls++;
	}
}

/* Progress on stderr: batches and MB/s, and the percent done and the time
 * left when the run's total is known (--batches N, or a manifest's records). */
static void rf_bench_progress(const rf_bench_opts *o, const rf_bench_result *r, double elapsed)
{
	double f = 0;
	if (o->max_batches)
		f = (double)r->batches / (double)o->max_batches;
	if (o->total_records)
		f = RF_BENCH_MAX(f, (double)r->records / (double)o->total_records);
	fprintf(stderr, "\r%llu batches, %.1f MB/s", (unsigned long long)r->batches,
	        (double)r->payload / RF_BENCH_MAX(elapsed, 1e-9) / 1e6);
	if (f > 0 && f <= 1)
		fprintf(stderr, ", %.0f%%, %.0f s left", 100 * f, elapsed * (1 - f) / f);
	fprintf(stderr, "   ");
}

static int rf_bench_loop(rf_loader *l, const rf_bench_opts *o, rf_bench_result *r)
{
	double t0 = rf_now_s();
	bool tty = isatty(2) && !o->json && !o->quiet;
	double last = t0;
	for (;;) {
		if (o->max_batches && r->batches >= o->max_batches)
			break;
		rf_batch *b = NULL;
		double before = rf_now_s();
		int rc = rf_next(l, &b, -1);
		rf_bench_stall_note(l, o, r, before, rf_now_s() - before);
		if (rc == RF_END)
			break;
		if (rc < 0) {
			fprintf(stderr, "ringfeed bench: error: %s\n", rf_last_error(l));
			r->rc = rc;
			break;
		}
		r->batches++;
		r->records += b->records;
		r->payload += b->payload_bytes;
		rf_sleep_ms(o->step_ms);
		rf_release(l, b);
		double now = rf_now_s();
		if (tty && now - last > 0.5) {
			rf_bench_progress(o, r, now - t0);
			last = now;
		}
	}
	if (tty)
		fprintf(stderr, "\r%70s\r", "");
	r->wall_s = rf_now_s() - t0;
	static char buf[2][16384];
	char *json = buf[r->stats_slot & 1];
	if (rf_stats_get_json(l, &r->st, sizeof(r->st), json, sizeof(buf[0])) > 0)
		r->stats_json = json;
	else
		rf_stats_get(l, &r->st, sizeof(r->st));
	r->rss_peak = proc_kib_field_bytes("/proc/self/status", "VmHWM");
	return r->rc;
}

static const char *rf_mb(uint64_t bytes, char *buf, size_t cap)
{
	snprintf(buf, cap, "%.1f MiB", (double)bytes / 1048576.0);
	return buf;
}

static double rf_limit_rate(const rf_bench_result *r)
{
	return r->has_limit && r->limit.decode_s > 0
	           ? (double)r->limit.decoded_bytes / r->limit.decode_s
	           : 0.0;
}

/* The measured memory and stall figures, then the loader's own stats. */
static unsigned rf_bench_covered(const rf_bench_result *r);
static double rf_bench_wait_fraction(const rf_stats *s);

static void rf_bench_json_compare(const rf_bench_opts *o, const rf_bench_result *b)
{
	const rf_stats *t = &b->st;
	char esc[1100];
	rf_json_escape(esc, sizeof(esc), t->diagnosis_text);
	printf(",\"compare\":{\"depth\":%u,\"wall_s\":%.6f,\"batches\":%llu,"
	       "\"consumer_wait_s\":%.6f,\"consumer_wait_fraction\":%.6f,\"stalls\":%u,"
	       "\"stalls_covered\":%u,\"mem_peak_total_bytes\":%llu,\"diagnosis_text\":\"%s\","
	       "\"loader\":%s}",
	       o->compare_depth, b->wall_s, (unsigned long long)b->batches, t->consumer_wait_s,
	       rf_bench_wait_fraction(t), b->nstalls, rf_bench_covered(b),
	       (unsigned long long)t->mem_peak_total_bytes, esc,
	       b->stats_json ? b->stats_json : "null");
}

static void rf_bench_json_tail(const rf_bench_opts *o, const rf_bench_result *r,
                               const rf_bench_result *base)
{
	const rf_stats *s = &r->st;
	uint64_t growth = r->rss_peak > r->rss_before_open ? r->rss_peak - r->rss_before_open : 0;
	printf("\"rss_before_open_bytes\":%llu,\"rss_growth_bytes\":%llu,"
	       "\"rss_growth_over_peak_total\":%.4f,\"depth_auto\":%s,\"depth_peak_batches\":%u,"
	       "\"depth_max_batches\":%u,\"depth_changes\":%llu,\"depth_direction_changes\":%llu,"
	       "\"stall_cover\":[",
	       (unsigned long long)r->rss_before_open, (unsigned long long)growth,
	       s->mem_peak_total_bytes ? (double)growth / (double)s->mem_peak_total_bytes : 0.0,
	       s->depth_auto ? "true" : "false", s->depth_peak_batches, s->depth_max_batches,
	       (unsigned long long)s->depth_changes,
	       (unsigned long long)s->depth_direction_changes);
	for (unsigned i = 0; i < r->nstalls; i++) {
		const rf_bench_stall *st = &r->stalls[i];
		printf("%s{\"start_s\":%.4f,\"served_s\":%.4f,\"covered\":%s,\"depth\":%u,"
		       "\"ready\":%u,\"decoded_batches\":%.3f,\"inventory_batches\":%.3f,"
		       "\"r_bps\":%.3f,"
		       "\"predicted_s\":%.4f,\"served_over_predicted\":%.4f,"
		       "\"predicted_inventory_s\":%.4f,\"served_over_inventory\":%.4f}",
		       i ? "," : "", st->start_s, st->served_s, st->covered ? "true" : "false",
		       st->depth, st->ready, st->decoded, st->inventory, st->r_bps,
		       st->depth / st->r_bps, st->served_s / (st->depth / st->r_bps),
		       st->inventory / st->r_bps,
		       st->inventory > 0 ? st->served_s / (st->inventory / st->r_bps) : 0.0);
	}
	printf("],\"stalls_covered\":%u", rf_bench_covered(r));
	if (base)
		rf_bench_json_compare(o, base);
	char terr[600];
	if (s->trace_error[0])
		rf_json_escape(terr, sizeof(terr), s->trace_error);
	printf(",\"trace_error\":%s%s%s,\"loader\":%s}\n", s->trace_error[0] ? "\"" : "",
	       s->trace_error[0] ? terr : "null", s->trace_error[0] ? "\"" : "",
	       r->stats_json ? r->stats_json : "null");
}

/* CPU per decoded GB of the loader run and of the decode limit, and their
 * ratio (the efficiency figure that holds on a loaded machine). */
typedef struct rf_bench_cpu {
	double loader_s_per_gb, limit_s_per_gb, ratio;
} rf_bench_cpu;

static rf_bench_cpu rf_bench_cpu_cost(const rf_bench_result *r)
{
	rf_bench_cpu c = {.loader_s_per_gb = rf_cpu_s_per_gb(r->cpu_s, r->st.decoded_bytes)};
	if (r->has_limit)
		c.limit_s_per_gb = rf_cpu_s_per_gb(r->limit.decode_cpu_s, r->limit.decoded_bytes);
	c.ratio = c.limit_s_per_gb > 0 ? c.loader_s_per_gb / c.limit_s_per_gb : 0;
	return c;
}

static void rf_bench_cpu_json(const rf_bench_result *r)
{
	rf_bench_cpu c = rf_bench_cpu_cost(r);
	printf("\"cpu_s\":%.6f,\"cpu_s_per_decoded_gb\":%.4f,\"decode_limit_cpu_s\":%.6f,"
	       "\"decode_limit_cpu_s_per_gb\":%.4f,\"cpu_ratio\":%.4f,",
	       r->cpu_s, c.loader_s_per_gb, r->has_limit ? r->limit.decode_cpu_s : 0.0,
	       c.limit_s_per_gb, c.ratio);
}

static void rf_bench_cpu_text(const rf_bench_result *r)
{
	rf_bench_cpu c = rf_bench_cpu_cost(r);
	printf("  CPU %.3f s (user + sys, whole process): %.3f CPU-s per decoded GB\n", r->cpu_s,
	       c.loader_s_per_gb);
	if (r->has_limit)
		printf("  decode limit CPU %.3f CPU-s per decoded GB: the loader costs %.2f x it\n",
		       c.limit_s_per_gb, c.ratio);
}

static void rf_bench_json(const rf_bench_opts *o, const rf_bench_result *r,
                          const rf_bench_result *base)
{
	const rf_stats *s = &r->st;
	double w = r->wall_s > 0 ? r->wall_s : 1e-9;
	char esc[8192];
	if (!o->nurls)
		rf_json_escape(esc, sizeof(esc), o->demo_dir);
	printf("{\"dataset\":\"%s\",\"step_ms\":%.3f,\"wall_s\":%.6f,\"open_s\":%.6f,"
	       "\"batches\":%llu,\"records\":%llu,\"payload_bytes\":%llu,\"decoded_bytes\":%llu,"
	       "\"batches_per_s\":%.3f,\"records_per_s\":%.3f,\"decoded_bytes_per_s\":%.3f,"
	       "\"payload_bytes_per_s\":%.3f,\"consumer_wait_fraction\":%.6f,"
	       "\"queue_empty_fraction\":%.6f,\"queue_partial_fraction\":%.6f,"
	       "\"queue_full_fraction\":%.6f,\"queue_swings\":%llu,\"depth_batches\":%u,"
	       "\"threads\":%u,\"io_backend\":\"%s\",\"io_read_threads\":%u,"
	       "\"budget_bytes\":%llu,\"mem_peak_total_bytes\":%llu,"
	       "\"mem_peak_bytes\":{\"fetch\":%llu,\"decoded\":%llu,\"batch\":%llu,"
	       "\"scratch\":%llu,\"metadata\":%llu},\"rss_peak_bytes\":%llu,\"status\":%d,"
	       "\"decode_limit_bytes_per_s\":%.3f,\"decode_ratio\":%.4f,",
	       o->nurls ? "given" : esc, o->step_ms, r->wall_s, r->open_s,
	       (unsigned long long)r->batches, (unsigned long long)r->records,
	       (unsigned long long)r->payload, (unsigned long long)s->decoded_bytes,
	       (double)r->batches / w, (double)r->records / w, (double)s->decoded_bytes / w,
	       (double)r->payload / w, s->consumer_wait_s / w, s->queue_empty_fraction,
	       s->queue_partial_fraction, s->queue_full_fraction,
	       (unsigned long long)s->queue_swings, s->depth_batches, s->threads, s->io_backend,
	       s->io_read_threads, (unsigned long long)s->budget_bytes,
	       (unsigned long long)s->mem_peak_total_bytes,
	       (unsigned long long)s->mem_peak_bytes[RF_MEM_FETCH],
	       (unsigned long long)s->mem_peak_bytes[RF_MEM_DECODED],
	       (unsigned long long)s->mem_peak_bytes[RF_MEM_BATCH],
	       (unsigned long long)s->mem_peak_bytes[RF_MEM_SCRATCH],
	       (unsigned long long)s->mem_peak_bytes[RF_MEM_METADATA],
	       (unsigned long long)r->rss_peak, r->rc, rf_limit_rate(r),
	       rf_limit_rate(r) > 0 ? (double)s->decoded_bytes / w / rf_limit_rate(r) : 0.0);
	rf_bench_cpu_json(r);
	rf_bench_json_tail(o, r, base);
}

/* The consumer's wait as a fraction of the loader's life: the figure the
 * diagnosis states too (one source: the stats). */
static double rf_bench_wait_fraction(const rf_stats *s)
{
	return s->elapsed_s > 0 ? RF_BENCH_MIN(1.0, s->consumer_wait_s / s->elapsed_s) : 0.0;
}

static void rf_bench_text_rates(const rf_bench_opts *o, const rf_bench_result *r)
{
	const rf_stats *s = &r->st;
	double w = r->wall_s > 0 ? r->wall_s : 1e-9;
	char a[5][32];
	printf("  run: %llu batches, %llu records, %s of payload in %.3f s (open %.3f s)\n",
	       (unsigned long long)r->batches, (unsigned long long)r->records,
	       rf_mb(r->payload, a[0], 32), r->wall_s, r->open_s);
	printf("  throughput: %.1f batches/s, %.0f records/s, decoded %.1f MB/s\n",
	       (double)r->batches / w, (double)r->records / w, (double)s->decoded_bytes / w / 1e6);
	printf("  consumer: r %.1f batches/s over its own %.3f s (%.3f ms of work per batch); "
	       "waited %.3f s, %.1f%% of the time\n",
	       s->consumer_rate_bps, s->consumer_busy_s, o->step_ms, s->consumer_wait_s,
	       100 * rf_bench_wait_fraction(s));
	printf("  producer: c %.1f batches/s when not held back; %u decode threads busy %.0f%%\n",
	       s->producer_rate_bps, s->threads, 100 * s->decode_busy_fraction);
	printf("  engine: wake-ups %llu workers (for %llu waits), %llu consumer (%llu), %llu loop; "
	       "lock taken %llu times, held %.3f s in all, the longest %.1f us (%s)\n",
	       (unsigned long long)s->wakeups_workers, (unsigned long long)s->waits_workers,
	       (unsigned long long)s->wakeups_consumer, (unsigned long long)s->waits_consumer,
	       (unsigned long long)s->wakeups_loop, (unsigned long long)s->lock_acquisitions,
	       s->lock_hold_total_s, s->lock_hold_max_us, s->lock_hold_max_at);
	printf("  fetch: p50 %.2f ms, p99 %.2f ms, max %.2f ms; %llu pauses (overlapping slow "
	       "reads count once), the longest %.3f s\n",
	       s->fetch_latency_p50_ms, s->fetch_latency_p99_ms, s->fetch_latency_max_ms,
	       (unsigned long long)s->pauses, s->pause_longest_s);
	printf("  ready queue: empty %.1f%%, partly full %.1f%%, full %.1f%% of %llu samples; "
	       "%llu empty<->full swings\n",
	       100 * s->queue_empty_fraction, 100 * s->queue_partial_fraction,
	       100 * s->queue_full_fraction, (unsigned long long)s->queue_samples,
	       (unsigned long long)s->queue_swings);
}

static void rf_bench_text_depth(const rf_bench_result *r)
{
	const rf_stats *s = &r->st;
	double rate = s->consumer_rate_bps;
	printf("  depth: %s, %u batches = %.2f s at r (peak %u; the budget allows %u); ",
	       s->depth_auto ? "automatic" : "fixed", s->depth_batches,
	       rate > 0 ? s->depth_batches / rate : 0.0, s->depth_peak_batches,
	       s->depth_max_batches);
	if (s->intervals == 0)
		printf("cover target: none yet (no controller interval completed)");
	else
		printf("cover target %.2f s; %llu changes, %llu reversals over %llu intervals",
		       s->cover_target_s, (unsigned long long)s->depth_changes,
		       (unsigned long long)s->depth_direction_changes,
		       (unsigned long long)s->intervals);
	printf("; reads kept in flight %u\n", s->inflight_target);
}

/* direct_io: what the loader read with O_DIRECT, into registered buffers,
 * and how many files' filesystems refused it (said on stderr once). */
static void rf_bench_text_direct(const rf_bench_result *r)
{
	const rf_stats *s = &r->st;
	if (!s->direct_bytes && !s->direct_refused_files)
		return;
	printf("  direct I/O: %llu bytes with O_DIRECT (%llu reads into registered buffers); "
	       "%llu file(s) refused it (read through the page cache)\n",
	       (unsigned long long)s->direct_bytes, (unsigned long long)s->fixed_reads,
	       (unsigned long long)s->direct_refused_files);
}

static void rf_bench_text_memory(const rf_bench_result *r)
{
	const rf_stats *s = &r->st;
	char a[5][32];
	printf("  memory peaks: fetch %s, decoded %s, batch %s, scratch %s, metadata %s\n",
	       rf_mb(s->mem_peak_bytes[RF_MEM_FETCH], a[0], 32),
	       rf_mb(s->mem_peak_bytes[RF_MEM_DECODED], a[1], 32),
	       rf_mb(s->mem_peak_bytes[RF_MEM_BATCH], a[2], 32),
	       rf_mb(s->mem_peak_bytes[RF_MEM_SCRATCH], a[3], 32),
	       rf_mb(s->mem_peak_bytes[RF_MEM_METADATA], a[4], 32));
	uint64_t growth = r->rss_peak > r->rss_before_open ? r->rss_peak - r->rss_before_open : 0;
	printf("  memory: peak total %s of the %s budget (%.0f%%); peak RSS %s, of which %s grew "
	       "after rf_open (%.2f x the peak total)\n",
	       rf_mb(s->mem_peak_total_bytes, a[0], 32), rf_mb(s->budget_bytes, a[1], 32),
	       100.0 * (double)s->mem_peak_total_bytes / (double)s->budget_bytes,
	       rf_mb(r->rss_peak, a[2], 32), rf_mb(growth, a[3], 32),
	       s->mem_peak_total_bytes ? (double)growth / (double)s->mem_peak_total_bytes : 0.0);
}

/* Each injected stall: how long the inventory served the consumer, against
 * depth / r and inventory / r at the stall's start (r then, not the run's). */
static void rf_bench_text_stalls(const rf_bench_opts *o, const rf_bench_result *r)
{
	for (unsigned i = 0; i < r->nstalls; i++) {
		const rf_bench_stall *st = &r->stalls[i];
		double dr = st->depth / st->r_bps, ir = st->inventory / st->r_bps;
		printf("  stall %u at %.2f s (%.2f s long): ", i + 1, st->start_s, o->stall_s);
		if (st->covered)
			printf("covered, the consumer never waited");
		else
			printf("served %.3f s, then the consumer waited", st->served_s);
		printf("; at its start depth %u = %.3f s, inventory %.1f batches = %.3f s at r "
		       "%.1f batches/s then\n",
		       st->depth, dr, st->inventory, ir, st->r_bps);
	}
}

static unsigned rf_bench_covered(const rf_bench_result *r)
{
	unsigned n = 0;
	for (unsigned i = 0; i < r->nstalls; i++)
		n += r->stalls[i].covered;
	return n;
}

/* The main run and the --compare-depth run side by side. */
static void rf_bench_text_compare(const rf_bench_opts *o, const rf_bench_result *r,
                                  const rf_bench_result *b)
{
	const rf_stats *s = &r->st, *t = &b->st;
	char a[4][32], col[2][64], label[64];
	printf("  with and without that depth (same consumer%s):\n",
	       o->inject ? ", same injected faults" : "");
	snprintf(col[0], sizeof(col[0]), "%s depth", s->depth_auto ? "automatic" : "fixed");
	snprintf(col[1], sizeof(col[1]), "fixed depth %u", o->compare_depth);
	printf("    %-26s %-22s %s\n", "", col[0], col[1]);
	snprintf(col[0], sizeof(col[0]), "%u (peak %u)", s->depth_batches, s->depth_peak_batches);
	snprintf(col[1], sizeof(col[1]), "%u", t->depth_batches);
	printf("    %-26s %-22s %s\n", "depth, batches", col[0], col[1]);
	snprintf(col[0], sizeof(col[0]), "%.3f s (%.1f%%)", s->consumer_wait_s,
	         100 * rf_bench_wait_fraction(s));
	snprintf(col[1], sizeof(col[1]), "%.3f s (%.1f%%)", t->consumer_wait_s,
	         100 * rf_bench_wait_fraction(t));
	printf("    %-26s %-22s %s\n", "consumer waited", col[0], col[1]);
	if (o->period_s > 0) {
		snprintf(col[0], sizeof(col[0]), "%u of %u", rf_bench_covered(r), r->nstalls);
		snprintf(col[1], sizeof(col[1]), "%u of %u", rf_bench_covered(b), b->nstalls);
		printf("    %-26s %-22s %s\n", "stalls covered", col[0], col[1]);
	}
	snprintf(col[0], sizeof(col[0]), "%.3f s", r->wall_s);
	snprintf(col[1], sizeof(col[1]), "%.3f s", b->wall_s);
	printf("    %-26s %-22s %s\n", "wall time", col[0], col[1]);
	snprintf(col[0], sizeof(col[0]), "%s (%.0f%%)", rf_mb(s->mem_peak_total_bytes, a[0], 32),
	         100.0 * (double)s->mem_peak_total_bytes / (double)s->budget_bytes);
	snprintf(col[1], sizeof(col[1]), "%s (%.0f%%)", rf_mb(t->mem_peak_total_bytes, a[1], 32),
	         100.0 * (double)t->mem_peak_total_bytes / (double)t->budget_bytes);
	snprintf(label, sizeof(label), "peak memory of %s", rf_mb(s->budget_bytes, a[3], 32));
	printf("    %-26s %-22s %s\n", label, col[0], col[1]);
	printf("    %-26s %s\n", "diagnosis, fixed depth", t->diagnosis_text);
}

/* "io_uring", or "epoll + N read threads". */
static const char *rf_bench_loop_name(const char *backend, uint32_t threads, char *buf, size_t cap)
{
	if (threads)
		snprintf(buf, cap, "%s + %u read threads", backend, threads);
	else
		snprintf(buf, cap, "%s", backend);
	return buf;
}

static void rf_bench_text(const rf_bench_opts *o, const rf_bench_result *r,
                          const rf_bench_result *base)
{
	const rf_stats *s = &r->st;
	char a[32];
	printf("ringfeed bench: %s\n", o->nurls ? "given shards" : o->demo_dir);
	char loop[64];
	rf_bench_loop_name(s->io_backend, s->io_read_threads, loop, sizeof(loop));
	printf("  setup: consumer %.3f ms of work per batch, %u decode threads, budget %s, loop "
	       "%s%s%s\n",
	       o->step_ms, s->threads, rf_mb(s->budget_bytes, a, 32), loop,
	       o->inject ? ", injected faults " : "", o->inject ? o->inject : "");
	printf("  threads: %s%s%s\n", s->threads_source,
	       s->host_budget_source[0] ? "; host budget: " : "", s->host_budget_source);
	if (s->index_cache_off[0])
		printf("  index cache: off: %s\n", s->index_cache_off);
	rf_bench_text_rates(o, r);
	rf_bench_text_depth(r);
	rf_bench_text_memory(r);
	rf_bench_text_direct(r);
	rf_cli_host_line(stdout, r->stats_json);
	rf_bench_text_stalls(o, r);
	if (s->trace_error[0])
		printf("  trace: %s\n", s->trace_error);
	if (r->has_limit)
		printf("  decode limit (in memory, %u threads) %.1f MB/s: the loader reached %.2f "
		       "of it\n",
		       s->threads, rf_limit_rate(r) / 1e6,
		       rf_limit_rate(r) > 0
		           ? (double)s->decoded_bytes / r->wall_s / rf_limit_rate(r)
		           : 0.0);
	rf_bench_cpu_text(r);
	if (base)
		rf_bench_text_compare(o, r, base);
	printf("  diagnosis: %s\n", s->diagnosis_text);
}

/* The decode limit of the same shards with the loader's thread count. */
static int rf_bench_limit(const rf_bench_opts *o, rf_bench_result *r)
{
	char **paths = NULL;
	unsigned count = 0;
	char manifest[4200];
	int rc = 0;
	if (o->mixture)
		rc = -1; /* a mixture's decode limit is not measured (its sources differ) */
	else if (o->nurls == 0) {
		snprintf(manifest, sizeof(manifest), "%s/manifest.rfm", o->demo_dir);
		rc = rf_decode_limit_expand(manifest, &paths, &count);
	}
	for (int i = 0; rc == 0 && i < o->nurls; i++)
		rc = rf_decode_limit_expand(o->args[i], &paths, &count);
	if (rc == 0)
		rc = rf_decode_limit_run(paths, count, r->st.threads, &r->limit);
	r->has_limit = rc == 0;
	for (unsigned i = 0; i < count; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

/* rf_demo_ensure reports on stdout; bench's stdout is the report (or
 * JSON), so its messages go to stderr. */
static int rf_bench_demo(const rf_bench_opts *o)
{
	fflush(stdout);
	int saved = dup(1);
	if (saved < 0 || dup2(2, 1) < 0)
		return -1;
	int rc = rf_demo_ensure(o->demo_dir, o->demo_bytes, o->demo_shards,
	                        isatty(2) && !o->json && !o->quiet);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	return rc;
}

/* direct_io: what went past the page cache, and (once) where a filesystem
 * refused O_DIRECT. JSON: on stderr, so stdout stays one object. */
static void rf_bench_direct_note(const rf_fetch_result *f, bool json)
{
	FILE *out = json ? stderr : stdout;
	if (f->direct_bytes)
		fprintf(out, "direct I/O: %llu bytes read with O_DIRECT\n",
		        (unsigned long long)f->direct_bytes);
	if (f->direct_refused_files)
		fprintf(out,
		        "direct I/O: the filesystem of %llu file(s) refused O_DIRECT: read through "
		        "the page cache\n",
		        (unsigned long long)f->direct_refused_files);
	if (f->fixed_reads)
		fprintf(out,
		        "direct I/O: %llu reads (%llu bytes) into %llu bytes of registered buffers "
		        "(READ_FIXED)\n",
		        (unsigned long long)f->fixed_reads, (unsigned long long)f->fixed_bytes,
		        (unsigned long long)f->registered_bytes);
	if (f->register_error == -EOPNOTSUPP)
		fprintf(stderr, "direct I/O: the epoll backend has no registered buffers: plain "
		                "reads into the aligned buffers\n");
	else if (f->register_error)
		fprintf(stderr,
		        "direct I/O: io_uring refused to register the read buffers (%s%s): plain "
		        "reads\n",
		        strerror(-f->register_error),
		        f->register_error == -ENOMEM ? "; RLIMIT_MEMLOCK (ulimit -l) too small"
		                                     : "");
}

/* --fetch-only: every byte through the storage path, nothing decoded. */
static int rf_bench_fetch_only(const rf_config *cfg, const rf_bench_opts *o)
{
	rf_fetch_result f;
	rf_error err = {0};
	int rc = rf_fetch_only(cfg, &f, &err);
	if (rc < 0) {
		fprintf(stderr, "ringfeed bench: %s\n", err.msg);
		return 1;
	}
	double mbs = f.seconds > 0 ? (double)f.bytes / f.seconds / 1e6 : 0;
	if (o->json)
		printf("{\"fetch_only\":true,\"shards\":%llu,\"bytes\":%llu,\"reads\":%llu,"
		       "\"requests\":%llu,\"retries\":%llu,\"seconds\":%.6f,\"mb_per_s\":%.3f,"
		       "\"direct_bytes\":%llu,\"direct_refused_files\":%llu,\"fixed_reads\":%llu,"
		       "\"fixed_bytes\":%llu,\"registered_bytes\":%llu,\"register_error\":%d,"
		       "\"io_backend\":\"%s\",\"io_read_threads\":%u}\n",
		       (unsigned long long)f.shards, (unsigned long long)f.bytes,
		       (unsigned long long)f.reads, (unsigned long long)f.requests,
		       (unsigned long long)f.retries, f.seconds, mbs,
		       (unsigned long long)f.direct_bytes,
		       (unsigned long long)f.direct_refused_files,
		       (unsigned long long)f.fixed_reads, (unsigned long long)f.fixed_bytes,
		       (unsigned long long)f.registered_bytes, f.register_error, f.io_backend,
		       f.io_read_threads);
	else {
		char loop[64];
		printf("fetch only: %llu shards, %llu bytes in %llu reads (%llu remote requests, "
		       "%llu retries) in %.3f s: %.1f MB/s (loop %s)\n",
		       (unsigned long long)f.shards, (unsigned long long)f.bytes,
		       (unsigned long long)f.reads, (unsigned long long)f.requests,
		       (unsigned long long)f.retries, f.seconds, mbs,
		       rf_bench_loop_name(f.io_backend, f.io_read_threads, loop, sizeof(loop)));
	}
	rf_bench_direct_note(&f, o->json);
	return 0;
}

/* The loader's config from the environment and the flags, plus the demo
 * dataset (prepared once) when no shards are given. Returns 0, or the exit
 * code (printed). */
static int rf_bench_config(int argc, char **argv, rf_bench_opts *o, rf_config **out)
{
	rf_config *cfg = rf_config_new();
	*out = NULL;
	if (!cfg || rf_cli_loader_env(cfg, "bench") < 0 || rf_bench_args(argc, argv, cfg, o) < 0) {
		rf_config_free(cfg);
		return 2;
	}
	if (o->nurls == 0 && !o->mixture) {
		char manifest[4200];
		rf_error err = {0};
		if (!o->demo_ready && (rf_bench_demo_dir(o) < 0 || rf_bench_demo(o) < 0)) {
			fprintf(stderr, "ringfeed bench: cannot prepare the demo dataset in %s\n",
			        o->demo_dir);
			rf_config_free(cfg);
			return 1;
		}
		o->demo_ready = true;
		snprintf(manifest, sizeof(manifest), "%s/manifest.rfm", o->demo_dir);
		if (rf_config_add_url(cfg, manifest, &err) < 0) {
			fprintf(stderr, "ringfeed bench: %s\n", err.msg);
			rf_config_free(cfg);
			return 1;
		}
	}
	*out = cfg;
	return 0;
}

/* Records in the run when every source is a manifest and the whole epoch is
 * read once by one rank (for the progress percent); 0 when unknown. */
static uint64_t rf_bench_total_records(const rf_bench_opts *o)
{
	if (o->total_unknown)
		return 0;
	char demo[4200];
	snprintf(demo, sizeof(demo), "%s/manifest.rfm", o->demo_dir);
	uint64_t total = 0;
	for (int i = 0; i < (o->nurls ? o->nurls : 1); i++) {
		rf_manifest *m = NULL;
		rf_error err = {0};
		if (rf_manifest_read_file(o->nurls ? o->args[i] : demo, &m, &err) < 0)
			return 0;
		total += m->records;
		rf_manifest_free(m);
	}
	return total;
}

/* One loader over cfg (freed here) with the simulated consumer. */
static int rf_bench_run(rf_config *cfg, const rf_bench_opts *o, rf_bench_result *r)
{
	rf_rss_reset_peak();
	rf_error err = {0};
	r->rss_before_open = proc_kib_field_bytes("/proc/self/status", "VmRSS");
	double t0 = rf_now_s(), cpu0 = rf_cpu_process_s();
	r->t_open0 = t0;
	rf_loader *l = rf_open(cfg, &err);
	r->open_s = rf_now_s() - t0;
	rf_config_free(cfg);
	if (!l) {
		fprintf(stderr, "ringfeed bench: %s\n", err.msg);
		return -1;
	}
	rf_bench_loop(l, o, r);
	/* a trace that could not be written (mid-run or its last line at close)
	 * is an error, and in the report */
	int closed = rf_close_checked(l, &err);
	r->cpu_s = rf_cpu_process_s() - cpu0;
	if (closed < 0) {
		fprintf(stderr, "ringfeed bench: %s\n", err.msg);
		snprintf(r->st.trace_error, sizeof(r->st.trace_error), "%.*s",
		         (int)sizeof(r->st.trace_error) - 1, err.msg);
		r->rc = -EIO;
	}
	return 0;
}

/* --compare-depth N: the same flags again, at a fixed depth of N, no trace. */
static int rf_bench_compare(int argc, char **argv, const rf_bench_opts *o, rf_bench_result *b)
{
	rf_bench_opts o2 = *o;
	o2.nurls = 0;
	o2.args = calloc((size_t)argc + 1, sizeof(char *));
	rf_config *cfg = NULL;
	char depth[16];
	snprintf(depth, sizeof(depth), "%u", o->compare_depth);
	rf_error err = {0};
	int rc = o2.args ? rf_bench_config(argc, argv, &o2, &cfg) : 1;
	if (rc == 0 && (rf_config_set(cfg, "depth", depth, &err) < 0 ||
	                rf_config_set(cfg, "trace", "", &err) < 0)) {
		fprintf(stderr, "ringfeed bench: --compare-depth: %s\n", err.msg);
		rf_config_free(cfg);
		rc = 1;
	}
	if (rc == 0) {
		b->stats_slot = 1;
		rc = rf_bench_run(cfg, &o2, b) < 0 ? 1 : 0;
	}
	free(o2.args);
	return rc;
}

static int rf_bench_write_stats(const char *path, const char *json)
{
	FILE *f = fopen(path, "w");
	bool ok = f && json && fprintf(f, "%s\n", json) > 0;
	if (f && fclose(f) != 0)
		ok = false;
	if (!ok)
		fprintf(stderr, "ringfeed bench: --stats %s: cannot write: %m\n", path);
	return ok ? 0 : -1;
}

int cmd_bench(int argc, char **argv)
{
	rf_bench_opts o = {.demo_bytes = 1ull << 30, .demo_shards = 64};
	o.args = calloc((size_t)argc + 1, sizeof(char *));
	rf_config *cfg = NULL;
	int rc = o.args ? rf_bench_config(argc, argv, &o, &cfg) : 1;
	if (rc != 0) {
		free(o.args);
		return rc;
	}
	if (o.fetch_only) {
		free(o.args);
		rc = rf_bench_fetch_only(cfg, &o);
		rf_config_free(cfg);
		return rc;
	}
	if (!o.inject)
		o.inject = getenv("RINGFEED_INJECT");
	rf_bench_stall_spec(&o);
	o.total_records = rf_bench_total_records(&o);
	static rf_bench_result r, base;
	if (rf_bench_run(cfg, &o, &r) < 0) {
		free(o.args);
		return 1;
	}
	if (o.decode_limit && rf_bench_limit(&o, &r) < 0)
		r.rc = -EIO;
	if (o.stats_path && rf_bench_write_stats(o.stats_path, r.stats_json) < 0)
		r.rc = -EIO;
	bool compared = false;
	if (o.compare_depth && r.rc >= 0) {
		if (rf_bench_compare(argc, argv, &o, &base) != 0 || base.rc < 0)
			r.rc = -EIO;
		else
			compared = true;
	}
	free(o.args);
	if (o.json)
		rf_bench_json(&o, &r, compared ? &base : NULL);
	else
		rf_bench_text(&o, &r, compared ? &base : NULL);
	return r.rc < 0 ? 1 : 0;
}
