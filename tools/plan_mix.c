/* plan_mix.c - `ringfeed plan --mixture FILE`: what a mixture epoch holds,
 * per source (its weight, records a pass, samples an epoch and the passes
 * they make), from a loader opened on the mixture (world 1: the stream
 * before ranks take their slices). The figures are the loader's own
 * (rf_stats_json "sources"), so this page never disagrees with a read;
 * `sim --mixture` reads the same figures (plan_mix.h). */
#include "plan_mix.h"
#include "commands.h"
#include "json.h"
#include "loader_opts.h"
#include "ringfeed.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool rf_plan_is_mixture(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--mixture", 9))
			return true;
	return false;
}

static int mix_figures_parse(const char *stats, const char *cmd, rf_mix_figures *out)
{
	json_error_t je;
	json_t *root = json_loads(stats, 0, &je);
	json_t *src = root ? json_object_get(root, "sources") : NULL;
	json_t *er = root ? json_object_get(root, "epoch_records") : NULL;
	if (!json_is_array(src) || !json_is_integer(er) || json_array_size(src) == 0) {
		fprintf(stderr, "ringfeed %s: the loader gave no mixture figures\n", cmd);
		json_decref(root);
		return 1;
	}
	out->epoch_samples = (double)json_integer_value(er);
	out->sources = json_array_size(src);
	out->src = calloc(out->sources, sizeof(*out->src));
	if (!out->src) {
		fprintf(stderr, "ringfeed %s: out of memory\n", cmd);
		json_decref(root);
		return 1;
	}
	size_t i;
	json_t *s;
	json_array_foreach(src, i, s)
	{
		rf_mix_source_fig *f = &out->src[i];
		const char *name = json_string_value(json_object_get(s, "name"));
		snprintf(f->name, sizeof(f->name), "%s", name ? name : "");
		f->weight = json_real_value(json_object_get(s, "weight"));
		f->records_per_pass =
		    (double)json_integer_value(json_object_get(s, "records_per_pass"));
	}
	json_decref(root);
	return 0;
}

int rf_mix_figures_get(rf_config *cfg, const char *cmd, rf_mix_figures *out)
{
	*out = (rf_mix_figures){0};
	rf_error err = {0};
	rf_config_set(cfg, "world", "1", &err);
	rf_config_set(cfg, "rank", "0", &err);
	rf_loader *l = rf_open(cfg, &err);
	if (!l) {
		fprintf(stderr, "ringfeed %s: %s\n", cmd, err.msg);
		return 1;
	}
	static char stats[1 << 17];
	int n = rf_stats_json(l, stats, sizeof(stats));
	int rc = n > 0 ? mix_figures_parse(stats, cmd, out) : 1;
	if (n <= 0)
		fprintf(stderr, "ringfeed %s: the loader's stats do not fit\n", cmd);
	rf_close(l);
	return rc;
}

void rf_mix_figures_free(rf_mix_figures *f)
{
	free(f->src);
	f->src = NULL;
	f->sources = 0;
}

static void plan_mix_print(const rf_mix_figures *fig, bool as_json)
{
	double samples = fig->epoch_samples;
	if (as_json)
		printf("{\"epoch_samples\":%.0f,\"sources\":[", samples);
	else
		printf("mixture epoch: %.0f samples\n%-4s %-40s %10s %14s %14s %10s\n", samples,
		       "#", "source", "share", "records/pass", "samples/epoch", "passes");
	for (size_t i = 0; i < fig->sources; i++) {
		const rf_mix_source_fig *s = &fig->src[i];
		double w = s->weight, per = s->records_per_pass;
		double n = samples * w, passes = per > 0 ? n / per : 0;
		if (as_json) {
			printf("%s{\"source\":%zu,\"name\":", i ? "," : "", i + 1);
			rf_json_fput(stdout, s->name);
			printf(
			    ",\"weight\":%.6f,\"records_per_pass\":%.0f,\"samples_per_epoch\":%.1f,"
			    "\"passes_per_epoch\":%.4f}",
			    w, per, n, passes);
		} else {
			printf("%-4zu %-40.40s %10.6f %14.0f %14.1f %10.4f\n", i + 1, s->name, w,
			       per, n, passes);
		}
	}
	if (as_json)
		printf("]}\n");
	else
		printf("(passes > 1: the source repeats, a fresh order each pass; < 1: it goes on "
		       "where it stopped in the next epoch)\n");
}

int rf_plan_mixture(int argc, char **argv)
{
	rf_config *cfg = rf_config_new();
	bool as_json = false;
	if (!cfg)
		return 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			as_json = true;
			continue;
		}
		int used = rf_cli_loader_flag(cfg, argc, argv, i, "plan");
		if (used <= 0) {
			if (used == 0)
				fprintf(stderr,
				        "ringfeed plan --mixture: unknown option '%s' (loader "
				        "options and "
				        "--json)\n",
				        argv[i]);
			rf_config_free(cfg);
			return 2;
		}
		i += used - 1;
	}
	rf_mix_figures fig;
	int rc = rf_mix_figures_get(cfg, "plan", &fig);
	rf_config_free(cfg);
	if (rc == 0)
		plan_mix_print(&fig, as_json);
	rf_mix_figures_free(&fig);
	return rc;
}
