/* sim_mix.h - `ringfeed sim --mixture FILE`: the queue lab fed by a
 * mixture. The mixture's figures come from a loader opened on it (as
 * `plan --mixture`: plan_mix.h); each source may have its own producer
 * rate (--source-lambda K:RATE, batches/s that source alone delivers) and
 * its own stalls (--source-stall K:START:DUR). The mixture stream needs
 * every source of weight > 0 in every prefix (within one sample of its
 * share), so source k alone carries at most RATE_k / w_k mixture
 * batches/s: the producer runs at the least of these (and --lambda), and
 * a source's stall stalls the whole producer. Uses only ringfeed.h. */
#ifndef RF_TOOLS_SIM_MIX_H
#define RF_TOOLS_SIM_MIX_H

#include "plan_mix.h"
#include "ringfeed.h"
#include "sim.h"

#include <stdbool.h>
#include <stdint.h>

#define SIM_SOURCE_RATES_MAX 64 /* --source-lambda flags */

typedef struct sim_mix_rate {
	uint32_t source; /* 1-based */
	double bps;
} sim_mix_rate;

typedef struct sim_mix {
	rf_config *cfg; /* --mixture FILE and the other loader options */
	uint64_t batch; /* records a batch: --batch, else the loader's default */
	size_t nrates;
	sim_mix_rate rate[SIM_SOURCE_RATES_MAX];
	/* per sim stall window: 0 the producer's own (--stall), k source k's */
	uint32_t stall_source[SIM_STALLS_MAX];
	/* after sim_mix_resolve */
	rf_mix_figures fig;
	double *src_bps;     /* per source: its rate, INFINITY when not given */
	double lambda_bps;   /* the mixture producer's rate */
	uint32_t limited_by; /* the source whose rate sets it (0: --lambda, or none) */
} sim_mix;

/* True when argv has --mixture. */
bool sim_mix_wanted(int argc, char **argv);
int sim_mix_init(sim_mix *m);
void sim_mix_free(sim_mix *m);
/* argv[i] as a loader option: the arguments used (1, 2), 0 when it is
 * none, -1 after printing an error. */
int sim_mix_loader_flag(sim_mix *m, int argc, char **argv, int i);
/* --source-lambda K:RATE and --source-stall K:START:DUR (into p's stall
 * windows); false after printing an error. */
bool sim_mix_source_lambda(sim_mix *m, const char *arg);
bool sim_mix_source_stall(sim_mix *m, sim_params *p, const char *arg);
/* Opens the mixture, checks the source numbers, sets p->lambda_bps (with
 * have_lambda, --lambda bounds it). Returns 0, or an exit code (printed). */
int sim_mix_resolve(sim_mix *m, sim_params *p, bool have_lambda);
/* The source the consumer waited on at its first empty (t): the source
 * whose stall covers t, else the source limiting the producer when it is
 * slower than the consumer; 0: none (the producer's own stall or rate). */
uint32_t sim_mix_waited_on(const sim_mix *m, const sim_params *p, double t);
void sim_mix_print_text(const sim_mix *m, const sim_params *p, double empty_at_s);
/* ,"mixture":{...} for the JSON object being printed */
void sim_mix_print_json(const sim_mix *m, const sim_params *p, double empty_at_s);

#endif
