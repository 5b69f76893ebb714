/* test_format.c - the format seam (shards/format.h): the registry's claims,
 * the .rfs implementation driven step by step (the same layout as the
 * direct reader, ranges served as asked, re-entrant after a bad step), and
 * the synchronous driver's errors. */
#include "format.h"
#include "rfs.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *make_shard(const char *dir, uint32_t records, uint32_t block_bytes)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/s.rfs", dir);
	rf_writer_options opt = {.block_bytes = block_bytes};
	rf_error err = {0};
	rf_writer *w = rf_writer_open(path, &opt, &err);
	assert_non_null(w);
	for (uint32_t i = 0; i < records; i++) {
		char rec[64];
		int n = snprintf(rec, sizeof(rec), "record %u of the shard", i);
		assert_int_equal(rf_writer_add(w, rec, (size_t)n, &err), 0);
	}
	assert_int_equal(rf_writer_close(w, NULL, &err), 0);
	return path;
}

static void test_claims(void **state)
{
	(void)state;
	const rf_format *rfs = rf_format_by_name("rfs");
	assert_non_null(rfs);
	assert_ptr_equal(rf_format_for("data/shard-000001.rfs", false), rfs);
	assert_ptr_equal(rf_format_for("s3://b/k/x.rfs?X-Amz-Signature=abc", false), rfs);
	/* a listing takes only names a format calls its own */
	assert_null(rf_format_for("data/notes.txt", false));
	assert_false(rf_format_is_shard_name("manifest.rfm"));
	assert_true(rf_format_is_shard_name("a.rfs"));
	/* a name the user gave is tried by the fallback */
	assert_ptr_equal(rf_format_for("data.dat", true), rfs);
	/* token files (issue 13): *.bin is llm.c / nanoGPT's, *.idx Megatron's */
	assert_ptr_equal(rf_format_for("data.bin", true), rf_format_by_name("llmc"));
	assert_ptr_equal(rf_format_for("data/x_text_document.idx", false),
	                 rf_format_by_name("megatron"));
	assert_null(rf_format_for("data/x_text_document.bin", false));
	/* the query is not part of the name: x.rfs?y=.txt is an .rfs */
	assert_true(rf_format_is_shard_name("https://h/x.rfs?y=.txt"));
	assert_false(rf_format_is_shard_name("https://h/x.txt?y=.rfs"));
	assert_null(rf_format_by_name("nope"));
	uint32_t n = 0;
	assert_non_null(rf_formats(&n));
	assert_true(n >= 1);
}

/* Each row's names are the one list of what it takes: every name is
 * claimed YES by its format (and a listing takes it), and the messages'
 * list names every one, the compressed tars' included. */
static void test_names_from_rows(void **state)
{
	(void)state;
	uint32_t n = 0;
	const rf_format *const *f = rf_formats(&n);
	const char *shown = rf_format_patterns();
	uint32_t listed = 0;
	for (uint32_t i = 0; i < n; i++)
		for (const char *const *s = f[i]->names; s && *s; s++, listed++) {
			char name[128];
			snprintf(name, sizeof(name), "d/x-000%s", *s);
			if (rf_format_claim(f[i], name) != RF_FMT_YES)
				fail_msg("%s: its name %s is not claimed", f[i]->name, *s);
			assert_true(rf_format_is_shard_name(name));
			/* ".tar" must not match inside ".tar.gz": a separator follows */
			char word[64];
			snprintf(word, sizeof(word), "%s", *s);
			const char *at = strstr(shown, word);
			while (at && at[strlen(word)] != ',' && at[strlen(word)] != ' ' &&
			       at[strlen(word)] != '\0')
				at = strstr(at + 1, word);
			if (!at)
				fail_msg("%s is missing from \"%s\"", *s, shown);
		}
	assert_true(listed >= 8);
	assert_non_null(strstr(shown, ".tar.gz, "));
	assert_non_null(strstr(shown, ".tar.zst, "));
	assert_non_null(strstr(shown, " or "));
	/* PREFIX.idx beside PREFIX.tar is the tar's index, alone a Megatron dataset */
	char *listing[] = {"a.idx", "a.tar", "b.idx"};
	assert_false(rf_format_listing_takes("a.idx", listing, 3));
	assert_true(rf_format_listing_takes("a.tar", listing, 3));
	assert_true(rf_format_listing_takes("b.idx", listing, 3));
	assert_null(rf_format_for_index("d/shard.mds"));
	assert_non_null(rf_format_for_index("s3://b/d/index.json?x=1"));
}

static void test_open_file_matches_reader(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("format");
	const char *path = make_shard(dir, 5000, 4096);
	rf_error err = {0};
	rf_shard_index *direct = NULL, *ix = NULL;
	void *priv = NULL;
	const rf_format *fmt = NULL;
	assert_int_equal(rf_index_read_file(path, &direct, &err), 0);
	assert_int_equal(rf_format_open_file(path, NULL, NULL, &fmt, &ix, &priv, &err), 0);
	assert_ptr_equal(fmt, rf_format_by_name("rfs"));
	assert_true(direct->blocks > 1);
	assert_int_equal(ix->blocks, direct->blocks);
	assert_int_equal(ix->records, direct->records);
	assert_int_equal(ix->largest_record_bytes, direct->largest_record_bytes);
	assert_memory_equal(ix->block, direct->block, direct->blocks * sizeof(rf_block_info));
	fmt->close(ix, priv);
	rf_index_free(direct);
	rf_test_rmtree(dir);
	free(dir);
}

/* Drives the rfs open by hand: the first ask is the last 4 KiB (at least
 * the footer), the index comes next with its parse bound, a bad index is
 * an error the same step retries on good bytes, and DONE reports what the
 * layout holds (no more than the bound). */
static void test_rfs_steps(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("format");
	const char *path = make_shard(dir, 20000, 256);
	unsigned char *file = NULL;
	long size = rf_test_read_file(path, &file);
	assert_true(size > 8192);
	const rf_format *rfs = rf_format_by_name("rfs");
	rf_fmt_open o = {.url = path, .name = "s.rfs", .size = (uint64_t)size, .local = true};
	rf_error err = {0};
	assert_int_equal(rfs->open_step(&o, &err), RF_FMT_NEED);
	assert_null(o.want.object);
	assert_int_equal(o.want.offset + o.want.len, (uint64_t)size);
	assert_int_equal(o.want.len, 4096);
	assert_int_equal(o.want.min_len, RF_FOOTER_BYTES);
	/* deliver only the footer: the least it said it can use */
	o.got = file + size - RF_FOOTER_BYTES;
	o.got_offset = (uint64_t)size - RF_FOOTER_BYTES;
	o.got_len = RF_FOOTER_BYTES;
	assert_int_equal(rfs->open_step(&o, &err), RF_FMT_NEED);
	rf_fmt_want w = o.want;
	assert_true(w.len > 4096);
	assert_true(w.parse_bound >= w.len);
	/* a damaged index: RF_E_CORRUPT, the want unchanged (re-read the same) */
	unsigned char *bad = malloc(w.len);
	memcpy(bad, file + w.offset, w.len);
	bad[w.len / 2] ^= 0x40;
	o.got = bad;
	o.got_offset = w.offset;
	o.got_len = w.len;
	assert_int_equal(rfs->open_step(&o, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "s.rfs"));
	assert_int_equal(o.want.offset, w.offset);
	assert_int_equal(o.want.len, w.len);
	o.got = file + w.offset;
	assert_int_equal(rfs->open_step(&o, &err), RF_FMT_DONE);
	assert_non_null(o.index);
	assert_int_equal(o.index->records, 20000);
	assert_true(o.held_bytes > 0 && o.held_bytes <= w.parse_bound);
	rfs->close(o.index, o.priv);
	free(bad);
	free(file);
	rf_test_rmtree(dir);
	free(dir);
}

/* A file without the magic is final (re-reading it cannot help); a short
 * file is refused before anything is asked. */
static void test_rfs_not_a_shard(void **state)
{
	(void)state;
	const rf_format *rfs = rf_format_by_name("rfs");
	uint8_t junk[100];
	memset(junk, 'x', sizeof(junk));
	rf_fmt_open o = {.url = "j", .name = "junk.bin", .size = sizeof(junk), .local = true};
	rf_error err = {0};
	assert_int_equal(rfs->open_step(&o, &err), RF_FMT_NEED);
	o.got = junk;
	o.got_offset = 0;
	o.got_len = sizeof(junk);
	assert_int_equal(rfs->open_step(&o, &err), RF_E_CORRUPT);
	assert_true(o.final);
	assert_non_null(strstr(err.msg, "bad magic"));
	rf_fmt_open t = {.url = "t", .name = "tiny", .size = 10};
	assert_int_equal(rfs->open_step(&t, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "shorter than the 40-byte footer"));
}

static void test_open_file_errors(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("format");
	char path[512];
	snprintf(path, sizeof(path), "%s/x.rfs", dir);
	assert_int_equal(
	    rf_test_write_file(path, "not a shard at all, just some bytes here...", 43), 0);
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(rf_format_open_file(path, NULL, NULL, NULL, &ix, &priv, &err),
	                 RF_E_CORRUPT);
	assert_null(ix);
	assert_non_null(strstr(err.msg, "x.rfs"));
	snprintf(path, sizeof(path), "%s/missing.rfs", dir);
	assert_true(rf_format_open_file(path, NULL, NULL, NULL, &ix, &priv, &err) < 0);
	assert_non_null(strstr(err.msg, "missing.rfs"));
	rf_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_claims),
	    cmocka_unit_test(test_names_from_rows),
	    cmocka_unit_test(test_open_file_matches_reader),
	    cmocka_unit_test(test_rfs_steps),
	    cmocka_unit_test(test_rfs_not_a_shard),
	    cmocka_unit_test(test_open_file_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
