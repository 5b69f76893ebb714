/* megatron.c - the Megatron-LM / NeMo indexed dataset as a format: PREFIX.bin
 * holds the tokens (uncompressed, contiguous sequences), PREFIX.idx the
 * layout, as megatron/core/datasets/indexed_dataset.py writes them:
 *
 *   "MMIDIDX\0\0" | u64 version (1) | u8 dtype code | u64 S | u64 D+1 |
 *   i32 lengths[S] | i64 pointers[S] | i64 document_indices[D+1] | [i8 modes[S]]
 *
 * The shard object is PREFIX.bin; its open reads PREFIX.idx as a sidecar
 * (want.object) in bounded requests: the header, then each array in chunks
 * of at most MG_CHUNK_ENTRIES, checked as it arrives against both objects'
 * sizes. Each sequence is a record; units are runs of whole sequences of
 * about 1 MiB, stored as they decode (in place). */
#include "format.h"
#include "tokens.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MG_MAGIC         "MMIDIDX\0\0"
#define MG_MAGIC_BYTES   9
#define MG_HEADER_BYTES  34
#define MG_CHUNK_ENTRIES (1u << 19) /* entries per request: at most 4 MiB */
#define MG_METADATA_MAX  RF_TOK_METADATA_MAX

enum { MG_SIZE, MG_HEADER, MG_LENGTHS, MG_POINTERS, MG_DOCS };

typedef struct mg_state {
	char *idx_url, *idx_name;
	unsigned itemsize;
	uint64_t docs1;     /* document_indices entries (D + 1) */
	uint64_t idx_bytes; /* the .idx object's size */
	int phase;
	uint64_t done;     /* entries of the phase's array parsed */
	uint64_t ptr_next; /* the byte the next sequence must start at */
	uint64_t doc_prev;
	rf_tok_priv *priv;
} mg_state;

static const char *const mg_names[] = {".idx", NULL};

static int mg_claim(const char *name)
{
	if (rf_fmt_names_have(mg_names, name))
		return RF_FMT_YES;
	return RF_FMT_MAYBE; /* PREFIX.bin or a bare PREFIX, named explicitly */
}

/* The units are PREFIX.bin's bytes, whichever name was given. */
static char *mg_shard_object(const char *url)
{
	return rf_tok_sibling(url, ".bin");
}

/* PREFIX.bin or a bare PREFIX (no such file) beside PREFIX.idx: the dataset. */
static char *mg_local_name(const char *path)
{
	size_t n = strlen(path);
	struct stat st;
	bool bin = n >= 4 && strcmp(path + n - 4, ".bin") == 0;
	if (!bin && (n >= 4 && strcmp(path + n - 4, ".idx") == 0))
		return NULL;
	if (!bin && stat(path, &st) == 0)
		return NULL; /* a file of its own */
	char *idx = rf_tok_sibling(path, ".idx");
	if (idx && (stat(idx, &st) != 0 || !S_ISREG(st.st_mode))) {
		free(idx);
		idx = NULL;
	}
	return idx;
}

static void want_idx(rf_fmt_open *o, uint64_t offset, uint64_t len, uint64_t parse_bound)
{
	mg_state *s = o->state;
	o->want = (rf_fmt_want){
	    .object = s->idx_url, .offset = offset, .len = len, .parse_bound = parse_bound};
}

/* The byte of the .idx where `phase`'s array starts, and its entry size. */
static uint64_t array_at(const mg_state *s, int phase, unsigned *entry_bytes)
{
	uint64_t S = s->priv->sequences;
	*entry_bytes = phase == MG_LENGTHS ? 4 : 8;
	if (phase == MG_LENGTHS)
		return MG_HEADER_BYTES;
	if (phase == MG_POINTERS)
		return MG_HEADER_BYTES + 4 * S;
	return MG_HEADER_BYTES + 12 * S;
}

static uint64_t units_bound_bytes(const mg_state *s)
{
	/* windows: at most as many as tokens, so the same bound covers them */
	uint64_t records = RF_MAX(s->priv->sequences, s->ptr_next / s->itemsize);
	return rf_tok_units_bound(s->ptr_next, records) * sizeof(rf_block_info) +
	       sizeof(rf_shard_index) + MG_METADATA_MAX;
}

/* Asks for the next chunk of the current phase's array. */
static void want_chunk(rf_fmt_open *o)
{
	mg_state *s = o->state;
	unsigned eb;
	uint64_t at = array_at(s, s->phase, &eb);
	uint64_t count = s->phase == MG_DOCS ? s->docs1 : s->priv->sequences;
	uint64_t n = RF_MIN(count - s->done, MG_CHUNK_ENTRIES);
	uint64_t bound = 0;
	if (s->phase == MG_LENGTHS && s->done == 0)
		bound = 4 * s->priv->sequences; /* the lengths array */
	if (s->phase == MG_DOCS && s->done + n == count)
		bound = units_bound_bytes(s); /* the layout, built after the last chunk */
	want_idx(o, at + s->done * eb, n * eb, bound);
}

static int header_parse(rf_fmt_open *o, const uint8_t *h, rf_error *err)
{
	mg_state *s = o->state;
	const char *nm = s->idx_name;
	if (memcmp(h, MG_MAGIC, MG_MAGIC_BYTES) != 0) {
		o->final = true;
		return rf_fail(err, RF_E_CORRUPT, "%s: not a Megatron index (bad magic)", nm);
	}
	uint64_t version = rf_load_le64(h + 9);
	uint8_t code = h[17];
	uint64_t S = rf_load_le64(h + 18), D1 = rf_load_le64(h + 26);
	if (version != 1)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: header: version %" PRIu64 ", only 1 is known", nm, version);
	if (code < RF_TOK_U8 || code > RF_TOK_U16)
		return rf_fail(err, RF_E_CORRUPT, "%s: header: dtype code %u is not one of 1..8",
		               nm, code);
	if (S > RF_TOK_RECORDS_MAX || D1 > RF_TOK_RECORDS_MAX + 1)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: header: %" PRIu64 " sequences, %" PRIu64
		               " document indices: more than %llu",
		               nm, S, D1, (unsigned long long)RF_TOK_RECORDS_MAX);
	if (D1 == 0)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: header: document_count 0 (document_indices starts with 0)", nm);
	uint64_t want = MG_HEADER_BYTES + 12 * S + 8 * D1;
	if (o->got_object_size != want && o->got_object_size != want + S)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: is %" PRIu64 " bytes; its header (%" PRIu64
		               " sequences, %" PRIu64 " document indices) makes %" PRIu64
		               " (or %" PRIu64 " with modes)",
		               nm, o->got_object_size, S, D1, want, want + S);
	s->priv->dtype = code;
	s->priv->sequences = S;
	s->docs1 = D1;
	s->itemsize = rf_tok_dtype_bytes(code);
	return rf_tok_options(s->priv, o->opt, o->name, err);
}

static int lengths_parse(mg_state *s, const uint8_t *p, uint64_t n, rf_error *err)
{
	rf_tok_priv *pv = s->priv;
	if (!pv->len_tokens && !(pv->len_tokens = malloc(4 * (pv->sequences ? pv->sequences : 1))))
		return rf_fail(err, -ENOMEM, "%s: no memory for %" PRIu64 " sequence lengths",
		               s->idx_name, pv->sequences);
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = s->done + k;
		int32_t v = (int32_t)rf_load_le32(p + 4 * k);
		if (v < 0)
			return rf_fail(err, RF_E_CORRUPT, "%s: lengths[%" PRIu64 "] is %d",
			               s->idx_name, i, v);
		if ((uint64_t)v * s->itemsize > RF_BLOCK_DECODED_MAX)
			return rf_fail(err, RF_E_CORRUPT,
			               "%s: lengths[%" PRIu64 "] is %d tokens: %" PRIu64
			               " bytes, more than the %u a sequence may have",
			               s->idx_name, i, v, (uint64_t)v * s->itemsize,
			               RF_BLOCK_DECODED_MAX);
		pv->len_tokens[i] = (uint32_t)v;
	}
	return 0;
}

static int pointers_parse(rf_fmt_open *o, const uint8_t *p, uint64_t n, rf_error *err)
{
	mg_state *s = o->state;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = s->done + k;
		uint64_t v = rf_load_le64(p + 8 * k);
		if (v != s->ptr_next)
			return rf_fail(err, RF_E_CORRUPT,
			               "%s: pointers[%" PRIu64 "] is %" PRId64 ", expected %" PRIu64
			               " (sequences are contiguous, in order, in %s)",
			               s->idx_name, i, (int64_t)v, s->ptr_next, o->name);
		s->ptr_next += (uint64_t)s->priv->len_tokens[i] * s->itemsize;
		if (s->ptr_next > o->size)
			return rf_fail(err, RF_E_CORRUPT,
			               "%s: sequence %" PRIu64 " ends at byte %" PRIu64
			               ", past the end of %s (%" PRIu64 " bytes)",
			               s->idx_name, i, s->ptr_next, o->name, o->size);
	}
	return 0;
}

static int docs_parse(rf_fmt_open *o, const uint8_t *p, uint64_t n, rf_error *err)
{
	mg_state *s = o->state;
	uint64_t S = s->priv->sequences;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = s->done + k;
		uint64_t v = rf_load_le64(p + 8 * k);
		if (i == 0 && v != 0)
			return rf_fail(err, RF_E_CORRUPT,
			               "%s: document_indices[0] is %" PRId64 ", not 0", s->idx_name,
			               (int64_t)v);
		if (v < s->doc_prev || v > S)
			return rf_fail(err, RF_E_CORRUPT,
			               "%s: document_indices[%" PRIu64 "] is %" PRId64
			               " (after %" PRIu64 "; sequences: %" PRIu64 ")",
			               s->idx_name, i, (int64_t)v, s->doc_prev, S);
		s->doc_prev = v;
	}
	if (s->done + n == s->docs1 && s->doc_prev != S)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: document_indices[%" PRIu64 "] (the last) is %" PRIu64
		               ", not the sequence count %" PRIu64,
		               s->idx_name, s->docs1 - 1, s->doc_prev, S);
	return 0;
}

static int layout_build(rf_fmt_open *o, rf_error *err)
{
	mg_state *s = o->state;
	rf_tok_priv *pv = s->priv;
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return rf_fail(err, -ENOMEM, "%s: no memory for the layout", o->name);
	ix->file_bytes = o->size;
	pv->documents = s->docs1 - 1;
	pv->tokens = s->ptr_next / s->itemsize;
	int rc;
	if (pv->seq_len) {
		free(pv->len_tokens); /* windows need only the token count */
		pv->len_tokens = NULL;
		rc = rf_tok_windows_build(ix, pv, o->name, err);
		o->in_place = false; /* windows overlap: decoded by copy */
	} else {
		rc = rf_tok_units_build(ix, pv->len_tokens, pv->sequences, s->itemsize, 0, o->name,
		                        err);
	}
	if (rc == 0)
		rc = rf_tok_metadata(ix, "megatron", pv, o->name, err);
	if (rc < 0) {
		rf_tok_index_free(ix);
		return rc;
	}
	o->index = ix;
	o->priv = pv;
	s->priv = NULL;
	o->held_bytes = sizeof(*pv) + (pv->len_tokens ? 4 * pv->sequences : 0) + sizeof(*ix) +
	                (uint64_t)ix->blocks * sizeof(rf_block_info) + strlen(ix->metadata) + 1;
	return RF_FMT_DONE;
}

/* The next phase with entries to read (lengths and pointers are empty when
 * S is 0), or the layout when the last is done. */
static int next_phase(rf_fmt_open *o, rf_error *err)
{
	mg_state *s = o->state;
	for (;;) {
		s->phase++;
		s->done = 0;
		if (s->phase > MG_DOCS)
			return layout_build(o, err);
		if (s->phase == MG_DOCS || s->priv->sequences > 0)
			break;
	}
	if (s->phase == MG_DOCS && s->ptr_next != o->size)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: the sequences cover %" PRIu64
		               " bytes of %s, which has %" PRIu64,
		               s->idx_name, s->ptr_next, o->name, o->size);
	want_chunk(o);
	return RF_FMT_NEED;
}

/* What the open state takes (declared before it exists: the first step
 * asks for no bytes, only this bound). */
static uint64_t state_bytes(const rf_fmt_open *o)
{
	return sizeof(mg_state) + sizeof(rf_tok_priv) + strlen(o->url) + strlen(o->name) + 10;
}

static uint64_t held_now(const rf_fmt_open *o)
{
	const mg_state *s = o->state;
	return state_bytes(o) + (s->priv->len_tokens ? 4 * s->priv->sequences : 0);
}

static int state_new(rf_fmt_open *o, rf_error *err)
{
	mg_state *s = calloc(1, sizeof(*s));
	if (s) {
		o->state = s;
		s->priv = calloc(1, sizeof(*s->priv));
		s->idx_url = rf_tok_sibling(o->url, ".idx");
		s->idx_name = rf_tok_sibling(o->name, ".idx");
	}
	if (!s || !s->priv || !s->idx_url || !s->idx_name)
		return rf_fail(err, -ENOMEM, "%s: no memory to open", o->name);
	o->held_bytes = held_now(o);
	if (strcmp(s->idx_url, o->url) == 0) {
		o->final = true; /* the shard is PREFIX.bin (see claim) */
		return rf_fail(err, -EINVAL, "%s: open PREFIX.bin (the index is read beside it)",
		               o->name);
	}
	want_idx(o, 0, 0, 0); /* no bytes yet: the .idx's size */
	return RF_FMT_NEED;
}

/* Parses the delivered chunk of the current phase. */
static int phase_parse(rf_fmt_open *o, uint64_t n, rf_error *err)
{
	mg_state *s = o->state;
	switch (s->phase) {
	case MG_SIZE:
		if (o->got_object_size < MG_HEADER_BYTES)
			return rf_fail(err, RF_E_CORRUPT,
			               "%s: is %" PRIu64 " bytes, less than a header (%d)",
			               s->idx_name, o->got_object_size, MG_HEADER_BYTES);
		s->idx_bytes = o->got_object_size;
		return 0;
	case MG_HEADER:
		return header_parse(o, o->got, err);
	case MG_LENGTHS:
		return lengths_parse(s, o->got, n, err);
	case MG_POINTERS:
		return pointers_parse(o, o->got, n, err);
	default:
		return docs_parse(o, o->got, n, err);
	}
}

static int step_advance(rf_fmt_open *o, rf_error *err);

static int mg_open_step(rf_fmt_open *o, rf_error *err)
{
	if (!o->state && !o->got) {
		/* a step that reads nothing and declares the state it allocates next */
		o->want = (rf_fmt_want){.len = 0, .parse_bound = state_bytes(o)};
		return RF_FMT_NEED;
	}
	if (!o->state)
		return state_new(o, err);
	mg_state *s = o->state;
	const rf_fmt_want *w = &o->want;
	if (!o->got || o->got_offset != w->offset || o->got_len != w->len)
		return rf_fail(err, -EINVAL,
		               "%s: got bytes [%" PRIu64 ", +%" PRIu64
		               ") for a request of [%" PRIu64 ", +%" PRIu64 ")",
		               s->idx_name, o->got_offset, o->got_len, w->offset, w->len);
	if (s->phase > MG_SIZE && o->got_object_size != s->idx_bytes)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: changed size during the open (%" PRIu64 " bytes, then %" PRIu64
		               ")",
		               s->idx_name, s->idx_bytes, o->got_object_size);
	/* a failed step leaves the state as it was: the engine may read the
	 * same bytes again (damage in transit) and call it once more */
	mg_state saved = *s;
	int rc = step_advance(o, err);
	if (rc < 0)
		*s = saved;
	return rc;
}

/* Parses the delivered bytes and asks for the next (or builds the layout). */
static int step_advance(rf_fmt_open *o, rf_error *err)
{
	mg_state *s = o->state;
	unsigned eb = s->phase == MG_LENGTHS ? 4 : 8;
	uint64_t n = o->got_len / eb;
	RF_TRY(phase_parse(o, n, err));
	o->held_bytes = held_now(o);
	if (s->phase == MG_SIZE) {
		s->phase = MG_HEADER;
		want_idx(o, 0, MG_HEADER_BYTES, 0);
		return RF_FMT_NEED;
	}
	uint64_t count = s->phase == MG_DOCS ? s->docs1 : s->priv->sequences;
	if (s->phase != MG_HEADER && (s->done += n) < count) {
		want_chunk(o);
		return RF_FMT_NEED;
	}
	return next_phase(o, err);
}

static void mg_open_abort(rf_fmt_open *o)
{
	mg_state *s = o->state;
	if (!s)
		return;
	rf_tok_priv_free(s->priv);
	free(s->idx_url);
	free(s->idx_name);
	free(s);
	o->state = NULL;
}

static void mg_close(rf_shard_index *index, void *priv)
{
	rf_tok_index_free(index);
	rf_tok_priv_free(priv);
}

const rf_format rf_format_megatron = {
    .name = "megatron",
    .names = mg_names,
    .claim = mg_claim,
    .shard_object = mg_shard_object,
    .local_name = mg_local_name,
    .open_step = mg_open_step,
    .open_abort = mg_open_abort,
    .close = mg_close,
    .decode = rf_tok_decode,
    .payload_bytes = rf_tok_payload_bytes,
    .in_place = true,
    .options = rf_tok_opts_parse,
    .options_bytes = sizeof(rf_tok_opts),
};
