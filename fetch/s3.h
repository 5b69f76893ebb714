/* s3.h - s3:// (and gs://) objects over HTTP(S): endpoint, region and
 * addressing (from the options, else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
 * AWS_REGION, AWS_DEFAULT_REGION, else the profile's settings), credentials
 * (options, else AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN),
 * virtual-hosted-style or path-style URLs, SigV4 through curl (s3_sign.c),
 * and prefix listing with ListObjectsV2 (paginated, parsed with expat). Credentials live only here
 * and in the signer (s3_sign.c); they never reach a message, a log or a trace. Internal. */
#ifndef RF_S3_H
#define RF_S3_H

#include "http.h"
#include "url.h"

typedef struct rf_list_filter rf_list_filter; /* store.h */

#define RF_S3_LIST_KEYS_MAX  1000000u /* objects one prefix may list */
#define RF_S3_LIST_PAGES_MAX 100000u
#define RF_S3_LIST_BODY_MAX  (16u << 20) /* one ListObjectsV2 response */
#define RF_S3_KEY_BYTES_MAX  1024u

#define RF_GS_ENDPOINT_DEFAULT "https://storage.googleapis.com"
#define RF_GS_REGION           "auto" /* what GCS expects in a SigV4 scope for HMAC keys */

typedef enum rf_s3_addressing {
	RF_S3_ADDR_AUTO = 0, /* virtual-hosted on AWS endpoints, path-style elsewhere */
	RF_S3_ADDR_VIRTUAL,  /* https://BUCKET.HOST/KEY (path-style for a dotted bucket) */
	RF_S3_ADDR_PATH,     /* https://HOST/BUCKET/KEY */
} rf_s3_addressing;

typedef struct rf_s3_config {
	char *endpoint; /* scheme://host[:port], no trailing '/' */
	char *region;
	char *access_key, *secret_key, *session_token; /* NULL = anonymous */
	rf_s3_addressing addressing;                   /* as configured */
	bool endpoint_aws; /* an AWS S3 endpoint (s3.REGION.amazonaws.com) */
} rf_s3_config;

/* What an AWS profile (~/.aws/config, AWS_CONFIG_FILE; AWS_PROFILE, default
 * "default"; read by aws_config.c) says about S3 addressing; each field
 * malloc'd or NULL. Endpoints are left out when
 * AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true, as in the SDKs. */
typedef struct rf_s3_profile {
	char *region;
	char *endpoint_url;    /* the profile's endpoint_url */
	char *s3_endpoint_url; /* its services section's "s3 = endpoint_url = ..." */
	char *addressing_style;
} rf_s3_profile;
int rf_s3_profile_settings(rf_s3_profile *out, rf_error *err);
void rf_s3_profile_free(rf_s3_profile *p);

/* Parses an addressing style: "auto", "virtual" or "path" (NULL or "" = auto). */
int rf_s3_addressing_parse(const char *s, rf_s3_addressing *out);

/* Options first, then the environment, then the profile. Endpoint:
 * s3_endpoint, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's services
 * s3 endpoint_url, its endpoint_url, else https://s3.REGION.amazonaws.com;
 * region: s3_region, AWS_REGION, AWS_DEFAULT_REGION, the profile's region,
 * else us-east-1; addressing: s3_addressing unless auto, else the profile's
 * addressing_style. */
int rf_s3_config_resolve(const rf_fetch_options *opt, rf_s3_config *out, rf_error *err);
/* The same for gs://: endpoint gs_endpoint or https://storage.googleapis.com,
 * region "auto", path-style unless s3_addressing says virtual, and the
 * credentials (HMAC keys) of the S3 chain. */
int rf_s3_config_resolve_gs(const rf_fetch_options *opt, rf_s3_config *out, rf_error *err);
/* Whether bucket is addressed virtual-hosted-style under c. */
bool rf_s3_virtual(const rf_s3_config *c, const char *bucket);
void rf_s3_config_free(rf_s3_config *c); /* wipes the secrets */

/* URL of an object (malloc'd): ENDPOINT/bucket/encoded-key path-style, or
 * SCHEME://bucket.HOST[:PORT]/encoded-key virtual-hosted-style. */
int rf_s3_object_url(const rf_s3_config *c, const char *bucket, const char *key, char **url,
                     rf_error *err);
/* ListObjectsV2 URL, query sorted and encoded as SigV4 needs (malloc'd).
 * token may be NULL. */
int rf_s3_list_url(const rf_s3_config *c, const char *bucket, const char *prefix, const char *token,
                   uint32_t max_keys, char **url, rf_error *err);

/* Parses one ListObjectsV2 response: appends "s3://bucket/key" with its size
 * to out, sets *truncated and *next_token (malloc'd or NULL). Refuses DTDs,
 * entities, deep nesting, oversized keys/values and missing fields. An S3
 * <Error> document is -EACCES/-ENOENT/-EIO with its code in the message. */
int rf_s3_list_parse(const char *xml, size_t len, const char *bucket, rf_url_list *out,
                     bool *truncated, char **next_token, rf_error *err);

/* Lists s3://bucket/prefix/ asynchronously: appends the objects whose keys
 * filter takes (NULL: all), in key order, with their sizes, to out; then
 * cb(arg, count, NULL) or cb(arg, -errno, msg). max_keys = page size (0 =
 * 1000). The S3 store's listing (s3_store.c). */
typedef struct rf_s3_lister rf_s3_lister;
int rf_s3_list_start(rf_http *h, const rf_http_auth *auth, const rf_s3_config *c, const char *url,
                     uint32_t max_keys, const rf_list_filter *filter, rf_url_list *out,
                     rf_fetch_cb cb, void *arg, rf_s3_lister **lister, rf_error *err);
void rf_s3_list_cancel(rf_s3_lister *l);

#endif
