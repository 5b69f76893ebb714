/* s3_store.c - the S3 store (store.h): s3:// objects and, through Cloud
 * Storage's S3-interoperable XML API, gs:// ones. Its settings are resolved
 * on first use (so a bad AWS_ENDPOINT_URL only matters to bucket datasets);
 * both share one signer (s3_sign.c: the store's side of the HTTP client's
 * signer seam) and its credentials (GCS takes HMAC keys through the same
 * chain, creds.c); each request names its own signing region. */
#include "creds.h"
#include "s3.h"
#include "s3_sign.h"
#include "store.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct s3_store {
	rf_fetch *fetch;
	rf_http *http;
	rf_s3_signer *signer; /* what its requests name (rf_http_request.auth) */
	rf_s3_config s3, gs;
	bool s3_ready, gs_ready;
	rf_creds *creds; /* NULL: static keys or anonymous */
	bool creds_started;
} s3_store;

static bool s3_claims(const char *url)
{
	rf_url_scheme s = rf_url_scheme_of(url);
	return s == RF_URL_S3 || s == RF_URL_GS;
}

/* s3://bucket, s3://bucket/ and s3://bucket/prefix/ (and gs://). */
static bool s3_is_prefix(const char *url)
{
	if (!s3_claims(url))
		return false;
	const char *slash = strchr(url + 5, '/');
	return !slash || !slash[1] || url[strlen(url) - 1] == '/';
}

static int s3_init(rf_fetch *f, rf_http *http, void **state, rf_error *err)
{
	s3_store *st = calloc(1, sizeof(*st));
	if (!st)
		return rf_fail(err, -ENOMEM, "out of memory for the S3 store");
	st->fetch = f;
	st->http = http;
	int rc = rf_s3_signer_new(rf_fetch_loop(f), http, &st->signer, err);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void s3_fini(void *state)
{
	s3_store *st = state;
	rf_creds_free(st->creds); /* before the client it fetches with */
	rf_s3_signer_free(st->signer);
	rf_s3_config_free(&st->s3);
	rf_s3_config_free(&st->gs);
	free(st);
}

/* The settings of url's bucket: S3's always (the credential chain uses its
 * region), GCS's too for gs://. */
static int s3_config(s3_store *st, const char *url, const rf_s3_config **c, rf_error *err)
{
	const rf_fetch_options *opt = rf_fetch_opts(st->fetch);
	if (!st->s3_ready) {
		RF_TRY(rf_s3_config_resolve(opt, &st->s3, err));
		st->s3_ready = true;
	}
	*c = &st->s3;
	if (rf_url_scheme_of(url) != RF_URL_GS)
		return 0;
	if (!st->gs_ready) {
		RF_TRY(rf_s3_config_resolve_gs(opt, &st->gs, err));
		st->gs_ready = true;
	}
	*c = &st->gs;
	return 0;
}

/* The credential chain starts once: signed requests wait in the client
 * until it answers. */
static int s3_credentials(void *state, const char *url, rf_error *err)
{
	s3_store *st = state;
	const rf_s3_config *c = NULL;
	if (st->creds_started)
		return 0;
	RF_TRY(s3_config(st, url, &c, err));
	RF_TRY(rf_creds_start(rf_fetch_loop(st->fetch), st->http, st->signer,
	                      rf_fetch_opts(st->fetch), &st->s3, &st->creds, err));
	st->creds_started = true;
	return 0;
}

static int s3_target(void *state, const char *url, rf_store_target *out, rf_error *err)
{
	s3_store *st = state;
	char *bucket = NULL, *key = NULL;
	*out = (rf_store_target){.auth = rf_s3_signer_auth(st->signer)};
	RF_TRY(rf_url_split_s3(url, &bucket, &key, err));
	int rc = 0;
	if (!*key || key[strlen(key) - 1] == '/') {
		char shown[512];
		rf_url_redact(url, shown, sizeof(shown));
		rc = rf_fail(err, -EISDIR, "%s names a prefix, not an object (list it first)",
		             shown);
	}
	const rf_s3_config *c = NULL;
	if (rc == 0)
		rc = s3_config(st, url, &c, err);
	if (rc == 0)
		rc = rf_s3_object_url(c, bucket, key, &out->url, err);
	out->scope = c ? c->region : NULL;
	out->bucket = bucket;
	free(key);
	return rc;
}

static int s3_list_start(void *state, const char *url, uint32_t page_keys,
                         const rf_list_filter *filter, rf_url_list *out, rf_fetch_cb cb, void *arg,
                         void **lister, rf_error *err)
{
	s3_store *st = state;
	const rf_s3_config *c = NULL;
	RF_TRY(s3_config(st, url, &c, err));
	rf_s3_lister *l = NULL;
	RF_TRY(rf_s3_list_start(st->http, rf_s3_signer_auth(st->signer), c, url, page_keys, filter,
	                        out, cb, arg, &l, err));
	*lister = l;
	return 0;
}

static void s3_list_cancel(void *lister)
{
	rf_s3_list_cancel(lister);
}

const rf_store rf_store_s3 = {
    .name = "s3",
    .claims = s3_claims,
    .is_prefix = s3_is_prefix,
    .init = s3_init,
    .fini = s3_fini,
    .credentials = s3_credentials,
    .target = s3_target,
    .list_start = s3_list_start,
    .list_cancel = s3_list_cancel,
};
