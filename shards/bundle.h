/* bundle.h - the index bundle (docs/format.md "Index bundle"): one file
 * beside a manifest holding, for each shard it lists, the bytes at the
 * shard's end that its open reads (an .rfs shard's footer and index), so a
 * loader learns every layout from one object instead of one request per
 * shard. It lies beside its manifest (NAME.rfx for NAME.rfm:
 * rf_index_bundle_name); `pack` writes it.
 * A bundle is a copy, never the authority: the open checks what it serves
 * as it checks the store's bytes, and bytes it refuses are read from the
 * shard instead. Internal. */
#ifndef RF_BUNDLE_H
#define RF_BUNDLE_H

#include "ringfeed.h"
#include <stdint.h>

#define RF_BUNDLE_MAGIC       "RFINDEX1"
#define RF_BUNDLE_MAGIC_BYTES 8
#define RF_BUNDLE_VERSION     1u
#define RF_BUNDLE_HEADER      16 /* magic, version, count */
#define RF_BUNDLE_ENTRY_HEAD  16 /* path_len, tail_len, file_bytes */
#define RF_BUNDLE_FILE_MAX    (512ull << 20)
/* A tail is at most this long (an index of RF_INDEX_BLOCKS_MAX entries
 * and more, far past pack's; a bundle entry past it is damage). */
#define RF_BUNDLE_TAIL_MAX (64u << 20)
/* An entry holds at least the shard's last 8 KiB (or all of a smaller one):
 * the first range an .rfs open asks for (rfs_format.c) lies inside it. */
#define RF_BUNDLE_TAIL_MIN (8u << 10)

typedef struct rf_bundle_entry {
	const char *path; /* as the manifest line has it: not NUL-terminated */
	uint32_t path_len;
	uint32_t tail_len;
	uint64_t file_bytes;
	const uint8_t *tail; /* the shard's last tail_len bytes */
} rf_bundle_entry;

typedef struct rf_bundle {
	uint32_t count;
	rf_bundle_entry *entry; /* pointing into the parsed buffer */
} rf_bundle;

/* Parses buf (the whole file); the entries point into buf, which must
 * outlive *out. Errors name `name`, the entry and its byte offset. */
int rf_bundle_parse(const uint8_t *buf, size_t len, const char *name, rf_bundle **out,
                    rf_error *err);
void rf_bundle_free(rf_bundle *b);
/* Writes a bundle of `count` entries to path, one entry at a time (a
 * temporary file renamed into place by close; abort removes it). */
typedef struct rf_bundle_writer rf_bundle_writer;
rf_bundle_writer *rf_bundle_writer_open(const char *path, uint32_t count, rf_error *err);
int rf_bundle_writer_add(rf_bundle_writer *w, const rf_bundle_entry *e, rf_error *err);
int rf_bundle_writer_close(rf_bundle_writer *w, rf_error *err);
void rf_bundle_writer_abort(rf_bundle_writer *w);

#endif
