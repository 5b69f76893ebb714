/* mix_rebase.c - a mixture's weights changed at a resume (see
 * mix_rebase.h): the remaining ordinals of each source, their lookups both
 * ways, their composition with a further change, and their encoding in the
 * resume state. Pure: no I/O, no threads, no clocks. */
#include "mix_rebase.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void rf_mix_rebase_free(rf_mix_rebase *rb)
{
	if (!rb)
		return;
	free(rb->first);
	free(rb->r);
	free(rb->pre);
	free(rb->tail);
	free(rb->window);
	free(rb);
}

static rf_mix_rebase *rebase_alloc(uint32_t k, uint32_t nranges)
{
	rf_mix_rebase *rb = calloc(1, sizeof(*rb));
	if (!rb)
		return NULL;
	rb->k = k;
	rb->nranges = nranges;
	rb->first = calloc((size_t)k + 1, sizeof(*rb->first));
	rb->r = calloc(RF_MAX(nranges, 1u), sizeof(*rb->r));
	rb->pre = calloc(RF_MAX(nranges, 1u), sizeof(*rb->pre));
	rb->tail = calloc(RF_MAX(k, 1u), sizeof(*rb->tail));
	rb->window = calloc(RF_MAX(k, 1u), sizeof(*rb->window));
	if (!rb->first || !rb->r || !rb->pre || !rb->tail || !rb->window) {
		rf_mix_rebase_free(rb);
		return NULL;
	}
	return rb;
}

uint64_t rf_mix_rebase_memory(const rf_mix_rebase *rb)
{
	return rb ? sizeof(*rb) + ((uint64_t)rb->k + 1) * 4 + (uint64_t)rb->k * 12 +
	                (uint64_t)RF_MAX(rb->nranges, 1u) * (sizeof(rf_segment) + 8)
	          : 0;
}

int rf_mix_rebase_dup(const rf_mix_rebase *rb, rf_mix_rebase **out, rf_error *err)
{
	*out = NULL;
	if (!rb)
		return 0;
	rf_mix_rebase *c = rebase_alloc(rb->k, rb->nranges);
	if (!c)
		return rf_fail(err, -ENOMEM, "mixture: out of memory for its weight change");
	c->epoch = rb->epoch;
	c->length = rb->length;
	memcpy(c->first, rb->first, ((size_t)rb->k + 1) * sizeof(*c->first));
	memcpy(c->r, rb->r, (size_t)rb->nranges * sizeof(*c->r));
	memcpy(c->pre, rb->pre, (size_t)rb->nranges * sizeof(*c->pre));
	memcpy(c->tail, rb->tail, (size_t)rb->k * sizeof(*c->tail));
	memcpy(c->window, rb->window, (size_t)rb->k * sizeof(*c->window));
	*out = c;
	return 0;
}

uint64_t rf_mix_rebase_g0(const rf_mix_rebase *rb, uint64_t samples, uint64_t epoch)
{
	if (!rb || epoch < rb->epoch)
		return epoch * samples;
	if (epoch == rb->epoch)
		return 0;
	return rb->length + (epoch - rb->epoch - 1) * samples;
}

uint64_t rf_mix_rebase_epoch_len(const rf_mix_rebase *rb, uint64_t samples, uint64_t epoch)
{
	return rb && epoch == rb->epoch ? rb->length : samples;
}

/* Source k's range holding schedule count i (the last whose pre <= i), or
 * first[k + 1] when i is past the ranges (in the tail). */
static uint32_t rebase_find_i(const rf_mix_rebase *rb, uint32_t k, uint64_t i)
{
	uint32_t a = rb->first[k], b = rb->first[k + 1];
	if (a == b)
		return b;
	const rf_segment *last = &rb->r[b - 1];
	if (i >= rb->pre[b - 1] + last->records)
		return b;
	uint32_t lo = a, hi = b; /* pre[lo] <= i < pre[hi] */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (rb->pre[mid] <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Schedule counts the finite ranges of source k hold. */
static uint64_t rebase_finite(const rf_mix_rebase *rb, uint32_t k)
{
	uint32_t b = rb->first[k + 1];
	return b == rb->first[k] ? 0 : rb->pre[b - 1] + rb->r[b - 1].records;
}

uint64_t rf_mix_rebase_run(const rf_mix_rebase *rb, uint32_t k, uint64_t i, uint64_t *o)
{
	if (!rb) {
		*o = i;
		return UINT64_MAX;
	}
	uint32_t j = rebase_find_i(rb, k, i);
	if (j == rb->first[k + 1]) {
		*o = rb->tail[k] + (i - rebase_finite(rb, k));
		return UINT64_MAX;
	}
	uint64_t off = i - rb->pre[j];
	*o = rb->r[j].start + off;
	return rb->r[j].records - off;
}

uint64_t rf_mix_rebase_o(const rf_mix_rebase *rb, uint32_t k, uint64_t i)
{
	uint64_t o;
	rf_mix_rebase_run(rb, k, i, &o);
	return o;
}

uint64_t rf_mix_rebase_i(const rf_mix_rebase *rb, uint32_t k, uint64_t o)
{
	if (!rb)
		return o;
	if (o >= rb->tail[k])
		return rebase_finite(rb, k) + (o - rb->tail[k]);
	uint32_t a = rb->first[k], b = rb->first[k + 1];
	if (a == b || o < rb->r[a].start)
		return UINT64_MAX;
	uint32_t lo = a, hi = b; /* r[lo].start <= o */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (rb->r[mid].start <= o)
			lo = mid;
		else
			hi = mid;
	}
	if (o - rb->r[lo].start >= rb->r[lo].records)
		return UINT64_MAX;
	return rb->pre[lo] + (o - rb->r[lo].start);
}

/* Fills pre[] and checks the ranges: sorted, disjoint, non-empty, each
 * source's below its tail. */
static int rebase_finish(rf_mix_rebase *rb, rf_error *err)
{
	for (uint32_t k = 0; k < rb->k; k++) {
		uint64_t sum = 0, end = 0;
		if (rb->window[k] == 0 || rb->tail[k] > RF_MIX_REBASE_ORDINAL_MAX)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "mixture weight change: source %u has a shuffle window of %u "
			    "and ordinals to come from %llu (at most %llu)",
			    k + 1, rb->window[k], (unsigned long long)rb->tail[k],
			    RF_MIX_REBASE_ORDINAL_MAX);
		if (rb->first[k] > rb->first[k + 1] || rb->first[k + 1] > rb->nranges)
			return rf_fail(err, RF_E_CORRUPT,
			               "mixture weight change: source %u's ranges are out of order",
			               k + 1);
		for (uint32_t j = rb->first[k]; j < rb->first[k + 1]; j++) {
			const rf_segment *s = &rb->r[j];
			if (s->records == 0 || (j > rb->first[k] && s->start <= end) ||
			    s->start > rb->tail[k] || s->records > rb->tail[k] - s->start ||
			    s->records > UINT64_MAX / 2 - sum)
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "mixture weight change: source %u's range %u [%llu, "
				    "+%llu) is empty, out of order or past its tail %llu",
				    k + 1, j - rb->first[k], (unsigned long long)s->start,
				    (unsigned long long)s->records,
				    (unsigned long long)rb->tail[k]);
			rb->pre[j] = sum;
			sum += s->records;
			end = s->start + s->records;
		}
	}
	return 0;
}

/* ------------------------------------------------------- composition */

typedef struct rebase_acc {
	rf_segment *r; /* one source's ranges, unsorted */
	size_t n, cap;
	uint64_t tail;
} rebase_acc;

static int acc_add(rebase_acc *a, uint64_t start, uint64_t records)
{
	if (records == 0)
		return 0;
	if (a->n == a->cap) {
		size_t c = a->cap ? 2 * a->cap : 16;
		rf_segment *r = realloc(a->r, c * sizeof(*r));
		if (!r)
			return -ENOMEM;
		a->r = r;
		a->cap = c;
	}
	a->r[a->n++] = (rf_segment){start, records};
	return 0;
}

/* Old schedule counts [ia, ib) of source k (ib UINT64_MAX: on forever) as
 * ordinals, through the old rebase. */
static int acc_map(rebase_acc *a, const rf_mix_rebase *oldrb, uint32_t k, uint64_t ia, uint64_t ib)
{
	while (ia < ib) {
		uint64_t o, run = rf_mix_rebase_run(oldrb, k, ia, &o);
		if (run == UINT64_MAX) {
			if (ib == UINT64_MAX) {
				a->tail = o;
				return 0;
			}
			run = ib - ia;
		}
		uint64_t take = RF_MIN(run, ib - ia);
		RF_TRY(acc_add(a, o, take));
		ia += take;
	}
	return 0;
}

static int seg_cmp(const void *x, const void *y)
{
	const rf_segment *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* Sorts s[0 .. n), clips it to [0, len) and merges overlapping or
 * touching segments in place; returns how many are left. */
static uint32_t seg_union(rf_segment *s, uint32_t n, uint64_t len)
{
	if (n > 1)
		qsort(s, n, sizeof(*s), seg_cmp);
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++) {
		rf_segment x = s[i];
		if (x.records == 0 || x.start >= len)
			continue;
		x.records = RF_MIN(x.records, len - x.start);
		if (m > 0 && s[m - 1].start + s[m - 1].records >= x.start) {
			uint64_t end =
			    RF_MAX(s[m - 1].start + s[m - 1].records, x.start + x.records);
			s[m - 1].records = end - s[m - 1].start;
		} else {
			s[m++] = x;
		}
	}
	return m;
}

/* Sorts and merges a's ranges (overlaps too: a padded tail repeats
 * positions), folding the last into the tail when it reaches it. */
static void acc_merge(rebase_acc *a)
{
	if (a->n > 1)
		qsort(a->r, a->n, sizeof(*a->r), seg_cmp);
	size_t m = 0;
	for (size_t i = 0; i < a->n; i++) {
		rf_segment s = a->r[i];
		if (s.start >= a->tail)
			continue;
		if (s.records > a->tail - s.start)
			s.records = a->tail - s.start;
		if (m > 0 && a->r[m - 1].start + a->r[m - 1].records >= s.start) {
			uint64_t end =
			    RF_MAX(a->r[m - 1].start + a->r[m - 1].records, s.start + s.records);
			a->r[m - 1].records = end - a->r[m - 1].start;
		} else {
			a->r[m++] = s;
		}
	}
	while (m > 0 && a->r[m - 1].start + a->r[m - 1].records >= a->tail)
		a->tail = a->r[--m].start;
	a->n = m;
}

/* The epoch's positions still to come (the epoch is len long): the union
 * of rem less what any rank took (a padded slice wraps onto taken ones),
 * into xs (nrem + ntaken + 1 entries; ts is scratch of as many); returns
 * their count of segments and their positions in *length. */
static uint32_t seg_to_come(const rf_segment *rem, uint32_t nrem, const rf_segment *taken,
                            uint32_t ntaken, uint64_t len, rf_segment *ts, rf_segment *xs,
                            uint64_t *length)
{
	if (nrem)
		memcpy(ts, rem, (size_t)nrem * sizeof(*ts));
	uint32_t nr = seg_union(ts, nrem, len);
	if (ntaken)
		memcpy(ts + nr, taken, (size_t)ntaken * sizeof(*ts));
	uint32_t nt = seg_union(ts + nr, ntaken, len);
	const rf_segment *tk = ts + nr;
	uint32_t nx = 0;
	for (uint32_t i = 0, j = 0; i < nr; i++) { /* at most nr + nt pieces */
		uint64_t a = ts[i].start, b = a + ts[i].records;
		while (j < nt && tk[j].start + tk[j].records <= a)
			j++;
		for (uint32_t t = j; t < nt && tk[t].start < b; t++) {
			if (tk[t].start > a)
				xs[nx++] = (rf_segment){a, tk[t].start - a};
			a = RF_MAX(a, tk[t].start + tk[t].records);
		}
		if (a < b)
			xs[nx++] = (rf_segment){a, b - a};
	}
	*length = 0;
	for (uint32_t i = 0; i < nx; i++)
		*length += xs[i].records;
	return nx;
}

int rf_mix_rebase_compose(const rf_mix *old, const rf_mix_rebase *oldrb, uint64_t samples,
                          uint64_t epoch, const rf_segment *rem, uint32_t nrem,
                          const rf_segment *taken, uint32_t ntaken, const uint32_t *windows,
                          rf_mix_rebase **out, rf_error *err)
{
	*out = NULL;
	uint32_t k = rf_mix_sources(old);
	uint64_t g0 = rf_mix_rebase_g0(oldrb, samples, epoch);
	uint64_t len = rf_mix_rebase_epoch_len(oldrb, samples, epoch);
	rebase_acc *acc = calloc(k, sizeof(*acc));
	uint64_t *ca = calloc(k, sizeof(*ca)), *cb = calloc(k, sizeof(*cb));
	size_t cap = (size_t)nrem + ntaken + 1;
	rf_segment *xs = calloc(cap, sizeof(*xs)), *ts = calloc(cap, sizeof(*ts));
	int rc = 0;
	if (!acc || !ca || !cb || !xs || !ts)
		rc = rf_fail(err, -ENOMEM, "mixture: out of memory for its weight change");
	/* the epoch's positions still to come: their count is the rest of it */
	uint64_t length = 0;
	uint32_t nx = rc == 0 ? seg_to_come(rem, nrem, taken, ntaken, len, ts, xs, &length) : 0;
	for (uint32_t i = 0; rc == 0 && i < nx; i++) {
		rf_mix_counts(old, g0 + xs[i].start, ca);
		rf_mix_counts(old, g0 + xs[i].start + xs[i].records, cb);
		for (uint32_t s = 0; rc == 0 && s < k; s++)
			rc = acc_map(&acc[s], oldrb, s, ca[s], cb[s]);
	}
	if (rc == 0)
		rf_mix_counts(old, g0 + len, ca); /* the epoch's end: what follows is to come */
	size_t total = 0;
	for (uint32_t s = 0; rc == 0 && s < k; s++) {
		rc = acc_map(&acc[s], oldrb, s, ca[s], UINT64_MAX);
		if (rc == 0) {
			acc_merge(&acc[s]);
			total += acc[s].n;
		}
	}
	if (rc == -ENOMEM)
		rc = rf_fail(err, rc, "mixture: out of memory for its weight change");
	if (rc == 0 && total > RF_MIX_REBASE_RANGES_MAX)
		rc = rf_fail(err, -E2BIG,
		             "resume state: changing the mixture's weights here leaves %zu runs of "
		             "records still to come across its sources, more than %u (many resizes "
		             "or weight changes within one pass); resume with the saved weights to "
		             "the epoch's end first",
		             total, RF_MIX_REBASE_RANGES_MAX);
	rf_mix_rebase *rb = rc == 0 ? rebase_alloc(k, (uint32_t)total) : NULL;
	if (rc == 0 && !rb)
		rc = rf_fail(err, -ENOMEM, "mixture: out of memory for its weight change");
	if (rc == 0) {
		uint32_t at = 0;
		for (uint32_t s = 0; s < k; s++) {
			rb->first[s] = at;
			if (acc[s].n)
				memcpy(rb->r + at, acc[s].r, acc[s].n * sizeof(*rb->r));
			at += (uint32_t)acc[s].n;
			rb->tail[s] = acc[s].tail;
			rb->window[s] = oldrb ? oldrb->window[s] : windows[s];
		}
		rb->first[k] = at;
		/* nothing left of the saved epoch: the change starts the next one */
		rb->epoch = length > 0 ? epoch : epoch + 1;
		rb->length = length > 0 ? length : samples;
		rc = rebase_finish(rb, err);
	}
	for (uint32_t s = 0; acc && s < k; s++)
		free(acc[s].r);
	free(acc);
	free(ca);
	free(cb);
	free(xs);
	free(ts);
	if (rc < 0) {
		rf_mix_rebase_free(rb);
		return rc;
	}
	*out = rb;
	return 0;
}

/* ---------------------------------------------------------- encoding */

size_t rf_mix_rebase_bytes_for(uint32_t k, uint32_t nranges)
{
	return 20 + 16 * (size_t)k + 16 * (size_t)nranges;
}

size_t rf_mix_rebase_bytes(const rf_mix_rebase *rb)
{
	return rb ? rf_mix_rebase_bytes_for(rb->k, rb->nranges) : 0;
}

void rf_mix_rebase_encode(const rf_mix_rebase *rb, uint8_t *b)
{
	rf_store_le64(b, rb->epoch);
	rf_store_le64(b + 8, rb->length);
	rf_store_le32(b + 16, rb->nranges);
	uint8_t *p = b + 20;
	for (uint32_t k = 0; k < rb->k; k++, p += 16) {
		rf_store_le64(p, rb->tail[k]);
		rf_store_le32(p + 8, rb->first[k + 1] - rb->first[k]);
		rf_store_le32(p + 12, rb->window[k]);
	}
	for (uint32_t j = 0; j < rb->nranges; j++, p += 16) {
		rf_store_le64(p, rb->r[j].start);
		rf_store_le64(p + 8, rb->r[j].records);
	}
}

uint32_t rf_mix_rebase_peek(const uint8_t *b, size_t len)
{
	return len >= 20 ? rf_load_le32(b + 16) : 0;
}

int rf_mix_rebase_decode(const uint8_t *b, size_t len, uint32_t k, uint64_t samples, uint64_t epoch,
                         rf_mix_rebase **out, rf_error *err)
{
	*out = NULL;
	uint32_t n = rf_mix_rebase_peek(b, len);
	if (len < 20 || n > RF_MIX_REBASE_RANGES_MAX || len != rf_mix_rebase_bytes_for(k, n))
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: its mixture weight change of %zu bytes does not hold "
		               "%u sources and %u ranges (at most %u)",
		               len, k, n, RF_MIX_REBASE_RANGES_MAX);
	rf_mix_rebase *rb = rebase_alloc(k, n);
	if (!rb)
		return rf_fail(err, -ENOMEM, "resume state: out of memory");
	rb->epoch = rf_load_le64(b);
	rb->length = rf_load_le64(b + 8);
	const uint8_t *p = b + 20;
	uint64_t at = 0;
	for (uint32_t s = 0; s < k; s++, p += 16) {
		rb->tail[s] = rf_load_le64(p);
		rb->window[s] = rf_load_le32(p + 12);
		rb->first[s] = (uint32_t)RF_MIN(at, (uint64_t)n);
		at += rf_load_le32(p + 8);
	}
	rb->first[k] = (uint32_t)RF_MIN(at, (uint64_t)n);
	for (uint32_t j = 0; j < n; j++, p += 16)
		rb->r[j] = (rf_segment){rf_load_le64(p), rf_load_le64(p + 8)};
	int rc = 0;
	if (at != n)
		rc = rf_fail(err, RF_E_CORRUPT,
		             "resume state: its mixture weight change counts %llu ranges, holds %u",
		             (unsigned long long)at, n);
	else if (rb->length == 0 || rb->length > samples || rb->epoch > epoch)
		rc =
		    rf_fail(err, RF_E_CORRUPT,
		            "resume state: its mixture weight change at epoch %llu of %llu samples "
		            "(an epoch has %llu; the state is at epoch %llu)",
		            (unsigned long long)rb->epoch, (unsigned long long)rb->length,
		            (unsigned long long)samples, (unsigned long long)epoch);
	else
		rc = rebase_finish(rb, err);
	if (rc < 0) {
		rf_mix_rebase_free(rb);
		return rc;
	}
	*out = rb;
	return 0;
}
