/* cachedir.c - one set of directory rules for ringfeed's on-disk caches
 * (cachedir.h): defaults, creation with mode 0700, and the owner, mode,
 * symlink and access checks. */
#include "cachedir.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RF_CACHEDIR_PATH_BYTES 4096u

int rf_cachedir_default(const char *sub, const char *env_suffix, char *buf, size_t cap)
{
	const char *v = getenv("RINGFEED_CACHE_DIR");
	int n = -1;
	if (v && *v)
		n = snprintf(buf, cap, "%s%s", v, env_suffix);
	else if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/')
		n = snprintf(buf, cap, "%s/ringfeed/%s", v, sub);
	else if ((v = getenv("HOME")) && *v)
		n = snprintf(buf, cap, "%s/.cache/ringfeed/%s", v, sub);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* mkdir -p with mode 0700 for what it creates (existing parents untouched). */
static int mkdir_parents(char *path, const char *words, rf_error *why)
{
	for (char *p = path + 1;; p++) {
		bool end = *p == '\0';
		if (*p != '/' && !end)
			continue;
		*p = '\0';
		int rc = mkdir(path, 0700) < 0 && errno != EEXIST ? -errno : 0;
		if (!end)
			*p = '/';
		if (rc < 0)
			return rf_fail(why, rc, "%s: cannot create %s: %s", words, path,
			               strerror(-rc));
		if (end)
			return 0;
	}
}

static int dir_check(int fd, const char *dir, const char *words, bool need_write, rf_error *why)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return rf_fail(why, -errno, "%s: %s: %s", words, dir, strerror(errno));
	if (st.st_uid != geteuid())
		return rf_fail(why, -EPERM, "%s: %s is owned by uid %u, not this user (%u)", words,
		               dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return rf_fail(why, -EPERM,
		               "%s: %s is writable by others (mode %03o; chmod 700 it)", words, dir,
		               (unsigned)(st.st_mode & 0777));
	int need = need_write ? W_OK | X_OK : R_OK | X_OK;
	if (faccessat(fd, ".", need, AT_EACCESS) < 0)
		return rf_fail(why, -errno, "%s: %s is not %s by this user", words, dir,
		               need_write ? "writable" : "readable");
	return 0;
}

int rf_cachedir_open(const char *dir, const char *words, bool create, bool need_write,
                     rf_error *why)
{
	char path[RF_CACHEDIR_PATH_BYTES];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return rf_fail(why, -ENAMETOOLONG, "%s: directory name too long", words);
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	if (path[0] != '/')
		return rf_fail(why, -EINVAL, "%s: %s is not an absolute path", words, path);
	if (create)
		RF_TRY(mkdir_parents(path, words, why));
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return rf_fail(
		    why, -errno, "%s: %s: %s%s", words, path, strerror(errno),
		    errno == ELOOP || errno == ENOTDIR ? " (a symlink or not a directory)" : "");
	int rc = dir_check(fd, path, words, need_write, why);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

DIR *rf_cachedir_sub(int dirfd, const char *name, int *fd)
{
	int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int sub2 = sub >= 0 ? dup(sub) : -1;
	DIR *d = sub2 >= 0 ? fdopendir(sub2) : NULL;
	if (!d) {
		if (sub2 >= 0)
			close(sub2);
		if (sub >= 0)
			close(sub);
		sub = -1;
	}
	*fd = sub;
	return d;
}
