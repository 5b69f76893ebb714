/* remote.c - http(s):// and s3:// sources over the shared HTTP client
 * (http.c) (see remote.h). Dataset URL expansion and the one-shot
 * requests, which make a fetch layer of their own, are remote_ops.c.
 * The size of an object comes from the caller's hint (a manifest or a
 * listing) or from a HEAD; every read is one exact range GET. */
#include "list.h"
#include "remote_int.h"
#include "store.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

typedef struct remote_read remote_read;
typedef struct remote_source {
	rf_source base; /* first */
	remote_state *st;
	char *url; /* what curl fetches (encoded; virtual-hosted or path-style for S3) */
	const rf_http_auth *auth; /* its signer (NULL: unsigned; the store's state owns it) */
	const char *scope;     /* signed: the signer's scope (S3: the region; the state owns it) */
	char *bucket;          /* signed: the bucket */
	rf_hedge_store *store; /* hedging policy of its host; NULL = never hedged */
	rf_http_xfer *head;
	rf_list reads; /* of remote_read (in_source), in flight */
	/* the object's version: from the HEAD, else the first accepted read;
	 * later answers never replace it ("" = not known yet) */
	char validator[RF_SOURCE_VALIDATOR_BYTES];
} remote_source;

struct remote_read {
	rf_list_node in_source;
	remote_source *src;
	rf_http_xfer *xfer;
	rf_fetch_cb cb;
	void *arg;
	uint64_t offset, len;
	void *buf;           /* the caller's: only the primary request writes into it */
	rf_http_xfer *hedge; /* the duplicate request, into hedge_buf */
	void *hedge_buf;
	int64_t hedge_timer;
	char validator[RF_SOURCE_VALIDATOR_BYTES]; /* of the primary's answer */
};

static bool remote_claims(const char *url)
{
	rf_url_scheme s = rf_url_scheme_of(url);
	return s == RF_URL_HTTP || s == RF_URL_HTTPS || rf_store_of(url, NULL);
}

static int remote_init(rf_fetch *f, void **state, rf_error *err)
{
	remote_state *st = calloc(1, sizeof(*st));
	if (!st)
		return rf_fail(err, -ENOMEM, "out of memory for the HTTP source");
	st->fetch = f;
	rf_open_batch_init(&st->opens, rf_fetch_loop(f));
	int rc = rf_http_new(rf_fetch_loop(f), rf_fetch_opts(f), &st->http, err);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void remote_fini(void *state)
{
	remote_state *st = state;
	rf_open_batch_fini(&st->opens);
	for (size_t i = 0; i < RF_STORES_MAX; i++) { /* before the client they fetch with */
		const rf_store *store = NULL;
		if (st->store_ready[i] && (store = rf_store_at(i)) && store->fini)
			store->fini(st->store_state[i]);
	}
	rf_http_free(st->http);
	free(st);
}

static void remote_counters(void *state, rf_fetch_counters *out)
{
	remote_state *st = state;
	rf_http_counters c;
	rf_http_counters_get(st->http, &c);
	out->requests += c.requests;
	out->retries += c.retries;
	out->errors += c.errors;
	out->bytes += c.bytes;
	out->host_active_max = RF_MAX(out->host_active_max, c.host_active_max);
	out->connects += c.connects;
	out->resumes += c.resumes;
	out->resumed_bytes += c.resumed_bytes;
	out->hedges += st->hedges;
	out->hedges_won += st->hedges_won;
}

/* The store of a bucket URL and its per-loader state (created on first
 * use, given the shared client). */
int rf_remote_store(remote_state *st, const char *url, const rf_store **store, void **state,
                    rf_error *err)
{
	size_t row = 0;
	*store = rf_store_of(url, &row);
	if (!*store)
		return rf_fail(err, -EPROTONOSUPPORT, "no store lists or signs this URL");
	if (!st->store_ready[row]) {
		RF_TRY((*store)->init(st->fetch, st->http, &st->store_state[row], err));
		st->store_ready[row] = true;
	}
	*state = st->store_state[row];
	return 0;
}

/* How a source URL is fetched: a plain http(s) URL as written; a bucket URL
 * as its store says (strings malloc'd, also on failure), its credentials
 * started before the first request (signed requests wait for them). */
int rf_remote_target(remote_state *st, const char *url, rf_store_target *t, rf_error *err)
{
	*t = (rf_store_target){0};
	if (!rf_store_of(url, NULL)) {
		t->url = strdup(url);
		return t->url ? 0 : rf_fail(err, -ENOMEM, "out of memory");
	}
	const rf_store *store = NULL;
	void *state = NULL;
	RF_TRY(rf_remote_store(st, url, &store, &state, err));
	RF_TRY(store->target(state, url, t, err));
	return store->credentials(state, url, err);
}

/* ------------------------------------------------------------ the source */

static void read_unlink(remote_read *r)
{
	rf_list_remove(&r->src->reads, &r->in_source);
}

/* ------------------------------------------------------- hedged reads
 *
 * A read whose request has been in curl longer than its store's threshold
 * (p95 of recent reads, at least hedge_floor) gets one duplicate request
 * into a buffer of its own; the first complete answer wins and the other
 * is cancelled. Only the primary writes the caller's buffer: a winning
 * hedge cancels the primary first (curl_multi_remove_handle: no write
 * after it returns; everything runs on the loop thread), then copies its
 * bytes over whatever part the primary had written. Both requests are the
 * same exact range, checked the same way, so the bytes delivered never
 * depend on which won. A read past its threshold while the store's hedge
 * tokens, its quiet time after trouble, or the hedge buffers' bound or the
 * memory budget say no is looked at again a threshold later, not given up:
 * on a loaded machine ordinary reads that ran slightly long may have taken
 * the tokens just before the read that is truly stuck crossed its line. */

static rf_hedge_store *hedge_store_of(remote_state *st, const char *url)
{
	const char *s = strstr(url, "://");
	size_t len = s ? (size_t)(s + 3 - url) + strcspn(s + 3, "/?#") : strlen(url);
	len = RF_MIN(len, sizeof(st->stores[0].key) - 1);
	for (uint32_t i = 0; i < st->nstores; i++)
		if (strlen(st->stores[i].key) == len && !strncmp(st->stores[i].key, url, len))
			return &st->stores[i].policy;
	if (st->nstores == HEDGE_STORES_MAX)
		return &st->stores[HEDGE_STORES_MAX - 1].policy;
	hedge_store *h = &st->stores[st->nstores++];
	memcpy(h->key, url, len);
	h->key[len] = '\0';
	return &h->policy;
}

static uint64_t hedge_floor_ns(const remote_state *st)
{
	uint32_t ms = rf_fetch_opts(st->fetch)->hedge_floor_ms;
	return (uint64_t)(ms ? ms : 50) * 1000000ull;
}

static void hedge_drop(remote_read *r)
{
	remote_state *st = r->src->st;
	rf_loop_cancel(rf_fetch_loop(st->fetch), r->hedge_timer);
	r->hedge_timer = -1;
	if (r->hedge)
		rf_http_cancel(st->http, r->hedge);
	r->hedge = NULL;
	if (r->hedge_buf) {
		const rf_fetch_options *o = rf_fetch_opts(st->fetch);
		free(r->hedge_buf);
		st->hedge_bytes -= r->len;
		if (o->mem_release)
			o->mem_release(o->mem_ctx, r->len);
	}
	r->hedge_buf = NULL;
}

static void read_finish(remote_read *r, int64_t res, const char *msg)
{
	rf_fetch_cb cb = r->cb;
	void *cb_arg = r->arg;
	hedge_drop(r);
	read_unlink(r);
	free(r);
	cb(cb_arg, res, msg);
}

static void hedge_arm(remote_read *r, uint64_t delay_ns);

static void on_hedge_done(void *arg, int64_t res, const char *msg)
{
	remote_read *r = arg;
	remote_state *st = r->src->st;
	r->hedge = NULL;
	if (res != (int64_t)r->len) { /* the hedge failed: the primary goes on alone */
		hedge_drop(r);
		return;
	}
	uint64_t since = 0;
	rf_http_xfer_active(r->xfer, &since);
	if (since)
		rf_hedge_note(r->src->store, rf_now_ns() - since, hedge_floor_ns(st));
	rf_http_cancel(st->http, r->xfer); /* synchronous: it writes nothing after this */
	r->xfer = NULL;
	memcpy(r->buf, r->hedge_buf, r->len);
	st->hedges_won++;
	read_finish(r, res, NULL);
}

/* Issues r's hedge; false when not now (no token, quiet time, no room),
 * and r's timer should look again later. */
static bool hedge_issue(remote_read *r)
{
	remote_source *rs = r->src;
	remote_state *st = rs->st;
	uint64_t trouble = rf_http_host_trouble(st->http, rs->url);
	if (st->hedge_bytes + r->len > RF_HEDGE_INFLIGHT_BYTES_MAX ||
	    !rf_hedge_take(rs->store, trouble, rf_now_ns()))
		return false;
	const rf_fetch_options *o = rf_fetch_opts(st->fetch);
	if (o->mem_reserve && o->mem_reserve(o->mem_ctx, r->len) < 0)
		return false; /* the budget has no room now */
	if (!(r->hedge_buf = malloc(r->len))) {
		if (o->mem_release)
			o->mem_release(o->mem_ctx, r->len);
		return false;
	}
	st->hedge_bytes += r->len;
	rf_http_request req = {.kind = RF_HTTP_RANGE,
	                       .url = rs->url,
	                       .name = rs->base.name,
	                       .auth = rs->auth,
	                       .scope = rs->scope,
	                       .bucket = rs->bucket,
	                       .offset = r->offset,
	                       .len = r->len,
	                       .buf = r->hedge_buf,
	                       .object_size = rs->base.size};
	if (rf_http_start(st->http, &req, on_hedge_done, r, &r->hedge, NULL) < 0) {
		r->hedge = NULL;
		hedge_drop(r);
		return true; /* cannot start one: the primary goes on alone */
	}
	st->hedges++;
	return true;
}

static void on_hedge_timer(void *arg, int res)
{
	remote_read *r = arg;
	r->hedge_timer = -1;
	uint64_t threshold = rf_hedge_threshold_ns(r->src->store), since = 0;
	if (threshold == 0) /* too few reads measured yet: look again later */
		return hedge_arm(r, hedge_floor_ns(r->src->st));
	if (!rf_http_xfer_active(r->xfer, &since)) /* queued for a slot: look again later */
		return hedge_arm(r, threshold);
	uint64_t took = rf_now_ns() - since;
	if (took < threshold)
		return hedge_arm(r, threshold - took);
	if (!hedge_issue(r))
		hedge_arm(r, threshold);
}

static void hedge_arm(remote_read *r, uint64_t delay_ns)
{
	int64_t id = rf_loop_timer(rf_fetch_loop(r->src->st->fetch), delay_ns, on_hedge_timer, r);
	r->hedge_timer = id >= 0 ? id : -1; /* no timer slot: this read is not hedged */
}

static void on_read_done(void *arg, int64_t res, const char *msg)
{
	remote_read *r = arg;
	uint64_t since = 0;
	rf_http_xfer_active(r->xfer, &since);
	if (res >= 0 && since && r->src->store)
		rf_hedge_note(r->src->store, rf_now_ns() - since, hedge_floor_ns(r->src->st));
	r->xfer = NULL;
	if (res >= 0 && !r->src->validator[0])
		memcpy(r->src->validator, r->validator, sizeof(r->validator));
	read_finish(r, res, msg);
}

static int remote_read_range(rf_source *s, uint64_t offset, uint64_t len, void *buf, rf_fetch_cb cb,
                             void *arg)
{
	remote_source *rs = (remote_source *)s;
	uint64_t end;
	if (!rf_add_u64(offset, len, &end) || end > s->size || len == 0)
		return -EINVAL;
	remote_read *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (remote_read){.src = rs,
	                   .cb = cb,
	                   .arg = arg,
	                   .offset = offset,
	                   .len = len,
	                   .buf = buf,
	                   .hedge_timer = -1};
	rf_http_request req = {.kind = RF_HTTP_RANGE,
	                       .url = rs->url,
	                       .name = s->name,
	                       .auth = rs->auth,
	                       .scope = rs->scope,
	                       .bucket = rs->bucket,
	                       .offset = offset,
	                       .len = len,
	                       .buf = buf,
	                       .object_size = s->size,
	                       .validator = r->validator,
	                       .validator_cap = sizeof(r->validator)};
	rf_error err = {0};
	int rc = rf_http_start(rs->st->http, &req, on_read_done, r, &r->xfer, &err);
	if (rc < 0) {
		free(r);
		return rc;
	}
	rf_list_push_front(&rs->reads, &r->in_source);
	uint64_t threshold = rs->store ? rf_hedge_threshold_ns(rs->store) : 0;
	if (rs->store && len <= RF_HEDGE_READ_BYTES_MAX)
		hedge_arm(r, threshold ? threshold : hedge_floor_ns(rs->st));
	return 0;
}

static void remote_close(rf_source *s)
{
	remote_source *rs = (remote_source *)s;
	rf_open_batch_remove(&rs->st->opens, s);
	if (rs->head)
		rf_http_cancel(rs->st->http, rs->head);
	while (!rf_list_empty(&rs->reads)) {
		remote_read *r = rf_list_entry(rs->reads.head, remote_read, in_source);
		rf_http_cancel(rs->st->http, r->xfer);
		hedge_drop(r);
		read_unlink(r);
		free(r);
	}
	free(rs->url);
	free(rs->bucket);
	rf_source_free_base(s);
	free(rs);
}

static size_t remote_validator(const rf_source *s, char *buf, size_t cap)
{
	const remote_source *rs = (const remote_source *)s;
	size_t n = strlen(rs->validator);
	if (n >= cap)
		return 0;
	memcpy(buf, rs->validator, n + 1);
	return n;
}

static const rf_source_ops remote_ops = {
    .read = remote_read_range, .close = remote_close, .validator = remote_validator};

static void on_head(void *arg, int64_t res, const char *msg)
{
	remote_source *rs = arg;
	rs->head = NULL;
	if (res >= 0)
		rs->base.size = (uint64_t)res;
	rf_source_opened(&rs->base, res < 0 ? res : 0, msg);
}

static int remote_start_open(remote_source *rs, uint64_t size_hint, rf_error *err)
{
	if (size_hint != RF_SIZE_UNKNOWN) {
		rs->base.size = size_hint; /* a listing's or manifest's: nothing to ask */
		int rc = rf_open_batch_push(&rs->st->opens, &rs->base);
		return rc < 0
		           ? rf_fail(err, rc, "%s: no loop slot to finish opening", rs->base.name)
		           : 0;
	}
	rf_http_request req = {.kind = RF_HTTP_HEAD,
	                       .url = rs->url,
	                       .name = rs->base.name,
	                       .auth = rs->auth,
	                       .scope = rs->scope,
	                       .bucket = rs->bucket,
	                       .validator = rs->validator,
	                       .validator_cap = sizeof(rs->validator)};
	return rf_http_start(rs->st->http, &req, on_head, rs, &rs->head, err);
}

static int remote_open(rf_fetch *f, void *state, const char *url, uint64_t size_hint,
                       rf_source **out, rf_error *err)
{
	remote_state *st = state;
	remote_source *rs = calloc(1, sizeof(*rs));
	char shown[RF_URL_BYTES_MAX];
	rf_url_redact(url, shown, sizeof(shown));
	if (!rs || rf_source_init_base(&rs->base, &remote_ops, f, shown) < 0) {
		free(rs);
		return rf_fail(err, -ENOMEM, "out of memory opening %s", shown);
	}
	rs->st = st;
	rf_store_target t;
	int rc = rf_remote_target(st, url, &t, err);
	rs->url = t.url;
	rs->auth = t.auth;
	rs->scope = t.scope;
	rs->bucket = t.bucket;
	if (rc == 0 && rf_fetch_opts(f)->hedge)
		rs->store = hedge_store_of(st, rs->url);
	if (rc == 0)
		rc = remote_start_open(rs, size_hint, err);
	if (rc < 0) {
		remote_close(&rs->base);
		return rc;
	}
	*out = &rs->base;
	return 0;
}

static void remote_connections_set(void *state, uint32_t per_host)
{
	remote_state *st = state;
	rf_http_connections_set(st->http, per_host);
}

const rf_source_kind rf_source_kind_remote = {
    .name = "remote",
    .claims = remote_claims,
    .init = remote_init,
    .fini = remote_fini,
    .open = remote_open,
    .counters = remote_counters,
    .connections_set = remote_connections_set,
};
