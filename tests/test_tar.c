/* test_tar.c - the WebDataset tar format (shards/tar.c) through its seam
 * calls: grouping members into samples as webdataset does, GNU/PAX/ustar
 * names and base-256 sizes, units of whole samples decoded in place, and
 * hostile headers answered with errors that name the shard and the byte. */
#include "tar.h"
#include "testutil.h"
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_estimateDStreamSize */
#include <zstd.h>

/* ---------------------------------------------------- a small tar builder */

typedef struct tarbuf {
	uint8_t *p;
	size_t n, cap;
} tarbuf;

static void tb_put(tarbuf *t, const void *d, size_t n)
{
	size_t need = t->n + n + 512;
	if (need > t->cap) {
		t->cap = need * 2;
		t->p = realloc(t->p, t->cap);
		assert_non_null(t->p);
	}
	memcpy(t->p + t->n, d, n);
	t->n += n;
	while (t->n % 512)
		t->p[t->n++] = 0;
}

static void tb_header(tarbuf *t, const char *name, uint64_t size, char type, bool base256)
{
	uint8_t h[512] = {0};
	snprintf((char *)h, 100, "%s", name);
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	if (base256) {
		h[124] = 0x80;
		for (int i = 0; i < 8; i++)
			h[135 - i] = (uint8_t)(size >> (8 * i));
	} else {
		snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
	}
	memcpy(h + 136, "00000000000", 11);
	h[156] = (uint8_t)type;
	memcpy(h + 257,
	       "ustar\0"
	       "00",
	       8);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	tb_put(t, h, 512);
}

static void tb_file(tarbuf *t, const char *name, const void *data, size_t len)
{
	if (strlen(name) >= 100) { /* GNU long name */
		tb_header(t, "././@LongLink", strlen(name) + 1, 'L', false);
		tb_put(t, name, strlen(name) + 1);
	}
	tb_header(t, name, len, '0', false);
	if (len)
		tb_put(t, data, len);
}

static void tb_pax_file(tarbuf *t, const char *name, const void *data, size_t len)
{
	char rec[5000];
	int body = (int)strlen(name) + 7; /* " path=" + name + "\n" */
	int digits = body + 3 >= 1000 ? 4 : body + 2 >= 100 ? 3 : 2;
	int n = snprintf(rec, sizeof(rec), "%d path=%s\n", body + digits, name);
	tb_header(t, "PaxHeader", (uint64_t)n, 'x', false);
	tb_put(t, rec, (size_t)n);
	tb_header(t, "placeholder.bin", len, '0', false);
	if (len)
		tb_put(t, data, len);
}

static void tb_end(tarbuf *t)
{
	uint8_t z[1024] = {0};
	tb_put(t, z, sizeof(z));
}

/* ------------------------------------------------- the open, driven here */

/* The index file beside t.tar (t.idx) the next open finds (NULL: none),
 * and the shard's bytes the last open read. */
static const uint8_t *g_idx;
static size_t g_idx_len;
static uint64_t g_shard_read;

/* Delivers a want of the sidecar t.idx (absent when g_idx is NULL). */
static void deliver_idx(rf_fmt_open *o)
{
	assert_string_equal(o->want.object, "t.idx");
	assert_true(o->want.optional || g_idx); /* its size first, optional */
	o->absent = !g_idx;
	o->got_object_size = g_idx ? g_idx_len : 0;
	o->got = NULL;
	o->got_offset = o->got_len = 0;
	if (!g_idx)
		return;
	assert_true(o->want.offset + o->want.len <= g_idx_len);
	o->got = g_idx + o->want.offset;
	o->got_offset = o->want.offset;
	o->got_len = o->want.len;
}

static int open_buf(const uint8_t *buf, size_t len, bool local, rf_shard_index **ix, void **priv,
                    uint32_t *steps, rf_error *err)
{
	rf_fmt_open o = {.url = "t.tar", .name = "t.tar", .size = len, .local = local};
	*steps = 0;
	g_shard_read = 0;
	for (;;) {
		uint64_t may_hold = o.held_bytes + (o.got ? o.want.parse_bound : 0);
		int rc = rf_tar_format.open_step(&o, err);
		/* the engine's rule: a step holds at most what it held plus its bound */
		if (rc >= 0)
			assert_true(o.held_bytes <= may_hold);
		o.absent = false;
		if (rc == RF_FMT_NEED && o.want.object) {
			deliver_idx(&o);
			(*steps)++;
			continue;
		}
		if (rc == RF_FMT_NEED) {
			assert_true(o.want.offset + o.want.len <= len);
			assert_true(o.want.parse_bound > 0);
			g_shard_read += o.want.len;
			o.got = buf + o.want.offset;
			o.got_offset = o.want.offset;
			o.got_len = o.want.len;
			(*steps)++;
			continue;
		}
		rf_tar_format.open_abort(&o);
		if (rc == RF_FMT_DONE) {
			*ix = o.index;
			*priv = o.priv;
			assert_true(o.held_bytes > 0);
		} else {
			assert_true(rc < 0);
			assert_int_equal(err->code, rc);
		}
		return rc;
	}
}

typedef struct decoded {
	rf_unit_records r;
	uint8_t *table;
} decoded;

static void decode_unit(const uint8_t *buf, const rf_shard_index *ix, const void *priv, uint32_t u,
                        decoded *d)
{
	rf_error err = {0};
	const rf_block_info *b = &ix->block[u];
	d->table = malloc(rf_fmt_table_bytes(b->records));
	int rc =
	    rf_tar_format.decode(NULL, ix, priv, u, buf + b->offset, b->compressed_bytes, d->table,
	                         rf_fmt_table_bytes(b->records), &d->r, "t.tar", &err);
	if (rc)
		fail_msg("decode: %s", err.msg);
}

static const char *field_name(const void *priv, uint32_t id)
{
	const char *const *names;
	uint32_t n = rf_tar_format.field_names(priv, &names);
	assert_true(id < n);
	return names[id];
}

/* Record i's field called `name` (NULL: absent), its length in *len. */
static const uint8_t *rec_field(const decoded *d, const void *priv, uint32_t i, const char *name,
                                uint32_t *len)
{
	for (uint32_t f = d->r.field_first[i]; f < d->r.field_first[i + 1]; f++)
		if (strcmp(field_name(priv, d->r.fields[f].name), name) == 0) {
			*len = d->r.fields[f].len;
			return d->r.base + d->r.fields[f].offset;
		}
	return NULL;
}

static void assert_key(const decoded *d, uint32_t i, const char *key)
{
	uint32_t a = d->r.key_first[i], b = d->r.key_first[i + 1];
	assert_int_equal(b - a, strlen(key));
	assert_memory_equal(d->r.keys + a, key, b - a);
}

/* ------------------------------------------------------------ the tests */

static void test_claim(void **state)
{
	(void)state;
	assert_int_equal(rf_format_claim(&rf_tar_format, "a/b/shard-000.tar"), RF_FMT_YES);
	assert_int_equal(rf_format_claim(&rf_tar_format, "s3://b/x.tar"), RF_FMT_YES);
	assert_int_equal(rf_format_claim(&rf_tar_format, "x.rfs"), RF_FMT_NO);
	assert_int_equal(rf_format_claim(&rf_tar_format, ".tar"), RF_FMT_NO);
	assert_int_equal(rf_format_claim(&rf_tar_format, "x.tar/y"), RF_FMT_NO);
	/* compressed tars are this format's too (tar_stream.c) */
	assert_int_equal(rf_format_claim(&rf_tar_format, "a/s.tar.gz"), RF_FMT_YES);
	assert_int_equal(rf_format_claim(&rf_tar_format, "s.tar.zst"), RF_FMT_YES);
	assert_int_equal(rf_format_claim(&rf_tar_format, "s.tgz"), RF_FMT_YES);
	assert_int_equal(rf_tar_codec_of("s.tar.zstd"), RF_TAR_ZSTD);
	assert_int_equal(rf_tar_codec_of("s.tgz"), RF_TAR_GZIP);
	assert_int_equal(rf_tar_codec_of("s.gz"), RF_TAR_PLAIN);
}

static void test_samples(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_header(&t, "__meta__", 3, '0', false);
	tb_put(&t, "abc", 3);
	tb_file(&t, "s/000.jpg", "JPEG0", 5);
	tb_file(&t, "s/000.CLS", "7", 1);
	tb_file(&t, "s/000.meta.json", "{}", 2);
	tb_header(&t, "s/", 0, '5', false); /* a directory between members of one sample */
	tb_file(&t, "s/.hidden", "x", 1);
	tb_file(&t, "s/001.jpg", "JPEG1", 5); /* no cls: absent, not empty */
	tb_file(&t, "s/001.json", "", 0);     /* empty, present */
	tb_file(&t, "noext", "zz", 2);
	tb_file(&t, "s/002.cls", "9", 1);
	tb_end(&t);
	rf_shard_index *ix;
	void *priv;
	uint32_t steps;
	rf_error err = {0};
	assert_int_equal(open_buf(t.p, t.n, false, &ix, &priv, &steps, &err), 0);
	assert_int_equal(ix->records, 3);
	assert_int_equal(ix->blocks, 1);
	decoded d;
	decode_unit(t.p, ix, priv, 0, &d);
	assert_int_equal(d.r.records, 3);
	assert_key(&d, 0, "s/000");
	assert_key(&d, 1, "s/001");
	assert_key(&d, 2, "s/002");
	uint32_t len;
	const uint8_t *p = rec_field(&d, priv, 0, "jpg", &len);
	assert_non_null(p);
	assert_int_equal(len, 5);
	assert_memory_equal(p, "JPEG0", 5);
	assert_non_null(p = rec_field(&d, priv, 0, "cls", &len)); /* lowercased */
	assert_memory_equal(p, "7", 1);
	assert_non_null(p = rec_field(&d, priv, 0, "meta.json", &len));
	assert_memory_equal(p, "{}", 2);
	assert_null(rec_field(&d, priv, 1, "cls", &len));
	assert_non_null(rec_field(&d, priv, 1, "json", &len));
	assert_int_equal(len, 0);
	assert_non_null(p = rec_field(&d, priv, 2, "cls", &len));
	assert_memory_equal(p, "9", 1);
	/* records tile the unit: the last ends where the unit does */
	assert_int_equal(rf_record_end(d.r.ends, 2), ix->block[0].compressed_bytes);
	free(d.table);
	rf_tar_format.close(ix, priv);
	free(t.p);
}

static void test_long_names(void **state)
{
	(void)state;
	char gnu[300], pax[300];
	memset(gnu, 'g', 200);
	strcpy(gnu + 200, "/k.TXT");
	memset(pax, 'p', 250);
	strcpy(pax + 250, "/k.bin");
	tarbuf t = {0};
	tb_file(&t, gnu, "gnu", 3);
	tb_pax_file(&t, pax, "pax", 3);
	/* a base-256 size */
	tb_header(&t, "z.dat", 4, '0', true);
	tb_put(&t, "b256", 4);
	tb_end(&t);
	rf_shard_index *ix;
	void *priv;
	uint32_t steps;
	rf_error err = {0};
	assert_int_equal(open_buf(t.p, t.n, true, &ix, &priv, &steps, &err), 0);
	assert_int_equal(ix->records, 3);
	decoded d;
	decode_unit(t.p, ix, priv, 0, &d);
	gnu[202] = '\0';
	assert_key(&d, 0, gnu);
	uint32_t len;
	const uint8_t *p = rec_field(&d, priv, 0, "txt", &len);
	assert_non_null(p);
	assert_memory_equal(p, "gnu", 3);
	pax[252] = '\0';
	assert_key(&d, 1, pax);
	assert_non_null(p = rec_field(&d, priv, 1, "bin", &len));
	assert_memory_equal(p, "pax", 3);
	assert_non_null(p = rec_field(&d, priv, 2, "dat", &len));
	assert_memory_equal(p, "b256", 4);
	free(d.table);
	rf_tar_format.close(ix, priv);
	free(t.p);
}

/* Many samples over several steps and units: every unit holds whole
 * samples, spans about RF_TAR_UNIT_BYTES, and gives back each byte. */
static void test_units(void **state)
{
	(void)state;
	tarbuf t = {0};
	enum { N = 60, LEN = 100000 };
	uint8_t *data = malloc(LEN);
	for (int i = 0; i < N; i++) {
		char name[64];
		for (int j = 0; j < LEN; j++)
			data[j] = (uint8_t)(i * 31 + j);
		snprintf(name, sizeof(name), "%06d.jpg", i);
		tb_file(&t, name, data, LEN - (size_t)i);
		snprintf(name, sizeof(name), "%06d.cls", i);
		tb_file(&t, name, name, 6);
	}
	tb_end(&t);
	rf_shard_index *ix;
	void *priv;
	uint32_t steps;
	rf_error err = {0};
	assert_int_equal(open_buf(t.p, t.n, false, &ix, &priv, &steps, &err), 0);
	assert_true(steps >= t.n / RF_TAR_STEP_BYTES); /* sequential large ranges */
	assert_int_equal(ix->records, N);
	assert_true(ix->blocks >= 5 && ix->blocks <= 7);
	uint64_t rec = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		assert_int_equal(b->first_record, rec);
		assert_true(u + 1 == ix->blocks || b->compressed_bytes >= RF_TAR_UNIT_BYTES);
		decoded d;
		decode_unit(t.p, ix, priv, u, &d);
		for (uint32_t i = 0; i < b->records; i++, rec++) {
			uint32_t len;
			const uint8_t *p = rec_field(&d, priv, i, "jpg", &len);
			assert_non_null(p);
			assert_int_equal(len, LEN - rec);
			for (uint32_t j = 0; j < len; j += 997)
				assert_int_equal(p[j], (uint8_t)(rec * 31 + j));
		}
		free(d.table);
	}
	assert_int_equal(rec, N);
	rf_tar_format.close(ix, priv);
	free(data);
	free(t.p);
}

static void expect_error(tarbuf *t, const char *want1, const char *want2)
{
	rf_shard_index *ix;
	void *priv;
	uint32_t steps;
	rf_error err = {0};
	int rc = open_buf(t->p, t->n, false, &ix, &priv, &steps, &err);
	if (rc >= 0)
		fail_msg("opened, expected an error with '%s'", want1);
	if (!strstr(err.msg, want1) || (want2 && !strstr(err.msg, want2)))
		fail_msg("error '%s' lacks '%s' / '%s'", err.msg, want1, want2 ? want2 : "");
	assert_non_null(strstr(err.msg, "t.tar"));
	free(t->p);
	*t = (tarbuf){0};
}

static void test_hostile(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_file(&t, "a.jpg", "1", 1);
	tb_file(&t, "a.JPG", "2", 1);
	tb_end(&t);
	expect_error(&t, "repeats field 'jpg'", "sample 'a'");

	tb_file(&t, "a.jpg", "1", 1);
	tb_file(&t, "b.jpg", "2", 1);
	t.p[512 + 512 + 10] ^= 1; /* second header's name: checksum no longer matches */
	expect_error(&t, "header at byte 1024", "checksum");

	tb_header(&t, "big.jpg", 1 << 20, '0', false); /* says 1 MiB, the file is shorter */
	tb_put(&t, "x", 1);
	expect_error(&t, "runs past the end", "byte 0");

	tb_file(&t, "a.jpg", "1", 1);
	t.n += 100; /* a partial header at the end */
	memset(t.p + 1024, 'x', 100);
	expect_error(&t, "truncated header", "byte 1024");

	uint8_t junk[512];
	memset(junk, 'j', sizeof(junk));
	tb_put(&t, junk, sizeof(junk));
	expect_error(&t, "byte 0", "checksum");

	tb_header(&t, "PaxHeader", 12, 'x', false);
	tb_put(&t, "99 path=x\n\0\0", 12);
	tb_file(&t, "a.jpg", "1", 1);
	expect_error(&t, "PAX header at byte 0", "malformed");

	tb_header(&t, "s.bin", 0, 'S', false);
	expect_error(&t, "sparse", NULL);
}

/* Names are names: `..`, absolute and odd names are kept as keys. */
static void test_names_are_names(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_file(&t, "../../etc/passwd.txt", "p", 1);
	tb_file(&t, "/abs/k.txt", "a", 1);
	tb_end(&t);
	rf_shard_index *ix;
	void *priv;
	uint32_t steps;
	rf_error err = {0};
	assert_int_equal(open_buf(t.p, t.n, false, &ix, &priv, &steps, &err), 0);
	decoded d;
	decode_unit(t.p, ix, priv, 0, &d);
	assert_key(&d, 0, "../../etc/passwd");
	assert_key(&d, 1, "/abs/k");
	free(d.table);
	rf_tar_format.close(ix, priv);
	free(t.p);
}

/* A unit whose header changed after the open (damage in transit) is corrupt. */
static void test_decode_checks_headers(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_file(&t, "a.jpg", "1", 1);
	tb_file(&t, "a.cls", "2", 1);
	tb_end(&t);
	rf_shard_index *ix;
	void *priv;
	uint32_t steps;
	rf_error err = {0};
	assert_int_equal(open_buf(t.p, t.n, false, &ix, &priv, &steps, &err), 0);
	t.p[1024 + 3] ^= 0x40;
	uint8_t table[64];
	rf_unit_records r;
	int rc = rf_tar_format.decode(NULL, ix, priv, 0, t.p, ix->block[0].compressed_bytes, table,
	                              sizeof(table), &r, "t.tar", &err);
	assert_int_equal(rc, RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "byte 1024"));
	rf_tar_format.close(ix, priv);
	free(t.p);
}

/* ------------------------------------------------- compressed tars */

static uint8_t *gz(const uint8_t *src, size_t n, size_t *out)
{
	z_stream z = {0};
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&z, (uLong)n);
	uint8_t *dst = malloc(cap);
	z.next_in = (Bytef *)(uintptr_t)src;
	z.avail_in = (uInt)n;
	z.next_out = dst;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out = cap - z.avail_out;
	deflateEnd(&z);
	return dst;
}

static uint8_t *zs(const uint8_t *src, size_t n, size_t *out)
{
	size_t cap = ZSTD_compressBound(n);
	uint8_t *dst = malloc(cap);
	*out = ZSTD_compress(dst, cap, src, n, 3);
	assert_false(ZSTD_isError(*out));
	return dst;
}

static int open_z(const char *url, const uint8_t *z, size_t n, rf_shard_index **ix, void **priv,
                  uint64_t *reserved, rf_error *err)
{
	rf_fmt_object obj = {.url = url, .data = z, .size = n};
	uint64_t held = 0;
	return rf_format_open_mem(&rf_tar_format, &obj, 1, NULL, ix, priv, &held, reserved, err);
}

/* The whole-shard unit decoded into a slab of its decoded bytes. */
static void decode_z(const uint8_t *z, size_t n, const rf_shard_index *ix, const void *priv,
                     decoded *d, uint8_t **slab)
{
	rf_error err = {0};
	*slab = malloc(ix->block[0].decoded_bytes);
	int rc = rf_tar_format.decode(NULL, ix, priv, 0, z, n, *slab, ix->block[0].decoded_bytes,
	                              &d->r, "t.tar.gz", &err);
	if (rc)
		fail_msg("decode: %s", err.msg);
}

/* gzip and zstd: one unit, the whole object; the samples of the plain tar. */
static void test_compressed(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_file(&t, "__meta__", "m", 1);
	tb_file(&t, "k/000.jpg", "JPEG0", 5);
	tb_file(&t, "k/000.cls", "7", 1);
	tb_pax_file(&t, "k/001.jpg", "JPEG11", 6);
	tb_file(&t, "k/002.cls", "", 0);
	tb_end(&t);
	for (int c = 0; c < 2; c++) {
		size_t n;
		uint8_t *z = c ? zs(t.p, t.n, &n) : gz(t.p, t.n, &n);
		rf_shard_index *ix;
		void *priv;
		rf_error err = {0};
		int rc = open_z(c ? "d/t.tar.zst" : "d/t.tar.gz", z, n, &ix, &priv, NULL, &err);
		if (rc)
			fail_msg("open: %s", err.msg);
		assert_int_equal(ix->blocks, 1);
		assert_int_equal(ix->records, 3);
		assert_int_equal(ix->block[0].compressed_bytes, n);
		assert_true(ix->block[0].decoded_bytes >= t.n + rf_fmt_table_bytes(3));
		decoded d = {0};
		uint8_t *slab;
		decode_z(z, n, ix, priv, &d, &slab);
		assert_int_equal(d.r.records, 3);
		uint32_t len = 0;
		assert_memory_equal(rec_field(&d, priv, 0, "jpg", &len), "JPEG0", 5);
		assert_memory_equal(rec_field(&d, priv, 1, "jpg", &len), "JPEG11", 6);
		assert_int_equal(len, 6);
		assert_null(rec_field(&d, priv, 1, "cls", &len));
		assert_non_null(rec_field(&d, priv, 2, "cls", &len));
		assert_int_equal(len, 0);
		assert_key(&d, 1, "k/001");
		/* another stream under the same layout: corrupt, never other samples */
		size_t n2;
		uint8_t *other = c ? gz(t.p, t.n / 2, &n2) : zs(t.p, t.n / 2, &n2);
		uint8_t *slab2 = calloc(1, ix->block[0].decoded_bytes);
		rc = rf_tar_format.decode(NULL, ix, priv, 0, other, n2, slab2,
		                          ix->block[0].decoded_bytes, &d.r, "t", &err);
		assert_true(rc < 0);
		free(slab2);
		free(other);
		free(slab);
		rf_tar_format.close(ix, priv);
		free(z);
	}
	free(t.p);
}

/* A stream decoding to far more than one step's output, compressing ~1000x:
 * the open takes many steps and never holds the decoded tar. */
static void test_compressed_bounded(void **state)
{
	(void)state;
	tarbuf t = {0};
	static uint8_t zeros[1u << 20];
	char name[32];
	for (int i = 0; i < 48; i++) {
		snprintf(name, sizeof(name), "s/%03d.bin", i);
		tb_file(&t, name, zeros, sizeof(zeros));
		snprintf(name, sizeof(name), "s/%03d.txt", i);
		tb_file(&t, name, "x", 1);
	}
	tb_end(&t);
	size_t n;
	uint8_t *z = gz(t.p, t.n, &n);
	assert_true(n < t.n / 100);
	rf_shard_index *ix;
	void *priv;
	uint64_t reserved = 0;
	rf_error err = {0};
	if (open_z("t.tar.gz", z, n, &ix, &priv, &reserved, &err))
		fail_msg("open: %s", err.msg);
	assert_int_equal(ix->records, 48);
	assert_true(reserved < t.n / 2); /* 48 MiB decoded; the open reserved far less */
	rf_tar_format.close(ix, priv);
	/* cut short: the stream's end is missing */
	assert_true(open_z("t.tar.gz", z, n / 2, &ix, &priv, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "t.tar.gz"));
	if (!strstr(err.msg, "ends early"))
		fail_msg("cut: %s", err.msg);
	/* a damaged CRC: the stream's own check fails, naming it */
	z[n - 6] ^= 0x55;
	assert_true(open_z("t.tar.gz", z, n, &ix, &priv, NULL, &err) < 0);
	if (!strstr(err.msg, "t.tar.gz: gzip stream near compressed byte"))
		fail_msg("crc: %s", err.msg);
	/* a damaged byte in the deflate data: an error naming the shard
	 * (the stream's or the tar's checks, whichever sees it first) */
	z[n - 6] ^= 0x55;
	z[n / 2] ^= 0x55;
	assert_true(open_z("t.tar.gz", z, n, &ix, &priv, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "t.tar.gz"));
	free(z);
	free(t.p);
}

/* A .tar.gz decoding past RF_TAR_WHOLE_MAX: units start at its access
 * points and decode alone (random access into the stream), each sample
 * its own bytes, across two gzip members too. */
static void test_compressed_split(void **state)
{
	(void)state;
	tarbuf t = {0};
	static uint8_t data[2u << 20];
	char name[32];
	size_t half = 0;
	for (int i = 0; i < 40; i++) {
		memset(data, 0, sizeof(data));
		snprintf((char *)data, 64, "sample %d", i);
		data[sizeof(data) - 1] = (uint8_t)i;
		snprintf(name, sizeof(name), "s/%03d.bin", i);
		tb_file(&t, name, data, sizeof(data));
		snprintf(name, sizeof(name), "s/%03d.cls", i);
		tb_file(&t, name, name, 5);
		if (i == 19)
			half = t.n; /* the second gzip member starts here */
	}
	tb_end(&t);
	size_t n1, n2;
	uint8_t *z1 = gz(t.p, half, &n1), *z2 = gz(t.p + half, t.n - half, &n2);
	uint8_t *z = malloc(n1 + n2);
	memcpy(z, z1, n1);
	memcpy(z + n1, z2, n2);
	free(z1);
	free(z2);
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	if (open_z("t.tar.gz", z, n1 + n2, &ix, &priv, NULL, &err))
		fail_msg("open: %s", err.msg);
	assert_int_equal(ix->records, 40);
	assert_true(ix->blocks >= 3);
	uint64_t seen = 0;
	for (uint32_t u = ix->blocks; u-- > 0;) { /* any order: each unit alone */
		const rf_block_info *b = &ix->block[u];
		assert_true(b->offset + b->compressed_bytes <= n1 + n2);
		uint8_t *slab = malloc(b->decoded_bytes);
		decoded d = {0};
		int rc = rf_tar_format.decode(NULL, ix, priv, u, z + b->offset, b->compressed_bytes,
		                              slab, b->decoded_bytes, &d.r, "t.tar.gz", &err);
		if (rc)
			fail_msg("unit %u: %s", u, err.msg);
		for (uint32_t i = 0; i < d.r.records; i++) {
			uint32_t len = 0;
			const uint8_t *p = rec_field(&d, priv, i, "bin", &len);
			char want[32];
			snprintf(want, sizeof(want), "sample %llu",
			         (unsigned long long)(b->first_record + i));
			assert_int_equal(len, sizeof(data));
			assert_string_equal((const char *)p, want);
			assert_int_equal(p[len - 1], (uint8_t)(b->first_record + i));
			seen++;
		}
		free(slab);
	}
	assert_int_equal(seen, 40);
	rf_tar_format.close(ix, priv);
	free(z);
	free(t.p);
}

/* ------------------------------------------- sequential .tar.zst */

static char *index_of(const tarbuf *t, size_t *len);

#define SEQ_BUF (256u << 10) /* the caller's buffer: small, to make the decoder ask */

typedef struct mem_obj {
	const uint8_t *p;
	size_t n;
	uint64_t reads;
} mem_obj;

static int mem_read(void *ctx, const char *object, uint64_t offset, uint64_t len, void *buf,
                    uint64_t *size, rf_error *err)
{
	mem_obj *m = ctx;
	(void)err;
	assert_null(object);
	assert_true(offset <= m->n && len <= m->n - offset && len <= SEQ_BUF);
	memcpy(buf, m->p + offset, len);
	if (size)
		*size = m->n;
	m->reads++;
	return 0;
}

static int mem_range(void *ctx, uint64_t offset, uint64_t len, void *buf, rf_error *err)
{
	mem_obj *m = ctx;
	(void)err;
	assert_true(offset <= m->n && len <= m->n - offset);
	memcpy(buf, m->p + offset, len);
	return 0;
}

/* About 35 MiB decoded: samples of 1.5 MiB and 300 KiB (bytes of a
 * 16-symbol alphabet: compressible, not trivially) and a small field, the
 * last of 40 bytes;
 * *half: where sample 25 starts (a frame boundary). */
static void tb_seq_dataset(tarbuf *t, int samples, size_t *half)
{
	uint8_t *data = malloc(3u << 19);
	uint64_t x = 88172645463325252ull;
	char name[32];
	for (int i = 0; i < samples; i++) {
		/* the last sample tiny: its unit's decoded end lies past the
		 * open's last checkpoint but one, so its compressed range tends to
		 * be empty (decoded from the bytes the unit before left) */
		size_t len = i == samples - 1 ? 40
		             : i % 3 == 0     ? (3u << 19)
		                              : (300u << 10) + (size_t)i;
		for (size_t j = 0; j < len; j++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			data[j] = (uint8_t)('a' + (x & 15));
		}
		snprintf((char *)data, 32, "sample %03d", i);
		if (i == samples / 2)
			*half = t->n;
		snprintf(name, sizeof(name), "s/%03d.bin", i);
		tb_file(t, name, data, len);
		snprintf(name, sizeof(name), "s/%03d.cls", i);
		tb_file(t, name, name, 5);
	}
	tb_end(t);
	free(data);
}

/* [0, cut) and [cut, n) as zstd frames one after the other (cut == n: one
 * frame, ZSTD_compress's), level 1, the second with a checksum. */
static uint8_t *zs_frames(const uint8_t *src, size_t n, size_t cut, size_t *out)
{
	size_t cap = ZSTD_compressBound(n) + 64;
	uint8_t *dst = malloc(cap);
	size_t a = ZSTD_compress(dst, cap, src, cut, 1);
	assert_false(ZSTD_isError(a));
	*out = a;
	if (cut < n) {
		ZSTD_CCtx *c = ZSTD_createCCtx();
		ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
		ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
		size_t b = ZSTD_compress2(c, dst + a, cap - a, src + cut, n - cut);
		assert_false(ZSTD_isError(b));
		ZSTD_freeCCtx(c);
		*out += b;
	}
	return dst;
}

/* One frame as a stream compresses it (no decoded size in its header, so
 * the decoder sizes its buffers from the window) with the largest window
 * the reader takes (8 MiB): the state at its largest. */
static uint8_t *zs_stream(const uint8_t *src, size_t n, size_t *out)
{
	size_t cap = ZSTD_compressBound(n);
	uint8_t *dst = malloc(cap);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 23);
	ZSTD_inBuffer ib = {src, n, 0};
	ZSTD_outBuffer ob = {dst, cap, 0};
	size_t r;
	do {
		r = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end);
		assert_false(ZSTD_isError(r));
	} while (r != 0);
	ZSTD_freeCCtx(c);
	*out = ob.pos;
	return dst;
}

/* Unit u through the stream state *st: its own bytes first, the rest read
 * as the decoder asks (SEQ_BUF at a time). */
static int seq_unit(mem_obj *m, const rf_shard_index *ix, const void *priv, void **st, uint32_t u,
                    uint8_t *slab, decoded *d, uint64_t *skipped, rf_error *err)
{
	static uint8_t buf[SEQ_BUF];
	const rf_block_info *b = &ix->block[u];
	return rf_fmt_decode_seq_with(&rf_tar_format, st, ix, priv, u, m->p + b->offset,
	                              b->compressed_bytes, b->offset, buf, SEQ_BUF, mem_read, m,
	                              slab, b->decoded_bytes, &d->r, skipped, "t.tar.zst", err);
}

/* Unit u decoded: exactly the plain tar's bytes of its samples, keyed. */
static void seq_check(const tarbuf *t, const rf_shard_index *ix, const void *priv, uint32_t u,
                      const decoded *d)
{
	const tar_layout *L = priv;
	const rf_block_info *b = &ix->block[u];
	assert_int_equal(d->r.records, b->records);
	assert_int_equal(rf_record_end(d->r.ends, (int64_t)b->records - 1), L->unit_span[u]);
	assert_true(L->unit_out[u] + L->unit_span[u] <= t->n);
	assert_memory_equal(d->r.base, t->p + L->unit_out[u], L->unit_span[u]);
	for (uint32_t i = 0; i < d->r.records; i++) {
		char want[32];
		uint32_t len = 0;
		snprintf(want, sizeof(want), "sample %03llu",
		         (unsigned long long)(b->first_record + i));
		const uint8_t *p = rec_field(d, priv, i, "bin", &len);
		assert_non_null(p);
		assert_string_equal((const char *)p, want);
		snprintf(want, sizeof(want), "s/%03llu", (unsigned long long)(b->first_record + i));
		assert_key(d, i, want);
	}
}

/* Decodes the units in the order given through one state; checks each.
 * Returns the decoded bytes dropped (the cost of the order). */
static uint64_t seq_order(const tarbuf *t, mem_obj *m, const rf_shard_index *ix, const void *priv,
                          const uint32_t *order, uint32_t n)
{
	void *st = NULL;
	uint64_t skipped = 0;
	uint8_t *slab = malloc(ix->largest_block_decoded_bytes);
	for (uint32_t i = 0; i < n; i++) {
		decoded d = {0};
		rf_error err = {0};
		if (seq_unit(m, ix, priv, &st, order[i], slab, &d, &skipped, &err))
			fail_msg("unit %u: %s", order[i], err.msg);
		seq_check(t, ix, priv, order[i], &d);
		/* the state never holds more than the format says it may */
		assert_true(rf_tar_seq_held(st) <= rf_tar_format.seq_state_bytes(ix, priv));
	}
	rf_tar_format.seq_free(st);
	free(slab);
	return skipped;
}

/* A .tar.zst decoding past RF_TAR_WHOLE_MAX (one frame; two frames; one
 * without its decoded size, with an 8 MiB window): a
 * sequential layout whose units, compressed ranges between the open's
 * checkpoints, decode through one stream state in bounded memory: in order
 * from their own bytes alone, in any other order by decoding forward or
 * restarting, each sample its own bytes. */
static void test_compressed_seq(void **state)
{
	(void)state;
	tarbuf t = {0};
	size_t half = 0;
	tb_seq_dataset(&t, 50, &half);
	assert_true(t.n > (33u << 20));
	/* the most: zstd's 8 MiB window */
	assert_true(rf_tar_seq_need(ZSTD_estimateDStreamSize((size_t)1 << 23)) < (10u << 20));
	for (int frames = 1; frames <= 3; frames++) {
		size_t n;
		uint8_t *z = frames == 3 ? zs_stream(t.p, t.n, &n)
		                         : zs_frames(t.p, t.n, frames == 1 ? t.n : half, &n);
		rf_shard_index *ix;
		void *priv;
		uint64_t reserved = 0;
		rf_error err = {0};
		if (open_z("t.tar.zst", z, n, &ix, &priv, &reserved, &err))
			fail_msg("open: %s", err.msg);
		/* the open never held the decoded tar (a 4 MiB range, the zstd
		 * decoder, a step's output, the checkpoints) */
		if (reserved > (24u << 20))
			fail_msg("the open reserved %llu bytes", (unsigned long long)reserved);
		assert_int_equal(ix->sequential, 1);
		assert_int_equal(ix->records, 50);
		assert_true(ix->blocks >= 10);
		uint64_t at = 0; /* the compressed ranges tile the object */
		for (uint32_t u = 0; u < ix->blocks; u++) {
			assert_int_equal(ix->block[u].offset, at);
			at += ix->block[u].compressed_bytes;
			assert_true(ix->block[u].decoded_bytes <= RF_BLOCK_DECODED_MAX);
		}
		assert_int_equal(at, n);
		/* decode (not decode_seq) refuses, naming why */
		uint8_t *slab = malloc(ix->largest_block_decoded_bytes);
		decoded d = {0};
		assert_int_equal(
		    rf_tar_format.decode(NULL, ix, priv, 0, z, ix->block[0].compressed_bytes, slab,
		                         ix->block[0].decoded_bytes, &d.r, "t.tar.zst", &err),
		    -EINVAL);
		assert_non_null(strstr(err.msg, "decode_seq"));
		free(slab);
		/* its index file is the plain tar's (decoded offsets, not the units') */
		char *idx = NULL;
		size_t idx_len = 0, plain_len = 0;
		FILE *f = open_memstream(&idx, &idx_len);
		assert_int_equal(rf_tar_index_write(ix, priv, f, "t.tar.zst", &err), 0);
		fclose(f);
		char *plain = index_of(&t, &plain_len);
		assert_int_equal(idx_len, plain_len);
		assert_memory_equal(idx, plain, plain_len);
		free(idx);
		free(plain);
		uint32_t order[64];
		mem_obj m = {.p = z, .n = n};
		/* in order: each unit from its own bytes, nothing dropped, no read */
		for (uint32_t u = 0; u < ix->blocks; u++)
			order[u] = u;
		assert_int_equal(seq_order(&t, &m, ix, priv, order, ix->blocks), 0);
		assert_int_equal(m.reads, 0);
		/* backwards: every unit restarts the stream */
		for (uint32_t u = 0; frames == 1 && u < ix->blocks; u++)
			order[u] = ix->blocks - 1 - u;
		if (frames == 1)
			assert_true(seq_order(&t, &m, ix, priv, order, ix->blocks) > 0);
		assert_true(frames > 1 || m.reads > 0);
		/* a shuffled order */
		uint64_t x = 12345;
		for (uint32_t u = ix->blocks - 1; u > 0; u--) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			uint32_t k = (uint32_t)((x >> 33) % (u + 1)), tmp = order[u];
			order[u] = order[k], order[k] = tmp;
		}
		assert_true(seq_order(&t, &m, ix, priv, order, 12) > 0);
		rf_tar_format.close(ix, priv);
		free(z);
	}
	free(t.p);
}

/* A sequential layout's stream damaged after the open: an error naming
 * the shard and unit (the units before it sound), the state reset so
 * that the next unit decodes from the stream's start; a stream whose end
 * is missing (its second frame, a skippable frame in its place) ends early.
 * The verifier walks such a layout through one state too. */
static void test_compressed_seq_damage(void **state)
{
	(void)state;
	tarbuf t = {0};
	size_t half = 0;
	tb_seq_dataset(&t, 50, &half);
	size_t n, n1;
	uint8_t *z = zs_frames(t.p, t.n, half, &n);
	uint8_t *f1 = zs_frames(t.p, half, half, &n1); /* the first frame's length */
	assert_memory_equal(f1, z, n1);
	free(f1);
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	if (open_z("t.tar.zst", z, n, &ix, &priv, NULL, &err))
		fail_msg("open: %s", err.msg);
	assert_true(ix->sequential && ix->blocks >= 10);
	/* the verifier: sound, then damaged */
	mem_obj m = {.p = z, .n = n};
	rf_verify_walk w = {.name = "t.tar.zst", .size = n, .read = mem_range, .read_ctx = &m};
	if (rf_verify_run(&w, &err))
		fail_msg("verify: %s", err.msg);
	uint8_t *bad = malloc(n);
	const char *cases[] = {"damaged", "cut"};
	for (int c = 0; c < 2; c++) {
		memcpy(bad, z, n);
		if (c == 0) {
			bad[n1 + (n - n1) / 2] ^= 0x5a; /* in the checksummed frame */
		} else { /* the second frame skipped: its samples never come */
			uint32_t len = (uint32_t)(n - n1 - 8);
			memcpy(bad + n1, "\x50\x2a\x4d\x18", 4);
			memcpy(bad + n1 + 4, &len, 4);
		}
		mem_obj mb = {.p = bad, .n = n};
		void *st = NULL;
		uint8_t *slab = malloc(ix->largest_block_decoded_bytes);
		int rc = 0;
		uint32_t u = 0;
		for (; u < ix->blocks; u++) {
			decoded d = {0};
			rc = seq_unit(&mb, ix, priv, &st, u, slab, &d, NULL, &err);
			if (rc)
				break;
			if (c == 1) /* damage may decode to other bytes before a check sees it */
				seq_check(&t, ix, priv, u, &d);
		}
		if (rc != RF_E_CORRUPT)
			fail_msg("%s: decode gave %d (%s)", cases[c], rc, err.msg);
		assert_true(ix->block[u].offset + ix->block[u].compressed_bytes > n1);
		char unit[32];
		snprintf(unit, sizeof(unit), "unit %u", u);
		if (!strstr(err.msg, "t.tar.zst") || !strstr(err.msg, unit))
			fail_msg("%s: %s", cases[c], err.msg);
		if (c == 1 && !strstr(err.msg, "ends early"))
			fail_msg("%s: %s", cases[c], err.msg);
		/* the state was reset: unit 0 of the sound stream decodes */
		decoded d = {0};
		if (seq_unit(&m, ix, priv, &st, 0, slab, &d, NULL, &err))
			fail_msg("after %s: %s", cases[c], err.msg);
		seq_check(&t, ix, priv, 0, &d);
		/* continuing a unit the state has not begun is refused */
		rf_fmt_more more = {.cap = SEQ_BUF, .again = true};
		assert_int_equal(rf_tar_format.decode_seq(&st, ix, priv, 1, z, 0, 0, slab,
		                                          ix->block[1].decoded_bytes, &d.r, &more,
		                                          "t.tar.zst", &err),
		                 -EINVAL);
		rf_tar_format.seq_free(st);
		free(slab);
		/* the verifier names the damage */
		w.read_ctx = &mb;
		rc = rf_verify_run(&w, &err);
		if (c == 0 && rc != RF_E_CORRUPT) /* (cut: a shorter tar, sound) */
			fail_msg("verify %s: %d %s", cases[c], rc, err.msg);
		assert_true(c == 1 || strstr(err.msg, "t.tar.zst"));
		w.read_ctx = &m;
	}
	free(bad);
	rf_tar_format.close(ix, priv);
	/* cut short: the open itself finds the stream's end missing */
	assert_true(open_z("t.tar.zst", z, n / 2, &ix, &priv, NULL, &err) < 0);
	if (!strstr(err.msg, "t.tar.zst") || !strstr(err.msg, "ends early"))
		fail_msg("cut: %s", err.msg);
	free(z);
	free(t.p);
}

/* ------------------------------------------------------ index files */

/* A small dataset: metadata, a directory, long names, a missing field. */
static void tb_dataset(tarbuf *t, int samples, size_t jpg_bytes)
{
	char name[300];
	uint8_t *data = calloc(1, jpg_bytes + 1);
	tb_header(t, "__meta__", 3, '0', false);
	tb_put(t, "abc", 3);
	tb_header(t, "d/", 0, '5', false);
	for (int i = 0; i < samples; i++) {
		for (size_t j = 0; j < jpg_bytes; j++)
			data[j] = (uint8_t)(i + j);
		if (i == 2) { /* a GNU long name */
			memset(name, 'l', 150);
			snprintf(name + 150, sizeof(name) - 150, "/%05d.jpg", i);
		} else {
			snprintf(name, sizeof(name), "d/%05d.jpg", i);
		}
		tb_file(t, name, data, jpg_bytes - (size_t)i);
		if (i % 3 != 1) {
			strcpy(strrchr(name, '.'), ".cls");
			tb_file(t, name, "7", 1);
		}
	}
	tb_end(t);
	free(data);
}

/* The layout a tar's scan gives, written as a v1.2 index (malloc'd). */
static char *index_of(const tarbuf *t, size_t *len)
{
	rf_shard_index *ix;
	void *priv;
	uint32_t steps;
	rf_error err = {0};
	g_idx = NULL;
	assert_int_equal(open_buf(t->p, t->n, false, &ix, &priv, &steps, &err), 0);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	assert_non_null(f);
	assert_int_equal(rf_tar_index_write(ix, priv, f, "t.tar", &err), 0);
	fclose(f);
	rf_tar_format.close(ix, priv);
	return buf;
}

static int open_with_index(const tarbuf *t, const char *idx, rf_shard_index **ix, void **priv,
                           rf_error *err)
{
	uint32_t steps;
	g_idx = (const uint8_t *)idx;
	g_idx_len = strlen(idx);
	int rc = open_buf(t->p, t->n, false, ix, priv, &steps, err);
	g_idx = NULL;
	return rc;
}

/* With an index beside it, the open reads no byte of the tar, and the
 * layout is the one the header scan builds (units, samples, keys, fields). */
static void test_index_same_layout(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_dataset(&t, 40, 70000);
	size_t len;
	char *idx = index_of(&t, &len);
	assert_memory_equal(idx, "v1.2 40\n", 8);
	rf_shard_index *a, *b;
	void *pa, *pb;
	uint32_t steps;
	rf_error err = {0};
	assert_int_equal(open_buf(t.p, t.n, false, &a, &pa, &steps, &err), 0);
	assert_true(g_shard_read >= t.n / 2); /* the scan read the shard */
	assert_false(rf_tar_layout_from_index(pa));
	assert_int_equal(open_with_index(&t, idx, &b, &pb, &err), 0);
	assert_true(g_shard_read <= 1024); /* the index, and the end-of-archive blocks */
	assert_true(rf_tar_layout_from_index(pb));
	assert_true(a->blocks > 1);
	assert_true(rf_tar_layout_equal(a, pa, b, pb));
	for (uint32_t u = 0; u < b->blocks; u++) {
		decoded d;
		decode_unit(t.p, b, pb, u, &d); /* the index agrees with the tar */
		free(d.table);
	}
	rf_tar_format.close(a, pa);
	rf_tar_format.close(b, pb);
	free(idx);
	free(t.p);
}

/* An index as DALI's wds2idx writes it: metadata and names without an
 * extension listed too (webdataset's rules skip them), a member's name
 * and extension as the tar has them (uppercase kept). */
static void test_index_dali_text(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_header(&t, "__meta__", 3, '0', false); /* data at 512 */
	tb_put(&t, "abc", 3);
	tb_file(&t, "s/000.jpg", "JPEG0", 5); /* data at 1536 */
	tb_file(&t, "s/000.CLS", "7", 1);     /* 2560 */
	tb_file(&t, "noext", "zz", 2);        /* 3584 */
	tb_file(&t, "s/001.jpg", "J1", 2);    /* 4608 */
	tb_end(&t);
	const char *idx = "v1.2 4\n"
	                  "__meta__ 512 3 __meta__\n"
	                  "jpg 1536 5 s/000.jpg CLS 2560 1 s/000.CLS\n"
	                  "noext 3584 2 noext\n"
	                  "jpg 4608 2 s/001.jpg\n";
	rf_shard_index *a, *b;
	void *pa, *pb;
	uint32_t steps;
	rf_error err = {0};
	assert_int_equal(open_buf(t.p, t.n, false, &a, &pa, &steps, &err), 0);
	if (open_with_index(&t, idx, &b, &pb, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(b->records, 2);
	assert_true(rf_tar_layout_equal(a, pa, b, pb));
	decoded d;
	decode_unit(t.p, b, pb, 0, &d);
	assert_key(&d, 1, "s/001");
	free(d.table);
	rf_tar_format.close(a, pa);
	rf_tar_format.close(b, pb);
	free(t.p);
}

static void expect_index_error(const tarbuf *t, const char *idx, const char *want1,
                               const char *want2)
{
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	if (open_with_index(t, idx, &ix, &priv, &err) >= 0)
		fail_msg("index opened, expected an error with '%s'", want1);
	if (!strstr(err.msg, want1) || (want2 && !strstr(err.msg, want2)))
		fail_msg("error '%s' lacks '%s' / '%s'", err.msg, want1, want2 ? want2 : "");
	assert_non_null(strstr(err.msg, "t.idx"));
}

/* Indexes that lie at the open: refused, naming the index, line and what. */
static void test_index_hostile(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_file(&t, "a.jpg", "1", 1); /* data at 512 */
	tb_file(&t, "a.cls", "2", 1); /* 1536 */
	tb_file(&t, "b.jpg", "3", 1); /* 2560 */
	tb_end(&t);                   /* 4096 bytes */
	expect_index_error(&t, "v1.2 1\njpg 512 1 a.jpg cls 99840 1 a.cls\n", "line 2",
	                   "past the end");
	expect_index_error(&t, "v1.2 1\njpg 512 1 a.jpg cls 3584 900 a.cls\n", "line 2",
	                   "past the end");
	expect_index_error(&t, "v1.2 1\njpg 1536 1 a.jpg cls 512 1 a.cls\n", "line 2",
	                   "out of order or overlapping");
	expect_index_error(&t, "v1.2 1\njpg 512 1 a.jpg cls 1024 1 a.cls\n", "line 2",
	                   "overlapping");
	expect_index_error(&t, "v1.2 1\njpg 500 1 a.jpg\n", "line 2", "multiple of 512");
	expect_index_error(&t, "v1.2 3\njpg 512 1 a.jpg\njpg 2560 1 b.jpg\n", "line 4",
	                   "ends after 2 of the 3 samples");
	expect_index_error(&t, "v1.2 1\njpg 512 1 a.jpg\njpg 2560 1 b.jpg\n", "line 3",
	                   "more than the 1 samples");
	expect_index_error(&t, "v1.2 99\njpg 512 1 a.jpg\n", "line 1", "sample count");
	expect_index_error(&t, "v1.2 0\n", "line 1", "sample count");
	expect_index_error(&t, "v1.1 1\njpg 512 1\n", "line 1", "v1.2 index");
	expect_index_error(&t, "v9 1\n", "line 1", "version");
	expect_index_error(&t, "v1.2 1\njpg 512 1\n", "line 2", "EXT OFFSET SIZE NAME");
	expect_index_error(&t, "v1.2 1\njpg x 1 a.jpg\n", "line 2", "not a number");
	expect_index_error(&t, "v1.2 1\npng 512 1 a.jpg\n", "line 2", "extension 'png'");
	expect_index_error(&t, "v1.2 1\njpg 512 1 a.jpg jpg 2560 1 b.jpg\n", "line 2",
	                   "not of the line's sample");
	expect_index_error(&t, "v1.2 2\njpg 512 1 a.jpg\njpg 1536 1 a.jpg\n", "line 3",
	                   "repeats field");
	expect_index_error(&t, "", "0 bytes", NULL);
	free(t.p);
}

static void expect_decode_error(const tarbuf *t, const char *idx, const char *want)
{
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	if (open_with_index(t, idx, &ix, &priv, &err) != 0)
		fail_msg("%s", err.msg);
	int rc = 0;
	for (uint32_t u = 0; rc == 0 && u < ix->blocks; u++) {
		uint8_t table[256];
		rf_unit_records r;
		const rf_block_info *b = &ix->block[u];
		rc = rf_tar_format.decode(NULL, ix, priv, u, t->p + b->offset, b->compressed_bytes,
		                          table, sizeof(table), &r, "t.tar", &err);
	}
	if (rc != RF_E_CORRUPT)
		fail_msg("decode gave %d, expected RF_E_CORRUPT with '%s'", rc, want);
	if (!strstr(err.msg, want) || !strstr(err.msg, "t.tar") || !strstr(err.msg, "unit 0"))
		fail_msg("error '%s' lacks '%s', the shard or the unit", err.msg, want);
	rf_tar_format.close(ix, priv);
}

/* Indexes that lie about what the members are, within the tar's bounds:
 * decode walks the unit's headers and fails, never a wrong or lost sample. */
static void test_index_lies_caught_at_decode(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_file(&t, "a.jpg", "1", 1); /* data at 512 */
	tb_file(&t, "a.cls", "2", 1); /* 1536 */
	tb_file(&t, "b.jpg", "3", 1); /* 2560 */
	tb_end(&t);
	/* a member left out at the end: b.jpg would be lost (the tail after
	 * the index's last member is read at the open: it must hold no sample) */
	expect_index_error(&t, "v1.2 1\njpg 512 1 a.jpg cls 1536 1 a.cls\n",
	                   "member 'b.jpg' at byte 2048 is not in index", "stale");
	/* ... and one in the middle */
	expect_decode_error(&t, "v1.2 2\njpg 512 1 a.jpg\njpg 2560 1 b.jpg\n", "stale");
	/* wrong key */
	expect_decode_error(&t, "v1.2 2\njpg 512 1 a.jpg cls 1536 1 a.cls\njpg 2560 1 c.jpg\n",
	                    "key");
	/* wrong field, wrong size */
	expect_decode_error(&t, "v1.2 2\njpg 512 1 a.jpg txt 1536 1 a.txt\njpg 2560 1 b.jpg\n",
	                    "field");
	expect_decode_error(&t, "v1.2 2\njpg 512 0 a.jpg cls 1536 1 a.cls\njpg 2560 1 b.jpg\n",
	                    "size");
	/* one sample said to be two (the count) */
	expect_decode_error(&t, "v1.2 1\njpg 512 1 a.jpg cls 1536 1 a.cls txt 2560 1 a.txt\n",
	                    "key");
	/* an offset that is not a member's data */
	expect_decode_error(&t, "v1.2 2\njpg 512 1 a.jpg cls 2048 1 a.cls\njpg 3072 1 b.jpg\n",
	                    "unit 0");
	free(t.p);
}

/* A stale index: the tar was written again after its index. */
static void test_index_stale(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_dataset(&t, 12, 3000);
	size_t len;
	char *idx = index_of(&t, &len);
	/* a member renamed in place (its header's checksum made good) */
	uint8_t *h = memmem(t.p, t.n, "d/00005.jpg", 11);
	assert_non_null(h);
	h[10] = 'x';
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	expect_decode_error(&t, idx, "stale");
	free(t.p);
	/* larger members: the index's last member ends inside the tar's data */
	t = (tarbuf){0};
	tb_dataset(&t, 12, 3100);
	expect_index_error(&t, idx, "stale", NULL);
	free(idx);
	free(t.p);
}

/* The in-memory driver: the sidecar found among the objects, or absent. */
static void test_index_open_mem(void **state)
{
	(void)state;
	tarbuf t = {0};
	tb_dataset(&t, 20, 9000);
	size_t len;
	char *idx = index_of(&t, &len);
	rf_fmt_object objs[2] = {{.url = "t.tar", .data = t.p, .size = t.n},
	                         {.url = "t.idx", .data = (const uint8_t *)idx, .size = len}};
	rf_shard_index *a, *b;
	void *pa, *pb;
	rf_error err = {0};
	assert_int_equal(
	    rf_format_open_mem(&rf_tar_format, objs, 1, NULL, &a, &pa, NULL, NULL, &err), 0);
	assert_false(rf_tar_layout_from_index(pa));
	if (rf_format_open_mem(&rf_tar_format, objs, 2, NULL, &b, &pb, NULL, NULL, &err) != 0)
		fail_msg("%s", err.msg);
	assert_true(rf_tar_layout_from_index(pb));
	assert_true(rf_tar_layout_equal(a, pa, b, pb));
	rf_tar_format.close(b, pb);
	/* a URL with a query (presigned): the index is not asked for */
	rf_fmt_object q[2] = {
	    {.url = "t.tar?X-Amz-Signature=1", .data = t.p, .size = t.n},
	    {.url = "t.idx?X-Amz-Signature=1", .data = (const uint8_t *)idx, .size = len}};
	assert_int_equal(rf_format_open_mem(&rf_tar_format, q, 2, NULL, &b, &pb, NULL, NULL, &err),
	                 0);
	assert_false(rf_tar_layout_from_index(pb));
	rf_tar_format.close(b, pb);
	/* scan_only: the index is not asked for */
	rf_tar_opts opt = {.scan_only = true};
	assert_int_equal(
	    rf_format_open_mem(&rf_tar_format, objs, 2, &opt, &b, &pb, NULL, NULL, &err), 0);
	assert_false(rf_tar_layout_from_index(pb));
	rf_tar_format.close(b, pb);
	/* refusals through the driver that reads the same bytes again: a failed
	 * step left the state as it was (the same answer twice, not -EPROTO) */
	const char *bad[] = {
	    "v1.2 1\njpg 1536 9000 d/00000.jpg\n",    /* a member left out after it */
	    "v1.2 2\njpg 1536 9000 d/00000.jpg\nx\n", /* a malformed line */
	    "v1.2 1\njpg 1536 9000 d/00000.jpg jpg 99999999 1 d/00000.jpg\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		objs[1].data = (const uint8_t *)bad[i];
		objs[1].size = strlen(bad[i]);
		int rc =
		    rf_format_open_mem(&rf_tar_format, objs, 2, NULL, &b, &pb, NULL, NULL, &err);
		if (rc != RF_E_CORRUPT)
			fail_msg("index %zu: %d %s", i, rc, err.msg);
		assert_non_null(strstr(err.msg, "t.idx"));
	}
	rf_tar_format.close(a, pa);
	free(idx);
	free(t.p);
}

/* What counts as an absent sidecar: ENOENT (local, HTTP 404), and S3's 403. */
static void test_side_absent(void **state)
{
	(void)state;
	assert_true(rf_fmt_side_absent("d/a.idx", -ENOENT));
	assert_true(rf_fmt_side_absent("https://h/a.idx", -ENOENT));
	assert_true(rf_fmt_side_absent("s3://b/a.idx", -EACCES));
	assert_false(rf_fmt_side_absent("https://h/a.idx", -EACCES)); /* plain HTTP 403 */
	assert_false(rf_fmt_side_absent("s3://b/a.idx", -EIO));
	assert_false(rf_fmt_side_absent("d/a.idx", -EISDIR));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_claim),
	    cmocka_unit_test(test_samples),
	    cmocka_unit_test(test_long_names),
	    cmocka_unit_test(test_units),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_names_are_names),
	    cmocka_unit_test(test_decode_checks_headers),
	    cmocka_unit_test(test_compressed),
	    cmocka_unit_test(test_compressed_bounded),
	    cmocka_unit_test(test_compressed_split),
	    cmocka_unit_test(test_compressed_seq),
	    cmocka_unit_test(test_compressed_seq_damage),
	    cmocka_unit_test(test_index_same_layout),
	    cmocka_unit_test(test_index_dali_text),
	    cmocka_unit_test(test_index_hostile),
	    cmocka_unit_test(test_index_lies_caught_at_decode),
	    cmocka_unit_test(test_index_stale),
	    cmocka_unit_test(test_index_open_mem),
	    cmocka_unit_test(test_side_absent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
