/* budget.c - the byte budget (see budget.h). One mutex: reservations happen
 * per block and per batch, never per record, so contention is negligible. */
#include "budget.h"
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
	pthread_mutex_destroy(&b->mu);
}

int rf_budget_reserve(rf_budget *b, enum rf_budget_category cat, uint64_t bytes,
                      uint64_t headroom_bytes)
{
	assert(cat < RF_MEM_CATEGORIES);
	pthread_mutex_lock(&b->mu);
	uint64_t want;
	bool fits = rf_add_u64(b->used_bytes, bytes, &want) &&
	            rf_add_u64(want, headroom_bytes, &want) && want <= b->limit_bytes;
	if (fits) {
		b->used_bytes += bytes;
		b->cur_bytes[cat] += bytes;
		b->peak_bytes[cat] = RF_MAX(b->peak_bytes[cat], b->cur_bytes[cat]);
		b->peak_total_bytes = RF_MAX(b->peak_total_bytes, b->used_bytes);
	}
	pthread_mutex_unlock(&b->mu);
	return fits ? 0 : RF_E_BUDGET;
}

void rf_budget_release(rf_budget *b, enum rf_budget_category cat, uint64_t bytes)
{
	assert(cat < RF_MEM_CATEGORIES);
	pthread_mutex_lock(&b->mu);
	assert(b->cur_bytes[cat] >= bytes && b->used_bytes >= bytes);
	b->cur_bytes[cat] -= bytes;
	b->used_bytes -= bytes;
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
