/* config.h - the loader configuration: one table of options (name, type,
 * default, bounds, help) shared by rf_config_set, rf_config_keys and the
 * documentation, plus the shard URLs, the batch allocator and the resume
 * position. Internal view of the opaque public rf_config. */
#ifndef RF_CONFIG_H
#define RF_CONFIG_H

#include "collate.h"
#include "ringfeed.h"
#include "source.h"
#include <stdbool.h>

/* X(name, type, default, min, max, help): the one table of options.
 * Types: U32, U64, BYTES (sizes like 64MiB), BOOL, STR, SECONDS (a decimal
 * number of seconds or a duration like 500ms; kept in nanoseconds). */
#define RF_CONFIG_OPTIONS(X)                                                                       \
	X(budget, BYTES, "1GiB", 1ull << 20, 1ull << 42,                                           \
	  "byte budget for every copy of the data (fetch, decoded, batches, scratch, metadata)")   \
	X(batch, U32, "64", 1, 1u << 24,                                                           \
	  "records per batch (the cap when batch_bytes is set; then default 65536)")               \
	X(batch_bytes, BYTES, "0", 0, 1ull << 32,                                                  \
	  "if > 0: at most this many payload bytes per batch (a larger record is a batch alone)")  \
	X(pad_to, BYTES, "0", 0, 256ull << 20,                                                     \
	  "0: ragged batches; else rows of this many bytes per record")                            \
	X(truncate, BOOL, "0", 0, 1, "padded: cut records longer than pad_to (else an error)")     \
	X(depth, U32, "0", 0, 4096,                                                                \
	  "read-ahead depth in ready batches (0 = automatic: the controller sizes it)")            \
	X(cover, SECONDS, "0", 0, 3600000000000ull,                                                \
	  "automatic depth: seconds of consumption to hold ready (e.g. 2.5 or 500ms; 0 = from "    \
	  "the "                                                                                   \
	  "pauses observed)")                                                                      \
	X(tune_interval, SECONDS, "200ms", 10000000ull, 10000000000ull,                            \
	  "controller interval: measure, decide the depth, write a trace line")                    \
	X(trace, STR, "", 0, 0, "write one JSON line per controller interval to this file")        \
	X(threads, U32, "0", 0, 256,                                                               \
	  "decode threads (0: the CPUs this process may use, affinity and cgroup quota, divided "  \
	  "by $LOCAL_WORLD_SIZE; 1..64)")                                                          \
	X(seed, U64, "0", 0, UINT64_MAX, "shuffle seed")                                           \
	X(epoch, U64, "0", 0, 1ull << 40, "first epoch")                                           \
	X(epochs, U64, "1", 0, 1ull << 40, "epochs to deliver (0 = endless)")                      \
	X(rank, U32, "0", 0, 65535, "this consumer's rank (< world)")                              \
	X(world, U32, "1", 1, 65536, "number of ranks sharing the dataset")                        \
	X(shuffle, BOOL, "1", 0, 1, "shuffle shards, blocks and records (0: manifest order)")      \
	X(shuffle_window, U32, "4096", 0, 16u << 20, "records per shuffle window (0/1: none)")     \
	X(pad_tail, BOOL, "0", 0, 1,                                                               \
	  "ranks get equal slices of the epoch: 0 drops the records % world left over (counted "   \
	  "in the stats), 1 pads with records from the start of the epoch's stream")               \
	X(drop_last, BOOL, "0", 0, 1, "drop each rank's last partial batch (every rank alike)")    \
	X(mixture, STR, "", 0, 0,                                                                  \
	  "a mixture file (text or JSON; docs/format.md): its sources, each with a weight, read "  \
	  "as one weighted stream (rf_config_add_source does the same in code)")                   \
	X(mix_samples, U64, "0", 0, 1ull << 50,                                                    \
	  "mixture: samples per mixture epoch (0: until the largest-weight source is read once; "  \
	  "smaller sources repeat with a fresh order each pass, larger ones continue next epoch)") \
	X(mix_stop, STR, "", 0, 0,                                                                 \
	  "mixture: none (default: sources repeat or continue) or first_exhausted (each epoch is " \
	  "one pass of every source and ends when the first one runs out)")                        \
	X(skip_blocks, U32, "0", 0, 1u << 20,                                                      \
	  "skip policy: skip a block still undeliverable after its re-reads, at most this many "   \
	  "per epoch (0: never, an undeliverable block stops the stream)")                         \
	X(skip_records, U64, "0", 0, UINT64_MAX,                                                   \
	  "skip policy: at most this many records of skipped blocks per epoch (0: no limit "       \
	  "beyond skip_blocks)")                                                                   \
	X(request_size, BYTES, "8MiB", 4096, 1ull << 30,                                           \
	  "largest read: adjacent blocks of one shard are coalesced up to this")                   \
	X(direct_io, STR, "off", 0, 0,                                                             \
	  "local files: auto (O_DIRECT once the files outgrow memory), on (O_DIRECT; where the "   \
	  "filesystem refuses it, the page cache), off (the page cache)")                          \
	X(direct_io_memory, BYTES, "0", 0, 1ull << 50,                                             \
	  "direct_io auto: the memory the page cache could hold (0: physical memory, or the "      \
	  "cgroup's memory limit when lower)")                                                     \
	X(io_backend, STR, "auto", 0, 0,                                                           \
	  "the event loop: auto (io_uring; epoll where a container or the kernel blocks it, said " \
	  "once; else $RINGFEED_IO_BACKEND), io_uring (an error where blocked) or epoll")          \
	X(io_threads, U32, "4", 1, 16, "epoll backend: threads doing the file reads (pread)")      \
	X(connections, U32, "16", 1, 1024, "HTTP/S3 connections per host")                         \
	X(open_connections, U32, "256", 1, 1024,                                                   \
	  "HTTP/S3 connections per host while shards open and the first batch is read (footers, "  \
	  "indexes and the first window: requests the consumer waits on; the larger of this and "  \
	  "connections; the reads after the first batch keep connections, and so does the first "  \
	  "batch when connections is given and this is not)")                                      \
	X(open_progress, BOOL, "1", 0, 1,                                                          \
	  "an open past 2 s says how far it got on stderr every 2 s and when it ends (0: silent; " \
	  "the stats keep the figures)")                                                           \
	X(retries, U32, "5", 0, 100,                                                               \
	  "retries per request after errors other than throttling (throttle_wait bounds those); "  \
	  "an attempt that kept 64 KiB of a cut range uses none (the rest is asked)")              \
	X(throttle_wait, SECONDS, "20s", 1000000ull, 3600000000000ull,                             \
	  "HTTP/S3: backoff a request may spend in total riding out throttling (429, 503 "         \
	  "SlowDown) before it fails; retries counts the other errors")                            \
	X(connect_timeout_ms, U32, "10000", 1, 600000, "HTTP connect timeout")                     \
	X(request_timeout_ms, U32, "60000", 1, 3600000, "HTTP request timeout")                    \
	X(low_speed_bytes_per_s, U32, "1024", 0, 1u << 30,                                         \
	  "HTTP: a transfer slower than this for low_speed_time_s is retried (0: never)")          \
	X(low_speed_time_s, U32, "30", 1, 3600, "HTTP: seconds below low_speed_bytes_per_s")       \
	X(ca_file, STR, "", 0, 0,                                                                  \
	  "CA bundle for HTTPS (default $AWS_CA_BUNDLE, $CURL_CA_BUNDLE, $SSL_CERT_FILE)")         \
	X(s3_endpoint, STR, "", 0, 0,                                                              \
	  "S3 endpoint URL (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the profile's, "      \
	  "else AWS)")                                                                             \
	X(s3_region, STR, "", 0, 0,                                                                \
	  "S3 region (default $AWS_REGION, $AWS_DEFAULT_REGION, the profile's, else us-east-1)")   \
	X(s3_addressing, STR, "auto", 0, 0,                                                        \
	  "S3 addressing: auto (virtual-hosted on AWS endpoints, path-style elsewhere, or the "    \
	  "profile's addressing_style), virtual or path")                                          \
	X(gs_endpoint, STR, "", 0, 0,                                                              \
	  "gs:// endpoint (default $STORAGE_EMULATOR_HOST, else https://storage.googleapis.com); " \
	  "OAuth tokens from the Google chain, or HMAC keys given as S3 keys")                     \
	X(hedge, BOOL, "1", 0, 1,                                                                  \
	  "HTTP/S3: a range read slower than the store's recent p95 gets one duplicate request "   \
	  "(at most ~5% extra, none while the store errs); the first answer wins")                 \
	X(hedge_floor, SECONDS, "50ms", 1000000ull, 60000000000ull,                                \
	  "HTTP/S3: never hedge a read younger than this")                                         \
	X(s3_access_key, STR, "", 0, 0,                                                            \
	  "S3 access key (default $AWS_ACCESS_KEY_ID; without a key pair: anonymous)")             \
	X(s3_secret_key, STR, "", 0, 0,                                                            \
	  "S3 secret key (else $AWS_SECRET_ACCESS_KEY; as a flag it is visible to local users "    \
	  "in /proc/PID/cmdline and ps: prefer the variable)")                                     \
	X(s3_session_token, STR, "", 0, 0,                                                         \
	  "S3 session token (else $AWS_SESSION_TOKEN; as a flag it is visible to local users "     \
	  "in /proc/PID/cmdline and ps: prefer the variable)")                                     \
	X(s3_no_sign, BOOL, "0", 0, 1,                                                             \
	  "S3: send requests unsigned (public buckets) instead of looking for credentials "        \
	  "(--no-sign-request)")                                                                   \
	X(inject, STR, "", 0, 0, "fault injection spec (testing; else $RINGFEED_INJECT)")          \
	X(host_budget, BYTES, "0", 0, 1ull << 50,                                                  \
	  "if > 0: a byte budget shared by every loader on this host with the same "               \
	  "host_budget_name (each loader's reservations need room in both budgets); auto: 25% "    \
	  "of the memory this process may use (cgroup limit, else physical)")                      \
	X(host_budget_name, STR, "default", 0, 0,                                                  \
	  "name of the host budget: 1..64 of A-Z a-z 0-9 . _ - (/dev/shm/ringfeed-hb-NAME)")       \
	X(host_loaders, U32, "0", 0, 256,                                                          \
	  "loaders that will share the host budget (e.g. the local world size; 0: unknown): "      \
	  "room for each one's minimum is kept until that many are attached")                      \
	X(seq_len, U32, "0", 0, 1u << 24,                                                          \
	  "token files: if > 0, records are packed windows of seq_len + 1 tokens (consecutive "    \
	  "windows share one token; a file's shorter tail is dropped)")                            \
	X(token_dtype, STR, "", 0, 0,                                                              \
	  "headerless token .bin files (nanoGPT): the token type (uint16, uint32, int32, ...)")    \
	X(eot_token, STR, "", 0, 0,                                                                \
	  "headerless / llm.c token files: records are documents split at this end-of-text "       \
	  "token (e.g. 50256); else runs of 1024 tokens")                                          \
	X(token_out, STR, "", 0, 0,                                                                \
	  "windows: widen the tokens to int32 or int64 in the decode copy (default: as stored)")   \
	X(tfrecord_raw, BOOL, "0", 0, 1,                                                           \
	  "TFRecord: records are their bytes (one field, \"record\"), not tf.train.Examples")      \
	X(tar_fields, STR, "", 0, 0,                                                               \
	  "WebDataset tar: fields shown under another name, FIELD=NAME[,...] (e.g. "               \
	  "jpg=image,cls=label: members KEY.jpg are the field image)")                             \
	X(columns, STR, "", 0, 0,                                                                  \
	  "Parquet: the columns a record has (comma list, e.g. text,id); default: every column "   \
	  "of a type the reader decodes")                                                          \
	X(index_cache, STR, "", 0, 0,                                                              \
	  "indexes learned by scanning (tar) of objects it cannot write beside: cache directory "  \
	  "(an absolute path; default $RINGFEED_CACHE_DIR, else $XDG_CACHE_HOME/ringfeed/index, "  \
	  "else ~/.cache/ringfeed/index) or off")                                                  \
	X(index_cache_bytes, BYTES, "512MiB", 1ull << 16, 1ull << 42,                              \
	  "the index cache's bound: least recently used entries go beyond it")                     \
	X(cache, STR, "auto", 0, 0,                                                                \
	  "data cache of remote objects' ranges, shared by the loaders of this host: off, read, "  \
	  "readwrite, or auto (readwrite where the directory is usable, else off; local datasets " \
	  "are never cached)")                                                                     \
	X(cache_dir, STR, "", 0, 0,                                                                \
	  "the data cache's directory (absolute; default $RINGFEED_CACHE_DIR/data, else "          \
	  "$XDG_CACHE_HOME/ringfeed/data, else ~/.cache/ringfeed/data)")                           \
	X(cache_bytes, BYTES, "16GiB", 1ull << 20, 1ull << 50,                                     \
	  "the data cache's bound, host-wide: least recently used objects not in use are "         \
	  "evicted; a dataset larger than it caches a stable subset of ranges (by hash), "         \
	  "capacity / dataset size of them; the disk keeps 5% free")                               \
	X(verify_jobs, U32, "0", 0, 64,                                                            \
	  "ringfeed verify (rf_verify_shards): shards verified at once, each with its own "        \
	  "connections; results still come in shard order (0: the CPUs this process may use, at "  \
	  "least 8 when a shard is remote: its reads wait on the store)")

typedef enum rf_config_key {
#define RF_CONFIG_ENUM(name, type, def, lo, hi, help) RF_CFG_##name,
	RF_CONFIG_OPTIONS(RF_CONFIG_ENUM)
#undef RF_CONFIG_ENUM
	    RF_CFG_COUNT
} rf_config_key;

#define RF_CONFIG_URLS_MAX  1000000
#define RF_HOST_BUDGET_AUTO UINT64_MAX /* host_budget=auto (engine/defaults.h) */

struct rf_config {
	uint32_t magic;
	uint64_t num[RF_CFG_COUNT]; /* U32/U64/BYTES/BOOL values */
	char *str[RF_CFG_COUNT];    /* STR values (NULL = unset) */
	bool set[RF_CFG_COUNT];     /* given explicitly */
	char **urls;
	size_t nurls, urls_cap;
	/* a mixture's sources (rf_config_add_source): source i is the URLs from
	 * src_url[i] to the next source's, with weight src_weight[i] (millionths) */
	size_t *src_url;
	uint64_t *src_weight;
	uint32_t nsources, sources_cap;
	/* a source's own options (a mixture file's KEY=VALUE): the formats'
	 * getter consults them before the loader's (rf_config_source_option) */
	struct rf_src_option *src_opt;
	uint32_t nsrc_opts, src_opts_cap;
	rf_allocator alloc;
	bool has_alloc;
	bool has_resume;
	rf_position resume;  /* decoded header (segs not kept: resume_buf has them) */
	uint8_t *resume_buf; /* the state's bytes, decoded again at rf_open */
	size_t resume_len;
	/* internal, tests only (0: default): the loop's op table, and the reads in
	 * flight at most (above the table, to make the loop refuse reads) */
	uint32_t test_loop_ops, test_reads_max;
};

static inline uint64_t rf_cfg(const rf_config *c, rf_config_key k)
{
	return c->num[k];
}
static inline const char *rf_cfg_str(const rf_config *c, rf_config_key k)
{
	return c->str[k] && *c->str[k] ? c->str[k] : NULL;
}
/* Fetch options from the config (strings point into cfg). */
void rf_config_fetch_options(const rf_config *cfg, rf_fetch_options *out);
/* The collation parameters (with the batch_bytes default for batch). */
void rf_config_collate_params(const rf_config *cfg, rf_collate_params *out);
struct rf_fmt_optset;
/* Every format's options, each parsed by its format from the config (NULL:
 * defaults) through a getter over the table's keys (shards/format.h,
 * rf_fmt_config); -EINVAL with err naming the option when a value is not
 * one. Freed with rf_fmt_optset_free. */
int rf_config_format_options(const rf_config *cfg, struct rf_fmt_optset **out, rf_error *err);
/* The index cache's directory: NULL when index_cache is "off", "" for the
 * default (rf_icache_default_dir), else the absolute path set. */
const char *rf_config_index_cache_dir(const rf_config *cfg);
/* Adds a source with its weight (millionths); later URLs are its. */
int rf_config_push_source(rf_config *cfg, uint64_t weight, rf_error *err);

/* One option of one mixture source, parsed and checked as the loader's. */
typedef struct rf_src_option {
	uint32_t source; /* 0-based */
	uint32_t key;    /* rf_config_key */
	uint64_t num;
	char *str; /* a STR option's value */
} rf_src_option;
#define RF_SRC_OPTIONS_MAX 65536u /* per config, every source together */

/* Sets key=value for the last source added: only the options a format
 * reads (its options hook asks for them: seq_len, token_dtype, columns...)
 * may differ per source; any other key is the whole loader's and is
 * refused naming it, as is an unknown key or a value the table refuses. */
int rf_config_source_option(rf_config *cfg, const char *key, const char *value, rf_error *err);
/* Source `source`'s format options: its own over the loader's, or *out
 * NULL when it has none (the loader's apply). Freed with
 * rf_fmt_optset_free. */
int rf_config_source_format_options(const rf_config *cfg, uint32_t source,
                                    struct rf_fmt_optset **out, rf_error *err);
/* Deep copy (for the loader, which may outlive the caller's config). */
rf_config *rf_config_dup(const rf_config *cfg);

#endif
