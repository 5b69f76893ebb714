/* fuzz_tar_index.c - libFuzzer target for WebDataset tar index files
 * (shards/tar_index.c, DALI wds2idx v1.2): the input is a u32 (little
 * endian) index length, the index's bytes, then a whole tar. The tar is
 * opened with the index beside it (rf_format_open_mem: the engine's
 * bounds and re-read rule checked at every step), and every unit of an
 * accepted layout decoded. An index the open and every decode accept must
 * give exactly the header scan's layout (the same samples, keys, fields and
 * units): a lying index may fail, never give other samples. */
#include "fuzz.h"
#include "tar.h"

static int open_tar(const uint8_t *tar, size_t tar_len, const uint8_t *idx, size_t idx_len,
                    bool scan_only, rf_shard_index **ix, void **priv, rf_error *err)
{
	rf_fmt_object objs[2] = {{.url = "fuzz.tar", .data = tar, .size = tar_len},
	                         {.url = "fuzz.idx", .data = idx, .size = idx_len}};
	rf_tar_opts opt = {.scan_only = scan_only};
	return rf_format_open_mem(&rf_tar_format, objs, 2, &opt, ix, priv, NULL, NULL, err);
}

/* Every unit decodes (0), or one fails RF_E_CORRUPT (1). */
static int decode_all(const uint8_t *tar, const rf_shard_index *ix, const void *priv)
{
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		FUZZ_CHECK(b->offset + b->compressed_bytes <= ix->file_bytes);
		size_t cap = (size_t)rf_fmt_table_bytes(b->records);
		uint8_t *table = malloc(cap);
		FUZZ_CHECK(table != NULL);
		rf_unit_records r;
		rf_error err = {0};
		int rc =
		    rf_tar_format.decode(NULL, ix, priv, u, tar + b->offset, b->compressed_bytes,
		                         table, cap, &r, "fuzz.tar", &err);
		free(table);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			FUZZ_CHECK(rc == RF_E_CORRUPT);
			return 1;
		}
		FUZZ_CHECK(r.records == b->records);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint32_t n = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
	             (uint32_t)data[3] << 24;
	if (n > size - 4)
		n = (uint32_t)(size - 4);
	/* exact-size copies: overreads are caught */
	size_t tar_len = size - 4 - n;
	uint8_t *idx = malloc(n ? n : 1), *tar = malloc(tar_len ? tar_len : 1);
	FUZZ_CHECK(idx && tar);
	memcpy(idx, data + 4, n);
	memcpy(tar, data + 4 + n, tar_len);
	rf_shard_index *ix = NULL, *sx = NULL;
	void *priv = NULL, *spriv = NULL;
	rf_error err = {0};
	int rc = open_tar(tar, tar_len, idx, n, false, &ix, &priv, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
	} else if (decode_all(tar, ix, priv) == 0) {
		/* accepted throughout: the scan must agree (or refuse the tar) */
		rf_error e2 = {0};
		if (open_tar(tar, tar_len, idx, n, true, &sx, &spriv, &e2) == 0) {
			if (n)
				FUZZ_CHECK(rf_tar_layout_from_index(priv));
			FUZZ_CHECK(!rf_tar_layout_from_index(spriv));
			FUZZ_CHECK(rf_tar_layout_equal(sx, spriv, ix, priv));
			rf_tar_format.close(sx, spriv);
		}
	}
	if (ix)
		rf_tar_format.close(ix, priv);
	free(idx);
	free(tar);
	return 0;
}
