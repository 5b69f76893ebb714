/* fdcache.c - the bounded, least-recently-used set of open descriptors the
 * local file source reads through (see fdcache.h). The idle list is doubly
 * linked through the slots: acquire, release, evict and drop are O(1). */
#include "fdcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

struct rf_fdcache {
	uint32_t files_max;
	uint32_t open_now, open_max;
	uint64_t opens, evictions, direct_refused;
	rf_list idle; /* of rf_fd_slot; head: most recently released */
#ifdef RF_TEST_HOOKS
	int (*open_fn)(const char *path, int flags); /* rf_fdcache_set_open; NULL: open(2) */
#endif
};

static uint32_t rf_fdcache_default_max(void)
{
	struct rlimit rl;
	uint64_t soft = 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		soft = rl.rlim_cur;
	uint64_t n = soft / 4;
	if (n > RF_FDCACHE_FILES_MAX)
		n = RF_FDCACHE_FILES_MAX;
	return n < 4 ? 4 : (uint32_t)n;
}

int rf_fdcache_new(uint32_t files_max, rf_fdcache **out)
{
	rf_fdcache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->files_max = files_max ? files_max : rf_fdcache_default_max();
	*out = c;
	return 0;
}

void rf_fdcache_free(rf_fdcache *c)
{
	free(c);
}

void rf_fd_slot_init(rf_fd_slot *slot)
{
	*slot = (rf_fd_slot){.fd = -1};
}

static void rf_idle_unlink(rf_fdcache *c, rf_fd_slot *s)
{
	rf_list_remove(&c->idle, &s->idle);
}

static void rf_idle_push(rf_fdcache *c, rf_fd_slot *s)
{
	rf_list_push_front(&c->idle, &s->idle);
}

static void rf_fd_close(rf_fdcache *c, rf_fd_slot *s)
{
	close(s->fd);
	s->fd = -1;
	c->open_now--;
}

/* Closes the least recently used idle descriptor; false when none is idle. */
static bool rf_fdcache_evict(rf_fdcache *c)
{
	rf_fd_slot *s = rf_list_entry_or_null(c->idle.tail, rf_fd_slot, idle);
	if (!s)
		return false;
	rf_idle_unlink(c, s);
	rf_fd_close(c, s);
	c->evictions++;
	return true;
}

/* open(2): a descriptor or -errno (in test builds, through the test's opener). */
static int rf_fd_open_once(rf_fdcache *c, const char *path, int flags)
{
#ifdef RF_TEST_HOOKS
	if (c->open_fn)
		return c->open_fn(path, flags);
#endif
	int fd = open(path, flags);
	return fd >= 0 ? fd : -errno;
}

static int rf_fd_open(rf_fdcache *c, const char *path, int flags)
{
	for (;;) {
		flags |= O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
		int fd = rf_fd_open_once(c, path, flags);
		if (fd >= 0)
			return fd;
		int e = -fd;
		if ((e != EMFILE && e != ENFILE) || !rf_fdcache_evict(c))
			return -e;
	}
}

/* The filesystem fd lives on, by name where it is a common one. */
static void rf_fs_name(int fd, char *out, size_t cap)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} known[] = {{0x01021994, "tmpfs"}, {0x794c7630, "overlayfs"}, {0x6969, "nfs"},
	             {0x65735546, "fuse"},  {0xef53, "ext2/3/4"},      {0x58465342, "xfs"},
	             {0x9123683e, "btrfs"}, {0xff534d42, "cifs"},      {0x2fc12fc1, "zfs"}};
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0) {
		snprintf(out, cap, "unknown");
		return;
	}
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if ((unsigned long)sf.f_type == known[i].magic) {
			snprintf(out, cap, "%s", known[i].name);
			return;
		}
	}
	snprintf(out, cap, "type 0x%lx", (unsigned long)sf.f_type);
}

/* The first refusal of a set is said on stderr, naming the file and its
 * filesystem; the rest are counted only (direct_refused). */
static void rf_fd_say_refused(const char *path, int fd)
{
	char fs[32] = "unknown";
	if (fd >= 0)
		rf_fs_name(fd, fs, sizeof(fs));
	fprintf(stderr,
	        "ringfeed: direct I/O: the filesystem of %s (%s) refused O_DIRECT: files it "
	        "refuses are read through the page cache (said once)\n",
	        path, fs);
}

/* O_DIRECT, or the page cache where the filesystem refuses it (tmpfs:
 * EINVAL at open). */
static int rf_fd_open_mode(rf_fdcache *c, rf_fd_slot *slot, const char *path, bool direct)
{
	slot->direct = false;
	if (!direct)
		return rf_fd_open(c, path, 0);
	int fd = rf_fd_open(c, path, O_DIRECT);
	if (fd != -EINVAL) {
		slot->direct = fd >= 0;
		return fd;
	}
	fd = rf_fd_open(c, path, 0);
	if (c->direct_refused++ == 0)
		rf_fd_say_refused(path, fd);
	return fd;
}

int rf_fdcache_acquire(rf_fdcache *c, rf_fd_slot *slot, const char *path, bool direct, char *msg,
                       size_t cap)
{
	if (slot->fd >= 0 && slot->users == 0 && direct && !slot->direct && !slot->refused)
		rf_fdcache_drop(c, slot); /* idle, opened before direct I/O was on: again */
	if (slot->fd >= 0) {
		if (slot->users++ == 0)
			rf_idle_unlink(c, slot);
		return slot->fd;
	}
	while (c->open_now >= c->files_max && rf_fdcache_evict(c)) {
	}
	if (c->open_now >= c->files_max)
		return -EAGAIN; /* all busy: one is released when its read completes */
	int fd = rf_fd_open_mode(c, slot, path, direct);
	slot->refused = direct && !slot->direct;
	if ((fd == -EMFILE || fd == -ENFILE) && c->open_now > 0)
		return -EAGAIN; /* the process is out of descriptors; ours are busy */
	if (fd < 0) {
		snprintf(msg, cap, "%s: %s", path, strerror(-fd));
		return fd;
	}
	slot->fd = fd;
	slot->users = 1;
	c->opens++;
	if (++c->open_now > c->open_max)
		c->open_max = c->open_now;
	return fd;
}

void rf_fdcache_release(rf_fdcache *c, rf_fd_slot *slot)
{
	if (slot->fd >= 0 && slot->users > 0 && --slot->users == 0)
		rf_idle_push(c, slot);
}

void rf_fdcache_drop(rf_fdcache *c, rf_fd_slot *slot)
{
	if (slot->fd < 0)
		return;
	if (slot->users == 0)
		rf_idle_unlink(c, slot);
	slot->users = 0;
	rf_fd_close(c, slot);
}

void rf_fdcache_counters_get(const rf_fdcache *c, rf_fdcache_counters *out)
{
	*out = (rf_fdcache_counters){.opens = c->opens,
	                             .evictions = c->evictions,
	                             .open_now = c->open_now,
	                             .open_max = c->open_max,
	                             .direct_refused = c->direct_refused,
	                             .files_max = c->files_max};
}

#ifdef RF_TEST_HOOKS
void rf_fdcache_set_open(rf_fdcache *c, int (*fn)(const char *path, int flags))
{
	c->open_fn = fn;
}
#endif
