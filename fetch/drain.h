/* drain.h - reads whole objects through the fetch layer without decoding
 * them: the storage path alone (`ringfeed bench --fetch-only`). Internal. */
#ifndef RF_DRAIN_H
#define RF_DRAIN_H

#include "source.h"
#include "url.h"

#define RF_DRAIN_INFLIGHT_MAX 1024u

typedef struct rf_drain_report {
	uint64_t objects, bytes, reads;
	double seconds;            /* from the first open to the last byte (buffers made before) */
	uint64_t registered_bytes; /* of the buffers, registered with the ring (direct_io) */
} rf_drain_report;

/* Opens every object of objs (size hints used when known) and reads each
 * one whole, in ranges of request_bytes, with at most `inflight` reads in
 * flight (buffers allocated once: inflight x request_bytes, registered with
 * the ring when direct_io is not off, so local reads go as READ_FIXED; a
 * refusal leaves plain reads and is in f's counters). Drives f's loop
 * until done: call it on the loop's thread. The first failure stops it with
 * the source's message. */
int rf_fetch_drain(rf_fetch *f, const rf_url_list *objs, uint64_t request_bytes, uint32_t inflight,
                   rf_drain_report *out, rf_error *err);

#endif
