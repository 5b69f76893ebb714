/* demo.c - see demo.h. Shard i is a pure function of (i, its byte target):
 * its own seeded generator, so shards are generated in parallel and the
 * result is byte-identical whatever the thread count. */
#include "demo.h"
#include "packer.h"
#include "ringfeed.h"
#include "rng.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEMO_VOCAB       50257u
#define DEMO_BINS        4096u
#define DEMO_RECORD_MIN  256u
#define DEMO_RECORD_MAX  8192u
#define DEMO_THREADS_MAX 8u
#define DEMO_BLOCK_BYTES (1u << 20)
#define DEMO_LEVEL       3

typedef struct demo_job {
	const char *dir;
	uint64_t decoded_bytes;
	unsigned shards;
	int progress;
	uint32_t bin[DEMO_BINS + 1]; /* Zipf-like: token range of each equiprobable bin */
	atomic_uint next;            /* next shard to generate */
	atomic_uint_fast64_t done_bytes;
	atomic_int failed;
	rf_shard_summary *sum;
	uint64_t t0_ns;
	pthread_mutex_t err_mu;
} demo_job;

/* P(token k) roughly proportional to 1/(k+1): bins equally likely, bin i
 * covering [V^(i/B) - 1, V^((i+1)/B) - 1). */
static void build_bins(uint32_t *bin)
{
	for (unsigned i = 0; i <= DEMO_BINS; i++) {
		double v = exp((double)i / DEMO_BINS * log((double)DEMO_VOCAB)) - 1.0;
		bin[i] = (uint32_t)v;
	}
	bin[DEMO_BINS] = DEMO_VOCAB;
}

static uint16_t token(const uint32_t *bin, uint32_t r)
{
	uint32_t i = r >> 20, lo = bin[i], span = bin[i + 1] > lo ? bin[i + 1] - lo : 1;
	return (uint16_t)(lo + (r & 0xfffff) % span);
}

static void fill_record(const uint32_t *bin, uint64_t *seed, uint8_t *rec, size_t len)
{
	size_t i = 0;
	for (; i + 4 <= len; i += 4) {
		uint64_t r = rf_splitmix64(seed);
		uint16_t a = token(bin, (uint32_t)r), b = token(bin, (uint32_t)(r >> 32));
		rec[i] = (uint8_t)a;
		rec[i + 1] = (uint8_t)(a >> 8);
		rec[i + 2] = (uint8_t)b;
		rec[i + 3] = (uint8_t)(b >> 8);
	}
	for (; i < len; i++)
		rec[i] = (uint8_t)rf_splitmix64(seed);
}

static uint64_t shard_target(const demo_job *j, unsigned i)
{
	uint64_t base = j->decoded_bytes / j->shards;
	return base + (i < j->decoded_bytes % j->shards ? 1 : 0);
}

static void demo_progress(demo_job *j, uint64_t *last_ns)
{
	uint64_t now = rf_tool_now_ns();
	if (!j->progress || now - *last_ns < 250000000ull)
		return;
	*last_ns = now;
	uint64_t done = atomic_load(&j->done_bytes);
	double s = (double)(now - j->t0_ns) / 1e9;
	double f = j->decoded_bytes ? (double)done / (double)j->decoded_bytes : 0;
	fprintf(stderr, "\rdemo: %.0f / %.0f MiB generated and packed (%.0f MB/s)",
	        (double)done / 1048576.0, (double)j->decoded_bytes / 1048576.0,
	        (double)done / 1e3 / (double)((now - j->t0_ns) / 1000000 + 1));
	if (f > 0 && f <= 1)
		fprintf(stderr, ", %.0f%%, %.0f s left", 100 * f, s * (1 - f) / f);
	fprintf(stderr, "   ");
	fflush(stderr);
}

static int demo_shard(demo_job *j, unsigned i, int reporter, uint64_t *last_ns, rf_error *err)
{
	char path[4096], meta[160];
	if (rf_pack_shard_name(path, sizeof(path), j->dir, i) < 0)
		return rf_tool_fail(err, -ENAMETOOLONG, "demo: path too long in %s", j->dir);
	snprintf(meta, sizeof(meta),
	         "ringfeed demo v1: u16le token ids, vocab %u, zipf-like; shard %u of %u",
	         DEMO_VOCAB, i, j->shards);
	rf_writer_options wo = {
	    .block_bytes = DEMO_BLOCK_BYTES, .level = DEMO_LEVEL, .metadata = meta};
	rf_writer *w = rf_writer_open(path, &wo, err);
	if (!w)
		return err->code;
	uint8_t rec[DEMO_RECORD_MAX];
	uint64_t seed = 0x5EEDull * (i + 1) ^ 0xD1CEull, left = shard_target(j, i);
	int rc = 0;
	while (rc == 0 && left > 0 && !atomic_load(&j->failed)) {
		uint64_t r = rf_splitmix64(&seed);
		size_t len =
		    DEMO_RECORD_MIN + 2 * (r % ((DEMO_RECORD_MAX - DEMO_RECORD_MIN) / 2 + 1));
		if (len > left)
			len = (size_t)left;
		fill_record(j->bin, &seed, rec, len);
		rc = rf_writer_add(w, rec, len, err);
		left -= len;
		atomic_fetch_add(&j->done_bytes, len);
		if (reporter)
			demo_progress(j, last_ns);
	}
	if (rc < 0 || atomic_load(&j->failed)) {
		rf_writer_abort(w);
		return rc < 0 ? rc : -ECANCELED;
	}
	return rf_writer_close(w, &j->sum[i], err);
}

typedef struct demo_worker {
	demo_job *job;
	int id;
	pthread_t thread;
} demo_worker;

static void *demo_worker_main(void *arg)
{
	demo_worker *dw = arg;
	demo_job *j = dw->job;
	uint64_t last_ns = 0;
	for (;;) {
		unsigned i = atomic_fetch_add(&j->next, 1);
		if (i >= j->shards || atomic_load(&j->failed))
			break;
		rf_error err = {0};
		int rc = demo_shard(j, i, dw->id == 0, &last_ns, &err);
		if (rc < 0 && rc != -ECANCELED) {
			pthread_mutex_lock(&j->err_mu);
			if (!atomic_load(&j->failed))
				fprintf(stderr, "ringfeed: demo: %s\n", err.msg);
			atomic_store(&j->failed, rc);
			pthread_mutex_unlock(&j->err_mu);
		}
	}
	return NULL;
}

static int run_workers(demo_job *j)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus < 1 ? 1 : (unsigned)cpus;
	n = n > DEMO_THREADS_MAX ? DEMO_THREADS_MAX : n;
	n = n > j->shards ? j->shards : n;
	demo_worker w[DEMO_THREADS_MAX];
	unsigned started = 1;
	for (unsigned t = 0; t < n; t++)
		w[t] = (demo_worker){.job = j, .id = (int)t};
	for (unsigned t = 1; t < n; t++, started++)
		if (pthread_create(&w[t].thread, NULL, demo_worker_main, &w[t]) != 0)
			break; /* fewer threads: same result, only slower */
	demo_worker_main(&w[0]);
	for (unsigned t = 1; t < started; t++)
		pthread_join(w[t].thread, NULL);
	return atomic_load(&j->failed);
}

static int write_manifest(const demo_job *j, rf_error *err)
{
	rf_manifest m = {.count = j->shards, .entry = calloc(j->shards, sizeof(rf_manifest_entry))};
	char names[64];
	int rc = m.entry ? 0 : rf_tool_fail(err, -ENOMEM, "demo: no memory");
	for (unsigned i = 0; rc == 0 && i < j->shards; i++) {
		rf_pack_shard_name(names, sizeof(names), NULL, i);
		m.entry[i] = (rf_manifest_entry){.url = strdup(names),
		                                 .bytes = j->sum[i].file_bytes,
		                                 .records = j->sum[i].records};
		if (!m.entry[i].url)
			rc = rf_tool_fail(err, -ENOMEM, "demo: no memory");
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", j->dir, RF_PACK_BUNDLE); /* as pack writes it */
	if (rc == 0)
		rc = rf_index_bundle_write(path, j->dir, &m, err);
	snprintf(path, sizeof(path), "%s/%s", j->dir, RF_PACK_MANIFEST);
	if (rc == 0)
		rc = rf_manifest_write(path, &m, err);
	for (unsigned i = 0; m.entry && i < j->shards; i++)
		free(m.entry[i].url);
	free(m.entry);
	return rc;
}

/* The marker's text: every parameter that shapes the bytes. */
static void marker_text(char *buf, size_t cap, uint64_t bytes, unsigned shards)
{
	snprintf(buf, cap,
	         "ringfeed demo v1 decoded_bytes=%llu shards=%u block_bytes=%u level=%d vocab=%u "
	         "record_bytes=%u..%u\n",
	         (unsigned long long)bytes, shards, DEMO_BLOCK_BYTES, DEMO_LEVEL, DEMO_VOCAB,
	         DEMO_RECORD_MIN, DEMO_RECORD_MAX);
}

static int marker_matches(const char *path, const char *want)
{
	char got[512] = "";
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(got, 1, sizeof(got) - 1, f);
	fclose(f);
	got[n] = '\0';
	return strcmp(got, want) == 0;
}

static int write_marker(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -EIO;
	int bad = fputs(text, f) < 0;
	return fclose(f) != 0 || bad ? -EIO : 0;
}

int rf_demo_ensure(const char *dir, uint64_t decoded_bytes, unsigned shards, int progress)
{
	rf_error err = {0};
	char marker[4096], want[512];
	if (shards == 0 || shards > 100000 || decoded_bytes < shards) {
		fprintf(stderr, "ringfeed: demo: need 1..100000 shards and at least 1 byte each\n");
		return -EINVAL;
	}
	if (rf_tool_mkdirs(dir, &err) < 0 || (size_t)snprintf(marker, sizeof(marker), "%s/%s", dir,
	                                                      RF_DEMO_MARKER) >= sizeof(marker)) {
		fprintf(stderr, "ringfeed: demo: %s\n", err.msg[0] ? err.msg : "path too long");
		return err.code ? err.code : -ENAMETOOLONG;
	}
	marker_text(want, sizeof(want), decoded_bytes, shards);
	if (marker_matches(marker, want)) {
		printf("demo dataset ready (cached): %s/%s\n", dir, RF_PACK_MANIFEST);
		return 0;
	}
	unlink(marker);
	demo_job *j = calloc(1, sizeof(*j));
	if (!j || !(j->sum = calloc(shards, sizeof(*j->sum)))) {
		free(j);
		return -ENOMEM;
	}
	*j = (demo_job){.dir = dir,
	                .decoded_bytes = decoded_bytes,
	                .shards = shards,
	                .progress = progress,
	                .sum = j->sum,
	                .t0_ns = rf_tool_now_ns()};
	pthread_mutex_init(&j->err_mu, NULL);
	build_bins(j->bin);
	int rc = run_workers(j);
	if (rc == 0 && (rc = write_manifest(j, &err)) < 0)
		fprintf(stderr, "ringfeed: demo: %s\n", err.msg);
	if (rc == 0 && write_marker(marker, want) < 0) {
		fprintf(stderr, "ringfeed: demo: cannot write %s\n", marker);
		rc = -EIO;
	}
	if (progress)
		fputc('\n', stderr);
	if (rc == 0)
		printf("demo dataset ready: %s/%s (%u shards, %.1f MiB decoded, %.1f s)\n", dir,
		       RF_PACK_MANIFEST, shards, (double)decoded_bytes / 1048576.0,
		       (double)(rf_tool_now_ns() - j->t0_ns) / 1e9);
	pthread_mutex_destroy(&j->err_mu);
	free(j->sum);
	free(j);
	return rc;
}
