/* test_rfs.c - .rfs writer/reader round trips: empty shard, empty records, a
 * record larger than the block target, many small records, exact block
 * boundaries, metadata, threaded == inline bytes, reading from a buffer. */
#include "rfs.h"
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct {
	size_t n;
	uint8_t **rec;
	size_t *len;
} recs;

static char *tmp;

static int setup(void **state)
{
	(void)state;
	tmp = rf_test_tmpdir("rfs");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rf_test_rmtree(tmp);
	free(tmp);
	return 0;
}

static recs make_recs(size_t n, size_t (*len_of)(size_t i), uint32_t seed)
{
	recs r = {n, calloc(n ? n : 1, sizeof(uint8_t *)), calloc(n ? n : 1, sizeof(size_t))};
	uint32_t x = seed;
	for (size_t i = 0; i < n; i++) {
		r.len[i] = len_of(i);
		r.rec[i] = malloc(r.len[i] ? r.len[i] : 1);
		for (size_t j = 0; j < r.len[i]; j++) {
			x = x * 1664525u + 1013904223u;
			r.rec[i][j] = (uint8_t)((x >> 24) % 7 + 'a'); /* compressible */
		}
	}
	return r;
}

static void free_recs(recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->rec[i]);
	free(r->rec);
	free(r->len);
}

static char *write_shard(const char *file, const recs *r, const rf_writer_options *opt,
                         rf_shard_summary *sum)
{
	char *path = malloc(strlen(tmp) + strlen(file) + 2);
	sprintf(path, "%s/%s", tmp, file);
	rf_error err = {0};
	rf_writer *w = rf_writer_open(path, opt, &err);
	assert_non_null(w);
	for (size_t i = 0; i < r->n; i++)
		assert_int_equal(rf_writer_add(w, r->rec[i], r->len[i], &err), 0);
	assert_int_equal(rf_writer_close(w, sum, &err), 0);
	return path;
}

/* Decodes every block of ix from the whole-file buffer and compares records. */
static void check_records(const rf_shard_index *ix, const uint8_t *file, const recs *r)
{
	rf_decoder *d = rf_decoder_new();
	assert_non_null(d);
	rf_error err = {0};
	size_t k = 0;
	for (uint32_t b = 0; b < ix->blocks; b++) {
		const rf_block_info *bi = &ix->block[b];
		assert_int_equal(bi->first_record, k);
		uint8_t *dst = malloc(bi->decoded_bytes);
		const uint32_t *ends = NULL;
		int rc = rf_block_decode(d, ix, b, file + bi->offset, bi->compressed_bytes, dst,
		                         bi->decoded_bytes, &ends, "t", &err);
		if (rc)
			fail_msg("%s", err.msg);
		for (uint32_t i = 0; i < bi->records; i++, k++) {
			uint32_t s = rf_record_end(ends, (int64_t)i - 1),
			         e = rf_record_end(ends, i);
			assert_int_equal(e - s, r->len[k]);
			assert_memory_equal(dst + s, r->rec[k], r->len[k]);
		}
		free(dst);
	}
	assert_int_equal(k, r->n);
	rf_decoder_free(d);
}

/* Reads the shard both ways (file, buffer), checks figures and records. */
static rf_shard_index *roundtrip(const char *path, const recs *r, const rf_shard_summary *sum)
{
	rf_error err = {0};
	rf_shard_index *ix = NULL;
	if (rf_index_read_file(path, &ix, &err))
		fail_msg("%s", err.msg);
	uint8_t *file = NULL;
	long n = rf_test_read_file(path, &file);
	assert_int_equal(n, sum->file_bytes);
	assert_int_equal(ix->file_bytes, n);
	rf_footer ft;
	assert_int_equal(rf_footer_parse(file, (size_t)n, (uint64_t)n, "buf", &ft, &err), 0);
	rf_shard_index *ix2 = NULL;
	assert_int_equal(rf_index_parse(file + ft.index_offset, ft.index_bytes, &ft, (uint64_t)n,
	                                "buf", &ix2, &err),
	                 0);
	assert_int_equal(ix2->blocks, ix->blocks);
	assert_memory_equal(ix2->block, ix->block, sizeof(rf_block_info) * ix->blocks);
	rf_index_free(ix2);
	uint64_t payload = 0, largest = 0;
	for (size_t i = 0; i < r->n; i++) {
		payload += r->len[i];
		largest = RF_MAX(largest, r->len[i]);
	}
	assert_int_equal(ix->records, r->n);
	assert_int_equal(sum->records, r->n);
	assert_int_equal(sum->blocks, ix->blocks);
	assert_int_equal(sum->payload_bytes, payload);
	assert_int_equal(ix->decoded_bytes, payload + 4 * r->n + 4 * (uint64_t)ix->blocks);
	assert_int_equal(sum->decoded_bytes, ix->decoded_bytes);
	assert_int_equal(ix->largest_record_bytes, largest);
	assert_int_equal(ix->compressed_bytes + ft.index_bytes + RF_FOOTER_BYTES, n);
	check_records(ix, file, r);
	free(file);
	return ix;
}

static size_t len_zero(size_t i)
{
	(void)i;
	return 0;
}
static size_t len_small(size_t i)
{
	return i % 13;
}
static size_t len_mixed(size_t i)
{
	return i == 3 ? 50000 : 100 + i % 50;
}
static size_t len_100(size_t i)
{
	(void)i;
	return 100;
}

static void test_empty_shard(void **state)
{
	(void)state;
	recs r = make_recs(0, len_zero, 1);
	rf_shard_summary sum;
	char *p = write_shard("empty.rfs", &r, NULL, &sum);
	assert_int_equal(sum.file_bytes, RF_INDEX_HEADER_BYTES + RF_FOOTER_BYTES);
	rf_shard_index *ix = roundtrip(p, &r, &sum);
	assert_int_equal(ix->blocks, 0);
	assert_string_equal(ix->metadata, "");
	rf_index_free(ix);
	free(p);
	free_recs(&r);
}

static void test_empty_records(void **state)
{
	(void)state;
	recs r = make_recs(1000, len_zero, 1);
	rf_writer_options o = {.block_bytes = 1024};
	rf_shard_summary sum;
	char *p = write_shard("zero.rfs", &r, &o, &sum);
	rf_shard_index *ix = roundtrip(p, &r, &sum);
	assert_true(ix->blocks > 1); /* 1000 * 4 bytes of table > 1 KiB */
	assert_int_equal(ix->largest_record_bytes, 0);
	rf_index_free(ix);
	free(p);
	free_recs(&r);
}

static void test_large_record_own_block(void **state)
{
	(void)state;
	recs r = make_recs(8, len_mixed, 2);
	rf_writer_options o = {.block_bytes = 4096, .metadata = "tokens=u16 source=test"};
	rf_shard_summary sum;
	char *p = write_shard("large.rfs", &r, &o, &sum);
	rf_shard_index *ix = roundtrip(p, &r, &sum);
	assert_string_equal(ix->metadata, "tokens=u16 source=test");
	int found = 0;
	for (uint32_t b = 0; b < ix->blocks; b++)
		if (ix->block[b].decoded_bytes > 4096) {
			assert_int_equal(ix->block[b].records, 1);
			assert_int_equal(ix->block[b].first_record, 3);
			assert_int_equal(ix->block[b].decoded_bytes, 50000 + 8);
			found++;
		}
	assert_int_equal(found, 1);
	assert_int_equal(ix->largest_block_decoded_bytes, 50008);
	rf_index_free(ix);
	free(p);
	free_recs(&r);
}

static void test_many_small_records(void **state)
{
	(void)state;
	recs r = make_recs(100000, len_small, 3);
	rf_writer_options o = {.block_bytes = 8192, .level = 1};
	rf_shard_summary sum;
	char *p = write_shard("small.rfs", &r, &o, &sum);
	rf_shard_index *ix = roundtrip(p, &r, &sum);
	for (uint32_t b = 0; b < ix->blocks; b++)
		assert_true(ix->block[b].decoded_bytes <= 8192);
	rf_index_free(ix);
	free(p);
	free_recs(&r);
}

/* 10 records of 100 bytes = 1000 payload + 44 table: a 1044-byte target holds
 * exactly 10 per block; 1043 holds 9. */
static void test_exact_boundaries(void **state)
{
	(void)state;
	recs r = make_recs(30, len_100, 4);
	rf_writer_options o = {.block_bytes = 1044};
	rf_shard_summary sum;
	char *p = write_shard("b1044.rfs", &r, &o, &sum);
	rf_shard_index *ix = roundtrip(p, &r, &sum);
	assert_int_equal(ix->blocks, 3);
	for (uint32_t b = 0; b < 3; b++)
		assert_int_equal(ix->block[b].decoded_bytes, 1044);
	rf_index_free(ix);
	free(p);
	o.block_bytes = 1043;
	p = write_shard("b1043.rfs", &r, &o, &sum);
	ix = roundtrip(p, &r, &sum);
	assert_int_equal(ix->blocks, 4); /* 9 + 9 + 9 + 3 */
	assert_int_equal(ix->block[0].records, 9);
	assert_int_equal(ix->block[3].records, 3);
	rf_index_free(ix);
	free(p);
	o.block_bytes = 1; /* every record alone */
	p = write_shard("b1.rfs", &r, &o, &sum);
	ix = roundtrip(p, &r, &sum);
	assert_int_equal(ix->blocks, 30);
	rf_index_free(ix);
	free(p);
	free_recs(&r);
}

/* Same records, inline and with 1, 2 and 4 compression threads: identical
 * bytes, and rf_writer_bytes moves identically (a packer splits shards on it). */
static void test_threaded_identical(void **state)
{
	(void)state;
	recs r = make_recs(5000, len_mixed, 5);
	static const uint32_t threads[] = {0, 1, 2, 4};
	uint64_t seen[4][64];
	char path[4][512];
	for (int t = 0; t < 4; t++) {
		snprintf(path[t], sizeof(path[t]), "%s/thr%d.rfs", tmp, t);
		rf_writer_options o = {.block_bytes = 16384, .threads = threads[t]};
		rf_error err = {0};
		rf_writer *w = rf_writer_open(path[t], &o, &err);
		assert_non_null(w);
		for (size_t i = 0; i < r.n; i++) {
			assert_int_equal(rf_writer_add(w, r.rec[i], r.len[i], &err), 0);
			if (i % 79 == 0)
				seen[t][(i / 79) % 64] = rf_writer_bytes(w);
		}
		assert_true(rf_writer_bytes(w) > 0);
		rf_shard_summary sum;
		assert_int_equal(rf_writer_close(w, &sum, &err), 0);
		rf_shard_index *ix = roundtrip(path[t], &r, &sum);
		rf_index_free(ix);
	}
	for (int t = 1; t < 4; t++) {
		assert_memory_equal(seen[0], seen[t], sizeof(seen[0]));
		unsigned char *a = NULL, *b = NULL;
		long na = rf_test_read_file(path[0], &a), nb = rf_test_read_file(path[t], &b);
		assert_true(na > 0);
		assert_int_equal(na, nb);
		assert_memory_equal(a, b, (size_t)na);
		free(a);
		free(b);
	}
	rf_error err = {0};
	rf_writer_options o = {.threads = RF_WRITER_THREADS_MAX + 1};
	assert_null(rf_writer_open(path[0], &o, &err));
	assert_non_null(strstr(err.msg, "compression threads"));
	free_recs(&r);
}

/* A writer whose file cannot take the bytes (RLIMIT_FSIZE makes writes past
 * 20000 bytes fail with EFBIG) fails cleanly, threaded or not: the error names
 * the shard and offset, later calls repeat it, and the partial file is removed. */
static void test_write_error(void **state)
{
	(void)state;
	struct rlimit old;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	char path[512];
	snprintf(path, sizeof(path), "%s/full.rfs", tmp);
	for (uint32_t t = 0; t <= 2; t++) {
		rf_writer_options o = {.block_bytes = 4096, .threads = t};
		rf_error err = {0};
		rf_writer *w = rf_writer_open(path, &o, &err);
		assert_non_null(w);
		struct rlimit lim = {20000, old.rlim_max};
		assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
		uint8_t rec[1000];
		int rc = 0;
		for (int i = 0; i < 200 && rc == 0; i++) {
			memset(rec, i * 37 + 11, sizeof(rec));
			rec[i % 1000] ^= 0x5a; /* vary, so blocks stay big */
			for (int j = 0; j < 1000; j += 7)
				rec[j] = (uint8_t)(i * j);
			rc = rf_writer_add(w, rec, sizeof(rec), &err);
		}
		int rc2 = rf_writer_close(w, NULL, &err);
		assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
		if (rc)
			assert_int_equal(rc2, rc);
		assert_int_equal(rc2, -EFBIG);
		assert_non_null(strstr(err.msg, "full.rfs: write at byte"));
		assert_int_equal(access(path, F_OK), -1);
	}
	signal(SIGXFSZ, SIG_DFL);
}

static void test_writer_limits(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof(path), "%s/limits.rfs", tmp);
	rf_error err = {0};
	rf_writer_options o = {.block_bytes = (uint64_t)RF_BLOCK_DECODED_MAX + 1};
	assert_null(rf_writer_open(path, &o, &err));
	assert_int_equal(err.code, -EINVAL);
	o = (rf_writer_options){.level = 99};
	assert_null(rf_writer_open(path, &o, &err));
	assert_non_null(strstr(err.msg, "level 99"));
	assert_int_equal(access(path, F_OK), -1); /* nothing left behind */
	char *meta = malloc(RF_METADATA_MAX + 2);
	memset(meta, 'm', RF_METADATA_MAX + 1);
	meta[RF_METADATA_MAX + 1] = '\0';
	o = (rf_writer_options){.metadata = meta};
	assert_null(rf_writer_open(path, &o, &err));
	assert_non_null(strstr(err.msg, "RF_METADATA_MAX"));
	free(meta);
	rf_writer *w = rf_writer_open(path, NULL, &err);
	assert_non_null(w);
	uint8_t small[8] = {0};
	/* the size is checked before the bytes are read */
	assert_int_equal(rf_writer_add(w, small, RF_BLOCK_DECODED_MAX, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "limits.rfs"));
	assert_int_equal(rf_writer_add(w, small, sizeof(small), &err), 0);
	rf_writer_abort(w);
	assert_int_equal(access(path, F_OK), -1);
	assert_null(rf_writer_open("/nonexistent-dir/x.rfs", NULL, &err));
	assert_non_null(strstr(err.msg, "/nonexistent-dir/x.rfs"));
}

static void test_decode_argument_checks(void **state)
{
	(void)state;
	recs r = make_recs(10, len_100, 6);
	rf_shard_summary sum;
	char *p = write_shard("args.rfs", &r, NULL, &sum);
	rf_error err = {0};
	rf_shard_index *ix = NULL;
	assert_int_equal(rf_index_read_file(p, &ix, &err), 0);
	rf_decoder *d = rf_decoder_new();
	uint8_t src[16] = {0}, dst[16];
	const uint32_t *ends;
	assert_int_equal(rf_block_decode(d, ix, 1, src, 16, dst, 16, &ends, "args", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "block 1 does not exist"));
	assert_int_equal(rf_block_decode(d, ix, 0, src, 16, dst, 16, &ends, "args", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "block 0 at byte 0"));
	rf_decoder_free(d);
	rf_index_free(ix);
	free(p);
	free_recs(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_shard),
	    cmocka_unit_test(test_empty_records),
	    cmocka_unit_test(test_large_record_own_block),
	    cmocka_unit_test(test_many_small_records),
	    cmocka_unit_test(test_exact_boundaries),
	    cmocka_unit_test(test_threaded_identical),
	    cmocka_unit_test(test_write_error),
	    cmocka_unit_test(test_writer_limits),
	    cmocka_unit_test(test_decode_argument_checks),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
