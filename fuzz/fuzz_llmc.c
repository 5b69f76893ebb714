/* fuzz_llmc.c - libFuzzer target for the llm.c / nanoGPT token file reader
 * (shards/llmc.c): byte 0 chooses the options (bit 0: a headerless dtype is
 * named, bits 1-2 which; bit 3: an end-of-text token, the next two bytes;
 * bits 4-7: seq_len 0..15, widened to int64 when bit 3 of byte 3 is set),
 * the rest is the whole file. An accepted layout must cover the tokens with
 * units whose records decode to tables that end at the unit's bytes. */
#include "format.h"
#include "fuzz.h"
#include "tokens.h"

static const uint8_t raw_dtypes[4] = {RF_TOK_U16, RF_TOK_U32, RF_TOK_U8, RF_TOK_I64};

static void check_layout(const rf_shard_index *ix, const void *priv, const uint8_t *file,
                         size_t len)
{
	uint64_t records = 0;
	FUZZ_CHECK(ix->file_bytes == len);
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		FUZZ_CHECK(b->offset <= len && b->compressed_bytes <= len - b->offset);
		FUZZ_CHECK(b->first_record == records && b->records > 0);
		size_t cap = RF_MAX(b->decoded_bytes, rf_fmt_table_bytes(b->records));
		uint8_t *dst = malloc(cap);
		FUZZ_CHECK(dst != NULL);
		rf_unit_records out;
		rf_error err = {0};
		int rc =
		    rf_format_llmc.decode(NULL, ix, priv, u, file + b->offset, b->compressed_bytes,
		                          dst, cap, &out, "fuzz.bin", &err);
		FUZZ_CHECK(rc == 0 && out.records == b->records);
		for (int64_t j = 0; j < out.records; j++)
			FUZZ_CHECK(rf_record_end(out.ends, j - 1) <= rf_record_end(out.ends, j));
		FUZZ_CHECK(rf_record_end(out.ends, (int64_t)out.records - 1) <= cap);
		free(dst);
		records += b->records;
	}
	FUZZ_CHECK(records == ix->records);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	rf_tok_opts opt = {0};
	if (data[0] & 1)
		opt.token_dtype = raw_dtypes[(data[0] >> 1) & 3];
	if (data[0] & 8) {
		opt.has_eot = true;
		opt.eot_token = (uint64_t)data[1] | (uint64_t)data[2] << 8;
	}
	opt.seq_len = data[0] >> 4;
	if (opt.seq_len && (data[3] & 8))
		opt.token_out = RF_TOK_I64;
	size_t len = size - 4;
	uint8_t *file = malloc(len ? len : 1); /* exact size: an overread is caught */
	FUZZ_CHECK(file != NULL);
	memcpy(file, data + 4, len);
	rf_fmt_object ob = {"fuzz.bin", file, len};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	uint64_t held = 0, reserved = 0;
	rf_error err = {0};
	int rc =
	    rf_format_open_mem(&rf_format_llmc, &ob, 1, &opt, &ix, &priv, &held, &reserved, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(strstr(err.msg, "fuzz.bin") != NULL);
	} else {
		FUZZ_CHECK(held <= reserved);
		check_layout(ix, priv, file, len);
		rf_format_llmc.close(ix, priv);
	}
	free(file);
	return 0;
}
