/* test_megatron.c - the Megatron indexed dataset format (shards/megatron.c):
 * a dataset built here byte for byte as indexed_dataset.py writes it opens
 * to one record per sequence, in units of whole sequences of about 1 MiB,
 * decoded in place; every lie or truncation of the .idx is an error that
 * names the .idx and the entry. */
#include "format.h"
#include "testutil.h"
#include "tokens.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dataset {
	uint8_t *idx, *bin;
	size_t idx_len, bin_len;
	uint64_t S, D1;
	unsigned isz;
} dataset;

/* Sequences of lens[i] tokens (token = i * 1000 + j), one document per
 * sequence, as _IndexWriter writes them. */
static dataset build(uint8_t code, const uint32_t *lens, uint64_t S)
{
	dataset d = {.S = S, .D1 = S + 1, .isz = rf_tok_dtype_bytes(code)};
	uint64_t tokens = 0;
	for (uint64_t i = 0; i < S; i++)
		tokens += lens[i];
	d.bin_len = tokens * d.isz;
	d.bin = calloc(1, d.bin_len + 1);
	d.idx_len = 34 + 12 * S + 8 * d.D1;
	d.idx = calloc(1, d.idx_len);
	memcpy(d.idx, "MMIDIDX\0\0", 9);
	rf_store_le64(d.idx + 9, 1);
	d.idx[17] = code;
	rf_store_le64(d.idx + 18, S);
	rf_store_le64(d.idx + 26, d.D1);
	uint64_t at = 0;
	for (uint64_t i = 0; i < S; i++) {
		rf_store_le32(d.idx + 34 + 4 * i, lens[i]);
		rf_store_le64(d.idx + 34 + 4 * S + 8 * i, at);
		for (uint32_t j = 0; j < lens[i]; j++) {
			uint64_t v = i * 1000 + j;
			for (unsigned b = 0; b < d.isz; b++)
				d.bin[at + (uint64_t)j * d.isz + b] = (uint8_t)(v >> (8 * b));
		}
		at += (uint64_t)lens[i] * d.isz;
	}
	for (uint64_t k = 0; k < d.D1; k++)
		rf_store_le64(d.idx + 34 + 12 * S + 8 * k, k);
	return d;
}

static void dataset_free(dataset *d)
{
	free(d->idx);
	free(d->bin);
}

static int open_ds(const dataset *d, rf_shard_index **ix, void **priv, uint64_t *held,
                   uint64_t *reserved, rf_error *err)
{
	rf_fmt_object objs[2] = {{"data/x.bin", d->bin, d->bin_len},
	                         {"data/x.idx", d->idx, d->idx_len}};
	return rf_format_open_mem(&rf_format_megatron, objs, 2, NULL, ix, priv, held, reserved,
	                          err);
}

/* Every record of every unit equals the sequence's tokens. */
static void check_records(const dataset *d, const rf_shard_index *ix, const void *priv,
                          const uint32_t *lens)
{
	uint64_t rec = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		assert_int_equal(b->first_record, rec);
		assert_true(b->compressed_bytes <= RF_TOK_UNIT_BYTES || b->records == 1);
		assert_int_equal(b->decoded_bytes, b->compressed_bytes);
		size_t cap = rf_fmt_table_bytes(b->records);
		uint8_t *table = malloc(cap);
		rf_unit_records out;
		rf_error err = {0};
		assert_int_equal(rf_format_megatron.decode(NULL, ix, priv, u, d->bin + b->offset,
		                                           b->compressed_bytes, table, cap, &out,
		                                           "x.bin", &err),
		                 0);
		assert_ptr_equal(out.base, d->bin + b->offset);
		assert_int_equal(out.records, b->records);
		for (uint32_t j = 0; j < out.records; j++, rec++) {
			uint32_t s = rf_record_end(out.ends, (int64_t)j - 1);
			uint32_t e = rf_record_end(out.ends, j);
			assert_int_equal(e - s, lens[rec] * d->isz);
			for (uint32_t t = 0; t < lens[rec]; t++) {
				uint64_t v = 0;
				for (unsigned k = 0; k < d->isz; k++)
					v |= (uint64_t)out.base[s + t * d->isz + k] << (8 * k);
				uint64_t mask =
				    d->isz == 8 ? UINT64_MAX : (1ull << (8 * d->isz)) - 1;
				assert_int_equal(v, (rec * 1000 + t) & mask);
			}
		}
		/* the stored length is checked */
		assert_int_equal(
		    rf_format_megatron.decode(NULL, ix, priv, u, d->bin + b->offset,
		                              b->compressed_bytes - 1 + !b->compressed_bytes * 2,
		                              table, cap, &out, "x.bin", &err),
		    RF_E_CORRUPT);
		free(table);
	}
	assert_int_equal(rec, ix->records);
}

static void test_small_uint16_and_int32(void **state)
{
	(void)state;
	uint32_t lens[] = {5, 0, 17, 3, 1};
	uint8_t codes[] = {RF_TOK_U16, RF_TOK_I32};
	for (int c = 0; c < 2; c++) {
		dataset d = build(codes[c], lens, 5);
		rf_shard_index *ix = NULL;
		void *priv = NULL;
		uint64_t held = 0, reserved = 0;
		rf_error err = {0};
		assert_int_equal(open_ds(&d, &ix, &priv, &held, &reserved, &err), 0);
		assert_int_equal(ix->records, 5);
		assert_int_equal(ix->blocks, 1);
		assert_int_equal(ix->file_bytes, d.bin_len);
		assert_int_equal(ix->largest_record_bytes, 17 * d.isz);
		assert_non_null(
		    strstr(ix->metadata, codes[c] == RF_TOK_U16 ? "\"uint16\"" : "\"int32\""));
		assert_non_null(strstr(ix->metadata, "\"tokens\":26"));
		assert_non_null(strstr(ix->metadata, "\"documents\":5"));
		assert_true(held > 0 && held <= reserved);
		check_records(&d, ix, priv, lens);
		rf_format_megatron.close(ix, priv);
		dataset_free(&d);
	}
}

/* Many sequences: units of whole sequences near 1 MiB; one larger than a
 * unit is its own; chunked array reads (more than MG_CHUNK_ENTRIES). */
static void test_units(void **state)
{
	(void)state;
	uint64_t S = 600000;
	uint32_t *lens = malloc(S * sizeof(*lens));
	for (uint64_t i = 0; i < S; i++)
		lens[i] = (uint32_t)(i % 7);
	lens[1000] = 700000; /* 1.4 MB of uint16 */
	dataset d = build(RF_TOK_U16, lens, S);
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(open_ds(&d, &ix, &priv, NULL, NULL, &err), 0);
	assert_int_equal(ix->records, S);
	assert_true(ix->blocks > 3);
	assert_int_equal(ix->largest_block_compressed_bytes, 1400000);
	uint64_t sum = 0;
	for (uint32_t u = 0; u < ix->blocks; u++)
		sum += ix->block[u].compressed_bytes;
	assert_int_equal(sum, d.bin_len);
	check_records(&d, ix, priv, lens);
	rf_format_megatron.close(ix, priv);
	dataset_free(&d);
	free(lens);
}

/* Windows over the concatenation of the sequences (seq_len 4, 26 tokens:
 * 6 windows of 5, the last token dropped), widened to int64. */
static void test_windows(void **state)
{
	(void)state;
	uint32_t lens[] = {5, 0, 17, 3, 1};
	dataset d = build(RF_TOK_U16, lens, 5);
	uint64_t cat[26], t = 0;
	for (uint64_t i = 0; i < 5; i++)
		for (uint32_t j = 0; j < lens[i]; j++)
			cat[t++] = i * 1000 + j;
	rf_fmt_object objs[2] = {{"data/x.bin", d.bin, d.bin_len},
	                         {"data/x.idx", d.idx, d.idx_len}};
	rf_tok_opts opt = {.seq_len = 4, .token_out = RF_TOK_I64};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(
	    rf_format_open_mem(&rf_format_megatron, objs, 2, &opt, &ix, &priv, NULL, NULL, &err),
	    0);
	assert_int_equal(ix->records, 6);
	assert_int_equal(ix->blocks, 1);
	assert_non_null(strstr(ix->metadata, "\"windows\":6"));
	const rf_block_info *b = &ix->block[0];
	assert_int_equal(b->compressed_bytes, 25 * 2);
	uint8_t *dst = malloc(b->decoded_bytes);
	rf_unit_records out;
	assert_int_equal(rf_format_megatron.decode(NULL, ix, priv, 0, d.bin, b->compressed_bytes,
	                                           dst, b->decoded_bytes, &out, "x.bin", &err),
	                 0);
	assert_int_equal(out.records, 6);
	for (uint32_t w = 0; w < 6; w++) {
		assert_int_equal(rf_record_end(out.ends, w), (w + 1) * 5 * 8);
		for (uint32_t k = 0; k < 5; k++)
			assert_int_equal(rf_load_le64(out.base + (w * 5 + k) * 8), cat[w * 4 + k]);
	}
	free(dst);
	rf_format_megatron.close(ix, priv);
	dataset_free(&d);
}

/* A multimodal index (int8 modes[S] after the document indices) and an
 * empty dataset (no sequences, an empty .bin) open. */
static void test_modes_and_empty(void **state)
{
	(void)state;
	uint32_t lens[] = {3, 4};
	dataset d = build(RF_TOK_I32, lens, 2);
	d.idx = realloc(d.idx, d.idx_len + 2);
	d.idx[d.idx_len] = 0;
	d.idx[d.idx_len + 1] = 1;
	d.idx_len += 2;
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(open_ds(&d, &ix, &priv, NULL, NULL, &err), 0);
	assert_int_equal(ix->records, 2);
	rf_format_megatron.close(ix, priv);
	dataset_free(&d);
	d = build(RF_TOK_U16, lens, 0);
	assert_int_equal(open_ds(&d, &ix, &priv, NULL, NULL, &err), 0);
	assert_int_equal(ix->records, 0);
	assert_int_equal(ix->blocks, 0);
	rf_format_megatron.close(ix, priv);
	dataset_free(&d);
}

static void test_claim(void **state)
{
	(void)state;
	assert_int_equal(rf_format_megatron.claim("s3://b/x/data_text_document.idx"), RF_FMT_YES);
	assert_int_equal(rf_format_megatron.claim("/d/data_text_document.bin"), RF_FMT_MAYBE);
	assert_int_equal(rf_format_megatron.claim("/d/data_text_document"), RF_FMT_MAYBE);
	char *s = rf_tok_sibling("http://h/p/x.bin?a=b", ".idx");
	assert_string_equal(s, "http://h/p/x.idx?a=b");
	free(s);
	s = rf_tok_sibling("/p/x", ".bin");
	assert_string_equal(s, "/p/x.bin");
	free(s);
}

/* A hostile .idx: the error names the .idx and what is wrong, where. */
typedef struct lie {
	const char *what;
	void (*edit)(dataset *d);
	const char *expect;
} lie;

static void lie_magic(dataset *d)
{
	d->idx[3] ^= 1;
}
static void lie_version(dataset *d)
{
	rf_store_le64(d->idx + 9, 2);
}
static void lie_dtype(dataset *d)
{
	d->idx[17] = 9;
}
static void lie_dtype0(dataset *d)
{
	d->idx[17] = 0;
}
static void lie_count(dataset *d)
{
	rf_store_le64(d->idx + 18, d->S + 1);
}
static void lie_huge(dataset *d)
{
	rf_store_le64(d->idx + 18, UINT64_MAX / 4);
}
static void lie_docs0(dataset *d)
{
	rf_store_le64(d->idx + 26, 0);
}
static void lie_truncated(dataset *d)
{
	d->idx_len -= 8;
}
static void lie_tiny(dataset *d)
{
	d->idx_len = 20;
}
static void lie_neg_len(dataset *d)
{
	rf_store_le32(d->idx + 34 + 4 * 2, 0x80000000u);
}
static void lie_len_big(dataset *d)
{
	rf_store_le32(d->idx + 34 + 4 * 2, 17 + 1);
}
static void lie_len_small(dataset *d)
{
	rf_store_le32(d->idx + 34 + 4 * 4, 0);
}
static void lie_ptr_order(dataset *d)
{
	rf_store_le64(d->idx + 34 + 4 * d->S + 8 * 3, 0);
}
static void lie_ptr_past(dataset *d)
{
	rf_store_le64(d->idx + 34 + 4 * d->S + 8 * 4, 1u << 30);
}
static void lie_bin_short(dataset *d)
{
	d->bin_len -= 2;
}
static void lie_bin_long(dataset *d)
{
	d->bin_len += 1;
}
static void lie_doc_first(dataset *d)
{
	rf_store_le64(d->idx + 34 + 12 * d->S, 1);
}
static void lie_doc_down(dataset *d)
{
	rf_store_le64(d->idx + 34 + 12 * d->S + 8 * 3, 1);
}
static void lie_doc_last(dataset *d)
{
	rf_store_le64(d->idx + 34 + 12 * d->S + 8 * d->S, 4);
}
static void lie_doc_over(dataset *d)
{
	rf_store_le64(d->idx + 34 + 12 * d->S + 8 * 2, 99);
}

static void test_hostile(void **state)
{
	(void)state;
	static const lie lies[] = {
	    {"magic", lie_magic, "x.idx: not a Megatron index (bad magic)"},
	    {"version", lie_version, "x.idx: header: version 2"},
	    {"dtype 9", lie_dtype, "x.idx: header: dtype code 9"},
	    {"dtype 0", lie_dtype0, "x.idx: header: dtype code 0"},
	    {"sequence count", lie_count, "x.idx: is 142 bytes; its header (6 sequences"},
	    {"huge count", lie_huge, "x.idx: header: 4611686018427387903 sequences"},
	    {"no documents", lie_docs0, "x.idx: header: document_count 0"},
	    {"truncated", lie_truncated, "x.idx: is 134 bytes; its header (5 sequences"},
	    {"tiny", lie_tiny, "data/x.idx: is 20 bytes, less than a header (34)"},
	    {"negative length", lie_neg_len, "x.idx: lengths[2] is -2147483648"},
	    {"length too big", lie_len_big, "x.idx: pointers[3] is 44, expected 46"},
	    {"length too small", lie_len_small,
	     "x.idx: the sequences cover 50 bytes of data/x.bin, which has 52"},
	    {"pointer order", lie_ptr_order, "x.idx: pointers[3] is 0, expected 44"},
	    {"pointer past", lie_ptr_past, "x.idx: pointers[4] is 1073741824, expected 50"},
	    {"bin short", lie_bin_short,
	     "x.idx: sequence 4 ends at byte 52, past the end of data/x.bin (50 bytes)"},
	    {"bin long", lie_bin_long,
	     "x.idx: the sequences cover 52 bytes of data/x.bin, which has 53"},
	    {"first document", lie_doc_first, "x.idx: document_indices[0] is 1, not 0"},
	    {"documents down", lie_doc_down, "x.idx: document_indices[3] is 1 (after 2"},
	    {"last document", lie_doc_last,
	     "x.idx: document_indices[5] (the last) is 4, not the sequence count 5"},
	    {"document past", lie_doc_over, "x.idx: document_indices[2] is 99"},
	};
	uint32_t lens[] = {5, 0, 17, 3, 1};
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		dataset d = build(RF_TOK_U16, lens, 5);
		lies[i].edit(&d);
		rf_shard_index *ix = NULL;
		void *priv = NULL;
		rf_error err = {0};
		int rc = open_ds(&d, &ix, &priv, NULL, NULL, &err);
		if (rc != RF_E_CORRUPT || !strstr(err.msg, lies[i].expect))
			fail_msg("%s: rc %d, message \"%s\", expected \"%s\"", lies[i].what, rc,
			         err.msg, lies[i].expect);
		assert_null(ix);
		dataset_free(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small_uint16_and_int32),
	    cmocka_unit_test(test_units),
	    cmocka_unit_test(test_windows),
	    cmocka_unit_test(test_modes_and_empty),
	    cmocka_unit_test(test_claim),
	    cmocka_unit_test(test_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
