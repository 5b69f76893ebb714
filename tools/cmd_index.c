/* cmd_index.c - `ringfeed index DATASET...`: writes a WebDataset index file
 * (DALI's wds2idx v1.2 format) for every .tar shard of each DATASET,
 * PREFIX.idx beside PREFIX.tar (or in -o DIR), so that opening the tar reads
 * the index instead of its headers; `--check` verifies the index files
 * already there against their tars instead. A DATASET is anything `read`
 * takes (files, directories, manifests, URLs, S3 prefixes, with the
 * loader's flags); a remote one's tars are scanned through the fetch layer
 * and their index files written into -o DIR, which it needs (the loader
 * writes nothing to a store). Progress on stderr; the report (one line per
 * shard, or --json) on stdout. */
#include "commands.h"
#include "flags.h"
#include "json.h"
#include "loader_opts.h"
#include "ringfeed.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char index_usage[] =
    "usage: ringfeed index [--check] [-o DIR] [-q|--quiet] [--json] [--jobs N] [LOADER FLAGS]\n"
    "                      DATASET...\n"
    "       ringfeed index --bundle [-q] MANIFEST...\n"
    "Writes a WebDataset index file for each .tar shard of each DATASET (a shard, a\n"
    "directory, a manifest, a URL, an S3 prefix: as `ringfeed read` takes them):\n"
    "PREFIX.idx beside PREFIX.tar, in DALI's wds2idx v1.2 format (DALI's webdataset\n"
    "reader takes it too). Opening a tar with an index reads the index, not the\n"
    "tar's headers. Each is written atomically (a temporary file, renamed). Shards\n"
    "of other formats are skipped. A remote dataset (http(s)://, s3://) is scanned\n"
    "through the loader's fetch layer (its flags: --s3-endpoint, credentials,\n"
    "retries, as `read` takes them) and needs -o DIR: upload the files beside the\n"
    "tars (a read-only store needs none: the index cache keeps layouts).\n"
    "A local PREFIX.tfrecord gets PREFIX.idx in DALI's tfrecord2idx format\n"
    "(OFFSET SIZE per record), which the open reads instead of walking the file.\n"
    "  -o DIR     write the index files into DIR (named after their tars)\n"
    "  --check    write nothing: check each local tar's existing index file\n"
    "             against the tar, and name the stale or missing ones\n"
    "  -q         print only problems\n"
    "  --jobs N   shards indexed at once, 1..64 (default: the CPUs, at least 8 for a\n"
    "             remote dataset); the report keeps the dataset's order\n"
    "  --json     one JSON object: {\"shards\", \"written\", \"ok\", \"stale\",\n"
    "             \"failed\", \"results\": [{\"shard\", \"index\", \"status\", \"error\"}]}\n"
    "  --bundle   write the index bundle of each MANIFEST of local .rfs shards (a\n"
    "             directory: its manifest.rfm) beside it, NAME.rfx for NAME.rfm: every\n"
    "             shard's footer and index in one file, which a loader reads instead\n"
    "             of one request per shard (pack writes it; this writes it for a\n"
    "             manifest made another way, or again after the shards changed)\n"
    "Exit status: 0 every index written (or, with --check, every one sound), 1 a\n"
    "shard failed or an index is stale or missing, 2 bad usage.\n";

typedef struct index_run {
	bool check, quiet, json, bundle;
	uint32_t jobs; /* --jobs: shards at once (0: the CPUs, at least 8 when remote) */
	const char *out_dir;
	uint64_t shards, written, ok, stale, failed;
	bool first_result;
	/* -o DIR: the index files written so far, so that two tars of one
	 * basename (in different directories or stores) are an error, not
	 * one index silently written over the other's */
	char **seen;
	size_t seen_n, seen_cap; /* an open-addressed set, cap a power of 2 */
} index_run;

/* The slot of name in a set of cap slots: where it is, or the empty one
 * where it goes. */
static size_t seen_slot(char *const *v, size_t cap, const char *name)
{
	size_t k = rf_fnv1a(RF_FNV_OFFSET, name, strlen(name)) & (cap - 1);
	while (v[k] && strcmp(v[k], name))
		k = (k + 1) & (cap - 1);
	return k;
}

/* Adds idx to the set: 1 when it was there already, 0 added, -1 no memory. */
static int seen_add(index_run *r, const char *idx)
{
	if (2 * (r->seen_n + 1) > r->seen_cap) { /* at most half full */
		size_t cap = r->seen_cap ? 2 * r->seen_cap : 64;
		char **v = calloc(cap, sizeof(*v));
		if (!v)
			return -1;
		for (size_t i = 0; i < r->seen_cap; i++)
			if (r->seen[i])
				v[seen_slot(v, cap, r->seen[i])] = r->seen[i];
		free(r->seen);
		r->seen = v;
		r->seen_cap = cap;
	}
	size_t k = seen_slot(r->seen, r->seen_cap, idx);
	if (r->seen[k])
		return 1;
	if (!(r->seen[k] = strdup(idx)))
		return -1;
	r->seen_n++;
	return 0;
}

static void seen_free(index_run *r)
{
	for (size_t i = 0; i < r->seen_cap; i++)
		free(r->seen[i]);
	free(r->seen);
}

static bool is_remote(const char *name)
{
	return strstr(name, "://") && strncmp(name, "file://", 7) != 0;
}

/* The length of a URL's path part (no query or fragment). */
static size_t path_len(const char *u)
{
	return strcspn(u, is_remote(u) ? "?#" : "");
}

/* The suffix an indexed shard's path ends with (a URL's query left out):
 * ".tar", or ".tfrecord" / ".tfrecords" (DALI's tfrecord2idx index: this
 * writer names the format because the index files are the user's, written
 * beside the shards, which the seam's formats never do), else NULL. */
static const char *indexed_suffix(const char *u)
{
	static const char *const sfx[] = {".tar", ".tfrecord", ".tfrecords"};
	size_t n = path_len(u);
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t k = strlen(sfx[i]);
		if (n > k && !memcmp(u + n - k, sfx[i], k))
			return sfx[i];
	}
	return NULL;
}

static bool tar_path(const char *u)
{
	const char *s = indexed_suffix(u);
	return s && !strcmp(s, ".tar");
}

/* PREFIX.idx beside PREFIX.tar, or DIR/PREFIX.idx (malloc'd; a URL's query
 * left out). */
static char *index_path(const index_run *r, const char *tar)
{
	size_t tn = path_len(tar);
	const char *base = tar;
	for (size_t i = 0; r->out_dir && i < tn; i++)
		if (tar[i] == '/')
			base = tar + i + 1;
	size_t dl = r->out_dir ? strlen(r->out_dir) + 1 : 0, bl = (size_t)(tar + tn - base);
	const char *sfx = indexed_suffix(tar);
	size_t cut = sfx ? strlen(sfx) : 4;
	char *p = malloc(dl + bl + 1);
	if (!p)
		return NULL;
	if (r->out_dir)
		snprintf(p, dl + 1, "%s/", r->out_dir);
	memcpy(p + dl, base, bl - cut);
	memcpy(p + dl + bl - cut, ".idx", 5);
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

/* One .tar (or .tfrecord) of a dataset: a local path, or (ref set) a
 * remote one, shown by its redacted name. Its index is built (or checked)
 * by a job; the results are printed in the dataset's order. */
typedef struct index_task {
	const rf_shard_ref *ref;
	char *tar, *idx;     /* shown name or local path; the index file (owned) */
	const char *refused; /* refused before any work (no idx, a name taken twice) */
	int rc;
	rf_error err;
	bool done;
} index_task;

typedef struct index_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const index_run *r;
	const rf_config *cfg;
	index_task *t;
	size_t n, next;
} index_pool;

static void task_build(const index_run *r, const rf_config *cfg, index_task *t)
{
	const rf_shard_ref *ref = t->ref;
	fprintf(stderr, "ringfeed index: %s %s\n", r->check ? "checking" : "writing", t->idx);
	bool tfr = !tar_path(ref ? ref->url : t->tar);
	rf_error *err = &t->err;
	int rc = tfr && ref        ? -EOPNOTSUPP
	         : tfr && r->check ? rf_tfrecord_index_check(t->tar, t->idx, err)
	         : tfr             ? rf_tfrecord_index_build(t->tar, t->idx, err)
	         : ref             ? rf_tar_index_build_ref(cfg, ref, t->idx, err)
	         : r->check        ? rf_tar_index_check(t->tar, t->idx, err)
	                           : rf_tar_index_build(t->tar, t->idx, err);
	if (rc == -EOPNOTSUPP && tfr && ref)
		snprintf(err->msg, sizeof(err->msg),
		         "a remote TFRecord: index a local copy (its index file is the same)");
	t->rc = rc;
}

/* A task's result, counted and printed (the caller's thread, in order). */
static void task_result(index_run *r, index_task *t)
{
	r->shards++;
	if (t->refused) {
		r->failed++;
		result(r, t->tar, t->idx, "FAILED", t->refused);
	} else if (t->rc == 0) {
		r->check ? r->ok++ : r->written++;
		result(r, t->tar, t->idx, r->check ? "ok" : "wrote", NULL);
	} else if (r->check && (t->rc == RF_E_CORRUPT || t->rc == -ENOENT)) {
		r->stale++;
		result(r, t->tar, t->idx, t->rc == -ENOENT ? "MISSING" : "STALE", t->err.msg);
	} else {
		r->failed++;
		result(r, t->tar, t->idx, "FAILED", t->err.msg);
	}
}

static void *pool_main(void *arg)
{
	index_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	while (p->next < p->n) {
		index_task *t = &p->t[p->next++];
		pthread_mutex_unlock(&p->mu);
		if (!t->refused)
			task_build(p->r, p->cfg, t);
		pthread_mutex_lock(&p->mu);
		t->done = true;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Jobs for n tasks: --jobs, or the CPUs (at least 8 when one is remote:
 * a remote scan waits on the store), never more than the tasks. */
static uint32_t pool_jobs(const index_run *r, const index_task *t, size_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t jobs = r->jobs ? r->jobs : (uint32_t)(cpus > 0 ? (cpus < 64 ? cpus : 64) : 1);
	for (size_t i = 0; !r->jobs && i < n && jobs < 8; i++)
		if (t[i].ref)
			jobs = 8;
	return n < jobs ? (uint32_t)(n ? n : 1) : jobs;
}

/* Every task built (jobs at once) and its result printed in order. */
static void run_tasks(index_run *r, const rf_config *cfg, index_task *t, size_t n)
{
	index_pool p = {.r = r, .cfg = cfg, .t = t, .n = n};
	uint32_t jobs = pool_jobs(r, t, n), started = 0;
	pthread_t *tid = jobs > 1 ? calloc(jobs, sizeof(*tid)) : NULL;
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	for (uint32_t k = 0; tid && k < jobs; k++, started++)
		if (pthread_create(&tid[k], NULL, pool_main, &p) != 0)
			break;
	if (started == 0) /* one job (or no thread): this thread does the work */
		pool_main(&p);
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&p.mu);
		while (!t[i].done)
			pthread_cond_wait(&p.cv, &p.mu);
		pthread_mutex_unlock(&p.mu);
		task_result(r, &t[i]);
	}
	for (uint32_t k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	free(tid);
	pthread_cond_destroy(&p.cv);
	pthread_mutex_destroy(&p.mu);
}

static int index_args(int argc, char **argv, index_run *r, rf_config *cfg, char **names);

/* One DATASET (with its own configuration holding the loader flags): its
 * shards as `read` expands them; the .tar ones. */
static void one_dataset(index_run *r, int argc, char **argv, const char *name)
{
	rf_error err = {0};
	char shown[4200];
	const char *why = NULL;
	if (is_remote(name) && r->check)
		why = "a remote dataset: --check reads index files beside local tars (read the "
		      "dataset: a stale index is named there)";
	else if (is_remote(name) && !r->out_dir)
		why = "a remote dataset: the loader writes nothing to a store; give -o DIR to "
		      "write its index files here, then upload them beside the .tar files";
	if (why) {
		r->failed++;
		result(r, flag_shown(name, shown, sizeof(shown)), NULL, "FAILED", why);
		return;
	}
	rf_config *cfg = rf_config_new();
	index_run scratch = *r;
	char **unused = calloc((size_t)argc + 1, sizeof(*unused));
	rf_shard_ref *refs = NULL;
	size_t n = 0;
	bool flags = cfg && unused && index_args(argc, argv, &scratch, cfg, unused) >= 0;
	free(unused);
	if (!flags || rf_config_add_url(cfg, name, &err) < 0 ||
	    rf_config_shards(cfg, &refs, &n, &err) < 0) {
		r->failed++;
		result(r, flag_shown(name, shown, sizeof(shown)), NULL, "FAILED",
		       flags ? err.msg : "out of memory");
		rf_config_free(cfg);
		return;
	}
	size_t tars = 0;
	index_task *t = calloc(n ? n : 1, sizeof(*t));
	for (size_t i = 0; t && i < n; i++) {
		const char *u = refs[i].url;
		if (!strncmp(u, "file://", 7))
			u += 7;
		if (!indexed_suffix(u))
			continue;
		bool remote = is_remote(u);
		index_task *k = &t[tars++];
		k->ref = remote ? &refs[i] : NULL;
		k->tar = strdup(
		    remote ? flag_shown(refs[i].name ? refs[i].name : u, shown, sizeof(shown)) : u);
		k->idx = index_path(r, remote ? refs[i].url : u);
		int dup = k->idx && r->out_dir && !r->check ? seen_add(r, k->idx) : 0;
		if (!k->tar || !k->idx || dup < 0)
			k->refused = "out of memory";
		else if (dup > 0)
			k->refused =
			    "another tar of this run has the same name: its index file in -o "
			    "DIR would be written over (index the two apart)";
	}
	if (t)
		run_tasks(r, cfg, t, tars);
	else {
		r->failed++;
		result(r, flag_shown(name, shown, sizeof(shown)), NULL, "FAILED", "out of memory");
	}
	for (size_t i = 0; t && i < tars; i++) {
		free(t[i].tar);
		free(t[i].idx);
	}
	free(t);
	if (t && tars == 0) {
		r->failed++;
		result(r, flag_shown(name, shown, sizeof(shown)), NULL, "FAILED",
		       "no .tar or .tfrecord shards in this dataset");
	}
	rf_shard_refs_free(refs, n);
	rf_config_free(cfg);
}

/* Applies every option to r and cfg (loader flags). Returns the number of
 * DATASETs, -1 (printed) or -2 (--help printed). */
static int index_args(int argc, char **argv, index_run *r, rf_config *cfg, char **names)
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
		else if (!strcmp(a, "--bundle"))
			r->bundle = true;
		else if (!strcmp(a, "--json"))
			r->json = true;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			r->quiet = true;
		else if (!strcmp(a, "--jobs")) {
			char *end = NULL;
			const char *v = i + 1 < argc ? argv[++i] : "";
			unsigned long j = strtoul(v, &end, 10);
			if (!*v || *end || v[0] == '-' || j < 1 || j > 64) {
				fprintf(stderr, "ringfeed index: --jobs needs 1..64, not '%.40s'\n",
				        v);
				return -1;
			}
			r->jobs = (uint32_t)j;
		} else if (!strcmp(a, "-o") && i + 1 < argc && argv[i + 1][0])
			r->out_dir = argv[++i];
		else if (!strcmp(a, "-o")) {
			fprintf(stderr, "ringfeed index: -o needs a DIR\n%s", index_usage);
			return -1;
		} else {
			int used = rf_cli_loader_flag(cfg, argc, argv, i, "index");
			if (used == 0)
				fprintf(stderr, "ringfeed index: unknown option '%s'\n%s", a,
				        index_usage);
			if (used <= 0)
				return -1;
			i += used - 1;
		}
	}
	return n;
}

/* --bundle: MANIFEST's index bundle beside it. 0, or 1 naming what failed. */
static int bundle_one(const char *name, bool quiet)
{
	struct stat st;
	char path[4096];
	bool dir = stat(name, &st) == 0 && S_ISDIR(st.st_mode);
	if ((size_t)snprintf(path, sizeof(path), dir ? "%s/manifest.rfm" : "%s", name) >=
	    sizeof(path)) {
		fprintf(stderr, "ringfeed index: %s: path too long\n", name);
		return 1;
	}
	rf_error err = {0};
	size_t shards = 0;
	char *out = NULL;
	if (rf_index_bundle_write_beside(path, &shards, &out, &err) < 0) {
		fprintf(stderr, "ringfeed index: %s\n", err.msg);
		return 1;
	}
	if (!quiet)
		printf("index: %s: %zu shards, bundle %s\n", path, shards, out);
	free(out);
	return 0;
}

int cmd_index(int argc, char **argv)
{
	index_run r = {.first_result = true};
	char **names = calloc((size_t)argc + 1, sizeof(*names));
	rf_config *check = rf_config_new(); /* the flags checked once, before any work */
	int n = names && check ? index_args(argc, argv, &r, check, names) : -1;
	rf_config_free(check);
	if (n == 0)
		fprintf(stderr, "ringfeed index: missing DATASET\n%s", index_usage);
	if (n > 0 && r.bundle && (r.check || r.json || r.out_dir || r.jobs)) {
		fprintf(stderr, "ringfeed index: --bundle takes -q only\n%s", index_usage);
		n = -1;
	}
	if (n <= 0) {
		free(names);
		return n == -2 ? 0 : 2;
	}
	if (r.bundle) {
		int bad = 0;
		for (int i = 0; i < n; i++)
			bad |= bundle_one(names[i], r.quiet);
		free(names);
		return bad;
	}
	if (r.json)
		printf("{\"results\":[");
	for (int i = 0; i < n; i++)
		one_dataset(&r, argc, argv, names[i]);
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
	seen_free(&r);
	return r.stale || r.failed ? 1 : 0;
}
