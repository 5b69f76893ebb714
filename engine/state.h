/* state.h - the resume fingerprint: a hash of everything that decides the
 * stream (plan configuration and shard shapes, collation settings), stored
 * in rf_position so a saved state only resumes the same configuration.
 * Encoding of rf_position itself: rf_state_encode / rf_state_decode in
 * collate.h, implemented in state.c. */
#ifndef RF_STATE_H
#define RF_STATE_H

#include "collate.h"
#include "plan.h"

/* State encoding (RF_STATE_BYTES = 56, little-endian):
 *   0 "RFSTATE1"  8 u32 version  12 u64 fingerprint  20 u64 epoch
 *   28 u64 record  36 u64 batch  44 u64 skipped  52 u32 CRC-32C of bytes 0..51 */
#define RF_STATE_MAGIC   "RFSTATE1"
#define RF_STATE_VERSION 1u

uint64_t rf_state_fingerprint(const rf_plan *plan, const rf_collate_params *c);
/* CRC-32C (Castagnoli), bitwise: for the few bytes of a state. */
uint32_t rf_state_crc32c(const void *buf, size_t len);

#endif
