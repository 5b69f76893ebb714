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

#define RF_TAR_FIELD_MAP_BYTES 512 /* the tar_fields option's text */
#define RF_TAR_FIELD_MAP_MAX   64  /* its FIELD=NAME pairs */

/* The tar format's options (rf_fmt_open.opt): tar_fields from the loader's
 * config (rf_tar_opts_parse); scan_only is set by its tools. */
typedef struct rf_tar_opts {
	bool scan_only; /* PREFIX.idx is not read: the headers are scanned */
	/* tar_fields: "FIELD=NAME[,FIELD=NAME...]": a field as the members
	 * name it (the suffix after the key, lowercased) shown as NAME (the
	 * batch's field, the shape check's); "" none. Checked by the parser. */
	char field_map[RF_TAR_FIELD_MAP_BYTES];
} rf_tar_opts;
/* Parses tar_fields from cfg into out (an rf_tar_opts): -EINVAL naming
 * the option and what is wrong. */
int rf_tar_opts_parse(const rf_fmt_config *cfg, void *out, rf_error *err);

/* Parses a tar header's numeric field: octal (NUL/space terminated) or
 * GNU base-256 (high bit of the first byte). False when malformed or
 * negative. */
bool rf_tar_number(const uint8_t *field, size_t len, uint64_t *out);
/* True when the 512-byte header's checksum (bytes 148..155 counted as
 * spaces) matches the stored one, summed unsigned or (old tars) signed. */
bool rf_tar_checksum_ok(const uint8_t *hdr);

/* ------------------------------------ the scan (tar_scan.c), for tar.c */

#define RF_TAR_ALIGN8(n) (((uint64_t)(n) + 7) & ~(uint64_t)7)

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

/* What extension headers (GNU L, PAX) say of the next member. */
typedef struct tar_ext {
	char *long_name; /* GNU L or PAX path for the next member, or NULL */
	size_t long_len;
	bool pax_size_set;
	uint64_t pax_size;
} tar_ext;

typedef struct tar_scan {
	uint64_t pos;          /* the next header's offset */
	uint64_t member_start; /* UINT64_MAX, or where the pending extension headers began */
	tar_ext ext;
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
	bool idx_cache_only; /* a presigned URL: only the index cache may answer idx_url */
	bool idx_from_cache; /* the index's bytes are the index cache's (rf_tar_cache_write) */
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
	char **shown; /* names_n: the names tar_fields shows (NULL: names) */
	uint64_t skipped;
	bool from_index;  /* built from an index file, not from a header scan */
	bool from_cache;  /* that index was the index cache's entry, not a file */
	int codec;        /* RF_TAR_PLAIN, or the compressed tar's codec */
	uint64_t decoded; /* a compressed tar's decoded bytes */
	/* a .tar.gz split at access points (else NULL: one whole-shard unit) */
	struct rf_tar_ap *aps; /* unit u starts from aps[u] */
	/* a split .tar.gz, or a sequential .tar.zst (else NULL) */
	uint64_t *unit_out;  /* the decoded offset of unit u's first sample */
	uint32_t *unit_span; /* unit u's decoded bytes */
	bool seq;            /* a sequential .tar.zst: units decode through decode_seq */
	uint64_t seq_bytes;  /* seq: what one decode_seq state holds at most */
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

/* ----------------------------------- the header parser (tar_parse.c) */

bool rf_tar_all_zero(const uint8_t *p, size_t n);
/* The name of a regular member from its header h and the pending
 * extensions x, into buf (RF_TAR_NAME_MAX + 256 bytes); its length. */
size_t rf_tar_member_name(const tar_ext *x, const uint8_t *h, char *buf);
/* PAX records "LEN key=value\n" (p[0, len), the header at byte `at`):
 * path and size into x, the others skipped. 0 or RF_E_CORRUPT. */
int rf_tar_pax_parse(tar_ext *x, const uint8_t *p, size_t len, uint64_t at, const char *name,
                     rf_error *err);
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

/* ----------------------- compressed tars (tar_stream.c), for tar.c */

enum { RF_TAR_PLAIN = 0, RF_TAR_GZIP = 1, RF_TAR_ZSTD = 2 };
/* The codec a shard's last name component says (.tar.gz / .tgz: gzip;
 * .tar.zst / .tar.zstd: zstd), else RF_TAR_PLAIN. */
int rf_tar_codec_of(const char *leaf);

#define RF_TAR_WINDOW_BYTES 32768u /* deflate's window: an access point keeps it */

/* Where decoding a gzip stream can start again (an access point, as
 * zlib's zran.c keeps them): `in` is the compressed byte it resumes at,
 * `bits` the bits of the byte before it still to use (0: none), `out` the
 * decoded offset there; a member start needs no window, any other point
 * the 32 KiB of output before it. Open-time only: first (the first sample
 * starting at or after out) and end_in (compressed bytes enough to decode
 * up to the next point's first sample). */
typedef struct rf_tar_ap {
	uint64_t in, out;
	uint8_t bits;
	bool member;
	uint8_t *window; /* RF_TAR_WINDOW_BYTES, or NULL for a member start */
	uint64_t first, first_hint, end_in;
} rf_tar_ap;

/* A compressed tar's open, kept in rf_fmt_open.state: the decompressor, a
 * window of decoded bytes and the header scan over them. */
typedef struct tar_stream tar_stream;
/* One open step: RF_FMT_NEED (o->want set), RF_TAR_SCAN_END once the
 * stream is decoded and scanned (its scan and decoded size then build the
 * layout: one unit, the whole object), or an error (final after the first
 * step: a stream cannot be entered again). */
int rf_tar_stream_step(rf_fmt_open *o, int codec, rf_error *err);
tar_scan *rf_tar_stream_scan(tar_stream *t);
uint64_t rf_tar_stream_decoded(const tar_stream *t);
uint64_t rf_tar_stream_bytes(const tar_stream *t);
void rf_tar_stream_free(tar_stream *t);
/* The gzip access points met (ownership passes to the caller), in order,
 * each with first == UINT64_MAX when no sample starts after it. */
rf_tar_ap *rf_tar_stream_take_aps(tar_stream *t, size_t *n);

/* A zstd stream's checkpoints: after the open's decoder had taken `in`
 * compressed bytes it had given `out` decoded bytes, so [0, in) decodes
 * to at least [0, out). In order; at most one per RF_TAR_CP_SPACING of
 * output, and the last. */
#define RF_TAR_CP_SPACING (64u << 10)
typedef struct rf_tar_cp {
	uint64_t out, in;
} rf_tar_cp;
/* The checkpoints met (a zstd stream's; ownership passes to the caller). */
rf_tar_cp *rf_tar_stream_take_cps(tar_stream *t, size_t *n);
/* Decodes the whole stream src into dst, which must come to exactly
 * `decoded` bytes (dst has room for one more, to see a longer stream). */
int rf_tar_stream_decode(int codec, const uint8_t *src, size_t src_len, uint8_t *dst,
                         size_t decoded, const char *name, rf_error *err);
/* A unit of a .tar.gz split at access points: src holds the object's bytes
 * from the point (the byte before it when a->bits); `skip` decoded bytes
 * (dst_cap at a time, through dst), then exactly `span` bytes into dst. */
int rf_tar_stream_decode_at(const uint8_t *src, size_t src_len, const rf_tar_ap *a, uint64_t skip,
                            uint8_t *dst, size_t dst_cap, size_t span, const char *name, uint32_t u,
                            rf_error *err);

/* A sequential .tar.zst's unit for the stream decoder: its decoded bytes
 * [start, start + span); the last unit also decodes the stream to its end
 * (the tar's trailing blocks, the frame checks), which must come at object
 * byte `size` and decoded byte `decoded` (what the open saw). */
typedef struct rf_tar_seq_unit {
	uint32_t u;
	uint64_t start, span;
	bool last;
	uint64_t size, decoded;
	uint64_t state_max; /* the most the state may hold (rf_format.seq_state_bytes) */
} rf_tar_seq_unit;

#define RF_TAR_SEQ_CARRY   (1u << 20)  /* compressed bytes kept between units */
#define RF_TAR_SEQ_SCRATCH (64u << 10) /* decoded bytes dropped at a time */
/* rf_format.decode_seq's stream part: the unit's decoded bytes into
 * dst[0, span), through the stream state *state (made at the first call:
 * a zstd decoder of an 8 MiB window at most, a carry of compressed bytes,
 * a scratch buffer). 0, RF_FMT_MORE or an error (the state reset). */
int rf_tar_seq_decode(void **state, const rf_tar_seq_unit *w, const uint8_t *src, size_t src_len,
                      uint64_t src_offset, uint8_t *dst, rf_fmt_more *more, const char *name,
                      rf_error *err);
/* Back to the stream's start (the next unit decodes from byte 0). */
void rf_tar_seq_reset(void *state);
void rf_tar_seq_free(void *state);
/* What a state allocates now (never more than seq_state_bytes, checked
 * after each call), and what one of a zstd decoder of `zd_bytes` holds
 * (the open's decoder at its largest: the frames' windows). */
uint64_t rf_tar_seq_held(const void *state);
uint64_t rf_tar_seq_need(uint64_t zd_bytes);
/* The open's zstd decoder at its largest (0 for gzip). */
uint64_t rf_tar_stream_zd_bytes(const tar_stream *t);

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
/* The same for the index cache's entry (rf_format.sidecar_write): its first
 * line says so ("v1.2 SAMPLES ringfeed-index-cache"), so that a layout the
 * tar contradicts blames the cached index, not an index file. */
int rf_tar_cache_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err);
/* ------------------------------------- index building (tar_build.c) */

/* Writes the DALI index of the plain tar o describes (its inputs set: url,
 * name, size, local; opt may carry other options) to idx_path: its headers
 * scanned through read (an index beside it is not read), the layout
 * written atomically. -EINVAL naming o->name when the url is not a plain
 * .tar's. For rf_tar_index_build (pread) and rf_tar_index_build_ref (the
 * engine's fetch layer). o's outputs are used and left freed. */
int rf_tar_index_build_with(rf_fmt_open *o, rf_fmt_read_fn read, void *ctx, const char *idx_path,
                            rf_error *err);
/* 0 when url (a query or fragment left out) names a plain .tar, the only
 * kind an index is written for; else -EINVAL naming name. */
int rf_tar_index_name_check(const char *url, const char *name, rf_error *err);

/* rf_tar_index_write into idx_path atomically (a temporary file beside it,
 * fsync'd, renamed): for rf_tar_index_build and the remote build. */
int rf_tar_index_save(const rf_shard_index *ix, const void *priv, const char *idx_path,
                      const char *name, rf_error *err);
/* True when two tar layouts are the same (units, samples, keys, fields). */
bool rf_tar_layout_equal(const rf_shard_index *a, const void *pa, const rf_shard_index *b,
                         const void *pb);
/* True when the layout was built from an index file (not a header scan). */
bool rf_tar_layout_from_index(const void *priv);

#endif
