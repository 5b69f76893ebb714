/* test_bundle.c - the index bundle (shards/bundle.h) and the manifest line
 * naming it: a bundle written entry by entry reads back exactly; every
 * damage the parser can meet (magic, version, checksum, a count past its
 * bytes, an entry's lengths, its path, bytes after the last entry, a cut)
 * is refused naming the bundle, the entry and its byte offset; a
 * manifest's bundle is found beside it (NAME.rfm: NAME.rfx, a URL's query
 * kept). */
#include "bundle.h"
#include "crc32c.h"
#include "manifest.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	uint8_t *b = malloc(1 << 20);
	assert_non_null(b);
	*len = fread(b, 1, 1 << 20, f);
	fclose(f);
	return b;
}

/* Two entries written by the writer: (path, tail) "a.rfs" 3 bytes of a
 * 100-byte shard, "sub/b.rfs" 5 bytes of a 5-byte one. */
static uint8_t *two(const char *dir, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/m.rfx", dir);
	rf_error err = {0};
	rf_bundle_writer *w = rf_bundle_writer_open(path, 2, &err);
	assert_non_null(w);
	rf_bundle_entry a = {.path = "a.rfs",
	                     .path_len = 5,
	                     .tail_len = 3,
	                     .file_bytes = 100,
	                     .tail = (const uint8_t *)"xyz"};
	rf_bundle_entry b = {.path = "sub/b.rfs",
	                     .path_len = 9,
	                     .tail_len = 5,
	                     .file_bytes = 5,
	                     .tail = (const uint8_t *)"12345"};
	assert_int_equal(rf_bundle_writer_add(w, &a, &err), 0);
	assert_int_equal(rf_bundle_writer_add(w, &b, &err), 0);
	assert_int_equal(rf_bundle_writer_close(w, &err), 0);
	return slurp(path, len);
}

static void recrc(uint8_t *b, size_t len)
{
	rf_store_le32(b + len - 4, rf_crc32c(0, b, len - 4));
}

static void expect_bad(const uint8_t *b, size_t len, const char *needle)
{
	rf_bundle *out = NULL;
	rf_error err = {0};
	assert_true(rf_bundle_parse(b, len, "m.rfx", &out, &err) < 0);
	assert_null(out);
	if (!strstr(err.msg, needle) || !strstr(err.msg, "index bundle m.rfx"))
		fail_msg("want '%s' in: %s", needle, err.msg);
}

static void test_round_trip(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("bundle");
	size_t len = 0;
	uint8_t *b = two(dir, &len);
	assert_int_equal(len, 16 + 16 + 5 + 3 + 16 + 9 + 5 + 4);
	rf_bundle *out = NULL;
	rf_error err = {0};
	assert_int_equal(rf_bundle_parse(b, len, "m.rfx", &out, &err), 0);
	assert_int_equal(out->count, 2);
	assert_int_equal(out->entry[0].path_len, 5);
	assert_memory_equal(out->entry[0].path, "a.rfs", 5);
	assert_int_equal(out->entry[0].file_bytes, 100);
	assert_int_equal(out->entry[0].tail_len, 3);
	assert_memory_equal(out->entry[0].tail, "xyz", 3);
	assert_memory_equal(out->entry[1].path, "sub/b.rfs", 9);
	assert_memory_equal(out->entry[1].tail, "12345", 5);
	assert_int_equal(out->entry[1].file_bytes, 5);
	rf_bundle_free(out);
	/* a writer told of more entries than it got leaves no file */
	char path[512];
	snprintf(path, sizeof(path), "%s/short.rfx", dir);
	rf_bundle_writer *w = rf_bundle_writer_open(path, 2, &err);
	rf_bundle_entry a = {.path = "a",
	                     .path_len = 1,
	                     .tail_len = 1,
	                     .file_bytes = 1,
	                     .tail = (const uint8_t *)"x"};
	assert_int_equal(rf_bundle_writer_add(w, &a, &err), 0);
	assert_true(rf_bundle_writer_close(w, &err) < 0);
	assert_non_null(strstr(err.msg, "fewer entries"));
	assert_int_equal(access(path, F_OK), -1);
	/* and refuses an entry it could not read back */
	w = rf_bundle_writer_open(path, 1, &err);
	a.tail_len = 2; /* longer than its shard */
	assert_true(rf_bundle_writer_add(w, &a, &err) < 0);
	rf_bundle_writer_abort(w);
	assert_int_equal(access(path, F_OK), -1);
	free(b);
	rf_test_rmtree(dir);
	free(dir);
}

static void test_damage(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("bundle");
	size_t len = 0;
	uint8_t *b = two(dir, &len), *c = malloc(len + 64);
	assert_non_null(c);
#define FRESH() memcpy(c, b, len)
	FRESH();
	c[0] = 'X';
	expect_bad(c, len, "not an index bundle");
	expect_bad(c, 10, "not an index bundle");
	FRESH();
	rf_store_le32(c + 8, 2);
	recrc(c, len);
	expect_bad(c, len, "version 2");
	FRESH();
	c[20] ^= 1; /* a byte of entry 0's header, checksum left */
	expect_bad(c, len, "checksum");
	expect_bad(b, len - 1, "checksum"); /* cut */
	FRESH();
	rf_store_le32(c + 12, 1000000); /* a count past its bytes */
	recrc(c, len);
	expect_bad(c, len, "says 1000000 entries");
	FRESH();
	rf_store_le32(c + 12, 1); /* one entry less: the second's bytes left over */
	recrc(c, len);
	expect_bad(c, len, "bytes after its 1 entries");
	FRESH();
	rf_store_le32(c + 12, 3); /* one more than it holds: cut in its header */
	recrc(c, len);
	expect_bad(c, len, "entry 2 at byte");
	FRESH();
	rf_store_le32(c + 16, 0); /* entry 0's path length */
	recrc(c, len);
	expect_bad(c, len, "entry 0 at byte 16: its path length");
	FRESH();
	rf_store_le32(c + 20, 101); /* entry 0's tail longer than its shard */
	recrc(c, len);
	expect_bad(c, len, "entry 0 at byte 16: its tail");
	FRESH();
	rf_store_le32(c + 20, 4000); /* runs past the end */
	rf_store_le64(c + 24, 1u << 20);
	recrc(c, len);
	expect_bad(c, len, "run past the bundle's end");
	FRESH();
	c[32] = '\n'; /* a control character in entry 0's path */
	recrc(c, len);
	expect_bad(c, len, "control character");
#undef FRESH
	free(c);
	free(b);
	rf_test_rmtree(dir);
	free(dir);
}

static void test_name(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
	    {"data/manifest.rfm", "data/manifest.rfx"},
	    {"/abs/m", "/abs/m.rfx"},
	    {"list.txt", "list.txt.rfx"},
	    {"s3://b/ds/manifest.rfm", "s3://b/ds/manifest.rfx"},
	    {"https://h/ds/manifest.rfm?X-Amz-Signature=S",
	     "https://h/ds/manifest.rfx?X-Amz-Signature=S"},
	    {"https://h/ds/m?x=1#f", "https://h/ds/m.rfx?x=1#f"},
	    {"weird?.rfm", "weird?.rfx"}, /* a local name keeps its '?' */
	    {".rfm", ".rfx"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *n = rf_index_bundle_name(cases[i][0]);
		assert_non_null(n);
		assert_string_equal(n, cases[i][1]);
		free(n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_damage),
	    cmocka_unit_test(test_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
