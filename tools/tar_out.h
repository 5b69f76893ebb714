/* tar_out.h - a tar stream writer for `ringfeed read --output tar`: ustar
 * members, with a PAX `path` header for a name that does not fit ustar's
 * 100 bytes, so webdataset, Python's tarfile and GNU tar read it back. */
#ifndef RF_TAR_OUT_H
#define RF_TAR_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes one regular member NAME (name_len bytes, no NUL) holding len bytes
 * of data. Returns 0 or -1 (a write failed or the name holds a NUL). */
int rf_tar_out_member(FILE *f, const char *name, size_t name_len, const uint8_t *data,
                      uint64_t len);
/* The end of the archive: two zero blocks. Returns 0 or -1. */
int rf_tar_out_end(FILE *f);

#endif
