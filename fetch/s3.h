/* s3.h - s3:// objects over HTTP(S): endpoint, region and credentials (from
 * the options, else AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), path-style URLs, SigV4 through
 * curl (see http.c), and prefix listing with ListObjectsV2 (paginated,
 * parsed with expat). Credentials live only here and in the http client;
 * they never reach a message, a log or a trace. Internal. */
#ifndef RF_S3_H
#define RF_S3_H

#include "http.h"
#include "url.h"

#define RF_S3_LIST_KEYS_MAX  1000000u /* objects one prefix may list */
#define RF_S3_LIST_PAGES_MAX 100000u
#define RF_S3_LIST_BODY_MAX  (16u << 20) /* one ListObjectsV2 response */
#define RF_S3_KEY_BYTES_MAX  1024u

typedef struct rf_s3_config {
	char *endpoint; /* scheme://host[:port], no trailing '/' */
	char *region;
	char *access_key, *secret_key, *session_token; /* NULL = anonymous */
} rf_s3_config;

/* Options first, then the environment; region defaults to us-east-1 and the
 * endpoint to https://s3.REGION.amazonaws.com. */
int rf_s3_config_resolve(const rf_fetch_options *opt, rf_s3_config *out, rf_error *err);
void rf_s3_config_free(rf_s3_config *c); /* wipes the secrets */
/* Applies the credentials to the http client (anonymous when none). */
int rf_s3_config_apply(const rf_s3_config *c, rf_http *h, rf_error *err);

/* Path-style URL of an object: ENDPOINT/bucket/encoded-key (malloc'd). */
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

/* Lists s3://bucket/prefix/ asynchronously: appends its ".rfs" objects, in
 * key order, with their sizes, to out; then cb(arg, count, NULL) or
 * cb(arg, -errno, msg). max_keys = page size (0 = 1000). */
typedef struct rf_s3_lister rf_s3_lister;
int rf_s3_list_start(rf_http *h, const rf_s3_config *c, const char *url, uint32_t max_keys,
                     rf_url_list *out, rf_fetch_cb cb, void *arg, rf_s3_lister **lister,
                     rf_error *err);
void rf_s3_list_cancel(rf_s3_lister *l);

#endif
