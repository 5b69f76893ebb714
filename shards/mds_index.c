/* mds_index.c - MosaicML Streaming's dataset index (index.json) as a
 * bounded stream: a small JSON scanner reads the index through a window of
 * RF_MDS_INDEX_WINDOW bytes, keeps only what the shard list needs (the
 * version, and per shard its format, compression and the raw_data /
 * zip_data basename and bytes) and steps over every other value without
 * building it. What it holds is the window and one shard's fields, however
 * large or deep the index: at most RF_MDS_INDEX_MAX bytes are read, values
 * nest at most RF_MDS_INDEX_DEPTH_MAX deep. jansson built every value of
 * the whole file (a 60 MiB index of empty objects took 4.8 GB). */
#include "mds.h"

#include <stdio.h>
#include <stdlib.h>

#define U64(x) ((unsigned long long)(x))

typedef struct jscan {
	rf_fmt_stream_fn read;
	void *rctx;
	const char *name;
	rf_error *err;
	uint8_t *buf; /* RF_MDS_INDEX_WINDOW bytes */
	size_t pos, len;
	uint64_t at; /* the file's byte of buf[0] */
	bool eof;
	uint32_t depth;
} jscan;

const char *const rf_mds_names[] = {".mds", NULL};
const char *const rf_mds_zstd_names[] = {".mds.zstd", NULL};

static int bad(jscan *s, const char *what)
{
	return rf_fail(s->err, RF_E_CORRUPT, "%s: at byte %llu: %s", s->name, U64(s->at + s->pos),
	               what);
}

/* The next byte without taking it; -1 at the end of the file. */
static int peek(jscan *s)
{
	if (s->pos < s->len)
		return s->buf[s->pos];
	if (s->eof)
		return -1;
	s->at += s->len;
	s->pos = s->len = 0;
	size_t got = 0;
	int rc = s->read(s->rctx, s->buf, RF_MDS_INDEX_WINDOW, &got, s->err);
	if (rc < 0)
		return rc - 1; /* below -1: a read error, err set */
	if (s->at + got > RF_MDS_INDEX_MAX)
		return rf_fail(s->err, -EFBIG, "%s: more than %u bytes, the most an index may be",
		               s->name, RF_MDS_INDEX_MAX) -
		       1;
	s->len = got;
	s->eof = got == 0;
	return got ? s->buf[0] : -1;
}

#define PEEK(s, c)                                                                                 \
	do {                                                                                       \
		(c) = peek(s);                                                                     \
		if ((c) < -1)                                                                      \
			return (c) + 1;                                                            \
	} while (0)

/* The next byte that is not white space (not taken). */
static int peek_token(jscan *s)
{
	for (;;) {
		int c = peek(s);
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return c;
		s->pos++;
	}
}

#define TOKEN(s, c)                                                                                \
	do {                                                                                       \
		(c) = peek_token(s);                                                               \
		if ((c) < -1)                                                                      \
			return (c) + 1;                                                            \
	} while (0)

static int expect(jscan *s, char want, const char *what)
{
	int c;
	TOKEN(s, c);
	if (c != want)
		return bad(s, what);
	s->pos++;
	return 0;
}

static int hex4(jscan *s, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int c;
		PEEK(s, c);
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0)
			return bad(s, "a \\u escape needs four hex digits");
		*v = *v << 4 | (uint32_t)d;
		s->pos++;
	}
	return 0;
}

/* One escape after the backslash, as UTF-8 into u (4 bytes); *n its bytes. */
static int escape(jscan *s, uint8_t *u, size_t *n)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	int c;
	PEEK(s, c);
	const char *e = c > 0 ? strchr(from, c) : NULL;
	s->pos++;
	if (e && *e) {
		u[0] = (uint8_t)to[e - from];
		return *n = 1, 0;
	}
	if (c != 'u')
		return bad(s, "an unknown escape in a string");
	uint32_t cp, lo;
	RF_TRY(hex4(s, &cp));
	if (cp >= 0xDC00 && cp < 0xE000)
		return bad(s, "a lone low surrogate in a string");
	if (cp >= 0xD800 && cp < 0xDC00) {
		RF_TRY(expect(s, '\\', "a high surrogate without its low one"));
		RF_TRY(expect(s, 'u', "a high surrogate without its low one"));
		RF_TRY(hex4(s, &lo));
		if (lo < 0xDC00 || lo >= 0xE000)
			return bad(s, "a high surrogate without its low one");
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
	}
	if (cp < 0x80)
		u[0] = (uint8_t)cp, *n = 1;
	else if (cp < 0x800)
		u[0] = (uint8_t)(0xC0 | cp >> 6), u[1] = (uint8_t)(0x80 | (cp & 63)), *n = 2;
	else if (cp < 0x10000)
		u[0] = (uint8_t)(0xE0 | cp >> 12), u[1] = (uint8_t)(0x80 | (cp >> 6 & 63)),
		u[2] = (uint8_t)(0x80 | (cp & 63)), *n = 3;
	else
		u[0] = (uint8_t)(0xF0 | cp >> 18), u[1] = (uint8_t)(0x80 | (cp >> 12 & 63)),
		u[2] = (uint8_t)(0x80 | (cp >> 6 & 63)), u[3] = (uint8_t)(0x80 | (cp & 63)), *n = 4;
	return 0;
}

/* A string (the opening quote next), its decoded bytes into out (cap
 * bytes, NUL-terminated) when out is set, else stepped over. *len: its
 * bytes; *fits: false when it is longer than cap - 1 or holds a NUL. */
static int string(jscan *s, char *out, size_t cap, size_t *len, bool *fits)
{
	RF_TRY(expect(s, '"', "a string was expected"));
	*len = 0;
	*fits = true;
	for (;;) {
		int c;
		PEEK(s, c);
		if (c < 0)
			return bad(s, "the file ends inside a string");
		s->pos++;
		if (c == '"')
			break;
		if (c < 0x20)
			return bad(s, "a control byte inside a string");
		uint8_t u[4] = {(uint8_t)c};
		size_t n = 1;
		if (c == '\\')
			RF_TRY(escape(s, u, &n));
		if (out && *len + n < cap && !(n == 1 && u[0] == 0))
			memcpy(out + *len, u, n);
		else if (out)
			*fits = false;
		*len += n;
	}
	if (out)
		out[*fits ? *len : 0] = '\0';
	return 0;
}

/* A number; *v its value when it is an integer in 0 .. 2^63 - 1, else
 * *is_int false. */
static int number(jscan *s, uint64_t *v, bool *is_int)
{
	int c;
	bool neg = false, digits = false, over = false;
	*v = 0;
	*is_int = true;
	PEEK(s, c);
	if (c == '-')
		neg = true, s->pos++;
	for (;;) {
		PEEK(s, c);
		if (c < '0' || c > '9')
			break;
		if (*v > (UINT64_MAX >> 1) / 10 - 1)
			over = true;
		*v = *v * 10 + (uint64_t)(c - '0');
		digits = true;
		s->pos++;
	}
	if (!digits)
		return bad(s, "a value was expected");
	for (bool frac = false;; frac = true) {
		PEEK(s, c);
		if (!frac && c == '.') {
			s->pos++;
		} else if (c == 'e' || c == 'E') {
			s->pos++;
			PEEK(s, c);
			if (c == '+' || c == '-')
				s->pos++;
		} else {
			break;
		}
		*is_int = false;
		PEEK(s, c);
		if (c < '0' || c > '9')
			return bad(s, "a number's fraction or exponent has no digits");
		while (c >= '0' && c <= '9') {
			s->pos++;
			PEEK(s, c);
		}
		if (c != 'e' && c != 'E')
			break;
	}
	*is_int = *is_int && !neg && !over;
	return 0;
}

static int literal(jscan *s, const char *word)
{
	for (const char *w = word; *w; w++) {
		int c;
		PEEK(s, c);
		if (c != *w)
			return bad(s, "not a JSON value (true, false, null, a number, a string, "
			              "an array or an object)");
		s->pos++;
	}
	return 0;
}

/* One nesting level more; refused past RF_MDS_INDEX_DEPTH_MAX. */
static int deeper(jscan *s)
{
	if (++s->depth > RF_MDS_INDEX_DEPTH_MAX)
		return rf_fail(s->err, RF_E_CORRUPT,
		               "%s: at byte %llu: values nest more than %u deep, the most an index "
		               "may nest",
		               s->name, U64(s->at + s->pos), RF_MDS_INDEX_DEPTH_MAX);
	return 0;
}

/* After a member or an element: ',' (returns 1: another) or the close. */
static int next_item(jscan *s, char close)
{
	int c;
	TOKEN(s, c);
	s->pos++;
	if (c == ',')
		return 1;
	if (c == close)
		return 0;
	s->pos--;
	if (c == -1)
		return bad(s, close == '}' ? "the file ends inside an object"
		                           : "the file ends inside an array");
	return bad(s, close == '}' ? "',' or '}' was expected after an object member"
	                           : "',' or ']' was expected after an array element");
}

/* Steps over one value of any kind, building nothing: containers through
 * a bit per open level (1: an object), never by recursion. */
static int skip_value(jscan *s)
{
	uint64_t objects[(RF_MDS_INDEX_DEPTH_MAX + 63) / 64] = {0};
	uint32_t base = s->depth, top = 0; /* open containers of this value */
	for (;;) {
		int c;
		TOKEN(s, c);
		if (c == '{' || c == '[') {
			bool obj = c == '{';
			s->pos++;
			RF_TRY(deeper(s));
			uint64_t bit = 1ull << (top % 64);
			objects[top / 64] =
			    obj ? objects[top / 64] | bit : objects[top / 64] & ~bit;
			top++;
			TOKEN(s, c);
			if (c == (obj ? '}' : ']')) {
				s->pos++;
				top--, s->depth--;
				goto closed;
			}
			if (obj) {
				size_t n;
				bool fits;
				RF_TRY(string(s, NULL, 0, &n, &fits));
				RF_TRY(expect(s, ':', "':' was expected after an object key"));
			}
			continue;
		}
		if (c == '"') {
			size_t n;
			bool fits;
			RF_TRY(string(s, NULL, 0, &n, &fits));
		} else if (c == 't' || c == 'f' || c == 'n') {
			RF_TRY(literal(s, c == 't' ? "true" : c == 'f' ? "false" : "null"));
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			uint64_t v;
			bool is_int;
			RF_TRY(number(s, &v, &is_int));
		} else {
			return c == -1 ? bad(s, "the file ends where a value was expected")
			               : bad(s, "not a JSON value (true, false, null, a number, a "
			                        "string, an array or an object)");
		}
	closed:
		while (top > 0) {
			bool obj = objects[(top - 1) / 64] >> ((top - 1) % 64) & 1;
			int more = next_item(s, obj ? '}' : ']');
			if (more < 0)
				return more;
			if (more) {
				if (obj) {
					size_t n;
					bool fits;
					RF_TRY(string(s, NULL, 0, &n, &fits));
					RF_TRY(
					    expect(s, ':', "':' was expected after an object key"));
				}
				break;
			}
			top--, s->depth--;
		}
		if (top == 0) {
			s->depth = base;
			return 0;
		}
	}
}

/* ------------------------------------------------------------ objects */

/* Calls member(s, key, ctx) for each member of the object that comes next,
 * the key decoded (a key longer than 31 bytes is no key the index uses:
 * given as ""). */
static int object(jscan *s, int (*member)(jscan *s, const char *key, void *ctx), void *ctx)
{
	RF_TRY(expect(s, '{', "an object was expected"));
	RF_TRY(deeper(s));
	int c;
	TOKEN(s, c);
	if (c == '}') {
		s->pos++;
		s->depth--;
		return 0;
	}
	for (int more = 1; more;) {
		char key[32];
		size_t n;
		bool fits;
		RF_TRY(string(s, key, sizeof(key), &n, &fits));
		RF_TRY(expect(s, ':', "':' was expected after an object key"));
		RF_TRY(member(s, fits ? key : "", ctx));
		more = next_item(s, '}');
		if (more < 0)
			return more;
	}
	s->depth--;
	return 0;
}

typedef enum { J_ABSENT, J_NULL, J_STRING, J_OBJECT, J_OTHER } jkind;

typedef struct jfile {
	jkind kind;
	bool has_base, has_bytes, base_ok, bytes_ok;
	char base[256];
	uint64_t bytes;
} jfile;

typedef struct jshard {
	jkind format_kind, comp_kind;
	bool format_ok;
	char format[17], comp[17];
	jfile raw, zip;
	uint32_t seen; /* the keys met (a bit each): a second one is refused */
} jshard;

/* The kind of the value next, not taken. */
static int kind_next(jscan *s, jkind *k)
{
	int c;
	TOKEN(s, c);
	*k = c == '"' ? J_STRING : c == '{' ? J_OBJECT : c == 'n' ? J_NULL : J_OTHER;
	return 0;
}

static int twice(jscan *s, uint32_t *seen, uint32_t bit, const char *key)
{
	if (*seen & bit)
		return rf_fail(s->err, RF_E_CORRUPT,
		               "%s: at byte %llu: key \"%s\" twice in one object", s->name,
		               U64(s->at + s->pos), key);
	*seen |= bit;
	return 0;
}

static int file_member(jscan *s, const char *key, void *ctx)
{
	jfile *f = ctx;
	jkind k;
	if (!strcmp(key, "basename") || !strcmp(key, "bytes")) {
		bool base = key[1] == 'a';
		if (base ? f->has_base : f->has_bytes)
			return rf_fail(s->err, RF_E_CORRUPT,
			               "%s: at byte %llu: key \"%s\" twice in one object", s->name,
			               U64(s->at + s->pos), key);
		RF_TRY(kind_next(s, &k));
		if (base) {
			f->has_base = true;
			if (k != J_STRING)
				return skip_value(s);
			size_t n;
			RF_TRY(string(s, f->base, sizeof(f->base), &n, &f->base_ok));
			f->base_ok = f->base_ok && n > 0;
			return 0;
		}
		f->has_bytes = true;
		int c;
		TOKEN(s, c);
		if (c != '-' && (c < '0' || c > '9'))
			return skip_value(s);
		return number(s, &f->bytes, &f->bytes_ok);
	}
	return skip_value(s);
}

static int file_value(jscan *s, jfile *f)
{
	RF_TRY(kind_next(s, &f->kind));
	if (f->kind != J_OBJECT)
		return skip_value(s);
	return object(s, file_member, f);
}

static int short_string(jscan *s, jkind *k, char *out, size_t cap, bool *ok)
{
	RF_TRY(kind_next(s, k));
	if (*k != J_STRING)
		return skip_value(s);
	size_t n;
	RF_TRY(string(s, out, cap, &n, ok));
	*ok = *ok && n > 0;
	return 0;
}

static int shard_member(jscan *s, const char *key, void *ctx)
{
	jshard *j = ctx;
	static const char *const keys[] = {"format", "compression", "raw_data", "zip_data"};
	for (uint32_t i = 0; i < RF_ARRAY_LEN(keys); i++) {
		if (strcmp(key, keys[i]) != 0)
			continue;
		RF_TRY(twice(s, &j->seen, 1u << i, key));
		bool ok;
		switch (i) {
		case 0:
			return short_string(s, &j->format_kind, j->format, sizeof(j->format),
			                    &j->format_ok);
		case 1:
			RF_TRY(short_string(s, &j->comp_kind, j->comp, sizeof(j->comp), &ok));
			if (j->comp_kind == J_STRING && !ok)
				snprintf(j->comp, sizeof(j->comp), "(unreadable)");
			return 0;
		case 2:
			return file_value(s, &j->raw);
		default:
			return file_value(s, &j->zip);
		}
	}
	return skip_value(s);
}

static bool one_component(const char *b)
{
	return *b && !strchr(b, '/') && !strchr(b, '\\') && strcmp(b, ".") && strcmp(b, "..");
}

typedef struct jtop {
	int (*add)(void *ctx, const char *basename, uint64_t size_hint, rf_error *err);
	void *ctx;
	uint64_t shards, version;
	bool version_ok, has_shards;
	uint32_t seen;
} jtop;

/* A shard's entry checked as a whole (its keys come in any order). */
static int shard_done(jscan *s, const jshard *j, const jtop *t)
{
	const char *name = s->name;
	uint64_t i = t->shards;
	if (!j->format_ok || strcmp(j->format, "mds") != 0)
		return rf_fail(s->err, -ENOTSUP, "%s: shard %llu: format is not \"mds\"", name,
		               U64(i));
	bool zstd = j->zip.kind == J_OBJECT;
	const jfile *f = zstd ? &j->zip : &j->raw;
	if (j->raw.kind != J_OBJECT || !(j->zip.kind == J_NULL || zstd) || !f->base_ok ||
	    !one_component(f->base) || !f->bytes_ok)
		return rf_fail(s->err, RF_E_CORRUPT,
		               "%s: shard %llu: raw_data / zip_data need a basename (one name, no "
		               "'/') and bytes",
		               name, U64(i));
	const char *c = j->comp_kind == J_STRING ? j->comp : NULL;
	if (j->comp_kind != J_STRING && j->comp_kind != J_NULL && j->comp_kind != J_ABSENT)
		c = "(not a string)";
	if (zstd != (c != NULL) || (c && strcmp(c, "zstd") && strncmp(c, "zstd:", 5)))
		return rf_fail(s->err, -ENOTSUP,
		               "%s: shard %llu (%s): compression %s is not none or zstd (with "
		               "zip_data when zstd)",
		               name, U64(i), f->base, c ? c : "null");
	if (!rf_fmt_names_have(zstd ? rf_mds_zstd_names : rf_mds_names, f->base))
		return rf_fail(s->err, RF_E_CORRUPT, "%s: shard %llu: '%s' does not end in %s",
		               name, U64(i), f->base, zstd ? ".mds.zstd" : ".mds");
	return t->add(t->ctx, f->base, f->bytes, s->err);
}

static int shards_value(jscan *s, jtop *t)
{
	RF_TRY(expect(s, '[', "\"shards\" is not an array"));
	RF_TRY(deeper(s));
	t->has_shards = true;
	int c;
	TOKEN(s, c);
	if (c == ']') {
		s->pos++;
		s->depth--;
		return 0;
	}
	for (int more = 1; more; t->shards++) {
		jshard j = {0};
		TOKEN(s, c);
		if (c != '{')
			return rf_fail(s->err, -ENOTSUP, "%s: shard %llu: format is not \"mds\"",
			               s->name, U64(t->shards));
		RF_TRY(object(s, shard_member, &j));
		RF_TRY(shard_done(s, &j, t));
		more = next_item(s, ']');
		if (more < 0)
			return more;
	}
	s->depth--;
	return 0;
}

static int top_member(jscan *s, const char *key, void *ctx)
{
	jtop *t = ctx;
	if (!strcmp(key, "version")) {
		RF_TRY(twice(s, &t->seen, 1, key));
		int c;
		TOKEN(s, c);
		if (c != '-' && (c < '0' || c > '9'))
			return skip_value(s);
		return number(s, &t->version, &t->version_ok);
	}
	if (!strcmp(key, "shards")) {
		RF_TRY(twice(s, &t->seen, 2, key));
		int c;
		TOKEN(s, c);
		return c == '[' ? shards_value(s, t) : skip_value(s);
	}
	return skip_value(s);
}

int rf_mds_index_scan(rf_fmt_stream_fn read, void *rctx, const char *name,
                      int (*add)(void *ctx, const char *basename, uint64_t size_hint,
                                 rf_error *err),
                      void *ctx, rf_error *err)
{
	jscan s = {.read = read, .rctx = rctx, .name = name, .err = err};
	if (!(s.buf = malloc(RF_MDS_INDEX_WINDOW)))
		return rf_fail(err, -ENOMEM, "%s: out of memory", name);
	jtop t = {.add = add, .ctx = ctx};
	int c = peek_token(&s), rc = c < -1 ? c + 1 : 0;
	if (rc == 0 && c != '{')
		rc = rf_fail(err, RF_E_CORRUPT, "%s: not a JSON object", name);
	if (rc == 0)
		rc = object(&s, top_member, &t);
	if (rc == 0) {
		c = peek_token(&s);
		rc = c < -1 ? c + 1 : c != -1 ? bad(&s, "bytes after the index's object") : 0;
	}
	if (rc == 0 && (!t.version_ok || t.version != 2 || !t.has_shards))
		rc = rf_fail(err, -EPROTONOSUPPORT,
		             "%s: not an MDS index (version 2 with a shards array)", name);
	else if (rc == 0 && t.shards == 0)
		rc = rf_fail(err, -ENOENT, "%s: the index lists no shards", name);
	free(s.buf);
	return rc;
}

typedef struct mem_reader {
	const uint8_t *p;
	size_t left;
} mem_reader;

static int mem_read(void *ctx, uint8_t *buf, size_t cap, size_t *got, rf_error *err)
{
	(void)err;
	mem_reader *m = ctx;
	*got = RF_MIN(cap, m->left);
	memcpy(buf, m->p, *got);
	m->p += *got;
	m->left -= *got;
	return 0;
}

int rf_mds_index_parse(const uint8_t *buf, size_t len, const char *name,
                       int (*add)(void *ctx, const char *basename, uint64_t size_hint,
                                  rf_error *err),
                       void *ctx, rf_error *err)
{
	mem_reader m = {buf, len};
	return rf_mds_index_scan(mem_read, &m, name, add, ctx, err);
}
