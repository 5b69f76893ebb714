/* store.h - the store seam: an object store (S3, GCS, Azure) behind the
 * remote source kind (remote.c), which owns the HTTP client. A store names
 * objects by bucket URLs (scheme://bucket/key) and implements what the HTTP
 * transport does not know:
 *   credentials  find them on first use (a chain, static keys, anonymous);
 *                signed requests wait in the client until they are set;
 *   signing      the http(s) URL an object is fetched from, and whether and
 *                for which region its requests are signed;
 *   listing      the objects under a prefix, in key order with their sizes,
 *                keeping those the caller's filter takes (a store never
 *                knows which names are shards).
 * Stores are tried in the order of fetch.c's stores table: a store is one
 * file plus a row there, and its options a block of rf_fetch_options. All
 * hooks run on the loop thread. Internal. */
#ifndef RF_STORE_H
#define RF_STORE_H

#include "http.h"
#include "source.h"
#include "url.h"

#define RF_STORES_MAX 8

/* Which listed keys a caller wants. */
typedef struct rf_list_filter {
	bool (*take)(const char *key, void *ctx); /* key: the object's key (no scheme, bucket) */
	void *ctx;
	const char *what; /* what take accepts, for messages: "no .rfs objects under ..." */
} rf_list_filter;

/* How one object is fetched. */
typedef struct rf_store_target {
	char *url;                /* what curl fetches (malloc'd; path and query encoded) */
	const rf_http_auth *auth; /* its signer (NULL: unsigned; owned by the store's state) */
	const char *scope;        /* signed: the signer's scope, e.g. the region (the state's) */
	char *bucket;             /* signed: the bucket (malloc'd), so a learned region is reused */
} rf_store_target;

typedef struct rf_store {
	const char *name;
	bool (*claims)(const char *url);    /* a URL of this store (object or prefix) */
	bool (*is_prefix)(const char *url); /* names a listing, not an object */
	/* Per-loader state, created on first use (http: the shared client). */
	int (*init)(rf_fetch *f, rf_http *http, void **state, rf_error *err);
	void (*fini)(void *state); /* before the client is freed */
	/* Starts finding credentials for url's requests (once; later calls
	 * return 0). A chain that cannot start is an error. */
	int (*credentials)(void *state, const char *url, rf_error *err);
	/* The object url's fetch URL and signing (out's strings malloc'd). */
	int (*target)(void *state, const char *url, rf_store_target *out, rf_error *err);
	/* Lists the prefix url asynchronously: appends what filter takes to out,
	 * then cb(arg, count, NULL) or cb(arg, -errno, msg). page_keys: page size
	 * (0 = the store's). *lister allows list_cancel until the callback. */
	int (*list_start)(void *state, const char *url, uint32_t page_keys,
	                  const rf_list_filter *filter, rf_url_list *out, rf_fetch_cb cb, void *arg,
	                  void **lister, rf_error *err);
	void (*list_cancel)(void *lister);
} rf_store;

/* The store claiming url (NULL: none, a plain http(s) URL or a path) and its
 * row in the table (for per-loader state). */
const rf_store *rf_store_of(const char *url, size_t *row);
const rf_store *rf_store_at(size_t row); /* NULL past the table */
/* Whether url is a store prefix (listed, not read). */
bool rf_store_is_prefix(const char *url);

/* Lists the prefix url (rf_store_is_prefix) on a private loop and fetch
 * layer (opt as the loader's): the objects filter takes, in key order, sizes
 * as hints; -ENOENT naming filter->what when there are none. For rf_open,
 * which expands URLs before its loop thread runs. */
int rf_fetch_list(const rf_fetch_options *opt, const char *url, const rf_list_filter *filter,
                  rf_url_list *out, rf_error *err);

extern const rf_store rf_store_gcs; /* gs:// (gcs_store.c; with HMAC keys: rf_store_s3's) */
extern const rf_store rf_store_s3;  /* s3:// and, handed over by gcs, gs:// (s3_store.c) */
extern const rf_store
    rf_store_azure; /* az:// and https://ACCOUNT.blob.core.windows.net/ (azure_store.c) */
extern const rf_store
    rf_store_hf; /* hf://[datasets/|spaces/]ORG/NAME[@REVISION]/PATH (hf_store.c) */

#endif
