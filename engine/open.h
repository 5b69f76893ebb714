/* open.h - the open phase's stage (open.c): the loop thread reads every
 * shard's footer and index before the first plan; rf_open waits for it.
 * e->open points at its state, which open.c writes (lifecycle.c, memory.c
 * and fields.c read it; tests/cli_house.sh checks). Its machines: the
 * loader's phase (rf_open_phase_set) and each shard's open stage
 * (rf_open_stage_set). */
#ifndef RF_OPEN_H
#define RF_OPEN_H

#include "ringfeed.h"
#include "tsa.h"
#include <assert.h>
#include <stdint.h>

#define RF_OPEN_CONCURRENCY        64 /* local shard indexes read at once */
#define RF_OPEN_CONCURRENCY_REMOTE 512

/* The loader's open phase (e->open->phase; mu): the loop thread reads every
 * shard's layout (OPENING), then rf_open waits for INDEXED or FAILED, plans,
 * and lets the loop thread run (RUNNING). */
enum rf_open_phase {
	RF_PHASE_OPENING = 0,
	RF_PHASE_INDEXED, /* every layout read: the loop thread waits for RUNNING */
	RF_PHASE_FAILED,  /* a shard's open failed (e->open->code, .msg) */
	RF_PHASE_RUNNING, /* rf_open started the workers: the loop thread schedules */
	RF_PHASE_COUNT
};

struct rf_open_slot;
struct rf_icache;

/* the open phase's state: the loop thread reads every shard's footer and
 * index; rf_open waits (mu) */
typedef struct rf_engine_open {
	enum rf_open_phase phase; /* moved only by rf_open_phase_set (open.c) */
	int code;
	char msg[RF_ERROR_MSG_BYTES];
	uint32_t next, inflight, done;
	uint32_t inflight_local, local_max; /* of which local files; their bound */
	uint32_t inflight_max;              /* the most in flight at once (stats) */
	struct rf_open_slot *slots;         /* the opens in progress (open.c) */
	uint32_t slots_n, free;             /* slots; the first free one (UINT32_MAX: none) */
	uint32_t slots_max;                 /* slots_n while it ran (stats) */
	uint32_t connections;               /* HTTP connections per host meanwhile (0: unchanged) */
	bool start_held;        /* `connections` still raised after the open: the first batch's
	                           reads wait on the store too; the loop thread sets the
	                           configured count back at the first batch (rf_open_start_end) */
	uint64_t start_held_ns; /* how long after the open they stayed raised (stats) */
	uint32_t waiting;       /* shards waiting for budget for their index */
	uint32_t wait[RF_OPEN_CONCURRENCY_REMOTE]; /* their indexes, oldest first */
	uint32_t failed;                           /* shards whose open failed so far */
	uint32_t failed_idx;      /* the lowest index of one (valid when open_failed) */
	uint64_t transient_bytes; /* index buffers reserved (freed as indexes parse) */
	uint64_t meta_bytes;      /* RF_MEM_METADATA reserved by the open phase */
	struct rf_icache *icache; /* the index cache during the open phase, or NULL */
	uint64_t cache_hits, cache_misses, cache_puts; /* its answers (loop thread) */
	uint64_t bundle_opens, bundle_drops; /* opens the index bundle served whole; refused */
	uint64_t t0_ns, said_ns;             /* its start; its last progress line (0: none) */
	uint64_t took_ns;                    /* its length, once it ended (stats) */
	uint32_t said;                       /* progress lines written */
	bool cache_off_said;                 /* why the index cache is off: on stderr once */
} rf_open_state;

struct rf_engine;
/* The loop thread, between ticks of the run phase: once the first batch is
 * planned (or the engine stops), the per-host connections the open raised go
 * back to `connections`. Takes no lock; `first_batch` read under mu. */
void rf_open_start_end(struct rf_engine *e, bool first_batch);

/* The open phase's metadata reservations (RF_MEM_METADATA) are counted in
 * meta_bytes: the memory and field code add what they reserve for it, and
 * rf_memory_check trues the total up. */
static inline void rf_open_meta_add(rf_open_state *o, uint64_t n)
{
	o->meta_bytes += n;
}

static inline void rf_open_meta_sub(rf_open_state *o, uint64_t n)
{
	assert(n <= o->meta_bytes);
	o->meta_bytes -= n;
}

static inline void rf_open_meta_set(rf_open_state *o, uint64_t n)
{
	o->meta_bytes = n;
}
#endif
