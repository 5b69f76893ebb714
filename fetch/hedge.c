/* hedge.c - the hedging policy of one store (see hedge.h). */
#include "hedge.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void recompute(rf_hedge_store *s, uint64_t floor_ns)
{
	uint32_t v[RF_HEDGE_WINDOW];
	memcpy(v, s->latency_us, s->n * sizeof(v[0]));
	qsort(v, s->n, sizeof(v[0]), cmp_u32);
	uint64_t p95_ns = (uint64_t)v[(s->n * 95) / 100] * 1000ull;
	s->threshold_ns = RF_MAX(p95_ns, floor_ns);
	s->since_recompute = 0;
}

void rf_hedge_note(rf_hedge_store *s, uint64_t latency_ns, uint64_t floor_ns)
{
	uint64_t us = latency_ns / 1000;
	s->latency_us[s->next] = (uint32_t)RF_MIN(us, (uint64_t)UINT32_MAX);
	s->next = (s->next + 1) % RF_HEDGE_WINDOW;
	s->n = RF_MIN(s->n + 1, (uint32_t)RF_HEDGE_WINDOW);
	s->tokens = RF_MIN(s->tokens + RF_HEDGE_TOKENS_PER_READ, RF_HEDGE_TOKENS_MAX);
	if (s->n >= RF_HEDGE_SAMPLES_MIN &&
	    (s->threshold_ns == 0 || ++s->since_recompute >= RF_HEDGE_RECOMPUTE))
		recompute(s, floor_ns);
}

uint64_t rf_hedge_threshold_ns(const rf_hedge_store *s)
{
	return s->threshold_ns;
}

bool rf_hedge_take(rf_hedge_store *s, uint64_t trouble_count, uint64_t now_ns)
{
	if (trouble_count != s->trouble_seen) {
		s->trouble_seen = trouble_count;
		s->quiet_until_ns = now_ns + RF_HEDGE_QUIET_NS;
	}
	if (now_ns < s->quiet_until_ns || s->tokens < 1.0)
		return false;
	s->tokens -= 1.0;
	return true;
}
