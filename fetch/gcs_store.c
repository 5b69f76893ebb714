/* gcs_store.c - the gs:// store (store.h): Cloud Storage's JSON API with
 * OAuth bearer tokens (gcs.h: endpoint, URLs, listing pages; gcs_creds.c:
 * the chain; bearer.c: the signer and the refresh). With HMAC keys given
 * (the s3 access key options, or AWS_ACCESS_KEY_ID with
 * AWS_SECRET_ACCESS_KEY) or s3 no_sign, gs:// stays on the S3 store's XML
 * API path as before: every hook is handed to rf_store_s3 with its own
 * state. RF_GCS_AUTH=oauth or =hmac decides instead. Reads: media download
 * (`?alt=media`) with Range; listing: objects.list pages (prefix,
 * pageToken). Its row comes before S3's in stores.c, so it claims gs://. */
#include "gcs.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gcs_store {
	rf_fetch *fetch;
	rf_http *http;
	bool hmac; /* the S3 store's XML API path */
	void *s3;  /* its state then */
	char *endpoint;
	rf_bearer *bearer;
	rf_gcs_creds creds;
	bool started;
	rf_error start_err; /* the chain could not start: every later URL says so */
} gcs_store;

static bool gcs_claims(const char *url)
{
	return rf_url_scheme_of(url) == RF_URL_GS;
}

/* gs://bucket, gs://bucket/ and gs://bucket/prefix/. */
static bool gcs_is_prefix(const char *url)
{
	if (!gcs_claims(url))
		return false;
	const char *slash = strchr(url + 5, '/');
	return !slash || !slash[1] || url[strlen(url) - 1] == '/';
}

static bool set(const char *opt, const char *env)
{
	const char *v = opt && *opt ? opt : getenv(env);
	return v && *v;
}

/* HMAC keys given, or unsigned asked for: the XML API path. */
static bool wants_hmac(const rf_fetch_options *opt)
{
	const char *a = getenv("RF_GCS_AUTH");
	if (a && !strcmp(a, "oauth"))
		return false;
	if (a && !strcmp(a, "hmac"))
		return true;
	return opt->s3.no_sign || (set(opt->s3.access_key, "AWS_ACCESS_KEY_ID") &&
	                           set(opt->s3.secret_key, "AWS_SECRET_ACCESS_KEY"));
}

static int gcs_init(rf_fetch *f, rf_http *http, void **state, rf_error *err)
{
	gcs_store *st = calloc(1, sizeof(*st));
	if (!st)
		return rf_fail(err, -ENOMEM, "out of memory for the GCS store");
	st->fetch = f;
	st->http = http;
	st->hmac = wants_hmac(rf_fetch_opts(f));
	int rc = st->hmac ? rf_store_s3.init(f, http, &st->s3, err)
	                  : rf_bearer_new(rf_fetch_loop(f), http, "GCS", &st->bearer, err);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void gcs_fini(void *state)
{
	gcs_store *st = state;
	if (st->s3)
		rf_store_s3.fini(st->s3);
	rf_bearer_free(st->bearer);
	rf_gcs_creds_free(&st->creds);
	free(st->endpoint);
	free(st);
}

static int gcs_config(gcs_store *st, rf_error *err)
{
	if (st->endpoint)
		return 0;
	return rf_gcs_endpoint(rf_fetch_opts(st->fetch)->gs.endpoint, &st->endpoint, err);
}

/* Picks the chain and starts the signer on it (once). */
static int gcs_start(gcs_store *st, rf_error *err)
{
	if (!rf_gcs_endpoint_takes_token(st->endpoint)) {
		char shown[200], tried[400];
		rf_url_redact(st->endpoint, shown, sizeof(shown));
		snprintf(tried, sizeof(tried),
		         "nothing: the endpoint %.200s is plain http to a host that is not this "
		         "machine, and a token is never sent in clear",
		         shown);
		return rf_bearer_start(st->bearer, NULL, tried, err);
	}
	int rc = rf_gcs_creds_pick(&st->creds, err);
	if (rc < 0) {
		char msg[RF_ERROR_MSG_BYTES];
		snprintf(msg, sizeof(msg), "%s", err->msg);
		return rf_fail(err, rc, "GCS credentials: %.480s", msg);
	}
	const rf_bearer_source *src = st->creds.src.request ? &st->creds.src : NULL;
	return rf_bearer_start(st->bearer, src, st->creds.tried, err);
}

/* The chain is picked once; requests wait at the signer's gate for its
 * first token. */
static int gcs_credentials(void *state, const char *url, rf_error *err)
{
	gcs_store *st = state;
	if (st->hmac)
		return rf_store_s3.credentials(st->s3, url, err);
	if (st->started) {
		if (st->start_err.code)
			return rf_fail(err, st->start_err.code, "%s", st->start_err.msg);
		return 0;
	}
	RF_TRY(gcs_config(st, err));
	st->started = true;
	int rc = gcs_start(st, err);
	if (rc < 0)
		st->start_err = *err;
	return rc;
}

static int gcs_target(void *state, const char *url, rf_store_target *out, rf_error *err)
{
	gcs_store *st = state;
	if (st->hmac)
		return rf_store_s3.target(st->s3, url, out, err);
	char *bucket = NULL, *name = NULL;
	*out = (rf_store_target){.auth = rf_bearer_auth(st->bearer)};
	RF_TRY(gcs_config(st, err));
	RF_TRY(rf_url_split_s3(url, &bucket, &name, err));
	int rc = 0;
	if (!*name || name[strlen(name) - 1] == '/') {
		char shown[512];
		rf_url_redact(url, shown, sizeof(shown));
		rc = rf_fail(err, -EISDIR, "%s names a prefix, not an object (list it first)",
		             shown);
	}
	if (rc == 0)
		rc = rf_gcs_object_url(st->endpoint, bucket, name, &out->url, err);
	free(bucket);
	free(name);
	return rc;
}

/* --------------------------------------------------------- the lister */

typedef struct gcs_lister {
	bool hmac; /* first: a gcs_hmac_lister when true */
	gcs_store *st;
	char *bucket, *prefix, *url, *body, *token, *base;
	uint32_t max_results, pages;
	rf_list_filter filter;
	rf_url_list *out, all;
	rf_http_xfer *xfer;
	rf_fetch_cb cb;
	void *arg;
	char shown[600];
} gcs_lister;

/* The S3 store's lister, wrapped so list_cancel knows whose it is. */
typedef struct gcs_hmac_lister {
	bool hmac;
	void *inner;
	rf_fetch_cb cb;
	void *arg;
} gcs_hmac_lister;

static void lister_free(gcs_lister *l)
{
	rf_url_list_free(&l->all);
	free(l->bucket);
	free(l->prefix);
	free(l->url);
	free(l->body);
	free(l->token);
	free(l->base);
	free(l);
}

static int by_url(const void *a, const void *b)
{
	return strcmp(((const rf_url_entry *)a)->url, ((const rf_url_entry *)b)->url);
}

/* Keeps what the filter takes, in key order. */
static void finish(gcs_lister *l, int64_t rc, const char *msg)
{
	rf_error err = {0};
	size_t before = l->out->n, skip = strlen(l->base);
	if (rc >= 0 && l->all.n > 1)
		qsort(l->all.v, l->all.n, sizeof(l->all.v[0]), by_url);
	for (size_t i = 0; rc >= 0 && i < l->all.n; i++) {
		const rf_url_entry *e = &l->all.v[i];
		if (!l->filter.take || l->filter.take(e->url + skip, l->filter.ctx))
			rc = rf_url_list_add_version(l->out, e->url, e->size_hint, e->validator,
			                             &err);
	}
	if (rc < 0 && !msg)
		msg = err.msg;
	if (rc >= 0)
		rc = (int64_t)(l->out->n - before);
	l->cb(l->arg, rc, rc < 0 ? msg : NULL);
	lister_free(l);
}

static void on_page(void *arg, int64_t res, const char *msg);

static int next_page(gcs_lister *l, rf_error *err)
{
	free(l->url);
	l->url = NULL;
	RF_TRY(rf_gcs_list_url(l->st->endpoint, l->bucket, l->prefix, l->token, l->max_results,
	                       &l->url, err));
	rf_http_request req = {
	    .kind = RF_HTTP_GET_ALL,
	    .url = l->url,
	    .name = l->shown,
	    .auth = rf_bearer_auth(l->st->bearer),
	    .max_bytes = RF_GCS_LIST_BODY_MAX,
	    .body = &l->body,
	};
	return rf_http_start(l->st->http, &req, on_page, l, &l->xfer, err);
}

static void on_page(void *arg, int64_t res, const char *msg)
{
	gcs_lister *l = arg;
	rf_error err = {0};
	l->xfer = NULL;
	if (res < 0)
		return finish(l, res, msg);
	char *prev = l->token;
	l->token = NULL;
	int rc =
	    rf_gcs_list_parse(l->body, (size_t)res, l->base, l->prefix, &l->all, &l->token, &err);
	free(l->body);
	l->body = NULL;
	if (rc < 0) {
		char m[RF_ERROR_MSG_BYTES];
		snprintf(m, sizeof(m), "listing %.200s, page %u: %.280s", l->shown, l->pages + 1,
		         err.msg);
		rf_fail(&err, rc, "%s", m);
	}
	if (rc == 0 && l->token && prev && !strcmp(prev, l->token))
		rc = rf_fail(&err, -EPROTO, "listing %s: the service repeated a page token",
		             l->shown);
	free(prev);
	if (rc == 0 && l->token && ++l->pages >= RF_GCS_LIST_PAGES_MAX)
		rc = rf_fail(&err, -E2BIG, "listing %s: more than %u pages", l->shown,
		             RF_GCS_LIST_PAGES_MAX);
	if (rc == 0 && l->token)
		rc = next_page(l, &err);
	if (rc < 0 || !l->token)
		finish(l, rc, rc < 0 ? err.msg : NULL);
}

static void on_hmac_listed(void *arg, int64_t res, const char *msg)
{
	gcs_hmac_lister *w = arg;
	rf_fetch_cb cb = w->cb;
	void *cb_arg = w->arg;
	free(w);
	cb(cb_arg, res, msg);
}

static int hmac_list_start(gcs_store *st, const char *url, uint32_t page_keys,
                           const rf_list_filter *filter, rf_url_list *out, rf_fetch_cb cb,
                           void *arg, void **lister, rf_error *err)
{
	gcs_hmac_lister *w = calloc(1, sizeof(*w));
	if (!w)
		return rf_fail(err, -ENOMEM, "out of memory");
	*w = (gcs_hmac_lister){.hmac = true, .cb = cb, .arg = arg};
	int rc = rf_store_s3.list_start(st->s3, url, page_keys, filter, out, on_hmac_listed, w,
	                                &w->inner, err);
	if (rc < 0) {
		free(w);
		return rc;
	}
	*lister = w;
	return 0;
}

static int gcs_list_start(void *state, const char *url, uint32_t page_keys,
                          const rf_list_filter *filter, rf_url_list *out, rf_fetch_cb cb, void *arg,
                          void **lister, rf_error *err)
{
	gcs_store *st = state;
	if (st->hmac)
		return hmac_list_start(st, url, page_keys, filter, out, cb, arg, lister, err);
	RF_TRY(gcs_config(st, err));
	gcs_lister *l = calloc(1, sizeof(*l));
	if (!l)
		return rf_fail(err, -ENOMEM, "out of memory");
	l->st = st;
	int rc = rf_url_split_s3(url, &l->bucket, &l->prefix, err);
	/* RF_GCS_MAXRESULTS: a smaller page (tests page through the stand-in) */
	const char *mr = getenv("RF_GCS_MAXRESULTS");
	long want = mr ? strtol(mr, NULL, 10) : 0;
	if (!page_keys && want > 0 && want <= 1000)
		page_keys = (uint32_t)want;
	l->max_results = page_keys ? RF_MIN(page_keys, 1000u) : 1000u;
	l->out = out;
	l->cb = cb;
	l->arg = arg;
	if (filter)
		l->filter = *filter;
	if (rc == 0 && !(l->base = rf_http_dup_printf("gs://%s/", l->bucket)))
		rc = rf_fail(err, -ENOMEM, "out of memory");
	if (rc == 0) {
		rf_url_redact(url, l->shown, sizeof(l->shown) - 12);
		strcat(l->shown, " (listing)");
		rc = next_page(l, err);
	}
	if (rc < 0) {
		lister_free(l);
		return rc;
	}
	*lister = l;
	return 0;
}

static void gcs_list_cancel(void *lister)
{
	if (!lister)
		return;
	if (*(bool *)lister) {
		gcs_hmac_lister *w = lister;
		rf_store_s3.list_cancel(w->inner);
		free(w);
		return;
	}
	gcs_lister *l = lister;
	if (l->xfer)
		rf_http_cancel(l->st->http, l->xfer);
	lister_free(l);
}

const rf_store rf_store_gcs = {
    .name = "gcs",
    .claims = gcs_claims,
    .is_prefix = gcs_is_prefix,
    .init = gcs_init,
    .fini = gcs_fini,
    .credentials = gcs_credentials,
    .target = gcs_target,
    .list_start = gcs_list_start,
    .list_cancel = gcs_list_cancel,
};
