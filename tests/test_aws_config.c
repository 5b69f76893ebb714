/* test_aws_config.c - the AWS shared files as the SDKs read them: sections of
 * both file kinds, nested sub-sections, repeated keys, comments, and every
 * refusal naming the file and line but never a value. */
#include "aws_config.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rf_aws_ini *parse(const char *text, rf_aws_ini_kind kind)
{
	rf_aws_ini *ini = NULL;
	rf_error err = {0};
	assert_int_equal(rf_aws_ini_parse(text, strlen(text), kind, "f", &ini, &err), 0);
	assert_non_null(ini);
	return ini;
}

static void test_credentials_file(void **state)
{
	(void)state;
	rf_aws_ini *ini = parse("# comment\n"
	                        "[default]\r\n"
	                        "aws_access_key_id = AKDEF\r\n"
	                        "AWS_Secret_Access_Key=sec/ret+x=\n"
	                        "; other comment\n"
	                        "\n"
	                        "[dev]\n"
	                        "aws_access_key_id = AKDEV\n"
	                        "aws_access_key_id = AKDEV2\n"
	                        "[profile dev]\n"
	                        "aws_access_key_id = literal\n",
	                        RF_AWS_INI_CREDENTIALS);
	assert_string_equal(rf_aws_ini_get(ini, "default", "aws_access_key_id"), "AKDEF");
	/* keys are case-insensitive; a value keeps its '=' */
	assert_string_equal(rf_aws_ini_get(ini, "default", "aws_secret_access_key"), "sec/ret+x=");
	assert_string_equal(rf_aws_ini_get(ini, "dev", "AWS_ACCESS_KEY_ID"), "AKDEV2");
	/* in a credentials file "[profile dev]" is a profile named "profile dev" */
	assert_string_equal(rf_aws_ini_get(ini, "profile dev", "aws_access_key_id"), "literal");
	assert_null(rf_aws_ini_get(ini, "dev", "region"));
	assert_null(rf_aws_ini_get(ini, "nope", "aws_access_key_id"));
	assert_true(rf_aws_ini_has_section(ini, "dev"));
	assert_false(rf_aws_ini_has_section(ini, "nope"));
	rf_aws_ini_free(ini);
}

static void test_config_file(void **state)
{
	(void)state;
	rf_aws_ini *ini = parse("[default]\n"
	                        "region = eu-west-1\n"
	                        "s3 =\n"
	                        "  addressing_style = path\n"
	                        "  endpoint_url = http://127.0.0.1:9000\n"
	                        "output = json\n"
	                        "[profile dev]\n"
	                        "role_arn = arn:aws:iam::1:role/r\n"
	                        "source_profile = default\n"
	                        "[dev]\n"
	                        "region = ignored\n"
	                        "[services local]\n"
	                        "s3 =\n"
	                        "\tendpoint_url = http://localhost:1\n"
	                        "[profile default]\n"
	                        "region = eu-west-2\n",
	                        RF_AWS_INI_CONFIG);
	/* [profile default] continues [default]; the last value wins */
	assert_string_equal(rf_aws_ini_get(ini, "default", "region"), "eu-west-2");
	assert_string_equal(rf_aws_ini_get(ini, "default", "s3"), "");
	assert_string_equal(rf_aws_ini_get_sub(ini, "default", "s3", "addressing_style"), "path");
	assert_string_equal(rf_aws_ini_get_sub(ini, "default", "S3", "endpoint_url"),
	                    "http://127.0.0.1:9000");
	/* a top-level key after the sub-section is top-level again */
	assert_string_equal(rf_aws_ini_get(ini, "default", "output"), "json");
	assert_null(rf_aws_ini_get(ini, "default", "addressing_style"));
	assert_null(rf_aws_ini_get_sub(ini, "default", "s3", "output"));
	assert_string_equal(rf_aws_ini_get(ini, "dev", "source_profile"), "default");
	/* "[dev]" in a config file is not a profile: skipped */
	assert_string_equal(rf_aws_ini_get(ini, "dev", "role_arn"), "arn:aws:iam::1:role/r");
	assert_null(rf_aws_ini_get(ini, "dev", "region"));
	assert_string_equal(rf_aws_ini_get_sub(ini, "services local", "s3", "endpoint_url"),
	                    "http://localhost:1");
	rf_aws_ini_free(ini);
}

static void expect_bad(const char *text, rf_aws_ini_kind kind, const char *words)
{
	rf_aws_ini *ini = (rf_aws_ini *)1;
	rf_error err = {0};
	int rc = rf_aws_ini_parse(text, strlen(text), kind, "/x/cfg", &ini, &err);
	if (rc >= 0)
		fail_msg("accepted: '%s'", text);
	assert_null(ini);
	assert_int_equal(err.code, rc);
	if (!strstr(err.msg, words) || !strstr(err.msg, "/x/cfg"))
		fail_msg("message '%s' lacks '%s'", err.msg, words);
	assert_null(strstr(err.msg, "SECRETVALUE")); /* never a value */
}

static void test_refusals(void **state)
{
	(void)state;
	expect_bad("key = SECRETVALUE\n", RF_AWS_INI_CREDENTIALS, "line 1: a setting before");
	expect_bad("[a]\nSECRETVALUE\n", RF_AWS_INI_CREDENTIALS,
	           "line 2 (profile a): a line that is neither");
	expect_bad("[a\nk=v\n", RF_AWS_INI_CONFIG, "line 1: a section header without");
	expect_bad("[a] x\n", RF_AWS_INI_CONFIG, "text after a section header");
	expect_bad("[ ]\n", RF_AWS_INI_CONFIG, "empty or too long section name");
	expect_bad("[default]\n= SECRETVALUE\n", RF_AWS_INI_CONFIG,
	           "empty or too long setting name");
	expect_bad("[default]\n  k = SECRETVALUE\n", RF_AWS_INI_CONFIG, "continues nothing");
	expect_bad("[default]\nk = SECRET\x01VALUE\n", RF_AWS_INI_CONFIG, "control character");
	char big[RF_AWS_INI_LINE_BYTES_MAX + 16];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	expect_bad(big, RF_AWS_INI_CONFIG, "line 1: a line longer than 16384 bytes");
	rf_aws_ini *ini = NULL;
	rf_error err = {0};
	assert_int_equal(rf_aws_ini_parse("[a]\0", 4, RF_AWS_INI_CONFIG, "f", &ini, &err), -EINVAL);
	assert_int_equal(
	    rf_aws_ini_parse("", RF_AWS_INI_BYTES_MAX + 1, RF_AWS_INI_CONFIG, "f", &ini, &err),
	    -EFBIG);
	/* a continuation line extends the value it follows */
	ini = parse("[a]\nk = one\n  two\n", RF_AWS_INI_CREDENTIALS);
	assert_string_equal(rf_aws_ini_get(ini, "a", "k"), "one\ntwo");
	rf_aws_ini_free(ini);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_shared_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/rf-awscfg-XXXXXX", cred[64], conf[64];
	assert_non_null(mkdtemp(dir));
	snprintf(cred, sizeof(cred), "%s/c", dir);
	snprintf(conf, sizeof(conf), "%s/k", dir);
	write_file(cred, "[p1]\nregion = from-credentials\n");
	write_file(conf, "[profile p1]\nregion = from-config\nrole_arn = r\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
	setenv("AWS_CONFIG_FILE", conf, 1);
	setenv("AWS_PROFILE", "p1", 1);
	rf_aws_shared s;
	rf_error err = {0};
	assert_int_equal(rf_aws_shared_load(NULL, &s, &err), 0);
	assert_string_equal(s.profile, "p1");
	assert_string_equal(s.config_path, conf);
	assert_string_equal(rf_aws_profile_get(&s, "p1", "region"), "from-credentials");
	assert_string_equal(rf_aws_profile_get(&s, "p1", "role_arn"), "r");
	assert_true(rf_aws_profile_exists(&s, "p1"));
	assert_false(rf_aws_profile_exists(&s, "default"));
	rf_aws_shared_free(&s);
	/* a missing file is absent, not an error; a bad one is an error */
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/dir/c", 1);
	assert_int_equal(rf_aws_shared_load("other", &s, &err), 0);
	assert_null(s.credentials);
	assert_string_equal(s.profile, "other");
	rf_aws_shared_free(&s);
	write_file(conf, "oops\n");
	assert_int_equal(rf_aws_shared_load(NULL, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 1"));
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unsetenv("AWS_CONFIG_FILE");
	unsetenv("AWS_PROFILE");
	unlink(cred);
	unlink(conf);
	rmdir(dir);
}

/* A file of its own under dir, written from parts: returns its path. */
static char *write_parts(const char *dir, const char *leaf, const char *const *parts, size_t n)
{
	char *path = NULL;
	assert_true(asprintf(&path, "%s/%s", dir, leaf) > 0);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		fputs(parts[i], f);
	fclose(f);
	return path;
}

/* A section of n settings, each line about width bytes. */
static char *big_section(const char *header, size_t n, size_t width)
{
	size_t cap = strlen(header) + 2 + n * (width + 16) + 1;
	char *s = malloc(cap), *at = s;
	assert_non_null(s);
	at += sprintf(at, "%s\n", header);
	for (size_t i = 0; i < n; i++) {
		at += sprintf(at, "k%zu = ", i);
		memset(at, 'v', width);
		at += width;
		*at++ = '\n';
	}
	*at = '\0';
	return s;
}

static void load_shared(const char *cred, const char *conf, const char *profile, int want,
                        rf_aws_shared *s, rf_error *err)
{
	setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
	setenv("AWS_CONFIG_FILE", conf, 1);
	*err = (rf_error){0};
	int rc = rf_aws_shared_load(profile, s, err);
	if (rc != want)
		fail_msg("rf_aws_shared_load(%s): %d (%s), want %d", profile, rc, err->msg, want);
}

/* What a profile nobody uses holds never fails the chain: a line past the
 * bound, a malformed line, a NUL, a section past 1 MiB and 8192 settings.
 * The profile used is bounded and named when it is past a bound. */
static void test_unused_profiles_skipped(void **state)
{
	(void)state;
	char dir[] = "/tmp/rf-awscfg-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *longline = big_section("[profile long]", 1, 20000);
	char *huge = big_section("[profile huge]", 9000, 200); /* 1.9 MiB, 9000 settings */
	const char *conf_parts[] = {"[default]\nregion = eu-west-3\n",
	                            longline,
	                            "[profile odd]\nthis is not a setting\n\x01\n",
	                            huge,
	                            "[profile work]\naws_access_key_id = AKWORK\n"
	                            "aws_secret_access_key = SKWORK\nsource_profile = src\n"
	                            "services = mine\n",
	                            "[services mine]\ns3 =\n  endpoint_url = http://localhost:9\n",
	                            "[services other]\nx = \n  ",
	                            longline};
	char *conf = write_parts(dir, "config", conf_parts, RF_ARRAY_LEN(conf_parts));
	const char *cred_parts[] = {"[src]\naws_access_key_id = AKSRC\n", longline,
	                            "[zzz]\nnul = a"};
	char *cred = write_parts(dir, "credentials", cred_parts, RF_ARRAY_LEN(cred_parts));
	FILE *nul = fopen(cred, "a"); /* "a\0b": fputs stops at the NUL */
	assert_non_null(nul);
	assert_int_equal(fwrite("\0b\n", 1, 3, nul), 3);
	fclose(nul);
	rf_aws_shared s;
	rf_error err;
	load_shared(cred, conf, "work", 0, &s, &err);
	assert_string_equal(rf_aws_profile_get(&s, "work", "aws_access_key_id"), "AKWORK");
	/* what the profile points to is read (a second pass) */
	assert_string_equal(rf_aws_profile_get(&s, "src", "aws_access_key_id"), "AKSRC");
	assert_string_equal(rf_aws_ini_get_sub(s.config, "services mine", "s3", "endpoint_url"),
	                    "http://localhost:9");
	assert_false(rf_aws_profile_exists(&s, "huge")); /* skipped, not kept */
	assert_false(rf_aws_profile_exists(&s, "default"));
	rf_aws_shared_free(&s);
	load_shared(cred, conf, "default", 0, &s, &err);
	assert_string_equal(rf_aws_profile_get(&s, "default", "region"), "eu-west-3");
	rf_aws_shared_free(&s);
	/* the profile used: its long line, its malformed line, named with the profile */
	load_shared(cred, conf, "long", -EINVAL, &s, &err);
	assert_non_null(strstr(err.msg, "line 4 (profile long): a line longer than 16384 bytes"));
	assert_non_null(strstr(err.msg, conf));
	load_shared(cred, conf, "odd", -EINVAL, &s, &err);
	assert_non_null(strstr(err.msg, "line 6 (profile odd): a line that is neither"));
	load_shared(cred, conf, "huge", -EINVAL, &s, &err);
	assert_non_null(strstr(err.msg, "(profile huge): more than 8192 settings"));
	load_shared(cred, conf, "zzz", -EINVAL, &s, &err);
	assert_non_null(strstr(err.msg, "(profile zzz): a NUL byte"));
	assert_non_null(strstr(err.msg, cred));
	/* a value with its continuations is bounded too */
	char *cont = big_section("[profile c]\nv = x", 0, 0);
	char *lines = big_section("", 3, 9000); /* three continuation lines */
	for (char *l = lines; (l = strchr(l, '\n')); l++)
		if (l[1])
			l[1] = ' ';
	const char *cont_parts[] = {cont, lines + 1};
	char *cconf = write_parts(dir, "cont", cont_parts, 2);
	load_shared(cred, cconf, "c", -EINVAL, &s, &err);
	assert_non_null(strstr(err.msg, "(profile c): a value longer than 16384 bytes"));
	/* a header too long for the line buffer cannot be skipped: where would
	 * its section end? */
	char *hdr = big_section("[profile x", 1, 17000);
	hdr[strlen("[profile x")] = ' '; /* one line: "[profile x k0 = vvv..." */
	const char *hdr_parts[] = {"[profile work]\nregion = r\n", hdr};
	char *hconf = write_parts(dir, "hdr", hdr_parts, 2);
	load_shared(cred, hconf, "work", -EINVAL, &s, &err);
	assert_non_null(
	    strstr(err.msg, "line 3 (profile work): a section header longer than 16384"));
	/* the whole file stays bounded: 16 MiB, streamed */
	char *sparse = NULL;
	assert_true(asprintf(&sparse, "%s/sparse", dir) > 0);
	FILE *f = fopen(sparse, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), (off_t)RF_AWS_INI_BYTES_MAX + 1), 0);
	fclose(f);
	load_shared(cred, sparse, "work", -EFBIG, &s, &err);
	assert_non_null(strstr(err.msg, "larger than 16777216 bytes"));
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unsetenv("AWS_CONFIG_FILE");
	char *files[] = {conf, cred, cconf, hconf, sparse};
	for (size_t i = 0; i < RF_ARRAY_LEN(files); i++) {
		unlink(files[i]);
		free(files[i]);
	}
	rmdir(dir);
	free(longline);
	free(huge);
	free(cont);
	free(lines);
	free(hdr);
}

/* rf_aws_ini_parse_only keeps the sections named, skips the rest unread. */
static void test_parse_only(void **state)
{
	(void)state;
	static const char text[] = "[a]\nk = 1\n[b]\nnot a setting\n[c]\nk = 3\n";
	const char *const keep[] = {"a", "c", NULL};
	rf_aws_ini *ini = NULL;
	rf_error err = {0};
	assert_int_equal(rf_aws_ini_parse_only(text, strlen(text), RF_AWS_INI_CREDENTIALS, "f",
	                                       keep, &ini, &err),
	                 0);
	assert_string_equal(rf_aws_ini_get(ini, "a", "k"), "1");
	assert_string_equal(rf_aws_ini_get(ini, "c", "k"), "3");
	assert_false(rf_aws_ini_has_section(ini, "b"));
	rf_aws_ini_free(ini);
	/* every section kept: the same line is an error naming the profile */
	ini = NULL;
	assert_int_equal(
	    rf_aws_ini_parse(text, strlen(text), RF_AWS_INI_CREDENTIALS, "f", &ini, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 4 (profile b): a line that is neither"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_credentials_file),
	    cmocka_unit_test(test_config_file),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_shared_files),
	    cmocka_unit_test(test_unused_profiles_skipped),
	    cmocka_unit_test(test_parse_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
