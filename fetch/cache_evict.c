/* cache_evict.c - the data cache's host-wide bound (cache_bytes): least
 * recently used object versions go, never one a loader has open.
 *
 * In use: every loader that opens an object version takes a shared OFD
 * lock on one byte of its .rec far past its end (RF_CACHE_INUSE_BYTE) and
 * keeps it while the object is open; its use time is the .rec's mtime,
 * set at each open (and by each appended entry). The evictor takes that
 * byte exclusively (never waiting) before it removes the files: a version
 * some loader of the host has open (any process, this one included) is
 * skipped, and a loader that opens one while it goes sees its files
 * unlinked (or the lock taken) and reads it through, uncached. The kernel
 * drops a dead loader's lock. Without OFD locks nothing is evicted. */
#include "cache.h"
#include "cachedir.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RF_CACHE_EVICT_SCAN_MAX                                                                    \
	65536u /* object versions one pass looks at (40 bytes                                      \
	        * each, transient in the writer thread) */

bool rf_cache_in_use_mark(int rec_fd, int dat_fd)
{
	struct flock fl = {
	    .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = RF_CACHE_INUSE_BYTE, .l_len = 1};
	if (fcntl(rec_fd, F_OFD_SETLK, &fl) < 0 && errno != EINVAL)
		return false; /* an evictor holds it: it is going */
	struct stat a, b;
	if (fstat(rec_fd, &a) < 0 || fstat(dat_fd, &b) < 0 || a.st_nlink == 0 || b.st_nlink == 0)
		return false;         /* evicted between the open and the lock */
	(void)futimens(rec_fd, NULL); /* used now */
	return true;
}

typedef struct cand {
	char dir[17], ver[17];
	uint64_t bytes;
	struct timespec used;
} cand;

static int cand_older(const void *pa, const void *pb)
{
	const cand *a = pa, *b = pb;
	if (a->used.tv_sec != b->used.tv_sec)
		return a->used.tv_sec < b->used.tv_sec ? -1 : 1;
	if (a->used.tv_nsec != b->used.tv_nsec)
		return a->used.tv_nsec < b->used.tv_nsec ? -1 : 1;
	return 0;
}

static uint64_t disk_bytes(int sub, const char *ver, const char *ext, struct timespec *mtime)
{
	char name[RF_CACHE_NAME_BYTES];
	snprintf(name, sizeof(name), "%.16s%s", ver, ext);
	struct stat st;
	if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return UINT64_MAX;
	if (mtime)
		*mtime = st.st_mtim;
	return (uint64_t)st.st_blocks * 512;
}

typedef struct cands {
	cand *v;
	uint32_t n, cap;
} cands;

static bool cands_push(cands *cs, const cand *c)
{
	if (cs->n == cs->cap) {
		uint32_t cap = cs->cap ? cs->cap * 2 : 256;
		if (cap > RF_CACHE_EVICT_SCAN_MAX)
			return false;
		cand *v = realloc(cs->v, cap * sizeof(*v));
		if (!v)
			return false;
		cs->v = v;
		cs->cap = cap;
	}
	cs->v[cs->n++] = *c;
	return true;
}

/* One object directory's versions into cs (a .rec and its .dat, or a .dat
 * left without its .rec); returns the bytes its files take. */
static uint64_t scan_dir(int dirfd, const char *dname, cands *cs)
{
	int sub;
	DIR *d = rf_cachedir_sub(dirfd, dname, &sub);
	if (!d)
		return 0;
	uint64_t total = 0;
	struct dirent *de;
	uint32_t seen = 0;
	while ((de = readdir(d)) && seen++ < 4096) {
		if (!rf_cache_is_file_name(de->d_name))
			continue;
		bool rec = !strcmp(de->d_name + 16, ".rec");
		cand c = {.bytes = 0};
		snprintf(c.dir, sizeof(c.dir), "%.16s", dname);
		snprintf(c.ver, sizeof(c.ver), "%.16s", de->d_name);
		uint64_t r = disk_bytes(sub, c.ver, ".rec", rec ? &c.used : NULL);
		if (!rec && r != UINT64_MAX)
			continue; /* counted with its .rec */
		uint64_t dat = disk_bytes(sub, c.ver, ".dat", rec ? NULL : &c.used);
		c.bytes = (r == UINT64_MAX ? 0 : r) + (dat == UINT64_MAX ? 0 : dat);
		if (!rec && dat == UINT64_MAX)
			continue;
		total += c.bytes;
		if (!cands_push(cs, &c))
			break;
	}
	closedir(d);
	close(sub);
	return total;
}

/* Removes one version unless a loader has it open; true when it went. */
static bool evict_one(int dirfd, const cand *c)
{
	int sub = openat(dirfd, c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return false;
	char rec[RF_CACHE_NAME_BYTES], dat[RF_CACHE_NAME_BYTES];
	snprintf(rec, sizeof(rec), "%.16s.rec", c->ver);
	snprintf(dat, sizeof(dat), "%.16s.dat", c->ver);
	bool gone = false;
	int fd = openat(sub, rec, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		struct flock fl = {.l_type = F_WRLCK,
		                   .l_whence = SEEK_SET,
		                   .l_start = RF_CACHE_INUSE_BYTE,
		                   .l_len = 1};
		if (fcntl(fd, F_OFD_SETLK, &fl) == 0) { /* nobody has it open */
			(void)unlinkat(sub, dat, 0);
			gone = unlinkat(sub, rec, 0) == 0;
		}
		close(fd);
	} else if (errno == ENOENT) { /* a .dat nothing refers to */
		gone = unlinkat(sub, dat, 0) == 0;
	}
	close(sub);
	(void)unlinkat(dirfd, c->dir, AT_REMOVEDIR); /* only when empty */
	return gone;
}

void rf_cache_evict(int dirfd, uint64_t max_bytes, uint64_t room, rf_cache_evicted *out)
{
	memset(out, 0, sizeof(*out));
	cands cs = {.v = NULL};
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		out->failed = true;
		return;
	}
	uint32_t seen = 0;
	struct dirent *de;
	while ((de = readdir(d)) && seen++ < 1000000 && cs.n < RF_CACHE_EVICT_SCAN_MAX)
		if (rf_cache_is_dir_name(de->d_name))
			out->total += scan_dir(dirfd, de->d_name, &cs);
	closedir(d);
	cand *v = cs.v;
	uint32_t n = cs.n;
	room = RF_MIN(room, max_bytes);
	uint64_t high = RF_MIN(max_bytes - max_bytes / 16, max_bytes - room);
	uint64_t low = RF_MIN(max_bytes - max_bytes / 8, max_bytes - room);
	if (out->total > high) {
		qsort(v, n, sizeof(*v), cand_older);
		for (uint32_t i = 0; i < n && out->total > low; i++) {
			if (!evict_one(dirfd, &v[i])) {
				out->in_use++;
				continue;
			}
			out->objects++;
			out->bytes += v[i].bytes;
			out->total -= RF_MIN(out->total, v[i].bytes);
		}
	}
	free(v);
}
