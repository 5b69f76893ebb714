/* recycle.h - reads and batches kept for reuse (recycle.c owns e->recycle;
 * mu held). */
#ifndef RF_RECYCLE_H
#define RF_RECYCLE_H

#include <stdint.h>

struct rf_read;
struct rf_ebatch;

/* reads and batches recycled instead of allocated per read and per batch
 * (recycle.c; mu). Each one made stays until close, so there are at most
 * as many as were ever in use at once; their bytes, idle or not, are
 * RF_MEM_METADATA. */
typedef struct rf_engine_recycle {
	struct rf_read *reads;     /* idle reads */
	struct rf_ebatch *batches; /* idle batches (their refs arrays kept) */
	uint64_t bytes;            /* RF_MEM_METADATA reserved for them */
	uint64_t reads_made;       /* allocated since open (stats, tests) */
	uint64_t batches_made;
} rf_recycle;

#endif
