/* expand.c - turns the configured URLs into the shard list: local files,
 * directories (their *.rfs files, sorted), manifests (their entries, with
 * sizes the file source checks) and remote URLs (kept as they are). */
#include "engine.h"
#include "manifest.h"
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
} rf_shard_list;

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
	s->url = strdup(url);
	s->name = rf_url_redact_dup(url);
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
	return 0;
}

static int rf_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int rf_expand_dir(rf_shard_list *l, const char *dir, rf_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return rf_fail(err, -errno, "%s: %s", dir, strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 5 || strcmp(de->d_name + len - 4, ".rfs") != 0)
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
		rc = rf_fail(err, -ENOENT, "%s: directory holds no .rfs shards", dir);
	if (n > 1)
		qsort(names, n, sizeof(*names), rf_name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0) {
			char *p = rf_manifest_join(dir, names[i]);
			rc = p ? rf_list_push(l, p, UINT64_MAX, err) : rf_fail(err, -ENOMEM, "oom");
			free(p);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

static int rf_expand_manifest(rf_shard_list *l, const char *path, rf_error *err)
{
	rf_manifest *m = NULL;
	RF_TRY(rf_manifest_read_file(path, &m, err));
	int rc = 0;
	if (m->count == 0)
		rc = rf_fail(err, -ENOENT, "%s: manifest lists no shards", path);
	for (size_t i = 0; rc == 0 && i < m->count; i++)
		rc = rf_list_push(l, m->entry[i].url, m->entry[i].bytes, err);
	rf_manifest_free(m);
	return rc;
}

/* A local file: a manifest when it starts with the magic line, else a shard. */
static int rf_expand_file(rf_shard_list *l, const char *path, rf_error *err)
{
	char head[64] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rf_fail(err, -errno, "%s: %s", path, strerror(errno));
	ssize_t n = read(fd, head, sizeof(head));
	close(fd);
	if (n > 0 && rf_manifest_is(head, (size_t)n))
		return rf_expand_manifest(l, path, err);
	return rf_list_push(l, path, UINT64_MAX, err);
}

/* s3://bucket/prefix/: its .rfs objects in key order, sizes from the listing. */
static int rf_expand_s3_prefix(rf_shard_list *l, const rf_config *cfg, const char *url,
                               rf_error *err)
{
	rf_fetch_options fo;
	rf_config_fetch_options(cfg, &fo);
	rf_url_list objs = {0};
	int rc = rf_remote_list(&fo, url, &objs, err);
	for (size_t i = 0; rc == 0 && i < objs.n; i++)
		rc = rf_list_push(l, objs.v[i].url, objs.v[i].size_hint, err);
	rf_url_list_free(&objs);
	return rc;
}

static int rf_expand_one(rf_shard_list *l, const rf_config *cfg, const char *url, rf_error *err)
{
	if (rf_url_is_s3_prefix(url))
		return rf_expand_s3_prefix(l, cfg, url, err);
	if (strstr(url, "://") && strncmp(url, "file://", 7) != 0)
		return rf_list_push(l, url, UINT64_MAX, err); /* remote: the fetch layer decides */
	const char *path = !strncmp(url, "file://", 7) ? url + 7 : url;
	struct stat st;
	if (stat(path, &st) < 0)
		return rf_fail(err, -errno, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return rf_expand_dir(l, path, err);
	if (!S_ISREG(st.st_mode))
		return rf_fail(err, -EINVAL, "%s: not a file, directory or manifest", path);
	return rf_expand_file(l, path, err);
}

int rf_expand_urls(const rf_config *cfg, rf_shard **out, uint32_t *count, rf_error *err)
{
	rf_shard_list l = {0};
	int rc = 0;
	if (cfg->nurls == 0)
		rc = rf_fail(err, -EINVAL, "no shards given (add a file, directory or manifest)");
	for (size_t i = 0; rc == 0 && i < cfg->nurls; i++)
		rc = rf_expand_one(&l, cfg, cfg->urls[i], err);
	if (rc < 0) {
		rf_shards_free(l.v, l.n);
		return rc;
	}
	*out = l.v;
	*count = l.n;
	return 0;
}

void rf_shards_free(rf_shard *shards, uint32_t count)
{
	if (!shards)
		return;
	for (uint32_t i = 0; i < count; i++) {
		if (shards[i].name != shards[i].url)
			free(shards[i].name);
		free(shards[i].url);
		free(shards[i].err_msg);
		free(shards[i].index_buf);
		free(shards[i].tail);
		rf_index_free(shards[i].index);
	}
	free(shards);
}
