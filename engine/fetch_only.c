/* fetch_only.c - rf_fetch_only: the configured shards read whole through a
 * loop and the fetch layer, nothing decoded (the storage path alone). */
#include "config.h"
#include "drain.h"
#include "engine.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

static int rf_fetch_only_run(const rf_config *cfg, const rf_url_list *objs, rf_fetch_result *out,
                             rf_error *err)
{
	rf_fetch_options fo;
	rf_config_fetch_options(cfg, &fo);
	rf_loop *loop = NULL;
	rf_fetch *f = NULL;
	RF_TRY(rf_fetch_loop_new(&fo, 0, &loop, err));
	int rc = rf_fetch_new(loop, &fo, &f, err);
	rf_drain_report rep = {0};
	if (rc == 0)
		rc = rf_fetch_drain(f, objs, rf_cfg(cfg, RF_CFG_request_size),
		                    RF_MIN(fo.connections, RF_DRAIN_INFLIGHT_MAX), &rep, err);
	if (f) {
		rf_fetch_counters fc;
		rf_fetch_counters_get(f, &fc);
		out->requests = fc.requests;
		out->retries = fc.retries;
		out->direct_bytes = fc.direct_bytes;
		out->direct_refused_files = fc.direct_refused;
		out->fixed_reads = fc.fixed_reads;
		out->fixed_bytes = fc.fixed_bytes;
		out->register_error = fc.register_error;
	}
	if (loop) {
		snprintf(out->io_backend, sizeof(out->io_backend), "%s",
		         rf_loop_backend_name(rf_loop_backend_of(loop)));
		out->io_read_threads = rf_loop_read_threads(loop);
		snprintf(out->io_backend_fallback, sizeof(out->io_backend_fallback), "%s",
		         rf_loop_fallback(loop));
	}
	out->registered_bytes = rep.registered_bytes;
	out->shards = rep.objects;
	out->bytes = rep.bytes;
	out->reads = rep.reads;
	out->seconds = rep.seconds;
	rf_fetch_free(f);
	rf_loop_free(loop);
	return rc;
}

RF_API int rf_fetch_only(const rf_config *cfg, rf_fetch_result *out, rf_error *err)
{
	rf_error_clear(err);
	if (!cfg || !out)
		return rf_fail(err, -EINVAL, "rf_fetch_only: bad arguments");
	memset(out, 0, sizeof(*out));
	rf_shard *shards = NULL;
	uint32_t n = 0;
	RF_TRY(rf_expand_urls(cfg, &shards, &n, err));
	rf_url_list objs = {0};
	int rc = 0;
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		rc = rf_url_list_add(&objs, shards[i].url, shards[i].size_hint, err);
	rf_shards_free(shards, n);
	if (rc == 0)
		rc = rf_fetch_only_run(cfg, &objs, out, err);
	rf_url_list_free(&objs);
	return rc;
}
