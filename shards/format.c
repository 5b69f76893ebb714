/* format.c - what every format's code shares, below the registry: the
 * layout's sums, a name's suffix, the synchronous driver of open steps and
 * of a sequential decode, the atomic write of an index file, and reading an
 * option through the engine's getter (rf_fmt_config). Nothing
 * here knows a format: the formats call it, never the other way round (the
 * table that names them is registry.c, above them). */
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

bool rf_fmt_name_has(const char *leaf, const char *suffix)
{
	size_t n = strlen(leaf), m = strlen(suffix);
	return n > m && strcmp(leaf + n - m, suffix) == 0;
}

bool rf_fmt_names_have(const char *const *names, const char *leaf)
{
	for (const char *const *s = names; s && *s; s++)
		if (rf_fmt_name_has(leaf, *s))
			return true;
	return false;
}

const char *rf_fmt_leaf(const char *name, char *buf, size_t cap)
{
	size_t end = rf_url_path_len(name);
	size_t start = end;
	while (start > 0 && name[start - 1] != '/')
		start--;
	snprintf(buf, cap, "%.*s", (int)(end - start), name + start);
	return buf;
}

void rf_fmt_layout_sums(rf_shard_index *ix)
{
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		ix->largest_block_compressed_bytes =
		    RF_MAX(ix->largest_block_compressed_bytes, b->compressed_bytes);
		ix->largest_block_decoded_bytes =
		    RF_MAX(ix->largest_block_decoded_bytes, b->decoded_bytes);
		ix->compressed_bytes += b->compressed_bytes;
		ix->decoded_bytes += b->decoded_bytes;
	}
}

/* ------------------------------------------------- synchronous driver */

bool rf_fmt_side_absent(const char *url, int rc)
{
	return rc == -ENOENT || (rc == -EACCES && url && strncmp(url, "s3://", 5) == 0);
}

int rf_format_open_with(const rf_format *fmt, rf_fmt_open *o, rf_fmt_read_fn read, void *ctx,
                        rf_error *err)
{
	uint8_t *buf = NULL;
	uint64_t buf_off = 0, buf_len = 0;
	const char *buf_obj = NULL; /* the object buf holds (NULL: the shard) */
	char *obj_copy = NULL;
	uint32_t steps = 0;
	int rc;
	while ((rc = fmt->open_step(o, err)) == RF_FMT_NEED) {
		const rf_fmt_want *w = &o->want;
		uint64_t size = o->size, end;
		o->absent = false;
		if (w->object && w->optional && w->cache_only) { /* no cache here */
			o->absent = true;
			o->got = NULL;
			o->got_offset = o->got_len = o->got_object_size = 0;
			continue;
		}
		if (w->object && (rc = read(ctx, w->object, 0, 0, NULL, &size, err)) < 0) {
			if (!w->optional || !rf_fmt_side_absent(w->object, rc))
				break;
			*err = (rf_error){0};
			o->absent = true; /* an optional sidecar that does not exist */
			o->got = NULL;
			o->got_offset = o->got_len = o->got_object_size = 0;
			continue;
		}
		o->got_object_size = w->object ? size : 0;
		if (!rf_add_u64(w->offset, w->len, &end) || end > size || w->min_len > w->len ||
		    ++steps > (1u << 20)) {
			rc = rf_fail(err, -EINVAL,
			             "shard %s: the %s format asked for bytes [%llu, +%llu) of a "
			             "%llu-byte object (step %u)",
			             o->name, fmt->name, (unsigned long long)w->offset,
			             (unsigned long long)w->len, (unsigned long long)size, steps);
			break;
		}
		if (w->len == 0) { /* no bytes (a size, or a bound declared): no read */
			static const uint8_t none[1];
			o->got = none;
			o->got_offset = w->offset;
			o->got_len = 0;
			continue;
		}
		bool same = (w->object == NULL && buf_obj == NULL) ||
		            (w->object && buf_obj && !strcmp(w->object, buf_obj));
		if (!(buf && same && w->offset >= buf_off && end <= buf_off + buf_len)) {
			uint64_t len = w->len;
			uint8_t *b = malloc(len ? len : 1);
			char *oc = w->object ? strdup(w->object) : NULL;
			if (!b || (w->object && !oc)) {
				free(b);
				free(oc);
				rc = rf_fail(err, -ENOMEM, "shard %s: no memory for %llu bytes",
				             o->name, (unsigned long long)len);
				break;
			}
			rc = read(ctx, w->object, end - len, len, b, NULL, err);
			free(buf);
			free(obj_copy);
			buf = b;
			obj_copy = oc;
			buf_obj = oc;
			buf_off = end - len;
			buf_len = len;
			if (rc < 0)
				break;
		}
		/* the want, or its shorter tail when only that was read */
		o->got_offset = w->offset >= buf_off ? w->offset : buf_off;
		o->got = buf + (o->got_offset - buf_off);
		o->got_len = end - o->got_offset;
	}
	if (fmt->open_abort)
		fmt->open_abort(o);
	free(buf);
	free(obj_copy);
	return rc;
}

/* A format that keeps asking without end would spin a tool: a unit needs
 * at most one request per buf_cap bytes of the object, and a restart. */
int rf_fmt_decode_seq_with(const rf_format *fmt, void **state, const rf_shard_index *ix,
                           const void *priv, uint32_t u, const void *src, size_t src_len,
                           uint64_t src_offset, uint8_t *buf, size_t buf_cap, rf_fmt_read_fn read,
                           void *ctx, void *dst, size_t dst_cap, rf_unit_records *out,
                           uint64_t *skipped, const char *name, rf_error *err)
{
	if (!fmt->decode_seq || buf_cap == 0)
		return rf_fail(err, -EINVAL, "shard %s: unit %u: not a sequential format", name, u);
	uint64_t asks_max = 2 * (ix->file_bytes / buf_cap + 2);
	rf_fmt_more more = {.cap = buf_cap};
	for (uint64_t asks = 0;; asks++) {
		more.skipped_bytes = 0;
		int rc = fmt->decode_seq(state, ix, priv, u, src, src_len, src_offset, dst, dst_cap,
		                         out, &more, name, err);
		if (skipped)
			*skipped += more.skipped_bytes;
		if (rc != RF_FMT_MORE)
			return rc;
		if (asks >= asks_max || more.len == 0 || more.len > buf_cap ||
		    more.offset > ix->file_bytes || more.len > ix->file_bytes - more.offset)
			return rf_fail(err, -EIO,
			               "shard %s: unit %u: the decoder asked for [%llu, +%llu) "
			               "(request %llu, at most %zu bytes each)",
			               name, u, (unsigned long long)more.offset,
			               (unsigned long long)more.len, (unsigned long long)asks,
			               buf_cap);
		uint64_t size = 0;
		RF_TRY(read(ctx, NULL, more.offset, more.len, buf, &size, err));
		src = buf, src_len = (size_t)more.len, src_offset = more.offset;
		more.again = true;
	}
}

int rf_format_index_save(const rf_shard_index *ix, const void *priv, const char *idx_path,
                         const char *name, rf_index_write_fn write, rf_error *err)
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
		rc = write(ix, priv, f, name, err);
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

/* ------------------------------------------------------------ options */

static int cfg_get(const rf_fmt_config *cfg, const char *key, uint64_t *num, const char **str,
                   rf_error *err)
{
	*num = 0;
	*str = NULL;
	if (!cfg)
		return 0;
	int rc = cfg->get(cfg->ctx, key, num, str);
	if (rc == -ENOENT)
		return rf_fail(err, -EINVAL,
		               "format option %s: the loader's config has no such key", key);
	return rc < 0 ? rf_fail(err, rc, "format option %s: %s", key, strerror(-rc)) : 0;
}

int rf_fmt_cfg_num(const rf_fmt_config *cfg, const char *key, uint64_t *v, rf_error *err)
{
	const char *str;
	return cfg_get(cfg, key, v, &str, err);
}

int rf_fmt_cfg_str(const rf_fmt_config *cfg, const char *key, const char **v, rf_error *err)
{
	uint64_t num;
	RF_TRY(cfg_get(cfg, key, &num, v, err));
	if (*v && !**v)
		*v = NULL;
	return 0;
}
