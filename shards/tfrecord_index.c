/* tfrecord_index.c - DALI's tfrecord2idx index files for TFRecord shards
 * (DALI tools/tfrecord2idx: one line per record, "OFFSET SIZE", OFFSET the
 * frame's first byte, SIZE the whole frame): the parser the open uses, the
 * writer `ringfeed index` and the index cache use, and the local build and
 * check (include/ringfeed.h). */
#include "tfrecord.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int rf_tfr_index_parse(const uint8_t *buf, size_t len, uint64_t file_bytes, const char *idx_name,
                       uint32_t **lens, uint64_t *n, rf_error *err)
{
	uint64_t lines = rf_tfr_index_lines(buf, len), at = 0, k = 0, line = 0;
	uint32_t *v = malloc((lines ? lines : 1) * sizeof(uint32_t));
	if (!v)
		return rf_fail(err, -ENOMEM, "index %s: out of memory", idx_name);
	const uint8_t *p = buf, *end = buf + len;
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

int rf_tfr_index_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err)
{
	bool compressed = true;
	const uint32_t *len = rf_tfr_layout_lens(priv, &compressed);
	if (compressed || (ix->records && !len))
		return rf_fail(err, -EINVAL,
		               "shard %s: not a plain TFRecord's layout (DALI's tfrecord2idx "
		               "indexes uncompressed files)",
		               name);
	uint64_t at = 0;
	for (uint64_t r = 0; r < ix->records; r++) {
		uint64_t f = RF_TFR_FRAME_BYTES + (uint64_t)len[r];
		if (fprintf(out, "%llu %llu\n", U64(at), U64(f)) < 0)
			return rf_fail(err, -EIO, "shard %s: writing its index failed", name);
		at += f;
	}
	if (at != ix->file_bytes)
		return rf_fail(err, -EINVAL, "shard %s: its records do not tile the file", name);
	return 0;
}

/* The local file's records' data lengths: walked (scan) or from its index. */
static int layout_of(const char *path, bool scan, rf_shard_index **ix, void **priv, rf_error *err)
{
	struct rf_fmt_options opt = {.tar_scan_only = scan, .tfrecord_raw = true};
	return rf_format_open_file(path, &rf_tfrecord_format, &opt, NULL, ix, priv, err);
}

/* rf_tfr_index_write into idx_path atomically (a temporary file beside it,
 * fsync'd, renamed), as the tar index's save. */
static int index_save(const rf_shard_index *ix, const void *priv, const char *idx_path,
                      const char *name, rf_error *err)
{
	size_t n = strlen(idx_path);
	char *tmp = malloc(n + 32);
	int rc = tmp ? 0 : rf_fail(err, -ENOMEM, "out of memory");
	FILE *f = NULL;
	if (rc == 0) {
		snprintf(tmp, n + 32, "%s.tmp.%ld", idx_path, (long)getpid());
		if (!(f = fopen(tmp, "wx")))
			rc = rf_fail(err, -errno, "%s: cannot create: %s", tmp, strerror(errno));
	}
	if (rc == 0)
		rc = rf_tfr_index_write(ix, priv, f, name, err);
	if (f && (fflush(f) != 0 || fsync(fileno(f)) != 0) && rc == 0)
		rc = rf_fail(err, -errno, "%s: writing: %s", tmp, strerror(errno));
	if (f && fclose(f) != 0 && rc == 0)
		rc = rf_fail(err, -errno, "%s: writing: %s", tmp, strerror(errno));
	if (rc == 0 && rename(tmp, idx_path) != 0)
		rc = rf_fail(err, -errno, "%s: cannot rename to %s: %s", tmp, idx_path,
		             strerror(errno));
	if (rc < 0 && f)
		unlink(tmp);
	free(tmp);
	return rc;
}

RF_API int rf_tfrecord_index_build(const char *path, const char *idx_path, rf_error *err)
{
	if (rf_format_claim(&rf_tfrecord_format, path) != RF_FMT_YES ||
	    rf_tfr_codec_of(path) != RF_TFR_PLAIN)
		return rf_fail(err, -EINVAL,
		               "%s: not an uncompressed .tfrecord (an index is written for a plain "
		               "file)",
		               path);
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	RF_TRY(layout_of(path, true, &ix, &priv, err));
	int rc = index_save(ix, priv, idx_path, path, err);
	rf_tfrecord_format.close(ix, priv);
	return rc;
}

RF_API int rf_tfrecord_index_check(const char *path, const char *idx_path, rf_error *err)
{
	char *beside = rf_tfr_idx_sibling(path, NULL);
	bool same = beside && strcmp(beside, idx_path) == 0;
	free(beside);
	if (!same)
		return rf_fail(err, -EINVAL, "index %s: not the one beside %s (PREFIX.idx)",
		               idx_path, path);
	rf_shard_index *a = NULL, *b = NULL;
	void *pa = NULL, *pb = NULL;
	RF_TRY(layout_of(path, true, &a, &pa, err));
	int rc = layout_of(path, false, &b, &pb, err);
	if (rc == 0 && !rf_tfr_layout_from_index(pb))
		rc = rf_fail(err, -ENOENT, "index %s: no such file", idx_path);
	bool ca = false, cb = false;
	if (rc == 0) {
		const uint32_t *la = rf_tfr_layout_lens(pa, &ca), *lb = rf_tfr_layout_lens(pb, &cb);
		if (a->records != b->records || (a->records && memcmp(la, lb, 4 * a->records) != 0))
			rc =
			    rf_fail(err, RF_E_CORRUPT,
			            "index %s: stale: its records are not the ones %s holds: write "
			            "it again",
			            idx_path, path);
	}
	rf_tfrecord_format.close(a, pa);
	if (b)
		rf_tfrecord_format.close(b, pb);
	return rc;
}
