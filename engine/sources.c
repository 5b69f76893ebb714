/* sources.c - a mixture's sources at open (issue 25): the mixture file read
 * into the config, the stop rule checked, each source's shards expanded
 * (source k holds shards [src_first[k], src_first[k + 1])), and the plans
 * the scheduler and the collator make of them (a mixture's plan, or one
 * dataset's). */
#include "engine.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

int rf_engine_plan_new(const rf_engine *e, const rf_plan_params *pp, rf_plan **out, rf_error *err)
{
	if (e->nsources == 0)
		return rf_plan_new(pp, e->indexes, e->nshards, out, err);
	const char *stop = rf_cfg_str(e->cfg, RF_CFG_mix_stop);
	rf_plan_mix_params mp = {.sources = e->nsources,
	                         .first = e->src_first,
	                         .weight = e->cfg->src_weight,
	                         .samples = rf_cfg(e->cfg, RF_CFG_mix_samples),
	                         .stop_first = stop && !strcmp(stop, "first_exhausted")};
	return rf_plan_new_mix(pp, e->indexes, e->nshards, &mp, out, err);
}

/* A mixture's sources: the file read, the stop rule checked, each source's
 * shards found. */
int rf_open_sources(rf_engine *e, rf_error *err) RF_ALONE
{
	RF_TRY(rf_mixture_load(e->cfg, err));
	const char *stop = rf_cfg_str(e->cfg, RF_CFG_mix_stop);
	if (stop && strcmp(stop, "none") && strcmp(stop, "first_exhausted"))
		return rf_fail(err, -EINVAL, "mix_stop '%.40s': none or first_exhausted", stop);
	e->nsources = e->cfg->nsources;
	if (e->nsources == 0)
		return rf_expand_urls(e->cfg, &e->shards, &e->nshards, err);
	if (e->cfg->src_url[e->nsources - 1] == e->cfg->nurls)
		return rf_fail(err, -EINVAL, "mixture source %u has no URLs", e->nsources);
	e->src_first = calloc(e->nsources + 1, sizeof(*e->src_first));
	if (!e->src_first)
		return rf_fail(err, -ENOMEM, "out of memory");
	return rf_expand_sources(e->cfg, &e->shards, &e->nshards, e->src_first, err);
}
