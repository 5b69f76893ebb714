/* rfs_read.c - the .rfs reader: footer and index parsing from bytes of any
 * source (file, HTTP range, memory) and single-pass block decoding into a
 * caller's slab. Every field is untrusted: each length, offset and count is
 * checked against the file size and the format's limits before it is used,
 * and nothing is allocated from a field before that check. */
#include "crc32c.h"
#include "rfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader */
#include <zstd.h>

#define U64(x) ((unsigned long long)(x))
/* A zstd block decodes to at most 128 KiB and takes at least 4 bytes (an RLE
 * block: 3-byte header + 1), so no frame decodes to more than 32768 times its
 * length. Checking it bounds every slab by the bytes actually present. */
#define RF_ZSTD_RATIO_MAX 32768u

RF_API int rf_footer_parse(const void *buf, size_t len, uint64_t file_bytes, const char *name,
                           rf_footer *out, rf_error *err)
{
	name = rf_shard_name(name);
	if (file_bytes < RF_FOOTER_BYTES)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: file is %llu bytes, shorter than the %d-byte footer "
		               "(truncated?) at byte 0",
		               name, U64(file_bytes), RF_FOOTER_BYTES);
	uint64_t at = file_bytes - RF_FOOTER_BYTES;
	if (len < RF_FOOTER_BYTES)
		return rf_fail(err, -EINVAL,
		               "shard %s: footer at byte %llu: got %zu bytes, need %d", name,
		               U64(at), len, RF_FOOTER_BYTES);
	const uint8_t *f = (const uint8_t *)buf + len - RF_FOOTER_BYTES;
	if (!rf_footer_magic_ok(f))
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: footer at byte %llu: bad magic: not an .rfs shard "
		               "(another format, or truncated)",
		               name, U64(at));
	uint32_t crc = rf_crc32c(0, f, RF_FOOTER_CRC_AT);
	if (crc != rf_load_le32(f + RF_FOOTER_CRC_AT))
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: footer at byte %llu: footer CRC-32C mismatch (stored %08x, "
		    "computed %08x)",
		    name, U64(at), rf_load_le32(f + RF_FOOTER_CRC_AT), crc);
	rf_footer ft = {
	    .version = rf_load_le32(f + RF_FOOTER_VERSION_AT),
	    .index_offset = rf_load_le64(f + RF_FOOTER_INDEX_OFFSET_AT),
	    .index_bytes = rf_load_le64(f + RF_FOOTER_INDEX_BYTES_AT),
	    .index_crc32c = rf_load_le32(f + RF_FOOTER_INDEX_CRC_AT),
	};
	if (ft.version != RF_FORMAT_VERSION)
		return rf_fail(
		    err, -EPROTONOSUPPORT,
		    "shard %s: footer at byte %llu: format version %u, this reader knows %u", name,
		    U64(at), ft.version, RF_FORMAT_VERSION);
	if (rf_load_le32(f + RF_FOOTER_FLAGS_AT) != 0)
		return rf_fail(err, -EPROTONOSUPPORT,
		               "shard %s: footer at byte %llu: unknown flags %08x", name, U64(at),
		               rf_load_le32(f + RF_FOOTER_FLAGS_AT));
	uint64_t end;
	if (ft.index_bytes < RF_INDEX_HEADER_BYTES || ft.index_bytes > RF_INDEX_BYTES_MAX ||
	    !rf_add_u64(ft.index_offset, ft.index_bytes, &end) || end != at)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: footer at byte %llu: index [%llu, +%llu) does not end where "
		    "the footer starts, or its size is outside %d..%llu",
		    name, U64(at), U64(ft.index_offset), U64(ft.index_bytes), RF_INDEX_HEADER_BYTES,
		    U64(RF_INDEX_BYTES_MAX));
	*out = ft;
	return 0;
}

/* Header fields, checked against the index size before anything is allocated. */
static int index_header(const uint8_t *p, const rf_footer *ft, const char *name, rf_shard_index *ix,
                        uint32_t *meta_len, rf_error *err)
{
	uint64_t at = ft->index_offset;
	ix->blocks = rf_load_le32(p);
	ix->records = rf_load_le64(p + 4);
	ix->largest_block_compressed_bytes = rf_load_le32(p + 12);
	ix->largest_block_decoded_bytes = rf_load_le32(p + 16);
	ix->largest_record_bytes = rf_load_le32(p + 20);
	*meta_len = rf_load_le32(p + 24);
	if (ix->blocks > RF_INDEX_BLOCKS_MAX)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: index at byte %llu: %u blocks exceeds RF_INDEX_BLOCKS_MAX %u", name,
		    U64(at), ix->blocks, RF_INDEX_BLOCKS_MAX);
	if (*meta_len > RF_METADATA_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: index at byte %llu: %u metadata bytes exceeds "
		               "RF_METADATA_MAX %u",
		               name, U64(at + 24), *meta_len, RF_METADATA_MAX);
	uint64_t want = RF_INDEX_HEADER_BYTES + (uint64_t)*meta_len +
	                (uint64_t)RF_INDEX_ENTRY_BYTES * ix->blocks;
	if (want != ft->index_bytes)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: index at byte %llu: %u blocks and %u metadata bytes need "
		               "%llu index bytes, footer says %llu",
		               name, U64(at), ix->blocks, *meta_len, U64(want),
		               U64(ft->index_bytes));
	if (ix->records > RF_RECORDS_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: index at byte %llu: %llu records exceeds %u per shard",
		               name, U64(at + 4), U64(ix->records), RF_RECORDS_MAX);
	if (ix->largest_block_decoded_bytes > RF_BLOCK_DECODED_MAX)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: index at byte %llu: largest block decodes to %u bytes, over "
		    "RF_BLOCK_DECODED_MAX",
		    name, U64(at + 16), ix->largest_block_decoded_bytes);
	return 0;
}

/* One entry: contiguous with the previous block, inside the data region,
 * sizes within the declared maxima, first record consistent. */
static int index_entry(const uint8_t *e, uint64_t at, uint32_t b, const rf_footer *ft,
                       const rf_shard_index *ix, uint64_t *next_offset, uint64_t *next_record,
                       const char *name, rf_block_info *bi, rf_error *err)
{
	bi->offset = rf_load_le64(e);
	bi->compressed_bytes = rf_load_le32(e + 8);
	bi->decoded_bytes = rf_load_le32(e + 12);
	bi->records = rf_load_le32(e + 16);
	bi->first_record = rf_load_le32(e + 20);
	const char *why = NULL;
	if (bi->offset != *next_offset)
		why = "block does not start where the previous one ends";
	else if (bi->compressed_bytes == 0 || bi->compressed_bytes > ft->index_offset - bi->offset)
		why = "frame extends past the start of the index";
	else if (bi->compressed_bytes > ix->largest_block_compressed_bytes)
		why = "compressed size exceeds the index's largest block";
	else if (bi->records == 0)
		why = "block holds no records";
	else if (bi->decoded_bytes > ix->largest_block_decoded_bytes)
		why = "decoded size exceeds the index's largest block";
	else if (bi->decoded_bytes > (uint64_t)bi->compressed_bytes * RF_ZSTD_RATIO_MAX)
		why = "decoded size is more than a zstd frame of that length can hold";
	else if (bi->decoded_bytes < RF_BLOCK_TABLE_BYTES(bi->records))
		why = "decoded size is smaller than its record table";
	else if (bi->first_record != *next_record)
		why = "first record number does not follow the previous block";
	else if (bi->records > ix->records - *next_record)
		why = "record count exceeds the shard's total";
	if (why)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: block %u at byte %llu (index entry at byte %llu): %s "
		               "(offset %llu, %u compressed, %u decoded, %u records, first %llu)",
		               name, b, U64(bi->offset), U64(at), why, U64(bi->offset),
		               bi->compressed_bytes, bi->decoded_bytes, bi->records,
		               U64(bi->first_record));
	*next_offset = bi->offset + bi->compressed_bytes;
	*next_record += bi->records;
	return 0;
}

/* Dataset figures must match the blocks exactly. */
static int index_totals(const rf_shard_index *ix, const rf_footer *ft, uint64_t next_offset,
                        uint64_t next_record, uint32_t max_c, uint32_t max_d, const char *name,
                        rf_error *err)
{
	const char *why = NULL;
	if (next_offset != ft->index_offset)
		why = "blocks do not end where the index starts";
	else if (next_record != ix->records)
		why = "block record counts do not add up to the shard's total";
	else if (max_c != ix->largest_block_compressed_bytes)
		why = "largest compressed block does not match the blocks";
	else if (max_d != ix->largest_block_decoded_bytes)
		why = "largest decoded block does not match the blocks";
	else if (ix->largest_record_bytes > (max_d ? max_d - RF_BLOCK_TABLE_BYTES(1) : 0))
		why = "largest record exceeds what the largest block can hold";
	if (why)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: index at byte %llu: %s (blocks end at %llu, %llu records, "
		    "index starts at %llu and declares %llu records)",
		    name, U64(ft->index_offset), why, U64(next_offset), U64(next_record),
		    U64(ft->index_offset), U64(ix->records));
	return 0;
}

static int index_fill(const uint8_t *p, const rf_footer *ft, uint32_t meta_len, const char *name,
                      rf_shard_index *ix, rf_error *err)
{
	const uint8_t *meta = p + RF_INDEX_HEADER_BYTES;
	if (memchr(meta, 0, meta_len))
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: index at byte %llu: metadata holds a NUL", name,
		               U64(ft->index_offset + RF_INDEX_HEADER_BYTES));
	memcpy(ix->metadata, meta, meta_len);
	ix->metadata[meta_len] = '\0';
	uint64_t next_offset = 0, next_record = 0;
	uint32_t max_c = 0, max_d = 0;
	const uint8_t *e = meta + meta_len;
	for (uint32_t b = 0; b < ix->blocks; b++, e += RF_INDEX_ENTRY_BYTES) {
		rf_block_info *bi = &ix->block[b];
		uint64_t at = ft->index_offset + (uint64_t)(e - p);
		RF_TRY(index_entry(e, at, b, ft, ix, &next_offset, &next_record, name, bi, err));
		max_c = RF_MAX(max_c, bi->compressed_bytes);
		max_d = RF_MAX(max_d, bi->decoded_bytes);
		ix->compressed_bytes += bi->compressed_bytes;
		ix->decoded_bytes += bi->decoded_bytes;
	}
	return index_totals(ix, ft, next_offset, next_record, max_c, max_d, name, err);
}

RF_API int rf_index_parse(const void *buf, size_t len, const rf_footer *footer, uint64_t file_bytes,
                          const char *name, rf_shard_index **out, rf_error *err)
{
	name = rf_shard_name(name);
	*out = NULL;
	uint64_t end;
	if (!rf_add_u64(footer->index_offset, footer->index_bytes, &end) ||
	    !rf_add_u64(end, RF_FOOTER_BYTES, &end) || end != file_bytes ||
	    footer->index_bytes < RF_INDEX_HEADER_BYTES)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: index at byte %llu: %llu bytes plus the footer do not end "
		    "the %llu-byte file",
		    name, U64(footer->index_offset), U64(footer->index_bytes), U64(file_bytes));
	if (len != footer->index_bytes)
		return rf_fail(err, -EINVAL,
		               "shard %s: index at byte %llu: got %zu bytes, need %llu", name,
		               U64(footer->index_offset), len, U64(footer->index_bytes));
	uint32_t crc = rf_crc32c(0, buf, len);
	if (crc != footer->index_crc32c)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: index at byte %llu: index CRC-32C mismatch (footer says "
		               "%08x, computed %08x)",
		               name, U64(footer->index_offset), footer->index_crc32c, crc);
	rf_shard_index hdr = {.file_bytes = file_bytes};
	uint32_t meta_len = 0;
	RF_TRY(index_header(buf, footer, name, &hdr, &meta_len, err));
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	if (ix) {
		*ix = hdr;
		ix->metadata = malloc((size_t)meta_len + 1);
		ix->block = calloc(hdr.blocks ? hdr.blocks : 1, sizeof(rf_block_info));
	}
	if (!ix || !ix->metadata || !ix->block) {
		rf_index_free(ix);
		return rf_fail(err, -ENOMEM, "shard %s: no memory for an index of %u blocks", name,
		               hdr.blocks);
	}
	int rc = index_fill(buf, footer, meta_len, name, ix, err);
	if (rc < 0) {
		rf_index_free(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

RF_API void rf_index_free(rf_shard_index *index)
{
	if (!index)
		return;
	free(index->metadata);
	free(index->block);
	free(index);
}

static int index_read_fd(int fd, uint64_t size, const char *path, rf_shard_index **out,
                         rf_error *err)
{
	uint8_t fbuf[RF_FOOTER_BYTES];
	rf_footer ft;
	if (size >= RF_FOOTER_BYTES)
		RF_TRY(rf_pread_full(fd, fbuf, sizeof(fbuf), size - RF_FOOTER_BYTES, path, err));
	RF_TRY(rf_footer_parse(fbuf, sizeof(fbuf), size, path, &ft, err));
	/* footer parse bounded index_bytes by the file size and RF_INDEX_BYTES_MAX */
	uint8_t *ib = malloc(ft.index_bytes);
	if (!ib)
		return rf_fail(err, -ENOMEM, "shard %s: no memory for a %llu-byte index", path,
		               U64(ft.index_bytes));
	int rc = rf_pread_full(fd, ib, ft.index_bytes, ft.index_offset, path, err);
	if (rc == 0)
		rc = rf_index_parse(ib, ft.index_bytes, &ft, size, path, out, err);
	free(ib);
	return rc;
}

RF_API int rf_index_read_file(const char *path, rf_shard_index **out, rf_error *err)
{
	*out = NULL;
	uint64_t size = 0;
	int fd = rf_open_regular(path, "shard", &size, err); /* never blocks on a FIFO */
	if (fd < 0)
		return fd;
	int rc = index_read_fd(fd, size, path, out, err);
	close(fd);
	return rc;
}

struct rf_decoder {
	ZSTD_DCtx *dctx;
};

RF_API rf_decoder *rf_decoder_new(void)
{
	rf_decoder *d = calloc(1, sizeof(*d));
	if (d && !(d->dctx = ZSTD_createDCtx())) {
		free(d);
		d = NULL;
	}
	return d;
}

RF_API void rf_decoder_free(rf_decoder *d)
{
	if (!d)
		return;
	ZSTD_freeDCtx(d->dctx);
	free(d);
}

/* Where a block is, for messages: "block 3 at byte 1234" (file offset when known). */
static const char *block_where(char *buf, size_t cap, uint32_t b, uint64_t file_offset)
{
	if (file_offset == UINT64_MAX)
		snprintf(buf, cap, "block %u", b);
	else
		snprintf(buf, cap, "block %u at byte %llu", b, U64(file_offset));
	return buf;
}

static int table_check_at(const uint8_t *p, size_t len, uint32_t records, const uint32_t **ends,
                          const char *name, uint32_t b, uint64_t file_offset, rf_error *err)
{
	char where[64];
	block_where(where, sizeof(where), b, file_offset);
	name = rf_shard_name(name);
	if (len < 4 || (uint64_t)len > RF_BLOCK_DECODED_MAX)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: %s: decoded block of %zu bytes cannot hold a record table", name,
		    where, len);
	uint32_t count = rf_load_le32(p + len - 4);
	if (count != records)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %s: record table at decoded byte %zu counts %u records, "
		               "index says %u",
		               name, where, len - 4, count, records);
	if (RF_BLOCK_TABLE_BYTES(count) > len)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %s: record table of %u records does not fit in %zu bytes",
		               name, where, count, len);
	size_t table_at = len - (size_t)RF_BLOCK_TABLE_BYTES(count);
	const uint8_t *t = p + table_at;
	uint32_t prev = 0;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t end = rf_load_le32(t + 4 * (size_t)i);
		if (end < prev || end > table_at)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: %s: record table at decoded byte %zu: record %u ends at "
			    "%u, %s",
			    name, where, table_at + 4 * (size_t)i, i, end,
			    end < prev ? "before the previous record ends"
			               : "inside the record table (overlaps it)");
		prev = end;
	}
	if (prev != table_at)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: %s: record table at decoded byte %zu: payloads end at %u, "
		    "leaving %zu unaccounted bytes before the table",
		    name, where, table_at, prev, table_at - prev);
	if (ends)
		*ends = (const uint32_t *)(const void *)t;
	return 0;
}

RF_API int rf_block_table_check(const void *decoded, size_t len, uint32_t records,
                                const uint32_t **ends, const char *name, uint32_t b, rf_error *err)
{
	return table_check_at(decoded, len, records, ends, name, b, UINT64_MAX, err);
}

/* The frame must be exactly src_len bytes, declare its content size (equal
 * to the index's) and carry a content checksum. */
static int frame_check(const void *src, size_t src_len, const rf_block_info *bi, const char *name,
                       const char *where, rf_error *err)
{
	ZSTD_frameHeader fh;
	size_t hr = ZSTD_getFrameHeader(&fh, src, src_len);
	if (hr != 0 || fh.frameType != ZSTD_frame)
		return rf_fail(err, RF_E_CORRUPT, "shard %s: %s: not a zstd frame header (%s)",
		               name, where,
		               ZSTD_isError(hr) ? ZSTD_getErrorName(hr) : "truncated/skippable");
	if (((const uint8_t *)src)[4] & 0x10) /* hr == 0 proved 5+ bytes */
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %s: frame header sets its unused bit (never written)",
		               name, where);
	if (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN || !fh.checksumFlag)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %s: frame lacks its %s (the format requires both content "
		               "size and checksum)",
		               name, where, fh.checksumFlag ? "content size" : "content checksum");
	if (fh.frameContentSize != bi->decoded_bytes)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %s: frame declares %llu decoded bytes, index says %u",
		               name, where, U64(fh.frameContentSize), bi->decoded_bytes);
	size_t fl = ZSTD_findFrameCompressedSize(src, src_len);
	if (ZSTD_isError(fl) || fl != src_len)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: %s: frame length %s%zu does not match the index's %zu bytes", name,
		    where, ZSTD_isError(fl) ? "unreadable: " : "",
		    ZSTD_isError(fl) ? (size_t)0 : fl, src_len);
	return 0;
}

RF_API int rf_block_decode(rf_decoder *d, const rf_shard_index *index, uint32_t b, const void *src,
                           size_t src_len, void *dst, size_t dst_cap, const uint32_t **ends,
                           const char *name, rf_error *err)
{
	name = rf_shard_name(name);
	if (b >= index->blocks)
		return rf_fail(err, -EINVAL, "shard %s: block %u does not exist (%u blocks)", name,
		               b, index->blocks);
	const rf_block_info *bi = &index->block[b];
	char where[64];
	block_where(where, sizeof(where), b, bi->offset);
	if (src_len != bi->compressed_bytes || dst_cap < bi->decoded_bytes)
		return rf_fail(
		    err, -EINVAL,
		    "shard %s: %s: given %zu frame bytes and a %zu-byte slab; index says "
		    "%u compressed, %u decoded",
		    name, where, src_len, dst_cap, bi->compressed_bytes, bi->decoded_bytes);
	RF_TRY(frame_check(src, src_len, bi, name, where, err));
	size_t n = ZSTD_decompressDCtx(d->dctx, dst, bi->decoded_bytes, src, src_len);
	if (ZSTD_isError(n))
		return rf_fail(err, RF_E_CORRUPT, "shard %s: %s: zstd decode failed: %s", name,
		               where, ZSTD_getErrorName(n));
	if (n != bi->decoded_bytes)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %s: frame decoded to %zu bytes, index says %u", name,
		               where, n, bi->decoded_bytes);
	return table_check_at(dst, n, bi->records, ends, name, b, bi->offset, err);
}
