/* rfs.h - byte layout of the native shard format (.rfs), shared by the
 * writer, the reader and the verifier. Internal; see docs/format.md. */
#ifndef RF_RFS_H
#define RF_RFS_H

#include "ringfeed.h"
#include "util.h"

#define RF_FOOTER_MAGIC       "RFSHARD1"
#define RF_FOOTER_MAGIC_BYTES 8
/* footer: magic(8) version(4) flags(4) index_offset(8) index_bytes(8)
 *         index_crc32c(4) footer_crc32c(4) */
#define RF_FOOTER_VERSION_AT      8
#define RF_FOOTER_FLAGS_AT        12
#define RF_FOOTER_INDEX_OFFSET_AT 16
#define RF_FOOTER_INDEX_BYTES_AT  24
#define RF_FOOTER_INDEX_CRC_AT    32
#define RF_FOOTER_CRC_AT          36

/* index header: blocks(4) total_records(8) largest_block_compressed(4)
 *               largest_block_decoded(4) largest_record(4) metadata_bytes(4) */
#define RF_INDEX_HEADER_BYTES 28
#define RF_INDEX_ENTRY_BYTES  24
/* The largest index a sound shard can have. */
#define RF_INDEX_BYTES_MAX                                                                         \
	((uint64_t)RF_INDEX_HEADER_BYTES + RF_METADATA_MAX +                                       \
	 (uint64_t)RF_INDEX_ENTRY_BYTES * RF_INDEX_BLOCKS_MAX)
/* A block's decoded bytes: payloads + 4 per record + 4 (the count). */
#define RF_BLOCK_TABLE_BYTES(records) (4 * (uint64_t)(records) + 4)
#define RF_RECORDS_MAX                UINT32_MAX /* per shard */

/* True when the RF_FOOTER_BYTES at footer start with the magic: a local
 * file without it is not a shard (or is truncated), which re-reading the
 * same bytes cannot change. */
static inline bool rf_footer_magic_ok(const void *footer)
{
	return memcmp(footer, RF_FOOTER_MAGIC, RF_FOOTER_MAGIC_BYTES) == 0;
}

/* "shard NAME" prefix helper: never NULL. */
static inline const char *rf_shard_name(const char *name)
{
	return name && *name ? name : "(unnamed shard)";
}

#endif
