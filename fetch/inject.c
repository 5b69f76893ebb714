/* inject.c - the fault injecting source wrapper (see inject.h for what each
 * fault does and how retries and corruption are handled). A read is a small
 * state machine driven by loop timers and the inner source's completions:
 *
 *   WAIT_START  latency/jitter timer, then held while a stall window lasts
 *   INNER       the inner source reads [offset + done, offset + len)
 *   WAIT_DONE   the completion is held while a stall window lasts
 *   BACKOFF     after a transient fault: capped exponential backoff with
 *               full jitter, then WAIT_START again (bounded attempts)
 *
 * Nothing sleeps: every wait is a loop timer, and the consumer's callback
 * never runs inside rf_source_read (the first step is always a timer). */
#include "inject.h"
#include "list.h"
#include "rng.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

#define RF_INJ_MSG_BYTES       600
#define RF_INJ_BACKOFF_BASE_NS 2000000ull   /* 2 ms */
#define RF_INJ_BACKOFF_CAP_NS  200000000ull /* 200 ms */
#define RF_INJ_TAG_ATTEMPT     0x696e6a6563746131ull
#define RF_INJ_TAG_BACKOFF     0x696e6a6563746132ull
#define RF_INJ_SCRIBBLE        0xA5

typedef enum {
	RF_INJ_NONE,
	RF_INJ_ERROR,
	RF_INJ_RESET,
	RF_INJ_SHORT,
	RF_INJ_CORRUPT,
} rf_inj_fault;

typedef enum {
	RF_INJ_WAIT_START,
	RF_INJ_INNER,
	RF_INJ_WAIT_DONE,
	RF_INJ_BACKOFF,
} rf_inj_state;

typedef struct rf_inj_read rf_inj_read;

typedef struct rf_inj_source {
	rf_source base; /* first */
	rf_source *inner;
	rf_loop *loop;
	rf_inject_spec spec;
	uint64_t name_key; /* FNV-1a of the source name: one fault stream per source */
	uint64_t epoch_ns; /* stall windows are counted from here */
	uint32_t retries;
	uint64_t next_index;
	rf_inject_stats stats;
	rf_list reads; /* of rf_inj_read (in_source), in flight */
} rf_inj_source;

struct rf_inj_read {
	rf_list_node in_source;
	rf_inj_source *src;
	uint8_t *buf;
	uint64_t offset, len;
	uint64_t done; /* bytes already confirmed (a short attempt resumes here) */
	uint64_t index;
	uint32_t attempt; /* 0-based */
	rf_inj_state state;
	rf_inj_fault fault;  /* decided for the current attempt */
	uint64_t delay_ns;   /* latency + jitter of the current attempt */
	uint64_t short_keep; /* bytes a short attempt keeps (< remaining) */
	uint64_t corrupt_at; /* offset into buf */
	uint8_t corrupt_xor; /* nonzero */
	int64_t timer;       /* pending loop timer or -1 */
	rf_fetch_cb cb;
	void *arg;
	char msg[RF_INJ_MSG_BYTES];
};

static const char *const rf_inj_fault_names[] = {"none", "I/O error", "connection reset",
                                                 "short read", "corruption"};

/* Every decision of one attempt, from its key alone (see inject.h). */
static void rf_inj_decide(rf_inj_read *r)
{
	const rf_inject_spec *sp = &r->src->spec;
	rf_rng rng;
	rf_rng_init(&rng, sp->seed, RF_INJ_TAG_ATTEMPT, r->src->name_key, r->index, r->attempt);
	uint64_t u = rf_rng_below(&rng, RF_INJECT_PROB_ONE);
	uint64_t edge[] = {sp->error_p12, sp->reset_p12, sp->short_p12, sp->corrupt_p12};
	r->fault = RF_INJ_NONE;
	uint64_t acc = 0;
	for (int i = 0; i < 4 && r->fault == RF_INJ_NONE; i++) {
		acc += edge[i];
		if (u < acc)
			r->fault = (rf_inj_fault)(RF_INJ_ERROR + i);
	}
	uint64_t j = sp->jitter_ns ? rf_rng_below(&rng, 2 * sp->jitter_ns + 1) : 0;
	uint64_t lo = sp->latency_ns + j;
	r->delay_ns = lo > sp->jitter_ns ? lo - sp->jitter_ns : 0;
	r->short_keep = rf_rng_below(&rng, r->len - r->done);
	r->corrupt_at = rf_rng_below(&rng, r->len);
	r->corrupt_xor = (uint8_t)(1 + rf_rng_below(&rng, 255));
}

/* ns left in the current stall window, 0 when not stalled. */
static uint64_t rf_inj_stall_left(const rf_inj_source *s)
{
	const rf_inject_spec *sp = &s->spec;
	if (!sp->stall_period_ns || !sp->stall_ns)
		return 0;
	uint64_t now = rf_now_ns();
	uint64_t phase = (now - RF_MIN(now, s->epoch_ns)) % sp->stall_period_ns;
	return phase >= sp->stall_period_ns - sp->stall_ns ? sp->stall_period_ns - phase : 0;
}

static void rf_inj_unlink(rf_inj_read *r)
{
	rf_list_remove(&r->src->reads, &r->in_source);
}

/* Ends a read: the consumer's callback runs last, after the read left the
 * source's list, so it may close the source. */
static void rf_inj_finish(rf_inj_read *r, int64_t res)
{
	rf_inj_unlink(r);
	r->cb(r->arg, res, res < 0 ? r->msg : NULL);
	free(r);
}

static void rf_inj_fail_now(rf_inj_read *r, int code, const char *what)
{
	snprintf(r->msg, sizeof(r->msg), "%s: bytes [%llu, %llu): %s (injector: %s)",
	         r->src->base.name, (unsigned long long)r->offset,
	         (unsigned long long)(r->offset + r->len), what, strerror(-code));
	rf_inj_finish(r, code);
}

static void rf_inj_on_timer(void *arg, int res);

/* Arms the read's timer; on failure (loop full) the read fails, unless
 * quiet, where the caller gets the error instead (inside rf_source_read). */
static int rf_inj_arm(rf_inj_read *r, rf_inj_state state, uint64_t delay_ns, bool quiet)
{
	r->state = state;
	r->timer = rf_loop_timer(r->src->loop, delay_ns, rf_inj_on_timer, r);
	if (r->timer < 0 && !quiet)
		rf_inj_fail_now(r, (int)r->timer, "could not arm an injector timer (loop full)");
	return r->timer < 0 ? (int)r->timer : 0;
}

static int rf_inj_start_attempt(rf_inj_read *r, bool quiet)
{
	rf_inj_decide(r);
	r->src->stats.attempts++;
	if (r->delay_ns)
		r->src->stats.delayed++;
	return rf_inj_arm(r, RF_INJ_WAIT_START, r->delay_ns, quiet);
}

/* A transient fault on this attempt: retry (bounded) or give up. */
static void rf_inj_transient(rf_inj_read *r, int code)
{
	rf_inj_source *s = r->src;
	if (r->attempt >= s->retries) {
		char what[160];
		snprintf(what, sizeof(what), "injected %s on attempt %u of %u, retries exhausted",
		         rf_inj_fault_names[r->fault], r->attempt + 1, s->retries + 1);
		s->stats.failed++;
		rf_inj_fail_now(r, code, what);
		return;
	}
	s->stats.retries++;
	r->attempt++;
	unsigned shift = RF_MIN(r->attempt - 1, 20u);
	uint64_t cap = RF_MIN(RF_INJ_BACKOFF_CAP_NS, RF_INJ_BACKOFF_BASE_NS << shift);
	rf_rng rng;
	rf_rng_init(&rng, s->spec.seed, RF_INJ_TAG_BACKOFF, s->name_key, r->index, r->attempt);
	rf_inj_arm(r, RF_INJ_BACKOFF, rf_rng_below(&rng, cap + 1), false);
}

static void rf_inj_on_inner(void *arg, int64_t res, const char *msg);

/* After latency (and any stall): inject an error, or let the inner source read. */
static void rf_inj_begin(rf_inj_read *r)
{
	rf_inj_source *s = r->src;
	if (r->fault == RF_INJ_ERROR) {
		s->stats.errors++;
		rf_inj_transient(r, -EIO);
		return;
	}
	r->state = RF_INJ_INNER;
	int rc = rf_source_read(s->inner, r->offset + r->done, r->len - r->done, r->buf + r->done,
	                        rf_inj_on_inner, r);
	if (rc < 0)
		rf_inj_fail_now(r, rc, "the wrapped source refused the read");
}

static void rf_inj_deliver(rf_inj_read *r)
{
	uint64_t left = rf_inj_stall_left(r->src);
	if (left) {
		r->src->stats.stalled++;
		rf_inj_arm(r, RF_INJ_WAIT_DONE, left, false);
		return;
	}
	rf_inj_finish(r, (int64_t)r->len);
}

static void rf_inj_on_inner(void *arg, int64_t res, const char *msg)
{
	rf_inj_read *r = arg;
	rf_inj_source *s = r->src;
	if (res < 0) { /* the inner source's own failure, after its own retries */
		snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "read failed");
		rf_inj_finish(r, res);
		return;
	}
	uint64_t left = r->len - r->done;
	switch (r->fault) {
	case RF_INJ_RESET:
		s->stats.resets++;
		memset(r->buf + r->done, RF_INJ_SCRIBBLE, left);
		rf_inj_transient(r, -ECONNRESET);
		return;
	case RF_INJ_SHORT:
		s->stats.shorts++;
		memset(r->buf + r->done + r->short_keep, RF_INJ_SCRIBBLE, left - r->short_keep);
		r->done += r->short_keep;
		rf_inj_transient(r, -EIO);
		return;
	case RF_INJ_CORRUPT:
		s->stats.corrupts++;
		r->buf[r->corrupt_at] ^= r->corrupt_xor;
		break;
	default:
		break;
	}
	r->done = r->len;
	rf_inj_deliver(r);
}

static void rf_inj_on_timer(void *arg, int res)
{
	rf_inj_read *r = arg;
	r->timer = -1;
	if (res < 0 && res != -ETIME) {
		rf_inj_fail_now(r, res, "an injector timer failed");
		return;
	}
	uint64_t left;
	switch (r->state) {
	case RF_INJ_WAIT_START:
		left = rf_inj_stall_left(r->src);
		if (left) {
			r->src->stats.stalled++;
			rf_inj_arm(r, RF_INJ_WAIT_START, left, false);
			return;
		}
		rf_inj_begin(r);
		return;
	case RF_INJ_WAIT_DONE:
		rf_inj_deliver(r);
		return;
	case RF_INJ_BACKOFF:
		rf_inj_start_attempt(r, false);
		return;
	case RF_INJ_INNER:
		break;
	}
	rf_inj_fail_now(r, -EFAULT, "injector timer fired in the wrong state");
}

static int rf_inj_read_range(rf_source *base, uint64_t offset, uint64_t len, void *buf,
                             rf_fetch_cb cb, void *arg)
{
	rf_inj_source *s = (rf_inj_source *)base;
	uint64_t end;
	if (!rf_add_u64(offset, len, &end) || end > base->size || len == 0 || !buf || !cb)
		return -EINVAL;
	rf_inj_read *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (rf_inj_read){.src = s,
	                   .buf = buf,
	                   .offset = offset,
	                   .len = len,
	                   .timer = -1,
	                   .index = s->next_index++,
	                   .cb = cb,
	                   .arg = arg};
	rf_list_push_front(&s->reads, &r->in_source);
	/* Always a timer first: the callback never runs inside this call. */
	int rc = rf_inj_start_attempt(r, true);
	if (rc < 0) {
		rf_inj_unlink(r);
		free(r);
		return rc;
	}
	s->stats.reads++;
	return 0;
}

static void rf_inj_close(rf_source *base)
{
	rf_inj_source *s = (rf_inj_source *)base;
	rf_source_close(s->inner); /* its reads are cancelled: no callbacks after this */
	while (!rf_list_empty(&s->reads)) {
		rf_inj_read *r = rf_list_entry(s->reads.head, rf_inj_read, in_source);
		rf_loop_cancel(s->loop, r->timer);
		rf_inj_unlink(r);
		free(r);
	}
	rf_source_free_base(base);
	free(s);
}

/* The injector changes bytes in transit, never the object's version. */
static size_t rf_inj_validator(const rf_source *base, char *buf, size_t cap)
{
	return rf_source_validator(((const rf_inj_source *)base)->inner, buf, cap);
}

static const rf_source_ops rf_inj_ops = {
    .read = rf_inj_read_range, .close = rf_inj_close, .validator = rf_inj_validator};

static void rf_inj_on_open(void *arg, int64_t res, const char *msg)
{
	rf_inj_source *s = arg;
	if (res >= 0)
		s->base.size = s->inner->size;
	rf_source_opened(&s->base, res, msg);
}

static int inject_wrap(rf_fetch *f, rf_source *inner, const char *spec, rf_source **out,
                       rf_error *err)
{
	*out = NULL;
	rf_inject_spec parsed;
	RF_TRY(rf_inject_parse(spec, &parsed, err));
	rf_inj_source *s = calloc(1, sizeof(*s));
	if (!s || rf_source_init_base(&s->base, &rf_inj_ops, f, inner->name) < 0) {
		free(s);
		return rf_fail(err, -ENOMEM, "%s: out of memory for the fault injector",
		               inner->name);
	}
	s->inner = inner;
	s->loop = rf_fetch_loop(f);
	s->spec = parsed;
	s->name_key =
	    inner->name ? rf_fnv1a(RF_FNV_OFFSET, inner->name, strlen(inner->name)) : RF_FNV_OFFSET;
	s->epoch_ns = rf_fetch_epoch_ns(f);
	s->retries = RF_MIN(rf_fetch_opts(f)->retries, 1000u);
	s->base.size = inner->size;
	/* The caller's open callback now waits for the wrapper's size. */
	s->base.open_cb = inner->open_cb;
	s->base.open_arg = inner->open_arg;
	inner->open_cb = rf_inj_on_open;
	inner->open_arg = s;
	*out = &s->base;
	return 0;
}

static int inject_check(const char *spec, rf_error *err)
{
	rf_inject_spec parsed;
	return rf_inject_parse(spec, &parsed, err);
}

/* fetch.c's wrapper row: fetch.c calls the injector only through it. */
const rf_source_wrapper rf_source_wrapper_inject = {
    .name = "inject", .check = inject_check, .wrap = inject_wrap};

bool rf_source_is_injector(const rf_source *s)
{
	return s && s->ops == &rf_inj_ops;
}

int rf_inject_stats_get(const rf_source *s, rf_inject_stats *out)
{
	if (!rf_source_is_injector(s))
		return -EINVAL;
	*out = ((const rf_inj_source *)s)->stats;
	return 0;
}
