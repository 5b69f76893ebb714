/* hostbudget.h - one byte budget shared by the loaders of one host (one per
 * local rank), so that N ranks do not multiply their budgets by N.
 *
 * The shared state is a POSIX shared memory object /dev/shm/ringfeed-hb-NAME:
 * a header (magic, version, layout size, total, pid namespace, generation
 * stamped at initialisation, used, peak)
 * and a bounded table of RF_HOSTBUDGET_SLOTS slots, one per attached loader
 * (pid, process start time, reserved bytes). A process-shared robust mutex
 * guards it; a loader that dies, even while holding the mutex, leaves a state
 * the next locker repairs (the slots are the truth: used = sum of slots).
 * Dead loaders (pid gone, zombie, or pid reused: start time differs) are
 * reclaimed on open and when a reservation does not fit.
 *
 * Creation, joining and the removal of the object by the last loader to
 * close are serialised by flock() on the object itself, so two creators never
 * both initialise it and nobody joins an object that is being unlinked.
 *
 * Invariant (checked by rf_hostbudget_check): sum(slot reserved) == used <= total.
 * Internal; all loaders sharing a name must share a pid namespace (checked). */
#ifndef RF_HOSTBUDGET_H
#define RF_HOSTBUDGET_H

#include "ringfeed.h"
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RF_HOSTBUDGET_SLOTS    256 /* loaders attached to one host budget at most */
#define RF_HOSTBUDGET_NAME_MAX 64  /* characters in a name: [A-Za-z0-9._-] */

typedef struct rf_hostbudget rf_hostbudget;

typedef struct rf_hostbudget_info {
	uint64_t total_bytes;
	uint64_t used_bytes;       /* by every loader on the host */
	uint64_t peak_used_bytes;  /* highest used_bytes since the object was created */
	uint64_t own_bytes;        /* reserved through this handle */
	uint64_t reclaimed_bytes;  /* taken back from dead loaders since creation */
	uint32_t reclaims;         /* dead loaders reclaimed since creation */
	uint32_t members;          /* slots in use (attached loaders) */
	uint32_t expected_members; /* loaders announced (largest host_loaders given) */
	uint64_t floor_max_bytes;  /* largest floor asked for */
	uint64_t wanted_bytes;     /* floors loaders are waiting for */
} rf_hostbudget_info;

typedef struct rf_hostbudget_member {
	pid_t pid;
	uint64_t reserved_bytes;
} rf_hostbudget_member;

/* Checks a name: 1..RF_HOSTBUDGET_NAME_MAX of [A-Za-z0-9._-], not starting
 * with '.'. Returns 0 or -EINVAL with a message. */
int rf_hostbudget_name_check(const char *name, rf_error *err);

/* Creates or joins the host budget NAME of total_bytes and attaches this
 * process (one slot). Joining a budget that has live loaders and another
 * total is -EINVAL naming both totals; a budget whose loaders are all dead is
 * re-created with the new total. */
int rf_hostbudget_open(const char *name, uint64_t total_bytes, rf_hostbudget **out, rf_error *err);
/* Releases this handle's whole reservation and its slot; the last loader to
 * close removes the shared object. NULL is a no-op. In a child that inherited
 * the handle across fork() it only unmaps (the parent still owns the slot). */
void rf_hostbudget_close(rf_hostbudget *hb);

/* Non-blocking: 0, or -ENOBUFS when the host total would be exceeded (after
 * reclaiming dead loaders, at most every RF_HOSTBUDGET_RECLAIM_MS), -ECHILD
 * from a forked child, -ETIMEDOUT / -ENOTRECOVERABLE if the lock fails. */
int rf_hostbudget_reserve(rf_hostbudget *hb, uint64_t bytes);
/* Reserves a loader's floor (its minimum working set), waiting up to
 * timeout_ms for others to drain: while it waits, other loaders' reservations
 * leave room for it. expected_loaders (0: unknown) announces how many
 * loaders will share the budget: until that many are attached, room for the
 * largest floor asked so far is kept for each one still to come, so a late
 * rank never finds the total taken by the read-ahead of the early ones.
 * 0, -ENOBUFS after the timeout, or a reserve error. With -ENOBUFS and
 * why set: the figures at the last try, this loader's wait still counted
 * (wanted_bytes holds its floor too), for the message that says why. */
int rf_hostbudget_reserve_floor(rf_hostbudget *hb, uint64_t bytes, uint32_t expected_loaders,
                                int timeout_ms, rf_hostbudget_info *why);
/* Returns bytes reserved through this handle (clamped to what it holds). */
int rf_hostbudget_release(rf_hostbudget *hb, uint64_t bytes);
uint64_t rf_hostbudget_used(rf_hostbudget *hb);
int rf_hostbudget_info_get(rf_hostbudget *hb, rf_hostbudget_info *out);
/* Per-loader figures: fills up to cap members, returns how many are attached. */
int rf_hostbudget_members(rf_hostbudget *hb, rf_hostbudget_member *out, int cap);
/* Reclaims dead loaders now; returns the bytes reclaimed or -errno. */
int64_t rf_hostbudget_reclaim(rf_hostbudget *hb);
/* Verifies the invariant; 0 or -EUCLEAN with a message. */
int rf_hostbudget_check(rf_hostbudget *hb, rf_error *err);
const char *rf_hostbudget_name(const rf_hostbudget *hb);
/* True once the object shrank under this handle, or was re-initialised
 * (its magic or generation changed: a truncate-and-regrow zeroes it): every
 * call fails with -EIO and rf_hostbudget_error says what happened. */
bool rf_hostbudget_broken(const rf_hostbudget *hb);
/* 0, or -EIO with a message naming the object and what happened to it (its
 * size now and the size expected, or its magic / generation now and then). */
int rf_hostbudget_error(const rf_hostbudget *hb, rf_error *err);
/* Takes and drops the lock, checking the object on the way (a refresh for a
 * loader whose reservations do not change), at most every
 * RF_HOSTBUDGET_VERIFY_MS: 0 or rf_hostbudget_error's. */
int rf_hostbudget_verify(rf_hostbudget *hb, rf_error *err);

#define RF_HOSTBUDGET_RECLAIM_MS 20    /* a failing reserve scans for the dead this often */
#define RF_HOSTBUDGET_VERIFY_MS  20    /* rf_hostbudget_verify locks this often at most */
#define RF_HOSTBUDGET_LOCK_MS    5000  /* longest wait for the lock (a stopped holder) */
#define RF_HOSTBUDGET_FLOOR_MS   10000 /* a loader's open waits this long for its floor */

#ifdef RF_TEST_HOOKS
/* Test hook (test builds only, never in the shipped library): takes the
 * lock, adds `bytes` to this handle's slot without updating the header (a
 * half-done update), and kills the process with SIGKILL. Lets tests check
 * the EOWNERDEAD repair. Never returns. */
void rf_hostbudget_test_die_locked(rf_hostbudget *hb, uint64_t bytes) __attribute__((noreturn));
#endif

#endif
