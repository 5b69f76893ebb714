/* cmd_index.c - `ringfeed index DATASET...`: writes a WebDataset index file
 * (DALI's wds2idx v1.2 format) for every local .tar shard of each DATASET,
 * PREFIX.idx beside PREFIX.tar (or in -o DIR), so that opening the tar reads
 * the index instead of its headers; `--check` verifies the index files
 * already there against their tars instead. A DATASET is anything `read`
 * takes that is local (files, directories, manifests); writing needs a
 * local dataset, so a remote URL is refused. Progress on stderr; the
 * report (one line per shard, or --json) on stdout. */
#include "commands.h"
#include "flags.h"
#include "json.h"
#include "ringfeed.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char index_usage[] =
    "usage: ringfeed index [--check] [-o DIR] [-q|--quiet] [--json] DATASET...\n"
    "Writes a WebDataset index file for each local .tar shard of each DATASET (a\n"
    "shard, a directory, a manifest: as `ringfeed read` takes them): PREFIX.idx beside\n"
    "PREFIX.tar, in DALI's wds2idx v1.2 format (DALI's webdataset reader takes it\n"
    "too). Opening a tar with an index reads the index, not the tar's headers.\n"
    "Each is written atomically (a temporary file, renamed). Shards of other formats\n"
    "are skipped. Remote datasets (http(s)://, s3://) are refused: writing needs a\n"
    "local dataset.\n"
    "  -o DIR     write the index files into DIR (named after their tars)\n"
    "  --check    write nothing: check each tar's existing index file against the\n"
    "             tar, and name the stale or missing ones\n"
    "  -q         print only problems\n"
    "  --json     one JSON object: {\"shards\", \"written\", \"ok\", \"stale\",\n"
    "             \"failed\", \"results\": [{\"shard\", \"index\", \"status\", \"error\"}]}\n"
    "Exit status: 0 every index written (or, with --check, every one sound), 1 a\n"
    "shard failed or an index is stale or missing, 2 bad usage.\n";

typedef struct index_run {
	bool check, quiet, json;
	const char *out_dir;
	uint64_t shards, written, ok, stale, failed;
	bool first_result;
} index_run;

static bool is_remote(const char *name)
{
	return strstr(name, "://") && strncmp(name, "file://", 7) != 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n > m && !strcmp(s + n - m, suffix);
}

/* PREFIX.idx beside PREFIX.tar, or DIR/PREFIX.idx (malloc'd). */
static char *index_path(const index_run *r, const char *tar)
{
	const char *base = r->out_dir ? strrchr(tar, '/') : NULL;
	base = r->out_dir ? (base ? base + 1 : tar) : tar;
	size_t dl = r->out_dir ? strlen(r->out_dir) + 1 : 0, bl = strlen(base);
	char *p = malloc(dl + bl + 1);
	if (!p)
		return NULL;
	if (r->out_dir)
		snprintf(p, dl + 1, "%s/", r->out_dir);
	memcpy(p + dl, base, bl + 1);
	memcpy(p + dl + bl - 4, ".idx", 4);
	return p;
}

static void result(index_run *r, const char *tar, const char *idx, const char *status,
                   const char *msg)
{
	if (r->json) {
		printf("%s{\"shard\":", r->first_result ? "" : ",");
		rf_json_fput(stdout, tar);
		printf(",\"index\":");
		if (idx)
			rf_json_fput(stdout, idx);
		else
			printf("null");
		printf(",\"status\":\"%s\",\"error\":", status);
		if (msg)
			rf_json_fput(stdout, msg);
		else
			printf("null");
		printf("}");
		r->first_result = false;
		return;
	}
	if (msg)
		printf("  %s\n", msg);
	if (msg || !r->quiet)
		printf("%s %s%s%s\n", status, tar, idx ? " -> " : "", idx ? idx : "");
}

static void one_shard(index_run *r, const char *tar)
{
	rf_error err = {0};
	char *idx = index_path(r, tar);
	r->shards++;
	if (!idx) {
		r->failed++;
		result(r, tar, NULL, "FAILED", "out of memory");
		return;
	}
	fprintf(stderr, "ringfeed index: %s %s\n", r->check ? "checking" : "writing", idx);
	int rc = r->check ? rf_tar_index_check(tar, idx, &err) : rf_tar_index_build(tar, idx, &err);
	if (rc == 0) {
		r->check ? r->ok++ : r->written++;
		result(r, tar, idx, r->check ? "ok" : "wrote", NULL);
	} else if (r->check && (rc == RF_E_CORRUPT || rc == -ENOENT)) {
		r->stale++;
		result(r, tar, idx, rc == -ENOENT ? "MISSING" : "STALE", err.msg);
	} else {
		r->failed++;
		result(r, tar, idx, "FAILED", err.msg);
	}
	free(idx);
}

/* One DATASET: its shards as `read` expands them; the local .tar ones. */
static void one_dataset(index_run *r, const char *name)
{
	rf_error err = {0};
	char shown[4200];
	if (is_remote(name)) {
		r->failed++;
		result(r, flag_shown(name, shown, sizeof(shown)), NULL, "FAILED",
		       "a remote dataset: index files are written beside local tars (copy the "
		       "dataset, index it, and upload the .idx files beside the .tar files)");
		return;
	}
	rf_config *cfg = rf_config_new();
	rf_shard_ref *refs = NULL;
	size_t n = 0;
	if (!cfg || rf_config_add_url(cfg, name, &err) < 0 ||
	    rf_config_shards(cfg, &refs, &n, &err) < 0) {
		r->failed++;
		result(r, flag_shown(name, shown, sizeof(shown)), NULL, "FAILED",
		       cfg ? err.msg : "out of memory");
		rf_config_free(cfg);
		return;
	}
	size_t tars = 0;
	for (size_t i = 0; i < n; i++) {
		const char *u = refs[i].url;
		if (!strncmp(u, "file://", 7))
			u += 7;
		if (is_remote(u) || !ends_with(u, ".tar"))
			continue;
		tars++;
		one_shard(r, u);
	}
	if (tars == 0) {
		r->failed++;
		result(r, flag_shown(name, shown, sizeof(shown)), NULL, "FAILED",
		       "no local .tar shards in this dataset");
	}
	rf_shard_refs_free(refs, n);
	rf_config_free(cfg);
}

/* Returns the number of DATASETs, -1 (printed) or -2 (--help printed). */
static int index_args(int argc, char **argv, index_run *r, char **names)
{
	int n = 0;
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!opts || a[0] != '-' || !a[1])
			names[n++] = argv[i];
		else if (!strcmp(a, "--"))
			opts = false;
		else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(index_usage, stdout);
			return -2;
		} else if (!strcmp(a, "--check"))
			r->check = true;
		else if (!strcmp(a, "--json"))
			r->json = true;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			r->quiet = true;
		else if (!strcmp(a, "-o") && i + 1 < argc && argv[i + 1][0])
			r->out_dir = argv[++i];
		else {
			fprintf(stderr, "ringfeed index: %s '%s'\n%s",
			        !strcmp(a, "-o") ? "-o needs a DIR:" : "unknown option", a,
			        index_usage);
			return -1;
		}
	}
	return n;
}

int cmd_index(int argc, char **argv)
{
	index_run r = {.first_result = true};
	char **names = calloc((size_t)argc + 1, sizeof(*names));
	int n = names ? index_args(argc, argv, &r, names) : -1;
	if (n == 0)
		fprintf(stderr, "ringfeed index: missing DATASET\n%s", index_usage);
	if (n <= 0) {
		free(names);
		return n == -2 ? 0 : 2;
	}
	if (r.json)
		printf("{\"results\":[");
	for (int i = 0; i < n; i++)
		one_dataset(&r, names[i]);
	if (r.json)
		printf("],\"shards\":%llu,\"written\":%llu,\"ok\":%llu,\"stale\":%llu,"
		       "\"failed\":%llu}\n",
		       (unsigned long long)r.shards, (unsigned long long)r.written,
		       (unsigned long long)r.ok, (unsigned long long)r.stale,
		       (unsigned long long)r.failed);
	else
		printf("index: %llu shards, %llu %s, %llu stale or missing, %llu failed\n",
		       (unsigned long long)r.shards,
		       (unsigned long long)(r.check ? r.ok : r.written),
		       r.check ? "sound" : "written", (unsigned long long)r.stale,
		       (unsigned long long)r.failed);
	free(names);
	return r.stale || r.failed ? 1 : 0;
}
