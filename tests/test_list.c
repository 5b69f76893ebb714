/* test_list.c - base/list: the one intrusive list (order, removal at either
 * end and in the middle, a zeroed list is empty, the walk survives removal
 * of the node it is on). */
#include "list.h"
#include "testutil.h"

typedef struct item {
	int value;
	rf_list_node node;
} item;

/* The values head to tail, walking next, and checks the prev links agree. */
static int values(const rf_list *l, int *out, int cap)
{
	int n = 0;
	const rf_list_node *prev = NULL;
	for (const rf_list_node *p = l->head; p && n < cap; prev = p, p = p->next) {
		assert_ptr_equal(p->prev, prev);
		out[n++] = rf_list_entry(p, const item, node)->value;
	}
	assert_ptr_equal(l->tail, prev);
	return n;
}

static void test_order_and_remove(void **state)
{
	(void)state;
	rf_list l = {0};
	assert_true(rf_list_empty(&l));
	assert_null(rf_list_entry_or_null(l.head, item, node));
	item it[4] = {{.value = 0}, {.value = 1}, {.value = 2}, {.value = 3}};
	rf_list_push_back(&l, &it[1].node);
	rf_list_push_back(&l, &it[2].node);
	rf_list_push_front(&l, &it[0].node);
	rf_list_push_back(&l, &it[3].node);
	int v[8];
	assert_int_equal(values(&l, v, 8), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(v[i], i);
	rf_list_remove(&l, &it[2].node); /* middle */
	assert_null(it[2].node.prev);
	assert_null(it[2].node.next);
	rf_list_remove(&l, &it[0].node); /* head */
	rf_list_remove(&l, &it[3].node); /* tail */
	assert_int_equal(values(&l, v, 8), 1);
	assert_int_equal(v[0], 1);
	assert_ptr_equal(rf_list_entry_or_null(l.tail, item, node), &it[1]);
	rf_list_remove(&l, &it[1].node);
	assert_true(rf_list_empty(&l));
	assert_null(l.tail);
}

static void test_walk_removing(void **state)
{
	(void)state;
	rf_list l = {0};
	item it[5];
	for (int i = 0; i < 5; i++) {
		it[i] = (item){.value = i};
		rf_list_push_back(&l, &it[i].node);
	}
	int seen = 0;
	rf_list_for_each(n, next, &l)
	{
		item *x = rf_list_entry(n, item, node);
		seen++;
		if (x->value % 2 == 0)
			rf_list_remove(&l, n);
	}
	assert_int_equal(seen, 5);
	int v[8];
	assert_int_equal(values(&l, v, 8), 2);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[1], 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_and_remove),
	    cmocka_unit_test(test_walk_removing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
