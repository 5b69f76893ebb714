/* tfrecord.h - TensorFlow's TFRecord files as a format (tfrecord.c; the
 * Example reader in protobuf.c): the table row, the framing helpers and
 * the DALI tfrecord2idx index files, for the tools, tests and fuzz targets.
 * Internal; see docs/format.md, "TFRecord". */
#ifndef RF_TFRECORD_H
#define RF_TFRECORD_H

#include "format.h"

#include <stdio.h>

#define RF_TFR_FRAME_BYTES      16            /* u64 length, u32 its CRC, ..., u32 data CRC */
#define RF_TFR_RECORD_MAX       (64u << 20)   /* one record's data */
#define RF_TFR_UNIT_BYTES       (1u << 20)    /* a read unit's target span */
#define RF_TFR_STEP_BYTES       (1u << 20)    /* one open step's read (remote) */
#define RF_TFR_STEP_LOCAL_BYTES (4u << 20)    /* ... of a local file */
#define RF_TFR_WHOLE_MAX        (32u << 20)   /* ... decoded, read as one whole-object unit */
#define RF_TFR_DECODED_MAX      (64ull << 30) /* a compressed file's decoded bytes, at most */
#define RF_TFR_FIELDS_MAX       1024          /* distinct feature keys per shard */
#define RF_TFR_KEY_MAX          64            /* a record's key: STEM/NNNNNNNN */
#define RF_TFR_INDEX_BYTES_MAX  (256u << 20)  /* a tfrecord2idx file's bytes */
#define RF_TFR_RAW_FIELD        "record"      /* the one field of a raw record */

extern const rf_format rf_tfrecord_format;

/* TFRecord's options (rf_tfrecord_format.options parses raw from the
 * config's tfrecord_raw; its tools set scan_only). Zero = defaults. */
typedef struct rf_tfr_opts {
	bool raw;       /* records are bytes (one field), not tf.train.Examples */
	bool scan_only; /* PREFIX.idx is not read: the frames are walked */
} rf_tfr_opts;

enum { RF_TFR_PLAIN = 0, RF_TFR_GZIP = 1, RF_TFR_ZLIB = 2 };
/* The compression a name's last component says (.gz: GZIP, .zlib: ZLIB). */
int rf_tfr_codec_of(const char *leaf);

/* TensorFlow's masked CRC-32C (crc32c.h's, rotated and offset). */
uint32_t rf_tfr_masked_crc(const void *p, size_t len);

/* The frame at p[0, avail) (byte `at` of the stream, for messages):
 * 0 with *data_len set when its header is sound and all of it is there
 * (*frame = 16 + data_len); 1 when avail holds its header but not all of
 * it (*frame set: the bytes it needs); 2 when avail is under 12 bytes;
 * RF_E_CORRUPT (err names the record, the byte and the check) when the
 * length's CRC is wrong, the length is past RF_TFR_RECORD_MAX, or (with
 * check_data) the data's CRC is wrong. */
int rf_tfr_frame(const uint8_t *p, uint64_t avail, uint64_t at, uint64_t record, bool check_data,
                 uint64_t *data_len, uint64_t *frame, const char *name, rf_error *err);

/* Writes a TFRecord layout's records (ix, priv from the format's open) as
 * a DALI tfrecord2idx index ("OFFSET SIZE\n" per record, SIZE the whole
 * frame) to out. -EINVAL for a compressed file's layout (DALI indexes
 * uncompressed files), -EIO when out fails. */
int rf_tfr_index_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err);
/* A layout's record data lengths (NULL for none), *compressed when it is
 * a compressed file's (priv from the format's open). */
const uint32_t *rf_tfr_layout_lens(const void *priv, bool *compressed);
/* True when the layout was read from a tfrecord2idx file. */
bool rf_tfr_layout_from_index(const void *priv);
/* PREFIX.idx for PREFIX.tfrecord / PREFIX.tfrecords (a query left out:
 * *query set when there was one), or NULL for another name. malloc'd. */
char *rf_tfr_idx_sibling(const char *url, bool *query);

/* Parses a tfrecord2idx file's bytes into record data lengths (*lens,
 * malloc'd, *n records), checking every line: two decimal numbers, the
 * offsets contiguous from 0 (each where the record before ends), each
 * size a frame (16..16 + RF_TFR_RECORD_MAX bytes), the last ending at
 * file_bytes. Errors name idx_name, the line, the record and its offset.
 * A first line RF_TFR_CACHE_MARK (the index cache's entries) is skipped. */
int rf_tfr_index_parse(const uint8_t *buf, size_t len, uint64_t file_bytes, const char *idx_name,
                       uint32_t **lens, uint64_t *n, rf_error *err);
/* The first line the index cache's entries have (rf_tfr_cache_write): a
 * layout read from one came from the cache (rf_format.layout_cached). */
#define RF_TFR_CACHE_MARK "# ringfeed-index-cache"
bool rf_tfr_index_cached(const uint8_t *buf, size_t len);
/* sidecar_write for the index cache: the mark, then rf_tfr_index_write's lines. */
int rf_tfr_cache_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err);
/* The most records an index of len bytes lists (its lines): counts only. */
uint64_t rf_tfr_index_lines(const uint8_t *buf, size_t len);

/* What a record adds to its unit's slab past its fields: its end, field and
 * key starts, its key, its fields' entries (a raw record: one field). */
static inline uint64_t rf_tfr_rec_table(uint64_t fields)
{
	return 12 + RF_TFR_KEY_MAX + 12 * fields;
}

/* The index cache's entry of a walked Examples layout (rf_tfr_cache_write),
 * which a tfrecord2idx index cannot carry (the walk learned the Examples'
 * keys and decoded sizes):
 *   "# ringfeed-index-cache examples LARGEST\n"  (the largest record's bytes)
 *   "# key HEX\n"            per feature key, the layout's names in order
 *   "OFFSET SIZE SLAB\n"     per record: its frame, as DALI's lines, and its
 *                            bytes in its unit's slab (fields and table) */
#define RF_TFR_CACHE_EX_MARK RF_TFR_CACHE_MARK " examples "
bool rf_tfr_cache_examples(const uint8_t *buf, size_t len);
typedef struct rf_tfr_cached {
	uint32_t *lens, *slab; /* per record: data bytes, slab bytes */
	uint64_t n;
	char **names; /* NUL-terminated, distinct, 1..RF_EX_KEY_MAX bytes, no NUL */
	uint32_t names_n;
	uint64_t names_bytes; /* what the names take, counted as the walk counts them */
	uint32_t largest;
} rf_tfr_cached;
/* Parses such an entry, checking every line as rf_tfr_index_parse does, the
 * keys (hex, at most RF_TFR_FIELDS_MAX, distinct) and every size (a slab's
 * at least a record's table, at most half a unit). Errors name idx_name and
 * the line (RF_E_CORRUPT). Allocates at most rf_tfr_cache_parse_bound. */
int rf_tfr_cache_parse(const uint8_t *buf, size_t len, uint64_t file_bytes, const char *idx_name,
                       rf_tfr_cached *out, rf_error *err);
uint64_t rf_tfr_cache_parse_bound(uint64_t lines);
void rf_tfr_cached_free(rf_tfr_cached *c);

/* ------------------------- sequential units of a large compressed file */

#define RF_TFR_SEQ_CARRY   (1u << 20)  /* compressed bytes kept between units */
#define RF_TFR_SEQ_SCRATCH (64u << 10) /* decoded bytes dropped at a time */
#define RF_TFR_ZLIB_STATE  (64u << 10) /* inflate's state and its 32 KiB window, at most */
#define RF_TFR_CP_SPACING  (64u << 10) /* decoded bytes between the open's checkpoints */

/* A .tfrecord.gz / .zlib decoding to more than RF_TFR_WHOLE_MAX: the open
 * walks its frames as it inflates the stream once, in bounded memory, and
 * keeps checkpoints (after `in` compressed bytes inflate had given `out`
 * decoded bytes); units are runs of whole records, each the compressed
 * range up to the first checkpoint past its decoded end, decoded in order
 * through one inflate state (tfrecord_stream.c). One unit for it: its
 * decoded bytes [start, start + span); the last one also decodes the
 * stream to its end, which must come at object byte `size` and decoded
 * byte `decoded` (what the open saw). */
typedef struct rf_tfr_seq_unit {
	uint32_t u;
	int codec; /* RF_TFR_GZIP or RF_TFR_ZLIB */
	uint64_t start, span;
	bool last;
	uint64_t size, decoded;
} rf_tfr_seq_unit;
/* The unit's decoded bytes into dst[0, span) through *state (made at the
 * first call, at most rf_tfr_seq_bytes()): 0, RF_FMT_MORE (more->offset,
 * len set) or an error (the state reset: the next call starts the stream
 * again). As rf_format.decode_seq. */
int rf_tfr_seq_decode(void **state, const rf_tfr_seq_unit *w, const uint8_t *src, size_t src_len,
                      uint64_t src_offset, uint8_t *dst, rf_fmt_more *more, const char *name,
                      rf_error *err);
void rf_tfr_seq_reset(void *state);
void rf_tfr_seq_free(void *state);
uint64_t rf_tfr_seq_bytes(void);

#endif
