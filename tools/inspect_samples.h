/* inspect_samples.h - `ringfeed inspect` for shards of samples with fields
 * (inspect_samples.c). */
#ifndef RF_INSPECT_SAMPLES_H
#define RF_INSPECT_SAMPLES_H

#include "ringfeed.h"
#include <stdbool.h>

/* A name inspect reads through a loader (.tar, .mds, .mds.zstd). */
bool rf_inspect_is_samples(const char *path);
/* Prints the shard's samples and, per field, present count, bytes, largest.
 * Returns the exit status. */
int rf_inspect_samples(const char *path, int json);

#endif
