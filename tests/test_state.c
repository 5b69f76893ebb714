/* test_state.c - the saved position: round trip, every corruption rejected
 * with a message saying which check failed, and the configuration
 * fingerprint changing with everything that decides the stream. */
#include "state.h"
#include "testutil.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static void test_round_trip(void **state)
{
	(void)state;
	const rf_position cases[] = {
	    {0, 0, 0, 0, 0},
	    {0x0123456789abcdefull, 7, 1000, 16, 3},
	    {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t buf[RF_STATE_BYTES + 8];
		assert_int_equal(rf_state_encode(&cases[i], buf, sizeof(buf)), RF_STATE_BYTES);
		assert_memory_equal(buf, "RFSTATE1", 8);
		rf_position out;
		rf_error err = {0};
		assert_int_equal(rf_state_decode(buf, RF_STATE_BYTES, &out, &err), 0);
		assert_memory_equal(&out, &cases[i], sizeof(out));
	}
	uint8_t small[RF_STATE_BYTES - 1];
	assert_int_equal(rf_state_encode(&cases[1], small, sizeof(small)), -ENOSPC);
}

static void test_crc32c(void **state)
{
	(void)state;
	/* The standard check value of CRC-32C. */
	assert_int_equal(rf_state_crc32c("123456789", 9), 0xe3069283u);
	assert_int_equal(rf_state_crc32c("", 0), 0);
}

static void expect_reject(const uint8_t *buf, size_t len, const char *why)
{
	rf_position out = {1, 2, 3, 4, 5}, before = out;
	rf_error err = {0};
	int rc = rf_state_decode(buf, len, &out, &err);
	assert_true(rc < 0);
	assert_int_equal(err.code, rc);
	if (!strstr(err.msg, why))
		fail_msg("expected '%s' in: %s", why, err.msg);
	assert_memory_equal(&out, &before, sizeof(out)); /* untouched on failure */
}

static void test_corruption(void **state)
{
	(void)state;
	rf_position p = {0xfeedfacecafebeefull, 2, 4096, 64, 0};
	uint8_t good[RF_STATE_BYTES], buf[RF_STATE_BYTES + 1];
	rf_state_encode(&p, good, sizeof(good));
	/* Every single-bit flip anywhere is caught, by the check of its field. */
	for (size_t i = 0; i < RF_STATE_BYTES; i++)
		for (int bit = 0; bit < 8; bit++) {
			memcpy(buf, good, sizeof(good));
			buf[i] ^= (uint8_t)(1u << bit);
			expect_reject(buf, RF_STATE_BYTES,
			              i < 8    ? "magic"
			              : i < 12 ? "version"
			                       : "checksum");
		}
	/* Wrong lengths, including none at all. */
	memcpy(buf, good, sizeof(good));
	buf[RF_STATE_BYTES] = 0;
	expect_reject(buf, RF_STATE_BYTES + 1, "57 bytes");
	expect_reject(buf, RF_STATE_BYTES - 1, "55 bytes");
	expect_reject(buf, 0, "0 bytes");
	expect_reject(NULL, 0, "0 bytes");
	/* A future version with a valid checksum: named as a version problem. */
	memcpy(buf, good, sizeof(good));
	rf_store_le32(buf + 8, 2);
	rf_store_le32(buf + 52, rf_state_crc32c(buf, 52));
	expect_reject(buf, RF_STATE_BYTES, "version 2");
	/* Well-formed but impossible: more batches than records. */
	rf_position bad = {1, 0, 3, 4, 0};
	rf_state_encode(&bad, buf, sizeof(buf));
	expect_reject(buf, RF_STATE_BYTES, "4 batches");
}

static rf_shard_index *make_index(const uint32_t *records, uint32_t blocks)
{
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	ix->blocks = blocks;
	ix->block = calloc(blocks, sizeof(*ix->block));
	for (uint32_t b = 0; b < blocks; b++) {
		ix->block[b].records = records[b];
		ix->records += records[b];
	}
	return ix;
}

static uint64_t fingerprint(const rf_plan_params *pp, const rf_collate_params *cp,
                            const uint32_t *recs, uint32_t blocks)
{
	uint32_t other[2] = {5, 5};
	rf_shard_index *ix[2] = {make_index(recs, blocks), make_index(other, 2)};
	rf_plan *plan = NULL;
	rf_error err = {0};
	assert_int_equal(rf_plan_new(pp, (const rf_shard_index *const *)ix, 2, &plan, &err), 0);
	uint64_t h = rf_state_fingerprint(plan, cp);
	rf_plan_free(plan);
	for (int i = 0; i < 2; i++) {
		free(ix[i]->block);
		free(ix[i]);
	}
	return h;
}

static void test_fingerprint(void **state)
{
	(void)state;
	const uint32_t recs[3] = {4, 0, 9}, recs_moved[3] = {5, 0, 8}, recs_more[3] = {4, 0, 10};
	const rf_plan_params pp = {
	    .seed = 1, .rank = 0, .world = 2, .shuffle = true, .shuffle_window = 8};
	const rf_collate_params cp = {.batch_records = 16};
	uint64_t base = fingerprint(&pp, &cp, recs, 3);
	assert_int_equal(fingerprint(&pp, &cp, recs, 3), base);
	uint64_t seen[16];
	size_t n = 0;
	rf_plan_params q = pp;
	rf_collate_params c = cp;
#define DIFFERS(expr) (seen[n++] = (expr), assert_true(seen[n - 1] != base))
	q.seed = 2, DIFFERS(fingerprint(&q, &cp, recs, 3)), q = pp;
	q.rank = 1, DIFFERS(fingerprint(&q, &cp, recs, 3)), q = pp;
	q.world = 3, DIFFERS(fingerprint(&q, &cp, recs, 3)), q = pp;
	q.shuffle = false, DIFFERS(fingerprint(&q, &cp, recs, 3)), q = pp;
	q.shuffle_window = 9, DIFFERS(fingerprint(&q, &cp, recs, 3)), q = pp;
	DIFFERS(fingerprint(&pp, &cp, recs_moved, 3)); /* same total, other blocks */
	DIFFERS(fingerprint(&pp, &cp, recs_more, 3));
	DIFFERS(fingerprint(&pp, &cp, recs, 2)); /* a block fewer */
	c.batch_records = 17, DIFFERS(fingerprint(&pp, &c, recs, 3)), c = cp;
	c.batch_bytes = 1 << 20, DIFFERS(fingerprint(&pp, &c, recs, 3)), c = cp;
	c.pad_to = 64, DIFFERS(fingerprint(&pp, &c, recs, 3)), c = cp;
	c.truncate = true, DIFFERS(fingerprint(&pp, &c, recs, 3)), c = cp;
#undef DIFFERS
	for (size_t i = 0; i < n; i++)
		for (size_t k = i + 1; k < n; k++)
			assert_true(seen[i] != seen[k]);
	/* Settings that do not change the stream do not change the print:
	 * without shuffle the window is ignored; window 0 and 1 are the same. */
	q.shuffle = false;
	uint64_t a = fingerprint(&q, &cp, recs, 3);
	q.shuffle_window = 1000;
	assert_int_equal(fingerprint(&q, &cp, recs, 3), a);
	q = pp;
	q.shuffle_window = 0;
	a = fingerprint(&q, &cp, recs, 3);
	q.shuffle_window = 1;
	assert_int_equal(fingerprint(&q, &cp, recs, 3), a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_crc32c),
	    cmocka_unit_test(test_corruption),
	    cmocka_unit_test(test_fingerprint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
