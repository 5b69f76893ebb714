/* test_crc32c.c - CRC-32C known answers and incremental use. */
#include "crc32c.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = ~0u;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

static void test_known_answers(void **state)
{
	(void)state;
	assert_int_equal(rf_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(rf_crc32c(0, "", 0), 0);
	uint8_t zeros[32] = {0};
	assert_int_equal(rf_crc32c(0, zeros, 32), 0x8A9136AAu); /* RFC 3720 B.4 */
	uint8_t ones[32];
	memset(ones, 0xff, 32);
	assert_int_equal(rf_crc32c(0, ones, 32), 0x62A8AB43u);
}

static void test_matches_bitwise_any_alignment(void **state)
{
	(void)state;
	uint8_t buf[1031];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len + off <= sizeof(buf); len += 37)
			assert_int_equal(rf_crc32c(0, buf + off, len), crc_bitwise(buf + off, len));
	/* incremental == one shot */
	uint32_t c = rf_crc32c(0, buf, 100);
	c = rf_crc32c(c, buf + 100, sizeof(buf) - 100);
	assert_int_equal(c, rf_crc32c(0, buf, sizeof(buf)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_answers),
	    cmocka_unit_test(test_matches_bitwise_any_alignment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
