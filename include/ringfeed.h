/* ringfeed.h - the one public header of libringfeed.
 *
 * ringfeed is a storage read-ahead engine for training data: it reads dataset
 * shards (.rfs; WebDataset .tar and MosaicML MDS samples with fields, see
 * rf_batch_field) from local files and HTTP/S3 object storage through one
 * io_uring loop, decodes them into a bounded pool, collates records into
 * batches and keeps just enough ready batches to hide read pauses, inside a
 * byte budget that covers every copy of the data.
 *
 * Conventions: functions return 0 (or a count) on success and a negative errno
 * value on failure; a message naming what was wrong and where is left in an
 * rf_error or in rf_last_error(). No global state.
 *
 * Threads (the loader's contract with an embedder; engine/api.c):
 *   - rf_next, rf_release, rf_state_save, rf_stats_get, rf_stats_json and
 *     rf_last_error may be called from any thread, concurrently: each takes
 *     the loader's lock for its bookkeeping (rf_next waits without holding it).
 *     A batch may be released by another thread than the one that took it.
 *     Several threads calling rf_next at once each get distinct batches, in
 *     stream order of the calls' returns, but which thread gets which batch
 *     is not defined; rf_state_save is the position after every batch
 *     returned so far, whichever thread took it. (The consumer's rate r and
 *     its wait are measured between rf_next calls, so they describe one
 *     consuming thread.)
 *   - rf_close may run while other threads are inside rf_next: from its
 *     start, rf_next calls return -ECANCELED ("the loader is closed") without
 *     a batch, and rf_close waits for those in progress to return before it
 *     frees anything. It must still be the last call on the loader: a call
 *     that begins after rf_close has returned touches freed memory, and
 *     rf_release, rf_state_save and the stats must not run concurrently with
 *     it (an embedder counts its own calls, as the Python binding does). It
 *     joins the loader's threads and frees every batch still held: their
 *     payload, offsets and lengths become invalid and they must not be passed
 *     to rf_release afterwards.
 *   - A loader belongs to the process that opened it. In a forked child
 *     (which has none of its threads) rf_next, rf_state_save and the stats
 *     return -ECHILD ("this loader was opened in process P; a forked child
 *     must open its own", in rf_last_error), rf_release does nothing and
 *     rf_close_checked returns -ECHILD without freeing: the child opens its
 *     own loader.
 *   - rf_config_* calls on one rf_config are not thread-safe. rf_open copies
 *     everything it needs from cfg (options, URLs, resume state, the
 *     allocator's function pointers and ctx): cfg may be changed or freed
 *     right after rf_open returns; the allocator's ctx must outlive the loader.
 *   - A decoder (rf_decoder) and a writer (rf_writer) belong to one thread at
 *     a time; the parse / verify functions touch only what they are given. */
#ifndef RINGFEED_H
#define RINGFEED_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RF_VERSION_STRING "0.1.0" /* of this header; rf_version() is the library's */

/* The library's version ("0.1.0"), for a program to check the libringfeed it
 * runs against (which may be newer than the header it was built with). A
 * static string: never freed. */
const char *rf_version(void);

/* ------------------------------------------------------------------ errors */

#define RF_ERROR_MSG_BYTES 512

typedef struct rf_error {
	int code;                     /* negative errno value, 0 when no error */
	char msg[RF_ERROR_MSG_BYTES]; /* names the shard / block / offset / URL */
} rf_error;

/* Extra error codes beyond errno (all negative). */
#define RF_E_CORRUPT (-EBADMSG) /* shard bytes failed a structural / checksum check */
#define RF_E_BUDGET  (-ENOBUFS) /* the byte budget cannot hold what is needed */

/* rf_next() returns this (positive) when the stream has ended. */
#define RF_END 1

/* ------------------------------------------------------------------ sizes */

/* Parses "123", "64KiB", "1MiB", "2GiB", "1.5GiB", "4KB" (KB/MB/GB = 10^3..,
 * KiB/MiB/GiB = 2^10..). Returns 0 or -EINVAL / -ERANGE with a message. */
int rf_parse_bytes(const char *text, uint64_t *out, rf_error *err);

/* ------------------------------------------------------------ shard format */

/* .rfs layout (all integers little-endian):
 *   [block 0]...[block n-1][index][footer]
 * block  = one zstd frame (content size + checksum) whose decoded bytes are
 *          [payloads][u32 end offset per record][u32 record count]
 * index  = header + metadata + per-block entries, CRC-32C protected
 * footer = RF_FOOTER_BYTES at the end of the file. See docs/format.md. */
#define RF_FOOTER_BYTES      40
#define RF_FORMAT_VERSION    1
#define RF_BLOCK_DECODED_MAX (256u << 20) /* no block decodes to more */
#define RF_METADATA_MAX      (64u << 10)  /* user metadata string */
#define RF_INDEX_BLOCKS_MAX  (16u << 20)  /* blocks per shard */

typedef struct rf_block_info {
	uint64_t offset;           /* byte offset of the frame in the shard */
	uint32_t compressed_bytes; /* frame length */
	uint32_t decoded_bytes;    /* decoded length (payloads + table) */
	uint32_t records;          /* records in the block */
	uint64_t first_record;     /* number of the block's first record in the shard */
} rf_block_info;

typedef struct rf_footer {
	uint32_t version;
	uint64_t index_offset;
	uint64_t index_bytes;
	uint32_t index_crc32c;
} rf_footer;

typedef struct rf_shard_index {
	uint64_t file_bytes;
	uint64_t records;
	uint32_t blocks;
	uint32_t largest_block_compressed_bytes;
	uint32_t largest_block_decoded_bytes;
	uint32_t largest_record_bytes;
	uint64_t compressed_bytes; /* sum over blocks */
	uint64_t decoded_bytes;    /* sum over blocks */
	char *metadata;            /* NUL-terminated user metadata ("" when none) */
	rf_block_info *block;      /* blocks entries */
	/* The units can only be decoded in order, through one decoder state
	 * (a single zstd frame of a .tar.zst: rf_format.decode_seq): the plan
	 * keeps them in order, and a unit read out of that order costs a
	 * re-decode of the stream up to it. 0 for .rfs and every ranged
	 * format. */
	uint8_t sequential;
} rf_shard_index;

/* Parse the footer from the last RF_FOOTER_BYTES of a file of file_bytes.
 * `name` (shard path or URL) is used in error messages. */
int rf_footer_parse(const void *buf, size_t len, uint64_t file_bytes, const char *name,
                    rf_footer *out, rf_error *err);
/* Parse the index bytes [footer.index_offset, +index_bytes). Allocates *out. */
int rf_index_parse(const void *buf, size_t len, const rf_footer *footer, uint64_t file_bytes,
                   const char *name, rf_shard_index **out, rf_error *err);
void rf_index_free(rf_shard_index *index);
/* Read footer + index of a local file (pread). */
int rf_index_read_file(const char *path, rf_shard_index **out, rf_error *err);

/* A shard of any format the library reads (.rfs, ...: see docs/format.md),
 * opened from a local file the way the loader opens it: its read units
 * (index->block[]) and figures. */
typedef struct rf_layout rf_layout;
int rf_layout_open(const char *path, rf_layout **out, rf_error *err);
const rf_shard_index *rf_layout_index(const rf_layout *l);
const char *rf_layout_format(const rf_layout *l);     /* "rfs" */
uint64_t rf_layout_payload_bytes(const rf_layout *l); /* the records' bytes */
void rf_layout_free(rf_layout *l);
/* True when the layout's records are samples with named fields (tar, MDS,
 * TFRecord), not single records: 1, else 0. */
int rf_layout_has_fields(const rf_layout *l);
struct rf_config;
/* rf_layout_open with a loader config's format options (seq_len,
 * token_dtype, eot_token, token_out: token files read as `read` would);
 * cfg may be NULL. */
int rf_layout_open_config(const char *path, const struct rf_config *cfg, rf_layout **out,
                          rf_error *err);

/* WebDataset tar index files (DALI's wds2idx v1.2 format; docs/format.md):
 * a PREFIX.idx beside PREFIX.tar lets the open read the index instead of
 * the tar's headers. rf_tar_index_build scans the local tar's headers (an
 * index already there is not read) and writes idx_path atomically (a
 * temporary file beside it, renamed). rf_tar_index_check: 0 when idx_path
 * describes the tar exactly (the same samples, keys, fields and units as its
 * headers), RF_E_CORRUPT when it is stale or malformed (the message says
 * where), another error when a file cannot be read (-ENOENT: no index). */
int rf_tar_index_build(const char *tar_path, const char *idx_path, rf_error *err);
int rf_tar_index_check(const char *tar_path, const char *idx_path, rf_error *err);
/* TFRecord index files (DALI's tfrecord2idx format: "OFFSET SIZE" per
 * record; docs/format.md): PREFIX.idx beside PREFIX.tfrecord(s).
 * rf_tfrecord_index_build walks the local file's frames (an index already
 * there is not read) and writes idx_path atomically; rf_tfrecord_index_check:
 * 0 when the index beside the file (idx_path, which must be that one) lists
 * exactly its records, RF_E_CORRUPT when stale, -ENOENT when absent. */
int rf_tfrecord_index_build(const char *path, const char *idx_path, rf_error *err);
int rf_tfrecord_index_check(const char *path, const char *idx_path, rf_error *err);

/* A reusable decoder (one zstd context). Not thread-safe: one per thread. */
typedef struct rf_decoder rf_decoder;
rf_decoder *rf_decoder_new(void);
void rf_decoder_free(rf_decoder *d);
/* Decode block `b` of `index` from its frame bytes into dst (capacity >=
 * block decoded_bytes), check the zstd checksum, the declared sizes and the
 * record table. On success fills *ends with a pointer into dst: the u32
 * end offsets of the block's records (record i = dst[ends[i-1] .. ends[i]),
 * ends[-1] = 0). */
int rf_block_decode(rf_decoder *d, const rf_shard_index *index, uint32_t b, const void *src,
                    size_t src_len, void *dst, size_t dst_cap, const uint32_t **ends,
                    const char *name, rf_error *err);
/* Check a decoded block's record table alone (used by rf_block_decode). */
int rf_block_table_check(const void *decoded, size_t len, uint32_t records, const uint32_t **ends,
                         const char *name, uint32_t b, rf_error *err);
/* The table that *ends points to follows the payloads directly, so it may be
 * unaligned: read entries with rf_record_end (i = -1 gives 0). */
static inline uint32_t rf_record_end(const uint32_t *ends, int64_t i)
{
	if (i < 0)
		return 0;
	const uint8_t *p = (const uint8_t *)ends + 4 * (uint64_t)i;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reads a local shard file (a path; no loader config) and checks
 * everything: footer, index, every frame (zstd checksum, declared sizes),
 * every record table, the dataset figures. Each problem found goes to
 * report (when non-NULL), at most max_reports of them (a damaged block does
 * not stop the walk while the index is sound). Returns 0 when the shard is
 * sound, RF_E_CORRUPT when it is not (err holds the first problem), or
 * another negative errno for I/O errors. rf_verify_shard: any shard
 * reference, read through a loader's fetch layer. */
int rf_verify_file(const char *path, void (*report)(void *ctx, const rf_error *e), void *ctx,
                   uint32_t max_reports, rf_error *err);
/* The former name of rf_verify_file (kept for the ABI). */
__attribute__((deprecated("use rf_verify_file"))) int
rf_shard_verify(const char *path, void (*report)(void *ctx, const rf_error *e), void *ctx,
                uint32_t max_reports, rf_error *err);

/* Shard writer. */
typedef struct rf_writer_options {
	uint64_t block_bytes; /* decoded target per block (default 1 MiB) */
	int level;            /* zstd level (default 3) */
	const char *metadata; /* user metadata string, may be NULL */
	uint32_t threads;     /* 0: compress in the caller; 1..RF_WRITER_THREADS_MAX:
	                         that many threads compress blocks in parallel while
	                         the caller fills the next (same bytes either way) */
} rf_writer_options;
#define RF_WRITER_THREADS_MAX 4
#define RF_WRITER_LAG_BLOCKS  4

typedef struct rf_shard_summary {
	uint64_t file_bytes;
	uint64_t records;
	uint32_t blocks;
	uint64_t decoded_bytes;
	uint64_t payload_bytes;
} rf_shard_summary;

typedef struct rf_writer rf_writer;
rf_writer *rf_writer_open(const char *path, const rf_writer_options *opt, rf_error *err);
int rf_writer_add(rf_writer *w, const void *record, size_t len, rf_error *err);
/* Bytes of the shard's blocks written so far, counting every completed block
 * but the last RF_WRITER_LAG_BLOCKS. It changes only when a block completes and
 * does not depend on threads or timing, so a packer can decide from it where to
 * start a new shard and still produce the same bytes from the same input. */
uint64_t rf_writer_bytes(const rf_writer *w);
/* Finishes the shard (last block, index, footer, fsync-free close) and frees w. */
int rf_writer_close(rf_writer *w, rf_shard_summary *out, rf_error *err);
/* Discards a partly written shard (removes the file) and frees w. */
void rf_writer_abort(rf_writer *w);

/* Manifest: a text file listing shards (see docs/format.md):
 *   line 1: "# ringfeed manifest v1"
 *   then one line per shard: PATH_OR_URL <TAB> FILE_BYTES <TAB> RECORDS
 * Relative paths are relative to the manifest's directory. */
#define RF_MANIFEST_MAGIC       "# ringfeed manifest v1"
#define RF_MANIFEST_LINE_MAX    4096    /* bytes per line, newline included */
#define RF_MANIFEST_ENTRIES_MAX 1000000 /* shards per manifest */
/* A directory's manifest (what pack writes): a directory stands for it. */
#define RF_DIR_MANIFEST "manifest.rfm"

typedef struct rf_manifest_entry {
	char *url;      /* resolved: base dir (or URL) joined with a relative path */
	uint64_t bytes; /* shard file size */
	uint64_t records;
	uint64_t line; /* its line in the manifest (set by rf_manifest_parse) */
} rf_manifest_entry;

typedef struct rf_manifest {
	size_t count;
	rf_manifest_entry *entry;
	uint64_t bytes; /* sums over entries */
	uint64_t records;
} rf_manifest;

/* True when buf starts with the manifest magic line. */
int rf_manifest_is(const void *buf, size_t len);
/* Parses a manifest held in buf. Relative paths are joined to base (the
 * manifest's directory or URL prefix; NULL or "" keeps them as they are);
 * absolute paths and URLs are kept. `name` is used in error messages, which
 * give the line number. Allocates *out (rf_manifest_free). */
int rf_manifest_parse(const char *buf, size_t len, const char *base, const char *name,
                      rf_manifest **out, rf_error *err);
/* Reads and parses a local manifest file (base = its directory). */
int rf_manifest_read_file(const char *path, rf_manifest **out, rf_error *err);
void rf_manifest_free(rf_manifest *m);
/* Writes m to path (via a temporary file and rename), urls as given. */
int rf_manifest_write(const char *path, const rf_manifest *m, rf_error *err);
/* Writes the index bundle of the local .rfs shards m lists (each entry's
 * url joined to base) to path: every shard's footer and index (its last
 * 8 KiB at least) in one file, so a loader opens them all from one read
 * (docs/format.md "Index bundle"). Each shard's size must be the one m
 * lists. A loader finds the bundle of manifest NAME.rfm at NAME.rfx
 * (rf_index_bundle_name). */
int rf_index_bundle_write(const char *path, const char *base, const rf_manifest *m, rf_error *err);
/* The index bundle's name for a manifest's path or URL: its ".rfm" (before
 * any query) replaced by ".rfx", or ".rfx" added. malloc'd; NULL: no memory. */
char *rf_index_bundle_name(const char *manifest);
/* rf_index_bundle_write for the local manifest file `manifest` (its entries
 * joined to its directory, kept as its lines give them), beside it
 * (rf_index_bundle_name): *shards its entries, *written the bundle's path
 * (malloc'd). */
int rf_index_bundle_write_beside(const char *manifest, size_t *shards, char **written,
                                 rf_error *err);

/* A shard name fit to show: URLs lose their user:password@ and their query
 * (presigned URLs carry signatures and tokens there: "?..." is shown); plain
 * paths and file:// are unchanged. Every message, stat and trace of ringfeed
 * names sources this way; a tool naming one should too. Truncated to cap. */
void rf_url_redact(const char *url, char *out, size_t cap);

/* --------------------------------------------------------------- loader */

typedef struct rf_config rf_config; /* opaque; set by key */
typedef struct rf_loader rf_loader;

/* Batch memory comes from this allocator (e.g. pinned memory). free gets the
 * same size that alloc was asked for. Both are called from the loader's
 * worker threads and from rf_release / rf_close, possibly at the same time:
 * they must be thread-safe. */
typedef struct rf_allocator {
	void *(*alloc)(void *ctx, size_t bytes);
	void (*free)(void *ctx, void *ptr, size_t bytes);
	void *ctx;
} rf_allocator;

rf_config *rf_config_new(void);
void rf_config_free(rf_config *cfg);
/* Sets an option by name from text, e.g. ("budget", "256MiB"), ("batch",
 * "64"), ("shuffle", "0"). Names and values are checked; an unknown name or
 * bad value is -EINVAL with a message. rf_config_keys() lists the names. */
int rf_config_set(rf_config *cfg, const char *key, const char *value, rf_error *err);
/* Adds a shard source: a path, directory, manifest, MDS index.json,
 * file://, http(s)://, s3://bucket/key or s3://bucket/prefix/, with
 * {000..063} brace ranges. */
int rf_config_add_url(rf_config *cfg, const char *url, rf_error *err);
/* Starts a mixture source with a relative weight ("0.6", "3": a plain
 * decimal, at most 6 places): the URLs added after it, up to the next
 * source, are its dataset. Sources are read as one weighted stream: after
 * any n samples each source has given within 1 of its share; a small source
 * repeats (a fresh order each pass), a large one continues where it stopped
 * in the next mixture epoch. All URLs of a mixture belong to a source
 * (option "mixture" reads sources from a file instead). */
int rf_config_add_source(rf_config *cfg, const char *weight, rf_error *err);
int rf_config_set_allocator(rf_config *cfg, const rf_allocator *alloc);
/* Resume from a state produced by rf_state_save (copied; state NULL: no
 * resume, undoing an earlier call). A state saved by
 * any rank resumes every rank of the job, on the same or another world size
 * and batch size (another world re-splits what no rank had taken); one saved
 * under another dataset (another shape, other shard names, or other
 * contents: the shards' layouts), seed or shuffle setting is refused at
 * rf_open, naming the setting with its saved and new value, and so is one
 * whose epoch is past the run's last. */
int rf_config_set_resume(rf_config *cfg, const void *state, size_t len, rf_error *err);
/* NUL-separated, double-NUL terminated list of option names with help text:
 * "name\0help\0name\0help\0\0". */
const char *rf_config_keys(void);

/* One field of a batch of multi-field samples (rf_batch.field): a ragged
 * section. Record i's field is payload[offsets[i] .. offsets[i + 1]) when
 * present[i] is 1. A field the sample lacks is absent (present[i] == 0, no
 * bytes), which is not the same as a present, empty one. */
typedef struct rf_batch_field {
	const char *name; /* "jpg": a tar member's extension (lowercased), an MDS column */
	const uint8_t *payload;
	uint64_t payload_bytes;
	const int64_t *offsets; /* records + 1 entries, offsets[0] == 0 */
	const uint8_t *present; /* records entries: 1 present, 0 absent */
} rf_batch_field;

/* A collated batch. Ragged: record i is payload[offsets[i] .. offsets[i+1]).
 * Padded (row_bytes > 0): record i is the row payload[i*row_bytes ..], of
 * true length lengths[i], zero-filled to row_bytes.
 *
 * Multi-field samples (WebDataset .tar, MDS): a record is a sample, several
 * named fields under one key; `fields` > 0, and the batch holds one ragged
 * section per field name of the dataset (rf_batch.field, in the order the
 * loader met the names at open: every batch of a loader lists the same
 * fields), laid out one after another inside payload (payload_bytes covers
 * them all), plus the samples' keys. The single-field view above then says
 * nothing of the samples: offsets are all 0 and lengths 0 (read the
 * fields). Single-field shards (.rfs) have fields == 0 and field, keys,
 * key_offsets NULL. */
typedef struct rf_batch {
	uint32_t records;
	uint32_t row_bytes; /* 0 when ragged */
	const uint8_t *payload;
	uint64_t payload_bytes;
	const int64_t *offsets;  /* records + 1 entries */
	const uint32_t *lengths; /* records entries */
	uint64_t epoch;
	uint64_t index;        /* batch number within the epoch */
	uint64_t first_record; /* position of record 0 within the epoch's stream */
	/* multi-field samples (fields added at the end: the struct only grows) */
	uint32_t fields;             /* 0: single-field records */
	const rf_batch_field *field; /* fields entries */
	const char *keys;            /* record i's key: keys[key_offsets[i] .. key_offsets[i+1]) */
	const int64_t *key_offsets;  /* records + 1 entries (not NUL-terminated keys) */
	const uint32_t *shards; /* record i's shard: an index for rf_loader_shard_name (multi-field
	                           batches; NULL for single-field ones) */
} rf_batch;

/* The field called name in b (NULL when the batch has none of that name). */
const rf_batch_field *rf_batch_field_get(const rf_batch *b, const char *name);

rf_loader *rf_open(const rf_config *cfg, rf_error *err);
/* The name of the loader's shard number `shard` (rf_batch.shards, rf_skip),
 * redacted as every message shows it (rf_url_redact), into out (cap bytes,
 * truncated, NUL-terminated). 0, -EINVAL (no such shard), -ECHILD. */
int rf_loader_shard_name(rf_loader *l, uint32_t shard, char *out, size_t cap);
/* Waits up to timeout_ms (-1 = forever) for the next batch. Returns 0 with
 * *out set, RF_END at the end of the stream, -ETIMEDOUT, or another negative
 * error (message in rf_last_error). RF_E_BUDGET without ending the stream
 * when the batches the consumer holds fill the budget (after a wait of about
 * 2 s): release some and call again. */
int rf_next(rf_loader *l, rf_batch **out, int timeout_ms);
/* Returns the batch's bytes to the budget. Batches may be released in any order. */
void rf_release(rf_loader *l, rf_batch *b);
/* The consumer's position (after the batches returned by rf_next so far):
 * 112 bytes (version 3), plus 16 a segment in an epoch re-split by an elastic resume (at
 * most 4096). With buf == NULL sets *len to the bytes needed. */
int rf_state_save(rf_loader *l, void *buf, size_t *len);
/* The message of the last failed rf_next ("" after the stream's end). The
 * string lives in the loader: it stays valid until rf_close, and its text
 * until the next rf_next call on that loader overwrites it (copy it before
 * calling rf_next again from any thread). */
const char *rf_last_error(rf_loader *l);
/* Stops the loader, joins its threads, frees everything (see "Threads" at the
 * top: batches still held are freed too). NULL is accepted. */
void rf_close(rf_loader *l);
/* rf_close that reports what the loader could not write: 0, or the first
 * error writing an output it was asked for (the trace: its last line is
 * written at close), message in err. A requested output that failed is an
 * error for the caller, not only a stats field. */
int rf_close_checked(rf_loader *l, rf_error *err);

/* Budget categories. */
enum rf_budget_category {
	RF_MEM_FETCH = 0, /* compressed bytes in flight / read buffers */
	RF_MEM_DECODED,   /* decoded block slabs */
	RF_MEM_BATCH,     /* collated batch buffers (ready or held by the consumer) */
	RF_MEM_SCRATCH,   /* decoder contexts and scratch */
	RF_MEM_METADATA,  /* shard indexes, plan, connections */
	RF_MEM_CATEGORIES
};

/* A block the skip policy (skip_blocks) left out: undeliverable after its
 * re-reads. */
typedef struct rf_skip {
	uint32_t shard;    /* index in the loader's shard list */
	uint32_t block;    /* block within the shard */
	uint32_t records;  /* records of the block */
	uint64_t epoch;    /* epoch and stream position (this rank's) of its first record */
	uint64_t position; /* met: batches keep their positions, the batch is smaller */
	char error[200];   /* why it was undeliverable */
} rf_skip;

typedef struct rf_stats {
	double elapsed_s;
	uint64_t batches; /* delivered to the consumer */
	uint64_t records;
	uint64_t payload_bytes; /* delivered record bytes */
	uint64_t decoded_bytes; /* decoded by workers */
	uint64_t fetched_bytes; /* read from storage */
	uint64_t blocks_decoded;
	double consumer_wait_s;     /* time spent inside rf_next waiting */
	double consumer_rate_bps;   /* r: batches/s excluding the consumer's waits */
	double producer_rate_bps;   /* c: batches/s the producer sustains */
	double coverage_s;          /* inventory / r */
	uint32_t depth_batches;     /* current read-ahead depth */
	uint32_t depth_max_batches; /* largest depth the budget allows */
	uint32_t ready_batches;     /* ready queue length now */
	uint64_t queue_samples;     /* occupancy samples taken */
	double queue_empty_fraction;
	double queue_partial_fraction;
	double queue_full_fraction;
	uint64_t queue_swings; /* empty <-> full transitions */
	uint64_t budget_bytes;
	uint64_t mem_bytes[RF_MEM_CATEGORIES];
	uint64_t mem_peak_bytes[RF_MEM_CATEGORIES];
	uint64_t mem_peak_total_bytes;
	double fetch_latency_p50_ms;
	double fetch_latency_p99_ms;
	double fetch_latency_max_ms;
	uint64_t fetch_retries;
	uint64_t fetch_errors;
	uint64_t records_skipped;
	uint32_t threads;
	/* the controller (fields added at the end: the struct only grows) */
	uint32_t depth_auto;              /* 1: the controller sizes the depth */
	uint32_t depth_target_batches;    /* ceil(r x cover target), before the budget cap */
	uint32_t depth_peak_batches;      /* largest depth so far */
	uint32_t inflight_target;         /* reads kept in flight (Little's law) */
	uint64_t depth_changes;           /* intervals that changed the depth */
	uint64_t depth_direction_changes; /* grow <-> shrink reversals */
	uint64_t intervals;               /* controller intervals so far */
	double cover_target_s;            /* target coverage T */
	double consumer_busy_s;           /* the consumer's own time between rf_next calls */
	double decode_busy_fraction;      /* decode threads' busy time / (threads x elapsed) */
	double inventory_batches;         /* ready + decoded + in flight, in batches */
	double decoded_batches;           /* of which decoded, not collated */
	double inflight_batches;          /* of which read or being read, not decoded */
	double fetch_latency_p90_ms;
	uint64_t pauses; /* pause episodes (slow fetches overlapping in time count once) */
	double pause_longest_s;
	double stall_in_s;        /* producer slower: inventory / (r - c) */
	uint64_t batch_bytes_avg; /* budget bytes per batch (measured) */
	char depth_reason[32];    /* last decision: hold, grow, shrink, ... */
	char diagnosis[32];       /* measuring, ok, producer_slow, budget_binds, always_full */
	char diagnosis_text[512]; /* the diagnosis in plain words */
	char pause_longest_source[256]; /* shard of the longest pause */
	uint64_t trace_lines;           /* lines written to the trace */
	char trace_error[256];          /* "" or why the trace stopped */
	uint64_t rereads;               /* blocks / indexes read again after failing a checksum */
	/* this rank's part of the consumer's epoch (every rank of the world takes
	 * the same number of records and batches; known at open) */
	uint32_t rank, world;
	uint64_t epoch;                   /* the consumer's epoch */
	uint64_t epoch_records;           /* records this rank yields in that epoch */
	uint64_t epoch_batches;           /* batches this rank yields in it (0: byte-limited) */
	uint64_t epoch_records_dropped;   /* tail drop: the job's records % world, no rank's */
	uint64_t epoch_records_padded;    /* pad_tail: records repeated to fill the tail */
	uint64_t epoch_records_drop_last; /* drop_last: this rank's last partial batch */
	uint64_t epoch_batches_later;     /* batches this rank yields in each later epoch */
	uint64_t blocks_skipped;          /* by the skip policy (records_skipped: positions) */
	uint32_t skips_listed;            /* the last min(blocks_skipped, 8) skips, oldest first */
	rf_skip skips[8];
	uint64_t fetch_hedges;     /* duplicate requests for reads slower than the store's p95 */
	uint64_t fetch_hedges_won; /* of which answered first */
	/* read by the open phase (shard headers, footers, index files, sidecars;
	 * fetched_bytes counts the units' reads) */
	uint64_t open_fetched_bytes;
	/* the index cache (index_cache) at the open: layouts found there (the
	 * shard's scan skipped), looked up and not found, and stored */
	uint64_t index_cache_hits, index_cache_misses, index_cache_puts;
	/* wake-ups and the engine's lock (fields added at the end) */
	uint64_t wakeups_workers;   /* decode workers signalled (only ever one that waits) */
	uint64_t wakeups_consumer;  /* rf_next waits woken (only while one waits) */
	uint64_t wakeups_loop;      /* eventfd writes to the loop thread (one while pending) */
	uint64_t waits_workers;     /* times a worker waited for work */
	uint64_t waits_consumer;    /* times rf_next waited for a batch */
	uint64_t lock_acquisitions; /* of the engine's mutex */
	double lock_hold_max_us;    /* the longest hold */
	double lock_hold_total_s;   /* every hold summed */
	char lock_hold_max_at[96];  /* where the longest hold was: "TAKER > GIVER" (functions) */
	/* direct_io (local files) */
	uint64_t direct_bytes;            /* read with O_DIRECT */
	uint64_t direct_refused_files;    /* whose filesystem refused O_DIRECT (page cache instead;
	                                   * the first is said once on stderr) */
	uint64_t fixed_reads;             /* reads into registered buffers (READ_FIXED) */
	uint64_t fixed_bytes;             /* bytes those reads asked for */
	uint64_t direct_register_refused; /* read buffers io_uring would not register
	                                   * (RLIMIT_MEMLOCK: plain reads; said once) */
	/* sequential shards (a single-frame .tar.zst): what entering a stream
	 * away from where its decoder stood cost (a resume, a rank's start, a
	 * unit no rank of this one takes) */
	uint64_t stream_skipped_bytes; /* decoded and dropped to reach a unit */
	uint64_t stream_more_reads;    /* extra reads its decoder asked for */
	/* where the node-aware defaults came from, and what is off */
	char threads_source[160];     /* "set (threads=N)" or "C CPUs usable (affinity A, cgroup
	                               * ... Q) / LOCAL_WORLD_SIZE L" */
	char host_budget_source[160]; /* "" (no host budget), "set" or "auto: 25% of ...", with
	                               * "; loaders L from LOCAL_WORLD_SIZE; name from the job" */
	char index_cache_off[256];    /* "" or why the index cache is off (said once on stderr) */
	/* index cache entries dropped because a unit contradicted the layout
	 * they gave (the shard changed under the same key): the next open
	 * scans those shards again */
	uint64_t index_cache_stale_drops;
	/* the event loop (io_backend): "io_uring", or "epoll" where io_uring
	 * is blocked or epoll was asked for; "" before the loop thread starts */
	char io_backend[16];
	uint32_t io_read_threads;     /* epoll: the pread threads' bound (0 on io_uring) */
	char io_backend_fallback[96]; /* why auto did not take io_uring, e.g.
	                               * "io_uring_setup: Operation not permitted"; else "" */
	/* the data cache of remote ranges (cache=read|readwrite; one block) */
	uint64_t data_cache_hits, data_cache_misses; /* reads of cached objects */
	uint64_t data_cache_hit_bytes;               /* served from the cache */
	uint64_t data_cache_store_bytes;             /* read from the store (cached objects) */
	uint64_t data_cache_written_bytes;           /* written to the cache */
	uint64_t data_cache_write_skipped;   /* not written: write-behind full, budget, disk */
	uint64_t data_cache_not_admitted;    /* outside the admitted subset (capacity / size) */
	uint64_t data_cache_verify_failures; /* cached ranges whose CRC failed: refetched */
	uint64_t data_cache_removed_files;   /* files of older object versions removed */
	uint64_t data_cache_used_bytes;      /* the cache's bytes on disk (this loader's view) */
	double data_cache_admit_fraction;    /* the policy: a stable subset of this fraction */
	char data_cache_off[160];            /* "" or why the cache (or its writing) is off */
	uint64_t data_cache_claim_waits;     /* misses that waited for another loader's fetch */
	uint64_t data_cache_claim_served;    /* of which the wait ended in a hit (one fetch) */
	uint64_t data_cache_claim_timeouts;  /* waits past their bound (30 s): fetched anyway */
	uint64_t data_cache_evictions;       /* object versions evicted (least recently used) */
	uint64_t data_cache_evicted_bytes;   /* their bytes on disk */
	uint64_t data_cache_rereads; /* re-reads of units that failed a check: from the store */
	/* the open phase (every shard's layout learned before the first batch) */
	uint64_t open_shards;         /* shards it opened */
	double open_s;                /* how long it took */
	uint32_t open_concurrency;    /* opens allowed at once (64 local; remote: up to 512) */
	uint32_t open_inflight_max;   /* the most in flight at once */
	uint32_t open_connections;    /* HTTP connections per host meanwhile (0: no remote) */
	uint32_t open_progress_lines; /* "opening shards" lines said on stderr */
	uint64_t open_reads;          /* its reads (open_fetched_bytes their bytes; a remote
	                               * .rfs or Parquet shard: one each, most often) */
	/* remote ranges whose bodies were cut: retries that asked only for the
	 * rest (same object version), and the bytes they kept */
	uint64_t fetch_resumes, fetch_resumed_bytes;
	/* the start: seconds from the open's start to the first batch planned
	 * (0: none yet), and how long after the open the reads kept its
	 * connections per host (open_connections) to read the first batch */
	double first_batch_s, start_connections_s;
	/* the manifest's index bundle: opens it served with no read of the
	 * shard, and its copies the format refused (read from the store) */
	uint64_t index_bundle_opens, index_bundle_drops;
} rf_stats;

/* Fills the first out_bytes bytes of *out (pass sizeof(rf_stats) as this
 * header declares it): the struct only grows at its end, so a program built
 * against an older, smaller rf_stats gets exactly the fields it knows, taken
 * from the same snapshot, and nothing past its struct is written; a size
 * larger than the library's rf_stats gets the extra bytes zeroed. Returns 0,
 * or -EINVAL for a bad loader, a NULL out, or out_bytes below
 * RF_STATS_BYTES_MIN (the struct up to and including `threads`). */
int rf_stats_get(rf_loader *l, rf_stats *out, size_t out_bytes);
#define RF_STATS_BYTES_MIN (offsetof(rf_stats, threads) + sizeof(uint32_t))
/* rf_stats.diagnosis is one of: measuring, ok, producer_slow, budget_binds,
 * always_full, depth_short (a fixed depth below what the pauses seen need). */
/* The stats (and the controller's diagnosis) as one JSON object; returns
 * the length written (excluding NUL) or -ENOSPC when cap is too small. */
int rf_stats_json(rf_loader *l, char *buf, size_t cap);
/* Both from one snapshot (rf_stats_get's rules for out / out_bytes), so a
 * report printing figures from *out agrees with the JSON to the digit. */
int rf_stats_get_json(rf_loader *l, rf_stats *out, size_t out_bytes, char *buf, size_t cap);

/* ---------------------------------------------- shard lists, verification */

/* The shards a configuration names (rf_config_add_url), expanded as rf_open
 * expands them: files, directories (their manifest.rfm when there is one,
 * else an MDS index.json, else their *.rfs, *.tar, *.mds, *.mds.zstd in name
 * order), manifests, MDS index.json files (local or http(s)/s3), brace
 * ranges, http(s):// and s3:// URLs, s3:// prefixes (listed). */
typedef struct rf_shard_ref {
	char *url;          /* as rf_open reads it (may hold credentials) */
	char *name;         /* the url for messages: credentials and queries removed */
	uint64_t size_hint; /* bytes a listing gives, UINT64_MAX when unknown */
	int listed;         /* 1: a manifest lists it, with the next four fields */
	uint64_t listed_bytes, listed_records, listed_line;
	const char *manifest; /* the manifest's path (owned by the list) */
	const char *format;   /* the format the name given chose ("megatron"; static), NULL:
	                       * the url's */
	uint32_t source;      /* a mixture's source it belongs to (1-based; its own format
	                       * options apply), 0 without a mixture */
} rf_shard_ref;

/* Fills *out with *count refs (rf_shard_refs_free); an expansion that fails
 * (a bad manifest, a directory without shards) is an error naming it. */
int rf_config_shards(const rf_config *cfg, rf_shard_ref **out, size_t *count, rf_error *err);
void rf_shard_refs_free(rf_shard_ref *refs, size_t count);
/* rf_verify_file for any shard reference the loader can read (a local file, http(s),
 * s3), read through the loader's fetch layer with cfg's settings (S3
 * credentials, CA file, retries): every check, plus what a manifest says of
 * it (size, records; a mismatch names the manifest line). */
int rf_verify_shard(const rf_config *cfg, const rf_shard_ref *ref,
                    void (*report)(void *ctx, const rf_error *e), void *ctx, uint32_t max_reports,
                    rf_error *err);
/* rf_tar_index_build for a tar the loader reads remotely (HTTP(S), S3, with
 * cfg's credentials and retries): its headers scanned through the fetch
 * layer, in large sequential ranges, and the index written to the local
 * idx_path (atomically). Upload it beside the tar as PREFIX.idx, or keep
 * it: the index cache already serves stores the loader cannot write to. */
int rf_tar_index_build_ref(const rf_config *cfg, const rf_shard_ref *ref, const char *idx_path,
                           rf_error *err);
/* rf_verify_shard for n shards through one fetch layer (connections kept
 * from one shard to the next); done (when non-NULL) gets each shard's
 * verdict (0 sound, else its code). Returns 0 when all are sound, else the
 * first failure's code with its message in err (a failure to set up the
 * fetch layer returns before any shard). */
int rf_verify_shards(const rf_config *cfg, const rf_shard_ref *refs, size_t n,
                     void (*report)(void *ctx, const rf_error *e),
                     void (*done)(void *ctx, size_t i, int rc), void *ctx, uint32_t max_reports,
                     rf_error *err);

/* ------------------------------------------------------- storage alone */

/* What rf_fetch_only measured. */
typedef struct rf_fetch_result {
	uint64_t shards;
	uint64_t bytes;    /* every byte of every shard object */
	uint64_t reads;    /* ranges of at most request_size */
	uint64_t requests; /* remote attempts (HTTP/S3), retries included */
	uint64_t retries;
	double seconds; /* from the first open to the last byte */
	/* direct_io (fields added at the end: the struct only grows) */
	uint64_t direct_bytes;         /* local bytes read with O_DIRECT */
	uint64_t direct_refused_files; /* local files whose filesystem refused O_DIRECT
	                                * (read through the page cache instead) */
	uint64_t fixed_reads;          /* local reads into registered buffers (READ_FIXED) */
	uint64_t fixed_bytes;          /* bytes those reads asked for */
	uint64_t registered_bytes;     /* read buffers registered with io_uring (direct_io) */
	int register_error;            /* 0, or why registering them was refused (-errno:
	                                * -ENOMEM is RLIMIT_MEMLOCK; -EOPNOTSUPP on epoll) */
	char io_backend[16];           /* the event loop: "io_uring" or "epoll" */
	uint32_t io_read_threads;      /* epoll: the pread threads' bound (0 on io_uring) */
	char io_backend_fallback[96];  /* why auto did not take io_uring; else "" */
} rf_fetch_result;

/* The storage path alone (`ringfeed bench --fetch-only`): fetches every byte
 * of the configured shards (whole objects, in request_size ranges, at most
 * `connections` reads in flight) through the same loop and sources as the
 * loader, without decoding anything. */
int rf_fetch_only(const rf_config *cfg, rf_fetch_result *out, rf_error *err);

/* ------------------------------------------------- the data cache's files */

/* What a look over a data cache directory found (ringfeed cache ...). */
typedef struct rf_data_cache_info {
	uint64_t objects;        /* object versions (records) */
	uint64_t ranges;         /* recorded ranges */
	uint64_t recorded_bytes; /* their bytes */
	uint64_t disk_bytes;     /* what the cache's files take on disk */
	uint64_t bad_ranges;     /* verify: ranges whose bytes fail their CRC-32C */
	uint64_t foreign;        /* records that are damaged or not the cache's */
	uint64_t removed;        /* clear: files removed */
} rf_data_cache_info;
enum { RF_DATA_CACHE_DU = 0, RF_DATA_CACHE_LS, RF_DATA_CACHE_VERIFY, RF_DATA_CACHE_CLEAR };
/* One object version (LS and VERIFY): its clean URL (no userinfo, query or
 * fragment), version, size, ranges and their bytes, and bad ranges. */
typedef void (*rf_data_cache_each_fn)(void *ctx, const char *url, const char *validator,
                                      uint64_t size, uint64_t ranges, uint64_t bytes, uint64_t bad);
/* Walks the data cache in dir (NULL or "": the default directory; the
 * directory rules of the loader's cache apply): DU sums, LS lists, VERIFY
 * reads every range back against its CRC, CLEAR removes the files the cache
 * writes (nothing else). 0, or -errno with err naming why. */
int rf_data_cache_admin(const char *dir, int action, rf_data_cache_each_fn each, void *ctx,
                        rf_data_cache_info *out, rf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* RINGFEED_H */
