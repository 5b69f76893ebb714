/* parquet.h - Apache Parquet files behind the format seam (parquet.c: the
 * open steps and the layout; parquet_meta.c: FileMetaData and page headers
 * through thrift.c; parquet_page.c: pages, codecs and encodings into a
 * column's values). Internal; docs/format.md, "Parquet". */
#ifndef RF_PARQUET_H
#define RF_PARQUET_H

#include "format.h"
#include "tokens.h"

#define RF_PQ_FOOTER_MAX  (64u << 20) /* FileMetaData's bytes */
#define RF_PQ_COLUMNS_MAX 4096        /* leaf columns of a schema */
#define RF_PQ_SELECT_MAX  256         /* columns a record has */
#define RF_PQ_GROUPS_MAX  (1u << 20)  /* row groups of a file */
#define RF_PQ_NAME_MAX    255         /* a column's name */
#define RF_PQ_DICT_MAX    (64u << 20) /* a dictionary page read at open */
#define RF_PQ_ABSENT      UINT32_MAX  /* a null row's length */

/* parquet.thrift enums */
enum { PQ_BOOLEAN, PQ_INT32, PQ_INT64, PQ_INT96, PQ_FLOAT, PQ_DOUBLE, PQ_BYTE_ARRAY, PQ_FLBA };
enum {
	PQ_CODEC_NONE = 0,
	PQ_CODEC_SNAPPY = 1,
	PQ_CODEC_GZIP = 2,
	PQ_CODEC_LZO = 3,
	PQ_CODEC_BROTLI = 4,
	PQ_CODEC_LZ4 = 5,
	PQ_CODEC_ZSTD = 6,
	PQ_CODEC_LZ4_RAW = 7,
};
enum {
	PQ_ENC_PLAIN = 0,
	PQ_ENC_PLAIN_DICTIONARY = 2,
	PQ_ENC_RLE = 3,
	PQ_ENC_BIT_PACKED = 4,
	PQ_ENC_DELTA_BINARY_PACKED = 5,
	PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
	PQ_ENC_DELTA_BYTE_ARRAY = 7,
	PQ_ENC_RLE_DICTIONARY = 8,
	PQ_ENC_BYTE_STREAM_SPLIT = 9,
};
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICT = 2, PQ_PAGE_DATA_V2 = 3 };
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };

/* One element of the schema's flat list (depth-first, num_children). */
typedef struct pq_schema_el {
	const char *name; /* NUL-terminated, in pq_file_meta.names */
	int32_t type;     /* -1: a group */
	int32_t type_length;
	int32_t repetition; /* -1: not said */
	int32_t num_children;
	int32_t converted; /* -1: none */
	bool logical_list; /* logicalType LIST */
} pq_schema_el;

/* A column chunk's metadata (ColumnChunk.meta_data). */
typedef struct pq_chunk_meta {
	int32_t type, codec;
	uint32_t encodings; /* bit e set: encoding e listed */
	int64_t num_values, total_uncompressed, total_compressed;
	int64_t data_page_offset, dictionary_page_offset; /* -1: none */
	int64_t unencoded_bytes;                          /* SizeStatistics; -1: none */
	bool has_file_path;
} pq_chunk_meta;

typedef struct pq_row_group {
	int64_t num_rows;
	uint32_t first_chunk, chunks; /* into pq_file_meta.chunk */
} pq_row_group;

typedef struct pq_file_meta {
	int64_t num_rows;
	uint32_t schema_n, groups_n, chunks_n;
	pq_schema_el *schema;
	pq_row_group *group;
	pq_chunk_meta *chunk;
	char *names; /* the schema's names */
	uint64_t held_bytes;
} pq_file_meta;

/* What FileMetaData of `len` bytes may allocate at most. */
uint64_t rf_pq_meta_bound(uint64_t len);
/* Parses FileMetaData. Errors name the shard and the footer byte. */
int rf_pq_meta_parse(const uint8_t *buf, size_t len, pq_file_meta *m, const char *name, uint64_t at,
                     rf_error *err);
void rf_pq_meta_free(pq_file_meta *m);

typedef struct pq_page_header {
	int32_t type, uncompressed, compressed;
	bool has_crc;
	uint32_t crc;
	int32_t num_values, encoding, def_encoding, rep_encoding; /* v1, v2, dictionary */
	int32_t num_nulls, num_rows, def_bytes, rep_bytes;        /* v2 */
	bool v2_compressed;
	bool has_data, has_dict, has_v2;
} pq_page_header;

/* A page header at buf (at most len bytes): *hdr_len its bytes. */
int rf_pq_page_header(const uint8_t *buf, size_t len, pq_page_header *h, uint32_t *hdr_len,
                      const char **why);

/* A selected column: what decoding it needs. */
enum { PQ_FLAT = 0, PQ_LIST = 1 };
typedef struct pq_column {
	char name[RF_PQ_NAME_MAX + 1]; /* the field's name: the top-level name */
	uint32_t leaf;                 /* its chunk's index in a row group */
	int32_t type, type_length;
	uint8_t kind, max_def, max_rep;
	uint8_t list_def; /* PQ_LIST: the def level of an empty list (below: null) */
	uint32_t width;   /* bytes of one value; 0: BYTE_ARRAY */
} pq_column;

/* Where a column chunk's decode puts its output and scratch. */
typedef struct pq_sink {
	uint8_t *out;
	uint64_t out_cap, out_len;
	uint32_t *row_len; /* rows entries: a row's bytes, or RF_PQ_ABSENT */
	uint64_t rows;
	uint8_t *scratch;
	uint64_t scratch_cap;
	uint64_t dict_cap; /* the scratch's first bytes: the dictionary's */
	/* compressed data pages decompress into the tail of out (the value
	 * bound then holds the chunk's uncompressed size on top of its values:
	 * decoding moves forward, never past what it has read); else into the
	 * scratch */
	bool page_in_out;
} pq_sink;

/* A chunk's dictionary room in the scratch (dict_bytes: its dictionary
 * page's decoded size when the open read it, else 0: the chunk's size). */
uint64_t rf_pq_dict_cap(const pq_chunk_meta *c, uint64_t dict_bytes);
/* The scratch a chunk needs (rf_pq_chunk_decode's sink.scratch_cap). */
uint64_t rf_pq_chunk_scratch(const pq_chunk_meta *c, uint64_t dict_bytes, bool page_in_out);

/* Decodes one column chunk (its bytes: chunk, len) into s: every row of
 * the row group gets its length. Errors say what and at which byte of the
 * chunk (*at); the caller names file, row group and column. */
int rf_pq_chunk_decode(const pq_column *col, const pq_chunk_meta *c, const uint8_t *chunk,
                       size_t len, pq_sink *s, uint64_t *at, const char **why);

/* The largest value of a BYTE_ARRAY dictionary page (its bytes from the
 * page header on), decompressed into scratch (the chunk's uncompressed size). */
int rf_pq_dict_longest(const pq_chunk_meta *c, const uint8_t *page, size_t len, uint8_t *scratch,
                       uint64_t scratch_cap, uint64_t *longest, uint64_t *dict_bytes,
                       const char **why);

/* ------------------------------------------------------------ the layout */

typedef struct pq_unit_chunk {
	uint64_t start, bytes;      /* in the file */
	uint64_t value_bound;       /* its values' bytes at most */
	uint64_t dict_cap, scratch; /* its dictionary room, its scratch */
	bool page_in_out;           /* pq_sink.page_in_out */
	uint32_t chunk;             /* into meta.chunk */
} pq_unit_chunk;

/* A row group of rows (rows > 0): a read unit, or with seq_len a piece of
 * the token stream (parquet_tokens.c). */
typedef struct pq_unit {
	uint32_t group;
	uint64_t rows, values, scratch; /* values: the columns' bounds summed */
	pq_unit_chunk *c;               /* ncols */
} pq_unit;

/* A read unit of token windows: the windows starting in row groups'
 * units [u0, u_end) (their tokens), read and decoded with the units up to
 * u_last (inclusive) that the last window reaches into. */
typedef struct pq_tok_unit {
	uint32_t u0, u_end, u_last;
	uint64_t first_window, windows;
	uint64_t room, lens, scratch; /* decoded tokens, row lengths, a chunk's scratch */
} pq_tok_unit;

/* The token path (seq_len > 0): one INT32/INT64 column (a list, or one
 * token a row), its values concatenated in row order are the file's token
 * stream, cut into windows as the token formats cut theirs (tokens.h). */
typedef struct pq_tokens {
	uint8_t dtype, out_dtype; /* RF_TOK_I32 / RF_TOK_I64 */
	uint32_t seq_len;
	uint64_t tokens, windows;
	uint64_t *first; /* units + 1: the token a row group's unit starts at */
	pq_tok_unit *tu;
	uint32_t tunits;
} pq_tokens;

typedef struct pq_layout {
	pq_file_meta m;
	uint32_t ncols;
	pq_column col[RF_PQ_SELECT_MAX];
	const char *names[RF_PQ_SELECT_MAX];
	pq_unit *unit;
	pq_unit_chunk *uc;
	uint32_t units;
	uint64_t payload;
	char stem[48]; /* the file's name without .parquet: the keys' prefix */
	bool tokens;   /* seq_len: records are windows (tok) */
	pq_tokens tok;
} pq_layout;

/* Parquet's options (rf_parquet_format.options): the columns a record has
 * and the token files' options for the token path. Zero = defaults. */
#define RF_PQ_COLUMNS_BYTES 1024 /* the columns option's list, with its NUL */
typedef struct rf_pq_opts {
	char columns[RF_PQ_COLUMNS_BYTES]; /* comma list; "" = every column read */
	rf_tok_opts tok;                   /* seq_len > 0: records are token windows */
} rf_pq_opts;
/* Parses the key columns and the token files' keys (rf_tok_opts_parse)
 * into out (an rf_pq_opts). */
int rf_pq_opts_parse(const rf_fmt_config *cfg, void *out, rf_error *err);

/* With seq_len (opt): the token column among the selected ones (the only
 * one left in L, before its units are built), its dtype and the windows'
 * options; 0 without seq_len. */
int rf_pq_tok_select(pq_layout *L, const rf_pq_opts *opt, const char *name, rf_error *err);
/* The open's read of row group unit u's token chunk (parse_bound: what
 * counting it allocates), refused past a unit's limits. */
int rf_pq_tok_want(const pq_layout *L, uint32_t u, uint64_t *off, uint64_t *len, uint64_t *bound,
                   const char *name, rf_error *err);
/* Counts unit u's tokens from its chunk's bytes (the whole chunk). */
int rf_pq_tok_count(pq_layout *L, uint32_t u, const uint8_t *chunk, size_t len, const char *name,
                    rf_error *err);
/* The windows' units into ix (blocks, records, sizes) and its metadata. */
int rf_pq_tok_units(pq_layout *L, rf_shard_index *ix, const char *name, rf_error *err);
/* Decodes token unit u: its row groups' chunks, then the windows copied. */
int rf_pq_tok_decode(const pq_layout *L, const rf_shard_index *ix, uint32_t u, const void *src,
                     size_t src_len, void *dst, size_t dst_cap, rf_unit_records *out,
                     const char *name, rf_error *err);
/* What the token path holds (its tables). */
uint64_t rf_pq_tok_held(const pq_layout *L);

#endif
