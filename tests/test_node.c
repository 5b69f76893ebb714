/* test_node.c - node-aware defaults: the CPU quota and memory limit read from
 * fake /proc and cgroup trees (v2, v1, hybrid, nested, a namespace's mount
 * root, escaped mount points, lines past the bound), threads divided by
 * LOCAL_WORLD_SIZE, and the host budget's auto size, loaders and job name. */
#include "config.h"
#include "defaults.h"
#include "node.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void put(const char *root, const char *rel, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) { /* parents */
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0700);
			*p = '/';
		}
	}
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_v2_nested(void **state)
{
	(void)state;
	char *root = rf_test_tmpdir("node-v2");
	put(root, "proc/self/mountinfo",
	    "22 1 8:1 / / rw - ext4 /dev/root rw\n"
	    "30 22 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
	put(root, "proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
	put(root, "sys/fs/cgroup/cpu.max", "max 100000\n");
	put(root, "sys/fs/cgroup/kubepods/cpu.max", "400000 100000\n");
	put(root, "sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n");
	put(root, "sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
	put(root, "sys/fs/cgroup/kubepods/pod1/memory.max", "2147483648\n");
	put(root, "sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n");
	rf_node_limits l;
	rf_node_limits_read(root, &l);
	assert_true(l.quota_cpus > 1.49 && l.quota_cpus < 1.51); /* the tightest, pod1's */
	assert_string_equal(l.quota_from, "cgroup v2 cpu.max");
	assert_int_equal(l.mem_limit_bytes, 2147483648ull);
	assert_string_equal(l.mem_from, "cgroup v2 memory.max");
	l.affinity_cpus = 8;
	assert_int_equal(rf_node_cpus(&l), 2); /* ceil(1.5) */
	l.affinity_cpus = 1;
	assert_int_equal(rf_node_cpus(&l), 1); /* the affinity binds */
	l.mem_total_bytes = 1ull << 30;
	assert_int_equal(rf_node_memory(&l), 1ull << 30);
	rf_test_rmtree(root);
	free(root);
}

static void test_v1_hybrid(void **state)
{
	(void)state;
	char *root = rf_test_tmpdir("node-v1");
	char longline[6000];
	memset(longline, 'x', sizeof(longline) - 2);
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	char mountinfo[8192];
	snprintf(mountinfo, sizeof(mountinfo),
	         "%s"
	         "31 30 0:28 / /sys/fs/cgroup/cpu\\040x rw - cgroup cgroup rw,cpu,cpuacct\n"
	         "34 30 0:31 /docker /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	         "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
	         longline);
	put(root, "proc/self/mountinfo", mountinfo);
	put(root, "proc/self/cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/job\n0::/\n");
	put(root, "sys/fs/cgroup/cpu x/job/cpu.cfs_quota_us", "100000\n");
	put(root, "sys/fs/cgroup/cpu x/job/cpu.cfs_period_us", "100000\n");
	put(root, "sys/fs/cgroup/cpu x/cpu.cfs_quota_us", "-1\n");
	put(root, "sys/fs/cgroup/cpu x/cpu.cfs_period_us", "100000\n");
	/* the memory mount shows /docker: the cgroup /docker/abc is its abc */
	put(root, "sys/fs/cgroup/memory/abc/memory.limit_in_bytes", "9223372036854771712\n");
	put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "536870912\n");
	rf_node_limits l;
	rf_node_limits_read(root, &l);
	assert_true(l.quota_cpus > 0.99 && l.quota_cpus < 1.01);
	assert_string_equal(l.quota_from, "cgroup v1 cpu.cfs_quota_us");
	assert_int_equal(l.mem_limit_bytes, 536870912ull);
	l.affinity_cpus = 2;
	assert_int_equal(rf_node_cpus(&l), 1);
	rf_test_rmtree(root);
	free(root);
}

static void test_none(void **state)
{
	(void)state;
	char *root = rf_test_tmpdir("node-none"); /* no /proc files at all */
	rf_node_limits l;
	rf_node_limits_read(root, &l);
	assert_true(l.quota_cpus == 0);
	assert_int_equal(l.mem_limit_bytes, 0);
	rf_test_rmtree(root);
	free(root);
	rf_node_limits_read("", &l); /* the real system: at least one CPU */
	assert_true(rf_node_cpus(&l) >= 1);
	assert_true(l.mem_total_bytes > 0);
}

static void test_threads(void **state)
{
	(void)state;
	rf_config *c = rf_config_new();
	rf_node_limits l = {.affinity_cpus = 2};
	uint32_t t = 0;
	char src[RF_DEFAULTS_SOURCE_BYTES];
	rf_error err = {0};
	unsetenv("LOCAL_WORLD_SIZE");
	assert_int_equal(rf_default_threads(c, &l, &t, src, sizeof(src), &err), 0);
	assert_int_equal(t, 2);
	setenv("LOCAL_WORLD_SIZE", "4", 1); /* 4 ranks on two cores: one each */
	assert_int_equal(rf_default_threads(c, &l, &t, src, sizeof(src), &err), 0);
	assert_int_equal(t, 1);
	assert_non_null(strstr(src, "LOCAL_WORLD_SIZE 4"));
	l.affinity_cpus = 512;
	setenv("LOCAL_WORLD_SIZE", "2", 1);
	assert_int_equal(rf_default_threads(c, &l, &t, src, sizeof(src), &err), 0);
	assert_int_equal(t, RF_THREADS_DEFAULT_MAX);
	l.quota_cpus = 6.5;
	snprintf(l.quota_from, sizeof(l.quota_from), "cgroup v2 cpu.max");
	assert_int_equal(rf_default_threads(c, &l, &t, src, sizeof(src), &err), 0);
	assert_int_equal(t, 3); /* ceil(6.5) / 2 */
	assert_non_null(strstr(src, "cgroup v2 cpu.max 6.50"));
	setenv("LOCAL_WORLD_SIZE", "eight", 1);
	assert_int_equal(rf_default_threads(c, &l, &t, src, sizeof(src), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "LOCAL_WORLD_SIZE='eight'"));
	assert_int_equal(rf_config_set(c, "threads", "5", &err), 0); /* set: kept */
	assert_int_equal(rf_default_threads(c, &l, &t, src, sizeof(src), &err), 0);
	assert_int_equal(t, 5);
	assert_string_equal(src, "set (threads=5)");
	unsetenv("LOCAL_WORLD_SIZE");
	rf_config_free(c);
}

static void test_host_budget(void **state)
{
	(void)state;
	rf_config *c = rf_config_new();
	rf_node_limits l = {.mem_total_bytes = 64ull << 30, .mem_limit_bytes = 8ull << 30};
	snprintf(l.mem_from, sizeof(l.mem_from), "cgroup v2 memory.max");
	rf_host_defaults h;
	rf_error err = {0};
	unsetenv("LOCAL_WORLD_SIZE");
	unsetenv("TORCHELASTIC_RUN_ID");
	unsetenv("MASTER_ADDR");
	unsetenv("MASTER_PORT");
	assert_int_equal(rf_default_host_budget(c, &l, &h, &err), 0);
	assert_int_equal(h.total_bytes, 0); /* none asked for */
	assert_int_equal(rf_config_set(c, "host_budget", "auto", &err), 0);
	assert_int_equal(rf_default_host_budget(c, &l, &h, &err), 0);
	assert_int_equal(h.total_bytes, (8ull << 30) / 100 * RF_HOST_BUDGET_AUTO_PERCENT);
	assert_non_null(strstr(h.source, "auto: 25% of cgroup v2 memory.max 8.0 GiB"));
	assert_string_equal(h.name, "default");
	assert_int_equal(h.loaders, 0);
	setenv("LOCAL_WORLD_SIZE", "8", 1);
	setenv("MASTER_ADDR", "node-1.example:x", 1);
	setenv("MASTER_PORT", "29500", 1);
	assert_int_equal(rf_default_host_budget(c, &l, &h, &err), 0);
	assert_int_equal(h.loaders, 8);
	assert_string_equal(h.name, "job-node-1.example-x-29500");
	assert_int_equal(rf_hostbudget_name_check(h.name, &err), 0);
	char id[200];
	memset(id, 'a', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	setenv("TORCHELASTIC_RUN_ID", id, 1); /* long: a prefix and a hash */
	assert_int_equal(rf_default_host_budget(c, &l, &h, &err), 0);
	assert_true(strlen(h.name) <= RF_HOSTBUDGET_NAME_MAX);
	assert_int_equal(rf_hostbudget_name_check(h.name, &err), 0);
	assert_int_equal(strncmp(h.name, "job-aaaa", 8), 0);
	assert_int_equal(rf_config_set(c, "host_loaders", "3", &err), 0); /* set: kept */
	assert_int_equal(rf_config_set(c, "host_budget_name", "mine", &err), 0);
	assert_int_equal(rf_default_host_budget(c, &l, &h, &err), 0);
	assert_int_equal(h.loaders, 3);
	assert_string_equal(h.name, "mine");
	rf_node_limits none = {0};
	assert_int_equal(rf_default_host_budget(c, &none, &h, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "host_budget=auto"));
	unsetenv("LOCAL_WORLD_SIZE");
	unsetenv("TORCHELASTIC_RUN_ID");
	unsetenv("MASTER_ADDR");
	unsetenv("MASTER_PORT");
	rf_config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v2_nested),   cmocka_unit_test(test_v1_hybrid),
	    cmocka_unit_test(test_none),        cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_host_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
