/* hedge.h - when to send a second request for a slow range read, per store:
 * the p95 of a bounded window of recent read latencies (with a floor), a
 * token bucket that keeps hedges near 5% of reads, and a quiet period after
 * the store retried or failed a request (hedging a store that is erroring
 * or throttling would only add load). Pure bookkeeping, no I/O: the http(s)
 * and s3 source (remote.c) owns the requests. Internal. */
#ifndef RF_HEDGE_H
#define RF_HEDGE_H

#include <stdbool.h>
#include <stdint.h>

#define RF_HEDGE_WINDOW             128 /* recent reads a store's p95 is taken over */
#define RF_HEDGE_SAMPLES_MIN        20  /* no hedging before this many reads */
#define RF_HEDGE_RECOMPUTE          8   /* the p95 is recomputed every this many reads */
#define RF_HEDGE_TOKENS_PER_READ    0.05
#define RF_HEDGE_TOKENS_MAX         5.0           /* a burst of at most 5 hedges */
#define RF_HEDGE_QUIET_NS           1000000000ull /* after a retry or error */
#define RF_HEDGE_READ_BYTES_MAX     (16u << 20)   /* larger reads are never hedged */
#define RF_HEDGE_INFLIGHT_BYTES_MAX (64u << 20)   /* hedge buffers of one loader */

typedef struct rf_hedge_store {
	uint32_t latency_us[RF_HEDGE_WINDOW]; /* ring of recent read latencies */
	uint32_t n, next, since_recompute;
	uint64_t threshold_ns; /* max(p95, floor); 0 until RF_HEDGE_SAMPLES_MIN reads */
	double tokens;
	uint64_t trouble_seen; /* the client's retries + errors when last looked at */
	uint64_t quiet_until_ns;
} rf_hedge_store;

/* Records a completed read's latency (its last attempt, in curl). */
void rf_hedge_note(rf_hedge_store *s, uint64_t latency_ns, uint64_t floor_ns);
/* How long a read may take before it is hedged; 0 = do not hedge. */
uint64_t rf_hedge_threshold_ns(const rf_hedge_store *s);
/* Takes a hedge token: false while the store is quiet (trouble_count, its
 * host's failed attempts, moved within RF_HEDGE_QUIET_NS) or the bucket is
 * empty. */
bool rf_hedge_take(rf_hedge_store *s, uint64_t trouble_count, uint64_t now_ns);

#endif
