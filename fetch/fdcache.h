/* fdcache.h - a bounded set of open file descriptors for the local file
 * source, least recently used first out. A source owns one rf_fd_slot; a read
 * acquires the slot's descriptor (opening it, and closing the least recently
 * used idle one of another source when the set is full) and releases it when
 * it completes. A descriptor with reads in flight is never closed; when all
 * are busy the answer is -EAGAIN (the caller waits for a release). The shard
 * count is then limited by metadata, not by `ulimit -n`.
 * Loop thread only. */
#ifndef RF_FDCACHE_H
#define RF_FDCACHE_H

#include "list.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rf_fdcache rf_fdcache;

typedef struct rf_fd_slot {
	int fd;            /* -1 when not open */
	uint32_t users;    /* reads in flight holding fd */
	bool direct;       /* fd was opened with O_DIRECT */
	bool refused;      /* the filesystem refused O_DIRECT for it */
	rf_list_node idle; /* in the idle list while open and unused */
} rf_fd_slot;

#define RF_FDCACHE_FILES_MAX 256u /* descriptors kept open at most (fewer at a low ulimit) */

/* files_max 0: from RLIMIT_NOFILE (a quarter of the soft limit, at most
 * RF_FDCACHE_FILES_MAX, at least 4). */
int rf_fdcache_new(uint32_t files_max, rf_fdcache **out);
void rf_fdcache_free(rf_fdcache *c); /* every slot must have been dropped */
void rf_fd_slot_init(rf_fd_slot *slot);

/* Returns the open descriptor of path (read-only, non-blocking: what it is,
 * the caller checks; with O_DIRECT when direct, unless the filesystem refuses
 * it: slot->direct says which, counters.direct_refused counts); -EAGAIN when
 * every descriptor of the set has reads in flight (wait for a release; msg
 * untouched); or -errno with msg (cap bytes) naming the cause. */
int rf_fdcache_acquire(rf_fdcache *c, rf_fd_slot *slot, const char *path, bool direct, char *msg,
                       size_t cap);
void rf_fdcache_release(rf_fdcache *c, rf_fd_slot *slot);
/* Closes slot's descriptor (its source is closing: reads were cancelled). */
void rf_fdcache_drop(rf_fdcache *c, rf_fd_slot *slot);

typedef struct rf_fdcache_counters {
	uint64_t opens;          /* descriptors opened */
	uint64_t evictions;      /* idle descriptors closed to make room */
	uint32_t open_now;       /* open at this moment */
	uint32_t open_max;       /* most open at once */
	uint32_t files_max;      /* the set's size */
	uint64_t direct_refused; /* opens whose O_DIRECT the filesystem refused */
} rf_fdcache_counters;
void rf_fdcache_counters_get(const rf_fdcache *c, rf_fdcache_counters *out);

#ifdef RF_TEST_HOOKS
/* Test hook (test builds only, never in the shipped library): opens go
 * through fn (returns a descriptor or -errno), e.g. a filesystem that
 * refuses O_DIRECT. */
void rf_fdcache_set_open(rf_fdcache *c, int (*fn)(const char *path, int flags));
#endif

#endif
