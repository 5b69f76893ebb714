/* http.c - HTTP(S) transfers driven by the io_uring loop (see http.h).
 *
 * curl's socket callback and timer callback only record what curl wants
 * (which fd, which events; when to be called back). After every call into
 * curl returns, pump() turns those records into one-shot rf_loop polls and
 * one rf_loop timer; a poll completion or the timer calls
 * curl_multi_socket_action, then pump() again. One-shot polls are re-armed
 * after each action: a multishot poll would not fire again while data sits
 * unread. Polls and timers are removed by id, so completions for a closed or
 * reused fd are dropped by the loop (generation tags).
 *
 * Each transfer is a state machine (xfer_state, xfer_state_name[],
 * xfer_step): QUEUED (waiting for a connection slot of its host) -> ACTIVE
 * (in curl) -> DONE, or ACTIVE -> BACKOFF (retry timer) -> QUEUED. A response
 * is accepted only when it is exactly what was asked (see accept_*). */
#include "http.h"
#include "url.h"
#include "util.h"

#include <curl/curl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define HTTP_MAGIC               0x52464854u /* "RFHT" */
#define SOCKETS_MAX              4096
#define ERROR_BODY_BYTES         512 /* kept from an error response (S3 <Code>) */
#define EASY_POOL_PER_CONNECTION 2
#define HTTP_RECV_BUFFER_BYTES   (512 * 1024)
#define NO_OP                    (-1) /* an op id meaning "none" (rf_loop_cancel ignores it) */
#define REGIONS_MAX              64   /* buckets whose region was learned from a mismatch */
#define REGION_BYTES             48

typedef enum xfer_state { X_QUEUED = 0, X_ACTIVE, X_BACKOFF, X_DONE, X_STATES } xfer_state;
static const char *const xfer_state_name[X_STATES] = {"queued", "active", "backoff", "done"};

typedef enum xfer_event {
	EV_ADMIT = 0, /* a connection slot of its host is free */
	EV_FINISHED,  /* curl finished the attempt (x->curl_rc, x->status set) */
	EV_TIMER,     /* the backoff timer fired */
	EV_CANCEL,
} xfer_event;

typedef struct host {
	char key[256]; /* scheme://authority */
	uint32_t active;
	uint64_t trouble; /* attempts that failed (retried or not): the hedging switch */
} host;

struct rf_http_xfer {
	rf_http *h;
	rf_http_xfer *prev, *next;         /* in h->queue or h->done */
	rf_http_xfer *all_prev, *all_next; /* every transfer of h */
	bool listed_queue, listed_done;
	xfer_state state;
	rf_http_request req;
	char *url, *name;
	rf_fetch_cb cb;
	void *arg;
	host *host;
	char *redirect;       /* the current attempt's 3xx Location, resolved by curl */
	uint32_t hops;        /* redirects followed */
	char *region;         /* signed: the SigV4 region of this request (NULL = the client's) */
	char *bucket;         /* signed: its bucket (NULL = unknown) */
	bool region_followed; /* a region mismatch was followed once */
	char bucket_region[REGION_BYTES]; /* x-amz-bucket-region of the current response */
	bool following; /* the next admission follows a redirect: not a new attempt */
	CURL *easy;
	struct curl_slist *headers;
	int64_t timer_id;
	uint32_t attempts;
	uint64_t active_ns;          /* when the current or last attempt went into curl */
	uint32_t error_retries;      /* retries after errors other than throttling */
	uint32_t throttles;          /* retries after throttling */
	uint64_t throttle_waited_ms; /* backoff spent riding out throttling */
	uint64_t s3_gen;             /* credentials the current attempt was signed with */
	bool expiry_retried;         /* met ExpiredToken once already */
	/* the current attempt's response */
	CURLcode curl_rc;
	long status;
	uint64_t got, content_length, header_bytes;
	bool have_content_length, body_checked;
	char retry_after[48];
	char problem[160]; /* set by callbacks when a response is refused */
	bool problem_retryable;
	char error_body[ERROR_BODY_BYTES + 1];
	size_t error_body_len;
	char curl_msg[CURL_ERROR_SIZE];
	char *all; /* GET_ALL body */
	/* outcome */
	int64_t result;
	char *fail_msg;
};

typedef struct sock {
	rf_http *h;
	curl_socket_t fd;
	int want;  /* CURL_POLL_* curl asked for; 0 = removed */
	int armed; /* mask of the poll in flight (0 = none) */
	int64_t poll_id;
	bool reset; /* fd was removed and reused: re-arm from scratch */
} sock;

struct rf_http {
	uint32_t magic;
	rf_loop *loop;
	CURLM *multi;
	rf_fetch_options opt;
	char *ca_file;
	char *s3_sigv4, *s3_userpwd, *s3_token_header;
	char *s3_note;    /* anonymous: which credential sources were tried */
	uint64_t s3_gen;  /* bumped by every rf_http_set_s3 */
	bool s3_hold;     /* signed requests wait for credentials */
	int s3_fail_code; /* sticky failure of signed requests (0 = none) */
	char *s3_fail_msg;
	void (*s3_expired)(void *arg);
	void *s3_expired_arg;
	int64_t s3_expired_timer;
	host hosts[RF_HTTP_HOSTS_MAX];
	uint32_t nhosts;
	struct {
		char bucket[64], region[REGION_BYTES];
	} regions[REGIONS_MAX]; /* learned from wrong-region answers; oldest replaced */
	uint32_t nregions, regions_next;
	char region[REGION_BYTES]; /* rf_http_set_s3's signing region */
	rf_http_xfer *queue_head, *queue_tail, *done_head, *done_tail, *all;
	int64_t kick_id; /* a zero-delay timer that runs pump() from the loop */
	bool trace;      /* RF_HTTP_TRACE set: state changes on stderr */
	unsigned transfers;
	sock **socks;
	uint32_t nsocks, socks_cap;
	long timer_want; /* -2 unchanged, -1 delete, >= 0 ms */
	int64_t timer_id;
	CURL **pool;
	uint32_t npool, pool_max;
	bool pumping, pump_again, in_callback;
	uint32_t backoff_base_ms, backoff_cap_ms;
	uint64_t rng;
	rf_http_counters counters;
};

static void pump(rf_http *h);
static void kick(rf_http *h);
static void wipe_free(char *s);
static void xfer_step(rf_http_xfer *x, xfer_event ev);

/* ------------------------------------------------------------ pure helpers */

static bool parse_u64(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*out = v;
	return true;
}

int rf_http_parse_content_range(const char *v, uint64_t *first, uint64_t *last, uint64_t *total)
{
	while (*v == ' ' || *v == '\t')
		v++;
	if (strncasecmp(v, "bytes ", 6) != 0)
		return -EINVAL;
	v += 6;
	while (*v == ' ')
		v++;
	if (*v == '*') {
		*first = *last = UINT64_MAX;
		v++;
	} else {
		if (!parse_u64(&v, first) || *v++ != '-' || !parse_u64(&v, last) || *last < *first)
			return -EINVAL;
	}
	if (*v++ != '/')
		return -EINVAL;
	if (*v == '*') {
		if (*first == UINT64_MAX)
			return -EINVAL; /* "* / *" says nothing */
		*total = UINT64_MAX;
		v++;
	} else if (!parse_u64(&v, total) || (*first != UINT64_MAX && *last >= *total)) {
		return -EINVAL;
	}
	while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n')
		v++;
	return *v ? -EINVAL : 0;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t rf_http_backoff_ms(uint32_t attempt, uint32_t base_ms, uint32_t cap_ms, uint64_t *rng)
{
	uint64_t ceiling = base_ms;
	for (uint32_t i = 0; i < attempt && ceiling < cap_ms; i++)
		ceiling *= 2;
	ceiling = RF_MIN(ceiling, (uint64_t)cap_ms);
	return splitmix64(rng) % (ceiling + 1);
}

uint64_t rf_http_throttle_backoff_ms(uint32_t attempt, uint32_t base_ms, uint32_t cap_ms,
                                     uint64_t *rng)
{
	uint64_t ceiling = base_ms;
	for (uint32_t i = 0; i < attempt && ceiling < cap_ms; i++)
		ceiling *= 2;
	ceiling = RF_MIN(ceiling, (uint64_t)cap_ms);
	uint64_t half = ceiling / 2;
	return RF_MAX(half + splitmix64(rng) % (ceiling - half + 1), 1ull);
}

int64_t rf_http_throttle_delay_ms(uint32_t n, uint64_t waited_ms, uint64_t budget_ms,
                                  int64_t retry_after_ms, uint32_t base_ms, uint32_t cap_ms,
                                  uint64_t *rng)
{
	if (waited_ms >= budget_ms || n >= RF_HTTP_THROTTLE_RETRIES_MAX)
		return -1;
	uint64_t ms = rf_http_throttle_backoff_ms(n, base_ms, cap_ms, rng);
	if (retry_after_ms > 0 && (uint64_t)retry_after_ms > ms)
		ms = (uint64_t)retry_after_ms;
	return (int64_t)RF_MIN(ms, budget_ms - waited_ms);
}

bool rf_http_throttled(long status, const char *s3_code)
{
	return status == 429 || status == 503 || (s3_code && !strcmp(s3_code, "SlowDown"));
}

int64_t rf_http_retry_after_ms(const char *v)
{
	uint64_t s;
	while (*v == ' ')
		v++;
	if (!parse_u64(&v, &s))
		return -1;
	while (*v == ' ' || *v == '\r' || *v == '\n')
		v++;
	if (*v)
		return -1;
	return s >= RF_HTTP_RETRY_AFTER_MAX_MS / 1000 ? RF_HTTP_RETRY_AFTER_MAX_MS
	                                              : (int64_t)s * 1000;
}

long rf_http_status_line(const char *line)
{
	/* "HTTP/1.1 206" or "HTTP/2 206": the code follows the first space */
	const char *sp = strchr(line, ' ');
	return sp ? strtol(sp + 1, NULL, 10) : 0;
}

bool rf_http_parse_content_length(const char *v, uint64_t *out)
{
	v += strspn(v, " \t");
	return parse_u64(&v, out);
}

bool rf_http_status_retryable(long status)
{
	return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

static char *dup_printf(const char *fmt, ...) RF_PRINTF(1, 2);
static char *dup_printf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

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

static void set_problem(rf_http_xfer *x, bool retryable, const char *fmt, ...) RF_PRINTF(3, 4);
static void set_problem(rf_http_xfer *x, bool retryable, const char *fmt, ...)
{
	if (x->problem[0])
		return; /* the first problem explains the rest */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->problem, sizeof(x->problem), fmt, ap);
	va_end(ap);
	x->problem_retryable = retryable;
}

static bool header_is(const char *line, size_t n, const char *name, const char **value)
{
	size_t len = strlen(name);
	if (n <= len || strncasecmp(line, name, len) != 0 || line[len] != ':')
		return false;
	*value = line + len + 1;
	return true;
}

/* A new status line starts a new response (after a redirect or 100-continue). */
static void response_reset(rf_http_xfer *x, const char *line)
{
	x->status = rf_http_status_line(line);
	x->have_content_length = x->body_checked = false;
	x->content_length = 0;
	x->retry_after[0] = '\0';
	x->bucket_region[0] = '\0';
}

static size_t on_header(char *data, size_t size, size_t n, void *userp)
{
	rf_http_xfer *x = userp;
	x->header_bytes += n;
	if (x->header_bytes > RF_HTTP_HEADER_BYTES_MAX) {
		set_problem(x, false, "response headers larger than %u bytes",
		            RF_HTTP_HEADER_BYTES_MAX);
		return 0;
	}
	char line[1024];
	size_t len = RF_MIN(n, sizeof(line) - 1);
	memcpy(line, data, len);
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	line[len] = '\0';
	const char *v;
	if (!strncmp(line, "HTTP/", 5)) {
		response_reset(x, line);
	} else if (header_is(line, len, "content-length", &v)) {
		x->have_content_length = rf_http_parse_content_length(v, &x->content_length);
	} else if (header_is(line, len, "x-amz-bucket-region", &v)) {
		snprintf(x->bucket_region, sizeof(x->bucket_region), "%s", v + strspn(v, " \t"));
		if (!rf_s3_region_ok(x->bucket_region))
			x->bucket_region[0] = '\0'; /* untrusted: only a plausible name is used */
	} else if (header_is(line, len, "retry-after", &v)) {
		snprintf(x->retry_after, sizeof(x->retry_after), "%s", v + strspn(v, " \t"));
	} else if (header_is(line, len, "content-range", &v) && x->req.kind == RF_HTTP_RANGE &&
	           x->status == 206) {
		uint64_t first, last, total;
		uint64_t want_last = x->req.offset + x->req.len - 1;
		if (rf_http_parse_content_range(v, &first, &last, &total) < 0)
			set_problem(x, false, "unreadable Content-Range '%.60s'",
			            v + strspn(v, " \t"));
		else if (first != x->req.offset || last != want_last ||
		         (x->req.object_size != UINT64_MAX && total != UINT64_MAX &&
		          total != x->req.object_size))
			set_problem(x, false, "Content-Range '%.60s' does not match the request",
			            v + strspn(v, " \t"));
		else
			x->body_checked = true;
	}
	return n;
}

static size_t keep_error_body(rf_http_xfer *x, const char *data, size_t n)
{
	size_t room = ERROR_BODY_BYTES - x->error_body_len;
	memcpy(x->error_body + x->error_body_len, data, RF_MIN(room, n));
	x->error_body_len += RF_MIN(room, n);
	x->error_body[x->error_body_len] = '\0';
	x->got += n;
	if (x->got > (1u << 20)) {
		set_problem(x, rf_http_status_retryable(x->status),
		            "HTTP %ld with an error body over 1 MiB", x->status);
		return 0;
	}
	return n;
}

/* Decides, at the first body byte of a range response, whether it is what was asked. */
static bool range_body_ok(rf_http_xfer *x)
{
	if (x->status == 206) {
		if (!x->body_checked && !x->problem[0])
			set_problem(x, false, "HTTP 206 without a Content-Range");
		if (x->body_checked && x->have_content_length && x->content_length != x->req.len)
			set_problem(x, false, "Content-Length %llu for a range of %llu bytes",
			            (unsigned long long)x->content_length,
			            (unsigned long long)x->req.len);
		return !x->problem[0];
	}
	if (x->status == 200 && x->req.offset == 0 && x->have_content_length &&
	    x->content_length == x->req.len)
		return true; /* the whole object is exactly the range asked */
	if (x->status == 200)
		set_problem(x, false,
		            "server ignored the Range header (HTTP 200 with the whole object)");
	else
		set_problem(x, false, "unexpected HTTP %ld to a range request", x->status);
	return false;
}

static size_t on_write(char *data, size_t size, size_t n, void *userp)
{
	rf_http_xfer *x = userp;
	if (x->status < 200 || x->status > 299)
		return keep_error_body(x, data, n);
	if (x->problem[0])
		return 0;
	if (x->req.kind == RF_HTTP_RANGE) {
		if (x->got == 0 && !range_body_ok(x))
			return 0;
		if (n > x->req.len - x->got) {
			set_problem(x, false, "body longer than the %llu bytes asked",
			            (unsigned long long)x->req.len);
			return 0; /* never write past the caller's buffer */
		}
		memcpy((char *)x->req.buf + x->got, data, n);
		x->got += n;
		return n;
	}
	if (x->req.kind == RF_HTTP_GET_ALL) {
		if (n > x->req.max_bytes - x->got) {
			set_problem(x, false, "body larger than %llu bytes",
			            (unsigned long long)x->req.max_bytes);
			return 0;
		}
		char *all = realloc(x->all, x->got + n + 1);
		if (!all) {
			set_problem(x, false, "out of memory for a %llu byte body",
			            (unsigned long long)(x->got + n));
			return 0;
		}
		x->all = all;
		memcpy(all + x->got, data, n);
		x->got += n;
		all[x->got] = '\0';
		return n;
	}
	return n; /* HEAD has no body */
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
			/* A full op table: try again on the next pump (the timer keeps curl alive).
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
	pump(h);
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

/* ------------------------------------------------------------- lists, hosts */

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

/* scheme://authority of url, the unit of the per-host connection limit. */
static host *host_of(rf_http *h, const char *url)
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
	x->bucket_region[0] = '\0';
	x->problem_retryable = false;
	x->error_body_len = 0;
	free(x->all);
	x->all = NULL;
	free(x->redirect);
	x->redirect = NULL;
}

static int add_header(rf_http_xfer *x, const char *line)
{
	struct curl_slist *l = curl_slist_append(x->headers, line);
	if (!l)
		return -ENOMEM;
	x->headers = l;
	return 0;
}

static int configure_s3(rf_http *h, rf_http_xfer *x)
{
	RF_TRY(add_header(x, "x-amz-content-sha256: UNSIGNED-PAYLOAD"));
	x->s3_gen = h->s3_gen;
	if (!h->s3_userpwd)
		return 0; /* anonymous */
	if (h->s3_token_header)
		RF_TRY(add_header(x, h->s3_token_header));
	char sigv4[REGION_BYTES + 16];
	if (x->region) /* all four fields, or curl derives region and service from the host */
		snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", x->region);
	curl_easy_setopt(x->easy, CURLOPT_AWS_SIGV4, x->region ? sigv4 : h->s3_sigv4); /* copied */
	curl_easy_setopt(x->easy, CURLOPT_USERPWD, h->s3_userpwd);
	return 0;
}

/* SigV4 with the request's own keys and service (STS AssumeRole). curl
 * copies both strings; ours are wiped at once. */
static int configure_sigv4(rf_http_xfer *x)
{
	const rf_http_s3 *k = x->req.sigv4;
	if (!k->access_key || !k->secret_key)
		return -EINVAL;
	char *scope = dup_printf("aws:amz:%s:%s", k->region && *k->region ? k->region : "us-east-1",
	                         x->req.sigv4_service ? x->req.sigv4_service : "s3");
	char *userpwd = dup_printf("%s:%s", k->access_key, k->secret_key);
	char *token = k->session_token && *k->session_token
	                  ? dup_printf("x-amz-security-token: %s", k->session_token)
	                  : NULL;
	int rc =
	    scope && userpwd && (token || !k->session_token || !*k->session_token) ? 0 : -ENOMEM;
	if (rc == 0 && token)
		rc = add_header(x, token);
	if (rc == 0) {
		curl_easy_setopt(x->easy, CURLOPT_AWS_SIGV4, scope);
		curl_easy_setopt(x->easy, CURLOPT_USERPWD, userpwd);
	}
	free(scope);
	wipe_free(userpwd);
	wipe_free(token);
	return rc;
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
		RF_TRY(add_header(x, *l));
	return x->req.sigv4 ? configure_sigv4(x) : 0;
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
	/* Range bodies are bounded by on_write (an error body must still be read). */
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
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	configure_limits(h, x);
	if (x->req.kind == RF_HTTP_RANGE) {
		char range[64];
		snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)x->req.offset,
		         (unsigned long long)(x->req.offset + x->req.len - 1));
		curl_easy_setopt(e, CURLOPT_RANGE, range); /* copied by curl */
	} else if (x->req.kind == RF_HTTP_HEAD) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	}
	if (x->req.sign) {
		/* S3 keys are opaque: "a/../b" names its own object, so the path goes
		 * out (and is signed) as given; curl would remove dot segments. */
		curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
		RF_TRY(configure_s3(h, x));
	}
	RF_TRY(configure_extras(x));
	if (x->headers)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
	return 0;
}

/* ------------------------------------------------------------ outcomes */

static bool curl_retryable(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_PARTIAL_FILE:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_AGAIN:
		return true;
	default:
		return false;
	}
}

/* "<Code>X</Code>" of an S3 error body, letters and digits only. */
static void s3_error_code(const char *body, char *out, size_t cap)
{
	out[0] = '\0';
	const char *c = strstr(body, "<Code>");
	if (!c)
		return;
	c += 6;
	size_t n = 0;
	while (n + 1 < cap && ((c[n] >= 'A' && c[n] <= 'Z') || (c[n] >= 'a' && c[n] <= 'z') ||
	                       (c[n] >= '0' && c[n] <= '9')))
		n++;
	memcpy(out, c, n);
	out[n] = '\0';
}

/* The region S3 says the bucket is in: x-amz-bucket-region, else the
 * <Region> of the error body; "" when neither is a plausible name. */
static void s3_error_region(const rf_http_xfer *x, char *out, size_t cap)
{
	snprintf(out, cap, "%s", x->bucket_region);
	const char *r = out[0] ? NULL : strstr(x->error_body, "<Region>");
	if (r) {
		r += 8;
		size_t n = strcspn(r, "<");
		snprintf(out, cap, "%.*s", (int)RF_MIN(n, cap - 1), r);
	}
	if (!rf_s3_region_ok(out))
		out[0] = '\0';
}

static const char *xfer_region(const rf_http_xfer *x)
{
	return x->region ? x->region : x->h->region;
}

static int judge_status(const rf_http_xfer *x, char *why, size_t cap)
{
	char code[64], region[REGION_BYTES], hint[256] = "";
	s3_error_code(x->error_body, code, sizeof(code));
	s3_error_region(x, region, sizeof(region));
	const rf_http *h = x->h;
	bool denied = x->req.sign && (x->status == 403 || x->status == 401);
	/* anonymous because the credential chain found nothing: say so */
	const char *note = denied && !h->s3_userpwd && h->s3_note ? h->s3_note : NULL;
	if (!code[0] && denied && !note)
		snprintf(
		    hint, sizeof(hint),
		    " (no S3 error code: a HEAD has no body; a wrong key or secret is likely)");
	else if (x->req.sign && region[0] && (x->status == 301 || x->status == 400))
		snprintf(hint, sizeof(hint),
		         " (the bucket is in region %s; this request was for %s: set s3_region or "
		         "AWS_REGION, and an endpoint of that region)",
		         region, x->region_followed ? "it, and still refused" : xfer_region(x));
	snprintf(why, cap, "HTTP %ld%s%s%s%s%s%s", x->status, code[0] ? " " : "", code, hint,
	         note ? " (sent unsigned: " : "", note ? note : "", note ? ")" : "");
	return rf_http_status_retryable(x->status) ? 0 : -1;
}

/* Judges a finished attempt: 1 = accepted, 0 = retryable, -1 = failed for good.
 * why receives the reason. */
static int judge(rf_http_xfer *x, char *why, size_t cap)
{
	const rf_http_request *r = &x->req;
	if (x->problem[0]) {
		snprintf(why, cap, "%.200s", x->problem);
		return x->problem_retryable ? 0 : -1;
	}
	if (x->status >= 400 && x->status <= 599) /* even if the error body was cut */
		return judge_status(x, why, cap);
	if (x->curl_rc != CURLE_OK) {
		snprintf(why, cap, "%.180s (curl %d)",
		         x->curl_msg[0] ? x->curl_msg : curl_easy_strerror(x->curl_rc), x->curl_rc);
		return curl_retryable(x->curl_rc) ? 0 : -1;
	}
	if (x->status < 200 || x->status > 299)
		return judge_status(x, why, cap);
	if (r->kind == RF_HTTP_RANGE && x->got != r->len) {
		snprintf(why, cap, "short body: %llu of %llu bytes", (unsigned long long)x->got,
		         (unsigned long long)r->len);
		return 0;
	}
	if (r->kind == RF_HTTP_HEAD && !x->have_content_length) {
		snprintf(why, cap, "HTTP %ld without a Content-Length", x->status);
		return -1;
	}
	return 1;
}

static void finish(rf_http_xfer *x, int64_t result, const char *why)
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
		x->fail_msg = dup_printf("%s %s%s: %s%s",
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
	x->state = X_DONE;
	list_push(&h->done_head, &h->done_tail, x);
	x->listed_done = true;
}

/* The server's Retry-After in ms (seconds or an HTTP date), -1 when none. */
static int64_t retry_after_ms(const rf_http_xfer *x)
{
	int64_t ra = x->retry_after[0] ? rf_http_retry_after_ms(x->retry_after) : -1;
	if (ra < 0 && x->retry_after[0]) {
		time_t when = curl_getdate(x->retry_after, NULL); /* an HTTP date */
		time_t now = time(NULL);
		if (when > now)
			ra = RF_MIN((int64_t)(when - now) * 1000, RF_HTTP_RETRY_AFTER_MAX_MS);
	}
	return ra;
}

/* The wait before retrying a retryable failure, or -1 when its budget is
 * spent (why then says which). Throttling and other errors have separate
 * budgets: throttle_wait_ms of backoff in total, and `retries` retries. */
static int64_t retry_delay_ms(rf_http_xfer *x, char *why, size_t cap)
{
	rf_http *h = x->h;
	char code[64];
	s3_error_code(x->error_body, code, sizeof(code));
	int64_t ra = retry_after_ms(x);
	size_t n = strlen(why);
	if (rf_http_throttled(x->status, code)) {
		int64_t ms = rf_http_throttle_delay_ms(
		    x->throttles, x->throttle_waited_ms, h->opt.throttle_wait_ms, ra,
		    h->backoff_base_ms, h->backoff_cap_ms, &h->rng);
		if (ms < 0) {
			snprintf(why + n, cap - n,
			         ", still throttled after %.1f s of backoff (throttle_wait %.1f s "
			         "spent)",
			         (double)x->throttle_waited_ms / 1000.0,
			         (double)h->opt.throttle_wait_ms / 1000.0);
			return -1;
		}
		x->throttles++;
		x->throttle_waited_ms += (uint64_t)ms;
		return ms;
	}
	uint32_t retries_max = x->req.retries > 0   ? (uint32_t)x->req.retries
	                       : x->req.retries < 0 ? 0
	                                            : h->opt.retries;
	if (x->error_retries >= retries_max) {
		snprintf(why + n, cap - n, ", retries exhausted");
		return -1;
	}
	int64_t ms = (int64_t)rf_http_backoff_ms(x->error_retries, h->backoff_base_ms,
	                                         h->backoff_cap_ms, &h->rng);
	x->error_retries++;
	return RF_MAX(ms, ra);
}

/* --------------------------------------------------------- redirects */

/* Follows x->redirect: the same transfer, queued first in line, for the URL
 * curl resolved from Location. No credential reaches another host (another
 * scheme, host or port): a signed (S3) request refuses the redirect, naming
 * both hosts; an unsigned one goes on without the URL's user:password (it
 * carries no other secret: custom headers are only ever S3's). Returns 0 when
 * queued, or a negative code with why set. */
static int follow_redirect(rf_http_xfer *x, char *why, size_t cap)
{
	rf_http *h = x->h;
	char from[300], to[300];
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
	if (cross && (x->req.sigv4 || x->req.headers)) {
		snprintf(why, cap,
		         "HTTP %ld redirect from %.80s to %.80s (another host) refused: a "
		         "credential request follows no redirect to another host",
		         x->status, from, to);
		return -EPROTO;
	}
	if (cross && x->req.sign) {
		snprintf(why, cap,
		         "HTTP %ld redirect from %.80s to %.80s (another host) refused: S3 "
		         "credentials never follow a redirect to another host",
		         x->status, from, to);
		return -EPROTO;
	}
	char *next = cross ? rf_url_without_userinfo(x->redirect) : strdup(x->redirect);
	host *hh = next ? host_of(h, next) : NULL;
	if (!hh) {
		free(next);
		snprintf(why, cap, "%s following a redirect to %.80s",
		         next ? "too many distinct hosts" : "out of memory", to);
		return next ? -EAGAIN : -ENOMEM;
	}
	if (h->trace)
		fprintf(stderr, "http: %s: HTTP %ld redirect to %s%s\n", x->name, x->status, to,
		        cross ? " (another host: without userinfo)" : "");
	free(x->url);
	x->url = next;
	x->host = hh;
	x->hops++;
	x->following = true;
	x->state = X_QUEUED;
	list_push_front(&h->queue_head, &h->queue_tail, x);
	x->listed_queue = true;
	return 0;
}

/* ------------------------------------------------------ region mismatch */

static const char *region_learned(const rf_http *h, const char *bucket)
{
	for (uint32_t i = 0; bucket && i < h->nregions; i++)
		if (!strcmp(h->regions[i].bucket, bucket))
			return h->regions[i].region;
	return NULL;
}

static void region_learn(rf_http *h, const char *bucket, const char *region)
{
	if (!bucket || strlen(bucket) >= sizeof(h->regions[0].bucket))
		return;
	uint32_t i = 0;
	while (i < h->nregions && strcmp(h->regions[i].bucket, bucket) != 0)
		i++;
	if (i == h->nregions) {
		if (h->nregions < REGIONS_MAX)
			h->nregions++;
		else
			i = h->regions_next++ % REGIONS_MAX;
	}
	snprintf(h->regions[i].bucket, sizeof(h->regions[i].bucket), "%s", bucket);
	snprintf(h->regions[i].region, sizeof(h->regions[i].region), "%s", region);
}

/* Points x at region: signs for it and, on an AWS endpoint, moves the URL
 * to s3.REGION.amazonaws.com (a custom endpoint keeps its host). */
static int xfer_set_region(rf_http_xfer *x, const char *region)
{
	char *r = strdup(region);
	char *url = rf_url_aws_s3_with_region(x->url, region);
	host *hh = url ? host_of(x->h, url) : x->host;
	if (!r || !hh) {
		free(r);
		free(url);
		return -ENOMEM;
	}
	free(x->region);
	x->region = r;
	if (url) {
		free(x->url);
		x->url = url;
		x->host = hh;
	}
	return 0;
}

/* A signed request to the wrong region (S3 answers 400
 * AuthorizationHeaderMalformed, or 301 PermanentRedirect without a
 * Location, naming the bucket's region in x-amz-bucket-region or the
 * body): once per request, the region is learned for the bucket and the
 * request goes again, first in line, signed for it (not a new attempt).
 * True when queued. */
static bool follow_region(rf_http_xfer *x)
{
	rf_http *h = x->h;
	char code[64], region[REGION_BYTES];
	if (!x->req.sign || x->region_followed || (x->status != 400 && x->status != 301))
		return false;
	s3_error_code(x->error_body, code, sizeof(code));
	if (strcmp(code, x->status == 400 ? "AuthorizationHeaderMalformed" : "PermanentRedirect"))
		return false;
	s3_error_region(x, region, sizeof(region));
	if (!region[0] || !strcmp(region, xfer_region(x)))
		return false;
	char *moved = rf_url_aws_s3_with_region(x->url, region);
	bool useful = moved || h->s3_userpwd; /* anonymous: only another host helps */
	free(moved);
	if (!useful || xfer_set_region(x, region) < 0)
		return false;
	region_learn(h, x->bucket, region);
	if (h->trace)
		fprintf(stderr,
		        "http: %s: HTTP %ld %s: the bucket is in region %s, signing for it\n",
		        x->name, x->status, code, region);
	x->region_followed = true;
	x->following = true;
	x->state = X_QUEUED;
	list_push_front(&h->queue_head, &h->queue_tail, x);
	x->listed_queue = true;
	return true;
}

/* --------------------------------------------------------- state machine */

static void on_backoff_timer(void *arg, int res)
{
	rf_http_xfer *x = arg;
	x->timer_id = NO_OP;
	xfer_step(x, EV_TIMER);
	pump(x->h);
}

static void detach_easy(rf_http_xfer *x)
{
	rf_http *h = x->h;
	if (!x->easy)
		return;
	if (x->state == X_ACTIVE)
		curl_multi_remove_handle(h->multi, x->easy);
	easy_put(h, x->easy);
	x->easy = NULL;
	curl_slist_free_all(x->headers);
	x->headers = NULL;
}

static void step_admit(rf_http_xfer *x)
{
	rf_http *h = x->h;
	list_unlink(&h->queue_head, &h->queue_tail, x);
	x->listed_queue = false;
	int rc = configure(h, x);
	if (rc == 0 && curl_multi_add_handle(h->multi, x->easy) != CURLM_OK)
		rc = -EIO;
	if (rc < 0) {
		finish(x, rc,
		       rc == -ENOMEM ? "out of memory setting up the transfer"
		                     : "curl refused the transfer");
		return;
	}
	x->state = X_ACTIVE;
	x->active_ns = rf_now_ns();
	x->host->active++;
	h->counters.host_active_max =
	    RF_MAX(h->counters.host_active_max, (uint64_t)x->host->active);
	h->counters.requests += !x->req.uncounted;
	if (x->following) { /* a redirect hop, not another attempt */
		x->following = false;
		return;
	}
	h->counters.retries += x->attempts > 0 && !x->req.uncounted;
	x->attempts++;
}

static int fail_code(const rf_http_xfer *x, int verdict)
{
	if (verdict == 0 || x->status >= 500)
		return -EIO;
	if (x->status == 404)
		return -ENOENT;
	if (x->status == 401 || x->status == 403)
		return -EACCES;
	return -EPROTO;
}

static void on_expired_timer(void *arg, int res)
{
	rf_http *h = arg;
	h->s3_expired_timer = NO_OP;
	if (h->s3_expired)
		h->s3_expired(h->s3_expired_arg);
}

/* S3's answer to credentials that expired: 400 (or 403) ExpiredToken. A
 * HEAD has no body to say so: with a session token, its 400/403 counts as
 * possibly expired (one refresh and retry at worst). Once per request, and
 * only for credentials an owner can refresh (static ones would fail again). */
static bool expired_token(rf_http_xfer *x)
{
	char code[64];
	if (!x->req.sign || x->expiry_retried || !x->h->s3_expired ||
	    (x->status != 400 && x->status != 403))
		return false;
	if (x->req.kind == RF_HTTP_HEAD)
		return x->h->s3_token_header != NULL;
	s3_error_code(x->error_body, code, sizeof(code));
	return !strcmp(code, "ExpiredToken");
}

/* Queues x again, first in line; it starts when fresh credentials are set
 * (at once when they already were, since x was signed). */
static void wait_for_credentials(rf_http_xfer *x)
{
	rf_http *h = x->h;
	x->expiry_retried = true;
	if (h->trace)
		fprintf(stderr, "http: %s: ExpiredToken, retry with fresh credentials\n", x->name);
	if (x->s3_gen == h->s3_gen && !h->s3_hold) {
		h->s3_hold = true;
		if (h->s3_expired_timer < 0) {
			int64_t id = rf_loop_timer(h->loop, 0, on_expired_timer, h);
			h->s3_expired_timer = id >= 0 ? id : NO_OP;
		}
	}
	x->state = X_QUEUED;
	list_push_front(&h->queue_head, &h->queue_tail, x);
	x->listed_queue = true;
}

static void step_finished(rf_http_xfer *x)
{
	rf_http *h = x->h;
	char why[400];
	x->host->active--;
	detach_easy(x); /* also leaves ACTIVE for curl */
	if (x->redirect && x->curl_rc == CURLE_OK && !x->problem[0]) {
		int rc = follow_redirect(x, why, sizeof(why));
		if (rc < 0)
			finish(x, rc, why);
		return;
	}
	if (x->curl_rc == CURLE_OK && !x->problem[0] && follow_region(x))
		return;
	int verdict = judge(x, why, sizeof(why));
	if (verdict < 0 && expired_token(x)) {
		wait_for_credentials(x);
		return;
	}
	if (verdict > 0) {
		h->counters.bytes += x->req.uncounted ? 0 : x->got;
		finish(x,
		       x->req.kind == RF_HTTP_HEAD ? (int64_t)x->content_length : (int64_t)x->got,
		       NULL);
		return;
	}
	x->host->trouble++;
	int64_t ms = verdict == 0 ? retry_delay_ms(x, why, sizeof(why)) : -1;
	if (ms >= 0) {
		int64_t id = rf_loop_timer(h->loop, (uint64_t)ms * 1000000ull, on_backoff_timer, x);
		if (id >= 0) {
			x->timer_id = id;
			x->state = X_BACKOFF;
			if (h->trace)
				fprintf(stderr, "http: %s: %s, retry in %lld ms\n", x->name, why,
				        (long long)ms);
			return;
		}
		snprintf(why + strlen(why), sizeof(why) - strlen(why), " (no timer for a retry)");
	}
	finish(x, fail_code(x, verdict), why);
}

static void step_cancel(rf_http_xfer *x)
{
	rf_http *h = x->h;
	if (x->state == X_QUEUED && x->listed_queue)
		list_unlink(&h->queue_head, &h->queue_tail, x);
	if (x->state == X_ACTIVE)
		x->host->active--;
	if (x->state == X_BACKOFF)
		rf_loop_cancel(h->loop, x->timer_id);
	if (x->state == X_DONE && x->listed_done)
		list_unlink(&h->done_head, &h->done_tail, x);
	detach_easy(x);
	x->listed_queue = x->listed_done = false;
	x->timer_id = NO_OP;
	x->state = X_DONE;
}

/* The one place a transfer changes state. */
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
	case EV_TIMER:
		known = from == X_BACKOFF;
		if (known) { /* first in line again: it is the oldest request */
			x->state = X_QUEUED;
			list_push_front(&x->h->queue_head, &x->h->queue_tail, x);
			x->listed_queue = true;
		}
		break;
	case EV_CANCEL:
		step_cancel(x);
		break;
	}
	if (!known)
		fprintf(stderr, "ringfeed: http: %s: event %s ignored in state %s\n", x->name,
		        ev_name[ev], xfer_state_name[from]);
	if (x->h->trace)
		fprintf(stderr, "http: %s: %s -> %s on %s (attempt %u, status %ld)\n", x->name,
		        xfer_state_name[from], xfer_state_name[x->state], ev_name[ev], x->attempts,
		        x->status);
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
		xfer_step(x, EV_FINISHED);
		any = true;
	}
	return any;
}

static void fail_queued(rf_http_xfer *x, int code, const char *msg)
{
	rf_http *h = x->h;
	list_unlink(&h->queue_head, &h->queue_tail, x);
	x->listed_queue = false;
	finish(x, code, msg ? msg : "no S3 credentials");
}

static bool admit(rf_http *h)
{
	bool any = false, room = false;
	for (uint32_t i = 0; i < h->nhosts && !room; i++)
		room = h->hosts[i].active < h->opt.connections;
	if (!room)
		return false; /* every host is at its limit: no need to walk the queue */
	rf_http_xfer *next;
	for (rf_http_xfer *x = h->queue_head; x; x = next) {
		next = x->next;
		if (x->req.sign && h->s3_hold)
			continue; /* waits for credentials */
		if (x->req.sign && h->s3_fail_code) {
			fail_queued(x, h->s3_fail_code, h->s3_fail_msg);
			any = true;
			continue;
		}
		if (x->host->active < h->opt.connections) {
			xfer_step(x, EV_ADMIT);
			any = true;
		}
	}
	return any;
}

static void xfer_free(rf_http_xfer *x)
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

static void deliver(rf_http *h)
{
	rf_http_xfer *x;
	while ((x = h->done_head)) {
		list_unlink(&h->done_head, &h->done_tail, x);
		x->listed_done = false;
		if (x->cb)
			x->cb(x->arg, x->result, x->fail_msg);
		xfer_free(x);
	}
}

static void pump(rf_http *h)
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
		if (admit(h))
			h->pump_again = true;
		apply_sockets(h);
		apply_timer(h);
		deliver(h);
	} while (h->pump_again);
	h->pumping = false;
}

static void on_kick(void *arg, int res)
{
	rf_http *h = arg;
	h->kick_id = NO_OP;
	pump(h);
}

/* Runs pump() soon from the loop (never inside the caller's call). */
static void kick(rf_http *h)
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
	h->opt.ca_file = h->opt.s3_endpoint = h->opt.s3_region = NULL;
	h->opt.s3_addressing = h->opt.gs_endpoint = NULL;
	h->opt.s3_access_key = h->opt.s3_secret_key = h->opt.s3_session_token = NULL;
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

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void rf_http_free(rf_http *h)
{
	if (!h)
		return;
	while (h->all) {
		rf_http_xfer *x = h->all;
		xfer_step(x, EV_CANCEL);
		xfer_free(x);
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
	wipe_free(h->s3_sigv4);
	wipe_free(h->s3_userpwd);
	wipe_free(h->s3_token_header);
	h->magic = 0;
	free(h);
}

int rf_http_set_s3(rf_http *h, const rf_http_s3 *s3, rf_error *err)
{
	wipe_free(h->s3_sigv4);
	wipe_free(h->s3_userpwd);
	wipe_free(h->s3_token_header);
	free(h->s3_note);
	free(h->s3_fail_msg);
	h->s3_sigv4 = h->s3_userpwd = h->s3_token_header = h->s3_note = h->s3_fail_msg = NULL;
	h->s3_fail_code = 0;
	h->s3_gen++;
	if (h->s3_hold) {
		h->s3_hold = false;
		kick(h); /* held requests start with these credentials */
	}
	/* the default signing region: kept when only the keys change */
	if (s3->region && *s3->region)
		snprintf(h->region, sizeof(h->region), "%s", s3->region);
	else if (!h->region[0])
		snprintf(h->region, sizeof(h->region), "us-east-1");
	if (!s3->access_key || !*s3->access_key || !s3->secret_key || !*s3->secret_key) {
		if (s3->anonymous_note && !(h->s3_note = strdup(s3->anonymous_note)))
			return rf_fail(err, -ENOMEM, "out of memory");
		return 0; /* anonymous */
	}
	/* All four fields, or curl derives region and service from the host name. */
	h->s3_sigv4 = dup_printf("aws:amz:%s:s3", h->region);
	h->s3_userpwd = dup_printf("%s:%s", s3->access_key, s3->secret_key);
	if (s3->session_token && *s3->session_token)
		h->s3_token_header = dup_printf("x-amz-security-token: %s", s3->session_token);
	if (!h->s3_sigv4 || !h->s3_userpwd ||
	    (s3->session_token && *s3->session_token && !h->s3_token_header))
		return rf_fail(err, -ENOMEM, "out of memory for S3 credentials");
	return 0;
}

void rf_http_s3_hold(rf_http *h)
{
	h->s3_hold = true;
}

void rf_http_s3_fail(rf_http *h, int code, const char *msg, bool sticky)
{
	h->s3_hold = false;
	rf_http_xfer *next;
	for (rf_http_xfer *x = h->queue_head; x; x = next) {
		next = x->next;
		if (x->req.sign)
			fail_queued(x, code, msg);
	}
	free(h->s3_fail_msg);
	h->s3_fail_msg = NULL;
	h->s3_fail_code = 0;
	if (sticky && (h->s3_fail_msg = strdup(msg ? msg : "no S3 credentials")))
		h->s3_fail_code = code < 0 ? code : -EACCES;
	kick(h);
}

void rf_http_set_s3_expired(rf_http *h, void (*expired)(void *arg), void *arg)
{
	h->s3_expired = expired;
	h->s3_expired_arg = arg;
}

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

uint64_t rf_http_host_trouble(rf_http *h, const char *url)
{
	host *o = host_of(h, url);
	return o ? o->trouble : 0;
}

bool rf_http_xfer_active(const rf_http_xfer *x, uint64_t *since_ns)
{
	*since_ns = x->active_ns;
	return x->state == X_ACTIVE;
}

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

/* A signed request's region: a region learned for its bucket, else the
 * one asked for; and its bucket. */
static int start_region(rf_http_xfer *x, const rf_http_request *req)
{
	if (req->bucket && !(x->bucket = strdup(req->bucket)))
		return -ENOMEM;
	const char *learned = region_learned(x->h, req->bucket);
	if (learned)
		return xfer_set_region(x, learned);
	if (req->region && rf_s3_region_ok(req->region) && !(x->region = strdup(req->region)))
		return -ENOMEM;
	return 0;
}

int rf_http_start(rf_http *h, const rf_http_request *req, rf_fetch_cb cb, void *arg,
                  rf_http_xfer **out, rf_error *err)
{
	char shown[512];
	rf_url_redact(req->name ? req->name : req->url, shown, sizeof(shown));
	if (h->magic != HTTP_MAGIC || h->in_callback)
		return rf_fail(err, -EINVAL, "HTTP client used from inside a curl callback");
	RF_TRY(check_request(req, shown, err));
	if (h->transfers >= RF_HTTP_TRANSFERS_MAX)
		return rf_fail(err, -EAGAIN, "more than %u HTTP transfers queued",
		               RF_HTTP_TRANSFERS_MAX);
	host *hh = host_of(h, req->url);
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
	x->req.url = x->req.name = x->req.region = x->req.bucket = NULL; /* owned copies */
	x->cb = cb;
	x->arg = arg;
	x->host = hh;
	if (req->sign && start_region(x, req) < 0) {
		free(x->url);
		free(x->name);
		free(x->region);
		free(x->bucket);
		free(x);
		return rf_fail(err, -ENOMEM, "out of memory starting a transfer of '%s'", shown);
	}
	x->all_next = h->all;
	if (h->all)
		h->all->all_prev = x;
	h->all = x;
	h->transfers++;
	if (req->kind == RF_HTTP_RANGE && req->len == 0) {
		finish(x, 0, NULL); /* nothing to ask for */
	} else {
		x->state = X_QUEUED;
		list_push(&h->queue_head, &h->queue_tail, x);
		x->listed_queue = true;
	}
	if (out)
		*out = x;
	kick(h);
	return 0;
}

void rf_http_cancel(rf_http *h, rf_http_xfer *x)
{
	if (!x || h->magic != HTTP_MAGIC)
		return;
	xfer_step(x, EV_CANCEL);
	xfer_free(x);
	kick(h); /* curl may want its sockets re-armed after remove_handle */
}
