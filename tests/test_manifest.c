/* test_manifest.c - manifest parse/write: paths resolved against the base,
 * URLs kept, comments and CRLF, and every malformed line named by number. */
#include "manifest.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static rf_manifest *parse(const char *text, const char *base, rf_error *err, int *rc)
{
	rf_manifest *m = NULL;
	*rc = rf_manifest_parse(text, strlen(text), base, "m.rfm", &m, err);
	return m;
}

static void test_parse_ok(void **state)
{
	(void)state;
	const char *t = RF_MANIFEST_MAGIC "\n"
	                                  "shard-000000.rfs\t1234\t10\n"
	                                  "# a comment\n"
	                                  "\n"
	                                  "/abs/shard.rfs\t40\t0\r\n"
	                                  "https://h/x/s.rfs\t99\t4294967295";
	rf_error err = {0};
	int rc;
	rf_manifest *m = parse(t, "/data/set/", &err, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(m->count, 3);
	assert_string_equal(m->entry[0].url, "/data/set/shard-000000.rfs");
	assert_int_equal(m->entry[0].bytes, 1234);
	assert_int_equal(m->entry[0].records, 10);
	assert_string_equal(m->entry[1].url, "/abs/shard.rfs");
	assert_string_equal(m->entry[2].url, "https://h/x/s.rfs");
	assert_int_equal(m->entry[2].records, 4294967295u);
	assert_int_equal(m->records, 10 + 4294967295ull);
	assert_int_equal(m->bytes, 1234 + 40 + 99);
	rf_manifest_free(m);
	m = parse(RF_MANIFEST_MAGIC "\nsub/a.rfs\t100\t1\n", "http://host/ds", &err, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(m->entry[0].url, "http://host/ds/sub/a.rfs");
	rf_manifest_free(m);
	m = parse(RF_MANIFEST_MAGIC "\n", NULL, &err, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(m->count, 0);
	rf_manifest_free(m);
	assert_true(rf_manifest_is(RF_MANIFEST_MAGIC "\nx", strlen(RF_MANIFEST_MAGIC) + 2));
	assert_false(rf_manifest_is(RF_MANIFEST_MAGIC "2\n", strlen(RF_MANIFEST_MAGIC) + 2));
	assert_false(rf_manifest_is("RFSHARD1", 8));
}

static void expect_bad(const char *text, int code, const char *needle)
{
	rf_error err = {0};
	int rc;
	rf_manifest *m = parse(text, "/d", &err, &rc);
	assert_null(m);
	assert_int_equal(rc, code);
	if (!strstr(err.msg, needle))
		fail_msg("'%s' lacks '%s'", err.msg, needle);
	assert_non_null(strstr(err.msg, "m.rfm"));
}

/* The count before the parse: the entries the parser would make, whatever
 * the pieces the text comes in (a line cut anywhere), comments, blank lines,
 * CRLF and a last line without a newline. */
static void test_count(void **state)
{
	(void)state;
	const char *text = RF_MANIFEST_MAGIC "\n"
	                                     "a.rfs\t100\t2\n"
	                                     "# a comment\n"
	                                     "\n"
	                                     "\r\n"
	                                     "sub/b.rfs\t200\t3\r\n"
	                                     "c.rfs\t300\t4";
	size_t len = strlen(text);
	rf_error err = {0};
	int rc;
	rf_manifest *m = parse(text, "/d", &err, &rc);
	if (rc != 0)
		fail_msg("%s", err.msg);
	for (size_t piece = 1; piece <= len; piece++) {
		rf_manifest_count c = {0};
		for (size_t at = 0; at < len; at += piece)
			rf_manifest_count_feed(&c, text + at, RF_MIN(piece, len - at));
		rf_manifest_count_end(&c);
		assert_int_equal(c.entries, m->count);
		assert_int_equal(c.entry_bytes, strlen("a.rfs\t100\t2") +
		                                    strlen("sub/b.rfs\t200\t3\r") +
		                                    strlen("c.rfs\t300\t4"));
	}
	rf_manifest_free(m);
	char path[] = "/tmp/rf-test-count-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	rf_manifest_count c;
	assert_int_equal(rf_manifest_count_file(path, &c, &err), 0);
	assert_int_equal(c.entries, 3);
	unlink(path);
	assert_true(rf_manifest_count_file(path, &c, &err) < 0);
	/* the line of the entry past the most a manifest may list, as the
	 * parser names it (the magic is line 1, a comment line 2) */
	c = (rf_manifest_count){0};
	rf_manifest_count_feed(&c, RF_MANIFEST_MAGIC "\n# c\n", strlen(RF_MANIFEST_MAGIC) + 5);
	for (uint32_t i = 0; i < RF_MANIFEST_ENTRIES_MAX; i++)
		rf_manifest_count_feed(&c, "x 1 1\n", 6);
	assert_int_equal(c.over_line, 0);
	rf_manifest_count_feed(&c, "x", 1);
	rf_manifest_count_end(&c);
	assert_int_equal(c.over_line, RF_MANIFEST_ENTRIES_MAX + 3);
}

static void test_parse_bad(void **state)
{
	(void)state;
	const char *M = RF_MANIFEST_MAGIC "\n";
	char buf[256];
	expect_bad("# ringfeed manifest v2\n", -EINVAL, "line 1");
	expect_bad("", -EINVAL, "line 1");
	snprintf(buf, sizeof(buf), "%sa\t100\t1\nb\t100\n", M);
	expect_bad(buf, -EINVAL, "line 3: expected PATH");
	snprintf(buf, sizeof(buf), "%sa\t100\t1\t7\n", M);
	expect_bad(buf, -EINVAL, "line 2: expected PATH");
	snprintf(buf, sizeof(buf), "%s\t100\t1\n", M);
	expect_bad(buf, -EINVAL, "line 2: empty path");
	snprintf(buf, sizeof(buf), "%sa\t12x\t1\n", M);
	expect_bad(buf, -EINVAL, "line 2: FILE_BYTES '12x'");
	snprintf(buf, sizeof(buf), "%sa\t39\t1\n", M);
	expect_bad(buf, -EINVAL, "FILE_BYTES '39'");
	snprintf(buf, sizeof(buf), "%sa\t99999999999999999999999\t1\n", M);
	expect_bad(buf, -EINVAL, "FILE_BYTES");
	snprintf(buf, sizeof(buf), "%sa\t100\t4294967296\n", M);
	expect_bad(buf, -EINVAL, "RECORDS '4294967296'");
	snprintf(buf, sizeof(buf), "%sa\t100\t-1\n", M);
	expect_bad(buf, -EINVAL, "RECORDS");
	snprintf(buf, sizeof(buf), "%sa\033b\t100\t1\n", M);
	expect_bad(buf, -EINVAL, "control character");
	char nul[64];
	size_t ml = strlen(M);
	memcpy(nul, M, ml);
	memcpy(nul + ml, "a\0b\t100\t1\n", 10);
	rf_manifest *m = NULL;
	rf_error err = {0};
	assert_int_equal(rf_manifest_parse(nul, ml + 10, "", "m.rfm", &m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "NUL"));
}

static void test_bounds(void **state)
{
	(void)state;
	/* a line longer than the bound */
	size_t ml = strlen(RF_MANIFEST_MAGIC);
	size_t n = ml + 1 + RF_MANIFEST_LINE_MAX + 16;
	char *b = malloc(n + 1);
	memcpy(b, RF_MANIFEST_MAGIC "\n", ml + 1);
	memset(b + ml + 1, 'a', n - ml - 1);
	b[n] = '\0';
	expect_bad(b, -EINVAL, "line 2 is longer than");
	free(b);
	/* one entry more than the bound */
	const char *line = "s\t40\t1\n";
	size_t ll = strlen(line), count = RF_MANIFEST_ENTRIES_MAX + 1;
	b = malloc(ml + 1 + ll * count + 1);
	memcpy(b, RF_MANIFEST_MAGIC "\n", ml + 1);
	for (size_t i = 0; i < count; i++)
		memcpy(b + ml + 1 + i * ll, line, ll);
	b[ml + 1 + ll * count] = '\0';
	char want[64];
	snprintf(want, sizeof(want), "line %d: more than %d shards", RF_MANIFEST_ENTRIES_MAX + 2,
	         RF_MANIFEST_ENTRIES_MAX);
	expect_bad(b, -E2BIG, want);
	/* exactly the bound is fine */
	rf_error err = {0};
	rf_manifest *m = NULL;
	assert_int_equal(rf_manifest_parse(b, ml + 1 + ll * (count - 1), "", "m", &m, &err), 0);
	assert_int_equal(m->count, RF_MANIFEST_ENTRIES_MAX);
	rf_manifest_free(m);
	free(b);
}

static void test_write_read_file(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("manifest");
	char path[512];
	snprintf(path, sizeof(path), "%s/manifest.rfm", dir);
	rf_manifest_entry e[2] = {{"shard-000000.rfs", 1000, 7, 0}, {"http://x/y.rfs", 2000, 0, 0}};
	rf_manifest m = {.count = 2, .entry = e};
	rf_error err = {0};
	assert_int_equal(rf_manifest_write(path, &m, &err), 0);
	rf_manifest *r = NULL;
	assert_int_equal(rf_manifest_read_file(path, &r, &err), 0);
	assert_int_equal(r->count, 2);
	char want[600];
	snprintf(want, sizeof(want), "%s/shard-000000.rfs", dir);
	assert_string_equal(r->entry[0].url, want);
	assert_string_equal(r->entry[1].url, "http://x/y.rfs");
	assert_int_equal(r->entry[1].bytes, 2000);
	rf_manifest_free(r);
	rf_manifest_entry bad = {"a\tb", 100, 1, 0};
	rf_manifest mb = {.count = 1, .entry = &bad};
	assert_int_equal(rf_manifest_write(path, &mb, &err), -EINVAL);
	assert_int_equal(rf_manifest_read_file("/nonexistent/m.rfm", &r, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/m.rfm"));
	char *joined = rf_manifest_join("/", "a.rfs");
	assert_string_equal(joined, "/a.rfs");
	free(joined);
	rf_test_rmtree(dir);
	free(dir);
}

/* A 10-record shard at dir/s.rfs; returns its size. */
static uint64_t write_shard(const char *dir)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/s.rfs", dir);
	rf_error err = {0};
	rf_writer_options wo = {.block_bytes = 64, .level = 1};
	rf_writer *w = rf_writer_open(path, &wo, &err);
	assert_non_null(w);
	for (int i = 0; i < 10; i++)
		assert_int_equal(rf_writer_add(w, "0123456789abcdef", 16, &err), 0);
	rf_shard_summary sum;
	assert_int_equal(rf_writer_close(w, &sum, &err), 0);
	return sum.file_bytes;
}

/* Opens a loader on a manifest "s.rfs BYTES RECORDS" (line 3, after a
 * comment): NULL with err set when the open failed. */
static rf_loader *open_listed(const char *dir, const char *bytes, const char *records,
                              rf_error *err)
{
	char path[600], text[200];
	snprintf(path, sizeof(path), "%s/m.rfm", dir);
	int n = snprintf(text, sizeof(text), "%s\n# c\ns.rfs\t%s\t%s\n", RF_MANIFEST_MAGIC, bytes,
	                 records);
	assert_int_equal(rf_test_write_file(path, text, (size_t)n), 0);
	rf_config *cfg = rf_config_new();
	assert_int_equal(rf_config_add_url(cfg, path, err), 0);
	rf_loader *l = rf_open(cfg, err);
	rf_config_free(cfg);
	return l;
}

/* The manifest's RECORDS and FILE_BYTES are checked at open, the error
 * naming the line; 2^64-1 bytes is a size like any other, not "unknown". */
static void test_listed_checked(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("manifest-listed");
	char bytes[32], wrong[32];
	uint64_t size = write_shard(dir);
	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)size);
	snprintf(wrong, sizeof(wrong), "%llu", (unsigned long long)size + 1);
	rf_error err = {0};
	rf_loader *l = open_listed(dir, bytes, "10", &err);
	assert_non_null(l);
	rf_close(l);
	assert_null(open_listed(dir, bytes, "11", &err));
	assert_non_null(strstr(err.msg, "holds 10 records, the manifest says 11"));
	assert_non_null(strstr(err.msg, "m.rfm line 3"));
	assert_null(open_listed(dir, "18446744073709551615", "10", &err));
	assert_non_null(strstr(err.msg, "the manifest says 18446744073709551615"));
	assert_non_null(strstr(err.msg, "m.rfm line 3"));
	assert_null(open_listed(dir, wrong, "10", &err));
	assert_non_null(strstr(err.msg, wrong));
	assert_non_null(strstr(err.msg, "m.rfm line 3"));
	/* the entries say where they are */
	rf_manifest *m = NULL;
	char path[600];
	snprintf(path, sizeof(path), "%s/m.rfm", dir);
	assert_int_equal(rf_manifest_read_file(path, &m, &err), 0);
	assert_int_equal(m->entry[0].line, 3);
	rf_manifest_free(m);
	/* verify finds the same through the public shard list */
	rf_config *cfg = rf_config_new();
	assert_null(open_listed(dir, bytes, "11", &err)); /* rewrites m.rfm */
	assert_int_equal(rf_config_add_url(cfg, path, &err), 0);
	rf_shard_ref *refs = NULL;
	size_t n = 0;
	assert_int_equal(rf_config_shards(cfg, &refs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(refs[0].listed, 1);
	assert_int_equal(refs[0].listed_line, 3);
	assert_int_equal(rf_verify_shard(cfg, &refs[0], NULL, NULL, 0, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "holds 10 records, the manifest says 11"));
	rf_shard_refs_free(refs, n);
	rf_config_free(cfg);
	rf_test_rmtree(dir);
	free(dir);
}

static void count_done(void *ctx, size_t i, int rc)
{
	int *verdicts = ctx;
	verdicts[i] = rc == 0 ? 1 : rc;
}

/* Several shards through one fetch layer: each gets its own verdict, the
 * call returns the first failure. */
static void test_verify_shards(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("manifest-verify");
	uint64_t size = write_shard(dir);
	char path[600], text[300];
	snprintf(path, sizeof(path), "%s/two.rfm", dir);
	int n = snprintf(text, sizeof(text), "%s\ns.rfs\t%llu\t10\ns.rfs\t%llu\t9\n",
	                 RF_MANIFEST_MAGIC, (unsigned long long)size, (unsigned long long)size);
	assert_int_equal(rf_test_write_file(path, text, (size_t)n), 0);
	rf_config *cfg = rf_config_new();
	rf_error err = {0};
	assert_int_equal(rf_config_add_url(cfg, path, &err), 0);
	rf_shard_ref *refs = NULL;
	size_t count = 0;
	assert_int_equal(rf_config_shards(cfg, &refs, &count, &err), 0);
	assert_int_equal(count, 2);
	int verdicts[2] = {0, 0};
	assert_int_equal(rf_verify_shards(cfg, refs, count, NULL, count_done, verdicts, 0, &err),
	                 RF_E_CORRUPT);
	assert_int_equal(verdicts[0], 1);
	assert_int_equal(verdicts[1], RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "the manifest says 9 (listed in manifest"));
	assert_non_null(strstr(err.msg, "two.rfm line 3"));
	rf_shard_refs_free(refs, count);
	rf_config_free(cfg);
	rf_test_rmtree(dir);
	free(dir);
}

/* A FIFO as a manifest is refused at once (opening it would block). */
static void test_fifo_refused(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("manifest-fifo");
	char path[600];
	snprintf(path, sizeof(path), "%s/m.rfm", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	rf_manifest *m = NULL;
	rf_error err = {0};
	assert_int_equal(rf_manifest_read_file(path, &m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a regular file (it is a FIFO)"));
	assert_non_null(strstr(err.msg, path));
	rf_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_ok),       cmocka_unit_test(test_parse_bad),
	    cmocka_unit_test(test_bounds),         cmocka_unit_test(test_write_read_file),
	    cmocka_unit_test(test_listed_checked), cmocka_unit_test(test_fifo_refused),
	    cmocka_unit_test(test_verify_shards),  cmocka_unit_test(test_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
