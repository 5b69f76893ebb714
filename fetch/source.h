/* source.h - one small interface for every place shard bytes come from:
 * local files (io_uring reads), HTTP(S) range GETs and S3 (libcurl multi
 * socket API driven by the same loop), and the fault injector that wraps any
 * of them. All calls and callbacks happen on the loop thread; nothing blocks.
 *
 * A read either delivers exactly the bytes asked for or fails with a message
 * naming the URL, byte range and cause (after the source's own retries). */
#ifndef RF_SOURCE_H
#define RF_SOURCE_H

#include "loop.h"
#include "ringfeed.h"

typedef struct rf_fetch rf_fetch;   /* per loader: loop + protocol state + options */
typedef struct rf_source rf_source; /* one shard object */

/* res: >= 0 on success (bytes for reads), negative errno on failure; msg
 * names what failed (NULL on success). */
typedef void (*rf_fetch_cb)(void *arg, int64_t res, const char *msg);

typedef struct rf_fetch_options {
	uint32_t connections;       /* per host (default 16) */
	uint32_t retries;           /* per request (default 5) */
	uint32_t connect_timeout_ms;
	uint32_t request_timeout_ms;
	uint32_t low_speed_bytes_per_s, low_speed_time_s;
	const char *ca_file;
	const char *s3_endpoint, *s3_region, *s3_access_key, *s3_secret_key, *s3_session_token;
	const char *inject;         /* fault injection spec, NULL = none */
} rf_fetch_options;

int rf_fetch_new(rf_loop *loop, const rf_fetch_options *opt, rf_fetch **out, rf_error *err);
void rf_fetch_free(rf_fetch *f); /* closes sources, cancels transfers */
/* Drives protocol state after the loop ran (e.g. curl timeouts); called by
 * the loop owner every tick. Returns the next wanted wake-up in ns (or UINT64_MAX). */
uint64_t rf_fetch_tick(rf_fetch *f);

/* Starts opening url (size_hint = UINT64_MAX when unknown: a HEAD or fstat
 * finds it). cb(arg, 0, NULL) once the size is known. */
int rf_source_open(rf_fetch *f, const char *url, uint64_t size_hint, rf_source **out,
                   rf_fetch_cb cb, void *arg, rf_error *err);
uint64_t rf_source_size(const rf_source *s);
const char *rf_source_name(const rf_source *s); /* never contains credentials */
/* Reads [offset, offset+len) into buf; cb(arg, len, NULL) or cb(arg, -errno, msg). */
int rf_source_read(rf_source *s, uint64_t offset, uint64_t len, void *buf, rf_fetch_cb cb,
                   void *arg);
void rf_source_close(rf_source *s);

#endif
