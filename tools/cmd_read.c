/* cmd_read.c - `ringfeed read`: opens a loader on shards, directories or
 * manifests and writes the records it delivers (or nothing), optionally an
 * order-sensitive digest; can stop after N batches and save / resume the
 * consumer's state. Uses only ringfeed.h (and base/json.h). */
#include "commands.h"
#include "flags.h"
#include "json.h"
#include "loader_opts.h"
#include "packer.h"
#include "ringfeed.h"
#include "tar_out.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum rf_read_output { RF_OUT_NONE, RF_OUT_LINES, RF_OUT_RAW, RF_OUT_TAR };

typedef struct rf_read_opts {
	enum rf_read_output output;
	bool digest;
	bool mixture; /* --mixture FILE: the sources come from it */
	uint64_t stop_after;
	const char *save_state, *resume;
	const char *stats;     /* file for rf_stats_json at the end */
	bool json;             /* one JSON object on stdout at the end (with --output none) */
	const char *tar_field; /* --output tar: a single-field record's member extension */
	double progress_s;     /* a progress line on stderr every this many seconds (0: none) */
} rf_read_opts;

static void rf_read_usage(FILE *f)
{
	fprintf(
	    f, "usage: ringfeed read [options] SHARDS|DIRS|MANIFESTS...\n\n"
	       "Reads records through the loader, in the order a consumer gets them.\n\n"
	       "  --output none|lines|raw|tar\n"
	       "                           none (default); lines: each record then a newline;\n"
	       "                           raw: u32 little-endian length then the bytes; tar: a\n"
	       "                           WebDataset tar stream, members KEY.FIELD in delivery\n"
	       "                           order (a single-field record is POSITION.bin)\n"
	       "                           (lines and raw give a sample's present fields in turn)\n"
	       "  --tar-field NAME         --output tar: the extension of a single-field record's\n"
	       "                           member (default bin)\n"
	       "  --digest                 print `records=N bytes=M digest=HEX` last (FNV-1a 64\n"
	       "                           over each record's u32 LE length and bytes, in order;\n"
	       "                           a sample: u32 LE key length, key, then per field of\n"
	       "                           the dataset u32 LE name length, name, and, when\n"
	       "                           present, u32 LE length and bytes, else 0xffffffff)\n"
	       "  --stop-after N           stop after N batches (with --save-state FILE)\n"
	       "  --save-state FILE        write the consumer's state when stopping\n"
	       "  --resume FILE            continue from a saved state\n"
	       "  --stats FILE             write the loader's stats (one JSON object) to FILE at\n"
	       "                           the end, or when stopping\n"
	       "  --json                   print one JSON object at the end: records, bytes,\n"
	       "                           batches, digest (with --digest), status, error, and\n"
	       "                           the loader's stats (needs --output none); also when\n"
	       "                           the read cannot start (status 1, or 2 for bad usage)\n"
	       "  --progress SECONDS       once the read has run this long, say how far it got\n"
	       "                           on stderr every SECONDS, and at its end (default 10;\n"
	       "                           0: never)\n"
	       "  -q, --quiet              no progress lines (--progress 0)\n"
	       "  --                       the options end (a name may then start with -)\n"
	       "  --help                   this text\n\n");
	rf_cli_loader_help(f);
}

typedef struct rf_read_sum {
	uint64_t records, bytes, digest;
} rf_read_sum;

static uint64_t rf_fnv_u32(uint64_t h, uint32_t v)
{
	uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	return rf_fnv1a(h, le, 4);
}

/* A name for stderr: control bytes as '?', at most 120 bytes. */
static void rf_read_shown(const char *p, size_t len, char *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 4 < cap && n < 120; i++)
		out[n++] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i];
	if (n < len && n + 4 < cap)
		memcpy(out + n, "...", 3), n += 3;
	out[n] = 0;
}

/* A member KEY.FIELD of --output tar, its key and field made safe to
 * extract (tar_out.h: no absolute path, no ".." or control byte); the
 * first one changed is said once on stderr. */
static int rf_read_member(const char *key, size_t key_len, const char *field, const uint8_t *p,
                          uint64_t len)
{
	static bool said;
	char name[8192], k[4200], f[600];
	bool kc, fc;
	int kn = rf_tar_out_safe_part(key, key_len, k, sizeof(k), &kc);
	int fn = rf_tar_out_safe_part(field, strlen(field), f, sizeof(f), &fc);
	int n = kn < 0 || fn < 0 ? -1 : snprintf(name, sizeof(name), "%s.%s", k, f);
	if (n < 0 || (size_t)n >= sizeof(name))
		return -1;
	if ((kc || fc) && !said) {
		char orig[8192], was[160], now[160];
		int on = snprintf(orig, sizeof(orig), "%.*s.%s", (int)key_len, key, field);
		rf_read_shown(orig, on < 0 ? 0 : RF_MIN((size_t)on, sizeof(orig) - 1), was,
		              sizeof(was));
		rf_read_shown(name, (size_t)n, now, sizeof(now));
		fprintf(stderr,
		        "ringfeed read: --output tar: a member name that is not safe to extract "
		        "(a leading '/', a '.' or '..' component, a control byte) is written "
		        "changed, with a hash of the original: '%s' -> '%s' (this and any "
		        "other)\n",
		        was, now);
		said = true;
	}
	return rf_tar_out_member(stdout, name, (size_t)n, p, len);
}

static int rf_read_emit_field(const rf_read_opts *o, const char *key, size_t key_len,
                              const char *name, const uint8_t *p, uint32_t len)
{
	if (o->output == RF_OUT_TAR)
		return rf_read_member(key, key_len, name, p, len);
	uint8_t le[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
	                 (uint8_t)(len >> 24)};
	if (o->output == RF_OUT_RAW && fwrite(le, 1, 4, stdout) != 4)
		return -1;
	if (o->output != RF_OUT_NONE && len && fwrite(p, 1, len, stdout) != len)
		return -1;
	if (o->output == RF_OUT_LINES && putchar('\n') == EOF)
		return -1;
	return 0;
}

/* A batch of multi-field samples: each sample's present fields in turn. */
static int rf_read_emit_samples(const rf_read_opts *o, const rf_batch *b, rf_read_sum *sum)
{
	for (uint32_t i = 0; i < b->records; i++) {
		const char *key = b->keys + b->key_offsets[i];
		size_t key_len = (size_t)(b->key_offsets[i + 1] - b->key_offsets[i]);
		if (o->digest)
			sum->digest = rf_fnv1a(rf_fnv_u32(sum->digest, (uint32_t)key_len),
			                       (const uint8_t *)key, key_len);
		sum->records++;
		for (uint32_t f = 0; f < b->fields; f++) {
			const rf_batch_field *fd = &b->field[f];
			const uint8_t *p = fd->payload + fd->offsets[i];
			uint32_t len = (uint32_t)(fd->offsets[i + 1] - fd->offsets[i]);
			if (o->digest) {
				size_t nl = strlen(fd->name);
				sum->digest = rf_fnv1a(rf_fnv_u32(sum->digest, (uint32_t)nl),
				                       (const uint8_t *)fd->name, nl);
				sum->digest = fd->present[i]
				                  ? rf_fnv1a(rf_fnv_u32(sum->digest, len), p, len)
				                  : rf_fnv_u32(sum->digest, UINT32_MAX);
			}
			if (!fd->present[i])
				continue;
			sum->bytes += len;
			if (rf_read_emit_field(o, key, key_len, fd->name, p, len) < 0)
				return -1;
		}
	}
	return 0;
}

static int rf_read_emit(const rf_read_opts *o, const rf_batch *b, rf_read_sum *sum)
{
	if (b->fields)
		return rf_read_emit_samples(o, b, sum);
	for (uint32_t i = 0; i < b->records; i++) {
		const uint8_t *p;
		uint32_t len;
		if (b->row_bytes) {
			p = b->payload + (uint64_t)i * b->row_bytes;
			len = b->lengths[i];
		} else {
			p = b->payload + b->offsets[i];
			len = (uint32_t)(b->offsets[i + 1] - b->offsets[i]);
		}
		uint8_t le[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
		                 (uint8_t)(len >> 24)};
		if (o->digest)
			sum->digest = rf_fnv1a(rf_fnv1a(sum->digest, le, 4), p, len);
		sum->records++;
		sum->bytes += len;
		char key[32] = "";
		int kl = 0;
		if (o->output == RF_OUT_TAR) /* POSITION.bin: the record's place in the epoch */
			kl = snprintf(key, sizeof(key), "%09llu",
			              (unsigned long long)(b->first_record + i));
		if (rf_read_emit_field(o, key, (size_t)kl, o->tar_field, p, len) < 0)
			return -1;
	}
	return 0;
}

static int rf_read_args(int argc, char **argv, rf_config *cfg, rf_read_opts *o)
{
	int nurls = 0;
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_val = i + 1 < argc;
		if (opts && !strcmp(a, "--")) {
			opts = false;
		} else if (!opts || a[0] != '-' || !a[1]) {
			rf_error err = {0};
			if (rf_config_add_url(cfg, a, &err) < 0) {
				fprintf(stderr, "ringfeed read: %s\n", err.msg);
				return -1;
			}
			nurls++;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			rf_read_usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--digest")) {
			o->digest = true;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--output") && has_val) {
			const char *v = argv[++i];
			if (!strcmp(v, "none"))
				o->output = RF_OUT_NONE;
			else if (!strcmp(v, "lines"))
				o->output = RF_OUT_LINES;
			else if (!strcmp(v, "raw"))
				o->output = RF_OUT_RAW;
			else if (!strcmp(v, "tar"))
				o->output = RF_OUT_TAR;
			else {
				fprintf(
				    stderr,
				    "ringfeed read: --output must be none, lines, raw or tar\n");
				return -1;
			}
		} else if (!strcmp(a, "--tar-field") && has_val) {
			o->tar_field = argv[++i];
			if (!*o->tar_field || strpbrk(o->tar_field, "/.") ||
			    strlen(o->tar_field) > 64) {
				fprintf(stderr, "ringfeed read: --tar-field needs a name of 1..64 "
				                "bytes without '/' or '.'\n");
				return -1;
			}
		} else if (!strcmp(a, "--stop-after") && has_val) {
			char *end;
			o->stop_after = strtoull(argv[++i], &end, 10);
			if (*end || argv[i][0] == '-' || !argv[i][0]) {
				fprintf(stderr, "ringfeed read: --stop-after needs a count\n");
				return -1;
			}
		} else if (!strcmp(a, "--save-state") && has_val) {
			o->save_state = argv[++i];
		} else if (!strcmp(a, "--resume") && has_val) {
			o->resume = argv[++i];
		} else if (!strcmp(a, "--stats") && has_val) {
			o->stats = argv[++i];
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->progress_s = 0;
		} else if (!strcmp(a, "--progress") && has_val) {
			if (!flag_double("read", "--progress", argv[++i], 0, 86400, &o->progress_s))
				return -1;
		} else {
			if (!strncmp(a, "--mixture", 9))
				o->mixture = true;
			int used = rf_cli_loader_flag(cfg, argc, argv, i, "read");
			if (used <= 0) {
				if (used == 0)
					fprintf(stderr,
					        "ringfeed read: unknown option '%s' (see --help)\n",
					        a);
				return -1;
			}
			i += used - 1;
		}
	}
	if (nurls == 0 && !o->mixture) {
		fprintf(stderr, "ringfeed read: no shards given\n");
		rf_read_usage(stderr);
		return -1;
	}
	if (o->json && o->output != RF_OUT_NONE) {
		fprintf(stderr, "ringfeed read: --json needs --output none (stdout is the JSON)\n");
		return -1;
	}
	if (o->save_state && !o->stop_after) {
		fprintf(stderr, "ringfeed read: --save-state needs --stop-after N\n");
		return -1;
	}
	if (o->resume && rf_cli_resume(cfg, o->resume, "read") < 0)
		return -1;
	return 0;
}

/* --json: what --digest prints, the outcome, and the loader's stats. */
static void rf_read_json(rf_loader *l, const rf_read_opts *o, const rf_read_sum *sum,
                         uint64_t batches, int status)
{
	static char stats[1 << 16];
	printf("{\"records\":%llu,\"bytes\":%llu,\"batches\":%llu,",
	       (unsigned long long)sum->records, (unsigned long long)sum->bytes,
	       (unsigned long long)batches);
	if (o->digest)
		printf("\"digest\":\"%016llx\",", (unsigned long long)sum->digest);
	printf("\"stopped_after\":%s,\"status\":%d,\"error\":",
	       o->stop_after && batches >= o->stop_after ? "true" : "false", status);
	if (status)
		rf_json_fput(stdout, rf_last_error(l));
	else
		printf("null");
	printf(",\"loader\":%s}\n", rf_stats_json(l, stats, sizeof(stats)) > 0 ? stats : "null");
}

/* How far the read got, on stderr (--progress): records, bytes, the rate
 * since the start, and how long it has waited for the batch it wants. */
typedef struct rf_read_progress {
	double t0, said, last_batch; /* seconds (rf_tool_now_ns) */
	bool any;
} rf_read_progress;

static void rf_read_say(const rf_read_opts *o, rf_read_progress *p, const rf_read_sum *sum,
                        uint64_t batches, bool last)
{
	double now = (double)rf_tool_now_ns() / 1e9, el = now - p->t0;
	if (o->progress_s <= 0 ||
	    (last ? !p->any : el < o->progress_s || now - p->said < o->progress_s))
		return;
	p->said = now;
	p->any = true;
	fprintf(stderr, "ringfeed read: %llu records, %llu batches, %.1f MB, %.1f MB/s, %.0f s",
	        (unsigned long long)sum->records, (unsigned long long)batches,
	        (double)sum->bytes / 1e6, el > 0 ? (double)sum->bytes / 1e6 / el : 0.0, el);
	if (last)
		fprintf(stderr, " (done)");
	else if (now - p->last_batch >= 1.0)
		fprintf(stderr, ", waiting %.0f s for the next batch", now - p->last_batch);
	fprintf(stderr, "\n");
}

static int rf_read_run(rf_loader *l, const rf_read_opts *o)
{
	rf_read_sum sum = {0, 0, RF_FNV_OFFSET};
	uint64_t batches = 0;
	int status = 0;
	double t0 = (double)rf_tool_now_ns() / 1e9;
	rf_read_progress prog = {.t0 = t0, .said = t0, .last_batch = t0};
	for (;;) {
		if (o->stop_after && batches >= o->stop_after) {
			if (o->save_state && rf_cli_save_state(l, o->save_state, "read") < 0)
				status = 1;
			break;
		}
		rf_batch *b = NULL;
		/* with progress, wake each second to say it even while waiting */
		int rc = rf_next(l, &b, o->progress_s > 0 ? 1000 : -1);
		if (rc == -ETIMEDOUT && o->progress_s > 0) {
			rf_read_say(o, &prog, &sum, batches, false);
			continue;
		}
		if (rc == RF_END)
			break;
		if (rc < 0) {
			fflush(stdout);
			fprintf(stderr, "ringfeed read: error: %s\n", rf_last_error(l));
			status = 1;
			break;
		}
		int w = rf_read_emit(o, b, &sum);
		rf_release(l, b);
		batches++;
		prog.last_batch = (double)rf_tool_now_ns() / 1e9;
		rf_read_say(o, &prog, &sum, batches, false);
		if (w < 0) {
			fprintf(stderr, "ringfeed read: writing the output failed\n");
			status = 1;
			break;
		}
	}
	if (o->output == RF_OUT_TAR && status == 0 && rf_tar_out_end(stdout) < 0)
		status = 1;
	if (status == 0)
		rf_read_say(o, &prog, &sum, batches, true);
	if (o->json)
		rf_read_json(l, o, &sum, batches, status);
	else if (o->digest)
		printf("records=%llu bytes=%llu digest=%016llx\n", (unsigned long long)sum.records,
		       (unsigned long long)sum.bytes, (unsigned long long)sum.digest);
	if (fflush(stdout) != 0)
		status = 1;
	return status;
}

/* The skip policy's skips, one line each on stderr (the last 8 in detail). */
static void rf_read_report_skips(rf_loader *l)
{
	static rf_stats s;
	if (rf_stats_get(l, &s, sizeof(s)) < 0 || s.blocks_skipped == 0)
		return;
	fprintf(stderr, "ringfeed read: skipped %llu block(s), %llu record(s) left out\n",
	        (unsigned long long)s.blocks_skipped, (unsigned long long)s.records_skipped);
	for (uint32_t i = 0; i < s.skips_listed; i++)
		fprintf(
		    stderr,
		    "ringfeed read: skipped shard %u block %u (%u records) at epoch %llu stream "
		    "position %llu: %s\n",
		    s.skips[i].shard, s.skips[i].block, s.skips[i].records,
		    (unsigned long long)s.skips[i].epoch, (unsigned long long)s.skips[i].position,
		    s.skips[i].error);
}

/* Writes rf_stats_json to path. Returns 0 or -1 (printed). */
static int rf_read_write_stats(rf_loader *l, const char *path)
{
	static char json[1 << 16];
	int n = rf_stats_json(l, json, sizeof(json));
	char shown[4200]; /* a URL-shaped name is shown redacted */
	flag_shown(path, shown, sizeof(shown));
	FILE *f = n < 0 ? NULL : fopen(path, "w");
	if (!f) {
		fprintf(stderr, "ringfeed read: %s: cannot write the stats: %s\n", shown,
		        n < 0 ? strerror(-n) : strerror(errno));
		return -1;
	}
	int ok = fprintf(f, "%s\n", json) > 0;
	ok &= fclose(f) == 0;
	if (!ok)
		fprintf(stderr, "ringfeed read: %s: writing the stats failed\n", shown);
	return ok ? 0 : -1;
}

/* Whether --json is among the options (before any `--`). */
static bool rf_read_wants_json(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return true;
	return false;
}

/* --json when the read could not start: the same object, status rc and the
 * first message written to stderr (without its "ringfeed read: " prefix). */
static void rf_read_json_failed(const char *msgs, int rc)
{
	const char *m = msgs ? msgs : "";
	if (!strncmp(m, "ringfeed read: ", 15))
		m += 15;
	char line[4096];
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(m, "\n"), m);
	printf("{\"records\":0,\"bytes\":0,\"batches\":0,\"stopped_after\":false,\"status\":%d,"
	       "\"error\":",
	       rc);
	rf_json_fput(stdout, *line ? line : "the read could not start");
	printf(",\"loader\":null}\n");
	fflush(stdout);
}

/* The loader from the options, or NULL with *rc the exit status (printed). */
static rf_loader *rf_read_open(int argc, char **argv, rf_read_opts *o, int *rc)
{
	rf_config *cfg = rf_config_new();
	if (!cfg) {
		fprintf(stderr, "ringfeed read: out of memory\n");
		*rc = 1;
		return NULL;
	}
	if (rf_cli_loader_env(cfg, "read") < 0 || rf_read_args(argc, argv, cfg, o) < 0) {
		rf_config_free(cfg);
		*rc = 2;
		return NULL;
	}
	rf_error err = {0};
	rf_loader *l = rf_open(cfg, &err);
	rf_config_free(cfg);
	if (!l) {
		fprintf(stderr, "ringfeed read: %s\n", err.msg);
		*rc = 1;
	}
	return l;
}

/* rf_read_open, with --json: what it says on stderr is kept for the JSON
 * object printed when it fails, and then written to stderr as well. */
static rf_loader *rf_read_open_json(int argc, char **argv, rf_read_opts *o, int *rc)
{
	char *msgs = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&msgs, &len);
	FILE *err_out = stderr;
	if (mem)
		stderr = mem;
	rf_loader *l = rf_read_open(argc, argv, o, rc);
	if (mem) {
		stderr = err_out;
		fclose(mem);
		fputs(msgs, stderr);
	}
	if (!l)
		rf_read_json_failed(msgs, *rc);
	free(msgs);
	return l;
}

int cmd_read(int argc, char **argv)
{
	rf_read_opts o = {.tar_field = "bin", .progress_s = 10};
	int rc = 0;
	rf_loader *l = rf_read_wants_json(argc, argv) ? rf_read_open_json(argc, argv, &o, &rc)
	                                              : rf_read_open(argc, argv, &o, &rc);
	if (!l)
		return rc;
	static char outbuf[1 << 20];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	rf_error err = {0};
	int status = rf_read_run(l, &o);
	rf_read_report_skips(l);
	if (o.stats && rf_read_write_stats(l, o.stats) < 0)
		status = 1;
	if (rf_close_checked(l, &err) < 0) { /* the trace could not be written */
		fprintf(stderr, "ringfeed read: %s\n", err.msg);
		status = 1;
	}
	return status;
}
