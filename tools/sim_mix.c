/* sim_mix.c - `ringfeed sim --mixture FILE` (sim_mix.h): the mixture's
 * figures, each source's rate and stalls turned into the one producer the
 * queue models see, and which source the consumer waited on. */
#include "sim_mix.h"
#include "flags.h"
#include "json.h"
#include "loader_opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool sim_mix_wanted(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--mixture") || !strncmp(argv[i], "--mixture=", 10))
			return true;
	return false;
}

/* The loader's default records a batch, from its option table. */
static uint64_t default_batch(void)
{
	for (const char *k = rf_config_keys(); *k; k += strlen(k) + 1) {
		const char *help = k + strlen(k) + 1;
		const char *d = strstr(help, "(default: ");
		if (!strcmp(k, "batch") && d)
			return strtoull(d + 10, NULL, 10);
		k = help;
	}
	return 64;
}

int sim_mix_init(sim_mix *m)
{
	*m = (sim_mix){.batch = default_batch()};
	m->cfg = rf_config_new();
	return m->cfg ? 0 : -ENOMEM;
}

void sim_mix_free(sim_mix *m)
{
	rf_config_free(m->cfg);
	rf_mix_figures_free(&m->fig);
	free(m->src_bps);
	*m = (sim_mix){0};
}

int sim_mix_loader_flag(sim_mix *m, int argc, char **argv, int i)
{
	int used = rf_cli_loader_flag(m->cfg, argc, argv, i, "sim");
	if (used > 0 && !strncmp(argv[i], "--batch", 7) &&
	    (argv[i][7] == '\0' || argv[i][7] == '=')) /* checked by the config */
		m->batch = strtoull(argv[i][7] == '=' ? argv[i] + 8 : argv[i + 1], NULL, 10);
	return used;
}

/* "K:" at the head of arg: the source number, and the text after it. */
static bool source_prefix(const char *flag, const char *arg, uint32_t *k, const char **rest)
{
	char *end = NULL;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || errno || end == arg || *end != ':' || v == 0 ||
	    v > 1u << 20) {
		flag_usage_error("sim",
		                 "%s: '%s' does not start with a source number (1, 2, ...) "
		                 "and ':'",
		                 flag, arg);
		return false;
	}
	*k = (uint32_t)v;
	*rest = end + 1;
	return true;
}

bool sim_mix_source_lambda(sim_mix *m, const char *arg)
{
	if (m->nrates == SIM_SOURCE_RATES_MAX) {
		flag_usage_error("sim", "--source-lambda: at most %d", SIM_SOURCE_RATES_MAX);
		return false;
	}
	sim_mix_rate r;
	const char *rest;
	if (!source_prefix("--source-lambda", arg, &r.source, &rest) ||
	    !flag_double("sim", "--source-lambda", rest, 0, 1e9, &r.bps))
		return false;
	for (size_t i = 0; i < m->nrates; i++)
		if (m->rate[i].source == r.source) {
			flag_usage_error("sim", "--source-lambda: source %u given twice", r.source);
			return false;
		}
	m->rate[m->nrates++] = r;
	return true;
}

bool sim_mix_source_stall(sim_mix *m, sim_params *p, const char *arg)
{
	uint32_t k;
	const char *rest;
	if (!source_prefix("--source-stall", arg, &k, &rest))
		return false;
	if (p->stalls >= SIM_STALLS_MAX) {
		flag_usage_error("sim", "--stall and --source-stall: at most %d windows",
		                 SIM_STALLS_MAX);
		return false;
	}
	if (sim_parse_stall(rest, &p->stall[p->stalls]) < 0) {
		flag_usage_error("sim",
		                 "--source-stall: '%s' is not K:START:DURATION (seconds, start >= "
		                 "0, duration > 0)",
		                 arg);
		return false;
	}
	m->stall_source[p->stalls++] = k;
	return true;
}

/* The mixture's producer rate: the least of --lambda and every source's
 * rate over its share. */
static void mix_rate(sim_mix *m, sim_params *p, bool have_lambda)
{
	double best = have_lambda ? p->lambda_bps : INFINITY;
	m->limited_by = 0;
	for (size_t k = 0; k < m->fig.sources; k++) {
		double w = m->fig.src[k].weight;
		if (w <= 0 || isinf(m->src_bps[k]))
			continue;
		double carries = m->src_bps[k] / w;
		if (carries < best) {
			best = carries;
			m->limited_by = (uint32_t)k + 1;
		}
	}
	m->lambda_bps = isinf(best) ? 0 : best; /* no rate at all: sim's default, 0 */
	p->lambda_bps = m->lambda_bps;
}

int sim_mix_resolve(sim_mix *m, sim_params *p, bool have_lambda)
{
	if (rf_mix_figures_get(m->cfg, "sim", &m->fig) != 0)
		return 1;
	size_t n = m->fig.sources;
	for (size_t i = 0; i < m->nrates; i++)
		if (m->rate[i].source > n)
			return flag_usage_error("sim",
			                        "--source-lambda: source %u, the mixture has %zu",
			                        m->rate[i].source, n);
	for (size_t i = 0; i < p->stalls; i++)
		if (m->stall_source[i] > n)
			return flag_usage_error("sim",
			                        "--source-stall: source %u, the mixture has %zu",
			                        m->stall_source[i], n);
	m->src_bps = malloc(n * sizeof(*m->src_bps));
	if (!m->src_bps) {
		fprintf(stderr, "ringfeed sim: out of memory\n");
		return 1;
	}
	for (size_t k = 0; k < n; k++)
		m->src_bps[k] = INFINITY;
	for (size_t i = 0; i < m->nrates; i++)
		m->src_bps[m->rate[i].source - 1] = m->rate[i].bps;
	mix_rate(m, p, have_lambda);
	return 0;
}

uint32_t sim_mix_waited_on(const sim_mix *m, const sim_params *p, double t)
{
	if (isnan(t))
		return 0;
	for (size_t i = 0; i < p->stalls; i++) {
		double a = p->stall[i].start_s, b = a + p->stall[i].dur_s;
		/* the stall in effect when the inventory ran out (at or just before t) */
		if (m->stall_source[i] && a <= t && t <= b)
			return m->stall_source[i];
	}
	return m->lambda_bps < p->mu_bps ? m->limited_by : 0;
}

static double epoch_batches(const sim_mix *m)
{
	return ceil(m->fig.epoch_samples / (double)m->batch);
}

void sim_mix_print_text(const sim_mix *m, const sim_params *p, double empty_at_s)
{
	printf("mixture: %zu sources, an epoch of %.0f samples = %.0f batches of %llu (%.6g s at "
	       "mu); producer %g batches/s",
	       m->fig.sources, m->fig.epoch_samples, epoch_batches(m), (unsigned long long)m->batch,
	       epoch_batches(m) / p->mu_bps, m->lambda_bps);
	if (m->limited_by)
		printf(", set by source %u", m->limited_by);
	printf("\n%-4s %-36s %9s %13s %12s %12s %7s\n", "#", "source", "share", "samples/epoch",
	       "lambda_bps", "carries_bps", "stalls");
	for (size_t k = 0; k < m->fig.sources; k++) {
		const rf_mix_source_fig *s = &m->fig.src[k];
		size_t stalls = 0;
		for (size_t i = 0; i < p->stalls; i++)
			stalls += m->stall_source[i] == k + 1;
		double carries = s->weight > 0 ? m->src_bps[k] / s->weight : INFINITY;
		printf("%-4zu %-36.36s %9.6f %13.1f %12g %12g %7zu\n", k + 1, s->name, s->weight,
		       m->fig.epoch_samples * s->weight, m->src_bps[k], carries, stalls);
	}
	uint32_t w = sim_mix_waited_on(m, p, empty_at_s);
	if (!isnan(empty_at_s))
		printf("first empty at %.6g s: waited on %s%.0u\n", empty_at_s,
		       w ? "source " : "the producer (no one source)", w);
}

void sim_mix_print_json(const sim_mix *m, const sim_params *p, double empty_at_s)
{
	printf(",\"mixture\":{\"epoch_samples\":%.0f,\"batch\":%llu,\"epoch_batches\":%.0f,"
	       "\"lambda_bps\":%.15g,\"limited_by\":",
	       m->fig.epoch_samples, (unsigned long long)m->batch, epoch_batches(m), m->lambda_bps);
	if (m->limited_by)
		printf("%u", m->limited_by);
	else
		printf("null");
	uint32_t w = sim_mix_waited_on(m, p, empty_at_s);
	printf(",\"waited_on\":");
	if (w)
		printf("%u", w);
	else
		printf("null");
	printf(",\"sources\":[");
	for (size_t k = 0; k < m->fig.sources; k++) {
		const rf_mix_source_fig *s = &m->fig.src[k];
		size_t stalls = 0;
		for (size_t i = 0; i < p->stalls; i++)
			stalls += m->stall_source[i] == k + 1;
		printf("%s{\"source\":%zu,\"name\":", k ? "," : "", k + 1);
		rf_json_fput(stdout, s->name);
		printf(",\"weight\":%.6f,\"records_per_pass\":%.0f,\"samples_per_epoch\":%.1f,"
		       "\"lambda_bps\":",
		       s->weight, s->records_per_pass, m->fig.epoch_samples * s->weight);
		json_number(stdout, m->src_bps[k]);
		printf(",\"carries_bps\":");
		json_number(stdout, s->weight > 0 ? m->src_bps[k] / s->weight : INFINITY);
		printf(",\"stalls\":%zu}", stalls);
	}
	printf("]}");
}
