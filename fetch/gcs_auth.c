/* gcs_auth.c - Google OAuth without I/O (see gcs_auth.h): credential files
 * through jansson, the JWT bearer assertion signed RS256 by libcrypto
 * (EVP_DigestSign, SHA-256, PKCS#1 v1.5), the refresh_token grant, and the
 * token answers. */
#include "gcs_auth.h"
#include "oauth.h"
#include "url.h"
#include "util.h"

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void rf_gcs_key_wipe(rf_gcs_key *k)
{
	free(k->token_uri);
	free(k->client_email);
	free(k->key_id);
	rf_secret_free(k->private_key);
	free(k->client_id);
	rf_secret_free(k->client_secret);
	rf_secret_free(k->refresh_token);
	memset(k, 0, sizeof(*k));
}

long rf_base64url(const unsigned char *in, size_t n, char *out, size_t cap)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t need = n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
	if (need + 1 > cap)
		return -1;
	size_t o = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = tab[v >> 6 & 63];
		out[o++] = tab[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = tab[v >> 6 & 63];
	}
	out[o] = '\0';
	return (long)o;
}

/* A string field: required (or optional), bounded, no control characters
 * unless allow_nl (a PEM). */
static int get_str(json_t *o, const char *key, bool required, bool allow_nl, const char *name,
                   char **out, rf_error *err)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (!v) {
		if (required)
			return rf_fail(err, -EINVAL, "credentials %s: no \"%s\"", name, key);
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) == 0)
		return rf_fail(err, -EINVAL, "credentials %s: \"%s\" is not a non-empty string",
		               name, key);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0 || (c < 0x20 && !(allow_nl && (c == '\n' || c == '\r'))) || c == 0x7f)
			return rf_fail(
			    err, -EINVAL,
			    "credentials %s: \"%s\" holds a control character at byte %zu", name,
			    key, i);
	}
	*out = strdup(s);
	return *out ? 0 : rf_fail(err, -ENOMEM, "credentials %s: no memory", name);
}

int rf_gcs_key_parse(const char *json, size_t len, const char *name, rf_gcs_key *out, rf_error *err)
{
	memset(out, 0, sizeof(*out));
	if (len > RF_GCS_KEY_FILE_MAX)
		return rf_fail(err, -EFBIG, "credentials %s: %zu bytes, more than %u", name, len,
		               RF_GCS_KEY_FILE_MAX);
	json_error_t je;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return rf_fail(err, -EINVAL, "credentials %s: not JSON (line %d column %d)", name,
		               je.line, je.column);
	int rc = 0;
	json_t *type = json_object_get(o, "type");
	const char *t = json_is_string(type) ? json_string_value(type) : NULL;
	if (!json_is_object(o) || !t) {
		rc = rf_fail(err, -EINVAL, "credentials %s: no \"type\"", name);
	} else if (strcmp(t, "service_account") == 0) {
		out->kind = RF_GCS_KEY_SERVICE_ACCOUNT;
		if ((rc = get_str(o, "client_email", true, false, name, &out->client_email, err)) ||
		    (rc = get_str(o, "private_key", true, true, name, &out->private_key, err)) ||
		    (rc = get_str(o, "private_key_id", false, false, name, &out->key_id, err)) ||
		    (rc = get_str(o, "token_uri", false, false, name, &out->token_uri, err)))
			goto out;
		if (!strstr(out->private_key, "-----BEGIN PRIVATE KEY-----") &&
		    !strstr(out->private_key, "-----BEGIN RSA PRIVATE KEY-----"))
			rc = rf_fail(err, -EINVAL,
			             "credentials %s: \"private_key\" is not a PEM private key",
			             name);
	} else if (strcmp(t, "authorized_user") == 0) {
		out->kind = RF_GCS_KEY_AUTHORIZED_USER;
		if ((rc = get_str(o, "client_id", true, false, name, &out->client_id, err)) ||
		    (rc = get_str(o, "client_secret", true, false, name, &out->client_secret,
		                  err)) ||
		    (rc = get_str(o, "refresh_token", true, false, name, &out->refresh_token,
		                  err)) ||
		    (rc = get_str(o, "token_uri", false, false, name, &out->token_uri, err)))
			goto out;
	} else {
		rc = rf_fail(err, -ENOTSUP,
		             "credentials %s: type \"%.40s\" (service_account and authorized_user "
		             "are read)",
		             name, t);
	}
	if (rc == 0 && !out->token_uri && !(out->token_uri = strdup(RF_GCS_TOKEN_URI)))
		rc = rf_fail(err, -ENOMEM, "credentials %s: no memory", name);
	if (rc == 0 && !rf_oauth_endpoint_ok(out->token_uri, strlen(out->token_uri), true))
		rc = rf_fail(err, -EINVAL,
		             "credentials %s: \"token_uri\" must be https:// (or http:// to a "
		             "loopback address), without userinfo",
		             name);
out:
	json_decref(o);
	if (rc < 0)
		rf_gcs_key_wipe(out);
	return rc;
}

/* base64url(JSON of o), malloc'd. */
static char *b64_json(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		return NULL;
	size_t n = strlen(s), cap = n / 3 * 4 + 8;
	char *b = malloc(cap);
	if (b && rf_base64url((const unsigned char *)s, n, b, cap) < 0) {
		free(b);
		b = NULL;
	}
	free(s);
	return b;
}

/* RS256 over msg with the PEM key: base64url of the signature, malloc'd. */
static int rs256(const char *pem, const char *msg, char **out, rf_error *err)
{
	*out = NULL;
	int rc = 0;
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char sig[1024];
	size_t siglen = sizeof(sig);
	if (!key) {
		rc = rf_fail(err, -EINVAL, "service account key: the private key does not parse");
		goto out;
	}
	if (EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA || EVP_PKEY_get_bits(key) < 2048 ||
	    EVP_PKEY_get_size(key) > (int)sizeof(sig)) {
		rc = rf_fail(err, -EINVAL,
		             "service account key: RS256 needs an RSA key of 2048 to 8192 bits");
		goto out;
	}
	if (!ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)msg, strlen(msg)) != 1) {
		rc = rf_fail(err, -EIO, "service account key: signing failed");
		goto out;
	}
	size_t cap = siglen / 3 * 4 + 8;
	*out = malloc(cap);
	if (!*out || rf_base64url(sig, siglen, *out, cap) < 0) {
		free(*out);
		*out = NULL;
		rc = rf_fail(err, -ENOMEM, "service account key: no memory");
	}
out:
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	BIO_free(bio);
	return rc;
}

static int sa_request(const rf_gcs_key *k, int64_t now_s, const char *scope, char **body,
                      rf_error *err)
{
	json_t *h = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	json_t *c = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", k->client_email, "scope", scope,
	                      "aud", k->token_uri, "iat", (json_int_t)now_s, "exp",
	                      (json_int_t)(now_s + RF_GCS_ASSERTION_SECS));
	if (h && k->key_id)
		json_object_set_new(h, "kid", json_string(k->key_id));
	char *hb = h ? b64_json(h) : NULL, *cb = c ? b64_json(c) : NULL, *sig = NULL, *msg = NULL;
	int rc = 0;
	json_decref(h);
	json_decref(c);
	if (!hb || !cb || !(msg = malloc(strlen(hb) + strlen(cb) + 2))) {
		rc = rf_fail(err, -ENOMEM, "service account key: no memory");
		goto out;
	}
	sprintf(msg, "%s.%s", hb, cb);
	if ((rc = rs256(k->private_key, msg, &sig, err)) < 0)
		goto out;
	static const char pre[] = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
	                          "&assertion=";
	*body = malloc(sizeof(pre) + strlen(msg) + 1 + strlen(sig) + 1);
	if (!*body) {
		rc = rf_fail(err, -ENOMEM, "service account key: no memory");
		goto out;
	}
	sprintf(*body, "%s%s.%s", pre, msg, sig); /* base64url needs no escaping */
out:
	free(hb);
	free(cb);
	free(msg);
	free(sig);
	return rc;
}

int rf_gcs_token_request(const rf_gcs_key *k, int64_t now_s, const char *scope, char **body,
                         rf_error *err)
{
	*body = NULL;
	if (k->kind == RF_GCS_KEY_SERVICE_ACCOUNT)
		return sa_request(k, now_s, scope, body, err);
	if (k->kind != RF_GCS_KEY_AUTHORIZED_USER)
		return rf_fail(err, -EINVAL, "credentials: no key");
	size_t cap =
	    64 + 3 * (strlen(k->client_id) + strlen(k->client_secret) + strlen(k->refresh_token)) +
	    64;
	char *b = malloc(cap);
	size_t o = 0;
	if (!b)
		return rf_fail(err, -ENOMEM, "credentials: no memory");
	if (rf_oauth_form_add(b, cap, &o, "grant_type", "refresh_token") ||
	    rf_oauth_form_add(b, cap, &o, "client_id", k->client_id) ||
	    rf_oauth_form_add(b, cap, &o, "client_secret", k->client_secret) ||
	    rf_oauth_form_add(b, cap, &o, "refresh_token", k->refresh_token)) {
		explicit_bzero(b, cap);
		free(b);
		return rf_fail(err, -ENAMETOOLONG, "credentials: the refresh request is too long");
	}
	*body = b;
	return 0;
}
