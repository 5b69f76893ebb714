/* cache_admin.c - `ringfeed cache du|ls|verify|clear` over a data cache
 * directory (cache.h): the records read back as untrusted bytes, every
 * range's bytes checked on verify, and only the cache's own names removed
 * on clear. Run while loaders use the directory, a verify may see a range
 * being written (its entry comes after its bytes, so never a false "bad")
 * and a clear leaves loaders writing into files it unlinked. */
#include "cache.h"
#include "cachedir.h"
#include "crc32c.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct walk {
	int action;
	int dat_fd;
	uint8_t *buf; /* RF_CACHE_RANGE_BYTES_MAX, verify only */
	uint64_t ranges, bytes, bad;
	rf_cache_entry *ents; /* one record's entries, in file order */
	size_t n, cap;
	bool oom;
} walk;

static void collect(void *ctx, const rf_cache_entry *e)
{
	walk *w = ctx;
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		rf_cache_entry *v = realloc(w->ents, cap * sizeof(*v));
		if (!v) {
			w->oom = true;
			return;
		}
		w->ents = v;
		w->cap = cap;
	}
	w->ents[w->n++] = *e;
}

/* An entry's offset and its place in the file: sorted by both. */
typedef struct ord {
	uint64_t offset;
	size_t at;
} ord;

static int ord_cmp(const void *pa, const void *pb)
{
	const ord *a = pa, *b = pb;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

static void on_entry(void *ctx, const rf_cache_entry *e);

/* The entries a loader uses (cache.c's index): per offset, a later entry
 * replaces an earlier one unless the earlier is finer (shorter); a
 * superseded entry's bytes were overwritten and are not checked. */
static void effective(walk *w)
{
	ord *o = w->n ? malloc(w->n * sizeof(*o)) : NULL;
	if (!o) {
		for (size_t i = 0; i < w->n; i++) /* out of memory: every entry */
			on_entry(w, &w->ents[i]);
		return;
	}
	for (size_t i = 0; i < w->n; i++)
		o[i] = (ord){.offset = w->ents[i].offset, .at = i};
	qsort(o, w->n, sizeof(*o), ord_cmp);
	for (size_t i = 0; i < w->n;) {
		size_t j = i, best = o[i].at;
		while (j < w->n && o[j].offset == o[i].offset) {
			const rf_cache_entry *b = &w->ents[best], *e = &w->ents[o[j].at];
			if (!(b->len < e->len))
				best = o[j].at;
			j++;
		}
		on_entry(w, &w->ents[best]);
		i = j;
	}
	free(o);
}

static void on_entry(void *ctx, const rf_cache_entry *e)
{
	walk *w = ctx;
	w->ranges++;
	w->bytes += e->len;
	if (w->action != RF_DATA_CACHE_VERIFY)
		return;
	ssize_t got = w->dat_fd >= 0 ? pread(w->dat_fd, w->buf, e->len, (off_t)e->offset) : -1;
	if (got != (ssize_t)e->len || rf_crc32c(0, w->buf, e->len) != e->crc)
		w->bad++;
}

/* The header's URL and validator (CRC checked) into url/val; its length or -EBADMSG. */
static int header_read(const uint8_t *p, size_t n, char *url, char *val, uint64_t *size)
{
	if (n < RF_CACHE_REC_HEADER || memcmp(p, RF_CACHE_REC_MAGIC, 8) != 0)
		return -EBADMSG;
	uint32_t ul = rf_load_le32(p + 12), vl = rf_load_le32(p + 16);
	if (ul == 0 || ul > RF_CACHE_URL_BYTES_MAX || vl == 0 || vl >= RF_SOURCE_VALIDATOR_BYTES ||
	    n - RF_CACHE_REC_HEADER < (size_t)ul + vl)
		return -EBADMSG;
	memcpy(url, p + RF_CACHE_REC_HEADER, ul);
	url[ul] = '\0';
	memcpy(val, p + RF_CACHE_REC_HEADER + ul, vl);
	val[vl] = '\0';
	*size = rf_load_le64(p + 20);
	return rf_cache_rec_header_check(p, n, url, val, *size);
}

static void one_record(int sub, const char *name, walk *w, rf_data_cache_each_fn each, void *ctx,
                       rf_data_cache_info *out)
{
	int fd = openat(sub, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > RF_CACHE_REC_BYTES_MAX) {
		if (fd >= 0)
			close(fd);
		out->foreign++;
		return;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *p = malloc(n ? n : 1);
	char url[RF_CACHE_URL_BYTES_MAX + 1], val[RF_SOURCE_VALIDATOR_BYTES];
	uint64_t size = 0;
	int h = p && pread(fd, p, n, 0) == (ssize_t)n ? header_read(p, n, url, val, &size) : -EIO;
	close(fd);
	if (h < 0) {
		free(p);
		out->foreign++;
		return;
	}
	char dat[RF_CACHE_NAME_BYTES];
	snprintf(dat, sizeof(dat), "%.16s.dat", name);
	w->dat_fd = openat(sub, dat, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	w->ranges = w->bytes = w->bad = 0;
	uint64_t skipped = 0;
	w->n = 0;
	w->oom = false;
	rf_cache_rec_entries(p + h, n - (size_t)h, size, collect, w, &skipped);
	effective(w);
	if (w->dat_fd >= 0)
		close(w->dat_fd);
	free(p);
	out->objects++;
	out->ranges += w->ranges;
	out->recorded_bytes += w->bytes;
	out->bad_ranges += w->bad;
	if (each)
		each(ctx, url, val, size, w->ranges, w->bytes, w->bad);
}

/* One object's directory: its records, or (clear) its files and itself. */
static void one_dir(int dirfd, const char *dname, walk *w, rf_data_cache_each_fn each, void *ctx,
                    rf_data_cache_info *out)
{
	int sub;
	DIR *d = rf_cachedir_sub(dirfd, dname, &sub);
	if (!d)
		return;
	struct dirent *de;
	uint32_t seen = 0;
	while ((de = readdir(d)) && seen++ < 65536) {
		if (!rf_cache_is_file_name(de->d_name))
			continue;
		struct stat st;
		if (fstatat(sub, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			out->disk_bytes += (uint64_t)st.st_blocks * 512;
		if (w->action == RF_DATA_CACHE_CLEAR) {
			if (unlinkat(sub, de->d_name, 0) == 0)
				out->removed++;
		} else if (!strcmp(de->d_name + 16, ".rec") && w->action != RF_DATA_CACHE_DU) {
			one_record(sub, de->d_name, w, each, ctx, out);
		} else if (!strcmp(de->d_name + 16, ".rec")) {
			one_record(sub, de->d_name, w, NULL, NULL, out);
		}
	}
	closedir(d);
	close(sub);
	if (w->action == RF_DATA_CACHE_CLEAR)
		(void)unlinkat(dirfd, dname, AT_REMOVEDIR); /* only when empty */
}

int rf_data_cache_admin(const char *dir, int action, rf_data_cache_each_fn each, void *ctx,
                        rf_data_cache_info *out, rf_error *err)
{
	memset(out, 0, sizeof(*out));
	if (action < RF_DATA_CACHE_DU || action > RF_DATA_CACHE_CLEAR)
		return rf_fail(err, -EINVAL, "data cache: unknown action %d", action);
	int dirfd = rf_cache_dir_open(
	    dir, action == RF_DATA_CACHE_CLEAR ? RF_CACHE_READWRITE : RF_CACHE_READ, err);
	if (dirfd < 0)
		return dirfd;
	walk w = {.action = action, .dat_fd = -1};
	if (action == RF_DATA_CACHE_VERIFY && !(w.buf = malloc(RF_CACHE_RANGE_BYTES_MAX))) {
		close(dirfd);
		return rf_fail(err, -ENOMEM, "data cache: out of memory to verify");
	}
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int rc = -errno;
		if (fd >= 0)
			close(fd);
		free(w.buf);
		free(w.ents);
		close(dirfd);
		return rf_fail(err, rc, "data cache: cannot list the directory: %s", strerror(-rc));
	}
	struct dirent *de;
	uint32_t seen = 0;
	while ((de = readdir(d)) && seen++ < 1000000)
		if (rf_cache_is_dir_name(de->d_name))
			one_dir(dirfd, de->d_name, &w, each, ctx, out);
	closedir(d);
	close(dirfd);
	free(w.buf);
	free(w.ents);
	return 0;
}
