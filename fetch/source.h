/* source.h - one small interface for every place shard bytes come from:
 * local files (io_uring reads), HTTP(S) range GETs and S3 (libcurl multi
 * socket API driven by the same loop), and the fault injector that wraps any
 * of them. All calls and callbacks happen on the loop thread; nothing blocks.
 *
 * A read either delivers exactly the bytes asked for or fails with a message
 * naming the URL, byte range and cause (after the source's own retries). */
#ifndef RF_SOURCE_H
#define RF_SOURCE_H

#include "list.h"
#include "loop.h"
#include "ringfeed.h"
#include <stdbool.h>

typedef struct rf_fetch rf_fetch;   /* per loader: loop + protocol state + options */
typedef struct rf_source rf_source; /* one shard object */

/* res: >= 0 on success (bytes for reads), negative errno on failure; msg
 * names what failed (NULL on success). */
typedef void (*rf_fetch_cb)(void *arg, int64_t res, const char *msg);

/* Throttling (429, 503, S3 SlowDown) lasts seconds: a request rides it out
 * for this much backoff in total by default (the SDKs' standard retry mode
 * waits up to 20 s per backoff; we bound the sum). */
#define RF_FETCH_THROTTLE_WAIT_MS_DEFAULT 20000u

typedef struct rf_fetch_options {
	uint32_t connections;      /* per host (default 16) */
	uint32_t retries;          /* per request (default 5): errors other than throttling */
	uint32_t throttle_wait_ms; /* per request: total backoff riding out 429/503/SlowDown
	                            * (default 20000; 0 = the default) */
	uint32_t connect_timeout_ms;
	uint32_t request_timeout_ms;
	uint32_t low_speed_bytes_per_s, low_speed_time_s;
	const char *ca_file;
	struct { /* the S3 store (s3.c): NULL strings = the environment and profile */
		const char *endpoint, *region, *access_key, *secret_key, *session_token;
		const char *addressing; /* "auto" (NULL), "virtual" or "path" */
		bool no_sign;           /* anonymous: no credential chain (--no-sign-request) */
	} s3;
	struct { /* gs:// (gcs_store.c: OAuth; with the s3 keys above, HMAC on the S3 store) */
		const char
		    *endpoint; /* NULL = $STORAGE_EMULATOR_HOST, else storage.googleapis.com */
	} gs;
	bool hedge;              /* hedged range reads for the tail (remote stores) */
	uint32_t hedge_floor_ms; /* never hedge a read younger than this (0 = 50 ms) */
	const char *inject;      /* fault injection spec, NULL = none */
	/* Memory the fetch layer allocates on its own (hedge buffers) is
	 * reserved here first, on the loop thread: reserve returns 0, or a
	 * negative errno and the memory is not used. NULL = not accounted. */
	int (*mem_reserve)(void *ctx, uint64_t bytes);
	void (*mem_release)(void *ctx, uint64_t bytes);
	void *mem_ctx;
	uint32_t direct_io; /* local files: RF_DIRECT_IO_OFF (default), _ON, _AUTO */
	/* _AUTO turns O_DIRECT on once the files opened outgrow this (0: the
	 * physical memory, or the cgroup's memory limit where lower) */
	uint64_t direct_io_memory_bytes;
	/* The loop a private one (rf_fetch_list, rf_remote_*) makes, as the
	 * loader's: backend (rf_loop_backend; 0 auto) and epoll's read threads
	 * (0: the default). */
	uint32_t io_backend, io_threads;
	/* The data cache (cache.h) of remote objects' ranges: RF_CACHE_OFF (0,
	 * the default here), _READ or _READWRITE; its directory (NULL: the
	 * default) and its bound in bytes (0: the default). */
	uint32_t cache_mode;
	const char *cache_dir;
	uint64_t cache_bytes;
} rf_fetch_options;

enum { RF_DIRECT_IO_OFF = 0, RF_DIRECT_IO_ON, RF_DIRECT_IO_AUTO };

/* Defaults: connections 16, retries 5, throttle wait 20 s, connect 10 s,
 * request 60 s, low speed 1 KiB/s for 30 s; strings NULL. */
void rf_fetch_options_init(rf_fetch_options *opt);
/* A loop for the fetch layer as opt says (io_backend, io_threads); ops_max
 * 0: RF_LOOP_OPS_MAX. */
int rf_fetch_loop_new(const rf_fetch_options *opt, uint32_t ops_max, rf_loop **out, rf_error *err);

int rf_fetch_new(rf_loop *loop, const rf_fetch_options *opt, rf_fetch **out, rf_error *err);
void rf_fetch_free(rf_fetch *f); /* closes sources, cancels transfers */

/* Starts opening url (size_hint = UINT64_MAX when unknown: a HEAD or fstat
 * finds it). cb(arg, 0, NULL) once the size is known. */
int rf_source_open(rf_fetch *f, const char *url, uint64_t size_hint, rf_source **out,
                   rf_fetch_cb cb, void *arg, rf_error *err);
uint64_t rf_source_size(const rf_source *s);
const char *rf_source_name(const rf_source *s); /* never contains credentials */
/* What the open source holds in memory (per-shard metadata: the engine
 * counts it in RF_MEM_METADATA); a kind without its own figure gives the
 * base struct and name. */
uint64_t rf_source_memory_bytes(const rf_source *s);
/* What identifies the version of the object, for caches keyed by it: for
 * HTTP and S3 "etag:V" from the HEAD (or the first accepted response when
 * a size hint spared the HEAD), else "last-modified:V"; for local files
 * "file:dev=D,ino=I,size=S,mtime_ns=M". Header values are untrusted: at
 * most 128 bytes of printable ASCII (RF_HTTP_VALIDATOR_BYTES_MAX), else unknown.
 * Writes a NUL-terminated string into buf and returns its length; 0 (buf
 * "") when unknown (not learned yet, none sent, unusable) or when it does
 * not fit cap (RF_SOURCE_VALIDATOR_BYTES always fits). An empty validator
 * cannot tell versions apart: do not cache by it. */
#define RF_SOURCE_VALIDATOR_BYTES 160
size_t rf_source_validator(const rf_source *s, char *buf, size_t cap);
/* Reads [offset, offset+len) into buf; cb(arg, len, NULL) or cb(arg, -errno, msg). */
int rf_source_read(rf_source *s, uint64_t offset, uint64_t len, void *buf, rf_fetch_cb cb,
                   void *arg);
/* Closes the source. Reads still in flight are cancelled: their callbacks
 * never run, but the kernel (or a transfer) may still write into their
 * buffers until rf_loop_free() / rf_fetch_free() has drained them; keep read
 * buffers until then. */
void rf_source_close(rf_source *s);

rf_loop *rf_fetch_loop(const rf_fetch *f);

/* Read buffers registered with the loop's ring (rf_loop_region_add): local
 * reads whose destination lies inside go as IORING_OP_READ_FIXED (pages
 * pinned once, not per request). Loop thread. Returns 0 or the kernel's
 * -errno (RLIMIT_MEMLOCK: -ENOMEM); a refusal is kept in the counters
 * (register_refused, register_error: the first) and reads into the memory
 * go as plain reads. The memory must stay mapped until unregistered or the
 * fetch layer freed. */
int rf_fetch_buffers_register(rf_fetch *f, void *base, size_t len);
void rf_fetch_buffers_unregister(rf_fetch *f, void *base);

/* Waiting on the loop for one callback (a listing, a one-off request, a
 * verify read): rf_fetch_wait_cb is the rf_fetch_cb (arg: the wait), and
 * rf_fetch_wait_run drives f's loop (rf_loop_drive) until it ran. Returns 0
 * or the loop's -errno; the callback's outcome is in the wait. */
typedef struct rf_fetch_wait {
	bool done;
	int64_t res;
	char msg[RF_ERROR_MSG_BYTES]; /* the callback's message ("failed" when none) */
} rf_fetch_wait;
void rf_fetch_wait_cb(void *arg, int64_t res, const char *msg);
int rf_fetch_wait_run(rf_fetch *f, rf_fetch_wait *w);

/* Storage counters summed over the source kinds (for rf_stats). */
typedef struct rf_fetch_counters {
	uint64_t requests;         /* remote requests started (attempts) */
	uint64_t retries;          /* attempts after a failed one */
	uint64_t errors;           /* requests that failed for good */
	uint64_t bytes;            /* remote body bytes accepted */
	uint64_t host_active_max;  /* most requests one host had in flight at once */
	uint64_t connects;         /* connections opened (keep-alive reuses the rest) */
	uint64_t resumes;          /* retries that asked only for the rest of a cut range */
	uint64_t resumed_bytes;    /* the bytes they kept instead of fetching them again */
	uint64_t hedges;           /* duplicate range requests issued for slow reads */
	uint64_t hedges_won;       /* of which answered first (their bytes delivered) */
	uint64_t direct_bytes;     /* local bytes read with O_DIRECT */
	uint64_t direct_refused;   /* local files whose filesystem refused O_DIRECT */
	uint64_t fixed_reads;      /* local reads issued as READ_FIXED (registered buffers) */
	uint64_t fixed_bytes;      /* bytes those reads asked for */
	uint64_t registered_bytes; /* read-buffer memory registered now */
	uint64_t register_refused; /* registrations the kernel refused (plain reads instead) */
	int register_error;        /* the first refusal's -errno (0: none) */
	uint64_t bounce_allocs;    /* O_DIRECT bounce blocks allocated (edge blocks are reused) */
	/* the data cache (cache.h) */
	uint64_t cache_hits, cache_misses; /* reads of cached objects */
	uint64_t cache_hit_bytes;          /* served from the cache */
	uint64_t cache_store_bytes;        /* read from the store through the cache's wrapper */
	uint64_t cache_written_bytes;      /* written to the cache (recorded) */
	uint64_t cache_write_skipped;      /* ranges not written: write-behind full, budget, disk */
	uint64_t cache_not_admitted;       /* ranges outside the admitted subset */
	uint64_t cache_verify_failures;    /* cached ranges whose CRC failed (refetched) */
	uint64_t cache_removed_files;      /* files of older versions removed */
	uint64_t cache_foreign;            /* records of another object or damaged (not used) */
	uint64_t cache_unversioned;        /* objects without a version: not cached */
	uint64_t cache_claim_waits;        /* misses that waited for another loader's fetch */
	uint64_t cache_claim_served;       /* of which the wait ended in a hit */
	uint64_t cache_claim_timeouts;     /* waits past their bound: fetched unclaimed */
	uint64_t cache_evictions;          /* object versions evicted (least recently used) */
	uint64_t cache_evicted_bytes;      /* their bytes on disk */
	uint64_t cache_rereads;            /* the engine's re-reads: answered by the store */
	uint64_t cache_used_bytes;         /* on disk, as this loader knows it */
	double cache_admit_fraction;       /* capacity / remote bytes opened, at most 1 */
	char cache_off[160];               /* "" or why the cache (or its writing) is off */
} rf_fetch_counters;
void rf_fetch_counters_get(const rf_fetch *f, rf_fetch_counters *out);
/* Only the data cache's counters (cache_*, the rest zero): from any thread
 * (the cache's own lock), so a snapshot sees what its writer thread did
 * after the last read's callback (a write that turned it off). */
void rf_fetch_cache_counters_get(const rf_fetch *f, rf_fetch_counters *out);
const rf_fetch_options *rf_fetch_opts(const rf_fetch *f);
/* The per-host connection limit (options.connections) from now on, for the
 * kinds started and those started later: the engine's open phase raises it
 * for its small requests that mostly wait, then sets it back. */
void rf_fetch_connections_set(rf_fetch *f, uint32_t per_host);
/* rf_now_ns() when the fetch layer was created (fault injection stalls count from it). */
uint64_t rf_fetch_epoch_ns(const rf_fetch *f);

/* ---------------------------------------------------------------------------
 * Adding a source kind (HTTP, S3, ...) or a wrapper (fault injection).
 *
 * rf_source_open() picks the first kind in fetch.c's kinds table whose
 * `claims` accepts the URL (the file kind claims "file://" URLs and plain
 * paths; a URL with any other "scheme://" that no kind claims is an error
 * naming the scheme). A kind's per-loader state (e.g. a curl multi handle) is
 * created by `init` on first use and destroyed by `fini` in rf_fetch_free.
 * A kind needs no tick of its own: its timers and polls are loop ops (curl's
 * timer is an rf_loop timer), so any owner's rf_loop_drive drives it.
 *
 * A source object starts with struct rf_source (embed it first); its `ops`
 * implement reads and close. The kind's `open` must eventually call
 * rf_source_opened() (from the loop thread, never from inside `open`), after
 * which rf_source_size() is valid.
 *
 * When rf_fetch_options.inject is set, every opened source is wrapped by the
 * wrapper named in fetch.c's wrapper row (rf_source_wrapper: the fault
 * injector) before the caller sees it; the wrapper embeds its own struct
 * rf_source and forwards to the inner source through its ops. */
typedef struct rf_source_ops {
	int (*read)(rf_source *s, uint64_t offset, uint64_t len, void *buf, rf_fetch_cb cb,
	            void *arg);
	void (*close)(rf_source *s);
	/* optional: the bytes the source object holds (its struct and strings) */
	uint64_t (*memory_bytes)(const rf_source *s);
	/* optional (none: unknown): the object's version, see rf_source_validator;
	 * "" or a string of fewer than cap bytes, its length returned */
	size_t (*validator)(const rf_source *s, char *buf, size_t cap);
} rf_source_ops;

struct rf_source {
	const rf_source_ops *ops;
	rf_fetch *fetch;
	char *name;    /* malloc'd; what messages show (no credentials) */
	uint64_t size; /* UINT64_MAX until known */
	rf_fetch_cb open_cb;
	void *open_arg;
	bool due;            /* in an rf_open_batch */
	rf_list_node in_due; /* its node there */
};

/* Opens that complete at the next tick with nothing to wait for (a local
 * file's, a remote object's whose size a listing or manifest gave), all
 * from one zero-delay timer: a timer each cost ~20 us of kernel time on
 * this VM, most of the open phase of 100,000 shards. A kind keeps one per
 * loader; a source pushed is delivered rf_source_opened(s, 0, NULL) at the
 * next tick unless removed first (its close). Opens pushed from inside a
 * delivery wait for the next timer. */
typedef struct rf_open_batch {
	rf_loop *loop;
	rf_list due; /* of rf_source (in_due), oldest first */
	int64_t timer;
} rf_open_batch;
void rf_open_batch_init(rf_open_batch *b, rf_loop *loop);
int rf_open_batch_push(rf_open_batch *b, rf_source *s); /* 0, or no timer slot */
void rf_open_batch_remove(rf_open_batch *b, rf_source *s);
void rf_open_batch_fini(rf_open_batch *b); /* cancels the timer */

typedef struct rf_source_kind {
	const char *name;
	bool (*claims)(const char *url);
	int (*init)(rf_fetch *f, void **state, rf_error *err); /* optional */
	void (*fini)(void *state);                             /* optional */
	int (*open)(rf_fetch *f, void *state, const char *url, uint64_t size_hint, rf_source **out,
	            rf_error *err);
	void (*counters)(void *state, rf_fetch_counters *out); /* optional: adds its counts */
	/* optional: the per-host connection limit from now on (rf_fetch_connections_set) */
	void (*connections_set)(void *state, uint32_t per_host);
} rf_source_kind;

/* The per-loader state of a kind, created (init) on first use. */
int rf_fetch_kind_state(rf_fetch *f, const rf_source_kind *kind, void **state, rf_error *err);

/* Wraps `inner` (taking ownership) into *out; see fetch.c. */
typedef int (*rf_source_wrap_fn)(rf_fetch *f, rf_source *inner, const char *spec, rf_source **out,
                                 rf_error *err);

/* A wrapper around every opened source, named by fetch.c's wrapper row (a
 * data reference, as the kinds table names its kinds): fetch.c reaches the
 * wrapper only through these pointers, and the wrapper reaches the inner
 * source only through the rf_source calls above (its ops), so the two files
 * never call each other in a circle. */
typedef struct rf_source_wrapper {
	const char *name; /* the option that turns it on */
	/* At rf_fetch_new: a bad spec fails there, not at the first open. */
	int (*check)(const char *spec, rf_error *err);
	rf_source_wrap_fn wrap;
} rf_source_wrapper;

/* Called by a kind when an open finished: res 0 (size set) or -errno + msg.
 * Runs the caller's open callback. */
void rf_source_opened(rf_source *s, int64_t res, const char *msg);
/* Fills the base fields (name copied); returns -ENOMEM on failure. */
int rf_source_init_base(rf_source *s, const rf_source_ops *ops, rf_fetch *f, const char *name);
void rf_source_free_base(rf_source *s);

extern const rf_source_kind rf_source_kind_file;
extern const rf_source_kind rf_source_kind_remote;       /* http://, https://, s3:// (remote.c) */
extern const rf_source_wrapper rf_source_wrapper_inject; /* fault injection (inject.c) */

#endif
