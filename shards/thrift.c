/* thrift.c - Thrift compact protocol reader (see thrift.h): varints,
 * zigzag integers, field headers, lists, and the bounded skipper. */
#include "thrift.h"

#include <string.h>

void rf_thrift_init(rf_thrift *t, const void *buf, size_t len)
{
	*t = (rf_thrift){.start = buf, .p = buf, .end = (const uint8_t *)buf + len};
}

bool rf_thrift_fail(rf_thrift *t, const char *why)
{
	if (!t->why) {
		t->why = why;
		t->at = (uint64_t)(t->p - t->start);
	}
	t->p = t->end; /* every later read fails */
	return false;
}

static bool varint(rf_thrift *t, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (t->p >= t->end)
			return rf_thrift_fail(t, "a varint runs past the end");
		uint8_t b = *t->p++;
		if (shift == 63 && b > 1)
			return rf_thrift_fail(t, "a varint past 64 bits");
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return rf_thrift_fail(t, "a varint longer than 10 bytes");
}

static int64_t zigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int16_t rf_thrift_struct_begin(rf_thrift *t)
{
	int16_t saved = t->last_id;
	t->last_id = 0;
	return saved;
}

void rf_thrift_struct_end(rf_thrift *t, int16_t saved)
{
	t->last_id = saved;
}

bool rf_thrift_field(rf_thrift *t, int16_t *id, uint8_t *type)
{
	if (t->why)
		return false;
	if (t->p >= t->end)
		return rf_thrift_fail(t, "a struct runs past the end");
	uint8_t b = *t->p++;
	if (b == 0)
		return false;
	*type = b & 0x0f;
	if (*type > RF_TH_STRUCT)
		return rf_thrift_fail(t, "a field of an unknown type");
	int64_t v;
	if (b >> 4) {
		v = t->last_id + (b >> 4);
	} else {
		uint64_t u;
		if (!varint(t, &u))
			return false;
		v = zigzag(u);
	}
	if (v <= 0 || v > INT16_MAX)
		return rf_thrift_fail(t, "a field id outside 1..32767");
	*id = t->last_id = (int16_t)v;
	return true;
}

int64_t rf_thrift_int(rf_thrift *t, uint8_t type)
{
	if (type == RF_TH_BYTE) {
		if (t->p >= t->end)
			return rf_thrift_fail(t, "a byte past the end"), 0;
		return (int8_t)*t->p++;
	}
	if (type != RF_TH_I16 && type != RF_TH_I32 && type != RF_TH_I64)
		return rf_thrift_fail(t, "an integer field of another type"), 0;
	uint64_t u = 0;
	if (!varint(t, &u))
		return 0;
	int64_t v = zigzag(u);
	if ((type == RF_TH_I16 && (v < INT16_MIN || v > INT16_MAX)) ||
	    (type == RF_TH_I32 && (v < INT32_MIN || v > INT32_MAX)))
		return rf_thrift_fail(t, "an integer outside its type"), 0;
	return v;
}

bool rf_thrift_bool(rf_thrift *t, uint8_t type)
{
	if (type != RF_TH_TRUE && type != RF_TH_FALSE)
		return rf_thrift_fail(t, "a bool field of another type");
	return type == RF_TH_TRUE;
}

const uint8_t *rf_thrift_binary(rf_thrift *t, uint8_t type, uint32_t *len)
{
	uint64_t n = 0;
	*len = 0;
	if (type != RF_TH_BINARY)
		return rf_thrift_fail(t, "a string field of another type"), NULL;
	if (!varint(t, &n))
		return NULL;
	if (n > (uint64_t)(t->end - t->p))
		return rf_thrift_fail(t, "a string longer than the bytes left"), NULL;
	const uint8_t *s = t->p;
	t->p += n;
	*len = (uint32_t)n;
	return s;
}

bool rf_thrift_list(rf_thrift *t, uint8_t type, uint8_t *elem, uint32_t *count)
{
	*count = 0;
	if (type != RF_TH_LIST && type != RF_TH_SET)
		return rf_thrift_fail(t, "a list field of another type");
	if (t->p >= t->end)
		return rf_thrift_fail(t, "a list header past the end");
	uint8_t b = *t->p++;
	uint64_t n = b >> 4;
	*elem = b & 0x0f;
	if (n == 15 && !varint(t, &n))
		return false;
	if (*elem == RF_TH_STOP || *elem > RF_TH_STRUCT)
		return rf_thrift_fail(t, "a list of an unknown element type");
	if (n > (uint64_t)(t->end - t->p)) /* every element takes a byte at least */
		return rf_thrift_fail(t, "a list longer than the bytes left");
	*count = (uint32_t)n;
	return true;
}

int64_t rf_thrift_elem_int(rf_thrift *t, uint8_t elem)
{
	return rf_thrift_int(t, elem);
}

/* One scalar; `in_list`: a bool is a byte there, the type itself in a field. */
static bool skip_scalar(rf_thrift *t, uint8_t type, bool in_list)
{
	uint64_t u;
	uint32_t n;
	switch (type) {
	case RF_TH_TRUE:
	case RF_TH_FALSE:
		if (!in_list)
			return true;
		__attribute__((fallthrough)); /* one byte in a list */
	case RF_TH_BYTE:
		if (t->p >= t->end)
			return rf_thrift_fail(t, "a byte past the end");
		t->p++;
		return true;
	case RF_TH_I16:
	case RF_TH_I32:
	case RF_TH_I64:
		return varint(t, &u);
	case RF_TH_DOUBLE:
		if (t->end - t->p < 8)
			return rf_thrift_fail(t, "a double past the end");
		t->p += 8;
		return true;
	case RF_TH_BINARY:
		return rf_thrift_binary(t, type, &n) != NULL || !t->why;
	default:
		return rf_thrift_fail(t, "a value of an unknown type");
	}
}

typedef struct skip_frame {
	uint8_t kind, a, b; /* STRUCT; LIST (a: element); MAP (a: key, b: value) */
	int16_t last_id;
	uint64_t left; /* elements (a map: keys and values) to go */
} skip_frame;

/* Pushes a container (or consumes a scalar) of `type`. */
static bool skip_enter(rf_thrift *t, skip_frame *st, unsigned *n, uint8_t type, bool in_list)
{
	if (type != RF_TH_STRUCT && type != RF_TH_LIST && type != RF_TH_SET && type != RF_TH_MAP)
		return skip_scalar(t, type, in_list);
	if (*n >= RF_THRIFT_DEPTH_MAX)
		return rf_thrift_fail(t, "values nested deeper than 64");
	skip_frame *f = &st[(*n)++];
	*f = (skip_frame){.kind = type, .last_id = t->last_id};
	if (type == RF_TH_STRUCT) {
		t->last_id = 0;
		return true;
	}
	if (type != RF_TH_MAP) {
		uint32_t count;
		f->kind = RF_TH_LIST;
		if (!rf_thrift_list(t, type, &f->a, &count))
			return false;
		f->left = count;
		return true;
	}
	uint64_t size;
	if (!varint(t, &size))
		return false;
	if (size > (uint64_t)(t->end - t->p) / 2)
		return rf_thrift_fail(t, "a map larger than the bytes left");
	f->left = 2 * size;
	if (size) {
		if (t->p >= t->end)
			return rf_thrift_fail(t, "a map header past the end");
		f->a = *t->p >> 4;
		f->b = *t->p++ & 0x0f;
		if (!f->a || f->a > RF_TH_STRUCT || !f->b || f->b > RF_TH_STRUCT)
			return rf_thrift_fail(t, "a map of an unknown type");
	}
	return true;
}

bool rf_thrift_skip(rf_thrift *t, uint8_t type)
{
	skip_frame st[RF_THRIFT_DEPTH_MAX];
	unsigned n = 0;
	if (!skip_enter(t, st, &n, type, false))
		return false;
	while (n > 0) {
		skip_frame *f = &st[n - 1];
		uint8_t next;
		bool in_list = true;
		if (f->kind == RF_TH_STRUCT) {
			int16_t id;
			if (!rf_thrift_field(t, &id, &next)) {
				if (t->why)
					return false;
				t->last_id = f->last_id; /* STOP: the struct ends */
				n--;
				continue;
			}
			in_list = false;
		} else if (f->left == 0) {
			n--;
			continue;
		} else {
			next = f->kind == RF_TH_LIST || f->left % 2 == 0 ? f->a : f->b;
			f->left--;
		}
		if (!skip_enter(t, st, &n, next, in_list))
			return false;
	}
	return !t->why;
}
