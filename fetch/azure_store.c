/* azure_store.c - the Azure Blob store (store.h): az://CONTAINER/PATH (the
 * account from the environment) and https://ACCOUNT.blob.core.windows.net/
 * CONTAINER/PATH. Settings and credentials are resolved on first use
 * (azure.c); its signer (the HTTP client's rf_http_auth seam) adds
 * x-ms-version and, with an account key, x-ms-date, x-ms-range and the
 * Shared Key Authorization; a SAS rides in the URL's query (a secret: URLs
 * are shown redacted, and a signed request follows no redirect to another
 * host). Without any of those, Entra ID bearer tokens (azure_entra.c picks
 * workload or managed identity; bearer.c signs, refreshes before expiry and
 * adds x-ms-version too). Listing: List Blobs pages with prefix and marker. */
#include "azure.h"
#include "oauth.h"
#include "store.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct az_store {
	rf_fetch *fetch;
	rf_http *http;
	rf_http_auth auth;
	rf_az_config cfg;
	bool ready;
	rf_bearer *bearer; /* RF_AZ_ENTRA: the token signer */
	rf_az_entra entra;
	bool started;       /* the Entra chain was picked */
	rf_error start_err; /* it could not start: every later URL says so */
} az_store;

/* ---------------------------------------------------------- the signer */

static int az_sign(void *state, void *data, rf_http_xfer *x)
{
	az_store *st = state;
	(void)data;
	rf_http_xfer_path_as_is(x); /* blob names are opaque */
	RF_TRY(rf_http_xfer_add_header(x, "x-ms-version: " RF_AZ_API_VERSION));
	if (st->cfg.auth != RF_AZ_SHARED_KEY)
		return 0;
	char date[64], line[160], range[64] = "", sig[RF_AZ_SIGNATURE_BYTES];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	snprintf(line, sizeof(line), "x-ms-date: %s", date);
	RF_TRY(rf_http_xfer_add_header(x, line));
	uint64_t first, last;
	if (rf_http_xfer_range(x, &first, &last)) {
		snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)first,
		         (unsigned long long)last);
		snprintf(line, sizeof(line), "x-ms-range: %s", range);
		RF_TRY(rf_http_xfer_add_header(x, line));
	}
	char *sts = NULL;
	RF_TRY(rf_az_string_to_sign(rf_http_xfer_method(x), rf_http_xfer_url(x), st->cfg.account,
	                            range[0] ? range : NULL, date, &sts));
	int rc = rf_az_signature(st->cfg.key, sts, sig, sizeof(sig));
	free(sts);
	if (rc < 0)
		return rc;
	char *auth = rf_http_dup_printf("Authorization: SharedKey %s:%s", st->cfg.account, sig);
	rc = auth ? rf_http_xfer_add_header(x, auth) : -ENOMEM;
	rf_secret_free(auth);
	return rc;
}

static void az_explain(void *state, void *data, const rf_http_xfer *x, char *out, size_t cap)
{
	az_store *st = state;
	(void)data;
	long status = rf_http_xfer_status(x);
	out[0] = '\0';
	if (status == 401 || status == 403)
		snprintf(out, cap, " (Azure credentials: %s; tried: %s)", st->cfg.source,
		         st->cfg.tried);
}

static const rf_http_auth_ops az_ops = {
    .name = "Azure",
    .sign = az_sign,
    .explain = az_explain,
};

/* ------------------------------------------------------------ the store */

static int az_init(rf_fetch *f, rf_http *http, void **state, rf_error *err)
{
	az_store *st = calloc(1, sizeof(*st));
	if (!st)
		return rf_fail(err, -ENOMEM, "out of memory for the Azure store");
	st->fetch = f;
	st->http = http;
	st->auth = (rf_http_auth){&az_ops, st};
	int rc = rf_bearer_new(rf_fetch_loop(f), http, "Azure", &st->bearer, err);
	if (rc < 0) {
		free(st);
		return rc;
	}
	rf_bearer_set_header(st->bearer, "x-ms-version: " RF_AZ_API_VERSION);
	*state = st;
	return 0;
}

static void az_fini(void *state)
{
	az_store *st = state;
	rf_bearer_free(st->bearer);
	rf_az_entra_free(&st->entra);
	rf_az_config_free(&st->cfg);
	free(st);
}

static int az_config(az_store *st, const char *url, rf_error *err)
{
	if (st->ready)
		return 0;
	RF_TRY(rf_az_config_resolve(url, &st->cfg, err));
	st->ready = true;
	return 0;
}

/* Picks the Entra source and starts the signer on it (once); requests wait
 * at its gate for the first token. A token never goes in clear to another
 * machine: an endpoint that is plain http to a host not this one reads
 * unsigned, and a refusal says why. */
static int entra_start(az_store *st, rf_error *err)
{
	const char *ep = st->cfg.endpoint;
	if (!rf_oauth_endpoint_ok(ep, strlen(ep), false)) {
		char shown[200], tried[600];
		rf_url_redact(ep, shown, sizeof(shown));
		snprintf(
		    tried, sizeof(tried),
		    "%.160s; no Entra token: the endpoint %.200s is not https (or http to this "
		    "machine), and a token is never sent in clear",
		    st->cfg.tried, shown);
		return rf_bearer_start(st->bearer, NULL, tried, err);
	}
	int rc = rf_az_entra_pick(&st->entra, st->cfg.tried, err);
	if (rc < 0) {
		char msg[RF_ERROR_MSG_BYTES];
		snprintf(msg, sizeof(msg), "%s", err->msg);
		return rf_fail(err, rc, "Azure credentials: %.400s (tried: %.80s)", msg,
		               st->cfg.tried);
	}
	return rf_bearer_start(st->bearer, &st->entra.src, st->entra.tried, err);
}

static int az_credentials(void *state, const char *url, rf_error *err)
{
	az_store *st = state;
	RF_TRY(az_config(st, url, err));
	if (st->cfg.auth != RF_AZ_ENTRA)
		return 0;
	if (st->started)
		return st->start_err.code
		           ? rf_fail(err, st->start_err.code, "%s", st->start_err.msg)
		           : 0;
	st->started = true;
	int rc = entra_start(st, err);
	if (rc < 0)
		st->start_err = *err;
	return rc;
}

static const rf_http_auth *az_auth(az_store *st)
{
	return st->cfg.auth == RF_AZ_ENTRA ? rf_bearer_auth(st->bearer) : &st->auth;
}

static int az_target(void *state, const char *url, rf_store_target *out, rf_error *err)
{
	az_store *st = state;
	char *container = NULL, *blob = NULL;
	RF_TRY(az_config(st, url, err));
	*out = (rf_store_target){.auth = az_auth(st)};
	RF_TRY(rf_az_split(url, &container, &blob, err));
	int rc = 0;
	if (!*blob || blob[strlen(blob) - 1] == '/') {
		char shown[512];
		rf_url_redact(url, shown, sizeof(shown));
		rc = rf_fail(err, -EISDIR, "%s names a prefix, not an object (list it first)",
		             shown);
	}
	if (rc == 0)
		rc = rf_az_object_url(&st->cfg, container, blob, &out->url, err);
	free(container);
	free(blob);
	return rc;
}

/* --------------------------------------------------------- the lister */

typedef struct az_lister {
	az_store *st;
	char *container, *prefix, *url, *body, *marker, *base;
	bool https;
	uint32_t max_results, pages;
	rf_list_filter filter;
	rf_url_list *out;
	rf_http_xfer *xfer;
	rf_fetch_cb cb;
	void *arg;
	char shown[600];
} az_lister;

static void lister_free(az_lister *l)
{
	free(l->container);
	free(l->prefix);
	free(l->url);
	free(l->body);
	free(l->marker);
	free(l->base);
	free(l);
}

static void on_page(void *arg, int64_t res, const char *msg);

static int next_page(az_lister *l, rf_error *err)
{
	free(l->url);
	l->url = NULL;
	RF_TRY(rf_az_list_url(&l->st->cfg, l->container, l->prefix, l->marker, l->max_results,
	                      &l->url, err));
	rf_http_request req = {
	    .kind = RF_HTTP_GET_ALL,
	    .url = l->url,
	    .name = l->shown,
	    .auth = az_auth(l->st),
	    .max_bytes = RF_AZ_LIST_BODY_MAX,
	    .body = &l->body,
	};
	return rf_http_start(l->st->http, &req, on_page, l, &l->xfer, err);
}

/* Keeps what the filter takes (the key is the name after base). */
static void lister_done(az_lister *l, int64_t rc, const char *msg, rf_url_list *all)
{
	rf_error err = {0};
	size_t before = l->out->n, skip = strlen(l->base);
	for (size_t i = 0; rc >= 0 && i < all->n; i++) {
		const char *key = all->v[i].url + skip;
		if (!l->filter.take || l->filter.take(key, l->filter.ctx))
			rc = rf_url_list_add_version(l->out, all->v[i].url, all->v[i].size_hint,
			                             all->v[i].validator, &err);
	}
	if (rc < 0 && !msg)
		msg = err.msg;
	if (rc >= 0)
		rc = (int64_t)(l->out->n - before);
	l->cb(l->arg, rc, rc < 0 ? msg : NULL);
}

typedef struct az_lister_all {
	az_lister l;
	rf_url_list all;
} az_lister_all;

static void finish(az_lister *l, int64_t rc, const char *msg)
{
	az_lister_all *la = (az_lister_all *)l;
	lister_done(l, rc, msg, &la->all);
	rf_url_list_free(&la->all);
	lister_free(l);
}

static void on_page(void *arg, int64_t res, const char *msg)
{
	az_lister *l = arg;
	az_lister_all *la = arg;
	rf_error err = {0};
	l->xfer = NULL;
	if (res < 0)
		return finish(l, res, msg);
	char *prev = l->marker;
	l->marker = NULL;
	int rc =
	    rf_az_list_parse(l->body, (size_t)res, l->base, l->https, &la->all, &l->marker, &err);
	free(l->body);
	l->body = NULL;
	if (rc == 0 && l->marker && prev && !strcmp(prev, l->marker))
		rc = rf_fail(&err, -EPROTO, "listing %s: the service repeated a marker", l->shown);
	free(prev);
	if (rc == 0 && l->marker && ++l->pages >= RF_AZ_LIST_PAGES_MAX)
		rc = rf_fail(&err, -E2BIG, "listing %s: more than %u pages", l->shown,
		             RF_AZ_LIST_PAGES_MAX);
	if (rc == 0 && l->marker)
		rc = next_page(l, &err);
	if (rc < 0 || !l->marker)
		finish(l, rc, rc < 0 ? err.msg : NULL);
}

static int az_list_start(void *state, const char *url, uint32_t page_keys,
                         const rf_list_filter *filter, rf_url_list *out, rf_fetch_cb cb, void *arg,
                         void **lister, rf_error *err)
{
	az_store *st = state;
	RF_TRY(az_config(st, url, err));
	az_lister_all *la = calloc(1, sizeof(*la));
	if (!la)
		return rf_fail(err, -ENOMEM, "out of memory");
	az_lister *l = &la->l;
	int rc = rf_az_split(url, &l->container, &l->prefix, err);
	l->st = st;
	l->https = strncmp(url, "az://", 5) != 0;
	/* RF_AZ_MAXRESULTS: a smaller page (tests page through Azurite with it) */
	const char *mr = getenv("RF_AZ_MAXRESULTS");
	long want = mr ? strtol(mr, NULL, 10) : 0;
	if (!page_keys && want > 0 && want <= 5000)
		page_keys = (uint32_t)want;
	l->max_results = page_keys ? RF_MIN(page_keys, 5000u) : 5000u;
	l->out = out;
	l->cb = cb;
	l->arg = arg;
	if (filter)
		l->filter = *filter;
	/* what each listed name is appended to: the URL up to the container's '/' */
	size_t base_len = 0;
	if (rc == 0) {
		const char *c = strstr(url, "://") + 3;
		if (l->https)
			c = strchr(c, '/') + 1;
		base_len = (size_t)(c - url) + strcspn(c, "/");
		if (!(l->base = malloc(base_len + 2)))
			rc = rf_fail(err, -ENOMEM, "out of memory");
	}
	if (rc == 0) {
		memcpy(l->base, url, base_len);
		memcpy(l->base + base_len, "/", 2);
		rf_url_redact(url, l->shown, sizeof(l->shown) - 12);
		strcat(l->shown, " (listing)");
		rc = next_page(l, err);
	}
	if (rc < 0) {
		rf_url_list_free(&la->all);
		lister_free(l);
		return rc;
	}
	*lister = l;
	return 0;
}

static void az_list_cancel(void *lister)
{
	az_lister *l = lister;
	if (!l)
		return;
	if (l->xfer)
		rf_http_cancel(l->st->http, l->xfer);
	rf_url_list_free(&((az_lister_all *)l)->all);
	lister_free(l);
}

const rf_store rf_store_azure = {
    .name = "azure",
    .claims = rf_az_claims,
    .is_prefix = rf_az_is_prefix,
    .init = az_init,
    .fini = az_fini,
    .credentials = az_credentials,
    .target = az_target,
    .list_start = az_list_start,
    .list_cancel = az_list_cancel,
};
