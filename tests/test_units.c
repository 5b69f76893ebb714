/* test_units.c - a unit's states (engine/units.c): every state has one
 * name, the moves a unit makes are the allowed ones and no others, and in
 * debug builds rf_unit_set refuses a move that is not allowed; the engine
 * mutex's "held" assertions fire when a function that needs mu runs
 * without it, and a second take by the same thread is caught instead of
 * deadlocking. The checks run in a child; in a release build (NDEBUG) they
 * are compiled out, and the same children run to their end. */
#include "engine.h"
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_state_names(void **state)
{
	(void)state;
	for (int i = 0; i < RF_U_STATES; i++) {
		const char *n = rf_unit_state_name(i);
		assert_non_null(n);
		assert_string_not_equal(n, "?");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(n, rf_unit_state_name(j));
	}
	assert_string_equal(rf_unit_state_name(RF_U_STATES), "?");
	assert_string_equal(rf_unit_state_name(-1), "?");
	assert_string_equal(rf_unit_state_name(RF_U_DECODING), "decoding");
}

static void test_moves(void **state)
{
	(void)state;
	/* a unit's lives: read, decoded; read failed, skipped; re-read */
	assert_true(rf_unit_move_allowed(RF_U_FREE, RF_U_READING));
	assert_true(rf_unit_move_allowed(RF_U_FREE, RF_U_DECODED)); /* nothing to read */
	assert_true(rf_unit_move_allowed(RF_U_READING, RF_U_FETCHED));
	assert_true(rf_unit_move_allowed(RF_U_READING, RF_U_FAILED));
	assert_true(rf_unit_move_allowed(RF_U_FETCHED, RF_U_DECODING));
	assert_true(rf_unit_move_allowed(RF_U_DECODING, RF_U_DECODED));
	assert_true(rf_unit_move_allowed(RF_U_DECODING, RF_U_FAILED));
	assert_true(rf_unit_move_allowed(RF_U_DECODING, RF_U_READING)); /* checksum: re-read */
	assert_true(rf_unit_move_allowed(RF_U_FAILED, RF_U_SKIPPED));
	for (int s = 0; s < RF_U_STATES; s++)
		assert_true(rf_unit_move_allowed(s, RF_U_FREE)); /* released */
	/* and nothing else */
	assert_false(rf_unit_move_allowed(RF_U_FREE, RF_U_FETCHED));
	assert_false(rf_unit_move_allowed(RF_U_READING, RF_U_DECODED));
	assert_false(rf_unit_move_allowed(RF_U_FETCHED, RF_U_DECODED));
	assert_false(rf_unit_move_allowed(RF_U_DECODED, RF_U_READING));
	assert_false(rf_unit_move_allowed(RF_U_DECODED, RF_U_FAILED));
	assert_false(rf_unit_move_allowed(RF_U_SKIPPED, RF_U_DECODED));
	assert_false(rf_unit_move_allowed(RF_U_FAILED, RF_U_DECODED));
	assert_false(rf_unit_move_allowed(RF_U_READING, RF_U_STATES));
	assert_false(rf_unit_move_allowed(-1, RF_U_FREE));
	int allowed = 0;
	for (int a = 0; a < RF_U_STATES; a++)
		for (int b = 0; b < RF_U_STATES; b++)
			allowed += b != RF_U_FREE && rf_unit_move_allowed(a, b);
	assert_int_equal(allowed, 9);
}

static rf_engine *engine_new(void)
{
	rf_engine_house *h = calloc(1, sizeof(*h));
	assert_non_null(h);
	rf_engine *e = rf_engine_house_wire(h);
	pthread_mutex_init(&e->mu, NULL);
	return e;
}

static void engine_free(rf_engine *e)
{
	pthread_mutex_destroy(&e->mu);
	free(e);
}

/* Runs fn(e) in a child; returns true when the child died of SIGABRT. */
static bool aborts(void (*fn)(rf_engine *e))
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rf_engine *e = engine_new();
		fn(e);
		_exit(0);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void bad_move(rf_engine *e)
{
	rf_unit_slot u = {.state = RF_U_DECODED};
	rf_engine_lock(e);
	rf_unit_set(e, &u, RF_U_READING);
	rf_engine_unlock(e);
}

static void good_moves(rf_engine *e)
{
	rf_unit_slot u = {.state = RF_U_FREE};
	rf_engine_lock(e);
	rf_unit_set(e, &u, RF_U_READING);
	rf_unit_set(e, &u, RF_U_FETCHED);
	rf_unit_set(e, &u, RF_U_DECODING);
	rf_unit_set(e, &u, RF_U_DECODED);
	rf_engine_unlock(e);
}

static void unlocked_helper(rf_engine *e)
{
	rf_frontier_advance(e); /* "mu held" */
}

static void locked_helper(rf_engine *e)
{
	rf_engine_lock(e);
	rf_frontier_advance(e);
	rf_engine_unlock(e);
}

#ifndef NDEBUG
static void lock_twice(rf_engine *e) /* a release build would deadlock here */
{
	rf_engine_lock(e);
	rf_engine_lock(e);
}
#endif

static void test_debug_checks(void **state)
{
	(void)state;
	assert_false(aborts(good_moves));
	assert_false(aborts(locked_helper));
#ifdef NDEBUG
	/* a release build: the checks are compiled out, nothing stops */
	assert_false(aborts(bad_move));
	assert_false(aborts(unlocked_helper));
#else
	assert_true(aborts(bad_move));
	assert_true(aborts(unlocked_helper));
	assert_true(aborts(lock_twice));
#endif
}

/* The holder is tracked through a condition wait: the waiter gives mu up
 * and has it again when the wait returns. */
static void test_cond_wait_keeps_holder(void **state)
{
	(void)state;
	rf_engine *e = engine_new();
	pthread_cond_t cv;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &ca);
	pthread_condattr_destroy(&ca);
	rf_engine_lock(e);
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	rf_cond_timedwait(e, &cv, &dl);
	rf_frontier_advance(e); /* still held: no assertion */
#ifndef NDEBUG
	assert_true(atomic_load(&e->mu_owner) == rf_thread_self());
#endif
	rf_engine_unlock(e);
#ifndef NDEBUG
	assert_true(atomic_load(&e->mu_owner) == 0);
#endif
	pthread_cond_destroy(&cv);
	engine_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_state_names),
	    cmocka_unit_test(test_moves),
	    cmocka_unit_test(test_cond_wait_keeps_holder),
	    cmocka_unit_test(test_debug_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
