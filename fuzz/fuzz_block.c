/* fuzz_block.c - libFuzzer target for one block: zstd frame checks,
 * single-pass decoding into a slab of the declared size, and the record
 * table. Input: u32 records, u32 decoded bytes (all ones: the frame's
 * own content size), then the frame. The index
 * entry is built from those (a sound index may say anything within its
 * limits), so the decoder meets frames that declare other sizes, no size,
 * bombs that decode past the slab, and tables that lie. The input is also
 * checked as a decoded block directly (rf_block_table_check), so table
 * mutations are not filtered through zstd. */
#include "fuzz.h"
#include "rfs.h"

#include <zstd.h>

#define FUZZ_SLAB_BYTES_MAX (16u << 20)

static rf_decoder *decoder;

static void check_table(const uint8_t *p, size_t len, uint32_t records, int rc,
                        const uint32_t *ends, const rf_error *err)
{
	if (rc < 0) {
		fuzz_check_error(rc, err);
		return;
	}
	FUZZ_CHECK(len >= RF_BLOCK_TABLE_BYTES(records));
	size_t table_at = len - (size_t)RF_BLOCK_TABLE_BYTES(records);
	FUZZ_CHECK((const uint8_t *)ends == p + table_at);
	FUZZ_CHECK(rf_load_le32(p + len - 4) == records);
	for (int64_t i = 0; i < records; i++)
		FUZZ_CHECK(rf_record_end(ends, i - 1) <= rf_record_end(ends, i));
	FUZZ_CHECK(rf_record_end(ends, (int64_t)records - 1) == table_at);
}

static void table_direct(const uint8_t *data, size_t size, uint32_t records)
{
	rf_error err = {0};
	const uint32_t *ends = NULL;
	int rc = rf_block_table_check(data, size, records, &ends, "fuzz.rfs", 0, &err);
	check_table(data, size, records, rc, ends, &err);
	if (size >= 4) { /* the count the block itself gives, as a sound index would */
		uint32_t own = rf_load_le32(data + size - 4);
		rc = rf_block_table_check(data, size, own, &ends, "fuzz.rfs", 0, &err);
		check_table(data, size, own, rc, ends, &err);
	}
}

static void decode(const uint8_t *frame, size_t len, uint32_t records, uint32_t decoded)
{
	rf_block_info bi = {.offset = 0,
	                    .compressed_bytes = (uint32_t)len,
	                    .decoded_bytes = decoded,
	                    .records = records,
	                    .first_record = 0};
	rf_shard_index ix = {.blocks = 1,
	                     .records = records,
	                     .largest_block_compressed_bytes = bi.compressed_bytes,
	                     .largest_block_decoded_bytes = decoded,
	                     .compressed_bytes = len,
	                     .decoded_bytes = decoded,
	                     .metadata = (char *)"",
	                     .block = &bi};
	uint8_t *slab = malloc(decoded ? decoded : 1);
	FUZZ_CHECK(slab != NULL);
	rf_error err = {0};
	const uint32_t *ends = NULL;
	int rc =
	    rf_block_decode(decoder, &ix, 0, frame, len, slab, decoded, &ends, "fuzz.rfs", &err);
	check_table(slab, decoded, records, rc, ends, &err);
	free(slab);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!decoder && !(decoder = rf_decoder_new()))
		abort();
	if (size < 8)
		return 0;
	uint32_t records = rf_load_le32(data);
	/* decoded bytes: as given, or (all ones) what the frame declares */
	uint64_t decoded = rf_load_le32(data + 4);
	if (decoded == UINT32_MAX)
		decoded = ZSTD_getFrameContentSize(data + 8, size - 8);
	if (decoded > FUZZ_SLAB_BYTES_MAX)
		decoded = 4096;
	uint8_t *rest = malloc(size - 8 ? size - 8 : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(rest != NULL);
	memcpy(rest, data + 8, size - 8);
	table_direct(rest, size - 8, records);
	decode(rest, size - 8, records, (uint32_t)decoded);
	free(rest);
	return 0;
}
