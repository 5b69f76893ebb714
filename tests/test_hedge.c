/* test_hedge.c - the hedging policy: no hedge before enough reads, the
 * threshold is the window's p95 with a floor, the token bucket keeps hedges
 * near 5% of reads (bursts of at most 5), and a retry or error quiets the
 * store for a second. */
#include "hedge.h"
#include "testutil.h"

#include <string.h>

#define MS 1000000ull

static void test_threshold(void **state)
{
	(void)state;
	rf_hedge_store s;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < RF_HEDGE_SAMPLES_MIN - 1; i++)
		rf_hedge_note(&s, 200 * MS, 50 * MS);
	assert_int_equal(rf_hedge_threshold_ns(&s), 0); /* too few reads */
	rf_hedge_note(&s, 200 * MS, 50 * MS);
	assert_int_equal(rf_hedge_threshold_ns(&s), 200 * MS);
	/* 100 reads: 95 of 10 ms, 5 of 900 ms -> p95 is a slow one's or the
	 * fast ones', never below the floor */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 100; i++)
		rf_hedge_note(&s, (i % 20 == 0 ? 900 : 100) * MS, 50 * MS);
	uint64_t t = rf_hedge_threshold_ns(&s);
	assert_true(t >= 100 * MS && t <= 900 * MS);
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 100; i++)
		rf_hedge_note(&s, 1 * MS, 50 * MS);
	assert_int_equal(rf_hedge_threshold_ns(&s), 50 * MS); /* the floor */
	/* the window is bounded: old slow reads age out */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < RF_HEDGE_WINDOW; i++)
		rf_hedge_note(&s, 5000 * MS, 50 * MS);
	for (int i = 0; i < RF_HEDGE_WINDOW; i++)
		rf_hedge_note(&s, 60 * MS, 50 * MS);
	assert_int_equal(rf_hedge_threshold_ns(&s), 60 * MS);
}

static void test_tokens(void **state)
{
	(void)state;
	rf_hedge_store s;
	memset(&s, 0, sizeof(s));
	uint64_t now = 10 * 1000 * MS;
	int hedges = 0;
	for (int i = 0; i < 1000; i++) {
		rf_hedge_note(&s, 10 * MS, 50 * MS);
		hedges += rf_hedge_take(&s, 0, now); /* every read asks: at most ~5% */
	}
	assert_true(hedges >= 45 && hedges <= 50);
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 1000; i++)
		rf_hedge_note(&s, 10 * MS, 50 * MS);
	hedges = 0;
	for (int i = 0; i < 100; i++)
		hedges += rf_hedge_take(&s, 0, now);
	assert_int_equal(hedges, (int)RF_HEDGE_TOKENS_MAX); /* a bounded burst */
}

static void test_quiet(void **state)
{
	(void)state;
	rf_hedge_store s;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 200; i++)
		rf_hedge_note(&s, 10 * MS, 50 * MS);
	uint64_t now = 10 * 1000 * MS;
	assert_true(rf_hedge_take(&s, 0, now));
	assert_false(rf_hedge_take(&s, 3, now + 1)); /* a retry or error just now */
	assert_false(rf_hedge_take(&s, 3, now + 500 * MS));
	assert_true(rf_hedge_take(&s, 3, now + 1001 * MS)); /* quiet for a second */
	assert_false(rf_hedge_take(&s, 4, now + 1002 * MS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_threshold),
	    cmocka_unit_test(test_tokens),
	    cmocka_unit_test(test_quiet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
