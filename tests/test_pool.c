/* test_pool.c - size classes, reuse, and idle buffers trimmed to what the
 * budget leaves free. */
#include "pool.h"

#include "testutil.h"
#include <string.h>

static void test_classes(void **state)
{
	(void)state;
	assert_int_equal(rf_pool_class_bytes(0), 4096);
	assert_int_equal(rf_pool_class_bytes(4096), 4096);
	assert_int_equal(rf_pool_class_bytes(4097), 4352); /* 4096 + 4096/16 */
	assert_int_equal(rf_pool_class_bytes(1u << 20), 1u << 20);
	assert_int_equal(rf_pool_class_bytes((1u << 20) + 1), (1u << 20) + (1u << 16));
	for (uint64_t n = 1; n < (64ull << 20); n = n * 3 + 7) {
		uint64_t c = rf_pool_class_bytes(n);
		assert_true(c >= n);
		assert_true(c <= 4096 || (double)c <= (double)n * 1.0625 + 1);
		assert_int_equal(rf_pool_class_bytes(c), c); /* a class is its own class */
	}
}

static void test_reuse_and_trim(void **state)
{
	(void)state;
	rf_budget b;
	rf_budget_init(&b, 1u << 20);
	rf_pool *p;
	assert_int_equal(rf_pool_new(&b, &p), 0);
	uint64_t c = rf_pool_class_bytes(100000);
	uint8_t *x = rf_pool_get(p, c);
	assert_non_null(x);
	memset(x, 0xab, c);
	rf_pool_put(p, x, c);
	assert_ptr_equal(rf_pool_get(p, c), x); /* the idle buffer comes back */
	assert_int_equal(rf_pool_mapped_bytes(p), c);
	rf_pool_put(p, x, c);
	/* The budget now reserves nearly everything: idle buffers must go. */
	assert_int_equal(rf_budget_reserve(&b, RF_MEM_DECODED, (1u << 20) - 4096, 0), 0);
	uint8_t *y = rf_pool_get(p, 4096);
	assert_non_null(y);
	assert_int_equal(rf_pool_mapped_bytes(p), 4096);
	rf_pool_put(p, y, 4096);
	rf_budget_release(&b, RF_MEM_DECODED, (1u << 20) - 4096);
	rf_pool_free(p);
	rf_budget_destroy(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classes),
	    cmocka_unit_test(test_reuse_and_trim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
