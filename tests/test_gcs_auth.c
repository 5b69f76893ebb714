/* test_gcs_auth.c - Google OAuth's pure pieces (fetch/gcs_auth.c) and the
 * shared token answers (fetch/oauth.c, Azure's spellings too): a service
 * account key's JWT bearer assertion verifies with the key's public half and
 * carries the claims Google's token endpoint checks; an authorized_user
 * refresh is form-encoded; token answers and credential files are checked
 * and their refusals name the field without the secret. */
#include "gcs_auth.h"
#include "testutil.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

static EVP_PKEY *key;
static char *pem;

static int setup(void **state)
{
	(void)state;
	key = EVP_RSA_gen(2048);
	BIO *b = BIO_new(BIO_s_mem());
	if (!key || !b || PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1)
		return -1;
	char *p;
	long n = BIO_get_mem_data(b, &p);
	pem = strndup(p, (size_t)n);
	BIO_free(b);
	return pem ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	EVP_PKEY_free(key);
	free(pem);
	return 0;
}

static char *sa_json(const char *token_uri)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "type", "service_account", "client_email",
	                      "loader@proj.iam.gserviceaccount.com", "private_key", pem,
	                      "private_key_id", "kid123");
	if (token_uri)
		json_object_set_new(o, "token_uri", json_string(token_uri));
	char *s = json_dumps(o, 0);
	json_decref(o);
	return s;
}

static size_t b64url_decode(const char *in, size_t n, unsigned char *out)
{
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		const char *tab =
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
		const char *p = strchr(tab, in[i]);
		assert_non_null(p);
		acc = acc << 6 | (uint32_t)(p - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	return o;
}

static json_t *part_json(const char *s, size_t n)
{
	unsigned char buf[2048];
	assert_true(n < sizeof(buf));
	size_t m = b64url_decode(s, n, buf);
	json_t *j = json_loadb((const char *)buf, m, 0, NULL);
	assert_non_null(j);
	return j;
}

static void test_service_account_assertion(void **state)
{
	(void)state;
	char *txt = sa_json(NULL);
	rf_gcs_key k;
	rf_error err = {0};
	assert_int_equal(rf_gcs_key_parse(txt, strlen(txt), "sa.json", &k, &err), 0);
	assert_int_equal(k.kind, RF_GCS_KEY_SERVICE_ACCOUNT);
	assert_string_equal(k.token_uri, RF_GCS_TOKEN_URI);
	char *body = NULL;
	assert_int_equal(rf_gcs_token_request(&k, 1700000000, RF_GCS_SCOPE_READ, &body, &err), 0);
	const char *pre =
	    "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=";
	assert_int_equal(strncmp(body, pre, strlen(pre)), 0);
	const char *jwt = body + strlen(pre), *d1 = strchr(jwt, '.'),
	           *d2 = d1 ? strchr(d1 + 1, '.') : 0;
	assert_non_null(d2);
	json_t *h = part_json(jwt, (size_t)(d1 - jwt)),
	       *c = part_json(d1 + 1, (size_t)(d2 - d1 - 1));
	assert_string_equal(json_string_value(json_object_get(h, "alg")), "RS256");
	assert_string_equal(json_string_value(json_object_get(h, "kid")), "kid123");
	assert_string_equal(json_string_value(json_object_get(c, "iss")),
	                    "loader@proj.iam.gserviceaccount.com");
	assert_string_equal(json_string_value(json_object_get(c, "aud")), RF_GCS_TOKEN_URI);
	assert_string_equal(json_string_value(json_object_get(c, "scope")), RF_GCS_SCOPE_READ);
	assert_int_equal(json_integer_value(json_object_get(c, "iat")), 1700000000);
	assert_int_equal(json_integer_value(json_object_get(c, "exp")), 1700003600);
	json_decref(h);
	json_decref(c);
	/* The signature verifies with the public key over "header.claims". */
	unsigned char sig[512];
	size_t siglen = b64url_decode(d2 + 1, strlen(d2 + 1), sig);
	assert_int_equal(siglen, 256);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
	assert_int_equal(
	    EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)jwt, (size_t)(d2 - jwt)), 1);
	/* ... and not over anything else */
	sig[10] ^= 1;
	assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
	assert_int_not_equal(
	    EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)jwt, (size_t)(d2 - jwt)), 1);
	EVP_MD_CTX_free(ctx);
	free(body);
	rf_gcs_key_wipe(&k);
	free(txt);
}

static void test_authorized_user(void **state)
{
	(void)state;
	const char *txt = "{\"type\": \"authorized_user\", \"client_id\": \"id.apps\","
	                  " \"client_secret\": \"s+e/c=r%t\", \"refresh_token\": \"1//r t\"}";
	rf_gcs_key k;
	rf_error err = {0};
	assert_int_equal(rf_gcs_key_parse(txt, strlen(txt), "adc.json", &k, &err), 0);
	char *body = NULL;
	assert_int_equal(rf_gcs_token_request(&k, 0, RF_GCS_SCOPE_READ, &body, &err), 0);
	assert_string_equal(body, "grant_type=refresh_token&client_id=id.apps&client_secret="
	                          "s%2Be%2Fc%3Dr%25t&refresh_token=1%2F%2Fr%20t");
	free(body);
	rf_gcs_key_wipe(&k);
}

static void key_bad(const char *txt, const char *word)
{
	rf_gcs_key k;
	rf_error err = {0};
	assert_true(rf_gcs_key_parse(txt, strlen(txt), "key.json", &k, &err) < 0);
	if (!strstr(err.msg, word) || !strstr(err.msg, "key.json"))
		fail_msg("'%s' does not say '%s'", err.msg, word);
	assert_null(strstr(err.msg, "SECRET"));
}

static void test_key_refusals(void **state)
{
	(void)state;
	key_bad("not json", "not JSON");
	key_bad("{\"type\": \"external_account\"}", "external_account");
	key_bad("{\"type\": \"authorized_user\", \"client_id\": \"a\", \"client_secret\": "
	        "\"SECRET\"}",
	        "refresh_token");
	key_bad("{\"type\": \"service_account\", \"client_email\": \"a\", \"private_key\": "
	        "\"SECRET\"}",
	        "not a PEM");
	key_bad(
	    "{\"type\": \"authorized_user\", \"client_id\": \"a\", \"client_secret\": "
	    "\"SECRET\", \"refresh_token\": \"SECRET\", \"token_uri\": \"http://evil.example/t\"}",
	    "token_uri");
	key_bad("{\"type\": \"authorized_user\", \"client_id\": \"a\\u0001\", \"client_secret\": "
	        "\"SECRET\", \"refresh_token\": \"SECRET\"}",
	        "control character");
	/* a loopback stand-in is allowed */
	char *txt = sa_json("http://127.0.0.1:8089/token");
	rf_gcs_key k;
	rf_error err = {0};
	assert_int_equal(rf_gcs_key_parse(txt, strlen(txt), "sa.json", &k, &err), 0);
	rf_gcs_key_wipe(&k);
	free(txt);
	/* a PEM that is not a key fails at signing, named */
	const char *bad =
	    "{\"type\": \"service_account\", \"client_email\": \"a\", \"private_key\":"
	    " \"-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\\n\"}";
	assert_int_equal(rf_gcs_key_parse(bad, strlen(bad), "sa.json", &k, &err), 0);
	char *body = NULL;
	assert_true(rf_gcs_token_request(&k, 0, RF_GCS_SCOPE_READ, &body, &err) < 0);
	assert_non_null(strstr(err.msg, "does not parse"));
	assert_null(body);
	rf_gcs_key_wipe(&k);
}

static void tok_bad(const char *txt, const char *word)
{
	char *t = NULL;
	int64_t exp = 0;
	rf_error err = {0};
	assert_true(rf_oauth_token_parse(txt, strlen(txt), "token endpoint http://x/t", 0, &t, &exp,
	                                 &err) < 0);
	assert_null(t);
	if (!strstr(err.msg, word) || !strstr(err.msg, "token endpoint"))
		fail_msg("'%s' does not say '%s'", err.msg, word);
	assert_null(strstr(err.msg, "SECRET"));
}

static void test_token_answers(void **state)
{
	(void)state;
	const char *ok = "{\"access_token\": \"ya29.abc\", \"expires_in\": 3599, \"token_type\": "
	                 "\"Bearer\"}";
	char *t = NULL;
	int64_t exp = 0;
	rf_error err = {0};
	assert_int_equal(rf_oauth_token_parse(ok, strlen(ok), "metadata", 1000, &t, &exp, &err), 0);
	assert_string_equal(t, "ya29.abc");
	assert_int_equal(exp, 1000 + 3599000);
	free(t);
	tok_bad("{\"error\": \"invalid_grant\", \"error_description\": \"SECRET\"}",
	        "invalid_grant");
	tok_bad("{\"error\": \"SECRET with spaces\"}", "(an error)");
	tok_bad("{\"expires_in\": 10}", "access_token");
	tok_bad("{\"access_token\": \"SECRET\", \"expires_in\": 0}", "expires_in");
	tok_bad("{\"access_token\": \"SECRET\", \"expires_in\": 10, \"token_type\": \"MAC\"}",
	        "Bearer");
	tok_bad("{\"access_token\": \"SEC\\r\\nRET\", \"expires_in\": 10}", "header");
	tok_bad("<html>", "not JSON");
	tok_bad("{\"access_token\": \"SECRET\", \"expires_in\": \"12x\"}", "expires_in");
	tok_bad("{\"access_token\": \"SECRET\", \"expires_on\": \"0\"}", "expires_in");
	/* Azure's metadata service: seconds as strings, expires_on as Unix seconds */
	const char *imds = "{\"access_token\": \"eyJ0\", \"expires_in\": \"86399\", \"expires_on\":"
	                   " \"1700086399\", \"resource\": \"https://storage.azure.com/\","
	                   " \"token_type\": \"Bearer\"}";
	assert_int_equal(rf_oauth_token_parse(imds, strlen(imds), "imds", 5, &t, &exp, &err), 0);
	assert_int_equal(exp, 5 + 86399000ll);
	free(t);
	const char *on = "{\"access_token\": \"eyJ0\", \"expires_on\": \"1700000600\"}";
	assert_int_equal(
	    rf_oauth_token_parse(on, strlen(on), "imds", 1700000000000ll, &t, &exp, &err), 0);
	assert_int_equal(exp, 1700000600000ll);
	free(t);
}

/* Entra workload identity: the federated token as a client assertion. */
static void test_assertion_request(void **state)
{
	(void)state;
	char *body = NULL;
	rf_error err = {0};
	assert_int_equal(rf_oauth_assertion_request("c1d2-id", "eyJh.eyJi.sig-_",
	                                            "https://storage.azure.com/.default", &body,
	                                            &err),
	                 0);
	assert_string_equal(body,
	                    "grant_type=client_credentials&client_assertion_type=urn%3Aietf%3A"
	                    "params%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_id=c1d2-id"
	                    "&client_assertion=eyJh.eyJi.sig-_&scope=https%3A%2F%2Fstorage.azure."
	                    "com%2F.default");
	free(body);
	assert_true(rf_oauth_assertion_request("c", "SECRET\nX", "s", &body, &err) < 0);
	assert_null(strstr(err.msg, "SECRET"));
	assert_null(body);
	assert_true(rf_oauth_assertion_request("c", "", "s", &body, &err) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_service_account_assertion),
	    cmocka_unit_test(test_authorized_user),
	    cmocka_unit_test(test_key_refusals),
	    cmocka_unit_test(test_token_answers),
	    cmocka_unit_test(test_assertion_request),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
