/* test_parquet.c - Parquet (shards/parquet*.c, shards/thrift.c) through its
 * seam calls, on files this test lays out with a small Thrift compact
 * writer: a PLAIN INT32 column's rows back as fields, page CRCs checked,
 * and hostile footers answered with errors naming the file and the place:
 * a row group past a unit's limit, nested columns, values nested past the
 * skipper's stack, lists longer than their bytes, a footer longer than the
 * file, a footer past the first read; the column's token windows. */
#include "parquet.h"
#include "testutil.h"
#include "thrift.h"

#include <stdlib.h>
#include <zlib.h>

extern const rf_format rf_parquet_format;

/* ------------------------------------------------------------ a writer */

typedef struct tw {
	uint8_t *p;
	size_t n, cap;
	int16_t last[80];
	int depth;
} tw;

static void byte(tw *w, uint8_t b)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 4096;
		w->p = realloc(w->p, w->cap);
		assert_non_null(w->p);
	}
	w->p[w->n++] = b;
}

static void put_bytes(tw *w, const void *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		byte(w, ((const uint8_t *)d)[i]);
}

static void varint(tw *w, uint64_t v)
{
	while (v >= 0x80) {
		byte(w, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	byte(w, (uint8_t)v);
}

static void zz(tw *w, int64_t v)
{
	varint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void field(tw *w, int16_t id, uint8_t type)
{
	int16_t d = id - w->last[w->depth];
	if (d > 0 && d <= 15) {
		byte(w, (uint8_t)(d << 4 | type));
	} else {
		byte(w, type);
		zz(w, id);
	}
	w->last[w->depth] = id;
}

static void f_int(tw *w, int16_t id, int64_t v)
{
	field(w, id, RF_TH_I64);
	zz(w, v);
}

static void f_i32(tw *w, int16_t id, int64_t v)
{
	field(w, id, RF_TH_I32);
	zz(w, v);
}

static void f_str(tw *w, int16_t id, const char *s)
{
	field(w, id, RF_TH_BINARY);
	varint(w, strlen(s));
	put_bytes(w, s, strlen(s));
}

static void begin(tw *w)
{
	w->last[++w->depth] = 0;
}

static void f_struct(tw *w, int16_t id)
{
	field(w, id, RF_TH_STRUCT);
	begin(w);
}

static void stop(tw *w)
{
	byte(w, 0);
	w->depth--;
}

static void list(tw *w, int16_t id, uint8_t elem, uint32_t n)
{
	field(w, id, RF_TH_LIST);
	if (n < 15) {
		byte(w, (uint8_t)(n << 4 | elem));
	} else {
		byte(w, (uint8_t)(0xf0 | elem));
		varint(w, n);
	}
}

static void schema_el(tw *w, const char *name, int type, int rep, int children)
{
	begin(w);
	if (type >= 0)
		f_i32(w, 1, type);
	if (rep >= 0)
		f_i32(w, 3, rep);
	f_str(w, 4, name);
	if (children)
		f_i32(w, 5, children);
	stop(w);
}

/* One INT32 column chunk's metadata. */
static void chunk(tw *w, const char *name, int64_t values, int64_t at, int64_t bytes)
{
	begin(w);
	f_int(w, 2, at);
	f_struct(w, 3);
	f_i32(w, 1, PQ_INT32);
	list(w, 2, RF_TH_I32, 1);
	zz(w, PQ_ENC_PLAIN);
	list(w, 3, RF_TH_BINARY, 1);
	varint(w, strlen(name));
	put_bytes(w, name, strlen(name));
	f_i32(w, 4, PQ_CODEC_NONE);
	f_int(w, 5, values);
	f_int(w, 6, bytes);
	f_int(w, 7, bytes);
	f_int(w, 9, at);
	stop(w);
	stop(w);
}

typedef struct spec {
	uint32_t rows;     /* rows of the page */
	int64_t meta_rows; /* the row group's rows (0: rows) */
	bool crc, bad_crc; /* a page CRC, a wrong one */
	bool nested;       /* a struct column "st" {y INT32} after x */
	int deep;          /* an unknown FileMetaData field of this many nested structs */
	uint32_t kv_bytes; /* key_value_metadata of about this many bytes */
	uint32_t lie_list; /* the schema's list header claims this many elements */
} spec;

/* "PAR1", a page of x = 3 i, the footer, its length, "PAR1". */
static tw file(const spec *s)
{
	tw w = {0}, pg = {0};
	put_bytes(&w, "PAR1", 4);
	uint8_t *vals = calloc(s->rows + 1, 4);
	for (uint32_t i = 0; i < s->rows; i++)
		rf_store_le32(vals + 4 * i, 3 * i);
	begin(&pg);
	f_i32(&pg, 1, PQ_PAGE_DATA);
	f_i32(&pg, 2, 4 * s->rows);
	f_i32(&pg, 3, 4 * s->rows);
	if (s->crc)
		f_i32(&pg, 4, (int32_t)(crc32(0, vals, 4 * s->rows) ^ (s->bad_crc ? 1 : 0)));
	f_struct(&pg, 5);
	f_i32(&pg, 1, s->rows);
	f_i32(&pg, 2, PQ_ENC_PLAIN);
	f_i32(&pg, 3, PQ_ENC_RLE);
	f_i32(&pg, 4, PQ_ENC_RLE);
	stop(&pg);
	stop(&pg);
	put_bytes(&pg, vals, 4 * s->rows);
	free(vals);
	int64_t at = (int64_t)w.n, len = (int64_t)pg.n;
	put_bytes(&w, pg.p, pg.n);
	if (s->nested) /* the struct's chunk: the same bytes again */
		put_bytes(&w, pg.p, pg.n);
	free(pg.p);
	size_t footer = w.n;
	int64_t rows = s->meta_rows ? s->meta_rows : s->rows;
	begin(&w);
	f_i32(&w, 1, 2);
	list(&w, 2, RF_TH_STRUCT, s->lie_list ? s->lie_list : s->nested ? 4 : 2);
	schema_el(&w, "schema", -1, -1, s->nested ? 2 : 1);
	schema_el(&w, "x", PQ_INT32, PQ_REQUIRED, 0);
	if (s->nested) {
		schema_el(&w, "st", -1, PQ_OPTIONAL, 1);
		schema_el(&w, "y", PQ_INT32, PQ_REQUIRED, 0);
	}
	f_int(&w, 3, rows);
	list(&w, 4, RF_TH_STRUCT, 1);
	begin(&w);
	list(&w, 1, RF_TH_STRUCT, s->nested ? 2 : 1);
	chunk(&w, "x", rows, at, len);
	if (s->nested)
		chunk(&w, "y", rows, at + len, len);
	f_int(&w, 2, 4 * rows);
	f_int(&w, 3, rows);
	stop(&w);
	if (s->kv_bytes) {
		uint32_t n = s->kv_bytes / 1000 + 1;
		list(&w, 5, RF_TH_STRUCT, n);
		char v[1001];
		memset(v, 'v', 1000);
		v[1000] = 0;
		for (uint32_t i = 0; i < n; i++) {
			begin(&w);
			f_str(&w, 1, "k");
			f_str(&w, 2, v);
			stop(&w);
		}
	}
	if (s->deep) {
		f_struct(&w, 20);
		for (int i = 1; i < s->deep; i++)
			f_struct(&w, 1);
		for (int i = 0; i < s->deep; i++)
			stop(&w);
	}
	stop(&w);
	uint8_t le[4];
	rf_store_le32(le, (uint32_t)(w.n - footer));
	put_bytes(&w, le, 4);
	put_bytes(&w, "PAR1", 4);
	return w;
}

static int open_spec(const spec *s, const char *columns, rf_shard_index **ix, void **priv,
                     rf_error *err, tw *out)
{
	*out = file(s);
	rf_fmt_object obj = {.url = "d/part-7.parquet", .data = out->p, .size = out->n};
	rf_pq_opts opt = {0};
	if (columns)
		snprintf(opt.columns, sizeof(opt.columns), "%s", columns);
	return rf_format_open_mem(&rf_parquet_format, &obj, 1, &opt, ix, priv, NULL, NULL, err);
}

/* Decodes unit 0 of the file; 0 or the decode's error. */
static int decode0(const tw *f, const rf_shard_index *ix, const void *priv, rf_unit_records *r,
                   uint8_t **dst, rf_error *err)
{
	const rf_block_info *b = &ix->block[0];
	*dst = malloc(b->decoded_bytes);
	assert_non_null(*dst);
	return rf_parquet_format.decode(NULL, ix, priv, 0, f->p + b->offset, b->compressed_bytes,
	                                *dst, b->decoded_bytes, r, "d/part-7.parquet", err);
}

/* ------------------------------------------------------------ tests */

static void test_rows(void **state)
{
	(void)state;
	for (int crc = 0; crc < 2; crc++) {
		spec s = {.rows = 1000, .crc = crc};
		rf_shard_index *ix;
		void *priv;
		rf_error err = {0};
		tw f;
		assert_int_equal(open_spec(&s, NULL, &ix, &priv, &err, &f), 0);
		assert_int_equal(ix->blocks, 1);
		assert_int_equal(ix->records, 1000);
		const char *const *names;
		assert_int_equal(rf_parquet_format.field_names(priv, &names), 1);
		assert_string_equal(names[0], "x");
		rf_unit_records r;
		uint8_t *dst;
		assert_int_equal(decode0(&f, ix, priv, &r, &dst, &err), 0);
		assert_int_equal(r.records, 1000);
		for (uint32_t i = 0; i < 1000; i++) {
			assert_int_equal(rf_record_end(r.ends, i), 4 * (i + 1));
			const rf_rec_field *fl = &r.fields[r.field_first[i]];
			assert_int_equal(r.field_first[i + 1] - r.field_first[i], 1);
			assert_int_equal(fl->len, 4);
			assert_int_equal(rf_load_le32(r.base + fl->offset), 3 * i);
			char key[64];
			snprintf(key, sizeof(key), "part-7/%u", i);
			assert_int_equal(r.key_first[i + 1] - r.key_first[i], strlen(key));
			assert_memory_equal(r.keys + r.key_first[i], key, strlen(key));
		}
		free(dst);
		rf_parquet_format.close(ix, priv);
		free(f.p);
	}
}

static void test_crc(void **state)
{
	(void)state;
	spec s = {.rows = 100, .crc = true, .bad_crc = true};
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	tw f;
	assert_int_equal(open_spec(&s, NULL, &ix, &priv, &err, &f), 0);
	rf_unit_records r;
	uint8_t *dst;
	assert_int_equal(decode0(&f, ix, priv, &r, &dst, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "d/part-7.parquet: row group 0, column x, at byte 4: the "
	                                "page's CRC does not match"));
	free(dst);
	rf_parquet_format.close(ix, priv);
	free(f.p);
}

static void expect_open_error(const spec *s, const char *columns, int code, const char *msg)
{
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	tw f;
	int rc = open_spec(s, columns, &ix, &priv, &err, &f);
	if (rc != code || !strstr(err.msg, msg))
		fail_msg("rc %d (expected %d): %s (expected \"%s\")", rc, code, err.msg, msg);
	assert_null(ix);
	free(f.p);
}

static void test_large_group(void **state)
{
	(void)state;
	/* 100M rows of INT32: 400 MB of values, past a unit's 256 MiB */
	spec s = {.rows = 10, .meta_rows = 100000000};
	expect_open_error(&s, NULL, -EFBIG, "d/part-7.parquet: row group 0 (100000000 rows");
	/* the refusal names the group's size and the limit it is past (issue 28) */
	expect_open_error(&s, NULL, -EFBIG, "(100000000 rows, 57 bytes stored) decodes to up to ");
	expect_open_error(&s, NULL, -EFBIG, "more than a read unit holds (268435456 bytes)");
}

static void test_nested(void **state)
{
	(void)state;
	spec s = {.rows = 10, .nested = true};
	expect_open_error(&s, "x,st", -EPROTONOSUPPORT,
	                  "column \"st\" is a nested type (a struct or list) other than a list of "
	                  "numbers");
	expect_open_error(&s, "x,nope", -ENOENT, "no column \"nope\"");
	/* by default the struct is left out and x reads */
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	tw f;
	assert_int_equal(open_spec(&s, NULL, &ix, &priv, &err, &f), 0);
	const char *const *names;
	assert_int_equal(rf_parquet_format.field_names(priv, &names), 1);
	rf_parquet_format.close(ix, priv);
	free(f.p);
}

static void test_deep(void **state)
{
	(void)state;
	spec ok = {.rows = 10, .deep = 63};
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	tw f;
	assert_int_equal(open_spec(&ok, NULL, &ix, &priv, &err, &f), 0);
	rf_parquet_format.close(ix, priv);
	free(f.p);
	spec deep = {.rows = 10, .deep = 70};
	expect_open_error(&deep, NULL, RF_E_CORRUPT, "values nested deeper than 64");
}

static void test_hostile_footer(void **state)
{
	(void)state;
	spec lie = {.rows = 10, .lie_list = 100000};
	expect_open_error(&lie, NULL, RF_E_CORRUPT,
	                  "d/part-7.parquet: footer (FileMetaData) at byte");
	expect_open_error(&lie, NULL, RF_E_CORRUPT, "a list longer than the bytes left");
	/* the footer's length past the file */
	tw f = file(&(spec){.rows = 10});
	rf_store_le32(f.p + f.n - 8, (uint32_t)f.n);
	rf_fmt_object obj = {.url = "d/x.parquet", .data = f.p, .size = f.n};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(
	    rf_format_open_mem(&rf_parquet_format, &obj, 1, NULL, &ix, &priv, NULL, NULL, &err),
	    RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "d/x.parquet: at byte"));
	assert_non_null(strstr(err.msg, "a footer of"));
	memcpy(f.p + f.n - 4, "PAR2", 4);
	assert_int_equal(
	    rf_format_open_mem(&rf_parquet_format, &obj, 1, NULL, &ix, &priv, NULL, NULL, &err),
	    RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "not a Parquet file"));
	free(f.p);
}

static void test_big_footer(void **state)
{
	(void)state;
	/* a footer past the first read (1 MiB locally): a second read of it */
	spec s = {.rows = 10, .kv_bytes = 1500000};
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	tw f;
	assert_int_equal(open_spec(&s, NULL, &ix, &priv, &err, &f), 0);
	assert_int_equal(ix->records, 10);
	rf_parquet_format.close(ix, priv);
	free(f.p);
}

/* seq_len over the INT32 column x (one token a row: x = 3 i): window j is
 * tokens [10 j, 10 j + 11), widened to int64 on request; a row group past a
 * unit's limit is refused at open naming it (the token count reads it). */
static void test_tokens(void **state)
{
	(void)state;
	for (int wide = 0; wide < 2; wide++) {
		tw f = file(&(spec){.rows = 1000});
		rf_fmt_object obj = {.url = "d/part-7.parquet", .data = f.p, .size = f.n};
		rf_pq_opts opt = {.tok = {.seq_len = 10, .token_out = wide ? RF_TOK_I64 : 0}};
		rf_shard_index *ix;
		void *priv;
		rf_error err = {0};
		assert_int_equal(rf_format_open_mem(&rf_parquet_format, &obj, 1, &opt, &ix, &priv,
		                                    NULL, NULL, &err),
		                 0);
		assert_int_equal(ix->records, 99); /* (1000 - 1) / 10 */
		assert_int_equal(ix->blocks, 1);
		const char *const *names;
		assert_int_equal(rf_parquet_format.field_names(priv, &names), 0);
		assert_non_null(strstr(ix->metadata, "\"tokens\":1000"));
		rf_unit_records r;
		uint8_t *dst;
		assert_int_equal(decode0(&f, ix, priv, &r, &dst, &err), 0);
		assert_int_equal(r.records, 99);
		assert_null(r.fields);
		unsigned w = wide ? 8 : 4;
		for (uint32_t j = 0; j < 99; j++) {
			assert_int_equal(rf_record_end(r.ends, j), 11 * w * (j + 1));
			for (uint32_t t = 0; t < 11; t++) {
				const uint8_t *p = r.base + 11 * w * j + w * t;
				uint64_t v = wide ? rf_load_le64(p) : rf_load_le32(p);
				assert_int_equal(v, 3 * (10 * j + t));
			}
		}
		free(dst);
		rf_parquet_format.close(ix, priv);
		free(f.p);
	}
	tw f = file(&(spec){.rows = 10, .meta_rows = 100000000});
	rf_fmt_object obj = {.url = "d/part-7.parquet", .data = f.p, .size = f.n};
	rf_pq_opts opt = {.tok = {.seq_len = 10}};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(
	    rf_format_open_mem(&rf_parquet_format, &obj, 1, &opt, &ix, &priv, NULL, NULL, &err),
	    -EFBIG);
	assert_non_null(strstr(err.msg, "d/part-7.parquet: row group 0 (100000000 rows"));
	assert_non_null(strstr(err.msg, "more than a read unit holds (268435456 bytes)"));
	assert_non_null(strstr(err.msg, "bytes stored) decodes to up to "));
	free(f.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows),        cmocka_unit_test(test_crc),
	    cmocka_unit_test(test_large_group), cmocka_unit_test(test_nested),
	    cmocka_unit_test(test_deep),        cmocka_unit_test(test_hostile_footer),
	    cmocka_unit_test(test_big_footer),  cmocka_unit_test(test_tokens),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
