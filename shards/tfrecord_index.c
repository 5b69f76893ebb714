/* tfrecord_index.c - DALI's tfrecord2idx index files for TFRecord shards
 * (DALI tools/tfrecord2idx: one line per record, "OFFSET SIZE", OFFSET the
 * frame's first byte, SIZE the whole frame): the parser the open uses (its
 * writer is the format's sidecar_write, in tfrecord.c; `ringfeed index`'s
 * build and check: tfrecord_build.c). Text in, lengths out: it calls
 * nothing of the format. */
#include "tfrecord.h"

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

int rf_tfr_index_parse(const uint8_t *buf, size_t len, uint64_t file_bytes, const char *idx_name,
                       uint32_t **lens, uint64_t *n, rf_error *err)
{
	uint64_t lines = rf_tfr_index_lines(buf, len), at = 0, k = 0, line = 0;
	uint32_t *v = malloc((lines ? lines : 1) * sizeof(uint32_t));
	if (!v)
		return rf_fail(err, -ENOMEM, "index %s: out of memory", idx_name);
	const uint8_t *p = buf, *end = buf + len;
	if (rf_tfr_index_cached(buf, len)) /* the cache's mark: a line of no record */
		p += strlen(RF_TFR_CACHE_MARK) + 1, line++;
	while (p < end) {
		line++;
		const uint8_t *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const uint8_t *q = p;
		uint64_t off, size;
		while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == eol) { /* a blank line */
			p = eol + (eol < end);
			continue;
		}
		q = p;
		bool ok = number(&q, eol, &off) && number(&q, eol, &size);
		while (ok && q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		const char *why =
		    !ok || q != eol ? "not two decimal numbers (OFFSET SIZE)"
		    : off != at     ? "the record does not start where the one before "
		                      "ends"
		    : size < RF_TFR_FRAME_BYTES || size - RF_TFR_FRAME_BYTES > RF_TFR_RECORD_MAX
		        ? "a SIZE that is not a frame's (16 bytes plus at most 64 MiB)"
		    : size > file_bytes - at ? "the record ends past the file"
		                             : NULL;
		if (why) {
			free(v);
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "index %s: line %llu: record %llu at offset %llu: %s (expected "
			    "offset %llu of a %llu-byte file; the index is stale or wrong: "
			    "write it again with ringfeed index)",
			    idx_name, U64(line), U64(k), ok ? U64(off) : U64(at), why, U64(at),
			    U64(file_bytes));
		}
		v[k++] = (uint32_t)(size - RF_TFR_FRAME_BYTES);
		at += size;
		p = eol + (eol < end);
	}
	if (at != file_bytes) {
		free(v);
		return rf_fail(err, RF_E_CORRUPT,
		               "index %s: its %llu records end at byte %llu, the file has %llu "
		               "bytes (the index is stale: write it again with ringfeed index)",
		               idx_name, U64(k), U64(at), U64(file_bytes));
	}
	*lens = v;
	*n = k;
	return 0;
}
