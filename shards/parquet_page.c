/* parquet_page.c - one Parquet column chunk into a column's values: page
 * headers (dictionary, data v1 and v2; index pages skipped), page CRCs,
 * the codecs (UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW, BROTLI), levels
 * (RLE/bit-packed hybrid) and the value encodings (PLAIN, PLAIN_/RLE_
 * DICTIONARY, RLE booleans, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY,
 * DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT), as Encodings.md in apache/
 * parquet-format says. Values are appended to the sink in row order (a
 * null adds no bytes) and each row's length is set (RF_PQ_ABSENT: null).
 * All working memory comes from the sink's scratch, whose size the open
 * reserved (rf_pq_chunk_scratch): a chunk that needs more is corrupt. */
#include "parquet.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>

#define FAIL(msg) (*why = (msg), RF_E_CORRUPT)

uint64_t rf_pq_dict_cap(const pq_chunk_meta *c, uint64_t dict_bytes)
{
	uint32_t dict = 1u << PQ_ENC_PLAIN_DICTIONARY | 1u << PQ_ENC_RLE_DICTIONARY;
	if (c->dictionary_page_offset <= 0 && !(c->encodings & dict))
		return 64;
	uint64_t n = dict_bytes ? dict_bytes : (uint64_t)c->total_uncompressed;
	return (2 * n + 64 + 7) & ~7ull; /* its bytes, and offsets of its values */
}

uint64_t rf_pq_chunk_scratch(const pq_chunk_meta *c, uint64_t dict_bytes, bool page_in_out)
{
	return rf_pq_dict_cap(c, dict_bytes) + (page_in_out ? 0 : (uint64_t)c->total_uncompressed) +
	       24 * (uint64_t)c->num_values + 4096;
}

/* ------------------------------------------------------------ scratch */

typedef struct arena {
	uint8_t *base;
	uint64_t cap, used;
} arena;

static void *take(arena *a, uint64_t bytes)
{
	uint64_t at = (a->used + 7) & ~7ull;
	if (at > a->cap || bytes > a->cap - at)
		return NULL;
	a->used = at + bytes;
	return a->base + at;
}

/* ------------------------------------------------------------ codecs */

static int decompress(int32_t codec, const uint8_t *src, size_t n, uint8_t *dst, size_t out_n,
                      const char **why)
{
	switch (codec) {
	case PQ_CODEC_SNAPPY: {
		size_t len = 0;
		if (snappy_uncompressed_length((const char *)src, n, &len) != SNAPPY_OK ||
		    len != out_n)
			return FAIL("snappy: the page's decoded size differs from its header's");
		len = out_n;
		if (snappy_uncompress((const char *)src, n, (char *)dst, &len) != SNAPPY_OK ||
		    len != out_n)
			return FAIL("snappy: bad compressed bytes");
		return 0;
	}
	case PQ_CODEC_GZIP: {
		z_stream z = {0};
		if (inflateInit2(&z, 15 + 32) != Z_OK)
			return FAIL("gzip: no inflate state (out of memory)");
		z.next_in = (Bytef *)(uintptr_t)src;
		z.avail_in = (uInt)n;
		z.next_out = dst;
		z.avail_out = (uInt)out_n;
		int rc = inflate(&z, Z_FINISH);
		uint64_t got = z.total_out;
		inflateEnd(&z);
		if (rc != Z_STREAM_END || got != out_n)
			return FAIL("gzip: bad compressed bytes or a decoded size other than the "
			            "header's");
		return 0;
	}
	case PQ_CODEC_ZSTD: {
		size_t r = ZSTD_decompress(dst, out_n, src, n);
		if (ZSTD_isError(r) || r != out_n)
			return FAIL("zstd: bad compressed bytes or a decoded size other than the "
			            "header's");
		return 0;
	}
	case PQ_CODEC_LZ4_RAW: {
		if (n > INT32_MAX || out_n > INT32_MAX)
			return FAIL("lz4: a page past 2 GiB");
		int r = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)out_n);
		if (r < 0 || (size_t)r != out_n)
			return FAIL("lz4: bad compressed bytes or a decoded size other than the "
			            "header's");
		return 0;
	}
	case PQ_CODEC_BROTLI: {
		size_t len = out_n;
		if (BrotliDecoderDecompress(n, src, &len, dst) != BROTLI_DECODER_RESULT_SUCCESS ||
		    len != out_n)
			return FAIL("brotli: bad compressed bytes or a decoded size other than the "
			            "header's");
		return 0;
	}
	default:
		return FAIL("a codec this reader does not decode (LZO, Hadoop LZ4)");
	}
}

/* ------------------------------------------------------------ bits */

typedef struct cursor {
	const uint8_t *p, *end;
} cursor;

static bool uleb(cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64 && c->p < c->end; shift += 7) {
		uint8_t b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return *out = v, true;
	}
	return false;
}

static bool zigzag(cursor *c, int64_t *out)
{
	uint64_t u;
	if (!uleb(c, &u))
		return false;
	*out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return true;
}

/* bw bits (<= 64) at bit `bit` of p (the caller checked the bytes exist). */
static uint64_t bits_at(const uint8_t *p, uint64_t bit, unsigned bw)
{
	if (!bw)
		return 0;
	const uint8_t *b = p + bit / 8;
	unsigned shift = bit % 8, need = (shift + bw + 7) / 8;
	unsigned __int128 v = 0;
	for (unsigned i = 0; i < need; i++)
		v |= (unsigned __int128)b[i] << (8 * i);
	v >>= shift;
	return bw == 64 ? (uint64_t)v : (uint64_t)v & ((1ull << bw) - 1);
}

/* The RLE/bit-packed hybrid: n values of bw bits (<= 32) into out. */
static int rle_decode(const uint8_t *p, size_t len, unsigned bw, uint32_t *out, uint64_t n,
                      const char **why)
{
	cursor c = {p, p + len};
	uint64_t got = 0;
	if (bw > 32)
		return FAIL("a bit width past 32");
	while (got < n) {
		uint64_t h;
		if (!uleb(&c, &h))
			return FAIL("RLE/bit-packed runs end before their values");
		if (h & 1) {
			uint64_t groups = h >> 1, bytes = groups * bw;
			if (groups > (uint64_t)(c.end - c.p) || bytes > (uint64_t)(c.end - c.p))
				return FAIL("a bit-packed run longer than its bytes");
			uint64_t k = RF_MIN(groups * 8, n - got);
			for (uint64_t i = 0; i < k; i++)
				out[got + i] = (uint32_t)bits_at(c.p, i * bw, bw);
			got += k;
			c.p += bytes;
		} else {
			uint64_t count = h >> 1, vb = (bw + 7) / 8, v = 0;
			if (vb > (uint64_t)(c.end - c.p))
				return FAIL("an RLE run's value past its bytes");
			for (uint64_t i = 0; i < vb; i++)
				v |= (uint64_t)c.p[i] << (8 * i);
			c.p += vb;
			if (bw < 32 && v >> bw)
				return FAIL("an RLE run's value wider than its bit width");
			uint64_t k = RF_MIN(count, n - got);
			for (uint64_t i = 0; i < k; i++)
				out[got + i] = (uint32_t)v;
			got += k;
		}
	}
	return 0;
}

static unsigned bit_width(uint32_t max)
{
	unsigned w = 0;
	while (max >> w)
		w++;
	return w;
}

/* DELTA_BINARY_PACKED: n values (exactly the header's count) stored at
 * out with `width` bytes each (4: wrapping at 32 bits); *used its bytes. */
static int dbp_decode(const uint8_t *p, size_t len, uint64_t n, uint8_t *out, unsigned width,
                      size_t *used, const char **why)
{
	cursor c = {p, p + len};
	uint64_t block, mbs, total;
	int64_t first;
	if (!uleb(&c, &block) || !uleb(&c, &mbs) || !uleb(&c, &total) || !zigzag(&c, &first))
		return FAIL("DELTA_BINARY_PACKED: its header runs past the page");
	if (block == 0 || block % 128 || block > (1u << 20) || mbs == 0 || block % mbs ||
	    (block / mbs) % 32)
		return FAIL("DELTA_BINARY_PACKED: a block size not a multiple of 128 or "
		            "miniblocks not multiples of 32 values");
	if (total != n)
		return FAIL("DELTA_BINARY_PACKED: a value count other than the page's");
	uint64_t per = block / mbs, got = 0, v = (uint64_t)first;
	if (n) {
		width == 4 ? rf_store_le32(out, (uint32_t)v) : rf_store_le64(out, v);
		got = 1;
	}
	while (got < n) {
		int64_t min_delta;
		if (!zigzag(&c, &min_delta) || mbs > (uint64_t)(c.end - c.p))
			return FAIL("DELTA_BINARY_PACKED: a block header runs past the page");
		const uint8_t *widths = c.p;
		c.p += mbs;
		for (uint64_t m = 0; m < mbs && got < n; m++) {
			unsigned bw = widths[m];
			if (bw > 64)
				return FAIL("DELTA_BINARY_PACKED: a bit width past 64");
			uint64_t bytes = per * bw / 8;
			if (bytes > (uint64_t)(c.end - c.p))
				return FAIL("DELTA_BINARY_PACKED: a miniblock runs past the page");
			uint64_t k = RF_MIN(per, n - got);
			for (uint64_t i = 0; i < k; i++) {
				v += (uint64_t)min_delta + bits_at(c.p, i * bw, bw);
				uint8_t *o = out + (got + i) * width;
				width == 4 ? rf_store_le32(o, (uint32_t)v) : rf_store_le64(o, v);
			}
			got += k;
			c.p += bytes;
		}
	}
	*used = (size_t)(c.p - p);
	return 0;
}

/* ------------------------------------------------------------ values */

/* What a page's values decode against. */
typedef struct dict {
	const uint8_t *data;    /* the dictionary page's decoded bytes */
	const uint32_t *offs;   /* BYTE_ARRAY: n + 1 offsets of value bytes (after prefixes) */
	const uint32_t *starts; /* BYTE_ARRAY: each value's first byte */
	uint32_t n;
	bool present;
} dict;

typedef struct values {
	uint8_t *out;
	uint64_t cap, len;
	uint32_t *lens; /* BYTE_ARRAY: one per value */
} values;

static int put(values *v, const void *src, uint64_t n, const char **why)
{
	if (n > v->cap - v->len)
		return FAIL("values larger than the chunk's metadata allows");
	memmove(v->out + v->len, src, n); /* a page decoded into out's tail lies ahead */
	v->len += n;
	return 0;
}

static int plain(const pq_column *col, const uint8_t *p, size_t len, uint64_t n, values *v,
                 const char **why)
{
	if (col->type == PQ_BOOLEAN) {
		if ((n + 7) / 8 > len || n > v->cap - v->len)
			return FAIL("PLAIN booleans past the page");
		for (uint64_t i = 0; i < n; i++)
			v->out[v->len++] = (uint8_t)(p[i / 8] >> (i % 8) & 1);
		return 0;
	}
	if (col->width) {
		if (n > len / col->width)
			return FAIL("PLAIN values past the page");
		return put(v, p, n * col->width, why);
	}
	cursor c = {p, p + len};
	for (uint64_t i = 0; i < n; i++) {
		if (c.end - c.p < 4)
			return FAIL("a PLAIN byte array's length past the page");
		uint32_t l = rf_load_le32(c.p);
		c.p += 4;
		if (l > (uint64_t)(c.end - c.p))
			return FAIL("a PLAIN byte array past the page");
		RF_TRY(put(v, c.p, l, why));
		v->lens[i] = l;
		c.p += l;
	}
	return 0;
}

static int dict_values(const pq_column *col, const dict *d, const uint8_t *p, size_t len,
                       uint64_t n, values *v, uint32_t *idx, const char **why)
{
	if (!d->present)
		return FAIL("a dictionary-encoded page without a dictionary page");
	if (n && len < 1)
		return FAIL("dictionary indices without their bit width");
	if (n)
		RF_TRY(rle_decode(p + 1, len - 1, p[0], idx, n, why));
	for (uint64_t i = 0; i < n; i++) {
		if (idx[i] >= d->n)
			return FAIL("a dictionary index past the dictionary");
		if (col->width) {
			RF_TRY(put(v, d->data + (uint64_t)idx[i] * col->width, col->width, why));
		} else {
			uint32_t l = d->offs[idx[i] + 1] - d->starts[idx[i]];
			RF_TRY(put(v, d->data + d->starts[idx[i]], l, why));
			v->lens[i] = l;
		}
	}
	return 0;
}

static int delta_length(const uint8_t *p, size_t len, uint64_t n, values *v, size_t *used,
                        const char **why)
{
	size_t head = 0;
	RF_TRY(dbp_decode(p, len, n, (uint8_t *)v->lens, 4, &head, why));
	cursor c = {p + head, p + len};
	for (uint64_t i = 0; i < n; i++) {
		uint32_t l = v->lens[i];
		if (l > INT32_MAX || l > (uint64_t)(c.end - c.p))
			return FAIL("DELTA_LENGTH_BYTE_ARRAY: a value past the page");
		RF_TRY(put(v, c.p, l, why));
		c.p += l;
	}
	if (used)
		*used = (size_t)(c.p - p);
	return 0;
}

static int delta_byte_array(const uint8_t *p, size_t len, uint64_t n, values *v, uint32_t *prefix,
                            const char **why)
{
	size_t head = 0;
	RF_TRY(dbp_decode(p, len, n, (uint8_t *)prefix, 4, &head, why));
	/* the suffixes: DELTA_LENGTH_BYTE_ARRAY into a place of their own,
	 * then each value = the previous value's prefix + its suffix */
	values s = *v;
	uint64_t start = v->len, prev_at = 0, prev_len = 0;
	RF_TRY(delta_length(p + head, len - head, n, &s, NULL, why));
	uint64_t suffix_bytes = s.len - start;
	/* move the suffixes to the end of the room, then build forward */
	if (suffix_bytes > v->cap - start)
		return FAIL("values larger than the chunk's metadata allows");
	uint64_t src = v->cap - suffix_bytes;
	memmove(v->out + src, v->out + start, suffix_bytes);
	for (uint64_t i = 0; i < n; i++) {
		uint32_t pl = prefix[i], sl = v->lens[i];
		if (pl > prev_len)
			return FAIL("DELTA_BYTE_ARRAY: a prefix longer than the value before");
		uint64_t at = v->len;
		if (at + pl > src) /* the value may overlap only its own suffix */
			return FAIL("values larger than the chunk's metadata allows");
		memmove(v->out + at, v->out + prev_at, pl);
		memmove(v->out + at + pl, v->out + src, sl);
		src += sl;
		v->len += (uint64_t)pl + sl;
		v->lens[i] = pl + sl;
		prev_at = at, prev_len = (uint64_t)pl + sl;
	}
	return 0;
}

static int byte_stream_split(const pq_column *col, const uint8_t *p, size_t len, uint64_t n,
                             values *v, const char **why)
{
	uint32_t w = col->width;
	if (!w || col->type == PQ_BOOLEAN)
		return FAIL("BYTE_STREAM_SPLIT on a type it does not apply to");
	if (n > len / w || n * w > v->cap - v->len)
		return FAIL("BYTE_STREAM_SPLIT values past the page");
	uint8_t *o = v->out + v->len;
	for (uint32_t k = 0; k < w; k++)
		for (uint64_t i = 0; i < n; i++)
			o[i * w + k] = p[k * n + i];
	v->len += n * w;
	return 0;
}

static int page_values(const pq_column *col, const dict *d, int32_t enc, const uint8_t *p,
                       size_t len, uint64_t n, values *v, arena *a, const char **why)
{
	switch (enc) {
	case PQ_ENC_PLAIN:
		return plain(col, p, len, n, v, why);
	case PQ_ENC_PLAIN_DICTIONARY:
	case PQ_ENC_RLE_DICTIONARY: {
		uint32_t *idx = take(a, 4 * n);
		if (!idx)
			return FAIL("scratch exhausted (the chunk's value count is wrong)");
		return dict_values(col, d, p, len, n, v, idx, why);
	}
	case PQ_ENC_RLE: {
		if (col->type != PQ_BOOLEAN)
			return FAIL("RLE values on a type other than BOOLEAN");
		uint32_t *b = take(a, 4 * n);
		if (!b || len < 4 || rf_load_le32(p) > len - 4)
			return FAIL("RLE booleans without their length");
		RF_TRY(rle_decode(p + 4, rf_load_le32(p), 1, b, n, why));
		if (n > v->cap - v->len)
			return FAIL("values larger than the chunk's metadata allows");
		for (uint64_t i = 0; i < n; i++)
			v->out[v->len++] = (uint8_t)b[i];
		return 0;
	}
	case PQ_ENC_DELTA_BINARY_PACKED: {
		size_t used;
		if ((col->type != PQ_INT32 && col->type != PQ_INT64) ||
		    n > (v->cap - v->len) / col->width)
			return FAIL("DELTA_BINARY_PACKED on a type other than INT32/INT64, or "
			            "past the chunk's values");
		RF_TRY(dbp_decode(p, len, n, v->out + v->len, col->width, &used, why));
		v->len += n * col->width;
		return 0;
	}
	case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
		if (col->width)
			return FAIL("DELTA_LENGTH_BYTE_ARRAY on a fixed-width type");
		return delta_length(p, len, n, v, NULL, why);
	case PQ_ENC_DELTA_BYTE_ARRAY: {
		uint32_t *prefix = take(a, 4 * n);
		if (col->type != PQ_BYTE_ARRAY || !prefix)
			return FAIL("DELTA_BYTE_ARRAY on a type other than BYTE_ARRAY");
		return delta_byte_array(p, len, n, v, prefix, why);
	}
	case PQ_ENC_BYTE_STREAM_SPLIT:
		return byte_stream_split(col, p, len, n, v, why);
	default:
		return FAIL("a value encoding this reader does not decode");
	}
}

/* ------------------------------------------------------------ pages */

typedef struct chunk_state {
	const pq_column *col;
	pq_sink *s;
	dict d;
	uint64_t entries; /* level entries seen */
	uint64_t row;     /* rows started */
} chunk_state;

static int dictionary_page(chunk_state *st, const pq_page_header *h, const uint8_t *data,
                           arena *dict_arena, const char **why)
{
	const pq_column *col = st->col;
	if (st->d.present)
		return FAIL("a second dictionary page");
	if (!h->has_dict || (h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICTIONARY))
		return FAIL("a dictionary page without its header or not PLAIN");
	if (col->type == PQ_BOOLEAN)
		return FAIL("a dictionary of booleans");
	uint64_t n = (uint64_t)h->num_values, size = (uint64_t)h->uncompressed;
	st->d = (dict){.data = data, .n = (uint32_t)n, .present = true};
	if (col->width)
		return n > size / col->width ? FAIL("a dictionary page shorter than its values")
		                             : 0;
	uint32_t *offs = take(dict_arena, 4 * (n + 1)), *starts = take(dict_arena, 4 * (n + 1));
	if (!offs || !starts || n > size / 4)
		return FAIL("a dictionary of more values than its bytes hold");
	uint64_t at = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (size - at < 4 || rf_load_le32(data + at) > size - at - 4)
			return FAIL("a dictionary value past its page");
		starts[i] = (uint32_t)(at + 4);
		at += 4 + rf_load_le32(data + at);
		offs[i + 1] = (uint32_t)at;
	}
	st->d.offs = offs, st->d.starts = starts;
	return 0;
}

/* Rows from the page's levels: n entries, values' lengths in v->lens
 * (BYTE_ARRAY) or the column's width. */
static int assemble(chunk_state *st, const uint32_t *def, const uint32_t *rep, uint64_t n,
                    const uint32_t *lens, const char **why)
{
	const pq_column *col = st->col;
	pq_sink *s = st->s;
	uint64_t k = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t dl = def ? def[i] : col->max_def;
		if (col->kind == PQ_FLAT) {
			if (st->row >= s->rows)
				return FAIL("more values than the row group's rows");
			s->row_len[st->row++] =
			    dl < col->max_def ? RF_PQ_ABSENT : (lens ? lens[k++] : col->width);
			continue;
		}
		if (!rep[i]) {
			if (st->row >= s->rows)
				return FAIL("more lists than the row group's rows");
			s->row_len[st->row++] = dl < col->list_def ? RF_PQ_ABSENT : 0;
			if (dl <= col->list_def)
				continue;
		} else if (!st->row || s->row_len[st->row - 1] == RF_PQ_ABSENT ||
		           dl <= col->list_def) {
			return FAIL("a list element continuing no list");
		}
		if (dl < col->max_def)
			return FAIL("a null element in a list (a list is a dense array)");
		s->row_len[st->row - 1] += col->width;
	}
	return 0;
}

/* The levels and values of a data page whose decoded bytes are p (v1:
 * levels with their 4-byte lengths; v2: levels given apart). */
static int data_page(chunk_state *st, const pq_page_header *h, const uint8_t *lv, size_t lv_len,
                     const uint8_t *p, size_t len, arena *a, const char **why)
{
	const pq_column *col = st->col;
	uint64_t n = (uint64_t)h->num_values;
	uint32_t *def = NULL, *rep = NULL;
	cursor c = {p, p + len};
	for (int which = 0; which < 2; which++) { /* repetition first, then definition */
		uint32_t max = which == 0 ? col->max_rep : col->max_def;
		if (!max)
			continue;
		uint32_t *lvl = take(a, 4 * n);
		if (!lvl)
			return FAIL("scratch exhausted (the chunk's value count is wrong)");
		const uint8_t *at;
		uint64_t bytes;
		if (h->has_v2) {
			bytes = which == 0 ? (uint64_t)h->rep_bytes : (uint64_t)h->def_bytes;
			at = lv + (which == 0 ? 0 : (uint64_t)h->rep_bytes);
		} else {
			int32_t enc = which == 0 ? h->rep_encoding : h->def_encoding;
			if (enc != PQ_ENC_RLE)
				return FAIL("levels not RLE-encoded (BIT_PACKED is not read)");
			if (c.end - c.p < 4 || rf_load_le32(c.p) > (uint64_t)(c.end - c.p) - 4)
				return FAIL("levels' length past the page");
			bytes = rf_load_le32(c.p);
			at = c.p + 4;
			c.p += 4 + bytes;
		}
		RF_TRY(rle_decode(at, bytes, bit_width(max), lvl, n, why));
		for (uint64_t i = 0; i < n; i++)
			if (lvl[i] > max)
				return FAIL("a level above the column's maximum");
		*(which == 0 ? &rep : &def) = lvl;
	}
	(void)lv_len;
	uint64_t nv = 0;
	for (uint64_t i = 0; i < n; i++)
		nv += !def || def[i] == col->max_def;
	values v = {.out = st->s->out, .cap = st->s->out_cap, .len = st->s->out_len};
	if (!col->width && !(v.lens = take(a, 4 * nv + 4)))
		return FAIL("scratch exhausted (the chunk's value count is wrong)");
	RF_TRY(page_values(col, &st->d, h->encoding, c.p, (size_t)(c.end - c.p), nv, &v, a, why));
	st->s->out_len = v.len;
	RF_TRY(assemble(st, def, rep, n, v.lens, why));
	st->entries += n;
	return 0;
}

/* One page at chunk[*pos]: *pos moves past it. */
static int one_page(chunk_state *st, const pq_chunk_meta *cm, const uint8_t *chunk, size_t len,
                    uint64_t *pos, arena *dict_arena, arena *a, const char **why)
{
	pq_page_header h;
	uint32_t hl;
	int rc = rf_pq_page_header(chunk + *pos, len - *pos, &h, &hl, why);
	if (rc < 0) {
		*pos += hl;
		return rc;
	}
	const uint8_t *data = chunk + *pos + hl;
	if ((uint64_t)h.compressed > len - *pos - hl)
		return FAIL("a page past its column chunk");
	if ((uint64_t)h.uncompressed > (uint64_t)cm->total_uncompressed)
		return FAIL("a page larger than its chunk's uncompressed size");
	if (h.has_crc && (uint32_t)crc32(0, data, (uInt)h.compressed) != h.crc)
		return FAIL("the page's CRC does not match its bytes");
	*pos += hl;
	uint64_t body = (uint64_t)h.compressed;
	if (h.type == PQ_PAGE_INDEX) {
		*pos += body;
		return 0;
	}
	if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DICT && h.type != PQ_PAGE_DATA_V2)
		return FAIL("a page of an unknown type");
	if ((h.type == PQ_PAGE_DATA && !h.has_data) || (h.type == PQ_PAGE_DATA_V2 && !h.has_v2))
		return FAIL("a data page without its header");
	uint64_t levels = 0;
	if (h.type == PQ_PAGE_DATA_V2) {
		if (h.rep_bytes < 0 || h.def_bytes < 0 ||
		    (uint64_t)h.rep_bytes + (uint64_t)h.def_bytes >
		        RF_MIN(body, (uint64_t)h.uncompressed))
			return FAIL("a data page v2's levels past the page");
		levels = (uint64_t)h.rep_bytes + (uint64_t)h.def_bytes;
	}
	bool raw = cm->codec == PQ_CODEC_NONE || (h.type == PQ_PAGE_DATA_V2 && !h.v2_compressed);
	uint64_t out_n = (uint64_t)h.uncompressed - levels;
	arena *where = h.type == PQ_PAGE_DICT ? dict_arena : a;
	const uint8_t *dec = data + levels;
	if (raw && body - levels != out_n)
		return FAIL("an uncompressed page whose sizes differ");
	if (!raw) {
		pq_sink *s = st->s;
		uint8_t *buf;
		if (h.type != PQ_PAGE_DICT && s->page_in_out)
			buf = out_n <= s->out_cap - s->out_len ? s->out + s->out_cap - out_n : NULL;
		else
			buf = take(where, out_n ? out_n : 1);
		if (!buf)
			return FAIL(
			    "no room for the page (the chunk's uncompressed size is wrong)");
		RF_TRY(decompress(cm->codec, data + levels, body - levels, buf, out_n, why));
		dec = buf;
	}
	*pos += body;
	if (h.type == PQ_PAGE_DICT)
		return dictionary_page(st, &h, dec, dict_arena, why);
	if (h.num_values == 0)
		return 0;
	return data_page(st, &h, data, levels, dec, out_n, a, why);
}

int rf_pq_chunk_decode(const pq_column *col, const pq_chunk_meta *c, const uint8_t *chunk,
                       size_t len, pq_sink *s, uint64_t *at, const char **why)
{
	uint64_t dict_cap = s->dict_cap;
	if (s->scratch_cap < dict_cap || dict_cap % 8)
		return *at = 0, FAIL("scratch smaller than the chunk needs");
	arena dict_arena = {s->scratch, dict_cap, 0};
	chunk_state st = {.col = col, .s = s};
	uint64_t pos = 0;
	while (st.entries < (uint64_t)c->num_values) {
		*at = pos;
		if (pos >= len)
			return FAIL("the chunk ends before its values");
		arena a = {s->scratch + dict_cap, s->scratch_cap - dict_cap, 0};
		RF_TRY(one_page(&st, c, chunk, len, &pos, &dict_arena, &a, why));
	}
	*at = pos;
	if (st.entries != (uint64_t)c->num_values)
		return FAIL("pages hold more values than the chunk's metadata says");
	if (st.row != s->rows)
		return FAIL("the chunk's rows differ from the row group's");
	return 0;
}

int rf_pq_dict_longest(const pq_chunk_meta *c, const uint8_t *page, size_t len, uint8_t *scratch,
                       uint64_t scratch_cap, uint64_t *longest, uint64_t *dict_bytes,
                       const char **why)
{
	pq_page_header h;
	uint32_t hl;
	*longest = 0;
	*dict_bytes = 0;
	RF_TRY(rf_pq_page_header(page, len, &h, &hl, why));
	if (h.type != PQ_PAGE_DICT || !h.has_dict)
		return FAIL("the chunk's dictionary page offset names no dictionary page");
	if ((uint64_t)h.compressed > len - hl || (uint64_t)h.uncompressed > scratch_cap)
		return FAIL("a dictionary page past its chunk or its uncompressed size");
	const uint8_t *d = page + hl;
	if (c->codec != PQ_CODEC_NONE) {
		RF_TRY(decompress(c->codec, d, (size_t)h.compressed, scratch,
		                  (size_t)h.uncompressed, why));
		d = scratch;
	} else if (h.compressed != h.uncompressed) {
		return FAIL("an uncompressed page whose sizes differ");
	}
	uint64_t at = 0, size = (uint64_t)h.uncompressed;
	*dict_bytes = size;
	for (int32_t i = 0; i < h.num_values; i++) {
		if (size - at < 4 || rf_load_le32(d + at) > size - at - 4)
			return FAIL("a dictionary value past its page");
		*longest = RF_MAX(*longest, rf_load_le32(d + at));
		at += 4 + rf_load_le32(d + at);
	}
	return 0;
}
