/* tfrecord_build.c - `ringfeed index` for TFRecord files
 * (include/ringfeed.h: rf_tfrecord_index_build, rf_tfrecord_index_check): a
 * local file's frames walked and written as a DALI tfrecord2idx index
 * atomically, or an index beside a file checked against its frames. */
#include "tfrecord.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The local file's records' data lengths: walked (scan) or from its index. */
static int layout_of(const char *path, bool scan, rf_shard_index **ix, void **priv, rf_error *err)
{
	rf_tfr_opts opt = {.raw = true, .scan_only = scan};
	return rf_format_open_file_opt(path, &rf_tfrecord_format, &opt, NULL, ix, priv, err);
}

static int index_save(const rf_shard_index *ix, const void *priv, const char *idx_path,
                      const char *name, rf_error *err)
{
	return rf_format_index_save(ix, priv, idx_path, name, rf_tfr_index_write, err);
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
