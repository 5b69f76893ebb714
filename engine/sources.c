/* sources.c - a mixture's sources at open (issue 25): the mixture file read
 * into the config, the stop rule checked, each source's own format options
 * parsed (its optset over the loader's), each source's shards expanded
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
	                         .stop_first = stop && !strcmp(stop, "first_exhausted"),
	                         .windows = e->mix_windows};
	return rf_plan_new_mix(pp, e->indexes, e->nshards, &mp, out, err);
}

/* Each source's own format options (only sources that set some get a
 * set; the rest open with the loader's). */
static int rf_sources_options(rf_engine *e, rf_error *err)
{
	if (e->cfg->nsrc_opts == 0)
		return 0;
	e->src_fmt_opts = calloc(e->nsources, sizeof(*e->src_fmt_opts));
	if (!e->src_fmt_opts)
		return rf_fail(err, -ENOMEM, "out of memory");
	for (uint32_t k = 0; k < e->nsources; k++) {
		int rc = rf_config_source_format_options(e->cfg, k, &e->src_fmt_opts[k], err);
		if (rc < 0 && err) {
			char inner[sizeof(err->msg)];
			snprintf(inner, sizeof(inner), "%s", err->msg);
			return rf_fail(err, rc, "mixture source %u: %s", k + 1, inner);
		}
		RF_TRY(rc);
	}
	return 0;
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
	RF_TRY(rf_sources_options(e, err));
	return rf_expand_sources(e->cfg, &e->shards, &e->nshards, e->src_first, err);
}

const rf_fmt_optset *rf_shard_fmt_opts(const rf_shard *s)
{
	const rf_engine *e = s->engine;
	if (!e->src_fmt_opts)
		return e->fmt_opts;
	uint32_t lo = 0, hi = e->nsources; /* the k with src_first[k] <= idx < src_first[k + 1] */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (e->src_first[mid] <= s->idx)
			lo = mid;
		else
			hi = mid;
	}
	return e->src_fmt_opts[lo] ? e->src_fmt_opts[lo] : e->fmt_opts;
}

void rf_sources_free(rf_engine *e)
{
	for (uint32_t k = 0; e->src_fmt_opts && k < e->nsources; k++)
		rf_fmt_optset_free(e->src_fmt_opts[k]);
	free(e->src_fmt_opts);
	e->src_fmt_opts = NULL;
	free(e->src_first);
	e->src_first = NULL;
}

/* A source's record shape, in words: "samples with fields a,b",
 * "token windows of N+1 DTYPE" (a token format's windows, from its index's
 * metadata), or "records of bytes". A source's first shard speaks for it
 * (inside one dataset, WebDataset samples may lack a field). */
static void rf_source_shape(const rf_shard *sh, char *out, size_t cap)
{
	if (sh->fmt->field_names) {
		const char *const *nm;
		uint32_t k = sh->fmt->field_names(sh->fmt_priv, &nm);
		/* the names sorted (by selection: k is bounded by RF_FIELDS_MAX) */
		size_t at = (size_t)snprintf(out, cap, "samples with fields ");
		const char *last = NULL;
		for (uint32_t n = 0; n < k && at < cap; n++) {
			const char *best = NULL;
			for (uint32_t j = 0; j < k; j++)
				if ((!last || strcmp(nm[j], last) > 0) &&
				    (!best || strcmp(nm[j], best) < 0))
					best = nm[j];
			if (!best)
				break;
			at += (size_t)snprintf(out + at, cap - at, "%s%.64s", n ? "," : "", best);
			last = best;
		}
		return;
	}
	const char *m = sh->index->metadata ? sh->index->metadata : "";
	const char *sl = strstr(m, "\"seq_len\":"), *wd = strstr(m, "\"window_dtype\":\"");
	if (sl && wd) {
		unsigned long len = strtoul(sl + 10, NULL, 10);
		const char *d = wd + 16, *e = strchr(d, '"');
		snprintf(out, cap, "token windows of %lu+1 %.*s", len,
		         e ? (int)RF_MIN(e - d, 16) : 0, d);
		return;
	}
	snprintf(out, cap, "records of bytes");
}

int rf_sources_check(const rf_engine *e, rf_error *err)
{
	if (e->nsources == 0)
		return 0;
	char first[512], shape[512];
	uint32_t fs = e->src_first[0];
	rf_source_shape(&e->shards[fs], first, sizeof(first));
	for (uint32_t k = 1; k < e->nsources; k++) {
		uint32_t i = e->src_first[k]; /* a source's first shard speaks for it */
		rf_source_shape(&e->shards[i], shape, sizeof(shape));
		if (strcmp(shape, first) != 0)
			return rf_fail(
			    err, -EINVAL,
			    "mixture sources 1 and %u differ in their records: shard %s "
			    "(source 1) has %s, shard %s (source %u) has %s (a mixture's "
			    "sources must have the same record shape: the same fields, or "
			    "token windows of the same length and dtype)",
			    k + 1, e->shards[fs].name, first, e->shards[i].name, k + 1, shape);
	}
	return 0;
}
