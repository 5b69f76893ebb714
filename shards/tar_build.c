/* tar_build.c - index files built and checked (`ringfeed index`,
 * rf_tar_index_build / _check / _build_ref): the tar format's whole open
 * (tar.c) driven over a reader, its layout written as a DALI index
 * (tar_index.c). The last file of the tar format's line: it references the
 * format, nothing references it but the public API and the engine's
 * remote build (engine/verify.c gives it a reader). */
#include "tar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define U64(x) ((unsigned long long)(x))

typedef struct idx_files {
	int fd;
	const char *tar_path, *idx_path; /* the index read, whatever the want names */
} idx_files;

static int idx_files_read(void *ctx, const char *object, uint64_t offset, uint64_t len, void *buf,
                          uint64_t *size, rf_error *err)
{
	idx_files *f = ctx;
	if (!object)
		return rf_pread_full(f->fd, buf, len, offset, f->tar_path, err);
	uint64_t n = 0;
	int fd = rf_open_regular(f->idx_path, "index", &n, err);
	if (fd < 0)
		return fd;
	if (size)
		*size = n;
	int rc = len ? rf_pread_full(fd, buf, len, offset, f->idx_path, err) : 0;
	close(fd);
	return rc;
}

/* The tar's layout: from idx_path (NULL: from a scan of its headers). */
static int layout_of(const char *tar_path, const char *idx_path, rf_shard_index **ix, void **priv,
                     rf_error *err)
{
	uint64_t size = 0;
	int fd = rf_open_regular(tar_path, "shard", &size, err);
	if (fd < 0)
		return fd;
	rf_tar_opts opt = {.scan_only = idx_path == NULL};
	rf_fmt_open o = {.url = tar_path,
	                 .name = tar_path,
	                 .size = size,
	                 .local = true,
	                 .opt = &opt,
	                 .in_place = true};
	idx_files f = {.fd = fd, .tar_path = tar_path, .idx_path = idx_path};
	int rc = rf_format_open_with(&rf_tar_format, &o, idx_files_read, &f, err);
	close(fd);
	if (rc == RF_FMT_DONE && idx_path && !o.priv)
		rc = -EINVAL;
	if (rc == RF_FMT_DONE && idx_path && !rf_tar_layout_from_index(o.priv)) {
		rf_tar_format.close(o.index, o.priv);
		return rf_fail(err, -ENOENT, "index %s: no such file", idx_path);
	}
	if (rc < 0)
		return rc;
	*ix = o.index;
	*priv = o.priv;
	return 0;
}

/* A plain tar's name (a query or fragment left out): an index is written
 * for a plain tar only. */
static bool tar_name(const char *url)
{
	size_t n = strcspn(url, "?#");
	return n > 4 && memcmp(url + n - 4, ".tar", 4) == 0;
}

int rf_tar_index_name_check(const char *url, const char *name, rf_error *err)
{
	return tar_name(url)
	           ? 0
	           : rf_fail(err, -EINVAL, "%s: not a .tar (an index is written for a plain tar)",
	                     name);
}

int rf_tar_index_build_with(rf_fmt_open *o, rf_fmt_read_fn read, void *ctx, const char *idx_path,
                            rf_error *err)
{
	RF_TRY(rf_tar_index_name_check(o->url, o->name, err));
	rf_tar_opts opt = o->opt ? *(const rf_tar_opts *)o->opt : (rf_tar_opts){0};
	opt.scan_only = true; /* an index already beside it is not read */
	o->opt = &opt;
	o->in_place = rf_tar_format.in_place;
	int rc = rf_format_open_with(&rf_tar_format, o, read, ctx, err);
	o->opt = NULL;
	if (rc == RF_FMT_DONE) {
		rc = rf_tar_index_save(o->index, o->priv, idx_path, o->name, err);
		rf_tar_format.close(o->index, o->priv);
	}
	return rc < 0 ? rc : 0;
}

RF_API int rf_tar_index_build(const char *tar_path, const char *idx_path, rf_error *err)
{
	uint64_t size = 0;
	int fd = -1;
	if (tar_name(tar_path) && (fd = rf_open_regular(tar_path, "shard", &size, err)) < 0)
		return fd;
	rf_fmt_open o = {.url = tar_path, .name = tar_path, .size = size, .local = true};
	idx_files f = {.fd = fd, .tar_path = tar_path, .idx_path = NULL};
	int rc = rf_tar_index_build_with(&o, idx_files_read, &f, idx_path, err);
	if (fd >= 0)
		close(fd);
	return rc;
}

RF_API int rf_tar_index_check(const char *tar_path, const char *idx_path, rf_error *err)
{
	rf_shard_index *a = NULL, *b = NULL;
	void *pa = NULL, *pb = NULL;
	RF_TRY(layout_of(tar_path, NULL, &a, &pa, err));
	int rc = layout_of(tar_path, idx_path, &b, &pb, err);
	if (rc == 0 && !rf_tar_layout_equal(a, pa, b, pb))
		rc = rf_fail(err, RF_E_CORRUPT,
		             "index %s: stale: its samples are not the ones %s holds (%llu samples "
		             "in %u units by its headers, %llu in %u by the index): write it again",
		             idx_path, tar_path, U64(a->records), a->blocks, U64(b->records),
		             b->blocks);
	rf_tar_format.close(a, pa);
	if (b)
		rf_tar_format.close(b, pb);
	return rc;
}
