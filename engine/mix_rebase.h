/* mix_rebase.h - a mixture's weights changed at a resume (issue 25 item 5).
 *
 * A resume with new weights keeps every sample already delivered and lets
 * each source continue from its own position without repeating a record
 * inside its pass. What was delivered is the saved epoch's start plus, on a
 * world of W ranks, W runs of the epoch (each rank's part up to where it
 * stood), so a source's delivered ordinals (its samples of its own endless
 * stream, mix.h) are runs with gaps between them: the ordinals the ranks had
 * not reached yet. The rebase names, per source, the ordinals still to come:
 * a sorted list of disjoint ranges, then every ordinal from `tail` on.
 *
 * From the change on, the mixture stream is the new weights' schedule,
 * started afresh: its sample s is source k's i-th sample (mix.h), and that
 * is the i-th remaining ordinal of source k (rf_mix_rebase_o), so every
 * prefix from the change holds the new shares within 1 (mix.c's guarantee)
 * and no source repeats or skips a remaining record. The saved epoch keeps
 * its size: its rest is `length` samples (schedule samples [0, length)), and
 * each later epoch e takes samples from length + (e - epoch - 1) * M on.
 *
 * A source's shuffle window is scaled by its weight (rf_plan_mix_window)
 * and a pass's record order depends on it, so a change keeps the windows
 * the run started with: a pass begun under them ends under them.
 *
 * A rebase composes: a second change maps the remaining ordinals of the
 * first (a run in the first's terms is one or more ranges of ordinals), so
 * the list only ever holds what is still to come (at most about one range
 * per remaining segment of each change's epoch). Bounded by
 * RF_MIX_REBASE_RANGES_MAX in all. Pure: no I/O, no threads. Internal. */
#ifndef RF_MIX_REBASE_H
#define RF_MIX_REBASE_H

#include "mix.h"
#include "plan.h"

#include <stddef.h>
#include <stdint.h>

#define RF_MIX_REBASE_RANGES_MAX (1u << 16)
/* The largest tail (ordinals a source may give): far past any run (2^50
 * samples an epoch), and an i-th ordinal from it cannot overflow. */
#define RF_MIX_REBASE_ORDINAL_MAX (1ull << 62)

typedef struct rf_mix_rebase {
	uint64_t epoch;  /* the epoch the new weights start in */
	uint64_t length; /* that epoch's samples from the change on (1 .. M) */
	uint32_t k;      /* sources */
	uint32_t nranges;
	uint32_t *first;  /* k + 1: source k's ranges are r[first[k] .. first[k + 1]) */
	rf_segment *r;    /* remaining ordinals [start, start + records), sorted, disjoint */
	uint64_t *pre;    /* nranges: the schedule count (i) at each range's start */
	uint64_t *tail;   /* k: every ordinal from tail[k] on is still to come */
	uint32_t *window; /* k: each source's shuffle window, kept from the weights
	                     the run started with (a pass's order depends on it) */
} rf_mix_rebase;

void rf_mix_rebase_free(rf_mix_rebase *rb);
int rf_mix_rebase_dup(const rf_mix_rebase *rb, rf_mix_rebase **out, rf_error *err);
uint64_t rf_mix_rebase_memory(const rf_mix_rebase *rb);

/* The schedule sample at which epoch `epoch` starts, and its samples, for
 * M samples an epoch (rb NULL: no change, epoch * M and M). */
uint64_t rf_mix_rebase_g0(const rf_mix_rebase *rb, uint64_t samples, uint64_t epoch);
uint64_t rf_mix_rebase_epoch_len(const rf_mix_rebase *rb, uint64_t samples, uint64_t epoch);

/* Source k's i-th sample of the new schedule -> its ordinal (rb NULL: i). */
uint64_t rf_mix_rebase_o(const rf_mix_rebase *rb, uint32_t k, uint64_t i);
/* The inverse: the i whose ordinal is o; UINT64_MAX when o is not to come
 * (it was delivered before the change). */
uint64_t rf_mix_rebase_i(const rf_mix_rebase *rb, uint32_t k, uint64_t o);
/* *o = rf_mix_rebase_o(rb, k, i); returns how many consecutive i from there
 * have consecutive ordinals (UINT64_MAX: all, the tail). */
uint64_t rf_mix_rebase_run(const rf_mix_rebase *rb, uint32_t k, uint64_t i, uint64_t *o);

/* A change of weights at a resume: `old` is the saved weights' schedule and
 * `oldrb` the saved rebase (NULL: none), M the samples an epoch, `epoch`
 * the saved epoch and rem[0 .. nrem) what no rank had taken of it (epoch
 * positions, as rf_state_remaining gives them) less taken[0 .. ntaken)
 * (rf_state_taken: a padded slice wraps onto positions another rank took),
 * windows the sources' shuffle windows in force (oldrb's when given). *out: the new rebase (the
 * saved epoch's rest, or the next epoch whole when nothing was left). */
int rf_mix_rebase_compose(const rf_mix *old, const rf_mix_rebase *oldrb, uint64_t samples,
                          uint64_t epoch, const rf_segment *rem, uint32_t nrem,
                          const rf_segment *taken, uint32_t ntaken, const uint32_t *windows,
                          rf_mix_rebase **out, rf_error *err);

/* The state encoding (state.h): u64 epoch, u64 length, u32 ranges, then per
 * source u64 tail, u32 ranges and u32 window, then the ranges as (u64
 * start, u64 records); little-endian. */
size_t rf_mix_rebase_bytes_for(uint32_t k, uint32_t nranges);
size_t rf_mix_rebase_bytes(const rf_mix_rebase *rb);
void rf_mix_rebase_encode(const rf_mix_rebase *rb, uint8_t *out);
/* The ranges count of an encoding at b (len bytes available), to size it. */
uint32_t rf_mix_rebase_peek(const uint8_t *b, size_t len);
/* Decodes and checks one (k sources, M samples an epoch, saved at `epoch`):
 * every range sorted, disjoint, non-empty and below its tail, the length in
 * 1 .. M, the change not after the saved epoch. */
int rf_mix_rebase_decode(const uint8_t *b, size_t len, uint32_t k, uint64_t samples, uint64_t epoch,
                         rf_mix_rebase **out, rf_error *err);

#endif
