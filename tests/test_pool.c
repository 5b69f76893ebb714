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

/* Beyond limit / 32 idle, the buffer idle longest is unmapped first,
 * whatever its size; the recently put ones stay for reuse. */
static void test_trim_oldest_first(void **state)
{
	(void)state;
	rf_budget b;
	rf_budget_init(&b, 8u << 20); /* idle allowed: 1 MiB (limit / 8) */
	rf_pool *p;
	assert_int_equal(rf_pool_new(&b, &p), 0);
	uint64_t big = 768u << 10, small = 256u << 10, mid = 512u << 10;
	uint8_t *x = rf_pool_get(p, big), *y = rf_pool_get(p, small), *z = rf_pool_get(p, mid);
	assert_true(x && y && z);
	rf_pool_put(p, x, big);   /* idle: x (768 KiB) */
	rf_pool_put(p, y, small); /* idle: x, y (1 MiB) */
	assert_int_equal(rf_pool_mapped_bytes(p), big + small + mid);
	rf_pool_put(p, z, mid); /* 1.5 MiB idle: x, the oldest, goes */
	assert_int_equal(rf_pool_mapped_bytes(p), small + mid);
	assert_ptr_equal(rf_pool_get(p, small), y);
	assert_ptr_equal(rf_pool_get(p, mid), z);
	uint8_t *w = rf_pool_get(p, big); /* a new mapping */
	assert_non_null(w);
	assert_int_equal(rf_pool_mapped_bytes(p), big + small + mid);
	rf_pool_put(p, y, small);
	rf_pool_put(p, z, mid);
	rf_pool_put(p, w, big); /* 1.5 MiB idle again: y goes first, then z... */
	assert_int_equal(rf_pool_mapped_bytes(p), big);
	assert_ptr_equal(rf_pool_get(p, big), w); /* ...the newest stays */
	rf_pool_put(p, w, big);
	rf_pool_free(p);
	rf_budget_destroy(&b);
}

/* A miss takes an idle buffer of a class up to 25% larger and shrinks it
 * in place (no new mapping); one further off is not taken. */
static void test_near_class_shrunk(void **state)
{
	(void)state;
	rf_budget b;
	rf_budget_init(&b, 256u << 20);
	rf_pool *p;
	assert_int_equal(rf_pool_new(&b, &p), 0);
	uint64_t want = rf_pool_class_bytes(800u << 10);
	uint64_t near = rf_pool_class_bytes(want + 1); /* the next class */
	near = rf_pool_class_bytes(near + 1);          /* two classes up */
	uint64_t far = rf_pool_class_bytes(want * 2);  /* 100% larger */
	uint8_t *x = rf_pool_get(p, near);
	assert_non_null(x);
	memset(x, 0xcd, near);
	rf_pool_put(p, x, near);
	uint8_t *y = rf_pool_get(p, want);
	assert_ptr_equal(y, x); /* the same buffer, shrunk */
	assert_int_equal(rf_pool_mapped_bytes(p), want);
	memset(y, 0xef, want); /* all of it usable */
	rf_pool_put(p, y, want);
	uint8_t *z = rf_pool_get(p, far);
	assert_non_null(z);
	rf_pool_put(p, z, far);
	rf_pool_put(p, rf_pool_get(p, want), want); /* y again: exact class */
	uint64_t mapped = rf_pool_mapped_bytes(p);
	uint8_t *w = rf_pool_get(p, rf_pool_class_bytes(want / 2)); /* z is too far */
	assert_non_null(w);
	assert_true(w != z && w != y);
	assert_int_equal(rf_pool_mapped_bytes(p), mapped + rf_pool_class_bytes(want / 2));
	rf_pool_put(p, w, rf_pool_class_bytes(want / 2));
	rf_pool_free(p);
	rf_budget_destroy(&b);
}

typedef struct unmaps {
	int calls;
	void *last;
	uint64_t bytes;
} unmaps;

static void on_unmap(void *ctx, void *buf, uint64_t bytes)
{
	unmaps *u = ctx;
	u->calls++;
	u->last = buf;
	u->bytes = bytes;
	((volatile uint8_t *)buf)[0] = 1; /* still mapped while the hook runs */
}

/* The unmap hook (direct_io's registrations) hears of every buffer the
 * pool unmaps, before it is unmapped; none after it is removed. */
static void test_unmap_hook(void **state)
{
	(void)state;
	rf_budget b;
	rf_budget_init(&b, 8u << 20); /* idle allowed: 1 MiB (limit / 8) */
	rf_pool *p;
	assert_int_equal(rf_pool_new(&b, &p), 0);
	unmaps u = {0};
	rf_pool_set_unmap_hook(p, on_unmap, &u);
	uint64_t big = 768u << 10, mid = 512u << 10;
	uint8_t *x = rf_pool_get(p, big), *z = rf_pool_get(p, mid);
	assert_true(x && z);
	rf_pool_put(p, x, big);
	assert_int_equal(u.calls, 0);
	rf_pool_put(p, z, mid); /* 1.25 MiB idle: x goes */
	assert_int_equal(u.calls, 1);
	assert_ptr_equal(u.last, x);
	assert_int_equal(u.bytes, big);
	/* a near class shrunk in place unmaps its tail: the hook hears of it */
	uint64_t want = rf_pool_class_bytes(600u << 10);
	uint64_t near = rf_pool_class_bytes(rf_pool_class_bytes(want + 1) + 1);
	uint8_t *n1 = rf_pool_get(p, near);
	rf_pool_put(p, n1, near);
	int before = u.calls;
	uint8_t *n2 = rf_pool_get(p, want);
	if (n2 == n1) { /* taken and shrunk: its registration had to go first */
		assert_int_equal(u.calls, before + 1);
		assert_ptr_equal(u.last, n1);
		assert_int_equal(u.bytes, near);
	}
	rf_pool_put(p, n2, want);
	rf_pool_set_unmap_hook(p, NULL, NULL);
	int calls = u.calls;
	rf_pool_free(p); /* unmaps what is idle: the hook is gone */
	assert_int_equal(u.calls, calls);
	rf_budget_destroy(&b);
}

/* The idle cap: 32 MiB by default (beyond it the longest idle go), raised
 * for a mixture's windows by rf_pool_set_idle_max (still at most 1/8 of the
 * limit). */
static void test_idle_max(void **state)
{
	(void)state;
	rf_budget b;
	rf_budget_init(&b, 1ull << 30);
	rf_pool *p;
	assert_int_equal(rf_pool_new(&b, &p), 0);
	uint64_t c = rf_pool_class_bytes(1 << 20);
	void *x[48];
	for (int round = 0; round < 3; round++) {
		if (round == 1)
			rf_pool_set_idle_max(p, 2 * RF_POOL_IDLE_MAX);
		if (round == 2)
			rf_pool_set_idle_max(p, 1ull << 40); /* 1/8 of the 1 GiB limit rules */
		for (int i = 0; i < 48; i++)
			assert_non_null(x[i] = rf_pool_get(p, c));
		for (int i = 0; i < 48; i++)
			rf_pool_put(p, x[i], c);
		assert_int_equal(rf_pool_mapped_bytes(p), round == 0 ? RF_POOL_IDLE_MAX : 48 * c);
	}
	rf_pool_set_idle_max(p, 4 * c);
	assert_non_null(x[0] = rf_pool_get(p, c)); /* an idle one: nothing mapped */
	assert_int_equal(rf_pool_mapped_bytes(p), 48 * c);
	rf_pool_put(p, x[0], c); /* a put trims to the new cap */
	assert_int_equal(rf_pool_mapped_bytes(p), 4 * c);
	rf_pool_free(p);
	rf_budget_destroy(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classes),           cmocka_unit_test(test_reuse_and_trim),
	    cmocka_unit_test(test_trim_oldest_first), cmocka_unit_test(test_near_class_shrunk),
	    cmocka_unit_test(test_unmap_hook),        cmocka_unit_test(test_idle_max),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
