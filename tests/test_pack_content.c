/* test_pack_content.c - what `ringfeed pack` writes is exactly the input:
 * every record of every shard (read back through the manifest and the
 * library) compared with the lines / files / fixed slices it came from,
 * including lines across the reader's 4 MiB chunks and a line longer than one
 * chunk. */
#include "ringfeed.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *tmp;

static int setup(void **state)
{
	(void)state;
	tmp = rf_test_tmpdir("packc");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rf_test_rmtree(tmp);
	free(tmp);
	return 0;
}

typedef struct {
	uint8_t *all; /* concatenated records */
	uint64_t *ends;
	size_t n;
} records;

static void load_shard(const char *path, records *r)
{
	rf_error err = {0};
	rf_shard_index *ix = NULL;
	if (rf_index_read_file(path, &ix, &err))
		fail_msg("%s", err.msg);
	unsigned char *file = NULL;
	assert_true(rf_test_read_file(path, &file) > 0);
	rf_decoder *d = rf_decoder_new();
	for (uint32_t b = 0; b < ix->blocks; b++) {
		const rf_block_info *bi = &ix->block[b];
		uint8_t *dst = malloc(bi->decoded_bytes);
		const uint32_t *ends;
		if (rf_block_decode(d, ix, b, file + bi->offset, bi->compressed_bytes, dst,
		                    bi->decoded_bytes, &ends, path, &err))
			fail_msg("%s", err.msg);
		uint32_t payload = rf_record_end(ends, (int64_t)bi->records - 1);
		uint64_t base = r->n ? r->ends[r->n - 1] : 0;
		r->all = realloc(r->all, base + payload + 1);
		memcpy(r->all + base, dst, payload);
		r->ends = realloc(r->ends, (r->n + bi->records) * sizeof(uint64_t));
		for (uint32_t i = 0; i < bi->records; i++)
			r->ends[r->n++] = base + rf_record_end(ends, i);
		free(dst);
	}
	rf_decoder_free(d);
	free(file);
	rf_index_free(ix);
}

static records load_dataset(const char *dir)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/manifest.rfm", dir);
	rf_manifest *m = NULL;
	rf_error err = {0};
	if (rf_manifest_read_file(path, &m, &err))
		fail_msg("%s", err.msg);
	records r = {0};
	for (size_t i = 0; i < m->count; i++)
		load_shard(m->entry[i].url, &r);
	rf_manifest_free(m);
	return r;
}

static void expect_record(const records *r, size_t i, const void *data, size_t len)
{
	assert_true(i < r->n);
	uint64_t s = i ? r->ends[i - 1] : 0;
	assert_int_equal(r->ends[i] - s, len);
	assert_memory_equal(r->all + s, data, len);
}

static void free_records(records *r)
{
	free(r->all);
	free(r->ends);
}

static int run_pack(const char *args)
{
	return rf_test_sh(NULL, "'%s' pack %s 2>&1", rf_test_cli(), args);
}

static void test_lines(void **state)
{
	(void)state;
	/* 9 MiB of lines 0..1000 bytes, one 5 MiB line, no trailing newline */
	size_t cap = 16u << 20, len = 0, nlines = 0;
	char *in = malloc(cap);
	size_t *starts = malloc(40000 * sizeof(size_t)), *lens = malloc(40000 * sizeof(size_t));
	uint32_t x = 99;
	while (len < (9u << 20)) {
		x = x * 1103515245u + 12345u;
		size_t l = nlines == 5000 ? (5u << 20) : (x >> 8) % 1001;
		starts[nlines] = len;
		lens[nlines++] = l;
		for (size_t i = 0; i < l; i++)
			in[len++] = (char)('a' + (i * 7 + nlines) % 26);
		in[len++] = '\n';
	}
	len--; /* the last line has no newline */
	char path[600], out[600], args[1400];
	snprintf(path, sizeof(path), "%s/lines.txt", tmp);
	snprintf(out, sizeof(out), "%s/lines", tmp);
	assert_int_equal(rf_test_write_file(path, in, len), 0);
	snprintf(args, sizeof(args), "--from lines '%s' -o '%s' --shard-size 2MiB --level 1", path,
	         out);
	assert_int_equal(run_pack(args), 0);
	records r = load_dataset(out);
	assert_int_equal(r.n, nlines);
	for (size_t i = 0; i < nlines; i++)
		expect_record(&r, i, in + starts[i], lens[i]);
	free_records(&r);
	free(in);
	free(starts);
	free(lens);
}

static void test_fixed_and_stdin(void **state)
{
	(void)state;
	uint8_t in[100003];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 131 + (i >> 9));
	char path[600], out[600], args[1400];
	snprintf(path, sizeof(path), "%s/fixed.bin", tmp);
	snprintf(out, sizeof(out), "%s/fixed", tmp);
	assert_int_equal(rf_test_write_file(path, in, sizeof(in)), 0);
	snprintf(args, sizeof(args),
	         "--from fixed:1000 - -o '%s' --allow-short --block-size 4KiB < '%s'", out, path);
	assert_int_equal(run_pack(args), 0);
	records r = load_dataset(out);
	assert_int_equal(r.n, 101);
	for (size_t i = 0; i < 100; i++)
		expect_record(&r, i, in + 1000 * i, 1000);
	expect_record(&r, 100, in + 100000, 3);
	free_records(&r);
}

static void test_files_sorted(void **state)
{
	(void)state;
	char dir[600], p[800], out[600], args[1400];
	snprintf(dir, sizeof(dir), "%s/files", tmp);
	static const char *const names[] = {"b/2", "a-c", "a/z", "a/b/1", "c"}; /* unsorted */
	static const char *const sorted[] = {"a-c", "a/b/1", "a/z", "b/2", "c"};
	rf_test_sh(NULL, "mkdir -p '%s/a/b' '%s/b'", dir, dir);
	for (size_t i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		assert_int_equal(rf_test_write_file(p, names[i], strlen(names[i])), 0);
	}
	snprintf(out, sizeof(out), "%s/filesout", tmp);
	snprintf(args, sizeof(args), "--from files '%s' -o '%s'", dir, out);
	assert_int_equal(run_pack(args), 0);
	records r = load_dataset(out);
	assert_int_equal(r.n, 5);
	for (size_t i = 0; i < 5; i++)
		expect_record(&r, i, sorted[i], strlen(sorted[i]));
	free_records(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lines),
	    cmocka_unit_test(test_fixed_and_stdin),
	    cmocka_unit_test(test_files_sorted),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
