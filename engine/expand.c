/* expand.c - turns the configured URLs into the shard list: local files,
 * directories (their manifest.rfm, else a format's dataset index such as MDS's
 * index.json, else the files a format claims, sorted), dataset indexes (local or
 * fetched whole: their format lists the shards beside them), manifests (their
 * entries, with sizes the file source checks), remote manifests (fetched, entries resolved against
 * their URL) and remote URLs (kept as they are, or listed when an s3:// name without a trailing '/'
 * is no object but a prefix). */
#include "bundle.h"
#include "engine.h"
#include "format.h"
#include "manifest.h"
#include "mix_file.h"
#include "remote.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RF_SHARDS_MAX 1000000u

typedef struct rf_shard_list {
	rf_shard *v;
	uint32_t n, cap;
	uint64_t budget_bytes; /* the loader's budget: the list is refused past it */
	uint64_t bytes;        /* the entries and their strings, as rf_memory_shard_list counts */
} rf_shard_list;

static int rf_list_too_big(const rf_shard_list *l, uint64_t more, const char *what, rf_error *err)
{
	char lim[32], b[32];
	uint64_t need = l->bytes + more;
	return rf_fail(err, RF_E_BUDGET,
	               "budget %s is too small for the shard list: %s needs at least %llu "
	               "bytes (%s) before any shard is opened (raise budget)",
	               rf_fmt_bytes(l->budget_bytes, lim, sizeof(lim)), what,
	               (unsigned long long)need, rf_fmt_bytes(need, b, sizeof(b)));
}

/* What a manifest of c's entries costs to build into the list, counted
 * before it is parsed: the list's entries and names, and while it is
 * parsed, its text and its entries. Refused past the budget, so a huge
 * manifest costs a count of its lines, never the list it would make. */
static int rf_list_room_for(rf_shard_list *l, const rf_manifest_count *c, uint64_t text_bytes,
                            const char *name, rf_error *err)
{
	if (c->over_line) /* as the parser says it, without reading the text whole */
		return rf_fail(err, -E2BIG,
		               "manifest %s: line %llu: more than %d shards (the most a manifest "
		               "may list)",
		               name, (unsigned long long)c->over_line, RF_MANIFEST_ENTRIES_MAX);
	uint64_t list = c->entries * sizeof(rf_shard) + c->entry_bytes;
	uint64_t parse = text_bytes + c->entries * sizeof(rf_manifest_entry) + c->entry_bytes;
	if (!l->budget_bytes || l->bytes + list + parse <= l->budget_bytes)
		return 0;
	char what[512];
	snprintf(what, sizeof(what),
	         "manifest %s lists %llu shards: %llu bytes of shard list, and %llu more while "
	         "its text is parsed, so it",
	         name, (unsigned long long)c->entries, (unsigned long long)list,
	         (unsigned long long)parse);
	return rf_list_too_big(l, list + parse, what, err);
}

static int rf_list_push(rf_shard_list *l, const char *url, uint64_t size_hint, rf_error *err)
{
	if (l->n >= RF_SHARDS_MAX)
		return rf_fail(err, -E2BIG, "more than %u shards", RF_SHARDS_MAX);
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 16;
		rf_shard *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return rf_fail(err, -ENOMEM, "out of memory for the shard list");
		l->v = v;
		l->cap = cap;
	}
	rf_shard *s = &l->v[l->n];
	memset(s, 0, sizeof(*s));
	/* the format of the name given; its units may lie in another object
	 * (a Megatron PREFIX.idx names PREFIX.bin), whose size is unknown */
	s->fmt = rf_format_for(url, true);
	char *object = s->fmt && s->fmt->shard_object ? s->fmt->shard_object(url) : NULL;
	if (object && strcmp(object, url) != 0) {
		url = object;
		size_hint = UINT64_MAX;
	}
	s->url = strdup(url);
	s->name = rf_url_redact_dup(url);
	free(object);
	if (!s->url || !s->name) {
		free(s->url);
		free(s->name);
		return rf_fail(err, -ENOMEM, "out of memory for the shard list");
	}
	if (!strcmp(s->name, s->url)) { /* nothing to redact (local paths): one copy */
		free(s->name);
		s->name = s->url;
	}
	s->size_hint = size_hint;
	l->n++;
	l->bytes += sizeof(*s) + strlen(s->url) + 1 + (s->name == s->url ? 0 : strlen(s->name) + 1);
	if (l->budget_bytes && l->bytes > l->budget_bytes) {
		char what[64];
		snprintf(what, sizeof(what), "the list of %u shard(s) so far", l->n);
		return rf_list_too_big(l, 0, what, err);
	}
	return 0;
}

static int rf_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int rf_expand_dir_shards(rf_shard_list *l, const char *dir, rf_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return rf_fail(err, -errno, "%s: %s", dir, strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (!rf_format_is_shard_name(de->d_name)) /* the registry decides */
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = n < RF_SHARDS_MAX ? realloc(names, cap * sizeof(*nn)) : NULL;
			if (!nn) {
				rc = rf_fail(err, -ENOMEM, "%s: too many shards", dir);
				break;
			}
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			rc = rf_fail(err, -ENOMEM, "out of memory");
		else
			n++;
	}
	closedir(d);
	if (rc == 0 && n == 0)
		rc = rf_fail(err, -ENOENT, "%s: directory holds no shards (no %s files)", dir,
		             rf_format_patterns());
	if (n > 1)
		qsort(names, n, sizeof(*names), rf_name_cmp);
	bool *take = n ? calloc(n, sizeof(bool)) : NULL; /* the registry's rule */
	if (n && !take && rc == 0)
		rc = rf_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++)
		take[i] = rf_format_listing_takes(names[i], names, n);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && take[i]) {
			char *p = rf_manifest_join(dir, names[i]);
			rc = p ? rf_list_push(l, p, UINT64_MAX, err) : rf_fail(err, -ENOMEM, "oom");
			free(p);
		}
		free(names[i]);
	}
	free(take);
	free(names);
	return rc;
}

/* ------------------------------------------------------ index bundles */

/* A local bundle read whole, at most `room` bytes (never blocks on a FIFO). */
static int rf_bundle_read_local(const char *path, uint64_t room, uint8_t **buf, size_t *len,
                                rf_error *err)
{
	uint64_t size = 0;
	int fd = rf_open_regular(path, "index bundle", &size, err);
	if (fd < 0)
		return fd;
	int rc = 0;
	if (size > room)
		rc = rf_fail(err, -EFBIG,
		             "index bundle %s: %llu bytes, more than the %llu it may take", path,
		             (unsigned long long)size, (unsigned long long)room);
	else if (!(*buf = malloc(size ? size : 1)))
		rc = rf_fail(err, -ENOMEM, "index bundle %s: no memory", path);
	else if ((rc = rf_pread_full(fd, *buf, size, 0, path, err)) < 0) {
		free(*buf);
		*buf = NULL;
	}
	close(fd);
	*len = (size_t)size;
	return rc;
}

/* Bundle entry i against the manifest's entry i (both paths as the
 * manifest's lines give them, resolved alike) and its size. */
static int rf_bundle_entry_check(const rf_bundle_entry *be, const rf_manifest_entry *me,
                                 const char *base, uint32_t i, const char *shown, rf_error *err)
{
	char *raw = strndup(be->path, be->path_len);
	char *path = raw ? (base ? rf_manifest_join(base, raw) : strdup(raw)) : NULL;
	int rc = 0;
	if (!path)
		rc = rf_fail(err, -ENOMEM, "index bundle %s: no memory", shown);
	else if (strcmp(path, me->url) != 0 || be->file_bytes != me->bytes)
		rc = rf_fail(
		    err, RF_E_CORRUPT,
		    "index bundle %s: entry %u (%llu bytes) is not the manifest's line %llu "
		    "(%llu bytes): the bundle is not this manifest's",
		    shown, i, (unsigned long long)be->file_bytes, (unsigned long long)me->line,
		    (unsigned long long)me->bytes);
	free(path);
	free(raw);
	return rc;
}

/* The index bundle beside manifest m (shards/bundle.h: NAME.rfx for
 * NAME.rfm, rf_index_bundle_name of its path or URL, so from the same store
 * with the same credentials), for its shards, the last m->count of l: read
 * whole within half of what the budget leaves, parsed, checked entry by
 * entry against the manifest, and each entry's tail copied to its shard
 * (counted in the list's bytes; the bundle itself is freed here). A bundle
 * is an aid, never the authority: none there (not found, or not ours to
 * read) is the common case and says nothing; one that cannot be used is
 * said on stderr, and its shards open one request each. base: the
 * manifest's directory (NULL: a remote manifest). */
static void rf_expand_bundle(rf_shard_list *l, const rf_manifest *m, const char *base,
                             const char *manifest, bool remote, const rf_fetch_options *fo)
{
	if (m->count == 0 || m->count > l->n)
		return;
	uint32_t first = l->n - (uint32_t)m->count;
	rf_error why = {0};
	char *url = NULL, shown[RF_URL_BYTES_MAX];
	uint8_t *buf = NULL;
	size_t len = 0;
	rf_bundle *b = NULL;
	uint64_t room = RF_BUNDLE_FILE_MAX;
	if (l->budget_bytes) /* the bundle and its tails' copies, for a moment */
		room =
		    RF_MIN(room, l->budget_bytes > l->bytes ? (l->budget_bytes - l->bytes) / 2 : 0);
	if (!(url = rf_index_bundle_name(manifest)))
		return; /* no memory for a name: no bundle, as when there is none */
	rf_url_redact(url, shown, sizeof(shown));
	int rc;
	if (remote) {
		rf_fetch_options o = *fo;
		rc = rf_remote_get(&o, url, room, (char **)&buf, &len, &why);
	} else {
		rc = rf_bundle_read_local(url, room, &buf, &len, &why);
	}
	if (rc == -ENOENT || rc == -EACCES || rc == -EPERM) { /* none there */
		free(url);
		return;
	}
	if (rc == 0)
		rc = rf_bundle_parse(buf, len, shown, &b, &why);
	if (rc == 0 && b->count != m->count)
		rc = rf_fail(&why, RF_E_CORRUPT,
		             "index bundle %s: %u entries, the manifest lists %zu shards", shown,
		             b->count, m->count);
	for (uint32_t i = 0; rc == 0 && i < b->count; i++)
		rc = rf_bundle_entry_check(&b->entry[i], &m->entry[i], base, i, shown, &why);
	for (uint32_t i = 0; rc == 0 && i < b->count; i++) {
		rf_shard *s = &l->v[first + i];
		if (!(s->tail = malloc(b->entry[i].tail_len))) {
			rc = rf_fail(&why, -ENOMEM, "index bundle %s: no memory for its entries",
			             shown);
			break;
		}
		memcpy(s->tail, b->entry[i].tail, b->entry[i].tail_len);
		s->tail_len = b->entry[i].tail_len;
		s->tail_file_bytes = b->entry[i].file_bytes;
		l->bytes += s->tail_len;
	}
	if (rc < 0) /* none, not some */
		for (uint32_t i = 0; i < (uint32_t)m->count; i++) {
			rf_shard *s = &l->v[first + i];
			l->bytes -= s->tail_len;
			free(s->tail);
			s->tail = NULL;
			s->tail_len = 0;
		}
	if (rc < 0) {
		fprintf(stderr, "ringfeed: %s (its shards open one request each)\n",
		        why.msg[0] ? why.msg : "index bundle: out of memory");
	}
	rf_bundle_free(b);
	free(buf);
	free(url);
}

/* A manifest's entries keep what it says of each (checked at open) and
 * where it says it; the first entry owns the manifest's name. */
static int rf_expand_manifest(rf_shard_list *l, const char *path, rf_error *err)
{
	rf_manifest *m = NULL;
	rf_manifest_count c;
	RF_TRY(rf_manifest_count_file(path, &c, err));
	RF_TRY(rf_list_room_for(l, &c, c.entry_bytes + c.lines, path, err));
	RF_TRY(rf_manifest_read_file(path, &m, err));
	int rc = 0;
	bool owned = false;
	char *name = m->count ? strdup(path) : NULL;
	if (m->count == 0)
		rc = rf_fail(err, -ENOENT, "%s: manifest lists no shards", path);
	else if (!name)
		rc = rf_fail(err, -ENOMEM, "out of memory for the shard list");
	for (size_t i = 0; rc == 0 && i < m->count; i++) {
		const rf_manifest_entry *me = &m->entry[i];
		/* bytes 2^64-1 reads as "unknown" to the source; the open checks it */
		rc = rf_list_push(l, me->url, me->bytes, err);
		if (rc < 0)
			break;
		rf_shard *s = &l->v[l->n - 1];
		s->listed = true;
		s->listed_bytes = me->bytes;
		s->listed_records = me->records;
		s->listed_line = me->line;
		s->manifest = name;
		s->owns_manifest = i == 0;
		owned = true;
	}
	if (!owned)
		free(name);
	if (rc == 0) {
		char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash)
			slash[slash == dir ? 1 : 0] = '\0';
		if (dir)
			rf_expand_bundle(l, m, slash ? dir : "", path, false, NULL);
		free(dir);
	}
	rf_manifest_free(m);
	return rc;
}

/* ------------------------------------ dataset indexes (MDS index.json) */

#define RF_DATASET_INDEX_BYTES_MAX (64ull << 20) /* a remote index's body */

static int rf_remote_entry_url(const char *murl, const char *entry, const char *where, char **out,
                               rf_error *err);

typedef struct rf_index_ctx {
	rf_shard_list *l;
	const char *index; /* the index's path or URL: its entries are its siblings */
	bool remote;
} rf_index_ctx;

static int rf_index_add(void *ctx, const char *basename, uint64_t size, rf_error *err)
{
	rf_index_ctx *c = ctx;
	char *u = NULL;
	if (c->remote) {
		char shown[RF_URL_BYTES_MAX];
		rf_url_redact(c->index, shown, sizeof(shown));
		RF_TRY(rf_remote_entry_url(c->index, basename, shown, &u, err));
	} else {
		const char *slash = strrchr(c->index, '/');
		char *dir = slash ? strndup(c->index, (size_t)(slash - c->index) + 1) : strdup(".");
		u = dir ? rf_manifest_join(dir, basename) : NULL;
		free(dir);
	}
	int rc = u ? rf_list_push(c->l, u, size, err)
	           : rf_fail(err, -ENOMEM, "out of memory for the shard list");
	free(u);
	return rc;
}

/* The index's bytes for the format's expand: from a local file in pieces
 * (read), or from a body fetched whole (remote). */
typedef struct rf_index_reader {
	int fd;
	const char *path;
	const char *body;
	size_t left;
} rf_index_reader;

static int rf_index_read(void *ctx, uint8_t *buf, size_t cap, size_t *got, rf_error *err)
{
	rf_index_reader *r = ctx;
	*got = 0;
	if (r->fd < 0) {
		*got = RF_MIN(cap, r->left);
		memcpy(buf, r->body, *got);
		r->body += *got;
		r->left -= *got;
		return 0;
	}
	ssize_t n;
	do
		n = read(r->fd, buf, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return rf_fail(err, -errno, "%s: %s", r->path, strerror(errno));
	*got = (size_t)n;
	return 0;
}

/* A dataset index (a path read in pieces, or a URL fetched whole): its
 * format lists the shards, each resolved beside the index. What reading it
 * holds (the format's expand_bytes, and a remote index's body) must fit
 * the budget; it is given back before the shards' indexes are reserved. */
static int rf_expand_index(rf_shard_list *l, const rf_format *fmt, const rf_config *cfg,
                           const char *where, bool remote, rf_error *err)
{
	char shown[RF_URL_BYTES_MAX];
	rf_url_redact(where, shown, sizeof(shown));
	uint64_t budget = rf_cfg(cfg, RF_CFG_budget), room = budget - fmt->expand_bytes;
	if (budget < fmt->expand_bytes)
		return rf_fail(err, RF_E_BUDGET,
		               "%s: reading it needs %llu bytes, more than the budget (%llu)",
		               shown, (unsigned long long)fmt->expand_bytes,
		               (unsigned long long)budget);
	rf_index_reader r = {.fd = -1, .path = shown};
	char *buf = NULL;
	if (remote) {
		rf_fetch_options fo;
		rf_config_fetch_options(cfg, &fo);
		RF_TRY(rf_remote_get(&fo, where, RF_MIN(RF_DATASET_INDEX_BYTES_MAX, room), &buf,
		                     &r.left, err));
		r.body = buf;
	} else {
		uint64_t size = 0;
		if ((r.fd = rf_open_regular(where, "", &size, err)) < 0)
			return r.fd;
	}
	rf_index_ctx c = {.l = l, .index = where, .remote = remote};
	int rc = fmt->expand(rf_index_read, &r, shown, rf_index_add, &c, err);
	if (r.fd >= 0)
		close(r.fd);
	free(buf);
	return rc;
}

/* A directory that holds a manifest (RF_DIR_MANIFEST, what pack writes) is
 * that manifest: shards left from another pack are not read with it. One
 * that holds a format's dataset index (index.json) is that index. */
static int rf_expand_dir(rf_shard_list *l, const rf_config *cfg, const char *dir, rf_error *err)
{
	char *m = rf_manifest_join(dir, RF_DIR_MANIFEST);
	if (!m)
		return rf_fail(err, -ENOMEM, "out of memory");
	struct stat st;
	int has = lstat(m, &st) == 0;
	int rc = has ? rf_expand_manifest(l, m, err) : 0;
	free(m);
	if (has)
		return rc;
	uint32_t n;
	const rf_format *const *f = rf_formats(&n);
	for (uint32_t i = 0; i < n; i++) {
		if (!f[i]->expand || !f[i]->expand_name)
			continue;
		char *ix = rf_manifest_join(dir, f[i]->expand_name);
		if (!ix)
			return rf_fail(err, -ENOMEM, "out of memory");
		has = stat(ix, &st) == 0 && S_ISREG(st.st_mode);
		rc = has ? rf_expand_index(l, f[i], cfg, ix, false, err) : 0;
		free(ix);
		if (has)
			return rc;
	}
	return rf_expand_dir_shards(l, dir, err);
}

/* A local file: a manifest when it starts with the magic line, else a shard
 * (a name ending in .rfm without the line is an error, not a shard). */
static int rf_expand_file(rf_shard_list *l, const rf_config *cfg, const char *path, rf_error *err)
{
	const rf_format *ixf = rf_format_for_index(path);
	if (ixf)
		return rf_expand_index(l, ixf, cfg, path, false, err);
	char head[64] = {0};
	uint64_t size = 0;
	int fd = rf_open_regular(path, "", &size, err);
	if (fd < 0)
		return fd;
	ssize_t n = read(fd, head, sizeof(head));
	close(fd);
	if (n > 0 && rf_manifest_is(head, (size_t)n))
		return rf_expand_manifest(l, path, err);
	size_t len = strlen(path);
	if (len >= 4 && !strcmp(path + len - 4, ".rfm"))
		return rf_fail(err, RF_E_CORRUPT, "%s: not a manifest (no '%s' line)", path,
		               RF_MANIFEST_MAGIC);
	return rf_list_push(l, path, UINT64_MAX, err);
}

/* Which listed keys are shards: the format registry says (the listing
 * does not know). */
static bool rf_is_shard_key(const char *key, void *ctx)
{
	(void)ctx;
	return rf_format_is_shard_name(key);
}

/* s3://bucket/prefix/: its shard objects (names a format claims) in key
 * order, sizes from the listing. */
static int rf_expand_s3_prefix(rf_shard_list *l, const rf_config *cfg, const char *url,
                               rf_error *err)
{
	rf_fetch_options fo;
	rf_config_fetch_options(cfg, &fo);
	rf_url_list objs = {0};
	const rf_list_filter shards = {.take = rf_is_shard_key, .what = rf_format_patterns()};
	int rc = rf_fetch_list(&fo, url, &shards, &objs, err);
	char **sorted = rc == 0 && objs.n ? malloc(objs.n * sizeof(*sorted)) : NULL;
	if (rc == 0 && objs.n && !sorted)
		rc = rf_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; sorted && i < objs.n; i++)
		sorted[i] = objs.v[i].url;
	if (sorted)
		qsort(sorted, objs.n, sizeof(*sorted), rf_name_cmp);
	for (size_t i = 0; rc == 0 && i < objs.n; i++) {
		if (!rf_format_listing_takes(objs.v[i].url, sorted, objs.n))
			continue; /* a listed shard's sidecar (PREFIX.idx beside PREFIX.tar) */
		rc = rf_list_push(l, objs.v[i].url, objs.v[i].size_hint, err);
		/* the listing's version of the object: the index cache's key before
		 * any read of it */
		if (rc == 0 && objs.v[i].validator &&
		    !(l->v[l->n - 1].validator = strdup(objs.v[i].validator)))
			rc = rf_fail(err, -ENOMEM, "out of memory for the shard list");
	}
	free(sorted);
	rf_url_list_free(&objs);
	return rc;
}

/* ----------------------------------------------------- remote manifests */

#define RF_REMOTE_MANIFEST_BYTES_MAX (64ull << 20)
#define RF_MANIFEST_PEEK_BYTES       64

static bool rf_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static bool rf_is_bucket_url(const char *url)
{
	return !strncmp(url, "s3://", 5) || !strncmp(url, "gs://", 5);
}

/* An entry of the manifest (or dataset index) at murl, resolved against
 * it: a store's URL (http, https, s3, gs) stays as it is; "/path" is on the
 * manifest's host (http) or bucket (s3://, gs://); anything else is relative
 * to the manifest's "directory". Never a local file: a remote manifest names
 * objects on a store only, so file:// and every other scheme are refused
 * (where names the manifest, redacted). *out is malloc'd. */
static int rf_remote_entry_url(const char *murl, const char *entry, const char *where, char **out,
                               rf_error *err)
{
	*out = NULL;
	if (strstr(entry, "://")) {
		rf_url_scheme sc = rf_url_scheme_of(entry);
		if (sc != RF_URL_HTTP && sc != RF_URL_HTTPS && sc != RF_URL_S3 && sc != RF_URL_GS) {
			char shown[RF_URL_BYTES_MAX];
			rf_url_redact(entry, shown, sizeof(shown));
			return rf_fail(
			    err, -EPERM,
			    "%s: entry '%s' is not on a store (a remote manifest names "
			    "only http(s)://, s3:// or gs:// objects, never local files)",
			    where, shown);
		}
		*out = strdup(entry);
	} else {
		const char *auth = strstr(murl, "://") + 3;
		const char *root = auth + strcspn(auth, "/?#"); /* end of the authority (bucket) */
		const char *q = murl + rf_url_path_len(murl);
		const char *slash = q;
		while (slash > root && *slash != '/')
			slash--;
		size_t keep = entry[0] == '/' ? (size_t)(root - murl) : (size_t)(slash - murl);
		const char *rest = entry[0] == '/' ? entry + 1 : entry;
		if ((*out = malloc(keep + 1 + strlen(rest) + 1)))
			sprintf(*out, "%.*s/%s", (int)keep, murl, rest);
	}
	return *out ? 0 : rf_fail(err, -ENOMEM, "out of memory for the shard list");
}

/* A manifest at a URL: fetched whole (at most 64 MiB), parsed like a local
 * one, its entries resolved against the URL. */
static int rf_expand_remote_manifest(rf_shard_list *l, const rf_fetch_options *fo, const char *url,
                                     rf_error *err)
{
	char shown[RF_URL_BYTES_MAX];
	rf_url_redact(url, shown, sizeof(shown));
	char *buf = NULL;
	size_t len = 0;
	rf_manifest *m = NULL;
	RF_TRY(rf_remote_get(fo, url, RF_REMOTE_MANIFEST_BYTES_MAX, &buf, &len, err));
	rf_manifest_count c = {0};
	rf_manifest_count_feed(&c, buf, len);
	rf_manifest_count_end(&c);
	int rc = rf_list_room_for(l, &c, 0, shown, err); /* its text is held already */
	if (rc == 0)
		rc = rf_manifest_parse(buf, len, NULL, shown, &m, err);
	free(buf);
	if (rc == 0 && m->count == 0)
		rc = rf_fail(err, -ENOENT, "%s: manifest lists no shards", shown);
	for (size_t i = 0; rc == 0 && i < m->count; i++) {
		char *u = NULL, where[RF_URL_BYTES_MAX + 32];
		snprintf(where, sizeof(where), "%s line %llu", shown,
		         (unsigned long long)m->entry[i].line);
		rc = rf_remote_entry_url(url, m->entry[i].url, where, &u, err);
		if (rc == 0)
			rc = rf_list_push(l, u, m->entry[i].bytes, err);
		free(u);
	}
	if (rc == 0)
		rf_expand_bundle(l, m, NULL, url, true, fo);
	rf_manifest_free(m);
	return rc;
}

/* s3://bucket/name (or gs://) that may be an object, a manifest, or (no
 * such object) a prefix, as `aws s3 ls` reads it: a HEAD and a peek at its
 * first bytes decide. */
static int rf_expand_bucket_name(rf_shard_list *l, const rf_config *cfg, const rf_fetch_options *fo,
                                 const char *url, rf_error *err)
{
	char head[RF_MANIFEST_PEEK_BYTES];
	size_t n = 0;
	uint64_t size = 0;
	int rc = rf_remote_peek(fo, url, &size, head, sizeof(head), &n, err);
	if (rc == 0 && rf_manifest_is(head, n))
		return rf_expand_remote_manifest(l, fo, url, err);
	if (rc == 0)
		return rf_list_push(l, url, size, err);
	if (rc != -ENOENT)
		return rc;
	char *prefix = malloc(strlen(url) + 2);
	if (!prefix)
		return rf_fail(err, -ENOMEM, "out of memory");
	sprintf(prefix, "%s/", url);
	rc = rf_expand_s3_prefix(l, cfg, prefix, err);
	free(prefix);
	if (rc == -ENOENT) {
		char shown[RF_URL_BYTES_MAX];
		rf_url_redact(url, shown, sizeof(shown));
		rc = rf_fail(err, -ENOENT, "%s: no such object, and no .rfs objects under %s/",
		             shown, shown);
	}
	return rc;
}

/* A remote name: *.rfm is a manifest, a name a format claims (*.rfs) a
 * shard; an s3:// or gs:// name that is neither is looked at (rf_expand_bucket_name); any other URL
 * is a shard (the fetch layer decides). */
static int rf_expand_remote(rf_shard_list *l, const rf_config *cfg, const char *url, rf_error *err)
{
	rf_fetch_options fo;
	rf_config_fetch_options(cfg, &fo);
	const char *end = url + rf_url_path_len(url);
	char path[RF_URL_BYTES_MAX];
	snprintf(path, sizeof(path), "%.*s", (int)(end - url), url);
	if (rf_ends_with(path, ".rfm"))
		return rf_expand_remote_manifest(l, &fo, url, err);
	const rf_format *ixf = rf_format_for_index(path);
	if (ixf)
		return rf_expand_index(l, ixf, cfg, url, true, err);
	if (rf_is_bucket_url(url) && !rf_format_is_shard_name(path))
		return rf_expand_bucket_name(l, cfg, &fo, url, err);
	return rf_list_push(l, url, UINT64_MAX, err);
}

static int rf_expand_one(rf_shard_list *l, const rf_config *cfg, const char *url, rf_error *err)
{
	if (rf_store_is_prefix(url))
		return rf_expand_s3_prefix(l, cfg, url, err);
	if (strstr(url, "://") && strncmp(url, "file://", 7) != 0)
		return rf_expand_remote(l, cfg, url, err);
	const char *path = !strncmp(url, "file://", 7) ? url + 7 : url;
	char *alias = rf_format_local_name(path); /* PREFIX.bin -> PREFIX.idx */
	if (alias) {
		int rc = rf_list_push(l, alias, UINT64_MAX, err);
		free(alias);
		return rc;
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return rf_fail(err, -errno, "%s: cannot open: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return rf_expand_dir(l, cfg, path, err);
	if (!S_ISREG(st.st_mode))
		return rf_fail(err, -EINVAL, "%s: not a file, directory or manifest (it is %s)",
		               path, rf_file_kind(st.st_mode));
	return rf_expand_file(l, cfg, path, err);
}

int rf_expand_sources(const rf_config *cfg, rf_shard **out, uint32_t *count, uint32_t *first,
                      rf_error *err)
{
	rf_shard_list l = {.budget_bytes = rf_cfg(cfg, RF_CFG_budget)};
	int rc = 0;
	if (cfg->nurls == 0)
		rc = rf_fail(err, -EINVAL, "no shards given (add a file, directory or manifest)");
	uint32_t src = 0;
	for (size_t i = 0; rc == 0 && i < cfg->nurls; i++) {
		for (; src < cfg->nsources && cfg->src_url[src] == i; src++)
			if (first)
				first[src] = l.n;
		uint32_t before = l.n;
		rc = rf_expand_one(&l, cfg, cfg->urls[i], err);
		if (rc < 0 && cfg->nsources > 0 && err) {
			char inner[sizeof(err->msg)];
			snprintf(inner, sizeof(inner), "%s", err->msg);
			rf_fail(err, rc, "mixture source %u: %s", src, inner);
		}
		if (rc == 0 && cfg->nsources > 0 && l.n == before)
			rc = rf_fail(err, -EINVAL, "mixture source %u: %s names no shards", src,
			             cfg->urls[i]);
	}
	if (first && cfg->nsources > 0)
		first[cfg->nsources] = l.n;
	if (rc < 0) {
		rf_shards_free(l.v, l.n);
		return rc;
	}
	*out = l.v;
	*count = l.n;
	return 0;
}

int rf_expand_urls(const rf_config *cfg, rf_shard **out, uint32_t *count, rf_error *err)
{
	return rf_expand_sources(cfg, out, count, NULL, err);
}

/* ------------------------------------------------- the mixture file */

static int rf_mixture_read_local(const char *path, char **buf, size_t *len, rf_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return rf_fail(err, -errno, "mixture file %s: cannot open: %s", path,
		               strerror(errno));
	char *b = malloc(RF_MIX_FILE_MAX + 1);
	size_t n = b ? fread(b, 1, RF_MIX_FILE_MAX + 1, f) : 0;
	int bad = ferror(f);
	fclose(f);
	if (!b)
		return rf_fail(err, -ENOMEM, "mixture file %s: out of memory", path);
	if (bad || n > RF_MIX_FILE_MAX) {
		free(b);
		return bad ? rf_fail(err, -EIO, "mixture file %s: read error", path)
		           : rf_fail(err, -E2BIG, "mixture file %s is larger than %u bytes", path,
		                     RF_MIX_FILE_MAX);
	}
	*buf = b;
	*len = n;
	return 0;
}

int rf_mixture_load(rf_config *cfg, rf_error *err)
{
	const char *path = rf_cfg_str(cfg, RF_CFG_mixture);
	if (!path)
		return 0;
	if (cfg->nurls > 0 || cfg->nsources > 0)
		return rf_fail(
		    err, -EINVAL,
		    "mixture file %s: give either a mixture file or shard URLs, not both", path);
	bool remote = strstr(path, "://") && strncmp(path, "file://", 7) != 0;
	const char *local = !strncmp(path, "file://", 7) ? path + 7 : path;
	char shown[RF_URL_BYTES_MAX], base[RF_URL_BYTES_MAX];
	rf_url_redact(path, shown, sizeof(shown));
	char *buf = NULL;
	size_t len = 0;
	if (remote) {
		rf_fetch_options fo;
		rf_config_fetch_options(cfg, &fo);
		RF_TRY(rf_remote_get(&fo, path, RF_MIX_FILE_MAX, &buf, &len, err));
		size_t end = rf_url_path_len(path);
		while (end > 0 && path[end - 1] != '/')
			end--;
		snprintf(base, sizeof(base), "%.*s", (int)end, path);
	} else {
		RF_TRY(rf_mixture_read_local(local, &buf, &len, err));
		const char *slash = strrchr(local, '/');
		snprintf(base, sizeof(base), "%.*s", slash ? (int)(slash - local + 1) : 0, local);
	}
	rf_mix_file *mf = NULL;
	int rc = rf_mix_file_parse(buf, len, base[0] ? base : NULL, shown, &mf, err);
	free(buf);
	for (uint32_t i = 0; rc == 0 && i < mf->count; i++) {
		const rf_mix_entry *me = &mf->src[i];
		if (remote && !strstr(me->source, "://"))
			rc =
			    rf_fail(err, -EINVAL,
			            "mixture file %s line %u: a mixture file on a store names only "
			            "remote sources",
			            shown, me->line);
		if (rc == 0)
			rc = rf_config_push_source(cfg, me->weight, err);
		if (rc == 0)
			rc = rf_config_add_url(cfg, me->source, err);
		for (uint32_t j = 0; rc == 0 && j < me->noptions; j++)
			rc = rf_config_source_option(cfg, me->option[j].key, me->option[j].value,
			                             err);
		if (rc == 0 && me->noptions > 0) { /* the formats check the values now */
			rf_fmt_optset *set = NULL;
			rc = rf_config_source_format_options(cfg, i, &set, err);
			rf_fmt_optset_free(set);
		}
		if (rc < 0 && err && !strstr(err->msg, "mixture file")) {
			char inner[sizeof(err->msg)];
			snprintf(inner, sizeof(inner), "%s", err->msg);
			rf_fail(err, rc, "mixture file %s line %u: %s", shown, me->line, inner);
		}
	}
	rf_mix_file_free(mf);
	return rc;
}

void rf_shards_free(rf_shard *shards, uint32_t count)
{
	if (!shards)
		return;
	for (uint32_t i = 0; i < count; i++) {
		if (shards[i].name != shards[i].url)
			free(shards[i].name);
		free(shards[i].url);
		free(shards[i].validator);
		if (shards[i].owns_manifest)
			free((char *)shards[i].manifest);
		free(shards[i].tail);
		free(shards[i].err_msg);
		if (shards[i].index)
			shards[i].fmt->close(shards[i].index, shards[i].fmt_priv);
	}
	free(shards);
}
