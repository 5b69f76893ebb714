/* format.h - the format seam: what a shard format implements so that the
 * engine (open phase, planner, budget, decoder), the URL expansion and the
 * store listings can use it without knowing it. `.rfs` is the first
 * implementation (rfs_format.c); a new format is one file plus one row of
 * the registry (format.c). See docs/design.md, "How to add a format".
 *
 * A format describes a shard as a *layout*: an rf_shard_index (include/
 * ringfeed.h) whose entries are its read units (`block[u]`: offset, stored
 * bytes = compressed_bytes, decoded bytes, records, first record) plus the
 * dataset figures the budget sizes from (largest unit stored / decoded,
 * largest record). The planner orders units and records; the scheduler
 * reads a unit's stored bytes with one ranged read; a worker asks the
 * format to decode them into a record table.
 *
 * Contracts:
 * - Everything a format reads is untrusted. Every count, offset and length
 *   is checked against the object's size before use; errors are negative
 *   errno (RF_E_CORRUPT for bad bytes) with a message naming the shard (the
 *   redacted `name`), what was wrong and where (unit, offset).
 * - Memory: open asks for bytes through `want` and says beforehand the most
 *   it will allocate when it parses them (`parse_bound`); the engine
 *   reserves both from the budget before either exists, and holds
 *   `rf_fmt_open.held_bytes` (what the format reports it keeps) after.
 * - Threads: open steps run on the loop thread (one shard at a time per
 *   rf_fmt_open); decode runs on any worker, concurrently for different
 *   units of one shard: it must not write the layout or `priv`.
 * - Formats include only base/ and shards/ headers: they know nothing of
 *   scheduling, budgets or stores. */
#ifndef RF_FORMAT_H
#define RF_FORMAT_H

#include "ringfeed.h"
#include "util.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Token dtypes: the codes of Megatron's indexed_dataset.py (DType), plus
 * uint32 for llm.c's version 7 files. */
enum {
	RF_TOK_NONE = 0,
	RF_TOK_U8 = 1,
	RF_TOK_I8 = 2,
	RF_TOK_I16 = 3,
	RF_TOK_I32 = 4,
	RF_TOK_I64 = 5,
	RF_TOK_F64 = 6,
	RF_TOK_F32 = 7,
	RF_TOK_U16 = 8,
	RF_TOK_U32 = 9,
	RF_TOK_DTYPES
};
/* "uint16" for RF_TOK_U16; NULL for an unknown code. */
const char *rf_tok_dtype_name(int code);
/* Bytes of one token (0 for an unknown code). */
unsigned rf_tok_dtype_bytes(int code);
/* The code of "uint16", "int32", ... ; RF_TOK_NONE when unknown. */
int rf_tok_dtype_parse(const char *name);

/* How a format reads the loader's options: the engine hands a getter over
 * its config (the keys of its option table, engine/config.h) and each
 * format that has options parses its own from it (rf_format.options), with
 * its own checks and messages. The engine knows no format's option. */
typedef struct rf_fmt_config {
	/* key's value: 0 with *num (a number's or boolean's value) and *str (a
	 * string's; NULL when unset or empty); -ENOENT when the config has no
	 * such key. */
	int (*get)(void *ctx, const char *key, uint64_t *num, const char **str);
	void *ctx;
} rf_fmt_config;

/* A number / boolean option's value (0 with no config); a string option's
 * (NULL when unset, empty or no config). -EINVAL naming the key when the
 * config has no such key (a format asking for an option nobody declared). */
int rf_fmt_cfg_num(const rf_fmt_config *cfg, const char *key, uint64_t *v, rf_error *err);
int rf_fmt_cfg_str(const rf_fmt_config *cfg, const char *key, const char **v, rf_error *err);

/* Every format's options, parsed once from a config (each row's options
 * hook): what the engine holds and hands to each shard's open. Opaque. */
typedef struct rf_fmt_optset rf_fmt_optset;
struct rf_format;
/* Parses every format's options from cfg (NULL: all defaults) into *out
 * (freed with rf_fmt_optset_free): -EINVAL naming the option when a value
 * is not one (the first format's complaint, in the registry's order). */
int rf_fmt_optset_new(const rf_fmt_config *cfg, rf_fmt_optset **out, rf_error *err);
void rf_fmt_optset_free(rf_fmt_optset *set);
/* fmt's own options in set (rf_fmt_open.opt), or NULL (set NULL, or fmt
 * has no options: its defaults). */
const void *rf_fmt_optset_for(const rf_fmt_optset *set, const struct rf_format *fmt);

/* How strongly a format claims a name (an object's file name or key). */
enum {
	RF_FMT_NO = 0,    /* not this format's */
	RF_FMT_MAYBE = 1, /* an explicitly named object of unknown kind: try it */
	RF_FMT_YES = 2,   /* this format's name (suffix): listings and directories take it */
};

/* open_step's answers (errors are negative) */
enum {
	RF_FMT_DONE = 0, /* o->index (and o->priv) are set: the layout is known */
	RF_FMT_NEED = 1, /* read o->want, then call open_step again */
};

/* A byte range an open step asks for. */
typedef struct rf_fmt_want {
	/* NULL: the shard's own object. Otherwise another object's URL, made
	 * by the format from o->url (a sidecar: Megatron's PREFIX.idx beside
	 * PREFIX.bin); owned by the format state, valid until the next step. */
	const char *object;
	uint64_t offset, len; /* [offset, offset + len) of that object */
	/* A range inside the bytes the previous step received is served from
	 * them (no second read). The engine may deliver a shorter range ending
	 * at the same byte
	 * (offset + len - got_len), never shorter than min_len: a format asks
	 * for a generous first read (the last 4 KiB of a local .rfs, 8 KiB of
	 * a remote one: footer and index in one read) and copes with the least
	 * it needs when the budget has no room for more. 0 = exactly len. */
	uint64_t min_len;
	/* The most the format allocates when it parses these bytes (the
	 * engine reserves it with the buffer, before the read). */
	uint64_t parse_bound;
	/* An optional sidecar (object set): when it does not exist, the next
	 * step is called with rf_fmt_open.absent set, got NULL, got_len 0, and
	 * no error. "Does not exist": a local ENOENT, HTTP 404, and for s3://
	 * also 403 (S3 answers 403 for a missing key when the caller may not
	 * list the bucket; the shard itself was read with the same
	 * credentials). Any other failure is an error naming the sidecar.
	 * Nothing is reserved for an absent sidecar's bytes. */
	bool optional;
	/* With optional: the sidecar is never read from the store, only the
	 * index cache may answer it (engine/open.c), else it is absent. For a
	 * presigned URL, whose signature is the shard's, not the sidecar's:
	 * object is then the sidecar's name without the query, the cache's
	 * key only. */
	bool cache_only;
} rf_fmt_want;

/* One shard's open, step by step. The engine fills the inputs and the
 * delivered bytes; the format fills want, and at DONE index and priv. */
typedef struct rf_fmt_open {
	/* inputs (constant during the open) */
	const char *url;  /* what is opened: may carry credentials: never print it */
	const char *name; /* the redacted name: the only one messages show */
	uint64_t size;    /* the shard object's bytes */
	bool local;       /* a local file (a larger first read is cheap) */
	/* this format's own options (its struct, filled by its row's options
	 * hook from the loader's config: rf_fmt_optset_for; a tool or a test
	 * may fill the struct itself); NULL = defaults */
	const void *opt;
	/* the last request's bytes (NULL on the first call) */
	const uint8_t *got;
	uint64_t got_offset, got_len;
	uint64_t got_object_size; /* size of want.object when it was another object */
	bool absent;              /* the optional sidecar the last want named does not exist */
	/* outputs */
	rf_fmt_want want;
	/* Set with an error the same bytes read again cannot change (the magic
	 * is absent: not a shard of this format). Otherwise an RF_E_CORRUPT
	 * step is retried by reading the same range again (damage in transit),
	 * at most `retries` times. */
	bool final;
	rf_shard_index *index; /* at DONE: the layout (freed with the format's close) */
	void *priv;            /* at DONE: the format's per-shard state, or NULL */
	/* This shard's units are stored as they decode: the engine sets it to
	 * the format's `in_place` before the first step; a format may clear it
	 * for a layout that decodes by copy (token windows overlap). */
	bool in_place;
	/* After every step: what the format holds now (its state, and at DONE
	 * the layout and priv), never more than it held before the step plus
	 * the step's parse_bound. The engine keeps exactly this reserved. */
	uint64_t held_bytes;
	/* the format's own, between steps: a small inline area (a format that
	 * needs more allocates `state` and counts it in held_bytes) */
	uint64_t scratch[8];
	void *state;
	uint32_t step;
} rf_fmt_open;

/* What a decoded unit is: `records` records whose bytes are
 * base[end(i-1) .. end(i)), end(-1) = 0, with the ends read through
 * rf_record_end (the table may be unaligned). `base` is inside the unit's
 * decoded slab, or inside its stored bytes for a format whose units are
 * stored as they decode (`rf_format.in_place`). */
typedef struct rf_unit_records {
	const uint8_t *base;
	const uint32_t *ends;
	uint32_t records;
	/* Multi-field records (a WebDataset sample's members, an MDS sample's
	 * columns); all NULL for a single-field format (.rfs), whose record is
	 * its bytes. Record i's fields are fields[field_first[i] ..
	 * field_first[i + 1]), each name at most once, their bytes inside the
	 * record's; its key is keys[key_first[i] .. key_first[i + 1]) (not
	 * NUL-terminated). The arrays may live in the format's per-shard state
	 * (read-only) or in dst. A format that fills this struct sets every
	 * field (designated initialisers: what it does not know is NULL). */
	const struct rf_rec_field *fields;
	const uint32_t *field_first; /* records + 1 entries */
	const char *keys;
	const uint32_t *key_first; /* records + 1 entries */
} rf_unit_records;

/* A sequential layout's decode (rf_format.decode_seq) asks for more of the
 * shard's bytes with RF_FMT_MORE: the caller reads [offset, offset + len)
 * of the shard object (len <= cap) and calls again for the same unit with
 * those bytes as src, `again` set; dst keeps what the calls before wrote. */
enum { RF_FMT_MORE = 2 };
typedef struct rf_fmt_more {
	uint64_t cap;           /* in: the most one request may ask for (the caller's buffer) */
	bool again;             /* in: this call follows an RF_FMT_MORE for the same unit */
	uint64_t offset, len;   /* out, at RF_FMT_MORE */
	uint64_t skipped_bytes; /* out: decoded bytes this call decoded and dropped to
	                         * reach the unit (a resume, a rank's start, a unit
	                         * read out of order): the cost of entering a stream */
} rf_fmt_more;

/* One field of a multi-field record. */
typedef struct rf_rec_field {
	uint32_t name;   /* index into the shard's field names (rf_format.field_names) */
	uint32_t offset; /* its bytes: base[offset, offset + len) */
	uint32_t len;
} rf_rec_field;

/* Reads the next bytes of an object, at most cap, into buf: *got = 0 at
 * its end. For a format's dataset index (rf_format.expand). */
typedef int (*rf_fmt_stream_fn)(void *ctx, uint8_t *buf, size_t cap, size_t *got, rf_error *err);

typedef struct rf_format {
	const char *name; /* "rfs": shown in messages, inspect, stats */
	/* NULL-terminated: the suffixes of the names this format takes (".tar",
	 * ".tar.gz"): without a claim hook, a last component ending in one,
	 * after at least one other character, is claimed YES (listings and
	 * directories take it), any other not at all. The messages that say
	 * what a listing takes list them (rf_format_patterns): the one list of
	 * a format's names (test_format checks each is claimed YES). */
	const char *const *names;
	/* A claim other than by names, for an object's last name component
	 * (no query): RF_FMT_NO / MAYBE / YES (an explicitly named object of
	 * unknown kind; TFRecord's NAME.tfrecord-00000-of-00010). It decides
	 * alone: it reads names through rf_fmt_names_have. Pure. May be NULL. */
	int (*claim)(const char *name);
	/* One open step (see rf_fmt_open). Returns RF_FMT_NEED, RF_FMT_DONE,
	 * or a negative errno with err set. */
	int (*open_step)(rf_fmt_open *o, rf_error *err);
	/* Frees what an unfinished open holds (o->state); the engine calls it
	 * once when an open stops before DONE or after DONE (then it frees
	 * only the state, not index/priv). May be NULL. */
	void (*open_abort)(rf_fmt_open *o);
	/* Frees a layout and its private state (from DONE). */
	void (*close)(rf_shard_index *index, void *priv);
	/* Decodes unit u from its stored bytes (src, src_len = the unit's
	 * stored bytes) into dst (dst_cap >= the unit's decoded bytes; for an
	 * in_place format dst holds only the record table, dst_cap >=
	 * rf_fmt_table_bytes(records)), checks everything it can (checksums,
	 * sizes, the record table), and fills *out. RF_E_CORRUPT when the
	 * bytes are bad: the engine reads them again (they may have been
	 * damaged in transit), then fails or skips the unit. */
	int (*decode)(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
	              const void *src, size_t src_len, void *dst, size_t dst_cap,
	              rf_unit_records *out, const char *name, rf_error *err);
	/* The URL (malloc'd) of the object whose bytes the units are, when it
	 * is not the named one: Megatron's PREFIX.bin for PREFIX.idx or PREFIX.
	 * NULL (or a NULL hook): the name itself. The URL expansion calls it. */
	char *(*shard_object)(const char *url);
	/* For a local path the user named: the name this format reads it by,
	 * when that is another (malloc'd): Megatron's PREFIX.idx for PREFIX.bin
	 * or a bare PREFIX when PREFIX.idx exists. NULL: not this format's. */
	char *(*local_name)(const char *path);
	/* The records' payload bytes of a layout (what `inspect` reports);
	 * NULL: its decoded bytes. */
	uint64_t (*payload_bytes)(const rf_shard_index *ix);
	/* Units are stored as they decode (no compression): the engine keeps
	 * the read's buffer as the records' bytes and reserves only the table,
	 * never the unit's bytes twice. */
	bool in_place;
	/* Multi-field formats: the shard's field names (names[i] is the name
	 * of rf_rec_field.name == i, NUL-terminated, distinct), valid until
	 * close; returns their count. NULL for a single-field format. The
	 * engine interns them per dataset at open. */
	uint32_t (*field_names)(const void *priv, const char *const **names);
	/* An in_place format whose decode writes more than the record table
	 * into dst (fields, keys: MDS): the bytes unit u needs there. NULL:
	 * rf_fmt_table_bytes(records). */
	uint64_t (*table_bytes)(const rf_shard_index *ix, const void *priv, uint32_t u);
	/* Dataset-level indexes (MDS's index.json): the file name such an
	 * index has (a directory holding one stands for it), or NULL. */
	const char *expand_name;
	/* Lists the shards an index names, calling add for each in order with
	 * its name relative to the index's directory (one name component:
	 * never a path) and its size when the index says it (UINT64_MAX when
	 * not). It reads the index through `read` (the engine opens it), in
	 * pieces, holding at most expand_bytes while it runs (the engine
	 * reserves them), however large the index. */
	int (*expand)(rf_fmt_stream_fn read, void *rctx, const char *name,
	              int (*add)(void *ctx, const char *basename, uint64_t size_hint,
	                         rf_error *err),
	              void *ctx, rf_error *err);
	uint64_t expand_bytes;
	/* A layout worth keeping in the index cache (engine/icache.c) for a
	 * store the loader cannot write beside: true when priv's layout was
	 * costly to learn (a tar's header scan). NULL: never cached. */
	bool (*cacheable)(const void *priv);
	/* The layout as the bytes of the optional sidecar the format's open
	 * reads (a tar's PREFIX.idx), so that the cache can answer that
	 * sidecar's want: the open then checks them as it checks the file's. */
	int (*sidecar_write)(const rf_shard_index *ix, const void *priv, FILE *out,
	                     const char *name, rf_error *err);
	/* True when priv's layout came from the index cache's entry (what
	 * sidecar_write wrote), not from a scan or an index file: a unit that
	 * contradicts it makes the engine drop the entry. NULL: never. */
	bool (*layout_cached)(const void *priv);
	/* The sidecar index file's suffix (".idx"): a listed PREFIX + sidecar
	 * beside a listed PREFIX + one of sidecar_suffixes (".tar") is this
	 * format's sidecar, not a shard (not a Megatron PREFIX.idx). NULL: none. */
	const char *sidecar;
	const char *const *sidecar_suffixes;
	const char *cache_tag;  /* the cache key's format name ("tar") */
	uint32_t cache_version; /* bumped when sidecar_write's bytes change */
	/* Sequential layouts (rf_shard_index.sequential): decode then goes
	 * through decode_seq, never decode. *state is the decoder state of one
	 * stream (NULL at first: decode_seq allocates at most seq_state_bytes(ix, priv),
	 * which the caller has reserved; seq_free frees it). It serves any
	 * unit of the shard whose layout it was first used with (the caller
	 * frees it before giving it to another shard), in any order: a unit
	 * at or after where the stream stands decodes forward to it, one
	 * before restarts the stream (both add to more->skipped_bytes); the
	 * bytes it lacks it asks for with RF_FMT_MORE. src/src_len are bytes
	 * of the shard from src_offset: on the first call the unit's stored
	 * bytes, after RF_FMT_MORE the bytes asked for. Returns 0 (*out set as
	 * by decode), RF_FMT_MORE (more->offset/len set) or a negative errno
	 * (the state is then reset: the next call starts the stream again).
	 * One call at a time per state; different states run concurrently. */
	int (*decode_seq)(void **state, const rf_shard_index *ix, const void *priv, uint32_t u,
	                  const void *src, size_t src_len, uint64_t src_offset, void *dst,
	                  size_t dst_cap, rf_unit_records *out, rf_fmt_more *more, const char *name,
	                  rf_error *err);
	void (*seq_free)(void *state);
	/* the most one decode_seq state of this layout holds (a zstd stream's:
	 * its window as the open met it, the carry, the scratch) */
	uint64_t (*seq_state_bytes)(const rf_shard_index *ix, const void *priv);
	/* The layout's largest_record_bytes is a bound the open could set
	 * before decoding (Parquet: rows' sizes are known only decoded), not
	 * the exact largest record: the verifier checks records stay within it. */
	bool largest_record_bound;
	/* The format's options: parses those it reads from cfg (NULL: its
	 * defaults) into out (options_bytes, zeroed), checking each value
	 * (-EINVAL with a message naming the option); the engine calls it once
	 * per loader and hands the struct to every open as rf_fmt_open.opt.
	 * NULL: the format has no options (opt is then NULL, or what a tool
	 * sets). Formats that share options (the token files) share a parser. */
	int (*options)(const rf_fmt_config *cfg, void *out, rf_error *err);
	uint32_t options_bytes;
} rf_format;

/* The record table an in_place unit needs in its slab: a u32 end per record. */
static inline uint64_t rf_fmt_table_bytes(uint32_t records)
{
	return 4 * (uint64_t)records + 4;
}

/* The layout's figures from its units: the largest unit stored and
 * decoded, the stored and decoded totals (records and the largest record
 * are the format's to set). For formats that build a layout. */
void rf_fmt_layout_sums(rf_shard_index *ix);

/* True when leaf ends with suffix after at least one other character. */
bool rf_fmt_name_has(const char *leaf, const char *suffix);
/* True when leaf ends so with one of names (NULL-terminated; may be NULL). */
bool rf_fmt_names_have(const char *const *names, const char *leaf);
/* The last path component of a name or URL, without a query or fragment,
 * into buf (a presigned query never reaches a claim); returns buf. */
const char *rf_fmt_leaf(const char *name, char *buf, size_t cap);

/* ------------------------------------------------------------- registry */

/* The formats, in claim order (registry.c). */
const rf_format *const *rf_formats(uint32_t *count);
/* The format that claims name most strongly (ties: registry order), or
 * NULL when none does. With `explicit_name` (the user named this object),
 * a MAYBE claim counts; a listing or a directory takes YES only. */
const rf_format *rf_format_for(const char *name, bool explicit_name);
/* f's claim on name (its last path component, without a query). */
int rf_format_claim(const rf_format *f, const char *name);
/* The next format after `after` in registry order that claims name at
 * least MAYBE, or NULL: an explicitly named object that a MAYBE format
 * finds is not its own (an error with `final` set) is tried by the next
 * (a remote PREFIX.bin: not llm.c, not .rfs, a Megatron dataset's tokens). */
const rf_format *rf_format_next(const char *name, const rf_format *after);
/* True when a listing or a directory should take this name as a shard. */
bool rf_format_is_shard_name(const char *name);
/* True when name (a listed file name or URL) is PREFIX.idx and sorted (the
 * listing's n names, strcmp order) holds PREFIX + a suffix of a format's
 * sidecar_suffixes: that shard's index file, not a shard. */
bool rf_format_is_sidecar(const char *name, char *const *sorted, size_t n);
/* True when a listing or a directory (sorted: its n names, strcmp order)
 * takes name as a shard: a format claims it YES and it is not another
 * listed shard's sidecar (PREFIX.idx beside PREFIX.tar is the tar's
 * index, not a Megatron dataset). */
bool rf_format_listing_takes(const char *name, char *const *sorted, size_t n);
/* The format whose dataset index (rf_format.expand_name: MDS's
 * index.json) is the last component of name, or NULL. */
const rf_format *rf_format_for_index(const char *name);
/* The format called `name` ("rfs"), or NULL. */
const rf_format *rf_format_by_name(const char *name);
/* The name a format reads a named local path by, when another
 * (rf_format.local_name; malloc'd), or NULL. */
char *rf_format_local_name(const char *path);
/* The names a listing takes, for messages: every row's names (".tar, .tar.gz,
 * ... or .parquet"; static). */
const char *rf_format_patterns(void);

/* Writes an index file atomically: write(ix, priv, f, name) into a
 * temporary file beside idx_path, fsync'd, then renamed over it; nothing is
 * left behind on failure. For `ringfeed index` (tar, TFRecord). */
typedef int (*rf_index_write_fn)(const rf_shard_index *ix, const void *priv, FILE *out,
                                 const char *name, rf_error *err);
int rf_format_index_save(const rf_shard_index *ix, const void *priv, const char *idx_path,
                         const char *name, rf_index_write_fn write, rf_error *err);

/* True when rc, the error opening the sidecar url, says it does not exist
 * (an optional want's object is then absent, not an error): -ENOENT (a
 * local ENOENT, HTTP 404), and for an s3:// URL also -EACCES (S3 answers
 * 403 for a missing key to a caller without ListBucket). */
bool rf_fmt_side_absent(const char *url, int rc);

/* Reads [offset, +len) of the shard (object NULL) or of another object
 * into buf; with object and len 0, only *size (that object's bytes). */
typedef int (*rf_fmt_read_fn)(void *ctx, const char *object, uint64_t offset, uint64_t len,
                              void *buf, uint64_t *size, rf_error *err);
/* Drives fmt's open steps to DONE synchronously through read (o's inputs
 * set by the caller): a want inside the last bytes read is served from
 * them; every other want is read whole (local or remote). No budget: for
 * tools, the verifier and tests. Returns RF_FMT_DONE (o->index,
 * o->priv set) or a negative errno. */
int rf_format_open_with(const rf_format *fmt, rf_fmt_open *o, rf_fmt_read_fn read, void *ctx,
                        rf_error *err);

/* Decodes unit u of a sequential layout synchronously (tools, the verifier,
 * fuzz targets, tests): calls fmt->decode_seq with src, then serves each
 * RF_FMT_MORE by reading into buf (buf_cap bytes) through read. *skipped
 * (may be NULL) adds the decoded bytes dropped. */
int rf_fmt_decode_seq_with(const rf_format *fmt, void **state, const rf_shard_index *ix,
                           const void *priv, uint32_t u, const void *src, size_t src_len,
                           uint64_t src_offset, uint8_t *buf, size_t buf_cap, rf_fmt_read_fn read,
                           void *ctx, void *dst, size_t dst_cap, rf_unit_records *out,
                           uint64_t *skipped, const char *name, rf_error *err);

/* rf_layout_open (include/ringfeed.h) with every format's options (the
 * engine's rf_layout_open_config parses them from a config). */
struct rf_layout;
int rf_layout_open_opts(const char *path, const rf_fmt_optset *opts, struct rf_layout **out,
                        rf_error *err);

/* Opens a local file's layout synchronously (pread), driving open_step to
 * DONE: for tools (inspect, verify, the decode limit) and tests. fmt may
 * be NULL (the registry picks by name, explicit); the open reads its
 * format's options in opts (NULL: defaults). */
int rf_format_open_file(const char *path, const rf_format *fmt, const rf_fmt_optset *opts,
                        const rf_format **fmt_out, rf_shard_index **index, void **priv,
                        rf_error *err);
/* The same for a given format with its own options struct (fmt_opt, as
 * rf_fmt_open.opt; NULL: defaults): a format's tools (index building). */
int rf_format_open_file_opt(const char *path, const rf_format *fmt, const void *fmt_opt,
                            const rf_format **fmt_out, rf_shard_index **index, void **priv,
                            rf_error *err);

/* An object held in memory, for rf_format_open_mem. */
typedef struct rf_fmt_object {
	const char *url; /* matched exactly against want.object (objs[0]: the shard) */
	const uint8_t *data;
	uint64_t size;
} rf_fmt_object;

/* Drives fmt's open_step to DONE over objects in memory (objs[0] is the
 * shard; a sidecar is found by its URL among the others): for fuzz targets
 * and tests. Every request is checked to lie inside its object, and what
 * the format holds after each step against what it held plus the step's
 * parse_bound (as the engine checks); *reserved_bytes (may be NULL) is the
 * most reserved at once (held + buffer + bound). On success *index, *priv
 * and *held_bytes are the format's. */
int rf_format_open_mem(const rf_format *fmt, const rf_fmt_object *objs, size_t nobjs,
                       const void *opt, rf_shard_index **index, void **priv, uint64_t *held_bytes,
                       uint64_t *reserved_bytes, rf_error *err);

#endif
