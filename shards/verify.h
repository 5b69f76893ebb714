/* verify.h - the shard verifier over any byte source: rf_verify_file (local
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

/* A sidecar object's range ([offset, +len) into buf), or with len 0 only
 * its *size. */
typedef int (*rf_verify_read_object_fn)(void *ctx, const char *object, uint64_t offset,
                                        uint64_t len, void *buf, uint64_t *size, rf_error *err);

typedef struct rf_verify_walk {
	const char *name; /* shown in every message (no credentials) */
	const char *url;  /* what was opened (may carry credentials: never shown); NULL = name */
	bool local;       /* a local file (the format may read more at once) */
	uint64_t size;    /* the object's size */
	rf_verify_read_fn read;
	rf_verify_read_object_fn read_object; /* NULL: sidecars cannot be read */
	const struct rf_format *fmt;          /* NULL: the one the name claims */
	const struct rf_fmt_optset *opts;     /* every format's options; NULL: defaults */
	void *read_ctx;
	void (*report)(void *ctx, const rf_error *e);
	void *ctx;
	uint32_t max_reports;
	/* what a manifest says (checked when listed) and where */
	bool listed;
	uint64_t listed_bytes, listed_records, listed_line;
	const char *manifest;
} rf_verify_walk;

/* Reads the layout (through the shard's format) and every unit through w->read and checks each rule
 * the reader checks plus the figures only a full decode confirms. Returns 0
 * when sound, RF_E_CORRUPT when not (err: the first problem), or another
 * negative errno when reading failed (err says why). */
int rf_verify_run(const rf_verify_walk *w, rf_error *err);

#endif
