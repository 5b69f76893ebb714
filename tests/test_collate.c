/* test_collate.c - batch decisions (record cap, byte packing, padding, epoch
 * end, "need more records") and the filled buffer read back byte for byte. */
#include "collate.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

/* Records at stream positions base.., record i being lens[i] bytes of a
 * pattern that depends on (i, byte). */
typedef struct records {
	uint64_t base;
	uint32_t n;
	uint32_t lens[64];
	uint8_t *data[64];
	uint32_t calls_past; /* callbacks for positions not resident */
} records;

static void make_records(records *r, uint64_t base, const uint32_t *lens, uint32_t n)
{
	memset(r, 0, sizeof(*r));
	r->base = base;
	r->n = n;
	for (uint32_t i = 0; i < n; i++) {
		r->lens[i] = lens[i];
		r->data[i] = malloc(lens[i] ? lens[i] : 1);
		for (uint32_t k = 0; k < lens[i]; k++)
			r->data[i][k] = (uint8_t)(i * 31 + k * 7 + 1);
	}
}

static void free_records(records *r)
{
	for (uint32_t i = 0; i < r->n; i++)
		free(r->data[i]);
}

static void record_at(void *ctx, uint64_t pos, const uint8_t **data, uint32_t *len)
{
	records *r = ctx;
	if (pos < r->base || pos - r->base >= r->n) {
		r->calls_past++;
		*data = NULL;
		*len = 0;
		return;
	}
	*data = r->data[pos - r->base];
	*len = r->lens[pos - r->base];
}

static long plan_batch(const rf_collate_params *p, records *r, uint64_t pos, uint64_t available,
                       uint64_t *bytes, rf_error *err)
{
	return rf_collate_plan(p, record_at, r, pos, available, r->base + r->n, bytes, err);
}

/* Fills the batch into a buffer of exactly `bytes` (ASan sees overruns) and
 * checks every record's bytes, offsets, lengths, padding and alignment. */
static void fill_and_check(const rf_collate_params *p, records *r, uint64_t pos, long count,
                           uint64_t bytes)
{
	uint8_t *mem = aligned_alloc(64, bytes);
	assert_non_null(mem);
	memset(mem, 0xa5, bytes);
	rf_batch b = {0};
	rf_collate_fill(p, record_at, r, pos, (uint32_t)count, mem, bytes, &b);
	assert_int_equal(b.records, count);
	assert_int_equal(b.row_bytes, p->pad_to);
	assert_ptr_equal(b.payload, mem);
	assert_int_equal((uintptr_t)b.offsets % 64, 0);
	assert_int_equal((uintptr_t)b.lengths % 64, 0);
	assert_true((const uint8_t *)b.offsets >= b.payload + b.payload_bytes);
	assert_true((const uint8_t *)(b.lengths + count) <= mem + bytes);
	assert_int_equal(bytes, rf_collate_bytes((uint32_t)count, b.payload_bytes));
	assert_int_equal(b.offsets[0], 0);
	assert_int_equal(b.offsets[count], (int64_t)b.payload_bytes);
	for (long i = 0; i < count; i++) {
		uint32_t idx = (uint32_t)(pos - r->base + (uint64_t)i), len = r->lens[idx];
		uint32_t keep = p->pad_to && len > p->pad_to ? p->pad_to : len;
		assert_int_equal(b.lengths[i], keep);
		if (p->pad_to == 0) {
			assert_int_equal(b.offsets[i + 1] - b.offsets[i], len);
		} else {
			assert_int_equal(b.offsets[i], i * (int64_t)p->pad_to);
			for (uint32_t k = keep; k < p->pad_to; k++)
				assert_int_equal(b.payload[b.offsets[i] + k], 0);
		}
		if (keep)
			assert_memory_equal(b.payload + b.offsets[i], r->data[idx], keep);
	}
	free(mem);
}

static void test_batch_records(void **state)
{
	(void)state;
	uint32_t lens[10] = {1, 2, 3, 0, 5, 6, 7, 8, 9, 10};
	records r;
	make_records(&r, 100, lens, 10);
	rf_collate_params p = {.batch_records = 4};
	rf_error err = {0};
	uint64_t bytes;
	assert_int_equal(plan_batch(&p, &r, 100, 10, &bytes, &err), 4);
	fill_and_check(&p, &r, 100, 4, bytes);
	/* Not enough resident to know the batch: ask for more. */
	assert_int_equal(plan_batch(&p, &r, 100, 3, &bytes, &err), 0);
	assert_int_equal(bytes, 0);
	/* The epoch's last batch is short, and needs only what is left. */
	assert_int_equal(plan_batch(&p, &r, 108, 2, &bytes, &err), 2);
	fill_and_check(&p, &r, 108, 2, bytes);
	assert_int_equal(plan_batch(&p, &r, 104, 6, &bytes, &err), 4);
	fill_and_check(&p, &r, 104, 4, bytes);
	assert_int_equal(r.calls_past, 0); /* never looked past the epoch */
	/* At or past the epoch end, and a zero-record batch: errors. */
	assert_int_equal(plan_batch(&p, &r, 110, 5, &bytes, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "110"));
	p.batch_records = 0;
	assert_int_equal(plan_batch(&p, &r, 100, 10, &bytes, &err), -EINVAL);
	free_records(&r);
}

static void test_batch_bytes(void **state)
{
	(void)state;
	uint32_t lens[9] = {3, 4, 5, 20, 10, 1, 1, 0, 1};
	records r;
	make_records(&r, 0, lens, 9);
	rf_collate_params p = {.batch_records = 100, .batch_bytes = 10};
	rf_error err = {0};
	uint64_t bytes;
	/* 3 + 4 fit; + 5 would exceed 10. */
	assert_int_equal(plan_batch(&p, &r, 0, 9, &bytes, &err), 2);
	fill_and_check(&p, &r, 0, 2, bytes);
	/* Knowing that record 2 does not fit needs record 2 resident. */
	assert_int_equal(plan_batch(&p, &r, 0, 2, &bytes, &err), 0);
	/* 5, then 20 does not fit. */
	assert_int_equal(plan_batch(&p, &r, 2, 7, &bytes, &err), 1);
	/* A record larger than the limit is a batch of its own, never dropped. */
	assert_int_equal(plan_batch(&p, &r, 3, 1, &bytes, &err), 1);
	fill_and_check(&p, &r, 3, 1, bytes);
	/* Exactly full: decided without looking further. */
	assert_int_equal(plan_batch(&p, &r, 4, 1, &bytes, &err), 1);
	/* Small records up to the epoch end: the end decides, short batch. */
	assert_int_equal(plan_batch(&p, &r, 5, 3, &bytes, &err), 0);
	assert_int_equal(plan_batch(&p, &r, 5, 4, &bytes, &err), 4);
	fill_and_check(&p, &r, 5, 4, bytes);
	/* The record cap still applies. */
	p.batch_records = 2;
	assert_int_equal(plan_batch(&p, &r, 5, 4, &bytes, &err), 2);
	free_records(&r);
}

static void test_padded(void **state)
{
	(void)state;
	uint32_t lens[6] = {3, 8, 0, 12, 1, 7};
	records r;
	make_records(&r, 50, lens, 6);
	rf_collate_params p = {.batch_records = 3, .pad_to = 8};
	rf_error err = {0};
	uint64_t bytes;
	assert_int_equal(plan_batch(&p, &r, 50, 6, &bytes, &err), 3);
	fill_and_check(&p, &r, 50, 3, bytes);
	assert_int_equal(bytes, rf_collate_bytes(3, 24));
	/* Record at stream position 53 is 12 bytes: an error naming it... */
	assert_int_equal(plan_batch(&p, &r, 53, 3, &bytes, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "stream position 53"));
	assert_non_null(strstr(err.msg, "12 bytes"));
	/* ...unless truncating, where it keeps its first 8 bytes. */
	p.truncate = true;
	assert_int_equal(plan_batch(&p, &r, 53, 3, &bytes, &err), 3);
	fill_and_check(&p, &r, 53, 3, bytes);
	/* Padded rows count pad_to bytes each against batch_bytes. */
	p.batch_bytes = 17;
	assert_int_equal(plan_batch(&p, &r, 50, 6, &bytes, &err), 2);
	fill_and_check(&p, &r, 50, 2, bytes);
	free_records(&r);
}

static void test_layout_bytes(void **state)
{
	(void)state;
	/* payload 64 | offsets 2*8 -> 64 | lengths 4 -> 64 */
	assert_int_equal(rf_collate_bytes(1, 64), 192);
	assert_int_equal(rf_collate_bytes(1, 1), 192);
	assert_int_equal(rf_collate_bytes(0, 0), 64);
	/* 8 records of 0 bytes: offsets 72 -> 128, lengths 32 -> 64. */
	assert_int_equal(rf_collate_bytes(8, 0), 192);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_batch_records),
	    cmocka_unit_test(test_batch_bytes),
	    cmocka_unit_test(test_padded),
	    cmocka_unit_test(test_layout_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
