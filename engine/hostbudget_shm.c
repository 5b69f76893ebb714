/* hostbudget_shm.c - the host budget's shared segment (see hostbudget.h,
 * hostbudget_int.h): the POSIX shared memory object /dev/shm/ringfeed-hb-NAME,
 * opened, created or joined under flock (so two creators never both
 * initialise it and nobody joins one being unlinked), refused unless this
 * user owns it with mode 0600, its layout and header checked, mapped; before
 * every lock its size (a truncated object is SIGBUS), magic and generation
 * (a re-initialised one) are checked, and a handle that finds it broken
 * touches it never again. The last loader to close unlinks it. */
#include "hostbudget_int.h"
#include "tsa.h"
#include "util.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HB_OPEN_TRIES 16   /* re-opens when the object was unlinked under us */
#define HB_FLOCK_MS   5000 /* longest wait for another process's open/close */

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

static uint64_t pidns_id(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
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

/* The lock's deadline is on the monotonic clock (a clock step must not cut
 * or stretch the wait). ThreadSanitizer (clang 14's) does not intercept
 * pthread_mutex_clocklock, so it would see every unlock as one of an
 * unlocked mutex and none of the critical sections: its build
 * takes the lock with pthread_mutex_timedlock, which it
 * sees, on the clock that one uses. */
#if defined(__SANITIZE_THREAD__)
#define RF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RF_TSAN 1
#endif
#endif
#ifndef RF_TSAN
#define RF_TSAN 0
#endif
#if RF_TSAN
#define HB_LOCK_CLOCK CLOCK_REALTIME
#else
#define HB_LOCK_CLOCK CLOCK_MONOTONIC
#endif

int rf_hb_lock(rf_hostbudget *hb)
{
	RF_TRY(hb_size_ok(hb));
	RF_TRY(hb_same_object(hb));
	hb_shared *sh = hb->sh;
	struct timespec ts;
	clock_gettime(HB_LOCK_CLOCK, &ts);
	ts.tv_sec += RF_HOSTBUDGET_LOCK_MS / 1000;
	ts.tv_nsec += (RF_HOSTBUDGET_LOCK_MS % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	rf_lock_order_take(RF_LOCK_HOST); /* base/tsa.h: the last in the order */
#if RF_TSAN
	int rc = pthread_mutex_timedlock(&sh->mutex, &ts);
#else
	int rc = pthread_mutex_clocklock(&sh->mutex, HB_LOCK_CLOCK, &ts);
#endif
	if (rc == EOWNERDEAD) {
		rf_hb_repair(sh);
		rc = pthread_mutex_consistent(&sh->mutex);
	}
	if (rc == 0 && hb_same_object(hb) < 0) {
		pthread_mutex_unlock(&sh->mutex);
		rc = EIO;
	}
	if (rc != 0)
		rf_lock_order_give(RF_LOCK_HOST);
	return -rc;
}

void rf_hb_unlock(hb_shared *sh)
{
	pthread_mutex_unlock(&sh->mutex);
	rf_lock_order_give(RF_LOCK_HOST);
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

/* With the mutex held: same total, or no live loader (then adopt ours). */
static int agree_total(rf_hostbudget *hb, uint64_t total_bytes, rf_error *err)
{
	hb_shared *sh = hb->sh;
	rf_hb_reclaim_dead(sh);
	if (sh->total_bytes == total_bytes)
		return 0;
	uint32_t live = rf_hb_count_members(sh);
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
	int rc = rf_hb_lock(hb);
	if (rc < 0)
		return rf_fail(err, rc, "host budget '%s': lock: %s", hb->name, strerror(-rc));
	rc = agree_total(hb, total_bytes, err);
	if (rc >= 0)
		rc = rf_hb_take_slot(hb, err);
	if (rc >= 0)
		hb->generation = hb->sh->generation;
	rf_hb_unlock(hb->sh);
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
	if (rf_hb_proc_stat(hb->pid, &state, &hb->start_ticks) < 0)
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

void rf_hostbudget_close(rf_hostbudget *hb)
{
	if (!hb)
		return;
	if (getpid() == hb->pid) {
		bool flocked = flock_bounded(hb->fd) == 0;
		if (rf_hb_lock(hb) == 0) {
			hb_slot *s = rf_hb_own_slot(hb);
			if (s) {
				hb->sh->used_bytes -= RF_MIN(s->reserved_bytes, hb->sh->used_bytes);
				hb->sh->wanted_bytes -= RF_MIN(s->want_bytes, hb->sh->wanted_bytes);
				memset(s, 0, sizeof(*s));
			}
			rf_hb_reclaim_dead(hb->sh);
			uint32_t left = rf_hb_count_members(hb->sh);
			rf_hb_unlock(hb->sh);
			/* Joiners take the flock before their slot: none is half-way in. */
			if (left == 0 && flocked)
				shm_unlink(hb->path);
		}
	}
	unmap(hb);
	free(hb);
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
	    rf_hb_lock(hb) == 0)
		rf_hb_unlock(hb->sh);
	return rf_hostbudget_error(hb, err);
}

const char *rf_hostbudget_name(const rf_hostbudget *hb)
{
	return hb->name;
}

bool rf_hostbudget_broken(const rf_hostbudget *hb)
{
	return __atomic_load_n(&hb->broken, __ATOMIC_ACQUIRE);
}
