/* tar.h - WebDataset tar shards as a format (tar.c): the format's table row
 * and the pieces its tests and fuzz target reach directly. Internal; see
 * docs/format.md, "WebDataset tar". */
#ifndef RF_TAR_H
#define RF_TAR_H

#include "format.h"

#define RF_TAR_BLOCK             512
#define RF_TAR_STEP_BYTES        (1u << 20)  /* one open step's read (remote) */
#define RF_TAR_STEP_LOCAL_BYTES  (4u << 20)  /* ... of a local file */
#define RF_TAR_UNIT_BYTES        (1u << 20)  /* a read unit's target span */
#define RF_TAR_NAME_MAX          4096        /* a member's name (GNU L, PAX path) */
#define RF_TAR_PAX_MAX           (64u << 10) /* a PAX extended header's data */
#define RF_TAR_FIELDS_MAX        1024        /* distinct field names per shard */
#define RF_TAR_SAMPLE_FIELDS_MAX 256         /* fields per sample */

extern const rf_format rf_tar_format;

/* Parses a tar header's numeric field: octal (NUL/space terminated) or
 * GNU base-256 (high bit of the first byte). False when malformed or
 * negative. */
bool rf_tar_number(const uint8_t *field, size_t len, uint64_t *out);
/* True when the 512-byte header's checksum (bytes 148..155 counted as
 * spaces) matches the stored one, summed unsigned or (old tars) signed. */
bool rf_tar_checksum_ok(const uint8_t *hdr);

#endif
