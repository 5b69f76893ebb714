/* parquet_meta.c - Parquet's FileMetaData and PageHeader (parquet.thrift in
 * apache/parquet-format) from Thrift compact bytes (thrift.c): the schema
 * as its flat list, row groups and their column chunks' metadata; fields
 * this reader does not use are skipped. Every allocation is counted against
 * rf_pq_meta_bound(len): a footer cannot make the parse take more than a
 * small multiple of its own bytes. */
#include "parquet.h"
#include "thrift.h"

#include <stdlib.h>

typedef struct meta_parse {
	rf_thrift t;
	pq_file_meta *m;
	uint64_t bound, names_cap, names_len, chunks_cap;
	const char *why;
} meta_parse;

uint64_t rf_pq_meta_bound(uint64_t len)
{
	return 16 * len + (1u << 20);
}

static void *take(meta_parse *p, uint64_t n, uint64_t size)
{
	uint64_t bytes;
	if (!rf_mul_u64(n ? n : 1, size, &bytes) || bytes > p->bound - p->m->held_bytes) {
		rf_thrift_fail(&p->t, "lists larger than the footer's bytes allow");
		return NULL;
	}
	void *v = calloc(1, bytes);
	if (!v) {
		p->why = "out of memory";
		rf_thrift_fail(&p->t, "out of memory");
		return NULL;
	}
	p->m->held_bytes += bytes;
	return v;
}

static const char *name_copy(meta_parse *p, const uint8_t *s, uint32_t len)
{
	if (len > RF_PQ_NAME_MAX || memchr(s, 0, len)) {
		rf_thrift_fail(&p->t, "a name longer than 255 bytes or holding a NUL");
		return NULL;
	}
	if (p->names_len + len + 1 > p->names_cap) {
		rf_thrift_fail(&p->t, "names longer than the footer");
		return NULL;
	}
	char *d = p->m->names + p->names_len;
	memcpy(d, s, len);
	d[len] = 0;
	p->names_len += len + 1;
	return d;
}

/* LogicalType: a union; LIST is its field 3. */
static void logical_type(meta_parse *p, pq_schema_el *e)
{
	int16_t saved = rf_thrift_struct_begin(&p->t), id;
	uint8_t ty;
	while (rf_thrift_field(&p->t, &id, &ty)) {
		if (id == 3 && ty == RF_TH_STRUCT)
			e->logical_list = true;
		rf_thrift_skip(&p->t, ty);
	}
	rf_thrift_struct_end(&p->t, saved);
}

static void schema_el(meta_parse *p, pq_schema_el *e)
{
	rf_thrift *t = &p->t;
	*e = (pq_schema_el){.type = -1, .repetition = -1, .converted = -1};
	int16_t saved = rf_thrift_struct_begin(t), id;
	uint8_t ty;
	uint32_t len;
	while (rf_thrift_field(t, &id, &ty)) {
		switch (id) {
		case 1:
			e->type = (int32_t)rf_thrift_int(t, ty);
			break;
		case 2:
			e->type_length = (int32_t)rf_thrift_int(t, ty);
			break;
		case 3:
			e->repetition = (int32_t)rf_thrift_int(t, ty);
			break;
		case 4: {
			const uint8_t *s = rf_thrift_binary(t, ty, &len);
			if (s)
				e->name = name_copy(p, s, len);
			break;
		}
		case 5:
			e->num_children = (int32_t)rf_thrift_int(t, ty);
			break;
		case 6:
			e->converted = (int32_t)rf_thrift_int(t, ty);
			break;
		case 10:
			if (ty == RF_TH_STRUCT)
				logical_type(p, e);
			else
				rf_thrift_fail(t, "a logicalType that is not a struct");
			break;
		default:
			rf_thrift_skip(t, ty);
		}
	}
	rf_thrift_struct_end(t, saved);
	if (!t->why && (!e->name || e->num_children < 0 || e->type < -1 || e->type > PQ_FLBA))
		rf_thrift_fail(t, "a schema element without a name, or with a bad type or "
		                  "child count");
}

/* SizeStatistics: unencoded_byte_array_data_bytes is its field 1. */
static void size_stats(meta_parse *p, pq_chunk_meta *c)
{
	int16_t saved = rf_thrift_struct_begin(&p->t), id;
	uint8_t ty;
	while (rf_thrift_field(&p->t, &id, &ty)) {
		if (id == 1)
			c->unencoded_bytes = rf_thrift_int(&p->t, ty);
		else
			rf_thrift_skip(&p->t, ty);
	}
	rf_thrift_struct_end(&p->t, saved);
}

static void column_meta(meta_parse *p, pq_chunk_meta *c)
{
	rf_thrift *t = &p->t;
	int16_t saved = rf_thrift_struct_begin(t), id;
	uint8_t ty, elem;
	uint32_t n, seen = 0;
	while (rf_thrift_field(t, &id, &ty)) {
		switch (id) {
		case 1:
			c->type = (int32_t)rf_thrift_int(t, ty), seen |= 1;
			break;
		case 2:
			if (rf_thrift_list(t, ty, &elem, &n))
				for (uint32_t i = 0; i < n && !t->why; i++) {
					int64_t e = rf_thrift_elem_int(t, elem);
					if (e >= 0 && e < 32)
						c->encodings |= 1u << e;
				}
			seen |= 2;
			break;
		case 4:
			c->codec = (int32_t)rf_thrift_int(t, ty), seen |= 4;
			break;
		case 5:
			c->num_values = rf_thrift_int(t, ty), seen |= 8;
			break;
		case 6:
			c->total_uncompressed = rf_thrift_int(t, ty), seen |= 16;
			break;
		case 7:
			c->total_compressed = rf_thrift_int(t, ty), seen |= 32;
			break;
		case 9:
			c->data_page_offset = rf_thrift_int(t, ty), seen |= 64;
			break;
		case 11:
			c->dictionary_page_offset = rf_thrift_int(t, ty);
			break;
		case 16:
			if (ty == RF_TH_STRUCT)
				size_stats(p, c);
			else
				rf_thrift_skip(t, ty);
			break;
		default:
			rf_thrift_skip(t, ty);
		}
	}
	rf_thrift_struct_end(t, saved);
	if (!t->why && (seen != 127 || c->num_values < 0 || c->total_uncompressed < 0 ||
	                c->total_compressed < 0 || c->data_page_offset < 0))
		rf_thrift_fail(t, "a column chunk's metadata lacks a required field or has a "
		                  "negative size");
}

static void column_chunk(meta_parse *p, pq_chunk_meta *c)
{
	rf_thrift *t = &p->t;
	*c = (pq_chunk_meta){.type = -1, .dictionary_page_offset = -1, .unencoded_bytes = -1};
	bool has_meta = false;
	int16_t saved = rf_thrift_struct_begin(t), id;
	uint8_t ty;
	while (rf_thrift_field(t, &id, &ty)) {
		if (id == 1) {
			c->has_file_path = true;
			rf_thrift_skip(t, ty);
		} else if (id == 3 && ty == RF_TH_STRUCT) {
			column_meta(p, c);
			has_meta = true;
		} else {
			rf_thrift_skip(t, ty);
		}
	}
	rf_thrift_struct_end(t, saved);
	if (!t->why && !has_meta)
		rf_thrift_fail(t, "a column chunk without its metadata");
}

static void row_group(meta_parse *p, pq_row_group *g)
{
	rf_thrift *t = &p->t;
	pq_file_meta *m = p->m;
	int16_t saved = rf_thrift_struct_begin(t), id;
	uint8_t ty, elem;
	uint32_t n;
	bool cols = false, rows = false;
	g->first_chunk = m->chunks_n;
	while (rf_thrift_field(t, &id, &ty)) {
		if (id == 1 && !cols && rf_thrift_list(t, ty, &elem, &n)) {
			cols = true;
			if (elem != RF_TH_STRUCT || n > RF_PQ_COLUMNS_MAX) {
				rf_thrift_fail(t,
				               "a row group's columns: not a list of at most 4096 "
				               "structs");
				break;
			}
			if ((uint64_t)m->chunks_n + n > p->chunks_cap) { /* grow by doubling */
				uint64_t cap = RF_MAX(2 * p->chunks_cap, (uint64_t)m->chunks_n + n);
				pq_chunk_meta *c = take(p, cap, sizeof(*c));
				if (!c)
					break;
				if (m->chunks_n)
					memcpy(c, m->chunk, m->chunks_n * sizeof(*c));
				free(m->chunk);
				m->held_bytes -= p->chunks_cap * sizeof(*c);
				m->chunk = c;
				p->chunks_cap = cap;
			}
			for (uint32_t i = 0; i < n && !t->why; i++)
				column_chunk(p, &m->chunk[m->chunks_n++]);
			g->chunks = n;
		} else if (id == 3) {
			g->num_rows = rf_thrift_int(t, ty);
			rows = true;
		} else {
			rf_thrift_skip(t, ty);
		}
	}
	rf_thrift_struct_end(t, saved);
	if (!t->why && (!cols || !rows || g->num_rows < 0))
		rf_thrift_fail(t, "a row group without its columns or row count");
}

static void file_meta(meta_parse *p)
{
	rf_thrift *t = &p->t;
	pq_file_meta *m = p->m;
	int16_t saved = rf_thrift_struct_begin(t), id;
	uint8_t ty, elem;
	uint32_t n;
	bool schema = false, groups = false, rows = false;
	while (rf_thrift_field(t, &id, &ty)) {
		if (id == 2 && !schema && rf_thrift_list(t, ty, &elem, &n)) {
			schema = true;
			if (elem != RF_TH_STRUCT || n == 0 || n > 4 * RF_PQ_COLUMNS_MAX) {
				rf_thrift_fail(t, "the schema: not a list of 1 to 16384 structs");
				break;
			}
			if (!(m->schema = take(p, n, sizeof(*m->schema))))
				break;
			for (uint32_t i = 0; i < n && !t->why; i++)
				schema_el(p, &m->schema[m->schema_n++]);
		} else if (id == 4 && !groups && rf_thrift_list(t, ty, &elem, &n)) {
			groups = true;
			if (elem != RF_TH_STRUCT || n > RF_PQ_GROUPS_MAX) {
				rf_thrift_fail(t, "row groups: not a list of at most 2^20 structs");
				break;
			}
			if (!(m->group = take(p, n, sizeof(*m->group))))
				break;
			for (uint32_t i = 0; i < n && !t->why; i++)
				row_group(p, &m->group[m->groups_n++]);
		} else if (id == 3) {
			m->num_rows = rf_thrift_int(t, ty);
			rows = true;
		} else {
			rf_thrift_skip(t, ty);
		}
	}
	rf_thrift_struct_end(t, saved);
	if (!t->why && (!schema || !groups || !rows || m->num_rows < 0))
		rf_thrift_fail(t, "FileMetaData without its schema, row groups or row count");
}

void rf_pq_meta_free(pq_file_meta *m)
{
	free(m->schema);
	free(m->group);
	free(m->chunk);
	free(m->names);
	memset(m, 0, sizeof(*m));
}

int rf_pq_meta_parse(const uint8_t *buf, size_t len, pq_file_meta *m, const char *name, uint64_t at,
                     rf_error *err)
{
	memset(m, 0, sizeof(*m));
	meta_parse p = {.m = m, .bound = rf_pq_meta_bound(len), .names_cap = len + 1};
	rf_thrift_init(&p.t, buf, len);
	if (!(m->names = take(&p, p.names_cap, 1)))
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the footer", name);
	file_meta(&p);
	if (p.t.why) {
		int code = p.why ? -ENOMEM : RF_E_CORRUPT;
		rf_fail(err, code, "shard %s: footer (FileMetaData) at byte %llu: %s", name,
		        (unsigned long long)(at + p.t.at), p.t.why);
		rf_pq_meta_free(m);
		return code;
	}
	return 0;
}

/* ------------------------------------------------------------ page headers */

/* DataPageHeader, or DictionaryPageHeader (its field 3 is is_sorted). */
static void data_header(rf_thrift *t, pq_page_header *h, bool dict)
{
	int16_t saved = rf_thrift_struct_begin(t), id;
	uint8_t ty;
	uint32_t seen = 0;
	while (rf_thrift_field(t, &id, &ty)) {
		switch (id) {
		case 1:
			h->num_values = (int32_t)rf_thrift_int(t, ty), seen |= 1;
			break;
		case 2:
			h->encoding = (int32_t)rf_thrift_int(t, ty), seen |= 2;
			break;
		case 3:
			if (dict)
				rf_thrift_skip(t, ty); /* is_sorted */
			else
				h->def_encoding = (int32_t)rf_thrift_int(t, ty);
			break;
		case 4:
			if (dict)
				rf_thrift_skip(t, ty);
			else
				h->rep_encoding = (int32_t)rf_thrift_int(t, ty);
			break;
		default:
			rf_thrift_skip(t, ty);
		}
	}
	rf_thrift_struct_end(t, saved);
	if (!t->why && seen != 3)
		rf_thrift_fail(t, "a data or dictionary page header without its value count or "
		                  "encoding");
}

static void v2_header(rf_thrift *t, pq_page_header *h)
{
	int16_t saved = rf_thrift_struct_begin(t), id;
	uint8_t ty;
	uint32_t seen = 0;
	h->v2_compressed = true;
	while (rf_thrift_field(t, &id, &ty)) {
		switch (id) {
		case 1:
			h->num_values = (int32_t)rf_thrift_int(t, ty), seen |= 1;
			break;
		case 2:
			h->num_nulls = (int32_t)rf_thrift_int(t, ty), seen |= 2;
			break;
		case 3:
			h->num_rows = (int32_t)rf_thrift_int(t, ty), seen |= 4;
			break;
		case 4:
			h->encoding = (int32_t)rf_thrift_int(t, ty), seen |= 8;
			break;
		case 5:
			h->def_bytes = (int32_t)rf_thrift_int(t, ty), seen |= 16;
			break;
		case 6:
			h->rep_bytes = (int32_t)rf_thrift_int(t, ty), seen |= 32;
			break;
		case 7:
			h->v2_compressed = rf_thrift_bool(t, ty);
			break;
		default:
			rf_thrift_skip(t, ty);
		}
	}
	rf_thrift_struct_end(t, saved);
	if (!t->why && seen != 63)
		rf_thrift_fail(t, "a data page v2 header lacks a required field");
}

int rf_pq_page_header(const uint8_t *buf, size_t len, pq_page_header *h, uint32_t *hdr_len,
                      const char **why)
{
	rf_thrift t;
	rf_thrift_init(&t, buf, len);
	*h = (pq_page_header){.type = -1, .uncompressed = -1, .compressed = -1};
	int16_t saved = rf_thrift_struct_begin(&t), id;
	uint8_t ty;
	while (rf_thrift_field(&t, &id, &ty)) {
		switch (id) {
		case 1:
			h->type = (int32_t)rf_thrift_int(&t, ty);
			break;
		case 2:
			h->uncompressed = (int32_t)rf_thrift_int(&t, ty);
			break;
		case 3:
			h->compressed = (int32_t)rf_thrift_int(&t, ty);
			break;
		case 4:
			h->crc = (uint32_t)rf_thrift_int(&t, ty);
			h->has_crc = true;
			break;
		case 5:
		case 7:
			if (ty != RF_TH_STRUCT) {
				rf_thrift_fail(&t, "a page header part that is not a struct");
				break;
			}
			data_header(&t, h, id == 7);
			*(id == 5 ? &h->has_data : &h->has_dict) = true;
			break;
		case 8:
			if (ty != RF_TH_STRUCT) {
				rf_thrift_fail(&t, "a page header part that is not a struct");
				break;
			}
			v2_header(&t, h);
			h->has_v2 = true;
			break;
		default:
			rf_thrift_skip(&t, ty);
		}
	}
	rf_thrift_struct_end(&t, saved);
	if (!t.why && (h->type < 0 || h->uncompressed < 0 || h->compressed < 0))
		rf_thrift_fail(&t, "a page header without its type or sizes, or a negative size");
	if (!t.why && h->num_values < 0)
		rf_thrift_fail(&t, "a page of a negative value count");
	if (t.why) {
		*why = t.why;
		*hdr_len = (uint32_t)t.at;
		return RF_E_CORRUPT;
	}
	*hdr_len = (uint32_t)(t.p - t.start);
	return 0;
}
