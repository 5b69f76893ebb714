/* plan.h - the visitation order: a pure function of (shard indexes, seed,
 * epoch, shuffle settings) for the epoch's stream, and of (rank, world, tail
 * policy) for this rank's part of it. Never depends on timing, threads,
 * depth or budget.
 *
 * Per epoch, for the whole dataset (independent of world size and rank):
 *   1. shards are permuted (seeded by seed, epoch) unless shuffle is off;
 *   2. inside each shard, blocks are permuted (seed, epoch, shard): the
 *      records in that order are the "plan order" (global plan positions);
 *   3. the plan order is cut into windows of `shuffle_window` records, each
 *      permuted (seed, epoch, window number): the permuted sequence is the
 *      epoch's global stream of N records.
 * The epoch's "sequence" is the global stream (or, after an elastic resume,
 * the list of stream segments no rank had taken: rf_plan_set_sequence), of L
 * records. Rank r of W takes sequence positions [r*S, (r+1)*S):
 *   tail drop (default): S = floor(L / W), the last L mod W records of the
 *     sequence go to no rank;
 *   tail pad: S = ceil(L / W), positions past L wrap to the sequence's start
 *     (as DistributedSampler pads);
 *   drop_last = B > 0: the rank's records are cut to a multiple of B (counted
 *     from the resume position in a resumed epoch), the same on every rank.
 * The rank's part is one or a few "pieces" (contiguous global stream ranges).
 * A piece's units are the blocks holding the plan positions of its windows:
 * at most its two boundary windows are shared with neighbour ranks; a block
 * whose records in such a window all belong to other ranks is "unused" (in
 * the list for the position arithmetic, never fetched).
 *
 * Local coordinates, what the engine sees: stream positions 0..E of this rank
 * (E = rf_plan_epoch_records), and plan positions 0..P (the units' records
 * back to back, P = rf_plan_epoch_plan_records >= E). Window arithmetic in
 * local coordinates goes through rf_plan_resident_stream / rf_plan_need /
 * rf_plan_window_end. Memory bound: a window spans at most ceil(window/min
 * records per block)+1 units (rf_plan_units_in_window_max). */
#ifndef RF_PLAN_H
#define RF_PLAN_H

#include "ringfeed.h"
#include <stdbool.h>

/* A plan holds at most this many blocks over all shards. */
#define RF_PLAN_UNITS_MAX (64u << 20)
/* Largest shuffle window in records (two cached window permutations of 4
 * bytes a record, and a byte a record of scratch). */
#define RF_PLAN_WINDOW_MAX (16u << 20)
/* Most segments an epoch's sequence may have (elastic resumes compose until
 * the remaining stream is this fragmented: see state.h). */
#define RF_PLAN_SEGMENTS_MAX 4096u

typedef struct rf_plan_params {
	uint64_t seed;
	uint32_t rank, world;    /* rank < world, world >= 1 */
	bool shuffle;            /* false: manifest / shard order, no windows */
	uint32_t shuffle_window; /* records; 0 or 1 = no record shuffle; ignored if !shuffle */
	bool pad;                /* tail policy: pad (true) or drop (false) */
	uint32_t drop_last;      /* > 0: cut each rank's records to a multiple of this */
} rf_plan_params;

/* A range of the epoch's global stream. */
typedef struct rf_segment {
	uint64_t start, records;
} rf_segment;

/* One fetch unit: a block of a shard. */
typedef struct rf_unit {
	uint32_t shard; /* index into the shard list given to rf_plan_new */
	uint32_t block; /* block within that shard */
	uint32_t records;
	bool unused;                /* none of its records is in this rank's stream: no fetch */
	uint64_t first_plan_record; /* local plan position of its first record */
	uint64_t release_pos;       /* local stream position at which every record of this
	                               unit that this rank emits has been emitted */
} rf_unit;

/* The tail of an epoch, for the stats. */
typedef struct rf_plan_tail {
	uint64_t sequence_records;  /* L: records of the epoch's sequence */
	uint64_t slice_records;     /* S: records per rank before drop_last */
	uint64_t dropped_records;   /* tail drop: L mod W, in no rank's stream (whole job) */
	uint64_t padded_records;    /* tail pad: W*S - L repeated records (whole job) */
	uint64_t drop_last_records; /* cut from this rank's stream by drop_last */
} rf_plan_tail;

typedef struct rf_plan rf_plan;

/* A mixture (issue 25, engine/plan_mix.c): the shard list is the sources'
 * shard lists back to back (source k holds shards [first[k], first[k+1]));
 * the epoch's global stream is the mixture stream of `samples` records, each
 * from the source the schedule (mix.h) gives it, and inside each source its
 * own plan's stream (its own seed: shards, blocks, windows) pass after pass.
 * Ranks, segments, tails and drop_last work on the mixture stream as on a
 * dataset's (the same partition code). Units are the sources' units, ordered
 * by the first local stream position that needs them; a unit's "window" is
 * its source window (so release order is not unit order: the engine releases
 * a mixture's units' memory out of order, rf_plan_is_mix). */
typedef struct rf_plan_mix_params {
	uint32_t sources;
	const uint32_t *first;   /* sources + 1 */
	const uint64_t *weight;  /* millionths (rf_mix_weight_parse), relative */
	uint64_t samples;        /* per mixture epoch; 0: the size at which the
	                            largest-weight source is read once */
	bool stop_first;         /* each mixture epoch is one pass of every source and
	                            ends when the first one runs out */
	const uint32_t *windows; /* per source, its shuffle window (NULL:
	                            rf_plan_mix_window: a resume that changed the
	                            weights keeps the windows it started with) */
} rf_plan_mix_params;

/* Source i's shuffle window: p's scaled by its weight over the heaviest
 * (at least 1), so every source's window spans about as many mixture
 * samples. The plan's sub-plans take it as their shuffle_window. */
uint32_t rf_plan_mix_window(const rf_plan_params *p, const uint64_t *weight, uint32_t k,
                            uint32_t i);

/* Copies what it needs from the indexes (record counts per block). */
int rf_plan_new_mix(const rf_plan_params *p, const rf_shard_index *const *shards, uint32_t nshards,
                    const rf_plan_mix_params *mp, rf_plan **out, rf_error *err);
bool rf_plan_is_mix(const rf_plan *plan);
/* Mixtures: per source, its records per pass, its passes begun and its
 * position at the start of epoch `epoch` (for the stats and `plan`), and
 * the source of local stream position q of the current epoch. */
uint32_t rf_plan_mix_sources(const rf_plan *plan);
void rf_plan_mix_source_info(const rf_plan *plan, uint32_t k, uint64_t epoch, uint64_t *counts,
                             uint64_t *records, uint64_t *ordinal, uint64_t *weight_num,
                             uint64_t *weight_den); /* counts: scratch of `sources` entries */
uint32_t rf_plan_mix_source_of(const rf_plan *plan, uint64_t stream_pos);
/* A mixture's identity for the resume state: per source 3 words (shape
 * hash, records per pass, weight in millionths); returns the sources (0:
 * no mixture). */
uint32_t rf_plan_mix_identity(const rf_plan *plan, const uint64_t **src, uint64_t *samples,
                              bool *stop_first);
/* A mixture's weights changed at a resume (mix_rebase.h): the plan keeps a
 * copy and reads every later epoch through it, with `samples` an epoch (the
 * saved mixture's). Not with stop_first. The plan's, or NULL. */
struct rf_mix_rebase;
int rf_plan_mix_set_rebase(rf_plan *plan, const struct rf_mix_rebase *rb, uint64_t samples,
                           rf_error *err);
const struct rf_mix_rebase *rf_plan_mix_rebase(const rf_plan *plan);
/* Mixtures: units that must be resident together for a batch of `batch`
 * records (the memory check), and the ring slots from the oldest unit not
 * released to the newest one needed (0: the plan is no mixture). */
uint64_t rf_plan_mix_resident_units(const rf_plan *plan, uint64_t batch);
uint64_t rf_plan_mix_ring_units(const rf_plan *plan, uint64_t batch, uint32_t *longest);
/* (longest: the source whose window is held longest, 0-based) */

/* Copies what it needs from the indexes (record counts per block). */
int rf_plan_new(const rf_plan_params *p, const rf_shard_index *const *shards, uint32_t nshards,
                rf_plan **out, rf_error *err);
void rf_plan_free(rf_plan *plan);
/* For epoch `epoch` only: its sequence is `segs` (global stream ranges, in
 * order; NULL: the whole stream) and the rank resumes at local stream
 * position `start` (for drop_last). Other epochs use the whole stream. */
int rf_plan_set_sequence(rf_plan *plan, uint64_t epoch, const rf_segment *segs, uint32_t nsegs,
                         uint64_t start, rf_error *err);
/* Computes the units of `epoch` for this rank (replacing the previous epoch). */
int rf_plan_epoch(rf_plan *plan, uint64_t epoch, rf_error *err);
uint64_t rf_plan_epoch_records(const rf_plan *plan);      /* E: records of this rank in the epoch */
uint64_t rf_plan_epoch_plan_records(const rf_plan *plan); /* P: records of its units */
uint64_t rf_plan_total_records(const rf_plan *plan);      /* N: records in the dataset */
void rf_plan_epoch_tail(const rf_plan *plan, rf_plan_tail *out);
/* The partition arithmetic alone: records per rank of a sequence of
 * `length` records for a rank resuming at `start` (drop_last counts from
 * there), and the tail. The whole stream: length = rf_plan_total_records. */
uint64_t rf_plan_partition(const rf_plan *plan, uint64_t length, uint64_t start,
                           rf_plan_tail *tail);
size_t rf_plan_unit_count(const rf_plan *plan);
const rf_unit *rf_plan_unit(const rf_plan *plan, size_t i);
/* Local stream position -> (unit index, record index within the unit's
 * block). A position at or past the epoch's end gives *unit = unit count.
 * Caches window permutations inside the plan: one thread at a time. */
void rf_plan_locate(const rf_plan *plan, uint64_t stream_pos, size_t *unit, uint32_t *record);
/* Local stream position -> local plan position (same cache, same rule). */
uint64_t rf_plan_stream_to_plan(const rf_plan *plan, uint64_t stream_pos);
/* Local stream position -> global stream position (the record's place in
 * the epoch's stream of the whole dataset). */
uint64_t rf_plan_stream_global(const rf_plan *plan, uint64_t stream_pos);
/* With every local plan position below plan_pos resident: the local stream
 * positions below the result are resident (their windows are complete). */
uint64_t rf_plan_resident_stream(const rf_plan *plan, uint64_t plan_pos);
/* Local plan position below which units are needed to emit the stream
 * positions below stream_pos (the end of the window of stream_pos - 1). */
uint64_t rf_plan_need(const rf_plan *plan, uint64_t stream_pos);
/* End (local plan position) of the window holding local plan position p. */
uint64_t rf_plan_window_end(const rf_plan *plan, uint64_t plan_pos);
/* First unit holding a record at stream position >= pos (units before it are
 * fully emitted once the stream reaches pos): the first unit whose
 * release_pos > pos. Unit count when none. */
size_t rf_plan_first_unit_needed(const rf_plan *plan, uint64_t stream_pos);
/* Upper bound, over all epochs, of units that must be resident together for
 * one window: ceil(window / fewest records in a non-empty block) + 1, capped
 * by the non-empty blocks; 1 without a window, 0 when no block holds a
 * record. */
uint32_t rf_plan_units_in_window_max(const rf_plan *plan);
/* The most units (unused ones too) that any span of span_records
 * consecutive plan positions touches, in any epoch and on any rank: what
 * the unit ring must hold for the collator to wait on such a span. */
uint64_t rf_plan_span_units_max(const rf_plan *plan, uint64_t span_records);
/* Bytes of memory the plan holds (metadata budget). */
uint64_t rf_plan_memory_bytes(const rf_plan *plan);
/* Hash of the dataset's shape: shard count, blocks per shard and records
 * per block (the resume state's dataset check). */
uint64_t rf_plan_dataset_hash(const rf_plan *plan);
const rf_plan_params *rf_plan_params_of(const rf_plan *plan);
uint32_t rf_plan_shard_count(const rf_plan *plan);

#endif
