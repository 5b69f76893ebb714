/* test_mix.c - the mixture's source schedule (engine/mix.c): weights parsed
 * exactly, every prefix within 1 sample of each source's share (property
 * test over random weights, extreme ones and 10 sources, on a million
 * samples), random access equal to the sequential walk from any point (what
 * rank slices and resumes start from), weight changes that keep delivered
 * samples and hold the bound from the change, and the refusals. */
#include "mix.h"
#include "mix_file.h"
#include "rng.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static uint64_t parse_ok(const char *s)
{
	uint64_t v = 0;
	rf_error err = {0};
	assert_int_equal(rf_mix_weight_parse(s, "test", &v, &err), 0);
	return v;
}

static void parse_bad(const char *s, const char *word)
{
	uint64_t v = 0;
	rf_error err = {0};
	assert_true(rf_mix_weight_parse(s, "mix.txt line 3", &v, &err) < 0);
	assert_non_null(strstr(err.msg, "mix.txt line 3"));
	assert_non_null(strstr(err.msg, word));
}

static void test_weight_parse(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("0.6"), 600000);
	assert_int_equal(parse_ok("3"), 3000000);
	assert_int_equal(parse_ok(".5"), 500000);
	assert_int_equal(parse_ok("0.000001"), 1);
	assert_int_equal(parse_ok("0.25000000"), 250000); /* zeros past the 6th place */
	assert_int_equal(parse_ok("0"), 0);
	parse_bad("", "empty");
	parse_bad("1e-3", "plain decimal");
	parse_bad("-1", "plain decimal");
	parse_bad("0.5x", "plain decimal");
	parse_bad(".", "plain decimal");
	parse_bad("0.0000001", "6 decimal places");
	parse_bad("99999999999999", "larger than");
}

/* Walks n samples from 0 with a cursor and checks every prefix:
 * |c_k * T - n * W_k| < T for every source (the bound, in integers). */
static void check_prefixes(const rf_mix *m, uint64_t n)
{
	uint32_t k = rf_mix_sources(m);
	uint64_t *count = calloc(k, sizeof(uint64_t));
	uint32_t *local = calloc(k, sizeof(uint32_t)), *w = calloc(k, sizeof(uint32_t));
	assert_non_null(count);
	assert_non_null(local);
	assert_non_null(w);
	uint32_t t = rf_mix_weights(m, 0, w);
	rf_mix_cursor c;
	rf_mix_cursor_init(&c, m, 0, count, local);
	for (uint64_t i = 1; i <= n; i++) {
		rf_mix_cursor_next(&c);
		for (uint32_t s = 0; s < k; s++) {
			__int128 d = (__int128)count[s] * t - (__int128)i * w[s];
			if (d <= -(__int128)t || d >= (__int128)t)
				fail_msg("prefix %llu: source %u has %llu, share %.3f",
				         (unsigned long long)i, s, (unsigned long long)count[s],
				         (double)i * w[s] / t);
		}
	}
	free(count);
	free(local);
	free(w);
}

static rf_mix *mix_of(uint32_t k, const uint64_t *w)
{
	rf_mix *m = NULL;
	rf_error err = {0};
	assert_int_equal(rf_mix_new(&m, k, w, 4, &err), 0);
	assert_true(rf_mix_bytes(m) <= rf_mix_bytes_for(k, 4));
	return m;
}

static void test_prefix_bound_million(void **state)
{
	(void)state;
	/* 10 sources, weights with 6 decimal places: a long period. */
	uint64_t w[10];
	rf_rng r;
	rf_rng_init(&r, 7, 1, 2, 3, 4);
	for (int i = 0; i < 10; i++)
		w[i] = 1 + rf_rng_below(&r, 999999);
	rf_mix *m = mix_of(10, w);
	check_prefixes(m, 1000000);
	rf_mix_free(m);

	/* The extreme pair: 0.999 / 0.001. */
	uint64_t x[2] = {parse_ok("0.999"), parse_ok("0.001")};
	m = mix_of(2, x);
	check_prefixes(m, 1000000);
	uint64_t c[2];
	rf_mix_counts(m, 1000000, c);
	assert_int_equal(c[1], 1000);
	assert_int_equal(c[0], 999000);
	rf_mix_free(m);
}

static void test_prefix_bound_random(void **state)
{
	(void)state;
	rf_rng r;
	rf_rng_init(&r, 11, 0, 0, 0, 0);
	for (int round = 0; round < 60; round++) {
		uint32_t k = 1 + (uint32_t)rf_rng_below(&r, 12);
		uint64_t w[12];
		bool any = false;
		for (uint32_t i = 0; i < k; i++) {
			/* some zeros, some tiny, some large */
			uint64_t kind = rf_rng_below(&r, 4);
			w[i] = kind == 0   ? 0
			       : kind == 1 ? 1 + rf_rng_below(&r, 10)
			                   : rf_rng_below(&r, 100000);
			any |= w[i] > 0;
		}
		if (!any)
			w[0] = 1;
		rf_mix *m = mix_of(k, w);
		check_prefixes(m, 50000);
		/* a source of weight 0 never appears */
		uint64_t c[12];
		rf_mix_counts(m, 50000, c);
		for (uint32_t i = 0; i < k; i++)
			if (w[i] == 0)
				assert_int_equal(c[i], 0);
		rf_mix_free(m);
	}
}

/* Random access and a cursor started anywhere agree with the walk from 0:
 * what rank slices (start r * S) and resumes need. */
static void test_random_access(void **state)
{
	(void)state;
	uint64_t w[5] = {600000, 200000, 100000, 70000, 30001};
	rf_mix *m = mix_of(5, w);
	enum { N = 300000 };
	uint8_t *src = malloc(N);
	uint64_t count[5], count2[5], ord[5] = {0};
	uint32_t local[5], local2[5];
	assert_non_null(src);
	rf_mix_cursor c;
	rf_mix_cursor_init(&c, m, 0, count, local);
	for (uint64_t i = 0; i < N; i++)
		src[i] = (uint8_t)rf_mix_cursor_next(&c);
	rf_rng r;
	rf_rng_init(&r, 3, 0, 0, 0, 0);
	for (int t = 0; t < 200; t++) {
		uint64_t n = rf_rng_below(&r, N - 1000);
		uint64_t want[5] = {0};
		for (uint64_t i = 0; i < n; i++)
			want[src[i]]++;
		rf_mix_counts(m, n, count2);
		assert_memory_equal(want, count2, sizeof(want));
		uint64_t o = 0;
		assert_int_equal(rf_mix_source(m, n, &o), src[n]);
		assert_int_equal(o, want[src[n]]);
		/* the inverse: source src[n]'s o-th sample is sample n */
		assert_int_equal(rf_mix_position(m, src[n], o), n);
		rf_mix_cursor c2;
		rf_mix_cursor_init(&c2, m, n, count2, local2);
		for (uint64_t i = n; i < n + 1000; i++)
			assert_int_equal(rf_mix_cursor_next(&c2), src[i]);
	}
	/* Equal slices over world sizes 1..8: the union is the stream. */
	for (uint32_t world = 1; world <= 8; world++) {
		uint64_t slice = N / world;
		memset(ord, 0, sizeof(ord));
		for (uint32_t rank = 0; rank < world; rank++) {
			rf_mix_cursor cr;
			rf_mix_cursor_init(&cr, m, rank * slice, count2, local2);
			for (uint64_t i = 0; i < slice; i++)
				assert_int_equal(rf_mix_cursor_next(&cr), src[rank * slice + i]);
		}
	}
	free(src);
	rf_mix_free(m);
}

static void test_period_exact(void **state)
{
	(void)state;
	uint64_t w[4] = {parse_ok("0.6"), parse_ok("0.2"), parse_ok("0.1"), parse_ok("0.1")};
	rf_mix *m = mix_of(4, w);
	uint32_t iw[4];
	assert_int_equal(rf_mix_weights(m, 0, iw), 10);
	assert_int_equal(iw[0], 6);
	assert_int_equal(iw[3], 1);
	uint64_t c[4];
	rf_mix_counts(m, 1000, c);
	assert_int_equal(c[0], 600);
	assert_int_equal(c[1], 200);
	assert_int_equal(c[2], 100);
	assert_int_equal(c[3], 100);
	rf_mix_free(m);

	/* A period past the limit is rounded: effective weights within 1/period. */
	uint32_t k = 3000;
	uint64_t *big = malloc(k * sizeof(uint64_t));
	uint32_t *eff = malloc(k * sizeof(uint32_t));
	assert_non_null(big);
	assert_non_null(eff);
	uint64_t sum = 0;
	for (uint32_t i = 0; i < k; i++)
		sum += big[i] = 1000 + (i * 7919) % 9973;
	rf_mix *mb = NULL;
	rf_error err = {0};
	assert_int_equal(rf_mix_new(&mb, k, big, 1, &err), 0);
	uint32_t t = rf_mix_weights(mb, 0, eff);
	assert_true(t <= rf_mix_period_max(k));
	for (uint32_t i = 0; i < k; i++) {
		double want = (double)big[i] / (double)sum, got = (double)eff[i] / t;
		assert_true(got - want < 1.0 / t && want - got < 1.0 / t);
	}
	rf_mix_free(mb);
	free(big);
	free(eff);
}

static void test_reweight(void **state)
{
	(void)state;
	uint64_t w[3] = {500000, 300000, 200000};
	rf_mix *m = mix_of(3, w);
	enum { N = 40000, S = 12345 };
	uint8_t before[N];
	uint64_t count[3], cs[3];
	uint32_t local[3];
	rf_mix_cursor c;
	rf_mix_cursor_init(&c, m, 0, count, local);
	for (int i = 0; i < N; i++)
		before[i] = (uint8_t)rf_mix_cursor_next(&c);
	uint64_t nw[3] = {100000, 100000, 800000}; /* annealing: the third source up */
	rf_error err = {0};
	assert_int_equal(rf_mix_reweight(m, S, nw, &err), 0);
	rf_mix_counts(m, S, cs);
	rf_mix_cursor_init(&c, m, 0, count, local);
	for (int i = 0; i < N; i++) {
		uint32_t src = rf_mix_cursor_next(&c);
		if (i < S) {
			assert_int_equal(src, before[i]); /* delivered samples stay delivered */
			continue;
		}
		uint64_t n = (uint64_t)i + 1 - S; /* samples since the change */
		for (int k = 0; k < 3; k++) {
			int64_t d =
			    (int64_t)((count[k] - cs[k]) * 10) - (int64_t)(n * (nw[k] / 100000));
			assert_true(d > -10 && d < 10);
		}
		uint64_t o;
		assert_int_equal(rf_mix_source(m, (uint64_t)i, &o), src);
		assert_int_equal(o, count[src] - 1);
		assert_int_equal(rf_mix_position(m, src, o), (uint64_t)i);
	}
	/* A cursor started after the change agrees too. */
	uint64_t c2[3];
	uint32_t l2[3];
	rf_mix_cursor cc;
	rf_mix_cursor_init(&cc, m, S - 3, c2, l2);
	rf_mix_cursor_init(&c, m, 0, count, local);
	for (int i = 0; i < S - 3; i++)
		rf_mix_cursor_next(&c);
	for (int i = 0; i < 100; i++)
		assert_int_equal(rf_mix_cursor_next(&cc), rf_mix_cursor_next(&c));
	/* A change at the same sample replaces the last. */
	uint64_t nw2[3] = {0, 0, 1};
	assert_int_equal(rf_mix_reweight(m, S, nw2, &err), 0);
	assert_int_equal(rf_mix_source(m, S + 10, NULL), 2);
	/* sources 0 and 1 have no samples past their counts at S */
	rf_mix_counts(m, S, cs);
	assert_int_equal(rf_mix_position(m, 0, cs[0]), UINT64_MAX);
	assert_int_equal(rf_mix_position(m, 2, cs[2] + 5), S + 5);
	/* Before the last change: refused. */
	assert_true(rf_mix_reweight(m, S - 1, nw, &err) < 0);
	assert_non_null(strstr(err.msg, "before the last change"));
	rf_mix_free(m);
}

static void test_refusals(void **state)
{
	(void)state;
	rf_mix *m = NULL;
	rf_error err = {0};
	uint64_t zero[3] = {0, 0, 0};
	assert_int_equal(rf_mix_new(&m, 3, zero, 1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "every weight is 0"));
	assert_null(m);
	uint64_t one = 1;
	assert_int_equal(rf_mix_new(&m, 0, &one, 1, &err), -EINVAL);
	assert_int_equal(rf_mix_new(&m, 1, &one, 0, &err), -EINVAL);
	/* a share below 1/period with many sources */
	uint32_t k = 4000;
	uint64_t *w = calloc(k, sizeof(uint64_t));
	assert_non_null(w);
	for (uint32_t i = 0; i < k; i++)
		w[i] = RF_MIX_WEIGHT_MAX / 2;
	w[k - 1] = 1;
	assert_int_equal(rf_mix_new(&m, k, w, 1, &err), -ERANGE);
	assert_non_null(strstr(err.msg, "source 3999"));
	free(w);
	/* more weight sets than room */
	uint64_t w2[2] = {1, 1};
	assert_int_equal(rf_mix_new(&m, 2, w2, 2, &err), 0);
	assert_int_equal(rf_mix_reweight(m, 10, w2, &err), 0);
	assert_int_equal(rf_mix_reweight(m, 20, w2, &err), -E2BIG);
	rf_mix_free(m);
}

static rf_mix_file *mf_ok(const char *text, const char *base)
{
	rf_mix_file *f = NULL;
	rf_error err = {0};
	int rc = rf_mix_file_parse(text, strlen(text), base, "m.mix", &f, &err);
	if (rc < 0)
		fail_msg("%s", err.msg);
	return f;
}

static void mf_bad(const char *text, const char *base, const char *word)
{
	rf_mix_file *f = NULL;
	rf_error err = {0};
	assert_true(rf_mix_file_parse(text, strlen(text), base, "m.mix", &f, &err) < 0);
	assert_null(f);
	if (!strstr(err.msg, word) || !strstr(err.msg, "m.mix"))
		fail_msg("'%s' does not say '%s'", err.msg, word);
}

static void test_mix_file(void **state)
{
	(void)state;
	const char *t = "# ringfeed mixture v1\n0.6\ts3://b/web/\n# c\n\n"
	                "0.4\tcode/m.rfm\tcolumns=text\tseq_len=8\r\n";
	assert_true(rf_mix_file_is(t, strlen(t)));
	rf_mix_file *f = mf_ok(t, "/data/mix");
	assert_int_equal(f->count, 2);
	assert_string_equal(f->src[0].source, "s3://b/web/");
	assert_int_equal(f->src[0].weight, 600000);
	assert_string_equal(f->src[1].source, "/data/mix/code/m.rfm");
	assert_int_equal(f->src[1].line, 5);
	assert_int_equal(f->src[1].noptions, 2);
	assert_string_equal(f->src[1].option[1].key, "seq_len");
	assert_string_equal(f->src[1].option[1].value, "8");
	rf_mix_file_free(f);

	const char *j = "{\"mixture\": 1, \"sources\": [{\"source\": \"a/\", \"weight\": 0.7},"
	                "{\"source\": \"b\", \"weight\": \"0.3\", \"options\": {\"k\": \"v\"}}]}";
	assert_true(rf_mix_file_is(j, strlen(j)));
	f = mf_ok(j, "https://h/x/");
	assert_int_equal(f->count, 2);
	assert_string_equal(f->src[0].source, "https://h/x/a/");
	assert_int_equal(f->src[0].weight, 700000);
	assert_int_equal(f->src[1].weight, 300000);
	rf_mix_file_free(f);

	mf_bad("# ringfeed manifest v1\n", NULL, "line 1");
	mf_bad("# ringfeed mixture v1\n", NULL, "no sources");
	mf_bad("# ringfeed mixture v1\n0\ta\n0\tb\n", NULL, "every weight is 0");
	mf_bad("# ringfeed mixture v1\n0.5 a\n", NULL, "line 2: expected WEIGHT<TAB>");
	mf_bad("# ringfeed mixture v1\n1e-3\ta\n", NULL, "line 2");
	mf_bad("# ringfeed mixture v1\n1\ta\tnoequals\n", NULL, "KEY=VALUE");
	mf_bad("# ringfeed mixture v1\n1\ta\tk=1\tk=2\n", NULL, "given twice");
	mf_bad("# ringfeed mixture v1\n1\ta\tK=1\n", NULL, "option name");
	mf_bad("# ringfeed mixture v1\n1\t\n", NULL, "empty");
	/* a remote mixture file may not name this machine's files */
	mf_bad("# ringfeed mixture v1\n1\tfile:///etc/\n", "https://h/x/", "may only name");
	mf_bad("# ringfeed mixture v1\n1\t/etc/passwd\n", "s3://b/m/", "may only name");
	mf_bad("{\"mixture\": 2, \"sources\": []}", NULL, "expected");
	mf_bad("{\"mixture\": 1, \"sources\": [{\"source\": \"a\", \"weight\": 1e-9}]}", NULL,
	       "source 1: weight");
	mf_bad("{\"mixture\": 1, \"sources\": [{\"weight\": 1}]}", NULL, "needs");
	mf_bad("{\"mixture\": 1, \"sources\": [{\"source\": \"a\", \"weight\": 1,"
	       " \"options\": {\"k\": 3}}]}",
	       NULL, "not a string");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_weight_parse),
	    cmocka_unit_test(test_prefix_bound_million),
	    cmocka_unit_test(test_prefix_bound_random),
	    cmocka_unit_test(test_random_access),
	    cmocka_unit_test(test_period_exact),
	    cmocka_unit_test(test_reweight),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_mix_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
