/* gcs.c - Cloud Storage's JSON API, the pure half (see gcs.h): endpoint,
 * URLs, listing pages. */
#include "gcs.h"
#include "http_parse.h"
#include "oauth.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int rf_gcs_endpoint(const char *option, char **out, rf_error *err)
{
	const char *emu = getenv("STORAGE_EMULATOR_HOST");
	const char *ep = option && *option ? option : emu && *emu ? emu : RF_GCS_ENDPOINT_DEFAULT;
	const char *what = option && *option ? "gs_endpoint"
	                   : emu && *emu     ? "STORAGE_EMULATOR_HOST"
	                                     : "the default endpoint";
	bool scheme = strstr(ep, "://") != NULL;
	if (strlen(ep) > 1024)
		return rf_fail(err, -EINVAL, "%s: longer than 1024 bytes", what);
	*out = rf_http_dup_printf("%s%s", scheme ? "" : "http://", ep);
	if (!*out)
		return rf_fail(err, -ENOMEM, "out of memory");
	size_t n = strlen(*out);
	while (n > 0 && (*out)[n - 1] == '/')
		(*out)[--n] = '\0';
	rf_url_scheme s = rf_url_scheme_of(*out);
	char origin[300];
	if ((s != RF_URL_HTTP && s != RF_URL_HTTPS) || strchr(*out, '?') || strchr(*out, '#') ||
	    rf_url_origin(*out, origin, sizeof(origin)) < 0) {
		char shown[200];
		rf_url_redact(*out, shown, sizeof(shown));
		free(*out);
		*out = NULL;
		return rf_fail(err, -EINVAL,
		               "%s '%s' is not an http(s) endpoint (scheme://host[:port][/path])",
		               what, shown);
	}
	return 0;
}

bool rf_gcs_endpoint_takes_token(const char *endpoint)
{
	return !strchr(endpoint, '@') && rf_oauth_endpoint_ok(endpoint, strlen(endpoint), false);
}

/* Appends s percent-encoded (one path segment or a query value). */
static int enc(char *out, size_t cap, size_t *o, const char *s)
{
	int n = rf_uri_encode(s, false, out + *o, cap - *o);
	if (n < 0)
		return -1;
	*o += (size_t)n;
	return 0;
}

static int lit(char *out, size_t cap, size_t *o, const char *s)
{
	size_t n = strlen(s);
	if (n >= cap - *o)
		return -1;
	memcpy(out + *o, s, n + 1);
	*o += n;
	return 0;
}

static int url_done(char *u, int bad, char **out, rf_error *err)
{
	if (bad) {
		free(u);
		return rf_fail(err, -ENAMETOOLONG, "a Cloud Storage URL longer than %u bytes",
		               RF_URL_BYTES_MAX);
	}
	*out = u;
	return 0;
}

int rf_gcs_object_url(const char *endpoint, const char *bucket, const char *name, char **out,
                      rf_error *err)
{
	size_t cap = RF_URL_BYTES_MAX, o = 0;
	char *u = malloc(cap);
	if (!u)
		return rf_fail(err, -ENOMEM, "out of memory");
	int bad = lit(u, cap, &o, endpoint) || lit(u, cap, &o, "/storage/v1/b/") ||
	          enc(u, cap, &o, bucket) || lit(u, cap, &o, "/o/") || enc(u, cap, &o, name) ||
	          lit(u, cap, &o, "?alt=media");
	return url_done(u, bad, out, err);
}

int rf_gcs_list_url(const char *endpoint, const char *bucket, const char *prefix,
                    const char *page_token, uint32_t max_results, char **out, rf_error *err)
{
	size_t cap = RF_URL_BYTES_MAX, o = 0;
	char *u = malloc(cap), mr[16];
	if (!u)
		return rf_fail(err, -ENOMEM, "out of memory");
	snprintf(mr, sizeof(mr), "%u", max_results);
	int bad = lit(u, cap, &o, endpoint) || lit(u, cap, &o, "/storage/v1/b/") ||
	          enc(u, cap, &o, bucket) || lit(u, cap, &o, "/o?prefix=") ||
	          enc(u, cap, &o, prefix) || lit(u, cap, &o, "&maxResults=") ||
	          lit(u, cap, &o, mr) || lit(u, cap, &o, "&fields=") ||
	          enc(u, cap, &o, "items(name,size,etag),nextPageToken");
	if (!bad && page_token)
		bad = lit(u, cap, &o, "&pageToken=") || enc(u, cap, &o, page_token);
	return url_done(u, bad, out, err);
}

/* ------------------------------------------------------------- listing */

static bool visible_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/* {"error": {"code": N, ...}}: the code only (the message may echo input). */
static int error_page(json_t *e, rf_error *err)
{
	json_t *c = json_is_object(e) ? json_object_get(e, "code") : NULL;
	long long code = json_is_integer(c) ? json_integer_value(c) : 0;
	int rc = code == 401 || code == 403 ? -EACCES : code == 404 ? -ENOENT : -EIO;
	return rf_fail(err, rc, "the service answered the listing with error %lld", code);
}

/* One item into out; 0, or -EPROTO naming what is wrong with item i. */
static int add_item(json_t *it, size_t i, const char *base, const char *prefix, rf_url_list *out,
                    rf_error *err)
{
	json_t *name = json_object_get(it, "name"), *size = json_object_get(it, "size");
	json_t *etag = json_object_get(it, "etag");
	if (!json_is_string(name) || !json_is_string(size))
		return rf_fail(err, -EPROTO, "item %zu has no \"name\" or \"size\" string", i);
	const char *n = json_string_value(name);
	size_t nl = json_string_length(name);
	if (nl == 0 || nl > RF_GCS_NAME_BYTES_MAX || strlen(n) != nl)
		return rf_fail(err, -EPROTO, "item %zu: a name of %zu bytes (1 to %u, no NUL)", i,
		               nl, RF_GCS_NAME_BYTES_MAX);
	for (size_t k = 0; k < nl; k++)
		if ((unsigned char)n[k] < 0x20 || n[k] == 0x7f)
			return rf_fail(err, -EPROTO, "item %zu: a name with a control byte", i);
	if (strncmp(n, prefix, strlen(prefix)) != 0)
		return rf_fail(err, -EPROTO, "item %zu: a name outside the listed prefix", i);
	uint64_t bytes;
	if (json_string_length(size) > 20 || !rf_dec_u64(json_string_value(size), &bytes))
		return rf_fail(err, -EPROTO, "item %zu: \"size\" is not a decimal number", i);
	char v[RF_HTTP_VALIDATOR_BYTES_MAX + 1] = "", version[RF_HTTP_VALIDATOR_BYTES_MAX + 8];
	version[0] = '\0';
	if (json_is_string(etag) && rf_http_validator_value(json_string_value(etag), v, sizeof(v)))
		rf_http_validator_make(v, false, NULL, version, sizeof(version));
	char *u = rf_http_dup_printf("%s%s", base, n);
	if (!u)
		return rf_fail(err, -ENOMEM, "out of memory");
	int rc = rf_url_list_add_version(out, u, bytes, version, err);
	free(u);
	return rc;
}

static int parse_page(json_t *o, const char *base, const char *prefix, rf_url_list *out,
                      char **next, rf_error *err)
{
	if (!json_is_object(o))
		return rf_fail(err, -EPROTO, "the listing is not a JSON object");
	json_t *e = json_object_get(o, "error");
	if (e)
		return error_page(e, err);
	json_t *items = json_object_get(o, "items"), *tok = json_object_get(o, "nextPageToken");
	if (items && !json_is_array(items))
		return rf_fail(err, -EPROTO, "\"items\" is not a list");
	size_t n = items ? json_array_size(items) : 0;
	if (n > RF_GCS_LIST_ITEMS_MAX)
		return rf_fail(err, -EPROTO, "a page of %zu items (at most %u)", n,
		               RF_GCS_LIST_ITEMS_MAX);
	if (tok && (!json_is_string(tok) || json_string_length(tok) == 0 ||
	            json_string_length(tok) > RF_GCS_PAGE_TOKEN_MAX ||
	            !visible_ascii(json_string_value(tok), json_string_length(tok))))
		return rf_fail(err, -EPROTO,
		               "\"nextPageToken\" is not 1 to %u bytes of visible ASCII",
		               RF_GCS_PAGE_TOKEN_MAX);
	for (size_t i = 0; i < n; i++) {
		json_t *it = json_array_get(items, i);
		if (!json_is_object(it))
			return rf_fail(err, -EPROTO, "item %zu is not an object", i);
		RF_TRY(add_item(it, i, base, prefix, out, err));
	}
	if (tok && !(*next = strdup(json_string_value(tok))))
		return rf_fail(err, -ENOMEM, "out of memory");
	return 0;
}

int rf_gcs_list_parse(const char *json, size_t len, const char *base, const char *prefix,
                      rf_url_list *out, char **next, rf_error *err)
{
	*next = NULL;
	if (len > RF_GCS_LIST_BODY_MAX)
		return rf_fail(err, -EFBIG, "a listing page of %zu bytes (at most %u)", len,
		               RF_GCS_LIST_BODY_MAX);
	json_error_t je;
	/* jansson's own nesting limit (JSON_PARSER_MAX_DEPTH) bounds its recursion */
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return rf_fail(err, -EPROTO, "the listing is not JSON (line %d column %d)", je.line,
		               je.column);
	size_t before = out->n;
	int rc = parse_page(o, base, prefix, out, next, err);
	json_decref(o);
	if (rc < 0) {
		rf_url_list_truncate(out, before);
		free(*next);
		*next = NULL;
	}
	return rc;
}
