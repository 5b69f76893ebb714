/* parquet_tokens.c - a pre-tokenized Parquet file (a list<int32> or
 * list<int64> column such as `input_ids`, or an INT32/INT64 column of one
 * token a row) read as token windows with seq_len = L, exactly as the token
 * formats cut theirs (tokens.h): the column's values concatenated in row
 * order are the file's token stream; window j is tokens [j L, j L + L + 1);
 * the tail shorter than L + 1 is dropped. The open counts each row group's
 * tokens (one read and decode of its chunk: the count is not in the
 * metadata); a read unit holds the windows that start in a run of row
 * groups and reads the row groups the last one reaches into as well.
 * docs/format.md, "Parquet", "Token windows". */
#include "parquet.h"
#include "tokens.h"

#include <stdio.h>
#include <stdlib.h>

#define U64(x) ((unsigned long long)(x))
/* a unit's own tokens' bytes, at least (when the file has them) */
#define PQ_TOK_UNIT_BYTES  (4u << 20)
#define PQ_TOK_WINDOWS_MAX (1u << 20) /* windows in one unit */

static uint64_t pad8(uint64_t v)
{
	return (v + 7) & ~7ull;
}

static bool token_column(const pq_column *c)
{
	return (c->type == PQ_INT32 || c->type == PQ_INT64) &&
	       (c->kind == PQ_LIST || c->kind == PQ_FLAT);
}

int rf_pq_tok_select(pq_layout *L, const rf_pq_opts *opt, const char *name, rf_error *err)
{
	if (!opt || !opt->tok.seq_len)
		return 0;
	uint32_t pick = UINT32_MAX, lists = 0;
	if (L->ncols == 1) {
		pick = 0;
	} else if (opt->columns[0]) {
		return rf_fail(err, -EINVAL,
		               "shard %s: seq_len reads one token column; columns names %u", name,
		               L->ncols);
	} else {
		for (uint32_t k = 0; k < L->ncols; k++)
			if (L->col[k].kind == PQ_LIST && token_column(&L->col[k]))
				pick = k, lists++;
		if (lists != 1)
			return rf_fail(
			    err, -EINVAL,
			    "shard %s: seq_len needs the token column named (columns=...): "
			    "the file has %u list<int32|int64> columns",
			    name, lists);
	}
	const pq_column *c = &L->col[pick];
	if (!token_column(c))
		return rf_fail(err, -EPROTONOSUPPORT,
		               "shard %s: column \"%s\" holds no tokens (seq_len reads an INT32 or "
		               "INT64 column, or a list of them)",
		               name, c->name);
	L->col[0] = *c;
	L->names[0] = L->col[0].name;
	L->ncols = 1;
	rf_tok_priv p = {.dtype = c->type == PQ_INT32 ? RF_TOK_I32 : RF_TOK_I64};
	RF_TRY(rf_tok_options(&p, &opt->tok, name, err));
	L->tokens = true;
	L->tok = (pq_tokens){.dtype = p.dtype, .out_dtype = p.out_dtype, .seq_len = p.seq_len};
	return 0;
}

uint64_t rf_pq_tok_held(const pq_layout *L)
{
	if (!L->tokens)
		return 0;
	return 8 * ((uint64_t)L->units + 1) + (L->tok.tu ? L->units * sizeof(pq_tok_unit) : 0);
}

/* ------------------------------------------------------------ the open */

/* Unit u's chunk's values' bytes at most (its value count: every level
 * entry, so lists' and nulls' too; UINT64_MAX when absurd). */
static uint64_t chunk_room(const pq_layout *L, uint32_t u)
{
	const pq_chunk_meta *c = &L->m.chunk[L->unit[u].c[0].chunk];
	if (c->num_values < 0 || (uint64_t)c->num_values > RF_BLOCK_DECODED_MAX)
		return UINT64_MAX / 4;
	return (uint64_t)c->num_values * L->col[0].width;
}

/* Counting unit u's chunk: its values' room, row lengths and scratch. */
static uint64_t count_bytes(const pq_layout *L, uint32_t u)
{
	const pq_unit *U = &L->unit[u];
	const pq_chunk_meta *c = &L->m.chunk[U->c[0].chunk];
	return pad8(chunk_room(L, u)) + pad8(4 * U->rows) + pad8(rf_pq_chunk_scratch(c, 0, false));
}

static int too_big(const pq_layout *L, uint32_t u, uint64_t bytes, const char *name, rf_error *err)
{
	const pq_unit *U = &L->unit[u];
	return rf_fail(err, -EFBIG,
	               "shard %s: row group %u (%llu rows, %llu bytes stored) decodes to up to "
	               "%llu bytes of tokens with this reader's working memory: more than a read "
	               "unit holds (%u bytes); write smaller row groups",
	               name, U->group, U64(U->rows), U64(U->c[0].bytes), U64(bytes),
	               RF_BLOCK_DECODED_MAX);
}

int rf_pq_tok_want(const pq_layout *L, uint32_t u, uint64_t *off, uint64_t *len, uint64_t *bound,
                   const char *name, rf_error *err)
{
	if (chunk_room(L, u) > RF_BLOCK_DECODED_MAX || L->unit[u].rows > RF_BLOCK_DECODED_MAX ||
	    (uint64_t)L->m.chunk[L->unit[u].c[0].chunk].total_uncompressed > RF_BLOCK_DECODED_MAX)
		return too_big(L, u, chunk_room(L, u), name, err);
	uint64_t need = count_bytes(L, u);
	if (need > RF_BLOCK_DECODED_MAX || L->unit[u].c[0].bytes > RF_BLOCK_DECODED_MAX)
		return too_big(L, u, need, name, err);
	*off = L->unit[u].c[0].start;
	*len = L->unit[u].c[0].bytes;
	*bound = need + 64;
	return 0;
}

/* Decodes unit u's chunk (chunk, len) into out (its room), lens, scratch:
 * *tokens its values. */
static int decode_chunk(const pq_layout *L, uint32_t u, const uint8_t *chunk, size_t len,
                        uint8_t *out, uint64_t out_cap, uint32_t *lens, uint8_t *scratch,
                        uint64_t scratch_cap, uint64_t *tokens, const char *name, rf_error *err)
{
	const pq_unit *U = &L->unit[u];
	const pq_unit_chunk *uc = &U->c[0];
	const pq_chunk_meta *c = &L->m.chunk[uc->chunk];
	pq_sink s = {.out = out,
	             .out_cap = out_cap,
	             .row_len = lens,
	             .rows = U->rows,
	             .scratch = scratch,
	             .scratch_cap = scratch_cap,
	             .dict_cap = rf_pq_dict_cap(c, 0)};
	uint64_t at = 0;
	const char *why = "?";
	int rc = rf_pq_chunk_decode(&L->col[0], c, chunk, len, &s, &at, &why);
	if (rc < 0)
		return rf_fail(err, rc, "shard %s: row group %u, column %s, at byte %llu: %s", name,
		               U->group, L->col[0].name, U64(uc->start + at), why);
	*tokens = s.out_len / L->col[0].width;
	return 0;
}

int rf_pq_tok_count(pq_layout *L, uint32_t u, const uint8_t *chunk, size_t len, const char *name,
                    rf_error *err)
{
	const pq_unit *U = &L->unit[u];
	uint64_t room = pad8(chunk_room(L, u)), lens = pad8(4 * U->rows),
	         scratch = count_bytes(L, u) - room - lens;
	uint8_t *mem = malloc(room + lens + scratch);
	if (!mem)
		return rf_fail(err, -ENOMEM,
		               "shard %s: row group %u: out of memory to count its tokens", name,
		               U->group);
	uint64_t n = 0;
	int rc = decode_chunk(L, u, chunk, len, mem, chunk_room(L, u), (uint32_t *)(mem + room),
	                      mem + room + lens, scratch, &n, name, err);
	free(mem);
	if (rc < 0)
		return rc;
	L->tok.first[u + 1] = L->tok.first[u] + n;
	return 0;
}

/* ------------------------------------------------------------ units */

typedef struct tok_plan {
	pq_tok_unit t;
	uint64_t windows_bytes, table, total, lo, hi;
} tok_plan;

/* The unit of the windows starting in units [a, b): what it reads and its
 * decoded slab: [windows][ends][tokens room][row lengths][scratch]. */
static tok_plan plan_units(const pq_layout *L, uint32_t a, uint32_t b)
{
	const pq_tokens *T = &L->tok;
	uint64_t Ls = T->seq_len, W = T->windows;
	uint64_t j0 = RF_MIN(W, (T->first[a] + Ls - 1) / Ls);
	uint64_t j1 = b == L->units ? W : RF_MIN(W, (T->first[b] + Ls - 1) / Ls);
	tok_plan p = {.t = {.u0 = a, .u_end = b, .u_last = a, .first_window = j0}};
	if (j1 <= j0)
		return p;
	uint64_t need = (j1 - 1) * Ls + Ls; /* the last window's last token */
	uint32_t h = a;
	while (h + 1 < L->units && T->first[h + 1] <= need)
		h++;
	p.t.windows = j1 - j0, p.t.u_last = h;
	uint64_t rows = 0;
	for (uint32_t g = a; g <= h; g++) {
		const pq_unit_chunk *uc = &L->unit[g].c[0];
		const pq_chunk_meta *c = &L->m.chunk[uc->chunk];
		p.t.room += chunk_room(L, g);
		rows = RF_MAX(rows, L->unit[g].rows);
		p.t.scratch = RF_MAX(p.t.scratch, pad8(rf_pq_chunk_scratch(c, 0, false)));
	}
	p.t.room = pad8(p.t.room), p.t.lens = pad8(4 * rows);
	p.windows_bytes = pad8(p.t.windows * (Ls + 1) * rf_tok_dtype_bytes(T->out_dtype));
	p.table = pad8(4 * p.t.windows + 4);
	p.total = p.windows_bytes + p.table + p.t.room + p.t.lens + p.t.scratch;
	p.lo = L->unit[a].c[0].start;
	p.hi = L->unit[h].c[0].start + L->unit[h].c[0].bytes;
	return p;
}

static bool plan_fits(const tok_plan *p)
{
	return p->total <= RF_BLOCK_DECODED_MAX && p->hi - p->lo <= RF_BLOCK_DECODED_MAX &&
	       p->t.windows <= PQ_TOK_WINDOWS_MAX;
}

int rf_pq_tok_units(pq_layout *L, rf_shard_index *ix, const char *name, rf_error *err)
{
	pq_tokens *T = &L->tok;
	T->tokens = T->first[L->units];
	T->windows = T->tokens > T->seq_len ? (T->tokens - 1) / T->seq_len : 0;
	unsigned isz = rf_tok_dtype_bytes(T->dtype);
	uint64_t rec = ((uint64_t)T->seq_len + 1) * rf_tok_dtype_bytes(T->out_dtype);
	if (rec + 8 > RF_BLOCK_DECODED_MAX)
		return rf_fail(
		    err, -EINVAL,
		    "shard %s: seq_len %u: a window of %llu bytes is more than a unit may "
		    "hold (%u)",
		    name, T->seq_len, U64(rec), RF_BLOCK_DECODED_MAX);
	if (!(T->tu = calloc(L->units ? L->units : 1, sizeof(*T->tu))))
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", name);
	for (uint32_t a = 0, b; a < L->units; a = b) {
		b = a + 1;
		while (b < L->units && (T->first[b] - T->first[a]) * isz < PQ_TOK_UNIT_BYTES)
			b++;
		tok_plan p = plan_units(L, a, b);
		while (!plan_fits(&p) && b - a > 1)
			p = plan_units(L, a, --b);
		if (!plan_fits(&p))
			return too_big(L, a, p.total, name, err);
		if (!p.t.windows)
			continue;
		rf_block_info *bi = &ix->block[T->tunits];
		*bi = (rf_block_info){.offset = p.lo,
		                      .compressed_bytes = (uint32_t)(p.hi - p.lo),
		                      .decoded_bytes = (uint32_t)p.total,
		                      .records = (uint32_t)p.t.windows,
		                      .first_record = p.t.first_window};
		T->tu[T->tunits++] = p.t;
	}
	ix->blocks = T->tunits;
	rf_fmt_layout_sums(ix);
	ix->records = T->windows;
	ix->largest_record_bytes = T->windows ? (uint32_t)rec : 0;
	uint64_t rows = 0;
	for (uint32_t u = 0; u < L->units; u++)
		rows += L->unit[u].rows;
	rf_tok_priv p = {.dtype = T->dtype,
	                 .out_dtype = T->out_dtype,
	                 .seq_len = T->seq_len,
	                 .tokens = T->tokens,
	                 .sequences = rows,
	                 .documents = rows};
	return rf_tok_metadata(ix, "parquet", &p, name, err);
}

/* ------------------------------------------------------------ decode */

static void copy_window(uint8_t *d, const uint8_t *s, uint64_t n, int in, int out)
{
	if (in == out) {
		memcpy(d, s, n * rf_tok_dtype_bytes(in));
		return;
	}
	for (uint64_t i = 0; i < n; i++) /* int32 widened to int64 (rf_tok_options) */
		rf_store_le64(d + 8 * i, (uint64_t)(int64_t)(int32_t)rf_load_le32(s + 4 * i));
}

int rf_pq_tok_decode(const pq_layout *L, const rf_shard_index *ix, uint32_t u, const void *src,
                     size_t src_len, void *dst, size_t dst_cap, rf_unit_records *out,
                     const char *name, rf_error *err)
{
	const pq_tokens *T = &L->tok;
	if (u >= ix->blocks || u >= T->tunits)
		return rf_fail(err, -EINVAL, "shard %s: unit %u of %u", name, u, ix->blocks);
	const rf_block_info *b = &ix->block[u];
	const pq_tok_unit *t = &T->tu[u];
	tok_plan p = plan_units(L, t->u0, t->u_end);
	if (src_len != b->compressed_bytes || dst_cap < p.total || p.t.windows != t->windows)
		return rf_fail(err, -EINVAL,
		               "shard %s: unit %u: %zu stored bytes (expected %u), room %zu "
		               "(expected %llu)",
		               name, u, src_len, b->compressed_bytes, dst_cap, U64(p.total));
	uint8_t *win = dst, *ends = win + p.windows_bytes, *room = ends + p.table;
	uint32_t *lens = (uint32_t *)(room + t->room);
	uint8_t *scratch = (uint8_t *)lens + t->lens;
	unsigned isz = rf_tok_dtype_bytes(T->dtype);
	uint64_t have = 0; /* tokens decoded */
	for (uint32_t g = t->u0; g <= t->u_last; g++) {
		const pq_unit_chunk *uc = &L->unit[g].c[0];
		uint64_t n = 0;
		RF_TRY(decode_chunk(L, g, (const uint8_t *)src + (uc->start - b->offset),
		                    (size_t)uc->bytes, room + have * isz, t->room - have * isz,
		                    lens, scratch, t->scratch, &n, name, err));
		if (n != T->first[g + 1] - T->first[g])
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: row group %u, column %s: %llu tokens, the open "
			               "counted %llu (the file changed since the open)",
			               name, L->unit[g].group, L->col[0].name, U64(n),
			               U64(T->first[g + 1] - T->first[g]));
		have += n;
	}
	uint64_t Ls = T->seq_len, base = T->first[t->u0];
	uint32_t rec = (uint32_t)((Ls + 1) * rf_tok_dtype_bytes(T->out_dtype));
	for (uint64_t i = 0; i < t->windows; i++) {
		uint64_t at = (t->first_window + i) * Ls - base;
		if (at + Ls + 1 > have) /* the layout is ours: a broken one is a bug */
			return rf_fail(err, -EINVAL,
			               "shard %s: unit %u: window %llu past its tokens", name, u,
			               U64(t->first_window + i));
		copy_window(win + i * rec, room + at * isz, Ls + 1, T->dtype, T->out_dtype);
		rf_store_le32(ends + 4 * i, (uint32_t)((i + 1) * rec));
	}
	rf_store_le32(ends + 4 * t->windows, (uint32_t)t->windows);
	*out = (rf_unit_records){
	    .base = win, .ends = (const uint32_t *)ends, .records = (uint32_t)t->windows};
	return 0;
}
