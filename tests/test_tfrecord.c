/* test_tfrecord.c - TFRecord files (shards/tfrecord.c) and the Example
 * reader (shards/protobuf.c) through their seam calls: Examples built here
 * byte for byte in the protobuf wire format (packed and unpacked lists,
 * negative int64s, several bytes values, an empty Feature), framed with
 * TensorFlow's masked CRC-32C, read back as fields in the documented
 * encodings; raw records in place; a tfrecord2idx index read and lies in it
 * caught; a .tfrecord.gz; hostile frames and Examples answered with errors
 * naming the shard, the record and the byte. (The reference writer with
 * TensorFlow's compiled protos: cli_tfrecord.sh.) */
#include "protobuf.h"
#include "testutil.h"
#include "tfrecord.h"

#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

typedef struct buf {
	uint8_t *p;
	size_t n;
} buf;

static void put(buf *b, const void *d, size_t n)
{
	b->p = realloc(b->p, b->n + n + 1);
	assert_non_null(b->p);
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void put_varint(buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	do {
		t[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	put(b, t, n);
}

/* field number f, wire type 2, with bytes d[0, n) */
static void put_len(buf *b, unsigned f, const void *d, size_t n)
{
	put_varint(b, (uint64_t)f << 3 | 2);
	put_varint(b, n);
	put(b, d, n);
}

/* a map entry: key, and a Feature whose kind k holds the list message l */
static void put_feature(buf *features, const char *key, unsigned k, const buf *l)
{
	buf feat = {0}, ent = {0};
	if (k)
		put_len(&feat, k, l->p ? l->p : (const uint8_t *)"", l->n);
	put_len(&ent, 1, key, strlen(key));
	put_len(&ent, 2, feat.p ? feat.p : (const uint8_t *)"", feat.n);
	put_len(features, 1, ent.p, ent.n);
	free(feat.p);
	free(ent.p);
}

static void put_frame(buf *f, const buf *data)
{
	uint8_t h[12];
	rf_store_le64(h, data->n);
	rf_store_le32(h + 8, rf_tfr_masked_crc(h, 8));
	put(f, h, 12);
	put(f, data->p ? data->p : (const uint8_t *)"", data->n);
	uint8_t c[4];
	rf_store_le32(c, rf_tfr_masked_crc(data->p ? data->p : (const uint8_t *)"", data->n));
	put(f, c, 4);
}

/* Example i: "img" (one bytes value of 100 + i bytes), "label" (packed
 * int64 [i, -1]), "box" (unpacked floats [0.5, i]), "tags" (two bytes
 * values "a", "bc"), "ids" (unpacked int64 [7]), "none" (no kind). */
static void example(buf *ex, uint32_t i)
{
	buf fs = {0}, l = {0}, pk = {0};
	uint8_t img[400] = {0};
	for (uint32_t k = 0; k < 100 + i; k++)
		img[k] = (uint8_t)(k * 7 + i);
	put_len(&l, 1, img, 100 + i);
	put_feature(&fs, "img", 1, &l);
	l.n = 0;
	put_varint(&pk, i);
	put_varint(&pk, UINT64_MAX); /* -1 */
	put_len(&l, 1, pk.p, pk.n);
	put_feature(&fs, "label", 3, &l);
	l.n = 0;
	float v[2] = {0.5f, (float)i};
	for (int k = 0; k < 2; k++) {
		put_varint(&l, 1 << 3 | 5);
		put(&l, &v[k], 4);
	}
	put_feature(&fs, "box", 2, &l);
	l.n = 0;
	put_len(&l, 1, "a", 1);
	put_len(&l, 1, "bc", 2);
	put_feature(&fs, "tags", 1, &l);
	l.n = 0;
	put_varint(&l, 1 << 3 | 0);
	put_varint(&l, 7);
	put_feature(&fs, "ids", 3, &l);
	l.n = 0;
	put_feature(&fs, "none", 0, &l);
	put_len(ex, 1, fs.p, fs.n);
	free(fs.p);
	free(l.p);
	free(pk.p);
}

static buf make_file(uint32_t records)
{
	buf f = {0};
	for (uint32_t i = 0; i < records; i++) {
		buf ex = {0};
		example(&ex, i);
		put_frame(&f, &ex);
		free(ex.p);
	}
	return f;
}

static int open_buf(const char *url, const buf *f, const char *idx, bool raw, rf_shard_index **ix,
                    void **priv, rf_error *err)
{
	rf_fmt_object objs[2] = {{.url = url, .data = f->p, .size = f->n},
	                         {.url = "d/train.idx",
	                          .data = (const uint8_t *)(idx ? idx : ""),
	                          .size = idx ? strlen(idx) : 0}};
	rf_tfr_opts opt = {.raw = raw, .scan_only = idx == NULL};
	return rf_format_open_mem(&rf_tfrecord_format, objs, idx ? 2 : 1, &opt, ix, priv, NULL,
	                          NULL, err);
}

static int decode_unit(const rf_shard_index *ix, const void *priv, const uint8_t *src, uint32_t u,
                       uint8_t **slab, rf_unit_records *r, rf_error *err)
{
	const rf_block_info *b = &ix->block[u];
	*slab = malloc(b->decoded_bytes);
	assert_non_null(*slab);
	return rf_tfrecord_format.decode(NULL, ix, priv, u, src + b->offset, b->compressed_bytes,
	                                 *slab, b->decoded_bytes, r, "d/train.tfrecord", err);
}

static const rf_rec_field *field(const rf_unit_records *r, uint32_t i, const char *const *names,
                                 const char *name)
{
	for (uint32_t k = r->field_first[i]; k < r->field_first[i + 1]; k++)
		if (!strcmp(names[r->fields[k].name], name))
			return &r->fields[k];
	return NULL;
}

static void check_examples(const rf_shard_index *ix, const void *priv, const uint8_t *src,
                           uint32_t records)
{
	const char *const *names;
	assert_int_equal(rf_tfrecord_format.field_names(priv, &names), 6);
	uint32_t seen = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		uint8_t *slab;
		rf_unit_records r;
		rf_error err = {0};
		assert_int_equal(decode_unit(ix, priv, src, u, &slab, &r, &err), 0);
		for (uint32_t j = 0; j < r.records; j++, seen++) {
			const rf_rec_field *f = field(&r, j, names, "img");
			assert_non_null(f);
			assert_int_equal(f->len, 100 + seen);
			assert_int_equal(r.base[f->offset + 3], (uint8_t)(21 + seen));
			f = field(&r, j, names, "label");
			assert_int_equal(f->len, 16);
			assert_int_equal((int64_t)rf_load_le64(r.base + f->offset), seen);
			assert_int_equal((int64_t)rf_load_le64(r.base + f->offset + 8), -1);
			f = field(&r, j, names, "box");
			float v[2];
			assert_int_equal(f->len, 8);
			memcpy(v, r.base + f->offset, 8);
			assert_true(v[0] == 0.5f && v[1] == (float)seen);
			f = field(&r, j, names, "tags"); /* u32 n, u32 lens[n], values */
			assert_int_equal(f->len, 4 + 8 + 3);
			assert_memory_equal(r.base + f->offset, "\2\0\0\0\1\0\0\0\2\0\0\0abc", 15);
			f = field(&r, j, names, "ids");
			assert_int_equal(f->len, 8);
			assert_int_equal(rf_load_le64(r.base + f->offset), 7);
			f = field(&r, j, names, "none");
			assert_non_null(f);
			assert_int_equal(f->len, 0);
			char key[64];
			snprintf(key, sizeof(key), "train/%08u", seen);
			assert_int_equal(r.key_first[j + 1] - r.key_first[j], strlen(key));
			assert_memory_equal(r.keys + r.key_first[j], key, strlen(key));
		}
		free(slab);
	}
	assert_int_equal(seen, records);
}

static void test_examples(void **state)
{
	buf f = make_file(300); /* ~40 KiB: one unit */
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(open_buf("d/train.tfrecord", &f, NULL, false, &ix, &priv, &err), 0);
	assert_int_equal(ix->records, 300);
	assert_int_equal(ix->file_bytes, f.n);
	check_examples(ix, priv, f.p, 300);
	rf_tfrecord_format.close(ix, priv);
	free(f.p);
	/* TensorFlow's file of no records: a layout of none (within its bound) */
	buf empty = {0};
	assert_int_equal(open_buf("x.tfrecord", &empty, NULL, false, &ix, &priv, &err), 0);
	assert_int_equal(ix->records, 0);
	assert_int_equal(ix->blocks, 0);
	rf_tfrecord_format.close(ix, priv);
}

static void test_units_and_index(void **state)
{
	buf f = {0};
	for (uint32_t i = 0; i < 40; i++) { /* 40 records of 100 KB: several units */
		buf d = {0};
		uint8_t *x = calloc(1, 100000);
		x[0] = (uint8_t)i;
		put(&d, x, 100000);
		put_frame(&f, &d);
		free(x);
		free(d.p);
	}
	rf_shard_index *ix = NULL, *jx = NULL;
	void *priv = NULL, *jpriv = NULL;
	rf_error err = {0};
	assert_int_equal(open_buf("d/train.tfrecord", &f, NULL, true, &ix, &priv, &err), 0);
	assert_true(ix->blocks >= 3);
	/* the index the writer writes gives the same layout */
	char *text = NULL;
	size_t tl = 0;
	FILE *m = open_memstream(&text, &tl);
	assert_int_equal(rf_tfr_index_write(ix, priv, m, "d/train.tfrecord", &err), 0);
	fclose(m);
	assert_memory_equal(text, "0 100016\n100016 100016\n", 23);
	assert_int_equal(open_buf("d/train.tfrecord", &f, text, true, &jx, &jpriv, &err), 0);
	assert_true(rf_tfr_layout_from_index(jpriv));
	assert_int_equal(jx->blocks, ix->blocks);
	for (uint32_t u = 0; u < ix->blocks; u++) {
		assert_int_equal(jx->block[u].offset, ix->block[u].offset);
		assert_int_equal(jx->block[u].records, ix->block[u].records);
		uint8_t *slab;
		rf_unit_records r;
		assert_int_equal(decode_unit(jx, jpriv, f.p, u, &slab, &r, &err), 0);
		/* raw: the data in place, one field */
		assert_ptr_equal(r.base, f.p + jx->block[u].offset);
		assert_int_equal(r.fields[0].len, 100000);
		assert_int_equal(r.base[r.fields[0].offset], (uint8_t)jx->block[u].first_record);
		free(slab);
	}
	rf_tfrecord_format.close(jx, jpriv);
	/* a lying index: a record's offset moved; two records as one entry */
	char *lie = strdup(text);
	lie[strcspn(lie, "\n") + 1] = '9'; /* line 2's offset */
	assert_int_equal(open_buf("d/train.tfrecord", &f, lie, true, &jx, &jpriv, &err),
	                 RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "index d/train.idx: line 2: record 1 at offset 900016"));
	free(lie);
	char merged[8192];
	int n = snprintf(merged, sizeof(merged), "0 %u\n", 2 * 100016);
	for (uint32_t i = 2; i < 40; i++)
		n += snprintf(merged + n, sizeof(merged) - (size_t)n, "%u 100016\n", i * 100016);
	assert_int_equal(open_buf("d/train.tfrecord", &f, merged, true, &jx, &jpriv, &err), 0);
	uint8_t *slab;
	rf_unit_records r;
	assert_int_equal(decode_unit(jx, jpriv, f.p, 0, &slab, &r, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "record 0 (frame at byte 0)"));
	assert_non_null(strstr(err.msg, "index file is stale or wrong"));
	free(slab);
	rf_tfrecord_format.close(jx, jpriv);
	rf_tfrecord_format.close(ix, priv);
	free(text);
	free(f.p);
}

static void test_gzip(void **state)
{
	buf f = make_file(50), z = {0};
	uLongf zn = compressBound(f.n) + 64;
	z.p = malloc(zn);
	z_stream s = {0};
	assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	s.next_in = f.p;
	s.avail_in = (uInt)f.n;
	s.next_out = z.p;
	s.avail_out = (uInt)zn;
	assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
	z.n = s.total_out;
	deflateEnd(&s);
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(open_buf("d/train.tfrecord.gz", &z, NULL, false, &ix, &priv, &err), 0);
	assert_int_equal(ix->blocks, 1);
	check_examples(ix, priv, z.p, 50);
	rf_tfrecord_format.close(ix, priv);
	/* the same bytes named .zlib: not a zlib stream */
	assert_true(open_buf("d/train.tfrecord.zlib", &z, NULL, false, &ix, &priv, &err) < 0);
	assert_non_null(strstr(err.msg, "d/train.tfrecord.zlib"));
	free(z.p);
	free(f.p);
}

static int mem_read(void *ctx, const char *object, uint64_t offset, uint64_t len, void *out,
                    uint64_t *size, rf_error *err)
{
	const buf *z = ctx;
	(void)err;
	assert_null(object);
	assert_true(offset <= z->n && len <= z->n - offset);
	memcpy(out, z->p + offset, len);
	if (size)
		*size = z->n;
	return 0;
}

/* A .tfrecord.gz decoding past 32 MiB: opened in bounded memory (what the
 * open reserves at once far below its 34 MB), its sequential units decoded
 * through one state in reverse order (each restarts the stream), every
 * record its own. */
static void test_gzip_sequential(void **state)
{
	buf f = {0}, val = {0}, fs = {0}, ex = {0};
	uint8_t *mib = calloc(1, 1u << 20);
	for (uint32_t i = 0; i < 34; i++) { /* Example i: "img", 1 MiB, its first byte i */
		mib[0] = (uint8_t)i;
		val.n = fs.n = ex.n = 0;
		put_len(&val, 1, mib, 1u << 20);
		put_feature(&fs, "img", 1, &val);
		put_len(&ex, 1, fs.p, fs.n);
		put_frame(&f, &ex);
	}
	buf z = {.p = malloc(f.n / 100 + (1u << 16))};
	z_stream s = {0};
	assert_int_equal(deflateInit2(&s, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	s.next_in = f.p, s.avail_in = (uInt)f.n;
	s.next_out = z.p, s.avail_out = (uInt)(f.n / 100 + (1u << 16));
	assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
	z.n = s.total_out;
	deflateEnd(&s);
	rf_fmt_object obj = {.url = "d/big.tfrecord.gz", .data = z.p, .size = z.n};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	uint64_t held = 0, reserved = 0;
	rf_error err = {0};
	assert_int_equal(rf_format_open_mem(&rf_tfrecord_format, &obj, 1, NULL, &ix, &priv, &held,
	                                    &reserved, &err),
	                 0);
	assert_true(ix->sequential);
	assert_int_equal(ix->records, 34);
	assert_true(ix->blocks >= 17);
	assert_true(reserved < (f.n >> 1)); /* the stream never held whole */
	void *seq = NULL;
	static uint8_t more[1u << 16];
	for (uint32_t u = ix->blocks; u-- > 0;) {
		const rf_block_info *b = &ix->block[u];
		uint8_t *slab = malloc(b->decoded_bytes);
		rf_unit_records r;
		uint64_t skipped = 0;
		assert_int_equal(rf_fmt_decode_seq_with(&rf_tfrecord_format, &seq, ix, priv, u,
		                                        z.p + b->offset, b->compressed_bytes,
		                                        b->offset, more, sizeof(more), mem_read, &z,
		                                        slab, b->decoded_bytes, &r, &skipped,
		                                        "d/big.tfrecord.gz", &err),
		                 0);
		assert_int_equal(r.records, b->records);
		for (uint32_t j = 0; j < r.records; j++) {
			const rf_rec_field *fl = &r.fields[r.field_first[j]];
			assert_int_equal(fl->len, 1u << 20);
			assert_int_equal(r.base[fl->offset], (uint8_t)(b->first_record + j));
		}
		if (u > 0)
			assert_true(skipped > 0); /* the stream entered from its start */
		free(slab);
	}
	rf_tfr_seq_free(seq);
	rf_tfrecord_format.close(ix, priv);
	/* cut: the open names the stream's early end */
	obj.size = z.n / 2;
	assert_int_equal(
	    rf_format_open_mem(&rf_tfrecord_format, &obj, 1, NULL, &ix, &priv, NULL, NULL, &err),
	    RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "d/big.tfrecord.gz: the stream ends early"));
	free(z.p);
	free(f.p);
	free(val.p);
	free(fs.p);
	free(ex.p);
	free(mib);
}

static void test_hostile_frames(void **state)
{
	buf f = make_file(5);
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	uint64_t off = 0; /* record 3's frame */
	for (int i = 0; i < 3; i++)
		off += 16 + rf_load_le64(f.p + off);
	/* a data byte: the open's walk may take it; decode names the CRC */
	f.p[off + 12 + 30] ^= 0x01; /* inside img's bytes */
	assert_int_equal(open_buf("d/train.tfrecord", &f, NULL, false, &ix, &priv, &err), 0);
	uint8_t *slab;
	rf_unit_records r;
	assert_int_equal(decode_unit(ix, priv, f.p, 0, &slab, &r, &err), RF_E_CORRUPT);
	char want[128];
	snprintf(want, sizeof(want), "record 3 (frame at byte %llu)", (unsigned long long)off);
	assert_non_null(strstr(err.msg, want));
	assert_non_null(strstr(err.msg, "data's CRC"));
	free(slab);
	rf_tfrecord_format.close(ix, priv);
	/* a structural byte of the Example: the open names the CRC, not the parse */
	f.p[off + 12 + 30] ^= 0x01;
	f.p[off + 12 + 1] ^= 0x40;
	assert_int_equal(open_buf("d/train.tfrecord", &f, NULL, false, &ix, &priv, &err),
	                 RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, want));
	assert_non_null(strstr(err.msg, "data's CRC"));
	f.p[off + 12 + 1] ^= 0x40;
	/* a length byte: its CRC */
	f.p[off + 2] ^= 0x10;
	assert_int_equal(open_buf("d/train.tfrecord", &f, NULL, false, &ix, &priv, &err),
	                 RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, want));
	assert_non_null(strstr(err.msg, "length's CRC"));
	f.p[off + 2] ^= 0x10;
	/* cut inside the last frame */
	buf cut = {.p = f.p, .n = f.n - 3};
	assert_int_equal(open_buf("d/train.tfrecord", &cut, NULL, false, &ix, &priv, &err),
	                 RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "record 4"));
	assert_non_null(strstr(err.msg, "the file ends at byte"));
	/* a huge length with a correct CRC: refused, nothing allocated for it */
	buf big = {0};
	uint8_t h[16];
	rf_store_le64(h, 1ull << 40);
	rf_store_le32(h + 8, rf_tfr_masked_crc(h, 8));
	put(&big, h, 12);
	assert_int_equal(open_buf("d/train.tfrecord", &big, NULL, false, &ix, &priv, &err),
	                 RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "record 0 (frame at byte 0): a record of 1099511627776"));
	free(big.p);
	/* records that are not Examples: named, unless raw */
	buf txt = {0}, d = {0};
	put(&d, "hello, not a protobuf \xff\xff", 24);
	put_frame(&txt, &d);
	assert_int_equal(open_buf("d/train.tfrecord", &txt, NULL, false, &ix, &priv, &err),
	                 RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "record 0 (frame at byte 0): byte"));
	assert_non_null(strstr(err.msg, "not a tf.train.Example"));
	assert_int_equal(open_buf("d/train.tfrecord", &txt, NULL, true, &ix, &priv, &err), 0);
	rf_tfrecord_format.close(ix, priv);
	free(txt.p);
	free(d.p);
	free(f.p);
}

typedef struct walk_out {
	int n;
	char keys[16][32];
	uint64_t out[16];
} walk_out;

static int on_feature(void *ctx, const rf_ex_feature *f)
{
	walk_out *w = ctx;
	if (w->n < 16) {
		snprintf(w->keys[w->n], 32, "%.*s", (int)f->key_len, f->key);
		w->out[w->n] = f->out_bytes;
	}
	w->n++;
	return 0;
}

static int walk(const buf *b, walk_out *w, rf_pb_error *e)
{
	memset(w, 0, sizeof(*w));
	return rf_example_walk(b->p, b->n, on_feature, w, NULL, e);
}

static void test_protobuf(void **state)
{
	const uint8_t *p;
	uint64_t v;
	uint8_t ten[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	p = ten;
	assert_int_equal(rf_pb_varint(&p, ten + 10, &v), 0);
	assert_int_equal(v, UINT64_MAX);
	ten[9] = 0x02; /* past 64 bits */
	p = ten;
	assert_int_equal(rf_pb_varint(&p, ten + 10, &v), -1);
	p = ten;
	assert_int_equal(rf_pb_varint(&p, ten + 5, &v), -1); /* truncated */
	buf ex = {0};
	walk_out w;
	rf_pb_error e;
	example(&ex, 2);
	assert_int_equal(walk(&ex, &w, &e), 0);
	assert_int_equal(w.n, 6);
	assert_string_equal(w.keys[0], "img");
	assert_int_equal(w.out[0], 102);
	assert_int_equal(w.out[1], 16);
	assert_int_equal(w.out[3], 15);
	/* Features given twice merge (protobuf's rule): both maps' entries */
	buf two = {0};
	put(&two, ex.p, ex.n);
	put(&two, ex.p, ex.n);
	assert_int_equal(walk(&two, &w, &e), 0);
	assert_int_equal(w.n, 12);
	free(two.p);
	/* errors name the byte */
	buf bad = {0};
	put_len(&bad, 2, "x", 1); /* Example field 2 */
	assert_int_equal(walk(&bad, &w, &e), -1);
	assert_int_equal(e.at, 0);
	assert_non_null(strstr(e.what, "other than features"));
	bad.n = 0;
	uint8_t grp[] = {0x0b}; /* field 1, a group */
	put(&bad, grp, 1);
	assert_int_equal(walk(&bad, &w, &e), -1);
	assert_non_null(strstr(e.what, "group"));
	bad.n = 0;
	buf fs = {0}, l = {0};
	put_len(&l, 1, "x", 1);
	/* a key holding a NUL, a Feature with two lists, a float list of 3 bytes */
	fs.n = bad.n = 0;
	buf ent = {0}, feat = {0};
	put_len(&ent, 1, "a\0b", 3);
	put_len(&fs, 1, ent.p, ent.n);
	put_len(&bad, 1, fs.p, fs.n);
	assert_int_equal(walk(&bad, &w, &e), -1);
	assert_non_null(strstr(e.what, "NUL"));
	fs.n = bad.n = ent.n = 0;
	put_len(&feat, 1, l.p, l.n);
	put_len(&feat, 3, "", 0);
	put_len(&ent, 1, "k", 1);
	put_len(&ent, 2, feat.p, feat.n);
	put_len(&fs, 1, ent.p, ent.n);
	put_len(&bad, 1, fs.p, fs.n);
	assert_int_equal(walk(&bad, &w, &e), -1);
	assert_non_null(strstr(e.what, "two lists"));
	fs.n = bad.n = ent.n = feat.n = l.n = 0;
	put_len(&l, 1, "abc", 3);
	put_len(&feat, 2, l.p, l.n);
	put_len(&ent, 1, "k", 1);
	put_len(&ent, 2, feat.p, feat.n);
	put_len(&fs, 1, ent.p, ent.n);
	put_len(&bad, 1, fs.p, fs.n);
	assert_int_equal(walk(&bad, &w, &e), -1);
	assert_non_null(strstr(e.what, "float_list"));
	/* a length past its message */
	uint8_t past[] = {0x0a, 0x03, 0x0a, 0x10, 0x00};
	bad.n = 0;
	put(&bad, past, sizeof(past));
	assert_int_equal(walk(&bad, &w, &e), -1);
	assert_int_equal(e.at, 2);
	assert_non_null(strstr(e.what, "past its message"));
	free(ent.p);
	free(feat.p);
	free(fs.p);
	free(l.p);
	free(bad.p);
	free(ex.p);
}

static void test_index_parse(void **state)
{
	uint32_t *lens = NULL;
	uint64_t n = 0;
	rf_error err = {0};
	const char *ok = "0 20\n20 16\r\n\n36 100\n";
	assert_int_equal(
	    rf_tfr_index_parse((const uint8_t *)ok, strlen(ok), 136, "x.idx", &lens, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(lens[0], 4);
	assert_int_equal(lens[1], 0);
	assert_int_equal(lens[2], 84);
	free(lens);
	const char *bad[] = {"0 20\n21 16\n", "0 15\n", "0 20 x\n", "0 99999999999999999999\n",
	                     "0 20\n",        "0 200\n"};
	const char *why[] = {"line 2: record 1 at offset 21",    "SIZE that is not a frame",
	                     "not two decimal numbers",          "not two decimal numbers",
	                     "end at byte 20, the file has 136", "ends past the file"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rf_tfr_index_parse((const uint8_t *)bad[i], strlen(bad[i]), 136,
		                                    "x.idx", &lens, &n, &err),
		                 RF_E_CORRUPT);
		if (!strstr(err.msg, why[i]))
			fail_msg("%s: %s", bad[i], err.msg);
	}
	bool q = false;
	char *s = rf_tfr_idx_sibling("http://h/a/train.tfrecords?X-Amz-Signature=1", &q);
	assert_string_equal(s, "http://h/a/train.idx");
	assert_true(q);
	free(s);
	assert_null(rf_tfr_idx_sibling("a/train.tfrecord.gz", NULL));
	assert_int_equal(rf_format_claim(&rf_tfrecord_format, "a/x.tfrecord-00001-of-00010"),
	                 RF_FMT_YES);
	assert_int_equal(rf_format_claim(&rf_tfrecord_format, "a/x.tfrecords.gz"), RF_FMT_YES);
	assert_int_equal(rf_format_claim(&rf_tfrecord_format, "a/x.tar.gz"), RF_FMT_NO);
	assert_ptr_equal(rf_format_for("s3://b/x.tfrecord.zlib", false), &rf_tfrecord_format);
}

/* A walked Examples layout is kept in the index cache with its keys and
 * slab sizes: the entry alone opens the same layout, read raw too; a key
 * the records lack is caught at decode, a malformed entry at open. */
static void test_cache_examples(void **state)
{
	buf f = make_file(300);
	rf_shard_index *ix = NULL, *jx = NULL;
	void *priv = NULL, *jpriv = NULL;
	rf_error err = {0};
	assert_int_equal(open_buf("d/train.tfrecord", &f, NULL, false, &ix, &priv, &err), 0);
	assert_true(rf_tfrecord_format.cacheable(priv));
	char *text = NULL;
	size_t tl = 0;
	FILE *m = open_memstream(&text, &tl);
	assert_int_equal(rf_tfrecord_format.sidecar_write(ix, priv, m, "d/train.tfrecord", &err),
	                 0);
	fclose(m);
	assert_true(rf_tfr_cache_examples((const uint8_t *)text, tl));
	assert_non_null(strstr(text, "# key 696d67\n")); /* "img" */
	assert_int_equal(open_buf("d/train.tfrecord", &f, text, false, &jx, &jpriv, &err), 0);
	assert_true(rf_tfrecord_format.layout_cached(jpriv));
	assert_false(rf_tfrecord_format.cacheable(jpriv)); /* not put back */
	assert_int_equal(jx->records, 300);
	assert_int_equal(jx->blocks, ix->blocks);
	assert_int_equal(jx->largest_record_bytes, ix->largest_record_bytes);
	for (uint32_t u = 0; u < ix->blocks; u++)
		assert_int_equal(jx->block[u].decoded_bytes, ix->block[u].decoded_bytes);
	check_examples(jx, jpriv, f.p, 300);
	rf_tfrecord_format.close(jx, jpriv);
	/* read raw, the same entry gives the frames */
	assert_int_equal(open_buf("d/train.tfrecord", &f, text, true, &jx, &jpriv, &err), 0);
	assert_int_equal(jx->records, 300);
	uint8_t *slab;
	rf_unit_records r;
	assert_int_equal(decode_unit(jx, jpriv, f.p, 0, &slab, &r, &err), 0);
	free(slab);
	rf_tfrecord_format.close(jx, jpriv);
	/* an entry naming "imh" for "img": the open takes it, decode refuses */
	char *k = strstr(text, "# key 696d67\n");
	k[11] = '8';
	assert_int_equal(open_buf("d/train.tfrecord", &f, text, false, &jx, &jpriv, &err), 0);
	assert_int_equal(decode_unit(jx, jpriv, f.p, 0, &slab, &r, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "feature 'img' is not among the keys"));
	free(slab);
	rf_tfrecord_format.close(jx, jpriv);
	k[11] = '7';
	/* slabs too small for the records: decode refuses, it never writes past */
	char *small = strdup(text), *line = strstr(small, "\n0 ");
	assert_non_null(line);
	for (char *p = line + 1; *p; p = strchr(p, '\n') + 1) {
		char *eol = strchr(p, '\n'), *last = eol;
		while (last[-1] != ' ')
			last--;
		memset(last, ' ', (size_t)(eol - last));
		memcpy(last, "76", 2);
	}
	assert_int_equal(open_buf("d/train.tfrecord", &f, small, false, &jx, &jpriv, &err), 0);
	assert_int_equal(decode_unit(jx, jpriv, f.p, 0, &slab, &r, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "the layout allowed"));
	free(slab);
	rf_tfrecord_format.close(jx, jpriv);
	free(small);
	rf_tfrecord_format.close(ix, priv);
	free(text);
	free(f.p);
	/* malformed entries: each named by its line */
	const char *bad[] = {
	    "# ringfeed-index-cache examples x\n0 20 100\n",
	    "# ringfeed-index-cache examples 8\n# key 6\n0 20 100\n",
	    "# ringfeed-index-cache examples 8\n# key 61\n# key 61\n0 20 100\n",
	    "# ringfeed-index-cache examples 8\n# key 6100\n0 20 100\n",
	    "# ringfeed-index-cache examples 8\n# key 61\n0 20 75\n",
	    "# ringfeed-index-cache examples 8\n# key 61\n0 20\n",
	};
	const char *why[] = {"line 1: not",
	                     "line 2: a key of 1 to 255",
	                     "line 3: a key listed twice",
	                     "line 2: a key of 1 to 255",
	                     "line 3: record 0 at offset 0: a SLAB",
	                     "line 3: record 0 at offset 0: not three decimal numbers"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rf_tfr_cached c;
		assert_int_equal(rf_tfr_cache_parse((const uint8_t *)bad[i], strlen(bad[i]), 20,
		                                    "x.idx", &c, &err),
		                 RF_E_CORRUPT);
		if (!strstr(err.msg, why[i]))
			fail_msg("%s: %s", bad[i], err.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_examples),       cmocka_unit_test(test_units_and_index),
	    cmocka_unit_test(test_gzip),           cmocka_unit_test(test_hostile_frames),
	    cmocka_unit_test(test_protobuf),       cmocka_unit_test(test_index_parse),
	    cmocka_unit_test(test_cache_examples), cmocka_unit_test(test_gzip_sequential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
