/* http.c - HTTP(S) transfers driven by the io_uring loop (see http.h): the
 * transfer state machine, the top of the client's files (http_int.h): it
 * calls the response checks (http_check.c), the records and the state mover
 * (http_xfer.c) and curl on the loop (http_loop.c), and none of them calls
 * it: the loop reaches it only through the ops it registers (pump_ops:
 * harvest and admit, then deliver). A signed request's signer (http.h's
 * seam, implemented by its store) is called at fixed points: begin at the
 * start, gate before each admission, sign in configure, answered and refused
 * when an attempt ends, explain in the message.
 *
 * Each transfer is a state machine (xfer_state and rf_xfer_state_name[] in
 * http_int.h): events (xfer_step) decide, rf_xfer_move is the only writer:
 * QUEUED (waiting for a connection slot of its host) -> ACTIVE (in curl) ->
 * ANSWERED (judged) -> DONE, or -> BACKOFF (retry timer) -> QUEUED, or ->
 * QUEUED again at once (a redirect, a signer's hop or retry). A response is
 * accepted only when it is exactly what was asked (http_check.c). */
#include "http_int.h"
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HTTP_RECV_BUFFER_BYTES   (512 * 1024)
#define EASY_POOL_PER_CONNECTION 2

typedef enum xfer_event {
	EV_ADMIT = 0, /* a connection slot of its host is free */
	EV_FINISHED,  /* curl finished the attempt (x->curl_rc, x->status set) */
	EV_TIMER,     /* the backoff timer fired */
	EV_CANCEL,
} xfer_event;

static void xfer_step(rf_http_xfer *x, xfer_event ev);

/* ------------------------------------------------------------ easy pool */

static CURL *easy_get(rf_http *h)
{
	if (h->npool > 0) {
		CURL *e = h->pool[--h->npool];
		curl_easy_reset(e);
		return e;
	}
	return curl_easy_init();
}

static void easy_put(rf_http *h, CURL *e)
{
	if (h->npool < h->pool_max)
		h->pool[h->npool++] = e;
	else
		curl_easy_cleanup(e);
}

/* ----------------------------------------------------------- one attempt */

static void attempt_reset(rf_http_xfer *x)
{
	x->curl_rc = CURLE_OK;
	x->status = 0;
	x->got = x->content_length = x->header_bytes = 0;
	x->have_content_length = x->body_checked = false;
	x->retry_after[0] = x->problem[0] = x->curl_msg[0] = x->error_body[0] = '\0';
	x->problem_retryable = false;
	x->error_body_len = 0;
	free(x->all);
	x->all = NULL;
	free(x->redirect);
	x->redirect = NULL;
}

/* Method, body and extra headers of a credential fetch. */
static int configure_extras(rf_http_xfer *x)
{
	CURL *e = x->easy;
	if (x->req.post) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->req.post_len);
		/* Bodies here are small (curl sends Expect: 100-continue only over 1
		 * MiB); an "Expect:" header to remove it would be signed by curl 7.88's
		 * SigV4 although never sent. */
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->req.post);
	}
	if (x->req.method)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, x->req.method);
	for (const char *const *l = x->req.headers; l && *l; l++)
		RF_TRY(rf_xfer_add_header(x, *l));
	return 0;
}

static void configure_limits(rf_http *h, rf_http_xfer *x)
{
	CURL *e = x->easy;
	const rf_fetch_options *o = &h->opt;
	uint32_t connect_ms =
	    x->req.connect_timeout_ms ? x->req.connect_timeout_ms : o->connect_timeout_ms;
	uint32_t total_ms = x->req.timeout_ms ? x->req.timeout_ms : o->request_timeout_ms;
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)total_ms);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, (long)o->low_speed_bytes_per_s);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)o->low_speed_time_s);
	/* Redirects are ours (follow_redirect): curl would carry custom headers
	 * such as x-amz-security-token to any host. */
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	/* 16 KiB by default: one loop round trip per 16 KiB is the bottleneck */
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long)HTTP_RECV_BUFFER_BYTES);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, NULL); /* bytes as stored */
	if (h->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file);
	/* Range bodies are bounded by rf_xfer_on_write (an error body must still be read). */
	if (x->req.kind == RF_HTTP_GET_ALL)
		curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)x->req.max_bytes);
}

static int configure(rf_http *h, rf_http_xfer *x)
{
	attempt_reset(x);
	if (!x->easy && !(x->easy = easy_get(h)))
		return -ENOMEM;
	curl_slist_free_all(x->headers);
	x->headers = NULL;
	CURL *e = x->easy;
	curl_easy_setopt(e, CURLOPT_URL, x->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->curl_msg);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, rf_xfer_on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rf_xfer_on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	configure_limits(h, x);
	uint64_t first, last;
	if (rf_http_xfer_range(x, &first, &last)) {
		char range[64];
		snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)first,
		         (unsigned long long)last);
		curl_easy_setopt(e, CURLOPT_RANGE, range); /* copied by curl */
	} else if (x->req.kind == RF_HTTP_HEAD) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	}
	RF_TRY(configure_extras(x));
	const rf_http_auth *a = x->req.auth;
	if (a && !x->unsigned_hop)
		RF_TRY(a->ops->sign(a->state, x->auth_data, x));
	if (x->headers)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
	return 0;
}

/* --------------------------------------------------------- redirects */

/* Follows x->redirect: the same transfer, queued first in line, for the URL
 * curl resolved from Location. No secret reaches another origin (scheme, host
 * or port): a request that sends one (a credential request, S3 or STS
 * signing, a POST/PUT body such as a web identity token, extra headers such
 * as an authorization token) refuses the redirect, naming both (the target
 * without userinfo or query), unless its signer says unsigned_across: then
 * it goes on, and no attempt of it is signed again; a plain GET goes on
 * without the URL's user:password. Returns 0 when queued, or a negative
 * code with why set. */
static int follow_redirect(rf_http_xfer *x, char *why, size_t cap)
{
	rf_http *h = x->h;
	char from[300], to[300], shown[200];
	if (rf_url_origin(x->url, from, sizeof(from)) < 0)
		snprintf(from, sizeof(from), "%s", "(unparsable URL)");
	if (rf_url_origin(x->redirect, to, sizeof(to)) < 0) {
		snprintf(why, cap, "HTTP %ld redirect to an unusable location (not http(s))",
		         x->status);
		return -EPROTO;
	}
	if (x->hops >= RF_HTTP_REDIRECTS_MAX) {
		snprintf(why, cap, "more than %u redirects followed (the last to %.80s)",
		         RF_HTTP_REDIRECTS_MAX, to);
		return -EPROTO;
	}
	bool cross = strcmp(from, to) != 0;
	bool secret = x->req.credential || x->req.headers || x->req.post;
	/* a signer may let a GET go on to another origin unsigned (the Hub's
	 * CDN, whose URL carries its own grant): never signed again after it */
	bool drop = cross && !secret && x->req.auth && x->req.auth->ops->unsigned_across;
	if (cross && (secret || x->req.auth) && !drop) {
		rf_url_redact(x->redirect, shown, sizeof(shown));
		snprintf(why, cap,
		         "HTTP %ld redirect from %.80s to %.150s (another host) refused: %s%s",
		         x->status, from, shown,
		         secret ? "a credential request follows no redirect to another origin"
		                : x->req.auth->ops->name,
		         secret ? "" : " credentials never follow a redirect to another origin");
		return -EPROTO;
	}
	char *next = cross ? rf_url_without_userinfo(x->redirect) : strdup(x->redirect);
	host *hh = next ? rf_http_host_of(h, next) : NULL;
	if (!hh) {
		free(next);
		snprintf(why, cap, "%s following a redirect to %.80s",
		         next ? "too many distinct hosts" : "out of memory", to);
		return next ? -EAGAIN : -ENOMEM;
	}
	if (h->trace)
		fprintf(stderr, "http: %s: HTTP %ld redirect to %s%s\n", x->name, x->status, to,
		        drop    ? " (another host: unsigned, without userinfo)"
		        : cross ? " (another host: without userinfo)"
		                : "");
	x->unsigned_hop |= drop;
	free(x->url);
	x->url = next;
	x->host = hh;
	x->hops++;
	x->following = true;
	rf_xfer_move(x, X_QUEUED, true, "redirect");
	return 0;
}

/* --------------------------------------------------------- state machine */

static void on_backoff_timer(void *arg, int res)
{
	rf_http_xfer *x = arg;
	x->timer_id = NO_OP;
	rf_http *h = x->h;
	xfer_step(x, EV_TIMER);
	rf_http_loop_pump(&h->curl);
}

/* Back to the pool: after x left ACTIVE (rf_xfer_move removed it from curl). */
static void detach_easy(rf_http_xfer *x)
{
	rf_http *h = x->h;
	if (!x->easy)
		return;
	easy_put(h, x->easy);
	x->easy = NULL;
	curl_slist_free_all(x->headers);
	x->headers = NULL;
}

static void step_admit(rf_http_xfer *x)
{
	rf_http *h = x->h;
	int rc = configure(h, x);
	if (rc == 0 && curl_multi_add_handle(h->curl.multi, x->easy) != CURLM_OK)
		rc = -EIO;
	if (rc < 0) {
		detach_easy(x); /* never added to curl */
		rf_xfer_finish(x, rc,
		               rc == -ENOMEM ? "out of memory setting up the transfer"
		               : rc == -EIO  ? "curl refused the transfer"
		                             : "signing the request failed");
		return;
	}
	rf_xfer_move(x, X_ACTIVE, false, x->following ? "admitted, following" : "admitted");
	h->counters.requests += !x->req.uncounted;
	if (x->following) { /* a redirect hop, not another attempt */
		x->following = false;
		return;
	}
	h->counters.retries += x->attempts > 0 && !x->req.uncounted;
	h->counters.resumes += x->resumed > 0 && !x->req.uncounted;
	x->attempts++;
}

/* A retryable attempt whose range body had begun: its bytes are kept and
 * the next attempt asks only for the rest, when the response named its
 * version (the rest must come from the same one: resume_version_ok; an
 * attempt that found another version starts the range over). An attempt
 * that kept at least RF_HTTP_RESUME_PROGRESS_BYTES uses up no retry (a long
 * read on a link that cuts bodies still ends; the retries still bound the
 * attempts that make no progress, and the range's length the others). */
static void resume_update(rf_http_xfer *x)
{
	rf_http *h = x->h;
	if (x->req.kind != RF_HTTP_RANGE)
		return;
	if (x->resume_stale) {
		x->resumed = 0;
		x->resume_version[0] = '\0';
		x->resume_stale = false;
		return;
	}
	if (x->got == 0 || x->status < 200 || x->status > 299 || x->resumed + x->got >= x->req.len)
		return;
	char v[sizeof(x->resume_version)];
	rf_http_validator_make(x->etag, x->etag_bad, x->last_modified, v, sizeof(v));
	if (!v[0])
		return; /* no version: the rest could come from another one */
	if (x->resumed == 0)
		memcpy(x->resume_version, v, sizeof(v));
	x->resumed += x->got;
	if (!x->req.uncounted) {
		h->counters.resumed_bytes += x->got;
		h->counters.bytes += x->got;
	}
	x->retry_free = x->got >= RF_HTTP_RESUME_PROGRESS_BYTES;
	if (h->trace)
		fprintf(stderr, "http: %s: %llu bytes of the range kept, the rest from byte %llu\n",
		        x->name, (unsigned long long)x->resumed,
		        (unsigned long long)(x->req.offset + x->resumed));
}

static void step_finished(rf_http_xfer *x)
{
	rf_http *h = x->h;
	const rf_http_auth *a = x->req.auth;
	char why[400];
	rf_xfer_move(x, X_ANSWERED, false, "curl finished");
	detach_easy(x);
	if (x->redirect && x->curl_rc == CURLE_OK && !x->problem[0]) {
		int rc = follow_redirect(x, why, sizeof(why));
		if (rc < 0)
			rf_xfer_finish(x, rc, why);
		return;
	}
	if (a && a->ops->answered && x->curl_rc == CURLE_OK && !x->problem[0] &&
	    a->ops->answered(a->state, x->auth_data, x) != RF_AUTH_NO) {
		x->following = true; /* a hop, not an attempt */
		rf_xfer_move(x, X_QUEUED, true, "the signer follows");
		return;
	}
	int verdict = rf_xfer_judge(x, why, sizeof(why));
	if (verdict < 0 && a && a->ops->refused &&
	    a->ops->refused(a->state, x->auth_data, x) != RF_AUTH_NO) {
		rf_xfer_move(x, X_QUEUED, true, "the signer retries");
		return;
	}
	if (verdict > 0) {
		h->counters.bytes += x->req.uncounted ? 0 : x->got;
		rf_xfer_finish(x,
		               x->req.kind == RF_HTTP_HEAD    ? (int64_t)x->content_length
		               : x->req.kind == RF_HTTP_RANGE ? (int64_t)(x->resumed + x->got)
		                                              : (int64_t)x->got,
		               NULL);
		return;
	}
	x->host->trouble++;
	if (verdict == 0)
		resume_update(x);
	int64_t ms = verdict == 0 ? rf_xfer_retry_delay_ms(x, why, sizeof(why)) : -1;
	if (ms >= 0) {
		int64_t id = rf_loop_timer(h->loop, (uint64_t)ms * 1000000ull, on_backoff_timer, x);
		if (id >= 0) {
			x->timer_id = id;
			rf_xfer_move(x, X_BACKOFF, false, "retry timer");
			if (h->trace)
				fprintf(stderr, "http: %s: %s, retry in %lld ms\n", x->name, why,
				        (long long)ms);
			return;
		}
		snprintf(why + strlen(why), sizeof(why) - strlen(why), " (no timer for a retry)");
	}
	rf_xfer_finish(x, rf_xfer_fail_code(x, verdict), why);
}

static void step_cancel(rf_http_xfer *x)
{
	rf_xfer_move(x, X_CANCELLED, false, "cancelled");
	detach_easy(x);
}

/* What happens to a transfer on an event; the moves are rf_xfer_move's. */
static void xfer_step(rf_http_xfer *x, xfer_event ev)
{
	static const char *const ev_name[] = {"admit", "finished", "timer", "cancel"};
	xfer_state from = x->state;
	bool known = true;
	switch (ev) {
	case EV_ADMIT:
		known = from == X_QUEUED;
		if (known)
			step_admit(x);
		break;
	case EV_FINISHED:
		known = from == X_ACTIVE;
		if (known)
			step_finished(x);
		break;
	case EV_TIMER: /* first in line again: it is the oldest request */
		known = from == X_BACKOFF;
		if (known)
			rf_xfer_move(x, X_QUEUED, true, "backoff over");
		break;
	case EV_CANCEL:
		known = from != X_CANCELLED;
		if (known)
			step_cancel(x);
		break;
	}
	if (!known)
		fprintf(stderr, "ringfeed: http: %s: event %s ignored in state %s\n", x->name,
		        ev_name[ev], rf_xfer_state_name[from]);
}

/* Whether x's signer lets it start now; false when it waits or failed. */
static bool gate_open(rf_http_xfer *x, bool *any)
{
	const rf_http_auth *a = x->req.auth;
	int code = -EACCES;
	const char *msg = NULL;
	rf_http_auth_gate g =
	    a && a->ops->gate ? a->ops->gate(a->state, x->auth_data, &code, &msg) : RF_AUTH_GO;
	if (g == RF_AUTH_FAIL) {
		rf_xfer_finish(x, code < 0 ? code : -EACCES, msg ? msg : "no credentials");
		*any = true;
	}
	return g == RF_AUTH_GO;
}

static bool admit(rf_http *h)
{
	bool any = false, room = false;
	for (uint32_t i = 0; i < h->nhosts && !room; i++)
		room = h->hosts[i].active < h->opt.connections;
	if (!room)
		return false; /* every host is at its limit: no need to walk the queue */
	rf_list_for_each(n, tmp, &h->queue)
	{
		rf_http_xfer *x = XFER_OF(n);
		if (!gate_open(x, &any))
			continue; /* waits for credentials, or failed */
		if (x->host->active < h->opt.connections) {
			xfer_step(x, EV_ADMIT);
			any = true;
		}
	}
	return any;
}

static void deliver(rf_http *h)
{
	rf_http_xfer *x;
	while ((x = rf_xfer_take_done(h))) {
		if (x->cb)
			x->cb(x->arg, x->result, x->fail_msg);
		rf_xfer_free(x);
	}
}

/* ------------------------------------------------ the pump's work (ops) */

/* Finished attempts, as curl reports them, into EV_FINISHED. */
static bool harvest(rf_http *h)
{
	bool any = false;
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->curl.multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *e = m->easy_handle;
		CURLcode rc = m->data.result; /* m dies with remove_handle */
		rf_http_xfer *x = NULL;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&x);
		x->curl_rc = rc;
		if (x->status == 0)
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &x->status);
		char *location = NULL;
		if (x->status >= 300 && x->status <= 399 &&
		    curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location)
			x->redirect = strdup(location); /* NULL: judged as a plain 3xx */
		long connects = 0;
		curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
		h->counters.connects += (uint64_t)RF_MAX(connects, 0L);
		xfer_step(x, EV_FINISHED);
		any = true;
	}
	return any;
}

static bool pump_work(void *owner)
{
	rf_http *h = owner;
	bool any = harvest(h);
	if (admit(h))
		any = true;
	return any;
}

static void pump_deliver(void *owner)
{
	deliver(owner);
}

static const rf_http_loop_ops pump_ops = {.work = pump_work, .deliver = pump_deliver};

/* ------------------------------------------------------------ the client */

static void defaults(rf_fetch_options *o)
{
	if (o->connections == 0)
		o->connections = 16;
	if (o->connect_timeout_ms == 0)
		o->connect_timeout_ms = 10000;
	if (o->request_timeout_ms == 0)
		o->request_timeout_ms = 300000;
	if (o->low_speed_time_s == 0)
		o->low_speed_time_s = 30;
	if (o->throttle_wait_ms == 0)
		o->throttle_wait_ms = RF_FETCH_THROTTLE_WAIT_MS_DEFAULT;
}

/* The CA bundle: the ca_file option, else AWS_CA_BUNDLE (the SDKs), else
 * CURL_CA_BUNDLE and SSL_CERT_FILE (the curl tool and OpenSSL); NULL = curl's
 * built-in default. */
static const char *ca_bundle(const rf_fetch_options *opt)
{
	static const char *const vars[] = {"AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"};
	if (opt->ca_file && *opt->ca_file)
		return opt->ca_file;
	for (size_t i = 0; i < RF_ARRAY_LEN(vars); i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return v;
	}
	return NULL;
}

int rf_http_new(rf_loop *loop, const rf_fetch_options *opt, rf_http **out, rf_error *err)
{
	rf_http *h = calloc(1, sizeof(*h));
	if (!h)
		return rf_fail(err, -ENOMEM, "out of memory for the HTTP client");
	h->magic = HTTP_MAGIC;
	h->loop = loop;
	h->opt = *opt;
	defaults(&h->opt);
	h->opt.ca_file = NULL;
	memset(&h->opt.s3, 0, sizeof(h->opt.s3));
	memset(&h->opt.gs, 0, sizeof(h->opt.gs));
	h->opt.inject = NULL; /* no borrowed strings kept */
	h->trace = getenv("RF_HTTP_TRACE") != NULL || getenv("RF_DEBUG") != NULL;
	rf_http_set_backoff(h, 50, 5000, 0x5EED5EEDull);
	int rc = rf_http_loop_init(&h->curl, loop, h->opt.connections, &pump_ops, h);
	h->pool_max = h->opt.connections * EASY_POOL_PER_CONNECTION;
	h->pool = calloc(h->pool_max, sizeof(*h->pool));
	const char *ca = ca_bundle(opt);
	if ((ca && !(h->ca_file = strdup(ca))) || !h->pool || rc < 0) {
		rf_http_free(h);
		return rf_fail(err, -ENOMEM, "out of memory for the HTTP client");
	}
	*out = h;
	return 0;
}

void rf_http_connections_set(rf_http *h, uint32_t connections)
{
	h->opt.connections = RF_MAX(connections, 1u);
	rf_http_loop_connections(&h->curl, h->opt.connections);
	rf_http_loop_kick(&h->curl); /* a raised limit admits queued transfers now */
}

void rf_http_free(rf_http *h)
{
	if (!h)
		return;
	rf_http_xfer *x;
	while ((x = rf_list_entry_or_null(h->all.head, rf_http_xfer, all_link))) {
		xfer_step(x, EV_CANCEL);
		rf_xfer_free(x);
	}
	rf_http_loop_fini(&h->curl);
	for (uint32_t i = 0; i < h->npool; i++)
		curl_easy_cleanup(h->pool[i]);
	free(h->pool);
	free(h->ca_file);
	h->magic = 0;
	free(h);
}

/* ------------------------------------------------------------ public side */

static int check_request(const rf_http_request *r, const char *shown, rf_error *err)
{
	rf_url_scheme s = rf_url_scheme_of(r->url);
	if (s != RF_URL_HTTP && s != RF_URL_HTTPS)
		return rf_fail(err, -EINVAL, "'%s' is not an http(s) URL", shown);
	if (strlen(r->url) > RF_URL_BYTES_MAX)
		return rf_fail(err, -ENAMETOOLONG, "URL longer than %u bytes: '%.80s...'",
		               RF_URL_BYTES_MAX, shown);
	uint64_t end;
	if (r->kind == RF_HTTP_RANGE &&
	    (!r->buf || !rf_add_u64(r->offset, r->len, &end) || end > (uint64_t)INT64_MAX))
		return rf_fail(err, -EINVAL, "bad range %llu+%llu for '%s'",
		               (unsigned long long)r->offset, (unsigned long long)r->len, shown);
	if (r->kind == RF_HTTP_GET_ALL && (!r->body || r->max_bytes == 0))
		return rf_fail(err, -EINVAL, "GET of '%s' without a body buffer", shown);
	return 0;
}

int rf_http_start(rf_http *h, const rf_http_request *req, rf_fetch_cb cb, void *arg,
                  rf_http_xfer **out, rf_error *err)
{
	char shown[512];
	rf_url_redact(req->name ? req->name : req->url, shown, sizeof(shown));
	if (h->magic != HTTP_MAGIC || h->curl.in_action)
		return rf_fail(err, -EINVAL, "HTTP client used from inside a curl callback");
	RF_TRY(check_request(req, shown, err));
	if (h->transfers >= RF_HTTP_TRANSFERS_MAX)
		return rf_fail(err, -EAGAIN, "more than %u HTTP transfers queued",
		               RF_HTTP_TRANSFERS_MAX);
	host *hh = rf_http_host_of(h, req->url);
	if (!hh)
		return rf_fail(err, -EAGAIN, "more than %u distinct hosts", RF_HTTP_HOSTS_MAX);
	rf_http_xfer *x = calloc(1, sizeof(*x));
	if (!x || !(x->url = strdup(req->url)) || !(x->name = strdup(shown))) {
		if (x)
			free(x->url);
		free(x);
		return rf_fail(err, -ENOMEM, "out of memory starting a transfer of '%s'", shown);
	}
	x->h = h;
	x->timer_id = NO_OP;
	x->req = *req;
	x->req.url = x->req.name = x->req.scope = x->req.bucket = NULL; /* the signer copies */
	x->cb = cb;
	x->arg = arg;
	x->host = hh;
	const rf_http_auth *a = req->auth;
	int rc = a && a->ops->begin ? a->ops->begin(a->state, req, x, &x->auth_data) : 0;
	if (rc < 0) {
		free(x->url);
		free(x->name);
		free(x);
		return rf_fail(err, rc, "%s starting a transfer of '%s'",
		               rc == -ENOMEM ? "out of memory" : "the signer failed", shown);
	}
	rf_list_push_back(&h->all, &x->all_link);
	h->transfers++;
	if (req->kind == RF_HTTP_RANGE && req->len == 0)
		rf_xfer_finish(x, 0, NULL); /* nothing to ask for */
	else
		rf_xfer_move(x, X_QUEUED, false, "started");
	if (out)
		*out = x;
	rf_http_loop_kick(&h->curl);
	return 0;
}

void rf_http_cancel(rf_http *h, rf_http_xfer *x)
{
	if (!x || h->magic != HTTP_MAGIC)
		return;
	xfer_step(x, EV_CANCEL);
	rf_xfer_free(x);
	rf_http_loop_kick(&h->curl); /* curl may want its sockets re-armed after remove_handle */
}
