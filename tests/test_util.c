/* test_util.c - size parsing and little-endian helpers. */
#include "testutil.h"
#include "util.h"

static void test_parse_bytes(void **state)
{
	(void)state;
	uint64_t v = 0;
	rf_error err = {0};
	assert_int_equal(rf_parse_bytes("4096", &v, &err), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(rf_parse_bytes("64KiB", &v, &err), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(rf_parse_bytes("1MiB", &v, &err), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(rf_parse_bytes("1.5GiB", &v, &err), 0);
	assert_int_equal(v, 1610612736ull);
	assert_int_equal(rf_parse_bytes("2MB", &v, &err), 0);
	assert_int_equal(v, 2000000);
	assert_int_equal(rf_parse_bytes("", &v, &err), -EINVAL);
	assert_int_equal(rf_parse_bytes("-1", &v, &err), -EINVAL);
	assert_int_equal(rf_parse_bytes("12XB", &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "12XB"));
	assert_int_equal(rf_parse_bytes("1.3", &v, &err), -EINVAL);
	assert_int_equal(rf_parse_bytes("1e30", &v, &err), -ERANGE);
	assert_int_equal(rf_parse_bytes("nan", &v, &err), -EINVAL);
}

static void test_le(void **state)
{
	(void)state;
	uint8_t b[8];
	rf_store_le64(b, 0x0102030405060708ull);
	assert_int_equal(b[0], 8);
	assert_int_equal(b[7], 1);
	assert_true(rf_load_le64(b) == 0x0102030405060708ull);
	uint64_t out;
	assert_false(rf_add_u64(UINT64_MAX, 1, &out));
	assert_false(rf_mul_u64(UINT64_MAX / 2, 3, &out));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_bytes),
	    cmocka_unit_test(test_le),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
