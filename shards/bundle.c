/* bundle.c - parses and writes the index bundle (bundle.h). Layout, all
 * integers little-endian:
 *   "RFINDEX1" | u32 version (1) | u32 count
 *   count x ( u32 path_len | u32 tail_len | u64 file_bytes | path | tail )
 *   u32 CRC-32C of every byte before it
 * Every length is checked against what is left before it is used; the
 * entry array is sized from the count only once the count is known to fit
 * the bytes (an entry takes at least 18 of them). */
#include "bundle.h"
#include "crc32c.h"
#include "manifest.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int bundle_bad(rf_error *err, const char *name, uint32_t i, uint64_t at, const char *what)
{
	return rf_fail(err, RF_E_CORRUPT, "index bundle %s: entry %u at byte %llu: %s", name, i,
	               (unsigned long long)at, what);
}

static bool path_ok(const uint8_t *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return false;
	return true;
}

int rf_bundle_parse(const uint8_t *buf, size_t len, const char *name, rf_bundle **out,
                    rf_error *err)
{
	*out = NULL;
	name = name && *name ? name : "(unnamed)";
	if (len < RF_BUNDLE_HEADER + 4 || memcmp(buf, RF_BUNDLE_MAGIC, RF_BUNDLE_MAGIC_BYTES) != 0)
		return rf_fail(err, RF_E_CORRUPT,
		               "index bundle %s: not an index bundle (%zu bytes, no '%s' at its "
		               "start)",
		               name, len, RF_BUNDLE_MAGIC);
	if (len > RF_BUNDLE_FILE_MAX)
		return rf_fail(err, -EFBIG, "index bundle %s: %zu bytes, more than %llu", name, len,
		               (unsigned long long)RF_BUNDLE_FILE_MAX);
	uint32_t version = rf_load_le32(buf + 8), count = rf_load_le32(buf + 12);
	if (version != RF_BUNDLE_VERSION)
		return rf_fail(err, RF_E_CORRUPT, "index bundle %s: version %u (this reads %u)",
		               name, version, RF_BUNDLE_VERSION);
	size_t body = len - 4;
	uint32_t want = rf_load_le32(buf + body), got = rf_crc32c(0, buf, body);
	if (want != got)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "index bundle %s: checksum 0x%08x, its bytes give 0x%08x (damaged or "
		    "cut: write it again with the shards)",
		    name, want, got);
	if (count > RF_MANIFEST_ENTRIES_MAX ||
	    (uint64_t)count * (RF_BUNDLE_ENTRY_HEAD + 2) > body - RF_BUNDLE_HEADER)
		return rf_fail(err, RF_E_CORRUPT,
		               "index bundle %s: says %u entries, more than its %zu bytes hold "
		               "(at most %d)",
		               name, count, len, RF_MANIFEST_ENTRIES_MAX);
	rf_bundle *b = calloc(1, sizeof(*b));
	if (b)
		b->entry = calloc(count ? count : 1, sizeof(*b->entry));
	if (!b || !b->entry) {
		rf_bundle_free(b);
		return rf_fail(err, -ENOMEM, "index bundle %s: no memory for %u entries", name,
		               count);
	}
	size_t at = RF_BUNDLE_HEADER;
	int rc = 0;
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		if (body - at < RF_BUNDLE_ENTRY_HEAD) {
			rc = bundle_bad(err, name, i, at, "cut short in its header");
			break;
		}
		rf_bundle_entry *e = &b->entry[i];
		e->path_len = rf_load_le32(buf + at);
		e->tail_len = rf_load_le32(buf + at + 4);
		e->file_bytes = rf_load_le64(buf + at + 8);
		size_t p = at + RF_BUNDLE_ENTRY_HEAD;
		if (e->path_len == 0 || e->path_len >= RF_MANIFEST_LINE_MAX)
			rc = bundle_bad(err, name, i, at,
			                "its path length is 0 or past a manifest line");
		else if (e->tail_len == 0 || e->tail_len > RF_BUNDLE_TAIL_MAX ||
		         e->tail_len > e->file_bytes)
			rc = bundle_bad(err, name, i, at,
			                "its tail is empty, longer than its shard, or past 64 MiB");
		else if ((uint64_t)e->path_len + e->tail_len > body - p)
			rc = bundle_bad(err, name, i, at,
			                "its path and tail run past the bundle's end");
		else if (!path_ok(buf + p, e->path_len))
			rc = bundle_bad(err, name, i, at, "its path holds a control character");
		if (rc < 0)
			break;
		e->path = (const char *)buf + p;
		e->tail = buf + p + e->path_len;
		at = p + e->path_len + e->tail_len;
	}
	if (rc == 0 && at != body)
		rc = rf_fail(err, RF_E_CORRUPT,
		             "index bundle %s: %zu bytes after its %u entries (at byte %zu)", name,
		             body - at, count, at);
	if (rc < 0) {
		rf_bundle_free(b);
		return rc;
	}
	b->count = count;
	*out = b;
	return 0;
}

void rf_bundle_free(rf_bundle *b)
{
	if (!b)
		return;
	free(b->entry);
	free(b);
}

struct rf_bundle_writer {
	FILE *f;
	char *path;
	char tmp[4096];
	uint32_t count, added;
	uint32_t crc;
	uint64_t total;
};

static int put(rf_bundle_writer *w, const void *p, size_t n)
{
	w->crc = rf_crc32c(w->crc, p, n);
	return fwrite(p, 1, n, w->f) == n ? 0 : -EIO;
}

void rf_bundle_writer_abort(rf_bundle_writer *w)
{
	if (!w)
		return;
	if (w->f)
		fclose(w->f);
	unlink(w->tmp);
	free(w->path);
	free(w);
}

rf_bundle_writer *rf_bundle_writer_open(const char *path, uint32_t count, rf_error *err)
{
	rf_bundle_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		rf_fail(err, -ENOMEM, "index bundle %s: no memory", path);
		return NULL;
	}
	if ((size_t)snprintf(w->tmp, sizeof(w->tmp), "%s.tmp.%d", path, (int)getpid()) >=
	    sizeof(w->tmp)) {
		free(w->path);
		free(w);
		rf_fail(err, -ENAMETOOLONG, "index bundle %s: path too long", path);
		return NULL;
	}
	if (!(w->f = fopen(w->tmp, "wb"))) {
		int code = errno;
		free(w->path);
		free(w);
		rf_fail(err, -code, "index bundle %s: cannot create: %s", path, strerror(code));
		return NULL;
	}
	uint8_t h[RF_BUNDLE_HEADER];
	memcpy(h, RF_BUNDLE_MAGIC, RF_BUNDLE_MAGIC_BYTES);
	rf_store_le32(h + 8, RF_BUNDLE_VERSION);
	rf_store_le32(h + 12, count);
	w->count = count;
	w->total = RF_BUNDLE_HEADER + 4;
	if (put(w, h, sizeof(h)) < 0) {
		rf_bundle_writer_abort(w);
		rf_fail(err, -EIO, "index bundle %s: write failed", path);
		return NULL;
	}
	return w;
}

int rf_bundle_writer_add(rf_bundle_writer *w, const rf_bundle_entry *e, rf_error *err)
{
	if (w->added >= w->count || e->path_len == 0 || e->path_len >= RF_MANIFEST_LINE_MAX ||
	    e->tail_len == 0 || e->tail_len > RF_BUNDLE_TAIL_MAX || e->tail_len > e->file_bytes)
		return rf_fail(err, -EINVAL, "index bundle %s: entry %u is not one it can hold",
		               w->path, w->added);
	w->total += RF_BUNDLE_ENTRY_HEAD + (uint64_t)e->path_len + e->tail_len;
	if (w->total > RF_BUNDLE_FILE_MAX)
		return rf_fail(err, -EFBIG, "index bundle %s: past %llu bytes at entry %u", w->path,
		               (unsigned long long)RF_BUNDLE_FILE_MAX, w->added);
	uint8_t eh[RF_BUNDLE_ENTRY_HEAD];
	rf_store_le32(eh, e->path_len);
	rf_store_le32(eh + 4, e->tail_len);
	rf_store_le64(eh + 8, e->file_bytes);
	int rc = put(w, eh, sizeof(eh));
	if (rc == 0)
		rc = put(w, e->path, e->path_len);
	if (rc == 0)
		rc = put(w, e->tail, e->tail_len);
	if (rc < 0)
		return rf_fail(err, rc, "index bundle %s: write failed", w->path);
	w->added++;
	return 0;
}

int rf_bundle_writer_close(rf_bundle_writer *w, rf_error *err)
{
	uint8_t c[4];
	rf_store_le32(c, w->crc);
	int rc = w->added == w->count ? 0 : -EINVAL;
	if (rc == 0 && fwrite(c, 1, 4, w->f) != 4)
		rc = -EIO;
	if (fclose(w->f) != 0 && rc == 0)
		rc = -EIO;
	w->f = NULL;
	if (rc == 0 && rename(w->tmp, w->path) != 0)
		rc = -errno;
	if (rc < 0) {
		rf_fail(err, rc, "index bundle %s: write failed: %s", w->path,
		        rc == -EINVAL ? "fewer entries than it said" : strerror(-rc));
		rf_bundle_writer_abort(w);
		return rc;
	}
	free(w->path);
	free(w);
	return 0;
}

/* One local .rfs shard's entry: its last bytes from the start of its
 * index, at least RF_BUNDLE_TAIL_MIN (what an open asks for first). */
static int bundle_tail(const char *file, const rf_manifest_entry *me, uint8_t **tail,
                       uint32_t *tail_len, rf_error *err)
{
	uint64_t size = 0;
	int fd = rf_open_regular(file, "shard", &size, err);
	if (fd < 0)
		return fd;
	uint8_t foot[RF_FOOTER_BYTES];
	rf_footer ft;
	int rc = size == me->bytes
	             ? 0
	             : rf_fail(err, -EIO, "shard %s: file is %llu bytes, the manifest says %llu",
	                       file, (unsigned long long)size, (unsigned long long)me->bytes);
	if (rc == 0 && size < RF_FOOTER_BYTES)
		rc = rf_fail(err, RF_E_CORRUPT, "shard %s: %llu bytes, shorter than a footer", file,
		             (unsigned long long)size);
	if (rc == 0)
		rc = rf_pread_full(fd, foot, sizeof(foot), size - RF_FOOTER_BYTES, file, err);
	if (rc == 0)
		rc = rf_footer_parse(foot, sizeof(foot), size, file, &ft, err);
	uint64_t start = size - RF_MIN(size, (uint64_t)RF_BUNDLE_TAIL_MIN);
	if (rc == 0)
		start = RF_MIN(start, ft.index_offset);
	if (rc == 0 && size - start > RF_BUNDLE_TAIL_MAX)
		rc = rf_fail(err, -EFBIG, "shard %s: its index is past the %u bytes a bundle holds",
		             file, RF_BUNDLE_TAIL_MAX);
	if (rc == 0 && !(*tail = malloc(size - start)))
		rc = rf_fail(err, -ENOMEM, "shard %s: no memory for its index", file);
	if (rc == 0) {
		*tail_len = (uint32_t)(size - start);
		rc = rf_pread_full(fd, *tail, *tail_len, start, file, err);
		if (rc < 0) {
			free(*tail);
			*tail = NULL;
		}
	}
	close(fd);
	return rc;
}

RF_API int rf_index_bundle_write(const char *path, const char *base, const rf_manifest *m,
                                 rf_error *err)
{
	if (m->count > RF_MANIFEST_ENTRIES_MAX)
		return rf_fail(err, -E2BIG, "index bundle %s: %zu shards, more than %d", path,
		               m->count, RF_MANIFEST_ENTRIES_MAX);
	rf_bundle_writer *w = rf_bundle_writer_open(path, (uint32_t)m->count, err);
	if (!w)
		return err->code;
	int rc = 0;
	for (size_t i = 0; i < m->count && rc == 0; i++) {
		const rf_manifest_entry *me = &m->entry[i];
		char *file = rf_manifest_join(base, me->url);
		uint8_t *tail = NULL;
		uint32_t tail_len = 0;
		rc = file ? bundle_tail(file, me, &tail, &tail_len, err)
		          : rf_fail(err, -ENOMEM, "index bundle %s: no memory", path);
		size_t pl = strlen(me->url);
		rf_bundle_entry e = {.path = me->url,
		                     .path_len = (uint32_t)RF_MIN(pl, (size_t)UINT32_MAX),
		                     .tail_len = tail_len,
		                     .file_bytes = me->bytes,
		                     .tail = tail};
		if (rc == 0)
			rc = rf_bundle_writer_add(w, &e, err);
		free(tail);
		free(file);
	}
	if (rc < 0) {
		rf_bundle_writer_abort(w);
		return rc;
	}
	return rf_bundle_writer_close(w, err);
}

RF_API char *rf_index_bundle_name(const char *manifest)
{
	/* a URL's query and fragment stay after the name */
	size_t end = strstr(manifest, "://") ? strcspn(manifest, "?#") : strlen(manifest);
	size_t stem = end >= 4 && !memcmp(manifest + end - 4, ".rfm", 4) ? end - 4 : end;
	size_t n = strlen(manifest) + 5;
	char *out = malloc(n);
	if (out)
		snprintf(out, n, "%.*s.rfx%s", (int)stem, manifest, manifest + end);
	return out;
}

RF_API int rf_index_bundle_write_beside(const char *manifest, size_t *shards, char **written,
                                        rf_error *err)
{
	*written = NULL;
	char *base = strdup(manifest), *slash = base ? strrchr(base, '/') : NULL;
	char *out = rf_index_bundle_name(manifest);
	rf_manifest *m = NULL;
	if (slash)
		slash[slash == base ? 1 : 0] = '\0';
	int rc = base && out ? rf_manifest_read_file_raw(manifest, &m, err)
	                     : rf_fail(err, -ENOMEM, "index bundle: no memory");
	if (rc == 0)
		rc = rf_index_bundle_write(out, slash ? base : "", m, err);
	if (rc == 0) {
		*shards = m->count;
		*written = out;
		out = NULL;
	}
	rf_manifest_free(m);
	free(base);
	free(out);
	return rc;
}
