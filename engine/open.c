/* open.c - the open phase on the loop thread: every shard's layout learned
 * through its format (shards/format.h), RF_OPEN_CONCURRENCY local shards at
 * a time (RF_OPEN_CONCURRENCY_REMOTE when some are remote, with more HTTP
 * connections per host meanwhile), through the fetch layer. The engine
 * knows no format here: a format asks for byte ranges step by step (of the
 * shard, or of a sidecar object), and says beforehand the most it will
 * allocate; every buffer and bound is reserved (RF_MEM_METADATA) before it
 * exists. A range inside the bytes the previous step received is served
 * from them. Nothing here blocks except the wait inside the loop. */
#include "engine.h"
#include "format.h"
#include "icache.h"
#include "util.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#define RF_OPEN_WAIT_NS      100000000ull
#define RF_OPEN_SAY_AFTER_NS 2000000000ull /* an open this long says how far it got */
#define RF_OPEN_SAY_EVERY_NS 2000000000ull /* ... and again this often */
#define RF_OPEN_STEPS_MAX    (1u << 20)    /* a format asking for more is broken */

_Static_assert(RF_OPEN_CONCURRENCY <= RF_OPEN_CONCURRENCY_REMOTE,
               "e->open->wait holds one entry per open in flight");

/* One shard's open (rf_shard.stage): moved only by rf_open_stage_set. */
enum rf_open_stage {
	RF_OPEN_IDLE = 0,
	RF_OPEN_OPENING,      /* the shard's source is opening */
	RF_OPEN_SIDE_OPENING, /* the sidecar object's source is opening */
	RF_OPEN_READING,      /* a range the format asked for is being read */
	RF_OPEN_DONE,
	RF_OPEN_WAIT_BUDGET, /* the next range waits for budget (others hold it) */
	RF_OPEN_STAGES
};

static const char *const rf_open_stage_names[RF_OPEN_STAGES] = {
    "idle", "opening", "side-opening", "reading", "done", "wait-budget"};

/* The one place a shard's open changes stage (the loop thread's). */
static void rf_open_stage_set(rf_shard *s, enum rf_open_stage to)
{
	if (rf_debug_on() && s->stage != (int)to)
		fprintf(stderr, "ringfeed: shard %s: open %s -> %s\n", s->name,
		        s->stage >= 0 && s->stage < RF_OPEN_STAGES ? rf_open_stage_names[s->stage]
		                                                   : "?",
		        rf_open_stage_names[to]);
	s->stage = (int)to;
}

/* ------------------------------------------------ the loader's phase */

static const char *const rf_open_phase_names[RF_PHASE_COUNT] = {"opening", "indexed", "failed",
                                                                "running"};

const char *rf_open_phase_name(int phase)
{
	return phase >= 0 && phase < RF_PHASE_COUNT ? rf_open_phase_names[phase] : "?";
}

/* OPENING -> INDEXED | FAILED (the loop thread), INDEXED -> RUNNING (rf_open). */
static bool rf_open_phase_move_allowed(int from, int to)
{
	return (from == RF_PHASE_OPENING && (to == RF_PHASE_INDEXED || to == RF_PHASE_FAILED)) ||
	       (from == RF_PHASE_INDEXED && to == RF_PHASE_RUNNING);
}

void rf_open_phase_set(rf_engine *e, enum rf_open_phase to) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (rf_debug_on())
		fprintf(stderr, "ringfeed: open phase %s -> %s\n",
		        rf_open_phase_name(e->open->phase), rf_open_phase_name(to));
	assert(rf_open_phase_move_allowed(e->open->phase, to) && "open phase move not allowed");
	(void)rf_open_phase_move_allowed;
	e->open->phase = to;
}

void rf_open_phase_end(rf_engine *e, int rc, const char *msg) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (msg)
		snprintf(e->open->msg, sizeof(e->open->msg), "%s", msg);
	e->open->code = rc;
	rf_open_phase_set(e, rc < 0 ? RF_PHASE_FAILED : RF_PHASE_INDEXED);
}

/* One shard's open in progress (a slot of e->open->slots). */
typedef struct rf_open_slot {
	rf_fmt_open fo;
	uint8_t *buf; /* the last delivered range (owned), RF_MEM_METADATA buf_res */
	uint64_t buf_offset, buf_len, buf_res;
	bool buf_side;      /* buf holds bytes of the sidecar object */
	uint64_t bound_res; /* held for want.parse_bound until the step returns */
	uint64_t read_offset, read_len;
	bool read_side;
	rf_source *side; /* the sidecar being read, and its URL (may carry credentials) */
	char *side_url;
	bool side_cached; /* side_url's bytes are the index cache's entry, in buf */
	bool no_cache;    /* the entry failed the format's checks: open without it */
	bool from_bundle; /* buf holds the index bundle's copy of the shard's tail */
	bool no_bundle;   /* those bytes failed the format's checks: open without them */
	uint32_t steps;
	uint64_t t0_ns;        /* when its open started (the progress line's slowest) */
	const rf_shard *shard; /* whose open it is (NULL: free) */
	bool stepping;         /* rf_open_step runs this slot's steps (below) */
	bool step_due;         /* a step's bytes are ready: the running rf_open_step takes it */
	uint32_t next_free;
	int first_code; /* the first format's error, when another is tried (0: none) */
	char first_msg[RF_ERROR_MSG_BYTES];
} rf_open_slot;

static void rf_meta_take(rf_engine *e, uint64_t *held, uint64_t n)
{
	*held += n;
	e->open->meta_bytes += n;
}

static void rf_meta_release(rf_engine *e, uint64_t *held, uint64_t n)
{
	assert(n <= *held);
	rf_budget_release(&e->budget, RF_MEM_METADATA, n);
	e->open->meta_bytes -= n;
	*held -= n;
}

static void rf_slot_buf_free(rf_engine *e, rf_open_slot *o)
{
	free(o->buf);
	o->buf = NULL;
	o->buf_len = 0;
	e->open->transient_bytes -= o->buf_res;
	rf_meta_release(e, &o->buf_res, o->buf_res);
}

/* The slot back to the free list; what it holds goes back to the budget.
 * Its buffer is freed only when no read is in flight into it. */
static void rf_slot_put(rf_engine *e, rf_shard *s)
{
	rf_open_slot *o = s->open;
	if (!o)
		return;
	if (s->fmt && s->fmt->open_abort)
		s->fmt->open_abort(&o->fo);
	rf_slot_buf_free(e, o);
	rf_meta_release(e, &o->bound_res, o->bound_res);
	rf_source_close(o->side);
	o->side = NULL;
	free(o->side_url);
	o->side_url = NULL;
	o->next_free = e->open->free;
	e->open->free = (uint32_t)(o - e->open->slots);
	o->shard = NULL;
	s->open = NULL;
}

/* A failed shard gives back its layout's reservation too. */
static void rf_open_finish(rf_shard *s, int code, const char *msg)
{
	rf_engine *e = s->engine;
	rf_open_stage_set(s, RF_OPEN_DONE);
	/* another format tried the name and found it not its own either (or its
	 * sidecar absent): the first format's words, as the name chose it */
	if (code < 0 && s->open && s->open->first_code && (s->open->fo.final || code == -ENOENT)) {
		code = s->open->first_code;
		msg = s->open->first_msg;
	}
	if (code < 0) {
		if (e->open->failed++ == 0 || s->idx < e->open->failed_idx)
			e->open->failed_idx = s->idx;
		char m[RF_ERROR_MSG_BYTES];
		snprintf(m, sizeof(m), "%s", msg && *msg ? msg : "failed");
		size_t l = strlen(m);
		if (s->listed) /* name the line that listed it */
			snprintf(m + l, sizeof(m) - l, " (listed in manifest %s line %llu)",
			         s->manifest, (unsigned long long)s->listed_line);
		s->err_code = code;
		free(s->err_msg);
		s->err_msg = strdup(m);
		if (s->index)
			s->fmt->close(s->index, s->fmt_priv);
		s->index = NULL;
		s->fmt_priv = NULL;
		rf_meta_release(e, &s->fmt_held, s->fmt_held);
	}
	rf_slot_put(e, s); /* no read of this shard is in flight now */
	e->open->inflight--;
	if (rf_shard_is_local(s))
		e->open->inflight_local--;
	e->open->done++;
}

static void rf_open_fail(rf_shard *s, int rc, rf_error *err)
{
	if (s->rereads) {
		size_t l = strlen(err->msg);
		snprintf(err->msg + l, sizeof(err->msg) - l, " (still after %u re-reads)",
		         s->rereads);
	}
	rf_open_finish(s, rc, err->msg);
}

static void rf_open_cb(void *arg, int64_t res, const char *msg);

static void rf_open_read(rf_shard *s, bool side, uint64_t offset, uint64_t len)
{
	rf_open_slot *o = s->open;
	o->read_side = side;
	o->read_offset = offset;
	o->read_len = len;
	rf_open_stage_set(s, RF_OPEN_READING);
	uint8_t *dst = o->buf + (offset - o->buf_offset); /* [offset, +len) lies in buf */
	int rc = rf_source_read(side ? o->side : s->src, offset, len, dst, rf_open_cb, s);
	if (rc < 0) {
		char m[RF_ERROR_MSG_BYTES];
		snprintf(m, sizeof(m), "shard %s: reading bytes [%llu, %llu)%s%s: %s", s->name,
		         (unsigned long long)offset, (unsigned long long)(offset + len),
		         side ? " of " : "", side ? rf_source_name(o->side) : "", strerror(-rc));
		rf_open_stage_set(s, RF_OPEN_IDLE); /* nothing in flight */
		rf_open_finish(s, rc, m);
	}
}

/* A local file read as it is (no injector in between to damage bytes). */
static bool rf_shard_is_plain_file(const rf_engine *e, const rf_shard *s)
{
	const char *inject = rf_cfg_str(e->cfg, RF_CFG_inject);
	return rf_shard_is_local(s) && !(inject && *inject);
}

static bool rf_want_in_buf(const rf_open_slot *o)
{
	const rf_fmt_want *w = &o->fo.want;
	return o->buf && (w->object != NULL) == o->buf_side && w->offset >= o->buf_offset &&
	       w->offset + w->len <= o->buf_offset + o->buf_len;
}

/* Takes shard idx off the (short) list of shards waiting for budget. */
static void rf_open_unwait(rf_engine *e, uint32_t idx)
{
	uint32_t i = 0;
	while (i < e->open->waiting && e->open->wait[i] != idx)
		i++;
	assert(i < e->open->waiting);
	memmove(&e->open->wait[i], &e->open->wait[i + 1],
	        (e->open->waiting - i - 1) * sizeof(e->open->wait[0]));
	e->open->waiting--;
}

/* A step failed a check: the bytes may have been damaged in transit, so
 * read the same range again, exactly, at most retries times per shard. An
 * error the format calls final (the magic is absent) on a plain local file
 * is not re-read: the same bytes say the same again. True when it started. */
static bool rf_open_reread(rf_shard *s, int rc)
{
	rf_engine *e = s->engine;
	rf_open_slot *o = s->open;
	if (rc != RF_E_CORRUPT || s->rereads >= e->rereads_max)
		return false;
	if (o->fo.final && rf_shard_is_plain_file(e, s))
		return false;
	/* the step's bytes (the want, or the shorter tail delivered) lie in
	 * the buffer: read them again in place */
	const rf_fmt_open *fo = &o->fo;
	if (fo->got_len == 0 || !o->buf || fo->got_offset < o->buf_offset ||
	    fo->got_offset + fo->got_len > o->buf_offset + o->buf_len)
		return false;
	s->rereads++;
	rf_engine_lock(e);
	e->st->rereads++;
	rf_engine_unlock(e);
	rf_open_read(s, o->buf_side, fo->got_offset, fo->got_len);
	return true;
}

static int rf_open_budget_fail(rf_shard *s, uint64_t need, uint64_t len, rf_error *err)
{
	rf_engine *e = s->engine;
	char lim[32], held[32];
	const rf_fmt_want *w = &s->open->fo.want;
	/* what the step reads: a sidecar (an index file), else the shard's own
	 * bytes (a footer and index, or a header scan of a tar without one) */
	const char *what = w->object ? "of its index file"
	                             : "of the shard itself (its footer and index, or a tar's "
	                               "header scan)";
	return rf_fail(err, RF_E_BUDGET,
	               "budget %s is too small for the shard indexes: shard %s needs %llu bytes "
	               "at open for a read of %llu bytes %s at offset %llu and what parsing them "
	               "may allocate, while %s of metadata is held for the %u shard(s) opened so "
	               "far (raise budget)",
	               rf_fmt_bytes(e->budget.limit_bytes, lim, sizeof(lim)), s->name,
	               (unsigned long long)need, (unsigned long long)len, what,
	               (unsigned long long)w->offset,
	               rf_fmt_bytes(e->open->meta_bytes, held, sizeof(held)), e->open->done);
}

/* Reserves the next range's buffer and the parse bound. Returns 0, 1 when
 * it must wait (other shards' buffers, freed as they parse, hold the room),
 * or the error: nothing transient is left to free. *len: the bytes to read
 * (the want's, or its min_len when the budget has no room for them). A
 * remote shard takes the whole want too: a format asks a remote object for
 * a generous first range (.rfs its last 8 KiB, Parquet its last 64 KiB)
 * because a second request costs the store's latency again, while the
 * extra bytes cost next to nothing. */
static int rf_open_reserve(rf_shard *s, bool from_buf, uint64_t *len, rf_error *err)
{
	rf_engine *e = s->engine;
	rf_open_slot *o = s->open;
	const rf_fmt_want *w = &o->fo.want;
	uint64_t bound = w->parse_bound;
	if (from_buf) {
		*len = 0;
	} else {
		*len = w->len;
		if (w->min_len &&
		    rf_budget_reserve(&e->budget, RF_MEM_METADATA, *len + bound, 0) == 0)
			goto reserved;
		if (w->min_len)
			*len = w->min_len;
	}
	if (rf_budget_reserve(&e->budget, RF_MEM_METADATA, *len + bound, 0) != 0) {
		if (e->open->transient_bytes > 0)
			return 1;
		return rf_open_budget_fail(s, *len + bound, w->len, err);
	}
reserved:
	rf_meta_take(e, &o->buf_res, *len);
	rf_meta_take(e, &o->bound_res, bound);
	e->open->transient_bytes += *len;
	return 0;
}

/* Checks the format's request against the object it names. */
static int rf_want_check(rf_shard *s, uint64_t size, rf_error *err)
{
	const rf_fmt_want *w = &s->open->fo.want;
	uint64_t end;
	if (!rf_add_u64(w->offset, w->len, &end) || end > size || w->min_len > w->len ||
	    s->open->steps > RF_OPEN_STEPS_MAX)
		return rf_fail(err, -EINVAL,
		               "shard %s: the %s format asked for bytes [%llu, +%llu) of a "
		               "%llu-byte object (step %u)",
		               s->name, s->fmt->name, (unsigned long long)w->offset,
		               (unsigned long long)w->len, (unsigned long long)size,
		               s->open->steps);
	return 0;
}

static void rf_open_want(rf_shard *s);
static void rf_open_begin(rf_shard *s);

/* ------------------------------------------------------ the index cache
 *
 * For a shard whose optional sidecar (a tar's PREFIX.idx) does not exist
 * and whose layout is costly to learn (a header scan reads the whole
 * shard), the index cache (icache.c) keeps the layout as that sidecar's
 * bytes (rf_format.sidecar_write), keyed by the shard's URL without
 * secrets, its size and its version (the source's ETag / mtime, or the
 * listing's ETag before any read). A hit answers the sidecar's wants from
 * the entry (reserved as metadata before it is read): the format checks
 * it as it checks a file's, and decode checks every unit against the tar.
 * An entry the format refuses is dropped: the open starts again without
 * the cache. A scan's layout is put once the shard's open is done. */

static void rf_cache_key(const rf_shard *s, char *validator, size_t cap, rf_icache_key *k)
{
	validator[0] = 0;
	if (s->src)
		rf_source_validator(s->src, validator, cap);
	if (!validator[0] && s->validator)
		snprintf(validator, cap, "%s", s->validator);
	*k = (rf_icache_key){.url = s->url,
	                     .size = rf_source_size(s->src),
	                     .validator = validator,
	                     .format = s->fmt->cache_tag,
	                     .format_version = s->fmt->cache_version};
}

static bool rf_open_cache_get(rf_shard *s)
{
	rf_engine *e = s->engine;
	rf_open_slot *o = s->open;
	if (!e->open->icache && e->index_cache_off[0] && !e->open->cache_off_said &&
	    s->fmt->sidecar_write && s->fmt->cache_tag) { /* the first shard it would serve */
		e->open->cache_off_said = true;
		fprintf(stderr, "ringfeed: %s (tar layouts are scanned again at each open)\n",
		        e->index_cache_off);
	}
	if (!e->open->icache || o->no_cache || !s->fmt->sidecar_write || !s->fmt->cache_tag)
		return false;
	char v[RF_SOURCE_VALIDATOR_BYTES];
	rf_icache_key k;
	rf_cache_key(s, v, sizeof(v), &k);
	uint64_t len = 0;
	if (rf_icache_stat(e->open->icache, &k, &len) != 0 || len == 0) {
		e->open->cache_misses++;
		return false;
	}
	rf_slot_buf_free(e, o);
	if (rf_budget_reserve(&e->budget, RF_MEM_METADATA, len, 0) != 0)
		return false; /* no room now: the store's way */
	rf_meta_take(e, &o->buf_res, len);
	e->open->transient_bytes += len;
	uint64_t got = 0;
	if (!(o->buf = malloc(len)) || rf_icache_get(e->open->icache, &k, o->buf, len, &got) != 0 ||
	    got != len) {
		rf_slot_buf_free(e, o);
		e->open->cache_misses++;
		return false;
	}
	o->buf_side = true;
	o->buf_offset = 0;
	o->buf_len = len;
	o->side_cached = true;
	e->open->cache_hits++;
	return true; /* side_url stays: the want's object */
}

/* The shard's open back to its start: what the format, the buffer, the
 * bounds and the sidecar held goes back (rf_open_begin starts it again). */
static void rf_open_reset(rf_shard *s)
{
	rf_engine *e = s->engine;
	rf_open_slot *o = s->open;
	if (s->fmt->open_abort)
		s->fmt->open_abort(&o->fo);
	rf_slot_buf_free(e, o);
	rf_meta_release(e, &o->bound_res, o->bound_res);
	rf_meta_release(e, &s->fmt_held, s->fmt_held);
	rf_source_close(o->side);
	o->side = NULL;
	free(o->side_url);
	o->side_url = NULL;
	o->side_cached = false;
	o->from_bundle = false;
	o->steps = 0;
	s->rereads = 0;
}

/* The entry failed the format's checks (or asked what it does not hold):
 * the shard's open starts over, holding nothing of it, without the cache. */
static void rf_open_cache_drop(rf_shard *s)
{
	rf_engine *e = s->engine;
	rf_open_reset(s);
	s->open->no_cache = true;
	e->open->cache_hits--;
	e->open->cache_misses++;
	rf_open_begin(s);
}

/* A layout learned the costly way, kept for the next open. Transient
 * memory (the sidecar's text) is the stream's; a failure is only a miss
 * next time. */
static void rf_open_cache_put(rf_shard *s)
{
	rf_engine *e = s->engine;
	rf_open_slot *o = s->open;
	if (!e->open->icache || o->side_cached || !s->fmt->sidecar_write || !s->fmt->cacheable ||
	    !s->fmt->cacheable(s->fmt_priv))
		return;
	char v[RF_SOURCE_VALIDATOR_BYTES];
	rf_icache_key k;
	rf_cache_key(s, v, sizeof(v), &k);
	if (!rf_icache_cacheable(&k))
		return;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	rf_error err = {0};
	int rc = f ? s->fmt->sidecar_write(s->index, s->fmt_priv, f, s->name, &err) : -ENOMEM;
	if (f && fclose(f) != 0)
		rc = -EIO;
	if (rc == 0 && len > 0 && rf_icache_put(e->open->icache, &k, buf, len) == 0)
		e->open->cache_puts++;
	free(buf);
}

/* The shard's tail from the index bundle (shards/bundle.h) becomes the
 * slot's buffer, with its reservation (the shard list's metadata), when the
 * object is the size it was written for: the format's first ranges are
 * served from it with no request. */
static void rf_open_bundle_get(rf_shard *s)
{
	rf_engine *e = s->engine;
	rf_open_slot *o = s->open;
	uint64_t size = rf_source_size(s->src);
	if (!s->tail || o->no_bundle || size != s->tail_file_bytes || s->tail_len > size)
		return;
	rf_slot_buf_free(e, o);
	o->buf = s->tail;
	o->buf_res = o->buf_len = s->tail_len; /* already in e->open->meta_bytes */
	e->open->transient_bytes += s->tail_len;
	o->buf_side = false;
	o->buf_offset = size - s->tail_len;
	o->from_bundle = true;
	s->tail = NULL;
	s->tail_len = 0;
}

/* Tails no open took (an object of another size, an open that failed
 * first): freed with their reservation once the open phase ends. */
static void rf_open_tails_free(rf_engine *e)
{
	for (uint32_t i = 0; i < e->nshards; i++) {
		rf_shard *s = &e->shards[i];
		if (!s->tail)
			continue;
		uint64_t held = s->tail_len;
		rf_meta_release(e, &held, held);
		free(s->tail);
		s->tail = NULL;
		s->tail_len = 0;
	}
}

/* The format refused what the bundle served, or its index disagrees with
 * the manifest (a bundle older than the shard): the open starts over from
 * the store, holding nothing of it. */
static void rf_open_bundle_drop(rf_shard *s)
{
	rf_open_reset(s);
	s->open->no_bundle = true;
	s->engine->open->bundle_drops++;
	rf_open_begin(s);
}

/* A name the format took only as MAYBE, which its bytes say is not its own
 * (a final error): the next format that may read the name starts over on
 * the same source, holding nothing of the first (a remote PREFIX.bin: not
 * llm.c, not .rfs, Megatron's tokens). If none reads it, the first
 * format's error is the message. True when another format started. */
static bool rf_open_fallback(rf_shard *s, int rc, const rf_error *err)
{
	rf_open_slot *o = s->open;
	if (!o->fo.final || rf_format_claim(s->fmt, s->url) != RF_FMT_MAYBE)
		return false;
	const rf_format *next = rf_format_next(s->url, s->fmt);
	if (!next)
		return false;
	if (!o->first_code) {
		o->first_code = rc;
		snprintf(o->first_msg, sizeof(o->first_msg), "%s", err->msg);
	}
	rf_open_reset(s);
	s->fmt = next;
	rf_open_begin(s);
	return true;
}

/* Runs the format's step on the delivered bytes (o->fo.got...), then does
 * what it asks: another range, done, or the error. */
static void rf_open_step_once(rf_shard *s)
{
	rf_engine *e = s->engine;
	rf_open_slot *o = s->open;
	rf_error err = {0};
	o->steps++;
	int rc = s->fmt->open_step(&o->fo, &err);
	o->fo.absent = false; /* said once: the next delivery is bytes */
	/* the format now holds held_bytes: at most what it held plus the bound */
	uint64_t had = s->fmt_held + o->bound_res;
	if (rc >= 0 && o->fo.held_bytes > had)
		rc = rf_fail(&err, -EOVERFLOW,
		             "shard %s: the %s format holds %llu bytes, more than the %llu it "
		             "declared",
		             s->name, s->fmt->name, (unsigned long long)o->fo.held_bytes,
		             (unsigned long long)had);
	if (rc >= 0) { /* keep what it holds; the rest of the bound goes back */
		rf_budget_release(&e->budget, RF_MEM_METADATA, had - o->fo.held_bytes);
		e->open->meta_bytes -= had - o->fo.held_bytes;
		s->fmt_held = o->fo.held_bytes;
		o->bound_res = 0;
	}
	if (rc < 0 && o->side_cached) { /* the cache's entry, not the store's bytes */
		rf_open_cache_drop(s);
		return;
	}
	if (rc < 0 && o->from_bundle) { /* the bundle's copy, not the store's bytes */
		rf_open_bundle_drop(s);
		return;
	}
	if (rc < 0) {
		if (!rf_open_reread(s, rc) && !rf_open_fallback(s, rc, &err))
			rf_open_fail(s, rc, &err);
		return;
	}
	if (rc == RF_FMT_NEED) {
		rf_open_want(s);
		return;
	}
	if (o->from_bundle && s->listed && o->fo.index->records != s->listed_records) {
		/* the bundle's copy disagrees with the manifest: an older bundle
		 * beside newer shards; the store's bytes decide */
		s->fmt->close(o->fo.index, o->fo.priv);
		o->fo.index = NULL;
		o->fo.priv = NULL;
		rf_open_bundle_drop(s);
		return;
	}
	s->index = o->fo.index;
	s->fmt_priv = o->fo.priv;
	s->in_place = o->fo.in_place;
	if (s->listed && s->index->records != s->listed_records) {
		rf_fail(&err, RF_E_CORRUPT, "shard %s: holds %llu records, the manifest says %llu",
		        rf_source_name(s->src), (unsigned long long)s->index->records,
		        (unsigned long long)s->listed_records);
		rf_open_finish(s, err.code, err.msg);
		return;
	}
	if (o->from_bundle) /* every range it asked for came from the bundle */
		e->open->bundle_opens++;
	rf_open_cache_put(s);
	rf_open_finish(s, 0, NULL);
}

/* Runs the shard's steps while their bytes are at hand. A range served
 * from the buffer, an absent sidecar, a restart without the cache or with
 * another format, or a read that completes at once all come back here
 * from inside a step: that call only marks the next step due, and the
 * loop below runs it. So the depth of calls never grows with the steps a
 * shard asks for (a compressed tar of zeros asks thousands, each served
 * from the one read it made). */
static void rf_open_step(rf_shard *s)
{
	rf_open_slot *o = s->open;
	o->step_due = true;
	if (o->stepping)
		return;
	o->stepping = true;
	while (s->open == o && o->step_due) {
		o->step_due = false;
		rf_open_step_once(s);
	}
	o->stepping = false; /* also when the open finished (the slot is free) */
}

/* Delivers [want) from the buffer (it lies inside): no read. */
static void rf_open_serve(rf_shard *s)
{
	rf_open_slot *o = s->open;
	const rf_fmt_want *w = &o->fo.want;
	static const uint8_t none[1];
	o->fo.got = w->len ? o->buf + (w->offset - o->buf_offset) : none;
	o->fo.got_offset = w->offset;
	o->fo.got_len = w->len;
	rf_open_step(s);
}

/* The optional sidecar the want names does not exist (rc, its open's
 * error, says so): the format's next step learns it (absent), nothing is
 * read or reserved. The failed source is closed later (not from inside
 * its own callback). False when rc is another error. */
static bool rf_open_side_absent(rf_shard *s, int rc)
{
	rf_open_slot *o = s->open;
	const rf_fmt_want *w = &o->fo.want;
	if (!w->optional || !rf_fmt_side_absent(w->object, rc))
		return false;
	rf_open_stage_set(s, RF_OPEN_IDLE);
	if (rf_open_cache_get(s)) { /* the cache's entry stands for the sidecar */
		rf_open_want(s);
		return true;
	}
	free(o->side_url);
	o->side_url = NULL;
	o->fo.absent = true;
	o->fo.got = NULL;
	o->fo.got_offset = o->fo.got_len = o->fo.got_object_size = 0;
	rf_open_step(s);
	return true;
}

/* The sidecar named by the want, opened (or already open). True when it is
 * ready; false when its open is in flight or failed (finished). */
static bool rf_open_side(rf_shard *s)
{
	rf_open_slot *o = s->open;
	const char *url = o->fo.want.object;
	if ((o->side || o->side_cached) && o->side_url && !strcmp(o->side_url, url))
		return true;
	o->side_cached = false;
	rf_source_close(o->side);
	o->side = NULL;
	free(o->side_url);
	rf_error err = {0};
	if (!(o->side_url = strdup(url))) {
		rf_open_finish(s, -ENOMEM, "out of memory");
		return false;
	}
	if (o->fo.want.optional && o->fo.want.cache_only) { /* the cache's or absent */
		rf_open_side_absent(s, -ENOENT);
		return false;
	}
	rf_open_stage_set(s, RF_OPEN_SIDE_OPENING);
	int rc = rf_source_open(s->engine->fetch, url, UINT64_MAX, &o->side, rf_open_cb, s, &err);
	if (rc < 0 && !rf_open_side_absent(s, rc)) {
		rf_open_stage_set(s, RF_OPEN_IDLE);
		rf_open_finish(s, rc, err.msg);
	}
	return false;
}

/* The format asked for a range: serve it from the buffer, or reserve and
 * read it (after opening the sidecar it names), or wait for budget. */
static void rf_open_want(rf_shard *s)
{
	rf_engine *e = s->engine;
	rf_open_slot *o = s->open;
	const rf_fmt_want *w = &o->fo.want;
	rf_error err = {0};
	if (w->object && !rf_open_side(s))
		return; /* rf_open_cb comes back here once it is open */
	uint64_t size = !w->object       ? rf_source_size(s->src)
	                : o->side_cached ? o->buf_len
	                                 : rf_source_size(o->side);
	o->fo.got_object_size = w->object ? size : 0;
	int rc = rf_want_check(s, size, &err);
	if (rc < 0) {
		rf_open_finish(s, rc, err.msg);
		return;
	}
	bool from_buf = rf_want_in_buf(o) || w->len == 0;
	uint64_t len = 0;
	if (from_buf && rf_open_reserve(s, true, &len, &err) != 0)
		from_buf = false; /* no room for its bound beside the buffer: read again */
	if (!from_buf && w->object && o->side_cached) { /* nothing to read it from */
		rf_open_cache_drop(s);
		return;
	}
	if (!from_buf) {
		o->from_bundle = false; /* what comes now is the store's */
		rf_slot_buf_free(e, o); /* a wait holds nothing it can do without */
		rc = rf_open_reserve(s, false, &len, &err);
	} else {
		rc = 0;
	}
	if (rc == 1) {
		if (s->stage != RF_OPEN_WAIT_BUDGET)
			e->open->wait[e->open->waiting++] = s->idx; /* < open_inflight */
		rf_open_stage_set(s, RF_OPEN_WAIT_BUDGET);
		return;
	}
	if (s->stage == RF_OPEN_WAIT_BUDGET)
		rf_open_unwait(e, s->idx);
	rf_open_stage_set(s, RF_OPEN_IDLE);
	if (rc < 0) {
		rf_open_finish(s, rc, err.msg);
		return;
	}
	if (from_buf) {
		rf_open_serve(s);
		return;
	}
	if (!(o->buf = malloc(len ? len : 1))) {
		rf_open_finish(s, -ENOMEM, "out of memory for a shard's layout");
		return;
	}
	o->buf_side = w->object != NULL;
	o->buf_offset = w->offset + w->len - len; /* a shorter range ends where it would */
	o->buf_len = len;
	rf_open_read(s, o->buf_side, o->buf_offset, len);
}

/* The shard's source is open: its size is known; the format's first step. */
static void rf_open_begin(rf_shard *s)
{
	rf_error err = {0};
	uint64_t size = rf_source_size(s->src);
	if (s->listed && size != s->listed_bytes) {
		rf_fail(&err, -EIO, "shard %s: file is %llu bytes, the manifest says %llu",
		        rf_source_name(s->src), (unsigned long long)size,
		        (unsigned long long)s->listed_bytes);
		rf_open_finish(s, err.code, err.msg);
		return;
	}
	rf_open_slot *o = s->open;
	o->fo = (rf_fmt_open){.url = s->url,
	                      .name = s->name,
	                      .size = size,
	                      .local = rf_shard_is_local(s),
	                      .opt = rf_fmt_optset_for(rf_shard_fmt_opts(s), s->fmt),
	                      .in_place = s->fmt->in_place};
	rf_open_bundle_get(s);
	rf_open_step(s);
}

/* Every callback of the open: a source opened, or a range read. */
static void rf_open_cb(void *arg, int64_t res, const char *msg)
{
	rf_shard *s = arg;
	rf_open_slot *o = s->open;
	int stage = s->stage;
	if (res < 0) {
		if (stage == RF_OPEN_SIDE_OPENING && rf_open_side_absent(s, (int)res))
			return;
		rf_open_stage_set(s, RF_OPEN_IDLE); /* nothing in flight now */
		rf_open_finish(s, (int)res, msg);
		return;
	}
	if (stage == RF_OPEN_OPENING) {
		rf_open_begin(s);
	} else if (stage == RF_OPEN_SIDE_OPENING) {
		rf_open_stage_set(s, RF_OPEN_IDLE);
		rf_open_want(s);
	} else {
		assert(stage == RF_OPEN_READING);
		rf_open_stage_set(s, RF_OPEN_IDLE);
		rf_engine_lock(s->engine);
		s->engine->st->open_fetched_bytes += o->read_len;
		s->engine->st->open_reads++;
		rf_engine_unlock(s->engine);
		o->fo.got = o->buf + (o->read_offset - o->buf_offset);
		o->fo.got_offset = o->read_offset;
		o->fo.got_len = o->read_len;
		rf_open_step(s);
	}
}

static void rf_open_start(rf_engine *e, rf_shard *s)
{
	rf_error err = {0};
	e->open->inflight++;
	if (rf_shard_is_local(s))
		e->open->inflight_local++;
	e->open->inflight_max = RF_MAX(e->open->inflight_max, e->open->inflight);
	if (!s->fmt) /* the URL expansion chose it from the name given */
		s->fmt = rf_format_for(s->url, true);
	if (!s->fmt) {
		rf_fail(&err, -EPROTONOSUPPORT,
		        "shard %s: no format reads this name (the formats read %s)", s->name,
		        rf_format_patterns());
		rf_open_finish(s, err.code, err.msg);
		return;
	}
	assert(e->open->free != UINT32_MAX); /* open_inflight < the slots */
	rf_open_slot *o = &e->open->slots[e->open->free];
	e->open->free = o->next_free;
	o->first_code = 0;
	o->side_cached = o->no_cache = false;
	o->from_bundle = o->no_bundle = false;
	o->stepping = o->step_due = false;
	o->t0_ns = rf_now_ns();
	o->shard = s;
	s->open = o;
	rf_open_stage_set(s, RF_OPEN_OPENING);
	int rc = rf_source_open(e->fetch, s->url, s->size_hint, &s->src, rf_open_cb, s, &err);
	if (rc < 0) {
		rf_open_stage_set(s, RF_OPEN_IDLE);
		rf_open_finish(s, rc, err.msg);
	}
}

/* The slots, reserved before they exist: n, or as many as the budget has
 * room for, halving down to the local bound (64) before it is an error. */
static int rf_open_slots_new(rf_engine *e, uint32_t n)
{
	uint32_t least = RF_MIN(n, RF_MAX(1u, e->open->local_max));
	uint64_t bytes = (uint64_t)n * sizeof(rf_open_slot);
	while (rf_budget_reserve(&e->budget, RF_MEM_METADATA, bytes, 0) != 0) {
		if (n > least) {
			n = RF_MAX(n / 2, least);
			bytes = (uint64_t)n * sizeof(rf_open_slot);
			continue;
		}
		char lim[32];
		snprintf(e->open->msg, sizeof(e->open->msg),
		         "budget %s is too small to open shards (%llu bytes of open state)",
		         rf_fmt_bytes(e->budget.limit_bytes, lim, sizeof(lim)),
		         (unsigned long long)bytes);
		return RF_E_BUDGET;
	}
	if (!(e->open->slots = calloc(n, sizeof(rf_open_slot)))) {
		rf_budget_release(&e->budget, RF_MEM_METADATA, bytes);
		snprintf(e->open->msg, sizeof(e->open->msg), "out of memory");
		return -ENOMEM;
	}
	e->open->meta_bytes += bytes;
	e->open->slots_n = e->open->slots_max = n;
	e->open->free = 0;
	for (uint32_t i = 0; i < n; i++)
		e->open->slots[i].next_free = i + 1 < n ? i + 1 : UINT32_MAX;
	return 0;
}

/* After the loop is gone (no read in flight): what the slots still hold. */
void rf_open_slots_free(rf_engine *e)
{
	if (!e->open->slots)
		return;
	for (uint32_t i = 0; i < e->open->slots_n; i++) {
		rf_open_slot *o = &e->open->slots[i];
		free(o->buf);
		free(o->side_url);
		o->buf = NULL;
		o->side_url = NULL;
	}
	uint64_t bytes = (uint64_t)e->open->slots_n * sizeof(rf_open_slot);
	rf_budget_release(&e->budget, RF_MEM_METADATA, bytes);
	e->open->meta_bytes -= bytes;
	free(e->open->slots);
	e->open->slots = NULL;
	e->open->slots_n = 0;
}

static bool rf_open_all_done(void *ctx)
{
	rf_engine *e = ctx;
	return e->open->done >= e->nshards;
}

/* The open in flight the longest: its shard, and for how long (0: none). */
static const rf_shard *rf_open_slowest(const rf_engine *e, uint64_t now, uint64_t *ns)
{
	const rf_shard *slow = NULL;
	*ns = 0;
	for (uint32_t i = 0; i < e->open->slots_n; i++) {
		const rf_open_slot *o = &e->open->slots[i];
		if (o->shard && now - o->t0_ns >= *ns) {
			*ns = now - o->t0_ns;
			slow = o->shard;
		}
	}
	return slow;
}

/* A long open (a slow store, many shards) says how far it got on stderr,
 * from RF_OPEN_SAY_AFTER_NS on, every RF_OPEN_SAY_EVERY_NS, and once more
 * when it ends: a user sees it move instead of a silent wait, and which
 * shard holds it up (its redacted name: never a query or credentials). */
static void rf_open_say(rf_engine *e, bool end)
{
	uint64_t now = rf_now_ns(), ran = now - e->open->t0_ns;
	if (!rf_cfg(e->cfg, RF_CFG_open_progress) ||
	    (end ? e->open->said_ns == 0
	         : ran < RF_OPEN_SAY_AFTER_NS ||
	               (e->open->said_ns && now - e->open->said_ns < RF_OPEN_SAY_EVERY_NS)))
		return;
	e->open->said_ns = now;
	e->open->said++;
	rf_engine_lock(e);
	uint64_t read = e->st->open_fetched_bytes;
	rf_engine_unlock(e);
	char got[32], slow_s[RF_ERROR_MSG_BYTES] = "", left[48] = "";
	rf_fmt_bytes(read, got, sizeof(got));
	uint64_t slow_ns = 0;
	const rf_shard *slow = end ? NULL : rf_open_slowest(e, now, &slow_ns);
	if (slow)
		snprintf(slow_s, sizeof(slow_s), "; slowest in flight %.1f s: %s (%s)",
		         (double)slow_ns / 1e9, slow->name,
		         slow->stage >= 0 && slow->stage < RF_OPEN_STAGES
		             ? rf_open_stage_names[slow->stage]
		             : "?");
	if (!end && e->open->done > 0) /* at the pace so far */
		snprintf(left, sizeof(left), "; about %.0f s left",
		         (double)ran / 1e9 * (double)(e->nshards - e->open->done) / e->open->done);
	else if (!end)
		snprintf(left, sizeof(left), "; none done yet");
	fprintf(
	    stderr,
	    "ringfeed: opening shards: %u/%u%s, %s of indexes read, %.1f s (%u at a time)%s%s\n",
	    e->open->done, e->nshards, end ? " done" : "", got, (double)ran / 1e9, e->open->slots_n,
	    slow_s, left);
}

/* Between ticks of the open phase: retries the ranges waiting for budget
 * and starts more opens; stops at the first failure or when all are done. */
static uint64_t rf_open_before_sleep(void *ctx)
{
	rf_engine *e = ctx;
	rf_open_say(e, false);
	/* while a range waits for budget, open no more (theirs would wait
	 * too) and retry the waiting ones, oldest first */
	uint32_t waiting[RF_OPEN_CONCURRENCY_REMOTE], nwait = e->open->waiting;
	memcpy(waiting, e->open->wait, nwait * sizeof(waiting[0]));
	for (uint32_t i = 0; i < nwait; i++)
		rf_open_want(&e->shards[waiting[i]]);
	while (e->open->waiting == 0 && e->open->next < e->nshards &&
	       e->open->inflight < e->open->slots_n) {
		rf_shard *s = &e->shards[e->open->next];
		if (rf_shard_is_local(s) && e->open->inflight_local >= e->open->local_max)
			break; /* local files stay at their bound; a slot frees soon */
		e->open->next++;
		rf_open_start(e, s);
	}
	return e->open->failed || e->open->done >= e->nshards ? RF_LOOP_STOP : RF_OPEN_WAIT_NS;
}

/* Opens at once: local files RF_OPEN_CONCURRENCY (a read each, the disk's
 * queue); with a remote shard RF_OPEN_CONCURRENCY_REMOTE, since a remote
 * open is one or two small requests that mostly wait (64 at once made
 * 5,000 shards on a 5 s store take minutes before the first batch), with
 * open_connections per host meanwhile (the larger of it and connections)
 * so they do not queue behind the reads' limit. Each bounded by a quarter
 * of the loop's ops (every connection polls through one). */
static uint32_t rf_open_concurrency(rf_engine *e)
{
	uint32_t ops = RF_MAX(1u, rf_loop_ops_max(e->loop) / 4);
	bool remote = false;
	for (uint32_t i = 0; i < e->nshards && !remote; i++)
		remote = !rf_shard_is_local(&e->shards[i]);
	e->open->local_max = RF_MIN(RF_OPEN_CONCURRENCY, ops);
	if (!remote)
		return e->open->local_max;
	e->open->connections = (uint32_t)RF_MAX(rf_cfg(e->cfg, RF_CFG_connections),
	                                        rf_cfg(e->cfg, RF_CFG_open_connections));
	return RF_MIN(RF_OPEN_CONCURRENCY_REMOTE, ops);
}

void rf_open_start_end(rf_engine *e, bool first_batch)
{
	if (!e->open->start_held || !first_batch)
		return;
	e->open->start_held = false;
	uint64_t end = e->open->t0_ns + e->open->took_ns, now = rf_now_ns();
	rf_engine_lock(e); /* the stats read it */
	e->open->start_held_ns = now > end ? now - end : 0;
	rf_engine_unlock(e);
	rf_fetch_connections_set(e->fetch, (uint32_t)rf_cfg(e->cfg, RF_CFG_connections));
	if (rf_debug_on())
		fprintf(stderr,
		        "ringfeed: first batch: %llu connections per host again, after %.3f s\n",
		        (unsigned long long)rf_cfg(e->cfg, RF_CFG_connections),
		        (double)e->open->start_held_ns / 1e9);
}

/* Learns every layout (rf_open_concurrency at a time); stops at the first
 * error. Returns 0 or the error (message in e->open->msg). */
int rf_open_phase(rf_engine *e)
{
	RF_TRY(rf_open_slots_new(e, rf_open_concurrency(e)));
	e->open->t0_ns = rf_now_ns();
	e->open->said_ns = 0;
	uint32_t conns = (uint32_t)rf_cfg(e->cfg, RF_CFG_connections);
	if (e->open->connections > conns) /* the reads after it keep `connections` */
		rf_fetch_connections_set(e->fetch, e->open->connections);
	const char *dir = rf_config_index_cache_dir(e->cfg);
	rf_error why = {0};
	if (dir && /* a cache that cannot be used is no cache: the open goes on */
	    rf_icache_open(dir, rf_cfg(e->cfg, RF_CFG_index_cache_bytes), 0, &e->open->icache,
	                   &why) < 0)
		snprintf(e->index_cache_off, sizeof(e->index_cache_off), "%.255s",
		         why.msg[0] ? why.msg : "cannot be opened");
	int rc = rf_loop_drive(e->loop, rf_open_all_done, rf_open_before_sleep, e);
	e->open->took_ns = rf_now_ns() - e->open->t0_ns;
	rf_open_say(e, true);
	/* the first batch's reads keep them: its whole window is read while the
	 * consumer waits, as the opens were (rf_open_start_end sets them back);
	 * not when `connections` was given and open_connections was not: the
	 * reads' limit was asked for */
	e->open->start_held =
	    e->open->connections > conns &&
	    (!e->cfg->set[RF_CFG_connections] || e->cfg->set[RF_CFG_open_connections]);
	if (!e->open->start_held && e->open->connections > conns)
		rf_fetch_connections_set(e->fetch, conns);
	if (e->open->start_held && (rc < 0 || e->open->failed))
		rf_open_start_end(e, true);
	rf_icache_close(e->open->icache);
	e->open->icache = NULL;
	rf_open_tails_free(e);
	if (rc < 0) {
		snprintf(e->open->msg, sizeof(e->open->msg), "event loop: %s", strerror(-rc));
		return rc;
	}
	if (e->open->failed) {
		rf_shard *s = &e->shards[e->open->failed_idx];
		snprintf(e->open->msg, sizeof(e->open->msg), "%s", s->err_msg);
		return s->err_code;
	}
	for (uint32_t i = 0; i < e->nshards; i++) {
		if (e->shards[i].err_code < 0) {
			snprintf(e->open->msg, sizeof(e->open->msg), "%s", e->shards[i].err_msg);
			return e->shards[i].err_code;
		}
	}
	rf_open_slots_free(e); /* every open finished: nothing in flight */
	return 0;
}
