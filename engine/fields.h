/* fields.h - multi-field samples in the engine (fields.c): the dataset's
 * field names, interned at open from every shard's format; the check of a
 * decoded unit's fields; a batch's field sections (size bound and fill).
 * A sample is one record of the engine: plan, shuffle, ranks, resume, skips
 * and the budget see records; only collation sees their fields. */
#ifndef RF_FIELDS_H
#define RF_FIELDS_H

#include "format.h"
#include "ringfeed.h"

#define RF_FIELDS_MAX     1024 /* field names in a dataset */
#define RF_FIELDS_KEY_MAX 80   /* a key's bytes beyond its record's (MDS: SHARD/N) */

/* A decoded unit's fields and keys (rf_unit_records' multi-field part). */
typedef struct rf_unit_fields {
	const rf_rec_field *fields;
	const uint32_t *field_first, *key_first;
	const char *keys;
} rf_unit_fields;

typedef struct rf_fields {
	uint32_t n;     /* the dataset's field names (0: single-field records) */
	char **names;   /* n, in the order the shards' layouts met them */
	uint32_t **map; /* per shard: its field id -> the dataset's */
	uint32_t *nmap; /* per shard: its field count */
	uint64_t bytes; /* what the above take (RF_MEM_METADATA) */
} rf_fields;

struct rf_engine;
struct rf_ebatch;
struct rf_unit_slot;
struct rf_rec_ref;

/* Interns every opened shard's field names (open, before the budget
 * check): a dataset is all single-field or all multi-field. */
int rf_fields_open(struct rf_engine *e, rf_error *err);
void rf_fields_free(rf_fields *f);
/* Batch bytes beyond rf_collate_bytes(n, spans) a multi-field batch of n
 * records may take (0 for single-field datasets). */
uint64_t rf_fields_extra_bytes(const rf_fields *f, uint64_t n);
/* Checks a decoded unit's fields against its records (a format's answer is
 * checked, not trusted): each inside its record, names the shard has, no
 * name twice, the fields' and key's bytes within the record's plus
 * RF_FIELDS_KEY_MAX. */
int rf_fields_check(const rf_fields *f, uint32_t shard, const rf_unit_records *r, const char *name,
                    uint32_t block, rf_error *err);
/* The fields of record r of a decoded slot, into ref. */
void rf_fields_ref(const struct rf_unit_slot *u, uint32_t r, struct rf_rec_ref *ref);
/* Lays out and fills a multi-field batch from its refs (any worker). */
void rf_fields_fill(const rf_fields *f, struct rf_ebatch *b);

#endif
