/* test_url.c - URL forms, brace expansion, key encoding and redaction. */
#include "testutil.h"
#include "url.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static void test_schemes(void **state)
{
	(void)state;
	assert_int_equal(rf_url_scheme_of("/data/a.rfs"), RF_URL_PATH);
	assert_int_equal(rf_url_scheme_of("rel/a.rfs"), RF_URL_PATH);
	assert_int_equal(rf_url_scheme_of("file:///a.rfs"), RF_URL_FILE);
	assert_int_equal(rf_url_scheme_of("http://h/a"), RF_URL_HTTP);
	assert_int_equal(rf_url_scheme_of("HTTPS://h/a"), RF_URL_HTTPS);
	assert_int_equal(rf_url_scheme_of("s3://b/k"), RF_URL_S3);
	assert_int_equal(rf_url_scheme_of("gs://b/k"), RF_URL_GS); /* Cloud Storage, S3 API */
	assert_int_equal(rf_url_scheme_of("ftp://b/k"), RF_URL_UNKNOWN);
	assert_string_equal(rf_url_scheme_name(RF_URL_S3), "s3");
}

static void expect_expand(const char *pattern, size_t n, const char *first, const char *last)
{
	rf_url_list l = {0};
	rf_error err = {0};
	assert_int_equal(rf_brace_expand(pattern, &l, &err), 0);
	assert_int_equal(l.n, n);
	assert_string_equal(l.v[0].url, first);
	assert_string_equal(l.v[n - 1].url, last);
	assert_true(l.v[0].size_hint == RF_SIZE_UNKNOWN);
	rf_url_list_free(&l);
}

static void test_brace_ranges(void **state)
{
	(void)state;
	expect_expand("shard-{000000..000063}.rfs", 64, "shard-000000.rfs", "shard-000063.rfs");
	expect_expand("plain.rfs", 1, "plain.rfs", "plain.rfs");
	expect_expand("s3://b/x-{8..11}", 4, "s3://b/x-8", "s3://b/x-11");
	expect_expand("a{05..3}", 3, "a05", "a03"); /* descending, padded */
	expect_expand("a{0..0}", 1, "a0", "a0");
	expect_expand("{a,b}-{1..2}", 4, "a-1", "b-2"); /* leftmost slowest */
	expect_expand("x{,y}z", 2, "xz", "xyz");        /* empty alternative */
	expect_expand("{8..010}", 3, "008", "010");     /* padding from either bound */
	/* order across several groups */
	rf_url_list l = {0};
	rf_error err = {0};
	assert_int_equal(rf_brace_expand("d{0..1}/s{00..02}", &l, &err), 0);
	assert_int_equal(l.n, 6);
	assert_string_equal(l.v[1].url, "d0/s01");
	assert_string_equal(l.v[3].url, "d1/s00");
	rf_url_list_free(&l);
}

static void expect_bad(const char *pattern, const char *words)
{
	rf_url_list l = {0};
	rf_error err = {0};
	assert_int_equal(rf_brace_expand(pattern, &l, &err), -EINVAL);
	assert_int_equal(l.n, 0);
	if (!strstr(err.msg, words))
		fail_msg("'%s': message '%s' lacks '%s'", pattern, err.msg, words);
	rf_url_list_free(&l);
}

static void test_brace_errors(void **state)
{
	(void)state;
	expect_bad("a{1..", "unclosed");
	expect_bad("a{1..{2}}", "nested");
	expect_bad("a}b", "unmatched");
	expect_bad("a{1..x}", "not a decimal");
	expect_bad("a{..3}", "digits");
	expect_bad("a{abc}", "expected");
	expect_bad("a{0..1000000}", "more than 1000000");
	expect_bad("a{0..999}{0..9999}", "more than 1000000");
	expect_bad("a{0..1234567890123456789}", "digits");
	/* exactly at the bound is fine */
	rf_url_list l = {0};
	rf_error err = {0};
	assert_int_equal(rf_brace_expand("{0..999}{000..999}", &l, &err), 0);
	assert_int_equal(l.n, 1000000);
	assert_string_equal(l.v[999999].url, "999999");
	rf_url_list_free(&l);
}

static void test_split_s3(void **state)
{
	(void)state;
	char *b = NULL, *k = NULL;
	rf_error err = {0};
	assert_int_equal(rf_url_split_s3("s3://bucket/dir/a b.rfs", &b, &k, &err), 0);
	assert_string_equal(b, "bucket");
	assert_string_equal(k, "dir/a b.rfs");
	free(b);
	free(k);
	assert_int_equal(rf_url_split_s3("s3://bucket", &b, &k, &err), 0);
	assert_string_equal(k, "");
	free(b);
	free(k);
	assert_int_equal(rf_url_split_s3("s3:///k", &b, &k, &err), -EINVAL);
	assert_int_equal(rf_url_split_s3("s3://bu?cket/k", &b, &k, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "bucket"));
	assert_int_equal(rf_url_split_s3("http://b/k", &b, &k, &err), -EINVAL);
}

static void test_file_url(void **state)
{
	(void)state;
	char *p = NULL;
	rf_error err = {0};
	assert_int_equal(rf_url_file_path("file:///tmp/a%20b.rfs", &p, &err), 0);
	assert_string_equal(p, "/tmp/a b.rfs");
	free(p);
	assert_int_equal(rf_url_file_path("file://localhost/x", &p, &err), 0);
	assert_string_equal(p, "/x");
	free(p);
	assert_int_equal(rf_url_file_path("file://host/x", &p, &err), -EINVAL);
	assert_int_equal(rf_url_file_path("file:///a%00b", &p, &err), -EINVAL);
}

static void test_encode(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(rf_uri_encode("dir/a b+c~_-.rfs", true, out, sizeof(out)), 20);
	assert_string_equal(out, "dir/a%20b%2Bc~_-.rfs");
	rf_uri_encode("a/b=c&d", false, out, sizeof(out));
	assert_string_equal(out, "a%2Fb%3Dc%26d");
	rf_uri_encode("\xc3\xa9", true, out, sizeof(out));
	assert_string_equal(out, "%C3%A9");
	assert_int_equal(rf_uri_encode("abcd", true, out, 4), -ENAMETOOLONG);
	assert_int_equal(rf_uri_encode("abc", true, out, 4), 3);
	assert_int_equal(rf_uri_encode(" ", true, out, 3), -ENAMETOOLONG);
}

static void test_redact(void **state)
{
	(void)state;
	char out[128];
	rf_url_redact("http://user:s3cret@host:80/p?X-Amz-Signature=abc", out, sizeof(out));
	assert_string_equal(out, "http://host:80/p?...");
	assert_null(strstr(out, "s3cret"));
	rf_url_redact("https://host/a@b", out, sizeof(out));
	assert_string_equal(out, "https://host/a@b");
	rf_url_redact("s3://bucket/key", out, sizeof(out));
	assert_string_equal(out, "s3://bucket/key");
	rf_url_redact("http://h/x?u=a@b", out, 8);
	assert_int_equal(strlen(out), 7);
	/* local names carry no credentials: a '?' is part of the file name */
	rf_url_redact("data/a?b.rfs", out, sizeof(out));
	assert_string_equal(out, "data/a?b.rfs");
	rf_url_redact("file:///d/a?b.rfs", out, sizeof(out));
	assert_string_equal(out, "file:///d/a?b.rfs");
	char *d = rf_url_redact_dup("https://u:pw@h:1/k?X-Amz-Security-Token=tok");
	assert_non_null(d);
	assert_string_equal(d, "https://h:1/k?...");
	free(d);
}

static void test_origin(void **state)
{
	(void)state;
	char a[128], b[128];
	assert_int_equal(rf_url_origin("HTTP://u:pw@Host.Example/p?q", a, sizeof(a)), 0);
	assert_string_equal(a, "http://host.example:80");
	assert_int_equal(rf_url_origin("https://h", a, sizeof(a)), 0);
	assert_string_equal(a, "https://h:443");
	assert_int_equal(rf_url_origin("http://[::1]:8080/x", a, sizeof(a)), 0);
	assert_string_equal(a, "http://[::1]:8080");
	/* the same host: default port written or not */
	assert_int_equal(rf_url_origin("http://h:80/a", a, sizeof(a)), 0);
	assert_int_equal(rf_url_origin("http://h/b", b, sizeof(b)), 0);
	assert_string_equal(a, b);
	/* another port, another scheme, another address: another host */
	assert_int_equal(rf_url_origin("http://127.0.0.1:9000/a", a, sizeof(a)), 0);
	assert_int_equal(rf_url_origin("http://127.0.0.1:9001/a", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(rf_url_origin("https://127.0.0.1:9000/a", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(rf_url_origin("http://127.0.0.2:9000/a", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	/* an '@' in the path is not userinfo */
	assert_int_equal(rf_url_origin("http://h:1/a@evil:2", a, sizeof(a)), 0);
	assert_string_equal(a, "http://h:1");
	assert_int_equal(rf_url_origin("ftp://h/x", a, sizeof(a)), -EINVAL);
	assert_int_equal(rf_url_origin("http://h:99999/x", a, sizeof(a)), -EINVAL);
	assert_int_equal(rf_url_origin("http://h:8x/x", a, sizeof(a)), -EINVAL);
	assert_int_equal(rf_url_origin("http:///x", a, sizeof(a)), -EINVAL);
	assert_int_equal(rf_url_origin("http://[::1/x", a, sizeof(a)), -EINVAL);
	assert_int_equal(rf_url_origin("http://long-host-name/x", a, 8), -ENAMETOOLONG);
	char *u = rf_url_without_userinfo("http://u:pw@h:1/p?q=@x");
	assert_non_null(u);
	assert_string_equal(u, "http://h:1/p?q=@x");
	free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_schemes),      cmocka_unit_test(test_brace_ranges),
	    cmocka_unit_test(test_brace_errors), cmocka_unit_test(test_split_s3),
	    cmocka_unit_test(test_file_url),     cmocka_unit_test(test_encode),
	    cmocka_unit_test(test_redact),       cmocka_unit_test(test_origin),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
