/* mds.h - MosaicML Streaming's MDS shards as formats (mds.c): the table
 * rows and the parsers its tests and fuzz targets reach directly. Internal;
 * see docs/format.md, "MosaicML MDS". */
#ifndef RF_MDS_H
#define RF_MDS_H

#include "format.h"

#define RF_MDS_COLUMNS_MAX     256
#define RF_MDS_NAME_MAX        255         /* a column name's bytes */
#define RF_MDS_CONFIG_MAX      (64u << 10) /* the shard's config JSON */
#define RF_MDS_INDEX_MAX       (64u << 20) /* index.json */
#define RF_MDS_INDEX_WINDOW    (64u << 10) /* what the index.json scanner reads at once */
#define RF_MDS_INDEX_DEPTH_MAX 32          /* how deep index.json's values nest */
#define RF_MDS_UNIT_BYTES      (1u << 20)  /* an uncompressed shard's read unit target */
#define RF_MDS_STEP_BYTES      (64u << 10) /* the first read of a shard's header */
#define RF_MDS_WINDOW_MAX      (1u << 27)  /* a zstd shard's frame window */
#define RF_MDS_KEY_MAX         80          /* a sample's key: SHARD/NNNNNNNN */

/* The formats' names (their rows' `names`; mds_index.c checks an index's
 * entries against them). */
extern const char *const rf_mds_names[];      /* .mds */
extern const char *const rf_mds_zstd_names[]; /* .mds.zstd */
extern const rf_format rf_mds_format;         /* shard.NNNNN.mds */
extern const rf_format rf_mds_zstd_format;    /* shard.NNNNN.mds.zstd: a whole-shard unit */

/* A shard's columns, from its config JSON. */
typedef struct rf_mds_columns {
	uint32_t n, variable; /* columns, of which variable-size */
	char **names, **encodings;
	int64_t *sizes; /* bytes, -1 when variable */
} rf_mds_columns;

/* Parses the writer's config JSON (version 2, format "mds", column_names,
 * column_encodings, column_sizes) into *c. */
int rf_mds_config_parse(const char *text, size_t len, rf_mds_columns *c, const char *name,
                        rf_error *err);
void rf_mds_columns_free(rf_mds_columns *c);
/* The fixed size of an encoding (-1: variable), or -2 when unknown. */
int64_t rf_mds_encoding_size(const char *encoding);

/* The fields of one sample (len bytes at s, `at` its byte in the shard for
 * messages): out[c] for column c, offsets relative to s plus base. */
int rf_mds_sample(const rf_mds_columns *c, const uint8_t *s, uint32_t len, uint32_t base,
                  rf_rec_field *out, const char *name, uint64_t at, rf_error *err);

/* index.json (version 2), read through `read` (mds_index.c): for each
 * shard, add(ctx, basename, bytes) with the file the shard is stored as
 * (zip_data when compressed, else raw_data), a single name component.
 * Holds RF_MDS_INDEX_WINDOW bytes and one shard's fields, whatever the
 * index holds besides; at most RF_MDS_INDEX_MAX bytes, values nested at
 * most RF_MDS_INDEX_DEPTH_MAX deep. rf_mds_index_parse: the same over
 * bytes in memory. */
int rf_mds_index_scan(rf_fmt_stream_fn read, void *rctx, const char *name,
                      int (*add)(void *ctx, const char *basename, uint64_t size_hint,
                                 rf_error *err),
                      void *ctx, rf_error *err);
int rf_mds_index_parse(const uint8_t *buf, size_t len, const char *name,
                       int (*add)(void *ctx, const char *basename, uint64_t size_hint,
                                  rf_error *err),
                       void *ctx, rf_error *err);

#endif
