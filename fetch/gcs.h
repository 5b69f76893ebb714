/* gcs.h - Google Cloud Storage through its JSON API with OAuth bearer
 * tokens (the pure half of the gs:// store, gcs_store.c; issue 29 item 2):
 * which endpoint, the media-download and listing URLs, a listing page's
 * JSON (jansson; bounded), and the credential chain's order (gcs_creds.c).
 * gs:// with HMAC keys stays the S3 store's (s3_store.c). Internal. */
#ifndef RF_GCS_H
#define RF_GCS_H

#include "bearer.h"
#include "gcs_auth.h"
#include "url.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>

#define RF_GCS_ENDPOINT_DEFAULT "https://storage.googleapis.com"
#define RF_GCS_LIST_BODY_MAX    (8u << 20) /* one listing page */
#define RF_GCS_LIST_ITEMS_MAX   5000u      /* entries of one page (the service gives <= 1000) */
#define RF_GCS_LIST_PAGES_MAX   10000u
#define RF_GCS_PAGE_TOKEN_MAX   4096u
#define RF_GCS_NAME_BYTES_MAX   1024u /* an object name, as the service limits it */
#define RF_GCS_METADATA_HOST    "169.254.169.254"
#define RF_GCS_METADATA_PATH    "/computeMetadata/v1/instance/service-accounts/default/token"

/* The JSON API's endpoint, no trailing '/' (malloc'd): gs_endpoint (the
 * option), else STORAGE_EMULATOR_HOST (http:// added when it names no
 * scheme, as Google's libraries do), else storage.googleapis.com. */
int rf_gcs_endpoint(const char *option, char **out, rf_error *err);

/* Whether a bearer token may go to endpoint: https, or http to a loopback
 * address (a local emulator or stand-in). An http endpoint elsewhere (an
 * emulator in another container) is read unsigned, as the SDKs read
 * emulators: a token is never sent in clear over a network. */
bool rf_gcs_endpoint_takes_token(const char *endpoint);

/* {endpoint}/storage/v1/b/BUCKET/o/NAME?alt=media, bucket and name
 * percent-encoded as one path segment each ('/' too). */
int rf_gcs_object_url(const char *endpoint, const char *bucket, const char *name, char **out,
                      rf_error *err);
/* {endpoint}/storage/v1/b/BUCKET/o?prefix=P&maxResults=N[&pageToken=T] and
 * the fields a listing uses. */
int rf_gcs_list_url(const char *endpoint, const char *bucket, const char *prefix,
                    const char *page_token, uint32_t max_results, char **out, rf_error *err);

/* One listing page (JSON: items[] of {name, size, etag}, nextPageToken):
 * appends base + name for each object whose name starts with prefix, with
 * its size and its etag as the version ("etag:V"); *next is the next page's
 * token (NULL at the end). A page that breaks a rule (not JSON, an item
 * without a name or decimal size, a name outside the prefix, too long or
 * with a control byte, a token that is not visible ASCII, too many items)
 * appends nothing and says why, naming the item. An {"error": ...} page is
 * -EACCES/-ENOENT/-EIO naming its numeric code only. */
int rf_gcs_list_parse(const char *json, size_t len, const char *base, const char *prefix,
                      rf_url_list *out, char **next, rf_error *err);

/* ---- the credential chain (gcs_creds.c), in Google's libraries' order:
 * GOOGLE_APPLICATION_CREDENTIALS (a service account key or an
 * authorized_user file; set but unreadable is an error), the gcloud ADC
 * file ($CLOUDSDK_CONFIG or ~/.config/gcloud, then
 * application_default_credentials.json; absent: next), the metadata server
 * (GCE_METADATA_HOST or 169.254.169.254; the last resort: no answer means
 * unsigned requests, and a refusal says what was tried). Files are read
 * once, at the first request of a gs:// dataset. */
typedef struct rf_gcs_creds {
	rf_gcs_key key; /* from a file (its secrets wiped on free) */
	char *metadata_url;
	rf_bearer_source src; /* src.request NULL: nothing found */
	char tried[600];
} rf_gcs_creds;

int rf_gcs_creds_pick(rf_gcs_creds *c, rf_error *err);
void rf_gcs_creds_free(rf_gcs_creds *c);

#endif
