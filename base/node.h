/* node.h - what this process may use of its node: the CPUs it may run on
 * (its affinity mask and its cgroup's CPU quota, v2 cpu.max or v1
 * cpu.cfs_quota_us / cpu.cfs_period_us, the tightest along the cgroup's
 * path) and the memory it may hold (its cgroup's memory.max or v1
 * memory.limit_in_bytes, and the machine's). A container's quota is what
 * the scheduler enforces, not the cores the machine shows: the engine sizes
 * its threads and its host budget from these. Every file is read bounded;
 * what cannot be read is "no limit". Internal. */
#ifndef RF_NODE_H
#define RF_NODE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define RF_NODE_LINE_BYTES 4096u  /* longer lines of /proc files are passed over */
#define RF_NODE_LINES_MAX  65536u /* lines read of one /proc file at most */
#define RF_NODE_DEPTH_MAX  64u    /* cgroup levels walked up at most */

typedef struct rf_node_limits {
	uint32_t affinity_cpus;   /* CPUs in the affinity mask (0: unknown) */
	double quota_cpus;        /* the tightest CPU quota, in CPUs (0: none) */
	char quota_from[48];      /* "cgroup v2 cpu.max", "cgroup v1 cpu.cfs_quota_us" or "" */
	uint64_t mem_limit_bytes; /* the tightest cgroup memory limit (0: none) */
	char mem_from[48];        /* "cgroup v2 memory.max", "cgroup v1 memory.limit_in_bytes" */
	uint64_t mem_total_bytes; /* the machine's memory (0: unknown) */
} rf_node_limits;

/* Reads this process's limits. root is "" for the real system, or a
 * directory standing for "/" (tests: ROOT/proc/self/{cgroup,mountinfo} and
 * the mount points they name beneath ROOT); the affinity mask and the
 * machine's memory are read only for the real system. */
void rf_node_limits_read(const char *root, rf_node_limits *out);
/* The CPUs one process may keep busy: min(affinity, ceil(quota)), >= 1. */
uint32_t rf_node_cpus(const rf_node_limits *l);
/* The memory it may use: min(cgroup limit, machine), 0 when neither is known. */
uint64_t rf_node_memory(const rf_node_limits *l);

/* Thread stacks the engine's threads get (they hold no large frames; curl
 * and TLS run on the loop thread, the larger). Sanitizers' frames are larger. */
#if defined(__SANITIZE_ADDRESS__) || defined(RF_SANITIZE)
#define RF_THREAD_STACK_BYTES (8u << 20)
#else
#define RF_THREAD_STACK_BYTES (2u << 20)
#endif
/* pthread_create with an RF_THREAD_STACK_BYTES stack; 0 or the error number. */
int rf_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* Out of memory under an address-space limit: a sentence for the message
 * naming RLIMIT_AS and what to do ("" when there is no such limit). */
#define RF_NODE_HINT_BYTES 320u
void rf_node_oom_hint(char *buf, size_t cap);

#endif
