/* test_config.c - rf_config: strict values (unknown key, bad number, out of
 * range, booleans, sizes), brace ranges, the keys list, resume states, the
 * formats' options read through the config's getter, a mixture source's
 * own options over the loader's. */
#include "config.h"
#include "parquet.h"
#include "state.h"
#include "tar.h"
#include "testutil.h"
#include "tfrecord.h"
#include "util.h"

static void test_values(void **state)
{
	(void)state;
	rf_config *c = rf_config_new();
	rf_error err = {0};
	assert_int_equal(rf_cfg(c, RF_CFG_depth), 0); /* automatic */
	assert_int_equal(rf_cfg(c, RF_CFG_cover), 0);
	assert_int_equal(rf_cfg(c, RF_CFG_tune_interval), 200000000);
	assert_int_equal(rf_cfg(c, RF_CFG_budget), 1ull << 30);
	assert_int_equal(rf_cfg(c, RF_CFG_shuffle), 1);
	assert_int_equal(rf_config_set(c, "budget", "256MiB", &err), 0);
	assert_int_equal(rf_cfg(c, RF_CFG_budget), 256ull << 20);
	assert_int_equal(rf_config_set(c, "depth", "64", &err), 0);
	assert_int_equal(rf_cfg(c, RF_CFG_depth), 64);
	assert_int_equal(rf_config_set(c, "shuffle", "off", &err), 0);
	assert_int_equal(rf_cfg(c, RF_CFG_shuffle), 0);
	assert_int_equal(rf_config_set(c, "seed", "18446744073709551615", &err), 0);
	assert_true(rf_cfg(c, RF_CFG_seed) == UINT64_MAX);
	assert_int_equal(rf_config_set(c, "seed", "18446744073709551616", &err), -ERANGE);
	assert_int_equal(rf_config_set(c, "depth", "4097", &err), -ERANGE);
	assert_non_null(strstr(err.msg, "depth"));
	assert_non_null(strstr(err.msg, "[0, 4096]"));
	/* cover / tune_interval: seconds or a duration with a unit */
	assert_int_equal(rf_config_set(c, "cover", "2.5", &err), 0);
	assert_int_equal(rf_cfg(c, RF_CFG_cover), 2500000000ull);
	assert_int_equal(rf_config_set(c, "cover", "500ms", &err), 0);
	assert_int_equal(rf_cfg(c, RF_CFG_cover), 500000000ull);
	assert_int_equal(rf_config_set(c, "cover", "0", &err), 0);
	assert_int_equal(rf_cfg(c, RF_CFG_cover), 0);
	const char *bad_cover[] = {"-1", "abc", "2h", "1e3", "", "3601", " 1", "1.5.2"};
	for (size_t i = 0; i < RF_ARRAY_LEN(bad_cover); i++) {
		assert_true(rf_config_set(c, "cover", bad_cover[i], &err) < 0);
		assert_non_null(strstr(err.msg, "cover"));
	}
	assert_int_equal(rf_config_set(c, "tune_interval", "1ms", &err), -ERANGE);
	assert_int_equal(rf_config_set(c, "tune_interval", "50ms", &err), 0);
	assert_int_equal(rf_config_set(c, "depth", "8x", &err), -EINVAL);
	assert_int_equal(rf_config_set(c, "depth", "-1", &err), -EINVAL);
	assert_int_equal(rf_config_set(c, "depth", "", &err), -EINVAL);
	assert_int_equal(rf_config_set(c, "depth", " 8", &err), -EINVAL);
	/* every refusal names its option: sizes and the host budget's name
	 * too (they said only "bad size '8MiB9'", "host budget name ...") */
	const char *bad_size[] = {"8MiB9", "", "-1", "99999999999TiB", "1.5"};
	for (size_t i = 0; i < RF_ARRAY_LEN(bad_size); i++) {
		assert_true(rf_config_set(c, "request_size", bad_size[i], &err) < 0);
		assert_non_null(strstr(err.msg, "option request_size: "));
	}
	assert_true(rf_config_set(c, "host_budget_name", ".hidden", &err) < 0);
	assert_non_null(strstr(err.msg, "option host_budget_name: "));
	assert_int_equal(rf_cfg(c, RF_CFG_depth), 64);             /* unchanged by the failures */
	assert_int_equal(rf_config_set(c, "depth", "0", &err), 0); /* back to automatic */
	assert_int_equal(rf_config_set(c, "depth", "64", &err), 0);
	assert_int_equal(rf_config_set(c, "truncate", "maybe", &err), -EINVAL);
	assert_int_equal(rf_config_set(c, "budget", "12XB", &err), -EINVAL);
	assert_int_equal(rf_config_set(c, "budget", "1KiB", &err), -ERANGE);
	assert_int_equal(rf_config_set(c, "nope", "1", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown option 'nope'"));
	assert_int_equal(rf_config_set(c, "ca_file", "/etc/ssl/x.pem", &err), 0);
	assert_string_equal(rf_cfg_str(c, RF_CFG_ca_file), "/etc/ssl/x.pem");
	assert_int_equal(rf_config_set(NULL, "depth", "1", &err), -EINVAL);
	/* index_cache: the default directory, off, or an absolute path */
	assert_string_equal(rf_config_index_cache_dir(c), "");
	assert_int_equal(rf_cfg(c, RF_CFG_index_cache_bytes), 512ull << 20);
	assert_int_equal(rf_config_set(c, "index_cache", "off", &err), 0);
	assert_null(rf_config_index_cache_dir(c));
	assert_int_equal(rf_config_set(c, "index_cache", "/var/cache/rf", &err), 0);
	assert_string_equal(rf_config_index_cache_dir(c), "/var/cache/rf");
	assert_int_equal(rf_config_set(c, "index_cache", "cache/rf", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "index_cache"));
	assert_string_equal(rf_config_index_cache_dir(c), "/var/cache/rf"); /* unchanged */
	assert_int_equal(rf_config_set(c, "index_cache_bytes", "64MiB", &err), 0);
	assert_int_equal(rf_cfg(c, RF_CFG_index_cache_bytes), 64ull << 20);
	assert_int_equal(rf_config_set(c, "index_cache_bytes", "1KiB", &err), -ERANGE);
	/* batch_bytes without batch: the record cap becomes 65536. */
	rf_collate_params cp;
	assert_int_equal(rf_config_set(c, "batch_bytes", "1MiB", &err), 0);
	rf_config_collate_params(c, &cp);
	assert_int_equal(cp.batch_records, 65536);
	assert_int_equal(rf_config_set(c, "batch", "10", &err), 0);
	rf_config_collate_params(c, &cp);
	assert_int_equal(cp.batch_records, 10);
	rf_fetch_options fo;
	assert_int_equal(rf_config_set(c, "retries", "7", &err), 0);
	rf_config_fetch_options(c, &fo);
	assert_int_equal(fo.retries, 7);
	assert_string_equal(fo.ca_file, "/etc/ssl/x.pem");
	assert_null(fo.inject);
	rf_config *d = rf_config_dup(c);
	assert_int_equal(rf_cfg(d, RF_CFG_retries), 7);
	assert_string_equal(rf_cfg_str(d, RF_CFG_ca_file), "/etc/ssl/x.pem");
	rf_config_free(d);
	rf_config_free(c);
}

static void test_urls(void **state)
{
	(void)state;
	rf_config *c = rf_config_new();
	rf_error err = {0};
	assert_int_equal(rf_config_add_url(c, "/d/shard-{000..011}.rfs", &err), 0);
	assert_int_equal(c->nurls, 12);
	assert_string_equal(c->urls[0], "/d/shard-000.rfs");
	assert_string_equal(c->urls[11], "/d/shard-011.rfs");
	assert_int_equal(rf_config_add_url(c, "s3://b/{1..2}/x{8..9}", &err), 0);
	assert_int_equal(c->nurls, 16);
	assert_string_equal(c->urls[12], "s3://b/1/x8");
	assert_string_equal(c->urls[15], "s3://b/2/x9");
	assert_int_equal(rf_config_add_url(c, "x{..1}", &err), -EINVAL);
	assert_true(rf_config_add_url(c, "x{0..99999999}", &err) < 0); /* over the cap */
	assert_int_equal(rf_config_add_url(c, "", &err), -EINVAL);
	rf_config_free(c);
}

static void test_keys_and_resume(void **state)
{
	(void)state;
	const char *k = rf_config_keys();
	size_t n = 0;
	bool saw_budget = false;
	while (*k) {
		const char *help = k + strlen(k) + 1;
		assert_true(*help);
		saw_budget |= !strcmp(k, "budget");
		n++;
		k = help + strlen(help) + 1;
	}
	assert_int_equal(n, RF_CFG_COUNT);
	assert_true(saw_budget);
	rf_config *c = rf_config_new();
	rf_error err = {0};
	rf_position p = {
	    .dataset_hash = 42, .world = 1, .window = 1, .epoch = 3, .record = 100, .batch = 7};
	uint8_t buf[RF_STATE_BYTES_MIN];
	assert_int_equal(rf_state_encode(&p, buf, sizeof(buf)), RF_STATE_BYTES_MIN);
	assert_int_equal(rf_config_set_resume(c, buf, sizeof(buf), &err), 0);
	assert_true(c->has_resume);
	assert_int_equal(c->resume.record, 100);
	buf[20] ^= 1;
	assert_true(rf_config_set_resume(c, buf, sizeof(buf), &err) < 0);
	assert_int_equal(rf_config_set_resume(c, buf, 3, &err) < 0, 1);
	rf_config_free(c);
}

extern const rf_format rf_parquet_format;

/* The formats read their options through the config's getter: every key
 * they ask for is one of the table's (the defaults parse), values arrive as
 * set, and a bad one fails with the format's message. */
static void test_format_options(void **state)
{
	(void)state;
	rf_config *c = rf_config_new();
	rf_error err = {0};
	rf_fmt_optset *set = NULL;
	assert_int_equal(rf_config_format_options(c, &set, &err), 0);
	assert_int_equal(((const rf_tok_opts *)rf_fmt_optset_for(set, &rf_format_llmc))->seq_len,
	                 0);
	rf_fmt_optset_free(set);
	assert_int_equal(rf_config_set(c, "seq_len", "2048", &err), 0);
	assert_int_equal(rf_config_set(c, "token_out", "int32", &err), 0);
	assert_int_equal(rf_config_set(c, "columns", "input_ids", &err), 0);
	assert_int_equal(rf_config_set(c, "tfrecord_raw", "yes", &err), 0);
	assert_int_equal(rf_config_format_options(c, &set, &err), 0);
	const rf_tok_opts *mg = rf_fmt_optset_for(set, &rf_format_megatron);
	assert_int_equal(mg->seq_len, 2048);
	assert_int_equal(mg->token_out, RF_TOK_I32);
	assert_int_equal(mg->token_dtype, 0);
	assert_false(mg->has_eot);
	const rf_pq_opts *pq = rf_fmt_optset_for(set, &rf_parquet_format);
	assert_string_equal(pq->columns, "input_ids");
	assert_int_equal(pq->tok.seq_len, 2048);
	assert_true(((const rf_tfr_opts *)rf_fmt_optset_for(set, &rf_tfrecord_format))->raw);
	rf_fmt_optset_free(set);
	assert_int_equal(rf_config_set(c, "seq_len", "0", &err), 0);
	set = NULL;
	assert_int_equal(rf_config_format_options(c, &set, &err), -EINVAL);
	assert_null(set);
	assert_string_equal(err.msg, "token_out widens windows: it needs seq_len");
	assert_int_equal(rf_config_set(c, "tar_fields", "text=txt,label=cls", &err), 0);
	assert_int_equal(rf_config_format_options(c, &set, &err), -EINVAL); /* token_out still */
	assert_int_equal(rf_config_set(c, "seq_len", "8", &err), 0);
	assert_int_equal(rf_config_format_options(c, &set, &err), 0);
	assert_string_equal(
	    ((const rf_tar_opts *)rf_fmt_optset_for(set, &rf_tar_format))->field_map,
	    "text=txt,label=cls");
	rf_fmt_optset_free(set);
	static const char *const bad_maps[] = {"text",    "=txt",  "text=", "Text=txt",
	                                       "a=b,a=c", "a b=c", "a=b=c", "a=b,,c=d"};
	for (size_t i = 0; i < sizeof(bad_maps) / sizeof(bad_maps[0]); i++) {
		assert_int_equal(rf_config_set(c, "tar_fields", bad_maps[i], &err), 0);
		set = NULL;
		assert_int_equal(rf_config_format_options(c, &set, &err), -EINVAL);
		assert_null(set);
		assert_non_null(strstr(err.msg, "tar_fields"));
	}
	assert_int_equal(rf_config_set(c, "tar_fields", "", &err), 0);
	assert_int_equal(rf_config_set(c, "seq_len", "0", &err), 0);
	assert_int_equal(rf_config_set(c, "token_out", "", &err), 0); /* empty: unset */
	assert_int_equal(rf_config_set(c, "eot_token", "0x10", &err), 0);
	assert_int_equal(rf_config_format_options(c, &set, &err), -EINVAL);
	assert_string_equal(err.msg, "eot_token \"0x10\": not a token number");
	rf_config_free(c);
}

/* A mixture source's own options: only the formats' keys, checked as the
 * loader's, read through the getter over the loader's, kept by a dup. */
static void test_source_options(void **state)
{
	(void)state;
	rf_config *c = rf_config_new();
	rf_error err = {0};
	assert_int_equal(rf_config_source_option(c, "seq_len", "8", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no mixture source"));
	assert_int_equal(rf_config_set(c, "seq_len", "2048", &err), 0);
	assert_int_equal(rf_config_set(c, "columns", "text", &err), 0);
	assert_int_equal(rf_config_add_source(c, "0.5", &err), 0);
	assert_int_equal(rf_config_add_url(c, "a.bin", &err), 0);
	assert_int_equal(rf_config_add_source(c, "0.5", &err), 0);
	assert_int_equal(rf_config_add_url(c, "b.bin", &err), 0);
	assert_int_equal(rf_config_source_option(c, "token_dtype", "uint32", &err), 0);
	assert_int_equal(rf_config_source_option(c, "token_out", "int64", &err), 0);
	assert_int_equal(rf_config_source_option(c, "token_out", "int32", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "given twice"));
	assert_int_equal(rf_config_source_option(c, "budget", "1GiB", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "option budget applies to the whole loader"));
	assert_non_null(strstr(err.msg, "token_dtype"));
	assert_int_equal(rf_config_source_option(c, "shuffle_window", "8", &err), -EINVAL);
	assert_int_equal(rf_config_source_option(c, "nope", "1", &err), -EINVAL);
	assert_int_equal(rf_config_source_option(c, "seq_len", "x", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "seq_len"));
	rf_config *d = rf_config_dup(c);
	assert_non_null(d);
	rf_config_free(c);
	rf_fmt_optset *set = NULL;
	assert_int_equal(rf_config_source_format_options(d, 0, &set, &err), 0);
	assert_null(set); /* source 1 sets nothing: the loader's apply */
	assert_int_equal(rf_config_source_format_options(d, 1, &set, &err), 0);
	const rf_tok_opts *t = rf_fmt_optset_for(set, &rf_format_llmc);
	assert_int_equal(t->token_dtype, RF_TOK_U32);
	assert_int_equal(t->token_out, RF_TOK_I64);
	assert_int_equal(t->seq_len, 2048); /* the loader's, under the source's */
	const rf_pq_opts *pq = rf_fmt_optset_for(set, &rf_parquet_format);
	assert_string_equal(pq->columns, "text");
	rf_fmt_optset_free(set);
	assert_int_equal(rf_config_format_options(d, &set, &err), 0); /* the loader's own */
	t = rf_fmt_optset_for(set, &rf_format_llmc);
	assert_int_equal(t->token_dtype, 0);
	assert_int_equal(t->token_out, 0);
	rf_fmt_optset_free(set);
	rf_config_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values),          cmocka_unit_test(test_urls),
	    cmocka_unit_test(test_keys_and_resume), cmocka_unit_test(test_format_options),
	    cmocka_unit_test(test_source_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
