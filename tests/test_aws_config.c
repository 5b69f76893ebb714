/* test_aws_config.c - the AWS shared files as the SDKs read them: sections of
 * both file kinds, nested sub-sections, repeated keys, comments, and every
 * refusal naming the file and line but never a value. */
#include "aws_config.h"
#include "testutil.h"

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
	expect_bad("[a]\nSECRETVALUE\n", RF_AWS_INI_CREDENTIALS, "line 2: a line that is neither");
	expect_bad("[a\nk=v\n", RF_AWS_INI_CONFIG, "line 1: a section header without");
	expect_bad("[a] x\n", RF_AWS_INI_CONFIG, "text after a section header");
	expect_bad("[ ]\n", RF_AWS_INI_CONFIG, "empty or too long section name");
	expect_bad("[default]\n= SECRETVALUE\n", RF_AWS_INI_CONFIG,
	           "empty or too long setting name");
	expect_bad("[default]\n  k = SECRETVALUE\n", RF_AWS_INI_CONFIG, "continues nothing");
	expect_bad("[a]\nk = SECRET\x01VALUE\n", RF_AWS_INI_CONFIG, "control character");
	char big[RF_AWS_INI_LINE_BYTES_MAX + 16];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	expect_bad(big, RF_AWS_INI_CONFIG, "line 1: a line longer than 4096");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_credentials_file),
	    cmocka_unit_test(test_config_file),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_shared_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
