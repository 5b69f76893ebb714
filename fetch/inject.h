/* inject.h - the in-engine fault injector: a strict parser for the one-string
 * spec, and a source wrapper (rf_source_wrapper_inject, fetch.c's wrapper
 * row, used when rf_fetch_options.inject is set) that adds latency, periodic stalls,
 * transient errors, connection resets, short reads and corrupted bytes to any
 * source (local or remote).
 *
 * Spec: comma-separated key=value items, each key at most once, e.g.
 *   seed=7,latency=20ms,jitter=10ms,stall=2s/10s,error=0.01,reset=0.005,short=0.005,corrupt=0.001
 *   seed     u64 decimal (default 0)
 *   latency  every read attempt waits this long before it starts
 *   jitter   plus a uniform draw in [-jitter, +jitter] (clamped at 0)
 *   stall    S/P: nothing starts or completes during the last S of every
 *            period P, counted from rf_fetch_new (0 <= S < P)
 *   error    per attempt: fail with -EIO (transient) before reading
 *   reset    per attempt: the read runs, its bytes are scribbled over, then
 *            it fails with -ECONNRESET (transient)
 *   short    per attempt: the read runs, only a prefix counts (the rest is
 *            scribbled over); the wrapper resumes at the first missing byte
 *   corrupt  per read: the read succeeds with one byte flipped
 * Durations are a decimal with a unit (ns, us, ms, s; "0" alone is allowed),
 * at most 1 hour; probabilities are decimals in [0, 1] (e.g. 0.005, no
 * exponents), and error + reset + short + corrupt <= 1 (one draw per attempt
 * picks at most one fault). Spaces around items are ignored. Errors are
 * -EINVAL with a message naming the key and its 1-based position.
 *
 * Retries: error, reset and short are transient faults that the wrapper
 * retries itself with capped exponential backoff and full jitter (loop
 * timers), up to rf_fetch_options.retries more attempts per read; the
 * consumer only sees them when retries run out (-EIO / -ECONNRESET with a
 * message naming the source, range, fault and attempt count). Errors of the
 * inner source pass through unchanged (it already retried).
 *
 * Corruption is delivered as a successful read: the consumer must verify
 * the bytes (block checksums: the zstd content checksum, the index CRC) and,
 * on a mismatch, re-read the same range with rf_source_read (bounded, e.g.
 * rf_fetch_options.retries times). A re-read is a new read and draws new
 * fault decisions, so it succeeds unless corruption strikes again.
 *
 * Determinism: every decision of a read attempt is a pure function of
 * (seed, source name, index of the read on that source, attempt number), so
 * a given seed gives the same faults for the same sequence of reads on each
 * source, whatever the timing or the interleaving of sources. */
#ifndef RF_INJECT_H
#define RF_INJECT_H

#include "source.h"

#include <stdbool.h>
#include <stdint.h>

#define RF_INJECT_SPEC_BYTES_MAX  512
#define RF_INJECT_DURATION_NS_MAX 3600000000000ull /* 1 hour */
#define RF_INJECT_PROB_ONE        1000000000000ull /* probabilities in units of 1e-12 */

typedef struct rf_inject_spec {
	uint64_t seed;
	uint64_t latency_ns, jitter_ns;
	uint64_t stall_ns, stall_period_ns; /* stall_period_ns == 0: no stalls */
	/* Probabilities in units of 1e-12 (RF_INJECT_PROB_ONE = certain). */
	uint64_t error_p12, reset_p12, short_p12, corrupt_p12;
} rf_inject_spec;

/* Parses text (NULL or "" is an error: no spec means no injector). */
int rf_inject_parse(const char *text, rf_inject_spec *out, rf_error *err);
/* The canonical form of a spec (parses back to the same spec). Returns the
 * length written, or -ENOSPC when cap is too small. */
int rf_inject_format(const rf_inject_spec *spec, char *buf, size_t cap);
/* Parsers shared with tools (durations: "20ms"; probabilities: "0.01"). */
int rf_inject_parse_duration(const char *text, size_t len, uint64_t *ns);
int rf_inject_parse_prob(const char *text, size_t len, uint64_t *p12);

/* Fault counters of one wrapped source. */
typedef struct rf_inject_stats {
	uint64_t reads;                            /* rf_source_read calls accepted */
	uint64_t attempts;                         /* read attempts started (reads + retries) */
	uint64_t errors, resets, shorts, corrupts; /* faults injected */
	uint64_t retries;                          /* attempts after a transient fault */
	uint64_t failed;                           /* reads that ran out of retries */
	uint64_t delayed;                          /* attempts that waited for latency or a stall */
	uint64_t stalled;                          /* waits caused by a stall window */
} rf_inject_stats;

/* The wrapper is rf_source_wrapper_inject (source.h), named by fetch.c's
 * wrapper row: its wrap takes ownership of inner (closed on failure by the
 * caller), wraps it according to spec, and moves the inner source's open
 * callback to itself. */
/* Counters of a wrapper; -EINVAL when s is not an injector. */
int rf_inject_stats_get(const rf_source *s, rf_inject_stats *out);
bool rf_source_is_injector(const rf_source *s);

#endif
