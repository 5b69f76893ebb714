/* recycle.c - the engine's free lists of reads (rf_read) and batches
 * (rf_ebatch with its refs array), so that the steady state allocates
 * nothing per read or per batch: a read or batch comes off its list and
 * goes back on it; only when the list is empty is one allocated, its bytes
 * reserved first (RF_MEM_METADATA, refused like any reservation). Nothing
 * is freed before close, so the lists hold at most as many as were ever in
 * use at once (bounded by the ring's units for reads, by the ready queue
 * plus the consumer's held batches for batches). A few of each are made at
 * open (rf_recycle_seed), inside the open-time metadata, so that a loader
 * at its minimum budget needs no reservation for them. All with mu held. */
#include "engine.h"
#include "util.h"

#include <stdlib.h>

#define RF_RECYCLE_SEED_BATCHES 4    /* batches made at open */
#define RF_RECYCLE_SEED_REFS    1024 /* the most refs each of them holds */

static uint64_t rf_ebatch_bytes(uint32_t refs)
{
	return sizeof(rf_ebatch) + (uint64_t)refs * sizeof(rf_rec_ref);
}

static int rf_recycle_reserve(rf_engine *e, uint64_t bytes) RF_REQUIRES(rf_engine_mu)
{
	if (rf_budget_reserve(&e->budget, RF_MEM_METADATA, bytes, 0) < 0)
		return -ENOBUFS;
	e->recycle->bytes += bytes;
	return 0;
}

static void rf_recycle_release(rf_engine *e, uint64_t bytes) RF_REQUIRES(rf_engine_mu)
{
	rf_budget_release(&e->budget, RF_MEM_METADATA, bytes);
	e->recycle->bytes -= bytes;
}

int rf_read_get(rf_engine *e, rf_read **out) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_read *rd = e->recycle->reads;
	if (rd) {
		e->recycle->reads = rd->next_idle;
	} else {
		RF_TRY(rf_recycle_reserve(e, sizeof(*rd)));
		if (!(rd = malloc(sizeof(*rd)))) {
			rf_recycle_release(e, sizeof(*rd));
			return -ENOMEM;
		}
		e->recycle->reads_made++;
	}
	memset(rd, 0, sizeof(*rd));
	*out = rd;
	return 0;
}

/* Grows b's refs array to hold n entries (reserved first). */
static int rf_ebatch_refs(rf_engine *e, rf_ebatch *b, uint32_t n) RF_REQUIRES(rf_engine_mu)
{
	if (b->refs_cap >= n)
		return 0;
	uint64_t more = (uint64_t)(n - b->refs_cap) * sizeof(rf_rec_ref);
	if (rf_recycle_reserve(e, more) < 0)
		return -ENOBUFS;
	rf_rec_ref *r = realloc(b->refs, (size_t)n * sizeof(*r));
	if (!r) {
		rf_recycle_release(e, more);
		return -ENOMEM;
	}
	b->refs = r;
	b->refs_cap = n;
	return 0;
}

/* A batch off the list (the first that has room for refs entries, else the
 * first, grown), or a new one. */
int rf_ebatch_get(rf_engine *e, uint32_t refs, rf_ebatch **out) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_ebatch **at = &e->recycle->batches;
	while (*at && (*at)->refs_cap < refs)
		at = &(*at)->next_idle;
	if (!*at)
		at = &e->recycle->batches;
	rf_ebatch *b = *at;
	if (b) {
		*at = b->next_idle;
	} else {
		RF_TRY(rf_recycle_reserve(e, sizeof(*b)));
		if (!(b = calloc(1, sizeof(*b)))) {
			rf_recycle_release(e, sizeof(*b));
			return -ENOMEM;
		}
		e->recycle->batches_made++;
	}
	int rc = rf_ebatch_refs(e, b, refs);
	if (rc < 0) {
		rf_ebatch_put(e, b);
		return rc;
	}
	rf_rec_ref *keep = b->refs;
	uint32_t cap = b->refs_cap;
	memset(b, 0, sizeof(*b));
	b->refs = keep;
	b->refs_cap = cap;
	*out = b;
	return 0;
}

void rf_ebatch_put(rf_engine *e, rf_ebatch *b) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	b->magic = 0;
	b->next_idle = e->recycle->batches;
	e->recycle->batches = b;
}

static uint64_t rf_recycle_seed_reads(const rf_engine *e)
{
	return 2ull * e->threads + 2;
}

static uint32_t rf_recycle_seed_refs(const rf_engine *e)
{
	return (uint32_t)RF_MAX(1, RF_MIN(e->cp.batch_records, RF_RECYCLE_SEED_REFS));
}

uint64_t rf_recycle_seed_bytes(const rf_engine *e)
{
	return rf_recycle_seed_reads(e) * sizeof(rf_read) +
	       RF_RECYCLE_SEED_BATCHES * rf_ebatch_bytes(rf_recycle_seed_refs(e));
}

/* Made without a reservation of their own: rf_memory_check counted them in
 * the open-time metadata. Before the workers start and before the loop
 * thread is told to go (under mu, which publishes the lists): mu not
 * needed. */
int rf_recycle_seed(rf_engine *e) RF_ALONE
{
	uint32_t refs = rf_recycle_seed_refs(e);
	int rc = 0;
	for (uint64_t i = 0; rc == 0 && i < rf_recycle_seed_reads(e); i++) {
		rf_read *rd = calloc(1, sizeof(*rd));
		if (!rd) {
			rc = -ENOMEM;
		} else {
			rd->next_idle = e->recycle->reads;
			e->recycle->reads = rd;
		}
	}
	for (uint32_t i = 0; rc == 0 && i < RF_RECYCLE_SEED_BATCHES; i++) {
		rf_ebatch *b = calloc(1, sizeof(*b));
		rf_rec_ref *r = b ? malloc((size_t)refs * sizeof(*r)) : NULL;
		if (!r) {
			free(b);
			rc = -ENOMEM;
		} else {
			b->refs = r;
			b->refs_cap = refs;
			b->next_idle = e->recycle->batches;
			e->recycle->batches = b;
		}
	}
	return rc;
}

void rf_recycle_free(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	while (e->recycle->reads) {
		rf_read *rd = e->recycle->reads;
		e->recycle->reads = rd->next_idle;
		free(rd);
	}
	while (e->recycle->batches) {
		rf_ebatch *b = e->recycle->batches;
		e->recycle->batches = b->next_idle;
		free(b->refs);
		free(b);
	}
	rf_budget_release(&e->budget, RF_MEM_METADATA, e->recycle->bytes);
	e->recycle->bytes = 0;
}
