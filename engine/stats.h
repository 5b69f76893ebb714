/* stats.h - the loader's counters and measurements (e->st; mu held): every
 * stage adds to them, stats.c reads them into rf_stats and the JSON, and the
 * controller (control.c) reads its rates from them. */
#ifndef RF_STATS_H
#define RF_STATS_H

#include "plan.h"
#include "source.h"
#include <stdint.h>

#define RF_LATENCY_SAMPLES 4096 /* fetch latencies kept for percentiles */

/* counters and measurements for the stats and the controller (mu) */
typedef struct rf_engine_st {
	uint64_t skipped_records; /* positions left out of batches the consumer took */
	struct rf_epoch_count {
		uint64_t epoch, records, batches;
		rf_plan_tail tail;
	} ep_first, ep_next; /* the first epoch (as resumed) and those after it */
	uint64_t t_open_ns;
	uint64_t batches, records, payload;
	uint64_t decoded_bytes, fetched_bytes, blocks;
	uint64_t wait_ns;
	uint64_t produced;
	uint64_t fetch_errors;
	uint64_t fetch_retries; /* remote retries (fetch counters) */
	uint64_t fetch_hedges, fetch_hedges_won;
	uint64_t fetch_resumes, fetch_resumed_bytes; /* cut ranges resumed (fetch counters) */
	uint64_t open_fetched_bytes;                 /* the open phase's reads */
	uint64_t open_reads;                         /* and their count */
	uint64_t direct_bytes, direct_refused, fixed_reads, fixed_bytes; /* direct_io */
	uint64_t register_refused; /* read buffers the kernel would not register */
	uint64_t rereads;          /* ranges read again after failing a checksum */
	uint64_t stream_skipped_bytes, stream_more_reads; /* sequential shards */
	uint64_t index_cache_stale_drops; /* entries a decode contradicted (decode.c) */
	rf_fetch_counters cache; /* the data cache's counters (cache_*), as the last read saw */
	uint64_t q_samples, q_empty, q_full, q_swings;
	int q_last_extreme; /* -1 empty, +1 full, 0 none yet */
	double lat_ms[RF_LATENCY_SAMPLES];
	uint64_t lat_count;
	uint64_t last_return_ns;   /* when rf_next last returned a batch (0: never) */
	uint64_t waiting_since_ns; /* the consumer waits inside rf_next since (0: not) */
	uint64_t busy_ns;          /* consumer's own time between rf_next calls */
	uint64_t decode_ns;        /* decode workers' busy time */
	uint64_t reads, read_records;
	uint64_t batch_reserved; /* bytes reserved by every batch emitted */
	uint64_t q_held_back;    /* samples where the producer was held back */
	uint64_t iv_pause_ns;    /* longest fetch this interval */
	uint64_t pauses;         /* pause episodes (overlapping slow fetches count once) */
	uint64_t pause_longest_ns;
	uint32_t pause_longest_shard;
} rf_stats_state;

#endif
