/* units.c - the state that the scheduler (loop thread), the decode
 * workers, the collator and the consumer share, and the helpers each of
 * them uses on it: a unit slot's state and its one transition function
 * (rf_unit_set, with the names table), failing, releasing and advancing
 * over units, freeing reads, waking the loop thread, ending the stream,
 * the host budget's wait, and the read-ahead depth. Every function here
 * runs with mu held; none calls into sched.c, decode.c, collator.c or
 * control.c (they call in here). */
#include "engine.h"
#include "hostbudget.h"
#include "util.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

uintptr_t rf_thread_self(void)
{
	static _Thread_local char self; /* its address is this thread's */
	return (uintptr_t)&self;
}

/* ---------------------------------------------------------- unit states */

static const char *const rf_unit_state_names[RF_U_STATES] = {
    "free", "reading", "fetched", "decoding", "decoded", "failed", "skipped"};

/* The moves a unit makes (docs/design.md, "Unit states"), as bit masks of
 * the states each may go to. Any state goes back to FREE when its slot is
 * released (rf_unit_release); a slot is filled from FREE (rf_slot_init). */
#define RF_TO(s) (1u << (s))
static const unsigned rf_unit_moves[RF_U_STATES] = {
    [RF_U_FREE] = RF_TO(RF_U_READING) | RF_TO(RF_U_DECODED), /* admitted / nothing to read */
    [RF_U_READING] = RF_TO(RF_U_FETCHED) | RF_TO(RF_U_FAILED),
    [RF_U_FETCHED] = RF_TO(RF_U_DECODING),
    [RF_U_DECODING] = RF_TO(RF_U_DECODED) | RF_TO(RF_U_FAILED) | RF_TO(RF_U_READING),
    [RF_U_DECODED] = 0,
    [RF_U_FAILED] = RF_TO(RF_U_SKIPPED),
    [RF_U_SKIPPED] = 0,
};

const char *rf_unit_state_name(int state)
{
	return state >= 0 && state < RF_U_STATES ? rf_unit_state_names[state] : "?";
}

/* Whether a unit may move from `from` to `to`. */
bool rf_unit_move_allowed(int from, int to)
{
	return from >= 0 && from < RF_U_STATES && to >= 0 && to < RF_U_STATES &&
	       (to == RF_U_FREE || (rf_unit_moves[from] & RF_TO(to)) != 0);
}

/* The one place a unit changes state (rf_unit_release clears a slot whole). */
void rf_unit_set(rf_engine *e, rf_unit_slot *u, enum rf_unit_state to) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
#ifndef NDEBUG
	if (!rf_unit_move_allowed(u->state, (int)to)) {
		fprintf(stderr,
		        "ringfeed: unit %llu (shard %u, block %u): %s -> %s is not a move\n",
		        (unsigned long long)u->seq, u->shard, u->block,
		        rf_unit_state_name(u->state), rf_unit_state_name((int)to));
		assert(!"unit state move not allowed");
	}
#endif
	(void)e;
	u->state = (uint8_t)to;
}

/* ------------------------------------------------------------ the ring */

void rf_ring_size_set(rf_engine *e, uint64_t units) RF_ALONE
{
	e->ring->units = units;
}

int rf_ring_alloc(rf_engine *e) RF_ALONE
{
	e->ring->slots = calloc(e->ring->units, sizeof(*e->ring->slots));
	e->ring->jobs = calloc(e->ring->units, sizeof(*e->ring->jobs));
	e->ring->rereads = calloc(e->ring->units, sizeof(*e->ring->rereads));
	return e->ring->slots && e->ring->jobs && e->ring->rereads ? 0 : -ENOMEM;
}

void rf_ring_free(rf_engine *e) RF_ALONE
{
	free(e->ring->slots);
	free(e->ring->jobs);
	free(e->ring->rereads);
	e->ring->slots = NULL;
	e->ring->jobs = e->ring->rereads = NULL;
}

void rf_ring_job_push(rf_engine *e, uint64_t seq) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	e->ring->jobs[e->ring->jobs_tail++ & (e->ring->units - 1)] = seq;
}

bool rf_ring_job_pop(rf_engine *e, uint64_t *seq) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->ring->jobs_head == e->ring->jobs_tail)
		return false;
	*seq = e->ring->jobs[e->ring->jobs_head++ & (e->ring->units - 1)];
	return true;
}

void rf_ring_reread_push(rf_engine *e, uint64_t seq) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	e->ring->rereads[e->ring->rereads_tail++ & (e->ring->units - 1)] = seq;
}

bool rf_ring_reread_pop(rf_engine *e, uint64_t *seq) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->ring->rereads_head == e->ring->rereads_tail)
		return false;
	*seq = e->ring->rereads[e->ring->rereads_head++ & (e->ring->units - 1)];
	return true;
}

void rf_ring_reread_unpop(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	assert(e->ring->rereads_head != 0);
	e->ring->rereads_head--;
}

void rf_ring_decode_begin(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	e->ring->decoding++;
}

void rf_ring_decode_end(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	e->ring->decoding--;
}

void rf_ring_tail_advance(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	e->ring->tail_seq++;
}

/* ---------------------------------------------- sequential sub-states */

static const char *const rf_unit_sub_names[RF_SUB_COUNT] = {"none", "more", "again", "seq-wait"};

const char *rf_unit_sub_name(int sub)
{
	return sub >= 0 && sub < RF_SUB_COUNT ? rf_unit_sub_names[sub] : "?";
}

/* The one place a unit's sub-state changes (rf_unit_release clears it). */
void rf_unit_sub_set(rf_engine *e, rf_unit_slot *u, enum rf_unit_sub to) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	(void)e;
	if (rf_debug_on() && u->sub != (uint8_t)to)
		fprintf(stderr, "ringfeed: unit %llu (shard %u, block %u, %s): %s -> %s\n",
		        (unsigned long long)u->seq, u->shard, u->block,
		        rf_unit_state_name(u->state), rf_unit_sub_name(u->sub),
		        rf_unit_sub_name((int)to));
	u->sub = (uint8_t)to;
}

/* ---------------------------------------------------------------- units */

typedef struct rf_deferred_buf {
	struct rf_deferred_buf *next;
	uint64_t bytes;
} rf_deferred_buf;

/* Called with mu held (e->loop is set and cleared under mu). */
void rf_engine_wake_loop(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (!atomic_exchange(&e->wake_pending, true) && e->loop) {
		e->wake.loop++; /* written under mu: teardown clears e->loop under mu */
		rf_loop_wake(e->loop);
	}
}

/* Signals after mu is given are safe: every waiter re-checks its condition
 * under mu, and the counts say who was signalled; the condition variables
 * outlive every thread that can signal them. */
void rf_wake_issue(rf_engine *e, const struct rf_wake_defer *d)
{
	for (uint32_t i = 0; i < d->workers; i++)
		pthread_cond_signal(&e->work_cv);
	if (d->consumer)
		pthread_cond_broadcast(&e->ready_cv);
	for (rf_deferred_buf *b = d->bufs, *next; b; b = next) {
		next = b->next;
		rf_pool_put(e->pool, b, b->bytes);
	}
}

/* A pool buffer nothing refers to any more goes back to the pool once mu
 * is given; its bytes are already released from the budget. */
static void rf_pool_put_later(rf_engine *e, void *buf, uint64_t bytes) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (!buf)
		return;
	rf_deferred_buf *b = buf; /* at least RF_POOL_MIN_BYTES */
	*b = (rf_deferred_buf){.next = e->defer.bufs, .bytes = bytes};
	e->defer.bufs = b;
}

/* A waiting worker not yet signalled gets a signal: at most one per piece
 * of work, none when every worker is busy (it finds the work before it next
 * waits: all of it is looked at under mu). workers_signalled keeps a second
 * signal from going to a worker already woken and not yet back. */
void rf_engine_wake_workers(rf_engine *e, uint32_t n) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	while (n-- > 0 && e->wake.workers_waiting > e->wake.workers_signalled) {
		e->wake.workers_signalled++;
		e->wake.workers++;
		e->defer.workers++;
	}
}

void rf_engine_wait_work(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	e->wake.workers_waiting++;
	e->wake.worker_waits++;
	rf_cond_wait(e, &e->work_cv);
	e->wake.workers_waiting--;
	if (e->wake.workers_signalled > 0) /* a spurious wake-up may take a signal's place */
		e->wake.workers_signalled--;
}

void rf_engine_wake_consumer(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->wake.consumers_waiting <= e->wake.consumers_woken)
		return; /* none waits, or every one is woken already */
	e->wake.consumer += e->wake.consumers_waiting - e->wake.consumers_woken;
	e->wake.consumers_woken = e->wake.consumers_waiting;
	e->defer.consumer = true;
}

void rf_unit_fail(rf_engine *e, rf_unit_slot *u, int code, const char *msg)
    RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_unit_set(e, u, RF_U_FAILED);
	u->err_code = code < 0 ? code : -EIO;
	free(u->err_msg);
	u->err_msg = strdup(msg ? msg : "failed");
	if (u->slab_bytes) {
		rf_budget_release(&e->budget, RF_MEM_DECODED, u->slab_bytes);
		rf_pool_put_later(e, u->slab, u->slab_bytes);
		u->slab = NULL;
		u->slab_bytes = 0;
	}
}

void rf_read_free(rf_engine *e, rf_read *rd) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_budget_release(&e->budget, RF_MEM_FETCH, rd->buf_bytes);
	if (rd->buf)
		rf_pool_put_later(e, rd->buf - rd->buf_shift, rd->buf_bytes);
	rf_read_put(e, rd);
}

void rf_unit_release(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_read *rd = u->read; /* a decoded in_place unit's records are its bytes */
	if (rd && --rd->units_left == 0)
		rf_read_free(e, rd);
	if (u->slab_bytes) {
		rf_budget_release(&e->budget, RF_MEM_DECODED, u->slab_bytes);
		rf_pool_put_later(e, u->slab, u->slab_bytes);
	}
	rf_seq_state_put(e, u);
	free(u->err_msg);
	memset(u, 0, sizeof(*u));
}

bool rf_unit_release_early(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (u->state != RF_U_DECODED || (!u->read && !u->slab_bytes))
		return false;
	rf_read *rd = u->read;
	if (rd && --rd->units_left == 0)
		rf_read_free(e, rd);
	u->read = NULL;
	if (u->slab_bytes) {
		rf_budget_release(&e->budget, RF_MEM_DECODED, u->slab_bytes);
		rf_pool_put_later(e, u->slab, u->slab_bytes);
	}
	u->slab = NULL;
	u->slab_bytes = 0;
	u->base = NULL;
	u->ends = NULL;
	u->uf = NULL;
	rf_seq_state_put(e, u);
	return true;
}

uint32_t rf_ring_blocking_shard(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->ring->frontier_seq < e->sched->seq)
		return rf_slot(e, e->ring->frontier_seq)->shard;
	const rf_unit *u = rf_plan_unit(e->sched->plan, e->sched->unit);
	return u ? u->shard : UINT32_MAX;
}

void rf_frontier_advance(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	for (; e->ring->frontier_seq < e->sched->seq; e->ring->frontier_seq++) {
		uint8_t st = rf_slot(e, e->ring->frontier_seq)->state;
		if (st != RF_U_DECODED && st != RF_U_SKIPPED) /* skipped: resident as nothing */
			break;
	}
}

void rf_engine_finish(rf_engine *e, int code, const char *msg) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (e->coll->final)
		return;
	char hint[RF_NODE_HINT_BYTES] = "";
	if (code == -ENOMEM)
		rf_node_oom_hint(hint, sizeof(hint));
	rf_coll_final_set(e->coll, code, msg, hint);
	rf_engine_wake_consumer(e);
	rf_engine_wake_loop(e);
}

/* Needed work (bytes, for `what`) did not fit and nothing here can free
 * memory. When only the host total refused it, the bytes are held by other
 * loaders, which give them back as their consumers go: keep waiting (the
 * loop thread retries every tick) for up to RF_HOSTBUDGET_FLOOR_MS, then end
 * the stream naming the host budget. Returns true while waiting. mu held. */
bool rf_engine_host_wait(rf_engine *e, uint64_t bytes, const char *what) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (!rf_budget_host_bound(&e->budget, bytes))
		return false;
	rf_error herr = {0};
	if (rf_hostbudget_error(e->host, &herr) < 0) {
		rf_engine_finish(e, herr.code, herr.msg); /* waiting cannot mend it */
		return true;
	}
	uint64_t now = rf_now_ns();
	if (now - rf_memwait_host_since(e->memwait, now) < RF_HOSTBUDGET_FLOOR_MS * 1000000ull)
		return true;
	char m[RF_ERROR_MSG_BYTES];
	rf_hostbudget_info h = {0};
	rf_hostbudget_info_get(e->host, &h);
	snprintf(m, sizeof(m),
	         "host budget '%s' had no room for %s (%llu bytes) for %d ms: %llu of %llu "
	         "bytes held by %u loader(s) (raise --host-budget or lower the loaders' "
	         "budgets)",
	         rf_hostbudget_name(e->host), what, (unsigned long long)bytes,
	         RF_HOSTBUDGET_FLOOR_MS, (unsigned long long)h.used_bytes,
	         (unsigned long long)h.total_bytes, h.members);
	rf_engine_finish(e, RF_E_BUDGET, m);
	return true;
}

void rf_engine_depth_set(rf_engine *e, uint32_t depth) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_sched_depth_set(e->sched, RF_MAX(1u, RF_MIN(depth, (uint32_t)RF_READY_MAX)));
	rf_coll_kick(e->coll);
	if (!e->coll->running)
		rf_engine_wake_workers(e, 1);
	rf_engine_wake_loop(e);
}

/* ------------------------------------------------- sequential shards */

/* A unit of a sequential shard decodes only after the units before it in
 * the ring of the same shard (its blocks are in order there: plan.h): the
 * stream's state goes from one to the next. Looking back over that shard's
 * units: one in flight blocks; one decoded from its bytes does not (it
 * went after those before it); an unused boundary unit (decoded with
 * nothing read) or a failed one is stepped over. */
static bool rf_seq_blocked(rf_engine *e, const rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (!e->indexes[u->shard]->sequential)
		return false;
	for (uint64_t s = u->seq; s-- > e->ring->tail_seq;) {
		const rf_unit_slot *p = rf_slot(e, s);
		if (p->shard != u->shard)
			return false;
		if (p->state == RF_U_READING || p->state == RF_U_FETCHED ||
		    p->state == RF_U_DECODING)
			return true;
		if (p->state == RF_U_DECODED && p->slab)
			return false;
	}
	return false;
}

bool rf_unit_fetched(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_unit_set(e, u, RF_U_FETCHED);
	bool wait = rf_seq_blocked(e, u);
	if (wait)
		rf_unit_sub_set(e, u, RF_SUB_SEQ_WAIT);
	else
		rf_ring_job_push(e, u->seq);
	return !wait;
}

void rf_seq_wake(rf_engine *e) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	uint32_t n = 0;
	for (uint64_t s = e->ring->tail_seq; s < e->sched->seq; s++) {
		rf_unit_slot *u = rf_slot(e, s);
		if (u->sub != RF_SUB_SEQ_WAIT || u->state != RF_U_FETCHED || rf_seq_blocked(e, u))
			continue;
		rf_unit_sub_set(e, u, RF_SUB_NONE);
		rf_ring_job_push(e, u->seq);
		n++;
	}
	rf_engine_wake_workers(e, n);
}

void rf_seq_state_put(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (!u->seq_state)
		return;
	rf_seqs_put(e->seqs, u->seq_state - 1u);
	u->seq_state = 0;
}
