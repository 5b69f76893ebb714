/* remote_int.h - the remote kind's per-loader state, shared by remote.c
 * (the kind) and remote_ops.c (expansion and one-shot requests, above the
 * fetch layer's table). Internal to fetch/. */
#ifndef RF_REMOTE_INT_H
#define RF_REMOTE_INT_H

#include "hedge.h"
#include "remote.h"

#define HEDGE_STORES_MAX 16 /* beyond: the last one is shared */

typedef struct hedge_store {
	char key[256]; /* scheme://authority of the requests */
	rf_hedge_store policy;
} hedge_store;

typedef struct remote_state {
	rf_fetch *fetch;
	rf_http *http;
	hedge_store stores[HEDGE_STORES_MAX];
	uint32_t nstores;
	uint64_t hedge_bytes; /* hedge buffers allocated now (<= RF_HEDGE_INFLIGHT_BYTES_MAX) */
	uint64_t hedges, hedges_won;
	void *store_state[RF_STORES_MAX]; /* per store of fetch.c's table, on first use */
	bool store_ready[RF_STORES_MAX];
	uint32_t list_page;
	rf_open_batch opens; /* sources whose size was given: opened at the next tick */
} remote_state;

/* The store of a bucket URL and its per-loader state (created on first
 * use, given the shared client). */
int rf_remote_store(remote_state *st, const char *url, const rf_store **store, void **state,
                    rf_error *err);
/* How a source URL is fetched: a plain http(s) URL as written; a bucket URL
 * as its store says (strings malloc'd, also on failure), its credentials
 * started before the first request (signed requests wait for them). */
int rf_remote_target(remote_state *st, const char *url, rf_store_target *t, rf_error *err);

#endif
