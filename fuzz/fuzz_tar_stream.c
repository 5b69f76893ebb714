/* fuzz_tar_stream.c - libFuzzer target for compressed WebDataset tars
 * (shards/tar_stream.c): the input's first byte picks the codec (even:
 * gzip, odd: zstd), the rest is the compressed shard, opened step by step
 * in memory as the engine would (rf_format_open_mem: every request inside
 * the object, what the format holds within what it declared, a failed
 * step answering the same bytes the same). An accepted layout's units (one,
 * the whole object, a large .tar.gz's units from its access points, or a
 * large .tar.zst's sequential units) tile the samples; decoding each must
 * succeed and give records, fields and keys inside its decoded bytes. A
 * sequential layout's units decode through one stream state
 * (rf_fmt_decode_seq_with, asking for more in small reads), in order and
 * then one out of order (a restart). */
#include "format.h"
#include "fuzz.h"
#include "tar.h"

#define SEQ_BUF (64u << 10) /* the caller's buffer for a sequential unit's asks */

typedef struct mem_obj {
	const uint8_t *p;
	size_t n;
} mem_obj;

static int mem_read(void *ctx, const char *object, uint64_t offset, uint64_t len, void *buf,
                    uint64_t *size, rf_error *err)
{
	const mem_obj *m = ctx;
	(void)err;
	FUZZ_CHECK(object == NULL && offset <= m->n && len <= m->n - offset && len <= SEQ_BUF);
	memcpy(buf, m->p + offset, len);
	if (size)
		*size = m->n;
	return 0;
}

static int decode_unit(const uint8_t *z, size_t n, const rf_shard_index *ix, const void *priv,
                       uint32_t u, void **seq, uint8_t *slab, rf_unit_records *r, rf_error *err)
{
	const rf_block_info *b = &ix->block[u];
	if (!ix->sequential)
		return rf_tar_format.decode(NULL, ix, priv, u, z + b->offset, b->compressed_bytes,
		                            slab, b->decoded_bytes, r, "fuzz.tar.gz", err);
	static uint8_t buf[SEQ_BUF];
	mem_obj m = {.p = z, .n = n};
	int rc = rf_fmt_decode_seq_with(&rf_tar_format, seq, ix, priv, u, z + b->offset,
	                                b->compressed_bytes, b->offset, buf, SEQ_BUF, mem_read, &m,
	                                slab, b->decoded_bytes, r, NULL, "fuzz.tar.zst", err);
	FUZZ_CHECK(rf_tar_seq_held(*seq) <= rf_tar_format.seq_state_bytes(ix, priv));
	return rc;
}

static void check_unit(const uint8_t *z, size_t n, const rf_shard_index *ix, const void *priv,
                       uint32_t u, void **seq)
{
	const rf_block_info *b = &ix->block[u];
	FUZZ_CHECK(b->offset + b->compressed_bytes <= n && b->records > 0);
	FUZZ_CHECK(b->decoded_bytes <= RF_BLOCK_DECODED_MAX);
	uint8_t *slab = malloc(b->decoded_bytes);
	FUZZ_CHECK(slab != NULL);
	rf_unit_records r;
	rf_error err = {0};
	int rc = decode_unit(z, n, ix, priv, u, seq, slab, &r, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	FUZZ_CHECK(rc == 0); /* the bytes the open accepted decode */
	FUZZ_CHECK(r.records == b->records && r.fields && r.keys);
	FUZZ_CHECK(r.base == slab);
	uint32_t span = rf_record_end(r.ends, (int64_t)r.records - 1);
	FUZZ_CHECK((const uint8_t *)r.ends >= slab + span);
	for (uint32_t i = 0; i < r.records; i++) {
		uint32_t start = rf_record_end(r.ends, (int64_t)i - 1),
		         end = rf_record_end(r.ends, i);
		FUZZ_CHECK(start <= end && end <= span);
		for (uint32_t f = r.field_first[i]; f < r.field_first[i + 1]; f++) {
			const rf_rec_field *fl = &r.fields[f];
			FUZZ_CHECK(fl->offset >= start && fl->len <= end - fl->offset);
		}
	}
	free(slab);
}

/* An accepted layout: units tile the samples in order; each decodes (a
 * sequential layout's compressed ranges tile the object too). */
static void check_decode(const uint8_t *z, size_t n, const rf_shard_index *ix, const void *priv)
{
	uint64_t rec = 0, at = 0;
	void *seq = NULL;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		FUZZ_CHECK(ix->block[u].first_record == rec);
		FUZZ_CHECK(!ix->sequential || ix->block[u].offset == at);
		rec += ix->block[u].records;
		at += ix->block[u].compressed_bytes;
		check_unit(z, n, ix, priv, u, &seq);
	}
	FUZZ_CHECK(rec == ix->records);
	FUZZ_CHECK(!ix->sequential || at == n);
	if (ix->sequential && ix->blocks > 1) /* behind the stream: a restart */
		check_unit(z, n, ix, priv, ix->blocks / 2, &seq);
	if (seq)
		rf_tar_format.seq_free(seq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *url = data[0] & 1 ? "fuzz.tar.zst" : "fuzz.tar.gz";
	size_t n = size - 1;
	uint8_t *z = malloc(n ? n : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(z != NULL);
	memcpy(z, data + 1, n);
	rf_fmt_object obj = {.url = url, .data = z, .size = n};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	uint64_t held = 0;
	rf_error err = {0};
	int rc = rf_format_open_mem(&rf_tar_format, &obj, 1, NULL, &ix, &priv, &held, NULL, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
	} else {
		check_decode(z, n, ix, priv);
		rf_tar_format.close(ix, priv);
	}
	free(z);
	return 0;
}
