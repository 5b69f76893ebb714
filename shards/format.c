/* format.c - the registry of shard formats (the seam's one table: a new
 * format is a row here plus its file), and a synchronous driver of a
 * format's open steps over a local file, for tools and tests. */
#include "format.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern const rf_format rf_format_rfs;
extern const rf_format rf_format_llmc;
extern const rf_format rf_format_megatron;

/* Claim order: on equal claims the earlier row wins. llmc first: an
 * explicitly named *.bin is a token file (its open refuses one without
 * llm.c's header unless a dtype is named); rfs, the fallback for an
 * explicitly named object of unknown kind, before megatron, whose MAYBE
 * (PREFIX.bin, PREFIX) never takes a bare name from it: Megatron datasets
 * are named by their .idx. */
static const rf_format *const formats[] = {
    &rf_format_llmc,
    &rf_format_rfs,
    &rf_format_megatron,
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
	size_t end = strcspn(name, "?#");
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

bool rf_format_is_shard_name(const char *name)
{
	return rf_format_for(name, false) != NULL;
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
	return ".rfs or .idx";
}

/* ------------------------------------------------- synchronous driver */

static int pread_all(int fd, uint8_t *buf, uint64_t len, uint64_t off, const char *name,
                     rf_error *err)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rf_fail(err, -errno, "shard %s: read at byte %llu: %s", name,
			               (unsigned long long)off, strerror(errno));
		if (n == 0)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: read at byte %llu: file ended early (changed while "
			    "read?)",
			    name, (unsigned long long)off);
		buf += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

typedef struct file_obj {
	int fd;
	uint64_t size;
	char *url;
} file_obj;

static void file_obj_close(file_obj *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->url);
	f->fd = -1;
	f->url = NULL;
}

/* One NEED answered from the file (or its sidecar): the bytes land in *buf. */
static int serve_want(const rf_format *fmt, rf_fmt_open *o, int fd, file_obj *side, uint8_t **buf,
                      rf_error *err)
{
	const rf_fmt_want *w = &o->want;
	uint64_t size = o->size;
	if (w->object) {
		if (!side->url || strcmp(side->url, w->object) != 0) {
			file_obj_close(side);
			side->fd = rf_open_regular(w->object, "shard", &side->size, err);
			if (side->fd < 0)
				return side->fd;
			if (!(side->url = strdup(w->object)))
				return rf_fail(err, -ENOMEM, "out of memory");
		}
		fd = side->fd;
		size = side->size;
		o->got_object_size = size;
	}
	uint64_t end;
	if (!rf_add_u64(w->offset, w->len, &end) || end > size)
		return rf_fail(err, -EINVAL,
		               "shard %s: the %s format asked for bytes [%llu, +%llu) of a "
		               "%llu-byte object",
		               o->name, fmt->name, (unsigned long long)w->offset,
		               (unsigned long long)w->len, (unsigned long long)size);
	uint8_t *b = malloc(w->len ? w->len : 1);
	if (!b)
		return rf_fail(err, -ENOMEM, "shard %s: no memory for %llu bytes", o->name,
		               (unsigned long long)w->len);
	int rc = pread_all(fd, b, w->len, w->offset, o->name, err);
	if (rc < 0) {
		free(b);
		return rc;
	}
	free(*buf);
	*buf = b;
	o->got = b;
	o->got_offset = w->offset;
	o->got_len = w->len;
	return 0;
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
	file_obj side = {.fd = -1};
	uint8_t *buf = NULL;
	int rc;
	while ((rc = fmt->open_step(&o, err)) == RF_FMT_NEED) {
		rc = serve_want(fmt, &o, fd, &side, &buf, err);
		if (rc < 0)
			break;
	}
	if (fmt->open_abort)
		fmt->open_abort(&o);
	if (rc == RF_FMT_DONE) {
		*index = o.index;
		*priv = o.priv;
		if (fmt_out)
			*fmt_out = fmt;
	}
	free(buf);
	file_obj_close(&side);
	close(fd);
	free(object);
	return rc < 0 ? rc : 0;
}
