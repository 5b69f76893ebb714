/* s3.c - s3:// configuration, URLs, ListObjectsV2 parsing and prefix listing
 * (see s3.h), for the S3 store (s3_store.c). Signing itself is curl's
 * (CURLOPT_AWS_SIGV4, set in s3_sign.c); this file prepares what curl 7.88
 * does not: encoded paths, a sorted and encoded query, and the credentials. */
#include "s3.h"
#include "aws_config.h"
#include "store.h"
#include "util.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define XML_DEPTH_MAX 8
#define XML_TEXT_MAX  2048

static bool configured_endpoints(void);

static const char *first_set(const char *a, const char *env)
{
	if (a && *a)
		return a;
	const char *v = getenv(env);
	return v && *v ? v : NULL;
}

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	*oom |= d == NULL;
	return d;
}

int rf_s3_addressing_parse(const char *s, rf_s3_addressing *out)
{
	if (!s || !*s || !strcmp(s, "auto"))
		*out = RF_S3_ADDR_AUTO;
	else if (!strcmp(s, "virtual"))
		*out = RF_S3_ADDR_VIRTUAL;
	else if (!strcmp(s, "path"))
		*out = RF_S3_ADDR_PATH;
	else
		return -EINVAL;
	return 0;
}

static int resolve_keys(const rf_fetch_options *opt, rf_s3_config *out, bool *oom)
{
	const char *key = first_set(opt->s3.access_key, "AWS_ACCESS_KEY_ID");
	const char *secret = first_set(opt->s3.secret_key, "AWS_SECRET_ACCESS_KEY");
	if (key && secret) { /* both or neither: half a key pair is anonymous */
		out->access_key = dup_or_null(key, oom);
		out->secret_key = dup_or_null(secret, oom);
		out->session_token =
		    dup_or_null(first_set(opt->s3.session_token, "AWS_SESSION_TOKEN"), oom);
	}
	return 0;
}

/* Trims trailing '/', checks the scheme, notes an AWS endpoint. */
static int endpoint_check(rf_s3_config *out, const char *what, rf_error *err)
{
	size_t n = strlen(out->endpoint);
	while (n > 0 && out->endpoint[n - 1] == '/')
		out->endpoint[--n] = '\0';
	rf_url_scheme s = rf_url_scheme_of(out->endpoint);
	if (s != RF_URL_HTTP && s != RF_URL_HTTPS) {
		rf_error e2;
		rf_fail(&e2, -EINVAL, "%s endpoint '%.200s' must start with http:// or https://",
		        what, out->endpoint);
		rf_s3_config_free(out);
		return rf_fail(err, e2.code, "%s", e2.msg);
	}
	char region[48];
	out->endpoint_aws = rf_url_aws_s3_region(out->endpoint, region, sizeof(region));
	return 0;
}

static int config_done(rf_s3_config *out, bool oom, const char *what, rf_error *err)
{
	if (oom || !out->endpoint || !out->region) {
		rf_s3_config_free(out);
		return rf_fail(err, -ENOMEM, "out of memory for the %s settings", what);
	}
	return endpoint_check(out, what, err);
}

static int addressing_of(const char *opt, const char *profile, rf_s3_addressing *out, rf_error *err)
{
	if (rf_s3_addressing_parse(opt, out) < 0)
		return rf_fail(err, -EINVAL,
		               "s3_addressing '%.40s': expected auto, virtual or path", opt);
	if (*out == RF_S3_ADDR_AUTO && profile && rf_s3_addressing_parse(profile, out) < 0)
		return rf_fail(err, -EINVAL,
		               "AWS profile: s3 addressing_style '%.40s': expected auto, virtual "
		               "or path",
		               profile);
	return 0;
}

int rf_s3_config_resolve(const rf_fetch_options *opt, rf_s3_config *out, rf_error *err)
{
	bool oom = false;
	memset(out, 0, sizeof(*out));
	rf_s3_profile prof;
	RF_TRY(rf_s3_profile_settings(&prof, err));
	int rc = addressing_of(opt->s3.addressing, prof.addressing_style, &out->addressing, err);
	if (rc < 0) {
		rf_s3_profile_free(&prof);
		return rc;
	}
	const char *region = first_set(opt->s3.region, "AWS_REGION");
	if (!region)
		region = first_set(NULL, "AWS_DEFAULT_REGION");
	if (!region)
		region = prof.region;
	out->region = dup_or_null(region ? region : "us-east-1", &oom);
	const char *ep = opt->s3.endpoint && *opt->s3.endpoint ? opt->s3.endpoint : NULL;
	if (!ep && configured_endpoints())
		ep = first_set(NULL, "AWS_ENDPOINT_URL_S3");
	if (!ep && configured_endpoints())
		ep = first_set(NULL, "AWS_ENDPOINT_URL");
	if (!ep)
		ep = prof.s3_endpoint_url ? prof.s3_endpoint_url : prof.endpoint_url;
	if (ep) {
		out->endpoint = dup_or_null(ep, &oom);
	} else if (out->region &&
	           asprintf(&out->endpoint, "https://s3.%s.amazonaws.com", out->region) < 0) {
		out->endpoint = NULL;
		oom = true;
	}
	rf_s3_profile_free(&prof);
	resolve_keys(opt, out, &oom);
	return config_done(out, oom, "S3", err);
}

int rf_s3_config_resolve_gs(const rf_fetch_options *opt, rf_s3_config *out, rf_error *err)
{
	bool oom = false;
	memset(out, 0, sizeof(*out));
	RF_TRY(addressing_of(opt->s3.addressing, NULL, &out->addressing, err));
	out->region = dup_or_null(RF_GS_REGION, &oom);
	out->endpoint = dup_or_null(opt->gs.endpoint && *opt->gs.endpoint ? opt->gs.endpoint
	                                                                  : RF_GS_ENDPOINT_DEFAULT,
	                            &oom);
	resolve_keys(opt, out, &oom);
	return config_done(out, oom, "GCS", err);
}

bool rf_s3_virtual(const rf_s3_config *c, const char *bucket)
{
	if (!rf_s3_bucket_virtual_ok(bucket) || c->addressing == RF_S3_ADDR_PATH)
		return false;
	return c->addressing == RF_S3_ADDR_VIRTUAL || c->endpoint_aws;
}

/* ENDPOINT with bucket in front of its host (virtual) or after it (path),
 * then rest: malloc'd. */
static int bucket_base(const rf_s3_config *c, const char *bucket, const char *rest, char **url,
                       rf_error *err)
{
	int rc;
	if (rf_s3_virtual(c, bucket)) {
		const char *host = strstr(c->endpoint, "://") + 3;
		rc = asprintf(url, "%.*s%s.%s/%s", (int)(host - c->endpoint), c->endpoint, bucket,
		              host, rest);
	} else {
		rc = asprintf(url, "%s/%s/%s", c->endpoint, bucket, rest);
	}
	if (rc < 0) {
		*url = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

void rf_s3_config_free(rf_s3_config *c)
{
	free(c->endpoint);
	free(c->region);
	rf_secret_free(c->access_key);
	rf_secret_free(c->secret_key);
	rf_secret_free(c->session_token);
	memset(c, 0, sizeof(*c));
}

int rf_s3_object_url(const rf_s3_config *c, const char *bucket, const char *key, char **url,
                     rf_error *err)
{
	char enc[3 * RF_S3_KEY_BYTES_MAX + 1];
	if (strlen(key) > RF_S3_KEY_BYTES_MAX || rf_uri_encode(key, true, enc, sizeof(enc)) < 0)
		return rf_fail(err, -ENAMETOOLONG, "S3 key longer than %u bytes in bucket %s",
		               RF_S3_KEY_BYTES_MAX, bucket);
	return bucket_base(c, bucket, enc, url, err);
}

int rf_s3_list_url(const rf_s3_config *c, const char *bucket, const char *prefix, const char *token,
                   uint32_t max_keys, char **url, rf_error *err)
{
	char p[3 * RF_S3_KEY_BYTES_MAX + 1], t[3 * 4096 + 1] = "";
	if (rf_uri_encode(prefix, false, p, sizeof(p)) < 0 ||
	    (token && rf_uri_encode(token, false, t, sizeof(t)) < 0))
		return rf_fail(err, -ENAMETOOLONG, "S3 prefix or continuation token too long");
	/* Sorted by parameter name: curl 7.88 signs the query as given. */
	char *q = NULL;
	if (asprintf(&q, "?%s%s%slist-type=2&max-keys=%u&prefix=%s",
	             token ? "continuation-token=" : "", t, token ? "&" : "", max_keys, p) < 0)
		return rf_fail(err, -ENOMEM, "out of memory");
	int rc = 0;
	if (rf_s3_virtual(c, bucket))
		rc = bucket_base(c, bucket, q, url, err);
	else if (asprintf(url, "%s/%s%s", c->endpoint, bucket, q) < 0)
		rc = rf_fail(err, -ENOMEM, "out of memory");
	free(q);
	return rc;
}

/* ------------------------------------------------- ListObjectsV2 responses */

typedef struct list_parse {
	XML_Parser p;
	const char *bucket;
	rf_url_list *out;
	rf_error *err;
	int rc;
	int depth;
	char path[XML_DEPTH_MAX][32]; /* element names from the root */
	char text[XML_TEXT_MAX + 1];
	size_t text_len;
	bool text_overflow;
	char key[RF_S3_KEY_BYTES_MAX + 1];
	char etag[RF_HTTP_VALIDATOR_BYTES_MAX + 1]; /* "" = none or unusable */
	bool have_key, have_size, truncated, is_error;
	uint64_t size;
	char *token;
	char code[64], message[160];
} list_parse;

static void stop(list_parse *lp, int code, const char *what)
{
	if (lp->rc == 0)
		lp->rc = rf_fail(lp->err, code, "bad ListObjectsV2 response for bucket %s: %s",
		                 lp->bucket, what);
	XML_StopParser(lp->p, XML_FALSE);
}

static bool at(const list_parse *lp, const char *a, const char *b, const char *c)
{
	const char *want[3] = {a, b, c};
	int n = c ? 3 : b ? 2 : 1;
	if (lp->depth != n)
		return false;
	for (int i = 0; i < n; i++)
		if (strcmp(lp->path[i], want[i]) != 0)
			return false;
	return true;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	list_parse *lp = ud;
	if (lp->rc)
		return;
	if (lp->depth == XML_DEPTH_MAX || strlen(name) >= sizeof(lp->path[0]))
		return stop(lp, -EPROTO, "elements nested too deep or named too long");
	if (lp->depth == 0) {
		lp->is_error = !strcmp(name, "Error");
		if (!lp->is_error && strcmp(name, "ListBucketResult") != 0)
			return stop(lp, -EPROTO, "root element is not ListBucketResult");
	}
	strcpy(lp->path[lp->depth++], name);
	lp->text_len = 0;
	lp->text_overflow = false;
	if (at(lp, "ListBucketResult", "Contents", NULL)) {
		lp->have_key = lp->have_size = false;
		lp->etag[0] = '\0';
	}
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	list_parse *lp = ud;
	if (lp->rc || len <= 0)
		return;
	if ((size_t)len > XML_TEXT_MAX - lp->text_len) {
		lp->text_overflow = true;
		return;
	}
	memcpy(lp->text + lp->text_len, s, (size_t)len);
	lp->text_len += (size_t)len;
}

static void end_contents(list_parse *lp)
{
	if (!lp->have_key || !lp->have_size)
		return stop(lp, -EPROTO, "a Contents entry without Key or Size");
	if (lp->out->n >= RF_S3_LIST_KEYS_MAX)
		return stop(lp, -E2BIG, "more than 1000000 objects under the prefix");
	char url[RF_S3_KEY_BYTES_MAX + 300];
	snprintf(url, sizeof(url), "s3://%s/%s", lp->bucket, lp->key);
	char version[RF_HTTP_VALIDATOR_BYTES_MAX + 8]; /* as the HEAD's: rf_source_validator */
	rf_http_validator_make(lp->etag, false, NULL, version, sizeof(version));
	int rc = rf_url_list_add_version(lp->out, url, lp->size, version, lp->err);
	if (rc < 0) {
		lp->rc = rc;
		XML_StopParser(lp->p, XML_FALSE);
	}
}

static void end_field(list_parse *lp, const char *t)
{
	if (at(lp, "ListBucketResult", "Contents", "Key")) {
		if (lp->text_len == 0 || lp->text_len > RF_S3_KEY_BYTES_MAX ||
		    memchr(t, 0, lp->text_len))
			return stop(lp, -EPROTO, "an empty, too long or NUL-holding Key");
		memcpy(lp->key, t, lp->text_len + 1);
		lp->have_key = true;
	} else if (at(lp, "ListBucketResult", "Contents", "ETag")) {
		/* untrusted as the header is: short printable ASCII, else unknown */
		if (lp->text_overflow || memchr(t, 0, lp->text_len) ||
		    !rf_http_validator_value(t, lp->etag, sizeof(lp->etag)))
			lp->etag[0] = '\0';
	} else if (at(lp, "ListBucketResult", "Contents", "Size")) {
		if (!rf_dec_u64(t, &lp->size))
			return stop(lp, -EPROTO, "a Size that is not a decimal number");
		lp->have_size = true;
	} else if (at(lp, "ListBucketResult", "IsTruncated", NULL)) {
		lp->truncated = !strcmp(t, "true");
	} else if (at(lp, "ListBucketResult", "NextContinuationToken", NULL)) {
		free(lp->token);
		lp->token = NULL; /* freed once more at the end of the parse */
		if (lp->text_len == 0 || lp->text_len > 4096 || !(lp->token = strdup(t)))
			return stop(lp, -EPROTO, "an empty or oversized NextContinuationToken");
	} else if (at(lp, "Error", "Code", NULL)) {
		snprintf(lp->code, sizeof(lp->code), "%.63s", t);
	} else if (at(lp, "Error", "Message", NULL)) {
		snprintf(lp->message, sizeof(lp->message), "%.159s", t);
	}
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	list_parse *lp = ud;
	if (lp->rc)
		return;
	lp->text[lp->text_len] = '\0';
	if (lp->text_overflow && lp->depth >= 2)
		return stop(lp, -EPROTO, "an element's text is too long");
	if (at(lp, "ListBucketResult", "Contents", NULL))
		end_contents(lp);
	else
		end_field(lp, lp->text);
	lp->depth--;
	lp->text_len = 0;
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
	stop(ud, -EPROTO, "a DOCTYPE (refused: no DTDs or entities)");
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
                              int value_len, const XML_Char *base, const XML_Char *sysid,
                              const XML_Char *pubid, const XML_Char *notation)
{
	stop(ud, -EPROTO, "an entity declaration (refused)");
}

static int finish_parse(list_parse *lp, bool *truncated, char **next_token)
{
	if (lp->is_error) {
		int code =
		    !strcmp(lp->code, "AccessDenied") || !strcmp(lp->code, "SignatureDoesNotMatch")
		        ? -EACCES
		    : !strcmp(lp->code, "NoSuchBucket") ? -ENOENT
		                                        : -EIO;
		return rf_fail(lp->err, code, "listing bucket %s failed: S3 error %s: %s",
		               lp->bucket, lp->code[0] ? lp->code : "(no code)", lp->message);
	}
	if (lp->truncated && !lp->token)
		return rf_fail(lp->err, -EPROTO,
		               "bad ListObjectsV2 response for bucket %s: IsTruncated without a "
		               "NextContinuationToken",
		               lp->bucket);
	*truncated = lp->truncated;
	*next_token = lp->truncated ? lp->token : NULL;
	if (!lp->truncated)
		free(lp->token);
	lp->token = NULL;
	return 0;
}

int rf_s3_list_parse(const char *xml, size_t len, const char *bucket, rf_url_list *out,
                     bool *truncated, char **next_token, rf_error *err)
{
	*truncated = false;
	*next_token = NULL;
	if (len > RF_S3_LIST_BODY_MAX || len > INT32_MAX)
		return rf_fail(err, -EPROTO, "ListObjectsV2 response for bucket %s over %u bytes",
		               bucket, RF_S3_LIST_BODY_MAX);
	list_parse *lp = calloc(1, sizeof(*lp));
	if (!lp)
		return rf_fail(err, -ENOMEM, "out of memory");
	size_t n0 = out->n;
	lp->p = XML_ParserCreate("UTF-8");
	lp->bucket = bucket;
	lp->out = out;
	lp->err = err;
	int rc = -ENOMEM;
	if (lp->p) {
		XML_SetUserData(lp->p, lp);
		XML_SetElementHandler(lp->p, on_start, on_end);
		XML_SetCharacterDataHandler(lp->p, on_text);
		XML_SetStartDoctypeDeclHandler(lp->p, on_doctype);
		XML_SetEntityDeclHandler(lp->p, on_entity);
		enum XML_Status st = XML_Parse(lp->p, xml, (int)len, XML_TRUE);
		if (lp->rc)
			rc = lp->rc;
		else if (st != XML_STATUS_OK)
			rc = rf_fail(err, -EPROTO,
			             "bad ListObjectsV2 response for bucket %s: %s at line %lu",
			             bucket, XML_ErrorString(XML_GetErrorCode(lp->p)),
			             (unsigned long)XML_GetCurrentLineNumber(lp->p));
		else if (lp->depth != 0 || !lp->path[0][0])
			rc = rf_fail(err, -EPROTO, "empty ListObjectsV2 response for bucket %s",
			             bucket);
		else
			rc = finish_parse(lp, truncated, next_token);
		XML_ParserFree(lp->p);
	}
	if (rc < 0) /* a refused page adds nothing */
		rf_url_list_truncate(out, n0);
	free(lp->token);
	free(lp);
	return rc;
}

/* ---------------------------------------------------------- prefix listing */

struct rf_s3_lister {
	rf_http *h;
	const rf_http_auth *auth;
	const rf_s3_config *c;
	char *bucket, *prefix, *url, *body, *token;
	uint32_t max_keys, pages;
	bool gs;               /* gs://: entries are named gs://bucket/key */
	rf_list_filter filter; /* take == NULL: every key */
	rf_url_list all;       /* every key of the prefix */
	rf_url_list *out;
	rf_http_xfer *xfer;
	rf_fetch_cb cb;
	void *arg;
	char shown[600];
};

static void lister_free(rf_s3_lister *l)
{
	rf_url_list_free(&l->all);
	free(l->bucket);
	free(l->prefix);
	free(l->url);
	free(l->body);
	free(l->token);
	free(l);
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const rf_url_entry *)a)->url, ((const rf_url_entry *)b)->url);
}

/* Whether the caller wants url, an entry "s3://bucket/key" of l's bucket. */
static bool lister_takes(const rf_s3_lister *l, const char *url)
{
	size_t skip = strlen("s3://") + strlen(l->bucket) + 1, n = strlen(url);
	const char *key = url + (n >= skip ? skip : n);
	return !l->filter.take || l->filter.take(key, l->filter.ctx);
}

static void lister_done(rf_s3_lister *l, int64_t rc, const char *msg)
{
	if (rc >= 0) {
		if (l->all.n > 1)
			qsort(l->all.v, l->all.n, sizeof(*l->all.v), cmp_entry);
		rf_error err = {0};
		size_t before = l->out->n;
		for (size_t i = 0; i < l->all.n && l->gs; i++)
			memcpy(l->all.v[i].url, "gs", 2); /* "s3://b/k" -> "gs://b/k" */
		for (size_t i = 0; i < l->all.n && rc >= 0; i++)
			if (lister_takes(l, l->all.v[i].url))
				rc = rf_url_list_add_version(l->out, l->all.v[i].url,
				                             l->all.v[i].size_hint,
				                             l->all.v[i].validator, &err);
		msg = rc < 0 ? err.msg : NULL;
		if (rc >= 0)
			rc = (int64_t)(l->out->n - before);
	}
	l->cb(l->arg, rc, msg);
	lister_free(l);
}

static int lister_next_page(rf_s3_lister *l, rf_error *err);

static void on_page(void *arg, int64_t res, const char *msg)
{
	rf_s3_lister *l = arg;
	rf_error err = {0};
	l->xfer = NULL;
	if (res < 0)
		return lister_done(l, res, msg);
	bool truncated;
	char *prev = l->token;
	l->token = NULL;
	int rc =
	    rf_s3_list_parse(l->body, (size_t)res, l->bucket, &l->all, &truncated, &l->token, &err);
	free(l->body);
	l->body = NULL;
	if (rc == 0 && truncated && prev && !strcmp(prev, l->token))
		rc = rf_fail(&err, -EPROTO, "listing %s: the server repeated a continuation token",
		             l->shown);
	free(prev);
	if (rc == 0 && truncated && ++l->pages >= RF_S3_LIST_PAGES_MAX)
		rc = rf_fail(&err, -E2BIG, "listing %s: more than %u pages", l->shown,
		             RF_S3_LIST_PAGES_MAX);
	if (rc == 0 && truncated)
		rc = lister_next_page(l, &err);
	if (rc < 0 || !truncated)
		lister_done(l, rc, rc < 0 ? err.msg : NULL);
}

static int lister_next_page(rf_s3_lister *l, rf_error *err)
{
	free(l->url);
	l->url = NULL;
	RF_TRY(rf_s3_list_url(l->c, l->bucket, l->prefix, l->token, l->max_keys, &l->url, err));
	rf_http_request req = {
	    .kind = RF_HTTP_GET_ALL,
	    .url = l->url,
	    .name = l->shown,
	    .auth = l->auth,
	    .scope = l->c->region,
	    .bucket = l->bucket,
	    .max_bytes = RF_S3_LIST_BODY_MAX,
	    .body = &l->body,
	};
	return rf_http_start(l->h, &req, on_page, l, &l->xfer, err);
}

int rf_s3_list_start(rf_http *h, const rf_http_auth *auth, const rf_s3_config *c, const char *url,
                     uint32_t max_keys, const rf_list_filter *filter, rf_url_list *out,
                     rf_fetch_cb cb, void *arg, rf_s3_lister **lister, rf_error *err)
{
	rf_s3_lister *l = calloc(1, sizeof(*l));
	if (!l)
		return rf_fail(err, -ENOMEM, "out of memory");
	int rc = rf_url_split_s3(url, &l->bucket, &l->prefix, err);
	if (rc < 0) {
		lister_free(l);
		return rc;
	}
	l->h = h;
	l->auth = auth;
	l->c = c;
	l->max_keys = max_keys ? RF_MIN(max_keys, 1000u) : 1000u;
	l->out = out;
	l->cb = cb;
	l->arg = arg;
	l->gs = rf_url_scheme_of(url) == RF_URL_GS;
	if (filter)
		l->filter = *filter;
	snprintf(l->shown, sizeof(l->shown), "%s://%s/%s (listing)", l->gs ? "gs" : "s3", l->bucket,
	         l->prefix);
	if ((rc = lister_next_page(l, err)) < 0) {
		lister_free(l);
		return rc;
	}
	if (lister)
		*lister = l;
	return 0;
}

void rf_s3_list_cancel(rf_s3_lister *l)
{
	if (!l)
		return;
	if (l->xfer)
		rf_http_cancel(l->h, l->xfer);
	lister_free(l);
}

/* ------------------------------------------------------------ the profile */

/* The SDKs' switch for ignoring endpoints set in the environment and files. */
static bool configured_endpoints(void)
{
	const char *ignore = getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
	return !(ignore && !strcasecmp(ignore, "true"));
}

static char *profile_dup(const char *v, bool *oom)
{
	return v && *v ? dup_or_null(v, oom) : NULL;
}

/* The profile's services section: "services = NAME" names a [services NAME]
 * section whose "s3 = endpoint_url = ..." is the S3 endpoint. */
static const char *services_s3_endpoint(const rf_aws_shared *sh)
{
	const char *name = rf_aws_profile_get(sh, sh->profile, "services");
	char section[300];
	if (!name || !*name || !sh->config ||
	    (size_t)snprintf(section, sizeof(section), "services %s", name) >= sizeof(section))
		return NULL;
	return rf_aws_ini_get_sub(sh->config, section, "s3", "endpoint_url");
}

int rf_s3_profile_settings(rf_s3_profile *out, rf_error *err)
{
	memset(out, 0, sizeof(*out));
	rf_aws_shared sh;
	RF_TRY(rf_aws_shared_load(NULL, &sh, err));
	bool oom = false;
	bool endpoints = configured_endpoints();
	out->region = profile_dup(rf_aws_profile_get(&sh, sh.profile, "region"), &oom);
	if (endpoints) {
		out->endpoint_url =
		    profile_dup(rf_aws_profile_get(&sh, sh.profile, "endpoint_url"), &oom);
		out->s3_endpoint_url = profile_dup(services_s3_endpoint(&sh), &oom);
	}
	out->addressing_style =
	    profile_dup(rf_aws_profile_get_sub(&sh, sh.profile, "s3", "addressing_style"), &oom);
	rf_aws_shared_free(&sh);
	if (oom) {
		rf_s3_profile_free(out);
		return rf_fail(err, -ENOMEM, "out of memory reading the AWS profile");
	}
	return 0;
}

void rf_s3_profile_free(rf_s3_profile *p)
{
	free(p->region);
	free(p->endpoint_url);
	free(p->s3_endpoint_url);
	free(p->addressing_style);
	memset(p, 0, sizeof(*p));
}
