/* fuzz_megatron.c - libFuzzer target for the Megatron index parser
 * (shards/megatron.c): the input is a u32 .bin size (little-endian, at most
 * 4 MiB) and then a whole .idx. The open is driven over memory as the
 * engine drives it (rf_format_open_mem); an accepted layout must add up
 * (units contiguous over the whole .bin, records = sequences, every unit
 * whole records within the unit target unless one record) and every unit
 * must decode to a table that ends at the unit's bytes. */
#include "format.h"
#include "fuzz.h"
#include "tokens.h"

#define FUZZ_BIN_BYTES_MAX (4u << 20)

static void check_layout(const rf_shard_index *ix, const void *priv, const uint8_t *bin,
                         uint64_t bin_len)
{
	uint64_t at = 0, records = 0;
	FUZZ_CHECK(ix->file_bytes == bin_len);
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		FUZZ_CHECK(b->offset == at && b->first_record == records);
		FUZZ_CHECK(b->records > 0);
		FUZZ_CHECK(b->compressed_bytes <= RF_TOK_UNIT_BYTES || b->records == 1);
		FUZZ_CHECK(b->decoded_bytes == b->compressed_bytes);
		size_t cap = rf_fmt_table_bytes(b->records);
		uint8_t *table = malloc(cap);
		FUZZ_CHECK(table != NULL);
		rf_unit_records out;
		rf_error err = {0};
		int rc = rf_format_megatron.decode(NULL, ix, priv, u, bin + at, b->compressed_bytes,
		                                   table, cap, &out, "fuzz.bin", &err);
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(out.records == b->records && out.base == bin + at);
		for (int64_t j = 0; j < out.records; j++)
			FUZZ_CHECK(rf_record_end(out.ends, j - 1) <= rf_record_end(out.ends, j));
		FUZZ_CHECK(rf_record_end(out.ends, (int64_t)out.records - 1) ==
		           b->compressed_bytes);
		free(table);
		at += b->compressed_bytes;
		records += b->records;
	}
	FUZZ_CHECK(at == bin_len && records == ix->records);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint64_t bin_len = rf_load_le32(data) % (FUZZ_BIN_BYTES_MAX + 1);
	uint8_t *bin = calloc(1, bin_len ? bin_len : 1);
	/* An exact-size copy, so reading one byte past the index is caught. */
	uint8_t *idx = malloc(size - 4 ? size - 4 : 1);
	FUZZ_CHECK(bin != NULL && idx != NULL);
	memcpy(idx, data + 4, size - 4);
	rf_fmt_object objs[2] = {{"fuzz.bin", bin, bin_len}, {"fuzz.idx", idx, size - 4}};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	uint64_t held = 0, reserved = 0;
	rf_error err = {0};
	int rc = rf_format_open_mem(&rf_format_megatron, objs, 2, NULL, &ix, &priv, &held,
	                            &reserved, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(strstr(err.msg, "fuzz.idx") != NULL);
	} else {
		FUZZ_CHECK(held <= reserved);
		check_layout(ix, priv, bin, bin_len);
		rf_format_megatron.close(ix, priv);
	}
	free(idx);
	free(bin);
	return 0;
}
