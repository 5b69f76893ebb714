/* tar.c - WebDataset tar shards behind the format seam. A tar holds no
 * index: open scans its headers in large sequential ranges (skipping the
 * members' data), groups members into samples the way webdataset does
 * (key = the name up to the first '.' of its last component, field = the
 * rest, lowercased; `__*__` metadata and dot-files skipped; a repeated
 * field in one sample is an error), and lays the samples out as units of
 * whole consecutive samples of about RF_TAR_UNIT_BYTES. Units are stored as
 * they decode (in_place): decode checks the unit's member headers again
 * and points the records' fields into the read buffer.
 *
 * Headers: ustar and v7, GNU `L` long names, PAX `x` path and size, GNU
 * base-256 sizes; every header's checksum is checked and every size is
 * checked against the file. Names are names: nothing here (or anywhere in
 * ringfeed) opens a path made from one, so `..`, absolute names and odd
 * bytes are kept as the tar gives them (a NUL inside a PAX path is refused:
 * a C string could not carry it). The header scan: tar_scan.c. */
#include "tar.h"

#include <stdio.h>
#include <stdlib.h>

#define U64(x) ((unsigned long long)(x))

/* The layout's private part: every sample's fields and key. */
typedef struct tar_layout {
	rf_rec_field *fields; /* offsets relative to their unit's start */
	uint32_t *field_first;
	char *keys;
	uint32_t *key_first;
	char **names;
	uint32_t names_n;
	uint64_t skipped;
	int codec;        /* RF_TAR_PLAIN, or the compressed tar's codec */
	uint64_t decoded; /* a compressed tar's decoded bytes */
	/* a .tar.gz split at access points (else NULL: one whole-shard unit) */
	rf_tar_ap *aps;      /* unit u starts from aps[u] */
	uint64_t *unit_out;  /* the decoded offset of unit u's first sample */
	uint32_t *unit_span; /* unit u's decoded bytes */
} tar_layout;

/* A .tar.gz decoding to more than this is split into units at its access
 * points (tar_stream.c); a smaller one is one whole-shard unit. */
#define RF_TAR_WHOLE_MAX (32u << 20)

/* ------------------------------------------------------------ the layout */

static void layout_free(tar_layout *L)
{
	if (!L)
		return;
	free(L->fields);
	free(L->field_first);
	free(L->keys);
	free(L->key_first);
	for (uint32_t i = 0; i < L->names_n; i++)
		free(L->names[i]);
	free(L->names);
	free(L->unit_out);
	free(L->unit_span);
	free(L);
}

static void aps_free(rf_tar_ap *a, size_t n)
{
	for (size_t i = 0; a && i < n; i++)
		free(a[i].window);
	free(a);
}

static void tar_close(rf_shard_index *ix, void *priv)
{
	tar_layout *L = priv;
	if (L && L->aps)
		aps_free(L->aps, ix ? ix->blocks : 0);
	layout_free(priv);
	rf_index_free(ix);
}

/* Units: runs of whole consecutive samples, each closed once it spans
 * RF_TAR_UNIT_BYTES, or before a sample would take it past the largest
 * unit a block may be. */
static int units_count(const tar_scan *s)
{
	uint32_t n = 0;
	uint64_t start = 0;
	bool open = false;
	for (size_t i = 0; i < s->sn; i++) {
		if (open && s->sv[i].end - start > RF_BLOCK_DECODED_MAX)
			open = false;
		if (!open)
			start = s->sv[i].start, open = true, n++;
		if (s->sv[i].end - start >= RF_TAR_UNIT_BYTES)
			open = false;
	}
	return (int)n;
}

/* A compressed tar: one unit, the whole object, decoding to the tar
 * (8-aligned) and then its record table. */
static void fill_whole(const tar_scan *s, rf_shard_index *ix, uint64_t size, uint64_t decoded)
{
	rf_block_info *b = &ix->block[0];
	*b = (rf_block_info){.offset = 0,
	                     .compressed_bytes = (uint32_t)size,
	                     .decoded_bytes = (uint32_t)(RF_TAR_ALIGN8(decoded) +
	                                                 rf_fmt_table_bytes((uint32_t)s->sn)),
	                     .records = (uint32_t)s->sn};
	for (size_t i = 0; i < s->sn; i++)
		ix->largest_record_bytes =
		    RF_MAX(ix->largest_record_bytes,
		           (uint32_t)(s->sv[i].end - (i ? s->sv[i - 1].end : 0)));
	rf_fmt_layout_sums(ix);
}

static void fill_units(const tar_scan *s, rf_shard_index *ix)
{
	uint32_t u = 0;
	bool open = false;
	rf_block_info *b = NULL;
	for (size_t i = 0; i < s->sn; i++) {
		if (open && s->sv[i].end - b->offset > RF_BLOCK_DECODED_MAX)
			open = false;
		if (!open) {
			b = &ix->block[u++];
			*b = (rf_block_info){.offset = s->sv[i].start, .first_record = i};
			open = true;
		}
		b->records++;
		b->compressed_bytes = b->decoded_bytes = (uint32_t)(s->sv[i].end - b->offset);
		uint64_t rec = s->sv[i].end - (i && b->records > 1 ? s->sv[i - 1].end : b->offset);
		ix->largest_record_bytes = RF_MAX(ix->largest_record_bytes, (uint32_t)rec);
		if (s->sv[i].end - b->offset >= RF_TAR_UNIT_BYTES)
			open = false;
	}
	rf_fmt_layout_sums(ix);
}

/* Fields with offsets relative to their unit's start (what decode hands
 * out, pointing into the unit's read buffer). */
static void fill_fields(const tar_scan *s, const rf_shard_index *ix, tar_layout *L)
{
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		uint64_t base = L->unit_out ? L->unit_out[u] : b->offset; /* decoded start */
		for (uint64_t i = b->first_record; i < b->first_record + b->records; i++) {
			const tar_sample *sm = &s->sv[i];
			size_t end = i + 1 < s->sn ? s->sv[i + 1].field_first : s->fn;
			for (size_t f = sm->field_first; f < end; f++)
				L->fields[f] = (rf_rec_field){
				    .name = s->fv[f].name,
				    .offset = (uint32_t)(s->fv[f].offset - base),
				    .len = (uint32_t)s->fv[f].len,
				};
			L->field_first[i] = sm->field_first;
			L->key_first[i] = sm->key_at;
		}
	}
	L->field_first[s->sn] = (uint32_t)s->fn;
	L->key_first[s->sn] = (uint32_t)s->kn;
}

/* The access points units start from: those a sample follows, and of
 * several followed by the same first sample the last (the least to skip).
 * Moves them to the front of aps; frees the others' windows. */
static size_t aps_choose(rf_tar_ap *aps, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (aps[i].first == UINT64_MAX) {
			free(aps[i].window);
			continue;
		}
		if (k > 0 && aps[k - 1].first == aps[i].first) {
			free(aps[k - 1].window);
			k--;
		}
		aps[k++] = aps[i];
	}
	return k;
}

/* A .tar.gz's units, one per chosen access point: the samples from its
 * first to the next point's first, read from the point's compressed byte
 * (the byte before it when bits are left) to where the open had decoded
 * past the unit's end. */
static int fill_split(rf_fmt_open *o, const tar_scan *s, rf_shard_index *ix, tar_layout *L,
                      rf_error *err)
{
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_tar_ap *a = &L->aps[u];
		uint64_t f = a->first, next = u + 1 < ix->blocks ? L->aps[u + 1].first : s->sn;
		uint64_t start = s->sv[f].start, span = s->sv[next - 1].end - start;
		uint64_t off = a->in - (a->bits ? 1 : 0);
		uint64_t dec = RF_TAR_ALIGN8(span) + rf_fmt_table_bytes((uint32_t)(next - f));
		if (a->end_in <= off || a->end_in > o->size || a->end_in - off > UINT32_MAX ||
		    dec > RF_BLOCK_DECODED_MAX || start < a->out)
			return rf_fail(err, -EFBIG,
			               "shard %s: samples %llu..%llu decode to %llu bytes from "
			               "compressed byte %llu: more than one unit may be (%u MiB)",
			               o->name, U64(f), U64(next - 1), U64(span), U64(off),
			               RF_BLOCK_DECODED_MAX >> 20);
		ix->block[u] = (rf_block_info){.offset = off,
		                               .compressed_bytes = (uint32_t)(a->end_in - off),
		                               .decoded_bytes = (uint32_t)dec,
		                               .records = (uint32_t)(next - f),
		                               .first_record = f};
		L->unit_out[u] = start;
		L->unit_span[u] = (uint32_t)span;
		for (uint64_t i = f; i < next; i++)
			ix->largest_record_bytes =
			    RF_MAX(ix->largest_record_bytes,
			           (uint32_t)(s->sv[i].end - (i > f ? s->sv[i - 1].end : start)));
	}
	rf_fmt_layout_sums(ix);
	return 0;
}

/* The layout of the scanned samples: units of whole samples; for a
 * compressed tar one unit, the whole object, decoding to `decoded` bytes,
 * or (a large .tar.gz) a unit per access point of aps (taken over). */
static int build_layout(rf_fmt_open *o, tar_scan *s, int codec, uint64_t decoded, rf_tar_ap *aps,
                        size_t naps, rf_error *err)
{
	size_t split = 0;
	if (codec == RF_TAR_GZIP && decoded > RF_TAR_WHOLE_MAX && s->sn > 0)
		split = aps_choose(aps, naps);
	else
		aps_free(aps, naps), aps = NULL;
	if (split < 2) { /* one point (the start): the whole object */
		aps_free(aps, split);
		aps = NULL, split = 0;
	}
	if (codec && !split &&
	    (o->size > UINT32_MAX ||
	     RF_TAR_ALIGN8(decoded) + rf_fmt_table_bytes((uint32_t)RF_MIN(s->sn, UINT32_MAX)) >
	         RF_BLOCK_DECODED_MAX ||
	     s->sn > UINT32_MAX))
		return rf_fail(
		    err, -EFBIG,
		    "shard %s: a compressed tar of %llu bytes decoding to %llu is larger "
		    "than one unit may be (%u MiB): decompress it to .tar",
		    o->name, U64(o->size), U64(decoded), RF_BLOCK_DECODED_MAX >> 20);
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	tar_layout *L = calloc(1, sizeof(*L));
	uint32_t units = split   ? (uint32_t)split
	                 : codec ? (s->sn ? 1 : 0)
	                         : (uint32_t)units_count(s);
	if (L && split) {
		L->aps = aps;
		L->unit_out = calloc(split, sizeof(uint64_t));
		L->unit_span = calloc(split, sizeof(uint32_t));
	} else if (split) {
		aps_free(aps, split);
	}
	if (ix) {
		ix->metadata = strdup("");
		ix->block = calloc(units ? units : 1, sizeof(rf_block_info));
	}
	if (L) {
		L->fields = malloc((s->fn ? s->fn : 1) * sizeof(rf_rec_field));
		L->field_first = malloc((s->sn + 1) * sizeof(uint32_t));
		L->key_first = malloc((s->sn + 1) * sizeof(uint32_t));
	}
	if (!ix || !L || !ix->metadata || !ix->block || !L->fields || !L->field_first ||
	    !L->key_first || (split && (!L->unit_out || !L->unit_span))) {
		if (ix)
			ix->blocks = units; /* how many points L holds */
		tar_close(ix, L);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the layout", o->name);
	}
	ix->file_bytes = o->size;
	ix->records = s->sn;
	ix->blocks = units;
	if (split) {
		int rc = fill_split(o, s, ix, L, err);
		if (rc < 0) {
			tar_close(ix, L);
			return rc;
		}
	} else if (codec) {
		fill_whole(s, ix, o->size, decoded);
	} else {
		fill_units(s, ix);
	}
	fill_fields(s, ix, L);
	L->codec = codec;
	L->decoded = decoded;
	if (codec)
		o->in_place = false; /* decoded into a slab, not kept as read */
	L->keys = s->keys, s->keys = NULL;
	L->names = s->names, s->names = NULL;
	L->names_n = s->names_n, s->names_n = 0;
	L->skipped = s->skipped;
	o->index = ix;
	o->priv = L;
	o->held_bytes = sizeof(*ix) + sizeof(*L) + (uint64_t)units * sizeof(rf_block_info) +
	                s->fn * sizeof(rf_rec_field) + (s->sn + 1) * 8 + s->kcap +
	                (uint64_t)L->names_n * (sizeof(char *) + 64) +
	                split * (sizeof(rf_tar_ap) + RF_TAR_WINDOW_BYTES + 12);
	return RF_FMT_DONE;
}

/* ------------------------------------------------------------ the seam */

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);
	return n > m && strcmp(s + n - m, suffix) == 0;
}

static int tar_claim(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	return ends_with(base, strlen(base), ".tar") || rf_tar_codec_of(base) ? RF_FMT_YES
	                                                                      : RF_FMT_NO;
}

/* The codec the shard's name says (its last component, query left out). */
static int codec_of_url(const char *url)
{
	char leaf[256];
	const char *slash = strrchr(url, '/');
	snprintf(leaf, sizeof(leaf), "%.*s", (int)strcspn(slash ? slash + 1 : url, "?#"),
	         slash ? slash + 1 : url);
	return rf_tar_codec_of(leaf);
}

static void tar_open_abort(rf_fmt_open *o)
{
	if (codec_of_url(o->url))
		rf_tar_stream_free(o->state);
	else
		rf_tar_scan_free(o->state);
	o->state = NULL;
}

static int tar_open_step(rf_fmt_open *o, rf_error *err)
{
	tar_scan *s = o->state;
	int codec = codec_of_url(o->url);
	if (codec) { /* the whole stream decoded once; one unit */
		int rc = rf_tar_stream_step(o, codec, err);
		if (rc != RF_TAR_SCAN_END)
			return rc;
		tar_stream *t = o->state;
		size_t naps = 0;
		rf_tar_ap *aps = rf_tar_stream_take_aps(t, &naps);
		return build_layout(o, rf_tar_stream_scan(t), codec, rf_tar_stream_decoded(t), aps,
		                    naps, err);
	}
	if (!o->got) { /* the first step: nothing allocated before a bound is declared */
		if (o->size == 0) {
			o->final = true;
			return rf_fail(err, RF_E_CORRUPT, "shard %s: an empty file is not a tar",
			               o->name);
		}
		tar_scan first = {0};
		int rc = rf_tar_want_from(o, &first);
		o->held_bytes = 0;
		return rc;
	}
	if (!s) {
		if (!(s = calloc(1, sizeof(*s))))
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		s->member_start = UINT64_MAX;
		o->state = s;
	}
	if (!o->got || o->got_offset != o->want.offset || o->got_len != o->want.len)
		return rf_fail(err, -EIO,
		               "shard %s: open step got bytes [%llu, +%llu), asked for "
		               "[%llu, +%llu)",
		               o->name, U64(o->got_offset), U64(o->got_len), U64(o->want.offset),
		               U64(o->want.len));
	uint64_t pos0 = s->pos;
	int rc = rf_tar_scan_chunk(o, s, err);
	if (rc < 0) {
		/* a header that is not one at the very start: not a tar at all */
		o->final = pos0 == 0 && s->sn == 0 && s->pos == 0;
		return rc;
	}
	if (rc == RF_TAR_SCAN_MORE)
		return rf_tar_want_from(o, s);
	return build_layout(o, s, RF_TAR_PLAIN, 0, NULL, 0, err);
}

static uint32_t tar_field_names(const void *priv, const char *const **names)
{
	const tar_layout *L = priv;
	*names = (const char *const *)L->names;
	return L->names_n;
}

/* The unit's member headers again: each field's header (the block before
 * its data) must still be a sound regular header of its size. */
static int check_unit(const tar_layout *L, const rf_block_info *b, uint32_t u, const uint8_t *src,
                      const char *name, rf_error *err)
{
	uint32_t f0 = L->field_first[b->first_record];
	uint32_t f1 = L->field_first[b->first_record + b->records];
	for (uint32_t f = f0; f < f1; f++) {
		const rf_rec_field *rf = &L->fields[f];
		uint64_t at =
		    (L->unit_out ? L->unit_out[u] : b->offset) + rf->offset - RF_TAR_BLOCK;
		if (rf->offset < RF_TAR_BLOCK) /* never: a member's data follows its header */
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: unit %u: a field at its byte %u", name, u,
			               rf->offset);
		const uint8_t *h = src + rf->offset - RF_TAR_BLOCK;
		uint64_t size;
		char type = (char)h[156];
		if (!rf_tar_checksum_ok(h) || !(type == '0' || type == '\0' || type == '7') ||
		    !rf_tar_number(h + 124, 12, &size) || size != rf->len)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: unit %u: header at byte %llu is not the one the "
			               "open read (checksum, type or size %u changed)",
			               name, u, U64(at), rf->len);
	}
	return 0;
}

static int tar_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                      const void *src, size_t src_len, void *dst, size_t dst_cap,
                      rf_unit_records *out, const char *name, rf_error *err)
{
	const tar_layout *L = priv;
	if (u >= ix->blocks)
		return rf_fail(err, -EINVAL, "shard %s: unit %u of %u", name, u, ix->blocks);
	const rf_block_info *b = &ix->block[u];
	/* a compressed tar's unit decodes into dst, its table after it */
	uint64_t span = L->aps ? L->unit_span[u] : L->codec ? L->decoded : b->compressed_bytes;
	uint64_t table_at = L->codec ? RF_TAR_ALIGN8(span) : 0;
	if (src_len != b->compressed_bytes || dst_cap < table_at + rf_fmt_table_bytes(b->records))
		return rf_fail(err, -EINVAL,
		               "shard %s: unit %u: %zu stored bytes (expected %u), table room %zu",
		               name, u, src_len, b->compressed_bytes, dst_cap);
	if (L->aps)
		RF_TRY(rf_tar_stream_decode_at(src, src_len, &L->aps[u],
		                               L->unit_out[u] - L->aps[u].out, dst, dst_cap,
		                               (size_t)span, name, u, err));
	else if (L->codec)
		RF_TRY(rf_tar_stream_decode(L->codec, src, src_len, dst, (size_t)L->decoded, name,
		                            err));
	const uint8_t *base = L->codec ? (const uint8_t *)dst : (const uint8_t *)src;
	RF_TRY(check_unit(L, b, u, base, name, err));
	uint8_t *t = (uint8_t *)dst + table_at;
	for (uint32_t i = 0; i < b->records; i++) {
		uint64_t r = b->first_record + i;
		uint32_t f_last = L->field_first[r + 1] - 1; /* every sample has a field */
		const rf_rec_field *lf = &L->fields[f_last];
		uint64_t end = rf_tar_pad512((uint64_t)lf->offset + lf->len);
		rf_store_le32(t + 4 * i, (uint32_t)RF_MIN(end, span));
	}
	rf_store_le32(t + 4 * b->records, b->records);
	*out = (rf_unit_records){
	    .base = base,
	    .ends = (const uint32_t *)t,
	    .records = b->records,
	    .fields = L->fields,
	    .field_first = L->field_first + b->first_record,
	    .keys = L->keys,
	    .key_first = L->key_first + b->first_record,
	};
	return 0;
}

const rf_format rf_tar_format = {
    .name = "tar",
    .claim = tar_claim,
    .open_step = tar_open_step,
    .open_abort = tar_open_abort,
    .close = tar_close,
    .decode = tar_decode,
    .in_place = true,
    .field_names = tar_field_names,
};
