/* defaults.h - node-aware defaults: what a loader takes from its node and
 * its job when the config leaves a setting open. threads: the CPUs this
 * process may use (affinity, cgroup quota; base/node.h) divided by the local
 * ranks (LOCAL_WORLD_SIZE, as torchrun exports it), 1..64. The host budget:
 * host_budget=auto (RF_HOST_BUDGET_AUTO) is RF_HOST_BUDGET_AUTO_PERCENT of the memory this process
 * may use (cgroup limit, else the machine's); with LOCAL_WORLD_SIZE > 1 and
 * a host budget, host_loaders defaults to it and host_budget_name to one
 * derived from the job (TORCHELASTIC_RUN_ID, else MASTER_ADDR:MASTER_PORT).
 * Each says where its value came from, for the stats. Internal. */
#ifndef RF_DEFAULTS_H
#define RF_DEFAULTS_H

#include "config.h"
#include "hostbudget.h"
#include "node.h"

#define RF_THREADS_DEFAULT_MAX      64u
#define RF_HOST_BUDGET_AUTO_PERCENT 25u
#define RF_LOCAL_WORLD_MAX          65536u
#define RF_DEFAULTS_SOURCE_BYTES    160u

typedef struct rf_host_defaults {
	uint64_t total_bytes; /* 0: no host budget */
	uint32_t loaders;
	char name[RF_HOSTBUDGET_NAME_MAX + 1];
	char source[RF_DEFAULTS_SOURCE_BYTES]; /* "" when there is none */
} rf_host_defaults;

/* LOCAL_WORLD_SIZE: 1 when unset; -EINVAL naming it when not 1..65536. */
int rf_local_world(uint32_t *out, rf_error *err);
/* The decode threads and where the number came from. */
int rf_default_threads(const rf_config *c, const rf_node_limits *node, uint32_t *threads,
                       char *source, size_t cap, rf_error *err);
int rf_default_host_budget(const rf_config *c, const rf_node_limits *node, rf_host_defaults *out,
                           rf_error *err);

#endif
