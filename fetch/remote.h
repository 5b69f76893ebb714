/* remote.h - the http(s):// and bucket-URL source kind (one curl multi
 * handle per loader, shared by every store, so one connection pool and one
 * set of limits; the stores, store.h, add credentials, signing and
 * listing), and dataset URL expansion (brace ranges, store prefix
 * listings). Internal. */
#ifndef RF_REMOTE_H
#define RF_REMOTE_H

#include "http.h"
#include "source.h"
#include "store.h"
#include "url.h"

extern const rf_source_kind rf_source_kind_remote;

/* Expands dataset names into objects, in order: brace ranges first; then
 * each store prefix (rf_store_is_prefix: s3://bucket/prefix/, s3://bucket)
 * is listed by its store (the keys filter takes, in key order, sizes as
 * hints; -ENOENT naming filter->what when none); every other name is kept
 * as written (local directories and manifests are the caller's). Listings
 * run on f's loop, which this drives until they finish: call it on the
 * loop's thread, never from inside a loop callback. rf_fetch_list
 * (store.h) is this for one name on a private loop. */
int rf_url_expand(rf_fetch *f, const char *const *names, size_t n, const rf_list_filter *filter,
                  rf_url_list *out, rf_error *err);
/* One object on a private loop and fetch layer (opt as the loader's), for
 * rf_open before its loop thread runs. rf_remote_peek: its size (a HEAD) and
 * up to cap bytes of its start (fewer when it is shorter); -ENOENT when
 * there is no such object. rf_remote_get: the whole object, at most
 * max_bytes (-EFBIG beyond), into a malloc'd NUL-terminated *body. */
int rf_remote_peek(const rf_fetch_options *opt, const char *url, uint64_t *size, void *head,
                   size_t cap, size_t *head_len, rf_error *err);
int rf_remote_get(const rf_fetch_options *opt, const char *url, uint64_t max_bytes, char **body,
                  size_t *len, rf_error *err);
#ifdef RF_TEST_HOOKS
/* Test hook (test builds only, never in the shipped library): the page size
 * of S3 listings (small pages exercise pagination). */
void rf_remote_set_list_page(rf_fetch *f, uint32_t max_keys);
#endif

#endif
