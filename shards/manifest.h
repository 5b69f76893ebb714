/* manifest.h - the shard manifest (a text list of shards with their sizes and
 * record counts). The API is public (ringfeed.h: rf_manifest_*); this header
 * is what internal users include. Format: docs/format.md. */
#ifndef RF_MANIFEST_H
#define RF_MANIFEST_H

#include "ringfeed.h"

/* Joins base (a directory or URL prefix) and a relative path: malloc'd. */
char *rf_manifest_join(const char *base, const char *path);

#endif
