/* tsa.h - the locks' rules, said to the compiler and checked in debug builds.
 *
 * Clang's thread-safety analysis (-Wthread-safety; scripts/test.sh builds
 * the library with it, -DRF_TSA=ON, as errors): a field RF_GUARDED_BY(cap)
 * may be read or written only with cap held, a function RF_REQUIRES(cap)
 * only called with it held; RF_ACQUIRE / RF_RELEASE mark the lock wrappers.
 * Clang 14 cannot name a struct's own member in C (guarded_by(mu) inside
 * the struct), so each lock kind has one global name, a capability object
 * that is never defined or touched at run time (rf_engine_mu: "an engine's
 * mu"): the analysis checks that a thread holds the lock of that kind; no
 * thread holds two of one kind at once (the order below). On other
 * compilers every macro is empty.
 *
 * The lock order (the one place it is written; docs/design.md, "Locks"):
 *
 *     engine mu (1) -> budget (4) -> host budget (5)
 *     pool (2)      -> budget (4)
 *     pool (2)      -> dio (3)     -> budget (4)
 *
 * A thread takes a lock only while every lock it holds has a lower level.
 * Debug builds (NDEBUG unset) keep the levels a thread holds (a bit each)
 * and assert the rule on every take (rf_lock_order_take); release builds
 * compile the check out. */
#ifndef RF_TSA_H
#define RF_TSA_H

#include <assert.h>
#include <stdint.h>

#if defined(__clang__)
#define RF_TSA_(x) __attribute__((x))
#else
#define RF_TSA_(x)
#endif

#define RF_CAPABILITY(name)   RF_TSA_(capability(name))
#define RF_GUARDED_BY(cap)    RF_TSA_(guarded_by(cap))
#define RF_PT_GUARDED_BY(cap) RF_TSA_(pt_guarded_by(cap))
#define RF_REQUIRES(...)      RF_TSA_(requires_capability(__VA_ARGS__))
#define RF_EXCLUDES(...)      RF_TSA_(locks_excluded(__VA_ARGS__))
#define RF_ACQUIRE(...)       RF_TSA_(acquire_capability(__VA_ARGS__))
#define RF_RELEASE(...)       RF_TSA_(release_capability(__VA_ARGS__))
#define RF_ASSERT_HELD(...)   RF_TSA_(assert_capability(__VA_ARGS__))
/* A function the analysis cannot follow (a lock wrapper itself, a
 * teardown that runs when no other thread is left): said why beside it. */
#define RF_NO_TSA RF_TSA_(no_thread_safety_analysis)
/* A function that runs while no other thread can see the object: at open,
 * before the threads start, or at close, after they are joined. */
#define RF_ALONE RF_NO_TSA

/* A lock kind's name for the analysis (never defined: see above). */
typedef struct RF_CAPABILITY("mutex") rf_lock_kind {
	char unused;
} rf_lock_kind;

/* The five kinds, in the order below. */
extern rf_lock_kind rf_engine_mu, rf_pool_mu, rf_dio_mu, rf_budget_mu, rf_host_mu;

enum rf_lock_level {
	RF_LOCK_ENGINE = 1, /* rf_engine.mu (engine.h: rf_engine_lock) */
	RF_LOCK_POOL = 2,   /* rf_pool (pool.c) */
	RF_LOCK_DIO = 3,    /* rf_dio (dio.c) */
	RF_LOCK_BUDGET = 4, /* rf_budget (budget.c) */
	RF_LOCK_HOST = 5,   /* the host budget's shared mutex (hostbudget_shm.c) */
};

#ifndef NDEBUG
/* The levels this thread holds, a bit each (lockorder: util.c). */
uint32_t *rf_lock_levels_held(void);
static inline void rf_lock_order_take(enum rf_lock_level level)
{
	uint32_t *held = rf_lock_levels_held();
	/* nothing of this level or above held: else the order is broken (or a
	 * second lock of one kind is taken: two budgets, two engines) */
	assert((*held >> level) == 0 && "lock order: engine -> pool -> dio -> budget -> host");
	*held |= 1u << level;
}
static inline void rf_lock_order_give(enum rf_lock_level level)
{
	uint32_t *held = rf_lock_levels_held();
	assert((*held & (1u << level)) && "lock order: giving a lock not held");
	*held &= ~(1u << level);
}
#else
#define rf_lock_order_take(level) ((void)0)
#define rf_lock_order_give(level) ((void)0)
#endif
#endif
