/* defaults.c - node-aware defaults (defaults.h): decode threads from the
 * CPUs this process may use and the local ranks; the host budget's size,
 * loaders and name from the node's memory and torchrun's environment. */
#include "defaults.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define RF_FNV1A_SEED 0xcbf29ce484222325ull

int rf_local_world(uint32_t *out, rf_error *err)
{
	const char *v = getenv("LOCAL_WORLD_SIZE");
	*out = 1;
	if (!v || !*v)
		return 0;
	char *end;
	unsigned long n = strtoul(v, &end, 10);
	if (*v < '0' || *v > '9' || *end || n < 1 || n > RF_LOCAL_WORLD_MAX)
		return rf_fail(err, -EINVAL,
		               "LOCAL_WORLD_SIZE='%.20s' is not a number of local ranks (1..%u)", v,
		               RF_LOCAL_WORLD_MAX);
	*out = (uint32_t)n;
	return 0;
}

int rf_default_threads(const rf_config *c, const rf_node_limits *node, uint32_t *threads,
                       char *source, size_t cap, rf_error *err)
{
	uint32_t set = (uint32_t)rf_cfg(c, RF_CFG_threads);
	if (set > 0) {
		*threads = set;
		snprintf(source, cap, "set (threads=%u)", set);
		return 0;
	}
	uint32_t local = 1;
	RF_TRY(rf_local_world(&local, err));
	uint32_t cpus = rf_node_cpus(node);
	*threads = RF_MAX(1u, RF_MIN(cpus / local, RF_THREADS_DEFAULT_MAX));
	char quota[96] = "";
	if (node->quota_cpus > 0)
		snprintf(quota, sizeof(quota), ", %s %.2f", node->quota_from, node->quota_cpus);
	snprintf(source, cap, "%u CPUs usable (affinity %u%s) / LOCAL_WORLD_SIZE %u", cpus,
	         node->affinity_cpus, quota, local);
	return 0;
}

/* A host budget name from the job: TORCHELASTIC_RUN_ID (torchrun's, not its
 * "none"), else MASTER_ADDR:MASTER_PORT; characters outside [A-Za-z0-9._-]
 * become '-', and a long one keeps a prefix and a hash. false: no job. */
static bool rf_job_name(char *out, size_t cap)
{
	const char *id = getenv("TORCHELASTIC_RUN_ID");
	const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
	char raw[512];
	if (id && *id && strcmp(id, "none") != 0)
		snprintf(raw, sizeof(raw), "job-%s", id);
	else if (addr && *addr && port && *port)
		snprintf(raw, sizeof(raw), "job-%s-%s", addr, port);
	else
		return false;
	for (char *p = raw; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			*p = '-';
	size_t len = strlen(raw);
	if (len < cap && len <= RF_HOSTBUDGET_NAME_MAX) {
		memcpy(out, raw, len + 1);
		return true;
	}
	uint64_t h = rf_fnv1a(RF_FNV1A_SEED, raw, len);
	snprintf(out, cap, "%.*s-%016llx", (int)RF_MIN(cap, (size_t)RF_HOSTBUDGET_NAME_MAX) - 18,
	         raw, (unsigned long long)h);
	return true;
}

static void rf_host_total(const rf_config *c, const rf_node_limits *node, rf_host_defaults *out)
{
	uint64_t set = rf_cfg(c, RF_CFG_host_budget);
	out->total_bytes = set;
	if (set != RF_HOST_BUDGET_AUTO) {
		snprintf(out->source, sizeof(out->source), "set");
		return;
	}
	uint64_t mem = rf_node_memory(node);
	out->total_bytes = mem / 100 * RF_HOST_BUDGET_AUTO_PERCENT;
	char b[24];
	snprintf(out->source, sizeof(out->source), "auto: %u%% of %s %s",
	         RF_HOST_BUDGET_AUTO_PERCENT,
	         node->mem_limit_bytes && node->mem_limit_bytes <= mem ? node->mem_from
	                                                               : "physical memory",
	         rf_fmt_bytes(mem, b, sizeof(b)));
}

int rf_default_host_budget(const rf_config *c, const rf_node_limits *node, rf_host_defaults *out,
                           rf_error *err)
{
	memset(out, 0, sizeof(*out));
	if (rf_cfg(c, RF_CFG_host_budget) == 0)
		return 0;
	rf_host_total(c, node, out);
	if (out->total_bytes < (1ull << 20))
		return rf_fail(err, -EINVAL,
		               "host_budget=auto: the memory this process may use is unknown or "
		               "below 1 MiB (%s); set host_budget to a size",
		               out->source);
	uint32_t local = 1;
	RF_TRY(rf_local_world(&local, err));
	const char *name = rf_cfg_str(c, RF_CFG_host_budget_name);
	out->loaders = (uint32_t)rf_cfg(c, RF_CFG_host_loaders);
	snprintf(out->name, sizeof(out->name), "%s", name ? name : "default");
	size_t l = strlen(out->source);
	if (local > 1 && !c->set[RF_CFG_host_loaders]) {
		out->loaders = local;
		snprintf(out->source + l, sizeof(out->source) - l,
		         "; loaders %u from LOCAL_WORLD_SIZE", local);
		l = strlen(out->source);
	}
	if (local > 1 && !c->set[RF_CFG_host_budget_name] &&
	    rf_job_name(out->name, sizeof(out->name)))
		snprintf(out->source + l, sizeof(out->source) - l, "; name from the job");
	return 0;
}
