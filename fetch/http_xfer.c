/* http_xfer.c - the HTTP client's records, under everything that moves a
 * transfer: the queue and done lists, the hosts (the unit of the connection
 * limit), a transfer's outcome (finished, or failed while queued) and its
 * freeing, the counters; and the small helpers the client's files share (a
 * request header line, wiping a secret). It calls nothing above it: the
 * state machine (http.c), the response checks (http_check.c) and the S3
 * signing (s3_sign.c) all build on it. */
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ lists */

static void list_push(rf_http_xfer **head, rf_http_xfer **tail, rf_http_xfer *x)
{
	x->next = NULL;
	x->prev = *tail;
	if (*tail)
		(*tail)->next = x;
	else
		*head = x;
	*tail = x;
}

static void list_push_front(rf_http_xfer **head, rf_http_xfer **tail, rf_http_xfer *x)
{
	x->prev = NULL;
	x->next = *head;
	if (*head)
		(*head)->prev = x;
	else
		*tail = x;
	*head = x;
}

static void list_unlink(rf_http_xfer **head, rf_http_xfer **tail, rf_http_xfer *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		*head = x->next;
	if (x->next)
		x->next->prev = x->prev;
	else
		*tail = x->prev;
	x->prev = x->next = NULL;
}

void rf_xfer_queue(rf_http_xfer *x)
{
	x->state = X_QUEUED;
	list_push(&x->h->queue_head, &x->h->queue_tail, x);
	x->listed_queue = true;
}

void rf_xfer_queue_first(rf_http_xfer *x)
{
	x->state = X_QUEUED;
	list_push_front(&x->h->queue_head, &x->h->queue_tail, x);
	x->listed_queue = true;
}

void rf_xfer_unqueue(rf_http_xfer *x)
{
	list_unlink(&x->h->queue_head, &x->h->queue_tail, x);
	x->listed_queue = false;
}

void rf_xfer_undone(rf_http_xfer *x)
{
	list_unlink(&x->h->done_head, &x->h->done_tail, x);
	x->listed_done = false;
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
	x->state = X_DONE;
	list_push(&h->done_head, &h->done_tail, x);
	x->listed_done = true;
}

void rf_xfer_fail_queued(rf_http_xfer *x, int code, const char *msg)
{
	rf_xfer_unqueue(x);
	rf_xfer_finish(x, code, msg ? msg : "no S3 credentials");
}

void rf_xfer_free(rf_http_xfer *x)
{
	rf_http *h = x->h;
	if (x->all_prev)
		x->all_prev->all_next = x->all_next;
	else
		h->all = x->all_next;
	if (x->all_next)
		x->all_next->all_prev = x->all_prev;
	h->transfers--;
	free(x->all);
	free(x->redirect);
	free(x->fail_msg);
	free(x->url);
	free(x->name);
	free(x->region);
	free(x->bucket);
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

unsigned rf_http_in_flight(const rf_http *h)
{
	return h->transfers;
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

void rf_http_wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}
