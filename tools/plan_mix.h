/* plan_mix.h - a mixture's figures as the loader states them (epoch
 * samples, each source's share and records a pass), for `plan --mixture`
 * and `sim --mixture`: both read them from one loader opened on the
 * mixture, so neither disagrees with a read. Uses only ringfeed.h. */
#ifndef RF_TOOLS_PLAN_MIX_H
#define RF_TOOLS_PLAN_MIX_H

#include "ringfeed.h"
#include <stddef.h>

typedef struct rf_mix_source_fig {
	char name[512];          /* as the stats show it (redacted) */
	double weight;           /* its share of the stream (the weights normalized) */
	double records_per_pass; /* its records, one pass */
} rf_mix_source_fig;

typedef struct rf_mix_figures {
	double epoch_samples; /* samples a mixture epoch */
	size_t sources;
	rf_mix_source_fig *src;
} rf_mix_figures;

/* Opens a loader on cfg (set to world 1, rank 0: the stream before ranks
 * take their slices) and reads its figures. On failure prints
 * "ringfeed CMD: ..." and returns 1. */
int rf_mix_figures_get(rf_config *cfg, const char *cmd, rf_mix_figures *out);
void rf_mix_figures_free(rf_mix_figures *f);

#endif
