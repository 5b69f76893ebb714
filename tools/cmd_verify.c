/* cmd_verify.c - `ringfeed verify SHARD|MANIFEST...`: decodes every block of
 * every shard and checks every checksum and structural rule; a manifest
 * stands for the shards it lists (and their sizes and record counts are
 * checked against it). Exit 0 when all are sound, 1 otherwise, 2 for usage. */
#include "commands.h"
#include "packer.h"
#include "ringfeed.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char verify_usage[] =
    "usage: ringfeed verify [--max-reports N] [-q|--quiet] [--json] SHARD|MANIFEST...\n"
    "Decodes every block of each shard (a manifest stands for the shards it lists) and\n"
    "checks every checksum and structural rule. Each problem is printed with the shard,\n"
    "block, byte offset and the check that failed (at most N per shard, default 100),\n"
    "then 'ok PATH' or 'DAMAGED PATH' (--quiet: only damaged shards).\n"
    "--json: one JSON object instead: {\"shards\", \"damaged\", \"results\": [{\"path\",\n"
    "\"ok\", \"problems\": [...]}]} (with --quiet, only the damaged shards' results).\n"
    "Exit status: 0 all sound, 1 a shard is damaged or unreadable, 2 bad usage.\n";

typedef struct verify_state {
	uint32_t max_reports;
	int quiet;
	uint64_t shards, damaged;
} verify_state;

static void report(void *ctx, const rf_error *e)
{
	(void)ctx;
	printf("  %s\n", e->msg);
}

/* expect_bytes / expect_records: UINT64_MAX when no manifest says. */
static void verify_one(verify_state *v, const char *path, uint64_t expect_bytes,
                       uint64_t expect_records)
{
	v->shards++;
	rf_error err = {0};
	int rc = rf_shard_verify(path, report, NULL, v->max_reports, &err);
	struct stat st;
	rf_shard_index *ix = NULL;
	if (rc == 0 && expect_bytes != UINT64_MAX && stat(path, &st) == 0 &&
	    (uint64_t)st.st_size != expect_bytes) {
		printf("  shard %s: file is %llu bytes, the manifest says %llu\n", path,
		       (unsigned long long)st.st_size, (unsigned long long)expect_bytes);
		rc = -EBADMSG;
	}
	if (rc == 0 && expect_records != UINT64_MAX && rf_index_read_file(path, &ix, &err) == 0 &&
	    ix->records != expect_records) {
		printf("  shard %s: holds %llu records, the manifest says %llu\n", path,
		       (unsigned long long)ix->records, (unsigned long long)expect_records);
		rc = -EBADMSG;
	}
	rf_index_free(ix);
	if (rc < 0)
		v->damaged++;
	if (rc < 0 || !v->quiet)
		printf("%s %s\n", rc == 0 ? "ok" : "DAMAGED", path);
}

static void verify_manifest(verify_state *v, const char *path)
{
	rf_manifest *m = NULL;
	rf_error err = {0};
	if (rf_manifest_read_file(path, &m, &err) < 0) {
		printf("  %s\nDAMAGED %s\n", err.msg, path);
		v->shards++;
		v->damaged++;
		return;
	}
	for (size_t i = 0; i < m->count; i++) {
		const rf_manifest_entry *e = &m->entry[i];
		if (strstr(e->url, "://")) {
			printf("  %s: verify reads local shards only (listed in %s)\nDAMAGED %s\n",
			       e->url, path, e->url);
			v->shards++;
			v->damaged++;
			continue;
		}
		verify_one(v, e->url, e->bytes, e->records);
	}
	rf_manifest_free(m);
}

static int is_manifest(const char *path)
{
	char head[64];
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(head, 1, sizeof(head), f);
	fclose(f);
	return rf_manifest_is(head, n);
}

static int verify_all(int argc, char **argv, int first, verify_state *vp);

static int parse_count(const char *text, uint32_t *out)
{
	char *end = NULL;
	unsigned long v = strtoul(text ? text : "", &end, 10);
	if (!text || end == text || *end || text[0] == '-' || v > 1000000)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* --json: the report's lines as one JSON object. The report has a fixed
 * shape (each problem indented by two spaces, then "ok PATH" or "DAMAGED
 * PATH" for its shard, a "verify: ..." summary last), so the JSON always says
 * what the text says. */
static void json_results(const char *text, size_t len, uint64_t shards, uint64_t damaged)
{
	printf("{\"shards\":%llu,\"damaged\":%llu,\"results\":[", (unsigned long long)shards,
	       (unsigned long long)damaged);
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
		if (!strncmp(line, "  ", 2)) {
			printf("%s", problems++
			                 ? ","
			                 : (results ? ",{\"problems\":[" : "{\"problems\":["));
			rf_tool_json_str(stdout, line + 2);
		} else if (ok || bad) {
			if (!problems)
				printf("%s{\"problems\":[", results ? "," : "");
			printf("],\"path\":");
			rf_tool_json_str(stdout, line + (ok ? 3 : 8));
			printf(",\"ok\":%s}", ok ? "true" : "false");
			results++;
			problems = 0;
		}
	}
	if (problems) /* problems without a result line (none today): keep them */
		printf("],\"path\":null,\"ok\":false}");
	printf("]}\n");
}

/* Runs the verification with stdout captured, then prints it as JSON. */
static int verify_json(int argc, char **argv, int first, verify_state *v);

int cmd_verify(int argc, char **argv)
{
	verify_state v = {.max_reports = 100};
	int first = 0, json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(verify_usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q"))
			v.quiet = 1;
		else if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--max-reports")) {
			if (parse_count(i + 1 < argc ? argv[++i] : NULL, &v.max_reports) < 0) {
				fprintf(stderr,
				        "ringfeed verify: --max-reports needs 0..1000000\n");
				return 2;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "ringfeed verify: unknown option '%s'\n%s", argv[i],
			        verify_usage);
			return 2;
		} else if (!first)
			first = i;
	}
	if (!first) {
		fprintf(stderr, "ringfeed verify: missing SHARD\n%s", verify_usage);
		return 2;
	}
	if (json)
		return verify_json(argc, argv, first, &v);
	return verify_all(argc, argv, first, &v);
}

static int verify_all(int argc, char **argv, int first, verify_state *vp)
{
	verify_state v = *vp;
	for (int i = first; i < argc; i++) {
		if (!strcmp(argv[i], "--max-reports")) {
			i++;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1])
			continue;
		if (is_manifest(argv[i]))
			verify_manifest(&v, argv[i]);
		else
			verify_one(&v, argv[i], UINT64_MAX, UINT64_MAX);
	}
	printf("verify: %llu shards, %llu damaged\n", (unsigned long long)v.shards,
	       (unsigned long long)v.damaged);
	*vp = v;
	return v.damaged ? 1 : 0;
}

static int verify_json(int argc, char **argv, int first, verify_state *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	fflush(stdout);
	if (!mem) {
		fprintf(stderr, "ringfeed verify: out of memory\n");
		return 1;
	}
	FILE *out = stdout;
	stdout = mem;
	int rc = verify_all(argc, argv, first, v);
	stdout = out;
	fclose(mem);
	json_results(text, len, v->shards, v->damaged);
	free(text);
	return rc;
}
