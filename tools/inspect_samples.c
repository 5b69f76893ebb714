/* inspect_samples.c - `ringfeed inspect` for shards of samples with fields
 * (WebDataset .tar, MDS .mds / .mds.zstd): such a shard holds no index of
 * its fields, so inspect reads it through a loader (unshuffled, one shard)
 * and counts, per field, the samples that have it, its bytes and its
 * largest value. Uses only ringfeed.h. */
#include "inspect_samples.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FIELDS_MAX 1024

typedef struct field_sum {
	char name[256];
	uint64_t present, bytes, largest;
} field_sum;

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n > m && !strcmp(s + n - m, suffix);
}

bool rf_inspect_is_samples(const char *path)
{
	return ends_with(path, ".tar") || ends_with(path, ".mds") || ends_with(path, ".mds.zstd") ||
	       ends_with(path, ".tar.gz") || ends_with(path, ".tgz") ||
	       ends_with(path, ".tar.zst") || ends_with(path, ".tar.zstd");
}

/* A tar's index status: its PREFIX.idx (DALI wds2idx v1.2) beside it was
 * read at the open instead of the member headers (the open succeeded, so
 * the index was sound), or there is none and the headers were scanned. */
static const char *tar_layout(const char *path)
{
	static char buf[4400];
	char idx[4096];
	struct stat st;
	snprintf(idx, sizeof(idx), "%.*s.idx", (int)(strlen(path) - 4), path);
	if (stat(idx, &st) == 0 && S_ISREG(st.st_mode))
		snprintf(buf, sizeof(buf),
		         "tar: index file %s used (DALI wds2idx v1.2): the open read it, not the "
		         "member headers",
		         idx);
	else
		snprintf(buf, sizeof(buf),
		         "tar: headers scanned (no index file %s: `ringfeed index` writes one)",
		         idx);
	return buf;
}

static const char *layout_of(const char *path)
{
	if (ends_with(path, ".tar"))
		return tar_layout(path);
	if (ends_with(path, ".tar.gz") || ends_with(path, ".tgz"))
		return "tar (gzip): the open decodes the stream once; past 32 MiB decoded, units "
		       "from its access points, else one whole-shard unit";
	if (ends_with(path, ".tar.zst") || ends_with(path, ".tar.zstd"))
		return "tar (zstd): the open decodes the stream once; past 32 MiB decoded, units "
		       "decoded in order through one stream (a resume or a rank starting inside "
		       "it re-decodes up to there), else one whole-shard unit";
	if (ends_with(path, ".mds"))
		return "mds: the shard's offset table";
	if (ends_with(path, ".mds.zstd"))
		return "mds (zstd): one whole-shard unit; the header from the decoded prefix";
	return "samples with fields, read through the loader (docs/format.md)";
}

static void add_batch(const rf_batch *b, field_sum *f, uint32_t *nf)
{
	for (uint32_t k = 0; k < b->fields && k < FIELDS_MAX; k++) {
		const rf_batch_field *bf = &b->field[k];
		if (k >= *nf) {
			snprintf(f[k].name, sizeof(f[k].name), "%s", bf->name);
			*nf = k + 1;
		}
		for (uint32_t i = 0; i < b->records; i++) {
			uint64_t len = (uint64_t)(bf->offsets[i + 1] - bf->offsets[i]);
			f[k].present += bf->present[i];
			f[k].largest = len > f[k].largest ? len : f[k].largest;
		}
		f[k].bytes += bf->payload_bytes;
	}
}

static void print(const char *path, int json, uint64_t size, uint64_t samples, const field_sum *f,
                  uint32_t nf)
{
	if (json) {
		printf("{\"shard\":");
		rf_json_fput(stdout, path);
		printf(",\"file_bytes\":%llu,\"samples\":%llu,\"layout\":",
		       (unsigned long long)size, (unsigned long long)samples);
		rf_json_fput(stdout, layout_of(path));
		printf(",\"fields\":[");
		for (uint32_t k = 0; k < nf; k++) {
			printf("%s{\"name\":", k ? "," : "");
			rf_json_fput(stdout, f[k].name);
			printf(",\"present\":%llu,\"bytes\":%llu,\"largest_bytes\":%llu}",
			       (unsigned long long)f[k].present, (unsigned long long)f[k].bytes,
			       (unsigned long long)f[k].largest);
		}
		printf("]}\n");
		return;
	}
	printf("shard             %s\n", path);
	printf("layout            %s\n", layout_of(path));
	printf("file bytes        %llu\n", (unsigned long long)size);
	printf("samples           %llu\n", (unsigned long long)samples);
	for (uint32_t k = 0; k < nf; k++)
		printf("field %-11s %llu present (%llu absent), %llu bytes, largest %llu\n",
		       f[k].name, (unsigned long long)f[k].present,
		       (unsigned long long)(samples - f[k].present), (unsigned long long)f[k].bytes,
		       (unsigned long long)f[k].largest);
}

int rf_inspect_samples(const char *path, int json)
{
	struct stat st;
	rf_error err = {0};
	rf_config *c = rf_config_new();
	field_sum *f = calloc(FIELDS_MAX, sizeof(*f));
	if (!c || !f || stat(path, &st) < 0 || rf_config_set(c, "shuffle", "0", &err) < 0 ||
	    rf_config_set(c, "batch", "256", &err) < 0 || rf_config_add_url(c, path, &err) < 0) {
		fprintf(stderr, "ringfeed inspect: %s: %s\n", path,
		        err.msg[0] ? err.msg : "cannot open");
		rf_config_free(c);
		free(f);
		return 1;
	}
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l) {
		fprintf(stderr, "ringfeed inspect: %s\n", err.msg);
		free(f);
		return 1;
	}
	uint64_t samples = 0;
	uint32_t nf = 0;
	int rc;
	rf_batch *b;
	while ((rc = rf_next(l, &b, -1)) == 0) {
		samples += b->records;
		add_batch(b, f, &nf);
		rf_release(l, b);
	}
	if (rc < 0)
		fprintf(stderr, "ringfeed inspect: %s\n", rf_last_error(l));
	else
		print(path, json, (uint64_t)st.st_size, samples, f, nf);
	rf_close(l);
	free(f);
	return rc < 0 ? 1 : 0;
}
