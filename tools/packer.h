/* packer.h - turns a stream of records into numbered shards plus a manifest
 * (used by `ringfeed pack` and the demo generator). Public API only. */
#ifndef RF_PACKER_H
#define RF_PACKER_H

#include "ringfeed.h"

#include <stdio.h>

#define RF_PACK_MANIFEST "manifest.rfm"
#define RF_PACK_BUNDLE   "manifest.rfx" /* the manifest's index bundle (rf_index_bundle_name) */

typedef struct rf_pack {
	char *dir;
	rf_writer_options wopt;
	uint64_t shard_bytes; /* a new shard starts once rf_writer_bytes reaches this */
	rf_writer *w;
	uint32_t shard_no;
	uint64_t shard_records;
	rf_manifest m; /* entries written so far (names relative to dir) */
	size_t cap;
	uint64_t in_bytes, records, out_bytes;
	int progress; /* print a progress line on stderr */
	uint64_t t0_ns, last_ns;
	uint64_t progress_total_bytes;        /* input size for percent / time left (0: unknown) */
	uint64_t progress_record_extra_bytes; /* input bytes per record beyond its payload */
} rf_pack;

/* Refuses a directory that already holds shards or a manifest (-EEXIST,
 * naming one) unless clean: then what an earlier pack wrote is removed
 * (other .rfs files are refused still). */
int rf_pack_begin(rf_pack *p, const char *dir, const rf_writer_options *wopt, uint64_t shard_bytes,
                  int progress, int clean, rf_error *err);
int rf_pack_add(rf_pack *p, const void *rec, size_t len, rf_error *err);
/* Closes the last shard and writes DIR/manifest.rfm; frees p's state. */
int rf_pack_finish(rf_pack *p, rf_error *err);
/* Removes the shard being written; frees p's state. */
void rf_pack_abort(rf_pack *p);

/* mkdir -p */
int rf_tool_mkdirs(const char *dir, rf_error *err);
/* DIR/shard-%06u.rfs into buf; -ENAMETOOLONG when it does not fit. */
int rf_pack_shard_name(char *buf, size_t cap, const char *dir, uint32_t no);
uint64_t rf_tool_now_ns(void);
/* Reads up to cap bytes from the start of a local file without blocking on
 * a FIFO or device (refused: not a regular file). Returns the bytes read or
 * a negative errno with err naming the path. */
int rf_tool_read_head(const char *path, void *buf, size_t cap, rf_error *err);
/* The compression ratio `pack` and `inspect` print: record payload bytes
 * over the bytes stored (whole shard files: blocks, index, footer); 0 for
 * an empty dataset. */
double rf_tool_ratio(uint64_t payload_bytes, uint64_t file_bytes);
/* Sets err and returns code (tools cannot use the library's internal rf_fail). */
int rf_tool_fail(rf_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
