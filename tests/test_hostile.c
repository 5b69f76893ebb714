/* test_hostile.c - hostile input gets a bounded, clear failure: shard
 * footers and indexes whose offsets lie outside the file or whose counts and
 * sums overflow, decompression bombs (a frame declaring or decoding to more
 * than the index says, a frame without a content size), a manifest naming
 * ten million shards, brace patterns expanding to 10^7 names; and the
 * inputs the fuzzers found (fuzz/regressions/), each with its specific
 * error. Every index here carries correct CRCs, so the check under test is
 * the one that fires. */
#include "crc32c.h"
#include "http.h"
#include "manifest.h"
#include "rfs.h"
#include "s3.h"
#include "testutil.h"
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

/* ------------------------------------------------------------ helpers */

static void expect_msg(int rc, int code, const rf_error *err, const char *needle)
{
	assert_int_equal(rc, code);
	assert_int_equal(err->code, code);
	if (!strstr(err->msg, needle))
		fail_msg("'%s' lacks '%s'", err->msg, needle);
}

/* An index: header fields, metadata, entries. */
typedef struct index_spec {
	uint32_t blocks; /* as written in the header */
	uint64_t records;
	uint32_t largest_c, largest_d, largest_record;
	const char *meta;
	uint32_t entries; /* entries actually written */
	const rf_block_info *e;
} index_spec;

/* Writes the index at p; returns its length. */
static size_t put_index(uint8_t *p, const index_spec *s)
{
	size_t ml = s->meta ? strlen(s->meta) : 0;
	rf_store_le32(p, s->blocks);
	rf_store_le64(p + 4, s->records);
	rf_store_le32(p + 12, s->largest_c);
	rf_store_le32(p + 16, s->largest_d);
	rf_store_le32(p + 20, s->largest_record);
	rf_store_le32(p + 24, (uint32_t)ml);
	memcpy(p + RF_INDEX_HEADER_BYTES, s->meta ? s->meta : "", ml);
	uint8_t *e = p + RF_INDEX_HEADER_BYTES + ml;
	for (uint32_t i = 0; i < s->entries; i++, e += RF_INDEX_ENTRY_BYTES) {
		rf_store_le64(e, s->e[i].offset);
		rf_store_le32(e + 8, s->e[i].compressed_bytes);
		rf_store_le32(e + 12, s->e[i].decoded_bytes);
		rf_store_le32(e + 16, s->e[i].records);
		rf_store_le32(e + 20, (uint32_t)s->e[i].first_record);
	}
	return (size_t)(e - p);
}

/* A footer with correct CRCs (index may be NULL: CRC of nothing). */
static void put_footer(uint8_t *f, uint64_t index_offset, uint64_t index_bytes,
                       const uint8_t *index, size_t index_len)
{
	memset(f, 0, RF_FOOTER_BYTES);
	memcpy(f, RF_FOOTER_MAGIC, RF_FOOTER_MAGIC_BYTES);
	rf_store_le32(f + RF_FOOTER_VERSION_AT, RF_FORMAT_VERSION);
	rf_store_le64(f + RF_FOOTER_INDEX_OFFSET_AT, index_offset);
	rf_store_le64(f + RF_FOOTER_INDEX_BYTES_AT, index_bytes);
	rf_store_le32(f + RF_FOOTER_INDEX_CRC_AT, index ? rf_crc32c(0, index, index_len) : 0);
	rf_store_le32(f + RF_FOOTER_CRC_AT, rf_crc32c(0, f, RF_FOOTER_CRC_AT));
}

static int footer_of(uint64_t file_bytes, uint64_t index_offset, uint64_t index_bytes,
                     rf_error *err)
{
	uint8_t f[RF_FOOTER_BYTES];
	rf_footer ft;
	put_footer(f, index_offset, index_bytes, NULL, 0);
	return rf_footer_parse(f, sizeof(f), file_bytes, "hostile.rfs", &ft, err);
}

/* Parses an index that sits right before the footer of a file whose data
 * region is data_bytes long (only the index bytes exist in memory). */
static int index_of(const index_spec *s, uint64_t data_bytes, rf_shard_index **ix, rf_error *err)
{
	size_t cap = RF_INDEX_HEADER_BYTES + 256 + (size_t)s->entries * RF_INDEX_ENTRY_BYTES;
	uint8_t *p = malloc(cap);
	assert_non_null(p);
	size_t n = put_index(p, s);
	rf_footer ft = {.version = RF_FORMAT_VERSION,
	                .index_offset = data_bytes,
	                .index_bytes = n,
	                .index_crc32c = rf_crc32c(0, p, n)};
	int rc =
	    rf_index_parse(p, n, &ft, data_bytes + n + RF_FOOTER_BYTES, "hostile.rfs", ix, err);
	free(p);
	if (rc < 0)
		assert_null(*ix);
	return rc;
}

/* ------------------------------------------------ offsets outside the file */

static void test_footer_offsets(void **state)
{
	(void)state;
	rf_error err = {0};
	uint8_t f[RF_FOOTER_BYTES];
	rf_footer ft;
	put_footer(f, 0, 28, NULL, 0);
	expect_msg(rf_footer_parse(f, sizeof(f), 39, "hostile.rfs", &ft, &err), RF_E_CORRUPT, &err,
	           "shorter than the 40-byte footer");
	/* index_offset + index_bytes wraps past 2^64 to land on the footer */
	uint64_t file = 1000, at = file - RF_FOOTER_BYTES;
	expect_msg(footer_of(file, UINT64_MAX - 99, at + 100, &err), RF_E_CORRUPT, &err,
	           "does not end where the footer starts");
	/* the index starts beyond the end of the file */
	expect_msg(footer_of(file, 5000, 100, &err), RF_E_CORRUPT, &err, "index [5000, +100)");
	/* an index larger than any sound shard's, however large the file */
	uint64_t big = RF_INDEX_BYTES_MAX + 1, huge = UINT64_MAX - 7;
	expect_msg(footer_of(huge, huge - RF_FOOTER_BYTES - big, big, &err), RF_E_CORRUPT, &err,
	           "its size is outside");
	/* the index as given must be exactly the bytes the footer names */
	ft = (rf_footer){.version = 1, .index_offset = 0, .index_bytes = 100};
	rf_shard_index *ix = NULL;
	uint8_t buf[100] = {0};
	expect_msg(rf_index_parse(buf, 99, &ft, 140, "hostile.rfs", &ix, &err), -EINVAL, &err,
	           "got 99 bytes, need 100");
	ft.index_offset = UINT64_MAX - 50;
	expect_msg(rf_index_parse(buf, 100, &ft, 140, "hostile.rfs", &ix, &err), RF_E_CORRUPT, &err,
	           "do not end the 140-byte file");
	assert_null(ix);
}

/* ------------------------------------------------------ counts that overflow */

static void test_index_counts(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_shard_index *ix = NULL;
	/* 2^32-1 blocks: refused from the header, before 96 GiB of entries are
	 * allocated (blocks * 24 is computed in 64 bits) */
	index_spec s = {.blocks = UINT32_MAX};
	expect_msg(index_of(&s, 0, &ix, &err), RF_E_CORRUPT, &err,
	           "4294967295 blocks exceeds RF_INDEX_BLOCKS_MAX");
	/* the most blocks allowed, but an index too small to hold their entries */
	s.blocks = RF_INDEX_BLOCKS_MAX;
	expect_msg(index_of(&s, 0, &ix, &err), RF_E_CORRUPT, &err, "footer says 28");
	/* more records than a shard may hold */
	s = (index_spec){.records = (uint64_t)UINT32_MAX + 1};
	expect_msg(index_of(&s, 0, &ix, &err), RF_E_CORRUPT, &err, "exceeds 4294967295 per shard");
	/* a block of 2^32-1 records cannot fit its table in any block */
	rf_block_info two[2] = {{0, 8192, RF_BLOCK_DECODED_MAX, UINT32_MAX, 0},
	                        {8192, 100, 1u << 20, 600, 600}};
	s = (index_spec){.blocks = 2,
	                 .records = UINT32_MAX,
	                 .largest_c = 8192,
	                 .largest_d = RF_BLOCK_DECODED_MAX,
	                 .entries = 2,
	                 .e = two};
	expect_msg(index_of(&s, 8292, &ix, &err), RF_E_CORRUPT, &err,
	           "smaller than its record table");
	/* blocks whose record counts add up past the shard's total */
	two[0].records = 600;
	s.records = 1000;
	expect_msg(index_of(&s, 8292, &ix, &err), RF_E_CORRUPT, &err,
	           "block 1 at byte 8192 (index entry at byte 8344): record count exceeds the "
	           "shard's total");
	/* a bomb declared in the index: 256 MiB from 100 bytes is more than any
	 * zstd frame of that length decodes to, so no slab is sized from it */
	two[0].compressed_bytes = 100;
	two[1].offset = 100;
	expect_msg(index_of(&s, 200, &ix, &err), RF_E_CORRUPT, &err,
	           "decoded size is more than a zstd frame of that length can hold");
	/* a largest-block figure over the decode limit */
	s.largest_d = RF_BLOCK_DECODED_MAX + 1;
	expect_msg(index_of(&s, 8292, &ix, &err), RF_E_CORRUPT, &err, "over RF_BLOCK_DECODED_MAX");
}

static void test_block_offsets(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_shard_index *ix = NULL;
	/* offset + size near 2^64: the block must start where the last ended */
	rf_block_info b = {UINT64_MAX - 10, 100, 8, 1, 0};
	index_spec s = {.blocks = 1,
	                .records = 1,
	                .largest_c = 100,
	                .largest_d = 8,
	                .largest_record = 0,
	                .entries = 1,
	                .e = &b};
	expect_msg(index_of(&s, 100, &ix, &err), RF_E_CORRUPT, &err,
	           "does not start where the previous one ends");
	/* a frame that runs past the index (and the file) */
	b.offset = 0;
	b.compressed_bytes = UINT32_MAX;
	s.largest_c = UINT32_MAX;
	expect_msg(index_of(&s, 100, &ix, &err), RF_E_CORRUPT, &err,
	           "frame extends past the start of the index");
	/* blocks that stop short of the index */
	b.compressed_bytes = 60;
	s.largest_c = 60;
	expect_msg(index_of(&s, 100, &ix, &err), RF_E_CORRUPT, &err,
	           "blocks do not end where the index starts");
	/* and when everything adds up, the index is accepted */
	b.compressed_bytes = 100;
	s.largest_c = 100;
	assert_int_equal(index_of(&s, 100, &ix, &err), 0);
	assert_int_equal(ix->blocks, 1);
	rf_index_free(ix);
}

/* ------------------------------------------------------ decompression bombs */

/* 1 MiB of zeros as one frame (content size and checksum set). */
static size_t zero_frame(uint8_t *out, size_t cap, size_t decoded, int with_size)
{
	uint8_t *zeros = calloc(1, decoded);
	assert_non_null(zeros);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, with_size);
	size_t n;
	if (with_size) {
		n = ZSTD_compress2(c, out, cap, zeros, decoded);
	} else { /* streamed: the size is not known up front */
		ZSTD_inBuffer in = {zeros, decoded, 0};
		ZSTD_outBuffer o = {out, cap, 0};
		n = ZSTD_compressStream2(c, &o, &in, ZSTD_e_end);
		assert_int_equal(n, 0);
		n = o.pos;
	}
	assert_false(ZSTD_isError(n));
	ZSTD_freeCCtx(c);
	free(zeros);
	return n;
}

static int decode_one(const uint8_t *frame, size_t len, uint32_t decoded, uint32_t records,
                      rf_error *err)
{
	rf_block_info bi = {0, (uint32_t)len, decoded, records, 0};
	rf_shard_index ix = {.blocks = 1,
	                     .records = records,
	                     .largest_block_compressed_bytes = (uint32_t)len,
	                     .largest_block_decoded_bytes = decoded,
	                     .metadata = (char *)"",
	                     .block = &bi};
	uint8_t *slab = malloc(decoded); /* exactly the index's size: ASan sees any overrun */
	assert_non_null(slab);
	rf_decoder *d = rf_decoder_new();
	const uint32_t *ends = NULL;
	int rc = rf_block_decode(d, &ix, 0, frame, len, slab, decoded, &ends, "hostile.rfs", err);
	rf_decoder_free(d);
	free(slab);
	return rc;
}

static void test_decompression_bombs(void **state)
{
	(void)state;
	rf_error err = {0};
	size_t cap = ZSTD_compressBound(1u << 20);
	uint8_t *frame = malloc(cap);
	/* the frame honestly declares 1 MiB; the index says 100 bytes */
	size_t n = zero_frame(frame, cap, 1u << 20, 1);
	assert_true(n < 200); /* ~100 bytes that would become 1 MiB */
	expect_msg(decode_one(frame, n, 100, 1, &err), RF_E_CORRUPT, &err,
	           "frame declares 1048576 decoded bytes, index says 100");
	/* the frame lies: its header is forged to declare 100 bytes, its blocks
	 * decode to 1 MiB; the decoder stops at the 100-byte slab */
	unsigned fhd = frame[4], size_flag = fhd >> 6, single = (fhd >> 5) & 1;
	size_t fcs_at = 5 + (single ? 0 : 1) + (size_t)((unsigned[]){0, 1, 2, 4}[fhd & 3]);
	assert_int_equal(size_flag, 2); /* a 4-byte content size field */
	rf_store_le32(frame + fcs_at, 100);
	assert_int_equal(ZSTD_getFrameContentSize(frame, n), 100);
	expect_msg(decode_one(frame, n, 100, 1, &err), RF_E_CORRUPT, &err, "zstd decode failed");
	/* a frame without a content size is refused before decoding */
	n = zero_frame(frame, cap, 1u << 20, 0);
	assert_int_equal(ZSTD_getFrameContentSize(frame, n), ZSTD_CONTENTSIZE_UNKNOWN);
	expect_msg(decode_one(frame, n, 1u << 20, 1, &err), RF_E_CORRUPT, &err,
	           "frame lacks its content size");
	/* two frames where the index names one */
	size_t one = zero_frame(frame, cap, 64, 1);
	memcpy(frame + one, frame, one);
	expect_msg(decode_one(frame, 2 * one, 64, 1, &err), RF_E_CORRUPT, &err,
	           "does not match the index's");
	free(frame);
}

/* A record table whose count or ends point outside the block. */
static void test_record_table(void **state)
{
	(void)state;
	rf_error err = {0};
	uint8_t b[16] = {0};
	rf_store_le32(b + 12, UINT32_MAX); /* 2^32-1 records in 16 bytes */
	expect_msg(rf_block_table_check(b, sizeof(b), UINT32_MAX, NULL, "hostile.rfs", 3, &err),
	           RF_E_CORRUPT, &err,
	           "record table of 4294967295 records does not fit in 16 bytes");
	rf_store_le32(b + 12, 1);
	rf_store_le32(b + 8, UINT32_MAX); /* the one record ends at 4 GiB */
	expect_msg(rf_block_table_check(b, sizeof(b), 1, NULL, "hostile.rfs", 3, &err),
	           RF_E_CORRUPT, &err, "record 0 ends at 4294967295, inside the record table");
}

/* ------------------------------------------------------------ manifests */

static void test_manifest_ten_million(void **state)
{
	(void)state;
	/* ten million shards, generated here: refused by a first pass over the
	 * lines, before one entry is allocated */
	const char *line = "s\t40\t1\n";
	size_t ml = strlen(RF_MANIFEST_MAGIC) + 1, ll = strlen(line), count = 10000000;
	size_t len = ml + ll * count;
	char *b = malloc(len);
	assert_non_null(b);
	memcpy(b, RF_MANIFEST_MAGIC "\n", ml);
	for (size_t i = 0; i < count; i++)
		memcpy(b + ml + i * ll, line, ll);
	rf_manifest *m = NULL;
	rf_error err = {0};
	char want[80];
	snprintf(want, sizeof(want), "line %d: more than %d shards", RF_MANIFEST_ENTRIES_MAX + 2,
	         RF_MANIFEST_ENTRIES_MAX);
	expect_msg(rf_manifest_parse(b, len, "", "huge.rfm", &m, &err), -E2BIG, &err, want);
	assert_null(m);
	free(b);
}

static void test_manifest_sum_overflow(void **state)
{
	(void)state;
	const char *text = RF_MANIFEST_MAGIC "\na\t18446744073709551615\t1\nb\t40\t1\n";
	rf_manifest *m = NULL;
	rf_error err = {0};
	expect_msg(rf_manifest_parse(text, strlen(text), "", "sum.rfm", &m, &err), -EOVERFLOW, &err,
	           "line 3: FILE_BYTES 40 makes the total exceed 2^64-1 bytes");
	assert_null(m);
	/* the largest single size is fine on its own */
	text = RF_MANIFEST_MAGIC "\na\t18446744073709551615\t4294967295\n";
	assert_int_equal(rf_manifest_parse(text, strlen(text), "", "sum.rfm", &m, &err), 0);
	assert_int_equal(m->bytes, UINT64_MAX);
	rf_manifest_free(m);
}

/* ------------------------------------------------------- brace expansion */

static void expect_brace(const char *pattern, const char *needle)
{
	rf_url_list l = {0};
	rf_error err = {0};
	expect_msg(rf_brace_expand(pattern, &l, &err), -EINVAL, &err, needle);
	assert_int_equal(l.n, 0); /* refused before the first name */
	assert_null(l.v);
}

static void test_brace_huge(void **state)
{
	(void)state;
	expect_brace("shard-{0000000..9999999}.rfs", "expands to more than 1000000 names");
	expect_brace("shard-{9999999..0}.rfs", "expands to more than 1000000 names");
	expect_brace("s-{0..999}-{0..99999}.rfs", "expands to more than 1000000 names");
	expect_brace("{0..999999999999999999}", "expands to more than 1000000 names");
	expect_brace("{0..9999999999999999999}", "bounds must be 1 to 18 digits");
	expect_brace(
	    "{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,1}{0,"
	    "1}{0,1}",
	    "more than 16 brace groups");
	/* the bound itself still expands */
	rf_url_list l = {0};
	rf_error err = {0};
	assert_int_equal(rf_brace_expand("{0..999}{000..999}", &l, &err), 0);
	assert_int_equal(l.n, RF_BRACE_EXPANSION_MAX);
	assert_string_equal(l.v[l.n - 1].url, "999999");
	rf_url_list_free(&l);
}

/* ------------------------------------------------- HTTP header values */

static void test_http_header_values(void **state)
{
	(void)state;
	assert_int_equal(rf_http_status_line("HTTP/1.1 206 Partial Content"), 206);
	assert_int_equal(rf_http_status_line("HTTP/2 416"), 416);
	/* a bare status line: no code, and nothing read past its end */
	assert_int_equal(rf_http_status_line("HTTP/"), 0);
	assert_int_equal(rf_http_status_line("HTTP/1.1234567890123 200"), 200);
	uint64_t n = 0;
	assert_true(rf_http_parse_content_length(" \t1000000000000000", &n));
	assert_true(n == 1000000000000000ull);
	assert_false(rf_http_parse_content_length(" 99999999999999999999", &n));
	assert_false(rf_http_parse_content_length("", &n));
	uint64_t first, last, total;
	assert_int_equal(
	    rf_http_parse_content_range("bytes 0-18446744073709551615/5", &first, &last, &total),
	    -EINVAL);
	assert_int_equal(rf_http_parse_content_range("bytes 5-4/10", &first, &last, &total),
	                 -EINVAL);
}

/* --------------------------------------------- fuzz regressions (fuzz/regressions/) */

static char *regression(const char *name)
{
	const char *src = getenv("RF_SOURCE_DIR");
	char *p = malloc(4096);
	snprintf(p, 4096, "%s/fuzz/regressions/%s", src ? src : ".", name);
	return p;
}

static void test_regressions(void **state)
{
	(void)state;
	/* fuzz_manifest: total FILE_BYTES wrapped past 2^64 (found from a seed
	 * holding a shard of 2^64-1 bytes); fixed in manifest.c add_entry */
	char *p = regression("manifest/bytes-sum-overflow");
	rf_manifest *m = NULL;
	rf_error err = {0};
	expect_msg(rf_manifest_read_file(p, &m, &err), -EOVERFLOW, &err,
	           "line 5: FILE_BYTES 18446744073709551615 makes the total exceed");
	assert_null(m);
	free(p);
	/* fuzz_s3list: a second, empty NextContinuationToken freed the first
	 * token and left the pointer behind, freed again at the end (double
	 * free); fixed in s3.c end_field */
	const char *s3[] = {"s3list/empty-second-token-double-free",
	                    "s3list/found-empty-second-token"};
	for (size_t i = 0; i < 2; i++) {
		p = regression(s3[i]);
		unsigned char *xml = NULL;
		long n = rf_test_read_file(p, &xml);
		assert_true(n > 0);
		rf_url_list l = {0};
		bool truncated = true;
		char *token = NULL;
		expect_msg(rf_s3_list_parse((const char *)xml, (size_t)n, "b", &l, &truncated,
		                            &token, &err),
		           -EPROTO, &err,
		           "bad ListObjectsV2 response for bucket b: an empty or oversized "
		           "NextContinuationToken");
		assert_int_equal(l.n, 0);
		assert_null(token);
		free(xml);
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_footer_offsets),
	    cmocka_unit_test(test_index_counts),
	    cmocka_unit_test(test_block_offsets),
	    cmocka_unit_test(test_decompression_bombs),
	    cmocka_unit_test(test_record_table),
	    cmocka_unit_test(test_manifest_ten_million),
	    cmocka_unit_test(test_manifest_sum_overflow),
	    cmocka_unit_test(test_brace_huge),
	    cmocka_unit_test(test_http_header_values),
	    cmocka_unit_test(test_regressions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
