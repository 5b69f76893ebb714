/* sim.h - the queue lab's models of the ready inventory (`ringfeed sim`).
 *
 * Fluid model: the producer adds lambda batches/s (0 inside a stall window),
 * the consumer removes mu batches/s while there is inventory; the inventory
 * is clipped at 0 (the consumer waits) and at the capacity (the producer
 * waits). Inside a step the rates are piecewise constant, so the model is
 * integrated exactly, segment by segment, and the time the inventory first
 * empties is solved inside its segment rather than read at a step boundary.
 *
 * Discrete-event model: whole batches whose costs are drawn from a lognormal
 * distribution (mean 1/mu for the consumer, 1/lambda for the producer) over
 * many seeded trials; it shows the spread of the time to first empty around
 * the fluid prediction D / r. */
#ifndef RF_TOOLS_SIM_H
#define RF_TOOLS_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SIM_STALLS_MAX       64
#define SIM_STEPS_MAX        100000 /* points in one fluid series */
#define SIM_STEPS_DEFAULT    1000   /* without --until: stop at empty or here */
#define SIM_TRIALS_MAX       100000
#define SIM_EVENTS_TOTAL_MAX 50000000ull /* over all discrete trials */

typedef struct sim_stall {
	double start_s;
	double dur_s;
} sim_stall;

typedef struct sim_params {
	double lambda_bps; /* producer rate, >= 0 */
	double mu_bps;     /* consumer rate, > 0 */
	double initial;    /* batches ready at t = 0 */
	double capacity;   /* INFINITY when unbounded */
	double step_s;
	double until_s; /* 0: run until empty, at most SIM_STEPS_DEFAULT steps */
	sim_stall stall[SIM_STALLS_MAX];
	size_t stalls;
} sim_params;

typedef struct sim_point {
	double t_s;
	double inventory;
	double wait_s;       /* consumer waiting time in the step ending here */
	double producer_bps; /* producer rate available over the step (stalls count as 0) */
	char event[96];      /* what began or ended in the step ending here */
} sim_point;

typedef struct sim_result {
	sim_point *point; /* points (t = 0 first) */
	size_t points;
	double empty_at_s; /* NAN when it never empties within the run */
} sim_result;

/* Parses "START:DURATION" (seconds). Returns 0 or -EINVAL. */
int sim_parse_stall(const char *text, sim_stall *out);
/* Checks the parameters together; on error writes a message and returns -EINVAL. */
int sim_check(const sim_params *p, char *msg, size_t cap);
/* Number of points the fluid run will produce (t = 0 included). */
size_t sim_fluid_points(const sim_params *p);
/* Runs the fluid model. Allocates out->point; free with sim_result_free. */
int sim_fluid(const sim_params *p, sim_result *out);
void sim_result_free(sim_result *r);
/* Writes the run as a trace (docs/trace.md), one JSON object per point. */
int sim_write_trace(FILE *f, const sim_params *p, const sim_result *r, uint64_t batch_bytes);

typedef struct sim_discrete_params {
	uint64_t trials;
	uint64_t seed;
	double cost_cv;     /* coefficient of variation of a consumer batch cost */
	double producer_cv; /* same for a producer batch */
	double horizon_s;   /* a trial that has not emptied by then counts as "never" */
} sim_discrete_params;

typedef struct sim_discrete_result {
	double *empty_at_s; /* per trial, sorted; INFINITY = never within the horizon */
	uint64_t trials;
	uint64_t never;
	uint64_t before_predicted; /* trials that ran dry before D / r */
	double predicted_s;        /* D / r */
	double mean_s;             /* over the trials that emptied */
	uint64_t events_per_trial_max;
} sim_discrete_result;

/* Runs the discrete-event trials (initial and capacity must be whole). */
int sim_discrete(const sim_params *p, const sim_discrete_params *d, sim_discrete_result *out);
void sim_discrete_free(sim_discrete_result *r);
/* The q-quantile (0..1) by nearest rank over all trials; INFINITY = never. */
double sim_quantile(const sim_discrete_result *r, double q);

#endif
