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

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#define U64(x) ((unsigned long long)(x))

/* A .tar.gz decoding to more than this is split into units at its access
 * points (tar_stream.c), a .tar.zst into sequential units between its
 * checkpoints; a smaller one is one whole-shard unit. */
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
	for (uint32_t i = 0; i < L->names_n; i++) {
		free(L->names[i]);
		if (L->shown)
			free(L->shown[i]);
	}
	free(L->names);
	free(L->shown);
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

/* Where unit u starts in the tar's (decoded) bytes: its offset, or for a
 * .tar.gz split at access points (a sequential .tar.zst) its first
 * sample's decoded offset. */
static uint64_t unit_start(const tar_layout *L, const rf_block_info *b, uint32_t u)
{
	return L->unit_out ? L->unit_out[u] : b->offset;
}

/* Fields with offsets relative to their unit's start (what decode hands
 * out, pointing into the unit's read buffer). */
static void fill_fields(const tar_scan *s, const rf_shard_index *ix, tar_layout *L)
{
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		uint64_t base = unit_start(L, b, u); /* in the tar's bytes */
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

/* Samples tile the tar: sample i's bytes start where sample i - 1's end
 * (the first's at byte 0), so that a unit starts at a header boundary from
 * which decode can walk every header (metadata members and long-name
 * headers before a sample included) and a layout from an index file, which
 * knows only the members' data, equals the scan's. */
static int retile(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
	for (size_t i = 0; i < s->sn; i++) {
		uint64_t start = i ? s->sv[i - 1].end : 0;
		tar_sample *sm = &s->sv[i];
		if (sm->end - start > RF_BLOCK_DECODED_MAX)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: sample '%.*s' spans %llu bytes from byte %llu (with "
			    "the members before it), more than a read unit holds (%u)",
			    o->name, (int)RF_MIN(sm->key_len, 80), s->keys + sm->key_at,
			    U64(sm->end - start), U64(start), RF_BLOCK_DECODED_MAX);
		sm->start = start;
	}
	return 0;
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
 * first to the next point's first (samples tile the tar: a unit starts
 * where the sample before it ends), read from the point's compressed byte
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

/* A large .tar.zst's sequential units: runs of whole samples grouped as a
 * plain tar's (fill_units, in decoded bytes), unit u the compressed range
 * [c(u - 1), c(u)), c(u) the compressed bytes of the first checkpoint at
 * or past the unit's decoded end (c(-1) = 0; the last unit ends with the
 * object): the bytes that decode past it, read in order. */
static int fill_seq(rf_fmt_open *o, const tar_scan *s, rf_shard_index *ix, tar_layout *L,
                    const rf_tar_cp *cp, size_t ncp, rf_error *err)
{
	fill_units(s, ix);
	ix->compressed_bytes = ix->decoded_bytes = 0; /* summed again below */
	ix->largest_block_compressed_bytes = ix->largest_block_decoded_bytes = 0;
	uint64_t prev = 0;
	size_t k = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		rf_block_info *b = &ix->block[u];
		uint64_t start = b->offset, span = b->compressed_bytes;
		while (k < ncp && cp[k].out < start + span)
			k++;
		uint64_t c = u + 1 < ix->blocks && k < ncp ? cp[k].in : o->size;
		uint64_t dec = RF_TAR_ALIGN8(span) + rf_fmt_table_bytes(b->records);
		if (c < prev || c > o->size || c - prev > UINT32_MAX || dec > RF_BLOCK_DECODED_MAX)
			return rf_fail(
			    err, -EFBIG,
			    "shard %s: samples %llu..%llu decode to %llu bytes from "
			    "compressed bytes [%llu, %llu): more than one unit may be (%u "
			    "MiB decoded, 4 GiB stored)",
			    o->name, U64(b->first_record), U64(b->first_record + b->records - 1),
			    U64(span), U64(prev), U64(c), RF_BLOCK_DECODED_MAX >> 20);
		L->unit_out[u] = start;
		L->unit_span[u] = (uint32_t)span;
		b->offset = prev;
		b->compressed_bytes = (uint32_t)(c - prev);
		b->decoded_bytes = (uint32_t)dec;
		prev = c;
	}
	rf_fmt_layout_sums(ix);
	ix->sequential = 1;
	L->seq = true;
	return 0;
}

/* The layout of the scanned samples: units of whole samples; for a
 * compressed tar (codec) one unit, the whole object, decoding to `decoded`
 * bytes, or (a large .tar.gz) a unit per access point of aps (taken over),
 * or (a large .tar.zst) sequential units between the checkpoints cps
 * (taken over). */
/* ------------------------------------------------------- tar_fields */

/* The next FIELD=NAME pair of a field map at *p: its two parts' spans. */
static bool map_next(const char **p, const char **from, size_t *fl, const char **to, size_t *tl)
{
	if (!**p)
		return false;
	const char *end = *p + strcspn(*p, ",");
	const char *eq = memchr(*p, '=', (size_t)(end - *p));
	*from = *p;
	*fl = eq ? (size_t)(eq - *p) : (size_t)(end - *p);
	*to = eq ? eq + 1 : end;
	*tl = eq ? (size_t)(end - eq - 1) : 0;
	*p = *end ? end + 1 : end;
	return true;
}

int rf_tar_opts_parse(const rf_fmt_config *cfg, void *out, rf_error *err)
{
	rf_tar_opts *o = out;
	memset(o, 0, sizeof(*o));
	const char *map = NULL;
	RF_TRY(rf_fmt_cfg_str(cfg, "tar_fields", &map, err));
	if (!map)
		return 0;
	if (strlen(map) >= sizeof(o->field_map))
		return rf_fail(err, -EINVAL, "tar_fields: longer than %u bytes",
		               RF_TAR_FIELD_MAP_BYTES - 1);
	const char *p = map, *from, *to;
	size_t fl, tl, n = 0;
	while (map_next(&p, &from, &fl, &to, &tl)) {
		if (++n > RF_TAR_FIELD_MAP_MAX)
			return rf_fail(err, -EINVAL, "tar_fields: more than %u pairs",
			               RF_TAR_FIELD_MAP_MAX);
		bool ok = fl > 0 && tl > 0 && !memchr(to, '=', tl);
		for (size_t i = 0; ok && i < fl + 1 + tl; i++) {
			unsigned char c = (unsigned char)from[i];
			ok = i == fl || (c > 0x20 && c < 0x7f && !(c >= 'A' && c <= 'Z'));
		}
		if (!ok)
			return rf_fail(
			    err, -EINVAL,
			    "tar_fields \"%.80s\": pair %zu is not FIELD=NAME (lower-case, "
			    "printable, no spaces; pairs split by ',')",
			    map, n);
		const char *q = map, *f2, *t2;
		size_t fl2, tl2;
		for (size_t k = 1; k < n && map_next(&q, &f2, &fl2, &t2, &tl2); k++)
			if (fl2 == fl && !memcmp(f2, from, fl))
				return rf_fail(err, -EINVAL, "tar_fields: field %.*s given twice",
				               (int)RF_MIN(fl, 64), from);
	}
	memcpy(o->field_map, map, strlen(map) + 1);
	return 0;
}

/* The layout's names as the field map shows them; a map that gives two of
 * this shard's fields one name is an error naming both. */
static int apply_field_map(const rf_fmt_open *o, tar_layout *L, rf_error *err)
{
	const rf_tar_opts *opt = o->opt;
	if (!opt || !opt->field_map[0] || L->names_n == 0)
		return 0;
	if (!(L->shown = calloc(L->names_n, sizeof(*L->shown))))
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	for (uint32_t i = 0; i < L->names_n; i++) {
		const char *p = opt->field_map, *from, *to, *name = L->names[i];
		size_t fl, tl, nl = strlen(name);
		while (map_next(&p, &from, &fl, &to, &tl))
			if (fl == nl && !memcmp(from, name, nl)) {
				name = to;
				nl = tl;
				break;
			}
		if (!(L->shown[i] = strndup(name, nl)))
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(L->shown[j], L->shown[i]))
				return rf_fail(
				    err, -EINVAL,
				    "shard %s: tar_fields shows fields %.64s and %.64s both "
				    "as %.64s",
				    o->name, L->names[j], L->names[i], L->shown[i]);
	}
	return 0;
}

static int build_layout(rf_fmt_open *o, tar_scan *s, bool from_index, int codec, uint64_t decoded,
                        rf_tar_ap *aps, size_t naps, rf_tar_cp *cps, size_t ncps, rf_error *err)
{
	int rc = retile(o, s, err);
	bool seq = rc == 0 && codec == RF_TAR_ZSTD && decoded > RF_TAR_WHOLE_MAX && s->sn > 0;
	if (!seq)
		free(cps), cps = NULL, ncps = 0;
	size_t split = 0;
	if (rc == 0 && codec == RF_TAR_GZIP && decoded > RF_TAR_WHOLE_MAX && s->sn > 0)
		split = aps_choose(aps, naps);
	else
		aps_free(aps, naps), aps = NULL;
	if (split < 2) { /* one point (the start): the whole object */
		aps_free(aps, split);
		aps = NULL, split = 0;
	}
	if (rc < 0)
		return rc;
	if (codec && !split && !seq &&
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
	uint32_t units = split           ? (uint32_t)split
	                 : codec && !seq ? (s->sn ? 1 : 0)
	                                 : (uint32_t)units_count(s);
	if (L && split)
		L->aps = aps;
	else if (split)
		aps_free(aps, split);
	if (L && (split || seq)) {
		L->unit_out = calloc(units, sizeof(uint64_t));
		L->unit_span = calloc(units, sizeof(uint32_t));
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
	    !L->key_first || ((split || seq) && (!L->unit_out || !L->unit_span))) {
		if (ix)
			ix->blocks = units; /* how many points L holds */
		tar_close(ix, L);
		free(cps);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the layout", o->name);
	}
	ix->file_bytes = o->size;
	ix->records = s->sn;
	ix->blocks = units;
	if (split || seq) {
		rc = split ? fill_split(o, s, ix, L, err) : fill_seq(o, s, ix, L, cps, ncps, err);
		free(cps);
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
	L->from_index = from_index;
	L->from_cache = from_index && s->idx_from_cache;
	rc = apply_field_map(o, L, err);
	if (rc < 0) {
		tar_close(ix, L);
		return rc;
	}
	o->index = ix;
	o->priv = L;
	o->held_bytes = sizeof(*ix) + sizeof(*L) + (uint64_t)units * sizeof(rf_block_info) +
	                s->fn * sizeof(rf_rec_field) + (s->sn + 1) * 8 + s->kcap +
	                (uint64_t)L->names_n * (sizeof(char *) + 64) +
	                split * (sizeof(rf_tar_ap) + RF_TAR_WINDOW_BYTES + 12) +
	                (seq ? (uint64_t)units * 12 : 0) +
	                (L->shown ? (uint64_t)L->names_n * (sizeof(char *) + 64) : 0);
	return RF_FMT_DONE;
}

/* ------------------------------------------------------------ the seam */

/* The codec the shard's name says (its last component, query left out). */
static int codec_of_url(const char *url)
{
	char leaf[256];
	const char *slash = strrchr(url, '/');
	snprintf(leaf, sizeof(leaf), "%.*s", (int)rf_url_path_len(slash ? slash + 1 : url),
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

/* The open's phases (o->step). */
enum {
	TAR_BEGIN = 0, /* declares the state's bound */
	TAR_STATE,     /* allocates the state, asks for PREFIX.idx's size */
	TAR_IDX_SIZE,  /* the index's size (or its absence) */
	TAR_IDX_BYTES, /* the index's bytes: its members counted */
	TAR_IDX_PARSE, /* the same bytes again (from the buffer), parsed */
	TAR_IDX_TAIL,  /* the tar past the index's last member */
	TAR_SCAN,      /* scanning the headers */
};

/* PREFIX.idx for PREFIX.tar (a fragment kept), or NULL. A URL with a
 * query (a presigned URL) has a signature that is the shard's, not the
 * sibling's, so asking the store for it would be refused rather than
 * absent: its sibling is named without the query, *query is set, and only
 * the index cache may answer it (rf_fmt_want.cache_only). */
static char *idx_sibling(const char *url, bool *query)
{
	size_t path = rf_url_path_len(url);
	if (path < 4 || memcmp(url + path - 4, ".tar", 4) != 0)
		return NULL;
	bool q = url[path] == '?';
	if (query)
		*query = q;
	size_t n = q ? path : strlen(url);
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, url, n);
		s[n] = 0;
		memcpy(s + path - 4, ".idx", 4);
	}
	return s;
}

static uint64_t state_bytes(const rf_fmt_open *o)
{
	return sizeof(tar_scan) + 2 * (strlen(o->url) + strlen(o->name) + 2);
}

static int state_new(rf_fmt_open *o, rf_error *err)
{
	tar_scan *s = calloc(1, sizeof(*s));
	if (!s)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	s->member_start = UINT64_MAX;
	o->state = s;
	const rf_tar_opts *opt = o->opt;
	bool want_idx = !(opt && opt->scan_only);
	if (want_idx && (s->idx_url = idx_sibling(o->url, &s->idx_cache_only)) &&
	    !(s->idx_name = idx_sibling(o->name, NULL)))
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	o->held_bytes = state_bytes(o);
	if (!s->idx_url) {
		o->step = TAR_SCAN;
		return rf_tar_want_from(o, s);
	}
	o->step = TAR_IDX_SIZE;
	o->want = (rf_fmt_want){
	    .object = s->idx_url, .optional = true, .cache_only = s->idx_cache_only}; /* its size */
	return RF_FMT_NEED;
}

/* The index's size is known: ask for its bytes (bounded), or scan. */
static int idx_size(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
	if (o->absent) { /* no index beside the tar: scan its headers */
		free(s->idx_url);
		free(s->idx_name);
		s->idx_url = s->idx_name = NULL;
		o->step = TAR_SCAN;
		return rf_tar_want_from(o, s);
	}
	uint64_t n = o->got_object_size;
	if (n == 0 || n > RF_TAR_INDEX_BYTES_MAX) {
		o->final = true;
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: %llu bytes: not a wds2idx index of at most %u bytes "
		               "(remove it, or write it again: ringfeed index)",
		               s->idx_name, U64(n), RF_TAR_INDEX_BYTES_MAX);
	}
	s->idx_bytes = n;
	o->step = TAR_IDX_BYTES;
	o->want = (rf_fmt_want){.object = s->idx_url,
	                        .offset = 0,
	                        .len = n,
	                        .parse_bound = 0}; /* counting allocates nothing */
	return RF_FMT_NEED;
}

/* What building the layout from the scan's tables may allocate. */
static uint64_t layout_bound(const tar_scan *s)
{
	return sizeof(rf_shard_index) + sizeof(tar_layout) + 64 +
	       (s->sn + 1) * (sizeof(rf_block_info) + 2 * sizeof(uint32_t)) +
	       (s->fn + 1) * sizeof(rf_rec_field);
}

static int idx_parsed(rf_fmt_open *o, tar_scan *s, uint64_t tail, rf_error *err);

static int idx_got(const rf_fmt_open *o, const tar_scan *s, rf_error *err)
{
	if (!o->got || o->got_offset != 0 || o->got_len != s->idx_bytes ||
	    o->got_object_size != s->idx_bytes)
		return rf_fail(err, -EIO,
		               "index %s: the open got bytes [%llu, +%llu) of a %llu-byte object, "
		               "asked for [0, +%llu)",
		               s->idx_name, U64(o->got_offset), U64(o->got_len),
		               U64(o->got_object_size), U64(s->idx_bytes));
	return 0;
}

/* The index's bytes: its members counted (nothing allocated), then the same
 * range asked for again (served from the buffer) with the bound that count
 * gives, so the budget holds what the parse takes, not a guess from sizes. */
static int idx_bytes(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
	RF_TRY(idx_got(o, s, err));
	s->idx_members = rf_tar_index_members(o->got, (size_t)o->got_len);
	o->step = TAR_IDX_PARSE;
	o->want =
	    (rf_fmt_want){.object = s->idx_url,
	                  .offset = 0,
	                  .len = s->idx_bytes,
	                  .parse_bound = rf_tar_index_parse_bound(s->idx_members, s->idx_bytes)};
	return RF_FMT_NEED;
}

static int idx_parse(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
	RF_TRY(idx_got(o, s, err));
	uint64_t tail = 0;
	int rc = rf_tar_index_parse(o, s, s->idx_name, o->got, (size_t)o->got_len, &tail, err);
	if (rc == 0)
		rc = idx_parsed(o, s, tail, err);
	if (rc < 0)
		rf_tar_scan_clear(s); /* a failed step leaves the state as it was */
	return rc;
}

/* The index parsed into the tables: the layout, or the tar's tail to check. */
/* What to do about a stale index: a file is the user's to write again; the
 * index cache's entry is dropped by the engine, which scans the tar. */
static const char *idx_advice(const tar_scan *s)
{
	return s->idx_from_cache ? "the index cache's entry is dropped and the tar scanned again"
	                         : "write it again with ringfeed index";
}

static int idx_parsed(rf_fmt_open *o, tar_scan *s, uint64_t tail, rf_error *err)
{
	o->held_bytes = state_bytes(o) + rf_tar_scan_bytes(s);
	s->pos = tail;
	char *cached = NULL; /* messages name the cached index, not a file */
	if (s->idx_from_cache && asprintf(&cached, "(the cached index of %s)", o->name) > 0) {
		free(s->idx_name);
		s->idx_name = cached;
	}
	if (tail == o->size)
		return build_layout(o, s, true, RF_TAR_PLAIN, 0, NULL, 0, NULL, 0, err);
	if (o->size - tail > RF_TAR_STEP_BYTES) {
		o->final = true;
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: the tar holds %llu bytes past the index's last member "
		               "(byte %llu), more than end-of-archive blocks: the index is stale "
		               "(%s)",
		               s->idx_name, U64(o->size - tail), U64(tail), idx_advice(s));
	}
	/* the tail: end-of-archive blocks, or members the index left out */
	o->step = TAR_IDX_TAIL;
	o->want = (rf_fmt_want){.offset = tail,
	                        .len = o->size - tail,
	                        .parse_bound = layout_bound(s) + RF_TAR_NAME_MAX + 1024};
	return RF_FMT_NEED;
}

typedef struct tail_walk {
	const char *name, *idx_name, *advice;
	uint64_t at;
} tail_walk;

static int tail_member(void *ctx, const char *n, size_t len, uint64_t data, uint64_t size,
                       rf_error *err)
{
	tail_walk *w = ctx;
	char b[128];
	size_t kl;
	(void)size;
	if (!rf_tar_member_key(n, len, &kl))
		return 0;
	return rf_fail(err, RF_E_CORRUPT,
	               "shard %s: member '%s' at byte %llu is not in index %s (the index is "
	               "stale: %s)",
	               w->name, rf_tar_shown(n, len, b, sizeof(b)),
	               U64(w->at + data - RF_TAR_BLOCK), w->idx_name, w->advice);
}

static int idx_tail(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
	if (!o->got || o->got_offset != s->pos || o->got_len != o->size - s->pos)
		return rf_fail(err, -EIO,
		               "shard %s: the open got bytes [%llu, +%llu), asked for "
		               "[%llu, +%llu)",
		               o->name, U64(o->got_offset), U64(o->got_len), U64(s->pos),
		               U64(o->size - s->pos));
	tail_walk w = {
	    .name = o->name, .idx_name = s->idx_name, .advice = idx_advice(s), .at = s->pos};
	char where[RF_ERROR_MSG_BYTES / 2];
	snprintf(where, sizeof(where), "%s past index %s (bytes relative to its byte %llu)",
	         o->name, s->idx_name, U64(s->pos));
	int rc = rf_tar_walk(o->got, o->got_len, where, tail_member, &w, err);
	if (rc < 0) {
		size_t l = strlen(err->msg);
		if (!strstr(err->msg, "stale"))
			snprintf(err->msg + l, sizeof(err->msg) - l,
			         " (after the last member index %s lists: the index is stale or "
			         "wrong: %s)",
			         s->idx_name, idx_advice(s));
		return rc;
	}
	return build_layout(o, s, true, RF_TAR_PLAIN, 0, NULL, 0, NULL, 0, err);
}

static int scan_step(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
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
	return build_layout(o, s, false, RF_TAR_PLAIN, 0, NULL, 0, NULL, 0, err);
}

static int tar_open_step(rf_fmt_open *o, rf_error *err)
{
	tar_scan *s = o->state;
	int codec = codec_of_url(o->url);
	if (codec) { /* the stream decoded once (tar_stream.c); no index file */
		int rc = rf_tar_stream_step(o, codec, err);
		if (rc != RF_TAR_SCAN_END)
			return rc;
		tar_stream *t = o->state;
		size_t naps = 0, ncps = 0;
		rf_tar_ap *aps = rf_tar_stream_take_aps(t, &naps);
		rf_tar_cp *cps = rf_tar_stream_take_cps(t, &ncps);
		rc = build_layout(o, rf_tar_stream_scan(t), false, codec, rf_tar_stream_decoded(t),
		                  aps, naps, cps, ncps, err);
		tar_layout *L = rc == RF_FMT_DONE ? o->priv : NULL;
		if (L && L->seq) /* the stream's decoder as the open met it */
			L->seq_bytes = rf_tar_seq_need(rf_tar_stream_zd_bytes(t));
		return rc;
	}
	switch (o->step) {
	case TAR_BEGIN: /* nothing allocated before a bound is declared */
		if (o->size == 0) {
			o->final = true;
			return rf_fail(err, RF_E_CORRUPT, "shard %s: an empty file is not a tar",
			               o->name);
		}
		o->step = TAR_STATE;
		o->held_bytes = 0;
		o->want = (rf_fmt_want){.len = 0, .parse_bound = state_bytes(o)};
		return RF_FMT_NEED;
	case TAR_STATE:
		return state_new(o, err);
	case TAR_IDX_SIZE:
		return idx_size(o, s, err);
	case TAR_IDX_BYTES:
		return idx_bytes(o, s, err);
	case TAR_IDX_PARSE:
		return idx_parse(o, s, err);
	case TAR_IDX_TAIL:
		return idx_tail(o, s, err);
	default:
		return scan_step(o, s, err);
	}
}

static uint32_t tar_field_names(const void *priv, const char *const **names)
{
	const tar_layout *L = priv;
	*names = (const char *const *)(L->shown ? L->shown : L->names);
	return L->names_n;
}

/* Decode's walk of a unit's headers, against the layout. */
typedef struct unit_walk {
	const tar_layout *L;
	uint64_t r;           /* the record of field f */
	uint32_t f, f_end;    /* the next field the layout has, and the unit's end */
	uint64_t unit_offset; /* the unit's first byte in the shard */
	const char *name;
	uint32_t u;
	bool from_index, from_cache;
} unit_walk;

/* Why a layout the tar contradicts was wrong. */
static const char *stale_why(bool from_index, bool from_cache)
{
	return from_cache   ? " (the cached index of this tar, from the index cache, is stale: "
	                      "the tar changed under the same version; the entry is dropped "
	                      "and the next open scans the tar again)"
	       : from_index ? " (the index file is stale or wrong: write it again with "
	                      "ringfeed index)"
	                    : " (the tar changed since the open)";
}

static int walk_mismatch(unit_walk *w, const char *n, size_t len, uint64_t data, const char *what,
                         rf_error *err)
{
	char b[128];
	return rf_fail(err, RF_E_CORRUPT, "shard %s: unit %u: member '%s' at byte %llu: %s%s",
	               w->name, w->u, rf_tar_shown(n, len, b, sizeof(b)),
	               U64(w->unit_offset + data - RF_TAR_BLOCK), what,
	               stale_why(w->from_index, w->from_cache));
}

static bool field_is(const char *stored, const char *f, size_t len)
{
	if (strlen(stored) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (stored[i] != (char)tolower((unsigned char)f[i]))
			return false;
	return true;
}

static int walk_member(void *ctx, const char *n, size_t len, uint64_t data, uint64_t size,
                       rf_error *err)
{
	unit_walk *w = ctx;
	const tar_layout *L = w->L;
	size_t kl = 0;
	if (!rf_tar_member_key(n, len, &kl))
		return 0; /* skipped by the open too */
	if (w->f >= w->f_end)
		return walk_mismatch(w, n, len, data, "the layout has no member here", err);
	while (L->field_first[w->r + 1] <= w->f)
		w->r++;
	const rf_rec_field *rf = &L->fields[w->f];
	uint32_t k0 = L->key_first[w->r], k1 = L->key_first[w->r + 1];
	if (k1 - k0 != kl || memcmp(L->keys + k0, n, kl) != 0)
		return walk_mismatch(w, n, len, data, "its key is not the layout's sample key",
		                     err);
	if (!field_is(L->names[rf->name], n + kl + 1, len - kl - 1))
		return walk_mismatch(w, n, len, data, "its field is not the layout's", err);
	if (data != rf->offset || size != rf->len)
		return walk_mismatch(w, n, len, data,
		                     "its data's offset or size is not the layout's", err);
	w->f++;
	return 0;
}

/* The unit's member headers again, every one from the unit's start: the
 * members webdataset reads must be exactly the layout's (keys, fields,
 * offsets, sizes), each header sound: an index that lies, or a tar that
 * changed, is an error here, never a wrong or lost sample. */
static int check_unit(const tar_layout *L, const rf_block_info *b, uint32_t u, const uint8_t *src,
                      uint64_t span, const char *name, rf_error *err)
{
	uint64_t at = unit_start(L, b, u); /* in the tar's (decoded) bytes */
	unit_walk w = {.L = L,
	               .r = b->first_record,
	               .f = L->field_first[b->first_record],
	               .f_end = L->field_first[b->first_record + b->records],
	               .unit_offset = at,
	               .name = name,
	               .u = u,
	               .from_index = L->from_index,
	               .from_cache = L->from_cache};
	char where[RF_ERROR_MSG_BYTES / 2];
	snprintf(where, sizeof(where), "%s unit %u (bytes relative to its byte %llu)", name, u,
	         U64(at));
	RF_TRY(rf_tar_walk(src, span, where, walk_member, &w, err));
	if (w.f != w.f_end)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: the layout names %u members the tar does not "
		               "hold there (from byte %llu)%s",
		               name, u, w.f_end - w.f, U64(at + L->fields[w.f].offset),
		               stale_why(L->from_index, L->from_cache));
	return 0;
}

/* The unit's tar bytes base[0, span) are known: its headers checked
 * against the layout, its record table written at t, *out set. */
static int unit_records(const tar_layout *L, const rf_block_info *b, uint32_t u,
                        const uint8_t *base, uint64_t span, uint8_t *t, rf_unit_records *out,
                        const char *name, rf_error *err)
{
	RF_TRY(check_unit(L, b, u, base, span, name, err));
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

static int tar_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                      const void *src, size_t src_len, void *dst, size_t dst_cap,
                      rf_unit_records *out, const char *name, rf_error *err)
{
	const tar_layout *L = priv;
	if (u >= ix->blocks)
		return rf_fail(err, -EINVAL, "shard %s: unit %u of %u", name, u, ix->blocks);
	if (L->seq)
		return rf_fail(err, -EINVAL,
		               "shard %s: unit %u: a sequential layout (a large .tar.zst): use "
		               "decode_seq",
		               name, u);
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
	return unit_records(L, b, u, base, span, (uint8_t *)dst + table_at, out, name, err);
}

/* A sequential .tar.zst's unit: its tar bytes from the stream state
 * (tar_stream.c), then checked and tabled as tar_decode does. */
static int tar_decode_seq(void **state, const rf_shard_index *ix, const void *priv, uint32_t u,
                          const void *src, size_t src_len, uint64_t src_offset, void *dst,
                          size_t dst_cap, rf_unit_records *out, rf_fmt_more *more, const char *name,
                          rf_error *err)
{
	const tar_layout *L = priv;
	if (!L || !L->seq || !ix->sequential || u >= ix->blocks) {
		rf_tar_seq_reset(*state); /* every error resets the state */
		return rf_fail(err, -EINVAL, "shard %s: unit %u of %u: not a sequential layout's",
		               name, u, ix->blocks);
	}
	const rf_block_info *b = &ix->block[u];
	uint64_t span = L->unit_span[u], table_at = RF_TAR_ALIGN8(span);
	if (dst_cap < table_at + rf_fmt_table_bytes(b->records)) {
		rf_tar_seq_reset(*state);
		return rf_fail(err, -EINVAL, "shard %s: unit %u: slab of %zu bytes, %llu needed",
		               name, u, dst_cap, U64(table_at + rf_fmt_table_bytes(b->records)));
	}
	rf_tar_seq_unit w = {.u = u,
	                     .start = L->unit_out[u],
	                     .span = span,
	                     .last = u + 1 == ix->blocks,
	                     .size = ix->file_bytes,
	                     .decoded = L->decoded,
	                     .state_max = L->seq_bytes};
	int rc = rf_tar_seq_decode(state, &w, src, src_len, src_offset, dst, more, name, err);
	if (rc != 0)
		return rc;
	rc = unit_records(L, b, u, dst, span, (uint8_t *)dst + table_at, out, name, err);
	if (rc < 0)
		rf_tar_seq_reset(*state);
	return rc;
}

static uint64_t tar_seq_state_bytes(const rf_shard_index *ix, const void *priv)
{
	(void)ix;
	const tar_layout *L = priv;
	return L && L->seq ? L->seq_bytes : 0;
}

/* A scanned plain tar's layout is worth caching: the scan read the whole
 * shard. A compressed tar's (access points) or one read from an index
 * file is not. */
static bool tar_cacheable(const void *priv)
{
	const tar_layout *L = priv;
	return L && !L->from_index && L->codec == RF_TAR_PLAIN;
}

static bool tar_layout_cached(const void *priv)
{
	const tar_layout *L = priv;
	return L && L->from_cache;
}
/* a plain tar, and the compressed ones rf_tar_codec_of knows */
static const char *const tar_names[] = {".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd", NULL};
static const char *const tar_sidecar_suffixes[] = {".tar", NULL};

const rf_format rf_tar_format = {
    .name = "tar",
    .names = tar_names,
    .sidecar = ".idx",
    .sidecar_suffixes = tar_sidecar_suffixes,
    .cacheable = tar_cacheable,
    .sidecar_write = rf_tar_cache_write,
    .layout_cached = tar_layout_cached,
    .cache_tag = "tar",
    .cache_version = 2, /* 2: the first line says the index cache wrote it */
    .open_step = tar_open_step,
    .open_abort = tar_open_abort,
    .close = tar_close,
    .decode = tar_decode,
    .in_place = true,
    .field_names = tar_field_names,
    .decode_seq = tar_decode_seq,
    .options = rf_tar_opts_parse,
    .options_bytes = sizeof(rf_tar_opts),
    .seq_free = rf_tar_seq_free,
    .seq_state_bytes = tar_seq_state_bytes,
};
