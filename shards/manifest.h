/* manifest.h - the shard manifest (a text list of shards with their sizes and
 * record counts). The API is public (ringfeed.h: rf_manifest_*); this header
 * is what internal users include. Format: docs/format.md. */
#ifndef RF_MANIFEST_H
#define RF_MANIFEST_H

#include "ringfeed.h"
#include <stdbool.h>

/* A local manifest file parsed with its entries as its lines give them
 * (no base joined): what the index bundle keeps. */
int rf_manifest_read_file_raw(const char *path, rf_manifest **out, rf_error *err);

/* Joins base (a directory or URL prefix) and a relative path: malloc'd. */
char *rf_manifest_join(const char *base, const char *path);

/* What building a shard list from a manifest's text costs, learned before
 * it is parsed: the entries (lines that are not blank or comments; the
 * first line, the magic, is not one) and the bytes of their lines. The
 * text is fed in pieces of any size; a count of what it sees, so bad lines
 * are still the parser's to name. */
typedef struct rf_manifest_count {
	uint64_t entries, entry_bytes;
	uint64_t lines;     /* newlines seen */
	uint64_t over_line; /* the line of entry RF_MANIFEST_ENTRIES_MAX + 1 (0: none) */
	uint64_t at_line;   /* bytes of the current line so far */
	bool skip;          /* the current line is the magic, blank or a comment */
} rf_manifest_count;
void rf_manifest_count_feed(rf_manifest_count *c, const char *buf, size_t len);
void rf_manifest_count_end(rf_manifest_count *c);
/* The count of a local manifest file, read in 64 KiB pieces (never whole). */
int rf_manifest_count_file(const char *path, rf_manifest_count *c, rf_error *err);

#endif
