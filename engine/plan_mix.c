/* plan_mix.c - a mixture's plan (see plan.h, rf_plan_new_mix): the epoch's
 * global stream is the mixture stream; the source schedule (mix.h) says
 * which source each sample comes from and how many of that source come
 * before it (its ordinal in the source's own endless stream); ordinal o of
 * source k is record o mod N_k of pass o div N_k, and a pass is an epoch of
 * the source's own plan (its seed, shard, block and window permutations).
 * With stop_first each mixture epoch is pass `epoch` of every source and the
 * schedule starts again at every epoch.
 *
 * A rank's part (pieces of the mixture stream, by plan_rank.c's partition)
 * becomes, per source and pass ("kp"), a sequence of segments of that pass's
 * stream: the sub-plan of the source computes its units for that sequence
 * exactly as for an elastic resume's. The merged unit list is every kp's
 * units ordered by the first local mixture position that needs them (a
 * source window's first position), a source window's units side by side: a
 * "group". Local plan positions are the merged units' records back to back.
 * The engine's window questions become group questions: need(q) is the end
 * of the last group first needed below q, resident_stream(P) the first
 * position needing P's group, window_end(P) its group's end.
 *
 * Lookups walk the schedule with a cursor (O(K) a sample); the sub-plans
 * switch their pass when a lookup reaches another one (their arrays are
 * reserved when the epoch is built, so a switch allocates nothing). Pure: no
 * I/O, no threads, no clocks; one thread per plan object. */
#include "mix.h"
#include "mix_rebase.h"
#include "plan_int.h"
#include "rng.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define PMIX_PASSES_MAX (1u << 20) /* source passes (kp) one rank's epoch may touch */

typedef struct pmix_kp {
	uint32_t k;
	uint64_t pass;
	uint32_t seg0, nsegs; /* its segments: seg[seg0 ..] (and prefix[seg0 + index ..]) */
	uint32_t pre0;        /* its prefix sums: prefix[pre0 .. pre0 + nsegs] */
	size_t map0, nunits;  /* its sub-plan units -> merged units: map[map0 ..] */
} pmix_kp;

typedef struct pmix_group {
	uint64_t fn;   /* first local mixture position that needs it */
	uint64_t a, b; /* its local plan positions */
} pmix_group;

typedef struct pmix_tmp {
	uint64_t fn, rel;
	uint32_t kp, ui;
	uint32_t shard, block, records;
	bool unused;
} pmix_tmp;

typedef struct plan_mix {
	uint32_t k;
	rf_mix *m;
	rf_mix_rebase *rb; /* the weights changed at a resume (NULL: never) */
	rf_plan **subs;    /* k: each source's own plan */
	uint32_t *first;   /* k + 1 */
	uint64_t *n;       /* k: records per pass */
	uint64_t *weight;  /* k: millionths, as given */
	uint64_t *id;      /* 3 k: the resume state's identity (rf_plan_mix_identity) */
	uint64_t samples;  /* M */
	uint32_t *w, T;    /* effective integer weights (k) and their sum */
	bool stop_first;
	uint64_t sub_bytes; /* the sub-plans' memory at open */
	/* this epoch */
	uint64_t g0; /* schedule sample of local mixture position 0's global position 0 */
	pmix_kp *kp;
	uint32_t nkp, kp_cap;
	rf_segment *seg; /* all kps' segments, grouped by kp */
	uint32_t *seg_piece;
	uint64_t *prefix; /* nseg + nkp */
	uint32_t nseg, seg_cap, pre_cap;
	size_t *map;
	size_t map_cap;
	pmix_group *grp;
	size_t ngrp, grp_cap;
	uint32_t *at;                /* k: the kp each sub-plan is at (UINT32_MAX: none) */
	uint32_t *src_kp0, *src_nkp; /* k: each source's kps (sorted by pass) */
	uint64_t *ca, *cb;           /* k: counts scratch */
	/* the lookup cursor */
	rf_mix_cursor cur;
	uint64_t *cur_count;
	uint32_t *cur_local;
	bool cur_valid;
	uint64_t memo_q; /* the last position located (UINT64_MAX: none), and where */
	size_t memo_unit;
	uint32_t memo_record;
	uint64_t epoch_bytes;
} plan_mix;

static void *pmix_grow(void *p, size_t *cap, size_t need, size_t size, uint64_t *bytes)
{
	if (need <= *cap)
		return p;
	size_t c = RF_MAX(need, *cap + *cap / 2 + 8);
	void *q = realloc(p, c * size);
	if (!q)
		return NULL;
	*bytes += (uint64_t)(c - *cap) * size;
	*cap = c;
	return q;
}

static int pmix_reserve32(void **p, uint32_t *cap, uint32_t need, size_t size, uint64_t *bytes)
{
	if (need <= *cap && *p)
		return 0;
	need = RF_MAX(need, 1);
	size_t c = *cap;
	void *q = pmix_grow(*p, &c, need, size, bytes);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = (uint32_t)c;
	return 0;
}

static void pmix_free(plan_mix *mx)
{
	if (!mx)
		return;
	for (uint32_t k = 0; mx->subs && k < mx->k; k++) {
		if (!mx->subs[k])
			continue;
		mx->subs[k]->seq = NULL; /* borrowed from mx->seg */
		mx->subs[k]->seq_prefix = NULL;
		rf_plan_free(mx->subs[k]);
	}
	rf_mix_free(mx->m);
	rf_mix_rebase_free(mx->rb);
	free(mx->subs);
	free(mx->first);
	free(mx->n);
	free(mx->weight);
	free(mx->id);
	free(mx->w);
	free(mx->kp);
	free(mx->seg);
	free(mx->seg_piece);
	free(mx->prefix);
	free(mx->map);
	free(mx->grp);
	free(mx->at);
	free(mx->src_kp0);
	free(mx->src_nkp);
	free(mx->ca);
	free(mx->cb);
	free(mx->cur_count);
	free(mx->cur_local);
	free(mx);
}

static const plan_mix_ops pmix_ops; /* at the end */

/* ceil(n * T / w), capped at 2^50. */
static uint64_t pmix_samples_for(uint64_t n, uint32_t T, uint32_t w, bool up)
{
	unsigned __int128 x = (unsigned __int128)n * T + (up ? w - 1 : 0);
	x /= w;
	return x > (unsigned __int128)(1ull << 50) ? 1ull << 50 : (uint64_t)x;
}

/* The mixture epoch's size: given, or the samples at which the
 * largest-weight source has delivered one pass (the larger pass among equal
 * weights); with stop_first, the most samples in which no source runs out. */
static int pmix_samples(plan_mix *mx, uint64_t given, rf_error *err)
{
	uint32_t k = mx->k, T = mx->T, *w = mx->w;
	uint64_t best = 0;
	if (mx->stop_first) {
		best = UINT64_MAX;
		for (uint32_t i = 0; i < k; i++)
			if (w[i] > 0)
				best = RF_MIN(best, pmix_samples_for(mx->n[i], T, w[i], false) + 1);
		for (;;) { /* no source may pass its pass's end */
			rf_mix_counts(mx->m, best, mx->ca);
			bool over = false;
			for (uint32_t i = 0; i < k; i++)
				over |= mx->ca[i] > mx->n[i];
			if (!over || best == 0)
				break;
			best--;
		}
		if (given > best)
			return rf_fail(
			    err, -EINVAL,
			    "mixture: mix_samples %llu is more than the %llu samples before "
			    "a source runs out (stop=first_exhausted)",
			    (unsigned long long)given, (unsigned long long)best);
	} else {
		uint32_t big = UINT32_MAX;
		for (uint32_t i = 0; i < k; i++)
			if (w[i] > 0 && (big == UINT32_MAX || w[i] > w[big] ||
			                 (w[i] == w[big] && mx->n[i] > mx->n[big])))
				big = i;
		best = pmix_samples_for(mx->n[big], T, w[big], true);
	}
	if (given > 0)
		best = given;
	if (best == 0)
		return rf_fail(err, -EINVAL, "mixture: an epoch of 0 samples (a source is empty)");
	mx->samples = best;
	return 0;
}

/* The mixture's per-source arrays (k sources), counted in the plan's memory. */
static int pmix_alloc(rf_plan *plan, plan_mix *mx, uint32_t k, bool stop_first, rf_error *err)
{
	mx->k = k;
	mx->stop_first = stop_first;
	mx->subs = calloc(k, sizeof(*mx->subs));
	mx->first = calloc(k + 1, sizeof(*mx->first));
	mx->n = calloc(k, sizeof(*mx->n));
	mx->weight = calloc(k, sizeof(*mx->weight));
	mx->w = calloc(k, sizeof(*mx->w));
	mx->id = calloc(3 * (size_t)k, sizeof(*mx->id));
	mx->at = calloc(k, sizeof(*mx->at));
	mx->src_kp0 = calloc(k, sizeof(*mx->src_kp0));
	mx->src_nkp = calloc(k, sizeof(*mx->src_nkp));
	mx->ca = calloc(k, sizeof(*mx->ca));
	mx->cb = calloc(k, sizeof(*mx->cb));
	mx->cur_count = calloc(k, sizeof(*mx->cur_count));
	mx->cur_local = calloc(k, sizeof(*mx->cur_local));
	plan->cache = calloc(1, sizeof(*plan->cache));
	int rc = 0;
	if (!mx->subs || !mx->first || !mx->n || !mx->weight || !mx->w || !mx->id || !mx->at ||
	    !mx->src_kp0 || !mx->src_nkp || !mx->ca || !mx->cb || !mx->cur_count ||
	    !mx->cur_local || !plan->cache)
		rc = rf_fail(err, -ENOMEM, "plan: out of memory for %u sources", k);
	plan->memory_bytes += (uint64_t)k * (sizeof(void *) + 4 * 8 + 6 * 4) + 4;
	return rc;
}

/* Source i's own plan (one rank, its own window and seed) and its records. */
static int pmix_sub_new(const rf_plan_params *p, const rf_shard_index *const *shards,
                        const rf_plan_mix_params *mp, plan_mix *mx, uint32_t i, rf_error *err)
{
	rf_plan_params sp = *p;
	sp.rank = 0;
	sp.world = 1;
	sp.pad = false;
	sp.drop_last = 0;
	sp.shuffle_window =
	    mp->windows ? mp->windows[i] : rf_plan_mix_window(p, mp->weight, mp->sources, i);
	sp.seed = rf_mix64(p->seed ^ rf_mix64(0x534f5552ull + i)); /* "SOUR" */
	RF_TRY(rf_plan_new(&sp, shards + mp->first[i], mp->first[i + 1] - mp->first[i],
	                   &mx->subs[i], err));
	mx->n[i] = rf_plan_total_records(mx->subs[i]);
	mx->sub_bytes += rf_plan_memory_bytes(mx->subs[i]);
	mx->at[i] = UINT32_MAX;
	if (mx->n[i] == 0 && mp->weight[i] > 0)
		return rf_fail(err, -EINVAL,
		               "mixture: source %u has no records but weight %llu.%06llu", i + 1,
		               (unsigned long long)(mp->weight[i] / RF_MIX_WEIGHT_SCALE),
		               (unsigned long long)(mp->weight[i] % RF_MIX_WEIGHT_SCALE));
	return 0;
}

int rf_plan_new_mix(const rf_plan_params *p, const rf_shard_index *const *shards, uint32_t nshards,
                    const rf_plan_mix_params *mp, rf_plan **out, rf_error *err)
{
	*out = NULL;
	uint32_t k = mp->sources;
	if (k == 0 || k > RF_MIX_SOURCES_MAX)
		return rf_fail(err, -EINVAL, "mixture: %u sources (1 to %u)", k,
		               RF_MIX_SOURCES_MAX);
	if (p->world == 0 || p->rank >= p->world)
		return rf_fail(err, -EINVAL, "plan: rank %u is not below world size %u", p->rank,
		               p->world);
	if (mp->first[0] != 0 || mp->first[k] != nshards)
		return rf_fail(err, -EINVAL, "mixture: the sources do not cover the shard list");
	for (uint32_t i = 0; i < k; i++)
		if (mp->first[i + 1] <= mp->first[i])
			return rf_fail(err, -EINVAL, "mixture: source %u has no shards", i + 1);
	rf_plan *plan = calloc(1, sizeof(*plan));
	plan_mix *mx = calloc(1, sizeof(*mx));
	if (!plan || !mx) {
		free(plan);
		free(mx);
		return rf_fail(err, -ENOMEM, "plan: out of memory");
	}
	plan->mix = mx;
	plan->mixops = &pmix_ops;
	plan->p = *p;
	plan->window = 1;
	plan->nshards = nshards;
	plan->epoch = plan->seq_epoch = UINT64_MAX;
	plan->memory_bytes = sizeof(*plan) + sizeof(*mx);
	int rc = pmix_alloc(plan, mx, k, mp->stop_first, err);
	if (rc == 0) {
		memcpy(mx->first, mp->first, (k + 1) * sizeof(*mx->first));
		memcpy(mx->weight, mp->weight, k * sizeof(*mx->weight));
		rc = rf_mix_new(&mx->m, k, mp->weight, 1, err);
	}
	if (rc == 0)
		mx->T = rf_mix_weights(mx->m, 0, mx->w);
	for (uint32_t i = 0; rc == 0 && i < k; i++)
		rc = pmix_sub_new(p, shards, mp, mx, i, err);
	if (rc == 0)
		rc = pmix_samples(mx, mp->samples, err);
	for (uint32_t i = 0; rc == 0 && i < k; i++) {
		mx->id[3 * i] = rf_plan_dataset_hash(mx->subs[i]);
		mx->id[3 * i + 1] = mx->n[i];
		mx->id[3 * i + 2] = mx->weight[i];
	}
	if (rc == 0) {
		plan->total_records = mx->samples;
		plan->whole = (rf_segment){0, mx->samples};
		rc = rf_plan_pieces_reserve(plan, 4, err);
	}
	if (rc < 0) {
		rf_plan_free(plan);
		return rc;
	}
	*out = plan;
	return 0;
}

bool rf_plan_is_mix(const rf_plan *plan)
{
	return plan->mix != NULL;
}

uint32_t rf_plan_mix_identity(const rf_plan *plan, const uint64_t **src, uint64_t *samples,
                              bool *stop_first)
{
	const plan_mix *mx = plan->mix;
	if (!mx)
		return 0;
	*src = mx->id;
	*samples = mx->samples;
	*stop_first = mx->stop_first;
	return mx->k;
}

uint32_t rf_plan_mix_sources(const rf_plan *plan)
{
	return plan->mix ? plan->mix->k : 0;
}

uint32_t rf_plan_mix_window(const rf_plan_params *p, const uint64_t *weight, uint32_t k, uint32_t i)
{
	/* A source's window scaled to its weight: every source's window then
	 * spans about as many mixture samples as the heaviest one's, so none is
	 * held (in the ring) for orders of magnitude longer than the rest. From
	 * the weights as given, so a resume that changes them can keep these. */
	if (!p->shuffle || p->shuffle_window <= 1)
		return p->shuffle_window;
	uint64_t wmax = 1;
	for (uint32_t j = 0; j < k; j++)
		wmax = RF_MAX(wmax, weight[j]);
	unsigned __int128 x = (unsigned __int128)p->shuffle_window * weight[i] + wmax - 1;
	return (uint32_t)RF_MAX(1ull, (uint64_t)(x / wmax));
}

/* The schedule sample of mixture-epoch `epoch`'s global position 0. */
static uint64_t pmix_g0(const plan_mix *mx, uint64_t epoch)
{
	return mx->stop_first ? 0 : rf_mix_rebase_g0(mx->rb, mx->samples, epoch);
}

int rf_plan_mix_set_rebase(rf_plan *plan, const rf_mix_rebase *rb, uint64_t samples, rf_error *err)
{
	plan_mix *mx = plan->mix;
	if (!mx || mx->stop_first || !rb || rb->k != mx->k || samples == 0 || rb->length > samples)
		return rf_fail(err, -EINVAL,
		               "mixture: a weight change that does not fit this mixture (%u "
		               "sources, %llu samples an epoch)",
		               mx ? mx->k : 0, (unsigned long long)samples);
	for (uint32_t k = 0; k < mx->k; k++)
		if (rb->window[k] != mx->subs[k]->window)
			return rf_fail(
			    err, -EINVAL,
			    "mixture: source %u's shuffle window is %llu, its weight change "
			    "was made with %u",
			    k + 1, (unsigned long long)mx->subs[k]->window, rb->window[k]);
	rf_mix_rebase *c;
	RF_TRY(rf_mix_rebase_dup(rb, &c, err));
	plan->memory_bytes -= rf_mix_rebase_memory(mx->rb);
	rf_mix_rebase_free(mx->rb);
	mx->rb = c;
	plan->memory_bytes += rf_mix_rebase_memory(c);
	mx->samples = samples;
	plan->total_records = samples;
	plan->whole = (rf_segment){0, samples};
	plan->epoch = UINT64_MAX;
	return 0;
}

const rf_mix_rebase *rf_plan_mix_rebase(const rf_plan *plan)
{
	return plan->mix ? plan->mix->rb : NULL;
}

void rf_plan_mix_source_info(const rf_plan *plan, uint32_t k, uint64_t epoch, uint64_t *counts,
                             uint64_t *records, uint64_t *ordinal, uint64_t *weight_num,
                             uint64_t *weight_den)
{
	const plan_mix *mx = plan->mix; /* read-only here: the schedule, sizes, weights */
	*records = mx->n[k];
	rf_mix_counts(mx->m, pmix_g0(mx, epoch), counts);
	*ordinal = mx->stop_first ? epoch * mx->n[k] : rf_mix_rebase_o(mx->rb, k, counts[k]);
	*weight_den = mx->T;
	*weight_num = mx->w[k];
}

static uint64_t pmix_memory_bytes(const rf_plan *plan)
{
	const plan_mix *mx = plan->mix;
	return mx->sub_bytes + rf_mix_bytes(mx->m) + mx->epoch_bytes;
}

static uint64_t pmix_hash(const rf_plan *plan)
{
	const plan_mix *mx = plan->mix;
	uint64_t h = rf_mix64(0x4d495855ull ^ mx->k); /* "MIXU" */
	/* not the weights: a resume may change them (the state names them) */
	for (uint32_t i = 0; i < mx->k; i++)
		h = rf_mix64(h ^ rf_plan_dataset_hash(mx->subs[i]));
	return h;
}

/* ---------------------------------------------------------- the epoch */

/* The kp of (source k, pass), made when new (kps of a source are made in
 * pass order but for the pad tail's wrap; a search from the end). */
static int pmix_kp_of(plan_mix *mx, uint32_t k, uint64_t pass, uint32_t *out)
{
	for (uint32_t i = mx->nkp; i-- > 0;) {
		if (mx->kp[i].k == k && mx->kp[i].pass == pass) {
			*out = i;
			return 0;
		}
	}
	if (mx->nkp >= PMIX_PASSES_MAX)
		return -E2BIG;
	if (pmix_reserve32((void **)&mx->kp, &mx->kp_cap, mx->nkp + 1, sizeof(*mx->kp),
	                   &mx->epoch_bytes) < 0)
		return -ENOMEM;
	mx->kp[mx->nkp] = (pmix_kp){.k = k, .pass = pass};
	*out = mx->nkp++;
	return 0;
}

typedef struct pmix_raw {
	uint32_t kp, piece;
	uint64_t start, records;
} pmix_raw;

/* Source k's ordinals [a, b) of piece `piece` as kp segments. */
static int pmix_add_ord(plan_mix *mx, pmix_raw **raw, size_t *nraw, size_t *cap, uint32_t k,
                        uint64_t epoch, uint64_t a, uint64_t b, uint32_t piece, rf_error *err)
{
	while (a < b) {
		uint64_t pass = mx->stop_first ? epoch : a / mx->n[k];
		uint64_t i = mx->stop_first ? a : a % mx->n[k];
		uint64_t take = RF_MIN(b - a, mx->n[k] - i);
		uint32_t kp;
		int rc = pmix_kp_of(mx, k, pass, &kp);
		if (rc == -E2BIG)
			return rf_fail(
			    err, rc,
			    "mixture: one epoch of this rank reads more than %u passes of its "
			    "sources (source %u has %llu records; raise its size or lower "
			    "its weight)",
			    PMIX_PASSES_MAX, k + 1, (unsigned long long)mx->n[k]);
		if (rc < 0)
			return rf_fail(err, rc, "mixture: out of memory for its passes");
		uint64_t bytes = 0;
		pmix_raw *r = pmix_grow(*raw, cap, *nraw + 1, sizeof(**raw), &bytes);
		if (!r)
			return rf_fail(err, -ENOMEM, "mixture: out of memory for its segments");
		*raw = r;
		r[(*nraw)++] = (pmix_raw){.kp = kp, .piece = piece, .start = i, .records = take};
		a += take;
	}
	return 0;
}

/* Source k's schedule counts [a, b) of piece `piece` (their ordinals
 * through a weight change: one or more runs) as kp segments. */
static int pmix_add_range(plan_mix *mx, pmix_raw **raw, size_t *nraw, size_t *cap, uint32_t k,
                          uint64_t epoch, uint64_t a, uint64_t b, uint32_t piece, rf_error *err)
{
	while (a < b) {
		uint64_t o, run = rf_mix_rebase_run(mx->rb, k, a, &o);
		uint64_t take = RF_MIN(run, b - a);
		RF_TRY(pmix_add_ord(mx, raw, nraw, cap, k, epoch, o, o + take, piece, err));
		a += take;
	}
	return 0;
}

/* Points sub-plan k at kp j's sequence and computes that pass's units. */
static int pmix_switch(plan_mix *mx, uint32_t j, rf_error *err)
{
	pmix_kp *kp = &mx->kp[j];
	rf_plan *sub = mx->subs[kp->k];
	if (mx->at[kp->k] == j)
		return 0;
	sub->seq = mx->seg + kp->seg0;
	sub->seq_prefix = mx->prefix + kp->pre0;
	sub->nseq = kp->nsegs;
	sub->seq_epoch = kp->pass;
	sub->seq_start = 0;
	RF_TRY(rf_plan_pieces_reserve(sub, kp->nsegs + 2, err));
	mx->at[kp->k] = j;
	return rf_plan_epoch(sub, kp->pass, err);
}

/* kp j's local stream position s -> local mixture position. */
static uint64_t pmix_to_mix(const rf_plan *plan, uint32_t j, uint64_t s)
{
	const plan_mix *mx = plan->mix;
	const pmix_kp *kp = &mx->kp[j];
	const uint64_t *pre = mx->prefix + kp->pre0;
	uint32_t lo = 0, hi = kp->nsegs;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (pre[mid] <= s)
			lo = mid;
		else
			hi = mid;
	}
	const rf_segment *sg = &mx->seg[kp->seg0 + lo];
	uint64_t i = sg->start + (s - pre[lo]);
	uint64_t o = mx->stop_first ? i : kp->pass * mx->n[kp->k] + i;
	uint64_t g = rf_mix_position(mx->m, kp->k, rf_mix_rebase_i(mx->rb, kp->k, o));
	const plan_piece *pc = &plan->pieces[mx->seg_piece[kp->seg0 + lo]];
	return pc->q + (g - mx->g0 - pc->x);
}

static int pmix_tmp_cmp(const void *a, const void *b)
{
	const pmix_tmp *x = a, *y = b;
	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	if (x->kp != y->kp)
		return x->kp < y->kp ? -1 : 1;
	return x->ui < y->ui ? -1 : x->ui > y->ui;
}

static int pmix_kp_cmp(const void *a, const void *b)
{
	const pmix_kp *x = a, *y = b;
	if (x->k != y->k)
		return x->k < y->k ? -1 : 1;
	return x->pass < y->pass ? -1 : x->pass > y->pass;
}

/* The kps sorted by (source, pass), the raw segments grouped by kp in that
 * order (kept in piece order inside a kp), and the prefix sums. */
static int pmix_layout(plan_mix *mx, pmix_raw *raw, size_t nraw, rf_error *err)
{
	uint32_t nkp = mx->nkp;
	for (uint32_t j = 0; j < nkp; j++)
		mx->kp[j].seg0 = j; /* remember the old index */
	qsort(mx->kp, nkp, sizeof(*mx->kp), pmix_kp_cmp);
	uint32_t *newix = calloc(RF_MAX(nkp, 1), sizeof(uint32_t));
	if (!newix)
		return rf_fail(err, -ENOMEM, "mixture: out of memory");
	for (uint32_t j = 0; j < nkp; j++) {
		newix[mx->kp[j].seg0] = j;
		mx->kp[j].nsegs = 0;
	}
	for (size_t r = 0; r < nraw; r++) {
		raw[r].kp = newix[raw[r].kp];
		mx->kp[raw[r].kp].nsegs++;
	}
	free(newix);
	if (nraw > UINT32_MAX / 2)
		return rf_fail(err, -E2BIG, "mixture: too many segments");
	if (pmix_reserve32((void **)&mx->seg, &mx->seg_cap, (uint32_t)nraw, sizeof(*mx->seg),
	                   &mx->epoch_bytes) < 0)
		return rf_fail(err, -ENOMEM, "mixture: out of memory for its segments");
	uint32_t *sp = realloc(mx->seg_piece, RF_MAX(mx->seg_cap, 1) * sizeof(uint32_t));
	if (!sp)
		return rf_fail(err, -ENOMEM, "mixture: out of memory for its segments");
	mx->seg_piece = sp; /* as many as seg's capacity (counted with it) */
	if (pmix_reserve32((void **)&mx->prefix, &mx->pre_cap, (uint32_t)nraw + nkp,
	                   sizeof(*mx->prefix), &mx->epoch_bytes) < 0)
		return rf_fail(err, -ENOMEM, "mixture: out of memory for its segments");
	uint32_t at = 0;
	for (uint32_t j = 0; j < nkp; j++) {
		mx->kp[j].seg0 = at;
		mx->kp[j].pre0 = at + j;
		at += mx->kp[j].nsegs;
		mx->kp[j].nsegs = 0;
	}
	memset(mx->src_nkp, 0, mx->k * sizeof(*mx->src_nkp));
	for (uint32_t j = nkp; j-- > 0;) {
		mx->src_kp0[mx->kp[j].k] = j;
		mx->src_nkp[mx->kp[j].k]++;
	}
	for (size_t r = 0; r < nraw; r++) { /* stable: piece order inside a kp */
		pmix_kp *kp = &mx->kp[raw[r].kp];
		uint32_t i = kp->seg0 + kp->nsegs++;
		mx->seg[i] = (rf_segment){raw[r].start, raw[r].records};
		mx->seg_piece[i] = raw[r].piece;
	}
	mx->nseg = (uint32_t)nraw;
	for (uint32_t j = 0; j < nkp; j++) {
		uint64_t sum = 0, *pre = mx->prefix + mx->kp[j].pre0;
		for (uint32_t i = 0; i < mx->kp[j].nsegs; i++) {
			pre[i] = sum;
			sum += mx->seg[mx->kp[j].seg0 + i].records;
		}
		pre[mx->kp[j].nsegs] = sum;
	}
	return 0;
}

/* Every kp's units (tmp entries with their first-needed and release
 * positions), one kp at a time. */
static int pmix_collect(rf_plan *plan, pmix_tmp **tmp, size_t *ntmp, size_t *cap, rf_error *err)
{
	plan_mix *mx = plan->mix;
	for (uint32_t k = 0; k < mx->k; k++)
		mx->at[k] = UINT32_MAX;
	size_t mapped = 0;
	for (uint32_t j = 0; j < mx->nkp; j++) {
		RF_TRY(pmix_switch(mx, j, err));
		rf_plan *sub = mx->subs[mx->kp[j].k];
		size_t n = rf_plan_unit_count(sub);
		uint64_t e = rf_plan_epoch_records(sub);
		mx->kp[j].map0 = mapped;
		mx->kp[j].nunits = n;
		mapped += n;
		uint64_t b = 0;
		pmix_tmp *t = pmix_grow(*tmp, cap, *ntmp + n, sizeof(**tmp), &b);
		if (!t && n)
			return rf_fail(err, -ENOMEM, "mixture: out of memory for %zu units",
			               *ntmp + n);
		if (t)
			*tmp = t;
		uint64_t last_fnl = UINT64_MAX, fn = 0, last_rl = UINT64_MAX, rel = 0;
		for (size_t u = 0; u < n; u++) {
			const rf_unit *un = rf_plan_unit(sub, u);
			uint64_t fnl = rf_plan_resident_stream(sub, un->first_plan_record);
			if (e > 0 && fnl >= e)
				fnl = e - 1;
			if (fnl != last_fnl) { /* a window's units share it */
				last_fnl = fnl;
				fn = e > 0 ? pmix_to_mix(plan, j, fnl) : 0;
			}
			/* its last record this rank emits (the sub-plan's release) */
			uint64_t rl = RF_MIN(un->release_pos, e);
			if (rl != last_rl) {
				last_rl = rl;
				rel = rl > 0 ? pmix_to_mix(plan, j, rl - 1) + 1 : 0;
			}
			(*tmp)[(*ntmp)++] = (pmix_tmp){.fn = fn,
			                               .rel = rel,
			                               .kp = j,
			                               .ui = (uint32_t)u,
			                               .shard = mx->first[mx->kp[j].k] + un->shard,
			                               .block = un->block,
			                               .records = un->records,
			                               .unused = un->unused};
		}
	}
	uint64_t b = 0;
	size_t *m = pmix_grow(mx->map, &mx->map_cap, RF_MAX(mapped, 1), sizeof(size_t), &b);
	if (!m)
		return rf_fail(err, -ENOMEM, "mixture: out of memory for %zu units", mapped);
	mx->map = m;
	mx->epoch_bytes += b;
	return 0;
}

static int pmix_epoch(rf_plan *plan, rf_error *err)
{
	plan_mix *mx = plan->mix;
	uint64_t epoch = plan->epoch;
	mx->g0 = pmix_g0(mx, epoch);
	mx->nkp = 0;
	mx->ngrp = 0;
	mx->cur_valid = false;
	mx->memo_q = UINT64_MAX;
	pmix_raw *raw = NULL;
	pmix_tmp *tmp = NULL;
	size_t nraw = 0, rawcap = 0, ntmp = 0, tmpcap = 0;
	int rc = 0;
	uint64_t q = 0;
	for (uint32_t i = 0; rc == 0 && i < plan->npieces; i++) {
		plan_piece *pc = &plan->pieces[i];
		pc->q = q;
		q += pc->len;
		rf_mix_counts(mx->m, mx->g0 + pc->x, mx->ca);
		rf_mix_counts(mx->m, mx->g0 + pc->x + pc->len, mx->cb);
		for (uint32_t k = 0; rc == 0 && k < mx->k; k++)
			if (mx->cb[k] > mx->ca[k])
				rc = pmix_add_range(mx, &raw, &nraw, &rawcap, k, epoch, mx->ca[k],
				                    mx->cb[k], i, err);
	}
	plan->epoch_records = q;
	if (rc == 0)
		rc = pmix_layout(mx, raw, nraw, err);
	free(raw);
	if (rc == 0)
		rc = pmix_collect(plan, &tmp, &ntmp, &tmpcap, err);
	if (rc == 0)
		rc = rf_plan_units_reserve(plan, RF_MAX(ntmp, 1), err);
	uint64_t gb = 0;
	pmix_group *g =
	    rc == 0 ? pmix_grow(mx->grp, &mx->grp_cap, RF_MAX(ntmp, 1), sizeof(*g), &gb) : NULL;
	if (rc == 0 && !g)
		rc = rf_fail(err, -ENOMEM, "mixture: out of memory for %zu units", ntmp);
	if (rc < 0) {
		free(tmp);
		return rc;
	}
	mx->grp = g;
	mx->epoch_bytes += gb;
	qsort(tmp, ntmp, sizeof(*tmp), pmix_tmp_cmp);
	uint64_t p = 0;
	for (size_t i = 0; i < ntmp; i++) {
		const pmix_kp *kp = &mx->kp[tmp[i].kp];
		if (i == 0 || tmp[i].fn != tmp[i - 1].fn || tmp[i].kp != tmp[i - 1].kp) {
			if (mx->ngrp > 0)
				mx->grp[mx->ngrp - 1].b = p;
			mx->grp[mx->ngrp++] = (pmix_group){.fn = tmp[i].fn, .a = p};
		}
		plan->units[i] = (rf_unit){.shard = tmp[i].shard,
		                           .block = tmp[i].block,
		                           .records = tmp[i].records,
		                           .unused = tmp[i].unused,
		                           .first_plan_record = p,
		                           .release_pos = tmp[i].rel};
		mx->map[kp->map0 + tmp[i].ui] = i;
		p += tmp[i].records;
	}
	if (mx->ngrp > 0)
		mx->grp[mx->ngrp - 1].b = p;
	free(tmp);
	plan->unit_count = ntmp;
	plan->plan_records = p;
	return 0;
}

/* --------------------------------------------------------- lookups */

static void pmix_locate(const rf_plan *cplan, uint64_t q, size_t *unit, uint32_t *record)
{
	rf_plan *plan = (rf_plan *)cplan; /* the lookup's cursor and the sub-plans' pass */
	plan_mix *mx = plan->mix;
	if (mx->memo_q == q) { /* the collator asks twice: for the plan position, then the unit */
		*unit = mx->memo_unit;
		*record = mx->memo_record;
		return;
	}
	const plan_piece *pc = rf_plan_piece_at_stream(plan, q);
	uint32_t piece = (uint32_t)(pc - plan->pieces);
	uint64_t g = mx->g0 + pc->x + (q - pc->q);
	if (!mx->cur_valid || mx->cur.n != g) {
		rf_mix_cursor_init(&mx->cur, mx->m, g, mx->cur_count, mx->cur_local);
		mx->cur_valid = true;
	}
	uint32_t k = rf_mix_cursor_next(&mx->cur);
	uint64_t o = rf_mix_rebase_o(mx->rb, k, mx->cur_count[k] - 1);
	uint64_t pass = mx->stop_first ? plan->epoch : o / mx->n[k];
	uint64_t i = mx->stop_first ? o : o % mx->n[k];
	/* the kp of (k, pass): the source's kps are sorted by pass */
	uint32_t lo = mx->src_kp0[k], hi = lo + mx->src_nkp[k];
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (mx->kp[mid].pass <= pass)
			lo = mid;
		else
			hi = mid;
	}
	const pmix_kp *kp = &mx->kp[lo];
	/* its segment holding i from this piece (in piece order; a piece gives
	 * a kp more than one when a weight change's runs split its ordinals) */
	uint32_t a = 0, b = kp->nsegs;
	while (b - a > 1) {
		uint32_t mid = a + (b - a) / 2;
		uint32_t mp = mx->seg_piece[kp->seg0 + mid];
		if (mp < piece || (mp == piece && mx->seg[kp->seg0 + mid].start <= i))
			a = mid;
		else
			b = mid;
	}
	const rf_segment *sg = &mx->seg[kp->seg0 + a];
	uint64_t s = mx->prefix[kp->pre0 + a] + (i - sg->start);
	rf_error err = {0};
	*unit = plan->unit_count;
	*record = 0;
	if (pmix_switch(mx, lo, &err) < 0)
		return; /* unreachable: the pass's arrays were reserved when the epoch was built */
	size_t su;
	uint32_t r;
	rf_plan_locate(mx->subs[k], s, &su, &r);
	if (su >= kp->nunits)
		return;
	*unit = mx->map[kp->map0 + su];
	*record = r;
	mx->memo_q = q;
	mx->memo_unit = *unit;
	mx->memo_record = r;
}

/* The group holding local plan position P (< P total). */
static const pmix_group *pmix_group_at(const plan_mix *mx, uint64_t P)
{
	size_t lo = 0, hi = mx->ngrp;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (mx->grp[mid].a <= P)
			lo = mid;
		else
			hi = mid;
	}
	return &mx->grp[lo];
}

static uint64_t pmix_resident_stream(const rf_plan *plan, uint64_t plan_pos)
{
	const plan_mix *mx = plan->mix;
	if (mx->ngrp == 0)
		return plan->epoch_records;
	return RF_MIN(pmix_group_at(mx, plan_pos)->fn, plan->epoch_records);
}

static uint64_t pmix_need(const rf_plan *plan, uint64_t stream_pos)
{
	const plan_mix *mx = plan->mix;
	/* the end of the last group first needed at or before stream_pos - 1 */
	size_t lo = 0, hi = mx->ngrp;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (mx->grp[mid].fn <= stream_pos - 1)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? 0 : mx->grp[lo - 1].b;
}

static uint64_t pmix_window_end(const rf_plan *plan, uint64_t plan_pos)
{
	const plan_mix *mx = plan->mix;
	if (mx->ngrp == 0)
		return plan->plan_records;
	return pmix_group_at(mx, plan_pos)->b;
}

static uint32_t pmix_units_in_window_max(const rf_plan *plan)
{
	const plan_mix *mx = plan->mix;
	uint64_t sum = 0;
	for (uint32_t k = 0; k < mx->k; k++)
		sum += rf_plan_units_in_window_max(mx->subs[k]);
	return (uint32_t)RF_MIN(sum, UINT32_MAX);
}

/* Units of source k that `records` consecutive records of its endless
 * stream touch (passes back to back). */
static uint64_t pmix_src_units(const plan_mix *mx, uint32_t k, uint64_t records)
{
	const rf_plan *sub = mx->subs[k];
	if (sub->nonempty_blocks == 0)
		return 0;
	if (records >= mx->n[k])
		return sub->nonempty_blocks * (records / RF_MAX(mx->n[k], 1) + 2);
	return rf_plan_span_units_max(sub, records) + 2;
}

/* Source k's records in a span of `span` mixture samples (within 1). */
static uint64_t pmix_src_records(const plan_mix *mx, uint32_t k, uint64_t span)
{
	return (uint64_t)(((unsigned __int128)span * mx->w[k] + mx->T - 1) / mx->T) + 1;
}

static uint64_t pmix_span_units_max(const rf_plan *plan, uint64_t span_records)
{
	const plan_mix *mx = plan->mix;
	uint64_t sum = 0;
	for (uint32_t k = 0; k < mx->k; k++)
		sum += pmix_src_units(
		    mx, k, pmix_src_records(mx, k, span_records) + 2 * mx->subs[k]->window);
	return sum;
}

uint64_t rf_plan_mix_resident_units(const rf_plan *plan, uint64_t batch)
{
	const plan_mix *mx = plan->mix;
	if (!mx)
		return 0;
	/* each source: the windows a batch's share of it spans, one more when
	 * it straddles one */
	uint64_t sum = 0;
	for (uint32_t k = 0; k < mx->k; k++) {
		uint64_t w = mx->subs[k]->window, b = pmix_src_records(mx, k, batch);
		uint64_t span = w > 1 ? (b + w - 1) / w * w + w : 2 * b;
		sum += pmix_src_units(mx, k, span);
	}
	return sum;
}

uint64_t rf_plan_mix_ring_units(const rf_plan *plan, uint64_t batch, uint32_t *longest)
{
	const plan_mix *mx = plan->mix;
	if (!mx)
		return 0;
	/* A source window stays held from its first sample to its last: that
	 * long in mixture samples, every source's units pass through the ring. */
	const uint32_t *w = mx->w, T = mx->T;
	uint64_t hold = 0;
	for (uint32_t k = 0; k < mx->k; k++) {
		if (w[k] == 0)
			continue;
		uint64_t win = RF_MAX(mx->subs[k]->window, 1);
		/* its window and the block beside it, plus a batch */
		uint64_t recs = 2 * win + (mx->subs[k]->nonempty_blocks
		                               ? mx->n[k] / mx->subs[k]->nonempty_blocks + 1
		                               : 1);
		uint64_t span = (uint64_t)(((unsigned __int128)recs * T + w[k] - 1) / w[k]);
		if (span > hold)
			*longest = k;
		hold = RF_MAX(hold, span);
	}
	return pmix_span_units_max(plan, hold + batch);
}

uint32_t rf_plan_mix_source_of(const rf_plan *plan, uint64_t stream_pos)
{
	plan_mix *mx = plan->mix;
	if (!mx || stream_pos >= plan->epoch_records)
		return 0;
	const plan_piece *pc = rf_plan_piece_at_stream(plan, stream_pos);
	return rf_mix_source(mx->m, mx->g0 + pc->x + (stream_pos - pc->q), NULL);
}

static const plan_mix_ops pmix_ops = {.epoch = pmix_epoch,
                                      .free = pmix_free,
                                      .memory_bytes = pmix_memory_bytes,
                                      .hash = pmix_hash,
                                      .locate = pmix_locate,
                                      .resident_stream = pmix_resident_stream,
                                      .need = pmix_need,
                                      .window_end = pmix_window_end,
                                      .units_in_window_max = pmix_units_in_window_max,
                                      .span_units_max = pmix_span_units_max};
