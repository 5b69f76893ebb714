/* tokens.c - what the token-file formats share: dtype names and sizes, the
 * read units of a run of contiguous records (about 1 MiB of whole records
 * each, stored as they decode), a unit's record table, sibling names
 * (PREFIX.bin -> PREFIX.idx). */
#include "tokens.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	unsigned bytes;
} dtypes[RF_TOK_DTYPES] = {
    [RF_TOK_U8] = {"uint8", 1},    [RF_TOK_I8] = {"int8", 1},    [RF_TOK_I16] = {"int16", 2},
    [RF_TOK_I32] = {"int32", 4},   [RF_TOK_I64] = {"int64", 8},  [RF_TOK_F64] = {"float64", 8},
    [RF_TOK_F32] = {"float32", 4}, [RF_TOK_U16] = {"uint16", 2}, [RF_TOK_U32] = {"uint32", 4},
};

const char *rf_tok_dtype_name(int code)
{
	return code > 0 && code < RF_TOK_DTYPES ? dtypes[code].name : NULL;
}

unsigned rf_tok_dtype_bytes(int code)
{
	return code > 0 && code < RF_TOK_DTYPES ? dtypes[code].bytes : 0;
}

int rf_tok_dtype_parse(const char *name)
{
	for (int c = 1; name && c < RF_TOK_DTYPES; c++)
		if (strcmp(name, dtypes[c].name) == 0)
			return c;
	return RF_TOK_NONE;
}

uint64_t rf_tok_units_bound(uint64_t stored_bytes, uint64_t records)
{
	/* Two consecutive units hold more than the target together, or the
	 * first is full of records: so at most 2 per target of bytes, plus
	 * one per RECORDS_MAX records, plus the last. */
	return 2 * (stored_bytes / RF_TOK_UNIT_BYTES + 1) + records / RF_TOK_UNIT_RECORDS_MAX + 1;
}

static void unit_close(rf_shard_index *ix, rf_block_info *b)
{
	b->decoded_bytes = b->compressed_bytes;
	ix->largest_block_compressed_bytes =
	    RF_MAX(ix->largest_block_compressed_bytes, b->compressed_bytes);
	ix->largest_block_decoded_bytes = ix->largest_block_compressed_bytes;
	ix->compressed_bytes += b->compressed_bytes;
	ix->blocks++;
}

int rf_tok_units_build(rf_shard_index *ix, const uint32_t *rec_tokens, uint64_t n,
                       unsigned itemsize, uint64_t base, const char *name, rf_error *err)
{
	uint64_t bytes = 0;
	for (uint64_t i = 0; i < n; i++)
		bytes += (uint64_t)rec_tokens[i] * itemsize; /* each <= 256 MiB, n <= 2^31 */
	uint64_t cap = n ? rf_tok_units_bound(bytes, n) : 0;
	if (cap > UINT32_MAX)
		return rf_fail(err, RF_E_CORRUPT, "%s: %" PRIu64 " records make too many units",
		               name, n);
	ix->block = calloc(cap ? cap : 1, sizeof(*ix->block));
	ix->metadata = calloc(1, 1);
	if (!ix->block || !ix->metadata)
		return rf_fail(err, -ENOMEM, "%s: no memory for %" PRIu64 " units", name, cap);
	uint64_t at = base;
	rf_block_info *b = NULL;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t len = rec_tokens[i] * itemsize;
		if (b && (b->compressed_bytes + (uint64_t)len > RF_TOK_UNIT_BYTES ||
		          b->records == RF_TOK_UNIT_RECORDS_MAX)) {
			unit_close(ix, b);
			b = NULL;
		}
		if (!b) {
			b = &ix->block[ix->blocks];
			*b = (rf_block_info){.offset = at, .first_record = i};
		}
		b->compressed_bytes += len;
		b->records++;
		at += len;
		ix->largest_record_bytes = RF_MAX(ix->largest_record_bytes, len);
	}
	if (b)
		unit_close(ix, b);
	/* keep what the units take (the bound was the most they could) */
	rf_block_info *fit = realloc(ix->block, (ix->blocks ? ix->blocks : 1) * sizeof(*fit));
	if (fit)
		ix->block = fit;
	ix->records = n;
	ix->decoded_bytes = ix->compressed_bytes;
	return 0;
}

int rf_tok_unit_table(const rf_shard_index *ix, const uint32_t *rec_tokens, unsigned itemsize,
                      uint32_t u, size_t src_len, void *dst, size_t dst_cap, rf_unit_records *out,
                      const void *src, const char *name, rf_error *err)
{
	if (u >= ix->blocks)
		return rf_fail(err, -EINVAL, "%s: unit %u of %u", name, u, ix->blocks);
	const rf_block_info *b = &ix->block[u];
	if (src_len != b->compressed_bytes)
		return rf_fail(err, RF_E_CORRUPT, "%s: unit %u: got %zu bytes, its size is %u",
		               name, u, src_len, b->compressed_bytes);
	if (dst_cap < rf_fmt_table_bytes(b->records))
		return rf_fail(err, -EINVAL,
		               "%s: unit %u: a table of %u records needs %" PRIu64
		               " bytes, got %zu",
		               name, u, b->records, rf_fmt_table_bytes(b->records), dst_cap);
	uint8_t *t = dst;
	uint32_t end = 0;
	for (uint32_t j = 0; j < b->records; j++) {
		end += rec_tokens[b->first_record + j] * itemsize;
		rf_store_le32(t + 4 * (size_t)j, end);
	}
	rf_store_le32(t + 4 * (size_t)b->records, b->records);
	if (end != b->compressed_bytes) /* the layout is ours: a broken one is a bug */
		return rf_fail(err, -EINVAL, "%s: unit %u: records make %u bytes, not %u", name, u,
		               end, b->compressed_bytes);
	*out = (rf_unit_records){.base = src, .ends = dst, .records = b->records};
	return 0;
}

void rf_tok_index_free(rf_shard_index *ix)
{
	rf_index_free(ix);
}

char *rf_tok_sibling(const char *url, const char *suffix)
{
	size_t path_len = rf_url_path_len(url);
	size_t stem = path_len;
	if (stem >= 4 &&
	    (memcmp(url + stem - 4, ".bin", 4) == 0 || memcmp(url + stem - 4, ".idx", 4) == 0))
		stem -= 4;
	size_t sfx = strlen(suffix), rest = strlen(url + path_len);
	char *s = malloc(stem + sfx + rest + 1);
	if (!s)
		return NULL;
	memcpy(s, url, stem);
	memcpy(s + stem, suffix, sfx);
	memcpy(s + stem + sfx, url + path_len, rest + 1);
	return s;
}

/* ------------------------------------------------------------- windows */

static bool widen_ok(int in, int out)
{
	if (in == out)
		return true;
	bool int_in = in != RF_TOK_F32 && in != RF_TOK_F64;
	unsigned ib = rf_tok_dtype_bytes(in), ob = rf_tok_dtype_bytes(out);
	if (!int_in || (out != RF_TOK_I32 && out != RF_TOK_I64))
		return false;
	bool unsigned_in = in == RF_TOK_U8 || in == RF_TOK_U16 || in == RF_TOK_U32;
	return ob > ib || (ob == ib && !unsigned_in);
}

int rf_tok_opts_parse(const rf_fmt_config *cfg, void *out, rf_error *err)
{
	rf_tok_opts *o = out;
	memset(o, 0, sizeof(*o));
	uint64_t seq_len = 0;
	RF_TRY(rf_fmt_cfg_num(cfg, "seq_len", &seq_len, err));
	if (seq_len > UINT32_MAX)
		return rf_fail(err, -EINVAL, "seq_len %" PRIu64 ": too large", seq_len);
	o->seq_len = (uint32_t)seq_len;
	const char *dt = NULL, *wide = NULL, *eot = NULL;
	RF_TRY(rf_fmt_cfg_str(cfg, "token_dtype", &dt, err));
	if (dt && !(o->token_dtype = (uint8_t)rf_tok_dtype_parse(dt)))
		return rf_fail(err, -EINVAL,
		               "token_dtype \"%s\": not a token type (uint8, int8, int16, "
		               "uint16, int32, uint32, int64, float32, float64)",
		               dt);
	RF_TRY(rf_fmt_cfg_str(cfg, "token_out", &wide, err));
	if (wide) {
		o->token_out = (uint8_t)rf_tok_dtype_parse(wide);
		if (o->token_out != RF_TOK_I32 && o->token_out != RF_TOK_I64)
			return rf_fail(err, -EINVAL, "token_out \"%s\": int32 or int64", wide);
		if (!o->seq_len)
			return rf_fail(err, -EINVAL, "token_out widens windows: it needs seq_len");
	}
	RF_TRY(rf_fmt_cfg_str(cfg, "eot_token", &eot, err));
	if (eot) {
		char *end = NULL;
		errno = 0;
		unsigned long long v = strtoull(eot, &end, 10);
		if (errno || end == eot || *end || eot[0] == '-')
			return rf_fail(err, -EINVAL, "eot_token \"%s\": not a token number", eot);
		o->has_eot = true;
		o->eot_token = v;
	}
	return 0;
}

int rf_tok_options(rf_tok_priv *p, const rf_tok_opts *opt, const char *name, rf_error *err)
{
	p->out_dtype = p->dtype;
	if (!opt)
		return 0;
	p->seq_len = opt->seq_len;
	if (opt->token_out) {
		if (!opt->seq_len)
			return rf_fail(
			    err, -EINVAL, "%s: widening tokens to %s applies to windows (seq_len)",
			    name,
			    rf_tok_dtype_name(opt->token_out) ? rf_tok_dtype_name(opt->token_out)
			                                      : "?");
		if (!widen_ok(p->dtype, opt->token_out))
			return rf_fail(err, -EINVAL, "%s: %s tokens cannot be widened to %s", name,
			               rf_tok_dtype_name(p->dtype),
			               rf_tok_dtype_name(opt->token_out)
			                   ? rf_tok_dtype_name(opt->token_out)
			                   : "?");
		p->out_dtype = opt->token_out;
	}
	return 0;
}

int rf_tok_windows_build(rf_shard_index *ix, rf_tok_priv *p, const char *name, rf_error *err)
{
	uint64_t L = p->seq_len;
	unsigned isz = rf_tok_dtype_bytes(p->dtype), osz = rf_tok_dtype_bytes(p->out_dtype);
	uint64_t W = p->tokens > L ? (p->tokens - 1) / L : 0;
	uint64_t k = RF_MAX(1, RF_TOK_UNIT_BYTES / (L * isz));
	k = RF_MIN(k, RF_TOK_UNIT_RECORDS_MAX);
	uint64_t rec_bytes = (L + 1) * osz;
	if (rec_bytes * k + rf_fmt_table_bytes((uint32_t)k) > RF_BLOCK_DECODED_MAX)
		return rf_fail(err, -EINVAL,
		               "%s: seq_len %" PRIu64 ": a window of %" PRIu64
		               " bytes is more than a unit may hold (%u)",
		               name, L, rec_bytes, RF_BLOCK_DECODED_MAX);
	uint64_t units = (W + k - 1) / k;
	if (units > UINT32_MAX)
		return rf_fail(err, -EINVAL, "%s: %" PRIu64 " windows make too many units", name,
		               W);
	ix->block = calloc(units ? units : 1, sizeof(*ix->block));
	ix->metadata = calloc(1, 1);
	if (!ix->block || !ix->metadata)
		return rf_fail(err, -ENOMEM, "%s: no memory for %" PRIu64 " units", name, units);
	for (uint64_t i = 0; i < units; i++) {
		uint32_t n = (uint32_t)RF_MIN(k, W - i * k);
		rf_block_info *b = &ix->block[i];
		*b = (rf_block_info){.offset = p->base + i * k * L * isz,
		                     .compressed_bytes = (uint32_t)((n * L + 1) * isz),
		                     .decoded_bytes =
		                         (uint32_t)(n * rec_bytes + rf_fmt_table_bytes(n)),
		                     .records = n,
		                     .first_record = i * k};
	}
	ix->blocks = (uint32_t)units;
	rf_fmt_layout_sums(ix);
	ix->records = W;
	ix->largest_record_bytes = W ? (uint32_t)rec_bytes : 0;
	p->windows_per_unit = (uint32_t)k;
	return 0;
}

static int64_t load_token(const uint8_t *s, int dt)
{
	switch (dt) {
	case RF_TOK_I8:
		return (int8_t)s[0];
	case RF_TOK_I16:
		return (int16_t)(s[0] | s[1] << 8);
	case RF_TOK_U16:
		return s[0] | s[1] << 8;
	case RF_TOK_I32:
		return (int32_t)rf_load_le32(s);
	case RF_TOK_U32:
		return rf_load_le32(s);
	case RF_TOK_I64:
		return (int64_t)rf_load_le64(s);
	default:
		return s[0];
	}
}

/* n tokens of dtype in -> out (widen_ok). The common pairs get tight loops. */
static void copy_tokens(uint8_t *d, const uint8_t *s, uint64_t n, int in, int out)
{
	if (in == out) {
		memcpy(d, s, n * rf_tok_dtype_bytes(in));
	} else if (in == RF_TOK_U16 && out == RF_TOK_I64) {
		for (uint64_t i = 0; i < n; i++)
			rf_store_le64(d + 8 * i, (uint64_t)(s[2 * i] | s[2 * i + 1] << 8));
	} else if (in == RF_TOK_U16 && out == RF_TOK_I32) {
		for (uint64_t i = 0; i < n; i++)
			rf_store_le32(d + 4 * i, (uint32_t)(s[2 * i] | s[2 * i + 1] << 8));
	} else {
		unsigned ib = rf_tok_dtype_bytes(in);
		for (uint64_t i = 0; i < n; i++) {
			int64_t v = load_token(s + ib * i, in);
			if (out == RF_TOK_I64)
				rf_store_le64(d + 8 * i, (uint64_t)v);
			else
				rf_store_le32(d + 4 * i, (uint32_t)v);
		}
	}
}

static int windows_decode(const rf_shard_index *ix, const rf_tok_priv *p, uint32_t u,
                          const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
                          rf_unit_records *out, const char *name, rf_error *err)
{
	if (u >= ix->blocks)
		return rf_fail(err, -EINVAL, "%s: unit %u of %u", name, u, ix->blocks);
	const rf_block_info *b = &ix->block[u];
	if (src_len != b->compressed_bytes)
		return rf_fail(err, RF_E_CORRUPT, "%s: unit %u: got %zu bytes, its size is %u",
		               name, u, src_len, b->compressed_bytes);
	if (dst_cap < b->decoded_bytes)
		return rf_fail(err, -EINVAL, "%s: unit %u: %u decoded bytes, room for %zu", name, u,
		               b->decoded_bytes, dst_cap);
	uint64_t L = p->seq_len;
	unsigned isz = rf_tok_dtype_bytes(p->dtype);
	uint32_t rec = (uint32_t)((L + 1) * rf_tok_dtype_bytes(p->out_dtype));
	uint8_t *table = dst + (size_t)b->records * rec;
	for (uint32_t j = 0; j < b->records; j++) {
		copy_tokens(dst + (size_t)j * rec, src + j * L * isz, L + 1, p->dtype,
		            p->out_dtype);
		rf_store_le32(table + 4 * (size_t)j, (j + 1) * rec);
	}
	rf_store_le32(table + 4 * (size_t)b->records, b->records);
	*out =
	    (rf_unit_records){.base = dst, .ends = (const uint32_t *)table, .records = b->records};
	return 0;
}

int rf_tok_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                  const void *src, size_t src_len, void *dst, size_t dst_cap, rf_unit_records *out,
                  const char *name, rf_error *err)
{
	const rf_tok_priv *p = priv;
	if (p->seq_len)
		return windows_decode(ix, p, u, src, src_len, dst, dst_cap, out, name, err);
	return rf_tok_unit_table(ix, p->len_tokens, rf_tok_dtype_bytes(p->dtype), u, src_len, dst,
	                         dst_cap, out, src, name, err);
}

uint64_t rf_tok_payload_bytes(const rf_shard_index *ix)
{
	bool windows = ix->blocks && ix->block[0].decoded_bytes != ix->block[0].compressed_bytes;
	return windows ? ix->decoded_bytes - 4 * ix->records - 4 * (uint64_t)ix->blocks
	               : ix->decoded_bytes;
}

void rf_tok_priv_free(rf_tok_priv *p)
{
	if (p) {
		free(p->len_tokens);
		free(p);
	}
}

int rf_tok_metadata(rf_shard_index *ix, const char *format, const rf_tok_priv *p, const char *name,
                    rf_error *err)
{
	char meta[RF_TOK_METADATA_MAX];
	int n =
	    snprintf(meta, sizeof(meta),
	             "{\"format\":\"%s\",\"dtype\":\"%s\",\"tokens\":%" PRIu64
	             ",\"sequences\":%" PRIu64 ",\"documents\":%" PRIu64,
	             format, rf_tok_dtype_name(p->dtype), p->tokens, p->sequences, p->documents);
	if (p->seq_len)
		snprintf(meta + n, sizeof(meta) - (size_t)n,
		         ",\"seq_len\":%u,\"windows\":%" PRIu64 ",\"window_dtype\":\"%s\"}",
		         p->seq_len, ix->records, rf_tok_dtype_name(p->out_dtype));
	else
		snprintf(meta + n, sizeof(meta) - (size_t)n, "}");
	char *m = strdup(meta);
	if (!m)
		return rf_fail(err, -ENOMEM, "%s: no memory", name);
	free(ix->metadata);
	ix->metadata = m;
	return 0;
}
