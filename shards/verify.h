/* verify.h - the shard verifier over any byte source: rf_shard_verify (local
 * files, pread) and rf_verify_shard (any URL, through the fetch layer) both
 * walk a shard with it. Internal. */
#ifndef RF_VERIFY_H
#define RF_VERIFY_H

#include "ringfeed.h"

#include <stdbool.h>

/* Reads exactly [offset, offset+len) into buf, or fails naming what failed
 * (RF_E_CORRUPT only when the bytes are missing, e.g. a file that ended). */
typedef int (*rf_verify_read_fn)(void *ctx, uint64_t offset, uint64_t len, void *buf,
                                 rf_error *err);

typedef struct rf_verify_walk {
	const char *name; /* shown in every message (no credentials) */
	uint64_t size;    /* the object's size */
	rf_verify_read_fn read;
	void *read_ctx;
	void (*report)(void *ctx, const rf_error *e);
	void *ctx;
	uint32_t max_reports;
	/* what a manifest says (checked when listed) and where */
	bool listed;
	uint64_t listed_bytes, listed_records, listed_line;
	const char *manifest;
} rf_verify_walk;

/* Reads footer, index and every block through w->read and checks each rule
 * the reader checks plus the figures only a full decode confirms. Returns 0
 * when sound, RF_E_CORRUPT when not (err: the first problem), or another
 * negative errno when reading failed (err says why). */
int rf_verify_run(const rf_verify_walk *w, rf_error *err);
/* The same walk for a shard of another format behind the seam (tar, MDS):
 * its open, then every unit decoded (format_verify.c); rf_verify_run hands
 * such a shard (by name, the registry's claim) to it. */
struct rf_format;
int rf_format_verify_run(const struct rf_format *f, const rf_verify_walk *w, rf_error *err);

#endif
