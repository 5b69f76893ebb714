/* node.c - this process's CPU and memory limits (node.h): the affinity mask,
 * the cgroup quotas along the process's cgroup path (v2 and v1, both on a
 * hybrid host), the machine's memory. Reads /proc/self/mountinfo and
 * /proc/self/cgroup line by line (bounded), finds the cgroup's directory
 * under its mount, and walks up to the mount taking the tightest limit. */
#include "node.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define RF_NODE_PATH_BYTES   1024u
#define RF_NODE_AFFINITY_MAX 8192u        /* CPUs a mask is read for at most */
#define RF_NODE_MEM_NONE     (1ull << 62) /* v1 writes ~2^63 for "no limit" */

/* One cgroup hierarchy: where it is mounted, which part of it the mount
 * shows, and this process's path in it. */
typedef struct rf_cg {
	char mnt[RF_NODE_PATH_BYTES];
	char root[RF_NODE_PATH_BYTES];
	char path[RF_NODE_PATH_BYTES];
	bool mounted, member;
} rf_cg;

typedef struct rf_cgroups {
	rf_cg v2, v1_cpu, v1_mem;
} rf_cgroups;

/* The next line of f into buf without its newline; a line longer than the
 * buffer is passed over whole. false at the end (or past the line bound). */
static bool rf_node_line(FILE *f, char *buf, size_t cap, uint32_t *lines)
{
	while (*lines < RF_NODE_LINES_MAX && fgets(buf, (int)cap, f)) {
		++*lines;
		size_t n = strlen(buf);
		if (n > 0 && buf[n - 1] == '\n') {
			buf[n - 1] = '\0';
			return true;
		}
		if (feof(f))
			return true;
		int c;
		while ((c = fgetc(f)) != EOF && c != '\n')
			;
	}
	return false;
}

/* Undoes mountinfo's octal escapes (\040 space, \011 tab, \012, \134) in place. */
static void rf_node_unescape(char *s)
{
	char *w = s;
	for (const char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Whether the comma-separated list has the token. */
static bool rf_node_has_token(const char *list, const char *token)
{
	size_t n = strlen(token);
	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && !memcmp(p, token, n))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

static void rf_cg_mount(rf_cg *cg, const char *root, const char *mnt)
{
	if (cg->mounted || strlen(root) >= RF_NODE_PATH_BYTES || strlen(mnt) >= RF_NODE_PATH_BYTES)
		return;
	snprintf(cg->root, sizeof(cg->root), "%s", root);
	snprintf(cg->mnt, sizeof(cg->mnt), "%s", mnt);
	cg->mounted = true;
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNT OPTS [OPTIONAL...] -
 * FSTYPE SOURCE SUPEROPTS". */
static void rf_node_mount_line(char *line, rf_cgroups *cgs)
{
	char *field[6], *save = NULL, *tok;
	int n = 0;
	for (tok = strtok_r(line, " ", &save); tok && n < 6; tok = strtok_r(NULL, " ", &save))
		field[n++] = tok;
	if (n < 6)
		return;
	while (tok && strcmp(tok, "-") != 0)
		tok = strtok_r(NULL, " ", &save);
	const char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
	const char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
	const char *super = source ? strtok_r(NULL, " ", &save) : NULL;
	if (!super)
		return;
	rf_node_unescape(field[3]);
	rf_node_unescape(field[4]);
	if (!strcmp(fstype, "cgroup2"))
		rf_cg_mount(&cgs->v2, field[3], field[4]);
	else if (!strcmp(fstype, "cgroup") && rf_node_has_token(super, "cpu"))
		rf_cg_mount(&cgs->v1_cpu, field[3], field[4]);
	else if (!strcmp(fstype, "cgroup") && rf_node_has_token(super, "memory"))
		rf_cg_mount(&cgs->v1_mem, field[3], field[4]);
}

static void rf_cg_member(rf_cg *cg, const char *path)
{
	if (cg->member || strlen(path) >= RF_NODE_PATH_BYTES || path[0] != '/')
		return;
	snprintf(cg->path, sizeof(cg->path), "%s", path);
	cg->member = true;
}

/* One /proc/self/cgroup line: "ID:CONTROLLERS:PATH" ("0::PATH" for v2). */
static void rf_node_cgroup_line(const char *line, rf_cgroups *cgs)
{
	const char *c1 = strchr(line, ':');
	const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2)
		return;
	char ctrls[256];
	size_t n = (size_t)(c2 - c1 - 1);
	if (n >= sizeof(ctrls))
		return;
	memcpy(ctrls, c1 + 1, n);
	ctrls[n] = '\0';
	if (c1 - line == 1 && line[0] == '0' && n == 0)
		rf_cg_member(&cgs->v2, c2 + 1);
	if (rf_node_has_token(ctrls, "cpu"))
		rf_cg_member(&cgs->v1_cpu, c2 + 1);
	if (rf_node_has_token(ctrls, "memory"))
		rf_cg_member(&cgs->v1_mem, c2 + 1);
}

static void rf_node_read_lines(const char *root, const char *name, rf_cgroups *cgs,
                               void (*fn)(char *line, rf_cgroups *cgs))
{
	char path[RF_NODE_PATH_BYTES], line[RF_NODE_LINE_BYTES];
	snprintf(path, sizeof(path), "%s/proc/self/%s", root, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	uint32_t lines = 0;
	while (rf_node_line(f, line, sizeof(line), &lines))
		fn(line, cgs);
	fclose(f);
}

static void rf_node_cgroup_fn(char *line, rf_cgroups *cgs)
{
	rf_node_cgroup_line(line, cgs);
}

/* The cgroup's directory: the mount plus its path below the mount's root
 * (a path outside that root, as in another cgroup namespace, is the mount). */
static bool rf_cg_dir(const char *root, const rf_cg *cg, char *out, size_t cap)
{
	if (!cg->mounted || !cg->member)
		return false;
	const char *rest = cg->path;
	size_t rl = strlen(cg->root);
	if (!strcmp(cg->root, "/"))
		rest = cg->path;
	else if (!strncmp(cg->path, cg->root, rl) && (cg->path[rl] == '/' || !cg->path[rl]))
		rest = cg->path + rl;
	else
		rest = "";
	int n = snprintf(out, cap, "%s%s%s", root, cg->mnt, rest);
	if (n < 0 || (size_t)n >= cap)
		return false;
	size_t len = (size_t)n;
	while (len > 1 && out[len - 1] == '/')
		out[--len] = '\0';
	return true;
}

/* The first line of dir/name (at most 255 bytes), or false. */
static bool rf_node_value(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[RF_NODE_PATH_BYTES + 64];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return false; /* never a cut path: it would name another file */
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static bool rf_node_u64(const char *s, uint64_t *out)
{
	if (*s < '0' || *s > '9')
		return false;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (v == ULLONG_MAX)
		return false;
	*out = v;
	return true;
}

/* One directory's limits into l (the tightest so far kept). */
static void rf_node_dir_limits(const char *dir, int which, rf_node_limits *l)
{
	char v[256], w[256];
	double cpus = 0;
	uint64_t q, p, m = 0;
	const char *from = NULL;
	if (which == 0 && rf_node_value(dir, "cpu.max", v, sizeof(v))) {
		char *sp = strchr(v, ' ');
		if (sp && (*sp = '\0', rf_node_u64(v, &q)) && rf_node_u64(sp + 1, &p) && p > 0)
			cpus = (double)q / (double)p, from = "cgroup v2 cpu.max";
	}
	if (which == 1 && rf_node_value(dir, "cpu.cfs_quota_us", v, sizeof(v)) &&
	    rf_node_value(dir, "cpu.cfs_period_us", w, sizeof(w)) && rf_node_u64(v, &q) &&
	    rf_node_u64(w, &p) && p > 0)
		cpus = (double)q / (double)p, from = "cgroup v1 cpu.cfs_quota_us";
	if (cpus > 0 && (l->quota_cpus == 0 || cpus < l->quota_cpus)) {
		l->quota_cpus = cpus;
		snprintf(l->quota_from, sizeof(l->quota_from), "%s", from);
	}
	const char *mname = which == 0 ? "memory.max" : which == 2 ? "memory.limit_in_bytes" : NULL;
	if (mname && rf_node_value(dir, mname, v, sizeof(v)) && rf_node_u64(v, &m) && m > 0 &&
	    m < RF_NODE_MEM_NONE && (l->mem_limit_bytes == 0 || m < l->mem_limit_bytes)) {
		l->mem_limit_bytes = m;
		snprintf(l->mem_from, sizeof(l->mem_from), "cgroup %s %s", which ? "v1" : "v2",
		         mname);
	}
}

/* Walks from the cgroup's directory up to its mount. */
static void rf_node_walk(const char *root, const rf_cg *cg, int which, rf_node_limits *l)
{
	char dir[2 * RF_NODE_PATH_BYTES + 8], top[2 * RF_NODE_PATH_BYTES + 8];
	if (!rf_cg_dir(root, cg, dir, sizeof(dir)))
		return;
	snprintf(top, sizeof(top), "%s%s", root, cg->mnt);
	size_t top_len = strlen(top);
	while (top_len > 1 && top[top_len - 1] == '/')
		top[--top_len] = '\0';
	for (uint32_t depth = 0; depth < RF_NODE_DEPTH_MAX; depth++) {
		rf_node_dir_limits(dir, which, l);
		char *slash = strrchr(dir, '/');
		if (strlen(dir) <= top_len || !slash || (size_t)(slash - dir) < top_len)
			break;
		*slash = '\0';
	}
}

static uint32_t rf_node_affinity(void)
{
	cpu_set_t *set = CPU_ALLOC(RF_NODE_AFFINITY_MAX);
	if (!set)
		return 0;
	size_t bytes = CPU_ALLOC_SIZE(RF_NODE_AFFINITY_MAX);
	int n = sched_getaffinity(0, bytes, set) == 0 ? CPU_COUNT_S(bytes, set) : 0;
	CPU_FREE(set);
	return n > 0 ? (uint32_t)n : 0;
}

void rf_node_limits_read(const char *root, rf_node_limits *out)
{
	memset(out, 0, sizeof(*out));
	rf_cgroups cgs;
	memset(&cgs, 0, sizeof(cgs));
	root = root ? root : "";
	rf_node_read_lines(root, "mountinfo", &cgs, rf_node_mount_line);
	rf_node_read_lines(root, "cgroup", &cgs, rf_node_cgroup_fn);
	rf_node_walk(root, &cgs.v2, 0, out);
	rf_node_walk(root, &cgs.v1_cpu, 1, out);
	rf_node_walk(root, &cgs.v1_mem, 2, out);
	if (root[0])
		return;
	out->affinity_cpus = rf_node_affinity();
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (pages > 0 && page > 0)
		out->mem_total_bytes = (uint64_t)pages * (uint64_t)page;
}

uint32_t rf_node_cpus(const rf_node_limits *l)
{
	uint32_t n = l->affinity_cpus;
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (uint32_t)RF_MIN(c, (long)RF_NODE_AFFINITY_MAX) : 1;
	}
	if (l->quota_cpus > 0) {
		double q = ceil(l->quota_cpus);
		if (q < (double)n)
			n = (uint32_t)q;
	}
	return RF_MAX(n, 1u);
}

uint64_t rf_node_memory(const rf_node_limits *l)
{
	if (l->mem_limit_bytes && l->mem_total_bytes)
		return RF_MIN(l->mem_limit_bytes, l->mem_total_bytes);
	return l->mem_limit_bytes ? l->mem_limit_bytes : l->mem_total_bytes;
}

int rf_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	int rc = pthread_attr_init(&a);
	if (rc != 0)
		return rc;
	rc = pthread_attr_setstacksize(&a, RF_THREAD_STACK_BYTES);
	if (rc == 0)
		rc = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return rc;
}

void rf_node_oom_hint(char *buf, size_t cap)
{
	struct rlimit r;
	buf[0] = '\0';
	if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
		return;
	char b[24];
	snprintf(buf, cap,
	         " (the address-space limit RLIMIT_AS is %s: ringfeed maps about its budget "
	         "plus 64 MiB of glibc malloc arena per thread and 2 MiB of stack per thread; "
	         "raise the limit, or set MALLOC_ARENA_MAX=2 for the process)",
	         rf_fmt_bytes((uint64_t)r.rlim_cur, b, sizeof(b)));
}
