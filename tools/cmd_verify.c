/* cmd_verify.c - `ringfeed verify NAME...`: decodes every block of every
 * shard and checks every checksum and structural rule. A NAME is anything
 * `read` takes (files, directories, manifests, http(s):// and s3:// URLs,
 * brace ranges), expanded by the library as a loader expands it, and each
 * shard is read through the library's sources; what a manifest says of a
 * shard (size, records) is checked too. Exit 0 when every shard is sound,
 * 1 otherwise (or when nothing was verified), 2 for usage. Names are shown
 * redacted (rf_url_redact): a URL's password or query never appears. */
#include "commands.h"
#include "flags.h"
#include "json.h"
#include "loader_opts.h"
#include "packer.h"
#include "ringfeed.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char verify_usage[] =
    "usage: ringfeed verify [--max-reports N] [-q|--quiet] [--json] [--jobs N] [loader options]\n"
    "                       NAME...\n"
    "Decodes every block of each shard and checks every checksum and structural rule.\n"
    "A NAME is anything `ringfeed read` takes: a shard, a directory (its manifest.rfm\n"
    "when it has one, else its *.rfs), a manifest (its shards, whose sizes and record\n"
    "counts are checked against it), an http(s):// or s3:// URL or prefix, with {a..b}\n"
    "ranges; loader options such as --s3-endpoint or --ca-file apply to remote shards.\n"
    "Each problem is printed with the shard, block, byte offset and the check that\n"
    "failed (at most N per shard, default 100), then 'ok SHARD' or 'DAMAGED SHARD'\n"
    "(--quiet: only damaged shards, and no progress). A NAME that cannot be expanded\n"
    "(an unreachable or empty manifest) is reported as DAMAGED NAME and counted as a\n"
    "failed name, not as a shard. `--` ends the options.\n"
    "--json: one JSON object instead: {\"shards\", \"damaged\", \"names_failed\",\n"
    "\"not_verified\", \"results\": [{\"path\", \"ok\", \"problems\": [...]}]} (ok null: not\n"
    "verified; with --quiet, only the damaged shards' results).\n"
    "When reading cannot start here at all (the event loop or the fetch layer: e.g.\n"
    "--io-backend io_uring where a container blocks io_uring), the shards are not\n"
    "called damaged: '  setup error (not damage): WHY', then 'NOT VERIFIED SHARD'.\n"
    "Shards are verified --jobs N at once (or --verify-jobs N; default: the CPUs, at\n"
    "least 8 for a remote dataset), each job with its own connections; the report\n"
    "keeps shard order.\n"
    "A run past 2 s says how far it got on stderr every 2 s (not with --quiet).\n"
    "Exit status: 0 all sound, 1 a shard is damaged or unreadable or a NAME expands\n"
    "to no shard, 2 bad usage (no NAME given included), 3 nothing damaged but some\n"
    "shards not verified: a setup error of this environment, not of the data.\n";

typedef struct verify_state {
	uint32_t max_reports;
	int quiet, json;
	uint64_t shards, damaged, names_failed;
	uint64_t unverified; /* shards a setup error left unread (not damage) */
	bool mixture;        /* --mixture FILE: its sources are the NAME */
	/* progress on stderr: shards listed so far, when the run began, when
	 * it last said how far it got (0: never) */
	uint64_t listed, t0_ns, said_ns;
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

static void say(const verify_state *v, const char *name, int rc)
{
	char shown[4200];
	if (rc < 0 || !v->quiet)
		printf("%s %s\n", rc == 0 ? "ok" : "DAMAGED",
		       flag_shown(name, shown, sizeof(shown)));
}

/* How far the run got, on stderr: every 2 s once it has run 2 s, and at
 * its end when it said anything before (never with --quiet). */
static void progress(verify_state *v, bool last)
{
	uint64_t now = rf_tool_now_ns();
	if (v->quiet || (last ? v->said_ns == 0
	                      : now - v->t0_ns < 2000000000ull || now - v->said_ns < 2000000000ull))
		return;
	v->said_ns = now;
	fprintf(stderr, "ringfeed verify: %llu of %llu shards, %llu damaged, %.0f s%s\n",
	        (unsigned long long)v->shards, (unsigned long long)v->listed,
	        (unsigned long long)v->damaged, (double)(now - v->t0_ns) / 1e9,
	        last ? " (done)" : "");
}

static void verdict(verify_state *v, const char *name, int rc)
{
	v->shards++;
	if (rc < 0)
		v->damaged++;
	say(v, name, rc);
	progress(v, false);
}

/* A NAME that did not expand to shards: reported, not counted as a shard. */
static void name_failed(verify_state *v, const char *name, const char *msg)
{
	printf("  %s\n", msg); /* the library's messages show names redacted */
	v->names_failed++;
	say(v, name, -EINVAL);
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
	if ((name && rf_config_add_url(cfg, name, &err) < 0) ||
	    rf_config_shards(cfg, &refs, &n, &err) < 0) {
		name_failed(v, name ? name : "the mixture's sources", err.msg);
		return;
	}
	v->listed += n;
	verify_name_run r = {.v = v, .refs = refs};
	if (rf_verify_shards(cfg, refs, n, report, on_done, &r, v->max_reports, &err) < 0 &&
	    r.done < n) /* the loop or fetch layer could not start: nothing was read */
		printf("  setup error (not damage): %s\n", err.msg);
	char shown[4200];
	for (size_t i = r.done; i < n; i++) {
		v->unverified++;
		printf("NOT VERIFIED %s\n", flag_shown(refs[i].name, shown, sizeof(shown)));
	}
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

/* Applies every option to v and cfg. Returns the number
 * of NAMEs, or -1 (printed) / -2 (--help printed). */
static int verify_args(int argc, char **argv, verify_state *v, rf_config *cfg, char **names)
{
	int n = 0;
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		if (!opts || argv[i][0] != '-' || !argv[i][1])
			names[n++] = argv[i];
		else if (!strcmp(argv[i], "--"))
			opts = false;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(verify_usage, stdout);
			return -2;
		} else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q"))
			v->quiet = 1;
		else if (!strcmp(argv[i], "--json"))
			v->json = 1;
		else if (!strcmp(argv[i], "--max-reports")) {
			if (parse_count(i + 1 < argc ? argv[++i] : NULL, &v->max_reports) < 0) {
				fprintf(stderr,
				        "ringfeed verify: --max-reports needs 0..1000000\n");
				return -1;
			}
		} else if (!strcmp(argv[i], "--jobs")) { /* as index takes it: verify_jobs */
			rf_error err = {0};
			const char *val = i + 1 < argc ? argv[++i] : "";
			if (rf_config_set(cfg, "verify_jobs", val, &err) < 0) {
				fprintf(stderr, "ringfeed verify: --jobs: %s\n", err.msg);
				return -1;
			}
		} else {
			if (!strncmp(argv[i], "--mixture", 9))
				v->mixture = true;
			int used = rf_cli_loader_flag(cfg, argc, argv, i, "verify");
			if (used == 0)
				fprintf(stderr, "ringfeed verify: unknown option '%s'\n%s", argv[i],
				        verify_usage);
			if (used <= 0)
				return -1;
			i += used - 1;
		}
	}
	return n;
}

/* Every NAME, each with a fresh configuration holding the same options;
 * the report's lines on stdout, the summary last. */
static int verify_all(int argc, char **argv, verify_state *vp, char **names, int n)
{
	verify_state v = *vp;
	v.t0_ns = rf_tool_now_ns();
	for (int i = 0; i < n; i++) {
		rf_config *one = rf_config_new();
		verify_state quiet = v;
		if (one && verify_args(argc, argv, &quiet, one, names) >= 0)
			verify_name(&v, one, names[i]);
		else {
			printf("  out of memory\n");
			verdict(&v, names[i] ? names[i] : "the mixture", -ENOMEM);
		}
		rf_config_free(one);
	}
	progress(&v, true);
	printf("verify: %llu shards, %llu damaged", (unsigned long long)v.shards,
	       (unsigned long long)v.damaged);
	if (v.names_failed)
		printf(", %llu name%s failed", (unsigned long long)v.names_failed,
		       v.names_failed == 1 ? "" : "s");
	if (v.unverified)
		printf(", %llu not verified (a setup error here, not damage)",
		       (unsigned long long)v.unverified);
	printf("\n");
	*vp = v;
	if (v.names_failed || v.damaged)
		return 1;
	if (v.unverified)
		return 3;
	if (v.shards == 0) {
		printf("verify: nothing was verified\n");
		return 1;
	}
	return v.damaged ? 1 : 0;
}

/* --json: the report's lines as one JSON object. The report has a fixed
 * shape (each problem indented by two spaces, then "ok PATH" or "DAMAGED
 * PATH" for its shard, a "verify: ..." summary last), so the JSON always says
 * what the text says. */
static void json_results(const char *text, size_t len, const verify_state *v)
{
	printf("{\"shards\":%llu,\"damaged\":%llu,\"names_failed\":%llu,\"not_verified\":%llu,"
	       "\"results\":[",
	       (unsigned long long)v->shards, (unsigned long long)v->damaged,
	       (unsigned long long)v->names_failed, (unsigned long long)v->unverified);
	const char *p = text, *end = text + len;
	int results = 0, problems = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[8192];
		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1),
		         p);
		p += n + 1;
		bool ok = !strncmp(line, "ok ", 3), bad = !strncmp(line, "DAMAGED ", 8);
		bool unread = !strncmp(line, "NOT VERIFIED ", 13);
		if (!strncmp(line, "  ", 2)) {
			printf("%s", problems++
			                 ? ","
			                 : (results ? ",{\"problems\":[" : "{\"problems\":["));
			rf_json_fput(stdout, line + 2);
		} else if (ok || bad || unread) {
			if (!problems)
				printf("%s{\"problems\":[", results ? "," : "");
			printf("],\"path\":");
			rf_json_fput(stdout, line + (ok ? 3 : bad ? 8 : 13));
			printf(",\"ok\":%s}", ok ? "true" : bad ? "false" : "null");
			results++;
			problems = 0;
		}
	}
	if (problems) /* problems without a result line (none today): keep them */
		printf("],\"path\":null,\"ok\":false}");
	printf("]}\n");
}

/* Runs the verification with stdout captured, then prints it as JSON. */
static int verify_json(int argc, char **argv, verify_state *v, char **names, int n)
{
	char *text = NULL;
	size_t len = 0;
	fflush(stdout);
	FILE *mem = open_memstream(&text, &len);
	if (!mem) {
		fprintf(stderr, "ringfeed verify: out of memory\n");
		return 1;
	}
	FILE *out = stdout;
	stdout = mem;
	int rc = verify_all(argc, argv, v, names, n);
	stdout = out;
	fclose(mem);
	json_results(text, len, v);
	free(text);
	return rc;
}

int cmd_verify(int argc, char **argv)
{
	verify_state v = {.max_reports = 100};
	char **names = calloc((size_t)argc + 1, sizeof(*names));
	rf_config *cfg = rf_config_new();
	int n = names && cfg ? verify_args(argc, argv, &v, cfg, names) : -1;
	rf_config_free(cfg);
	if (n == 0 && v.mixture)
		names[n++] = NULL; /* one pass over the mixture's sources */
	if (n == 0)
		fprintf(stderr, "ringfeed verify: missing NAME\n%s", verify_usage);
	int rc = n == -2 ? 0 : 2;
	if (n > 0)
		rc = v.json ? verify_json(argc, argv, &v, names, n)
		            : verify_all(argc, argv, &v, names, n);
	free(names);
	return rc;
}
