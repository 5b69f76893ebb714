/* registry.c - the table of shard formats (the seam's one table: a new
 * format is a row here plus its files) and what reads it: which format
 * claims a name, the names a listing takes (each row's own `names`), which
 * listed PREFIX.idx is a shard's sidecar, and the opens of a local file by
 * name. It sits above the formats: it names their rows, they never call it. */
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
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

#define RF_NFORMATS (sizeof(formats) / sizeof(formats[0]))

const rf_format *const *rf_formats(uint32_t *count)
{
	*count = (uint32_t)RF_NFORMATS;
	return formats;
}

/* ------------------------------------------------------------ options */

/* Every row's options, each in its own aligned block after the header:
 * at most the sum of the rows' options_bytes (constants), whatever the
 * config says. */
struct rf_fmt_optset {
	const void *opt[RF_NFORMATS]; /* formats[i]'s options, NULL without a hook */
	max_align_t store[];
};

static size_t optset_block(const rf_format *f)
{
	size_t a = sizeof(max_align_t);
	return f->options ? (f->options_bytes + a - 1) / a : 0; /* in max_align_t */
}

int rf_fmt_optset_new(const rf_fmt_config *cfg, rf_fmt_optset **out, rf_error *err)
{
	*out = NULL;
	size_t blocks = 0;
	for (size_t i = 0; i < RF_NFORMATS; i++)
		blocks += optset_block(formats[i]);
	rf_fmt_optset *set = calloc(1, sizeof(*set) + blocks * sizeof(max_align_t));
	if (!set)
		return rf_fail(err, -ENOMEM, "out of memory for the formats' options");
	size_t at = 0;
	for (size_t i = 0; i < RF_NFORMATS; i++) {
		const rf_format *f = formats[i];
		if (!f->options)
			continue;
		int rc = f->options(cfg, &set->store[at], err);
		if (rc < 0) {
			free(set);
			return rc;
		}
		set->opt[i] = &set->store[at];
		at += optset_block(f);
	}
	*out = set;
	return 0;
}

void rf_fmt_optset_free(rf_fmt_optset *set)
{
	free(set);
}

const void *rf_fmt_optset_for(const rf_fmt_optset *set, const rf_format *fmt)
{
	for (size_t i = 0; set && i < RF_NFORMATS; i++)
		if (formats[i] == fmt)
			return set->opt[i];
	return NULL;
}

/* f's claim on a leaf: its claim hook's, else YES for one of its names. */
static int leaf_claim(const rf_format *f, const char *leaf)
{
	if (f->claim)
		return f->claim(leaf);
	return rf_fmt_names_have(f->names, leaf) ? RF_FMT_YES : RF_FMT_NO;
}

const rf_format *rf_format_for(const char *name, bool explicit_name)
{
	char leaf[1024];
	rf_fmt_leaf(name ? name : "", leaf, sizeof(leaf));
	const rf_format *best = NULL;
	int best_claim = explicit_name ? RF_FMT_MAYBE : RF_FMT_YES;
	for (size_t i = 0; i < RF_NFORMATS; i++) {
		int c = leaf_claim(formats[i], leaf);
		if (c >= best_claim && (!best || c > best_claim)) {
			best = formats[i];
			best_claim = c;
		}
	}
	return best;
}

int rf_format_claim(const rf_format *f, const char *name)
{
	char leaf[1024];
	return leaf_claim(f, rf_fmt_leaf(name ? name : "", leaf, sizeof(leaf)));
}

const rf_format *rf_format_next(const char *name, const rf_format *after)
{
	bool past = false;
	for (size_t i = 0; i < RF_NFORMATS; i++) {
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

/* name is PREFIX + a row's sidecar name (".idx") and sorted holds PREFIX +
 * one of that row's sidecar_suffixes (".tar"): the shard's index file. */
static bool is_sidecar(const rf_format *f, const char *name, char *const *sorted, size_t n)
{
	size_t len = strlen(name);
	if (!f->sidecar || !rf_fmt_name_has(name, f->sidecar))
		return false;
	size_t stem = len - strlen(f->sidecar);
	char shard[4096];
	for (const char *const *x = f->sidecar_suffixes; x && *x; x++) {
		if (snprintf(shard, sizeof(shard), "%.*s%s", (int)stem, name, *x) >=
		    (int)sizeof(shard))
			continue;
		const char *key = shard;
		if (bsearch(&key, sorted, n, sizeof(*sorted), name_cmp))
			return true;
	}
	return false;
}

bool rf_format_is_sidecar(const char *name, char *const *sorted, size_t n)
{
	for (size_t i = 0; i < RF_NFORMATS; i++)
		if (is_sidecar(formats[i], name, sorted, n))
			return true;
	return false;
}

bool rf_format_listing_takes(const char *name, char *const *sorted, size_t n)
{
	return rf_format_is_shard_name(name) && !rf_format_is_sidecar(name, sorted, n);
}

const rf_format *rf_format_for_index(const char *name)
{
	char leaf[1024];
	rf_fmt_leaf(name ? name : "", leaf, sizeof(leaf));
	for (size_t i = 0; i < RF_NFORMATS; i++)
		if (formats[i]->expand && formats[i]->expand_name &&
		    !strcmp(leaf, formats[i]->expand_name))
			return formats[i];
	return NULL;
}

const rf_format *rf_format_by_name(const char *name)
{
	for (size_t i = 0; i < RF_NFORMATS; i++)
		if (!strcmp(formats[i]->name, name))
			return formats[i];
	return NULL;
}

char *rf_format_local_name(const char *path)
{
	for (size_t i = 0; i < RF_NFORMATS; i++) {
		char *n = formats[i]->local_name ? formats[i]->local_name(path) : NULL;
		if (n)
			return n;
	}
	return NULL;
}

/* ".rfs, .tar, ... or .tfrecords.zlib": every row's names written once,
 * ringfeed's own .rfs first, then the others in claim order. */
static char patterns[512];
static pthread_once_t patterns_once = PTHREAD_ONCE_INIT;

static const rf_format *shown_row(size_t i)
{
	if (i == 0)
		return &rf_format_rfs;
	const rf_format *f = formats[i - 1];
	return f == &rf_format_rfs ? NULL : f;
}

static void patterns_build(void)
{
	size_t total = 0, k = 0, at = 0;
	for (size_t i = 0; i < RF_NFORMATS; i++)
		for (const char *const *s = formats[i]->names; s && *s; s++)
			total++;
	for (size_t i = 0; i <= RF_NFORMATS; i++)
		for (const char *const *s = shown_row(i) ? shown_row(i)->names : NULL; s && *s;
		     s++, k++) {
			const char *sep = k == 0 ? "" : k + 1 == total ? " or " : ", ";
			int w = snprintf(patterns + at, sizeof(patterns) - at, "%s%s", sep, *s);
			if (w < 0 || (size_t)w >= sizeof(patterns) - at)
				return; /* cut (the table is static: a test sees it whole) */
			at += (size_t)w;
		}
}

const char *rf_format_patterns(void)
{
	pthread_once(&patterns_once, patterns_build);
	return patterns;
}

/* ------------------------------------------------ opens of local files */

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

int rf_format_open_file(const char *path, const rf_format *fmt, const rf_fmt_optset *opts,
                        const rf_format **fmt_out, rf_shard_index **index, void **priv,
                        rf_error *err)
{
	*index = NULL;
	*priv = NULL;
	if (!fmt && !(fmt = rf_format_for(path, true)))
		return rf_fail(err, -EPROTONOSUPPORT,
		               "shard %s: no format reads this name (the formats read %s)", path,
		               rf_format_patterns());
	return rf_format_open_file_opt(path, fmt, rf_fmt_optset_for(opts, fmt), fmt_out, index,
	                               priv, err);
}

int rf_format_open_file_opt(const char *path, const rf_format *fmt, const void *opt,
                            const rf_format **fmt_out, rf_shard_index **index, void **priv,
                            rf_error *err)
{
	*index = NULL;
	*priv = NULL;
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
	/* a local file: every want read whole (min_len is for an engine short of room) */
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

int rf_layout_open_opts(const char *path, const rf_fmt_optset *opts, rf_layout **out, rf_error *err)
{
	*out = NULL;
	rf_layout *l = calloc(1, sizeof(*l));
	if (!l)
		return rf_fail(err, -ENOMEM, "out of memory");
	char *alias = rf_format_local_name(path); /* PREFIX.bin -> PREFIX.idx */
	int rc = rf_format_open_file(alias ? alias : path, NULL, opts, &l->fmt, &l->index, &l->priv,
	                             err);
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
	const char *const *names;
	/* a format with fields may read a shard as token windows (Parquet's
	 * seq_len: no names, the token formats' metadata) */
	bool windows = l && l->fmt->field_names && l->fmt->field_names(l->priv, &names) == 0 &&
	               l->index->metadata && strstr(l->index->metadata, "\"seq_len\":");
	return l && l->fmt->field_names != NULL && !windows;
}

RF_API void rf_layout_free(rf_layout *l)
{
	if (!l)
		return;
	l->fmt->close(l->index, l->priv);
	free(l);
}
