/* tfrecord_index.c - DALI's tfrecord2idx index files for TFRecord shards
 * (DALI tools/tfrecord2idx: one line per record, "OFFSET SIZE", OFFSET the
 * frame's first byte, SIZE the whole frame): the parser the open uses (its
 * writer is the format's sidecar_write, in tfrecord.c; `ringfeed index`'s
 * build and check: tfrecord_build.c). Text in, lengths out: it calls
 * nothing of the format. */
#include "tfrecord.h"

#include "protobuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define U64(x) ((unsigned long long)(x))

uint64_t rf_tfr_index_lines(const uint8_t *buf, size_t len)
{
	uint64_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\n';
	return n + (len > 0 && buf[len - 1] != '\n');
}

/* A decimal number of at most 19 digits at *p (before end); spaces and
 * tabs before it skipped. */
static bool number(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	uint64_t x = 0;
	unsigned digits = 0;
	while (q < end && *q >= '0' && *q <= '9' && digits < 20)
		x = x * 10 + (uint64_t)(*q++ - '0'), digits++;
	if (digits == 0 || digits > 19)
		return false;
	*p = q;
	*v = x;
	return true;
}

bool rf_tfr_index_cached(const uint8_t *buf, size_t len)
{
	size_t m = strlen(RF_TFR_CACHE_MARK);
	return len >= m + 1 && !memcmp(buf, RF_TFR_CACHE_MARK, m) && buf[m] == '\n';
}

/* The record lines of p[0, end): "OFFSET SIZE" each (with `slab`, "OFFSET
 * SIZE SLAB"), contiguous from 0 to file_bytes; into lens (and slab), the
 * first line's number line0 + 1. */
static int lines_parse(const uint8_t *p, const uint8_t *end, uint64_t line, uint64_t file_bytes,
                       const char *idx_name, uint32_t *lens, uint32_t *slab, uint64_t *n,
                       rf_error *err)
{
	uint64_t at = 0, k = 0;
	while (p < end) {
		line++;
		const uint8_t *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const uint8_t *q = p;
		uint64_t off, size, sb = 0;
		while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == eol) { /* a blank line */
			p = eol + (eol < end);
			continue;
		}
		q = p;
		bool ok = number(&q, eol, &off) && number(&q, eol, &size) &&
		          (!slab || number(&q, eol, &sb));
		while (ok && q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		const char *why =
		    !ok || q != eol ? (slab ? "not three decimal numbers (OFFSET SIZE SLAB)"
		                            : "not two decimal numbers (OFFSET SIZE)")
		    : off != at     ? "the record does not start where the one before "
		                      "ends"
		    : size < RF_TFR_FRAME_BYTES || size - RF_TFR_FRAME_BYTES > RF_TFR_RECORD_MAX
		        ? "a SIZE that is not a frame's (16 bytes plus at most 64 MiB)"
		    : size > file_bytes - at ? "the record ends past the file"
		    : slab && (sb < rf_tfr_rec_table(0) || sb > RF_BLOCK_DECODED_MAX / 2)
		        ? "a SLAB that is not a record's (its table, at most half a unit)"
		        : NULL;
		if (why)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "index %s: line %llu: record %llu at offset %llu: %s (expected "
			    "offset %llu of a %llu-byte file; the index is stale or wrong: "
			    "write it again with ringfeed index)",
			    idx_name, U64(line), U64(k), ok ? U64(off) : U64(at), why, U64(at),
			    U64(file_bytes));
		lens[k] = (uint32_t)(size - RF_TFR_FRAME_BYTES);
		if (slab)
			slab[k] = (uint32_t)sb;
		k++;
		at += size;
		p = eol + (eol < end);
	}
	if (at != file_bytes)
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: its %llu records end at byte %llu, the file has %llu "
		               "bytes (the index is stale: write it again with ringfeed index)",
		               idx_name, U64(k), U64(at), U64(file_bytes));
	*n = k;
	return 0;
}

int rf_tfr_index_parse(const uint8_t *buf, size_t len, uint64_t file_bytes, const char *idx_name,
                       uint32_t **lens, uint64_t *n, rf_error *err)
{
	uint64_t lines = rf_tfr_index_lines(buf, len), line = 0;
	uint32_t *v = malloc((lines ? lines : 1) * sizeof(uint32_t));
	if (!v)
		return rf_fail(err, -ENOMEM, "index %s: out of memory", idx_name);
	const uint8_t *p = buf, *end = buf + len;
	if (rf_tfr_index_cached(buf, len)) /* the cache's mark: a line of no record */
		p += strlen(RF_TFR_CACHE_MARK) + 1, line++;
	int rc = lines_parse(p, end, line, file_bytes, idx_name, v, NULL, n, err);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*lens = v;
	return 0;
}

/* ------------------------------------ the index cache's Examples entry */

bool rf_tfr_cache_examples(const uint8_t *buf, size_t len)
{
	size_t m = strlen(RF_TFR_CACHE_EX_MARK);
	return len > m && !memcmp(buf, RF_TFR_CACHE_EX_MARK, m);
}

#define KEY_LINE "# key "

uint64_t rf_tfr_cache_parse_bound(uint64_t lines)
{
	return 8 * (lines + 1) + (uint64_t)RF_TFR_FIELDS_MAX * (RF_EX_KEY_MAX + 1 + 24) +
	       RF_TFR_FIELDS_MAX * sizeof(char *);
}

void rf_tfr_cached_free(rf_tfr_cached *c)
{
	free(c->lens);
	free(c->slab);
	for (uint32_t i = 0; c->names && i < c->names_n; i++)
		free(c->names[i]);
	free(c->names);
	*c = (rf_tfr_cached){0};
}

static int hex_digit(uint8_t c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The key of a "# key HEX" line, p[0, n) its HEX: a new name, or why not. */
static const char *key_add(rf_tfr_cached *c, const uint8_t *p, size_t n)
{
	if (n < 2 || n % 2 || n / 2 > RF_EX_KEY_MAX)
		return "a key of 1 to 255 bytes in lower-case hex";
	if (c->names_n >= RF_TFR_FIELDS_MAX)
		return "more keys than a shard may have (1024)";
	char k[RF_EX_KEY_MAX + 1];
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hex_digit(p[2 * i]), lo = hex_digit(p[2 * i + 1]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0)
			return "a key of 1 to 255 bytes in lower-case hex, none 0";
		k[i] = (char)(hi << 4 | lo);
	}
	k[n / 2] = 0;
	for (uint32_t i = 0; i < c->names_n; i++)
		if (!strcmp(c->names[i], k))
			return "a key listed twice";
	if (!(c->names[c->names_n] = strdup(k)))
		return "out of memory";
	c->names_n++;
	c->names_bytes += n / 2 + 1 + sizeof(char *) + 16;
	return NULL;
}

int rf_tfr_cache_parse(const uint8_t *buf, size_t len, uint64_t file_bytes, const char *idx_name,
                       rf_tfr_cached *out, rf_error *err)
{
	*out = (rf_tfr_cached){0};
	uint64_t lines = rf_tfr_index_lines(buf, len), line = 1, largest = 0;
	bool marked = rf_tfr_cache_examples(buf, len); /* so p lies inside buf */
	const uint8_t *p = marked ? buf + strlen(RF_TFR_CACHE_EX_MARK) : buf, *end = buf + len;
	const uint8_t *eol = marked ? memchr(p, '\n', (size_t)(end - p)) : NULL;
	if (!eol || !number(&p, eol, &largest) || p != eol || largest > RF_BLOCK_DECODED_MAX / 2)
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: line 1: not \"%sLARGEST\" (LARGEST at most %u)", idx_name,
		               RF_TFR_CACHE_EX_MARK, RF_BLOCK_DECODED_MAX / 2);
	out->largest = (uint32_t)largest;
	p = eol + 1;
	out->lens = malloc((lines ? lines : 1) * sizeof(uint32_t));
	out->slab = malloc((lines ? lines : 1) * sizeof(uint32_t));
	out->names = calloc(RF_TFR_FIELDS_MAX, sizeof(char *));
	if (!out->lens || !out->slab || !out->names) {
		rf_tfr_cached_free(out);
		return rf_fail(err, -ENOMEM, "index %s: out of memory", idx_name);
	}
	size_t kl = strlen(KEY_LINE);
	while ((size_t)(end - p) > kl && !memcmp(p, KEY_LINE, kl)) {
		line++;
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const char *why = key_add(out, p + kl, (size_t)(eol - p - kl));
		if (why) {
			rf_tfr_cached_free(out);
			return rf_fail(err, RF_E_CORRUPT, "index %s: line %llu: %s", idx_name,
			               U64(line), why);
		}
		p = eol + (eol < end);
	}
	char **names = realloc(out->names, (out->names_n ? out->names_n : 1) * sizeof(char *));
	if (names) /* no larger than the names it holds, as the walk counts them */
		out->names = names;
	int rc =
	    lines_parse(p, end, line, file_bytes, idx_name, out->lens, out->slab, &out->n, err);
	if (rc < 0)
		rf_tfr_cached_free(out);
	return rc;
}
