/* mds.c - MosaicML Streaming's MDS shards behind the format seam, as
 * MDSWriter writes them (streaming/base/format/mds/writer.py):
 *
 *   u32 num_samples, u32 offsets[num_samples + 1] (absolute byte positions),
 *   the writer's config JSON (column_names / _encodings / _sizes), then the
 *   samples: sample i is [offsets[i], offsets[i + 1]) = u32 sizes of its
 *   variable-size columns (in column order), then every column's bytes.
 *
 * An uncompressed shard (`.mds`) is ranged-readable: the open reads its
 * header (the offset table and the config) and lays the samples out as
 * units of about RF_MDS_UNIT_BYTES, read in place. A zstd shard
 * (`.mds.zstd`) is one unit, the whole shard: the open decompresses just
 * its header from the first bytes (the frame says the decoded size, so the
 * budget admits the unit before its download) and decode decompresses it
 * whole. A sample's columns become its fields (raw bytes: str and json as
 * their UTF-8, numbers little-endian, ndarray its values, with MDS's own
 * dtype/shape prefix when the encoding leaves them dynamic); its key is
 * SHARD/NNNNNNNN. index.json lists a dataset's shards (rf_mds_index_scan,
 * the format's expansion: mds_index.c). The JSON and column parsers:
 * mds_columns.c. */
#include "mds.h"

#include <stdio.h>
#include <stdlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader, ZSTD_estimateDStreamSize */
#include <zstd.h>

#define U64(x) ((unsigned long long)(x))

/* ------------------------------------------------------------ shard header */

/* What the header of a shard of raw_bytes says, from its first `avail`
 * decoded bytes: 0 with *need = 0 when complete (offsets copied to *offs,
 * columns parsed), 0 with *need = the bytes it needs, or an error. */
typedef struct mds_header {
	uint32_t n;
	uint32_t *offs; /* n + 1 */
	rf_mds_columns cols;
	uint32_t largest;
} mds_header;

static void header_free(mds_header *h)
{
	free(h->offs);
	rf_mds_columns_free(&h->cols);
	memset(h, 0, sizeof(*h));
}

static int header_parse(const uint8_t *p, uint64_t avail, uint64_t raw, mds_header *h,
                        uint64_t *need, const char *shard, rf_error *err)
{
	*need = 0;
	if (raw < 8 || raw > UINT32_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %llu decoded bytes: not an MDS shard (8 bytes .. 4 GiB)",
		               shard, U64(raw));
	if (avail < 4)
		return *need = 4, 0;
	uint64_t n = rf_load_le32(p), table = 4 + 4 * (n + 1);
	if (table > raw)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: at byte 0: %llu samples need a %llu-byte offset table, the "
		    "shard has %llu bytes",
		    shard, U64(n), U64(table), U64(raw));
	if (avail < table)
		return *need = table, 0;
	uint64_t start = rf_load_le32(p + 4);
	if (start < table || start - table > RF_MDS_CONFIG_MAX || start > raw)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: at byte 4: samples start at byte %llu: not after the "
		    "offset table (%llu) and a config of at most %u bytes inside the shard",
		    shard, U64(start), U64(table), RF_MDS_CONFIG_MAX);
	if (avail < start)
		return *need = start, 0;
	uint32_t largest = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t a = rf_load_le32(p + 4 + 4 * i), b = rf_load_le32(p + 8 + 4 * i);
		if (b < a || b > raw)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: offset table at byte %llu: sample %llu ends at %u, "
			    "before it starts (%u) or past the shard (%llu bytes)",
			    shard, U64(8 + 4 * i), U64(i), b, a, U64(raw));
		largest = RF_MAX(largest, b - a);
	}
	if (rf_load_le32(p + 4 + 4 * n) != raw)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: offset table: the last sample ends at %u, the shard has "
		               "%llu bytes",
		               shard, rf_load_le32(p + 4 + 4 * n), U64(raw));
	if (largest > RF_BLOCK_DECODED_MAX)
		return rf_fail(err, RF_E_CORRUPT, "shard %s: a sample of %u bytes (more than %u)",
		               shard, largest, RF_BLOCK_DECODED_MAX);
	RF_TRY(rf_mds_config_parse((const char *)p + table, start - table, &h->cols, shard, err));
	if (!(h->offs = malloc(4 * (n + 1)))) {
		rf_mds_columns_free(&h->cols);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the offset table", shard);
	}
	for (uint64_t i = 0; i <= n; i++)
		h->offs[i] = rf_load_le32(p + 4 + 4 * i);
	h->n = (uint32_t)n;
	h->largest = largest;
	return 0;
}

/* ------------------------------------------------------------ layouts */

typedef struct mds_layout {
	mds_header h;
	char stem[48]; /* the shard's name without .mds[.zstd]: the keys' prefix */
	uint64_t raw;  /* decoded bytes */
} mds_layout;

/* A unit's table in dst (after the decoded shard for a zstd unit): ends,
 * field_first, key_first, fields, keys. */
static uint64_t table_bytes(uint64_t r, uint32_t cols)
{
	return 4 * r + 4 + 8 * (r + 1) + 12ull * cols * r + r * RF_MDS_KEY_MAX;
}

static uint64_t align4(uint64_t v)
{
	return (v + 3) & ~3ull;
}

static void layout_free(mds_layout *L)
{
	if (L) {
		header_free(&L->h);
		free(L);
	}
}

static void mds_close(rf_shard_index *ix, void *priv)
{
	layout_free(priv);
	rf_index_free(ix);
}

static uint32_t mds_field_names(const void *priv, const char *const **names)
{
	const mds_layout *L = priv;
	*names = (const char *const *)L->h.cols.names;
	return L->h.cols.n;
}

static uint64_t mds_table_bytes(const rf_shard_index *ix, const void *priv, uint32_t u)
{
	const mds_layout *L = priv;
	return u < ix->blocks ? table_bytes(ix->block[u].records, L->h.cols.n) : 0;
}

static void set_stem(mds_layout *L, const char *url)
{
	const char *b = strrchr(url, '/');
	b = b ? b + 1 : url;
	size_t n = rf_url_path_len(b);
	const char *dot = memmem(b, n, ".mds", 4);
	if (dot)
		n = (size_t)(dot - b);
	snprintf(L->stem, sizeof(L->stem), "%.*s", (int)RF_MIN(n, sizeof(L->stem) - 1), b);
}

static rf_shard_index *index_new(uint32_t units, uint64_t size)
{
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	if (ix) {
		ix->metadata = strdup("");
		ix->block = calloc(units ? units : 1, sizeof(rf_block_info));
		ix->file_bytes = size;
		ix->blocks = units;
	}
	if (ix && (!ix->metadata || !ix->block)) {
		mds_close(ix, NULL);
		ix = NULL;
	}
	return ix;
}

static void index_sums(rf_shard_index *ix, uint32_t largest_record)
{
	ix->largest_record_bytes = largest_record;
	for (uint32_t u = 0; u < ix->blocks; u++)
		ix->records += ix->block[u].records;
	rf_fmt_layout_sums(ix);
}

/* An uncompressed shard's units: runs of samples of about RF_MDS_UNIT_BYTES. */
static uint32_t plain_units(const mds_header *h, rf_block_info *out)
{
	uint32_t units = 0;
	rf_block_info *b = NULL, counting; /* out NULL: count the units only */
	for (uint32_t i = 0; i < h->n; i++) {
		uint64_t end = h->offs[i + 1];
		if (!b || end - b->offset > RF_BLOCK_DECODED_MAX) {
			b = out ? &out[units] : &counting;
			*b = (rf_block_info){.offset = h->offs[i], .first_record = i};
			units++;
		}
		b->records++;
		b->compressed_bytes = b->decoded_bytes = (uint32_t)(end - b->offset);
		if (end - b->offset >= RF_MDS_UNIT_BYTES)
			b = NULL;
	}
	return units;
}

static int done(rf_fmt_open *o, mds_layout *L, rf_shard_index *ix)
{
	if (!ix) {
		layout_free(L);
		return rf_fail(NULL, -ENOMEM, "out of memory");
	}
	o->index = ix;
	o->priv = L;
	o->held_bytes = sizeof(*ix) + sizeof(*L) + ix->blocks * sizeof(rf_block_info) +
	                4ull * (L->h.n + 1) + L->h.cols.n * (uint64_t)(2 * RF_MDS_NAME_MAX + 32);
	return RF_FMT_DONE;
}

/* ------------------------------------------------------------ uncompressed */

static int want_header(rf_fmt_open *o, uint64_t len)
{
	len = RF_MIN(len, o->size);
	o->want =
	    (rf_fmt_want){.offset = 0, .len = len, .parse_bound = 4 * len + 16 * RF_MDS_CONFIG_MAX};
	return RF_FMT_NEED;
}

static int mds_open_step(rf_fmt_open *o, rf_error *err)
{
	if (!o->got)
		return want_header(o, o->local ? RF_MDS_UNIT_BYTES : RF_MDS_STEP_BYTES);
	if (o->got_offset != 0 || o->got_len != o->want.len)
		return rf_fail(err, -EIO, "shard %s: open got [%llu, +%llu), asked for [0, +%llu)",
		               o->name, U64(o->got_offset), U64(o->got_len), U64(o->want.len));
	mds_layout *L = calloc(1, sizeof(*L));
	if (!L)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	uint64_t need;
	int rc = header_parse(o->got, o->got_len, o->size, &L->h, &need, o->name, err);
	if (rc < 0 || need) {
		layout_free(L);
		o->final = rc < 0 && o->got_len >= 8 && rf_load_le32(o->got) > o->size / 4;
		return rc < 0 ? rc : want_header(o, need);
	}
	L->raw = o->size;
	set_stem(L, o->url);
	rf_shard_index *ix = index_new(plain_units(&L->h, NULL), o->size);
	if (ix) {
		plain_units(&L->h, ix->block);
		index_sums(ix, L->h.largest);
	}
	rc = done(o, L, ix);
	return rc < 0 ? rf_fail(err, rc, "shard %s: out of memory for the layout", o->name) : rc;
}

/* The table of r records at t: fields for each sample from its bytes. */
typedef struct mds_table {
	uint8_t *ends;
	uint32_t *field_first, *key_first;
	rf_rec_field *fields;
	char *keys;
} mds_table;

static mds_table table_at(uint8_t *t, uint64_t r, uint32_t cols)
{
	mds_table m = {.ends = t};
	m.field_first = (uint32_t *)(t + 4 * r + 4);
	m.key_first = m.field_first + r + 1;
	m.fields = (rf_rec_field *)(m.key_first + r + 1);
	m.keys = (char *)(m.fields + (uint64_t)cols * r);
	return m;
}

/* Samples [first, first + r) of L, whose bytes start at base + offs[i] -
 * origin, into the table m; rf_unit_records out. */
static int fill_samples(const mds_layout *L, uint64_t first, uint32_t r, const uint8_t *base,
                        uint32_t origin, mds_table *m, rf_unit_records *out, const char *name,
                        rf_error *err)
{
	uint32_t c = L->h.cols.n, keys = 0;
	for (uint32_t i = 0; i < r; i++) {
		uint64_t s = first + i;
		uint32_t a = L->h.offs[s] - origin, b = L->h.offs[s + 1] - origin;
		RF_TRY(rf_mds_sample(&L->h.cols, base + a, b - a, a, m->fields + (uint64_t)c * i,
		                     name, L->h.offs[s], err));
		rf_store_le32(m->ends + 4 * i, b);
		m->field_first[i] = c * i;
		m->key_first[i] = keys;
		keys += (uint32_t)snprintf(m->keys + keys, RF_MDS_KEY_MAX, "%s/%08llu", L->stem,
		                           U64(s));
	}
	rf_store_le32(m->ends + 4 * r, r);
	m->field_first[r] = c * r;
	m->key_first[r] = keys;
	*out = (rf_unit_records){.base = base,
	                         .ends = (const uint32_t *)m->ends,
	                         .records = r,
	                         .fields = m->fields,
	                         .field_first = m->field_first,
	                         .keys = m->keys,
	                         .key_first = m->key_first};
	return 0;
}

static int mds_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                      const void *src, size_t src_len, void *dst, size_t dst_cap,
                      rf_unit_records *out, const char *name, rf_error *err)
{
	const mds_layout *L = priv;
	if (u >= ix->blocks)
		return rf_fail(err, -EINVAL, "shard %s: unit %u of %u", name, u, ix->blocks);
	const rf_block_info *b = &ix->block[u];
	if (src_len != b->compressed_bytes || dst_cap < table_bytes(b->records, L->h.cols.n))
		return rf_fail(err, -EINVAL,
		               "shard %s: unit %u: %zu stored bytes (expected %u), "
		               "table room %zu",
		               name, u, src_len, b->compressed_bytes, dst_cap);
	mds_table m = table_at(dst, b->records, L->h.cols.n);
	return fill_samples(L, b->first_record, b->records, src, (uint32_t)b->offset, &m, out, name,
	                    err);
}

/* ------------------------------------------------------------ zstd */

typedef struct zstd_open {
	uint64_t raw, window;
	uint64_t need; /* decoded header bytes the next step decompresses */
} zstd_open;

/* The first `need` decoded bytes from the compressed prefix got (NULL with
 * *short_input when the prefix holds fewer). malloc'd. */
static uint8_t *zstd_prefix(const rf_fmt_open *o, uint64_t need, bool *short_input, rf_error *err)
{
	*short_input = false;
	ZSTD_DStream *z = ZSTD_createDStream();
	uint8_t *out = malloc(need ? need : 1);
	if (!z || !out) {
		ZSTD_freeDStream(z);
		free(out);
		rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		return NULL;
	}
	ZSTD_DCtx_setParameter(z, ZSTD_d_windowLogMax, 27);
	ZSTD_inBuffer in = {o->got, o->got_len, 0};
	ZSTD_outBuffer ob = {out, need, 0};
	bool failed = false;
	while (ob.pos < need && in.pos < in.size) {
		size_t r = ZSTD_decompressStream(z, &ob, &in);
		if (ZSTD_isError(r)) {
			rf_fail(err, RF_E_CORRUPT, "shard %s: zstd frame: %s", o->name,
			        ZSTD_getErrorName(r));
			failed = true;
			break;
		}
		if (r == 0)
			break;
	}
	ZSTD_freeDStream(z);
	if (ob.pos < need) {
		*short_input = !failed;
		free(out);
		return NULL;
	}
	return out;
}

static int zstd_want(rf_fmt_open *o, const zstd_open *z, uint64_t len, uint64_t out)
{
	len = RF_MIN(len, o->size);
	o->want = (rf_fmt_want){
	    .offset = 0,
	    .len = len,
	    .parse_bound = (z ? ZSTD_estimateDStreamSize((size_t)z->window) : 0) + out +
	                   16 * RF_MDS_CONFIG_MAX,
	};
	return RF_FMT_NEED;
}

/* The frame header: the decoded size (required) and the window. */
static int zstd_frame(rf_fmt_open *o, zstd_open *z, rf_error *err)
{
	ZSTD_frameHeader fh;
	size_t r = ZSTD_getFrameHeader(&fh, o->got, o->got_len);
	o->final = true; /* not a zstd frame: reading again cannot change it */
	if (ZSTD_isError(r) || r != 0)
		return rf_fail(err, RF_E_CORRUPT, "shard %s: at byte 0: not a zstd frame", o->name);
	if (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN || fh.frameType != ZSTD_frame)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: the zstd frame does not say its decoded size (the budget "
		               "needs it before the download)",
		               o->name);
	if (fh.windowSize > RF_MDS_WINDOW_MAX || fh.frameContentSize + 64 > RF_BLOCK_DECODED_MAX)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: decodes to %llu bytes with a %llu-byte window (at most %u "
		    "and %u)",
		    o->name, U64(fh.frameContentSize), U64(fh.windowSize), RF_BLOCK_DECODED_MAX,
		    RF_MDS_WINDOW_MAX);
	o->final = false;
	z->raw = fh.frameContentSize;
	z->window = fh.windowSize;
	return 0;
}

static int zstd_layout(rf_fmt_open *o, const zstd_open *z, mds_header *h, rf_error *err)
{
	mds_layout *L = calloc(1, sizeof(*L));
	if (!L) {
		header_free(h);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	}
	L->h = *h;
	L->raw = z->raw;
	set_stem(L, o->url);
	uint64_t dec = align4(z->raw) + table_bytes(h->n, h->cols.n);
	if (dec > RF_BLOCK_DECODED_MAX || o->size > UINT32_MAX) {
		layout_free(L);
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %u samples decode to more than a unit holds (%u bytes)",
		               o->name, h->n, RF_BLOCK_DECODED_MAX);
	}
	rf_shard_index *ix = index_new(h->n ? 1 : 0, o->size);
	if (ix && h->n)
		ix->block[0] = (rf_block_info){.offset = 0,
		                               .compressed_bytes = (uint32_t)o->size,
		                               .decoded_bytes = (uint32_t)dec,
		                               .records = h->n};
	if (ix)
		index_sums(ix, h->largest);
	int rc = done(o, L, ix);
	return rc < 0 ? rf_fail(err, rc, "shard %s: out of memory for the layout", o->name) : rc;
}

static int zstd_open_step(rf_fmt_open *o, rf_error *err)
{
	zstd_open *z = o->state;
	uint64_t first = o->local ? RF_MDS_UNIT_BYTES : RF_MDS_STEP_BYTES;
	if (!o->got)
		return zstd_want(o, NULL, first, 0);
	if (o->got_offset != 0 || o->got_len != o->want.len)
		return rf_fail(err, -EIO, "shard %s: open got [%llu, +%llu), asked for [0, +%llu)",
		               o->name, U64(o->got_offset), U64(o->got_len), U64(o->want.len));
	if (!z) { /* the first step: the frame header alone */
		if (!(z = o->state = calloc(1, sizeof(*z))))
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		o->held_bytes = sizeof(*z);
		RF_TRY(zstd_frame(o, z, err));
		z->need = RF_MIN(z->raw, RF_MDS_STEP_BYTES);
		return zstd_want(o, z, o->got_len, z->need);
	}
	bool short_input;
	uint8_t *p = zstd_prefix(o, z->need, &short_input, err);
	if (!p && !short_input)
		return err->code;
	if (!p) {
		if (o->got_len >= o->size)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: the zstd frame ends before its %llu-byte header",
			               o->name, U64(z->need));
		return zstd_want(o, z, 2 * o->got_len, z->need);
	}
	mds_header h = {0};
	uint64_t more = 0;
	int rc = header_parse(p, z->need, z->raw, &h, &more, o->name, err);
	free(p);
	if (rc < 0)
		return rc;
	if (!more)
		return zstd_layout(o, z, &h, err);
	if (more <= z->need)
		return rf_fail(err, RF_E_CORRUPT, "shard %s: header does not add up", o->name);
	z->need = more;
	return zstd_want(o, z, o->got_len, more);
}

static void zstd_open_abort(rf_fmt_open *o)
{
	free(o->state);
	o->state = NULL;
}

static int zstd_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                       const void *src, size_t src_len, void *dst, size_t dst_cap,
                       rf_unit_records *out, const char *name, rf_error *err)
{
	const mds_layout *L = priv;
	if (u != 0 || ix->blocks != 1 || dst_cap < ix->block[0].decoded_bytes ||
	    src_len != ix->block[0].compressed_bytes)
		return rf_fail(err, -EINVAL, "shard %s: unit %u: bad decode arguments", name, u);
	size_t r = ZSTD_decompress(dst, (size_t)L->raw, src, src_len);
	if (ZSTD_isError(r) || r != L->raw)
		return rf_fail(err, RF_E_CORRUPT, "shard %s: unit 0: zstd: %s", name,
		               ZSTD_isError(r) ? ZSTD_getErrorName(r) : "decoded size differs");
	const uint8_t *p = dst;
	if (rf_load_le32(p) != L->h.n ||
	    memcmp(p + 4, L->h.offs, 4 * ((uint64_t)L->h.n + 1)) != 0) /* LE hosts only */
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit 0: the offset table differs from the one the open "
		               "read",
		               name);
	mds_table m = table_at((uint8_t *)dst + align4(L->raw), L->h.n, L->h.cols.n);
	return fill_samples(L, 0, L->h.n, (const uint8_t *)dst + L->h.offs[0], L->h.offs[0], &m,
	                    out, name, err);
}

const rf_format rf_mds_format = {
    .name = "mds",
    .names = rf_mds_names,
    .open_step = mds_open_step,
    .close = mds_close,
    .decode = mds_decode,
    .in_place = true,
    .field_names = mds_field_names,
    .table_bytes = mds_table_bytes,
    .expand_name = "index.json",
    .expand = rf_mds_index_scan,
    .expand_bytes = RF_MDS_INDEX_WINDOW + 4096,
};

const rf_format rf_mds_zstd_format = {
    .name = "mds-zstd",
    .names = rf_mds_zstd_names,
    .open_step = zstd_open_step,
    .open_abort = zstd_open_abort,
    .close = mds_close,
    .decode = zstd_decode,
    .in_place = false,
    .field_names = mds_field_names,
};
