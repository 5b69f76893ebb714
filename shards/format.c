/* format.c - the registry of shard formats (the seam's one table: a new
 * format is a row here plus its file), and a synchronous driver of a
 * format's open steps over a local file, for tools and tests. */
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern const rf_format rf_format_rfs;
extern const rf_format rf_format_llmc;
extern const rf_format rf_format_megatron;
extern const rf_format rf_tar_format;
extern const rf_format rf_mds_format;
extern const rf_format rf_mds_zstd_format;
extern const rf_format rf_tfrecord_format;
extern const rf_format rf_parquet_format;

/* Claim order: on equal claims the earlier row wins. llmc first: an
 * explicitly named *.bin is a token file (its open refuses one without
 * llm.c's header unless a dtype is named); rfs, the fallback for an
 * explicitly named object of unknown kind, before megatron, whose MAYBE
 * (PREFIX.bin, PREFIX) never takes a bare name from it: Megatron datasets
 * are named by their .idx. */
static const rf_format *const formats[] = {
    &rf_format_llmc,    &rf_tar_format, &rf_mds_format,      &rf_mds_zstd_format,
    &rf_parquet_format, &rf_format_rfs, &rf_format_megatron, &rf_tfrecord_format,
};

const rf_format *const *rf_formats(uint32_t *count)
{
	*count = (uint32_t)(sizeof(formats) / sizeof(formats[0]));
	return formats;
}

/* The last path component of a name or URL, without a query or fragment,
 * into buf (a presigned query never reaches a claim). */
static const char *name_leaf(const char *name, char *buf, size_t cap)
{
	size_t end = rf_url_path_len(name);
	size_t start = end;
	while (start > 0 && name[start - 1] != '/')
		start--;
	snprintf(buf, cap, "%.*s", (int)(end - start), name + start);
	return buf;
}

const rf_format *rf_format_for(const char *name, bool explicit_name)
{
	char leaf[1024];
	name_leaf(name ? name : "", leaf, sizeof(leaf));
	const rf_format *best = NULL;
	int best_claim = explicit_name ? RF_FMT_MAYBE : RF_FMT_YES;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		int c = formats[i]->claim(leaf);
		if (c >= best_claim && (!best || c > best_claim)) {
			best = formats[i];
			best_claim = c;
		}
	}
	return best;
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

int rf_format_claim(const rf_format *f, const char *name)
{
	char leaf[1024];
	return f->claim(name_leaf(name ? name : "", leaf, sizeof(leaf)));
}

const rf_format *rf_format_next(const char *name, const rf_format *after)
{
	bool past = false;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (formats[i] == after)
			past = true;
		else if (past && rf_format_claim(formats[i], name) >= RF_FMT_MAYBE)
			return formats[i];
	}
	return NULL;
}

bool rf_format_is_shard_name(const char *name)
{
	return rf_format_for(name, false) != NULL;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool rf_format_is_sidecar(const char *name, char *const *sorted, size_t n)
{
	size_t len = strlen(name);
	if (len < 5 || strcmp(name + len - 4, ".idx") != 0)
		return false;
	char shard[4096];
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		for (const char *const *x = formats[i]->sidecar_suffixes; x && *x; x++) {
			if (snprintf(shard, sizeof(shard), "%.*s%s", (int)(len - 4), name, *x) >=
			    (int)sizeof(shard))
				continue;
			const char *key = shard;
			if (bsearch(&key, sorted, n, sizeof(*sorted), name_cmp))
				return true;
		}
	return false;
}

const rf_format *rf_format_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(formats[i]->name, name))
			return formats[i];
	return NULL;
}

char *rf_format_local_name(const char *path)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		char *n = formats[i]->local_name ? formats[i]->local_name(path) : NULL;
		if (n)
			return n;
	}
	return NULL;
}

const char *rf_format_patterns(void)
{
	return ".rfs, .idx, .tar, .mds, .mds.zstd, .tfrecord or .parquet";
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
			uint64_t len = !o->local && w->min_len ? w->min_len : w->len;
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

typedef struct file_reader {
	int fd;
	const char *name;
	int side_fd;
	uint64_t side_size;
	char *side_path;
} file_reader;

static int file_read(void *ctx, const char *object, uint64_t offset, uint64_t len, void *buf,
                     uint64_t *size, rf_error *err)
{
	file_reader *f = ctx;
	if (!object)
		return rf_pread_full(f->fd, buf, len, offset, f->name, err);
	if (!f->side_path || strcmp(f->side_path, object) != 0) {
		if (f->side_fd >= 0)
			close(f->side_fd);
		free(f->side_path);
		f->side_path = NULL;
		f->side_fd = rf_open_regular(object, "shard", &f->side_size, err);
		if (f->side_fd < 0)
			return f->side_fd;
		if (!(f->side_path = strdup(object)))
			return rf_fail(err, -ENOMEM, "out of memory");
	}
	if (size)
		*size = f->side_size;
	return len ? rf_pread_full(f->side_fd, buf, len, offset, object, err) : 0;
}

int rf_format_open_file(const char *path, const rf_format *fmt, const struct rf_fmt_options *opt,
                        const rf_format **fmt_out, rf_shard_index **index, void **priv,
                        rf_error *err)
{
	*index = NULL;
	*priv = NULL;
	if (!fmt && !(fmt = rf_format_for(path, true)))
		return rf_fail(err, -EPROTONOSUPPORT,
		               "shard %s: no format reads this name (the formats read %s)", path,
		               rf_format_patterns());
	/* the object the units lie in (a Megatron PREFIX.idx names PREFIX.bin) */
	char *object = fmt->shard_object ? fmt->shard_object(path) : NULL;
	if (object)
		path = object;
	uint64_t size = 0;
	int fd = rf_open_regular(path, "shard", &size, err);
	if (fd < 0) {
		free(object);
		return fd;
	}
	rf_fmt_open o = {.url = path,
	                 .name = path,
	                 .size = size,
	                 .local = true,
	                 .opt = opt,
	                 .in_place = fmt->in_place};
	file_reader fr = {.fd = fd, .name = path, .side_fd = -1};
	/* a local file: every want read whole (min_len is for remote stores) */
	int rc = rf_format_open_with(fmt, &o, file_read, &fr, err);
	if (rc == RF_FMT_DONE) {
		*index = o.index;
		*priv = o.priv;
		if (fmt_out)
			*fmt_out = fmt;
	}
	if (fr.side_fd >= 0)
		close(fr.side_fd);
	free(fr.side_path);
	close(fd);
	free(object);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------ public layouts */

struct rf_layout {
	const rf_format *fmt;
	rf_shard_index *index;
	void *priv;
};

int rf_layout_open_opts(const char *path, const struct rf_fmt_options *opt, rf_layout **out,
                        rf_error *err)
{
	*out = NULL;
	rf_layout *l = calloc(1, sizeof(*l));
	if (!l)
		return rf_fail(err, -ENOMEM, "out of memory");
	char *alias = rf_format_local_name(path); /* PREFIX.bin -> PREFIX.idx */
	int rc =
	    rf_format_open_file(alias ? alias : path, NULL, opt, &l->fmt, &l->index, &l->priv, err);
	free(alias);
	if (rc < 0) {
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

RF_API int rf_layout_open(const char *path, rf_layout **out, rf_error *err)
{
	return rf_layout_open_opts(path, NULL, out, err);
}

RF_API const rf_shard_index *rf_layout_index(const rf_layout *l)
{
	return l->index;
}

RF_API const char *rf_layout_format(const rf_layout *l)
{
	return l->fmt->name;
}

RF_API uint64_t rf_layout_payload_bytes(const rf_layout *l)
{
	return l->fmt->payload_bytes ? l->fmt->payload_bytes(l->index) : l->index->decoded_bytes;
}

RF_API int rf_layout_has_fields(const rf_layout *l)
{
	return l && l->fmt->field_names != NULL;
}

RF_API void rf_layout_free(rf_layout *l)
{
	if (!l)
		return;
	l->fmt->close(l->index, l->priv);
	free(l);
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
