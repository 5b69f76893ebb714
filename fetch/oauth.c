/* oauth.c - token answers and the client-assertion request (see oauth.h). */
#include "oauth.h"
#include "url.h"
#include "util.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool rf_oauth_endpoint_ok(const char *u, size_t n, bool allow_query)
{
	static const char *const loop[] = {"http://127.0.0.1:", "http://127.0.0.1/",
	                                   "http://localhost:", "http://localhost/",
	                                   "http://[::1]:",     "http://[::1]/"};
	bool ok = n > 8 && n < 4096 && strncasecmp(u, "https://", 8) == 0;
	for (size_t i = 0; !ok && i < sizeof(loop) / sizeof(loop[0]); i++)
		ok = n >= strlen(loop[i]) && strncasecmp(u, loop[i], strlen(loop[i])) == 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = (unsigned char)u[i] > 0x20 && u[i] != 0x7f && u[i] != '#' && u[i] != '@' &&
		     (allow_query || u[i] != '?');
	return ok;
}

int rf_oauth_form_add(char *out, size_t cap, size_t *o, const char *name, const char *value)
{
	int n = snprintf(out + *o, cap - *o, "%s%s=", *o ? "&" : "", name);
	if (n < 0 || (size_t)n >= cap - *o)
		return -1;
	*o += (size_t)n;
	int e = rf_uri_encode(value, false, out + *o, cap - *o);
	if (e < 0)
		return -1;
	*o += (size_t)e;
	return 0;
}

int rf_oauth_assertion_request(const char *client_id, const char *assertion, const char *scope,
                               char **body, rf_error *err)
{
	*body = NULL;
	size_t al = strlen(assertion);
	if (al == 0 || al > RF_OAUTH_TOKEN_MAX)
		return rf_fail(err, -EINVAL, "the federated token is empty or over %u bytes",
		               RF_OAUTH_TOKEN_MAX);
	for (size_t i = 0; i < al; i++)
		if ((unsigned char)assertion[i] <= 0x20 || (unsigned char)assertion[i] >= 0x7f)
			return rf_fail(err, -EINVAL,
			               "the federated token holds a byte that is not "
			               "visible ASCII (at %zu)",
			               i);
	size_t cap = 160 + 3 * (strlen(client_id) + al + strlen(scope));
	char *b = malloc(cap);
	size_t o = 0;
	if (!b)
		return rf_fail(err, -ENOMEM, "no memory for a token request");
	if (rf_oauth_form_add(b, cap, &o, "grant_type", "client_credentials") ||
	    rf_oauth_form_add(b, cap, &o, "client_assertion_type",
	                      "urn:ietf:params:oauth:client-assertion-type:jwt-bearer") ||
	    rf_oauth_form_add(b, cap, &o, "client_id", client_id) ||
	    rf_oauth_form_add(b, cap, &o, "client_assertion", assertion) ||
	    rf_oauth_form_add(b, cap, &o, "scope", scope)) {
		explicit_bzero(b, cap);
		free(b);
		return rf_fail(err, -ENAMETOOLONG, "a token request too long to build");
	}
	*body = b;
	return 0;
}

/* Seconds as a JSON integer or a string of 1 to 12 decimal digits. */
static bool secs_of(const json_t *v, int64_t *out)
{
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return true;
	}
	if (!json_is_string(v))
		return false;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n > 12)
		return false;
	int64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (s[i] - '0');
	}
	*out = x;
	return true;
}

int rf_oauth_token_parse(const char *json, size_t len, const char *what, int64_t now_ms,
                         char **token, int64_t *expires_ms, rf_error *err)
{
	*token = NULL;
	if (len > RF_OAUTH_BODY_MAX)
		return rf_fail(err, -EFBIG, "%s: an answer of %zu bytes, more than %u", what, len,
		               RF_OAUTH_BODY_MAX);
	json_error_t je;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return rf_fail(err, -EPROTO, "%s: the answer is not JSON (line %d column %d)", what,
		               je.line, je.column);
	int rc = 0;
	json_t *tok = json_object_get(o, "access_token"), *type = json_object_get(o, "token_type");
	json_t *e = json_object_get(o, "error");
	int64_t in = 0, on = 0;
	bool has_in = secs_of(json_object_get(o, "expires_in"), &in);
	bool has_on = !has_in && secs_of(json_object_get(o, "expires_on"), &on);
	if (json_is_string(e)) {
		/* OAuth's error codes are fixed words; the description may echo input */
		const char *code = json_string_value(e);
		bool word = strlen(code) <= 40;
		for (const char *p = code; word && *p; p++)
			word = (*p >= 'a' && *p <= 'z') || *p == '_';
		rc = rf_fail(err, -EACCES, "%s: refused: %s", what, word ? code : "(an error)");
		goto out;
	}
	if (!json_is_string(tok) || json_string_length(tok) == 0 ||
	    json_string_length(tok) > RF_OAUTH_TOKEN_MAX) {
		rc = rf_fail(err, -EPROTO, "%s: no \"access_token\" of 1 to %u bytes", what,
		             RF_OAUTH_TOKEN_MAX);
		goto out;
	}
	if (type && (!json_is_string(type) || strcasecmp(json_string_value(type), "Bearer") != 0)) {
		rc = rf_fail(err, -EPROTO, "%s: \"token_type\" is not Bearer", what);
		goto out;
	}
	if (has_on)
		in = on - now_ms / 1000;
	if ((!has_in && !has_on) || in <= 0 || in > RF_OAUTH_LIFE_MAX_S) {
		rc = rf_fail(err, -EPROTO,
		             "%s: no \"expires_in\" (or \"expires_on\") giving 1 s to a "
		             "week of life",
		             what);
		goto out;
	}
	const char *t = json_string_value(tok);
	for (size_t i = 0; i < json_string_length(tok); i++)
		if ((unsigned char)t[i] <= 0x20 || t[i] == 0x7f) {
			rc = rf_fail(err, -EPROTO,
			             "%s: \"access_token\" holds a byte a header cannot "
			             "carry",
			             what);
			goto out;
		}
	if (!(*token = strdup(t))) {
		rc = rf_fail(err, -ENOMEM, "%s: no memory", what);
		goto out;
	}
	*expires_ms = now_ms + in * 1000;
out:
	json_decref(o);
	return rc;
}
