/* test_creds.c - what the credential sources answer, parsed as untrusted
 * input: STS XML, container / IMDS / credential_process JSON, ISO 8601
 * times, credential_process command lines, and when a refresh is due. */
#include "creds.h"
#include "creds_int.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STS_OK(root, creds)                                                                        \
	"<" root "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><" root "Result>"   \
	"<AssumedRoleUser><Arn>a</Arn></AssumedRoleUser><Credentials>" creds "</Credentials>"      \
	"</" root "Result><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></" root    \
	"Response>"
#define FULL_CREDS                                                                                 \
	"<SessionToken>TOKEN/x+y=</SessionToken><SecretAccessKey>wJal/K7+MDENG</SecretAccessKey>"  \
	"<Expiration>2026-12-01T10:00:00Z</Expiration><AccessKeyId>ASIAEXAMPLE</AccessKeyId>"

static int sts(const char *xml, rf_creds_value *v, rf_error *err)
{
	return rf_creds_parse_sts(xml, strlen(xml), v, err);
}

static void test_sts(void **state)
{
	(void)state;
	rf_creds_value v;
	rf_error err = {0};
	assert_int_equal(sts(STS_OK("AssumeRoleWithWebIdentity", FULL_CREDS), &v, &err), 0);
	assert_string_equal(v.access_key, "ASIAEXAMPLE");
	assert_string_equal(v.secret_key, "wJal/K7+MDENG");
	assert_string_equal(v.session_token, "TOKEN/x+y=");
	assert_true(v.expires_ms == 1796119200000ll);
	rf_creds_value_wipe(&v);
	assert_null(v.access_key);
	assert_int_equal(sts(STS_OK("AssumeRole", FULL_CREDS), &v, &err), 0);
	rf_creds_value_wipe(&v);
	/* an error document: its code, -EACCES */
	assert_int_equal(sts("<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
	                     "<Message>not allowed</Message></Error></ErrorResponse>",
	                     &v, &err),
	                 -EACCES);
	assert_non_null(strstr(err.msg, "STS error AccessDenied: not allowed"));
	/* refusals */
	const char *badv[] = {
	    "<!DOCTYPE x [<!ENTITY e \"x\">]><AssumeRoleResponse/>",
	    "<ListBucketResult/>",
	    STS_OK("AssumeRole", "<AccessKeyId>A</AccessKeyId><SecretAccessKey>s</SecretAccessKey>"
	                         "<Expiration>2026-12-01T10:00:00Z</Expiration>"), /* no token */
	    STS_OK("AssumeRole",
	           "<AccessKeyId>A:B</AccessKeyId><SecretAccessKey>s</SecretAccessKey>"
	           "<SessionToken>t</SessionToken>"
	           "<Expiration>2026-12-01T10:00:00Z</Expiration>"), /* ':' */
	    STS_OK("AssumeRole", "<AccessKeyId>A</AccessKeyId><SecretAccessKey>s</SecretAccessKey>"
	                         "<SessionToken>t\nu</SessionToken>"
	                         "<Expiration>2026-12-01T10:00:00Z</Expiration>"), /* a newline */
	    STS_OK("AssumeRole", "<AccessKeyId>A</AccessKeyId><SecretAccessKey>s</SecretAccessKey>"
	                         "<SessionToken>t</SessionToken><Expiration>soon</Expiration>"),
	    ("<AssumeRoleResponse><a><b><c><d><e><f><g><h>x</h></g></f></e></d></c></b></a>"
	     "</AssumeRoleResponse>"),
	    "",
	    "<AssumeRoleResponse>",
	};
	for (size_t i = 0; i < sizeof(badv) / sizeof(*badv); i++) {
		memset(&err, 0, sizeof(err));
		int rc = sts(badv[i], &v, &err);
		if (rc != -EPROTO)
			fail_msg("case %zu: rc %d (%s)", i, rc, err.msg);
		assert_null(v.access_key);
		assert_null(strstr(err.msg, "wJal"));
	}
}

static int js(const char *j, rf_creds_json_kind k, rf_creds_value *v, rf_error *err)
{
	return rf_creds_parse_json(j, strlen(j), k, v, err);
}

static void test_json(void **state)
{
	(void)state;
	rf_creds_value v;
	rf_error err = {0};
	assert_int_equal(js("{\"Version\": 1, \"AccessKeyId\": \"AKIA1\", \"SecretAccessKey\": "
	                    "\"s/k\", \"SessionToken\": \"tok\", \"Expiration\": "
	                    "\"2026-12-01T10:00:00.500Z\"}",
	                    RF_CREDS_JSON_PROCESS, &v, &err),
	                 0);
	assert_string_equal(v.session_token, "tok");
	assert_true(v.expires_ms == 1796119200500ll);
	rf_creds_value_wipe(&v);
	/* a process may give long-term keys: no token, no expiry */
	assert_int_equal(js("{\"Version\":1,\"AccessKeyId\":\"AKIA1\",\"SecretAccessKey\":\"s\"}",
	                    RF_CREDS_JSON_PROCESS, &v, &err),
	                 0);
	assert_null(v.session_token);
	assert_true(v.expires_ms == 0);
	rf_creds_value_wipe(&v);
	assert_int_equal(js("{\"Code\":\"Success\",\"AccessKeyId\":\"ASIA1\",\"SecretAccessKey\":"
	                    "\"s\",\"Token\":\"t\",\"Expiration\":\"2026-12-01T10:00:00Z\"}",
	                    RF_CREDS_JSON_CONTAINER, &v, &err),
	                 0);
	rf_creds_value_wipe(&v);
	assert_int_equal(js("{\"Code\":\"Failure\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\","
	                    "\"Token\":\"t\",\"Expiration\":\"2026-12-01T10:00:00Z\"}",
	                    RF_CREDS_JSON_CONTAINER, &v, &err),
	                 -EACCES);
	const char *badv[] = {
	    "{\"Version\":2,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\"}",
	    "{\"Version\":1,\"AccessKeyId\":\"A\",\"AccessKeyId\":\"B\",\"SecretAccessKey\":\"s\"}",
	    "{\"Version\":1,\"AccessKeyId\":\"A\\u0000B\",\"SecretAccessKey\":\"s\"}",
	    "{\"Version\":1,\"AccessKeyId\":7,\"SecretAccessKey\":\"s\"}",
	    "{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s p\"}",
	    "{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\",\"Expiration\":\"x\"}",
	    "[1]",
	    "{\"Version\":1,",
	};
	for (size_t i = 0; i < sizeof(badv) / sizeof(*badv); i++) {
		memset(&err, 0, sizeof(err));
		int rc = js(badv[i], RF_CREDS_JSON_PROCESS, &v, &err);
		if (rc != -EPROTO)
			fail_msg("case %zu: rc %d (%s)", i, rc, err.msg);
		assert_null(v.access_key);
	}
	/* container answers need a token and an expiry */
	assert_int_equal(js("{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\",\"Expiration\":"
	                    "\"2026-12-01T10:00:00Z\"}",
	                    RF_CREDS_JSON_CONTAINER, &v, &err),
	                 -EPROTO);
}

static void test_time(void **state)
{
	(void)state;
	int64_t t;
	assert_int_equal(rf_creds_parse_time("1970-01-01T00:00:00Z", &t), 0);
	assert_true(t == 0);
	assert_int_equal(rf_creds_parse_time("2026-12-01T10:00:00+00:00", &t), 0);
	assert_true(t == 1796119200000ll);
	assert_int_equal(rf_creds_parse_time("2026-12-01T10:00:00.1234Z", &t), 0);
	assert_true(t == 1796119200123ll);
	const char *badv[] = {"",
	                      "2026-12-01",
	                      "2026-12-01T10:00:00",
	                      "2026-13-01T10:00:00Z",
	                      "2026-12-01T10:00:00+01:00",
	                      "2026-12-01T10:00:00.Z",
	                      "1969-12-31T23:59:59Z",
	                      "2026-12-01T10:00:00Zjunk"};
	for (size_t i = 0; i < sizeof(badv) / sizeof(*badv); i++)
		assert_int_equal(rf_creds_parse_time(badv[i], &t), -EINVAL);
}

static void test_command(void **state)
{
	(void)state;
	char **argv;
	rf_error err = {0};
	assert_int_equal(rf_creds_split_command("  /usr/bin/tool  --profile 'a b' \"c \\\"d\\\"\" "
	                                        "e\\ f ';$(x)' ",
	                                        &argv, &err),
	                 0);
	const char *want[] = {"/usr/bin/tool", "--profile", "a b", "c \"d\"", "e f", ";$(x)", NULL};
	for (size_t i = 0; want[i]; i++)
		assert_string_equal(argv[i], want[i]);
	assert_null(argv[6]);
	rf_creds_argv_free(argv);
	assert_int_equal(rf_creds_split_command("tool 'open", &argv, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unterminated"));
	assert_int_equal(rf_creds_split_command("   ", &argv, &err), -EINVAL);
	char many[400] = "";
	for (int i = 0; i < 70; i++)
		strcat(many, "a ");
	assert_int_equal(rf_creds_split_command(many, &argv, &err), -E2BIG);
}

static void test_refresh_delay(void **state)
{
	(void)state;
	/* an hour's credentials: refreshed 5 minutes before they expire */
	int64_t t0 = 1000000000000ll;
	assert_true(rf_creds_refresh_delay_ms(t0, t0, t0 + 3600000) == 3300000);
	/* 4 s credentials: a third of their life ahead */
	assert_true(rf_creds_refresh_delay_ms(t0, t0, t0 + 4000) == 2667);
	assert_true(rf_creds_refresh_delay_ms(t0 + 2000, t0, t0 + 4000) == 667);
	/* late or already expired: soon, never a busy loop */
	assert_true(rf_creds_refresh_delay_ms(t0 + 9000, t0, t0 + 4000) == 500);
	assert_true(rf_creds_refresh_delay_ms(t0, t0, t0 - 5) == 500);
}

/* A profile's static keys are the answer itself: the picker returns 0 with
 * the keys (nothing to fetch), not 1 ("fetch kind 0" once fetched web
 * identity with no token file). */
static void test_pick_static_keys(void **state)
{
	(void)state;
	char dir[] = "/tmp/rf-creds-pick-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/credentials", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("[work]\naws_access_key_id = AKWORK\naws_secret_access_key = SKWORK\n"
	      "aws_session_token = TKWORK\n",
	      f);
	fclose(f);
	static const char *const unset[] = {"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
	                                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
	                                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"};
	for (size_t i = 0; i < sizeof(unset) / sizeof(*unset); i++)
		unsetenv(unset[i]);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	setenv("AWS_PROFILE", "work", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	rf_creds c = {.s3_region = "us-east-1", .fd = -1};
	rf_creds_value v = {0};
	rf_error err = {0};
	assert_int_equal(rf_creds_pick(&c, &v, &err), 0);
	assert_int_equal(c.kind, K_NONE);
	assert_string_equal(v.access_key, "AKWORK");
	assert_string_equal(v.secret_key, "SKWORK");
	assert_string_equal(v.session_token, "TKWORK");
	assert_null(c.token_file);
	rf_creds_value_wipe(&v);
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unsetenv("AWS_CONFIG_FILE");
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_EC2_METADATA_DISABLED");
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sts),           cmocka_unit_test(test_json),
	    cmocka_unit_test(test_time),          cmocka_unit_test(test_command),
	    cmocka_unit_test(test_refresh_delay), cmocka_unit_test(test_pick_static_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
