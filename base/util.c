/* util.c - error messages, size parsing and time: the few helpers shared by
 * every layer. */
#include "util.h"
#include "tsa.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int rf_vfail(rf_error *err, int code, const char *fmt, va_list ap)
{
	if (err) {
		err->code = code;
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	}
	return code;
}

int rf_fail(rf_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rf_vfail(err, code, fmt, ap);
	va_end(ap);
	return code;
}

void rf_error_clear(rf_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

uint64_t rf_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *rf_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	default:
		return "not a file";
	}
}

int rf_open_regular(const char *path, const char *what, uint64_t *size, rf_error *err)
{
	const char *sp = what && *what ? " " : "";
	what = what ? what : "";
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return rf_fail(err, -errno, "%s%s%s: cannot open: %s", what, sp, path,
		               strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0)
		rc = rf_fail(err, -errno, "%s%s%s: stat: %s", what, sp, path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = rf_fail(err, -EINVAL, "%s%s%s: not a regular file (it is %s)", what, sp, path,
		             rf_file_kind(st.st_mode));
	else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		rc = rf_fail(err, -errno, "%s%s%s: fcntl: %s", what, sp, path, strerror(errno));
	if (rc < 0) {
		close(fd);
		return rc;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

const char *rf_fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < RF_ARRAY_LEN(unit)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, cap, "%.1f %s", v, unit[u]);
	return buf;
}

RF_API int rf_parse_bytes(const char *text, uint64_t *out, rf_error *err)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {
	    {"", 1.0},
	    {"B", 1.0},
	    {"K", 1024.0},
	    {"KiB", 1024.0},
	    {"KB", 1e3},
	    {"M", 1048576.0},
	    {"MiB", 1048576.0},
	    {"MB", 1e6},
	    {"G", 1073741824.0},
	    {"GiB", 1073741824.0},
	    {"GB", 1e9},
	    {"T", 1099511627776.0},
	    {"TiB", 1099511627776.0},
	    {"TB", 1e12},
	};
	if (!text || !*text)
		return rf_fail(err, -EINVAL, "empty size (expected e.g. 64MiB)");
	char *end = NULL;
	double v = strtod(text, &end);
	if (end == text || !isfinite(v) || v < 0)
		return rf_fail(err, -EINVAL, "bad size '%s' (expected e.g. 4096, 64KiB, 1.5GiB)",
		               text);
	while (*end == ' ')
		end++;
	for (size_t i = 0; i < RF_ARRAY_LEN(units); i++) {
		if (strcasecmp(end, units[i].suffix) != 0)
			continue;
		double bytes = v * units[i].mult;
		if (bytes >= 18446744073709551615.0)
			return rf_fail(err, -ERANGE, "size '%s' is too large", text);
		if (bytes != floor(bytes))
			return rf_fail(err, -EINVAL, "size '%s' is not a whole number of bytes",
			               text);
		*out = (uint64_t)bytes;
		return 0;
	}
	return rf_fail(err, -EINVAL, "bad size unit in '%s' (use B, KiB, MiB, GiB, KB, MB, GB)",
	               text);
}

int rf_pread_full(int fd, void *buf, uint64_t len, uint64_t off, const char *name, rf_error *err)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rf_fail(err, -errno, "shard %s: read at byte %llu: %s", name,
			               (unsigned long long)off, strerror(errno));
		if (n == 0)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: read at byte %llu: file ended early (changed while read?)",
			    name, (unsigned long long)off);
		p += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

bool rf_debug_on(void)
{
	static atomic_int on = -1; /* -1: not read yet */
	int v = atomic_load_explicit(&on, memory_order_relaxed);
	if (v < 0) {
		v = getenv("RF_DEBUG") != NULL;
		atomic_store_explicit(&on, v, memory_order_relaxed);
	}
	return v != 0;
}

#ifndef NDEBUG
uint32_t *rf_lock_levels_held(void)
{
	static _Thread_local uint32_t held; /* tsa.h: the lock levels this thread holds */
	return &held;
}
#endif

void rf_secret_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}
