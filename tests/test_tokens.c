/* test_tokens.c - llm.c and nanoGPT token files (shards/llmc.c) and packed
 * windows over every token format (shards/tokens.c): the headers as llm.c
 * writes them, a lying header named, a headerless file only with its dtype,
 * documents split at the end-of-text token (after it for nanoGPT, before it
 * for llm.c), and windows equal to tokens[i L, i L + L + 1) for every i,
 * widened when asked. */
#include "format.h"
#include "testutil.h"
#include "tokens.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EOT 50256

/* An llm.c file (magic, version, count, tokens) or a headerless one. */
static uint8_t *llmc_file(uint32_t magic, uint32_t version, const uint32_t *tok, uint64_t n,
                          unsigned isz, size_t *len)
{
	size_t head = magic ? 1024 : 0;
	*len = head + n * isz;
	uint8_t *b = calloc(1, *len + 1);
	if (magic) {
		rf_store_le32(b, magic);
		rf_store_le32(b + 4, version);
		rf_store_le32(b + 8, (uint32_t)n);
	}
	for (uint64_t i = 0; i < n; i++)
		for (unsigned k = 0; k < isz; k++)
			b[head + i * isz + k] = (uint8_t)(tok[i] >> (8 * k));
	return b;
}

static int open1(const rf_format *f, const uint8_t *b, size_t len, const rf_tok_opts *opt,
                 rf_shard_index **ix, void **priv, rf_error *err)
{
	rf_fmt_object ob = {"d/train.bin", b, len};
	uint64_t held = 0, reserved = 0;
	int rc = rf_format_open_mem(f, &ob, 1, opt, ix, priv, &held, &reserved, err);
	if (rc == 0)
		assert_true(held <= reserved);
	return rc;
}

/* Decodes every unit; calls back per record with its bytes. */
typedef void (*rec_fn)(uint64_t rec, const uint8_t *p, uint32_t len, void *ctx);
static uint64_t walk(const rf_format *f, const rf_shard_index *ix, const void *priv,
                     const uint8_t *file, rec_fn fn, void *ctx)
{
	uint64_t rec = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		assert_int_equal(b->first_record, rec);
		size_t cap = RF_MAX(b->decoded_bytes, rf_fmt_table_bytes(b->records));
		uint8_t *dst = malloc(cap);
		rf_unit_records out;
		rf_error err = {0};
		int rc = f->decode(NULL, ix, priv, u, file + b->offset, b->compressed_bytes, dst,
		                   cap, &out, "d/train.bin", &err);
		if (rc)
			fail_msg("unit %u: %s", u, err.msg);
		for (uint32_t j = 0; j < out.records; j++, rec++) {
			uint32_t s = rf_record_end(out.ends, (int64_t)j - 1);
			fn(rec, out.base + s, rf_record_end(out.ends, j) - s, ctx);
		}
		free(dst);
	}
	assert_int_equal(rec, ix->records);
	return rec;
}

typedef struct expect {
	const uint32_t *tok;
	unsigned osz;
	uint32_t L;
	const uint64_t *doc_start; /* records mode */
} expect;

static uint64_t get(const uint8_t *p, unsigned sz)
{
	uint64_t v = 0;
	for (unsigned k = 0; k < sz; k++)
		v |= (uint64_t)p[k] << (8 * k);
	return v;
}

static void check_window(uint64_t rec, const uint8_t *p, uint32_t len, void *ctx)
{
	const expect *e = ctx;
	assert_int_equal(len, (e->L + 1) * e->osz);
	for (uint32_t t = 0; t <= e->L; t++)
		assert_int_equal(get(p + t * e->osz, e->osz), e->tok[rec * e->L + t]);
}

static void check_doc(uint64_t rec, const uint8_t *p, uint32_t len, void *ctx)
{
	const expect *e = ctx;
	uint64_t s = e->doc_start[rec], n = e->doc_start[rec + 1] - s;
	assert_int_equal(len, n * e->osz);
	for (uint64_t t = 0; t < n; t++)
		assert_int_equal(get(p + t * e->osz, e->osz), e->tok[s + t]);
}

static uint32_t *tokens(uint64_t n, uint32_t top)
{
	uint32_t *t = malloc(n * sizeof(*t));
	uint32_t x = 7;
	for (uint64_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		t[i] = (x >> 8) % top;
		if (i % 97 == 96)
			t[i] = EOT;
	}
	return t;
}

static void test_llmc_headers(void **state)
{
	(void)state;
	uint64_t n = 5000;
	uint32_t *tok = tokens(n, 60000);
	struct {
		uint32_t magic, version;
		unsigned isz;
		const char *dtype;
	} kinds[] = {{20240520, 1, 2, "\"uint16\""}, {20240801, 7, 4, "\"uint32\""}};
	for (int k = 0; k < 2; k++) {
		size_t len;
		uint8_t *b =
		    llmc_file(kinds[k].magic, kinds[k].version, tok, n, kinds[k].isz, &len);
		rf_shard_index *ix = NULL;
		void *priv = NULL;
		rf_error err = {0};
		assert_int_equal(open1(&rf_format_llmc, b, len, NULL, &ix, &priv, &err), 0);
		assert_non_null(strstr(ix->metadata, kinds[k].dtype));
		assert_non_null(strstr(ix->metadata, "\"format\":\"llmc\""));
		assert_non_null(strstr(ix->metadata, "\"tokens\":5000"));
		assert_int_equal(ix->records, (n + RF_TOK_RUN_TOKENS - 1) / RF_TOK_RUN_TOKENS);
		assert_int_equal(ix->block[0].offset, 1024);
		rf_format_llmc.close(ix, priv);
		/* windows, L = 64: every window is tokens[i L, i L + L + 1) */
		rf_tok_opts opt = {.seq_len = 64};
		assert_int_equal(open1(&rf_format_llmc, b, len, &opt, &ix, &priv, &err), 0);
		assert_int_equal(ix->records, (n - 1) / 64);
		expect e = {.tok = tok, .osz = kinds[k].isz, .L = 64};
		walk(&rf_format_llmc, ix, priv, b, check_window, &e);
		rf_format_llmc.close(ix, priv);
		/* a lying count, a wrong version */
		rf_store_le32(b + 8, (uint32_t)n + 1);
		assert_int_equal(open1(&rf_format_llmc, b, len, NULL, &ix, &priv, &err),
		                 RF_E_CORRUPT);
		assert_non_null(strstr(err.msg, "d/train.bin: llm.c header: header[2] says 5001"));
		rf_store_le32(b + 8, (uint32_t)n);
		rf_store_le32(b + 4, 3);
		assert_int_equal(open1(&rf_format_llmc, b, len, NULL, &ix, &priv, &err),
		                 RF_E_CORRUPT);
		assert_non_null(strstr(err.msg, "llm.c header: magic"));
		assert_non_null(strstr(err.msg, "with version 3"));
		/* its first 12 bytes alone: too short for the header, said so
		 * (not "its first int32 is 20240520; llm.c writes 20240520") */
		rf_store_le32(b + 4, kinds[k].version);
		assert_int_equal(open1(&rf_format_llmc, b, 12, NULL, &ix, &priv, &err),
		                 RF_E_CORRUPT);
		char want[160];
		snprintf(want, sizeof(want),
		         "d/train.bin: 12 bytes: it starts with llm.c's magic %u, but an llm.c "
		         "token file has a 1024-byte header",
		         kinds[k].magic);
		assert_non_null(strstr(err.msg, want));
		assert_null(strstr(err.msg, "llm.c writes"));
		/* shorter than a header, another first int32: too short, said so */
		assert_int_equal(open1(&rf_format_llmc, b + 4, 12, NULL, &ix, &priv, &err),
		                 RF_E_CORRUPT);
		assert_non_null(strstr(err.msg, "d/train.bin: 12 bytes: shorter than llm.c's "
		                                "1024-byte header, not an llm.c token file"));
		free(b);
	}
	free(tok);
}

/* nanoGPT: headerless uint16, EOT appended to each document. */
static void test_raw(void **state)
{
	(void)state;
	uint64_t n = 3001;
	uint32_t *tok = tokens(n, 50000);
	size_t len;
	uint8_t *b = llmc_file(0, 0, tok, n, 2, &len);
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	int rc = open1(&rf_format_llmc, b, len, NULL, &ix, &priv, &err);
	assert_int_equal(rc, RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "d/train.bin: not an llm.c token file"));
	assert_non_null(strstr(err.msg, "needs its token dtype named"));
	/* documents: each ends after an EOT; the last has none */
	rf_tok_opts opt = {.token_dtype = RF_TOK_U16, .has_eot = true, .eot_token = EOT};
	assert_int_equal(open1(&rf_format_llmc, b, len, &opt, &ix, &priv, &err), 0);
	uint64_t starts[64], nd = 0;
	starts[nd++] = 0;
	for (uint64_t i = 0; i < n; i++)
		if (tok[i] == EOT)
			starts[nd++] = i + 1;
	if (starts[nd - 1] != n)
		starts[nd++] = n;
	assert_int_equal(ix->records, nd - 1);
	assert_non_null(strstr(ix->metadata, "\"format\":\"raw\""));
	expect e = {.tok = tok, .osz = 2, .doc_start = starts};
	walk(&rf_format_llmc, ix, priv, b, check_doc, &e);
	rf_format_llmc.close(ix, priv);
	/* windows widened to int64 and int32 */
	uint8_t outs[] = {RF_TOK_I64, RF_TOK_I32};
	for (int k = 0; k < 2; k++) {
		rf_tok_opts w = {.token_dtype = RF_TOK_U16, .seq_len = 100, .token_out = outs[k]};
		assert_int_equal(open1(&rf_format_llmc, b, len, &w, &ix, &priv, &err), 0);
		assert_int_equal(ix->records, 30);
		expect ew = {.tok = tok, .osz = rf_tok_dtype_bytes(outs[k]), .L = 100};
		walk(&rf_format_llmc, ix, priv, b, check_window, &ew);
		rf_format_llmc.close(ix, priv);
	}
	/* an odd size is not whole uint16 tokens; narrowing is refused */
	assert_int_equal(open1(&rf_format_llmc, b, len - 1, &opt, &ix, &priv, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "is not a whole number of uint16 tokens"));
	opt = (rf_tok_opts){.token_dtype = RF_TOK_U32, .seq_len = 8, .token_out = RF_TOK_I32};
	assert_int_equal(open1(&rf_format_llmc, b, len - 2, &opt, &ix, &priv, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "uint32 tokens cannot be widened to int32"));
	free(b);
	free(tok);
}

/* Windows of one unit and of many: units overlap by one token; the tail
 * shorter than L + 1 is dropped; L larger than the file gives none. */
static void test_windows_units(void **state)
{
	(void)state;
	uint64_t n = 1500000;
	uint32_t *tok = tokens(n, 65536);
	size_t len;
	uint8_t *b = llmc_file(20240520, 1, tok, n, 2, &len);
	uint32_t Ls[] = {1, 7, 1024, 1499999, 1500000};
	for (size_t k = 0; k < sizeof(Ls) / sizeof(Ls[0]); k++) {
		rf_tok_opts opt = {.seq_len = Ls[k], .token_out = k == 2 ? RF_TOK_I64 : 0};
		rf_shard_index *ix = NULL;
		void *priv = NULL;
		rf_error err = {0};
		assert_int_equal(open1(&rf_format_llmc, b, len, &opt, &ix, &priv, &err), 0);
		assert_int_equal(ix->records, (n - 1) / Ls[k]);
		for (uint32_t u = 1; u < ix->blocks; u++)
			assert_int_equal(ix->block[u].offset + 2,
			                 ix->block[u - 1].offset +
			                     ix->block[u - 1].compressed_bytes);
		if (Ls[k] != 1) {
			expect e = {.tok = tok, .osz = k == 2 ? 8 : 2, .L = Ls[k]};
			walk(&rf_format_llmc, ix, priv, b, check_window, &e);
		}
		rf_format_llmc.close(ix, priv);
	}
	free(b);
	free(tok);
}

static void test_claim(void **state)
{
	(void)state;
	assert_int_equal(rf_format_llmc.claim("s3://b/fineweb_train_000001.bin"), RF_FMT_MAYBE);
	assert_int_equal(rf_format_llmc.claim("s3://b/x.idx"), RF_FMT_NO);
	assert_int_equal(rf_format_llmc.claim("/x/a.rfs"), RF_FMT_NO);
	assert_int_equal(rf_tok_dtype_parse("uint16"), RF_TOK_U16);
	assert_int_equal(rf_tok_dtype_parse("int64"), RF_TOK_I64);
	assert_int_equal(rf_tok_dtype_parse("uint17"), RF_TOK_NONE);
	assert_string_equal(rf_tok_dtype_name(RF_TOK_U32), "uint32");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_llmc_headers),
	    cmocka_unit_test(test_raw),
	    cmocka_unit_test(test_windows_units),
	    cmocka_unit_test(test_claim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
