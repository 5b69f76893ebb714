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
 * a C string could not carry it). */
#include "tar.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#define U64(x) ((unsigned long long)(x))

/* ------------------------------------------------------------ headers */

static uint64_t pad512(uint64_t n)
{
	return (n + RF_TAR_BLOCK - 1) / RF_TAR_BLOCK * RF_TAR_BLOCK;
}

bool rf_tar_number(const uint8_t *f, size_t len, uint64_t *out)
{
	if (f[0] & 0x80) { /* base-256: big-endian, the first byte's high bit the mark */
		if (f[0] != 0x80)
			return false; /* negative (0xff) or more than 2^88: no sound size */
		uint64_t v = 0;
		for (size_t i = 1; i < len; i++) {
			if (v >> 56)
				return false;
			v = v << 8 | f[i];
		}
		*out = v;
		return true;
	}
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	uint64_t v = 0;
	size_t digits = 0;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
		if (v >> 61)
			return false;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	*out = v;
	return digits > 0 || len == 0;
}

bool rf_tar_checksum_ok(const uint8_t *h)
{
	uint64_t stored;
	if (!rf_tar_number(h + 148, 8, &stored))
		return false;
	uint64_t sum_u = 0;
	int64_t sum_s = 0;
	for (int i = 0; i < RF_TAR_BLOCK; i++) {
		uint8_t c = i >= 148 && i < 156 ? ' ' : h[i];
		sum_u += c;
		sum_s += (int8_t)c;
	}
	return stored == sum_u || (int64_t)stored == sum_s;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* A name fit for a message: printable ASCII, others '?', cut at 80. */
static const char *shown(const char *s, size_t len, char *buf, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 4 < cap && i < 80; i++)
		buf[o++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (len > 80 && o + 4 < cap)
		memcpy(buf + o, "...", 3), o += 3;
	buf[o] = '\0';
	return buf;
}

/* ------------------------------------------------------------ the scan */

typedef struct tar_field {
	uint64_t offset, len; /* absolute in the shard during the scan */
	uint32_t name;
} tar_field;

typedef struct tar_sample {
	uint64_t start, end; /* first header of its first member .. its last member's padded end */
	uint32_t field_first;
	uint32_t key_at, key_len;
} tar_sample;

typedef struct tar_scan {
	uint64_t pos;          /* the next header's offset */
	uint64_t member_start; /* UINT64_MAX, or where the pending extension headers began */
	char *long_name;       /* GNU L or PAX path for the next member, or NULL */
	size_t long_len;
	bool pax_size_set;
	uint64_t pax_size;
	tar_field *fv;
	size_t fn, fcap;
	tar_sample *sv;
	size_t sn, scap;
	char *keys;
	size_t kn, kcap;
	char **names;
	uint32_t names_n;
	bool in_sample;
	uint64_t skipped; /* members left out (metadata, dot-files, no extension, not files) */
} tar_scan;

/* The layout's private part: every sample's fields and key. */
typedef struct tar_layout {
	rf_rec_field *fields; /* offsets relative to their unit's start */
	uint32_t *field_first;
	char *keys;
	uint32_t *key_first;
	char **names;
	uint32_t names_n;
	uint64_t skipped;
} tar_layout;

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *n = realloc(*v, c * elem);
	if (!n)
		return -ENOMEM;
	*v = n;
	*cap = c;
	return 0;
}

static uint64_t scan_bytes(const tar_scan *s)
{
	return s->fcap * sizeof(tar_field) + s->scap * sizeof(tar_sample) + s->kcap +
	       (uint64_t)s->names_n * (sizeof(char *) + 64) + s->long_len;
}

static void scan_free(tar_scan *s)
{
	if (!s)
		return;
	free(s->long_name);
	free(s->fv);
	free(s->sv);
	free(s->keys);
	for (uint32_t i = 0; i < s->names_n; i++)
		free(s->names[i]);
	free(s->names);
	free(s);
}

static void ext_reset(tar_scan *s)
{
	free(s->long_name);
	s->long_name = NULL;
	s->long_len = 0;
	s->pax_size_set = false;
	s->member_start = UINT64_MAX;
}

/* webdataset's metadata rule: a first component `__...__` (tar_file_iterator). */
static bool is_meta(const char *n, size_t len)
{
	if (len < 2 || n[0] != '_' || n[1] != '_')
		return false;
	const char *slash = memchr(n, '/', len);
	size_t first = slash ? (size_t)(slash - n) : len;
	if (!slash && n[len - 1] == '_' && n[len - 2] == '_')
		return true;
	return first >= 4 && n[first - 1] == '_' && n[first - 2] == '_';
}

static int intern(tar_scan *s, const char *f, size_t len, uint32_t *id, const char *name,
                  rf_error *err)
{
	char low[RF_TAR_NAME_MAX + 256];
	for (size_t i = 0; i < len; i++)
		low[i] = (char)tolower((unsigned char)f[i]);
	f = low;
	for (uint32_t i = 0; i < s->names_n; i++)
		if (strlen(s->names[i]) == len && memcmp(s->names[i], f, len) == 0)
			return *id = i, 0;
	if (s->names_n >= RF_TAR_FIELDS_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: more than %u distinct field names (member extensions)",
		               name, RF_TAR_FIELDS_MAX);
	char **n = realloc(s->names, (s->names_n + 1) * sizeof(char *));
	if (!n)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for field names", name);
	s->names = n;
	if (!(n[s->names_n] = strndup(f, len)))
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for field names", name);
	*id = s->names_n++;
	return 0;
}

static int new_sample(tar_scan *s, const char *key, size_t key_len, uint64_t start,
                      const char *name, rf_error *err)
{
	if (s->sn >= UINT32_MAX - 1 || s->kn + key_len >= UINT32_MAX)
		return rf_fail(err, RF_E_CORRUPT, "shard %s: more samples or key bytes than 2^32",
		               name);
	if (grow((void **)&s->sv, &s->scap, s->sn + 1, sizeof(tar_sample)) < 0 ||
	    grow((void **)&s->keys, &s->kcap, s->kn + key_len + 1, 1) < 0)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the sample table", name);
	memcpy(s->keys + s->kn, key, key_len);
	s->sv[s->sn++] = (tar_sample){.start = start,
	                              .end = start,
	                              .field_first = (uint32_t)s->fn,
	                              .key_at = (uint32_t)s->kn,
	                              .key_len = (uint32_t)key_len};
	s->kn += key_len;
	s->in_sample = true;
	return 0;
}

/* One regular member named n (len bytes): a field of the current sample or
 * the first of a new one. */
static int add_member(tar_scan *s, const char *n, size_t len, uint64_t start, uint64_t data,
                      uint64_t size, uint64_t end, const char *name, rf_error *err)
{
	char b[128];
	const char *slash = memrchr(n, '/', len);
	size_t base = slash ? (size_t)(slash - n) + 1 : 0;
	const char *dot = memchr(n + base, '.', len - base);
	if (is_meta(n, len) || base == len || n[base] == '.' || !dot) {
		s->skipped++;
		return 0;
	}
	size_t key_len = (size_t)(dot - n), field_len = len - key_len - 1;
	tar_sample *cur = s->in_sample ? &s->sv[s->sn - 1] : NULL;
	if (!cur || cur->key_len != key_len || memcmp(s->keys + cur->key_at, n, key_len) != 0) {
		RF_TRY(new_sample(s, n, key_len, start, name, err));
		cur = &s->sv[s->sn - 1];
	}
	uint32_t id = 0;
	RF_TRY(intern(s, dot + 1, field_len, &id, name, err));
	for (size_t f = cur->field_first; f < s->fn; f++)
		if (s->fv[f].name == id)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: member '%s' at byte %llu repeats field '%s' of "
			               "sample '%.*s'",
			               name, shown(n, len, b, sizeof(b)), U64(start), s->names[id],
			               (int)RF_MIN(key_len, 80), n);
	if (s->fn - cur->field_first >= RF_TAR_SAMPLE_FIELDS_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: sample '%.*s' has more than %u fields (at byte %llu)",
		               name, (int)RF_MIN(key_len, 80), n, RF_TAR_SAMPLE_FIELDS_MAX,
		               U64(start));
	if (end - cur->start > RF_BLOCK_DECODED_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: sample '%.*s' spans %llu bytes from byte %llu, more than "
		               "a read unit holds (%u)",
		               name, (int)RF_MIN(key_len, 80), n, U64(end - cur->start),
		               U64(cur->start), RF_BLOCK_DECODED_MAX);
	if (s->fn >= UINT32_MAX - 1 ||
	    grow((void **)&s->fv, &s->fcap, s->fn + 1, sizeof(tar_field)) < 0)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the member table", name);
	s->fv[s->fn++] = (tar_field){.offset = data, .len = size, .name = id};
	cur->end = end;
	return 0;
}

/* The name of a regular member from its header and pending extensions. */
static size_t member_name(const tar_scan *s, const uint8_t *h, char *buf)
{
	if (s->long_name) {
		memcpy(buf, s->long_name, s->long_len);
		return s->long_len;
	}
	size_t o = 0;
	bool ustar = memcmp(h + 257, "ustar\0", 6) == 0; /* POSIX: the prefix field counts */
	if (ustar && h[345]) {
		size_t pl = strnlen((const char *)h + 345, 155);
		memcpy(buf, h + 345, pl);
		buf[pl] = '/';
		o = pl + 1;
	}
	size_t nl = strnlen((const char *)h, 100);
	memcpy(buf + o, h, nl);
	return o + nl;
}

/* PAX records "LEN key=value\n": path and size are what a member needs. */
static int pax_parse(tar_scan *s, const uint8_t *p, size_t len, uint64_t at, const char *name,
                     rf_error *err)
{
	size_t i = 0;
	while (i < len) {
		if (all_zero(p + i, len - i))
			break; /* trailing NUL padding */
		size_t j = i;
		uint64_t rl = 0;
		while (j < len && p[j] >= '0' && p[j] <= '9' && rl < len)
			rl = rl * 10 + (uint64_t)(p[j++] - '0');
		if (j == i || j >= len || p[j] != ' ' || rl > len - i || rl < (j - i) + 3 ||
		    p[i + rl - 1] != '\n')
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: PAX header at byte %llu: malformed record at its "
			               "byte %zu",
			               name, U64(at), i);
		const uint8_t *kv = p + j + 1, *stop = p + i + rl - 1;
		const uint8_t *eq = memchr(kv, '=', (size_t)(stop - kv));
		if (!eq)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: PAX header at byte %llu: record without '=' at its "
			    "byte %zu",
			    name, U64(at), i);
		size_t kl = (size_t)(eq - kv), vl = (size_t)(stop - eq - 1);
		if (kl == 4 && memcmp(kv, "path", 4) == 0) {
			if (vl == 0 || vl > RF_TAR_NAME_MAX || memchr(eq + 1, 0, vl))
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: PAX header at byte %llu: path of %zu bytes is "
				    "empty, longer than %u or holds a NUL",
				    name, U64(at), vl, RF_TAR_NAME_MAX);
			free(s->long_name);
			if (!(s->long_name = malloc(vl)))
				return rf_fail(err, -ENOMEM, "shard %s: out of memory", name);
			memcpy(s->long_name, eq + 1, vl);
			s->long_len = vl;
		} else if (kl == 4 && memcmp(kv, "size", 4) == 0) {
			uint64_t v = 0;
			bool ok = vl > 0 && vl <= 19;
			for (size_t k = 0; ok && k < vl; k++)
				ok = eq[1 + k] >= '0' && eq[1 + k] <= '9',
				v = v * 10 + (uint64_t)(eq[1 + k] - '0');
			if (!ok)
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: PAX header at byte %llu: size '%.*s' is not a "
				    "number",
				    name, U64(at), (int)RF_MIN(vl, 24), (const char *)eq + 1);
			s->pax_size = v;
			s->pax_size_set = true;
		}
		i += rl;
	}
	return 0;
}

typedef struct tar_open {
	tar_scan *s;
	const uint8_t *chunk; /* delivered bytes [chunk_at, chunk_end) */
	uint64_t chunk_at, chunk_end;
} tar_open;

enum { SCAN_MORE = 1, SCAN_END = 2 };

/* The data of an extension header (L, x), which must be in the chunk. */
static int ext_data(rf_fmt_open *o, tar_open *t, uint64_t data, uint64_t size, uint32_t max,
                    const char *what, const uint8_t **out, rf_error *err)
{
	if (size > max)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %s header at byte %llu: %llu bytes, more than %u",
		               o->name, what, U64(data - RF_TAR_BLOCK), U64(size), max);
	if (data + size > t->chunk_end)
		return SCAN_MORE;
	*out = t->chunk + (data - t->chunk_at);
	return 0;
}

/* One header at s->pos (in the chunk): 0 when consumed, SCAN_MORE or
 * SCAN_END, or an error. */
static int scan_header(rf_fmt_open *o, tar_open *t, rf_error *err)
{
	tar_scan *s = t->s;
	const uint8_t *h = t->chunk + (s->pos - t->chunk_at);
	uint64_t at = s->pos;
	if (all_zero(h, RF_TAR_BLOCK))
		return SCAN_END;
	if (!rf_tar_checksum_ok(h))
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: header at byte %llu: checksum mismatch (not a tar, or "
		               "damaged)",
		               o->name, U64(at));
	uint64_t size;
	if (!rf_tar_number(h + 124, 12, &size))
		return rf_fail(err, RF_E_CORRUPT, "shard %s: header at byte %llu: malformed size",
		               o->name, U64(at));
	char type = (char)h[156];
	bool regular = type == '0' || type == '\0' || type == '7';
	if (regular && s->pax_size_set)
		size = s->pax_size;
	uint64_t data = at + RF_TAR_BLOCK;
	bool no_data = type >= '1' && type <= '6'; /* links, devices, dirs, FIFOs: as tarfile */
	if (no_data)
		size = 0;
	if (size > o->size - data)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: member at byte %llu: size %llu runs past the end of the "
		               "file (%llu bytes)",
		               o->name, U64(at), U64(size), U64(o->size));
	uint64_t next = RF_MIN(data + pad512(size), o->size);
	if (s->member_start == UINT64_MAX)
		s->member_start = at;
	const uint8_t *d = NULL;
	int rc = 0;
	if (type == 'L' || type == 'x') {
		bool pax = type == 'x';
		rc = ext_data(o, t, data, size, pax ? RF_TAR_PAX_MAX : RF_TAR_NAME_MAX,
		              pax ? "PAX" : "GNU long-name", &d, err);
		if (rc)
			return rc;
		if (pax)
			RF_TRY(pax_parse(s, d, (size_t)size, at, o->name, err));
		else {
			size_t nl = strnlen((const char *)d, (size_t)size);
			if (nl == 0)
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: GNU long-name header at byte %llu: empty name",
				    o->name, U64(at));
			free(s->long_name);
			if (!(s->long_name = malloc(nl)))
				return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
			memcpy(s->long_name, d, nl);
			s->long_len = nl;
		}
	} else if (type == 'S') {
		return rf_fail(
		    err, -ENOTSUP,
		    "shard %s: member at byte %llu: GNU sparse members are not supported", o->name,
		    U64(at));
	} else if (type == 'K' || type == 'g') {
		/* a long link name (for a link: skipped) or global PAX header */
	} else if (regular) {
		char n[RF_TAR_NAME_MAX + 256];
		size_t nl = member_name(s, h, n);
		RF_TRY(add_member(s, n, nl, s->member_start, data, size, next, o->name, err));
		ext_reset(s);
	} else {
		s->skipped++;
		ext_reset(s);
	}
	s->pos = next;
	return 0;
}

static int want_from(rf_fmt_open *o, tar_scan *s)
{
	uint64_t step = o->local ? RF_TAR_STEP_LOCAL_BYTES : RF_TAR_STEP_BYTES;
	uint64_t len = RF_MIN(step, o->size - s->pos);
	/* parsing allocates at most: the tables doubling past their size now,
	 * a field and a sample per header in the range (twice: doubling), and
	 * the keys, at most half the range (a ustar name is under half its
	 * header; a long name lies in the range), twice */
	uint64_t headers = len / RF_TAR_BLOCK + 1;
	o->held_bytes = sizeof(*s) + scan_bytes(s); /* the scan's tables, kept between steps */
	o->want = (rf_fmt_want){
	    .object = NULL,
	    .offset = s->pos,
	    .len = len,
	    .min_len = 0,
	    .parse_bound =
	        2 * scan_bytes(s) + 2 * headers * (sizeof(tar_field) + sizeof(tar_sample)) + len,
	};
	return RF_FMT_NEED;
}

static int scan_chunk(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
	tar_open t = {.s = s, .chunk = o->got, .chunk_at = o->got_offset};
	t.chunk_end = o->got_offset + o->got_len;
	while (s->pos < o->size) {
		if (o->size - s->pos < RF_TAR_BLOCK)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: %llu bytes at byte %llu: a truncated header",
			               o->name, U64(o->size - s->pos), U64(s->pos));
		if (s->pos < t.chunk_at || s->pos + RF_TAR_BLOCK > t.chunk_end)
			return SCAN_MORE;
		int rc = scan_header(o, &t, err);
		if (rc == SCAN_MORE) {
			if (s->pos == t.chunk_at) /* the extension's data is larger than a step */
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: header at byte %llu: its data does not fit "
				    "one read",
				    o->name, U64(s->pos));
			return SCAN_MORE;
		}
		if (rc < 0 || rc == SCAN_END)
			return rc;
	}
	return SCAN_END;
}

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
	free(L);
}

static void tar_close(rf_shard_index *ix, void *priv)
{
	layout_free(priv);
	if (ix) {
		free(ix->block);
		free(ix->metadata);
		free(ix);
	}
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
	for (u = 0; u < ix->blocks; u++) {
		b = &ix->block[u];
		ix->largest_block_compressed_bytes =
		    RF_MAX(ix->largest_block_compressed_bytes, b->compressed_bytes);
		ix->largest_block_decoded_bytes =
		    RF_MAX(ix->largest_block_decoded_bytes, b->decoded_bytes);
		ix->compressed_bytes += b->compressed_bytes;
		ix->decoded_bytes += b->decoded_bytes;
	}
}

/* Fields with offsets relative to their unit's start (what decode hands
 * out, pointing into the unit's read buffer). */
static void fill_fields(const tar_scan *s, const rf_shard_index *ix, tar_layout *L)
{
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		for (uint64_t i = b->first_record; i < b->first_record + b->records; i++) {
			const tar_sample *sm = &s->sv[i];
			size_t end = i + 1 < s->sn ? s->sv[i + 1].field_first : s->fn;
			for (size_t f = sm->field_first; f < end; f++)
				L->fields[f] = (rf_rec_field){
				    .name = s->fv[f].name,
				    .offset = (uint32_t)(s->fv[f].offset - b->offset),
				    .len = (uint32_t)s->fv[f].len,
				};
			L->field_first[i] = sm->field_first;
			L->key_first[i] = sm->key_at;
		}
	}
	L->field_first[s->sn] = (uint32_t)s->fn;
	L->key_first[s->sn] = (uint32_t)s->kn;
}

static int build_layout(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	tar_layout *L = calloc(1, sizeof(*L));
	uint32_t units = (uint32_t)units_count(s);
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
	    !L->key_first) {
		tar_close(ix, L);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the layout", o->name);
	}
	ix->file_bytes = o->size;
	ix->records = s->sn;
	ix->blocks = units;
	fill_units(s, ix);
	fill_fields(s, ix, L);
	L->keys = s->keys, s->keys = NULL;
	L->names = s->names, s->names = NULL;
	L->names_n = s->names_n, s->names_n = 0;
	L->skipped = s->skipped;
	o->index = ix;
	o->priv = L;
	o->held_bytes = sizeof(*ix) + sizeof(*L) + (uint64_t)units * sizeof(rf_block_info) +
	                s->fn * sizeof(rf_rec_field) + (s->sn + 1) * 8 + s->kcap +
	                (uint64_t)L->names_n * (sizeof(char *) + 64);
	return RF_FMT_DONE;
}

/* ------------------------------------------------------------ the seam */

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);
	return n > m && strcmp(s + n - m, suffix) == 0;
}

/* A compressed tar cannot be range-read: its units would be the whole
 * shard, decoded as a stream (not built yet). Claimed, so that it is
 * refused by name instead of being read as another format. */
static bool compressed_tar(const char *name)
{
	size_t n = strlen(name);
	return ends_with(name, n, ".tar.gz") || ends_with(name, n, ".tgz") ||
	       ends_with(name, n, ".tar.zst") || ends_with(name, n, ".tar.zstd");
}

static int tar_claim(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	return ends_with(base, strlen(base), ".tar") || compressed_tar(base) ? RF_FMT_YES
	                                                                     : RF_FMT_NO;
}

static void tar_open_abort(rf_fmt_open *o)
{
	scan_free(o->state);
	o->state = NULL;
}

static int tar_open_step(rf_fmt_open *o, rf_error *err)
{
	tar_scan *s = o->state;
	char leaf[256];
	const char *slash = strrchr(o->url, '/');
	snprintf(leaf, sizeof(leaf), "%.*s", (int)strcspn(slash ? slash + 1 : o->url, "?#"),
	         slash ? slash + 1 : o->url);
	if (compressed_tar(leaf)) {
		o->final = true;
		return rf_fail(err, -ENOTSUP,
		               "shard %s: a compressed tar is not read yet (its unit would be the "
		               "whole shard, decoded as a stream): decompress it to .tar",
		               o->name);
	}
	if (!o->got) { /* the first step: nothing allocated before a bound is declared */
		if (o->size == 0) {
			o->final = true;
			return rf_fail(err, RF_E_CORRUPT, "shard %s: an empty file is not a tar",
			               o->name);
		}
		tar_scan first = {0};
		int rc = want_from(o, &first);
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
	int rc = scan_chunk(o, s, err);
	if (rc < 0) {
		/* a header that is not one at the very start: not a tar at all */
		o->final = pos0 == 0 && s->sn == 0 && s->pos == 0;
		return rc;
	}
	if (rc == SCAN_MORE)
		return want_from(o, s);
	rc = build_layout(o, s, err);
	return rc;
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
		uint64_t at = b->offset + rf->offset - RF_TAR_BLOCK;
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
	if (src_len != b->compressed_bytes || dst_cap < rf_fmt_table_bytes(b->records))
		return rf_fail(err, -EINVAL,
		               "shard %s: unit %u: %zu stored bytes (expected %u), table room %zu",
		               name, u, src_len, b->compressed_bytes, dst_cap);
	RF_TRY(check_unit(L, b, u, src, name, err));
	uint8_t *t = dst;
	for (uint32_t i = 0; i < b->records; i++) {
		uint64_t r = b->first_record + i;
		uint32_t f_last = L->field_first[r + 1] - 1; /* every sample has a field */
		const rf_rec_field *lf = &L->fields[f_last];
		uint64_t end = pad512((uint64_t)lf->offset + lf->len);
		rf_store_le32(t + 4 * i, (uint32_t)RF_MIN(end, b->compressed_bytes));
	}
	rf_store_le32(t + 4 * b->records, b->records);
	*out = (rf_unit_records){
	    .base = src,
	    .ends = (const uint32_t *)dst,
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
