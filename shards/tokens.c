/* tokens.c - what the token-file formats share: dtype names and sizes, the
 * read units of a run of contiguous records (about 1 MiB of whole records
 * each, stored as they decode), a unit's record table, sibling names
 * (PREFIX.bin -> PREFIX.idx). */
#include "tokens.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	unsigned bytes;
} dtypes[RF_TOK_DTYPES] = {
    [RF_TOK_U8] = {"uint8", 1},    [RF_TOK_I8] = {"int8", 1},    [RF_TOK_I16] = {"int16", 2},
    [RF_TOK_I32] = {"int32", 4},   [RF_TOK_I64] = {"int64", 8},  [RF_TOK_F64] = {"float64", 8},
    [RF_TOK_F32] = {"float32", 4}, [RF_TOK_U16] = {"uint16", 2}, [RF_TOK_U32] = {"uint32", 4},
};

const char *rf_tok_dtype_name(int code)
{
	return code > 0 && code < RF_TOK_DTYPES ? dtypes[code].name : NULL;
}

unsigned rf_tok_dtype_bytes(int code)
{
	return code > 0 && code < RF_TOK_DTYPES ? dtypes[code].bytes : 0;
}

int rf_tok_dtype_parse(const char *name)
{
	for (int c = 1; name && c < RF_TOK_DTYPES; c++)
		if (strcmp(name, dtypes[c].name) == 0)
			return c;
	return RF_TOK_NONE;
}

uint64_t rf_tok_units_bound(uint64_t stored_bytes, uint64_t records)
{
	/* Two consecutive units hold more than the target together, or the
	 * first is full of records: so at most 2 per target of bytes, plus
	 * one per RECORDS_MAX records, plus the last. */
	return 2 * (stored_bytes / RF_TOK_UNIT_BYTES + 1) + records / RF_TOK_UNIT_RECORDS_MAX + 1;
}

static void unit_close(rf_shard_index *ix, rf_block_info *b)
{
	b->decoded_bytes = b->compressed_bytes;
	ix->largest_block_compressed_bytes =
	    RF_MAX(ix->largest_block_compressed_bytes, b->compressed_bytes);
	ix->largest_block_decoded_bytes = ix->largest_block_compressed_bytes;
	ix->compressed_bytes += b->compressed_bytes;
	ix->blocks++;
}

int rf_tok_units_build(rf_shard_index *ix, const uint32_t *rec_tokens, uint64_t n,
                       unsigned itemsize, uint64_t base, const char *name, rf_error *err)
{
	uint64_t bytes = 0;
	for (uint64_t i = 0; i < n; i++)
		bytes += (uint64_t)rec_tokens[i] * itemsize; /* each <= 256 MiB, n <= 2^31 */
	uint64_t cap = n ? rf_tok_units_bound(bytes, n) : 0;
	if (cap > UINT32_MAX)
		return rf_fail(err, RF_E_CORRUPT, "%s: %" PRIu64 " records make too many units",
		               name, n);
	ix->block = calloc(cap ? cap : 1, sizeof(*ix->block));
	ix->metadata = calloc(1, 1);
	if (!ix->block || !ix->metadata)
		return rf_fail(err, -ENOMEM, "%s: no memory for %" PRIu64 " units", name, cap);
	uint64_t at = base;
	rf_block_info *b = NULL;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t len = rec_tokens[i] * itemsize;
		if (b && (b->compressed_bytes + (uint64_t)len > RF_TOK_UNIT_BYTES ||
		          b->records == RF_TOK_UNIT_RECORDS_MAX)) {
			unit_close(ix, b);
			b = NULL;
		}
		if (!b) {
			b = &ix->block[ix->blocks];
			*b = (rf_block_info){.offset = at, .first_record = i};
		}
		b->compressed_bytes += len;
		b->records++;
		at += len;
		ix->largest_record_bytes = RF_MAX(ix->largest_record_bytes, len);
	}
	if (b)
		unit_close(ix, b);
	ix->records = n;
	ix->decoded_bytes = ix->compressed_bytes;
	return 0;
}

int rf_tok_unit_table(const rf_shard_index *ix, const uint32_t *rec_tokens, unsigned itemsize,
                      uint32_t u, size_t src_len, void *dst, size_t dst_cap, rf_unit_records *out,
                      const void *src, const char *name, rf_error *err)
{
	if (u >= ix->blocks)
		return rf_fail(err, -EINVAL, "%s: unit %u of %u", name, u, ix->blocks);
	const rf_block_info *b = &ix->block[u];
	if (src_len != b->compressed_bytes)
		return rf_fail(err, RF_E_CORRUPT, "%s: unit %u: got %zu bytes, its size is %u",
		               name, u, src_len, b->compressed_bytes);
	if (dst_cap < rf_fmt_table_bytes(b->records))
		return rf_fail(err, -EINVAL,
		               "%s: unit %u: a table of %u records needs %" PRIu64
		               " bytes, got %zu",
		               name, u, b->records, rf_fmt_table_bytes(b->records), dst_cap);
	uint8_t *t = dst;
	uint32_t end = 0;
	for (uint32_t j = 0; j < b->records; j++) {
		end += rec_tokens[b->first_record + j] * itemsize;
		rf_store_le32(t + 4 * (size_t)j, end);
	}
	rf_store_le32(t + 4 * (size_t)b->records, b->records);
	if (end != b->compressed_bytes) /* the layout is ours: a broken one is a bug */
		return rf_fail(err, -EINVAL, "%s: unit %u: records make %u bytes, not %u", name, u,
		               end, b->compressed_bytes);
	*out = (rf_unit_records){.base = src, .ends = dst, .records = b->records};
	return 0;
}

void rf_tok_index_free(rf_shard_index *ix)
{
	if (!ix)
		return;
	free(ix->block);
	free(ix->metadata);
	free(ix);
}

char *rf_tok_sibling(const char *url, const char *suffix)
{
	size_t path_len = strcspn(url, "?");
	size_t stem = path_len;
	if (stem >= 4 &&
	    (memcmp(url + stem - 4, ".bin", 4) == 0 || memcmp(url + stem - 4, ".idx", 4) == 0))
		stem -= 4;
	size_t sfx = strlen(suffix), rest = strlen(url + path_len);
	char *s = malloc(stem + sfx + rest + 1);
	if (!s)
		return NULL;
	memcpy(s, url, stem);
	memcpy(s + stem, suffix, sfx);
	memcpy(s + stem + sfx, url + path_len, rest + 1);
	return s;
}
