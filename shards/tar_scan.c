/* tar_scan.c - the WebDataset tar header scan (tar.h), second in the tar
 * format's line: walks headers (parsed by tar_parse.c) chunk by chunk,
 * checks sizes against the file, and groups members into samples as
 * webdataset groups them, into the scan's tables. It references only
 * tar_parse.c; the stream, the index files and the format sit above. */
#include "tar.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#define U64(x) ((unsigned long long)(x))

/* ------------------------------------------------------------ headers */

/* ------------------------------------------------------------ the scan */

/* The layout's private part: every sample's fields and key. */
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

uint64_t rf_tar_scan_bytes(const tar_scan *s)
{
	return s->fcap * sizeof(tar_field) + s->scap * sizeof(tar_sample) + s->kcap +
	       (uint64_t)s->names_n * (sizeof(char *) + 64) + s->ext.long_len;
}

void rf_tar_scan_clear(tar_scan *s)
{
	free(s->ext.long_name);
	free(s->fv);
	free(s->sv);
	free(s->keys);
	for (uint32_t i = 0; i < s->names_n; i++)
		free(s->names[i]);
	free(s->names);
	*s = (tar_scan){.member_start = UINT64_MAX,
	                .idx_url = s->idx_url,
	                .idx_name = s->idx_name,
	                .idx_bytes = s->idx_bytes,
	                .idx_members = s->idx_members,
	                .idx_from_cache = s->idx_from_cache};
}

void rf_tar_scan_free(tar_scan *s)
{
	if (!s)
		return;
	free(s->ext.long_name);
	free(s->idx_url);
	free(s->idx_name);
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
	free(s->ext.long_name);
	s->ext.long_name = NULL;
	s->ext.long_len = 0;
	s->ext.pax_size_set = false;
	s->member_start = UINT64_MAX;
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

int rf_tar_scan_member(tar_scan *s, const char *n, size_t len, uint64_t start, uint64_t data,
                       uint64_t size, uint64_t end, const char *name, rf_error *err)
{
	char b[128];
	size_t key_len = 0;
	if (!rf_tar_member_key(n, len, &key_len)) {
		s->skipped++;
		return 0;
	}
	const char *dot = n + key_len;
	size_t field_len = len - key_len - 1;
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
			               name, rf_tar_shown(n, len, b, sizeof(b)), U64(start),
			               s->names[id], (int)RF_MIN(key_len, 80), n);
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

typedef struct tar_open {
	tar_scan *s;
	const uint8_t *chunk; /* delivered bytes [chunk_at, chunk_end) */
	uint64_t chunk_at, chunk_end;
} tar_open;

/* The data of an extension header (L, x), which must be in the chunk. */
static int ext_data(rf_fmt_open *o, tar_open *t, uint64_t data, uint64_t size, uint32_t max,
                    const char *what, const uint8_t **out, rf_error *err)
{
	if (size > max)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: %s header at byte %llu: %llu bytes, more than %u",
		               o->name, what, U64(data - RF_TAR_BLOCK), U64(size), max);
	if (data + size > t->chunk_end)
		return RF_TAR_SCAN_MORE;
	*out = t->chunk + (data - t->chunk_at);
	return 0;
}

/* One header at s->pos (in the chunk): 0 when consumed, RF_TAR_SCAN_MORE or
 * RF_TAR_SCAN_END, or an error. */
static int scan_header(rf_fmt_open *o, tar_open *t, rf_error *err)
{
	tar_scan *s = t->s;
	const uint8_t *h = t->chunk + (s->pos - t->chunk_at);
	uint64_t at = s->pos;
	if (rf_tar_all_zero(h, RF_TAR_BLOCK))
		return RF_TAR_SCAN_END;
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
	if (regular && s->ext.pax_size_set)
		size = s->ext.pax_size;
	uint64_t data = at + RF_TAR_BLOCK;
	bool no_data = type >= '1' && type <= '6'; /* links, devices, dirs, FIFOs: as tarfile */
	if (no_data)
		size = 0;
	if (size > o->size - data)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: member at byte %llu: size %llu runs past the end of the "
		               "file (%llu bytes)",
		               o->name, U64(at), U64(size), U64(o->size));
	uint64_t next = RF_MIN(data + rf_tar_pad512(size), o->size);
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
			RF_TRY(rf_tar_pax_parse(&s->ext, d, (size_t)size, at, o->name, err));
		else {
			size_t nl = strnlen((const char *)d, (size_t)size);
			if (nl == 0)
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: GNU long-name header at byte %llu: empty name",
				    o->name, U64(at));
			free(s->ext.long_name);
			if (!(s->ext.long_name = malloc(nl)))
				return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
			memcpy(s->ext.long_name, d, nl);
			s->ext.long_len = nl;
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
		size_t nl = rf_tar_member_name(&s->ext, h, n);
		if (s->member)
			RF_TRY(s->member(s->member_ctx, n, nl, data, size, err));
		else
			RF_TRY(rf_tar_scan_member(s, n, nl, s->member_start, data, size, next,
			                          o->name, err));
		ext_reset(s);
	} else {
		s->skipped++;
		ext_reset(s);
	}
	s->pos = next;
	return 0;
}

int rf_tar_want_from(rf_fmt_open *o, tar_scan *s)
{
	uint64_t step = o->local ? RF_TAR_STEP_LOCAL_BYTES : RF_TAR_STEP_BYTES;
	uint64_t len = RF_MIN(step, o->size - s->pos);
	/* parsing allocates at most: the tables doubling past their size now,
	 * a field and a sample per header in the range (twice: doubling), and
	 * the keys, at most half the range (a ustar name is under half its
	 * header; a long name lies in the range), twice */
	uint64_t headers = len / RF_TAR_BLOCK + 1;
	o->held_bytes =
	    sizeof(*s) + rf_tar_scan_bytes(s); /* the scan's tables, kept between steps */
	o->want = (rf_fmt_want){
	    .object = NULL,
	    .offset = s->pos,
	    .len = len,
	    .min_len = 0,
	    .parse_bound = 2 * rf_tar_scan_bytes(s) +
	                   2 * headers * (sizeof(tar_field) + sizeof(tar_sample)) + len,
	};
	return RF_FMT_NEED;
}

int rf_tar_scan_chunk(rf_fmt_open *o, tar_scan *s, rf_error *err)
{
	tar_open t = {.s = s, .chunk = o->got, .chunk_at = o->got_offset};
	t.chunk_end = o->got_offset + o->got_len;
	while (s->pos < o->size) {
		if (o->size - s->pos < RF_TAR_BLOCK)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: %llu bytes at byte %llu: a truncated header",
			               o->name, U64(o->size - s->pos), U64(s->pos));
		if (s->pos < t.chunk_at || s->pos + RF_TAR_BLOCK > t.chunk_end)
			return RF_TAR_SCAN_MORE;
		int rc = scan_header(o, &t, err);
		if (rc == RF_TAR_SCAN_MORE) {
			if (s->pos == t.chunk_at) /* the extension's data is larger than a step */
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: header at byte %llu: its data does not fit "
				    "one read",
				    o->name, U64(s->pos));
			return RF_TAR_SCAN_MORE;
		}
		if (rc < 0 || rc == RF_TAR_SCAN_END)
			return rc;
	}
	return RF_TAR_SCAN_END;
}

int rf_tar_walk(const uint8_t *p, uint64_t len, const char *name,
                int (*member)(void *ctx, const char *n, size_t len, uint64_t data, uint64_t size,
                              rf_error *err),
                void *ctx, rf_error *err)
{
	tar_scan s = {.member_start = UINT64_MAX, .member = member, .member_ctx = ctx};
	rf_fmt_open o = {.url = name, .name = name, .size = len, .got = p, .got_len = len};
	int rc = len ? rf_tar_scan_chunk(&o, &s, err) : RF_TAR_SCAN_END;
	if (rc == RF_TAR_SCAN_MORE) /* an extension header's data past the end */
		rc = rf_fail(err, RF_E_CORRUPT,
		             "shard %s: header at byte %llu: its member runs past byte %llu", name,
		             U64(s.pos), U64(len));
	free(s.ext.long_name);
	return rc < 0 ? rc : 0;
}
