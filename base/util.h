/* util.h - small helpers every layer uses: error messages, little-endian
 * loads/stores, checked arithmetic, monotonic time. Internal. */
#ifndef RF_UTIL_H
#define RF_UTIL_H

#include "ringfeed.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define RF_API          __attribute__((visibility("default")))
#define RF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define RF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define RF_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define RF_MAX(a, b)    ((a) > (b) ? (a) : (b))

/* Sets err (if non-NULL) to code + formatted message; returns code so callers
 * can write `return rf_fail(err, -EINVAL, "...")`. */
int rf_fail(rf_error *err, int code, const char *fmt, ...) RF_PRINTF(3, 4);
int rf_vfail(rf_error *err, int code, const char *fmt, va_list ap) RF_PRINTF(3, 0);
void rf_error_clear(rf_error *err);

/* Propagate a negative result without hiding the check (zstd style). */
#define RF_TRY(expr)                                                                               \
	do {                                                                                       \
		int rf_try_rc_ = (expr);                                                           \
		if (rf_try_rc_ < 0)                                                                \
			return rf_try_rc_;                                                         \
	} while (0)

static inline uint32_t rf_load_le32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static inline uint64_t rf_load_le64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)rf_load_le32(b) | (uint64_t)rf_load_le32(b + 4) << 32;
}
static inline void rf_store_le32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}
static inline void rf_store_le64(void *p, uint64_t v)
{
	rf_store_le32(p, (uint32_t)v);
	rf_store_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/* a + b into *out; false on overflow. */
static inline bool rf_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}
static inline bool rf_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

/* A whole NUL-terminated string of decimal digits (at least one, no sign,
 * no space) that fits 64 bits, into *out; false otherwise. */
static inline bool rf_dec_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/* 64-bit FNV-1a over n bytes, from h (RF_FNV_OFFSET to start): digests and
 * file names, never anything an adversary must not collide. */
#define RF_FNV_OFFSET 0xcbf29ce484222325ull
static inline uint64_t rf_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

uint64_t rf_now_ns(void); /* CLOCK_MONOTONIC */
/* RF_DEBUG is set in the environment (read once): traces name the states
 * the machines move through, on stderr. */
bool rf_debug_on(void);

/* The length of a URL's or a shard name's path: up to its query or
 * fragment. The one query stripper (format claims, leaf names, the cache
 * keys of rf_url_clean): a presigned query or a token never counts as part
 * of a name. */
static inline size_t rf_url_path_len(const char *s)
{
	return strcspn(s, "?#");
}

/* The one way a secret string ends: its bytes wiped (explicit_bzero, which
 * the compiler cannot drop), then freed. NULL is fine. */
void rf_secret_free(char *s);

/* Opens a local file for reading without blocking on what is not a regular
 * file (a FIFO, a device): O_NONBLOCK until fstat proved it regular. Returns
 * the fd (O_CLOEXEC, blocking again) with *size set, or a negative errno
 * with err naming "WHAT PATH" and why (-EINVAL: not a regular file, with its
 * type). what may be "" (the message then starts with the path). */
int rf_open_regular(const char *path, const char *what, uint64_t *size, rf_error *err);
/* Reads exactly [off, off + len) of fd into buf (EINTR and short reads
 * retried): 0, -errno, or RF_E_CORRUPT when the file ends first ("shard
 * NAME: read at byte N: ..."). */
int rf_pread_full(int fd, void *buf, uint64_t len, uint64_t off, const char *name, rf_error *err);
/* "a FIFO", "a directory", ... for a st_mode; "a regular file" for one. */
const char *rf_file_kind(unsigned mode);

/* Formats bytes as "12.3 MiB" into buf. */
const char *rf_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

#endif
