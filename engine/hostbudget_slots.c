/* hostbudget_slots.c - the host budget's slot table (see hostbudget.h,
 * hostbudget_int.h): one slot per attached loader (pid, process start time,
 * reserved and wanted bytes). Liveness from /proc/PID/stat (a zombie or a
 * reused pid is dead), the reclaim of dead loaders' bytes, and the repair
 * after a holder died inside the critical section: the slots are the truth,
 * used = sum of slots. Every function here runs with the mutex held. */
#include "hostbudget_int.h"
#include "util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define HB_STAT_BYTES 1024 /* /proc/PID/stat is shorter than this */

/* Reads the state letter and start time (clock ticks after boot) of pid.
 * -ENOENT when the process does not exist. */
int rf_hb_proc_stat(pid_t pid, char *state, uint64_t *start_ticks)
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
	int rc = rf_hb_proc_stat(pid, &state, &ticks);
	if (rc == 0)
		return state != 'Z' && state != 'X' && (start_ticks == 0 || ticks == start_ticks);
	/* No /proc entry we can read: ask the kernel; EPERM means it exists. */
	return kill(pid, 0) == 0 || errno != ESRCH;
}

/* Called with the mutex held. Returns the bytes taken back. */
uint64_t rf_hb_reclaim_dead(hb_shared *sh)
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
void rf_hb_repair(hb_shared *sh)
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
	rf_hb_reclaim_dead(sh);
	sh->last_scan_ns = rf_now_ns();
}

uint32_t rf_hb_count_members(const hb_shared *sh)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < RF_HOSTBUDGET_SLOTS; i++)
		n += sh->slot[i].pid != 0;
	return n;
}

/* With the mutex held: takes a free slot for this process. */
int rf_hb_take_slot(rf_hostbudget *hb, rf_error *err)
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

/* This handle's slot, if it is still ours (mutex held). */
hb_slot *rf_hb_own_slot(rf_hostbudget *hb)
{
	hb_slot *s = &hb->sh->slot[hb->slot];
	return s->pid == (int32_t)hb->pid && s->start_ticks == hb->start_ticks ? s : NULL;
}
