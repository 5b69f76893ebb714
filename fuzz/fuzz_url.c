/* fuzz_url.c - libFuzzer target for the URL forms (fetch/url.h): scheme
 * detection, brace expansion, s3:// splitting, file:// paths, percent
 * encoding, redaction, manifest path joining, and the AWS endpoint helpers. The input is one URL or
 * pattern (cut at its first NUL). */
#include "fuzz.h"
#include "manifest.h"
#include "url.h"

static void expand(const char *s)
{
	rf_url_list l = {0};
	rf_error err = {0};
	int rc = rf_brace_expand(s, &l, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
	} else {
		FUZZ_CHECK(l.n >= 1 && l.n <= RF_BRACE_EXPANSION_MAX);
		for (size_t i = 0; i < l.n; i++)
			FUZZ_CHECK(l.v[i].url && !strpbrk(l.v[i].url, "{}"));
		if (!strchr(s, '{'))
			FUZZ_CHECK(l.n == 1 && strcmp(l.v[0].url, s) == 0);
	}
	rf_url_list_free(&l);
}

/* The AWS endpoint helpers of region-mismatch following: a region found is
 * a plausible name, and moving a URL to a region changes only its host. */
static void aws_hosts(const char *s, size_t len)
{
	char region[48];
	if (rf_url_aws_s3_region(s, region, sizeof(region)))
		FUZZ_CHECK(rf_s3_region_ok(region));
	char *moved = rf_url_aws_s3_with_region(s, "eu-west-3");
	if (moved) {
		FUZZ_CHECK(rf_url_aws_s3_region(moved, region, sizeof(region)) &&
		           !strcmp(region, "eu-west-3"));
		FUZZ_CHECK(strlen(moved) <= len + 24);
		free(moved);
	}
}

static void pieces(const char *s, size_t len)
{
	rf_error err = {0};
	char *a = NULL, *b = NULL;
	int rc = rf_url_split_s3(s, &a, &b, &err);
	if (rc == 0) {
		rf_url_scheme sch = rf_url_scheme_of(s);
		FUZZ_CHECK((sch == RF_URL_S3 || sch == RF_URL_GS) && strlen(a) >= 1);
		(void)rf_s3_bucket_virtual_ok(a);
		FUZZ_CHECK(strlen(a) + strlen(b) + 5 <= len);
		free(a);
		free(b);
	} else {
		fuzz_check_error(rc, &err);
	}
	char *path = NULL;
	rc = rf_url_file_path(s, &path, &err);
	if (rc == 0) {
		FUZZ_CHECK(path[0] == '/' && strlen(path) <= len);
		free(path);
	} else {
		fuzz_check_error(rc, &err);
	}
	(void)rf_url_scheme_name(rf_url_scheme_of(s));
	aws_hosts(s, len);
}

static void encode_redact(const char *s, size_t len)
{
	size_t caps[] = {1, 7, 64, 3 * len + 1};
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		char *out = malloc(caps[i]);
		FUZZ_CHECK(out != NULL);
		int n = rf_uri_encode(s, i & 1, out, caps[i]);
		FUZZ_CHECK(n == -ENAMETOOLONG || (n >= 0 && (size_t)n < caps[i] && out[n] == 0));
		if (caps[i] == 3 * len + 1)
			FUZZ_CHECK(n >= 0 && (size_t)n >= len);
		rf_url_redact(s, out, caps[i]);
		FUZZ_CHECK(memchr(out, 0, caps[i]) != NULL);
		/* a redirect's Location decides the origin compared for credentials */
		int o = rf_url_origin(s, out, caps[i]);
		FUZZ_CHECK(o == 0 || o == -EINVAL || o == -ENAMETOOLONG);
		FUZZ_CHECK(o != 0 || (strstr(out, "://") && !strchr(out, '@')));
		free(out);
	}
	char *d = rf_url_redact_dup(s);
	FUZZ_CHECK(d != NULL && strlen(d) <= len + 4);
	free(d);
	char *w = rf_url_without_userinfo(s);
	FUZZ_CHECK(w != NULL && strlen(w) <= len);
	free(w);
	char *j = rf_manifest_join("http://h/base/", s);
	FUZZ_CHECK(j != NULL);
	free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	size_t len = strlen(s);
	expand(s);
	pieces(s, len);
	encode_redact(s, len);
	free(s);
	return 0;
}
