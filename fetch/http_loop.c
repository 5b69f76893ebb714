/* http_loop.c - libcurl's multi *socket* API driven by the rf_loop.
 *
 * curl's socket callback and timer callback only record what curl wants
 * (which fd, which events; when to be called back). After every call into
 * curl returns, rf_http_pump() turns those records into one-shot rf_loop
 * polls and one rf_loop timer; a poll completion or the timer calls
 * curl_multi_socket_action, then the pump again. One-shot polls are re-armed
 * after each action: a multishot poll would not fire again while data sits
 * unread. Polls and timers are removed by id, so completions for a closed or
 * reused fd are dropped by the loop (generation tags). */
#include "http_int.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SOCKETS_MAX              4096
#define EASY_POOL_PER_CONNECTION 2

/* ------------------------------------------------ curl callbacks: record only */

static sock *sock_find(rf_http *h, curl_socket_t fd)
{
	for (uint32_t i = 0; i < h->nsocks; i++)
		if (h->socks[i]->fd == fd)
			return h->socks[i];
	return NULL;
}

static sock *sock_add(rf_http *h, curl_socket_t fd)
{
	if (h->nsocks == SOCKETS_MAX)
		return NULL;
	if (h->nsocks == h->socks_cap) {
		uint32_t cap = h->socks_cap ? h->socks_cap * 2 : 64;
		sock **v = realloc(h->socks, cap * sizeof(*v));
		if (!v)
			return NULL;
		h->socks = v;
		h->socks_cap = cap;
	}
	sock *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->h = h;
	s->fd = fd;
	s->poll_id = NO_OP;
	h->socks[h->nsocks++] = s;
	return s;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	rf_http *h = userp;
	sock *s = sock_find(h, fd);
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			s->want = 0;
			s->reset = true;
		}
		return 0;
	}
	if (!s && !(s = sock_add(h, fd)))
		return -1; /* curl fails the transfer: clearer than a hang */
	if (s->want == 0)
		s->reset = true;
	s->want = what;
	return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	rf_http *h = userp;
	h->timer_want = timeout_ms < 0 ? -1 : timeout_ms;
	return 0;
}

/* ------------------------------------------------------------- the loop side */

static void on_poll(void *arg, int res);
static void on_curl_timer(void *arg, int res);

static uint32_t to_poll_mask(int want)
{
	return (want & CURL_POLL_IN ? POLLIN : 0) | (want & CURL_POLL_OUT ? POLLOUT : 0);
}

/* Turns what curl asked for into armed one-shot polls; frees removed sockets. */
static void apply_sockets(rf_http *h)
{
	for (uint32_t i = 0; i < h->nsocks;) {
		sock *s = h->socks[i];
		if (s->poll_id >= 0 && (s->reset || s->armed != s->want)) {
			rf_loop_cancel(h->loop, s->poll_id);
			s->poll_id = NO_OP;
		}
		s->reset = false;
		if (s->want == 0) {
			h->socks[i] = h->socks[--h->nsocks];
			free(s);
			continue;
		}
		if (s->poll_id < 0) {
			int64_t id =
			    rf_loop_poll(h->loop, s->fd, to_poll_mask(s->want), on_poll, s);
			/* A full op table: try again on the next rf_http_pump (the timer keeps curl
			 * alive).
			 */
			s->poll_id = id >= 0 ? id : NO_OP;
			s->armed = id >= 0 ? s->want : 0;
		}
		i++;
	}
}

static void apply_timer(rf_http *h)
{
	if (h->timer_want == -2)
		return;
	rf_loop_cancel(h->loop, h->timer_id);
	h->timer_id = NO_OP;
	if (h->timer_want >= 0) {
		int64_t id =
		    rf_loop_timer(h->loop, (uint64_t)h->timer_want * 1000000ull, on_curl_timer, h);
		h->timer_id = id >= 0 ? id : NO_OP;
	}
	h->timer_want = -2;
}

static void socket_action(rf_http *h, curl_socket_t fd, int events)
{
	int running = 0;
	h->in_callback = true;
	curl_multi_socket_action(h->multi, fd, events, &running);
	h->in_callback = false;
	rf_http_pump(h);
}

static void on_poll(void *arg, int res)
{
	sock *s = arg;
	rf_http *h = s->h;
	s->poll_id = NO_OP;
	s->armed = 0;
	int ev = 0;
	if (res < 0)
		ev = CURL_CSELECT_ERR;
	else {
		if (res & (POLLIN | POLLHUP | POLLRDHUP))
			ev |= CURL_CSELECT_IN;
		if (res & POLLOUT)
			ev |= CURL_CSELECT_OUT;
		if (res & (POLLERR | POLLNVAL))
			ev |= CURL_CSELECT_ERR;
	}
	socket_action(h, s->fd, ev);
}

static void on_curl_timer(void *arg, int res)
{
	rf_http *h = arg;
	h->timer_id = NO_OP;
	socket_action(h, CURL_SOCKET_TIMEOUT, 0);
}

/* ---------------------------------------------------------------- pump */

static bool harvest(rf_http *h)
{
	bool any = false;
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->multi, &left))) {
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
		rf_xfer_step(x, EV_FINISHED);
		any = true;
	}
	return any;
}

void rf_http_pump(rf_http *h)
{
	if (h->pumping) {
		h->pump_again = true;
		return;
	}
	h->pumping = true;
	do {
		h->pump_again = false;
		if (harvest(h))
			h->pump_again = true;
		if (rf_http_admit(h))
			h->pump_again = true;
		apply_sockets(h);
		apply_timer(h);
		rf_http_deliver(h);
	} while (h->pump_again);
	h->pumping = false;
}

static void on_kick(void *arg, int res)
{
	rf_http *h = arg;
	h->kick_id = NO_OP;
	rf_http_pump(h);
}

/* Runs rf_http_pump() soon from the loop (never inside the caller's call). */
void rf_http_kick(rf_http *h)
{
	if (h->pumping) {
		h->pump_again = true;
		return;
	}
	if (h->kick_id < 0) {
		int64_t id = rf_loop_timer(h->loop, 0, on_kick, h);
		h->kick_id = id >= 0 ? id : NO_OP;
	}
}

/* ------------------------------------------------------------ public side */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

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
	pthread_once(&curl_once, curl_init_once);
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
	h->timer_want = -2;
	h->timer_id = h->kick_id = h->s3_expired_timer = NO_OP;
	h->trace = getenv("RF_HTTP_TRACE") != NULL;
	snprintf(h->region, sizeof(h->region), "us-east-1");
	rf_http_set_backoff(h, 50, 5000, 0x5EED5EEDull);
	h->pool_max = h->opt.connections * EASY_POOL_PER_CONNECTION;
	h->pool = calloc(h->pool_max, sizeof(*h->pool));
	h->multi = curl_multi_init();
	const char *ca = ca_bundle(opt);
	if ((ca && !(h->ca_file = strdup(ca))) || !h->pool || !h->multi) {
		rf_http_free(h);
		return rf_fail(err, -ENOMEM, "out of memory for the HTTP client");
	}
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)h->opt.connections);
	curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)h->opt.connections * 4);
	*out = h;
	return 0;
}

void rf_http_free(rf_http *h)
{
	if (!h)
		return;
	while (h->all) {
		rf_http_xfer *x = h->all;
		rf_xfer_step(x, EV_CANCEL);
		rf_xfer_free(x);
	}
	if (h->multi)
		curl_multi_cleanup(h->multi); /* may still report sockets: recorded only */
	for (uint32_t i = 0; i < h->nsocks; i++) {
		rf_loop_cancel(h->loop, h->socks[i]->poll_id);
		free(h->socks[i]);
	}
	free(h->socks);
	rf_loop_cancel(h->loop, h->timer_id);
	rf_loop_cancel(h->loop, h->kick_id);
	rf_loop_cancel(h->loop, h->s3_expired_timer);
	free(h->s3_note);
	free(h->s3_fail_msg);
	for (uint32_t i = 0; i < h->npool; i++)
		curl_easy_cleanup(h->pool[i]);
	free(h->pool);
	free(h->ca_file);
	rf_http_wipe_free(h->s3_sigv4);
	rf_http_wipe_free(h->s3_userpwd);
	rf_http_wipe_free(h->s3_token_header);
	h->magic = 0;
	free(h);
}
