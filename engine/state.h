/* state.h - the consumer's position on disk (rf_position, collate.h):
 * encoding and its checks, the comparison of a saved state with the
 * configuration that resumes it (naming what differs), and the elastic
 * re-split: what a saved position leaves of its epoch, as a sequence of
 * stream segments for the new world.
 *
 * Encoding (version 3, little-endian, 112 + 16 * nsegs bytes):
 *   0 "RFSTATE3"  8 u32 version  12 u32 flags (1 shuffle, 2 pad, 4 has_seq)
 *   16 u64 dataset hash  24 u64 dataset records  32 u32 shards  36 u32 window
 *   40 u64 seed  48 u32 world  52 u32 nsegs  56 u64 epoch  64 u64 record
 *   72 u64 batch  80 u64 skipped  88 u32 skipped blocks
 *   92 u64 names hash  100 u64 content hash (rf_state_content)
 *   108 nsegs x (u64 start, u64 records), then u32 CRC-32C of all before it.
 * A state without a re-split has no segments (112 bytes). A mixture's
 * state has flag 8 and, after the segments, u32 sources, u32 stop_first,
 * u64 mix_samples and per source u64 shape hash, u64 records per pass,
 * u64 weight in millionths (16 + 24 * sources bytes); with flag 16 (its
 * weights changed at a resume) the change follows (mix_rebase.h's
 * encoding: the epoch it starts in, that epoch's samples, and per source
 * the ordinals still to come). Version 2
 * ("RFSTATE2", 96 + 16 * nsegs bytes) is version 3 without the two hashes
 * (segments at 92): still read, and written back as it was; it names no
 * content, so only its shape is checked. */
#ifndef RF_STATE_H
#define RF_STATE_H

#include "collate.h"
#include "crc32c.h"
#include "plan.h"

#define RF_STATE_MAGIC     "RFSTATE3"
#define RF_STATE_VERSION   3u
#define RF_STATE_HEAD      108
#define RF_STATE_BYTES_MIN (RF_STATE_HEAD + 4)
/* a mixture's part, at most (mix.h's sources, mix_rebase.h's ranges) */
#define RF_STATE_MIX_MAX      (16 + 24 * 4096 + 20 + 16 * 4096 + 16 * 65536)
#define RF_STATE_BYTES_MAX    (RF_STATE_BYTES_MIN + 16 * RF_PLAN_SEGMENTS_MAX + RF_STATE_MIX_MAX)
#define RF_STATE_V2_HEAD      92
#define RF_STATE_V2_BYTES_MIN (RF_STATE_V2_HEAD + 4)

/* The stream-identity fields of a position for this plan. */
void rf_state_identity(const rf_plan *plan, rf_position *out);
/* The dataset's content identity, shard by shard in order: each shard's
 * name (its last path component, without a query: the same dataset read
 * through another store or directory is the same) into names_hash; its
 * format, layout (object bytes, records, every unit's offset, stored and
 * decoded bytes and records) and user metadata into content_hash. */
void rf_state_content_add(rf_position *p, const char *name, const char *format,
                          const rf_shard_index *ix);
/* 0 when `saved` is a position in the stream `now` describes; else an error
 * naming the first setting that differs, its saved value and the new one. */
int rf_state_check(const rf_position *saved, const rf_position *now, rf_error *err);
/* A mixture state whose sources are `now`'s but whose weights differ (as
 * shares): a resume that changes the weights. */
bool rf_state_mix_reweighted(const rf_position *saved, const rf_position *now);
/* rf_state_check, the weights (and with stop_first the epoch's size they
 * set) free to differ. */
int rf_state_check_reweight(const rf_position *saved, const rf_position *now, rf_error *err);
/* "0.5,0.3,0.2": a mixture position's weights (the first 8), for messages. */
void rf_state_mix_weights_str(const rf_position *p, char *out, size_t cap);
/* Elastic resume: the records of saved->epoch that no rank had taken when
 * every rank of saved->world stood at saved->record, in sequence order, as
 * merged segments of the global stream (*segs malloc'd, *nsegs may be 0).
 * -E2BIG (named) past RF_PLAN_SEGMENTS_MAX segments. */
int rf_state_remaining(const rf_position *saved, rf_segment **segs, uint32_t *nsegs, rf_error *err);
/* What the ranks of saved->world had taken of saved->epoch when each stood
 * at saved->record (with pad_tail, a slice that wraps takes positions
 * another rank took too): for a weight change, which subtracts it from
 * what remains. */
int rf_state_taken(const rf_position *saved, rf_segment **segs, uint32_t *nsegs, rf_error *err);
/* The state's checksum: CRC-32C, the one implementation in base/crc32c.c. */
static inline uint32_t rf_state_crc32c(const void *buf, size_t len)
{
	return rf_crc32c(0, buf, len);
}

#endif
