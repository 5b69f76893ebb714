/* hostbudget.c - the host-wide byte budget shared by the loaders of one host
 * through /dev/shm (see hostbudget.h for the layout and the rules). */
#include "hostbudget.h"
#include "util.h"

#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HB_MAGIC      0x31424852u /* "RHB1" */
#define HB_VERSION    2u
#define HB_PREFIX     "/ringfeed-hb-"
#define HB_OPEN_TRIES 16   /* re-opens when the object was unlinked under us */
#define HB_FLOCK_MS   5000 /* longest wait for another process's open/close */
#define HB_STAT_BYTES 1024 /* /proc/PID/stat is shorter than this */

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

int rf_hostbudget_name_check(const char *name, rf_error *err)
{
	if (!name || !*name)
		return rf_fail(err, -EINVAL, "host budget name is empty");
	size_t n = strnlen(name, RF_HOSTBUDGET_NAME_MAX + 1);
	if (n > RF_HOSTBUDGET_NAME_MAX)
		return rf_fail(err, -EINVAL, "host budget name is longer than %d characters",
		               RF_HOSTBUDGET_NAME_MAX);
	if (name[0] == '.')
		return rf_fail(err, -EINVAL, "host budget name '%s' starts with '.'", name);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		if (!ok)
			return rf_fail(err, -EINVAL,
			               "host budget name has a bad character (0x%02x) at %zu: use "
			               "A-Z a-z 0-9 . _ -",
			               c, i);
	}
	return 0;
}

/* Reads the state letter and start time (clock ticks after boot) of pid.
 * -ENOENT when the process does not exist. */
static int proc_stat(pid_t pid, char *state, uint64_t *start_ticks)
{
	char path[64], buf[HB_STAT_BYTES];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	buf[n] = '\0';
	/* "pid (comm) S f4 ... f22": comm may hold spaces and ')', so parse
	 * from the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EPROTO;
	*state = p[2];
	p += 3;
	for (int field = 4; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EPROTO;
		p++;
	}
	char *end = NULL;
	*start_ticks = strtoull(p, &end, 10);
	return end == p ? -EPROTO : 0;
}

static bool pid_alive(pid_t pid, uint64_t start_ticks)
{
	char state = 0;
	uint64_t ticks = 0;
	int rc = proc_stat(pid, &state, &ticks);
	if (rc == 0)
		return state != 'Z' && state != 'X' && (start_ticks == 0 || ticks == start_ticks);
	/* No /proc entry we can read: ask the kernel; EPERM means it exists. */
	return kill(pid, 0) == 0 || errno != ESRCH;
}

static uint64_t pidns_id(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Called with the mutex held. Returns the bytes taken back. */
static uint64_t reclaim_dead(hb_shared *sh)
{
	uint64_t got = 0;
	for (uint32_t i = 0; i < RF_HOSTBUDGET_SLOTS; i++) {
		hb_slot *s = &sh->slot[i];
		if (s->pid == 0 || pid_alive(s->pid, s->start_ticks))
			continue;
		uint64_t b = RF_MIN(s->reserved_bytes, sh->used_bytes);
		sh->used_bytes -= b;
		got += s->reserved_bytes;
		sh->wanted_bytes -= RF_MIN(s->want_bytes, sh->wanted_bytes);
		memset(s, 0, sizeof(*s));
		sh->reclaims++;
	}
	sh->reclaimed_bytes += got;
	return got;
}

/* A holder died inside a critical section: the slots are the truth. */
static void repair(hb_shared *sh)
{
	uint64_t sum = 0, want = 0;
	for (uint32_t i = 0; i < RF_HOSTBUDGET_SLOTS; i++) {
		if (sh->slot[i].pid == 0)
			continue;
		if (!rf_add_u64(sum, sh->slot[i].reserved_bytes, &sum))
			sum = UINT64_MAX;
		if (!rf_add_u64(want, sh->slot[i].want_bytes, &want))
			want = UINT64_MAX;
	}
	sh->used_bytes = sum;
	sh->wanted_bytes = want;
	reclaim_dead(sh);
	sh->last_scan_ns = rf_now_ns();
}

/* The object must still be as large as the mapping: touching a page past a
 * truncated end is SIGBUS. Checked before every lock (the mutex lives in the
 * mapping); once short, the handle stays broken and touches nothing. */
static int hb_size_ok(rf_hostbudget *hb)
{
	struct stat st;
	if (!hb->broken && (fstat(hb->fd, &st) != 0 || st.st_size < (off_t)sizeof(hb_shared))) {
		hb->broken = true;
		hb->broken_size = fstat(hb->fd, &st) == 0 ? (int64_t)st.st_size : -1;
	}
	return hb->broken ? -EIO : 0;
}

/* The object is still the one this handle attached to: a truncate-and-regrow
 * leaves it zeroed (magic 0), a re-initialisation stamps another generation.
 * Checked before the lock (a zeroed mutex is not ours to take) and again
 * under it. An attaching handle (generation 0) checks the magic only. */
static int hb_same_object(rf_hostbudget *hb)
{
	const hb_shared *sh = hb->sh;
	uint32_t magic = __atomic_load_n(&sh->magic, __ATOMIC_ACQUIRE);
	uint64_t gen = __atomic_load_n(&sh->generation, __ATOMIC_ACQUIRE);
	if (!hb->broken && (magic != HB_MAGIC || (hb->generation && gen != hb->generation))) {
		hb->broken = true;
		hb->broken_size = (int64_t)sizeof(hb_shared);
		hb->broken_magic = magic;
		hb->broken_generation = gen;
	}
	return hb->broken ? -EIO : 0;
}

static int hb_lock(rf_hostbudget *hb)
{
	RF_TRY(hb_size_ok(hb));
	RF_TRY(hb_same_object(hb));
	hb_shared *sh = hb->sh;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += RF_HOSTBUDGET_LOCK_MS / 1000;
	ts.tv_nsec += (RF_HOSTBUDGET_LOCK_MS % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	int rc = pthread_mutex_clocklock(&sh->mutex, CLOCK_MONOTONIC, &ts);
	if (rc == EOWNERDEAD) {
		repair(sh);
		rc = pthread_mutex_consistent(&sh->mutex);
	}
	if (rc == 0 && hb_same_object(hb) < 0) {
		pthread_mutex_unlock(&sh->mutex);
		return -EIO;
	}
	return -rc;
}

static void hb_unlock(hb_shared *sh)
{
	pthread_mutex_unlock(&sh->mutex);
}

/* flock with a bounded wait: open/close of other processes take microseconds. */
static int flock_bounded(int fd)
{
	for (int ms = 0; ms < HB_FLOCK_MS; ms++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

/* Never 0 (0 is "not attached yet" in a handle). */
static uint64_t new_generation(void)
{
	uint64_t g = rf_now_ns() ^ ((uint64_t)getpid() << 40);
	return g ? g : 1;
}

static int init_shared(hb_shared *sh, uint64_t total_bytes)
{
	memset(sh, 0, sizeof(*sh));
	sh->magic = HB_MAGIC;
	sh->version = HB_VERSION;
	sh->layout_bytes = (uint32_t)sizeof(*sh);
	sh->slots = RF_HOSTBUDGET_SLOTS;
	sh->pidns = pidns_id();
	sh->total_bytes = total_bytes;
	sh->generation = new_generation();
	pthread_mutexattr_t a;
	int rc = pthread_mutexattr_init(&a);
	if (rc == 0)
		rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (rc == 0)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (rc == 0)
		rc = pthread_mutex_init(&sh->mutex, &a);
	pthread_mutexattr_destroy(&a);
	if (rc != 0)
		return -rc;
	__atomic_store_n(&sh->ready, 1u, __ATOMIC_RELEASE);
	return 0;
}

static int check_header(const rf_hostbudget *hb, rf_error *err)
{
	const hb_shared *sh = hb->sh;
	if (sh->magic != HB_MAGIC || sh->version != HB_VERSION || sh->layout_bytes != sizeof(*sh) ||
	    sh->slots != RF_HOSTBUDGET_SLOTS)
		return rf_fail(err, -EPROTO,
		               "host budget /dev/shm%s is not a ringfeed host budget of this "
		               "version (magic %08x, version %u, layout %u bytes); remove it",
		               hb->path, sh->magic, sh->version, sh->layout_bytes);
	uint64_t ns = pidns_id();
	if (sh->pidns && ns && sh->pidns != ns)
		return rf_fail(
		    err, -EXDEV,
		    "host budget '%s' was created in another pid namespace: its loaders' "
		    "liveness cannot be checked from here (use one namespace per name)",
		    hb->name);
	return 0;
}

static uint32_t count_members(const hb_shared *sh)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < RF_HOSTBUDGET_SLOTS; i++)
		n += sh->slot[i].pid != 0;
	return n;
}

/* With the mutex held: same total, or no live loader (then adopt ours). */
static int agree_total(rf_hostbudget *hb, uint64_t total_bytes, rf_error *err)
{
	hb_shared *sh = hb->sh;
	reclaim_dead(sh);
	if (sh->total_bytes == total_bytes)
		return 0;
	uint32_t live = count_members(sh);
	if (live > 0)
		return rf_fail(err, -EINVAL,
		               "host budget '%s' already has a total of %llu bytes (%u loader(s) "
		               "attached); this loader asked for %llu bytes: use the same "
		               "--host-budget on every rank or another name",
		               hb->name, (unsigned long long)sh->total_bytes, live,
		               (unsigned long long)total_bytes);
	/* Nobody alive (and the flock is ours): start afresh with our total. */
	sh->total_bytes = total_bytes;
	sh->used_bytes = sh->peak_used_bytes = sh->reclaimed_bytes = 0;
	sh->wanted_bytes = sh->floor_max_bytes = 0;
	sh->reclaims = sh->expected_members = 0;
	return 0;
}

/* With the mutex held: takes a free slot for this process. */
static int take_slot(rf_hostbudget *hb, rf_error *err)
{
	for (uint32_t i = 0; i < RF_HOSTBUDGET_SLOTS; i++) {
		hb_slot *s = &hb->sh->slot[i];
		if (s->pid != 0)
			continue;
		s->start_ticks = hb->start_ticks;
		s->reserved_bytes = 0;
		s->want_bytes = 0;
		s->pid = (int32_t)hb->pid;
		hb->slot = i;
		return 0;
	}
	return rf_fail(err, -EUSERS, "host budget '%s' already has %d loaders attached", hb->name,
	               RF_HOSTBUDGET_SLOTS);
}

/* Maps the object (creating its contents if needed). flock held. -EAGAIN:
 * the object was unlinked since we opened it; open it again. */
static int map_shared(rf_hostbudget *hb, uint64_t total_bytes, rf_error *err)
{
	struct stat st;
	if (fstat(hb->fd, &st) != 0)
		return rf_fail(err, -errno, "host budget /dev/shm%s: fstat: %s", hb->path,
		               strerror(errno));
	if (st.st_nlink == 0)
		return -EAGAIN;
	bool fresh = st.st_size == 0;
	if (fresh && ftruncate(hb->fd, (off_t)sizeof(hb_shared)) != 0)
		return rf_fail(err, -errno, "host budget /dev/shm%s: cannot size it: %s", hb->path,
		               strerror(errno));
	if (!fresh && st.st_size != (off_t)sizeof(hb_shared))
		return rf_fail(
		    err, -EPROTO,
		    "host budget /dev/shm%s has %lld bytes, expected %zu: not a ringfeed "
		    "host budget of this version; remove it",
		    hb->path, (long long)st.st_size, sizeof(hb_shared));
	void *p = mmap(NULL, sizeof(hb_shared), PROT_READ | PROT_WRITE, MAP_SHARED, hb->fd, 0);
	if (p == MAP_FAILED)
		return rf_fail(err, -errno, "host budget /dev/shm%s: mmap: %s", hb->path,
		               strerror(errno));
	hb->sh = p;
	/* Not ready: its creator died while initialising (the flock is ours now). */
	if (fresh || !__atomic_load_n(&hb->sh->ready, __ATOMIC_ACQUIRE)) {
		int rc = init_shared(hb->sh, total_bytes);
		if (rc < 0)
			return rf_fail(err, rc, "host budget '%s': mutex init: %s", hb->name,
			               strerror(-rc));
	}
	return check_header(hb, err);
}

/* flock held: map, agree on the total, take a slot. */
static int attach(rf_hostbudget *hb, uint64_t total_bytes, rf_error *err)
{
	RF_TRY(map_shared(hb, total_bytes, err));
	int rc = hb_lock(hb);
	if (rc < 0)
		return rf_fail(err, rc, "host budget '%s': lock: %s", hb->name, strerror(-rc));
	rc = agree_total(hb, total_bytes, err);
	if (rc >= 0)
		rc = take_slot(hb, err);
	if (rc >= 0)
		hb->generation = hb->sh->generation;
	hb_unlock(hb->sh);
	return rc;
}

static void unmap(rf_hostbudget *hb)
{
	if (hb->sh)
		munmap(hb->sh, sizeof(hb_shared));
	hb->sh = NULL;
	if (hb->fd >= 0)
		close(hb->fd);
	hb->fd = -1;
}

/* An object another user owns, or one group or others may write, could be
 * filled or locked by them: refused before anything is read from it. */
static int check_owner(const rf_hostbudget *hb, rf_error *err)
{
	struct stat st;
	if (fstat(hb->fd, &st) != 0)
		return rf_fail(err, -errno, "host budget /dev/shm%s: fstat: %s", hb->path,
		               strerror(errno));
	uid_t me = geteuid();
	if (st.st_uid == me && (st.st_mode & 077) == 0)
		return 0;
	char owner[64] = "";
	struct passwd pw, *found = NULL;
	char buf[1024];
	if (getpwuid_r(st.st_uid, &pw, buf, sizeof(buf), &found) == 0 && found)
		snprintf(owner, sizeof(owner), " (%s)", found->pw_name);
	return rf_fail(err, -EACCES,
	               "host budget /dev/shm%s is owned by uid %u%s with mode %04o: it must "
	               "belong to this user (uid %u) with no group or other permissions "
	               "(0600); remove it or use another --host-budget-name",
	               hb->path, (unsigned)st.st_uid, owner, (unsigned)(st.st_mode & 07777),
	               (unsigned)me);
}

/* One attempt: open (create), flock, attach. -EAGAIN: try again. */
static int open_once(rf_hostbudget *hb, uint64_t total_bytes, rf_error *err)
{
	hb->fd = shm_open(hb->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (hb->fd < 0)
		return rf_fail(err, -errno, "host budget /dev/shm%s: %s", hb->path,
		               strerror(errno));
	int rc = check_owner(hb, err);
	if (rc < 0) {
		unmap(hb);
		return rc;
	}
	rc = flock_bounded(hb->fd);
	if (rc < 0)
		rf_fail(err, rc, "host budget '%s': another process holds its open/close lock",
		        hb->name);
	else
		rc = attach(hb, total_bytes, err);
	if (rc < 0)
		unmap(hb); /* closing the fd drops the flock */
	else
		flock(hb->fd, LOCK_UN);
	return rc;
}

int rf_hostbudget_open(const char *name, uint64_t total_bytes, rf_hostbudget **out, rf_error *err)
{
	*out = NULL;
	RF_TRY(rf_hostbudget_name_check(name, err));
	if (total_bytes == 0)
		return rf_fail(err, -EINVAL, "host budget '%s': total must be above 0 bytes", name);
	rf_hostbudget *hb = calloc(1, sizeof(*hb));
	if (!hb)
		return rf_fail(err, -ENOMEM, "host budget '%s': out of memory", name);
	hb->fd = -1;
	hb->pid = getpid();
	char state;
	if (proc_stat(hb->pid, &state, &hb->start_ticks) < 0)
		hb->start_ticks = 0; /* no /proc: liveness falls back to kill(pid, 0) */
	snprintf(hb->name, sizeof(hb->name), "%s", name);
	snprintf(hb->path, sizeof(hb->path), HB_PREFIX "%s", name);
	int rc = -EAGAIN;
	for (int i = 0; i < HB_OPEN_TRIES && rc == -EAGAIN; i++)
		rc = open_once(hb, total_bytes, err);
	if (rc == -EAGAIN)
		rc = rf_fail(err, -EAGAIN,
		             "host budget '%s': removed and re-created %d times "
		             "while opening it",
		             name, HB_OPEN_TRIES);
	if (rc < 0) {
		free(hb);
		return rc;
	}
	*out = hb;
	return 0;
}

/* This handle's slot, if it is still ours (mutex held). */
static hb_slot *own_slot(rf_hostbudget *hb)
{
	hb_slot *s = &hb->sh->slot[hb->slot];
	return s->pid == (int32_t)hb->pid && s->start_ticks == hb->start_ticks ? s : NULL;
}

void rf_hostbudget_close(rf_hostbudget *hb)
{
	if (!hb)
		return;
	if (getpid() == hb->pid) {
		bool flocked = flock_bounded(hb->fd) == 0;
		if (hb_lock(hb) == 0) {
			hb_slot *s = own_slot(hb);
			if (s) {
				hb->sh->used_bytes -= RF_MIN(s->reserved_bytes, hb->sh->used_bytes);
				hb->sh->wanted_bytes -= RF_MIN(s->want_bytes, hb->sh->wanted_bytes);
				memset(s, 0, sizeof(*s));
			}
			reclaim_dead(hb->sh);
			uint32_t left = count_members(hb->sh);
			hb_unlock(hb->sh);
			/* Joiners take the flock before their slot: none is half-way in. */
			if (left == 0 && flocked)
				shm_unlink(hb->path);
		}
	}
	unmap(hb);
	free(hb);
}

/* Room for bytes after what is used, the floors other loaders wait for, and
 * the floors of loaders expected but not attached yet. */
static bool fits(const hb_shared *sh, const hb_slot *self, uint64_t bytes)
{
	uint32_t members = count_members(sh);
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
	RF_TRY(hb_lock(hb));
	int rc = 0;
	hb_slot *s = own_slot(hb);
	if (!s) {
		rc = -EIDRM; /* our slot was taken from us: never expected */
	} else if (!fits(sh, s, bytes)) {
		uint64_t now = rf_now_ns();
		if (now - sh->last_scan_ns >= RF_HOSTBUDGET_RECLAIM_MS * 1000000ull) {
			sh->last_scan_ns = now;
			reclaim_dead(sh);
		}
		rc = fits(sh, s, bytes) ? 0 : -ENOBUFS;
	}
	if (rc == 0) {
		s->reserved_bytes += bytes;
		sh->used_bytes += bytes;
		sh->peak_used_bytes = RF_MAX(sh->peak_used_bytes, sh->used_bytes);
	}
	hb_unlock(sh);
	return rc;
}

int rf_hostbudget_release(rf_hostbudget *hb, uint64_t bytes)
{
	if (getpid() != hb->pid)
		return -ECHILD;
	if (bytes == 0)
		return 0;
	RF_TRY(hb_lock(hb));
	hb_slot *s = own_slot(hb);
	if (s) {
		uint64_t b = RF_MIN(bytes, s->reserved_bytes);
		s->reserved_bytes -= b;
		hb->sh->used_bytes -= RF_MIN(b, hb->sh->used_bytes);
	}
	hb_unlock(hb->sh);
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

int rf_hostbudget_reserve_floor(rf_hostbudget *hb, uint64_t bytes, uint32_t expected_loaders,
                                int timeout_ms)
{
	if (getpid() != hb->pid)
		return -ECHILD;
	RF_TRY(hb_lock(hb));
	hb_slot *s = own_slot(hb);
	if (s && bytes > hb->sh->total_bytes) {
		hb_unlock(hb->sh);
		return -ENOBUFS; /* waiting cannot help */
	}
	if (s) {
		hb->sh->expected_members = RF_MAX(hb->sh->expected_members, expected_loaders);
		hb->sh->floor_max_bytes = RF_MAX(hb->sh->floor_max_bytes, bytes);
		set_want(hb, s, bytes);
	}
	hb_unlock(hb->sh);
	if (!s)
		return -EIDRM;
	uint64_t deadline = rf_now_ns() + (uint64_t)RF_MAX(timeout_ms, 0) * 1000000ull;
	int rc;
	while ((rc = rf_hostbudget_reserve(hb, bytes)) == -ENOBUFS && rf_now_ns() < deadline) {
		struct timespec ts = {0, 5000000L}; /* others drain as their consumers go */
		nanosleep(&ts, NULL);
	}
	if (hb_lock(hb) == 0) {
		if ((s = own_slot(hb)) != NULL)
			set_want(hb, s, 0);
		hb_unlock(hb->sh);
	}
	return rc;
}

int rf_hostbudget_info_get(rf_hostbudget *hb, rf_hostbudget_info *out)
{
	memset(out, 0, sizeof(*out));
	hb_shared *sh = hb->sh;
	RF_TRY(hb_lock(hb));
	hb_slot *s = getpid() == hb->pid ? own_slot(hb) : NULL;
	out->total_bytes = sh->total_bytes;
	out->used_bytes = sh->used_bytes;
	out->peak_used_bytes = sh->peak_used_bytes;
	out->own_bytes = s ? s->reserved_bytes : 0;
	out->reclaimed_bytes = sh->reclaimed_bytes;
	out->reclaims = sh->reclaims;
	out->members = count_members(sh);
	out->wanted_bytes = sh->wanted_bytes;
	out->floor_max_bytes = sh->floor_max_bytes;
	out->expected_members = sh->expected_members;
	hb_unlock(sh);
	return 0;
}

uint64_t rf_hostbudget_used(rf_hostbudget *hb)
{
	rf_hostbudget_info info;
	return rf_hostbudget_info_get(hb, &info) == 0 ? info.used_bytes : 0;
}

int rf_hostbudget_members(rf_hostbudget *hb, rf_hostbudget_member *out, int cap)
{
	RF_TRY(hb_lock(hb));
	int n = 0;
	for (uint32_t i = 0; i < RF_HOSTBUDGET_SLOTS; i++) {
		const hb_slot *s = &hb->sh->slot[i];
		if (s->pid == 0)
			continue;
		if (n < cap)
			out[n] = (rf_hostbudget_member){s->pid, s->reserved_bytes};
		n++;
	}
	hb_unlock(hb->sh);
	return n;
}

int64_t rf_hostbudget_reclaim(rf_hostbudget *hb)
{
	RF_TRY(hb_lock(hb));
	hb->sh->last_scan_ns = rf_now_ns();
	uint64_t got = reclaim_dead(hb->sh);
	hb_unlock(hb->sh);
	return (int64_t)RF_MIN(got, (uint64_t)INT64_MAX);
}

int rf_hostbudget_error(const rf_hostbudget *hb, rf_error *err)
{
	if (!hb->broken)
		return 0;
	if (hb->broken_size < (int64_t)sizeof(hb_shared))
		return rf_fail(err, -EIO,
		               "host budget '%s': /dev/shm%s shrank to %lld bytes under this "
		               "loader (expected %zu): another process truncated it; the "
		               "host-wide budget is no longer enforced",
		               hb->name, hb->path, (long long)hb->broken_size, sizeof(hb_shared));
	return rf_fail(err, -EIO,
	               "host budget '%s': /dev/shm%s was re-initialised under this loader "
	               "(magic now %08x, expected %08x; generation now %016llx, expected "
	               "%016llx): another process truncated or rewrote it; the host-wide "
	               "budget is no longer enforced",
	               hb->name, hb->path, hb->broken_magic, HB_MAGIC,
	               (unsigned long long)hb->broken_generation,
	               (unsigned long long)hb->generation);
}

int rf_hostbudget_verify(rf_hostbudget *hb, rf_error *err)
{
	uint64_t now = rf_now_ns(), last = __atomic_load_n(&hb->verified_ns, __ATOMIC_RELAXED);
	if (!rf_hostbudget_broken(hb) && now - last >= RF_HOSTBUDGET_VERIFY_MS * 1000000ull &&
	    __atomic_compare_exchange_n(&hb->verified_ns, &last, now, false, __ATOMIC_RELAXED,
	                                __ATOMIC_RELAXED) &&
	    hb_lock(hb) == 0)
		hb_unlock(hb->sh);
	return rf_hostbudget_error(hb, err);
}

int rf_hostbudget_check(rf_hostbudget *hb, rf_error *err)
{
	hb_shared *sh = hb->sh;
	int rc = hb_lock(hb);
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
	hb_unlock(sh);
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

const char *rf_hostbudget_name(const rf_hostbudget *hb)
{
	return hb->name;
}

bool rf_hostbudget_broken(const rf_hostbudget *hb)
{
	return __atomic_load_n(&hb->broken, __ATOMIC_ACQUIRE);
}

#ifdef RF_TEST_HOOKS
void rf_hostbudget_test_die_locked(rf_hostbudget *hb, uint64_t bytes)
{
	if (hb_lock(hb) == 0) {
		hb_slot *s = own_slot(hb);
		if (s)
			s->reserved_bytes += bytes; /* used_bytes deliberately not updated */
	}
	for (;;) {
		kill(getpid(), SIGKILL);
		pause();
	}
}
#endif
