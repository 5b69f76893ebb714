/* mix.h - the source schedule of a mixture: which source each sample of the
 * mixture stream comes from. A pure function of the weights (and of the
 * weight changes and the positions they take effect from); independent of
 * world size, rank, batch size, timing and budget, so ranks can take equal
 * slices of one stream and a resume can start anywhere in it.
 *
 * Weights. Each weight is a non-negative decimal with at most 6 fractional
 * digits (or an integer), taken exactly: weights are relative, so
 * (0.6, 0.2, 0.2) and (3, 1, 1) are the same mixture. Their sum, reduced by
 * the weights' greatest common divisor, is the schedule's period T (integer
 * weights W_k, sum T). A period longer than rf_mix_period_max(K) is rounded
 * to one that long by largest remainders; the effective weights are what
 * rf_mix_weights reports (differing from the given ones by less than
 * 1/period each) and every guarantee below is about them.
 *
 * The order. Sample n (0-based) goes, earliest deadline first, to the source
 * whose next sample is due soonest among those not yet at their share: for a
 * count c of source k before n, it may come if c*T < W_k*(n+1) and is due by
 * sample ceil((c+1)*T/W_k); the lowest k on a tie. By Tijdeman's chairman
 * assignment theorem a schedule within 1 of every share exists, and EDF finds
 * one, so every prefix has |c_k(n) - n*W_k/T| < 1 for every source (the tests
 * check it over millions of samples and random weights; Megatron-LM's
 * greedy largest-error rule misses it, by 0.03 in one of them). After each
 * full period the counts are exactly W_k per period: the schedule repeats
 * with period T.
 *
 * Weight changes. rf_mix_reweight(m, S, w) gives the samples from S on new
 * weights: samples before S keep their sources, and for n >= S each source's
 * count is its count at S plus the new schedule's count over n - S, so the
 * new proportions hold within 1 in every prefix counted from S.
 *
 * Cost: building a period is O(T*K) once per weight set (T*K is bounded by
 * RF_MIX_WORK_MAX, which bounds the period for many sources), random access
 * (rf_mix_counts, rf_mix_source) is O(K*step) with step = the checkpoint
 * stride, a cursor step is O(K). Memory: rf_mix_bytes, stated before it is
 * allocated (rf_mix_bytes_for) so a caller can reserve it. Internal. */
#ifndef RF_MIX_H
#define RF_MIX_H

#include "ringfeed.h"
#include <stdbool.h>
#include <stdint.h>

#define RF_MIX_SOURCES_MAX  4096u
#define RF_MIX_SEGMENTS_MAX 64u          /* weight sets in one schedule (the first + changes) */
#define RF_MIX_PERIOD_LIMIT (1u << 22)   /* the longest period, for few sources */
#define RF_MIX_WORK_MAX     (1ull << 25) /* period x sources, the cost of building one */
#define RF_MIX_WEIGHT_SCALE 1000000ull   /* a parsed weight is in millionths */
#define RF_MIX_WEIGHT_MAX   (1ull << 40) /* in millionths: about a million */

typedef struct rf_mix rf_mix;

/* Parses one weight ("0.6", "3", "1e-3" is refused: plain decimals only) into
 * millionths. `what` names it in the error (a file and line, a flag). */
int rf_mix_weight_parse(const char *s, const char *what, uint64_t *millionths, rf_error *err);

/* The longest period for k sources: min(RF_MIX_PERIOD_LIMIT, RF_MIX_WORK_MAX / k). */
uint32_t rf_mix_period_max(uint32_t k);

/* Bytes a schedule of k sources will hold with `segments` weight sets (at
 * most), before it is built: for the caller's budget. */
uint64_t rf_mix_bytes_for(uint32_t k, uint32_t segments);

/* A schedule of k sources with weights w (millionths, as parsed; at least one
 * is > 0). Room for `segments` weight sets (1 .. RF_MIX_SEGMENTS_MAX). */
int rf_mix_new(rf_mix **out, uint32_t k, const uint64_t *w, uint32_t segments, rf_error *err);
void rf_mix_free(rf_mix *m);
uint64_t rf_mix_bytes(const rf_mix *m);
uint32_t rf_mix_sources(const rf_mix *m);

/* New weights from sample `from` on; `from` must not be before the last
 * change's start. Refused past `segments` weight sets. */
int rf_mix_reweight(rf_mix *m, uint64_t from, const uint64_t *w, rf_error *err);

/* The effective weights of the weight set in force at sample n, as integers
 * W_k with period T (= their sum): out[k] = W_k; returns T. */
uint32_t rf_mix_weights(const rf_mix *m, uint64_t n, uint32_t *out);

/* counts[k] = samples of source k among samples [0, n). */
void rf_mix_counts(const rf_mix *m, uint64_t n, uint64_t *counts);

/* The source of sample n, and (when ordinal is not NULL) how many samples of
 * that source come before it: its position in the source's own stream. */
uint32_t rf_mix_source(const rf_mix *m, uint64_t n, uint64_t *ordinal);

/* The sample holding source k's o-th sample (0-based): the n with
 * rf_mix_source(m, n, &ord) == k and ord == o; UINT64_MAX when source k has
 * no o-th sample (its weight is 0 from some change on). O(log checkpoints +
 * stride * K); not thread-safe (the scratch, as rf_mix_source). */
uint64_t rf_mix_position(const rf_mix *m, uint32_t k, uint64_t o);

/* Sequential walk from sample n: counts held by the caller (k entries),
 * filled by rf_mix_cursor_init, advanced by rf_mix_cursor_next which returns
 * the source of the cursor's sample and moves to the next one. */
typedef struct rf_mix_cursor {
	const rf_mix *m;
	uint64_t n;      /* the next sample */
	uint64_t *count; /* per source, samples before n */
	uint32_t seg;    /* weight set in force at n */
	uint32_t *local; /* per source, counts inside the current period (k entries) */
	uint32_t pos;    /* position inside the current period */
} rf_mix_cursor;
/* count and local: caller-owned arrays of rf_mix_sources(m) entries each. */
void rf_mix_cursor_init(rf_mix_cursor *c, const rf_mix *m, uint64_t n, uint64_t *count,
                        uint32_t *local);
uint32_t rf_mix_cursor_next(rf_mix_cursor *c);

#endif
