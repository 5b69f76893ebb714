/* decode_limit.c - see decode_limit.h. */
#include "decode_limit.h"
#include "cpu_cost.h"
#include "ringfeed.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct rf_dl_shard {
	const char *path;
	const rf_shard_index *ix;
	const uint8_t *bytes;
	atomic_uint next;
	atomic_int failed;
} rf_dl_shard;

static double rf_dl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct rf_dl_worker {
	rf_dl_shard *sh;
	rf_decoder *dec;
	uint8_t *dst;
	size_t dst_cap;
	uint64_t decoded;
} rf_dl_worker;

static void *rf_dl_main(void *arg)
{
	rf_dl_worker *w = arg;
	rf_dl_shard *sh = w->sh;
	for (;;) {
		unsigned b = atomic_fetch_add(&sh->next, 1);
		if (b >= sh->ix->blocks)
			break;
		const rf_block_info *bi = &sh->ix->block[b];
		const uint32_t *ends;
		rf_error err = {0};
		if (rf_block_decode(w->dec, sh->ix, b, sh->bytes + bi->offset, bi->compressed_bytes,
		                    w->dst, w->dst_cap, &ends, sh->path, &err) < 0) {
			fprintf(stderr, "decode limit: %s\n", err.msg);
			atomic_store(&sh->failed, 1);
			break;
		}
		w->decoded += bi->decoded_bytes;
	}
	return NULL;
}

static uint8_t *rf_dl_load(const char *path, uint64_t size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = f ? malloc(size ? size : 1) : NULL;
	if (buf && fread(buf, 1, size, f) != size) {
		free(buf);
		buf = NULL;
	}
	if (f)
		fclose(f);
	return buf;
}

/* Decodes one shard with the workers; adds its time. */
static int rf_dl_shard_run(const char *path, rf_dl_worker *w, unsigned threads,
                           rf_decode_limit *out)
{
	rf_shard_index *ix = NULL;
	rf_error err = {0};
	if (rf_index_read_file(path, &ix, &err) < 0) {
		fprintf(stderr, "decode limit: %s\n", err.msg);
		return -1;
	}
	uint8_t *bytes = rf_dl_load(path, ix->file_bytes);
	rf_dl_shard sh = {.path = path, .ix = ix, .bytes = bytes};
	int rc = bytes ? 0 : -1;
	pthread_t t[256];
	double t0 = rf_dl_now(), c0 = rf_cpu_process_s();
	unsigned started = 0;
	for (unsigned i = 0; rc == 0 && i < threads; i++) {
		w[i].sh = &sh;
		if (w[i].dst_cap < ix->largest_block_decoded_bytes) {
			free(w[i].dst);
			w[i].dst_cap = ix->largest_block_decoded_bytes;
			w[i].dst = malloc(w[i].dst_cap);
			if (w[i].dst) /* touch it once: the limit excludes page faults */
				memset(w[i].dst, 0, w[i].dst_cap);
		}
		if (!w[i].dst || pthread_create(&t[i], NULL, rf_dl_main, &w[i]) != 0)
			rc = -1;
		else
			started++;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	out->decode_s += rf_dl_now() - t0;
	out->decode_cpu_s += rf_cpu_process_s() - c0;
	out->blocks += ix->blocks;
	if (atomic_load(&sh.failed))
		rc = -1;
	free(bytes);
	rf_index_free(ix);
	return rc;
}

int rf_decode_limit_run(char *const *paths, unsigned count, unsigned threads, rf_decode_limit *out)
{
	memset(out, 0, sizeof(*out));
	if (threads < 1 || threads > 256)
		return -1;
	rf_dl_worker w[256];
	memset(w, 0, sizeof(w));
	int rc = 0;
	for (unsigned i = 0; i < threads; i++)
		if (!(w[i].dec = rf_decoder_new()))
			rc = -1;
	/* Untimed warm-up on one shard: the first pass maps the buffers. */
	if (rc == 0 && count > 0) {
		rf_decode_limit warm = {0};
		rc = rf_dl_shard_run(paths[0], w, threads, &warm);
		for (unsigned i = 0; i < threads; i++)
			w[i].decoded = 0;
	}
	for (unsigned s = 0; rc == 0 && s < count; s++)
		rc = rf_dl_shard_run(paths[s], w, threads, out);
	for (unsigned i = 0; i < threads; i++) {
		out->decoded_bytes += w[i].decoded;
		rf_decoder_free(w[i].dec);
		free(w[i].dst);
	}
	return rc;
}

static int rf_dl_push(char ***paths, unsigned *count, const char *p)
{
	char **n = realloc(*paths, (*count + 1) * sizeof(*n));
	if (!n)
		return -1;
	*paths = n;
	if (!(n[*count] = strdup(p)))
		return -1;
	(*count)++;
	return 0;
}

static int rf_dl_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rf_decode_limit_expand(const char *arg, char ***paths, unsigned *count)
{
	struct stat st;
	if (stat(arg, &st) < 0) {
		fprintf(stderr, "decode limit: %s: %m\n", arg);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(arg);
		unsigned first = *count;
		struct dirent *de;
		int rc = d ? 0 : -1;
		while (rc == 0 && (de = readdir(d)) != NULL) {
			size_t n = strlen(de->d_name);
			char p[4096];
			if (n > 4 && !strcmp(de->d_name + n - 4, ".rfs") &&
			    (size_t)snprintf(p, sizeof(p), "%s/%s", arg, de->d_name) < sizeof(p))
				rc = rf_dl_push(paths, count, p);
		}
		if (d)
			closedir(d);
		qsort(*paths + first, *count - first, sizeof(char *), rf_dl_cmp);
		return rc;
	}
	rf_manifest *m = NULL;
	rf_error err = {0};
	if (rf_manifest_read_file(arg, &m, &err) == 0) {
		int rc = 0;
		for (size_t i = 0; rc == 0 && i < m->count; i++)
			rc = rf_dl_push(paths, count, m->entry[i].url);
		rf_manifest_free(m);
		return rc;
	}
	return rf_dl_push(paths, count, arg);
}
