/* http_loop.c - libcurl's multi *socket* API driven by the rf_loop (see
 * http_loop.h): the HTTP client's lowest floor, which knows nothing of
 * transfers.
 *
 * curl's socket callback and timer callback only record what curl wants
 * (which fd, which events; when to be called back). After every call into
 * curl returns, rf_http_loop_pump() runs the owner's work (registered ops),
 * turns those records into one-shot rf_loop polls and one rf_loop timer, and
 * runs the owner's deliveries; a poll completion or the timer calls
 * curl_multi_socket_action, then the pump again. One-shot polls are re-armed
 * after each action: a multishot poll would not fire again while data sits
 * unread. Polls and timers are removed by id, so completions for a closed or
 * reused fd are dropped by the loop (generation tags). */
#include "http_loop.h"
#include "util.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

#define SOCKETS_MAX 4096
#define NO_OP       (-1) /* an op id meaning "none" (rf_loop_cancel ignores it) */

struct rf_http_sock {
	rf_http_loop *c;
	curl_socket_t fd;
	int want;  /* CURL_POLL_* curl asked for; 0 = removed */
	int armed; /* mask of the poll in flight (0 = none) */
	int64_t poll_id;
	bool reset; /* fd was removed and reused: re-arm from scratch */
};

/* ------------------------------------------------ curl callbacks: record only */

static rf_http_sock *sock_find(rf_http_loop *c, curl_socket_t fd)
{
	for (uint32_t i = 0; i < c->nsocks; i++)
		if (c->socks[i]->fd == fd)
			return c->socks[i];
	return NULL;
}

static rf_http_sock *sock_add(rf_http_loop *c, curl_socket_t fd)
{
	if (c->nsocks == SOCKETS_MAX)
		return NULL;
	if (c->nsocks == c->socks_cap) {
		uint32_t cap = c->socks_cap ? c->socks_cap * 2 : 64;
		rf_http_sock **v = realloc(c->socks, cap * sizeof(*v));
		if (!v)
			return NULL;
		c->socks = v;
		c->socks_cap = cap;
	}
	rf_http_sock *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->c = c;
	s->fd = fd;
	s->poll_id = NO_OP;
	c->socks[c->nsocks++] = s;
	return s;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	rf_http_loop *c = userp;
	rf_http_sock *s = sock_find(c, fd);
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			s->want = 0;
			s->reset = true;
		}
		return 0;
	}
	if (!s && !(s = sock_add(c, fd)))
		return -1; /* curl fails the transfer: clearer than a hang */
	if (s->want == 0)
		s->reset = true;
	s->want = what;
	return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	rf_http_loop *c = userp;
	c->timer_want = timeout_ms < 0 ? -1 : timeout_ms;
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
static void apply_sockets(rf_http_loop *c)
{
	for (uint32_t i = 0; i < c->nsocks;) {
		rf_http_sock *s = c->socks[i];
		if (s->poll_id >= 0 && (s->reset || s->armed != s->want)) {
			rf_loop_cancel(c->loop, s->poll_id);
			s->poll_id = NO_OP;
		}
		s->reset = false;
		if (s->want == 0) {
			c->socks[i] = c->socks[--c->nsocks];
			free(s);
			continue;
		}
		if (s->poll_id < 0) {
			int64_t id =
			    rf_loop_poll(c->loop, s->fd, to_poll_mask(s->want), on_poll, s);
			/* A full op table: try again on the next pump (the timer keeps
			 * curl alive). */
			s->poll_id = id >= 0 ? id : NO_OP;
			s->armed = id >= 0 ? s->want : 0;
		}
		i++;
	}
}

static void apply_timer(rf_http_loop *c)
{
	if (c->timer_want == -2)
		return;
	rf_loop_cancel(c->loop, c->timer_id);
	c->timer_id = NO_OP;
	if (c->timer_want >= 0) {
		int64_t id =
		    rf_loop_timer(c->loop, (uint64_t)c->timer_want * 1000000ull, on_curl_timer, c);
		c->timer_id = id >= 0 ? id : NO_OP;
	}
	c->timer_want = -2;
}

static void socket_action(rf_http_loop *c, curl_socket_t fd, int events)
{
	int running = 0;
	c->in_action = true;
	curl_multi_socket_action(c->multi, fd, events, &running);
	c->in_action = false;
	rf_http_loop_pump(c);
}

static void on_poll(void *arg, int res)
{
	rf_http_sock *s = arg;
	rf_http_loop *c = s->c;
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
	socket_action(c, s->fd, ev);
}

static void on_curl_timer(void *arg, int res)
{
	rf_http_loop *c = arg;
	c->timer_id = NO_OP;
	socket_action(c, CURL_SOCKET_TIMEOUT, 0);
}

/* ---------------------------------------------------------------- pump */

void rf_http_loop_pump(rf_http_loop *c)
{
	if (c->pumping) {
		c->pump_again = true;
		return;
	}
	c->pumping = true;
	do {
		c->pump_again = false;
		if (c->ops->work(c->owner))
			c->pump_again = true;
		apply_sockets(c);
		apply_timer(c);
		c->ops->deliver(c->owner);
	} while (c->pump_again);
	c->pumping = false;
}

static void on_kick(void *arg, int res)
{
	rf_http_loop *c = arg;
	c->kick_id = NO_OP;
	rf_http_loop_pump(c);
}

void rf_http_loop_kick(rf_http_loop *c)
{
	if (c->pumping) {
		c->pump_again = true;
		return;
	}
	if (c->kick_id < 0) {
		int64_t id = rf_loop_timer(c->loop, 0, on_kick, c);
		c->kick_id = id >= 0 ? id : NO_OP;
	}
}

/* ------------------------------------------------------- setup, teardown */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int rf_http_loop_init(rf_http_loop *c, rf_loop *loop, uint32_t connections,
                      const rf_http_loop_ops *ops, void *owner)
{
	*c = (rf_http_loop){.loop = loop, .ops = ops, .owner = owner, .timer_want = -2};
	c->timer_id = c->kick_id = NO_OP;
	pthread_once(&curl_once, curl_init_once);
	c->multi = curl_multi_init();
	if (!c->multi)
		return -ENOMEM;
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	rf_http_loop_connections(c, connections);
	return 0;
}

void rf_http_loop_connections(rf_http_loop *c, uint32_t connections)
{
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)connections);
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)connections * 4);
}

void rf_http_loop_fini(rf_http_loop *c)
{
	if (c->multi)
		curl_multi_cleanup(c->multi); /* may still report sockets: recorded only */
	c->multi = NULL;
	for (uint32_t i = 0; i < c->nsocks; i++) {
		rf_loop_cancel(c->loop, c->socks[i]->poll_id);
		free(c->socks[i]);
	}
	free(c->socks);
	c->socks = NULL;
	c->nsocks = c->socks_cap = 0;
	rf_loop_cancel(c->loop, c->timer_id);
	rf_loop_cancel(c->loop, c->kick_id);
	c->timer_id = c->kick_id = NO_OP;
}
