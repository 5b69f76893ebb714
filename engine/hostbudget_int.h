/* hostbudget_int.h - what the files of the host budget share (internal to
 * hostbudget.c, hostbudget_shm.c and hostbudget_slots.c; the engine sees
 * hostbudget.h).
 *
 *   hostbudget_shm.c    the shared segment: the name, open / create / join
 *                       under flock, owner and mode, the layout and header
 *                       checks, the mapping with its size and generation
 *                       checks, the robust lock, close (the last one
 *                       unlinks), the broken-object report, verification
 *   hostbudget_slots.c  the slot table: who is attached and alive (pid and
 *                       start time), reclaiming the dead, the EOWNERDEAD
 *                       repair (the slots are the truth)
 *   hostbudget.c        the accounting protocol: reserve, release, floors,
 *                       figures, members, the invariant check, and the test
 *                       hook (so it is the file in RF_TEST_HOOK_SOURCES)
 * The slots call neither other file; the accounting calls both. */
#ifndef RF_HOSTBUDGET_INT_H
#define RF_HOSTBUDGET_INT_H

#include "hostbudget.h"

#include <pthread.h>

#define HB_MAGIC   0x31424852u /* "RHB1" */
#define HB_VERSION 2u
#define HB_PREFIX  "/ringfeed-hb-"

typedef struct hb_slot {
	int32_t pid; /* 0: free */
	uint32_t pad;
	uint64_t start_ticks; /* field 22 of /proc/PID/stat, 0 if unknown */
	uint64_t reserved_bytes;
	uint64_t want_bytes; /* a floor it waits for: others leave room for it */
} hb_slot;

typedef struct hb_shared {
	uint32_t magic, version;
	uint32_t layout_bytes, slots;
	uint64_t pidns; /* inode of /proc/self/ns/pid of the creator, 0 if unknown */
	uint64_t total_bytes;
	uint32_t ready; /* set last by the initialiser (under flock) */
	uint32_t reclaims;
	uint64_t generation;   /* stamped at initialisation: a re-initialised object differs */
	pthread_mutex_t mutex; /* process-shared, robust; guards what follows */
	uint64_t used_bytes, peak_used_bytes, reclaimed_bytes;
	uint64_t last_scan_ns;
	uint64_t wanted_bytes;    /* sum of the slots' want_bytes */
	uint64_t floor_max_bytes; /* largest floor asked for: kept for loaders to come */
	uint32_t expected_members, pad;
	hb_slot slot[RF_HOSTBUDGET_SLOTS];
} hb_shared;

struct rf_hostbudget {
	hb_shared *sh;
	int fd;
	pid_t pid;             /* the process that attached; a forked child is not it */
	bool broken;           /* the object shrank or was re-initialised: never touched again */
	int64_t broken_size;   /* its size then (-1 unknown) */
	uint32_t broken_magic; /* the magic found then (shrank: unread) */
	uint64_t broken_generation; /* the generation found then */
	uint64_t generation;        /* the object's generation when this handle attached */
	uint64_t verified_ns;       /* last rf_hostbudget_verify that took the lock */
	uint32_t slot;
	uint64_t start_ticks;
	char name[RF_HOSTBUDGET_NAME_MAX + 1];
	char path[sizeof(HB_PREFIX) + RF_HOSTBUDGET_NAME_MAX];
};

/* hostbudget_shm.c: locks the object's mutex (checking first that the
 * object is still whole and the same; repairing after a dead holder):
 * 0, -EIO when broken, or the lock's -errno. */
int rf_hb_lock(rf_hostbudget *hb);
void rf_hb_unlock(hb_shared *sh);

/* hostbudget_slots.c */
/* Reads the state letter and start time (clock ticks after boot) of pid.
 * -ENOENT when the process does not exist. */
int rf_hb_proc_stat(pid_t pid, char *state, uint64_t *start_ticks);
/* Mutex held: frees the slots of dead loaders; returns the bytes taken back. */
uint64_t rf_hb_reclaim_dead(hb_shared *sh);
/* Mutex held after EOWNERDEAD: used and wanted recomputed from the slots. */
void rf_hb_repair(hb_shared *sh);
uint32_t rf_hb_count_members(const hb_shared *sh);
/* Mutex held: takes a free slot for this process. */
int rf_hb_take_slot(rf_hostbudget *hb, rf_error *err);
/* Mutex held: this handle's slot, if it is still ours. */
hb_slot *rf_hb_own_slot(rf_hostbudget *hb);

#endif
