/* hostbudget.c - the host budget's accounting protocol (see hostbudget.h,
 * hostbudget_int.h): reservations and releases against the host total,
 * floors a loader waits for (and the room kept for loaders still to come),
 * the figures, the members and the invariant check sum(slots) == used <=
 * total. The segment is hostbudget_shm.c's, the slot table
 * hostbudget_slots.c's. The test hook lives here: this file is in
 * RF_TEST_HOOK_SOURCES. */
#include "hostbudget_int.h"
#include "util.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

/* Room for bytes after what is used, the floors other loaders wait for, and
 * the floors of loaders expected but not attached yet. */
static bool fits(const hb_shared *sh, const hb_slot *self, uint64_t bytes)
{
	uint32_t members = rf_hb_count_members(sh);
	uint64_t future = 0, want;
	if (sh->expected_members > members &&
	    !rf_mul_u64(sh->expected_members - members, sh->floor_max_bytes, &future))
		return false;
	uint64_t others = sh->wanted_bytes - RF_MIN(self->want_bytes, sh->wanted_bytes);
	return rf_add_u64(sh->used_bytes, bytes, &want) && rf_add_u64(want, others, &want) &&
	       rf_add_u64(want, future, &want) && want <= sh->total_bytes;
}

int rf_hostbudget_reserve(rf_hostbudget *hb, uint64_t bytes)
{
	if (getpid() != hb->pid)
		return -ECHILD;
	if (bytes == 0)
		return 0;
	hb_shared *sh = hb->sh;
	RF_TRY(rf_hb_lock(hb));
	int rc = 0;
	hb_slot *s = rf_hb_own_slot(hb);
	if (!s) {
		rc = -EIDRM; /* our slot was taken from us: never expected */
	} else if (!fits(sh, s, bytes)) {
		uint64_t now = rf_now_ns();
		if (now - sh->last_scan_ns >= RF_HOSTBUDGET_RECLAIM_MS * 1000000ull) {
			sh->last_scan_ns = now;
			rf_hb_reclaim_dead(sh);
		}
		rc = fits(sh, s, bytes) ? 0 : -ENOBUFS;
	}
	if (rc == 0) {
		s->reserved_bytes += bytes;
		sh->used_bytes += bytes;
		sh->peak_used_bytes = RF_MAX(sh->peak_used_bytes, sh->used_bytes);
	}
	rf_hb_unlock(sh);
	return rc;
}

int rf_hostbudget_release(rf_hostbudget *hb, uint64_t bytes)
{
	if (getpid() != hb->pid)
		return -ECHILD;
	if (bytes == 0)
		return 0;
	RF_TRY(rf_hb_lock(hb));
	hb_slot *s = rf_hb_own_slot(hb);
	if (s) {
		uint64_t b = RF_MIN(bytes, s->reserved_bytes);
		s->reserved_bytes -= b;
		hb->sh->used_bytes -= RF_MIN(b, hb->sh->used_bytes);
	}
	rf_hb_unlock(hb->sh);
	return s ? 0 : -EIDRM;
}

/* With the mutex held: this slot now waits for want bytes (0: no more). */
static void set_want(rf_hostbudget *hb, hb_slot *s, uint64_t want)
{
	hb->sh->wanted_bytes -= RF_MIN(s->want_bytes, hb->sh->wanted_bytes);
	s->want_bytes = want;
	if (!rf_add_u64(hb->sh->wanted_bytes, want, &hb->sh->wanted_bytes))
		hb->sh->wanted_bytes = UINT64_MAX;
}

static void info_fill(const rf_hostbudget *hb, const hb_slot *s, rf_hostbudget_info *out)
{
	const hb_shared *sh = hb->sh;
	memset(out, 0, sizeof(*out));
	out->total_bytes = sh->total_bytes;
	out->used_bytes = sh->used_bytes;
	out->peak_used_bytes = sh->peak_used_bytes;
	out->own_bytes = s ? s->reserved_bytes : 0;
	out->reclaimed_bytes = sh->reclaimed_bytes;
	out->reclaims = sh->reclaims;
	out->members = rf_hb_count_members(sh);
	out->wanted_bytes = sh->wanted_bytes;
	out->floor_max_bytes = sh->floor_max_bytes;
	out->expected_members = sh->expected_members;
}

int rf_hostbudget_reserve_floor(rf_hostbudget *hb, uint64_t bytes, uint32_t expected_loaders,
                                int timeout_ms, rf_hostbudget_info *why)
{
	if (getpid() != hb->pid)
		return -ECHILD;
	RF_TRY(rf_hb_lock(hb));
	hb_slot *s = rf_hb_own_slot(hb);
	if (s && bytes > hb->sh->total_bytes) {
		if (why)
			info_fill(hb, s, why);
		rf_hb_unlock(hb->sh);
		return -ENOBUFS; /* waiting cannot help */
	}
	if (s) {
		hb->sh->expected_members = RF_MAX(hb->sh->expected_members, expected_loaders);
		hb->sh->floor_max_bytes = RF_MAX(hb->sh->floor_max_bytes, bytes);
		set_want(hb, s, bytes);
	}
	rf_hb_unlock(hb->sh);
	if (!s)
		return -EIDRM;
	uint64_t deadline = rf_now_ns() + (uint64_t)RF_MAX(timeout_ms, 0) * 1000000ull;
	int rc;
	while ((rc = rf_hostbudget_reserve(hb, bytes)) == -ENOBUFS && rf_now_ns() < deadline) {
		struct timespec ts = {0, 5000000L}; /* others drain as their consumers go */
		nanosleep(&ts, NULL);
	}
	if (rf_hb_lock(hb) == 0) {
		s = rf_hb_own_slot(hb);
		if (why && rc == -ENOBUFS) /* before its own wait is taken back */
			info_fill(hb, s, why);
		if (s)
			set_want(hb, s, 0);
		rf_hb_unlock(hb->sh);
	}
	return rc;
}

int rf_hostbudget_info_get(rf_hostbudget *hb, rf_hostbudget_info *out)
{
	memset(out, 0, sizeof(*out));
	RF_TRY(rf_hb_lock(hb));
	info_fill(hb, getpid() == hb->pid ? rf_hb_own_slot(hb) : NULL, out);
	rf_hb_unlock(hb->sh);
	return 0;
}

uint64_t rf_hostbudget_used(rf_hostbudget *hb)
{
	rf_hostbudget_info info;
	return rf_hostbudget_info_get(hb, &info) == 0 ? info.used_bytes : 0;
}

int rf_hostbudget_members(rf_hostbudget *hb, rf_hostbudget_member *out, int cap)
{
	RF_TRY(rf_hb_lock(hb));
	int n = 0;
	for (uint32_t i = 0; i < RF_HOSTBUDGET_SLOTS; i++) {
		const hb_slot *s = &hb->sh->slot[i];
		if (s->pid == 0)
			continue;
		if (n < cap)
			out[n] = (rf_hostbudget_member){s->pid, s->reserved_bytes};
		n++;
	}
	rf_hb_unlock(hb->sh);
	return n;
}

int64_t rf_hostbudget_reclaim(rf_hostbudget *hb)
{
	RF_TRY(rf_hb_lock(hb));
	hb->sh->last_scan_ns = rf_now_ns();
	uint64_t got = rf_hb_reclaim_dead(hb->sh);
	rf_hb_unlock(hb->sh);
	return (int64_t)RF_MIN(got, (uint64_t)INT64_MAX);
}

int rf_hostbudget_check(rf_hostbudget *hb, rf_error *err)
{
	hb_shared *sh = hb->sh;
	int rc = rf_hb_lock(hb);
	if (rc < 0 && hb->broken)
		return rf_hostbudget_error(hb, err);
	if (rc < 0)
		return rf_fail(err, rc, "host budget '%s': lock: %s", hb->name, strerror(-rc));
	uint64_t sum = 0, want = 0;
	bool overflow = false;
	for (uint32_t i = 0; i < RF_HOSTBUDGET_SLOTS; i++) {
		if (sh->slot[i].pid == 0)
			continue;
		overflow |= !rf_add_u64(sum, sh->slot[i].reserved_bytes, &sum);
		overflow |= !rf_add_u64(want, sh->slot[i].want_bytes, &want);
	}
	uint64_t used = sh->used_bytes, total = sh->total_bytes, peak = sh->peak_used_bytes;
	bool want_ok = want == sh->wanted_bytes;
	rf_hb_unlock(sh);
	if (overflow || sum != used || used > total || peak > total || !want_ok)
		return rf_fail(
		    err, -EUCLEAN,
		    "host budget '%s' inconsistent: slots hold %llu bytes%s%s, used %llu, "
		    "peak %llu, total %llu",
		    hb->name, (unsigned long long)sum, overflow ? " (overflow)" : "",
		    want_ok ? "" : " (floors waited for disagree)", (unsigned long long)used,
		    (unsigned long long)peak, (unsigned long long)total);
	return 0;
}

#ifdef RF_TEST_HOOKS
void rf_hostbudget_test_die_locked(rf_hostbudget *hb, uint64_t bytes)
{
	if (rf_hb_lock(hb) == 0) {
		hb_slot *s = rf_hb_own_slot(hb);
		if (s)
			s->reserved_bytes += bytes; /* used_bytes deliberately not updated */
	}
	for (;;) {
		kill(getpid(), SIGKILL);
		pause();
	}
}
#endif
