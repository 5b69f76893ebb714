/* fields.c - multi-field samples in the engine (fields.h): the dataset's
 * field names, the check of a decoded unit's fields, and the batch layout
 * of field sections:
 *
 *   rf_batch_field[F], i64 key_offsets[n + 1], the single-field view's
 *   i64 offsets[n + 1] and u32 lengths[n] (zeros), u32 shards[n], per field i64
 *   offsets[n + 1] and u8 present[n], the keys, then each field's payload
 *   (its section), every part 64-byte aligned. */
#include "engine.h"
#include "util.h"

#include <stdlib.h>

#define ALIGN 64u

static uint64_t al(uint64_t v)
{
	return (v + ALIGN - 1) / ALIGN * ALIGN;
}

RF_API const rf_batch_field *rf_batch_field_get(const rf_batch *b, const char *name)
{
	if (!b || !name)
		return NULL;
	for (uint32_t f = 0; f < b->fields; f++)
		if (strcmp(b->field[f].name, name) == 0)
			return &b->field[f];
	return NULL;
}

/* ------------------------------------------------------------ at open */

void rf_fields_free(rf_fields *f)
{
	for (uint32_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
	free(f->nmap);
	if (f->map) {
		free(f->map[0]); /* one allocation for every shard's map */
		free(f->map);
	}
	memset(f, 0, sizeof(*f));
}

static int intern(rf_fields *f, const char *name, uint32_t *id, rf_error *err)
{
	for (uint32_t i = 0; i < f->n; i++)
		if (strcmp(f->names[i], name) == 0)
			return *id = i, 0;
	if (f->n >= RF_FIELDS_MAX)
		return rf_fail(err, -E2BIG, "the dataset has more than %u field names",
		               RF_FIELDS_MAX);
	if (!(f->names[f->n] = strdup(name)))
		return rf_fail(err, -ENOMEM, "out of memory for field names");
	f->bytes += strlen(name) + 1;
	*id = f->n++;
	return 0;
}

/* Every shard's names: the first shard says whether the dataset's records
 * have fields; a shard of the other kind is an error naming both. */
static int check_kinds(const rf_engine *e, uint64_t *names, rf_error *err)
{
	const rf_shard *first = &e->shards[0];
	bool multi = first->fmt->field_names != NULL;
	*names = 0;
	for (uint32_t i = 0; i < e->nshards; i++) {
		const rf_shard *s = &e->shards[i];
		if ((s->fmt->field_names != NULL) != multi)
			return rf_fail(err, -EINVAL,
			               "shard %s (%s) %s fields but shard %s (%s) %s: a dataset's "
			               "records are all samples with fields or all single records",
			               first->name, first->fmt->name, multi ? "has" : "has no",
			               s->name, s->fmt->name, multi ? "has none" : "has");
		if (multi) {
			const char *const *nm;
			*names += s->fmt->field_names(s->fmt_priv, &nm);
		}
	}
	if (multi && e->cp.pad_to)
		return rf_fail(err, -EINVAL,
		               "pad_to makes rows of single records; shard %s holds samples with "
		               "fields (read them ragged)",
		               first->name);
	return multi ? 1 : 0;
}

int rf_fields_open(rf_engine *e, rf_error *err)
{
	rf_fields *f = &e->fields;
	uint64_t names = 0;
	if (e->nshards == 0)
		return 0;
	int multi = check_kinds(e, &names, err);
	if (multi <= 0)
		return multi;
	uint64_t bytes = e->nshards * (sizeof(uint32_t *) + 4) + 4 * names +
	                 RF_FIELDS_MAX * (sizeof(char *) + 256);
	if (rf_budget_reserve(&e->budget, RF_MEM_METADATA, bytes, 0) != 0)
		return rf_fail(err, RF_E_BUDGET,
		               "budget too small for the field names (%llu bytes)",
		               (unsigned long long)bytes);
	rf_open_meta_add(e->open, bytes);
	f->bytes =
	    bytes - RF_FIELDS_MAX * 256; /* the names array stays; their text is added as met */
	f->names = calloc(RF_FIELDS_MAX, sizeof(char *));
	f->map = calloc(e->nshards, sizeof(uint32_t *));
	f->nmap = calloc(e->nshards, sizeof(uint32_t));
	uint32_t *all = malloc(4 * (names ? names : 1));
	if (!f->names || !f->map || !f->nmap || !all) {
		free(all);
		return rf_fail(err, -ENOMEM, "out of memory for field names");
	}
	f->map[0] = all;
	for (uint32_t i = 0; i < e->nshards; i++) {
		const rf_shard *s = &e->shards[i];
		const char *const *nm;
		uint32_t k = s->fmt->field_names(s->fmt_priv, &nm);
		f->map[i] = all;
		f->nmap[i] = k;
		for (uint32_t j = 0; j < k; j++)
			RF_TRY(intern(f, nm[j], &all[j], err));
		all += k;
	}
	return 0;
}

uint64_t rf_fields_extra_bytes(const rf_fields *f, uint64_t n)
{
	if (!f->n)
		return 0;
	return f->n * (uint64_t)sizeof(rf_batch_field) + 8 * (n + 1) + 4 * n +
	       f->n * (8 * (n + 1) + n + 3 * ALIGN) + RF_FIELDS_KEY_MAX * n + 9 * ALIGN;
}

/* ------------------------------------------------------------ decoded units */

static int check_record(const rf_unit_records *r, uint32_t i, uint32_t names, uint64_t *seen,
                        const char *name, uint32_t block, rf_error *err)
{
	uint32_t start = rf_record_end(r->ends, (int64_t)i - 1), end = rf_record_end(r->ends, i);
	uint32_t a = r->field_first[i], b = r->field_first[i + 1];
	uint32_t ka = r->key_first[i], kb = r->key_first[i + 1];
	const char *why = NULL;
	uint64_t bytes = 0;
	uint32_t f = a;
	if (b < a || b - a > names || kb < ka)
		why = "field or key table out of order";
	for (; !why && f < b; f++) {
		const rf_rec_field *fl = &r->fields[f];
		if (fl->name >= names)
			why = "a field name the shard does not have";
		else if (fl->offset < start || fl->offset > end || fl->len > end - fl->offset)
			why = "a field outside its record";
		else if (seen[fl->name / 64] >> (fl->name % 64) & 1)
			why = "a field twice";
		else
			seen[fl->name / 64] |= 1ull << (fl->name % 64), bytes += fl->len;
	}
	for (uint32_t g = a; g < f; g++) /* clear what this record marked */
		seen[r->fields[g].name / 64] = 0;
	if (!why && bytes + (kb - ka) > (uint64_t)(end - start) + RF_FIELDS_KEY_MAX)
		why = "fields and key larger than the record";
	if (why)
		return rf_fail(err, RF_E_CORRUPT, "shard %s: block %u: record %u: %s", name, block,
		               i, why);
	return 0;
}

int rf_fields_check(const rf_fields *f, uint32_t shard, const rf_unit_records *r, const char *name,
                    uint32_t block, rf_error *err)
{
	if (!f->n)
		return 0;
	if (!r->fields || !r->field_first || !r->keys || !r->key_first)
		return rf_fail(err, RF_E_CORRUPT, "shard %s: block %u: decoded without its fields",
		               name, block);
	uint64_t seen[(RF_FIELDS_MAX + 63) / 64] = {0};
	uint32_t names = RF_MIN(f->nmap[shard], RF_FIELDS_MAX);
	for (uint32_t i = 0; i < r->records; i++)
		RF_TRY(check_record(r, i, names, seen, name, block, err));
	return 0;
}

void rf_fields_ref(const rf_unit_slot *u, uint32_t r, rf_rec_ref *ref)
{
	const rf_unit_fields *f = u->uf;
	ref->base = u->base;
	ref->fields = f->fields + f->field_first[r];
	ref->nfields = f->field_first[r + 1] - f->field_first[r];
	ref->key = f->keys + f->key_first[r];
	ref->key_len = f->key_first[r + 1] - f->key_first[r];
	ref->shard = u->shard;
}

/* ------------------------------------------------------------ batches */

typedef struct fill_layout {
	uint64_t at, cap;
	uint8_t *m;
	bool over;
} fill_layout;

static void *take(fill_layout *l, uint64_t bytes)
{
	uint64_t at = al(l->at);
	if (at > l->cap || bytes > l->cap - at) {
		l->over = true;
		return l->m;
	}
	l->at = at + bytes;
	return l->m + at;
}

void rf_fields_fill(const rf_fields *f, rf_ebatch *b)
{
	uint32_t n = b->n, F = f->n;
	uint64_t size[RF_FIELDS_MAX] = {0}, keys = 0;
	for (uint32_t i = 0; i < n; i++) {
		const rf_rec_ref *r = &b->refs[i];
		keys += r->key_len;
		for (uint32_t k = 0; k < r->nfields; k++)
			size[f->map[r->shard][r->fields[k].name]] += r->fields[k].len;
	}
	fill_layout l = {.cap = b->mem_bytes, .m = b->mem};
	rf_batch_field *bf = take(&l, F * sizeof(rf_batch_field));
	int64_t *ko = take(&l, 8ull * (n + 1));
	int64_t *lo = take(&l, 8ull * (n + 1));
	uint32_t *ll = take(&l, 4ull * n);
	uint32_t *sh = take(&l, 4ull * n);
	int64_t *fo[RF_FIELDS_MAX];
	uint8_t *fp[RF_FIELDS_MAX], *fd[RF_FIELDS_MAX];
	for (uint32_t d = 0; d < F; d++) {
		fo[d] = take(&l, 8ull * (n + 1));
		fp[d] = take(&l, n);
	}
	char *kp = take(&l, keys);
	uint64_t payload_at = al(l.at);
	for (uint32_t d = 0; d < F; d++)
		fd[d] = take(&l, size[d]);
	if (l.over) { /* the bound was broken: deliver nothing rather than overrun */
		b->pub = (rf_batch){.payload = b->mem, .offsets = (const int64_t *)b->mem};
		return;
	}
	memset(lo, 0, 8ull * (n + 1));
	memset(ll, 0, 4ull * n);
	uint64_t cur[RF_FIELDS_MAX] = {0}, kat = 0;
	for (uint32_t i = 0; i < n; i++) {
		const rf_rec_ref *r = &b->refs[i];
		ko[i] = (int64_t)kat;
		sh[i] = r->shard;
		memcpy(kp + kat, r->key, r->key_len);
		kat += r->key_len;
		for (uint32_t d = 0; d < F; d++) {
			fo[d][i] = (int64_t)cur[d];
			fp[d][i] = 0;
		}
		for (uint32_t k = 0; k < r->nfields; k++) {
			const rf_rec_field *fl = &r->fields[k];
			uint32_t d = f->map[r->shard][fl->name];
			memcpy(fd[d] + cur[d], r->base + fl->offset, fl->len);
			cur[d] += fl->len;
			fp[d][i] = 1;
		}
	}
	ko[n] = (int64_t)kat;
	for (uint32_t d = 0; d < F; d++) {
		fo[d][n] = (int64_t)cur[d];
		bf[d] = (rf_batch_field){.name = f->names[d],
		                         .payload = fd[d],
		                         .payload_bytes = cur[d],
		                         .offsets = fo[d],
		                         .present = fp[d]};
	}
	b->pub = (rf_batch){.records = n,
	                    .payload = (const uint8_t *)b->mem + payload_at,
	                    .payload_bytes = l.at - payload_at,
	                    .offsets = lo,
	                    .lengths = ll,
	                    .fields = F,
	                    .field = bf,
	                    .keys = kp,
	                    .key_offsets = ko,
	                    .shards = sh};
}
