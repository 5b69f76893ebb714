/* budget.c - the byte budget (see budget.h). One mutex: reservations happen
 * per block and per batch, never per record, so contention is negligible. */
#include "budget.h"
#include "hostbudget.h"
#include "util.h"

#include <assert.h>

void rf_budget_init(rf_budget *b, uint64_t limit_bytes)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->mu, NULL);
	b->limit_bytes = limit_bytes;
}

void rf_budget_destroy(rf_budget *b)
{
	rf_budget_detach_host(b);
	pthread_mutex_destroy(&b->mu);
}

/* With b->mu held: makes the host bytes held cover max(used_after, floor). */
static int host_cover(rf_budget *b, uint64_t used_after)
{
	uint64_t need = RF_MAX(used_after, b->host_floor_bytes);
	if (!b->host || need <= b->host_held_bytes)
		return 0;
	if (rf_hostbudget_reserve(b->host, need - b->host_held_bytes) < 0) {
		b->host_refusals++; /* -ENOBUFS, or a lock failure: both wait for a release */
		return RF_E_BUDGET;
	}
	b->host_held_bytes = need;
	b->host_peak_held_bytes = RF_MAX(b->host_peak_held_bytes, need);
	return 0;
}

/* With b->mu held: gives the host back what max(used, floor) does not need. */
static void host_trim(rf_budget *b)
{
	uint64_t keep = RF_MAX(b->used_bytes, b->host_floor_bytes);
	if (!b->host || b->host_held_bytes <= keep)
		return;
	if (rf_hostbudget_release(b->host, b->host_held_bytes - keep) == 0)
		b->host_held_bytes = keep;
}

int rf_budget_attach_host(rf_budget *b, struct rf_hostbudget *hb, uint64_t floor_bytes,
                          rf_error *err)
{
	pthread_mutex_lock(&b->mu);
	b->host = hb;
	b->host_floor_bytes = floor_bytes;
	int rc = host_cover(b, b->used_bytes);
	if (rc < 0) {
		b->host = NULL;
		b->host_floor_bytes = 0;
	}
	pthread_mutex_unlock(&b->mu);
	if (rc < 0) {
		rf_hostbudget_info info;
		rf_hostbudget_info_get(hb, &info);
		return rf_fail(err, rc,
		               "host budget '%s' has no room for this loader's minimum of %llu "
		               "bytes: %llu of %llu bytes held by %u loaders (raise --host-budget "
		               "or lower the loaders' budgets)",
		               rf_hostbudget_name(hb), (unsigned long long)floor_bytes,
		               (unsigned long long)info.used_bytes,
		               (unsigned long long)info.total_bytes, info.members);
	}
	return 0;
}

void rf_budget_detach_host(rf_budget *b)
{
	pthread_mutex_lock(&b->mu);
	if (b->host && b->host_held_bytes > 0)
		rf_hostbudget_release(b->host, b->host_held_bytes);
	b->host = NULL;
	b->host_held_bytes = 0;
	b->host_floor_bytes = 0;
	pthread_mutex_unlock(&b->mu);
}

uint64_t rf_budget_room(rf_budget *b)
{
	pthread_mutex_lock(&b->mu);
	uint64_t cap = b->host ? RF_MIN(b->limit_bytes, b->host_held_bytes) : b->limit_bytes;
	uint64_t room = b->used_bytes < cap ? cap - b->used_bytes : 0;
	pthread_mutex_unlock(&b->mu);
	return room;
}

int rf_budget_reserve(rf_budget *b, enum rf_budget_category cat, uint64_t bytes,
                      uint64_t headroom_bytes)
{
	assert(cat < RF_MEM_CATEGORIES);
	pthread_mutex_lock(&b->mu);
	uint64_t want;
	bool fits = rf_add_u64(b->used_bytes, bytes, &want) &&
	            rf_add_u64(want, headroom_bytes, &want) && want <= b->limit_bytes;
	int rc = fits ? host_cover(b, b->used_bytes + bytes) : RF_E_BUDGET;
	if (rc == 0) {
		b->used_bytes += bytes;
		b->cur_bytes[cat] += bytes;
		b->peak_bytes[cat] = RF_MAX(b->peak_bytes[cat], b->cur_bytes[cat]);
		b->peak_total_bytes = RF_MAX(b->peak_total_bytes, b->used_bytes);
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void rf_budget_release(rf_budget *b, enum rf_budget_category cat, uint64_t bytes)
{
	assert(cat < RF_MEM_CATEGORIES);
	pthread_mutex_lock(&b->mu);
	assert(b->cur_bytes[cat] >= bytes && b->used_bytes >= bytes);
	b->cur_bytes[cat] -= bytes;
	b->used_bytes -= bytes;
	host_trim(b);
	pthread_mutex_unlock(&b->mu);
}

uint64_t rf_budget_used(rf_budget *b)
{
	pthread_mutex_lock(&b->mu);
	uint64_t v = b->used_bytes;
	pthread_mutex_unlock(&b->mu);
	return v;
}

uint64_t rf_budget_category_bytes(rf_budget *b, enum rf_budget_category cat)
{
	pthread_mutex_lock(&b->mu);
	uint64_t v = b->cur_bytes[cat];
	pthread_mutex_unlock(&b->mu);
	return v;
}

void rf_budget_snapshot_get(rf_budget *b, rf_budget_snapshot *out)
{
	pthread_mutex_lock(&b->mu);
	out->limit_bytes = b->limit_bytes;
	out->used_bytes = b->used_bytes;
	out->peak_total_bytes = b->peak_total_bytes;
	out->host_held_bytes = b->host_held_bytes;
	out->host_peak_held_bytes = b->host_peak_held_bytes;
	out->host_floor_bytes = b->host_floor_bytes;
	out->host_refusals = b->host_refusals;
	memcpy(out->cur_bytes, b->cur_bytes, sizeof(out->cur_bytes));
	memcpy(out->peak_bytes, b->peak_bytes, sizeof(out->peak_bytes));
	pthread_mutex_unlock(&b->mu);
}

const char *rf_budget_category_name(enum rf_budget_category cat)
{
	static const char *const names[RF_MEM_CATEGORIES] = {"fetch", "decoded", "batch", "scratch",
	                                                     "metadata"};
	return cat < RF_MEM_CATEGORIES ? names[cat] : "?";
}
