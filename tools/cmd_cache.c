/* cmd_cache.c - `ringfeed cache ls|du|verify|clear [--cache-dir DIR]`: the
 * data cache's files (rf_data_cache_admin). verify exits 1 when a range's
 * bytes fail their CRC-32C (the loader would refetch it, never deliver it).
 * `ringfeed cache warm URL...` reads a dataset once through a loader with
 * cache=readwrite (so exactly the ranges a loader reads are cached), with
 * progress on stderr and an optional cap on the bytes fetched per second. */
#include "commands.h"
#include "flags.h"
#include "json.h"
#include "loader_opts.h"
#include "ringfeed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: ringfeed cache ls|du|verify|clear [--cache-dir DIR]\n"
	        "       ringfeed cache warm [--cache-dir DIR] [--max-rate BYTES] [--json]\n"
	        "                           [LOADER FLAGS] (URL... | --manifest URL)\n\n"
	        "The data cache of remote ranges (loader option cache=read|readwrite).\n"
	        "  ls       each object version: URL (no query), version, ranges, bytes\n"
	        "  du       objects, ranges, recorded bytes, bytes on disk\n"
	        "  verify   read every range back against its CRC-32C (exit 1: a bad one)\n"
	        "  clear    remove the cache's files (nothing else in the directory)\n"
	        "  warm     read the dataset once into the cache (the ranges a loader\n"
	        "           reads; progress on stderr; --json: the result on stdout);\n"
	        "           --max-rate caps the bytes fetched from the store per second,\n"
	        "           loader flags (--cache-bytes, --threads, --rank/--world ...) apply\n"
	        "  --cache-dir DIR  the directory (default $RINGFEED_CACHE_DIR/data, else\n"
	        "                   $XDG_CACHE_HOME/ringfeed/data, else ~/.cache/ringfeed/data)\n");
}

static void print_one(void *ctx, const char *url, const char *validator, uint64_t size,
                      uint64_t ranges, uint64_t bytes, uint64_t bad)
{
	(void)ctx;
	printf("%s\t%s\tsize=%llu\tranges=%llu\tbytes=%llu%s\n", url, validator,
	       (unsigned long long)size, (unsigned long long)ranges, (unsigned long long)bytes,
	       bad ? "\tBAD" : "");
}

typedef struct warm_opts {
	const char *dir;
	uint64_t max_rate; /* store bytes per second, 0: no cap */
	bool json;
} warm_opts;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The warm's config: what it reads (cache readwrite, one epoch, read as a
 * training job reads it: in manifest order adjacent units are merged into
 * longer reads, and a recorded range serves only reads it tiles) and the
 * user's flags. 0, or the exit status. */
static int warm_args(int argc, char **argv, rf_config *cfg, warm_opts *o)
{
	rf_error err = {0};
	if (rf_config_set(cfg, "cache", "readwrite", &err) < 0 ||
	    rf_config_set(cfg, "epochs", "1", &err) < 0) {
		fprintf(stderr, "ringfeed cache warm: %s\n", err.msg);
		return 1;
	}
	if (rf_cli_loader_env(cfg, "cache warm") < 0)
		return 2;
	int nurls = 0;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *url = NULL;
		if (!strcmp(a, "--manifest") && i + 1 < argc) {
			url = argv[++i];
		} else if (a[0] != '-' || !a[1]) {
			url = a;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		} else if (!strcmp(a, "--max-rate") && i + 1 < argc) {
			if (!flag_bytes("cache warm", "--max-rate", argv[++i], 1, &o->max_rate))
				return 2;
			continue;
		} else {
			if (!strcmp(a, "--cache-dir") && i + 1 < argc)
				o->dir = argv[i + 1];
			if (!strcmp(a, "--cache") && i + 1 < argc) {
				fprintf(stderr,
				        "ringfeed cache warm: the cache is readwrite here\n");
				return 2;
			}
			int used = rf_cli_loader_flag(cfg, argc, argv, i, "cache warm");
			if (used <= 0) {
				if (used == 0)
					fprintf(stderr,
					        "ringfeed cache warm: unknown option '%s'\n", a);
				return 2;
			}
			i += used - 1;
			continue;
		}
		if (rf_config_add_url(cfg, url, &err) < 0) {
			fprintf(stderr, "ringfeed cache warm: %s\n", err.msg);
			return 2;
		}
		nurls++;
	}
	if (nurls == 0) {
		fprintf(stderr, "ringfeed cache warm: no dataset given\n");
		usage(stderr);
		return 2;
	}
	return 0;
}

/* One progress line on stderr (about once a second). */
static void warm_progress(const rf_stats *s, uint64_t records, double el, bool last)
{
	fprintf(stderr,
	        "ringfeed cache warm: %llu records, %.1f MB from the store, %.1f MB already "
	        "cached, %.1f MB written, %.0fs%s",
	        (unsigned long long)records, (double)s->data_cache_store_bytes / 1e6,
	        (double)s->data_cache_hit_bytes / 1e6, (double)s->data_cache_written_bytes / 1e6,
	        el, last ? "\n" : "\r");
	fflush(stderr);
}

/* Sleeps while the store bytes run ahead of the cap. */
static void warm_pace(uint64_t store_bytes, uint64_t max_rate, double t0)
{
	double ahead = (double)store_bytes / (double)max_rate - (now_s() - t0);
	if (ahead <= 0)
		return;
	struct timespec ts = {.tv_sec = (time_t)ahead,
	                      .tv_nsec = (long)((ahead - (double)(time_t)ahead) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void warm_json(const rf_stats *s, uint64_t records, uint64_t bytes, double el, int status,
                      const char *error, const rf_data_cache_info *info)
{
	printf("{\"status\":%d,\"error\":", status);
	if (error)
		rf_json_fput(stdout, error);
	else
		printf("null");
	printf(",\"records\":%llu,\"bytes\":%llu,\"elapsed_s\":%.3f,\"store_bytes\":%llu,"
	       "\"hit_bytes\":%llu,\"not_admitted\":%llu,\"write_skipped\":%llu,"
	       "\"admit_fraction\":%.6f,\"cache_off\":",
	       (unsigned long long)records, (unsigned long long)bytes, el,
	       (unsigned long long)s->data_cache_store_bytes,
	       (unsigned long long)s->data_cache_hit_bytes,
	       (unsigned long long)s->data_cache_not_admitted,
	       (unsigned long long)s->data_cache_write_skipped, s->data_cache_admit_fraction);
	rf_json_fput(stdout, s->data_cache_off);
	printf(",\"cache\":{\"objects\":%llu,\"ranges\":%llu,\"recorded_bytes\":%llu,"
	       "\"disk_bytes\":%llu}}\n",
	       (unsigned long long)info->objects, (unsigned long long)info->ranges,
	       (unsigned long long)info->recorded_bytes, (unsigned long long)info->disk_bytes);
}

/* Reads the dataset once; the loader's close waits for its writes, then the
 * cache's directory is summed (what a later job will find). */
static int cmd_cache_warm(int argc, char **argv)
{
	warm_opts o = {0};
	rf_config *cfg = rf_config_new();
	if (!cfg) {
		fprintf(stderr, "ringfeed cache warm: out of memory\n");
		return 1;
	}
	int rc = warm_args(argc, argv, cfg, &o);
	rf_error err = {0};
	rf_loader *l = rc ? NULL : rf_open(cfg, &err);
	rf_config_free(cfg);
	if (rc)
		return rc;
	if (!l) {
		fprintf(stderr, "ringfeed cache warm: %s\n", err.msg);
		return 1;
	}
	double t0 = now_s(), shown = t0;
	uint64_t records = 0, bytes = 0;
	rf_stats s = {0};
	int status = 0;
	char error[512] = "";
	for (;;) {
		rf_batch *b = NULL;
		int r = rf_next(l, &b, -1);
		if (r == RF_END)
			break;
		if (r < 0) {
			snprintf(error, sizeof(error), "%s", rf_last_error(l));
			fprintf(stderr, "\nringfeed cache warm: error: %s\n", error);
			status = 1;
			break;
		}
		records += b->records;
		bytes += b->payload_bytes;
		rf_release(l, b);
		if (o.max_rate || now_s() - shown >= 1.0) {
			(void)rf_stats_get(l, &s, sizeof(s));
			if (o.max_rate)
				warm_pace(s.data_cache_store_bytes, o.max_rate, t0);
		}
		if (now_s() - shown >= 1.0) {
			warm_progress(&s, records, now_s() - t0, false);
			shown = now_s();
		}
	}
	(void)rf_stats_get(l, &s, sizeof(s));
	rf_close(l); /* waits for the pending writes */
	double el = now_s() - t0;
	warm_progress(&s, records, el, true);
	if (s.data_cache_off[0])
		fprintf(stderr, "ringfeed cache warm: %s\n", s.data_cache_off);
	rf_data_cache_info info = {0};
	rf_error derr = {0};
	if (rf_data_cache_admin(o.dir, RF_DATA_CACHE_DU, NULL, NULL, &info, &derr) < 0)
		fprintf(stderr, "ringfeed cache warm: %s\n", derr.msg);
	if (o.json)
		warm_json(&s, records, bytes, el, status, status ? error : NULL, &info);
	else
		printf("objects=%llu ranges=%llu recorded_bytes=%llu disk_bytes=%llu\n",
		       (unsigned long long)info.objects, (unsigned long long)info.ranges,
		       (unsigned long long)info.recorded_bytes,
		       (unsigned long long)info.disk_bytes);
	return status;
}

int cmd_cache(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "warm"))
		return cmd_cache_warm(argc, argv);
	static const char *const actions[] = {"du", "ls", "verify", "clear"};
	const char *dir = NULL;
	int action = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strncmp(argv[i], "--cache-dir=", 12)) {
			dir = argv[i] + 12;
		} else if (action < 0) {
			for (int a = 0; a < 4; a++)
				if (!strcmp(argv[i], actions[a]))
					action = a;
			if (action < 0) {
				fprintf(stderr, "ringfeed cache: unknown action '%s'\n", argv[i]);
				usage(stderr);
				return 2;
			}
		} else {
			fprintf(stderr, "ringfeed cache: unexpected '%s'\n", argv[i]);
			return 2;
		}
	}
	if (action < 0) {
		usage(stderr);
		return 2;
	}
	rf_data_cache_info info;
	rf_error err = {0};
	int rc = rf_data_cache_admin(dir, action, action == 1 || action == 2 ? print_one : NULL,
	                             NULL, &info, &err);
	if (rc < 0) {
		fprintf(stderr, "ringfeed cache %s: %s\n", actions[action], err.msg);
		return 1;
	}
	printf("objects=%llu ranges=%llu recorded_bytes=%llu disk_bytes=%llu foreign=%llu",
	       (unsigned long long)info.objects, (unsigned long long)info.ranges,
	       (unsigned long long)info.recorded_bytes, (unsigned long long)info.disk_bytes,
	       (unsigned long long)info.foreign);
	if (action == 2)
		printf(" bad=%llu", (unsigned long long)info.bad_ranges);
	if (action == 3)
		printf(" removed=%llu", (unsigned long long)info.removed);
	printf("\n");
	return action == 2 && info.bad_ranges ? 1 : 0;
}
