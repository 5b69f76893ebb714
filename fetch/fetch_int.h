/* fetch_int.h - the fetch layer's own state (fetch.c makes it, source.c
 * reads its loop and options for the kinds). Internal to fetch/. */
#ifndef RF_FETCH_INT_H
#define RF_FETCH_INT_H

#include "cache.h"
#include "source.h"

#define RF_KINDS_MAX 8

struct rf_fetch {
	rf_loop *loop;
	rf_fetch_options opt;
	char *strings[12]; /* owned copies of the option strings */
	rf_cache *cache;   /* NULL when cache_mode is off */
	void *state[RF_KINDS_MAX];
	bool ready[RF_KINDS_MAX];
	uint64_t epoch_ns; /* creation time: fault injection stalls count from here */
	uint64_t registered_bytes, register_refused; /* rf_fetch_buffers_register */
	int register_error;
};

#endif
