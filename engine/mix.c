/* mix.c - the source schedule of a mixture (see mix.h): weights reduced to
 * integers over a period, the greedy-largest-deficit order inside a period,
 * checkpoints of the per-source counts every `stride` samples of a period for
 * random access, and weight changes as segments of the stream. Pure: no I/O,
 * no threads, no clocks. */
#include "mix.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Checkpoint entries (period checkpoints x sources) one weight set holds. */
#define MIX_CP_ENTRIES (1u << 16)
#define MIX_STRIDE_MIN 64u

typedef struct mix_seg {
	uint64_t start;  /* the first sample of this weight set */
	uint64_t *base;  /* per source: samples before start */
	uint32_t *w;     /* per source: integer weight W_k */
	uint32_t *cp;    /* ncp x k: counts at period positions j * stride */
	uint32_t period; /* T = sum of W_k */
	uint32_t stride;
	uint32_t ncp;
} mix_seg;

struct rf_mix {
	uint32_t k, nseg, cap;
	uint64_t bytes;
	uint64_t *scratch; /* k entries, for rf_mix_source (not thread-safe) */
	mix_seg seg[];
};

int rf_mix_weight_parse(const char *s, const char *what, uint64_t *millionths, rf_error *err)
{
	const char *p = s;
	uint64_t whole = 0, frac = 0;
	unsigned digits = 0, fdigits = 0;
	if (!s || !*s)
		return rf_fail(err, -EINVAL, "%s: a weight is empty", what);
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > RF_MIX_WEIGHT_MAX / RF_MIX_WEIGHT_SCALE)
			return rf_fail(
			    err, -ERANGE, "%s: weight '%.40s' is larger than %llu", what, s,
			    (unsigned long long)(RF_MIX_WEIGHT_MAX / RF_MIX_WEIGHT_SCALE));
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, fdigits++) {
			if (fdigits == 6) {
				if (*p != '0')
					return rf_fail(err, -EINVAL,
					               "%s: weight '%.40s' has more than 6 decimal "
					               "places (weights are exact to millionths)",
					               what, s);
				fdigits--; /* trailing zeros past the 6th are harmless */
				continue;
			}
			frac = frac * 10 + (uint64_t)(*p - '0');
		}
	}
	if (*p != '\0' || digits + fdigits == 0)
		return rf_fail(
		    err, -EINVAL,
		    "%s: weight '%.40s' is not a plain decimal number (such as 0.25 or 3)", what,
		    s);
	for (; fdigits < 6; fdigits++)
		frac *= 10;
	*millionths = whole * RF_MIX_WEIGHT_SCALE + frac;
	return 0;
}

uint32_t rf_mix_period_max(uint32_t k)
{
	uint64_t p = RF_MIX_WORK_MAX / (k ? k : 1);
	return (uint32_t)RF_MIN(p, (uint64_t)RF_MIX_PERIOD_LIMIT);
}

static uint32_t mix_ncp_max(uint32_t k)
{
	return RF_MAX(MIX_CP_ENTRIES / k, 1u);
}

static uint64_t mix_seg_bytes(uint32_t k)
{
	/* base + w, and at most mix_ncp_max(k) checkpoints of k counts */
	return (uint64_t)k * (sizeof(uint64_t) + sizeof(uint32_t)) +
	       (uint64_t)mix_ncp_max(k) * k * sizeof(uint32_t);
}

uint64_t rf_mix_bytes_for(uint32_t k, uint32_t segments)
{
	return sizeof(rf_mix) + (uint64_t)segments * (sizeof(mix_seg) + mix_seg_bytes(k)) +
	       (uint64_t)k * sizeof(uint64_t);
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Integer weights with a period of at most rf_mix_period_max(k). */
static int mix_reduce(uint32_t k, const uint64_t *w, uint32_t *out, uint32_t *period, rf_error *err)
{
	uint64_t sum = 0, g = 0;
	for (uint32_t i = 0; i < k; i++) {
		if (w[i] > RF_MIX_WEIGHT_MAX)
			return rf_fail(err, -ERANGE, "mixture: source %u's weight is too large", i);
		sum += w[i];
		g = gcd64(g, w[i]);
	}
	if (sum == 0)
		return rf_fail(err, -EINVAL,
		               "mixture: every weight is 0 (at least one must be > 0)");
	uint64_t t = sum / g, pmax = rf_mix_period_max(k);
	if (t <= pmax) {
		for (uint32_t i = 0; i < k; i++)
			out[i] = (uint32_t)(w[i] / g);
		*period = (uint32_t)t;
		return 0;
	}
	/* Largest remainders onto pmax; a positive weight must keep a share. */
	uint64_t given = 0;
	for (uint32_t i = 0; i < k; i++) {
		unsigned __int128 x = (unsigned __int128)w[i] * pmax;
		out[i] = (uint32_t)(x / sum);
		given += out[i];
	}
	while (given < pmax) {
		uint32_t best = 0;
		uint64_t best_rem = 0;
		bool found = false;
		for (uint32_t i = 0; i < k; i++) {
			unsigned __int128 x = (unsigned __int128)w[i] * pmax;
			uint64_t rem = (uint64_t)(x % sum);
			/* a remainder already rounded up counts as used */
			if ((uint64_t)out[i] * sum > (uint64_t)(x - rem))
				continue;
			if (!found || rem > best_rem) {
				best = i, best_rem = rem, found = true;
			}
		}
		out[best]++;
		given++;
	}
	for (uint32_t i = 0; i < k; i++)
		if (w[i] > 0 && out[i] == 0)
			return rf_fail(
			    err, -ERANGE,
			    "mixture: source %u's weight is less than 1/%llu of the sum; "
			    "with %u sources a weight's share must be at least that",
			    i, (unsigned long long)pmax, k);
	uint64_t g2 = 0;
	for (uint32_t i = 0; i < k; i++)
		g2 = gcd64(g2, out[i]);
	for (uint32_t i = 0; i < k; i++)
		out[i] = (uint32_t)(out[i] / g2);
	*period = (uint32_t)(pmax / g2);
	return 0;
}

/* One step inside a period: the source of the sample at period position pos
 * (step pos + 1) given the counts before it. Earliest deadline first: source
 * i's next sample (its c+1-th) may come once c < W_i (pos+1) / T (else its
 * count would run 1 past its share) and must come by step ceil((c+1) T / W_i)
 * (else it would fall 1 behind); of the sources whose next sample may come,
 * the earliest deadline wins, the lowest index on a tie. A schedule within 1
 * exists for any weights (Tijdeman's chairman assignment theorem, 1980), and
 * EDF meets every deadline whenever any schedule does, so every prefix stays
 * within 1. (Megatron's greedy largest-error rule does not: the tests found a
 * prefix 1.03 behind with it.) Some source may always come: their counts sum
 * to pos, so not all of them can be at or past their share. */
#define MIX_PICK(name, ctype)                                                                      \
	static uint32_t name(const uint32_t *w, uint32_t k, uint32_t period, uint32_t pos,         \
	                     const ctype *local)                                                   \
	{                                                                                          \
		uint32_t best = 0;                                                                 \
		uint64_t best_dl = UINT64_MAX;                                                     \
		for (uint32_t i = 0; i < k; i++) {                                                 \
			uint64_t c = local[i];                                                     \
			if (c * period >= (uint64_t)w[i] * (pos + 1))                              \
				continue;                                                          \
			uint64_t dl = ((c + 1) * period + w[i] - 1) / w[i];                        \
			if (dl < best_dl)                                                          \
				best = i, best_dl = dl;                                            \
		}                                                                                  \
		return best;                                                                       \
	}
MIX_PICK(mix_pick, uint64_t)
MIX_PICK(mix_pick32, uint32_t)

static void mix_seg_layout(rf_mix *m, mix_seg *s, unsigned char *mem)
{
	uint32_t k = m->k;
	s->base = (uint64_t *)mem;
	s->w = (uint32_t *)(mem + (size_t)k * sizeof(uint64_t));
	s->cp = s->w + k;
}

/* Fills s's checkpoints: one greedy pass over the period. */
static void mix_seg_build(rf_mix *m, mix_seg *s)
{
	uint32_t k = m->k, ncp_max = mix_ncp_max(k);
	s->stride = RF_MAX((s->period + ncp_max - 1) / ncp_max, MIX_STRIDE_MIN);
	s->ncp = (s->period + s->stride - 1) / s->stride;
	uint32_t *local = s->cp; /* checkpoint 0 is all zero; walk in place */
	memset(local, 0, (size_t)k * sizeof(uint32_t));
	for (uint32_t j = 1; j < s->ncp; j++) {
		uint32_t *prev = s->cp + (size_t)(j - 1) * k, *cur = s->cp + (size_t)j * k;
		memcpy(cur, prev, (size_t)k * sizeof(uint32_t));
		for (uint32_t pos = (j - 1) * s->stride; pos < j * s->stride; pos++)
			cur[mix_pick32(s->w, k, s->period, pos, cur)]++;
	}
}

static unsigned char *mix_seg_mem(rf_mix *m, uint32_t i)
{
	unsigned char *all = (unsigned char *)&m->seg[m->cap];
	return all + (size_t)i * mix_seg_bytes(m->k);
}

int rf_mix_new(rf_mix **out, uint32_t k, const uint64_t *w, uint32_t segments, rf_error *err)
{
	*out = NULL;
	if (k == 0 || k > RF_MIX_SOURCES_MAX)
		return rf_fail(err, -EINVAL, "mixture: %u sources (1 to %u)", k,
		               RF_MIX_SOURCES_MAX);
	if (segments == 0 || segments > RF_MIX_SEGMENTS_MAX)
		return rf_fail(err, -EINVAL, "mixture: room for %u weight sets (1 to %u)", segments,
		               RF_MIX_SEGMENTS_MAX);
	uint64_t bytes = rf_mix_bytes_for(k, segments);
	rf_mix *m = calloc(1, (size_t)bytes);
	if (!m)
		return rf_fail(err, -ENOMEM, "mixture: %llu bytes for the schedule",
		               (unsigned long long)bytes);
	m->k = k;
	m->cap = segments;
	m->bytes = bytes;
	m->scratch = (uint64_t *)(mix_seg_mem(m, segments));
	mix_seg *s = &m->seg[0];
	mix_seg_layout(m, s, mix_seg_mem(m, 0));
	int rc = mix_reduce(k, w, s->w, &s->period, err);
	if (rc < 0) {
		free(m);
		return rc;
	}
	s->start = 0;
	mix_seg_build(m, s);
	m->nseg = 1;
	*out = m;
	return 0;
}

void rf_mix_free(rf_mix *m)
{
	free(m);
}

uint64_t rf_mix_bytes(const rf_mix *m)
{
	return m->bytes;
}

uint32_t rf_mix_sources(const rf_mix *m)
{
	return m->k;
}

static uint32_t mix_seg_at(const rf_mix *m, uint64_t n)
{
	uint32_t i = m->nseg - 1;
	while (i > 0 && m->seg[i].start > n)
		i--;
	return i;
}

uint32_t rf_mix_weights(const rf_mix *m, uint64_t n, uint32_t *out)
{
	const mix_seg *s = &m->seg[mix_seg_at(m, n)];
	memcpy(out, s->w, (size_t)m->k * sizeof(uint32_t));
	return s->period;
}

/* counts[k] within segment s over its first d samples. */
static void mix_seg_counts(const rf_mix *m, const mix_seg *s, uint64_t d, uint64_t *counts)
{
	uint32_t k = m->k;
	uint64_t q = d / s->period;
	uint32_t r = (uint32_t)(d % s->period), j = r / s->stride;
	const uint32_t *cp = s->cp + (size_t)j * k;
	for (uint32_t i = 0; i < k; i++)
		counts[i] = cp[i];
	for (uint32_t pos = j * s->stride; pos < r; pos++)
		counts[mix_pick(s->w, k, s->period, pos, counts)]++;
	for (uint32_t i = 0; i < k; i++)
		counts[i] += q * s->w[i];
}

void rf_mix_counts(const rf_mix *m, uint64_t n, uint64_t *counts)
{
	const mix_seg *s = &m->seg[mix_seg_at(m, n)];
	mix_seg_counts(m, s, n - s->start, counts);
	for (uint32_t i = 0; i < m->k; i++)
		counts[i] += s->base[i];
}

uint32_t rf_mix_source(const rf_mix *m, uint64_t n, uint64_t *ordinal)
{
	const mix_seg *s = &m->seg[mix_seg_at(m, n)];
	uint64_t d = n - s->start, q = d / s->period, *local = m->scratch;
	uint32_t r = (uint32_t)(d % s->period), j = r / s->stride;
	const uint32_t *cp = s->cp + (size_t)j * m->k;
	for (uint32_t i = 0; i < m->k; i++)
		local[i] = cp[i];
	for (uint32_t pos = j * s->stride; pos < r; pos++)
		local[mix_pick(s->w, m->k, s->period, pos, local)]++;
	uint32_t src = mix_pick(s->w, m->k, s->period, r, local);
	if (ordinal)
		*ordinal = s->base[src] + q * s->w[src] + local[src];
	return src;
}

uint64_t rf_mix_position(const rf_mix *m, uint32_t k, uint64_t o)
{
	uint32_t i = m->nseg - 1;
	while (i > 0 && m->seg[i].base[k] > o)
		i--;
	const mix_seg *s = &m->seg[i];
	if (s->w[k] == 0 || o < s->base[k])
		return UINT64_MAX;
	uint64_t d = o - s->base[k], q = d / s->w[k];
	uint32_t r = (uint32_t)(d % s->w[k]);
	uint32_t lo = 0, hi = s->ncp; /* last checkpoint with count_k <= r */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->cp[(size_t)mid * m->k + k] <= r)
			lo = mid;
		else
			hi = mid;
	}
	uint64_t *local = m->scratch;
	const uint32_t *cp = s->cp + (size_t)lo * m->k;
	for (uint32_t j = 0; j < m->k; j++)
		local[j] = cp[j];
	for (uint32_t pos = lo * s->stride; pos < s->period; pos++) {
		uint32_t src = mix_pick(s->w, m->k, s->period, pos, local);
		if (src == k && local[k] == r)
			return s->start + q * s->period + pos;
		local[src]++;
	}
	return UINT64_MAX; /* unreachable: source k has W_k > r samples a period */
}

int rf_mix_reweight(rf_mix *m, uint64_t from, const uint64_t *w, rf_error *err)
{
	const mix_seg *last = &m->seg[m->nseg - 1];
	if (from < last->start)
		return rf_fail(err, -EINVAL,
		               "mixture: new weights from sample %llu, before the last change "
		               "(sample %llu)",
		               (unsigned long long)from, (unsigned long long)last->start);
	/* A change at the same sample as the last replaces it. */
	uint32_t at = from == last->start ? m->nseg - 1 : m->nseg;
	if (at == m->cap)
		return rf_fail(err, -E2BIG, "mixture: more than %u weight sets", m->cap);
	uint32_t *tmp = (uint32_t *)m->scratch, period;
	int rc = mix_reduce(m->k, w, tmp, &period, err);
	if (rc < 0)
		return rc;
	mix_seg *s = &m->seg[at];
	if (at == m->nseg) {
		mix_seg_layout(m, s, mix_seg_mem(m, at));
		rf_mix_counts(m, from, s->base); /* before s is counted in */
		s->start = from;
	}
	memcpy(s->w, tmp, (size_t)m->k * sizeof(uint32_t));
	s->period = period;
	mix_seg_build(m, s);
	m->nseg = RF_MAX(m->nseg, at + 1);
	return 0;
}

void rf_mix_cursor_init(rf_mix_cursor *c, const rf_mix *m, uint64_t n, uint64_t *count,
                        uint32_t *local)
{
	c->m = m;
	c->n = n;
	c->count = count;
	c->local = local;
	c->seg = mix_seg_at(m, n);
	const mix_seg *s = &m->seg[c->seg];
	rf_mix_counts(m, n, count);
	uint64_t d = n - s->start, q = d / s->period;
	c->pos = (uint32_t)(d % s->period);
	for (uint32_t i = 0; i < m->k; i++)
		local[i] = (uint32_t)(count[i] - s->base[i] - q * s->w[i]);
}

uint32_t rf_mix_cursor_next(rf_mix_cursor *c)
{
	const rf_mix *m = c->m;
	if (c->seg + 1 < m->nseg && m->seg[c->seg + 1].start == c->n) {
		c->seg++;
		c->pos = 0;
		memset(c->local, 0, (size_t)m->k * sizeof(uint32_t));
	}
	const mix_seg *s = &m->seg[c->seg];
	uint32_t src = mix_pick32(s->w, m->k, s->period, c->pos, c->local);
	c->local[src]++;
	c->count[src]++;
	c->n++;
	if (++c->pos == s->period) {
		c->pos = 0;
		memset(c->local, 0, (size_t)m->k * sizeof(uint32_t));
	}
	return src;
}
