/* budget.h - the byte budget: every representation of the data (fetch
 * buffers, decoded slabs, batches, decoder scratch, metadata) is reserved
 * here before it is allocated and released after it is freed. Thread-safe;
 * reserve never blocks: a reservation that does not fit is -ENOBUFS and the
 * caller waits for a release. Current and peak bytes per category and the
 * peak total are kept for the stats. */
#ifndef RF_BUDGET_H
#define RF_BUDGET_H

#include "ringfeed.h"
#include <pthread.h>
#include <stdbool.h>

typedef struct rf_budget {
	pthread_mutex_t mu;
	uint64_t limit_bytes;
	uint64_t used_bytes;
	uint64_t peak_total_bytes;
	uint64_t cur_bytes[RF_MEM_CATEGORIES];
	uint64_t peak_bytes[RF_MEM_CATEGORIES];
} rf_budget;

void rf_budget_init(rf_budget *b, uint64_t limit_bytes);
void rf_budget_destroy(rf_budget *b);
/* Reserves bytes in category cat if used + bytes + headroom <= limit (the
 * headroom is left free for someone else, e.g. the next batch); -ENOBUFS
 * otherwise. */
int rf_budget_reserve(rf_budget *b, enum rf_budget_category cat, uint64_t bytes,
                      uint64_t headroom_bytes);
void rf_budget_release(rf_budget *b, enum rf_budget_category cat, uint64_t bytes);
uint64_t rf_budget_used(rf_budget *b);
uint64_t rf_budget_category_bytes(rf_budget *b, enum rf_budget_category cat);

typedef struct rf_budget_snapshot {
	uint64_t limit_bytes, used_bytes, peak_total_bytes;
	uint64_t cur_bytes[RF_MEM_CATEGORIES];
	uint64_t peak_bytes[RF_MEM_CATEGORIES];
} rf_budget_snapshot;
void rf_budget_snapshot_get(rf_budget *b, rf_budget_snapshot *out);
const char *rf_budget_category_name(enum rf_budget_category cat);

#endif
