/* llmc.c - token `.bin` files without an index, as a format:
 *   - llm.c / modded-nanogpt: a 256 x int32 header (magic 20240520 version
 *     1: uint16 tokens; magic 20240801 version 7: uint32), header[2] the
 *     token count, the tokens from byte 1024 (dev/data/data_common.py);
 *   - nanoGPT: headerless tokens (data/openwebtext/prepare.py writes uint16),
 *     read only when the user names the dtype (rf_tok_opts.token_dtype).
 * Records are documents when the user names an end-of-text token (nanoGPT
 * appends it to each document: a document ends after it; llm.c puts it
 * before each: a document starts at it), found by reading the whole file
 * once at open in bounded requests; otherwise runs of RF_TOK_RUN_TOKENS
 * tokens; or, with seq_len, packed windows (tokens.h). */
#include "format.h"
#include "tokens.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define LLMC_HEADER_BYTES 1024
#define LLMC_MAGIC_U16    20240520u
#define LLMC_MAGIC_U32    20240801u
#define LLMC_SCAN_BYTES   (4u << 20) /* one request of the EOT scan */

typedef struct llmc_state {
	rf_tok_priv *priv;
	bool header;     /* llm.c (EOT starts a document) or raw (EOT ends one) */
	uint64_t at;     /* the scan's next token */
	uint64_t doc_at; /* the token the open document started at */
	uint64_t docs_cap;
} llmc_state;

static int llmc_claim(const char *name)
{
	size_t n = rf_url_path_len(name);
	return n >= 4 && memcmp(name + n - 4, ".bin", 4) == 0 ? RF_FMT_MAYBE : RF_FMT_NO;
}

/* The header's say: 1 when it is llm.c's (p set), 0 when not, < 0 when it
 * is llm.c's but lies. */
static int header_parse(rf_fmt_open *o, const uint8_t *h, rf_tok_priv *p, rf_error *err)
{
	uint32_t magic = o->got_len >= 4 ? rf_load_le32(h) : 0;
	if (o->got_len < LLMC_HEADER_BYTES &&
	    (magic == LLMC_MAGIC_U16 || magic == LLMC_MAGIC_U32)) {
		o->final = true; /* the file's size: reading again cannot change it */
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: %" PRIu64
		               " bytes: it starts with llm.c's magic %u, but an llm.c "
		               "token file has a %u-byte header (truncated?)",
		               o->name, o->size, magic, LLMC_HEADER_BYTES);
	}
	if (o->got_len < LLMC_HEADER_BYTES)
		return 0;
	uint32_t version = rf_load_le32(h + 4);
	uint64_t count = rf_load_le32(h + 8);
	if (magic != LLMC_MAGIC_U16 && magic != LLMC_MAGIC_U32)
		return 0;
	uint32_t want = magic == LLMC_MAGIC_U16 ? 1 : 7;
	if (version != want)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: llm.c header: magic %u with version %u (%u expected)", o->name,
		               magic, version, want);
	p->dtype = magic == LLMC_MAGIC_U16 ? RF_TOK_U16 : RF_TOK_U32;
	unsigned isz = rf_tok_dtype_bytes(p->dtype);
	if (count > (o->size - LLMC_HEADER_BYTES) / isz ||
	    LLMC_HEADER_BYTES + count * isz != o->size)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: llm.c header: header[2] says %" PRIu64 " %s tokens (%" PRIu64
		               " bytes after the header); the file has %" PRIu64,
		               o->name, count, rf_tok_dtype_name(p->dtype), count * isz,
		               o->size - LLMC_HEADER_BYTES);
	p->base = LLMC_HEADER_BYTES;
	p->tokens = count;
	return 1;
}

/* The token options the engine parsed for this format (NULL: defaults). */
static const rf_tok_opts *tok_opts(const rf_fmt_open *o)
{
	return o->opt;
}

static int raw_parse(rf_fmt_open *o, rf_tok_priv *p, rf_error *err)
{
	if (!tok_opts(o) || !tok_opts(o)->token_dtype) {
		o->final = true;
		uint32_t magic = o->got_len >= 4 ? rf_load_le32(o->got) : 0;
		if (o->size < LLMC_HEADER_BYTES)
			return rf_fail(err, RF_E_CORRUPT,
			               "%s: %" PRIu64
			               " bytes: shorter than llm.c's %u-byte header, "
			               "not an llm.c token file; a headerless (nanoGPT) file needs "
			               "its token dtype named",
			               o->name, o->size, LLMC_HEADER_BYTES);
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "%s: not an llm.c token file (its first int32 is %u; llm.c writes %u or "
		    "%u); a headerless (nanoGPT) file needs its token dtype named; for a "
		    "Megatron dataset name its .idx",
		    o->name, magic, LLMC_MAGIC_U16, LLMC_MAGIC_U32);
	}
	p->dtype = tok_opts(o)->token_dtype;
	unsigned isz = rf_tok_dtype_bytes(p->dtype);
	if (!isz)
		return rf_fail(err, -EINVAL, "%s: token dtype code %u is unknown", o->name,
		               p->dtype);
	if (o->size % isz)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: %" PRIu64 " bytes is not a whole number of %s tokens", o->name,
		               o->size, rf_tok_dtype_name(p->dtype));
	p->base = 0;
	p->tokens = o->size / isz;
	return 0;
}

static int doc_add(llmc_state *s, uint64_t end, const char *name, rf_error *err)
{
	rf_tok_priv *p = s->priv;
	uint64_t n = end - s->doc_at;
	if (n == 0)
		return 0;
	if (n * rf_tok_dtype_bytes(p->dtype) > RF_BLOCK_DECODED_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: the document at token %" PRIu64 " has %" PRIu64
		               " tokens, more than %u bytes (is the end-of-text token right?)",
		               name, s->doc_at, n, RF_BLOCK_DECODED_MAX);
	if (p->sequences == s->docs_cap)
		return rf_fail(err, -EINVAL, "%s: more documents than the scan bounded", name);
	p->len_tokens[p->sequences++] = (uint32_t)n;
	s->doc_at = end;
	return 0;
}

static uint64_t token_at(const uint8_t *b, uint64_t k, unsigned isz)
{
	if (isz == 2)
		return (uint64_t)(b[2 * k] | b[2 * k + 1] << 8);
	if (isz == 4)
		return rf_load_le32(b + 4 * k);
	uint64_t v = 0;
	for (unsigned i = 0; i < isz; i++)
		v |= (uint64_t)b[isz * k + i] << (8 * i);
	return v;
}

/* One scan request's tokens: documents end after (raw) or start at (llm.c)
 * the end-of-text token. The documents array grows by what this request
 * holds (counted first), so it never holds more than one u32 per document. */
static int scan_parse(rf_fmt_open *o, rf_error *err)
{
	llmc_state *s = o->state;
	rf_tok_priv *p = s->priv;
	unsigned isz = rf_tok_dtype_bytes(p->dtype);
	uint64_t n = o->got_len / isz, eot = tok_opts(o)->eot_token, found = 0;
	for (uint64_t k = 0; k < n; k++)
		found += token_at(o->got, k, isz) == eot;
	uint64_t cap = p->sequences + found + 1; /* + the last document */
	if (cap > s->docs_cap) {
		uint32_t *grown = realloc(p->len_tokens, 4 * cap);
		if (!grown)
			return rf_fail(err, -ENOMEM, "%s: no memory for the documents", o->name);
		p->len_tokens = grown;
		s->docs_cap = cap;
	}
	for (uint64_t k = 0; k < n; k++) {
		if (token_at(o->got, k, isz) != eot)
			continue;
		uint64_t t = s->at + k;
		RF_TRY(doc_add(s, s->header ? t : t + 1, o->name, err));
	}
	s->at += n;
	return 0;
}

static void want_scan(rf_fmt_open *o)
{
	llmc_state *s = o->state;
	unsigned isz = rf_tok_dtype_bytes(s->priv->dtype);
	uint64_t n = RF_MIN(s->priv->tokens - s->at, LLMC_SCAN_BYTES / isz);
	uint64_t bound = 4 * (n + 1);     /* at most one document per token */
	if (s->at + n == s->priv->tokens) /* the layout, built after the last */
		bound += rf_tok_units_bound(o->size, s->priv->tokens) * sizeof(rf_block_info) +
		         sizeof(rf_shard_index) + RF_TOK_METADATA_MAX;
	o->want = (rf_fmt_want){
	    .offset = s->priv->base + s->at * isz, .len = n * isz, .parse_bound = bound};
}

/* The most the layout takes for a file of `size` bytes (any dtype, runs,
 * documents or windows): declared with the header's request. */
static uint64_t layout_bound(uint64_t size)
{
	return sizeof(rf_tok_priv) + 4 * (size / RF_TOK_RUN_TOKENS + 1) +
	       rf_tok_units_bound(size, size) * sizeof(rf_block_info) + sizeof(rf_shard_index) +
	       RF_TOK_METADATA_MAX;
}

/* Fixed runs of RF_TOK_RUN_TOKENS (no end-of-text token named). */
static int runs_fill(rf_tok_priv *p, const char *name, rf_error *err)
{
	uint64_t n = (p->tokens + RF_TOK_RUN_TOKENS - 1) / RF_TOK_RUN_TOKENS;
	if (!(p->len_tokens = malloc(4 * (n ? n : 1))))
		return rf_fail(err, -ENOMEM, "%s: no memory for %" PRIu64 " records", name, n);
	for (uint64_t i = 0; i < n; i++)
		p->len_tokens[i] =
		    (uint32_t)RF_MIN(RF_TOK_RUN_TOKENS, p->tokens - i * RF_TOK_RUN_TOKENS);
	p->sequences = n;
	return 0;
}

static int layout_build(rf_fmt_open *o, rf_error *err)
{
	llmc_state *s = o->state;
	rf_tok_priv *p = s->priv;
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return rf_fail(err, -ENOMEM, "%s: no memory for the layout", o->name);
	ix->file_bytes = o->size;
	int rc = 0;
	if (p->seq_len) {
		rc = rf_tok_windows_build(ix, p, o->name, err);
		o->in_place = false; /* windows overlap: decoded by copy */
	} else {
		if (!p->len_tokens)
			rc = runs_fill(p, o->name, err);
		if (rc == 0)
			rc =
			    rf_tok_units_build(ix, p->len_tokens, p->sequences,
			                       rf_tok_dtype_bytes(p->dtype), p->base, o->name, err);
	}
	p->documents = tok_opts(o) && tok_opts(o)->has_eot ? p->sequences : 0;
	if (rc == 0)
		rc = rf_tok_metadata(ix, s->header ? "llmc" : "raw", p, o->name, err);
	if (rc < 0) {
		rf_tok_index_free(ix);
		return rc;
	}
	o->index = ix;
	o->priv = p;
	s->priv = NULL;
	o->held_bytes = sizeof(*p) + (p->len_tokens ? 4 * p->sequences : 0) + sizeof(*ix) +
	                (uint64_t)ix->blocks * sizeof(rf_block_info) + strlen(ix->metadata) + 1;
	return RF_FMT_DONE;
}

/* After the header: the EOT scan (records = documents), or the layout. */
static int after_header(rf_fmt_open *o, rf_error *err)
{
	llmc_state *s = o->state;
	RF_TRY(rf_tok_options(s->priv, o->opt, o->name, err));
	if (!s->priv->seq_len && tok_opts(o) && tok_opts(o)->has_eot && s->priv->tokens > 0) {
		want_scan(o);
		return RF_FMT_NEED;
	}
	return layout_build(o, err);
}

static int llmc_open_step(rf_fmt_open *o, rf_error *err)
{
	llmc_state *s = o->state;
	if (!s && !o->got) {
		/* a step that reads nothing and declares the state it allocates next */
		o->want = (rf_fmt_want){.parse_bound = sizeof(*s) + sizeof(*s->priv)};
		return RF_FMT_NEED;
	}
	if (!s) {
		if (!(s = o->state = calloc(1, sizeof(*s))) ||
		    !(s->priv = calloc(1, sizeof(*s->priv))))
			return rf_fail(err, -ENOMEM, "%s: no memory to open", o->name);
		o->held_bytes = sizeof(*s) + sizeof(*s->priv);
		/* the header, or as much of a small file as there is */
		o->want = (rf_fmt_want){.len = RF_MIN(o->size, LLMC_HEADER_BYTES),
		                        .parse_bound = layout_bound(o->size)};
		return RF_FMT_NEED;
	}
	if (!o->got || o->got_offset != o->want.offset || o->got_len != o->want.len)
		return rf_fail(err, -EINVAL,
		               "%s: got bytes [%" PRIu64 ", +%" PRIu64 ") for [%" PRIu64
		               ", +%" PRIu64 ")",
		               o->name, o->got_offset, o->got_len, o->want.offset, o->want.len);
	if (o->step == 0) { /* only a step that succeeds moves on: a failed one is retried */
		int rc = header_parse(o, o->got, s->priv, err);
		if (rc < 0)
			return rc;
		s->header = rc == 1;
		if (!s->header)
			RF_TRY(raw_parse(o, s->priv, err));
		o->step = 1;
		return after_header(o, err);
	}
	/* a failed step leaves the state as it was (the engine may read the
	 * same bytes again and call it once more) */
	uint64_t docs = s->priv->sequences, doc_at = s->doc_at;
	int rc = scan_parse(o, err);
	if (rc < 0) {
		s->priv->sequences = docs;
		s->doc_at = doc_at;
		return rc;
	}
	o->held_bytes = sizeof(*s) + sizeof(*s->priv) + 4 * s->docs_cap;
	if (s->at < s->priv->tokens) {
		want_scan(o);
		return RF_FMT_NEED;
	}
	RF_TRY(doc_add(s, s->priv->tokens, o->name, err)); /* the last, without an EOT after it */
	return layout_build(o, err);
}

static void llmc_open_abort(rf_fmt_open *o)
{
	llmc_state *s = o->state;
	if (!s)
		return;
	rf_tok_priv_free(s->priv);
	free(s);
	o->state = NULL;
}

static void llmc_close(rf_shard_index *index, void *priv)
{
	rf_tok_index_free(index);
	rf_tok_priv_free(priv);
}

const rf_format rf_format_llmc = {
    .name = "llmc",
    .claim = llmc_claim,
    .open_step = llmc_open_step,
    .open_abort = llmc_open_abort,
    .close = llmc_close,
    .decode = rf_tok_decode,
    .payload_bytes = rf_tok_payload_bytes,
    .in_place = true,
    .options = rf_tok_opts_parse,
    .options_bytes = sizeof(rf_tok_opts),
};
