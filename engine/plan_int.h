/* plan_int.h - what the files of the plan share (internal to plan.c,
 * plan_order.c and plan_rank.c; nobody else includes it: the engine sees
 * plan.h).
 *
 *   plan.c        the plan object: the shard indexes checked and copied,
 *                 its memory, the epoch's sequence (rf_plan_set_sequence),
 *                 the dataset-wide bounds and hash
 *   plan_order.c  the epoch's global stream: the shard, block and window
 *                 permutations (the window cache)
 *   plan_rank.c   this rank's part of the sequence: the partition, its
 *                 pieces and units (rf_plan_epoch), and the lookups in
 *                 local coordinates */
#ifndef RF_PLAN_INT_H
#define RF_PLAN_INT_H

#include "plan.h"

#define PLAN_WINDOW_SLOTS 2

typedef struct plan_window {
	uint64_t number; /* global window number, UINT64_MAX when the slot is empty */
	uint64_t used;   /* clock of the last use, for replacement */
	uint32_t *perm;  /* window_cap entries */
} plan_window;

/* Mutable cache behind a const plan: locate is a lookup for its callers. Not
 * thread-safe: one thread (the collator) locates at a time. */
typedef struct plan_cache {
	uint64_t clock;
	plan_window slot[PLAN_WINDOW_SLOTS];
} plan_cache;

/* A contiguous range of the global stream in this rank's part. */
typedef struct plan_piece {
	uint64_t x, len; /* global stream range [x, x + len) */
	uint64_t wa, wb; /* global plan range of its windows */
	uint64_t q;      /* local stream position of x */
	uint64_t p;      /* local plan position of its first unit */
	uint64_t g;      /* global plan position of its first unit */
	uint64_t plen;   /* records of its units */
	size_t u0, u1;   /* its units */
} plan_piece;

struct rf_plan {
	rf_plan_params p;
	uint64_t window; /* effective window: 1 when not shuffling */
	uint32_t nshards;
	uint64_t *shard_first;   /* nshards + 1: first block of each shard in block_records */
	uint32_t *block_records; /* records per block, all shards */
	uint64_t total_blocks;
	uint64_t total_records; /* N */
	uint64_t nonempty_blocks;
	uint32_t min_records; /* fewest records in a non-empty block (0: none) */
	uint32_t shard_blocks_max;
	uint32_t *shard_order; /* nshards */
	uint8_t *shard_seq;    /* nshards: 1 for a sequential layout (blocks kept in order) */
	uint64_t *shard_start; /* nshards + 1: global plan position of each shard in order */
	uint32_t *block_perm;  /* shard_blocks_max: scratch */
	uint8_t *marks;        /* window_cap: scratch for boundary windows */
	rf_unit *units;
	size_t unit_count, units_cap;
	plan_piece *pieces;
	uint32_t npieces, pieces_cap;
	rf_segment *seq; /* the override sequence of seq_epoch */
	uint64_t *seq_prefix;
	uint32_t nseq;
	uint64_t seq_epoch, seq_start;
	rf_segment whole;
	uint64_t epoch;
	uint64_t epoch_records, plan_records, slice;
	rf_plan_tail tail;
	uint32_t window_cap; /* entries per cached window permutation */
	plan_cache *cache;
	uint64_t memory_bytes;
	struct plan_mix *mix;              /* a mixture's sources (plan_mix.c), or NULL */
	const struct plan_mix_ops *mixops; /* and its side of the plan */
};

/* plan.c: grows the unit array to hold `n` units. */
int rf_plan_units_reserve(rf_plan *plan, size_t n, rf_error *err);

/* plan.c: grows the piece array to hold `n` pieces. */
int rf_plan_pieces_reserve(rf_plan *plan, uint32_t n, rf_error *err);

/* plan_rank.c: the piece holding local stream position q (< E). */
const plan_piece *rf_plan_piece_at_stream(const rf_plan *plan, uint64_t q);

/* A mixture's side of the plan (plan_mix.c, which sits above plan.c and
 * plan_rank.c: it makes sub-plans of them; they reach it only through this
 * table, set by rf_plan_new_mix, so the files call each other one way). */
typedef struct plan_mix_ops {
	int (*epoch)(rf_plan *plan, rf_error *err); /* after the pieces */
	void (*free)(struct plan_mix *mx);
	uint64_t (*memory_bytes)(const rf_plan *plan);
	uint64_t (*hash)(const rf_plan *plan);
	void (*locate)(const rf_plan *plan, uint64_t q, size_t *unit, uint32_t *record);
	uint64_t (*resident_stream)(const rf_plan *plan, uint64_t plan_pos);
	uint64_t (*need)(const rf_plan *plan, uint64_t stream_pos);
	uint64_t (*window_end)(const rf_plan *plan, uint64_t plan_pos);
	uint32_t (*units_in_window_max)(const rf_plan *plan);
	uint64_t (*span_units_max)(const rf_plan *plan, uint64_t span_records);
} plan_mix_ops;

/* plan_order.c */
/* The permutation of global window `number` (n records), cached or computed. */
const uint32_t *rf_plan_window_perm(const rf_plan *plan, uint64_t number, uint32_t n);
/* Records in global window `number` (the last one may be short). */
uint32_t rf_plan_window_size(const rf_plan *plan, uint64_t number);
/* Global stream position -> global plan position. */
uint64_t rf_plan_global_to_plan(const rf_plan *plan, uint64_t x);
/* The shard order of `epoch` and each shard's global plan position. */
void rf_plan_shard_order(rf_plan *plan, uint64_t epoch);
/* The block order of shard s in this epoch, into block_perm; its block count. */
uint32_t rf_plan_block_order(rf_plan *plan, uint32_t s);

#endif
