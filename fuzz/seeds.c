/* seeds.c - writes the binary seeds of fuzz/corpus/ with the real writer:
 * small sound shards (fuzz/corpus/shard/), their frames as fuzz_block
 * inputs (fuzz/corpus/block/) and saved positions (fuzz/corpus/state/). Run: fuzz_seeds DIR (built
 * with RF_FUZZ=ON); the files it writes are committed, so this only reruns when the format changes.
 */
#include "collate.h"
#include "mix.h"
#include "mix_rebase.h"
#include "rfs.h"
#include "state.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct shard_kind {
	const char *name;
	uint32_t records;
	uint32_t record_bytes_max;
	uint64_t block_bytes;
	const char *metadata;
	int noisy; /* random bytes (incompressible) instead of letters */
} shard_kind;

static const shard_kind kinds[] = {
    {"empty", 0, 0, 1024, NULL, 0},
    {"one-record", 1, 40, 1024, "m", 0},
    {"small-blocks", 40, 60, 256, "{\"source\":\"fuzz seeds\"}", 0},
    {"zero-length-records", 12, 0, 64, NULL, 0},
    {"mixed", 30, 300, 1024, "mixed sizes", 0},
    {"noisy", 40, 120, 1024, NULL, 1},
};

static int write_shard(const char *path, const shard_kind *k)
{
	rf_error err = {0};
	rf_writer_options o = {.block_bytes = k->block_bytes, .level = 3, .metadata = k->metadata};
	rf_writer *w = rf_writer_open(path, &o, &err);
	if (!w)
		goto fail;
	uint32_t x = 12345;
	char rec[512];
	for (uint32_t i = 0; i < k->records; i++) {
		x = x * 1664525u + 1013904223u;
		size_t len = k->record_bytes_max ? (x >> 8) % (k->record_bytes_max + 1) : 0;
		for (size_t j = 0; j < len; j++)
			rec[j] = k->noisy ? (char)((x = x * 1664525u + 1013904223u) >> 24)
			                  : (char)('a' + (i + j) % 5);
		if (rf_writer_add(w, rec, len, &err) < 0) {
			rf_writer_abort(w);
			goto fail;
		}
	}
	if (rf_writer_close(w, NULL, &err) == 0)
		return 0;
fail:
	fprintf(stderr, "fuzz_seeds: %s: %s\n", path, err.msg);
	return -1;
}

static int read_all(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	*out = malloc(*len);
	int ok = *out && fread(*out, 1, *len, f) == *len;
	fclose(f);
	return ok ? 0 : -1;
}

/* fuzz_block inputs: records, all ones (the frame's own size), the frame. */
static int write_blocks(const char *dir, const shard_kind *k, const char *path)
{
	rf_shard_index *ix = NULL;
	rf_error err = {0};
	uint8_t *file = NULL;
	size_t len = 0;
	if (rf_index_read_file(path, &ix, &err) < 0 || read_all(path, &file, &len) < 0)
		return -1;
	for (uint32_t b = 0; b < ix->blocks && b < 3; b++) {
		const rf_block_info *bi = &ix->block[b];
		char out[4096];
		snprintf(out, sizeof(out), "%s/block/%s-%u", dir, k->name, b);
		FILE *f = fopen(out, "wb");
		uint8_t head[8];
		rf_store_le32(head, bi->records);
		rf_store_le32(head + 4, UINT32_MAX);
		if (!f || fwrite(head, 1, 8, f) != 8 ||
		    fwrite(file + bi->offset, 1, bi->compressed_bytes, f) != bi->compressed_bytes ||
		    fclose(f) != 0)
			return -1;
	}
	free(file);
	rf_index_free(ix);
	return 0;
}

/* A mixture's state whose weights changed at a resume (3 ranks stood at
 * record 100 of epoch 2 of 0.5/0.3/0.2). */
static int write_mix_state(const char *dir)
{
	uint64_t src[9] = {0xa1, 400, 500000, 0xb2, 70, 300000, 0xc3, 40, 200000};
	const uint64_t w[3] = {500000, 300000, 200000};
	const uint32_t win[3] = {8, 5, 4};
	rf_segment rem[3] = {{100, 233}, {433, 233}, {766, 233}};
	rf_mix *m = NULL;
	rf_mix_rebase *rb = NULL;
	rf_error err = {0};
	if (rf_mix_new(&m, 3, w, 1, &err) < 0 ||
	    rf_mix_rebase_compose(m, NULL, 1000, 2, rem, 3, NULL, 0, win, &rb, &err) < 0)
		return -1;
	rf_mix_free(m);
	rf_position p = {.dataset_records = 1000,
	                 .window = 1,
	                 .world = 2,
	                 .epoch = 2,
	                 .record = 50,
	                 .has_seq = true,
	                 .nsegs = 1,
	                 .segs = &(rf_segment){0, rb->length},
	                 .mix_sources = 3,
	                 .mix_src = src,
	                 .mix_samples = 1000,
	                 .mix_rb = rb};
	uint8_t b[RF_STATE_BYTES_MIN + 512];
	char out[4096];
	snprintf(out, sizeof(out), "%s/state/mixture-reweighted", dir);
	FILE *f = fopen(out, "wb");
	int n = rf_state_encode(&p, b, sizeof(b));
	rf_mix_rebase_free(rb);
	if (n <= 0 || !f || fwrite(b, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0)
		return -1;
	return 0;
}

/* fuzz_state inputs: saved positions. */
static int write_states(const char *dir)
{
	rf_segment segs[2] = {{0, 10}, {500, 20}};
	/* version 3 (the current), and one of each kind as version 2 (read
	 * still, shape only) */
	rf_position ps[6] = {{.world = 1, .window = 1, .names_hash = 1, .content_hash = 2},
	                     {.dataset_hash = 0x0123456789abcdefull,
	                      .dataset_records = 1000,
	                      .dataset_shards = 3,
	                      .window = 16,
	                      .seed = 9,
	                      .shuffle = true,
	                      .world = 4,
	                      .epoch = 3,
	                      .record = 200,
	                      .batch = 25,
	                      .skipped = 2,
	                      .names_hash = 0x4e414d45ull,
	                      .content_hash = 0xfedcba9876543210ull},
	                     {.dataset_records = 1000,
	                      .window = 1,
	                      .world = 2,
	                      .has_seq = true,
	                      .nsegs = 2,
	                      .segs = segs,
	                      .record = 4,
	                      .batch = 1,
	                      .names_hash = UINT64_MAX}};
	for (size_t i = 0; i < 3; i++) {
		ps[3 + i] = ps[i];
		ps[3 + i].version = 2;
		ps[3 + i].names_hash = ps[3 + i].content_hash = 0;
	}
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		uint8_t b[RF_STATE_BYTES_MIN + 64];
		char out[4096];
		if (i < 3)
			snprintf(out, sizeof(out), "%s/state/position-%zu", dir, i);
		else
			snprintf(out, sizeof(out), "%s/state/v2-position-%zu", dir, i - 3);
		FILE *f = fopen(out, "wb");
		int n = rf_state_encode(&ps[i], b, sizeof(b));
		if (n <= 0 || !f || fwrite(b, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0)
			return -1;
	}
	return write_mix_state(dir);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr,
		        "usage: fuzz_seeds CORPUS_DIR (with shard/, block/, state/ in it)\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/shard/%s.rfs", argv[1], kinds[i].name);
		if (write_shard(path, &kinds[i]) < 0 || write_blocks(argv[1], &kinds[i], path) < 0)
			return 1;
	}
	return write_states(argv[1]) < 0 ? 1 : 0;
}
