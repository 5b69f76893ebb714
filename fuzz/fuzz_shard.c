/* fuzz_shard.c - libFuzzer target for the .rfs reader: the input is a whole
 * shard file. Footer, index, then every block decoded and its record table
 * walked, as the engine does with bytes from any source. A checksum would
 * stop most mutations at the footer, so when the input's CRCs do not match,
 * the same bytes are also parsed with both CRCs recomputed: mutations then
 * reach the index fields, the frames and the record tables behind them. */
#include "crc32c.h"
#include "fuzz.h"
#include "rfs.h"

#define FUZZ_SLAB_BYTES_MAX     (16u << 20) /* larger blocks are checked, not decoded */
#define FUZZ_BLOCKS_DECODED_MAX 256

static rf_decoder *decoder;

/* Everything rf_index_parse promises about an index it accepts. */
static void check_index(const rf_shard_index *ix, const rf_footer *ft, uint64_t size)
{
	uint64_t next = 0, records = 0, c = 0, d = 0;
	FUZZ_CHECK(ix->blocks <= RF_INDEX_BLOCKS_MAX && ix->metadata && ix->file_bytes == size);
	FUZZ_CHECK(ix->largest_block_decoded_bytes <= RF_BLOCK_DECODED_MAX);
	for (uint32_t b = 0; b < ix->blocks; b++) {
		const rf_block_info *bi = &ix->block[b];
		FUZZ_CHECK(bi->offset == next && bi->compressed_bytes > 0 && bi->records > 0);
		FUZZ_CHECK(bi->first_record == records);
		FUZZ_CHECK(bi->decoded_bytes >= RF_BLOCK_TABLE_BYTES(bi->records));
		FUZZ_CHECK(bi->decoded_bytes <= ix->largest_block_decoded_bytes);
		next += bi->compressed_bytes;
		records += bi->records;
		c += bi->compressed_bytes;
		d += bi->decoded_bytes;
		FUZZ_CHECK(next <= ft->index_offset);
	}
	FUZZ_CHECK(next == ft->index_offset && records == ix->records);
	FUZZ_CHECK(c == ix->compressed_bytes && d == ix->decoded_bytes);
}

static void decode_blocks(const uint8_t *data, const rf_shard_index *ix)
{
	for (uint32_t b = 0; b < ix->blocks && b < FUZZ_BLOCKS_DECODED_MAX; b++) {
		const rf_block_info *bi = &ix->block[b];
		if (bi->decoded_bytes > FUZZ_SLAB_BYTES_MAX)
			continue;
		uint8_t *slab = malloc(bi->decoded_bytes ? bi->decoded_bytes : 1);
		FUZZ_CHECK(slab != NULL);
		const uint32_t *ends = NULL;
		rf_error err = {0};
		int rc = rf_block_decode(decoder, ix, b, data + bi->offset, bi->compressed_bytes,
		                         slab, bi->decoded_bytes, &ends, "fuzz.rfs", &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
		} else {
			uint32_t table_at =
			    bi->decoded_bytes - (uint32_t)RF_BLOCK_TABLE_BYTES(bi->records);
			FUZZ_CHECK((const uint8_t *)ends == slab + table_at);
			for (int64_t i = 0; i < bi->records; i++) {
				FUZZ_CHECK(rf_record_end(ends, i - 1) <= rf_record_end(ends, i));
				FUZZ_CHECK(rf_record_end(ends, i) <= table_at);
			}
			FUZZ_CHECK(rf_record_end(ends, (int64_t)bi->records - 1) == table_at);
		}
		free(slab);
	}
}

static void walk(const uint8_t *data, size_t size)
{
	rf_error err = {0};
	rf_footer ft;
	int rc = rf_footer_parse(data, size, size, "fuzz.rfs", &ft, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		return;
	}
	FUZZ_CHECK(ft.index_offset + ft.index_bytes + RF_FOOTER_BYTES == size);
	rf_shard_index *ix = NULL;
	rc = rf_index_parse(data + ft.index_offset, ft.index_bytes, &ft, size, "fuzz.rfs", &ix,
	                    &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(ix == NULL);
		return;
	}
	check_index(ix, &ft, size);
	decode_blocks(data, ix);
	rf_index_free(ix);
}

/* Recomputes the index and footer CRCs of a copy; false when nothing changed
 * (or the footer's index range does not lie inside the file). */
static bool fix_crcs(uint8_t *p, size_t size)
{
	if (size < RF_FOOTER_BYTES)
		return false;
	uint8_t *f = p + size - RF_FOOTER_BYTES;
	uint64_t at = rf_load_le64(f + RF_FOOTER_INDEX_OFFSET_AT);
	uint64_t n = rf_load_le64(f + RF_FOOTER_INDEX_BYTES_AT);
	bool changed = false;
	if (at <= size - RF_FOOTER_BYTES && n <= size - RF_FOOTER_BYTES - at) {
		uint32_t crc = rf_crc32c(0, p + at, n);
		changed |= crc != rf_load_le32(f + RF_FOOTER_INDEX_CRC_AT);
		rf_store_le32(f + RF_FOOTER_INDEX_CRC_AT, crc);
	}
	uint32_t crc = rf_crc32c(0, f, RF_FOOTER_CRC_AT);
	changed |= crc != rf_load_le32(f + RF_FOOTER_CRC_AT);
	rf_store_le32(f + RF_FOOTER_CRC_AT, crc);
	return changed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!decoder && !(decoder = rf_decoder_new()))
		abort();
	/* An exact-size copy, so reading one byte past the input is caught. */
	uint8_t *copy = malloc(size ? size : 1);
	FUZZ_CHECK(copy != NULL);
	memcpy(copy, data, size);
	walk(copy, size);
	if (fix_crcs(copy, size))
		walk(copy, size);
	free(copy);
	return 0;
}
