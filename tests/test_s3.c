/* test_s3.c - S3 settings, path-style and listing URLs, and the
 * ListObjectsV2 parser (well-formed, paginated, error documents, hostile). */
#include "s3.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void clear_env(void)
{
	const char *v[] = {"AWS_ENDPOINT_URL",      "AWS_REGION",
	                   "AWS_DEFAULT_REGION",    "AWS_ACCESS_KEY_ID",
	                   "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	                   "AWS_ENDPOINT_URL_S3",   "AWS_PROFILE"};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		unsetenv(v[i]);
	setenv("AWS_CONFIG_FILE", "/nonexistent/rf-test-config", 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/rf-test-credentials", 1);
}

static char *object_url(const rf_s3_config *c, const char *bucket, const char *key)
{
	char *url = NULL;
	rf_error err = {0};
	assert_int_equal(rf_s3_object_url(c, bucket, key, &url, &err), 0);
	return url;
}

/* Virtual-hosted-style on AWS endpoints, path-style on custom ones, either
 * on request; a dotted or non-DNS bucket is always path-style. */
static void test_addressing(void **state)
{
	(void)state;
	rf_fetch_options opt = {0};
	rf_s3_config c;
	rf_error err = {0};
	clear_env();
	setenv("AWS_REGION", "eu-west-3", 1);
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_true(c.endpoint_aws);
	char *u = object_url(&c, "bkt", "d/x.rfs");
	assert_string_equal(u, "https://bkt.s3.eu-west-3.amazonaws.com/d/x.rfs");
	free(u);
	u = object_url(&c, "my.bkt", "x.rfs");
	assert_string_equal(u, "https://s3.eu-west-3.amazonaws.com/my.bkt/x.rfs");
	free(u);
	u = object_url(&c, "Upper_Case", "x.rfs");
	assert_string_equal(u, "https://s3.eu-west-3.amazonaws.com/Upper_Case/x.rfs");
	free(u);
	assert_int_equal(rf_s3_list_url(&c, "bkt", "p/", NULL, 5, &u, &err), 0);
	assert_string_equal(u, "https://bkt.s3.eu-west-3.amazonaws.com/?list-type=2&max-keys=5&"
	                       "prefix=p%2F");
	free(u);
	rf_s3_config_free(&c);

	opt.s3.addressing = "path";
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	u = object_url(&c, "bkt", "x.rfs");
	assert_string_equal(u, "https://s3.eu-west-3.amazonaws.com/bkt/x.rfs");
	free(u);
	rf_s3_config_free(&c);

	/* AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL; custom endpoints are path-style */
	opt.s3.addressing = NULL;
	setenv("AWS_ENDPOINT_URL", "http://general:1", 1);
	setenv("AWS_ENDPOINT_URL_S3", "http://localhost:9000", 1);
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_false(c.endpoint_aws);
	u = object_url(&c, "bkt", "x.rfs");
	assert_string_equal(u, "http://localhost:9000/bkt/x.rfs");
	free(u);
	rf_s3_config_free(&c);
	opt.s3.addressing = "virtual";
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	u = object_url(&c, "bkt", "x.rfs");
	assert_string_equal(u, "http://bkt.localhost:9000/x.rfs");
	free(u);
	rf_s3_config_free(&c);
	opt.s3.addressing = "sideways";
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "sideways"));

	/* gs://: storage.googleapis.com, region auto, path-style */
	opt.s3.addressing = NULL;
	assert_int_equal(rf_s3_config_resolve_gs(&opt, &c, &err), 0);
	assert_string_equal(c.region, "auto");
	u = object_url(&c, "bkt", "x.rfs");
	assert_string_equal(u, "https://storage.googleapis.com/bkt/x.rfs");
	free(u);
	rf_s3_config_free(&c);
	clear_env();
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A profile's region, endpoint_url, services section and s3 addressing_style,
 * below the options and the environment. */
static void test_profile(void **state)
{
	(void)state;
	char dir[] = "/tmp/rf-test-s3-profile.XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config", dir);
	write_file(path, "[default]\nregion = eu-north-1\n"
	                 "[profile dev]\nregion = ap-south-1\nendpoint_url = http://general:1\n"
	                 "services = mine\ns3 =\n  addressing_style = virtual\n"
	                 "[services mine]\ns3 =\n  endpoint_url = http://s3.local:9000\n"
	                 "[profile odd]\ns3 =\n  addressing_style = sideways\n");
	clear_env();
	setenv("AWS_CONFIG_FILE", path, 1);
	rf_fetch_options opt = {0};
	rf_s3_config c;
	rf_error err = {0};
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_string_equal(c.region, "eu-north-1");
	assert_string_equal(c.endpoint, "https://s3.eu-north-1.amazonaws.com");
	rf_s3_config_free(&c);

	setenv("AWS_PROFILE", "dev", 1);
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_string_equal(c.region, "ap-south-1");
	assert_string_equal(c.endpoint, "http://s3.local:9000"); /* services over endpoint_url */
	char *u = object_url(&c, "bkt", "x.rfs");
	assert_string_equal(u, "http://bkt.s3.local:9000/x.rfs"); /* addressing_style = virtual */
	free(u);
	rf_s3_config_free(&c);

	setenv("AWS_REGION", "us-west-2", 1); /* the environment over the profile */
	setenv("AWS_ENDPOINT_URL", "http://env:2", 1);
	opt.s3.addressing = "path"; /* an explicit option over the profile */
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_string_equal(c.region, "us-west-2");
	assert_string_equal(c.endpoint, "http://env:2");
	u = object_url(&c, "bkt", "x.rfs");
	assert_string_equal(u, "http://env:2/bkt/x.rfs");
	free(u);
	rf_s3_config_free(&c);

	unsetenv("AWS_REGION");
	setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_string_equal(c.endpoint, "https://s3.ap-south-1.amazonaws.com");
	rf_s3_config_free(&c);
	unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");

	opt.s3.addressing = NULL;
	setenv("AWS_PROFILE", "odd", 1);
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "addressing_style 'sideways'"));
	unlink(path);
	rmdir(dir);
	clear_env();
}

/* The AWS endpoint helpers behind region-mismatch following. */
static void test_aws_region_urls(void **state)
{
	(void)state;
	char r[48];
	assert_true(rf_url_aws_s3_region("https://s3.eu-west-3.amazonaws.com/b/k", r, sizeof(r)));
	assert_string_equal(r, "eu-west-3");
	assert_true(rf_url_aws_s3_region("https://bkt.s3.us-west-2.amazonaws.com/k", r, sizeof(r)));
	assert_string_equal(r, "us-west-2");
	assert_true(rf_url_aws_s3_region("https://s3.amazonaws.com/b/k", r, sizeof(r)));
	assert_string_equal(r, "us-east-1");
	assert_true(rf_url_aws_s3_region("https://s3-eu-west-1.amazonaws.com/b", r, sizeof(r)));
	assert_string_equal(r, "eu-west-1");
	assert_false(rf_url_aws_s3_region("http://localhost:9000/b/k", r, sizeof(r)));
	assert_false(rf_url_aws_s3_region("https://evil.com/s3.x.amazonaws.com", r, sizeof(r)));
	assert_false(rf_url_aws_s3_region("https://ec2.us-east-1.amazonaws.com/", r, sizeof(r)));
	char *u =
	    rf_url_aws_s3_with_region("https://bkt.s3.us-east-1.amazonaws.com/k?x", "ap-south-1");
	assert_string_equal(u, "https://bkt.s3.ap-south-1.amazonaws.com/k?x");
	free(u);
	u = rf_url_aws_s3_with_region("https://s3.amazonaws.com:443/b/k", "eu-west-3");
	assert_string_equal(u, "https://s3.eu-west-3.amazonaws.com:443/b/k");
	free(u);
	assert_null(rf_url_aws_s3_with_region("http://localhost:9000/b/k", "eu-west-3"));
	assert_null(rf_url_aws_s3_with_region("https://s3.amazonaws.com/b", "evil.com/x"));
	assert_false(rf_s3_region_ok("eu-west-3\r\nX: y"));
	assert_true(rf_s3_bucket_virtual_ok("my-bucket-1"));
	assert_false(rf_s3_bucket_virtual_ok("my.bucket"));
	assert_false(rf_s3_bucket_virtual_ok("-bad"));
	assert_false(rf_s3_bucket_virtual_ok("ab"));
}

static void test_config(void **state)
{
	(void)state;
	rf_fetch_options opt = {0};
	rf_s3_config c;
	rf_error err = {0};
	clear_env();
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_string_equal(c.region, "us-east-1");
	assert_string_equal(c.endpoint, "https://s3.us-east-1.amazonaws.com");
	assert_null(c.access_key); /* anonymous */
	rf_s3_config_free(&c);

	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/", 1);
	setenv("AWS_REGION", "eu-west-3", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
	setenv("AWS_SESSION_TOKEN", "TOK", 1);
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_string_equal(c.endpoint, "http://127.0.0.1:9000");
	assert_string_equal(c.region, "eu-west-3");
	assert_string_equal(c.secret_key, "SECRETENV");
	assert_string_equal(c.session_token, "TOK");
	rf_s3_config_free(&c);

	/* options win over the environment */
	opt.s3.endpoint = "https://minio.local";
	opt.s3.access_key = "AKOPT";
	opt.s3.secret_key = "SECRETOPT";
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_string_equal(c.endpoint, "https://minio.local");
	assert_string_equal(c.access_key, "AKOPT");
	rf_s3_config_free(&c);

	/* half a key pair is anonymous */
	clear_env();
	setenv("AWS_ACCESS_KEY_ID", "AK", 1);
	memset(&opt, 0, sizeof(opt));
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), 0);
	assert_null(c.access_key);
	rf_s3_config_free(&c);

	opt.s3.endpoint = "ftp://x";
	assert_int_equal(rf_s3_config_resolve(&opt, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ftp://x"));
	clear_env();
}

static void test_urls(void **state)
{
	(void)state;
	rf_s3_config c = {.endpoint = "http://h:1", .region = "us-east-1"};
	char *url = NULL;
	rf_error err = {0};
	assert_int_equal(rf_s3_object_url(&c, "bkt", "d/a b+c.rfs", &url, &err), 0);
	assert_string_equal(url, "http://h:1/bkt/d/a%20b%2Bc.rfs");
	free(url);
	assert_int_equal(rf_s3_list_url(&c, "bkt", "d/x", NULL, 5, &url, &err), 0);
	assert_string_equal(url, "http://h:1/bkt?list-type=2&max-keys=5&prefix=d%2Fx");
	free(url);
	assert_int_equal(rf_s3_list_url(&c, "bkt", "", "a/b=", 1000, &url, &err), 0);
	assert_string_equal(
	    url, "http://h:1/bkt?continuation-token=a%2Fb%3D&list-type=2&max-keys=1000&prefix=");
	free(url);
	char longkey[1100];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	assert_int_equal(rf_s3_object_url(&c, "bkt", longkey, &url, &err), -ENAMETOOLONG);
}

#define HEAD                                                                                       \
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"                                             \
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"

static int parse(const char *xml, rf_url_list *l, bool *trunc, char **tok, rf_error *err)
{
	return rf_s3_list_parse(xml, strlen(xml), "bkt", l, trunc, tok, err);
}

static void test_parse_ok(void **state)
{
	(void)state;
	rf_url_list l = {0};
	bool trunc;
	char *tok;
	rf_error err = {0};
	const char *page1 =
	    HEAD "<Name>bkt</Name><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>"
	         "<NextContinuationToken>tok/1=</NextContinuationToken>"
	         "<Contents><Key>d/a&amp;b.rfs</Key><Size>123</Size>"
	         "<ETag>&quot;x&quot;</ETag></Contents>\n"
	         "<Contents><Size>0</Size><Key>d/z.txt</Key></Contents>"
	         "</ListBucketResult>";
	assert_int_equal(parse(page1, &l, &trunc, &tok, &err), 0);
	assert_true(trunc);
	assert_string_equal(tok, "tok/1=");
	free(tok);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[0].url, "s3://bkt/d/a&b.rfs");
	assert_true(l.v[0].size_hint == 123);
	assert_string_equal(l.v[0].validator, "etag:\"x\""); /* as rf_source_validator says */
	assert_true(l.v[1].size_hint == 0);
	assert_null(l.v[1].validator); /* no ETag: unknown */
	const char *page2 = HEAD "<IsTruncated>false</IsTruncated></ListBucketResult>";
	assert_int_equal(parse(page2, &l, &trunc, &tok, &err), 0);
	assert_false(trunc);
	assert_null(tok);
	assert_int_equal(l.n, 2);
	rf_url_list_free(&l);
}

/* A listed ETag is untrusted as the header is: too long or not printable
 * ASCII is "unknown", and the entry is kept. */
static void test_parse_etags(void **state)
{
	(void)state;
	char xml[2048], longest[200];
	memset(longest, 'e', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	snprintf(xml, sizeof(xml),
	         HEAD
	         "<Contents><Key>a</Key><Size>1</Size><ETag>%s</ETag></Contents>"
	         "<Contents><Key>b</Key><Size>1</Size><ETag>&quot;a&#9;b&quot;</ETag></Contents>"
	         "<Contents><Key>c</Key><Size>1</Size><ETag>  &quot;c-2&quot; </ETag></Contents>"
	         "<Contents><Key>d</Key><Size>1</Size><ETag>&quot;\xc3\xa9&quot;</ETag></Contents>"
	         "</ListBucketResult>",
	         longest);
	rf_url_list l = {0};
	bool trunc;
	char *tok = NULL;
	rf_error err = {0};
	if (parse(xml, &l, &trunc, &tok, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(l.n, 4);
	assert_null(l.v[0].validator);
	assert_null(l.v[1].validator);
	assert_string_equal(l.v[2].validator, "etag:\"c-2\"");
	assert_null(l.v[3].validator);
	rf_url_list_free(&l);
}

static void expect_refused(const char *xml, int code, const char *words)
{
	rf_url_list l = {0};
	bool trunc;
	char *tok = NULL;
	rf_error err = {0};
	int rc = parse(xml, &l, &trunc, &tok, &err);
	if (rc != code || !strstr(err.msg, words))
		fail_msg("got %d '%s', wanted %d with '%s'", rc, err.msg, code, words);
	assert_int_equal(l.n, 0); /* a refused page adds nothing */
	assert_null(tok);
	rf_url_list_free(&l);
}

static void test_parse_hostile(void **state)
{
	(void)state;
	expect_refused("<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
	               "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]>"
	               "<ListBucketResult><Contents><Key>&lol2;</Key><Size>1</Size></Contents>"
	               "</ListBucketResult>",
	               -EPROTO, "DOCTYPE");
	expect_refused(HEAD "<Contents><Key>a</Key></Contents></ListBucketResult>", -EPROTO,
	               "without Key or Size");
	expect_refused(HEAD "<Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
	               -EPROTO, "Size");
	expect_refused(HEAD "<Contents><Key>a</Key><Size>99999999999999999999999</Size></Contents>"
	                    "</ListBucketResult>",
	               -EPROTO, "Size");
	expect_refused(HEAD "<Contents><Key></Key><Size>1</Size></Contents></ListBucketResult>",
	               -EPROTO, "Key");
	expect_refused("<Other/>", -EPROTO, "root element");
	expect_refused(HEAD "<Contents><Key>a</Key>", -EPROTO, "bucket bkt");
	expect_refused("", -EPROTO, "bkt");
	expect_refused(HEAD "<IsTruncated>true</IsTruncated></ListBucketResult>", -EPROTO,
	               "NextContinuationToken");
	expect_refused(HEAD "<a><b><c><d><e><f><g><h><i></i></h></g></f></e></d></c></b></a>"
	                    "</ListBucketResult>",
	               -EPROTO, "nested");
	expect_refused("<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code>"
	               "<Message>Access Denied</Message></Error>",
	               -EACCES, "AccessDenied");
	expect_refused("<Error><Code>NoSuchBucket</Code></Error>", -ENOENT, "NoSuchBucket");
	/* a key over 1024 bytes, and one huge text node */
	char *big = malloc(40000);
	strcpy(big, HEAD "<Contents><Key>");
	size_t n = strlen(big);
	memset(big + n, 'k', 1500);
	strcpy(big + n + 1500, "</Key><Size>1</Size></Contents></ListBucketResult>");
	expect_refused(big, -EPROTO, "Key");
	memset(big + n, 'k', 30000);
	strcpy(big + n + 30000, "</Key><Size>1</Size></Contents></ListBucketResult>");
	expect_refused(big, -EPROTO, "too long");
	free(big);
	/* a good entry followed by a bad one: nothing added */
	expect_refused(HEAD "<Contents><Key>a</Key><Size>1</Size></Contents>"
	                    "<Contents><Key>b</Key><Size>x</Size></Contents></ListBucketResult>",
	               -EPROTO, "Size");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config),        cmocka_unit_test(test_urls),
	    cmocka_unit_test(test_addressing),    cmocka_unit_test(test_aws_region_urls),
	    cmocka_unit_test(test_profile),       cmocka_unit_test(test_parse_ok),
	    cmocka_unit_test(test_parse_hostile), cmocka_unit_test(test_parse_etags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
