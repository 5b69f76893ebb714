/* tar.h - WebDataset tar shards as a format (tar.c; its header scan in
 * tar_scan.c): the format's table row, the scan's state shared by the two,
 * and the pieces its tests and fuzz target reach directly. Internal; see
 * docs/format.md, "WebDataset tar". */
#ifndef RF_TAR_H
#define RF_TAR_H

#include "format.h"

#include <stdio.h>

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

/* ------------------------------------ the scan (tar_scan.c), for tar.c */

static inline uint64_t rf_tar_pad512(uint64_t n)
{
	return (n + RF_TAR_BLOCK - 1) / RF_TAR_BLOCK * RF_TAR_BLOCK;
}

typedef struct tar_field {
	uint64_t offset, len; /* absolute in the shard during the scan */
	uint32_t name;
} tar_field;

typedef struct tar_sample {
	uint64_t start, end; /* first header of its first member .. its last member's padded end */
	uint32_t field_first;
	uint32_t key_at, key_len;
} tar_sample;

typedef struct tar_scan {
	uint64_t pos;          /* the next header's offset */
	uint64_t member_start; /* UINT64_MAX, or where the pending extension headers began */
	char *long_name;       /* GNU L or PAX path for the next member, or NULL */
	size_t long_len;
	bool pax_size_set;
	uint64_t pax_size;
	tar_field *fv;
	size_t fn, fcap;
	tar_sample *sv;
	size_t sn, scap;
	char *keys;
	size_t kn, kcap;
	char **names;
	uint32_t names_n;
	bool in_sample;
	uint64_t skipped; /* members left out (metadata, dot-files, no extension, not files) */
	/* set: each regular member goes to member() instead of the tables (a walk) */
	int (*member)(void *ctx, const char *n, size_t len, uint64_t data, uint64_t size,
	              rf_error *err);
	void *member_ctx;
	/* the open's index file (tar.c): its URL (may carry credentials) and
	 * redacted name, and its bytes */
	char *idx_url, *idx_name;
	uint64_t idx_bytes;
	uint64_t idx_members; /* at most this many members (counted before the parse) */
} tar_scan;

enum { RF_TAR_SCAN_MORE = 1, RF_TAR_SCAN_END = 2 };

/* The layout's private part (tar.c): every sample's fields and key. */
typedef struct tar_layout {
	rf_rec_field *fields; /* offsets relative to their unit's start */
	uint32_t *field_first;
	char *keys;
	uint32_t *key_first;
	char **names;
	uint32_t names_n;
	uint64_t skipped;
	bool from_index; /* built from an index file, not from a header scan */
} tar_layout;

/* What the scan's tables take (held between open steps). */
uint64_t rf_tar_scan_bytes(const tar_scan *s);
void rf_tar_scan_free(tar_scan *s);
/* Empties the tables (the index file's names kept). */
void rf_tar_scan_clear(tar_scan *s);
/* Asks for the next range from the header at s->pos (RF_FMT_NEED). */
int rf_tar_want_from(rf_fmt_open *o, tar_scan *s);
/* Scans the delivered range: RF_TAR_SCAN_MORE (ask again), RF_TAR_SCAN_END
 * (the layout is known) or an error. */
int rf_tar_scan_chunk(rf_fmt_open *o, tar_scan *s, rf_error *err);

/* webdataset's rule for a member named n: false when it is skipped
 * (metadata `__*__`, a dot-file, no extension); else its key's length
 * (the name up to the first '.' of its last component). */
bool rf_tar_member_key(const char *n, size_t len, size_t *key_len);
/* A name fit for a message (printable ASCII, cut at 80). */
const char *rf_tar_shown(const char *s, size_t len, char *buf, size_t cap);
/* One regular member into the scan's tables: a field of the current sample
 * or the first of a new one (skipped by webdataset's rules: counted only).
 * start: where its headers begin; data, size: its data; end: its padded end. */
int rf_tar_scan_member(tar_scan *s, const char *n, size_t len, uint64_t start, uint64_t data,
                       uint64_t size, uint64_t end, const char *name, rf_error *err);
/* Walks the tar headers of p[0, len) (a unit's bytes: offsets relative to
 * p), calling member for each regular member with its name and its data's
 * offset and size; stops at an end-of-archive block. Allocates only a long
 * name (at most RF_TAR_NAME_MAX). 0 or the error (RF_E_CORRUPT). */
int rf_tar_walk(const uint8_t *p, uint64_t len, const char *name,
                int (*member)(void *ctx, const char *n, size_t len, uint64_t data, uint64_t size,
                              rf_error *err),
                void *ctx, rf_error *err);

/* ------------------------------------------- index files (tar_index.c) */

#define RF_TAR_INDEX_BYTES_MAX (256u << 20) /* an index file's bytes, at most */
#define RF_TAR_INDEX_LINE_MAX  (1u << 20)   /* one sample's line, at most */

/* Builds the scan's tables from a DALI wds2idx index (v1.2: a first line
 * `v1.2 SAMPLES`, then per sample one line of `EXT OFFSET SIZE NAME`
 * groups, OFFSET the member's data, a multiple of 512) of the shard o
 * describes, checking it against the shard's size: errors name idx_name,
 * the line and what was wrong (RF_E_CORRUPT). *tail: where the last
 * member listed ends (the tar past it must hold no member webdataset reads). */
int rf_tar_index_parse(const rf_fmt_open *o, tar_scan *s, const char *idx_name, const uint8_t *buf,
                       size_t len, uint64_t *tail, rf_error *err);
/* The most members an index's bytes can list (its tokens after line 1, in
 * fours): counts, allocates nothing. */
uint64_t rf_tar_index_members(const uint8_t *buf, size_t len);
/* What parsing an index of len bytes listing at most `members` members may
 * allocate, at most (the parse sizes its tables for that many at once). */
uint64_t rf_tar_index_parse_bound(uint64_t members, uint64_t len);

/* Writes a tar layout (ix, priv from the tar format's open: name is the
 * shard's, for messages) to out as a DALI wds2idx v1.2 index: one line per
 * sample, a member per field, named KEY.FIELD (the field lowercased, as
 * webdataset reads it); the metadata members the layout skipped are left
 * out. -EINVAL for a layout DALI's format cannot carry (no samples, a
 * space in a name), -EIO when out fails. out may be a file or a memory
 * stream (open_memstream) for a caller's buffer. */
int rf_tar_index_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err);
/* True when two tar layouts are the same (units, samples, keys, fields). */
bool rf_tar_layout_equal(const rf_shard_index *a, const void *pa, const rf_shard_index *b,
                         const void *pb);
/* True when the layout was built from an index file (not a header scan). */
bool rf_tar_layout_from_index(const void *priv);

#endif
