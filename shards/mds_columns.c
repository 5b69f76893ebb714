/* mds_columns.c - the JSON and column side of MosaicML MDS (mds.h): column
 * encodings and their sizes, the shard's config JSON, a sample's columns
 * from its bytes (the dataset's index.json: mds_index.c). JSON through
 * jansson (a config is at most RF_MDS_CONFIG_MAX bytes);
 * every size, count and name checked before use. */
#include "mds.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define U64(x) ((unsigned long long)(x))

/* ------------------------------------------------------------ encodings */

static const struct {
	const char *name;
	int64_t size; /* -1 variable */
} encodings[] = {
    {"bytes", -1},  {"str", -1},    {"json", -1},    {"pkl", -1},       {"jpeg", -1},
    {"png", -1},    {"pil", -1},    {"str_int", -1}, {"str_float", -1}, {"str_decimal", -1},
    {"int", 8},     {"uint8", 1},   {"uint16", 2},   {"uint32", 4},     {"uint64", 8},
    {"int8", 1},    {"int16", 2},   {"int32", 4},    {"int64", 8},      {"float16", 2},
    {"float32", 4}, {"float64", 8},
};

static int64_t dtype_size(const char *d, size_t len)
{
	static const char *const names[] = {"uint8",   "int8",   "uint16", "int16",
	                                    "float16", "uint32", "int32",  "float32",
	                                    "uint64",  "int64",  "float64"};
	static const int sizes[] = {1, 1, 2, 2, 2, 4, 4, 4, 8, 8, 8};
	for (size_t i = 0; i < RF_ARRAY_LEN(names); i++)
		if (strlen(names[i]) == len && memcmp(names[i], d, len) == 0)
			return sizes[i];
	return -2;
}

/* "ndarray[:dtype[:d0,d1,...]]": fixed only with both dtype and shape. */
static int64_t ndarray_size(const char *args)
{
	if (!*args)
		return -1;
	if (*args++ != ':')
		return -2;
	const char *colon = strchr(args, ':');
	int64_t item = dtype_size(args, colon ? (size_t)(colon - args) : strlen(args));
	if (item < 0 || !colon)
		return item < 0 ? -2 : -1; /* no shape: each value says its own */
	uint64_t n = (uint64_t)item;
	const char *p = colon + 1;
	do {
		if (*p < '0' || *p > '9')
			return -2;
		uint64_t dim = 0;
		while (*p >= '0' && *p <= '9' && dim < RF_BLOCK_DECODED_MAX)
			dim = dim * 10 + (uint64_t)(*p++ - '0');
		if (dim == 0 || !rf_mul_u64(n, dim, &n) || n > RF_BLOCK_DECODED_MAX)
			return -2;
	} while (*p == ',' && *++p);
	return *p ? -2 : (int64_t)n;
}

int64_t rf_mds_encoding_size(const char *e)
{
	if (strncmp(e, "ndarray", 7) == 0)
		return ndarray_size(e + 7);
	if (strncmp(e, "jpeg:", 5) == 0) /* jpeg:QUALITY */
		return -1;
	for (size_t i = 0; i < RF_ARRAY_LEN(encodings); i++)
		if (strcmp(encodings[i].name, e) == 0)
			return encodings[i].size;
	return -2;
}

/* ------------------------------------------------------------ config JSON */

void rf_mds_columns_free(rf_mds_columns *c)
{
	for (uint32_t i = 0; c->names && i < c->n; i++)
		free(c->names[i]);
	for (uint32_t i = 0; c->encodings && i < c->n; i++)
		free(c->encodings[i]);
	free(c->names);
	free(c->encodings);
	free(c->sizes);
	memset(c, 0, sizeof(*c));
}

static const char *jstr(json_t *v, size_t max)
{
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

static int column(rf_mds_columns *c, uint32_t i, json_t *name, json_t *enc, json_t *size,
                  const char *shard, rf_error *err)
{
	const char *n = jstr(name, RF_MDS_NAME_MAX), *e = jstr(enc, 64);
	if (!n || !e)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: config: column %u: name or encoding is not a string of "
		               "1..%u bytes",
		               shard, i, RF_MDS_NAME_MAX);
	for (uint32_t j = 0; j < i; j++)
		if (strcmp(c->names[j], n) == 0)
			return rf_fail(err, RF_E_CORRUPT, "shard %s: config: column '%s' twice",
			               shard, n);
	int64_t want = rf_mds_encoding_size(e);
	if (want == -2)
		return rf_fail(err, -ENOTSUP,
		               "shard %s: config: column '%s': unknown encoding '%s'", shard, n, e);
	bool ok = want < 0 ? json_is_null(size)
	                   : json_is_integer(size) && json_integer_value(size) == want;
	if (!ok)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: config: column '%s' (%s): size is not %s", shard, n, e,
		               want < 0 ? "null (variable)" : "the encoding's");
	c->sizes[i] = want;
	c->variable += want < 0;
	if (!(c->names[i] = strdup(n)) || !(c->encodings[i] = strdup(e)))
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", shard);
	return 0;
}

static int config_columns(json_t *o, rf_mds_columns *c, const char *shard, rf_error *err)
{
	json_t *names = json_object_get(o, "column_names");
	json_t *encs = json_object_get(o, "column_encodings");
	json_t *sizes = json_object_get(o, "column_sizes");
	json_t *ver = json_object_get(o, "version"), *fmt = json_object_get(o, "format");
	if (!json_is_integer(ver) || json_integer_value(ver) != 2 || !jstr(fmt, 16) ||
	    strcmp(json_string_value(fmt), "mds") != 0)
		return rf_fail(err, -EPROTONOSUPPORT,
		               "shard %s: config: not version 2 of format \"mds\"", shard);
	size_t n = json_array_size(names);
	if (!json_is_array(names) || !json_is_array(encs) || !json_is_array(sizes) || n == 0 ||
	    n > RF_MDS_COLUMNS_MAX || json_array_size(encs) != n || json_array_size(sizes) != n)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: config: column_names, column_encodings and column_sizes "
		               "are not arrays of one length in 1..%u",
		               shard, RF_MDS_COLUMNS_MAX);
	c->names = calloc(n, sizeof(char *));
	c->encodings = calloc(n, sizeof(char *));
	c->sizes = calloc(n, sizeof(int64_t));
	if (!c->names || !c->encodings || !c->sizes)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", shard);
	c->n = (uint32_t)n;
	for (uint32_t i = 0; i < n; i++)
		RF_TRY(column(c, i, json_array_get(names, i), json_array_get(encs, i),
		              json_array_get(sizes, i), shard, err));
	return 0;
}

int rf_mds_config_parse(const char *text, size_t len, rf_mds_columns *c, const char *shard,
                        rf_error *err)
{
	memset(c, 0, sizeof(*c));
	json_error_t je;
	json_t *o =
	    len <= RF_MDS_CONFIG_MAX ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &je) : NULL;
	if (!json_is_object(o)) {
		json_decref(o);
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: config: not a JSON object of at most %u bytes", shard,
		               RF_MDS_CONFIG_MAX);
	}
	int rc = config_columns(o, c, shard, err);
	json_decref(o);
	if (rc < 0)
		rf_mds_columns_free(c);
	return rc;
}

/* ------------------------------------------------------------ samples */

int rf_mds_sample(const rf_mds_columns *c, const uint8_t *s, uint32_t len, uint32_t base,
                  rf_rec_field *out, const char *shard, uint64_t at, rf_error *err)
{
	uint64_t head = 4ull * c->variable;
	if (len < head)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: sample at byte %llu: %u bytes, shorter than its %u column "
		    "sizes",
		    shard, U64(at), len, c->variable);
	uint64_t pos = head;
	uint32_t v = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		uint64_t size =
		    c->sizes[i] >= 0 ? (uint64_t)c->sizes[i] : rf_load_le32(s + 4 * v++);
		if (size > len - pos)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: sample at byte %llu: column '%s' of %llu bytes at "
			    "its byte %llu runs past the sample's %u bytes",
			    shard, U64(at), c->names[i], U64(size), U64(pos), len);
		out[i] = (rf_rec_field){
		    .name = i, .offset = base + (uint32_t)pos, .len = (uint32_t)size};
		pos += size;
	}
	if (pos != len)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: sample at byte %llu: columns take %llu of its %u bytes",
		               shard, U64(at), U64(pos), len);
	return 0;
}
