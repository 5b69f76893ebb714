/* url.h - the URL forms a dataset is named by, and their expansion into a
 * list of shard objects: plain paths, file://, http(s)://, s3://bucket/key,
 * s3://bucket/prefix/ (listed), and brace ranges as WebDataset users write
 * them ("shard-{000000..000063}.rfs", "{a,b}"). Pure string work here; the
 * listing of an S3 prefix is in s3.c. Internal. */
#ifndef RF_URL_H
#define RF_URL_H

#include "ringfeed.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RF_BRACE_EXPANSION_MAX 1000000u /* names one pattern may expand to */
#define RF_URL_BYTES_MAX       8192u    /* longest URL or key accepted */
#define RF_SIZE_UNKNOWN        UINT64_MAX

typedef enum rf_url_scheme {
	RF_URL_PATH = 0, /* plain local path (no scheme) */
	RF_URL_FILE,     /* file:// */
	RF_URL_HTTP,
	RF_URL_HTTPS,
	RF_URL_S3,
	RF_URL_GS, /* gs://bucket/key: Cloud Storage through its S3-interoperable XML API */
	RF_URL_AZ, /* az://container/blob: Azure Blob Storage */
	RF_URL_UNKNOWN,
} rf_url_scheme;

rf_url_scheme rf_url_scheme_of(const char *url);
const char *rf_url_scheme_name(rf_url_scheme s);

/* One shard object: its URL, its size when known (RF_SIZE_UNKNOWN) and,
 * from a store listing, its version as rf_source_validator would give it
 * once open ("etag:V"; NULL = unknown), so a cache keyed by it is asked
 * before any read of the object. */
typedef struct rf_url_entry {
	char *url;
	uint64_t size_hint;
	char *validator;
} rf_url_entry;

typedef struct rf_url_list {
	rf_url_entry *v;
	size_t n, cap;
} rf_url_list;

int rf_url_list_add(rf_url_list *l, const char *url, uint64_t size_hint, rf_error *err);
/* The same with a version (copied; NULL or "" = unknown). */
int rf_url_list_add_version(rf_url_list *l, const char *url, uint64_t size_hint,
                            const char *validator, rf_error *err);
/* Drops the entries from n on (a refused listing page). */
void rf_url_list_truncate(rf_url_list *l, size_t n);
void rf_url_list_free(rf_url_list *l);

/* Expands brace groups in pattern, appending every name to out in order
 * (leftmost group varies slowest). {A..B}: decimal range, ascending or
 * descending, zero padded to the wider bound when either bound has a leading
 * zero; {x,y,z}: alternatives. More than RF_BRACE_EXPANSION_MAX names, an
 * unclosed or nested brace, or a malformed range is -EINVAL with a message. */
int rf_brace_expand(const char *pattern, rf_url_list *out, rf_error *err);

/* s3://bucket/key or gs://bucket/key: splits into malloc'd bucket and key
 * (key may be ""). */
int rf_url_split_s3(const char *url, char **bucket, char **key, rf_error *err);
/* Whether a bucket name can be a DNS label of a virtual-hosted-style host:
 * 3..63 of a-z 0-9 '-', starting and ending with a letter or digit, and no
 * dot (a dotted name breaks the TLS wildcard *.s3.REGION.amazonaws.com, so
 * the SDKs fall back to path-style for it). */
bool rf_s3_bucket_virtual_ok(const char *bucket);
/* The region of an AWS S3 endpoint host "s3.REGION.amazonaws.com" or
 * "s3-REGION.amazonaws.com" ("us-east-1" for the global s3.amazonaws.com),
 * optionally after "BUCKET."; false for any other host. region_cap >= 2. */
bool rf_url_aws_s3_region(const char *url, char *region, size_t region_cap);
/* url with its AWS S3 endpoint host moved to region (malloc'd): the
 * "s3.REGION.amazonaws.com" part replaced, anything before it (a virtual
 * host's bucket) and the path kept. NULL when url's host is not an AWS S3
 * endpoint (a custom endpoint keeps its host: only the signature changes),
 * the region is not a plausible region name, or out of memory. */
char *rf_url_aws_s3_with_region(const char *url, const char *region);
/* Whether s is a plausible region name: 1..40 of a-z 0-9 '-' ("auto" too). */
bool rf_s3_region_ok(const char *s);

/* file:///abs/path or file://localhost/abs/path: the path, percent-decoded (malloc'd). */
int rf_url_file_path(const char *url, char **path, rf_error *err);

/* Percent-encodes per RFC 3986 (unreserved A-Z a-z 0-9 - . _ ~ kept; '/' kept
 * when keep_slash). Returns the encoded length, or -ENAMETOOLONG when it does
 * not fit cap (including the NUL). */
int rf_uri_encode(const char *in, bool keep_slash, char *out, size_t cap);

/* THE redaction of a source name, for every message, stat, trace and log that
 * names a source: a URL ("scheme://") loses its user:password@ part, and its
 * query (presigned URLs carry X-Amz-Signature / X-Amz-Security-Token there) is
 * replaced by "?...". Plain paths and file:// URLs carry no credentials and
 * are copied unchanged ('?' is a file name character there). Truncated to
 * cap; never copies more of a secret than it shows. */
void rf_url_redact(const char *url, char *out, size_t cap); /* public: ringfeed.h */
/* The same, malloc'd (NULL when out of memory). */
char *rf_url_redact_dup(const char *url);

/* A URL as a cache's key: without its user:password@ part, its query and its
 * fragment (a presigned query's signature, a token); a plain path is copied.
 * 0, or -ENAMETOOLONG when it does not fit cap. For the index cache and the
 * data cache, so no secret reaches a cache's key or file. */
int rf_url_clean(const char *url, char *out, size_t cap);

/* The origin of an http(s) URL as "scheme://host:port", lower case, the port
 * always written (80/443 by default), userinfo left out: two URLs are the
 * same host for credentials exactly when their origins are equal. -EINVAL
 * when url is not http(s) or its authority is malformed, -ENAMETOOLONG when
 * it does not fit cap. */
int rf_url_origin(const char *url, char *out, size_t cap);
/* url without its user:password@ part (malloc'd; NULL when out of memory). */
char *rf_url_without_userinfo(const char *url);

#endif
