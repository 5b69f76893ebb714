/* plan_mix.c - `ringfeed plan --mixture FILE`: what a mixture epoch holds,
 * per source (its weight, records a pass, samples an epoch and the passes
 * they make), from a loader opened on the mixture (world 1: the stream
 * before ranks take their slices). The figures are the loader's own
 * (rf_stats_json "sources"), so this page never disagrees with a read. */
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

static int plan_mix_print(const char *stats, bool as_json)
{
	json_error_t je;
	json_t *root = json_loads(stats, 0, &je);
	json_t *src = root ? json_object_get(root, "sources") : NULL;
	json_t *er = root ? json_object_get(root, "epoch_records") : NULL;
	if (!json_is_array(src) || !json_is_integer(er)) {
		fprintf(stderr, "ringfeed plan: the loader gave no mixture figures\n");
		json_decref(root);
		return 1;
	}
	double samples = (double)json_integer_value(er);
	size_t i;
	json_t *s;
	if (as_json)
		printf("{\"epoch_samples\":%.0f,\"sources\":[", samples);
	else
		printf("mixture epoch: %.0f samples\n%-4s %-40s %10s %14s %14s %10s\n", samples,
		       "#", "source", "share", "records/pass", "samples/epoch", "passes");
	json_array_foreach(src, i, s)
	{
		double w = json_real_value(json_object_get(s, "weight"));
		double per = (double)json_integer_value(json_object_get(s, "records_per_pass"));
		double n = samples * w, passes = per > 0 ? n / per : 0;
		const char *name = json_string_value(json_object_get(s, "name"));
		if (as_json) {
			printf("%s{\"source\":%zu,\"name\":", i ? "," : "", i + 1);
			rf_json_fput(stdout, name ? name : "");
			printf(
			    ",\"weight\":%.6f,\"records_per_pass\":%.0f,\"samples_per_epoch\":%.1f,"
			    "\"passes_per_epoch\":%.4f}",
			    w, per, n, passes);
		} else {
			printf("%-4zu %-40.40s %10.6f %14.0f %14.1f %10.4f\n", i + 1,
			       name ? name : "", w, per, n, passes);
		}
	}
	if (as_json)
		printf("]}\n");
	else
		printf("(passes > 1: the source repeats, a fresh order each pass; < 1: it goes on "
		       "where it stopped in the next epoch)\n");
	json_decref(root);
	return 0;
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
	rf_error err = {0};
	rf_config_set(cfg, "world", "1", &err);
	rf_config_set(cfg, "rank", "0", &err);
	rf_loader *l = rf_open(cfg, &err);
	rf_config_free(cfg);
	if (!l) {
		fprintf(stderr, "ringfeed plan: %s\n", err.msg);
		return 1;
	}
	static char stats[1 << 17];
	int n = rf_stats_json(l, stats, sizeof(stats));
	int rc = n > 0 ? plan_mix_print(stats, as_json) : 1;
	rf_close(l);
	return rc;
}
