/* ringfeed.h - the one public header of libringfeed.
 *
 * ringfeed is a storage read-ahead engine for training data: it reads dataset
 * shards (.rfs) from local files and HTTP/S3 object storage through one
 * io_uring loop, decodes them into a bounded pool, collates records into
 * batches and keeps just enough ready batches to hide read pauses, inside a
 * byte budget that covers every copy of the data.
 *
 * Conventions: functions return 0 (or a count) on success and a negative errno
 * value on failure; a message naming what was wrong and where is left in an
 * rf_error or in rf_last_error(). No global state. */
#ifndef RINGFEED_H
#define RINGFEED_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RF_VERSION_STRING "0.1.0"

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

/* Reads a local shard and checks everything: footer, index, every frame
 * (zstd checksum, declared sizes), every record table, the dataset figures.
 * Each problem found goes to report (when non-NULL), at most max_reports of
 * them (a damaged block does not stop the walk while the index is sound).
 * Returns 0 when the shard is sound, RF_E_CORRUPT when it is not (err holds
 * the first problem), or another negative errno for I/O errors. */
int rf_shard_verify(const char *path, void (*report)(void *ctx, const rf_error *e), void *ctx,
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

typedef struct rf_manifest_entry {
	char *url;      /* resolved: base dir (or URL) joined with a relative path */
	uint64_t bytes; /* shard file size */
	uint64_t records;
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
/* Adds a shard source: a path, directory, manifest, file://, http(s)://,
 * s3://bucket/key or s3://bucket/prefix/, with {000..063} brace ranges. */
int rf_config_add_url(rf_config *cfg, const char *url, rf_error *err);
int rf_config_set_allocator(rf_config *cfg, const rf_allocator *alloc);
/* Resume from a state produced by rf_state_save (copied). */
int rf_config_set_resume(rf_config *cfg, const void *state, size_t len, rf_error *err);
/* NUL-separated, double-NUL terminated list of option names with help text:
 * "name\0help\0name\0help\0\0". */
const char *rf_config_keys(void);

/* A collated batch. Ragged: record i is payload[offsets[i] .. offsets[i+1]).
 * Padded (row_bytes > 0): record i is the row payload[i*row_bytes ..], of
 * true length lengths[i], zero-filled to row_bytes. */
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
} rf_batch;

rf_loader *rf_open(const rf_config *cfg, rf_error *err);
/* Waits up to timeout_ms (-1 = forever) for the next batch. Returns 0 with
 * *out set, RF_END at the end of the stream, -ETIMEDOUT, or another negative
 * error (message in rf_last_error). RF_E_BUDGET without ending the stream
 * when the batches the consumer holds fill the budget (after a wait of about
 * 2 s): release some and call again. */
int rf_next(rf_loader *l, rf_batch **out, int timeout_ms);
/* Returns the batch's bytes to the budget. Batches may be released in any order. */
void rf_release(rf_loader *l, rf_batch *b);
/* The consumer's position (after the batches returned by rf_next so far).
 * With buf == NULL sets *len to the bytes needed. */
int rf_state_save(rf_loader *l, void *buf, size_t *len);
const char *rf_last_error(rf_loader *l);
void rf_close(rf_loader *l);

/* Budget categories. */
enum rf_budget_category {
	RF_MEM_FETCH = 0, /* compressed bytes in flight / read buffers */
	RF_MEM_DECODED,   /* decoded block slabs */
	RF_MEM_BATCH,     /* collated batch buffers (ready or held by the consumer) */
	RF_MEM_SCRATCH,   /* decoder contexts and scratch */
	RF_MEM_METADATA,  /* shard indexes, plan, connections */
	RF_MEM_CATEGORIES
};

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
	uint64_t pauses; /* fetches slower than the pause threshold */
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
} rf_stats;

int rf_stats_get(rf_loader *l, rf_stats *out);
/* The stats (and the controller's diagnosis) as one JSON object; returns
 * the length written (excluding NUL) or -ENOSPC when cap is too small. */
int rf_stats_json(rf_loader *l, char *buf, size_t cap);

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
} rf_fetch_result;

/* The storage path alone (`ringfeed bench --fetch-only`): fetches every byte
 * of the configured shards (whole objects, in request_size ranges, at most
 * `connections` reads in flight) through the same loop and sources as the
 * loader, without decoding anything. */
int rf_fetch_only(const rf_config *cfg, rf_fetch_result *out, rf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* RINGFEED_H */
