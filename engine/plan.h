/* plan.h - the visitation order: a pure function of (shard indexes, seed,
 * epoch, rank, world, shuffle settings). Never depends on timing, threads,
 * depth or budget.
 *
 * Per epoch:
 *   1. shards are permuted (seeded by seed, epoch) unless shuffle is off;
 *   2. the epoch's block sequence (all blocks of the permuted shards, in shard
 *      order, B blocks) is split into `world` contiguous slices: rank r takes
 *      blocks [r*B/W, (r+1)*B/W) (so ranks are disjoint and complete);
 *   3. inside each shard's part of the slice, blocks are permuted (seeded);
 *   4. the rank's records, in that unit order ("plan order"), are cut into
 *      consecutive windows of `shuffle_window` records; each window is
 *      permuted by a seeded permutation of (seed, epoch, rank, window number).
 *      The permuted sequence is the "stream": what the consumer sees.
 * Memory bound: a window spans at most ceil(window/min records per block)+1
 * units, all of which must be decoded at once; rf_plan_units_in_window_max
 * says how many at most. */
#ifndef RF_PLAN_H
#define RF_PLAN_H

#include "ringfeed.h"
#include <stdbool.h>

/* A plan holds at most this many blocks over all shards (its unit array and
 * per-block record counts are allocated at rf_plan_new: 36 bytes a block). */
#define RF_PLAN_UNITS_MAX (64u << 20)
/* Largest shuffle window in records (two cached window permutations of 4
 * bytes a record: 128 MiB at most). */
#define RF_PLAN_WINDOW_MAX (16u << 20)

typedef struct rf_plan_params {
	uint64_t seed;
	uint32_t rank, world;    /* rank < world, world >= 1 */
	bool shuffle;            /* false: manifest / shard order, no windows */
	uint32_t shuffle_window; /* records; 0 or 1 = no record shuffle; ignored if !shuffle */
} rf_plan_params;

/* One fetch unit: a block of a shard. */
typedef struct rf_unit {
	uint32_t shard; /* index into the shard list given to rf_plan_new */
	uint32_t block; /* block within that shard */
	uint32_t records;
	uint64_t first_plan_record; /* records of this rank in plan order before this unit */
	uint64_t release_pos;       /* stream position at which every record of this unit
	                               has been emitted (its decoded bytes can be freed);
	                               a unit of 0 records takes the previous unit's (0 for
	                               the first): it is never located and needs no fetch */
} rf_unit;

typedef struct rf_plan rf_plan;

/* Copies what it needs from the indexes (record counts per block). */
int rf_plan_new(const rf_plan_params *p, const rf_shard_index *const *shards, uint32_t nshards,
                rf_plan **out, rf_error *err);
void rf_plan_free(rf_plan *plan);
/* Computes the units of `epoch` for this rank (replacing the previous epoch). */
int rf_plan_epoch(rf_plan *plan, uint64_t epoch, rf_error *err);
uint64_t rf_plan_epoch_records(const rf_plan *plan); /* records of this rank in the epoch */
size_t rf_plan_unit_count(const rf_plan *plan);
const rf_unit *rf_plan_unit(const rf_plan *plan, size_t i);
/* Stream position -> (unit index, record index within the unit's block).
 * A position at or past the epoch's end gives *unit = unit count. Caches the
 * window permutation inside the plan: call from one thread at a time. */
void rf_plan_locate(const rf_plan *plan, uint64_t stream_pos, size_t *unit, uint32_t *record);
/* Stream position -> plan position (the window permutation alone; same
 * cache, same one-thread rule as rf_plan_locate). */
uint64_t rf_plan_stream_to_plan(const rf_plan *plan, uint64_t stream_pos);
/* First unit holding a record at stream position >= pos (units before it are
 * fully emitted once the stream reaches pos); used to resume. It is the first
 * unit whose release_pos > pos (release positions never decrease along the
 * units), so it may name a unit of pos's window whose records all came
 * before pos: conservative, never late. Unit count when none. */
size_t rf_plan_first_unit_needed(const rf_plan *plan, uint64_t stream_pos);
/* Upper bound, over all epochs, of units that must be resident together for
 * one window (for the open-time budget check): units with records only,
 * ceil(window / fewest records in a non-empty block) + 1, capped by the
 * non-empty blocks and the rank's slice; 1 without a window, 0 when no block
 * holds a record. */
uint32_t rf_plan_units_in_window_max(const rf_plan *plan);
/* Bytes of memory the plan holds (metadata budget). */
uint64_t rf_plan_memory_bytes(const rf_plan *plan);
/* Folds the plan's configuration (seed, rank, world, shuffle, window, shard
 * count, blocks per shard and records per block) into hash h; used by the
 * resume fingerprint (rf_state_fingerprint). */
uint64_t rf_plan_hash(const rf_plan *plan, uint64_t h);

#endif
