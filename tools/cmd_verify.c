/* cmd_verify.c - `ringfeed verify NAME...`: decodes every block of every
 * shard and checks every checksum and structural rule. A NAME is anything
 * `read` takes (files, directories, manifests, http(s):// and s3:// URLs,
 * brace ranges), expanded by the library as a loader expands it, and each
 * shard is read through the library's sources; what a manifest says of a
 * shard (size, records) is checked too. Exit 0 when every shard is sound,
 * 1 otherwise (or when nothing was verified), 2 for usage. */
#include "commands.h"
#include "loader_opts.h"
#include "ringfeed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char verify_usage[] =
    "usage: ringfeed verify [--max-reports N] [--quiet] [loader options] NAME...\n"
    "Decodes every block of each shard and checks every checksum and structural rule.\n"
    "A NAME is anything `ringfeed read` takes: a shard, a directory (its manifest.rfm\n"
    "when it has one, else its *.rfs), a manifest (its shards, whose sizes and record\n"
    "counts are checked against it), an http(s):// or s3:// URL or prefix, with {a..b}\n"
    "ranges; loader options such as --s3-endpoint or --ca-file apply to remote shards.\n"
    "Each problem is printed with the shard, block, byte offset and the check that\n"
    "failed (at most N per shard, default 100), then 'ok SHARD' or 'DAMAGED SHARD'\n"
    "(--quiet: only damaged shards).\n"
    "Exit status: 0 all sound, 1 a shard is damaged or unreadable or no shard was\n"
    "named, 2 bad usage.\n";

typedef struct verify_state {
	uint32_t max_reports;
	int quiet;
	uint64_t shards, damaged;
} verify_state;

typedef struct verify_name_run {
	verify_state *v;
	const rf_shard_ref *refs;
	size_t done;
} verify_name_run;

static void report(void *ctx, const rf_error *e)
{
	(void)ctx;
	printf("  %s\n", e->msg);
}

static void verdict(verify_state *v, const char *name, int rc)
{
	v->shards++;
	if (rc < 0)
		v->damaged++;
	if (rc < 0 || !v->quiet)
		printf("%s %s\n", rc == 0 ? "ok" : "DAMAGED", name);
}

static void on_done(void *ctx, size_t i, int rc)
{
	verify_name_run *r = ctx;
	verdict(r->v, r->refs[i].name, rc);
	r->done = i + 1;
}

/* One NAME: expanded alone, so a bad one is reported and the rest go on;
 * its shards are verified through one fetch layer. */
static void verify_name(verify_state *v, rf_config *cfg, const char *name)
{
	rf_error err = {0};
	rf_shard_ref *refs = NULL;
	size_t n = 0;
	if (rf_config_add_url(cfg, name, &err) < 0 || rf_config_shards(cfg, &refs, &n, &err) < 0) {
		printf("  %s\n", err.msg);
		verdict(v, name, err.code ? err.code : -EINVAL);
		return;
	}
	verify_name_run r = {.v = v, .refs = refs};
	if (rf_verify_shards(cfg, refs, n, report, on_done, &r, v->max_reports, &err) < 0 &&
	    r.done < n) /* the fetch layer could not start: none of the rest was read */
		printf("  %s\n", err.msg);
	for (size_t i = r.done; i < n; i++)
		verdict(v, refs[i].name, -EIO);
	rf_shard_refs_free(refs, n);
}

static int parse_count(const char *text, uint32_t *out)
{
	char *end = NULL;
	unsigned long v = strtoul(text ? text : "", &end, 10);
	if (!text || end == text || *end || text[0] == '-' || v > 1000000)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Applies every option to v and cfg (NULL: check only). Returns the number
 * of NAMEs, or -1 (printed) / -2 (--help printed). */
static int verify_args(int argc, char **argv, verify_state *v, rf_config *cfg, char **names)
{
	int n = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(verify_usage, stdout);
			return -2;
		} else if (!strcmp(argv[i], "--quiet"))
			v->quiet = 1;
		else if (!strcmp(argv[i], "--max-reports")) {
			if (parse_count(i + 1 < argc ? argv[++i] : NULL, &v->max_reports) < 0) {
				fprintf(stderr,
				        "ringfeed verify: --max-reports needs 0..1000000\n");
				return -1;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			int used = rf_cli_loader_flag(cfg, argc, argv, i, "verify");
			if (used == 0)
				fprintf(stderr, "ringfeed verify: unknown option '%s'\n%s", argv[i],
				        verify_usage);
			if (used <= 0)
				return -1;
			i += used - 1;
		} else
			names[n++] = argv[i];
	}
	return n;
}

int cmd_verify(int argc, char **argv)
{
	verify_state v = {.max_reports = 100};
	char **names = calloc((size_t)argc + 1, sizeof(*names));
	rf_config *cfg = rf_config_new();
	int n = names && cfg ? verify_args(argc, argv, &v, cfg, names) : -1;
	rf_config_free(cfg);
	if (n == 0)
		fprintf(stderr, "ringfeed verify: missing SHARD\n%s", verify_usage);
	for (int i = 0; i < n; i++) {
		/* a fresh configuration per NAME, with the same options */
		rf_config *one = rf_config_new();
		verify_state quiet = v;
		if (one && verify_args(argc, argv, &quiet, one, names) >= 0)
			verify_name(&v, one, names[i]);
		else {
			printf("  out of memory\n");
			verdict(&v, names[i], -ENOMEM);
		}
		rf_config_free(one);
	}
	free(names);
	if (n <= 0)
		return n == -2 ? 0 : 2;
	printf("verify: %llu shards, %llu damaged\n", (unsigned long long)v.shards,
	       (unsigned long long)v.damaged);
	if (v.shards == 0) {
		printf("verify: nothing was verified\n");
		return 1;
	}
	return v.damaged ? 1 : 0;
}
