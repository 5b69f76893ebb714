/* protobuf.c - the bounded protobuf wire-format reader and tf.train.Example
 * walk of protobuf.h: every length checked against the bytes left in its
 * message before use, the fixed nesting walked by loops (one cursor per
 * level), nothing allocated. */
#include "protobuf.h"

#include "util.h"

#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

int rf_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	const uint8_t *q = *p;
	for (unsigned i = 0; i < 10; i++) {
		if (q >= end)
			return -1;
		uint8_t b = *q++;
		if (i == 9 && b > 1)
			return -1; /* past 64 bits */
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*p = q;
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* A cursor over one message's bytes; base is the buffer's start (for
 * error offsets). */
typedef struct pb_cur {
	const uint8_t *p, *end, *base;
} pb_cur;

static int fail(rf_pb_error *e, const pb_cur *c, const uint8_t *at, const char *what)
{
	e->at = (uint64_t)(at - c->base);
	e->what = what;
	return -1;
}

/* The next field's number and wire type; for WT_LEN also its bytes. */
typedef struct pb_field {
	uint64_t number;
	unsigned type;
	const uint8_t *at;   /* its tag */
	const uint8_t *data; /* WT_LEN: the bytes */
	uint64_t len, value; /* WT_LEN: their length; WT_VARINT / I32 / I64: the value */
} pb_field;

static int next_field(pb_cur *c, pb_field *f, rf_pb_error *e)
{
	uint64_t tag;
	f->at = c->p;
	if (rf_pb_varint(&c->p, c->end, &tag) < 0)
		return fail(e, c, f->at, "a truncated or overlong field tag");
	f->number = tag >> 3;
	f->type = (unsigned)(tag & 7);
	if (f->number == 0 || f->number > 536870911u)
		return fail(e, c, f->at, "field number 0 or past 2^29");
	switch (f->type) {
	case WT_VARINT:
		if (rf_pb_varint(&c->p, c->end, &f->value) < 0)
			return fail(e, c, f->at, "a truncated or overlong varint");
		return 0;
	case WT_I64:
		if (c->end - c->p < 8)
			return fail(e, c, f->at, "a 64-bit value past its message");
		f->value = rf_load_le64(c->p);
		c->p += 8;
		return 0;
	case WT_I32:
		if (c->end - c->p < 4)
			return fail(e, c, f->at, "a 32-bit value past its message");
		f->value = rf_load_le32(c->p);
		c->p += 4;
		return 0;
	case WT_LEN:
		if (rf_pb_varint(&c->p, c->end, &f->len) < 0)
			return fail(e, c, f->at, "a truncated or overlong length");
		if (f->len > (uint64_t)(c->end - c->p))
			return fail(e, c, f->at, "a length past its message");
		f->data = c->p;
		c->p += f->len;
		return 0;
	default:
		return fail(e, c, f->at, "a group or unknown wire type (not a tf.train.Example)");
	}
}

/* A list message's values: counted and checked (every field 1 of the
 * kind's wire types; anything else is an error), out_bytes set. */
static int list_count(const pb_cur *outer, rf_ex_feature *x, rf_pb_error *e)
{
	pb_cur c = {.p = x->list, .end = x->list + x->list_len, .base = outer->base};
	uint64_t n = 0, bytes = 0;
	pb_field f;
	while (c.p < c.end) {
		if (next_field(&c, &f, e) < 0)
			return -1;
		if (f.number != 1)
			return fail(e, &c, f.at, "a list field other than value (1)");
		if (x->kind == RF_EX_BYTES) {
			if (f.type != WT_LEN)
				return fail(e, &c, f.at, "a bytes_list value that is not bytes");
			n++, bytes += f.len;
		} else if (x->kind == RF_EX_FLOAT) {
			if (f.type == WT_I32)
				n++;
			else if (f.type == WT_LEN && f.len % 4 == 0)
				n += f.len / 4;
			else
				return fail(
				    e, &c, f.at,
				    "a float_list value that is neither float nor packed floats");
		} else {
			if (f.type == WT_VARINT) {
				n++;
			} else if (f.type == WT_LEN) {
				pb_cur v = {.p = f.data, .end = f.data + f.len, .base = c.base};
				uint64_t val;
				while (v.p < v.end) {
					const uint8_t *at = v.p;
					if (rf_pb_varint(&v.p, v.end, &val) < 0)
						return fail(e, &v, at,
						            "a truncated or overlong packed int64");
					n++;
				}
			} else {
				return fail(
				    e, &c, f.at,
				    "an int64_list value that is neither varint nor packed");
			}
		}
	}
	if (n > UINT32_MAX / 16)
		return fail(e, &c, x->list, "a list of more than 2^28 values");
	x->values = (uint32_t)n;
	if (x->kind == RF_EX_BYTES)
		x->out_bytes = n == 1 ? bytes : 4 + 4 * n + bytes;
	else
		x->out_bytes = (x->kind == RF_EX_FLOAT ? 4 : 8) * n;
	return 0;
}

/* A Feature message: its one kind and list. */
static int feature_parse(const pb_cur *outer, const uint8_t *p, uint64_t len, rf_ex_feature *x,
                         rf_pb_error *e)
{
	pb_cur c = {.p = p, .end = p + len, .base = outer->base};
	pb_field f;
	x->kind = RF_EX_NONE;
	x->list = p;
	x->list_len = 0;
	while (c.p < c.end) {
		if (next_field(&c, &f, e) < 0)
			return -1;
		if (f.number < 1 || f.number > 3 || f.type != WT_LEN)
			return fail(e, &c, f.at,
			            "a Feature field other than bytes_list, float_list "
			            "or int64_list");
		if (x->kind != RF_EX_NONE)
			return fail(e, &c, f.at, "a Feature with two lists");
		x->kind = (int)f.number;
		x->list = f.data;
		x->list_len = (uint32_t)f.len;
	}
	x->values = 0;
	x->out_bytes = 0;
	return x->kind == RF_EX_NONE ? 0 : list_count(&c, x, e);
}

/* One map entry (key = 1, value = 2) into *x. */
static int entry_parse(const pb_cur *outer, const pb_field *ent, rf_ex_feature *x, rf_pb_error *e)
{
	pb_cur c = {.p = ent->data, .end = ent->data + ent->len, .base = outer->base};
	pb_field f;
	const uint8_t *val = NULL;
	uint64_t val_len = 0;
	x->key = NULL;
	x->key_len = 0;
	while (c.p < c.end) {
		if (next_field(&c, &f, e) < 0)
			return -1;
		if ((f.number != 1 && f.number != 2) || f.type != WT_LEN)
			return fail(e, &c, f.at,
			            "a feature map entry field other than key or value");
		if (f.number == 1) {
			if (f.len == 0 || f.len > RF_EX_KEY_MAX || memchr(f.data, 0, f.len))
				return fail(e, &c, f.at,
				            "a feature key that is empty, longer than 255 bytes or "
				            "holds a NUL");
			x->key = f.data;
			x->key_len = (uint32_t)f.len;
		} else {
			val = f.data;
			val_len = f.len;
		}
	}
	if (!x->key)
		return fail(e, &c, ent->at, "a feature map entry without a key");
	return feature_parse(&c, val ? val : ent->data, val ? val_len : 0, x, e);
}

int rf_example_walk(const uint8_t *buf, size_t len, int (*fn)(void *ctx, const rf_ex_feature *f),
                    void *ctx, uint32_t *features, rf_pb_error *e)
{
	pb_cur ex = {.p = buf, .end = buf + len, .base = buf};
	pb_field f, g;
	uint32_t n = 0;
	while (ex.p < ex.end) { /* Example: features = 1 (repeated occurrences merge) */
		if (next_field(&ex, &f, e) < 0)
			return -1;
		if (f.number != 1 || f.type != WT_LEN)
			return fail(e, &ex, f.at, "an Example field other than features (1)");
		pb_cur fs = {.p = f.data, .end = f.data + f.len, .base = buf};
		while (fs.p < fs.end) { /* Features: feature = 1, map entries */
			if (next_field(&fs, &g, e) < 0)
				return -1;
			if (g.number != 1 || g.type != WT_LEN)
				return fail(e, &fs, g.at,
				            "a Features field other than feature (1)");
			rf_ex_feature x;
			if (entry_parse(&fs, &g, &x, e) < 0)
				return -1;
			n++;
			int rc = fn ? fn(ctx, &x) : 0;
			if (rc)
				return rc;
		}
	}
	if (features)
		*features = n;
	return 0;
}

void rf_example_encode(const rf_ex_feature *x, uint8_t *out)
{
	if (x->kind == RF_EX_NONE)
		return;
	const uint8_t *p = x->list, *end = x->list + x->list_len;
	uint8_t *data = out;
	uint32_t i = 0;
	if (x->kind == RF_EX_BYTES && x->values != 1) {
		rf_store_le32(out, x->values);
		data = out + 4 + 4 * (uint64_t)x->values;
	}
	while (p < end) { /* checked by rf_example_walk: no error here */
		uint64_t tag = 0, v = 0;
		rf_pb_varint(&p, end, &tag);
		unsigned type = (unsigned)(tag & 7);
		if (type == WT_VARINT) {
			rf_pb_varint(&p, end, &v);
			rf_store_le64(out + 8 * (uint64_t)i++, v);
			continue;
		}
		if (type == WT_I32) {
			memcpy(out + 4 * (uint64_t)i++, p, 4);
			p += 4;
			continue;
		}
		rf_pb_varint(&p, end, &v); /* WT_LEN */
		const uint8_t *d = p, *d_end = p + v;
		p = d_end;
		if (x->kind == RF_EX_BYTES) {
			if (x->values != 1)
				rf_store_le32(out + 4 + 4 * (uint64_t)i, (uint32_t)v);
			memcpy(data, d, v);
			data += v;
			i++;
		} else if (x->kind == RF_EX_FLOAT) {
			memcpy(out + 4 * (uint64_t)i, d, v);
			i += (uint32_t)(v / 4);
		} else {
			uint64_t val;
			while (d < d_end && rf_pb_varint(&d, d_end, &val) == 0)
				rf_store_le64(out + 8 * (uint64_t)i++, val);
		}
	}
}
