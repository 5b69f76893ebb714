/* cache_rec.c - the data cache's on-disk pieces (see cache.h): the record's
 * header and entries (written here, parsed back as untrusted bytes), the
 * file names, and the directory checks (the index cache's rules: the
 * user's own, mode 0700, nobody else may write, no symlinks). base/ and
 * libc only. */
#include "cache.h"
#include "cachedir.h"
#include "crc32c.h"
#include "url.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rf_cache_mode_parse(const char *s, uint32_t *mode)
{
	static const char *const names[] = {"off", "read", "readwrite", "auto"};
	for (uint32_t i = 0; i < RF_ARRAY_LEN(names); i++) {
		if (s && !strcmp(s, names[i])) {
			*mode = i;
			return 0;
		}
	}
	return -EINVAL;
}

int rf_cache_default_dir(char *buf, size_t cap)
{
	return rf_cachedir_default("data", "/data", buf, cap);
}

int rf_cache_clean_url(const char *url, char *out, size_t cap)
{
	return rf_url_clean(url, out, cap);
}

/* ---------------------------------------------------------------- record */

int rf_cache_rec_header_make(const char *url, const char *validator, uint64_t size, uint8_t *out,
                             size_t cap)
{
	size_t ul = strlen(url), vl = strlen(validator);
	if (ul == 0 || ul > RF_CACHE_URL_BYTES_MAX || vl == 0 || vl > RF_SOURCE_VALIDATOR_BYTES ||
	    RF_CACHE_REC_HEADER + ul + vl > cap)
		return -EINVAL;
	memcpy(out, RF_CACHE_REC_MAGIC, 8);
	rf_store_le32(out + 8, RF_CACHE_REC_VERSION);
	rf_store_le32(out + 12, (uint32_t)ul);
	rf_store_le32(out + 16, (uint32_t)vl);
	rf_store_le64(out + 20, size);
	memcpy(out + RF_CACHE_REC_HEADER, url, ul);
	memcpy(out + RF_CACHE_REC_HEADER + ul, validator, vl);
	uint32_t crc = rf_crc32c(0, out, 28);
	crc = rf_crc32c(crc, out + RF_CACHE_REC_HEADER, ul + vl);
	rf_store_le32(out + 28, crc);
	return (int)(RF_CACHE_REC_HEADER + ul + vl);
}

int rf_cache_rec_header_check(const uint8_t *p, size_t n, const char *url, const char *validator,
                              uint64_t size)
{
	if (n < RF_CACHE_REC_HEADER || memcmp(p, RF_CACHE_REC_MAGIC, 8) != 0 ||
	    rf_load_le32(p + 8) != RF_CACHE_REC_VERSION)
		return -EBADMSG;
	uint32_t ul = rf_load_le32(p + 12), vl = rf_load_le32(p + 16);
	if (ul == 0 || ul > RF_CACHE_URL_BYTES_MAX || vl == 0 || vl > RF_SOURCE_VALIDATOR_BYTES ||
	    n - RF_CACHE_REC_HEADER < (size_t)ul + vl)
		return -EBADMSG;
	uint32_t crc = rf_crc32c(0, p, 28);
	crc = rf_crc32c(crc, p + RF_CACHE_REC_HEADER, (size_t)ul + vl);
	if (crc != rf_load_le32(p + 28) || rf_load_le64(p + 20) != size || strlen(url) != ul ||
	    strlen(validator) != vl || memcmp(p + RF_CACHE_REC_HEADER, url, ul) != 0 ||
	    memcmp(p + RF_CACHE_REC_HEADER + ul, validator, vl) != 0)
		return -EBADMSG;
	return (int)(RF_CACHE_REC_HEADER + ul + vl);
}

void rf_cache_entry_make(const rf_cache_entry *e, uint8_t out[RF_CACHE_ENTRY_BYTES])
{
	memset(out, 0, RF_CACHE_ENTRY_BYTES);
	rf_store_le32(out, RF_CACHE_ENTRY_MAGIC);
	rf_store_le32(out + 4, e->len);
	rf_store_le64(out + 8, e->offset);
	rf_store_le32(out + 16, e->crc);
	rf_store_le32(out + 28, rf_crc32c(0, out, 28));
}

static bool entry_parse(const uint8_t *p, uint64_t size, rf_cache_entry *e)
{
	if (rf_load_le32(p) != RF_CACHE_ENTRY_MAGIC || rf_load_le32(p + 28) != rf_crc32c(0, p, 28))
		return false;
	for (int i = 20; i < 28; i++)
		if (p[i])
			return false;
	e->len = rf_load_le32(p + 4);
	e->offset = rf_load_le64(p + 8);
	e->crc = rf_load_le32(p + 16);
	uint64_t end;
	return e->len > 0 && e->len <= RF_CACHE_RANGE_BYTES_MAX &&
	       rf_add_u64(e->offset, e->len, &end) && end <= size;
}

size_t rf_cache_rec_entries(const uint8_t *p, size_t n, uint64_t size,
                            void (*fn)(void *ctx, const rf_cache_entry *e), void *ctx,
                            uint64_t *bad)
{
	size_t at = 0;
	while (n - at >= RF_CACHE_ENTRY_BYTES) {
		rf_cache_entry e;
		if (entry_parse(p + at, size, &e)) {
			fn(ctx, &e);
			at += RF_CACHE_ENTRY_BYTES;
		} else { /* a torn append or garbage: look for the next entry */
			at++;
			(*bad)++;
		}
	}
	return at;
}

static void hex16(uint64_t h, char *out, const char *suffix)
{
	snprintf(out, RF_CACHE_NAME_BYTES, "%016llx%s", (unsigned long long)h, suffix);
}

void rf_cache_names(const char *url, const char *validator, char dir[RF_CACHE_NAME_BYTES],
                    char rec[RF_CACHE_NAME_BYTES], char dat[RF_CACHE_NAME_BYTES])
{
	uint64_t u = rf_fnv1a(RF_FNV_OFFSET, url, strlen(url));
	uint64_t v = rf_fnv1a(u, validator, strlen(validator));
	hex16(u, dir, "");
	hex16(v, rec, ".rec");
	hex16(v, dat, ".dat");
}

static bool hex_prefix(const char *s)
{
	for (int i = 0; i < 16; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool rf_cache_is_dir_name(const char *name)
{
	return strlen(name) == 16 && hex_prefix(name);
}

bool rf_cache_is_file_name(const char *name)
{
	return strlen(name) == 20 && hex_prefix(name) &&
	       (!strcmp(name + 16, ".rec") || !strcmp(name + 16, ".dat"));
}

/* ------------------------------------------------------------- directory */

int rf_cache_dir_open(const char *dir, uint32_t mode, rf_error *why)
{
	char path[RF_CACHE_URL_BYTES_MAX];
	if (!dir || !*dir) {
		int rc = rf_cache_default_dir(path, sizeof(path));
		if (rc < 0)
			return rf_fail(why, rc,
			               "data cache off: no directory (set cache_dir, "
			               "RINGFEED_CACHE_DIR, XDG_CACHE_HOME or HOME)");
		dir = path;
	}
	bool rw = mode == RF_CACHE_READWRITE;
	return rf_cachedir_open(dir, "data cache off", rw, rw, why);
}
