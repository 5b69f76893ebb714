/* tar_index.c - DALI's wds2idx index files for WebDataset tars (tar.h):
 * the reader that builds the scan's tables from one without reading the
 * tar, and the writer (`ringfeed index`). The format, as DALI's
 * tools/wds2idx.py writes it and its webdataset loader reads it:
 *
 *     v1.2 SAMPLES\n
 *     EXT OFFSET SIZE NAME [EXT OFFSET SIZE NAME ...]\n     (one line per sample)
 *
 * OFFSET is the member's data (after its header), a multiple of 512; NAME
 * its full name, EXT the part after the first '.' of its last component
 * (DALI: the whole name when there is none). v1.1 lines lack NAME: the
 * sample keys are unknown, so v1.1 is refused. DALI groups members by
 * name only; the reader applies webdataset's rules (tar_scan.c: metadata,
 * dot-files and names without an extension skipped, fields lowercased,
 * consecutive members of one key one sample), so a layout from an index
 * equals the layout from the scan. Everything here is untrusted: sizes,
 * counts and every member against the tar's size, members in order and
 * apart; an index that lies about what the members are is caught when a
 * unit is decoded (tar.c walks its headers). */
#include "tar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define U64(x) ((unsigned long long)(x))

typedef struct idx_cursor {
	const uint8_t *p;
	size_t len, at;
	uint64_t line;
	const char *name; /* the index's redacted name */
} idx_cursor;

static bool blank(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The next token of the current line (0 bytes at its end). */
static size_t token(idx_cursor *c, const uint8_t **tok)
{
	while (c->at < c->len && blank(c->p[c->at]))
		c->at++;
	size_t b = c->at;
	while (c->at < c->len && !blank(c->p[c->at]) && c->p[c->at] != '\n')
		c->at++;
	*tok = c->p + b;
	return c->at - b;
}

/* Past the end of the current line, which must hold no more tokens. */
static int line_end(idx_cursor *c, const char *what, rf_error *err)
{
	const uint8_t *t;
	if (token(c, &t))
		return rf_fail(err, RF_E_CORRUPT, "index %s: line %llu: more than %s", c->name,
		               U64(c->line), what);
	if (c->at < c->len)
		c->at++; /* the '\n' */
	c->line++;
	return 0;
}

static bool number(const uint8_t *t, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (t[i] < '0' || t[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(t[i] - '0');
	}
	*out = v;
	return true;
}

uint64_t rf_tar_index_members(const uint8_t *buf, size_t len)
{
	size_t i = 0;
	while (i < len && buf[i] != '\n')
		i++;
	uint64_t tokens = 0;
	bool in = false;
	for (; i < len; i++) {
		bool t = !blank(buf[i]) && buf[i] != '\n';
		tokens += t && !in;
		in = t;
	}
	return tokens / 4 + 1;
}

uint64_t rf_tar_index_parse_bound(uint64_t members, uint64_t len)
{
	/* the tables sized for every member at once (a member, a sample), the
	 * keys doubling past the index's bytes, the field names, and the layout
	 * built from them (a unit, a field, two firsts per member) */
	uint64_t per = sizeof(tar_field) + sizeof(tar_sample) + sizeof(rf_block_info) +
	               sizeof(rf_rec_field) + 2 * sizeof(uint32_t);
	return (members + 1) * per + 2 * len + RF_TAR_FIELDS_MAX * (sizeof(char *) + 64) + 4096;
}

#define CACHE_MARK "ringfeed-index-cache"

static int first_line(idx_cursor *c, uint64_t shard_bytes, uint64_t *samples, bool *cached,
                      rf_error *err)
{
	const uint8_t *t;
	size_t n = token(c, &t);
	if (n == 4 && (!memcmp(t, "v1.1", 4) || !memcmp(t, "v1.0", 4)))
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line 1: version %.4s has no member names (the sample "
		               "keys): write a v1.2 index (ringfeed index, or DALI's wds2idx)",
		               c->name, (const char *)t);
	if (n != 4 || memcmp(t, "v1.2", 4) != 0)
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line 1: '%.*s' is not a DALI wds2idx version this reads "
		               "(v1.2)",
		               c->name, (int)RF_MIN(n, 16), (const char *)t);
	n = token(c, &t);
	if (!number(t, n, samples) || *samples == 0 || *samples > shard_bytes / RF_TAR_BLOCK)
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line 1: sample count '%.*s' is not a number from 1 to "
		               "%llu (one per 512 bytes of the %llu-byte tar)",
		               c->name, (int)RF_MIN(n, 24), (const char *)t,
		               U64(shard_bytes / RF_TAR_BLOCK), U64(shard_bytes));
	size_t at = c->at;
	n = token(c, &t);
	*cached = n == strlen(CACHE_MARK) && !memcmp(t, CACHE_MARK, n);
	if (!*cached)
		c->at = at;
	return line_end(c, "a version and a sample count", err);
}

/* DALI's split of a name: the basename up to the first '.' of its last
 * component and the extension after it (no '.': the whole name, as
 * Python's find returning -1 makes it). */
static void dali_split(const uint8_t *nm, size_t n, size_t *base_len, const uint8_t **ext,
                       size_t *ext_len)
{
	const uint8_t *slash = memrchr(nm, '/', n);
	size_t from = slash ? (size_t)(slash - nm) + 1 : 0;
	const uint8_t *dot = memchr(nm + from, '.', n - from);
	if (!dot) {
		*base_len = n ? n - 1 : 0;
		*ext = nm;
		*ext_len = n;
		return;
	}
	*base_len = (size_t)(dot - nm);
	*ext = dot + 1;
	*ext_len = n - *base_len - 1;
}

typedef struct idx_member {
	const uint8_t *ext, *nm;
	size_t ext_len, nm_len;
	uint64_t offset, size;
} idx_member;

/* One `EXT OFFSET SIZE NAME` group, checked against the tar and the
 * previous member (which ends at *prev_end). */
static int member_parse(idx_cursor *c, const rf_fmt_open *o, idx_member *m, uint32_t k,
                        uint64_t prev_end, rf_error *err)
{
	const uint8_t *t[3];
	size_t n[3];
	char b[128];
	for (int i = 0; i < 3; i++)
		n[i] = token(c, &t[i]);
	if (!n[2])
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line %llu: member %u: not `EXT OFFSET SIZE NAME` (v1.2)",
		               c->name, U64(c->line), k + 1);
	m->nm = t[2], m->nm_len = n[2];
	const char *shown = rf_tar_shown((const char *)m->nm, m->nm_len, b, sizeof(b));
	if (!number(t[0], n[0], &m->offset) || !number(t[1], n[1], &m->size))
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line %llu: member '%s': offset '%.*s' or size '%.*s' is "
		               "not a number",
		               c->name, U64(c->line), shown, (int)RF_MIN(n[0], 24),
		               (const char *)t[0], (int)RF_MIN(n[1], 24), (const char *)t[1]);
	if (m->offset % RF_TAR_BLOCK || m->offset < prev_end + RF_TAR_BLOCK)
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line %llu: member '%s': offset %llu is not a multiple "
		               "of 512 past the previous member's end and a header (byte %llu): "
		               "members out of order or overlapping",
		               c->name, U64(c->line), shown, U64(m->offset),
		               U64(prev_end + RF_TAR_BLOCK));
	if (m->offset > o->size || m->size > o->size - m->offset)
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line %llu: member '%s': bytes [%llu, +%llu) run past "
		               "the end of the tar (%llu bytes)",
		               c->name, U64(c->line), shown, U64(m->offset), U64(m->size),
		               U64(o->size));
	if (m->nm_len > RF_TAR_NAME_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line %llu: member '%s': a name of %zu bytes (at most %u)",
		               c->name, U64(c->line), shown, m->nm_len, RF_TAR_NAME_MAX);
	for (size_t i = 0; i < m->nm_len; i++)
		if (m->nm[i] < 0x20 || m->nm[i] == 0x7f)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "index %s: line %llu: member '%s': a control byte in its name", c->name,
			    U64(c->line), shown);
	return 0;
}

/* One sample's line: its members into the scan. */
static int sample_line(idx_cursor *c, const rf_fmt_open *o, tar_scan *s, uint64_t *prev_end,
                       rf_error *err)
{
	const uint8_t *ext, *base = NULL;
	size_t base_len = 0;
	uint32_t k = 0;
	char b[128];
	size_t n;
	while ((n = token(c, &ext)) > 0) {
		idx_member m = {.ext = ext, .ext_len = n};
		RF_TRY(member_parse(c, o, &m, k, *prev_end, err));
		size_t bl, el;
		const uint8_t *e;
		dali_split(m.nm, m.nm_len, &bl, &e, &el);
		const char *shown = rf_tar_shown((const char *)m.nm, m.nm_len, b, sizeof(b));
		if (el != m.ext_len || memcmp(e, m.ext, el) != 0)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "index %s: line %llu: member '%s': extension '%.*s' is not its "
			    "name's",
			    c->name, U64(c->line), shown, (int)RF_MIN(m.ext_len, 40),
			    (const char *)m.ext);
		if (k && (bl != base_len || memcmp(base, m.nm, bl) != 0))
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "index %s: line %llu: member '%s' is not of the line's sample "
			    "'%.*s'",
			    c->name, U64(c->line), shown, (int)RF_MIN(base_len, 80),
			    (const char *)base);
		base = m.nm, base_len = bl;
		uint64_t end = RF_MIN(m.offset + rf_tar_pad512(m.size), o->size);
		int rc =
		    rf_tar_scan_member(s, (const char *)m.nm, m.nm_len, m.offset - RF_TAR_BLOCK,
		                       m.offset, m.size, end, o->name, err);
		if (rc < 0) {
			size_t l = strlen(err->msg);
			snprintf(err->msg + l, sizeof(err->msg) - l, " (index %s line %llu)",
			         c->name, U64(c->line));
			return rc;
		}
		*prev_end = end;
		k++;
	}
	if (!k)
		return rf_fail(err, RF_E_CORRUPT, "index %s: line %llu: a sample without members",
		               c->name, U64(c->line));
	return line_end(c, "members", err);
}

int rf_tar_index_parse(const rf_fmt_open *o, tar_scan *s, const char *idx_name, const uint8_t *buf,
                       size_t len, uint64_t *tail, rf_error *err)
{
	idx_cursor c = {.p = buf, .len = len, .line = 1, .name = idx_name};
	uint64_t samples = 0, prev_end = 0, m = rf_tar_index_members(buf, len);
	/* the tables for every member at once: no doubling past the bound */
	if (!s->fcap && !s->scap && m < SIZE_MAX / sizeof(tar_sample)) {
		s->fv = malloc(m * sizeof(tar_field));
		s->sv = malloc(m * sizeof(tar_sample));
		if (!s->fv || !s->sv)
			return rf_fail(err, -ENOMEM, "index %s: out of memory for %llu members",
			               idx_name, U64(m));
		s->fcap = s->scap = m;
	}
	RF_TRY(first_line(&c, o->size, &samples, &s->idx_from_cache, err));
	for (uint64_t i = 0; i < samples; i++) {
		if (c.at >= c.len)
			return rf_fail(err, RF_E_CORRUPT,
			               "index %s: line %llu: the index ends after %llu of the %llu "
			               "samples line 1 declares",
			               idx_name, U64(c.line), U64(i), U64(samples));
		RF_TRY(sample_line(&c, o, s, &prev_end, err));
	}
	for (; c.at < c.len; c.at++)
		if (!blank(c.p[c.at]) && c.p[c.at] != '\n')
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "index %s: line %llu: more than the %llu samples line 1 declares",
			    idx_name, U64(c.line), U64(samples));
		else if (c.p[c.at] == '\n')
			c.line++;
	*tail = prev_end;
	return 0;
}

/* ------------------------------------------------------------ the writer */

static int name_ok(const char *key, size_t key_len, const char *field, const char *name,
                   rf_error *err)
{
	for (size_t i = 0; i < key_len; i++)
		if ((unsigned char)key[i] <= 0x20 || key[i] == 0x7f)
			return rf_fail(
			    err, -EINVAL,
			    "shard %s: sample '%.*s': a space or control byte in its key: "
			    "DALI's index format cannot carry it",
			    name, (int)RF_MIN(key_len, 80), key);
	for (const char *f = field; *f; f++)
		if ((unsigned char)*f <= 0x20 || *f == 0x7f)
			return rf_fail(err, -EINVAL,
			               "shard %s: field '%s': a space or control byte in its name: "
			               "DALI's index format cannot carry it",
			               name, field);
	return 0;
}

static int index_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       bool cache, rf_error *err)
{
	const tar_layout *L = priv;
	if (ix->records == 0)
		return rf_fail(err, -EINVAL,
		               "shard %s: no samples: DALI's index format needs at least one",
		               name);
	if (fprintf(out, "v1.2 %llu%s\n", U64(ix->records), cache ? " " CACHE_MARK : "") < 0)
		return rf_fail(err, -EIO, "shard %s: writing its index: %s", name, strerror(errno));
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		/* the unit's first byte in the tar (a compressed tar's units
		 * split at access points or checkpoints: its decoded offset) */
		uint64_t base = L->unit_out ? L->unit_out[u] : b->offset;
		for (uint64_t r = b->first_record; r < b->first_record + b->records; r++) {
			const char *key = L->keys + L->key_first[r];
			size_t kl = L->key_first[r + 1] - L->key_first[r];
			for (uint32_t f = L->field_first[r]; f < L->field_first[r + 1]; f++) {
				const rf_rec_field *rf = &L->fields[f];
				const char *fn = L->names[rf->name];
				RF_TRY(name_ok(key, kl, fn, name, err));
				fprintf(out, "%s%s %llu %u %.*s.%s",
				        f > L->field_first[r] ? " " : "", fn,
				        U64(base + rf->offset), rf->len, (int)kl, key, fn);
			}
			if (fputc('\n', out) == EOF)
				return rf_fail(err, -EIO, "shard %s: writing its index: %s", name,
				               strerror(errno));
		}
	}
	return 0;
}

int rf_tar_index_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err)
{
	return index_write(ix, priv, out, name, false, err);
}

int rf_tar_cache_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err)
{
	return index_write(ix, priv, out, name, true, err);
}

bool rf_tar_layout_equal(const rf_shard_index *a, const void *pa, const rf_shard_index *b,
                         const void *pb)
{
	const tar_layout *A = pa, *B = pb;
	if (a->records != b->records || a->blocks != b->blocks || A->names_n != B->names_n)
		return false;
	for (uint32_t i = 0; i < A->names_n; i++)
		if (strcmp(A->names[i], B->names[i]) != 0)
			return false;
	for (uint32_t u = 0; u < a->blocks; u++) { /* field by field: never the padding */
		const rf_block_info *x = &a->block[u], *y = &b->block[u];
		if (x->offset != y->offset || x->compressed_bytes != y->compressed_bytes ||
		    x->decoded_bytes != y->decoded_bytes || x->records != y->records ||
		    x->first_record != y->first_record)
			return false;
	}
	uint64_t n = a->records;
	if (memcmp(A->field_first, B->field_first, (n + 1) * sizeof(uint32_t)) != 0 ||
	    memcmp(A->key_first, B->key_first, (n + 1) * sizeof(uint32_t)) != 0)
		return false;
	uint32_t fields = A->field_first[n], keys = A->key_first[n];
	for (uint32_t f = 0; f < fields; f++)
		if (A->fields[f].name != B->fields[f].name ||
		    A->fields[f].offset != B->fields[f].offset ||
		    A->fields[f].len != B->fields[f].len)
			return false;
	return memcmp(A->keys, B->keys, keys) == 0;
}

bool rf_tar_layout_from_index(const void *priv)
{
	return ((const tar_layout *)priv)->from_index;
}

int rf_tar_index_save(const rf_shard_index *ix, const void *priv, const char *idx_path,
                      const char *name, rf_error *err)
{
	return rf_format_index_save(ix, priv, idx_path, name, rf_tar_index_write, err);
}
