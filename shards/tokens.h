/* tokens.h - what the token-file formats (megatron.c, llmc.c) share: token
 * dtypes (named and numbered as Megatron's indexed_dataset.py numbers them,
 * plus uint32 for llm.c v7), and cutting a run of records into read units
 * of about RF_TOK_UNIT_BYTES stored bytes, each unit whole records, stored
 * as they decode (in place). Internal to shards/. */
#ifndef RF_TOKENS_H
#define RF_TOKENS_H

#include "format.h"

#include <stdbool.h>
#include <stdint.h>

#define RF_TOK_UNIT_BYTES       (1u << 20)   /* a read unit's target stored bytes */
#define RF_TOK_UNIT_RECORDS_MAX (1u << 16)   /* records in one unit (its table: 256 KiB) */
#define RF_TOK_RECORDS_MAX      (1ull << 31) /* sequences / documents in one file */

#define RF_TOK_METADATA_MAX 320  /* rf_tok_metadata's string, at most */
#define RF_TOK_RUN_TOKENS   1024 /* a headerless file without an EOT token: records of this */

/* What a token format keeps per shard (its priv), read-only after DONE. */
typedef struct rf_tok_priv {
	uint8_t dtype;     /* stored (RF_TOK_*) */
	uint8_t out_dtype; /* windows: delivered (== dtype unless widened) */
	uint32_t seq_len;  /* > 0: records are windows of seq_len + 1 tokens */
	uint32_t windows_per_unit;
	uint64_t base; /* byte of the object where token 0 is */
	uint64_t tokens, sequences, documents;
	uint32_t *len_tokens; /* records mode: tokens per record */
} rf_tok_priv;

/* Windows (seq_len L > 0): window j is tokens [j L, j L + L + 1) of the
 * object's stream of `tokens` tokens from byte `base`; the tail shorter
 * than L + 1 is dropped. Unit i holds windows [i k, i k + k) and its stored
 * bytes are tokens [i k L, (i k + n) L + 1): consecutive units overlap by
 * one token, so every window lies inside one unit. Decoding copies (and
 * widens) each window into the slab: windows overlap, a record table of
 * ends cannot express them in place. Fills ix and p (seq_len, dtypes set by
 * the caller). */
int rf_tok_windows_build(rf_shard_index *ix, rf_tok_priv *p, const char *name, rf_error *err);

/* decode for every token format (records in place, or windows copied). */
int rf_tok_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                  const void *src, size_t src_len, void *dst, size_t dst_cap, rf_unit_records *out,
                  const char *name, rf_error *err);
void rf_tok_priv_free(rf_tok_priv *p);
/* The records' bytes of a token layout: in place, the units' bytes; windows,
 * their decoded bytes less the record tables. */
uint64_t rf_tok_payload_bytes(const rf_shard_index *ix);
/* The metadata string: a JSON object (format, dtype, tokens, documents, ...). */
int rf_tok_metadata(rf_shard_index *ix, const char *format, const rf_tok_priv *p, const char *name,
                    rf_error *err);
/* The token files' options (megatron, llmc; Parquet's token path): one
 * struct and one parser (rf_format.options) for the family. Zero = defaults. */
typedef struct rf_tok_opts {
	uint8_t token_dtype; /* a headerless token file's dtype (RF_TOK_*); 0 = uint16 */
	bool has_eot;        /* documents of a headerless file end at eot_token */
	uint64_t eot_token;  /* e.g. 50256 (GPT-2's <|endoftext|>) */
	uint32_t seq_len;    /* > 0: records are packed windows of seq_len + 1 tokens */
	uint8_t token_out;   /* windows widened to this dtype (RF_TOK_I32 / I64); 0 = as stored */
} rf_tok_opts;
/* Parses the keys token_dtype, token_out, seq_len and eot_token from cfg
 * into out (an rf_tok_opts): -EINVAL naming the option and its value. */
int rf_tok_opts_parse(const rf_fmt_config *cfg, void *out, rf_error *err);
/* The options' checks and copy into p (seq_len, out dtype); err names the shard. */
int rf_tok_options(rf_tok_priv *p, const rf_tok_opts *opt, const char *name, rf_error *err);

/* The unit table of n records of rec_bytes[i] bytes each (contiguous, from
 * byte `base` of the object) can have at most this many units. */
uint64_t rf_tok_units_bound(uint64_t stored_bytes, uint64_t records);

/* Fills ix (blocks, block[], records, sizes, largest_*) with the units of
 * n contiguous records from byte `base`: a unit is a run of whole records
 * of about RF_TOK_UNIT_BYTES (a record larger than that is its own unit).
 * rec_tokens[i] * itemsize is record i's bytes (each <= RF_BLOCK_DECODED_MAX,
 * checked by the caller). Allocates ix->block (at most rf_tok_units_bound
 * entries) and ix->metadata ("" : the caller sets it). */
int rf_tok_units_build(rf_shard_index *ix, const uint32_t *rec_tokens, uint64_t n,
                       unsigned itemsize, uint64_t base, const char *name, rf_error *err);

/* Writes the record table of unit u (u32 little-endian ends, from
 * rec_tokens) into dst, after checking src_len and dst_cap. */
int rf_tok_unit_table(const rf_shard_index *ix, const uint32_t *rec_tokens, unsigned itemsize,
                      uint32_t u, size_t src_len, void *dst, size_t dst_cap, rf_unit_records *out,
                      const void *src, const char *name, rf_error *err);

/* Frees an index built here (block, metadata, the index). */
void rf_tok_index_free(rf_shard_index *ix);

/* "PREFIX.idx" for "PREFIX.bin", "PREFIX.idx" or "PREFIX" (a query string
 * after '?' stays at the end). Caller frees; NULL when out of memory. */
char *rf_tok_sibling(const char *url, const char *suffix);

/* The token formats (registered in format.c). */
extern const rf_format rf_format_megatron;
extern const rf_format rf_format_llmc;

#endif
