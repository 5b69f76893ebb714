/* http_xfer.c - the HTTP client's records, under everything that moves a
 * transfer: the queue and done lists, the hosts (the unit of the connection
 * limit), a transfer's outcome (finished, or failed while queued) and its
 * freeing, the counters; the one mover of a transfer's state (rf_xfer_move,
 * which keeps the lists with it); and what a signer may see and do of a
 * transfer (http.h's seam). It calls nothing above it: the state machine
 * (http.c) and the response checks (http_check.c) build on it. */
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------ the state mover */

const char *const rf_xfer_state_name[X_STATES] = {"new",     "queued", "active",   "answered",
                                                  "backoff", "done",   "cancelled"};

/* The machine's moves: allowed[from] has bit `to` set. */
#define TO(s) (1u << (s))
static const unsigned allowed[X_STATES] = {
    [X_NEW] = TO(X_QUEUED) | TO(X_DONE),
    [X_QUEUED] = TO(X_ACTIVE) | TO(X_DONE) | TO(X_CANCELLED),
    [X_ACTIVE] = TO(X_ANSWERED) | TO(X_CANCELLED),
    [X_ANSWERED] = TO(X_QUEUED) | TO(X_BACKOFF) | TO(X_DONE),
    [X_BACKOFF] = TO(X_QUEUED) | TO(X_CANCELLED),
    [X_DONE] = TO(X_CANCELLED),
    [X_CANCELLED] = 0,
};

static void leave(rf_http_xfer *x, xfer_state from)
{
	rf_http *h = x->h;
	if (x->listed)
		rf_list_remove(from == X_QUEUED ? &h->queue : &h->done, &x->link);
	x->listed = false;
	if (from == X_ACTIVE) {
		x->host->active--;
		if (x->easy) /* returns once curl will write no more */
			curl_multi_remove_handle(h->curl.multi, x->easy);
	}
	if (from == X_BACKOFF) {
		rf_loop_cancel(h->loop, x->timer_id); /* NO_OP when it fired */
		x->timer_id = NO_OP;
	}
}

static void enter(rf_http_xfer *x, xfer_state to, bool first)
{
	rf_http *h = x->h;
	if (to == X_QUEUED && first)
		rf_list_push_front(&h->queue, &x->link);
	else if (to == X_QUEUED || to == X_DONE)
		rf_list_push_back(to == X_QUEUED ? &h->queue : &h->done, &x->link);
	x->listed = to == X_QUEUED || to == X_DONE;
	if (to == X_ACTIVE) {
		x->active_ns = rf_now_ns();
		x->host->active++;
		h->counters.host_active_max =
		    RF_MAX(h->counters.host_active_max, (uint64_t)x->host->active);
	}
}

void rf_xfer_move(rf_http_xfer *x, xfer_state to, bool first, const char *why)
{
	xfer_state from = x->state;
	if (!(allowed[from] & TO(to))) {
		fprintf(stderr, "ringfeed: http: %s: no move from %s to %s (%s): refused\n",
		        x->name, rf_xfer_state_name[from], rf_xfer_state_name[to], why);
		return;
	}
	leave(x, from);
	x->state = to;
	enter(x, to, first);
	if (x->h->trace)
		fprintf(stderr, "http: %s: %s -> %s%s (%s; attempt %u, status %ld)\n", x->name,
		        rf_xfer_state_name[from], rf_xfer_state_name[to],
		        to == X_QUEUED && first ? " first in line" : "", why, x->attempts,
		        x->status);
}

/* ------------------------------------------------------------------ hosts */

/* scheme://authority of url, the unit of the per-host connection limit. */
host *rf_http_host_of(rf_http *h, const char *url)
{
	const char *s = strstr(url, "://");
	size_t len = s ? (size_t)(s + 3 - url) + strcspn(s + 3, "/?#") : strlen(url);
	if (len >= sizeof(h->hosts[0].key))
		len = sizeof(h->hosts[0].key) - 1;
	for (uint32_t i = 0; i < h->nhosts; i++)
		if (strlen(h->hosts[i].key) == len && !strncasecmp(h->hosts[i].key, url, len))
			return &h->hosts[i];
	if (h->nhosts == RF_HTTP_HOSTS_MAX)
		return NULL;
	host *o = &h->hosts[h->nhosts++];
	memcpy(o->key, url, len);
	o->key[len] = '\0';
	o->active = 0;
	o->trouble = 0;
	return o;
}

uint64_t rf_http_host_trouble(rf_http *h, const char *url)
{
	host *o = rf_http_host_of(h, url);
	return o ? o->trouble : 0;
}

/* --------------------------------------------------------------- outcomes */

void rf_xfer_finish(rf_http_xfer *x, int64_t result, const char *why)
{
	rf_http *h = x->h;
	x->result = result;
	if (why) {
		char range[80] = "";
		if (x->req.kind == RF_HTTP_RANGE)
			snprintf(range, sizeof(range), " bytes %llu-%llu",
			         (unsigned long long)x->req.offset,
			         (unsigned long long)(x->req.offset + x->req.len - 1));
		char tail[64] = ""; /* none when it never started (no credentials) */
		if (x->attempts > 0)
			snprintf(tail, sizeof(tail), "; last HTTP status %ld, %u attempt%s",
			         x->status, x->attempts, x->attempts == 1 ? "" : "s");
		x->fail_msg = rf_http_dup_printf("%s %s%s: %s%s",
		                                 x->req.method                 ? x->req.method
		                                 : x->req.kind == RF_HTTP_HEAD ? "HEAD"
		                                 : x->req.post                 ? "POST"
		                                                               : "GET",
		                                 x->name, range, why, tail);
		h->counters.errors += !x->req.uncounted;
	} else if (x->req.kind == RF_HTTP_GET_ALL) {
		*x->req.body = x->all ? x->all : strdup("");
		x->all = NULL;
	}
	if (!why && x->req.validator)
		rf_http_validator_make(x->etag, x->etag_bad, x->last_modified, x->req.validator,
		                       x->req.validator_cap);
	rf_xfer_move(x, X_DONE, false, why ? "failed" : "finished");
}

rf_http_xfer *rf_xfer_take_done(rf_http *h)
{
	rf_http_xfer *x = XFER_OF(h->done.head);
	if (x) { /* stays DONE while its callback runs, then is freed */
		rf_list_remove(&h->done, &x->link);
		x->listed = false;
	}
	return x;
}

void rf_xfer_free(rf_http_xfer *x)
{
	rf_http *h = x->h;
	const rf_http_auth *a = x->req.auth;
	if (a && a->ops->end)
		a->ops->end(a->state, x->auth_data);
	rf_list_remove(&h->all, &x->all_link);
	h->transfers--;
	free(x->all);
	free(x->redirect);
	free(x->fail_msg);
	free(x->url);
	free(x->name);
	free(x);
}

bool rf_http_xfer_active(const rf_http_xfer *x, uint64_t *since_ns)
{
	*since_ns = x->active_ns;
	return x->state == X_ACTIVE;
}

/* ------------------------------------------------------- client settings */

void rf_http_set_backoff(rf_http *h, uint32_t base_ms, uint32_t cap_ms, uint64_t seed)
{
	h->backoff_base_ms = RF_MAX(base_ms, 1u);
	h->backoff_cap_ms = RF_MAX(cap_ms, h->backoff_base_ms);
	h->rng = seed;
}

void rf_http_counters_get(const rf_http *h, rf_http_counters *out)
{
	*out = h->counters;
}

/* ---------------------------------------------------------- small helpers */

int rf_xfer_add_header(rf_http_xfer *x, const char *line)
{
	struct curl_slist *l = curl_slist_append(x->headers, line);
	if (!l)
		return -ENOMEM;
	x->headers = l;
	return 0;
}

/* --------------------------------------------- the signer's view (http.h) */

const char *rf_http_xfer_url(const rf_http_xfer *x)
{
	return x->url;
}

const char *rf_http_xfer_name(const rf_http_xfer *x)
{
	return x->name;
}

rf_http_kind rf_http_xfer_kind(const rf_http_xfer *x)
{
	return x->req.kind;
}

const char *rf_http_xfer_method(const rf_http_xfer *x)
{
	return x->req.method                 ? x->req.method
	       : x->req.kind == RF_HTTP_HEAD ? "HEAD"
	       : x->req.post                 ? "POST"
	                                     : "GET";
}

bool rf_http_xfer_range(const rf_http_xfer *x, uint64_t *first, uint64_t *last)
{
	if (x->req.kind != RF_HTTP_RANGE || x->req.len == 0)
		return false;
	*first = x->req.offset + x->resumed; /* < len: a complete range is never asked again */
	*last = x->req.offset + x->req.len - 1;
	return true;
}

long rf_http_xfer_status(const rf_http_xfer *x)
{
	return x->status;
}

const char *rf_http_xfer_error_body(const rf_http_xfer *x)
{
	return x->error_body;
}

int rf_http_xfer_add_header(rf_http_xfer *x, const char *line)
{
	return rf_xfer_add_header(x, line);
}

void rf_http_xfer_sigv4(rf_http_xfer *x, const char *scope, const char *userpwd)
{
	curl_easy_setopt(x->easy, CURLOPT_AWS_SIGV4, scope);
	curl_easy_setopt(x->easy, CURLOPT_USERPWD, userpwd);
}

void rf_http_xfer_path_as_is(rf_http_xfer *x)
{
	curl_easy_setopt(x->easy, CURLOPT_PATH_AS_IS, 1L);
}

int rf_http_xfer_retarget(rf_http_xfer *x, const char *url)
{
	char *u = strdup(url);
	host *hh = u ? rf_http_host_of(x->h, u) : NULL;
	if (!hh) {
		free(u);
		return u ? -EAGAIN : -ENOMEM;
	}
	free(x->url);
	x->url = u;
	x->host = hh;
	return 0;
}

void rf_http_fail_queued(rf_http *h, const rf_http_auth *auth, int code, const char *msg)
{
	rf_list_for_each(n, tmp, &h->queue)
	{
		rf_http_xfer *x = XFER_OF(n);
		if (x->req.auth == auth)
			rf_xfer_finish(x, code, msg);
	}
	rf_http_loop_kick(&h->curl);
}

void rf_http_kick(rf_http *h)
{
	rf_http_loop_kick(&h->curl);
}

bool rf_http_tracing(const rf_http *h)
{
	return h->trace;
}
