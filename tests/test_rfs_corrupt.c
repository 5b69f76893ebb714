/* test_rfs_corrupt.c - every kind of bad shard input is a specific error that
 * names the shard and the byte offset: truncation at every length, a flipped
 * bit at every byte (block, record table, index, footer), wrong magic or
 * version, offsets and lengths beyond the file, record tables overlapping the
 * payload, frames that decode to more than declared, counts that would
 * overflow or ask for huge allocations. */
#include "crc32c.h"
#include "rfs.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

static char *tmp;
static char bad_path[600];
static uint8_t *good;
static size_t good_len;

typedef struct {
	uint8_t *b;
	size_t n;
} bytes;

static int setup(void **state)
{
	(void)state;
	tmp = rf_test_tmpdir("corrupt");
	char p[600];
	snprintf(p, sizeof(p), "%s/good.rfs", tmp);
	snprintf(bad_path, sizeof(bad_path), "%s/bad.rfs", tmp);
	rf_writer_options o = {.block_bytes = 1044, .metadata = "meta"};
	rf_error err = {0};
	rf_writer *w = rf_writer_open(p, &o, &err);
	uint8_t rec[100];
	for (int i = 0; i < 30; i++) {
		for (int j = 0; j < 100; j++)
			rec[j] = (uint8_t)(i * 31 + j * 7);
		if (rf_writer_add(w, rec, sizeof(rec), &err))
			return -1;
	}
	if (rf_writer_close(w, NULL, &err))
		return -1;
	unsigned char *g = NULL;
	long n = rf_test_read_file(p, &g);
	good = g;
	good_len = (size_t)n;
	return n > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	rf_test_rmtree(tmp);
	free(tmp);
	free(good);
	return 0;
}

static bytes copy_good(void)
{
	bytes c = {malloc(good_len), good_len};
	memcpy(c.b, good, good_len);
	return c;
}

/* Index range of the good shard. */
static uint64_t good_index_offset(void)
{
	return rf_load_le64(good + good_len - RF_FOOTER_BYTES + RF_FOOTER_INDEX_OFFSET_AT);
}

/* Recomputes the index CRC over [ix_off, +ix_bytes) and the footer CRC. */
static void seal(bytes *c, uint64_t ix_off, uint64_t ix_bytes)
{
	uint8_t *f = c->b + c->n - RF_FOOTER_BYTES;
	if (ix_bytes)
		rf_store_le32(f + RF_FOOTER_INDEX_CRC_AT, rf_crc32c(0, c->b + ix_off, ix_bytes));
	rf_store_le32(f + RF_FOOTER_CRC_AT, rf_crc32c(0, f, RF_FOOTER_CRC_AT));
}

static void seal_good_index(bytes *c)
{
	uint64_t off = good_index_offset();
	seal(c, off, c->n - RF_FOOTER_BYTES - off);
}

/* Full check of the bytes as a file: index read, then every block (verify). */
static int check_file(const bytes *c, rf_error *err)
{
	assert_int_equal(rf_test_write_file(bad_path, c->b, c->n), 0);
	return rf_verify_file(bad_path, NULL, NULL, 0, err);
}

static void expect(int rc, const rf_error *err, int code, const char *needle, const char *at)
{
	if (rc != code)
		fail_msg("rc %d (want %d): %s", rc, code, err->msg);
	if (needle && !strstr(err->msg, needle))
		fail_msg("'%s' lacks '%s'", err->msg, needle);
	if (at && !strstr(err->msg, at))
		fail_msg("'%s' lacks offset '%s'", err->msg, at);
	if (!strstr(err->msg, "bad.rfs") && !strstr(err->msg, "crafted"))
		fail_msg("'%s' does not name the shard", err->msg);
}

static void test_good_is_sound(void **state)
{
	(void)state;
	bytes c = copy_good();
	rf_error err = {0};
	assert_int_equal(check_file(&c, &err), 0);
	free(c.b);
}

static void test_truncated_every_length(void **state)
{
	(void)state;
	for (size_t len = 0; len < good_len; len++) {
		bytes c = {good, len};
		rf_error err = {0};
		int rc = check_file(&c, &err);
		char at[64];
		if (len < RF_FOOTER_BYTES)
			snprintf(at, sizeof(at), "at byte 0");
		else
			snprintf(at, sizeof(at), "footer at byte %zu", len - RF_FOOTER_BYTES);
		expect(rc, &err, RF_E_CORRUPT, len < RF_FOOTER_BYTES ? "shorter than" : NULL, at);
	}
}

/* True when block b of c decodes to exactly the bytes of the good shard's. */
static int same_decoded(const bytes *c, const rf_shard_index *ix, uint32_t b)
{
	const rf_block_info *bi = &ix->block[b];
	uint8_t *x = malloc(bi->decoded_bytes), *y = malloc(bi->decoded_bytes);
	size_t nx = ZSTD_decompress(x, bi->decoded_bytes, c->b + bi->offset, bi->compressed_bytes);
	size_t ny = ZSTD_decompress(y, bi->decoded_bytes, good + bi->offset, bi->compressed_bytes);
	int same = nx == bi->decoded_bytes && ny == nx && memcmp(x, y, nx) == 0;
	free(x);
	free(y);
	return same;
}

/* One flipped bit at every byte of the file: each is caught, in its region. */
static void test_bitflip_every_byte(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_shard_index *ix = NULL;
	assert_int_equal(rf_test_write_file(bad_path, good, good_len), 0);
	assert_int_equal(rf_index_read_file(bad_path, &ix, &err), 0);
	assert_int_equal(ix->blocks, 3);
	uint64_t io = good_index_offset();
	int seen[4] = {0}; /* block, index, footer body, footer crc */
	int harmless = 0;
	for (size_t pos = 0; pos < good_len; pos++) {
		bytes c = copy_good();
		c.b[pos] ^= (uint8_t)(1u << (pos % 8));
		int rc = check_file(&c, &err);
		char at[96];
		if (pos < io) {
			uint32_t b = 0;
			while (pos >= ix->block[b].offset + ix->block[b].compressed_bytes)
				b++;
			snprintf(at, sizeof(at), "block %u at byte %llu", b,
			         (unsigned long long)ix->block[b].offset);
			if (rc == 0) {
				/* zstd's checksum covers the decoded bytes: a flip that
				 * changes none of them (an ignored bit of an entropy
				 * table) is harmless; prove the records are intact */
				assert_true(same_decoded(&c, ix, b));
				harmless++;
				free(c.b);
				continue;
			}
			expect(rc, &err, RF_E_CORRUPT, NULL, at);
			seen[0]++;
		} else if (pos < good_len - RF_FOOTER_BYTES) {
			snprintf(at, sizeof(at), "index at byte %llu", (unsigned long long)io);
			expect(rc, &err, RF_E_CORRUPT, "index CRC-32C mismatch", at);
			seen[1]++;
		} else {
			snprintf(at, sizeof(at), "footer at byte %zu", good_len - RF_FOOTER_BYTES);
			expect(rc, &err, RF_E_CORRUPT, NULL, at);
			seen[pos < good_len - 4 ? 2 : 3]++;
		}
		free(c.b);
	}
	assert_true(seen[0] > 100 && seen[1] > 50 && seen[2] == 36 && seen[3] == 4);
	assert_true(harmless < seen[0] / 20);
	rf_index_free(ix);
}

static void test_magic_and_version(void **state)
{
	(void)state;
	rf_error err = {0};
	char at[64];
	snprintf(at, sizeof(at), "footer at byte %zu", good_len - RF_FOOTER_BYTES);
	bytes c = copy_good();
	memcpy(c.b + c.n - RF_FOOTER_BYTES, "RFSHARD2", 8);
	seal(&c, 0, 0);
	expect(check_file(&c, &err), &err, RF_E_CORRUPT, "bad magic", at);
	memcpy(c.b + c.n - RF_FOOTER_BYTES, "RFSHARD1", 8);
	rf_store_le32(c.b + c.n - RF_FOOTER_BYTES + RF_FOOTER_VERSION_AT, 2);
	seal(&c, 0, 0);
	expect(check_file(&c, &err), &err, -EPROTONOSUPPORT, "format version 2", at);
	rf_store_le32(c.b + c.n - RF_FOOTER_BYTES + RF_FOOTER_VERSION_AT, 1);
	rf_store_le32(c.b + c.n - RF_FOOTER_BYTES + RF_FOOTER_FLAGS_AT, 1);
	seal(&c, 0, 0);
	expect(check_file(&c, &err), &err, -EPROTONOSUPPORT, "unknown flags", at);
	/* the buffer API with a short buffer */
	rf_footer ft;
	assert_int_equal(rf_footer_parse(good, 10, good_len, "crafted", &ft, &err), -EINVAL);
	free(c.b);
}

/* Footer fields pointing outside the file, or overflowing. */
static void test_footer_offsets(void **state)
{
	(void)state;
	static const struct {
		uint64_t off, bytes;
	} cases[] = {
	    {UINT64_MAX - 10, 100}, /* offset + bytes overflows */
	    {0, UINT64_MAX},        /* huge index */
	    {1u << 30, 28},         /* beyond the file */
	    {0, 12},                /* smaller than the index header */
	    {100, (64u << 20)},     /* past the footer */
	};
	rf_error err = {0};
	char at[64];
	snprintf(at, sizeof(at), "footer at byte %zu", good_len - RF_FOOTER_BYTES);
	for (size_t i = 0; i < RF_ARRAY_LEN(cases); i++) {
		bytes c = copy_good();
		uint8_t *f = c.b + c.n - RF_FOOTER_BYTES;
		rf_store_le64(f + RF_FOOTER_INDEX_OFFSET_AT, cases[i].off);
		rf_store_le64(f + RF_FOOTER_INDEX_BYTES_AT, cases[i].bytes);
		seal(&c, 0, 0);
		expect(check_file(&c, &err), &err, RF_E_CORRUPT, "does not end where the footer",
		       at);
		free(c.b);
	}
	/* the buffer API refuses an index that does not match the file */
	rf_footer ft = {.version = 1, .index_offset = 0, .index_bytes = 28};
	rf_shard_index *ix = NULL;
	assert_int_equal(rf_index_parse(good, 28, &ft, 1000, "crafted", &ix, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "index at byte 0"));
	assert_null(ix);
}

typedef struct {
	size_t at; /* offset inside the index */
	int width; /* 4 or 8 */
	uint64_t value;
	int code;
	const char *needle;
	int where;       /* expected "at byte" : -1 index start, -2 none, >= 0 block number */
	size_t at_delta; /* added to the index offset for where == -1 */
} field_case;

#define ENTRY(b, f) (32 + 24 * (b) + (f))

static const field_case field_cases[] = {
    {0, 4, UINT32_MAX, RF_E_CORRUPT, "exceeds RF_INDEX_BLOCKS_MAX", -1, 0},
    {0, 4, RF_INDEX_BLOCKS_MAX, RF_E_CORRUPT, "index bytes, footer says", -1, 0},
    {0, 4, 4, RF_E_CORRUPT, "index bytes, footer says", -1, 0},
    {24, 4, UINT32_MAX, RF_E_CORRUPT, "exceeds RF_METADATA_MAX", -1, 24},
    {24, 4, 5, RF_E_CORRUPT, "index bytes, footer says", -1, 0},
    {4, 8, 1ull << 40, RF_E_CORRUPT, "records exceeds 4294967295", -1, 4},
    {4, 8, 31, RF_E_CORRUPT, "do not add up", -1, 0},
    {4, 8, 29, RF_E_CORRUPT, "record count exceeds the shard's total", 2, 0},
    {16, 4, 1u << 30, RF_E_CORRUPT, "over RF_BLOCK_DECODED_MAX", -1, 16},
    {16, 4, 2000, RF_E_CORRUPT, "largest decoded block does not match", -1, 0},
    {12, 4, 1, RF_E_CORRUPT, "compressed size exceeds the index's largest", 0, 0},
    {20, 4, 5000, RF_E_CORRUPT, "largest record exceeds", -1, 0},
    {20, 4, 99, RF_E_CORRUPT, "largest record is 100 bytes, index says 99", -1, 20},
    {28, 4, 0x6174006d, RF_E_CORRUPT, "metadata holds a NUL", -1, 28},
    {ENTRY(1, 0), 8, 1, RF_E_CORRUPT, "does not start where the previous one ends", -2, 0},
    {ENTRY(2, 8), 4, 1u << 31, RF_E_CORRUPT, "frame extends past", 2, 0},
    {ENTRY(0, 16), 4, 0, RF_E_CORRUPT, "holds no records", 0, 0},
    {ENTRY(0, 16), 4, UINT32_MAX, RF_E_CORRUPT, "smaller than its record table", 0, 0},
    {ENTRY(1, 12), 4, 1045, RF_E_CORRUPT, "decoded size exceeds", 1, 0},
    {ENTRY(1, 12), 4, 8, RF_E_CORRUPT, "smaller than its record table", 1, 0},
    {ENTRY(1, 20), 4, 11, RF_E_CORRUPT, "first record number", 1, 0},
    {ENTRY(0, 12), 4, 1043, RF_E_CORRUPT, "frame declares 1044 decoded bytes, index says 1043", 0,
     0},
    {ENTRY(2, 16), 4, 9, RF_E_CORRUPT, "do not add up", -1, 0},
};

/* Each index field set to a bad value, with valid CRCs so the structural
 * check itself (not the CRC) must catch it. */
static void test_index_fields(void **state)
{
	(void)state;
	uint64_t io = good_index_offset();
	rf_error err = {0};
	for (size_t i = 0; i < RF_ARRAY_LEN(field_cases); i++) {
		const field_case *fc = &field_cases[i];
		bytes c = copy_good();
		uint64_t old_offset = rf_load_le64(c.b + io + ENTRY(1, 0));
		if (fc->width == 8)
			rf_store_le64(c.b + io + fc->at, fc->value);
		else
			rf_store_le32(c.b + io + fc->at, (uint32_t)fc->value);
		if (fc->at == ENTRY(1, 0))
			rf_store_le64(c.b + io + fc->at, old_offset + 1);
		seal_good_index(&c);
		char at[64] = "";
		if (fc->where == -1)
			snprintf(at, sizeof(at), "index at byte %llu",
			         (unsigned long long)(io + fc->at_delta));
		else if (fc->where >= 0)
			snprintf(at, sizeof(at), "block %d at byte", fc->where);
		else
			snprintf(at, sizeof(at), "(index entry at byte %llu)",
			         (unsigned long long)(io + fc->at - (fc->at - 32) % 24));
		int rc = check_file(&c, &err);
		if (rc != fc->code || !strstr(err.msg, fc->needle) || !strstr(err.msg, at))
			fail_msg("case %zu: rc %d: '%s' (want '%s', '%s')", i, rc, err.msg,
			         fc->needle, at);
		expect(rc, &err, fc->code, fc->needle, at);
		free(c.b);
	}
}

/* A one-block shard around arbitrary decoded bytes (declared `records`),
 * compressed with or without the content size; index figures consistent. */
static bytes craft(const uint8_t *dec, size_t dec_len, uint32_t records, int content_size,
                   uint32_t declared_decoded, uint32_t largest_record)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, content_size);
	size_t cap = ZSTD_compressBound(dec_len) + 28 + 24 + RF_FOOTER_BYTES;
	bytes c = {calloc(1, cap), 0};
	size_t z;
	if (content_size) {
		z = ZSTD_compress2(cc, c.b, cap, dec, dec_len);
	} else { /* streaming without a pledged size leaves the size out */
		ZSTD_outBuffer out = {c.b, cap, 0};
		ZSTD_inBuffer in = {dec, dec_len, 0};
		assert_int_equal(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end), 0);
		z = out.pos;
	}
	assert_false(ZSTD_isError(z));
	ZSTD_freeCCtx(cc);
	uint8_t *ix = c.b + z;
	rf_store_le32(ix, 1);
	rf_store_le64(ix + 4, records);
	rf_store_le32(ix + 12, (uint32_t)z);
	rf_store_le32(ix + 16, declared_decoded);
	rf_store_le32(ix + 20, largest_record);
	rf_store_le32(ix + 24, 0);
	rf_store_le64(ix + 28, 0);
	rf_store_le32(ix + 36, (uint32_t)z);
	rf_store_le32(ix + 40, declared_decoded);
	rf_store_le32(ix + 44, records);
	rf_store_le32(ix + 48, 0);
	uint8_t *f = ix + 52;
	memcpy(f, RF_FOOTER_MAGIC, 8);
	rf_store_le32(f + 8, RF_FORMAT_VERSION);
	rf_store_le32(f + 12, 0);
	rf_store_le64(f + 16, z);
	rf_store_le64(f + 24, 52);
	c.n = z + 52 + RF_FOOTER_BYTES;
	seal(&c, z, 52);
	return c;
}

/* Builds [payload][ends][count] into buf; returns its length. */
static size_t block_bytes(uint8_t *buf, size_t payload, const uint32_t *ends, uint32_t n,
                          uint32_t count)
{
	memset(buf, 'p', payload);
	for (uint32_t i = 0; i < n; i++)
		rf_store_le32(buf + payload + 4 * i, ends[i]);
	rf_store_le32(buf + payload + 4 * n, count);
	return payload + 4 * (size_t)n + 4;
}

static void test_record_tables(void **state)
{
	(void)state;
	static const struct {
		uint32_t ends[3];
		uint32_t count;
		const char *needle;
		const char *at;
	} cases[] = {
	    {{10, 20, 30}, 3, NULL, NULL}, /* sound */
	    {{10, 20, 31}, 3, "inside the record table (overlaps it)", "decoded byte 38"},
	    {{10, 20, 4000}, 3, "overlaps", "decoded byte 38"},
	    {{10, 5, 30}, 3, "before the previous record ends", "decoded byte 34"},
	    {{10, 20, 29}, 3, "leaving 1 unaccounted bytes", "decoded byte 30"},
	    {{10, 20, 30}, 2, "counts 2 records, index says 3", "decoded byte 42"},
	    {{10, 20, 30}, UINT32_MAX, "counts 4294967295 records", "decoded byte 42"},
	};
	uint8_t buf[64];
	rf_error err = {0};
	for (size_t i = 0; i < RF_ARRAY_LEN(cases); i++) {
		size_t n = block_bytes(buf, 30, cases[i].ends, 3, cases[i].count);
		const uint32_t *ends = NULL;
		int rc = rf_block_table_check(buf, n, 3, &ends, "crafted", 0, &err);
		if (!cases[i].needle) {
			assert_int_equal(rc, 0);
			assert_int_equal(rf_record_end(ends, 2), 30);
			continue;
		}
		expect(rc, &err, RF_E_CORRUPT, cases[i].needle, cases[i].at);
		/* the same table inside a real frame: caught by the decoder, naming the
		 * block's file offset */
		bytes c = craft(buf, n, 3, 1, (uint32_t)n, 0);
		expect(check_file(&c, &err), &err, RF_E_CORRUPT, cases[i].needle,
		       "block 0 at byte 0");
		free(c.b);
	}
	/* a table too short to hold its own count */
	expect(rf_block_table_check(buf, 3, 0, NULL, "crafted", 7, &err), &err, RF_E_CORRUPT,
	       "cannot hold a record table", "block 7");
	/* a count whose table would not fit: 100 records in 46 bytes */
	size_t n = block_bytes(buf, 30, cases[0].ends, 3, 100);
	expect(rf_block_table_check(buf, n, 100, NULL, "crafted", 0, &err), &err, RF_E_CORRUPT,
	       "does not fit", "block 0");
}

static void test_frames(void **state)
{
	(void)state;
	uint8_t buf[2048];
	uint32_t ends[1] = {2000 - 8};
	size_t n = block_bytes(buf, 2000 - 8, ends, 1, 1);
	rf_error err = {0};
	/* decodes to more than the index declares: refused before decoding */
	bytes c = craft(buf, n, 1, 1, 1000, 900);
	expect(check_file(&c, &err), &err, RF_E_CORRUPT,
	       "frame declares 2000 decoded bytes, index says 1000", "block 0 at byte 0");
	free(c.b);
	/* the frame header *and* the index say 1000, but the frame holds 2000:
	 * zstd stops at the slab's end, nothing is written past it */
	c = craft(buf, n, 1, 1, 2000, 900);
	assert_int_equal(c.b[4] & 0x20, 0x20); /* single segment: FCS follows the FHD */
	assert_int_equal(c.b[4] >> 6, 1);      /* 2-byte FCS, stored as size - 256 */
	assert_int_equal(rf_load_le32(c.b + 5) & 0xffff, 2000 - 256);
	c.b[5] = (uint8_t)(1000 - 256);
	c.b[6] = (uint8_t)((1000 - 256) >> 8);
	uint64_t z0 = rf_load_le64(c.b + c.n - RF_FOOTER_BYTES + RF_FOOTER_INDEX_OFFSET_AT);
	rf_store_le32(c.b + z0 + 16, 1000); /* largest decoded */
	rf_store_le32(c.b + z0 + 40, 1000); /* block 0 decoded */
	seal(&c, z0, 52);
	expect(check_file(&c, &err), &err, RF_E_CORRUPT, "zstd decode failed", "block 0 at byte 0");
	free(c.b);
	/* an index declaring more than any frame of that length can decode to */
	uint8_t tiny[8];
	uint32_t tiny_end[1] = {0};
	size_t tn = block_bytes(tiny, 0, tiny_end, 1, 1);
	c = craft(tiny, tn, 1, 1, 8, 0);
	z0 = rf_load_le64(c.b + c.n - RF_FOOTER_BYTES + RF_FOOTER_INDEX_OFFSET_AT);
	uint32_t huge = (uint32_t)z0 * 32768u + 1;
	rf_store_le32(c.b + z0 + 16, huge);
	rf_store_le32(c.b + z0 + 40, huge);
	seal(&c, z0, 52);
	expect(check_file(&c, &err), &err, RF_E_CORRUPT, "more than a zstd frame of that length",
	       "block 0 at byte 0");
	free(c.b);
	/* no content size in the frame */
	c = craft(buf, n, 1, 0, 2000, 1992);
	expect(check_file(&c, &err), &err, RF_E_CORRUPT, "lacks its content size",
	       "block 0 at byte 0");
	free(c.b);
	/* the crafted builder itself makes a sound shard */
	c = craft(buf, n, 1, 1, 2000, 1992);
	assert_int_equal(check_file(&c, &err), 0);
	/* a frame with trailing bytes inside its index length: frame length check
	 * (shift the index one byte later and lengthen the block by one) */
	bytes d = {calloc(1, c.n + 1), c.n + 1};
	uint64_t z = rf_load_le64(c.b + c.n - RF_FOOTER_BYTES + RF_FOOTER_INDEX_OFFSET_AT);
	memcpy(d.b, c.b, z);
	memcpy(d.b + z + 1, c.b + z, c.n - z);
	rf_store_le32(d.b + z + 1 + 12, (uint32_t)z + 1);
	rf_store_le32(d.b + z + 1 + 36, (uint32_t)z + 1);
	rf_store_le64(d.b + d.n - RF_FOOTER_BYTES + RF_FOOTER_INDEX_OFFSET_AT, z + 1);
	seal(&d, z + 1, 52);
	expect(check_file(&d, &err), &err, RF_E_CORRUPT, "does not match the index's",
	       "block 0 at byte 0");
	free(d.b);
	free(c.b);
}

/* verify reports every damaged block, not just the first. */
static void report_cb(void *ctx, const rf_error *e)
{
	char *acc = ctx;
	strncat(acc, e->msg, 4000 - strlen(acc));
	strncat(acc, "\n", 4000 - strlen(acc));
}

static void test_verify_reports_all(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_shard_index *ix = NULL;
	assert_int_equal(rf_test_write_file(bad_path, good, good_len), 0);
	assert_int_equal(rf_index_read_file(bad_path, &ix, &err), 0);
	bytes c = copy_good();
	c.b[ix->block[0].offset + ix->block[0].compressed_bytes / 2] ^= 0x10;
	c.b[ix->block[2].offset + ix->block[2].compressed_bytes / 2] ^= 0x10;
	assert_int_equal(rf_test_write_file(bad_path, c.b, c.n), 0);
	char acc[4001] = "";
	assert_int_equal(rf_verify_file(bad_path, report_cb, acc, 100, &err), RF_E_CORRUPT);
	char want[64];
	snprintf(want, sizeof(want), "block 2 at byte %llu",
	         (unsigned long long)ix->block[2].offset);
	assert_non_null(strstr(acc, "block 0 at byte 0"));
	assert_non_null(strstr(acc, want));
	assert_null(strstr(acc, "block 1 "));
	assert_non_null(strstr(err.msg, "block 0 at byte 0"));
	/* the bound: one report, then a count of the rest */
	acc[0] = '\0';
	assert_int_equal(rf_verify_file(bad_path, report_cb, acc, 1, &err), RF_E_CORRUPT);
	assert_null(strstr(acc, want));
	assert_non_null(strstr(acc, "1 more problems not listed"));
	assert_int_equal(rf_verify_file("/nonexistent.rfs", NULL, NULL, 0, &err), -ENOENT);
	free(c.b);
	rf_index_free(ix);
}

/* The whole read path on a buffer, as a network reader would use it. */
static int check_buffer(const bytes *c, rf_error *err)
{
	rf_footer ft;
	rf_shard_index *ix = NULL;
	int rc = rf_footer_parse(c->b + (c->n >= RF_FOOTER_BYTES ? c->n - RF_FOOTER_BYTES : 0),
	                         c->n >= RF_FOOTER_BYTES ? RF_FOOTER_BYTES : c->n, c->n, "crafted",
	                         &ft, err);
	if (rc == 0)
		rc = rf_index_parse(c->b + ft.index_offset, ft.index_bytes, &ft, c->n, "crafted",
		                    &ix, err);
	if (rc < 0)
		return rc;
	rf_decoder *d = rf_decoder_new();
	uint8_t *dst = malloc(ix->largest_block_decoded_bytes + 1ul);
	for (uint32_t b = 0; rc == 0 && b < ix->blocks; b++) {
		const rf_block_info *bi = &ix->block[b];
		const uint32_t *ends;
		rc = rf_block_decode(d, ix, b, c->b + bi->offset, bi->compressed_bytes, dst,
		                     ix->largest_block_decoded_bytes, &ends, "crafted", err);
	}
	free(dst);
	rf_decoder_free(d);
	rf_index_free(ix);
	return rc;
}

/* Random damage (several bytes, with and without resealed CRCs so the
 * structural checks are reached): never a crash, a sanitizer report or an
 * error without the shard's name. Some edits are legal (metadata text under a
 * resealed CRC, bits zstd ignores), so only nearly all must be caught. */
static void test_random_damage(void **state)
{
	(void)state;
	uint64_t io = good_index_offset();
	uint32_t x = 2024;
	int caught = 0;
	for (int iter = 0; iter < 3000; iter++) {
		bytes c = copy_good();
		int edits = 1 + iter % 6;
		for (int e = 0; e < edits; e++) {
			x = x * 1664525u + 1013904223u;
			size_t pos = (x >> 8) % c.n;
			if (iter % 3 == 0) /* aim at the index and footer */
				pos = io + (x >> 8) % (c.n - io);
			c.b[pos] = (uint8_t)(x >> 24);
		}
		if (iter % 2)
			seal_good_index(&c);
		rf_error err = {0};
		int rc = check_buffer(&c, &err);
		if (rc < 0) {
			assert_true(strlen(err.msg) > 10);
			assert_non_null(strstr(err.msg, "crafted"));
			caught++;
		}
		free(c.b);
	}
	assert_true(caught > 2500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_is_sound),
	    cmocka_unit_test(test_truncated_every_length),
	    cmocka_unit_test(test_bitflip_every_byte),
	    cmocka_unit_test(test_magic_and_version),
	    cmocka_unit_test(test_footer_offsets),
	    cmocka_unit_test(test_index_fields),
	    cmocka_unit_test(test_record_tables),
	    cmocka_unit_test(test_frames),
	    cmocka_unit_test(test_verify_reports_all),
	    cmocka_unit_test(test_random_damage),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
