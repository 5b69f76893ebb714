/* fuzz_gcs_auth.c - libFuzzer target for Google OAuth's parsers: the first
 * byte picks a credentials file (then the token request it makes, signing
 * included) or a token endpoint's / metadata server's answer. Accepted input
 * must give what the parsers promise: a known key kind with an acceptable
 * token URI, a token without bytes a header cannot carry, a sane expiry. */
#include "fuzz.h"
#include "gcs_auth.h"

#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	rf_error err = {0};
	if (data[0] & 1) {
		char *tok = NULL;
		int64_t exp = 0;
		int rc = rf_oauth_token_parse(buf, len, "fuzz endpoint", 1000, &tok, &exp, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			FUZZ_CHECK(tok == NULL);
			return 0;
		}
		FUZZ_CHECK(tok && *tok && strlen(tok) <= RF_OAUTH_TOKEN_MAX);
		for (const char *p = tok; *p; p++)
			FUZZ_CHECK((unsigned char)*p > 0x20 && *p != 0x7f);
		FUZZ_CHECK(exp > 1000 && exp <= 1000 + 7 * 86400 * 1000ll);
		free(tok);
		return 0;
	}
	rf_gcs_key k;
	int rc = rf_gcs_key_parse(buf, len, "fuzz.json", &k, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		return 0;
	}
	FUZZ_CHECK(k.kind == RF_GCS_KEY_SERVICE_ACCOUNT || k.kind == RF_GCS_KEY_AUTHORIZED_USER);
	FUZZ_CHECK(k.token_uri && (strncasecmp(k.token_uri, "https://", 8) == 0 ||
	                           strncasecmp(k.token_uri, "http://", 7) == 0));
	FUZZ_CHECK(strchr(k.token_uri, '@') == NULL);
	char *body = NULL;
	rc = rf_gcs_token_request(&k, 1700000000, RF_GCS_SCOPE_READ, &body, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(body == NULL);
	} else {
		FUZZ_CHECK(body && strncmp(body, "grant_type=", 11) == 0);
		for (const char *p = body; *p; p++)
			FUZZ_CHECK((unsigned char)*p > 0x20 && *p != 0x7f && *p != '\n');
		free(body);
	}
	rf_gcs_key_wipe(&k);
	return 0;
}
