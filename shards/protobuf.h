/* protobuf.h - a small bounded reader of the protobuf wire format, and
 * TensorFlow's tf.train.Example on it (protobuf.c). Internal; see
 * docs/format.md, "TFRecord".
 *
 * The reader knows one fixed nesting, walked by iteration (no recursion,
 * no depth that input controls):
 *
 *   Example { Features features = 1; }
 *   Features { map<string, Feature> feature = 1; }   (entries: key = 1, value = 2)
 *   Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
 *                          Int64List int64_list = 3; } }
 *   BytesList { repeated bytes value = 1; }
 *   FloatList { repeated float value = 1 [packed]; }   (packed or not)
 *   Int64List { repeated int64 value = 1 [packed]; }   (packed or not)
 *
 * It is strict where protobuf is lenient, so that bytes that are not an
 * Example are not taken for one: a field number or wire type the schema
 * does not have, a group, a varint longer than 10 bytes, a length past its
 * message, a Feature with two kinds (or one kind twice) are errors naming
 * the byte (relative to the record's data) and what was wrong. */
#ifndef RF_PROTOBUF_H
#define RF_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RF_EX_KEY_MAX 255 /* a feature key's bytes */

/* A varint at *p (before end): 0 and *p past it, or -1 (truncated, or
 * longer than 10 bytes, or a 10th byte above 1). */
int rf_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* Where a parse failed: the byte (from the buffer's start) and why. */
typedef struct rf_pb_error {
	uint64_t at;
	const char *what; /* static text */
} rf_pb_error;

enum { RF_EX_NONE = 0, RF_EX_BYTES = 1, RF_EX_FLOAT = 2, RF_EX_INT64 = 3 };

/* One feature of an Example, as the walk meets it. */
typedef struct rf_ex_feature {
	const uint8_t *key; /* not NUL-terminated; 1..RF_EX_KEY_MAX bytes, no NUL */
	uint32_t key_len;
	int kind;            /* RF_EX_*; NONE: a Feature with no kind (an empty field) */
	const uint8_t *list; /* the list message's bytes */
	uint32_t list_len;
	uint32_t values;    /* how many values the list holds */
	uint64_t out_bytes; /* bytes of its encoding (rf_example_encode) */
} rf_ex_feature;

/* Walks the Example in buf[0, len), calling fn for each feature in the
 * order the bytes hold them (fn's nonzero return stops the walk and is
 * returned). -1 with *e set when the bytes are not an Example. Allocates
 * nothing. *features (may be NULL) counts them. */
int rf_example_walk(const uint8_t *buf, size_t len, int (*fn)(void *ctx, const rf_ex_feature *f),
                    void *ctx, uint32_t *features, rf_pb_error *e);

/* Writes f's values in the documented encoding to out (f->out_bytes):
 *   bytes_list, one value: the value's bytes;
 *   bytes_list, n != 1 values: u32 n, u32 lengths[n], then the values;
 *   float_list: n little-endian float32;  int64_list: n little-endian int64;
 *   no kind: nothing.
 * f must come from rf_example_walk over bytes unchanged since. */
void rf_example_encode(const rf_ex_feature *f, uint8_t *out);

#endif
