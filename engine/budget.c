/* budget.c - the byte budget (see budget.h). One mutex: reservations happen
 * per block and per batch, never per record, so contention is negligible. */
#include "budget.h"
#include "hostbudget.h"
#include "tsa.h"
#include "util.h"

#include <assert.h>
#include <stdio.h>

/* The budget's lock (base/tsa.h: its level in the lock order, checked in
 * debug builds; the analysis's acquire and release). */
static void rf_budget_lock(rf_budget *b) RF_ACQUIRE(rf_budget_mu) RF_NO_TSA
{
	rf_lock_order_take(RF_LOCK_BUDGET);
	pthread_mutex_lock(&b->mu);
}

static void rf_budget_unlock(rf_budget *b) RF_RELEASE(rf_budget_mu) RF_NO_TSA
{
	pthread_mutex_unlock(&b->mu);
	rf_lock_order_give(RF_LOCK_BUDGET);
}

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

/* With b->mu held: makes the host bytes held cover max(target, floor). */
static int host_cover(rf_budget *b, uint64_t target) RF_REQUIRES(rf_budget_mu)
{
	uint64_t need = RF_MAX(target, b->host_floor_bytes);
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

/* With b->mu held: gives the host back what max(used + slack, floor) does
 * not need. The slack (the last headroom asked for) stays held so that the
 * reservation the headroom was kept for (the next batch) never waits for
 * another loader. */
static void host_trim(rf_budget *b) RF_REQUIRES(rf_budget_mu)
{
	uint64_t keep;
	if (!rf_add_u64(b->used_bytes, b->host_slack_bytes, &keep))
		keep = UINT64_MAX;
	keep = RF_MAX(keep, b->host_floor_bytes);
	if (!b->host || b->host_held_bytes <= keep)
		return;
	if (rf_hostbudget_release(b->host, b->host_held_bytes - keep) == 0)
		b->host_held_bytes = keep;
}

/* Why a floor found no room: what is held, what other loaders wait for,
 * what is kept for loaders announced but not attached, and so what all of
 * them need together against the total (figures at the last try). */
static int rf_host_floor_fail(struct rf_hostbudget *hb, uint64_t need, int timeout_ms,
                              const rf_hostbudget_info *w, rf_error *err)
{
	uint64_t others = w->wanted_bytes - RF_MIN(need, w->wanted_bytes), future = 0, all;
	uint32_t coming = w->expected_members > w->members ? w->expected_members - w->members : 0;
	if (!rf_mul_u64(coming, w->floor_max_bytes, &future))
		future = UINT64_MAX;
	if (!rf_add_u64(w->used_bytes, others, &all) || !rf_add_u64(all, future, &all) ||
	    !rf_add_u64(all, need, &all))
		all = UINT64_MAX;
	char t[4][32];
	return rf_fail(
	    err, RF_E_BUDGET,
	    "host budget '%s' of %llu bytes (%s) had no room within %d ms for this loader's "
	    "minimum of %llu bytes (%s): %llu bytes held by %u loader(s) attached, %llu bytes "
	    "of minimums other loaders wait for, %llu bytes kept for %u loader(s) announced but "
	    "not attached (%s each, the largest minimum asked): %llu bytes (%s) needed together "
	    "(raise --host-budget to that, or lower the loaders' budgets)",
	    rf_hostbudget_name(hb), (unsigned long long)w->total_bytes,
	    rf_fmt_bytes(w->total_bytes, t[0], sizeof(t[0])), timeout_ms, (unsigned long long)need,
	    rf_fmt_bytes(need, t[1], sizeof(t[1])), (unsigned long long)w->used_bytes, w->members,
	    (unsigned long long)others, (unsigned long long)future, coming,
	    rf_fmt_bytes(w->floor_max_bytes, t[2], sizeof(t[2])), (unsigned long long)all,
	    rf_fmt_bytes(all, t[3], sizeof(t[3])));
}

int rf_budget_attach_host(rf_budget *b, struct rf_hostbudget *hb, uint64_t floor_bytes,
                          uint32_t expected_loaders, int timeout_ms, rf_error *err)
{
	/* Before any reservation (used is the fixed part at most): no lock is
	 * held while waiting for other loaders to make room. */
	uint64_t need = RF_MAX(rf_budget_used(b), floor_bytes);
	rf_hostbudget_info why = {0};
	int rc = rf_hostbudget_reserve_floor(hb, need, expected_loaders, timeout_ms, &why);
	if (rc < 0 && need > why.total_bytes && rc == -ENOBUFS)
		return rf_fail(err, RF_E_BUDGET,
		               "host budget '%s' of %llu bytes is smaller than this loader's "
		               "minimum of %llu bytes (raise --host-budget)",
		               rf_hostbudget_name(hb), (unsigned long long)why.total_bytes,
		               (unsigned long long)need);
	if (rc == -ENOBUFS)
		return rf_host_floor_fail(hb, need, timeout_ms, &why, err);
	if (rc < 0)
		return rf_fail(err, RF_E_BUDGET,
		               "host budget '%s': this loader's minimum of %llu bytes could not be "
		               "reserved: %s",
		               rf_hostbudget_name(hb), (unsigned long long)need, strerror(-rc));
	rf_budget_lock(b);
	b->host = hb;
	b->host_floor_bytes = floor_bytes;
	b->host_held_bytes = need;
	b->host_peak_held_bytes = RF_MAX(b->host_peak_held_bytes, need);
	rf_budget_unlock(b);
	return 0;
}

void rf_budget_detach_host(rf_budget *b)
{
	rf_budget_lock(b);
	if (b->host && b->host_held_bytes > 0)
		rf_hostbudget_release(b->host, b->host_held_bytes);
	b->host = NULL;
	b->host_held_bytes = 0;
	b->host_floor_bytes = 0;
	rf_budget_unlock(b);
}

bool rf_budget_host_bound(rf_budget *b, uint64_t bytes)
{
	rf_budget_lock(b);
	uint64_t want;
	bool host = b->host && rf_add_u64(b->used_bytes, bytes, &want) && want <= b->limit_bytes;
	rf_budget_unlock(b);
	return host;
}

uint64_t rf_budget_room(rf_budget *b)
{
	rf_budget_lock(b);
	uint64_t cap = b->host ? RF_MIN(b->limit_bytes, b->host_held_bytes) : b->limit_bytes;
	uint64_t room = b->used_bytes < cap ? cap - b->used_bytes : 0;
	rf_budget_unlock(b);
	return room;
}

int rf_budget_reserve(rf_budget *b, enum rf_budget_category cat, uint64_t bytes,
                      uint64_t headroom_bytes)
{
	assert(cat < RF_MEM_CATEGORIES);
	rf_budget_lock(b);
	uint64_t want;
	bool fits = rf_add_u64(b->used_bytes, bytes, &want) &&
	            rf_add_u64(want, headroom_bytes, &want) && want <= b->limit_bytes;
	/* The host must hold the headroom too: another loader could take it. */
	int rc = fits ? host_cover(b, want) : RF_E_BUDGET;
	if (headroom_bytes > 0)
		b->host_slack_bytes = headroom_bytes;
	if (rc == 0) {
		b->used_bytes += bytes;
		b->cur_bytes[cat] += bytes;
		b->peak_bytes[cat] = RF_MAX(b->peak_bytes[cat], b->cur_bytes[cat]);
		b->peak_total_bytes = RF_MAX(b->peak_total_bytes, b->used_bytes);
	}
	rf_budget_unlock(b);
	return rc;
}

void rf_budget_release(rf_budget *b, enum rf_budget_category cat, uint64_t bytes)
{
	assert(cat < RF_MEM_CATEGORIES);
	rf_budget_lock(b);
	assert(b->cur_bytes[cat] >= bytes && b->used_bytes >= bytes);
	b->cur_bytes[cat] -= bytes;
	b->used_bytes -= bytes;
	host_trim(b);
	rf_budget_unlock(b);
}

uint64_t rf_budget_used(rf_budget *b)
{
	rf_budget_lock(b);
	uint64_t v = b->used_bytes;
	rf_budget_unlock(b);
	return v;
}

uint64_t rf_budget_category_bytes(rf_budget *b, enum rf_budget_category cat)
{
	rf_budget_lock(b);
	uint64_t v = b->cur_bytes[cat];
	rf_budget_unlock(b);
	return v;
}

void rf_budget_snapshot_get(rf_budget *b, rf_budget_snapshot *out)
{
	rf_budget_lock(b);
	out->limit_bytes = b->limit_bytes;
	out->used_bytes = b->used_bytes;
	out->peak_total_bytes = b->peak_total_bytes;
	out->host_held_bytes = b->host_held_bytes;
	out->host_peak_held_bytes = b->host_peak_held_bytes;
	out->host_floor_bytes = b->host_floor_bytes;
	out->host_refusals = b->host_refusals;
	memcpy(out->cur_bytes, b->cur_bytes, sizeof(out->cur_bytes));
	memcpy(out->peak_bytes, b->peak_bytes, sizeof(out->peak_bytes));
	rf_budget_unlock(b);
}

const char *rf_budget_category_name(enum rf_budget_category cat)
{
	static const char *const names[RF_MEM_CATEGORIES] = {"fetch", "decoded", "batch", "scratch",
	                                                     "metadata"};
	return cat < RF_MEM_CATEGORIES ? names[cat] : "?";
}

int rf_budget_host_json(rf_budget *b, char *buf, size_t cap)
{
	rf_budget_snapshot s;
	rf_budget_snapshot_get(b, &s);
	rf_hostbudget_info h;
	int n;
	rf_budget_lock(b);
	struct rf_hostbudget *hb = b->host; /* set at open, cleared at close */
	rf_budget_unlock(b);
	if (!hb || rf_hostbudget_info_get(hb, &h) < 0)
		n = snprintf(buf, cap, ",\"host_budget\":null}");
	else
		n = snprintf(
		    buf, cap,
		    ",\"host_budget\":{\"name\":\"%s\",\"total_bytes\":%llu,"
		    "\"used_bytes\":%llu,\"peak_used_bytes\":%llu,\"loaders\":%u,"
		    "\"reclaims\":%u,\"reclaimed_bytes\":%llu,\"held_bytes\":%llu,"
		    "\"peak_held_bytes\":%llu,\"floor_bytes\":%llu,\"refusals\":%llu}}",
		    rf_hostbudget_name(hb), (unsigned long long)h.total_bytes,
		    (unsigned long long)h.used_bytes, (unsigned long long)h.peak_used_bytes,
		    h.members, h.reclaims, (unsigned long long)h.reclaimed_bytes,
		    (unsigned long long)s.host_held_bytes,
		    (unsigned long long)s.host_peak_held_bytes,
		    (unsigned long long)s.host_floor_bytes, (unsigned long long)s.host_refusals);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}
