/* test_budget.c - reservations, headroom, peaks, and concurrent use. */
#include "budget.h"
#include "testutil.h"

#include <pthread.h>

static void test_reserve_release(void **state)
{
	(void)state;
	rf_budget b;
	rf_budget_init(&b, 1000);
	assert_int_equal(rf_budget_reserve(&b, RF_MEM_FETCH, 600, 0), 0);
	assert_int_equal(rf_budget_reserve(&b, RF_MEM_DECODED, 401, 0), -ENOBUFS);
	assert_int_equal(rf_budget_reserve(&b, RF_MEM_DECODED, 300, 101), -ENOBUFS);
	assert_int_equal(rf_budget_reserve(&b, RF_MEM_DECODED, 300, 100), 0);
	assert_int_equal(rf_budget_used(&b), 900);
	assert_int_equal(rf_budget_reserve(&b, RF_MEM_BATCH, UINT64_MAX, 0), -ENOBUFS);
	assert_int_equal(rf_budget_reserve(&b, RF_MEM_BATCH, 1, UINT64_MAX), -ENOBUFS);
	rf_budget_release(&b, RF_MEM_FETCH, 600);
	assert_int_equal(rf_budget_reserve(&b, RF_MEM_BATCH, 700, 0), 0);
	rf_budget_snapshot s;
	rf_budget_snapshot_get(&b, &s);
	assert_int_equal(s.used_bytes, 1000);
	assert_int_equal(s.cur_bytes[RF_MEM_FETCH], 0);
	assert_int_equal(s.peak_bytes[RF_MEM_FETCH], 600);
	assert_int_equal(s.peak_bytes[RF_MEM_BATCH], 700);
	assert_int_equal(s.peak_total_bytes, 1000);
	assert_int_equal(rf_budget_category_bytes(&b, RF_MEM_DECODED), 300);
	rf_budget_release(&b, RF_MEM_DECODED, 300);
	rf_budget_release(&b, RF_MEM_BATCH, 700);
	assert_int_equal(rf_budget_used(&b), 0);
	assert_string_equal(rf_budget_category_name(RF_MEM_METADATA), "metadata");
	rf_budget_destroy(&b);
}

static void *hammer(void *arg)
{
	rf_budget *b = arg;
	for (int i = 0; i < 20000; i++) {
		enum rf_budget_category c = (enum rf_budget_category)(i % RF_MEM_CATEGORIES);
		if (rf_budget_reserve(b, c, 7, 0) == 0)
			rf_budget_release(b, c, 7);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	rf_budget b;
	rf_budget_init(&b, 20);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, hammer, &b);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	rf_budget_snapshot s;
	rf_budget_snapshot_get(&b, &s);
	assert_int_equal(s.used_bytes, 0);
	assert_true(s.peak_total_bytes <= 20); /* never over the limit */
	assert_true(s.peak_total_bytes >= 7);
	rf_budget_destroy(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reserve_release),
	    cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
