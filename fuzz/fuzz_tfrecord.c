/* fuzz_tfrecord.c - libFuzzer target for TFRecord files (shards/tfrecord.c,
 * tfrecord_index.c, tfrecord_stream.c). The first byte picks what the rest
 * is: 0 a plain file of Examples, 1 the same read raw, 2 a .tfrecord.gz, 3
 * a u32 (little endian) index length, an index and then the file, opened
 * with the index beside it (a tfrecord2idx file, or the index cache's
 * entry: raw or Examples), 4 an index alone (rf_tfr_index_parse, and
 * rf_tfr_cache_parse for the Examples entry). Files open through
 * rf_format_open_mem (the engine's bounds checked at every step) and every
 * unit of an accepted layout is decoded into a slab of exactly its
 * declared size (a .tfrecord.gz decoding past 32 MiB through its
 * sequential units, asking for more in small reads: seed gzip-big, a 36 KB
 * stream of 34 MB of Examples of zeros): fields inside their records,
 * named by the shard's names, once each. A layout from an index that every
 * decode accepts must be the walk's (the same records). */
#include "fuzz.h"
#include "tfrecord.h"

static int open_file(const char *url, const uint8_t *data, size_t size, const uint8_t *idx,
                     size_t idx_len, bool raw, rf_shard_index **ix, void **priv, rf_error *err)
{
	rf_fmt_object objs[2] = {{.url = url, .data = data, .size = size},
	                         {.url = "fuzz.idx", .data = idx, .size = idx_len}};
	rf_tfr_opts opt = {.raw = raw, .scan_only = !idx};
	return rf_format_open_mem(&rf_tfrecord_format, objs, idx ? 2 : 1, &opt, ix, priv, NULL,
	                          NULL, err);
}

static void check_records(const rf_unit_records *r, const rf_block_info *b, uint32_t names)
{
	FUZZ_CHECK(r->records == b->records && r->fields && r->field_first && r->key_first);
	for (uint32_t i = 0; i < r->records; i++) {
		uint32_t s = rf_record_end(r->ends, (int64_t)i - 1), e = rf_record_end(r->ends, i);
		FUZZ_CHECK(s <= e && r->field_first[i] <= r->field_first[i + 1]);
		uint64_t seen[(RF_TFR_FIELDS_MAX + 63) / 64] = {0};
		for (uint32_t k = r->field_first[i]; k < r->field_first[i + 1]; k++) {
			const rf_rec_field *f = &r->fields[k];
			FUZZ_CHECK(f->name < names && !(seen[f->name / 64] >> (f->name % 64) & 1));
			seen[f->name / 64] |= 1ull << (f->name % 64);
			FUZZ_CHECK(f->offset >= s && f->offset <= e && f->len <= e - f->offset);
		}
		FUZZ_CHECK(r->key_first[i + 1] - r->key_first[i] <= RF_TFR_KEY_MAX);
	}
}

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

/* Unit u through decode, or a large compressed file's through decode_seq
 * (one state, asking for more in small reads). */
static int decode_unit(const uint8_t *data, const rf_shard_index *ix, const void *priv, uint32_t u,
                       void **seq, uint8_t *dst, uint64_t cap, rf_unit_records *r, rf_error *err)
{
	const rf_format *f = &rf_tfrecord_format;
	const rf_block_info *b = &ix->block[u];
	if (!ix->sequential)
		return f->decode(NULL, ix, priv, u, data + b->offset, b->compressed_bytes, dst, cap,
		                 r, "fuzz.tfrecord", err);
	static uint8_t buf[SEQ_BUF];
	mem_obj m = {.p = data, .n = ix->file_bytes};
	FUZZ_CHECK(f->seq_state_bytes(ix, priv) == rf_tfr_seq_bytes());
	return rf_fmt_decode_seq_with(f, seq, ix, priv, u, data + b->offset, b->compressed_bytes,
	                              b->offset, buf, SEQ_BUF, mem_read, &m, dst, cap, r, NULL,
	                              "fuzz.tfrecord.gz", err);
}

/* Every unit decodes (0) or one fails RF_E_CORRUPT (1). */
static int decode_all(const uint8_t *data, const rf_shard_index *ix, const void *priv,
                      bool in_place)
{
	void *seq = NULL;
	const rf_format *f = &rf_tfrecord_format;
	const char *const *nm;
	uint32_t names = f->field_names(priv, &nm);
	uint64_t rec = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		FUZZ_CHECK(b->first_record == rec &&
		           b->offset + b->compressed_bytes <= ix->file_bytes);
		rec += b->records;
		uint64_t cap = in_place ? f->table_bytes(ix, priv, u) : b->decoded_bytes;
		uint8_t *dst = malloc(cap ? cap : 1);
		FUZZ_CHECK(dst != NULL);
		rf_unit_records r;
		rf_error err = {0};
		int rc = decode_unit(data, ix, priv, u, &seq, dst, cap, &r, &err);
		if (rc == 0)
			check_records(&r, b, names);
		free(dst);
		if (rc < 0) {
			rf_tfr_seq_free(seq);
			fuzz_check_error(rc, &err);
			FUZZ_CHECK(rc == RF_E_CORRUPT || rc == -EFBIG);
			return 1;
		}
	}
	rf_tfr_seq_free(seq);
	FUZZ_CHECK(rec == ix->records);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t kind = data[0] % 5;
	data++, size--;
	uint8_t *p = malloc(size ? size : 1); /* exact size: reads past it are caught */
	FUZZ_CHECK(p != NULL);
	memcpy(p, data, size);
	rf_error err = {0};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	if (kind == 4) {
		uint32_t *lens = NULL;
		uint64_t n = 0;
		int rc = rf_tfr_index_parse(p, size, 1u << 30, "fuzz.idx", &lens, &n, &err);
		if (rc < 0)
			fuzz_check_error(rc, &err);
		else
			free(lens);
		rf_tfr_cached c; /* the index cache's Examples entry */
		rc = rf_tfr_cache_parse(p, size, 1u << 30, "fuzz.idx", &c, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
		} else {
			FUZZ_CHECK(c.names_n <= RF_TFR_FIELDS_MAX &&
			           c.largest <= RF_BLOCK_DECODED_MAX / 2);
			rf_tfr_cached_free(&c);
		}
		free(p);
		return 0;
	}
	const uint8_t *file = p, *idx = NULL;
	size_t file_len = size, idx_len = 0;
	if (kind == 3) {
		if (size < 4) {
			free(p);
			return 0;
		}
		idx_len = RF_MIN(rf_load_le32(p), size - 4);
		idx = p + 4;
		file = p + 4 + idx_len;
		file_len = size - 4 - idx_len;
	}
	const char *url = kind == 2 ? "fuzz.tfrecord.gz" : "fuzz.tfrecord";
	int rc = open_file(url, file, file_len, idx, idx_len, kind == 1, &ix, &priv, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		free(p);
		return 0;
	}
	bool in_place = kind == 1; /* a plain raw file: read in place */
	int bad = decode_all(file, ix, priv, in_place);
	if (kind == 3 && !bad) { /* an index every decode accepts is the walk's */
		rf_shard_index *w = NULL;
		void *wp = NULL;
		rf_error e2 = {0};
		FUZZ_CHECK(open_file(url, file, file_len, NULL, 0, false, &w, &wp, &e2) == 0);
		bool c1, c2;
		const uint32_t *a = rf_tfr_layout_lens(priv, &c1), *b = rf_tfr_layout_lens(wp, &c2);
		FUZZ_CHECK(w->records == ix->records &&
		           (!w->records || memcmp(a, b, 4 * w->records) == 0));
		rf_tfrecord_format.close(w, wp);
	}
	rf_tfrecord_format.close(ix, priv);
	free(p);
	return 0;
}
