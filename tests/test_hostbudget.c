/* test_hostbudget.c - the host-wide budget: limits and names in one process;
 * several processes reserving at once (the total is never exceeded); loaders
 * killed while holding bytes, and while holding the lock, are reclaimed;
 * create/remove races never split one name into two budgets. */
#include "testutil.h"

#include "budget.h"
#include "hostbudget.h"
#include "util.h"

#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A name unique to this run and test; the object is removed at the end. */
static void unique_name(char *buf, size_t cap, const char *tag)
{
	snprintf(buf, cap, "t%d-%s", (int)getpid(), tag);
}

static bool shm_exists(const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "/dev/shm/ringfeed-hb-%s", name);
	return access(path, F_OK) == 0;
}

static void shm_remove(const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "/ringfeed-hb-%s", name);
	shm_unlink(path);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* The help text of a config key in rf_config_keys(), or "". */
static const char *rf_config_keys_find(const char *key)
{
	for (const char *p = rf_config_keys(); *p; p += strlen(p) + 1) {
		const char *help = p + strlen(p) + 1;
		if (!strcmp(p, key))
			return help;
		p = help;
	}
	return "";
}

static void test_names(void **state)
{
	(void)state;
	rf_error err = {0};
	char longname[RF_HOSTBUDGET_NAME_MAX + 2];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	const char *bad[] = {"", "a/b", "..", ".hidden", "a b", "x\n", "r\xc3\xa9", "a*", longname};
	for (size_t i = 0; i < RF_ARRAY_LEN(bad); i++) {
		assert_int_equal(rf_hostbudget_name_check(bad[i], &err), -EINVAL);
		assert_true(strlen(err.msg) > 0);
		rf_hostbudget *hb = NULL;
		assert_int_equal(rf_hostbudget_open(bad[i], 1000, &hb, &err), -EINVAL);
		assert_null(hb);
	}
	assert_int_equal(rf_hostbudget_name_check(NULL, &err), -EINVAL);
	longname[RF_HOSTBUDGET_NAME_MAX] = '\0';
	assert_int_equal(rf_hostbudget_name_check(longname, &err), 0);
	assert_int_equal(rf_hostbudget_name_check("job-7_rank.A", &err), 0);
	char name[64];
	unique_name(name, sizeof(name), "zero");
	rf_hostbudget *hb = NULL;
	assert_int_equal(rf_hostbudget_open(name, 0, &hb, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "above 0"));
	assert_false(shm_exists(name));
}

static void test_single_process_limits(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "single");
	rf_error err = {0};
	rf_hostbudget *hb = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &hb, &err), 0);
	assert_true(shm_exists(name));
	assert_string_equal(rf_hostbudget_name(hb), name);
	assert_int_equal(rf_hostbudget_reserve(hb, 0), 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 600), 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 401), -ENOBUFS);
	assert_int_equal(rf_hostbudget_used(hb), 600);
	assert_int_equal(rf_hostbudget_reserve(hb, 400), 0); /* exactly full */
	assert_int_equal(rf_hostbudget_reserve(hb, 1), -ENOBUFS);
	assert_int_equal(rf_hostbudget_reserve(hb, UINT64_MAX), -ENOBUFS); /* no overflow */
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(hb, &info), 0);
	assert_int_equal(info.total_bytes, 1000);
	assert_int_equal(info.used_bytes, 1000);
	assert_int_equal(info.own_bytes, 1000);
	assert_int_equal(info.peak_used_bytes, 1000);
	assert_int_equal(info.members, 1);
	rf_hostbudget_member m[4];
	assert_int_equal(rf_hostbudget_members(hb, m, 4), 1);
	assert_int_equal(m[0].pid, getpid());
	assert_int_equal(m[0].reserved_bytes, 1000);
	assert_int_equal(rf_hostbudget_release(hb, 300), 0);
	assert_int_equal(rf_hostbudget_used(hb), 700);
	assert_int_equal(rf_hostbudget_release(hb, 5000), 0); /* clamped to what it holds */
	assert_int_equal(rf_hostbudget_used(hb), 0);
	assert_int_equal(rf_hostbudget_check(hb, &err), 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 1000), 0);
	rf_hostbudget_close(hb); /* releases the 1000 and removes the object */
	assert_false(shm_exists(name));
	rf_hostbudget_close(NULL);
}

/* Two handles in one process share the total; a third with another total is
 * refused while they are attached, naming both totals. */
static void test_join_and_total_mismatch(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "join");
	rf_error err = {0};
	rf_hostbudget *a = NULL, *b = NULL, *c = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &a, &err), 0);
	assert_int_equal(rf_hostbudget_open(name, 1000, &b, &err), 0);
	assert_int_equal(rf_hostbudget_reserve(a, 700), 0);
	assert_int_equal(rf_hostbudget_reserve(b, 301), -ENOBUFS);
	assert_int_equal(rf_hostbudget_reserve(b, 300), 0);
	assert_int_equal(rf_hostbudget_open(name, 2000, &c, &err), -EINVAL);
	assert_null(c);
	assert_non_null(strstr(err.msg, "1000 bytes"));
	assert_non_null(strstr(err.msg, "2000 bytes"));
	assert_non_null(strstr(err.msg, name));
	rf_hostbudget_close(a); /* gives back a's 700, b stays */
	assert_true(shm_exists(name));
	assert_int_equal(rf_hostbudget_used(b), 300);
	assert_int_equal(rf_hostbudget_reserve(b, 700), 0);
	assert_int_equal(rf_hostbudget_check(b, &err), 0);
	rf_hostbudget_close(b);
	assert_false(shm_exists(name));
	/* Nobody attached now: a new total is fine. */
	assert_int_equal(rf_hostbudget_open(name, 2000, &c, &err), 0);
	assert_int_equal(rf_hostbudget_reserve(c, 2000), 0);
	rf_hostbudget_close(c);
	assert_false(shm_exists(name));
}

/* A child that inherited a handle across fork() cannot spend the parent's
 * slot, and closing it there leaves the parent's reservation alone. */
static void test_forked_child_handle(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "fork");
	rf_error err = {0};
	rf_hostbudget *hb = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &hb, &err), 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 100), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int bad = rf_hostbudget_reserve(hb, 1) != -ECHILD;
		bad |= rf_hostbudget_release(hb, 100) != -ECHILD;
		rf_hostbudget_close(hb);
		_exit(bad);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(hb, &info), 0);
	assert_int_equal(info.used_bytes, 100);
	assert_int_equal(info.members, 1);
	rf_hostbudget_close(hb);
	assert_false(shm_exists(name));
}

enum { CHILDREN = 4, CYCLES = 4000, HELD_MAX = 4 };
#define TOTAL_BYTES (1u << 20)

typedef struct shared_counts {
	atomic_ulong reserved, refused, violations;
	atomic_int go; /* children start together, for the most overlap */
} shared_counts;

/* One loader process: random reserve/release, checking after every reserve
 * that the host total holds and the slots add up. Returns an exit code. */
static int child_cycles(const char *name, unsigned seed, shared_counts *counts)
{
	rf_error err = {0};
	rf_hostbudget *hb = NULL;
	if (rf_hostbudget_open(name, TOTAL_BYTES, &hb, &err) != 0) {
		fprintf(stderr, "child open: %s\n", err.msg);
		return 2;
	}
	for (int i = 0; i < 5000 && !atomic_load(&counts->go); i++)
		sched_yield();
	uint64_t held[HELD_MAX] = {0};
	for (int i = 0; i < CYCLES; i++) {
		int k = rand_r(&seed) % HELD_MAX;
		if (held[k]) {
			if (rf_hostbudget_release(hb, held[k]) != 0)
				atomic_fetch_add(&counts->violations, 1);
			held[k] = 0;
			continue;
		}
		uint64_t want = 1 + (uint64_t)rand_r(&seed) % (TOTAL_BYTES / 2);
		int rc = rf_hostbudget_reserve(hb, want);
		if (rc == -ENOBUFS) {
			atomic_fetch_add(&counts->refused, 1);
			continue;
		}
		held[k] = want;
		atomic_fetch_add(&counts->reserved, 1);
		if (rc != 0 || rf_hostbudget_used(hb) > TOTAL_BYTES ||
		    rf_hostbudget_check(hb, &err) != 0) {
			fprintf(stderr, "child: rc %d, %s\n", rc, err.msg);
			atomic_fetch_add(&counts->violations, 1);
		}
	}
	rf_hostbudget_close(hb); /* releases whatever is still held */
	return 0;
}

static void test_processes_never_exceed_total(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "multi");
	rf_error err = {0};
	rf_hostbudget *hb = NULL;
	assert_int_equal(rf_hostbudget_open(name, TOTAL_BYTES, &hb, &err), 0);
	shared_counts *counts =
	    mmap(NULL, sizeof(*counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(counts != MAP_FAILED);
	memset(counts, 0, sizeof(*counts));
	pid_t pids[CHILDREN];
	for (int c = 0; c < CHILDREN; c++) {
		pids[c] = fork();
		assert_true(pids[c] >= 0);
		if (pids[c] == 0)
			_exit(child_cycles(name, 1234u + (unsigned)c, counts));
	}
	atomic_store(&counts->go, 1);
	/* The parent samples while they run. */
	int running = CHILDREN, failed = 0;
	uint64_t samples = 0;
	while (running > 0) {
		rf_hostbudget_info info;
		assert_int_equal(rf_hostbudget_info_get(hb, &info), 0);
		assert_true(info.used_bytes <= TOTAL_BYTES);
		assert_int_equal(rf_hostbudget_check(hb, &err), 0);
		samples++;
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			running--;
			failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
		if (p == 0)
			sched_yield();
	}
	assert_int_equal(failed, 0);
	assert_int_equal(atomic_load(&counts->violations), 0);
	assert_true(atomic_load(&counts->reserved) > 0);
	assert_true(atomic_load(&counts->refused) > 0); /* the limit was reached */
	assert_true(samples > 0);
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(hb, &info), 0);
	assert_int_equal(info.used_bytes, 0); /* children closed: all returned */
	assert_int_equal(info.members, 1);
	assert_int_equal(info.reclaims, 0);
	assert_true(info.peak_used_bytes > TOTAL_BYTES / 2 && info.peak_used_bytes <= TOTAL_BYTES);
	fprintf(stderr, "  %lu reserved, %lu refused, %llu samples, peak %llu of %u\n",
	        atomic_load(&counts->reserved), atomic_load(&counts->refused),
	        (unsigned long long)samples, (unsigned long long)info.peak_used_bytes, TOTAL_BYTES);
	munmap(counts, sizeof(*counts));
	rf_hostbudget_close(hb);
	assert_false(shm_exists(name));
}

/* A child reserves `bytes`, tells the parent, and waits to be killed. */
static pid_t spawn_holder(const char *name, uint64_t total, uint64_t bytes)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		rf_error err = {0};
		rf_hostbudget *hb = NULL;
		char ok = rf_hostbudget_open(name, total, &hb, &err) == 0 &&
		          rf_hostbudget_reserve(hb, bytes) == 0;
		if (write(fds[1], &ok, 1) != 1 || !ok)
			_exit(1);
		for (int i = 0; i < 60000; i++) /* bounded: killed long before */
			sleep_ms(1);
		_exit(0);
	}
	close(fds[1]);
	char ok = 0;
	assert_int_equal(read(fds[0], &ok, 1), 1);
	assert_true(ok);
	close(fds[0]);
	return pid;
}

/* Retries a reserve (reclaim is rate limited to one scan per
 * RF_HOSTBUDGET_RECLAIM_MS); bounded at 5 s. */
static int reserve_retry(rf_hostbudget *hb, uint64_t bytes)
{
	int rc = -ENOBUFS;
	for (int i = 0; i < 1000 && rc == -ENOBUFS; i++) {
		rc = rf_hostbudget_reserve(hb, bytes);
		if (rc == -ENOBUFS)
			sleep_ms(5);
	}
	return rc;
}

static void test_killed_loader_is_reclaimed(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "kill");
	rf_error err = {0};
	rf_hostbudget *hb = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &hb, &err), 0);
	pid_t pid = spawn_holder(name, 1000, 700);
	assert_int_equal(rf_hostbudget_used(hb), 700);
	assert_int_equal(rf_hostbudget_reserve(hb, 500), -ENOBUFS); /* it is alive */
	assert_int_equal(rf_hostbudget_reclaim(hb), 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	/* Not reaped yet: a zombie counts as dead. */
	assert_int_equal(reserve_retry(hb, 500), 0);
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(hb, &info), 0);
	assert_int_equal(info.used_bytes, 500);
	assert_int_equal(info.reclaims, 1);
	assert_int_equal(info.reclaimed_bytes, 700);
	assert_int_equal(info.members, 1);
	assert_int_equal(rf_hostbudget_check(hb, &err), 0);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	rf_hostbudget_close(hb);
	assert_false(shm_exists(name));
}

/* The only loader dies: the object stays behind; the next open reclaims it
 * (and may pick another total, since nobody is left to disagree). */
static void test_reclaim_on_open(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "open");
	pid_t pid = spawn_holder(name, 1000, 900);
	assert_int_equal(kill(pid, SIGKILL), 0);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(shm_exists(name));
	rf_error err = {0};
	rf_hostbudget *hb = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &hb, &err), 0);
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(hb, &info), 0);
	assert_int_equal(info.used_bytes, 0);
	assert_int_equal(info.reclaims, 1);
	assert_int_equal(info.reclaimed_bytes, 900);
	assert_int_equal(rf_hostbudget_reserve(hb, 1000), 0);
	rf_hostbudget_close(hb);

	pid = spawn_holder(name, 1000, 900);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(rf_hostbudget_open(name, 3000, &hb, &err), 0);
	assert_int_equal(rf_hostbudget_info_get(hb, &info), 0);
	assert_int_equal(info.total_bytes, 3000);
	assert_int_equal(info.used_bytes, 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 3000), 0);
	rf_hostbudget_close(hb);
	assert_false(shm_exists(name));
}

/* A loader killed inside the critical section, half-way through an update:
 * the next locker gets EOWNERDEAD, repairs from the slots and reclaims. */
static void test_killed_while_holding_lock(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "lock");
	rf_error err = {0};
	rf_hostbudget *hb = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &hb, &err), 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 100), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rf_hostbudget *mine = NULL;
		if (rf_hostbudget_open(name, 1000, &mine, NULL) != 0 ||
		    rf_hostbudget_reserve(mine, 200) != 0)
			_exit(1);
		rf_hostbudget_test_die_locked(mine, 300);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* The lock works again, the dead child's 200 (+300 half-added) are
	 * gone, and the slots and the header agree. */
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(hb, &info), 0);
	assert_int_equal(info.used_bytes, 100);
	assert_int_equal(info.members, 1);
	assert_int_equal(info.reclaims, 1);
	assert_int_equal(info.reclaimed_bytes, 500);
	assert_int_equal(rf_hostbudget_check(hb, &err), 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 900), 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 1), -ENOBUFS);
	rf_hostbudget_close(hb);
	assert_false(shm_exists(name));
}

/* Processes open, hold more than half the total, and close, over and over,
 * so the object is created and removed many times under contention. Were a
 * name ever split into two budgets (a joiner on an unlinked object), two
 * holders could exist at once. */
static void test_create_remove_race(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "race");
	atomic_int *holders = mmap(NULL, 2 * sizeof(atomic_int), PROT_READ | PROT_WRITE,
	                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(holders != MAP_FAILED);
	atomic_store(&holders[0], 0);
	atomic_store(&holders[1], 0); /* times two were seen at once */
	pid_t pids[CHILDREN];
	for (int c = 0; c < CHILDREN; c++) {
		pids[c] = fork();
		assert_true(pids[c] >= 0);
		if (pids[c] != 0)
			continue;
		int bad = 0;
		for (int i = 0; i < 150; i++) {
			rf_hostbudget *hb = NULL;
			rf_error err = {0};
			if (rf_hostbudget_open(name, 1000, &hb, &err) != 0) {
				fprintf(stderr, "race open: %s\n", err.msg);
				bad = 1;
				break;
			}
			if (rf_hostbudget_reserve(hb, 600) == 0) {
				if (atomic_fetch_add(&holders[0], 1) != 0)
					atomic_fetch_add(&holders[1], 1);
				sched_yield();
				atomic_fetch_sub(&holders[0], 1);
			}
			rf_hostbudget_close(hb);
		}
		_exit(bad);
	}
	for (int c = 0; c < CHILDREN; c++) {
		int st;
		assert_int_equal(waitpid(pids[c], &st, 0), pids[c]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(atomic_load(&holders[1]), 0);
	assert_false(shm_exists(name));
	munmap(holders, 2 * sizeof(atomic_int));
}

/* Two loaders' budgets on one host budget: a reservation needs room in both;
 * each holds max(used, floor) of the host; releases give the excess back. */
static void test_loader_budgets_share_host(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "loaders");
	rf_error err = {0};
	rf_hostbudget *h1 = NULL, *h2 = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1500, &h1, &err), 0);
	assert_int_equal(rf_hostbudget_open(name, 1500, &h2, &err), 0);
	rf_budget b1, b2;
	rf_budget_init(&b1, 1000);
	rf_budget_init(&b2, 1000);
	assert_int_equal(rf_budget_attach_host(&b1, h1, 100, 0, 50, &err), 0);
	assert_int_equal(rf_budget_attach_host(&b2, h2, 100, 0, 50, &err), 0);
	assert_int_equal(rf_hostbudget_used(h1), 200);                    /* the two floors */
	assert_int_equal(rf_budget_reserve(&b1, RF_MEM_FETCH, 50, 0), 0); /* inside the floor */
	assert_int_equal(rf_hostbudget_used(h1), 200);
	assert_int_equal(rf_budget_reserve(&b1, RF_MEM_DECODED, 850, 0), 0);
	assert_int_equal(rf_hostbudget_used(h1), 1000);
	assert_int_equal(rf_budget_reserve(&b1, RF_MEM_BATCH, 101, 0), -ENOBUFS); /* local limit */
	assert_int_equal(rf_budget_reserve(&b2, RF_MEM_BATCH, 700, 0), -ENOBUFS); /* host */
	assert_int_equal(rf_hostbudget_used(h1), 1000); /* the refusal took nothing */
	assert_int_equal(rf_budget_reserve(&b2, RF_MEM_BATCH, 600, 0), 0);
	assert_int_equal(rf_hostbudget_used(h1), 1500);
	assert_int_equal(rf_budget_room(&b2), 0); /* no idle memory beyond the host share */
	assert_int_equal(rf_hostbudget_check(h1, &err), 0);
	rf_budget_release(&b1, RF_MEM_DECODED, 850);
	assert_int_equal(rf_hostbudget_used(h1), 100 + 600); /* b1 back to its floor */
	assert_int_equal(rf_budget_room(&b1), 50);           /* floor 100 - used 50 */
	assert_int_equal(rf_budget_reserve(&b2, RF_MEM_BATCH, 400, 0), 0);
	assert_int_equal(rf_hostbudget_used(h1), 1100);
	rf_budget_snapshot s;
	rf_budget_snapshot_get(&b2, &s);
	assert_int_equal(s.host_held_bytes, 1000);
	assert_int_equal(s.host_peak_held_bytes, 1000);
	assert_int_equal(s.host_refusals, 1);
	rf_budget_release(&b1, RF_MEM_FETCH, 50);
	rf_budget_release(&b2, RF_MEM_BATCH, 1000);
	assert_int_equal(rf_hostbudget_used(h1), 200);
	rf_budget_destroy(&b1); /* detaches: gives the floor back */
	assert_int_equal(rf_hostbudget_used(h1), 100);
	rf_budget_detach_host(&b2);
	assert_int_equal(rf_hostbudget_used(h1), 0);
	rf_budget_destroy(&b2);
	rf_hostbudget_close(h1);
	rf_hostbudget_close(h2);
	assert_false(shm_exists(name));
}

/* Headroom is held from the host (another loader could take it otherwise)
 * and stays held as slack after releases, for the reservation it was for. */
static void test_loader_headroom_is_held(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "headroom");
	rf_error err = {0};
	rf_hostbudget *h1 = NULL, *h2 = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &h1, &err), 0);
	assert_int_equal(rf_hostbudget_open(name, 1000, &h2, &err), 0);
	rf_budget b1, b2;
	rf_budget_init(&b1, 1000);
	rf_budget_init(&b2, 1000);
	assert_int_equal(rf_budget_attach_host(&b1, h1, 0, 0, 50, &err), 0);
	assert_int_equal(rf_budget_attach_host(&b2, h2, 0, 0, 50, &err), 0);
	/* Read-ahead keeping 200 for a batch: the host holds 500 + 200. */
	assert_int_equal(rf_budget_reserve(&b1, RF_MEM_DECODED, 500, 200), 0);
	assert_int_equal(rf_hostbudget_used(h1), 700);
	/* The other loader cannot take the batch's bytes... */
	assert_int_equal(rf_budget_reserve(&b2, RF_MEM_FETCH, 301, 0), -ENOBUFS);
	assert_int_equal(rf_budget_reserve(&b2, RF_MEM_FETCH, 300, 0), 0);
	/* ...so the batch needs nothing more from the host. */
	assert_int_equal(rf_budget_reserve(&b1, RF_MEM_BATCH, 200, 0), 0);
	assert_int_equal(rf_hostbudget_used(h1), 1000);
	/* Releasing the batch keeps the slack held. */
	rf_budget_release(&b1, RF_MEM_BATCH, 200);
	assert_int_equal(rf_hostbudget_used(h1), 1000);
	rf_budget_release(&b1, RF_MEM_DECODED, 500);
	assert_int_equal(rf_hostbudget_used(h1), 200 + 300);
	/* Headroom the host cannot hold refuses the reservation. */
	assert_int_equal(rf_budget_reserve(&b2, RF_MEM_FETCH, 100, 500), -ENOBUFS);
	assert_int_equal(rf_budget_reserve(&b2, RF_MEM_FETCH, 100, 400), 0);
	assert_int_equal(rf_hostbudget_used(h1), 200 + 800);
	assert_int_equal(rf_hostbudget_check(h1, &err), 0);
	rf_budget_release(&b2, RF_MEM_FETCH, 400);
	rf_budget_destroy(&b1);
	rf_budget_destroy(&b2);
	assert_int_equal(rf_hostbudget_used(h1), 0);
	rf_hostbudget_close(h1);
	rf_hostbudget_close(h2);
	assert_false(shm_exists(name));
}

/* A floor the host cannot hold is refused at attach, with the figures. */
static void test_loader_floor_too_big(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "floor");
	rf_error err = {0};
	rf_hostbudget *h1 = NULL, *h2 = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &h1, &err), 0);
	assert_int_equal(rf_hostbudget_open(name, 1000, &h2, &err), 0);
	rf_budget b1, b2;
	rf_budget_init(&b1, 1000);
	rf_budget_init(&b2, 1000);
	assert_int_equal(rf_budget_attach_host(&b1, h1, 600, 0, 50, &err), 0);
	assert_int_equal(rf_budget_attach_host(&b2, h2, 600, 0, 50, &err), -ENOBUFS);
	assert_non_null(strstr(err.msg, "600 bytes"));
	assert_non_null(strstr(err.msg, "of 1000 bytes"));
	assert_int_equal(rf_hostbudget_used(h1), 600);
	assert_int_equal(rf_budget_reserve(&b2, RF_MEM_FETCH, 1000, 0), 0); /* not attached */
	rf_budget_release(&b2, RF_MEM_FETCH, 1000);
	rf_budget_destroy(&b1);
	rf_budget_destroy(&b2);
	rf_hostbudget_close(h1);
	rf_hostbudget_close(h2);
}

static void *budget_hammer(void *arg)
{
	rf_budget *b = arg;
	for (int i = 0; i < 5000; i++) {
		enum rf_budget_category c = (enum rf_budget_category)(i % RF_MEM_CATEGORIES);
		uint64_t n = 1 + (uint64_t)(i * 7919) % 300;
		if (rf_budget_reserve(b, c, n, 0) == 0)
			rf_budget_release(b, c, n);
	}
	return NULL;
}

/* Threads of two loaders hammer one host budget: the host never goes over,
 * and everything comes back. */
static void test_loader_threads(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "threads");
	rf_error err = {0};
	rf_hostbudget *h[2];
	rf_budget b[2];
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rf_hostbudget_open(name, 700, &h[i], &err), 0);
		rf_budget_init(&b[i], 500);
		assert_int_equal(rf_budget_attach_host(&b[i], h[i], 10, 0, 50, &err), 0);
	}
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, budget_hammer, &b[i % 2]), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(h[0], &info), 0);
	assert_true(info.peak_used_bytes <= 700);
	assert_true(info.peak_used_bytes > 300);
	assert_int_equal(info.used_bytes, 20);
	assert_int_equal(rf_hostbudget_check(h[0], &err), 0);
	for (int i = 0; i < 2; i++) {
		rf_budget_destroy(&b[i]);
		rf_hostbudget_close(h[i]);
	}
	assert_false(shm_exists(name));
}

/* The config keys: host_budget is a size, host_budget_name is checked. */
static void test_config_keys(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_config *cfg = rf_config_new();
	assert_non_null(cfg);
	assert_int_equal(rf_config_set(cfg, "host_budget", "64MiB", &err), 0);
	assert_int_equal(rf_config_set(cfg, "host_budget", "lots", &err), -EINVAL);
	assert_int_equal(rf_config_set(cfg, "host_budget_name", "job-7.rank_a", &err), 0);
	assert_int_equal(rf_config_set(cfg, "host_budget_name", "../etc", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "host budget name"));
	assert_int_equal(rf_config_set(cfg, "host_budget_name", "", &err), -EINVAL);
	assert_non_null(strstr(rf_config_keys_find("host_budget"), "host"));
	rf_config_free(cfg);
}

typedef struct floor_arg {
	rf_hostbudget *hb;
	uint64_t bytes;
	int timeout_ms, rc;
} floor_arg;

static void *floor_thread(void *arg)
{
	floor_arg *a = arg;
	a->rc = rf_hostbudget_reserve_floor(a->hb, a->bytes, 0, a->timeout_ms, NULL);
	return NULL;
}

/* A loader waiting for its floor: others' reservations leave room for it,
 * and it gets the floor once enough is released; or it gives up in time. */
static void test_floor_wait(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "floorwait");
	rf_error err = {0};
	rf_hostbudget *h1 = NULL, *h2 = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &h1, &err), 0);
	assert_int_equal(rf_hostbudget_open(name, 1000, &h2, &err), 0);
	assert_int_equal(rf_hostbudget_reserve(h1, 900), 0);
	assert_int_equal(rf_hostbudget_reserve_floor(h2, 300, 0, 20, NULL), -ENOBUFS); /* gave up */
	assert_int_equal(rf_hostbudget_reserve_floor(h2, 1001, 0, 10000, NULL),
	                 -ENOBUFS); /* > total */
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(h1, &info), 0);
	assert_int_equal(info.wanted_bytes, 0);
	floor_arg a = {h2, 300, 10000, 1};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, floor_thread, &a), 0);
	for (int i = 0; i < 2000 && info.wanted_bytes == 0; i++) { /* bounded: 10 s */
		sleep_ms(5);
		assert_int_equal(rf_hostbudget_info_get(h1, &info), 0);
	}
	assert_int_equal(info.wanted_bytes, 300);
	assert_int_equal(rf_hostbudget_reserve(h1, 50), -ENOBUFS); /* 50 free, kept for h2 */
	assert_int_equal(rf_hostbudget_check(h1, &err), 0);
	assert_int_equal(rf_hostbudget_release(h1, 500), 0);
	pthread_join(t, NULL);
	assert_int_equal(a.rc, 0);
	assert_int_equal(rf_hostbudget_info_get(h1, &info), 0);
	assert_int_equal(info.used_bytes, 400 + 300);
	assert_int_equal(info.wanted_bytes, 0);
	assert_int_equal(rf_hostbudget_reserve(h1, 300), 0);
	assert_int_equal(rf_hostbudget_check(h1, &err), 0);
	rf_hostbudget_close(h1);
	rf_hostbudget_close(h2);
	assert_false(shm_exists(name));
}

/* A floor that finds no room says why: what is held, what other loaders
 * wait for, what is kept for loaders still to come, and the sum against
 * the total (it once said "0 of 1000 bytes held by 2 loader(s)"). */
static void test_floor_fail_says_why(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "floorwhy");
	rf_error err = {0};
	rf_hostbudget *h1 = NULL, *h2 = NULL;
	assert_int_equal(rf_hostbudget_open(name, 1000, &h1, &err), 0);
	assert_int_equal(rf_hostbudget_open(name, 1000, &h2, &err), 0);
	floor_arg a = {h1, 600, 60000, 1}; /* waits: h2's floor below leaves no room */
	rf_hostbudget_info info = {0};
	assert_int_equal(rf_hostbudget_reserve(h2, 500), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, floor_thread, &a), 0);
	for (int i = 0; i < 2000 && info.wanted_bytes == 0; i++) { /* bounded: 10 s */
		sleep_ms(5);
		assert_int_equal(rf_hostbudget_info_get(h2, &info), 0);
	}
	assert_int_equal(info.wanted_bytes, 600);
	assert_int_equal(rf_hostbudget_release(h2, 500), 0);
	rf_budget b2;
	rf_budget_init(&b2, 1000);
	assert_int_equal(rf_budget_attach_host(&b2, h2, 600, 0, 20, &err), RF_E_BUDGET);
	const char *want[] = {"minimum of 600 bytes", "0 bytes held by 2 loader(s) attached",
	                      "600 bytes of minimums other loaders wait for",
	                      "1200 bytes (1.2 KiB) needed together"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(err.msg, want[i]))
			fail_msg("expected '%s' in: %s", want[i], err.msg);
	pthread_join(t, NULL);
	assert_int_equal(a.rc, 0); /* h2 gave up: h1's floor fits */
	rf_budget_destroy(&b2);
	rf_hostbudget_close(h1);
	rf_hostbudget_close(h2);
	/* loaders announced (4) but not attached: their floors are kept */
	unique_name(name, sizeof(name), "floorwhy2");
	assert_int_equal(rf_hostbudget_open(name, 1000, &h1, &err), 0);
	rf_budget b1;
	rf_budget_init(&b1, 1000);
	assert_int_equal(rf_budget_attach_host(&b1, h1, 300, 4, 0, &err), RF_E_BUDGET);
	const char *want2[] = {"900 bytes kept for 3 loader(s) announced but not attached",
	                       "1200 bytes (1.2 KiB) needed together"};
	for (size_t i = 0; i < sizeof(want2) / sizeof(want2[0]); i++)
		if (!strstr(err.msg, want2[i]))
			fail_msg("expected '%s' in: %s", want2[i], err.msg);
	rf_budget_destroy(&b1);
	rf_hostbudget_close(h1);
}

/* With the number of loaders announced, room for the floors of those not
 * attached yet is kept: the early ones' read-ahead cannot take it. */
static void test_expected_loaders(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "expected");
	rf_error err = {0};
	rf_hostbudget *h[3];
	assert_int_equal(rf_hostbudget_open(name, 1000, &h[0], &err), 0);
	assert_int_equal(rf_hostbudget_reserve_floor(h[0], 100, 3, 0, NULL), 0);
	assert_int_equal(rf_hostbudget_reserve(h[0], 701), -ENOBUFS); /* 2 x 100 kept */
	assert_int_equal(rf_hostbudget_reserve(h[0], 700), 0);
	assert_int_equal(rf_hostbudget_open(name, 1000, &h[1], &err), 0);
	assert_int_equal(rf_hostbudget_reserve_floor(h[1], 100, 3, 0, NULL), 0);
	assert_int_equal(rf_hostbudget_reserve(h[1], 1), -ENOBUFS); /* 1 x 100 kept */
	assert_int_equal(rf_hostbudget_open(name, 1000, &h[2], &err), 0);
	assert_int_equal(rf_hostbudget_reserve_floor(h[2], 100, 3, 0, NULL), 0);
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(h[2], &info), 0);
	assert_int_equal(info.used_bytes, 1000);
	assert_int_equal(info.expected_members, 3);
	assert_int_equal(info.floor_max_bytes, 100);
	assert_int_equal(rf_hostbudget_check(h[2], &err), 0);
	/* One leaves (it may come back, e.g. restarted): its floor stays kept. */
	rf_hostbudget_close(h[0]);
	assert_int_equal(rf_hostbudget_reserve(h[1], 701), -ENOBUFS);
	assert_int_equal(rf_hostbudget_reserve(h[1], 700), 0);
	rf_hostbudget_close(h[1]);
	rf_hostbudget_close(h[2]);
	assert_false(shm_exists(name));
}

static int remove_objects(void **state)
{
	(void)state;
	const char *tags[] = {"zero",     "single",   "join",     "fork",      "multi",
	                      "kill",     "open",     "lock",     "race",      "loaders",
	                      "floor",    "threads",  "headroom", "floorwait", "expected",
	                      "floorwhy", "floorwhy2"};
	for (size_t i = 0; i < RF_ARRAY_LEN(tags); i++) {
		char name[64];
		unique_name(name, sizeof(name), tags[i]);
		shm_remove(name);
	}
	return 0;
}

/* Creates the object as another process might have: mode, owner (-1: ours). */
static void precreate(const char *name, mode_t mode, uid_t uid, gid_t gid)
{
	char path[128];
	snprintf(path, sizeof(path), "/ringfeed-hb-%s", name);
	int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, mode), 0);
	if (uid != (uid_t)-1)
		assert_int_equal(fchown(fd, uid, gid), 0);
	close(fd);
}

/* An object others may write (mode 0666) is refused, naming owner and mode. */
static void test_refuses_open_mode(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "mode");
	precreate(name, 0666, (uid_t)-1, (gid_t)-1);
	rf_hostbudget *hb = NULL;
	rf_error err = {0};
	assert_int_equal(rf_hostbudget_open(name, 1 << 20, &hb, &err), -EACCES);
	assert_null(hb);
	assert_non_null(strstr(err.msg, "mode 0666"));
	char uid[32];
	snprintf(uid, sizeof(uid), "owned by uid %u", (unsigned)geteuid());
	assert_non_null(strstr(err.msg, uid));
	shm_remove(name);
}

/* An object another user owns (even mode 0600) is refused: as root, one
 * chowned to nobody. */
static void test_refuses_other_owner(void **state)
{
	(void)state;
	struct passwd *nobody = getpwnam("nobody");
	if (geteuid() != 0 || !nobody) {
		rf_test_skip("skipped: needs root and a 'nobody' user to chown the object\n");
	}
	char name[64];
	unique_name(name, sizeof(name), "owner");
	precreate(name, 0600, nobody->pw_uid, nobody->pw_gid);
	rf_hostbudget *hb = NULL;
	rf_error err = {0};
	assert_int_equal(rf_hostbudget_open(name, 1 << 20, &hb, &err), -EACCES);
	assert_null(hb);
	char want[64];
	snprintf(want, sizeof(want), "owned by uid %u (nobody) with mode 0600",
	         (unsigned)nobody->pw_uid);
	assert_non_null(strstr(err.msg, want));
	shm_remove(name);
}

/* Truncating the object under an attached loader: its next operation is an
 * error, never SIGBUS (run in a child, so a crash is seen as one). */
static void test_truncated_is_an_error(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "trunc");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rf_hostbudget *hb = NULL;
		rf_error err = {0};
		if (rf_hostbudget_open(name, 1 << 20, &hb, &err) < 0 ||
		    rf_hostbudget_reserve(hb, 1000) < 0)
			_exit(10);
		char path[128];
		snprintf(path, sizeof(path), "/ringfeed-hb-%s", name);
		int fd = shm_open(path, O_RDWR, 0);
		if (fd < 0 || ftruncate(fd, 64) != 0)
			_exit(11);
		close(fd);
		if (rf_hostbudget_reserve(hb, 1000) != -EIO ||
		    rf_hostbudget_release(hb, 10) != -EIO)
			_exit(12);
		rf_hostbudget_info info;
		if (rf_hostbudget_info_get(hb, &info) != -EIO)
			_exit(13);
		if (rf_hostbudget_check(hb, &err) != -EIO ||
		    !strstr(err.msg, "shrank to 64 bytes") || !strstr(err.msg, "truncated"))
			_exit(14);
		rf_hostbudget_close(hb);
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("the loader died of signal %d (SIGBUS is %d)", WTERMSIG(st), SIGBUS);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	shm_remove(name);
}

/* Truncated to 0 and grown back to its size: the pages are zeroed (magic 0,
 * an unlocked plain mutex). The handle must see that the object is no longer
 * the one it attached to, not carry on with a zeroed budget. */
static void test_regrown_zeroed_is_an_error(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "regrow");
	rf_hostbudget *hb = NULL;
	rf_error err = {0};
	assert_int_equal(rf_hostbudget_open(name, 1 << 20, &hb, &err), 0);
	assert_int_equal(rf_hostbudget_reserve(hb, 1000), 0);
	char path[128];
	snprintf(path, sizeof(path), "/ringfeed-hb-%s", name);
	int fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(ftruncate(fd, st.st_size), 0);
	close(fd);
	assert_int_equal(rf_hostbudget_reserve(hb, 1000), -EIO);
	assert_true(rf_hostbudget_broken(hb));
	assert_int_equal(rf_hostbudget_release(hb, 10), -EIO);
	rf_hostbudget_info info;
	assert_int_equal(rf_hostbudget_info_get(hb, &info), -EIO);
	assert_int_equal(rf_hostbudget_error(hb, &err), -EIO);
	assert_non_null(strstr(err.msg, name));
	assert_non_null(strstr(err.msg, "re-initialised"));
	assert_non_null(strstr(err.msg, "magic now 00000000"));
	assert_int_equal(rf_hostbudget_verify(hb, &err), -EIO);
	rf_hostbudget_close(hb);
	shm_remove(name);
}

/* A release-only loader (or one whose reservations do not change) still
 * finds out: rf_hostbudget_verify is the refresh, and its error names the
 * object with its size now and the size expected. */
static void test_truncated_found_by_verify(void **state)
{
	(void)state;
	char name[64];
	unique_name(name, sizeof(name), "verify");
	rf_hostbudget *hb = NULL;
	rf_error err = {0};
	assert_int_equal(rf_hostbudget_open(name, 1 << 20, &hb, &err), 0);
	assert_int_equal(rf_hostbudget_verify(hb, &err), 0);
	char path[128];
	snprintf(path, sizeof(path), "/ringfeed-hb-%s", name);
	int fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	close(fd);
	for (int i = 0; i < 200 && rf_hostbudget_verify(hb, &err) == 0; i++)
		usleep(1000 * RF_HOSTBUDGET_VERIFY_MS / 4); /* rate-limited: bounded retries */
	assert_int_equal(rf_hostbudget_verify(hb, &err), -EIO);
	assert_non_null(strstr(err.msg, name));
	assert_non_null(strstr(err.msg, "shrank to 0 bytes"));
	assert_non_null(strstr(err.msg, "(expected "));
	rf_hostbudget_close(hb);
	shm_remove(name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_single_process_limits),
	    cmocka_unit_test(test_join_and_total_mismatch),
	    cmocka_unit_test(test_forked_child_handle),
	    cmocka_unit_test(test_processes_never_exceed_total),
	    cmocka_unit_test(test_killed_loader_is_reclaimed),
	    cmocka_unit_test(test_reclaim_on_open),
	    cmocka_unit_test(test_killed_while_holding_lock),
	    cmocka_unit_test(test_create_remove_race),
	    cmocka_unit_test(test_loader_budgets_share_host),
	    cmocka_unit_test(test_loader_headroom_is_held),
	    cmocka_unit_test(test_loader_floor_too_big),
	    cmocka_unit_test(test_loader_threads),
	    cmocka_unit_test(test_config_keys),
	    cmocka_unit_test(test_floor_wait),
	    cmocka_unit_test(test_expected_loaders),
	    cmocka_unit_test(test_refuses_open_mode),
	    cmocka_unit_test(test_floor_fail_says_why),
	    cmocka_unit_test(test_refuses_other_owner),
	    cmocka_unit_test(test_truncated_is_an_error),
	    cmocka_unit_test(test_regrown_zeroed_is_an_error),
	    cmocka_unit_test(test_truncated_found_by_verify),
	};
	return rf_test_run_group(tests, NULL, remove_objects);
}
