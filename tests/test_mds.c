/* test_mds.c - MDS shards (shards/mds.c) through their seam calls: a shard
 * laid out byte for byte as MDSWriter lays it out (uncompressed and zstd),
 * every column of every sample back as a field, index.json listing, and
 * hostile headers, samples and indexes answered with errors naming the
 * shard and the byte. */
#include "mds.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#define CONFIG                                                                                     \
	"{\"column_encodings\": [\"ndarray:uint8:4\", \"int\", \"bytes\", \"float32\", \"str\"], " \
	"\"column_names\": [\"arr\", \"cls\", \"img\", \"label\", \"name\"], \"column_sizes\": "   \
	"[4, 8, null, 4, null], \"compression\": null, \"format\": \"mds\", \"hashes\": [], "      \
	"\"size_limit\": 67108864, \"version\": 2}"

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

static void put32(buf *b, uint32_t v)
{
	uint8_t le[4];
	memcpy(le, &v, 4);
	put(b, le, 4);
}

/* Sample i: arr = i..i+3, cls = i * 7, img = (i % 50) * 1000 + 1 bytes of i, label = i / 2, name.
 */
static buf sample(uint32_t i)
{
	buf s = {0};
	char name[32];
	int nl = snprintf(name, sizeof(name), "sample-%u", i);
	uint32_t img = (i % 50) * 1000 + 1;
	put32(&s, img);
	put32(&s, (uint32_t)nl);
	uint8_t arr[4] = {(uint8_t)i, (uint8_t)(i + 1), (uint8_t)(i + 2), (uint8_t)(i + 3)};
	put(&s, arr, 4);
	int64_t cls = (int64_t)i * 7;
	put(&s, &cls, 8);
	uint8_t *im = malloc(img);
	memset(im, (int)i, img);
	put(&s, im, img);
	free(im);
	float label = (float)i / 2;
	put(&s, &label, 4);
	put(&s, name, (size_t)nl);
	return s;
}

/* A shard as MDSWriter.encode_joint_shard writes it. */
static buf shard(uint32_t n)
{
	buf body = {0}, out = {0};
	uint32_t *offs = malloc(4 * (n + 1));
	uint32_t at = 4 + 4 * (n + 1) + (uint32_t)strlen(CONFIG);
	for (uint32_t i = 0; i < n; i++) {
		buf s = sample(i);
		offs[i] = at;
		at += (uint32_t)s.n;
		put(&body, s.p, s.n);
		free(s.p);
	}
	offs[n] = at;
	put32(&out, n);
	for (uint32_t i = 0; i <= n; i++)
		put32(&out, offs[i]);
	put(&out, CONFIG, strlen(CONFIG));
	if (body.n)
		put(&out, body.p, body.n);
	free(body.p);
	free(offs);
	return out;
}

static int open_buf(const rf_format *f, const char *url, const uint8_t *p, size_t len, bool local,
                    rf_shard_index **ix, void **priv, rf_error *err)
{
	rf_fmt_open o = {.url = url, .name = url, .size = len, .local = local};
	for (int steps = 0; steps < 64; steps++) {
		uint64_t may_hold = o.held_bytes + (o.got ? o.want.parse_bound : 0);
		int rc = f->open_step(&o, err);
		/* the engine's rule: a step holds at most what it held plus its bound */
		if (rc >= 0)
			assert_true(o.held_bytes <= may_hold);
		if (rc == RF_FMT_NEED) {
			assert_true(o.want.object == NULL);
			assert_true(o.want.offset + o.want.len <= len);
			o.got = p + o.want.offset;
			o.got_offset = o.want.offset;
			o.got_len = o.want.len;
			continue;
		}
		if (f->open_abort)
			f->open_abort(&o);
		if (rc == RF_FMT_DONE) {
			*ix = o.index;
			*priv = o.priv;
		} else {
			assert_true(rc < 0);
			assert_int_equal(err->code, rc);
		}
		return rc;
	}
	fail_msg("open did not finish in 64 steps");
	return -1;
}

static const char *col(const void *priv, const rf_format *f, uint32_t id)
{
	const char *const *names;
	assert_true(id < f->field_names(priv, &names));
	return names[id];
}

/* Every sample of every unit equals what sample() wrote. */
static void check_all(const rf_format *f, const uint8_t *file, const rf_shard_index *ix,
                      const void *priv, uint32_t n)
{
	uint64_t rec = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		uint64_t cap = f->in_place ? f->table_bytes(ix, priv, u) : b->decoded_bytes;
		uint8_t *dst = malloc(cap);
		rf_unit_records r;
		rf_error err = {0};
		int rc = f->decode(NULL, ix, priv, u, file + b->offset, b->compressed_bytes, dst,
		                   cap, &r, "t", &err);
		if (rc)
			fail_msg("decode unit %u: %s", u, err.msg);
		for (uint32_t i = 0; i < r.records; i++, rec++) {
			buf s = sample((uint32_t)rec);
			assert_int_equal(r.field_first[i + 1] - r.field_first[i], 5);
			uint32_t a = rf_record_end(r.ends, (int64_t)i - 1),
			         e = rf_record_end(r.ends, i);
			assert_int_equal(e - a, s.n);
			assert_memory_equal(r.base + a, s.p, s.n);
			const rf_rec_field *fl = &r.fields[r.field_first[i]];
			assert_string_equal(col(priv, f, fl[2].name), "img");
			assert_int_equal(fl[2].len, (rec % 50) * 1000 + 1);
			assert_int_equal(r.base[fl[2].offset], (uint8_t)rec);
			int64_t cls;
			memcpy(&cls, r.base + fl[1].offset, 8);
			assert_int_equal(cls, (int64_t)rec * 7);
			float label;
			memcpy(&label, r.base + fl[3].offset, 4);
			assert_true(label == (float)rec / 2);
			char name[32];
			snprintf(name, sizeof(name), "sample-%u", (unsigned)rec);
			assert_int_equal(fl[4].len, strlen(name));
			assert_memory_equal(r.base + fl[4].offset, name, fl[4].len);
			assert_int_equal(r.base[fl[0].offset + 3], (uint8_t)(rec + 3));
			char key[64];
			snprintf(key, sizeof(key), "shard.00000/%08u", (unsigned)rec);
			assert_int_equal(r.key_first[i + 1] - r.key_first[i], strlen(key));
			assert_memory_equal(r.keys + r.key_first[i], key, strlen(key));
			free(s.p);
		}
		free(dst);
	}
	assert_int_equal(rec, n);
	assert_int_equal(ix->records, n);
}

static void test_plain(void **state)
{
	(void)state;
	buf s = shard(400); /* about 10 MB of img */
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	if (open_buf(&rf_mds_format, "d/shard.00000.mds", s.p, s.n, false, &ix, &priv, &err))
		fail_msg("%s", err.msg);
	assert_true(ix->blocks > 3); /* units of about 1 MiB */
	check_all(&rf_mds_format, s.p, ix, priv, 400);
	rf_mds_format.close(ix, priv);
	free(s.p);
}

static void test_zstd(void **state)
{
	(void)state;
	buf s = shard(200);
	size_t cap = ZSTD_compressBound(s.n);
	uint8_t *z = malloc(cap);
	size_t zn = ZSTD_compress(z, cap, s.p, s.n, 3);
	assert_false(ZSTD_isError(zn));
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	assert_int_equal(
	    open_buf(&rf_mds_zstd_format, "d/shard.00000.mds.zstd", z, zn, false, &ix, &priv, &err),
	    0);
	assert_int_equal(ix->blocks, 1);
	assert_true(ix->block[0].decoded_bytes >= s.n);
	check_all(&rf_mds_zstd_format, z, ix, priv, 200);
	rf_mds_zstd_format.close(ix, priv);
	/* a damaged frame is corrupt at decode */
	free(s.p);
	free(z);
}

static void expect(const rf_format *f, buf *s, const char *w1, const char *w2)
{
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	int rc = open_buf(f, "d/shard.00000.mds", s->p, s->n, false, &ix, &priv, &err);
	if (rc >= 0)
		fail_msg("opened; expected an error with '%s'", w1);
	if (!strstr(err.msg, w1) || (w2 && !strstr(err.msg, w2)))
		fail_msg("'%s' lacks '%s' / '%s'", err.msg, w1, w2 ? w2 : "");
	assert_non_null(strstr(err.msg, "shard.00000.mds"));
}

static void test_hostile(void **state)
{
	(void)state;
	buf s = shard(4);
	uint32_t v = 0xffffff;
	memcpy(s.p, &v, 4); /* more samples than the file could index */
	expect(&rf_mds_format, &s, "offset table", "at byte 0");
	free(s.p);

	s = shard(4);
	memcpy(&v, s.p + 12, 4);
	v = 1; /* sample 1 ends before it starts */
	memcpy(s.p + 12, &v, 4);
	expect(&rf_mds_format, &s, "sample", "before it starts");
	free(s.p);

	s = shard(4);
	s.n -= 1; /* the last offset no longer the file's end */
	expect(&rf_mds_format, &s, "past the shard", NULL);
	free(s.p);

	s = shard(2);
	memcpy(strstr((char *)s.p + 20, "float32"), "float99", 7);
	expect(&rf_mds_format, &s, "unknown encoding 'float99'", NULL);
	free(s.p);

	s = shard(2);
	memcpy(strstr((char *)s.p + 20, "[4, 8,"), "[4, 9,", 6);
	expect(&rf_mds_format, &s, "column 'cls'", "size");
	free(s.p);

	/* a sample whose variable size runs past it: an error at decode */
	s = shard(2);
	uint32_t first = 4 + 4 * 3 + (uint32_t)strlen(CONFIG);
	v = 1u << 30;
	memcpy(s.p + first, &v, 4);
	rf_shard_index *ix;
	void *priv;
	rf_error err = {0};
	assert_int_equal(
	    open_buf(&rf_mds_format, "d/shard.00000.mds", s.p, s.n, false, &ix, &priv, &err), 0);
	uint64_t cap = rf_mds_format.table_bytes(ix, priv, 0);
	uint8_t *dst = malloc(cap);
	rf_unit_records r;
	assert_int_equal(rf_mds_format.decode(NULL, ix, priv, 0, s.p + ix->block[0].offset,
	                                      ix->block[0].compressed_bytes, dst, cap, &r, "x.mds",
	                                      &err),
	                 RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "column 'img'"));
	char at[32];
	snprintf(at, sizeof(at), "byte %u", first);
	assert_non_null(strstr(err.msg, at));
	free(dst);
	rf_mds_format.close(ix, priv);
	free(s.p);
}

typedef struct listed {
	char names[8][64];
	uint64_t bytes[8];
	int n;
} listed;

static int add(void *ctx, const char *basename, uint64_t size, rf_error *err)
{
	listed *l = ctx;
	assert_true(l->n < 8);
	snprintf(l->names[l->n], 64, "%s", basename);
	l->bytes[l->n++] = size;
	return 0;
}

static int index_of(const char *json, listed *l, rf_error *err)
{
	memset(l, 0, sizeof(*l));
	return rf_mds_index_parse((const uint8_t *)json, strlen(json), "d/index.json", add, l, err);
}

#define SHARD_JSON(comp, raw, zip)                                                                 \
	"{\"column_encodings\": [\"str\"], \"column_names\": [\"t\"], \"column_sizes\": [null], "  \
	"\"compression\": " comp ", \"format\": \"mds\", \"hashes\": [], \"raw_data\": " raw       \
	", \"samples\": 3, \"size_limit\": 67108864, \"version\": 2, \"zip_data\": " zip "}"

static void test_index(void **state)
{
	(void)state;
	listed l;
	rf_error err = {0};
	assert_int_equal(
	    index_of(
	        "{\"shards\": [" SHARD_JSON(
	            "null", "{\"basename\": \"shard.00000.mds\", \"bytes\": 100, \"hashes\": {}}",
	            "null") ", " SHARD_JSON("\"zstd\"",
	                                    "{\"basename\": \"shard.00001.mds\", \"bytes\": 100, "
	                                    "\"hashes\": {}}",
	                                    "{\"basename\": \"shard.00001.mds.zstd\", \"bytes\": "
	                                    "40, \"hashes\": {}}") "], \"version\": 2}",
	        &l, &err),
	    0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.names[0], "shard.00000.mds");
	assert_int_equal(l.bytes[0], 100);
	assert_string_equal(l.names[1], "shard.00001.mds.zstd");
	assert_int_equal(l.bytes[1], 40);

	/* a basename that is a path is refused, never joined */
	assert_true(index_of("{\"shards\": [" SHARD_JSON("null",
	                                                 "{\"basename\": \"../../etc/x.mds\", "
	                                                 "\"bytes\": 1}",
	                                                 "null") "], \"version\": 2}",
	                     &l, &err) < 0);
	assert_non_null(strstr(err.msg, "one name"));
	assert_int_equal(l.n, 0);
	assert_true(index_of("{\"shards\": [], \"version\": 3}", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "version 2"));
	assert_true(index_of("{\"shards\": [", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "d/index.json"));
	assert_true(index_of("{\"shards\": [" SHARD_JSON(
	                         "\"gz\"", "{\"basename\": \"s.mds\", \"bytes\": 1}",
	                         "{\"basename\": \"s.mds.gz\", \"bytes\": 1}") "], "
	                                                                       "\"version\": 2}",
	                     &l, &err) < 0);
	assert_non_null(strstr(err.msg, "compression gz"));
}

/* An index read in pieces that never ends: `{"junk": "aaaa...` */
typedef struct endless {
	uint64_t sent;
} endless;

static int endless_read(void *ctx, uint8_t *out, size_t cap, size_t *got, rf_error *err)
{
	(void)err;
	endless *e = ctx;
	static const char head[] = "{\"junk\": \"";
	memset(out, 'a', cap);
	if (e->sent == 0)
		memcpy(out, head, strlen(head));
	e->sent += cap;
	*got = cap;
	return 0;
}

static void test_index_bounds(void **state)
{
	(void)state;
	listed l;
	rf_error err = {0};
	const char *one =
	    SHARD_JSON("null", "{\"basename\": \"sh\\u0061rd.00000.mds\", \"bytes\": 7}", "null");
	/* ignored values of every kind, nested up to the bound, keys in any
	 * order, escapes decoded */
	char *doc = malloc(1 << 16);
	assert_non_null(doc);
	int n = snprintf(doc, 1 << 16, "{\"x\": ");
	for (int i = 0; i < RF_MDS_INDEX_DEPTH_MAX - 2; i++)
		n += snprintf(doc + n, 64, i % 2 ? "[" : "{\"k\\n\": ");
	n += snprintf(doc + n, 64, "[true, false, null, -1.5e+3, \"\\ud83d\\ude00\"]");
	for (int i = RF_MDS_INDEX_DEPTH_MAX - 3; i >= 0; i--)
		n += snprintf(doc + n, 8, i % 2 ? "]" : "}");
	snprintf(doc + n, 4096, ", \"shards\": [%s], \"version\": 2}", one);
	int rc = index_of(doc, &l, &err);
	if (rc < 0)
		fprintf(stderr, "%s\n%s\n", err.msg, doc);
	assert_int_equal(rc, 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.names[0], "shard.00000.mds");
	assert_int_equal(l.bytes[0], 7);

	/* one level deeper is refused, naming the file, the byte and the bound */
	n = snprintf(doc, 1 << 16, "{\"x\": ");
	for (int i = 0; i < RF_MDS_INDEX_DEPTH_MAX; i++)
		doc[n++] = '[';
	snprintf(doc + n, 64, "]]]");
	assert_true(index_of(doc, &l, &err) < 0);
	assert_non_null(strstr(err.msg, "d/index.json: at byte 38: values nest more than 32 deep"));
	free(doc);

	/* the bytes' bound is met by a reader that never ends, not by memory */
	endless e = {0};
	assert_int_equal(rf_mds_index_scan(endless_read, &e, "d/index.json", add, &l, &err),
	                 -EFBIG);
	assert_non_null(strstr(err.msg, "d/index.json: more than 67108864 bytes"));
	assert_true(e.sent <= RF_MDS_INDEX_MAX + RF_MDS_INDEX_WINDOW);

	/* a key the index uses, twice; bytes after the object; a real version */
	assert_true(index_of("{\"version\": 2, \"version\": 2, \"shards\": []}", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "key \"version\" twice"));
	assert_true(index_of("{\"version\": 2, \"shards\": []} {}", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "bytes after the index's object"));
	assert_true(index_of("{\"version\": 2.0, \"shards\": []}", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "version 2 with a shards array"));
	assert_true(
	    index_of("{\"version\": 2, \"shards\": [{\"format\": \"m\\u0000ds\"}]}", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "shard 0: format is not \"mds\""));
	assert_true(index_of("{\"version\": 2, \"shards\": [] ", &l, &err) < 0);
	assert_non_null(
	    strstr(err.msg, "d/index.json: at byte 28: the file ends inside an object"));
	assert_true(index_of("{\"version\": 2, \"shards\": [] 7}", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "d/index.json: at byte 28: ',' or '}' was expected"));
}

static void test_encodings(void **state)
{
	(void)state;
	assert_int_equal(rf_mds_encoding_size("int"), 8);
	assert_int_equal(rf_mds_encoding_size("float16"), 2);
	assert_int_equal(rf_mds_encoding_size("str"), -1);
	assert_int_equal(rf_mds_encoding_size("jpeg:90"), -1);
	assert_int_equal(rf_mds_encoding_size("ndarray"), -1);
	assert_int_equal(rf_mds_encoding_size("ndarray:float32"), -1);
	assert_int_equal(rf_mds_encoding_size("ndarray:float32:2,3"), 24);
	assert_int_equal(rf_mds_encoding_size("ndarray:float32:0"), -2);
	assert_int_equal(rf_mds_encoding_size("ndarray:bool:2"), -2);
	assert_int_equal(rf_mds_encoding_size("ndarray:uint8:99999999999999"), -2);
	assert_int_equal(rf_mds_encoding_size("complex"), -2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain),        cmocka_unit_test(test_zstd),
	    cmocka_unit_test(test_hostile),      cmocka_unit_test(test_index),
	    cmocka_unit_test(test_index_bounds), cmocka_unit_test(test_encodings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
