/* parquet.c - Apache Parquet files behind the format seam: the open reads
 * the file's last bytes (u32 footer length + "PAR1"), then the footer
 * (FileMetaData, parquet_meta.c) when the first read did not hold it, picks
 * the columns (option `columns`, else every column this reader decodes),
 * reads the dictionary page of each dictionary-encoded string chunk that
 * has no size statistics (its longest value bounds the decoded size), and
 * lays out one read unit per row group: the byte range of its selected
 * column chunks. Decode (parquet_page.c) turns each chunk into its column's
 * values and lays the row group's rows out as records whose fields are the
 * columns (a null is an absent field). docs/format.md, "Parquet". */
#include "parquet.h"

#include <stdio.h>
#include <stdlib.h>

#define U64(x)         ((unsigned long long)(x))
#define PQ_TAIL_LOCAL  (1u << 20)
#define PQ_TAIL_REMOTE (64u << 10)
/* a row's bytes: the layout's largest record (the budget sizes a batch from it) */
#define PQ_ROW_MAX (4u << 20)
#define PQ_KEY_MAX 64 /* a row's key: STEM/ROW */

static const char *const type_names[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                         "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};

static void layout_free(pq_layout *L)
{
	if (!L)
		return;
	rf_pq_meta_free(&L->m);
	free(L->tok.first);
	free(L->tok.tu);
	free(L->unit);
	free(L->uc);
	free(L);
}

static void pq_close(rf_shard_index *ix, void *priv)
{
	layout_free(priv);
	rf_index_free(ix);
}

static uint64_t layout_held(const pq_layout *L)
{
	return sizeof(*L) + L->m.held_bytes + L->units * (sizeof(pq_unit) + sizeof(rf_block_info)) +
	       (uint64_t)L->units * L->ncols * sizeof(pq_unit_chunk) + sizeof(rf_shard_index) +
	       rf_pq_tok_held(L);
}

/* ------------------------------------------------------------ schema */

static const char *type_name(int32_t t)
{
	return t >= 0 && t <= PQ_FLBA ? type_names[t] : "a group";
}

static uint32_t type_width(const pq_schema_el *e)
{
	switch (e->type) {
	case PQ_BOOLEAN:
		return 1;
	case PQ_INT32:
	case PQ_FLOAT:
		return 4;
	case PQ_INT64:
	case PQ_DOUBLE:
		return 8;
	case PQ_INT96:
		return 12;
	case PQ_FLBA:
		return (uint32_t)e->type_length;
	default:
		return 0;
	}
}

/* The top-level field at schema[at] (spanning *span elements and *leaves
 * leaves) as a column, or why it is not one (*why set, 0 returned). */
static int top_field(const pq_file_meta *m, uint32_t at, uint32_t *span, uint32_t *leaves,
                     pq_column *c, char *why, size_t why_cap)
{
	uint64_t todo = 1;
	uint32_t i = at, nl = 0;
	while (todo > 0) {
		if (i >= m->schema_n)
			return -1;
		const pq_schema_el *e = &m->schema[i++];
		todo += (uint64_t)e->num_children - 1;
		if (e->num_children == 0)
			nl++;
	}
	*span = i - at, *leaves = nl;
	const pq_schema_el *g = &m->schema[at];
	*c = (pq_column){.type = -1};
	snprintf(c->name, sizeof(c->name), "%s", g->name);
	if (g->num_children == 0) {
		if (g->repetition == PQ_REPEATED) {
			snprintf(why, why_cap, "a repeated %s (a legacy list)", type_name(g->type));
			return 0;
		}
		if (g->type < 0 ||
		    (g->type == PQ_FLBA && (g->type_length <= 0 || g->type_length > (1 << 20)))) {
			snprintf(why, why_cap, "an empty group or a bad fixed length");
			return 0;
		}
		c->type = g->type, c->type_length = g->type_length, c->width = type_width(g);
		c->kind = PQ_FLAT, c->max_def = g->repetition == PQ_OPTIONAL;
		return 0;
	}
	/* a 3-level LIST of a fixed-width number */
	const pq_schema_el *r = *span == 3 ? &m->schema[at + 1] : NULL,
	                   *el = *span == 3 ? &m->schema[at + 2] : NULL;
	bool list = (g->converted == 3 || g->logical_list) && g->num_children == 1 && r &&
	            r->repetition == PQ_REPEATED && r->num_children == 1 && el &&
	            el->num_children == 0 && el->repetition != PQ_REPEATED;
	if (!list) {
		snprintf(why, why_cap, "a nested type (%s) other than a list of numbers",
		         g->converted == 1 || g->converted == 2 ? "a map" : "a struct or list");
		return 0;
	}
	if (el->type != PQ_INT32 && el->type != PQ_INT64 && el->type != PQ_FLOAT &&
	    el->type != PQ_DOUBLE) {
		snprintf(why, why_cap,
		         "a list of %s (lists of INT32, INT64, FLOAT, DOUBLE are read)",
		         type_name(el->type));
		return 0;
	}
	uint8_t d0 = g->repetition == PQ_OPTIONAL;
	c->type = el->type, c->width = type_width(el), c->kind = PQ_LIST, c->max_rep = 1;
	c->list_def = d0, c->max_def = (uint8_t)(d0 + 1 + (el->repetition == PQ_OPTIONAL));
	return 0;
}

/* Is `name` in the comma list `list`? */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !memcmp(p, name, n))
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

static int select_columns(pq_layout *L, const char *want, const char *name, rf_error *err)
{
	const pq_file_meta *m = &L->m;
	const pq_schema_el *root = &m->schema[0];
	uint32_t at = 1, leaf = 0;
	for (int32_t k = 0; k < root->num_children; k++) {
		uint32_t span, leaves;
		pq_column c;
		char why[160] = "";
		if (top_field(m, at, &span, &leaves, &c, why, sizeof(why)) < 0)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: the schema's child counts run past its %u elements", name,
			    m->schema_n);
		c.leaf = leaf;
		at += span, leaf += leaves;
		bool named = want && listed(want, c.name);
		if (want && !named)
			continue;
		if (why[0] && named)
			return rf_fail(err, -EPROTONOSUPPORT,
			               "shard %s: column \"%s\" is %s, which this reader does not "
			               "decode",
			               name, c.name, why);
		if (why[0] || leaves != 1)
			continue; /* by default: the columns this reader decodes */
		for (uint32_t j = 0; j < L->ncols; j++)
			if (!strcmp(L->col[j].name, c.name))
				return rf_fail(err, RF_E_CORRUPT,
				               "shard %s: two columns named \"%s\"", name, c.name);
		if (L->ncols == RF_PQ_SELECT_MAX)
			return rf_fail(err, -E2BIG, "shard %s: more than %u columns selected", name,
			               RF_PQ_SELECT_MAX);
		L->col[L->ncols] = c;
		L->names[L->ncols] = L->col[L->ncols].name;
		L->ncols++;
	}
	if (at != m->schema_n)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: the schema's root has %d children covering %u of its %u "
		               "elements",
		               name, root->num_children, at, m->schema_n);
	for (uint32_t g = 0; g < m->groups_n; g++)
		if (m->group[g].chunks != leaf)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: row group %u has %u column chunks, the schema %u "
			               "columns",
			               name, g, m->group[g].chunks, leaf);
	for (const char *p = want; p && *p;) {
		size_t k = strcspn(p, ",");
		bool ok = false;
		for (uint32_t j = 0; j < L->ncols; j++)
			ok |= strlen(L->col[j].name) == k && !memcmp(L->col[j].name, p, k);
		if (!ok)
			return rf_fail(err, -ENOENT,
			               "shard %s: no column \"%.*s\" (columns option)", name,
			               (int)RF_MIN(k, 255), p);
		p += k + (p[k] == ',');
	}
	if (!L->ncols)
		return rf_fail(err, -EPROTONOSUPPORT,
		               "shard %s: none of its columns is of a type this reader decodes",
		               name);
	return 0;
}

/* ------------------------------------------------------------ units */

/* Chunk c's byte range, checked inside the file's data. */
static int chunk_range(const pq_chunk_meta *c, uint64_t data_end, uint64_t *start, uint64_t *bytes)
{
	uint64_t s = (uint64_t)c->data_page_offset;
	if (c->dictionary_page_offset > 0 && (uint64_t)c->dictionary_page_offset < s)
		s = (uint64_t)c->dictionary_page_offset;
	uint64_t n = (uint64_t)c->total_compressed;
	if (s < 4 || s > data_end || n > data_end - s || n == 0)
		return -1;
	*start = s, *bytes = n;
	return 0;
}

static bool needs_dict_read(const pq_column *col, const pq_chunk_meta *c)
{
	uint32_t dict = 1u << PQ_ENC_PLAIN_DICTIONARY | 1u << PQ_ENC_RLE_DICTIONARY;
	return !col->width && c->unencoded_bytes < 0 && (c->encodings & dict);
}

/* Unit chunk values' bound (the dictionary's longest value when read). */
static int value_bound(const pq_column *col, const pq_chunk_meta *c, uint64_t longest,
                       uint64_t *out, char *why, size_t cap)
{
	uint64_t n = (uint64_t)c->num_values, b;
	if (col->width)
		return rf_mul_u64(n, col->width, out) ? 0 : -1;
	/* strings: their bytes, plus the chunk's uncompressed size (pages are
	 * decoded in the tail of the values' room: pq_sink.page_in_out) */
	if (c->unencoded_bytes >= 0)
		return rf_add_u64((uint64_t)c->unencoded_bytes, (uint64_t)c->total_uncompressed,
		                  out)
		           ? 0
		           : -1;
	if (c->encodings & 1u << PQ_ENC_DELTA_BYTE_ARRAY) {
		snprintf(why, cap,
		         "DELTA_BYTE_ARRAY strings without size statistics (their "
		         "decoded size is not known before the decode)");
		return -1;
	}
	if (!rf_mul_u64(n, longest, &b) || !rf_add_u64(b, (uint64_t)c->total_uncompressed, out))
		return -1;
	return 0;
}

static uint64_t table_size(uint64_t rows, uint32_t ncols)
{
	return 12 * (rows + 1) + 12ull * ncols * rows + PQ_KEY_MAX * rows + 8;
}

/* Unit u's decoded layout: [records][staging][row lengths][scratch][table]. */
typedef struct unit_plan {
	uint64_t records, staging, lens, scratch, table, total;
} unit_plan;

static unit_plan plan_of(const pq_layout *L, const pq_unit *U)
{
	unit_plan p = {.records = (U->values + 7) & ~7ull};
	p.staging = L->ncols > 1 ? p.records : 0;
	p.lens = (4 * U->rows * L->ncols + 7) & ~7ull;
	p.scratch = (U->scratch + 7) & ~7ull;
	p.table = table_size(U->rows, L->ncols);
	p.total = p.records + p.staging + p.lens + p.scratch + p.table;
	return p;
}

static int build_units(rf_fmt_open *o, pq_layout *L, uint64_t data_end, rf_error *err)
{
	const pq_file_meta *m = &L->m;
	uint32_t units = 0;
	for (uint32_t g = 0; g < m->groups_n; g++)
		units += m->group[g].num_rows > 0;
	L->unit = calloc(units ? units : 1, sizeof(*L->unit));
	L->uc = calloc((uint64_t)(units ? units : 1) * L->ncols, sizeof(*L->uc));
	if (!L->unit || !L->uc)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for %u row groups", o->name,
		               units);
	uint64_t first_row = 0;
	for (uint32_t g = 0; g < m->groups_n; g++) {
		const pq_row_group *G = &m->group[g];
		if (G->num_rows == 0)
			continue;
		pq_unit *U = &L->unit[L->units];
		U->group = g, U->rows = (uint64_t)G->num_rows, U->c = &L->uc[L->units * L->ncols];
		L->units++;
		for (uint32_t k = 0; k < L->ncols; k++) {
			const pq_chunk_meta *c = &m->chunk[G->first_chunk + L->col[k].leaf];
			pq_unit_chunk *uc = &U->c[k];
			uc->chunk = G->first_chunk + L->col[k].leaf;
			if (c->has_file_path)
				return rf_fail(
				    err, -EPROTONOSUPPORT,
				    "shard %s: row group %u, column %s: its chunk lies in "
				    "another file (file_path), which this reader does not "
				    "follow",
				    o->name, g, L->col[k].name);
			if (c->type != L->col[k].type || c->codec < 0 ||
			    chunk_range(c, data_end, &uc->start, &uc->bytes) < 0 ||
			    (L->col[k].kind == PQ_FLAT && c->num_values != G->num_rows))
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: row group %u, column %s: the chunk's type, "
				    "values or byte range [%lld, +%lld) disagree with the "
				    "schema, the rows or the file's %llu data bytes",
				    o->name, g, L->col[k].name, (long long)c->data_page_offset,
				    (long long)c->total_compressed, U64(data_end));
		}
		first_row += U->rows;
	}
	(void)first_row;
	return 0;
}

/* Every unit's figures once the dictionaries are known: block[] and the
 * limits (a row group past a unit's limits is refused, named). */
static int finish_units(rf_fmt_open *o, pq_layout *L, const uint64_t *longest, rf_shard_index *ix,
                        rf_error *err)
{
	uint64_t first = 0, largest_rec = 0;
	for (uint32_t u = 0; u < L->units; u++) {
		pq_unit *U = &L->unit[u];
		uint64_t lo = UINT64_MAX, hi = 0, row_bound = 0;
		U->values = 0;
		for (uint32_t k = 0; k < L->ncols; k++) {
			pq_unit_chunk *uc = &U->c[k];
			const pq_chunk_meta *c = &L->m.chunk[uc->chunk];
			char why[160] = "values past 2^64 bytes";
			uint64_t at = (uint64_t)u * L->ncols + k,
			         dict_bytes = longest[(uint64_t)L->units * L->ncols + at];
			if (value_bound(&L->col[k], c, longest[at], &uc->value_bound, why,
			                sizeof(why)) < 0)
				return rf_fail(err, -EPROTONOSUPPORT,
				               "shard %s: row group %u, column %s: %s", o->name,
				               U->group, L->col[k].name, why);
			uc->page_in_out =
			    !L->col[k].width && !(c->encodings & 1u << PQ_ENC_DELTA_BYTE_ARRAY);
			uc->dict_cap = rf_pq_dict_cap(c, dict_bytes);
			uc->scratch = rf_pq_chunk_scratch(c, dict_bytes, uc->page_in_out);
			U->scratch = RF_MAX(U->scratch, uc->scratch);
			U->values += uc->value_bound;
			row_bound += L->col[k].kind == PQ_FLAT && L->col[k].width ? L->col[k].width
			                                                          : uc->value_bound;
			lo = RF_MIN(lo, uc->start);
			hi = RF_MAX(hi, uc->start + uc->bytes);
			if (U->values > RF_BLOCK_DECODED_MAX)
				break;
		}
		unit_plan p = plan_of(L, U);
		if (U->values > RF_BLOCK_DECODED_MAX || p.total > RF_BLOCK_DECODED_MAX ||
		    hi - lo > RF_BLOCK_DECODED_MAX || U->rows > UINT32_MAX / 16)
			return rf_fail(
			    err, -EFBIG,
			    "shard %s: row group %u (%llu rows, %llu bytes stored) decodes "
			    "to up to %llu bytes with this reader's working memory: more "
			    "than a read unit holds (%u bytes); write smaller row groups",
			    o->name, U->group, U64(U->rows), U64(hi - lo), U64(p.total),
			    RF_BLOCK_DECODED_MAX);
		ix->block[u] = (rf_block_info){.offset = lo,
		                               .compressed_bytes = (uint32_t)(hi - lo),
		                               .decoded_bytes = (uint32_t)p.total,
		                               .records = (uint32_t)U->rows,
		                               .first_record = first};
		first += U->rows;
		largest_rec = RF_MAX(largest_rec, RF_MIN(row_bound, U->values));
		L->payload += U->values;
	}
	ix->records = first;
	ix->largest_record_bytes = (uint32_t)RF_MIN(largest_rec, PQ_ROW_MAX);
	rf_fmt_layout_sums(ix);
	return 0;
}

/* ------------------------------------------------------------ open */

typedef struct pq_state {
	uint32_t phase; /* 0: the tail asked for; 1: the footer; 2: dictionaries;
	                 * 3: token counts (seq_len) */
	pq_layout *L;
	uint64_t *longest; /* units * ncols: a dictionary's longest value, then as
	                    * many: its decoded bytes (0: not read) */
	uint64_t next;     /* the next unit chunk to look at for a dictionary */
	uint32_t counted;  /* seq_len: the units whose tokens are counted */
	uint64_t held;
} pq_state;

static void state_free(pq_state *s)
{
	if (s) {
		layout_free(s->L);
		free(s->longest);
		free(s);
	}
}

static void open_abort(rf_fmt_open *o)
{
	state_free(o->state);
	o->state = NULL;
}

static int want_range(rf_fmt_open *o, uint64_t off, uint64_t len, uint64_t min_len, uint64_t bound)
{
	o->want =
	    (rf_fmt_want){.offset = off, .len = len, .min_len = min_len, .parse_bound = bound};
	return RF_FMT_NEED;
}

static int fail_final(rf_fmt_open *o, rf_error *err, const char *why)
{
	o->final = true;
	return rf_fail(err, RF_E_CORRUPT, "shard %s: %s", o->name, why);
}

/* The next dictionary to read, or DONE. */
static int next_dict(rf_fmt_open *o, pq_state *s, rf_error *err);

static int parse_footer(rf_fmt_open *o, pq_state *s, const uint8_t *footer, uint64_t len,
                        uint64_t at, rf_error *err)
{
	pq_layout *L = calloc(1, sizeof(*L));
	if (!L)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	int rc = rf_pq_meta_parse(footer, (size_t)len, &L->m, o->name, at, err);
	if (rc == 0 && L->m.schema[0].num_children <= 0)
		rc = rf_fail(err, RF_E_CORRUPT, "shard %s: the schema's root has no columns",
		             o->name);
	const rf_pq_opts *opt = o->opt;
	const char *want = opt && opt->columns[0] ? opt->columns : NULL;
	if (rc == 0)
		rc = select_columns(L, want, o->name, err);
	if (rc == 0)
		rc = rf_pq_tok_select(L, opt, o->name, err);
	if (rc == 0)
		rc = build_units(o, L, at, err);
	if (rc == 0 && L->tokens && !(L->tok.first = calloc((uint64_t)L->units + 1, 8)))
		rc = rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	if (rc == 0 &&
	    !(s->longest = calloc(2 * (uint64_t)(L->units ? L->units : 1) * L->ncols, 8)))
		rc = rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	if (rc < 0) {
		layout_free(L);
		return rc;
	}
	const char *b = strrchr(o->url, '/');
	b = b ? b + 1 : o->url;
	size_t n = rf_url_path_len(b);
	n = n > 8 && !memcmp(b + n - 8, ".parquet", 8) ? n - 8 : n;
	snprintf(L->stem, sizeof(L->stem), "%.*s", (int)RF_MIN(n, 40), b);
	s->L = L;
	s->phase = 2;
	s->held = sizeof(*s) + layout_held(L) + 16ull * (L->units ? L->units : 1) * L->ncols;
	o->held_bytes = s->held;
	return next_dict(o, s, err);
}

/* seq_len: the next row group's token chunk to count, or 0 (all counted). */
static int next_count(rf_fmt_open *o, pq_state *s, rf_error *err)
{
	uint64_t off, len, bound;
	if (!s->L->tokens || s->counted == s->L->units)
		return 0;
	RF_TRY(rf_pq_tok_want(s->L, s->counted, &off, &len, &bound, o->name, err));
	s->phase = 3;
	return want_range(o, off, len, 0, bound);
}

static int finish(rf_fmt_open *o, pq_state *s, rf_error *err);

static int count_step(rf_fmt_open *o, pq_state *s, rf_error *err)
{
	if (o->got_offset != o->want.offset || o->got_len != o->want.len)
		return rf_fail(err, -EIO, "shard %s: a token chunk's read came back short",
		               o->name);
	RF_TRY(rf_pq_tok_count(s->L, s->counted, o->got, (size_t)o->got_len, o->name, err));
	s->counted++;
	return finish(o, s, err);
}

static int finish(rf_fmt_open *o, pq_state *s, rf_error *err)
{
	int more = next_count(o, s, err);
	if (more)
		return more;
	pq_layout *L = s->L;
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	if (ix) {
		ix->metadata = strdup("");
		ix->block = calloc(L->units ? L->units : 1, sizeof(rf_block_info));
		ix->blocks = L->units;
		ix->file_bytes = o->size;
	}
	if (!ix || !ix->metadata || !ix->block) {
		rf_index_free(ix);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the layout", o->name);
	}
	int rc = L->tokens ? rf_pq_tok_units(L, ix, o->name, err)
	                   : finish_units(o, L, s->longest, ix, err);
	if (rc < 0) {
		rf_index_free(ix);
		return rc;
	}
	o->index = ix;
	o->priv = L;
	o->in_place = false;
	s->L = NULL;
	o->held_bytes = layout_held(L);
	return RF_FMT_DONE;
}

static int next_dict(rf_fmt_open *o, pq_state *s, rf_error *err)
{
	pq_layout *L = s->L;
	for (; s->next < (uint64_t)L->units * L->ncols; s->next++) {
		const pq_unit *U = &L->unit[s->next / L->ncols];
		const pq_unit_chunk *uc = &U->c[s->next % L->ncols];
		const pq_chunk_meta *c = &L->m.chunk[uc->chunk];
		if (!needs_dict_read(&L->col[s->next % L->ncols], c))
			continue;
		uint64_t len = uc->bytes;
		if (c->dictionary_page_offset > 0 &&
		    c->dictionary_page_offset < c->data_page_offset)
			len = (uint64_t)(c->data_page_offset - c->dictionary_page_offset);
		if (len > RF_PQ_DICT_MAX || (uint64_t)c->total_uncompressed > RF_BLOCK_DECODED_MAX)
			return rf_fail(
			    err, -EFBIG,
			    "shard %s: row group %u, column %s: a dictionary of %llu bytes "
			    "(at most %u are read at open)",
			    o->name, U->group, L->col[s->next % L->ncols].name, U64(len),
			    RF_PQ_DICT_MAX);
		return want_range(o, uc->start, RF_MIN(len, uc->bytes), 0,
		                  (uint64_t)c->total_uncompressed + 64);
	}
	return finish(o, s, err);
}

static int dict_step(rf_fmt_open *o, pq_state *s, rf_error *err)
{
	pq_layout *L = s->L;
	const pq_unit *U = &L->unit[s->next / L->ncols];
	const pq_unit_chunk *uc = &U->c[s->next % L->ncols];
	const pq_chunk_meta *c = &L->m.chunk[uc->chunk];
	uint64_t cap = (uint64_t)c->total_uncompressed;
	uint8_t *scratch = malloc(cap ? cap : 1);
	if (!scratch)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	const char *why = NULL;
	int rc =
	    rf_pq_dict_longest(c, o->got, (size_t)o->got_len, scratch, cap, &s->longest[s->next],
	                       &s->longest[(uint64_t)L->units * L->ncols + s->next], &why);
	free(scratch);
	if (rc < 0)
		return rf_fail(err, rc,
		               "shard %s: row group %u, column %s, dictionary page at byte "
		               "%llu: %s",
		               o->name, U->group, L->col[s->next % L->ncols].name, U64(uc->start),
		               why);
	s->next++;
	return next_dict(o, s, err);
}

static int tail_step(rf_fmt_open *o, pq_state *s, rf_error *err)
{
	if (o->size < 12)
		return fail_final(o, err, "not a Parquet file (under 12 bytes)");
	if (o->got_offset + o->got_len != o->size || o->got_len < 8)
		return rf_fail(err, -EIO, "shard %s: open got [%llu, +%llu), not the file's tail",
		               o->name, U64(o->got_offset), U64(o->got_len));
	const uint8_t *end = o->got + o->got_len;
	if (memcmp(end - 4, "PAR1", 4) != 0)
		return fail_final(o, err, "not a Parquet file (its last 4 bytes are not PAR1)");
	uint64_t flen = rf_load_le32(end - 8);
	if (flen > o->size - 12 || flen > RF_PQ_FOOTER_MAX || flen == 0) {
		o->final = true;
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: at byte %llu: a footer of %llu bytes (the file has %llu; "
		               "at most %u)",
		               o->name, U64(o->size - 8), U64(flen), U64(o->size),
		               RF_PQ_FOOTER_MAX);
	}
	uint64_t at = o->size - 8 - flen;
	if (o->got_len >= flen + 8)
		return parse_footer(o, s, end - 8 - flen, flen, at, err);
	s->phase = 1;
	return want_range(o, at, flen + 8, 0, rf_pq_meta_bound(flen));
}

static int pq_open_step(rf_fmt_open *o, rf_error *err)
{
	pq_state *s = o->state;
	if (!s && !o->got) { /* the first step: the tail (the state comes with its bytes) */
		uint64_t len = RF_MIN(o->size, o->local ? PQ_TAIL_LOCAL : PQ_TAIL_REMOTE);
		return want_range(o, o->size - len, len, RF_MIN(len, 8),
		                  rf_pq_meta_bound(len) + sizeof(*s));
	}
	if (!o->got)
		return rf_fail(err, -EIO, "shard %s: the open's read delivered nothing", o->name);
	if (!s) {
		if (!(s = o->state = calloc(1, sizeof(*s))))
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		s->held = sizeof(*s);
		o->held_bytes = s->held;
	}
	switch (s->phase) {
	case 0:
		return tail_step(o, s, err);
	case 1:
		if (o->got_offset != o->want.offset || o->got_len != o->want.len)
			return rf_fail(err, -EIO, "shard %s: the footer's read came back short",
			               o->name);
		return parse_footer(o, s, o->got, o->got_len - 8, o->got_offset, err);
	case 3:
		return count_step(o, s, err);
	default:
		return dict_step(o, s, err);
	}
}

/* ------------------------------------------------------------ decode */

/* The rows of unit U as records: each row's present fields, column order. */
static int interleave(const pq_layout *L, const pq_unit *U, uint8_t *records,
                      const uint8_t *staging, const uint32_t *lens, const uint64_t *col_len,
                      uint8_t *table, uint32_t largest, uint64_t first_row, rf_unit_records *out,
                      const char *name, rf_error *err)
{
	uint32_t r = (uint32_t)U->rows, n = L->ncols, nf = 0;
	uint8_t *ends = table;
	uint32_t *field_first = (uint32_t *)(table + 4 * ((uint64_t)r + 1));
	uint32_t *key_first = field_first + r + 1;
	rf_rec_field *fields = (rf_rec_field *)(key_first + r + 1);
	char *keys = (char *)(fields + (uint64_t)n * r);
	uint64_t cur[RF_PQ_SELECT_MAX] = {0}, col_at[RF_PQ_SELECT_MAX], at = 0, pos = 0;
	uint32_t key_len = 0;
	for (uint32_t k = 0; k < n; k++)
		col_at[k] = at, at += U->c[k].value_bound;
	for (uint32_t i = 0; i < r; i++) {
		uint64_t start = pos;
		field_first[i] = nf;
		key_first[i] = key_len;
		key_len += (uint32_t)snprintf(keys + key_len, PQ_KEY_MAX, "%s/%llu", L->stem,
		                              U64(first_row + i));
		for (uint32_t k = 0; k < n; k++) {
			uint32_t len = lens[(uint64_t)k * r + i];
			if (len == RF_PQ_ABSENT)
				continue;
			if (len > col_len[k] - cur[k])
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: row group %u, column %s: rows longer than its "
				    "values",
				    name, U->group, L->col[k].name);
			if (n > 1)
				memcpy(records + pos, staging + col_at[k] + cur[k], len);
			fields[nf++] =
			    (rf_rec_field){.name = k, .offset = (uint32_t)pos, .len = len};
			pos += len, cur[k] += len;
		}
		if (pos - start > largest)
			return rf_fail(
			    err, -EFBIG,
			    "shard %s: row group %u, row %u: %llu bytes, more than a row "
			    "may hold (%u)",
			    name, U->group, i, U64(pos - start), largest);
		rf_store_le32(ends + 4ull * i, (uint32_t)pos);
	}
	for (uint32_t k = 0; k < n; k++)
		if (cur[k] != col_len[k])
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: row group %u, column %s: %llu value bytes, its rows "
			    "hold %llu",
			    name, U->group, L->col[k].name, U64(col_len[k]), U64(cur[k]));
	rf_store_le32(ends + 4ull * r, r);
	field_first[r] = nf;
	key_first[r] = key_len;
	*out = (rf_unit_records){.base = records,
	                         .ends = (const uint32_t *)ends,
	                         .records = r,
	                         .fields = fields,
	                         .field_first = field_first,
	                         .keys = keys,
	                         .key_first = key_first};
	return 0;
}

static int pq_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                     const void *src, size_t src_len, void *dst, size_t dst_cap,
                     rf_unit_records *out, const char *name, rf_error *err)
{
	const pq_layout *L = priv;
	(void)d;
	if (L->tokens)
		return rf_pq_tok_decode(L, ix, u, src, src_len, dst, dst_cap, out, name, err);
	if (u >= ix->blocks || u >= L->units)
		return rf_fail(err, -EINVAL, "shard %s: unit %u of %u", name, u, ix->blocks);
	const rf_block_info *b = &ix->block[u];
	const pq_unit *U = &L->unit[u];
	unit_plan p = plan_of(L, U);
	if (src_len != b->compressed_bytes || dst_cap < p.total)
		return rf_fail(err, -EINVAL,
		               "shard %s: unit %u: %zu stored bytes (expected %u), room %zu "
		               "(expected %llu)",
		               name, u, src_len, b->compressed_bytes, dst_cap, U64(p.total));
	uint8_t *records = dst, *staging = records + p.records;
	uint32_t *lens = (uint32_t *)(staging + p.staging);
	uint8_t *scratch = (uint8_t *)lens + p.lens, *table = scratch + p.scratch;
	uint64_t col_len[RF_PQ_SELECT_MAX], off = 0;
	for (uint32_t k = 0; k < L->ncols; k++) {
		const pq_unit_chunk *uc = &U->c[k];
		pq_sink s = {.out = L->ncols == 1 ? records : staging + off,
		             .out_cap = uc->value_bound,
		             .row_len = lens + (uint64_t)k * U->rows,
		             .rows = U->rows,
		             .scratch = scratch,
		             .scratch_cap = p.scratch,
		             .dict_cap = uc->dict_cap,
		             .page_in_out = uc->page_in_out};
		uint64_t at = 0;
		const char *why = "?";
		int rc = rf_pq_chunk_decode(&L->col[k], &L->m.chunk[uc->chunk],
		                            (const uint8_t *)src + (uc->start - b->offset),
		                            (size_t)uc->bytes, &s, &at, &why);
		if (rc < 0)
			return rf_fail(err, rc,
			               "shard %s: row group %u, column %s, at byte %llu: %s", name,
			               U->group, L->col[k].name, U64(uc->start + at), why);
		col_len[k] = s.out_len;
		off += uc->value_bound;
	}
	return interleave(L, U, records, staging, lens, col_len, table, ix->largest_record_bytes,
	                  b->first_record, out, name, err);
}

static uint32_t pq_field_names(const void *priv, const char *const **names)
{
	const pq_layout *L = priv;
	*names = L->names;
	return L->tokens ? 0 : L->ncols; /* windows are single records */
}

/* The records' bytes: token windows are all (L + 1) tokens (their layout
 * alone has metadata); rows: the decoded bound. */
static uint64_t pq_payload_bytes(const rf_shard_index *ix)
{
	if (ix->metadata && ix->metadata[0])
		return ix->records * (uint64_t)ix->largest_record_bytes;
	return ix->decoded_bytes;
}

int rf_pq_opts_parse(const rf_fmt_config *cfg, void *out, rf_error *err)
{
	rf_pq_opts *o = out;
	memset(o, 0, sizeof(*o));
	RF_TRY(rf_tok_opts_parse(cfg, &o->tok, err));
	const char *cols = NULL;
	RF_TRY(rf_fmt_cfg_str(cfg, "columns", &cols, err));
	if (cols && strlen(cols) >= sizeof(o->columns))
		return rf_fail(err, -EINVAL, "columns: a list of at most %zu bytes",
		               sizeof(o->columns) - 1);
	if (cols)
		snprintf(o->columns, sizeof(o->columns), "%s", cols);
	return 0;
}

const rf_format rf_parquet_format = {
    .name = "parquet",
    .names = (const char *const[]){".parquet", NULL},
    .open_step = pq_open_step,
    .open_abort = open_abort,
    .close = pq_close,
    .decode = pq_decode,
    .in_place = false,
    .field_names = pq_field_names,
    .payload_bytes = pq_payload_bytes,
    .largest_record_bound = true,
    .options = rf_pq_opts_parse,
    .options_bytes = sizeof(rf_pq_opts),
};
