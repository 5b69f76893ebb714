/* budget.h - the byte budget: every representation of the data (fetch
 * buffers, decoded slabs, batches, decoder scratch, metadata) is reserved
 * here before it is allocated and released after it is freed. Thread-safe;
 * reserve never blocks: a reservation that does not fit is -ENOBUFS and the
 * caller waits for a release. Current and peak bytes per category and the
 * peak total are kept for the stats.
 *
 * With a host budget attached (hostbudget.h), a reservation succeeds only if
 * both this budget and the host budget have room (headroom included: it is
 * held from the host, not only left free, since another loader could take
 * it). The budget holds max(used + slack, floor) bytes of the host total
 * (slack: the last headroom asked for), taking more on reserve and giving
 * back the excess on release. The floor (this loader's minimum working set,
 * held for its lifetime) keeps one loader's read-ahead from starving another
 * of the bytes it needs for the batch its consumer waits for. */
#ifndef RF_BUDGET_H
#define RF_BUDGET_H

#include "ringfeed.h"
#include "tsa.h"
#include <pthread.h>
#include <stdbool.h>

struct rf_hostbudget;

typedef struct rf_budget {
	pthread_mutex_t mu;
	/* the rest but limit_bytes (set at init) is guarded by mu (base/tsa.h) */
	struct rf_hostbudget *host RF_GUARDED_BY(rf_budget_mu); /* NULL: none (not owned) */
	/* held from the host while attached */
	uint64_t host_floor_bytes RF_GUARDED_BY(rf_budget_mu);
	/* reserved from the host: max(used + slack, floor) */
	uint64_t host_held_bytes RF_GUARDED_BY(rf_budget_mu);
	/* last headroom asked for: kept held for it */
	uint64_t host_slack_bytes RF_GUARDED_BY(rf_budget_mu);
	uint64_t host_peak_held_bytes RF_GUARDED_BY(rf_budget_mu);
	/* reservations the host total refused */
	uint64_t host_refusals RF_GUARDED_BY(rf_budget_mu);
	uint64_t limit_bytes;
	uint64_t used_bytes RF_GUARDED_BY(rf_budget_mu);
	uint64_t peak_total_bytes RF_GUARDED_BY(rf_budget_mu);
	uint64_t cur_bytes[RF_MEM_CATEGORIES] RF_GUARDED_BY(rf_budget_mu);
	uint64_t peak_bytes[RF_MEM_CATEGORIES] RF_GUARDED_BY(rf_budget_mu);
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

/* Attaches a host budget (the caller keeps owning hb; detach before closing
 * it) and reserves floor_bytes from it, waiting up to timeout_ms for other
 * loaders to make room (see rf_hostbudget_reserve_floor; expected_loaders: 0
 * or how many loaders will share it). -ENOBUFS with the figures when the
 * host total has no room for the floor. Call before any reservation. */
int rf_budget_attach_host(rf_budget *b, struct rf_hostbudget *hb, uint64_t floor_bytes,
                          uint32_t expected_loaders, int timeout_ms, rf_error *err);
/* Gives back everything held from the host; call once every reservation is
 * released (rf_budget_destroy does it too). */
void rf_budget_detach_host(rf_budget *b);
/* True when a reservation of bytes (headroom included) fits this budget's
 * own limit, so that only a host budget can have refused it. */
bool rf_budget_host_bound(rf_budget *b, uint64_t bytes);
/* Bytes that may stay mapped beyond the reservations (idle pool buffers):
 * limit - used, and with a host budget no more than the host bytes held. */
uint64_t rf_budget_room(rf_budget *b);

/* Writes `,"host_budget":{...}}` (or `,"host_budget":null}`): the host
 * figures and this loader's share, closing a JSON object. Returns the length
 * or -ENOSPC. */
int rf_budget_host_json(rf_budget *b, char *buf, size_t cap);

typedef struct rf_budget_snapshot {
	uint64_t limit_bytes, used_bytes, peak_total_bytes;
	uint64_t host_held_bytes, host_peak_held_bytes, host_floor_bytes, host_refusals;
	uint64_t cur_bytes[RF_MEM_CATEGORIES];
	uint64_t peak_bytes[RF_MEM_CATEGORIES];
} rf_budget_snapshot;
void rf_budget_snapshot_get(rf_budget *b, rf_budget_snapshot *out);
const char *rf_budget_category_name(enum rf_budget_category cat);

#endif
