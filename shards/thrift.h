/* thrift.h - a reader of Thrift's compact protocol (doc/specs/
 * thrift-compact-protocol.md in apache/thrift), for Parquet's footer and
 * page headers (shards/parquet*.c). Internal.
 *
 * A cursor over untrusted bytes: every read checks what is left first; the
 * first error sticks (`why`, at byte `at`) and every later read fails, so a
 * parser tests the cursor once after a struct. Known structs are parsed by
 * their callers (a fixed nesting the caller's code decides); what a caller
 * does not know is skipped by rf_thrift_skip with an explicit stack of at
 * most RF_THRIFT_DEPTH_MAX levels, never recursion the input controls. */
#ifndef RF_THRIFT_H
#define RF_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RF_THRIFT_DEPTH_MAX 64

/* compact protocol field / element types */
enum {
	RF_TH_STOP = 0,
	RF_TH_TRUE = 1,
	RF_TH_FALSE = 2,
	RF_TH_BYTE = 3,
	RF_TH_I16 = 4,
	RF_TH_I32 = 5,
	RF_TH_I64 = 6,
	RF_TH_DOUBLE = 7,
	RF_TH_BINARY = 8,
	RF_TH_LIST = 9,
	RF_TH_SET = 10,
	RF_TH_MAP = 11,
	RF_TH_STRUCT = 12,
};

typedef struct rf_thrift {
	const uint8_t *start, *p, *end;
	int16_t last_id; /* the previous field id of the struct being read */
	const char *why; /* the first error (static text), NULL when none */
	uint64_t at;     /* its byte, from start */
} rf_thrift;

void rf_thrift_init(rf_thrift *t, const void *buf, size_t len);
/* Fails the cursor (the first failure stays). Returns false. */
bool rf_thrift_fail(rf_thrift *t, const char *why);

/* A struct's fields: begin returns the enclosing struct's last id (give it
 * back to end); field gives the next field's id and type, false at STOP or
 * on an error. A bool field's value is its type (RF_TH_TRUE / FALSE). */
int16_t rf_thrift_struct_begin(rf_thrift *t);
void rf_thrift_struct_end(rf_thrift *t, int16_t saved);
bool rf_thrift_field(rf_thrift *t, int16_t *id, uint8_t *type);

/* Values of the field just read (type checked against the field's). */
int64_t rf_thrift_int(rf_thrift *t, uint8_t type); /* BYTE, I16, I32, I64 */
bool rf_thrift_bool(rf_thrift *t, uint8_t type);
/* A binary's bytes (inside the buffer; not NUL-terminated). */
const uint8_t *rf_thrift_binary(rf_thrift *t, uint8_t type, uint32_t *len);
/* A list's header: its element type and count (checked: each element takes
 * at least one byte, so count <= bytes left). */
bool rf_thrift_list(rf_thrift *t, uint8_t type, uint8_t *elem, uint32_t *count);
/* A list element of an integer type. */
int64_t rf_thrift_elem_int(rf_thrift *t, uint8_t elem);

/* Skips one value of `type` (nested ones through an explicit stack). */
bool rf_thrift_skip(rf_thrift *t, uint8_t type);

#endif
