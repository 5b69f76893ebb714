/* tar_out.h - a tar stream writer for `ringfeed read --output tar`: ustar
 * members, with a PAX `path` header for a name that does not fit ustar's
 * 100 bytes, so webdataset, Python's tarfile and GNU tar read it back. */
#ifndef RF_TAR_OUT_H
#define RF_TAR_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes one regular member NAME (name_len bytes, no NUL) holding len bytes
 * of data. Returns 0 or -1 (a write failed or the name holds a NUL). */
int rf_tar_out_member(FILE *f, const char *name, size_t name_len, const uint8_t *data,
                      uint64_t len);
/* A sample's key (or a field's name) as a safe part of a member name, into
 * out (cap bytes, NUL-terminated): itself when it is safe (not empty, no
 * leading '/', no empty, "." or ".." path component, no control byte);
 * else its components with ".." as "__", "." and empty ones left out,
 * control bytes and NULs as '_', then '~' and the 8 hex digits of the
 * FNV-1a of its bytes, so that two keys never map to one name (e.g.
 * "../../etc/passwd" -> "__/__/etc/passwd~1b2c3d4e"). *changed says which.
 * Returns its length, or -1 when out is too small. */
int rf_tar_out_safe_part(const char *part, size_t len, char *out, size_t cap, bool *changed);
/* The end of the archive: two zero blocks. Returns 0 or -1. */
int rf_tar_out_end(FILE *f);

#endif
