/* test_format.c - the format seam (shards/format.h): the registry's claims,
 * the .rfs implementation driven step by step (the same layout as the
 * direct reader, ranges served as asked, re-entrant after a bad step), the
 * synchronous driver's errors, and the formats' options parsed by each
 * format from a config getter (rf_fmt_optset). */
#include "format.h"
#include "parquet.h"
#include "rfs.h"
#include "tar.h"
#include "testutil.h"
#include "tfrecord.h"
#include "tokens.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const rf_format rf_parquet_format;
extern const rf_format rf_format_rfs;

static char *make_shard(const char *dir, uint32_t records, uint32_t block_bytes)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/s.rfs", dir);
	rf_writer_options opt = {.block_bytes = block_bytes};
	rf_error err = {0};
	rf_writer *w = rf_writer_open(path, &opt, &err);
	assert_non_null(w);
	for (uint32_t i = 0; i < records; i++) {
		char rec[64];
		int n = snprintf(rec, sizeof(rec), "record %u of the shard", i);
		assert_int_equal(rf_writer_add(w, rec, (size_t)n, &err), 0);
	}
	assert_int_equal(rf_writer_close(w, NULL, &err), 0);
	return path;
}

static void test_claims(void **state)
{
	(void)state;
	const rf_format *rfs = rf_format_by_name("rfs");
	assert_non_null(rfs);
	assert_ptr_equal(rf_format_for("data/shard-000001.rfs", false), rfs);
	assert_ptr_equal(rf_format_for("s3://b/k/x.rfs?X-Amz-Signature=abc", false), rfs);
	/* a listing takes only names a format calls its own */
	assert_null(rf_format_for("data/notes.txt", false));
	assert_false(rf_format_is_shard_name("manifest.rfm"));
	assert_true(rf_format_is_shard_name("a.rfs"));
	/* a name the user gave is tried by the fallback */
	assert_ptr_equal(rf_format_for("data.dat", true), rfs);
	/* token files (issue 13): *.bin is llm.c / nanoGPT's, *.idx Megatron's */
	assert_ptr_equal(rf_format_for("data.bin", true), rf_format_by_name("llmc"));
	assert_ptr_equal(rf_format_for("data/x_text_document.idx", false),
	                 rf_format_by_name("megatron"));
	assert_null(rf_format_for("data/x_text_document.bin", false));
	/* the query is not part of the name: x.rfs?y=.txt is an .rfs */
	assert_true(rf_format_is_shard_name("https://h/x.rfs?y=.txt"));
	assert_false(rf_format_is_shard_name("https://h/x.txt?y=.rfs"));
	assert_null(rf_format_by_name("nope"));
	uint32_t n = 0;
	assert_non_null(rf_formats(&n));
	assert_true(n >= 1);
}

/* Each row's names are the one list of what it takes: every name is
 * claimed YES by its format (and a listing takes it), and the messages'
 * list names every one, the compressed tars' included. */
static void test_names_from_rows(void **state)
{
	(void)state;
	uint32_t n = 0;
	const rf_format *const *f = rf_formats(&n);
	const char *shown = rf_format_patterns();
	uint32_t listed = 0;
	for (uint32_t i = 0; i < n; i++)
		for (const char *const *s = f[i]->names; s && *s; s++, listed++) {
			char name[128];
			snprintf(name, sizeof(name), "d/x-000%s", *s);
			if (rf_format_claim(f[i], name) != RF_FMT_YES)
				fail_msg("%s: its name %s is not claimed", f[i]->name, *s);
			assert_true(rf_format_is_shard_name(name));
			/* ".tar" must not match inside ".tar.gz": a separator follows */
			char word[64];
			snprintf(word, sizeof(word), "%s", *s);
			const char *at = strstr(shown, word);
			while (at && at[strlen(word)] != ',' && at[strlen(word)] != ' ' &&
			       at[strlen(word)] != '\0')
				at = strstr(at + 1, word);
			if (!at)
				fail_msg("%s is missing from \"%s\"", *s, shown);
		}
	assert_true(listed >= 8);
	assert_non_null(strstr(shown, ".tar.gz, "));
	assert_non_null(strstr(shown, ".tar.zst, "));
	assert_non_null(strstr(shown, " or "));
	/* PREFIX.idx beside PREFIX.tar is the tar's index, alone a Megatron dataset */
	char *listing[] = {"a.idx", "a.tar", "b.idx"};
	assert_false(rf_format_listing_takes("a.idx", listing, 3));
	assert_true(rf_format_listing_takes("a.tar", listing, 3));
	assert_true(rf_format_listing_takes("b.idx", listing, 3));
	assert_null(rf_format_for_index("d/shard.mds"));
	assert_non_null(rf_format_for_index("s3://b/d/index.json?x=1"));
}

static void test_open_file_matches_reader(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("format");
	const char *path = make_shard(dir, 5000, 4096);
	rf_error err = {0};
	rf_shard_index *direct = NULL, *ix = NULL;
	void *priv = NULL;
	const rf_format *fmt = NULL;
	assert_int_equal(rf_index_read_file(path, &direct, &err), 0);
	assert_int_equal(rf_format_open_file(path, NULL, NULL, &fmt, &ix, &priv, &err), 0);
	assert_ptr_equal(fmt, rf_format_by_name("rfs"));
	assert_true(direct->blocks > 1);
	assert_int_equal(ix->blocks, direct->blocks);
	assert_int_equal(ix->records, direct->records);
	assert_int_equal(ix->largest_record_bytes, direct->largest_record_bytes);
	assert_memory_equal(ix->block, direct->block, direct->blocks * sizeof(rf_block_info));
	fmt->close(ix, priv);
	rf_index_free(direct);
	rf_test_rmtree(dir);
	free(dir);
}

/* Drives the rfs open by hand: the first ask is the last 4 KiB (8 KiB
 * remote; at least the footer), the index comes next with its parse bound, a bad index is
 * an error the same step retries on good bytes, and DONE reports what the
 * layout holds (no more than the bound). */
static void test_rfs_steps(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("format");
	const char *path = make_shard(dir, 20000, 256);
	unsigned char *file = NULL;
	long size = rf_test_read_file(path, &file);
	assert_true(size > 8192);
	const rf_format *rfs = rf_format_by_name("rfs");
	rf_fmt_open o = {.url = path, .name = "s.rfs", .size = (uint64_t)size, .local = true};
	rf_error err = {0};
	assert_int_equal(rfs->open_step(&o, &err), RF_FMT_NEED);
	assert_null(o.want.object);
	assert_int_equal(o.want.offset + o.want.len, (uint64_t)size);
	assert_int_equal(o.want.len, 4096);
	assert_int_equal(o.want.min_len, RF_FOOTER_BYTES);
	/* a remote object's first ask is its last 8 KiB (or all of a smaller
	 * one): footer and index in one request */
	rf_fmt_open r = {.url = path, .name = "s.rfs", .size = (uint64_t)size};
	assert_int_equal(rfs->open_step(&r, &err), RF_FMT_NEED);
	assert_int_equal(r.want.len, RF_MIN((uint64_t)size, 8u << 10));
	assert_int_equal(r.want.offset + r.want.len, (uint64_t)size);
	assert_int_equal(r.want.min_len, RF_FOOTER_BYTES);
	/* deliver only the footer: the least it said it can use */
	o.got = file + size - RF_FOOTER_BYTES;
	o.got_offset = (uint64_t)size - RF_FOOTER_BYTES;
	o.got_len = RF_FOOTER_BYTES;
	assert_int_equal(rfs->open_step(&o, &err), RF_FMT_NEED);
	rf_fmt_want w = o.want;
	assert_true(w.len > 4096);
	assert_true(w.parse_bound >= w.len);
	/* a damaged index: RF_E_CORRUPT, the want unchanged (re-read the same) */
	unsigned char *bad = malloc(w.len);
	memcpy(bad, file + w.offset, w.len);
	bad[w.len / 2] ^= 0x40;
	o.got = bad;
	o.got_offset = w.offset;
	o.got_len = w.len;
	assert_int_equal(rfs->open_step(&o, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "s.rfs"));
	assert_int_equal(o.want.offset, w.offset);
	assert_int_equal(o.want.len, w.len);
	o.got = file + w.offset;
	assert_int_equal(rfs->open_step(&o, &err), RF_FMT_DONE);
	assert_non_null(o.index);
	assert_int_equal(o.index->records, 20000);
	assert_true(o.held_bytes > 0 && o.held_bytes <= w.parse_bound);
	rfs->close(o.index, o.priv);
	free(bad);
	free(file);
	rf_test_rmtree(dir);
	free(dir);
}

/* A file without the magic is final (re-reading it cannot help); a short
 * file is refused before anything is asked. */
static void test_rfs_not_a_shard(void **state)
{
	(void)state;
	const rf_format *rfs = rf_format_by_name("rfs");
	uint8_t junk[100];
	memset(junk, 'x', sizeof(junk));
	rf_fmt_open o = {.url = "j", .name = "junk.bin", .size = sizeof(junk), .local = true};
	rf_error err = {0};
	assert_int_equal(rfs->open_step(&o, &err), RF_FMT_NEED);
	o.got = junk;
	o.got_offset = 0;
	o.got_len = sizeof(junk);
	assert_int_equal(rfs->open_step(&o, &err), RF_E_CORRUPT);
	assert_true(o.final);
	assert_non_null(strstr(err.msg, "bad magic"));
	rf_fmt_open t = {.url = "t", .name = "tiny", .size = 10};
	assert_int_equal(rfs->open_step(&t, &err), RF_E_CORRUPT);
	assert_non_null(strstr(err.msg, "shorter than the 40-byte footer"));
}

static void test_open_file_errors(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("format");
	char path[512];
	snprintf(path, sizeof(path), "%s/x.rfs", dir);
	assert_int_equal(
	    rf_test_write_file(path, "not a shard at all, just some bytes here...", 43), 0);
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	assert_int_equal(rf_format_open_file(path, NULL, NULL, NULL, &ix, &priv, &err),
	                 RF_E_CORRUPT);
	assert_null(ix);
	assert_non_null(strstr(err.msg, "x.rfs"));
	snprintf(path, sizeof(path), "%s/missing.rfs", dir);
	assert_true(rf_format_open_file(path, NULL, NULL, NULL, &ix, &priv, &err) < 0);
	assert_non_null(strstr(err.msg, "missing.rfs"));
	rf_test_rmtree(dir);
	free(dir);
}

/* A config of a few keys for the getter; others are known keys left unset,
 * except "nosuch", which the config does not have. */
typedef struct fake_key {
	const char *key;
	uint64_t num;
	const char *str;
} fake_key;

typedef struct fake_cfg {
	fake_key k[8];
	unsigned asked; /* calls of get */
} fake_cfg;

static int fake_get(void *ctx, const char *key, uint64_t *num, const char **str)
{
	fake_cfg *c = ctx;
	c->asked++;
	if (!strcmp(key, "nosuch"))
		return -ENOENT;
	*num = 0;
	*str = NULL;
	for (size_t i = 0; i < sizeof(c->k) / sizeof(c->k[0]) && c->k[i].key; i++)
		if (!strcmp(c->k[i].key, key)) {
			*num = c->k[i].num;
			*str = c->k[i].str;
		}
	return 0;
}

/* rf_fmt_optset_new with c; the message on failure (NULL on success). */
static const char *optset_err(fake_cfg *c, rf_fmt_optset **set, rf_error *err)
{
	rf_fmt_config get = {.get = fake_get, .ctx = c};
	*set = NULL;
	int rc = rf_fmt_optset_new(&get, set, err);
	if (rc == 0)
		return NULL;
	assert_int_equal(rc, -EINVAL);
	assert_null(*set);
	return err->msg;
}

static void test_options(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_fmt_optset *set = NULL;
	/* no config: every format's defaults (zero), NULL for one without options */
	assert_int_equal(rf_fmt_optset_new(NULL, &set, &err), 0);
	const rf_tok_opts *tok = rf_fmt_optset_for(set, &rf_format_llmc);
	assert_non_null(tok);
	assert_int_equal(tok->seq_len, 0);
	assert_false(tok->has_eot);
	const rf_tar_opts *tar = rf_fmt_optset_for(set, &rf_tar_format);
	assert_non_null(tar);
	assert_false(tar->scan_only);
	assert_string_equal(tar->field_map, ""); /* fields as the members name them */
	assert_null(rf_fmt_optset_for(set, &rf_format_rfs));
	assert_null(rf_fmt_optset_for(NULL, &rf_format_llmc));
	rf_fmt_optset_free(set);

	/* each format's own struct, from the same keys */
	fake_cfg c = {.k = {{"seq_len", 128, NULL},
	                    {"token_dtype", 0, "uint32"},
	                    {"token_out", 0, "int64"},
	                    {"eot_token", 0, "50256"},
	                    {"columns", 0, "text,id"},
	                    {"tfrecord_raw", 1, NULL},
	                    {"tar_fields", 0, "jpg=image,cls=label"}}};
	assert_null(optset_err(&c, &set, &err));
	assert_true(c.asked > 0);
	const rf_tok_opts *mg = rf_fmt_optset_for(set, &rf_format_megatron);
	tok = rf_fmt_optset_for(set, &rf_format_llmc);
	assert_true(mg != NULL && tok != NULL && (const void *)mg != (const void *)tok);
	assert_int_equal(tok->seq_len, 128);
	assert_int_equal(tok->token_dtype, RF_TOK_U32);
	assert_int_equal(tok->token_out, RF_TOK_I64);
	assert_true(tok->has_eot);
	assert_int_equal(tok->eot_token, 50256);
	assert_memory_equal(mg, tok, sizeof(*tok));
	const rf_pq_opts *pq = rf_fmt_optset_for(set, &rf_parquet_format);
	assert_string_equal(pq->columns, "text,id");
	assert_int_equal(pq->tok.seq_len, 128);
	const rf_tfr_opts *tf = rf_fmt_optset_for(set, &rf_tfrecord_format);
	assert_true(tf->raw);
	assert_false(tf->scan_only);
	assert_string_equal(
	    ((const rf_tar_opts *)rf_fmt_optset_for(set, &rf_tar_format))->field_map,
	    "jpg=image,cls=label");
	rf_fmt_optset_free(set);

	/* each value checked by its format, with the message naming it */
	struct {
		fake_key bad[2];
		const char *msg;
	} cases[] = {
	    {{{"token_dtype", 0, "uint12"}}, "token_dtype \"uint12\": not a token type (uint8,"},
	    {{{"token_out", 0, "uint16"}, {"seq_len", 8, NULL}},
	     "token_out \"uint16\": int32 or int64"},
	    {{{"token_out", 0, "int32"}}, "token_out widens windows: it needs seq_len"},
	    {{{"eot_token", 0, "-1"}}, "eot_token \"-1\": not a token number"},
	    {{{"eot_token", 0, "5x"}}, "eot_token \"5x\": not a token number"},
	    {{{"seq_len", 1ull << 33, NULL}}, "seq_len 8589934592: too large"},
	    {{{"tar_fields", 0, "jpg"}}, "tar_fields \"jpg\": pair 1 is not FIELD=NAME"},
	    {{{"tar_fields", 0, "a=b,a=c"}}, "tar_fields: field a given twice"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_cfg b = {.k = {cases[i].bad[0], cases[i].bad[1]}};
		const char *msg = optset_err(&b, &set, &err);
		assert_non_null(msg);
		if (!strstr(msg, cases[i].msg))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, msg, cases[i].msg);
	}
	/* columns: at most RF_PQ_COLUMNS_BYTES - 1 bytes */
	char cols[RF_PQ_COLUMNS_BYTES + 1];
	memset(cols, 'a', sizeof(cols));
	cols[RF_PQ_COLUMNS_BYTES - 1] = '\0';
	fake_cfg ok = {.k = {{"columns", 0, cols}}};
	assert_null(optset_err(&ok, &set, &err));
	assert_int_equal(
	    strlen(((const rf_pq_opts *)rf_fmt_optset_for(set, &rf_parquet_format))->columns),
	    RF_PQ_COLUMNS_BYTES - 1);
	rf_fmt_optset_free(set);
	cols[RF_PQ_COLUMNS_BYTES - 1] = 'a';
	cols[RF_PQ_COLUMNS_BYTES] = '\0';
	assert_non_null(
	    strstr(optset_err(&ok, &set, &err), "columns: a list of at most 1023 bytes"));

	/* a key the config does not have is the format's error, named */
	fake_cfg none = {0};
	rf_fmt_config get = {.get = fake_get, .ctx = &none};
	uint64_t v = 7;
	assert_int_equal(rf_fmt_cfg_num(&get, "nosuch", &v, &err), -EINVAL);
	assert_non_null(
	    strstr(err.msg, "format option nosuch: the loader's config has no such key"));
	const char *str = "x";
	assert_int_equal(rf_fmt_cfg_str(NULL, "columns", &str, &err), 0);
	assert_null(str);
	fake_cfg empty = {.k = {{"columns", 0, ""}}};
	get.ctx = &empty;
	assert_int_equal(rf_fmt_cfg_str(&get, "columns", &str, &err), 0);
	assert_null(str); /* empty is unset */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_claims),
	    cmocka_unit_test(test_names_from_rows),
	    cmocka_unit_test(test_open_file_matches_reader),
	    cmocka_unit_test(test_rfs_steps),
	    cmocka_unit_test(test_rfs_not_a_shard),
	    cmocka_unit_test(test_open_file_errors),
	    cmocka_unit_test(test_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
