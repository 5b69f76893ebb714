/* mixds.h - a mixture's sources built in memory for the plan tests
 * (test_plan_mix.c, test_mix_rebase.c): only record counts matter to a
 * plan, so each shard is an index of random blocks. */
#ifndef RF_TEST_MIXDS_H
#define RF_TEST_MIXDS_H

#include "format.h"
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct mixds {
	uint32_t k, nshards;
	rf_shard_index **ix;
	uint32_t *first;       /* k + 1 */
	uint64_t *shard_first; /* record number of each shard's record 0 inside its source */
	uint64_t *src_records; /* k */
	uint32_t *shard_src;   /* nshards */
} mixds;

static inline uint64_t mixds_rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* k sources, source i with shards[i] shards of 1..max_blocks blocks of
 * min_rec..max_rec records each (a source's first block holds one at
 * least). */
static inline mixds mixds_make(uint32_t k, const uint32_t *shards, uint32_t max_blocks,
                               uint32_t min_rec, uint32_t max_rec, uint64_t seed)
{
	mixds d = {.k = k};
	for (uint32_t i = 0; i < k; i++)
		d.nshards += shards[i];
	d.ix = calloc(d.nshards, sizeof(*d.ix));
	d.first = calloc(k + 1, sizeof(uint32_t));
	d.shard_first = calloc(d.nshards, sizeof(uint64_t));
	d.src_records = calloc(k, sizeof(uint64_t));
	d.shard_src = calloc(d.nshards, sizeof(uint32_t));
	assert_true(d.ix && d.first && d.shard_first && d.src_records && d.shard_src);
	uint32_t s = 0;
	for (uint32_t i = 0; i < k; i++) {
		d.first[i] = s;
		for (uint32_t j = 0; j < shards[i]; j++, s++) {
			rf_shard_index *ix = calloc(1, sizeof(*ix));
			assert_non_null(ix);
			ix->blocks = 1 + (uint32_t)(mixds_rng(&seed) % max_blocks);
			ix->block = calloc(ix->blocks, sizeof(*ix->block));
			assert_non_null(ix->block);
			for (uint32_t b = 0; b < ix->blocks; b++) {
				uint32_t r = min_rec +
				             (uint32_t)(mixds_rng(&seed) % (max_rec - min_rec + 1));
				if (j == 0 && b == 0 && r == 0)
					r = 1; /* every source holds a record */
				ix->block[b].records = r;
				ix->block[b].first_record = ix->records;
				ix->records += r;
			}
			d.ix[s] = ix;
			d.shard_src[s] = i;
			d.shard_first[s] = d.src_records[i];
			d.src_records[i] += ix->records;
		}
	}
	d.first[k] = s;
	return d;
}

static inline void mixds_free(mixds *d)
{
	for (uint32_t s = 0; s < d->nshards; s++) {
		free(d->ix[s]->block);
		free(d->ix[s]);
	}
	free(d->ix);
	free(d->first);
	free(d->shard_first);
	free(d->src_records);
	free(d->shard_src);
}
#endif
