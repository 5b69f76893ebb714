/* collate.h - builds one batch from records at consecutive stream positions.
 * Pure: the caller supplies record bytes through a callback (records must be
 * resident) and the batch memory through an rf_allocator. */
#ifndef RF_COLLATE_H
#define RF_COLLATE_H

#include "ringfeed.h"
#include <stdbool.h>

typedef struct rf_collate_params {
	uint32_t batch_records; /* max records per batch (>= 1) */
	uint64_t batch_bytes;   /* if > 0: max payload bytes per batch; a larger record
	                           is a batch of its own */
	uint32_t pad_to;        /* 0 = ragged; else rows of pad_to bytes */
	bool truncate;          /* padded: cut records longer than pad_to (else error) */
} rf_collate_params;

/* Returns the record at stream position pos (pointer into a resident decoded
 * block, and its length). Must not fail for positions the caller made resident. */
typedef void (*rf_record_fn)(void *ctx, uint64_t pos, const uint8_t **data, uint32_t *len);

/* Decides how many records starting at `pos` (at most `available`, the count
 * of resident records from pos; `epoch_end` the epoch's record count) form
 * the next batch. Returns the count (>= 1), or 0 when more records must be
 * resident before the batch is known (available too small). Sets *bytes to
 * the batch buffer size (payload + offsets + lengths, aligned). Errors
 * (padded record too long without truncate) are negative, with a message
 * naming the stream position. */
long rf_collate_plan(const rf_collate_params *p, rf_record_fn fn, void *ctx, uint64_t pos,
                     uint64_t available, uint64_t epoch_end, uint64_t *bytes, rf_error *err);
/* Builds the batch of `count` records at pos into `mem` (of `bytes` from
 * rf_collate_plan), filling b's pointers into mem. */
void rf_collate_fill(const rf_collate_params *p, rf_record_fn fn, void *ctx, uint64_t pos,
                     uint32_t count, void *mem, uint64_t bytes, rf_batch *b);

/* Checks the parameters (batch_records >= 1, pad_to within the largest block). */
int rf_collate_check(const rf_collate_params *p, rf_error *err);
/* Batch buffer bytes for `records` records of payload_bytes (padded: records *
 * pad_to): payload, then int64 offsets[records + 1], then u32 lengths[records],
 * each section 64-byte aligned. For budget checks (largest batch). */
uint64_t rf_collate_bytes(uint32_t records, uint64_t payload_bytes);

/* Consumer position, saved by rf_state_save and given back to resume
 * (encoding: state.h). It names the stream it is a position in (checked
 * at resume, each field named when it differs) and the partition it refers
 * to (world, tail policy, the epoch's sequence), so that any rank's state
 * resumes the whole job on any world size. */
typedef struct rf_position {
	uint64_t dataset_hash; /* rf_plan_dataset_hash: shards, blocks, records per block */
	uint64_t dataset_records;
	uint32_t dataset_shards;
	uint32_t window; /* effective shuffle window (1: none) */
	uint64_t seed;
	bool shuffle;
	bool pad;       /* tail policy of the partition */
	bool has_seq;   /* the epoch's sequence is segs (else the whole stream) */
	uint32_t world; /* of the partition `record` is a position in */
	uint64_t epoch;
	uint64_t record;  /* this rank's stream position within the epoch (all ranks alike) */
	uint64_t batch;   /* batches consumed within the epoch */
	uint64_t skipped; /* skip policy: records of the blocks skipped in the epoch
	                     before `record` (what the bound counts) */
	uint32_t skipped_blocks; /* and those blocks */
	uint32_t nsegs;
	struct rf_segment *segs; /* nsegs (owned by whoever filled the position) */
	uint32_t version;        /* of the encoding it came from (0: the current one) */
	uint64_t names_hash;     /* rf_state_content_add (version 3 on) */
	uint64_t content_hash;
	/* a mixture's identity (mix_sources 0: one dataset): per source its
	 * shape hash, records per pass and weight (millionths), 3 words each;
	 * mix_src is the plan's (read-only) or, decoded, owned (mix_owned) */
	uint32_t mix_sources;
	bool mix_stop_first;
	bool mix_owned;
	uint64_t mix_samples;
	uint64_t *mix_src;
	/* a mixture whose weights changed at a resume (mix_rebase.h; NULL:
	 * never): the plan's (read-only) or, decoded, owned (mix_owned) */
	struct rf_mix_rebase *mix_rb;
} rf_position;

/* Bytes of the encoding of p. */
size_t rf_state_bytes(const rf_position *p);
int rf_state_encode(const rf_position *p, void *buf, size_t cap); /* returns bytes */
/* Decodes and checks a state; p->segs is malloc'd (rf_position_clear). */
int rf_state_decode(const void *buf, size_t len, rf_position *p, rf_error *err);
void rf_position_clear(rf_position *p);

#endif
