/* engine.h - the loader's internals, shared by api.c (public calls),
 * sched.c (the loop thread: shard indexes, admission, reads) and decode.c
 * (worker threads: decoding and in-order collation).
 *
 * Threads and what they own:
 *   loop thread   the ring, the fetch layer, the scheduler cursor (P_sched)
 *   workers       one rf_decoder each; at most one of them collates at a time
 *                 (P_coll, the collation cursor)
 *   consumer      rf_next / rf_release / rf_state_save
 * The stages' state lives in their own headers, each written only by its
 * owner (tests/cli_house.sh): open.h (open.c), scheduler.h (sched.c),
 * ring.h (units.c), decode.h (decode.c), collator.h (collator.c), ready.h
 * (ready.c), consumer.h (api.c), memwait.h (units.c), recycle.h
 * (recycle.c); stats.h holds the counters every stage adds to. rf_engine
 * keeps the open-time constants, the services, the lock and pointers to the
 * stages, whose state sits beside it in one rf_engine_house.
 * Everything shared is guarded by `mu` (RF_GUARDED_BY(rf_engine_mu):
 * clang checks, base/tsa.h, which also writes the five locks' order);
 * decoding, collating and reading run without it. Unit slots in the ring are written by one party
 * at a time, as their state says (ADMITTED/READING: loop thread; FETCHED->DECODING: one worker;
 * DECODED: read-only until the collator releases them). */
#ifndef RF_ENGINE_H
#define RF_ENGINE_H

#include "budget.h"
#include "collate.h"
#include "collator.h"
#include "config.h"
#include "consumer.h"
#include "decode.h"
#include "defaults.h"
#include "dio.h"
#include "fields.h"
#include "format.h"
#include "list.h"
#include "loop.h"
#include "memwait.h"
#include "open.h"
#include "plan.h"
#include "pool.h"
#include "ready.h"
#include "recycle.h"
#include "ring.h"
#include "scheduler.h"
#include "source.h"
#include "stats.h"
#include "tsa.h"
#include "tune.h"
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define RF_UNITS_RING       8192        /* the unit ring's fewest slots (power of 2) */
#define RF_SAMPLE_PERIOD_NS 2000000ull  /* queue occupancy sampling */
#define RF_HELD_STALL_MS    2000        /* rf_next reports a consumer holding the budget */
#define RF_LOADER_MAGIC     0x52464c44u /* "RFLD" */
#define RF_BATCH_MAGIC      0x52464254u /* "RFBT" */

/* Remote shards' opens at once: one or two small requests each that mostly
 * wait on the store (within the loop's ops; open_connections per host). */

enum rf_unit_state {
	RF_U_FREE = 0,
	RF_U_READING, /* admitted, bytes reserved, read in flight */
	RF_U_FETCHED, /* compressed bytes present, waiting for a worker */
	RF_U_DECODING,
	RF_U_DECODED, /* records resident */
	RF_U_FAILED,  /* read or decode failed: message in error */
	RF_U_SKIPPED, /* failed, and skipped by the skip policy: its records are left out */
	RF_U_STATES
};

/* A sequential shard's unit's sub-state beside its state (rf_unit_slot.sub;
 * docs/design.md, "Sequential shards"): moved only by rf_unit_sub_set. */
enum rf_unit_sub {
	RF_SUB_NONE = 0,
	RF_SUB_MORE,     /* READING the bytes its decoder asked for (RF_FMT_MORE) */
	RF_SUB_AGAIN,    /* FETCHED / DECODING after such a read: the decode continues */
	RF_SUB_SEQ_WAIT, /* FETCHED, waiting for the unit before it to decode, or for a
	                  * free stream state */
	RF_SUB_COUNT
};

typedef struct rf_read {
	struct rf_engine *e;
	uint8_t *buf;
	uint64_t buf_bytes; /* pool class = FETCH reservation */
	uint32_t buf_shift; /* buf is the pool buffer + this (offset modulo read_align) */
	uint64_t offset, len;
	uint64_t first_seq;
	uint32_t units, units_left;
	uint32_t shard;
	uint64_t t_issue_ns;
	struct rf_read *next_idle; /* in e->recycle->reads while idle (recycle.c) */
} rf_read;

typedef struct rf_unit_slot {
	uint64_t seq;
	uint64_t epoch;
	uint32_t unit; /* index in the epoch's plan */
	uint32_t shard, block, records;
	uint64_t first_plan_record, release_pos;
	uint8_t state;
	uint8_t rereads;   /* re-reads after a failed checksum (<= retries) */
	bool same_bytes;   /* a re-read gave the bytes that failed again: no more */
	uint8_t sub;       /* sequential shards' sub-state, enum rf_unit_sub (rf_unit_sub_set) */
	uint8_t seq_state; /* sequential: 1 + the state it holds across MORE reads, or 0 */
	rf_read *read;
	uint64_t src_at; /* offset of the frame in read->buf */
	uint32_t src_len;
	uint32_t failed_sum; /* rf_fnv1a of the stored bytes that failed last (low 32 bits;
	                      * beside src_len: the slot stays 136 bytes, x the ring's units) */
	uint8_t *slab;
	uint64_t slab_bytes; /* pool class = DECODED reservation */
	const uint8_t *base; /* decoded: the records' bytes (the slab, or the read's
	                      * buffer for an in_place format: read kept until release) */
	const uint32_t *ends;
	/* multi-field records: their fields and keys (kept at the slab's end;
	 * NULL for single-field formats) */
	const rf_unit_fields *uf;
	int err_code;
	char *err_msg;
} rf_unit_slot;

typedef struct rf_shard {
	struct rf_engine *engine;
	uint32_t idx;
	char *url;  /* what is opened: may carry credentials (userinfo, a presigned query) */
	char *name; /* url redacted (rf_url_redact): the only form messages and stats show;
	             * == url when redaction changes nothing (freed once) */
	uint64_t size_hint; /* for the source: UINT64_MAX when unknown */
	/* what a manifest says (checked at open against the source and the
	 * index; listed false when no manifest named the shard) */
	bool listed;
	uint64_t listed_bytes, listed_records, listed_line;
	char *validator;      /* the object's version as a listing gave it (S3 ETag), or NULL */
	const char *manifest; /* path, owned by the first shard it lists (owns_manifest) */
	bool owns_manifest;
	/* its entry in the manifest's index bundle (shards/bundle.h): the last
	 * tail_len bytes of the object of tail_file_bytes (owned; counted in
	 * the shard list's metadata), which its open takes over and serves its
	 * first ranges from (NULL: none, or taken) */
	uint8_t *tail;
	uint32_t tail_len;
	uint64_t tail_file_bytes;
	rf_source *src;
	/* its format (shards/format.h), the layout the format made of it, the
	 * format's per-shard state, and the RF_MEM_METADATA both hold */
	const struct rf_format *fmt;
	rf_shard_index *index;
	void *fmt_priv;
	uint64_t fmt_held;
	bool in_place;             /* its units are stored as they decode (rf_fmt_open.in_place) */
	struct rf_open_slot *open; /* open phase: the open in progress (open.c) */
	int stage;                 /* open phase: open.c's rf_open_stage (rf_open_stage_set) */
	uint32_t rereads;          /* open-phase re-reads after a failed checksum */
	int err_code;
	char *err_msg;
	/* the skip policy's blocks of this shard in epoch skipped_epoch
	 * (collator.c, mu held): all of them is an error, not a skip */
	uint32_t skipped_blocks;
	uint64_t skipped_epoch;
	bool cache_dropped; /* its layout's index cache entry was dropped (decode.c, mu held) */
} rf_shard;

/* A record the collator located, for a filler to copy. */
typedef struct rf_rec_ref {
	const uint8_t *data;
	uint32_t len;
	/* multi-field records (rf_fields_ref) */
	const uint8_t *base; /* the unit's records' base: the fields' offsets start there */
	const rf_rec_field *fields;
	uint32_t nfields, shard;
	const char *key;
	uint32_t key_len;
} rf_rec_ref;

#define RF_MIXST_INLINE 16 /* sources a batch counts itself (mixstats.c) */
typedef struct rf_mixst_counts {
	uint32_t records[RF_MIXST_INLINE];
	uint64_t bytes[RF_MIXST_INLINE];
} rf_mixst_counts;

typedef struct rf_ebatch {
	rf_batch pub;         /* first */
	bool filled;          /* its bytes are in place (a worker filled it) */
	uint32_t n;           /* records */
	uint64_t end_pos;     /* stream position after its last record */
	uint32_t skipped;     /* positions of skipped blocks left out of it */
	uint32_t skip_blocks; /* the collator's epoch counts after it (for the state) */
	uint64_t skip_records;
	rf_rec_ref *refs;  /* n records to copy (kept with the batch when it is recycled) */
	uint32_t refs_cap; /* refs' entries */
	uint32_t magic;
	void *mem;
	uint64_t mem_bytes;      /* asked of the allocator */
	uint64_t reserved_bytes; /* reserved in the budget */
	uint64_t global_end;
	rf_list_node held;           /* in e->ready->held_list while the consumer holds it */
	bool held_now;               /* the consumer holds it (a second rf_release is ignored) */
	struct rf_ebatch *next_idle; /* in e->recycle->batches while idle (recycle.c) */
	/* a mixture of at most RF_MIXST_INLINE sources: its records and bytes per
	 * source, counted when collated and added to the figures when delivered */
	rf_mixst_counts mix;
} rf_ebatch;

/* The fields RF_GUARDED_BY(rf_engine_mu) (base/tsa.h: any engine's mu)
 * are read and written with mu held; clang checks (-DRF_TSA=ON). */
typedef struct rf_engine {
	/* ---- open-time constants: set by rf_open before the workers start,
	 * read-only after (no lock) */
	uint32_t magic;
	rf_config *cfg;
	rf_collate_params cp;
	rf_fields fields;                /* multi-field samples' names (fields.c; set at open) */
	rf_fmt_optset *fmt_opts;         /* every format's options (parsed by each format) */
	uint64_t window;                 /* W: 1 without record shuffle */
	uint64_t epoch_first, epoch_end; /* epochs [first, end); end = UINT64_MAX: endless */
	uint32_t threads;
	char threads_source[RF_DEFAULTS_SOURCE_BYTES]; /* where threads came from (defaults.c) */
	char host_source[RF_DEFAULTS_SOURCE_BYTES];    /* the host budget's: "" when none */
	char index_cache_off[256];                     /* "" or why the index cache is off */
	uint32_t reads_max; /* reads in flight at most, needed ones too: half the loop's
	                       op table (the rest: polls, timers, re-reads, short reads) */
	uint64_t request_bytes;
	uint64_t batch_worst_bytes;
	uint64_t block_records_avg; /* records per block over the dataset (>= 1) */
	uint64_t fixed_bytes;       /* metadata + scratch reserved at open */
	uint64_t stage_bytes;       /* blocks read and decoded ahead at depth_max */
	uint32_t read_align;        /* direct_io on/auto: read buffers agree with their file
	                             * offset modulo this (O_DIRECT reads land in place) */
	uint32_t rereads_max;       /* per unit / shard index: the `retries` option */
	/* skip policy bounds (this epoch's counts and the log: the collator's) */
	uint32_t skip_blocks_max;
	uint64_t skip_records_max;
	uint64_t resume_epoch, resume_pos; /* skips met before resume_pos were counted */
	rf_segment *seq;                   /* the resumed epoch's sequence (seq_set) */
	uint32_t nseq;
	bool seq_set;
	uint64_t seq_epoch; /* the epoch seq belongs to (UINT64_MAX: none) */
	rf_allocator alloc;
	bool default_alloc;
	/* the shards and a mixture's sources */
	rf_shard *shards;
	uint32_t nshards;
	const rf_shard_index **indexes;
	uint32_t nsources;     /* a mixture's sources (0: one dataset) */
	uint32_t *src_first;   /* nsources + 1: each source's first shard */
	uint32_t *mix_windows; /* nsources: windows kept by a resume (NULL: from weights) */
	/* nsources, or NULL: a source's own format options (its mixture
	 * file's KEY=VALUE over the loader's), NULL for one without */
	rf_fmt_optset **src_fmt_opts;

	/* ---- services, each with its own lock or thread */
	rf_budget budget;
	rf_pool *pool;
	struct rf_hostbudget *host; /* host_budget > 0: shared with the host's loaders */
	rf_loop *loop;              /* the loop thread's */
	rf_fetch *fetch;            /* the loop thread's */
	/* fetch, while it lives (published under mu): the stats read its data
	 * cache's counters at once (rf_fetch_cache_counters_get) */
	rf_fetch *fetch_shown RF_GUARDED_BY(rf_engine_mu);
	rf_dio *dio;            /* direct_io: read buffers registered with the ring (loop thread) */
	struct rf_control *ctl; /* the depth controller (control.c) */
	struct rf_mixst *mixst; /* a mixture's figures (mixstats.c), NULL without one */

	/* ---- the lock, its conditions and the threads */
	pthread_mutex_t mu;         /* taken only through rf_engine_lock and friends */
	_Atomic uintptr_t mu_owner; /* debug builds: rf_thread_self() of the holder, 0 */
	pthread_cond_t work_cv;     /* workers: decode jobs, collation */
	pthread_cond_t ready_cv;    /* consumer: ready batches */
	pthread_cond_t open_cv;     /* rf_open waits for the loop thread's open phase */
	pthread_t loop_thread;
	bool loop_started;
	pthread_t *workers;
	uint32_t workers_started;
	bool stop;
	bool workers_done; /* rf_close joined the workers: the loop thread may tear down */
	atomic_bool wake_pending;
	/* wake-ups (mu): a condition variable is signalled only when someone
	 * waits on it, one worker per piece of new work (units.c), and counted */
	struct rf_engine_wake {
		uint32_t workers_waiting;              /* workers inside rf_cond_wait(work_cv) */
		uint32_t workers_signalled;            /* of them, signalled and not yet back */
		uint32_t consumers_waiting;            /* rf_next calls inside their wait */
		uint32_t consumers_woken;              /* of them, woken and not yet back */
		uint64_t workers, consumer, loop;      /* wake-ups issued (loop: eventfd writes) */
		uint64_t worker_waits, consumer_waits; /* waits entered */
	} wake RF_GUARDED_BY(rf_engine_mu);
	/* wake-ups decided under mu, issued once it is given (so that a woken
	 * thread does not at once block on the mutex its waker holds), and pool
	 * buffers freed under mu, given back to the pool then (its lock, and a
	 * trim's munmap, outside mu) */
	struct rf_wake_defer {
		uint32_t workers; /* signals of work_cv */
		bool consumer;    /* a broadcast of ready_cv */
		void *bufs;       /* pool buffers, chained through their first bytes */
	} defer RF_GUARDED_BY(rf_engine_mu);
	/* how long mu is held (the wrappers below; mu): acquisitions, the
	 * longest and total hold, and the function that released the longest */
	struct rf_engine_hold {
		uint64_t t_taken_ns;
		const char *taken_at;
		uint64_t acquisitions, max_ns, total_ns;
		const char *max_taken_at, *max_given_at;
	} hold RF_GUARDED_BY(rf_engine_mu);

	/* ---- the stages: each points into the rf_engine_house beside it and is
	 * written only by its owner (tests/cli_house.sh) */
	rf_open_state *open;                                /* open.h (open.c) */
	rf_sched *sched RF_PT_GUARDED_BY(rf_engine_mu);     /* scheduler.h (sched.c) */
	rf_ring *ring RF_PT_GUARDED_BY(rf_engine_mu);       /* ring.h (units.c) */
	rf_seqs *seqs RF_PT_GUARDED_BY(rf_engine_mu);       /* decode.h (decode.c) */
	rf_coll *coll RF_PT_GUARDED_BY(rf_engine_mu);       /* collator.h (collator.c) */
	rf_fill *fill RF_PT_GUARDED_BY(rf_engine_mu);       /* collator.h (collator.c) */
	rf_ready *ready RF_PT_GUARDED_BY(rf_engine_mu);     /* ready.h (ready.c) */
	rf_consumer *cons;                                  /* consumer.h (api.c) */
	rf_memwait *memwait RF_PT_GUARDED_BY(rf_engine_mu); /* memwait.h (units.c) */
	rf_recycle *recycle RF_PT_GUARDED_BY(rf_engine_mu); /* recycle.h (recycle.c) */
	rf_stats_state *st RF_PT_GUARDED_BY(rf_engine_mu);  /* stats.h: every stage counts */
} rf_engine;

/* The engine and its stages' state, in one allocation: rf_engine holds
 * pointers to the stages, each of which its owner writes (cli_house). */
typedef struct rf_engine_house {
	rf_engine e; /* first */
	rf_sched sched;
	rf_coll coll;
	rf_ring ring;
	rf_fill fill;
	rf_ready ready;
	rf_seqs seqs;
	rf_open_state open;
	rf_stats_state st;
	rf_recycle recycle;
	rf_consumer cons;
	rf_memwait memwait;
} rf_engine_house;

/* Points the engine at its stages (rf_engine_new, once). */
static inline rf_engine *rf_engine_house_wire(rf_engine_house *h)
{
	rf_engine *e = &h->e;
	e->sched = &h->sched;
	e->coll = &h->coll;
	e->ring = &h->ring;
	e->fill = &h->fill;
	e->ready = &h->ready;
	e->seqs = &h->seqs;
	e->open = &h->open;
	e->st = &h->st;
	e->recycle = &h->recycle;
	e->cons = &h->cons;
	e->memwait = &h->memwait;
	return e;
}

static inline uint64_t rf_engine_bytes(void)
{
	return sizeof(rf_engine_house);
}

/* lifecycle.c: builds a loader (NULL and err on failure, everything
 * undone), stops its threads (idempotent), frees it. */
rf_engine *rf_engine_new(const rf_config *cfg, rf_error *err);
void rf_engine_stop_threads(rf_engine *e);
void rf_engine_free(rf_engine *e);
/* api.c: 0 in the process that opened the loader; in another (a forked
 * child) -ECHILD, with the message in e->cons->last_error. Takes no lock. */
int rf_engine_process_check(rf_engine *e);

/* memory.c: the open-time memory model. Reserves open-phase metadata
 * (RF_MEM_METADATA) before it is allocated (what: the message's subject). */
int rf_memory_reserve_meta(rf_engine *e, uint64_t bytes, const char *what, rf_error *err);
/* The shard list (allocated by expand: reserved at once, before any index). */
int rf_memory_shard_list(rf_engine *e, rf_error *err);
/* The most one plan of these shards can take (reserved before planning). */
uint64_t rf_memory_plan_bound(const rf_engine *e, uint64_t window);
/* The budget check once indexes and plans are in: sizes the unit ring, the
 * worst batch and the stage, joins the host budget, trues metadata up. */
int rf_memory_check(rf_engine *e, rf_error *err);

/* recycle.c: reads and batches from the engine's free lists, allocated
 * (their bytes reserved as metadata first) only when none is idle: 0,
 * -ENOBUFS (the budget said no) or -ENOMEM. Both come zeroed, the batch
 * with a refs array of at least `refs` entries. Given back to the lists;
 * freed at close. mu held. */
int rf_read_get(rf_engine *e, rf_read **out) RF_REQUIRES(rf_engine_mu);
/* rf_read_put: inline, below (units.c gives reads back, and recycle.c's
 * debug checks call into units.c: no cycle between the files). */
int rf_ebatch_get(rf_engine *e, uint32_t refs, rf_ebatch **out) RF_REQUIRES(rf_engine_mu);
void rf_ebatch_put(rf_engine *e, rf_ebatch *b) RF_REQUIRES(rf_engine_mu);
/* At close: every read and batch put back. */
void rf_recycle_free(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* A few of each made at open (rf_open_threads), and their bytes (counted in
 * the open-time metadata by rf_memory_check). */
int rf_recycle_seed(rf_engine *e);
uint64_t rf_recycle_seed_bytes(const rf_engine *e);

/* open.c (loop thread): learns every shard's layout through its format.
 * 0, or the first failure (message in e->open->msg). */
int rf_open_phase(rf_engine *e);
/* The one mover of e->open->phase (debug builds assert the move; RF_DEBUG
 * traces it), and the phases' names. mu held. */
void rf_open_phase_set(rf_engine *e, enum rf_open_phase to) RF_REQUIRES(rf_engine_mu);
/* The loop thread ends the open phase: rc (msg: the loop's own error, or NULL
 * when rf_open_phase left one in e->open->msg). */
void rf_open_phase_end(rf_engine *e, int rc, const char *msg) RF_REQUIRES(rf_engine_mu);
const char *rf_open_phase_name(int phase);
/* Frees what unfinished opens hold, once no read is in flight (the loop is gone). */
void rf_open_slots_free(rf_engine *e);

/* The decoded slab a unit needs: its decoded bytes, or, for a format whose
 * units are stored as they decode (in_place), only the record table: the
 * read's buffer holds the bytes, reserved once (RF_MEM_FETCH). */
static inline uint64_t rf_unit_dst_bytes(const rf_shard *s, const rf_block_info *bi)
{
	if (!s->in_place)
		return bi->decoded_bytes;
	if (s->fmt->table_bytes) /* a table with fields and keys (MDS) */
		return s->fmt->table_bytes(s->index, s->fmt_priv, (uint32_t)(bi - s->index->block));
	return rf_fmt_table_bytes(bi->records);
}

/* Where a multi-field unit's rf_unit_fields lies in its slab: after what
 * the format writes (8-aligned). */
static inline uint64_t rf_unit_fields_at(const rf_shard *s, const rf_block_info *bi)
{
	return (rf_unit_dst_bytes(s, bi) + 7) & ~7ull;
}

static inline uint64_t rf_unit_slab_bytes(const rf_shard *s, const rf_block_info *bi)
{
	if (s->fmt->field_names)
		return rf_pool_class_bytes(rf_unit_fields_at(s, bi) + sizeof(rf_unit_fields));
	return rf_pool_class_bytes(rf_unit_dst_bytes(s, bi));
}

static inline bool rf_shard_is_local(const rf_shard *s)
{
	return !strstr(s->url, "://") || !strncmp(s->url, "file://", 7);
}

/* units.c: shared by every side; all with mu held. */
/* Makes the loop thread run its scheduler soon (coalesced: one eventfd
 * write while a wake-up is pending). */
void rf_engine_wake_loop(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* There are n more pieces of work for the workers (decode jobs, a batch to
 * fill, a kicked collator): wakes as many waiting workers, no more. */
void rf_engine_wake_workers(rf_engine *e, uint32_t n) RF_REQUIRES(rf_engine_mu);
/* A worker waits for work (counted, so that wakers know it waits). */
void rf_engine_wait_work(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* Wakes rf_next callers waiting for a batch or the end (when any waits). */
void rf_engine_wake_consumer(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* Moves a unit to state `to` (debug builds assert the move is allowed). */
void rf_unit_set(rf_engine *e, rf_unit_slot *u, enum rf_unit_state to) RF_REQUIRES(rf_engine_mu);
/* Moves a unit's sequential sub-state (RF_DEBUG traces it by name). */
void rf_unit_sub_set(rf_engine *e, rf_unit_slot *u, enum rf_unit_sub to) RF_REQUIRES(rf_engine_mu);
const char *rf_unit_sub_name(int sub);
/* The state's name, for messages and tests ("?" when out of range). */
const char *rf_unit_state_name(int state);
/* Whether a unit may move from one state to another (rf_unit_set's check). */
bool rf_unit_move_allowed(int from, int to);
/* Marks a unit failed (message copied) and returns its decoded reservation. */
void rf_unit_fail(rf_engine *e, rf_unit_slot *u, int code, const char *msg)
    RF_REQUIRES(rf_engine_mu);
/* Returns a read's buffer to the pool and its bytes to the budget. */
void rf_read_free(rf_engine *e, rf_read *rd) RF_REQUIRES(rf_engine_mu);
/* Frees a unit's slab and reservation and clears its slot. */
void rf_unit_release(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu);
/* A mixture: a decoded unit whose records are all copied gives back its
 * memory before the tail reaches it (false: nothing held). */
bool rf_unit_release_early(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu);
/* A unit's bytes are in: FETCHED, and queued for a worker unless it is a
 * sequential shard's waiting for the unit before it (RF_SUB_SEQ_WAIT). Returns
 * true when queued. */
bool rf_unit_fetched(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu);
/* A sequential shard's unit is done (decoded or failed) or a stream state
 * was given back: queues the waiting units that may go now. */
void rf_seq_wake(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* Gives back the stream state u holds across its MORE reads (if any). */
void rf_seq_state_put(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu);
/* Advances frontier_seq over decoded (or skipped) units. */
void rf_frontier_advance(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* Marks the stream's end (code RF_END) or error after the batches queued so
 * far. */
void rf_engine_finish(rf_engine *e, int code, const char *msg) RF_REQUIRES(rf_engine_mu);
/* Needed work did not fit only because of the host total: true while it
 * waits (ends the stream naming the host budget when waiting cannot help). */
bool rf_engine_host_wait(rf_engine *e, uint64_t bytes, const char *what) RF_REQUIRES(rf_engine_mu);
/* Changes the read-ahead depth at run time (the controller's hook: tune.c's
 * answer goes here). Clamped to [1, RF_READY_MAX]; kicks the collator and
 * the scheduler. */
void rf_engine_depth_set(rf_engine *e, uint32_t depth) RF_REQUIRES(rf_engine_mu);

/* ------------------------------------------------------------ the mutex
 * Every take of mu goes through these. Debug builds (NDEBUG unset: the
 * sanitizer build is Debug) record the holding thread, so RF_MU_HELD(e) at
 * the top of a function that runs with mu held, and RF_MU_NOT_HELD(e) where
 * it must run without, are checked; a release build compiles both out and
 * the wrappers are the bare pthread calls. */
uintptr_t rf_thread_self(void); /* units.c: a per-thread identity, never 0 */
#ifndef NDEBUG
#define RF_MU_HELD(e)     assert(atomic_load(&(e)->mu_owner) == rf_thread_self())
#define RF_MU_NOT_HELD(e) assert(atomic_load(&(e)->mu_owner) != rf_thread_self())
#define RF_MU_TAKEN(e)                                                                             \
	(assert(atomic_load(&(e)->mu_owner) == 0), atomic_store(&(e)->mu_owner, rf_thread_self()))
#define RF_MU_GIVEN(e) (RF_MU_HELD(e), atomic_store(&(e)->mu_owner, 0))
#else
#define RF_MU_HELD(e)     ((void)0)
#define RF_MU_NOT_HELD(e) ((void)0)
#define RF_MU_TAKEN(e)    ((void)0)
#define RF_MU_GIVEN(e)    ((void)0)
#endif
/* Hold times: a monotonic clock read when mu is taken and when it is given
 * (a condition wait gives it too), kept under mu itself. */
static inline uint64_t rf_hold_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline void rf_hold_start(rf_engine *e, const char *at) RF_REQUIRES(rf_engine_mu)
{
	e->hold.t_taken_ns = rf_hold_clock_ns();
	e->hold.taken_at = at;
	e->hold.acquisitions++;
}
static inline void rf_hold_end(rf_engine *e, const char *at) RF_REQUIRES(rf_engine_mu)
{
	uint64_t ns = rf_hold_clock_ns() - e->hold.t_taken_ns;
	e->hold.total_ns += ns;
	if (ns > e->hold.max_ns) {
		e->hold.max_ns = ns;
		e->hold.max_taken_at = e->hold.taken_at;
		e->hold.max_given_at = at;
	}
}
/* The wrappers are the analysis's lock and unlock (RF_NO_TSA: they are
 * what it trusts); debug builds check the lock order (base/tsa.h) here. */
static inline void rf_engine_lock_at(rf_engine *e, const char *at)
    RF_ACQUIRE(rf_engine_mu) RF_NO_TSA
{
	RF_MU_NOT_HELD(e); /* not recursive: a second take would deadlock */
	rf_lock_order_take(RF_LOCK_ENGINE);
	pthread_mutex_lock(&e->mu);
	RF_MU_TAKEN(e);
	rf_hold_start(e, at);
}
#define rf_engine_lock(e) rf_engine_lock_at((e), __func__)
/* Issues deferred wake-ups and gives deferred buffers back (units.c). */
void rf_wake_issue(rf_engine *e, const struct rf_wake_defer *d);
static inline void rf_wake_flush(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	struct rf_wake_defer d = e->defer;
	if (d.workers || d.consumer || d.bufs) {
		e->defer = (struct rf_wake_defer){0};
		rf_wake_issue(e, &d);
	}
}
static inline void rf_engine_unlock_at(rf_engine *e, const char *at)
    RF_RELEASE(rf_engine_mu) RF_NO_TSA
{
	struct rf_wake_defer d = e->defer;
	e->defer = (struct rf_wake_defer){0};
	rf_hold_end(e, at);
	RF_MU_GIVEN(e);
	pthread_mutex_unlock(&e->mu);
	rf_lock_order_give(RF_LOCK_ENGINE);
	if (d.workers || d.consumer || d.bufs)
		rf_wake_issue(e, &d);
}
#define rf_engine_unlock(e) rf_engine_unlock_at((e), __func__)
static inline void rf_cond_wait_at(rf_engine *e, pthread_cond_t *cv, const char *at)
    RF_REQUIRES(rf_engine_mu)
{
	rf_wake_flush(e);
	rf_hold_end(e, at);
	RF_MU_GIVEN(e);
	pthread_cond_wait(cv, &e->mu);
	RF_MU_TAKEN(e);
	rf_hold_start(e, at);
}
#define rf_cond_wait(e, cv) rf_cond_wait_at((e), (cv), __func__)
static inline int rf_cond_timedwait_at(rf_engine *e, pthread_cond_t *cv, const struct timespec *dl,
                                       const char *at) RF_REQUIRES(rf_engine_mu)
{
	rf_wake_flush(e);
	rf_hold_end(e, at);
	RF_MU_GIVEN(e);
	int rc = pthread_cond_timedwait(cv, &e->mu, dl);
	RF_MU_TAKEN(e);
	rf_hold_start(e, at);
	return rc;
}
#define rf_cond_timedwait(e, cv, dl) rf_cond_timedwait_at((e), (cv), (dl), __func__)

static inline void rf_read_put(rf_engine *e, rf_read *rd) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rd->next_idle = e->recycle->reads;
	e->recycle->reads = rd;
}

/* The ring's slots and size are fixed at open: any thread may find a slot
 * (RF_NO_TSA); what it may do with it, the slot's state says. */
static inline rf_unit_slot *rf_slot(rf_engine *e, uint64_t seq) RF_NO_TSA
{
	return &e->ring->slots[seq & (e->ring->units - 1)];
}
static inline const rf_epoch_info *rf_epoch_slot(const rf_engine *e, uint64_t epoch)
    RF_REQUIRES(rf_engine_mu)
{
	return &e->sched->epochs[epoch % RF_EPOCH_SLOTS];
}

/* control.c (loop thread): the controller's interval timer, measurements,
 * depth decisions and the trace. */
int rf_control_new(rf_engine *e, rf_error *err); /* at open, after the budget */
void rf_control_start(rf_engine *e);             /* loop thread, run phase */
void rf_control_finish(rf_engine *e);            /* loop thread: last trace line */
void rf_control_free(rf_engine *e);
/* After the loop thread is gone: 0, or the error that stopped the trace
 * (a failed write or close), message in err. */
int rf_control_output_error(const rf_engine *e, rf_error *err);
void rf_control_note_fetch(rf_engine *e, uint32_t shard, uint64_t ns)
    RF_REQUIRES(rf_engine_mu); /* mu held */
/* The pauses per source as a JSON array (mu held); length or -ENOSPC. */
int rf_control_pauses_json(rf_engine *e, char *buf, size_t cap) RF_REQUIRES(rf_engine_mu);
/* Fills the controller's fields of s (mu held). */
void rf_control_stats(rf_engine *e, rf_stats *s) RF_REQUIRES(rf_engine_mu);
void rf_control_explain(rf_engine *e, rf_stats *s)
    RF_REQUIRES(rf_engine_mu); /* after the rest of s; mu held */
/* Inventory ahead of the consumer in batches: ready, decoded, in flight. mu held. */
void rf_control_inventory(rf_engine *e, double *ready, double *decoded, double *inflight)
    RF_REQUIRES(rf_engine_mu);

/* expand.c: the config's URLs as a shard list (directories give their *.rfs
 * files sorted by name; manifests give their entries with sizes; remote
 * URLs are kept). Errors name the path. */
int rf_expand_urls(const rf_config *cfg, rf_shard **out, uint32_t *count, rf_error *err);
/* The same for a mixture: first[i] (sources + 1 entries) is source i's
 * first shard. */
int rf_expand_sources(const rf_config *cfg, rf_shard **out, uint32_t *count, uint32_t *first,
                      rf_error *err);
/* mixstats.c: a mixture's figures per source. */
typedef struct rf_mixst rf_mixst;
int rf_mixst_open(rf_engine *e, rf_error *err);
void rf_mixst_free(rf_mixst *m);
void rf_mixst_record(rf_engine *e, rf_mixst_counts *c, uint32_t shard, uint32_t bytes);
void rf_mixst_delivered(rf_engine *e, const rf_ebatch *b) RF_REQUIRES(rf_engine_mu);
void rf_mixst_fetch(rf_engine *e, uint32_t shard, uint64_t ns) RF_REQUIRES(rf_engine_mu);
void rf_mixst_wait(rf_engine *e, uint32_t shard, uint64_t ns) RF_REQUIRES(rf_engine_mu);
void rf_mixst_explain(rf_engine *e, rf_stats *s) RF_REQUIRES(rf_engine_mu);
int rf_mixst_json(rf_engine *e, char *buf, size_t cap); /* takes mu */
/* units.c: the shard of the unit the stream waits on (the first not
 * decoded), UINT32_MAX when none. */
uint32_t rf_ring_blocking_shard(rf_engine *e) RF_REQUIRES(rf_engine_mu);
/* sources.c: the shard list (a mixture's: its sources', back to back) and
 * a plan of it (a mixture's when it has sources). */
int rf_open_sources(rf_engine *e, rf_error *err);
/* A mixture's sources all have one record shape (fields, token windows or
 * bytes), else an error naming both sources and their shards. */
int rf_sources_check(const rf_engine *e, rf_error *err);
/* The format options a shard opens with: its source's own, else the
 * loader's. */
const rf_fmt_optset *rf_shard_fmt_opts(const rf_shard *s);
void rf_sources_free(rf_engine *e);
int rf_engine_plan_new(const rf_engine *e, const rf_plan_params *pp, rf_plan **out, rf_error *err);
/* The config's mixture file (option "mixture"), read into its sources. */
int rf_mixture_load(rf_config *cfg, rf_error *err);
void rf_shards_free(rf_shard *shards, uint32_t count);
#endif
