/* bearer.c - the bearer-token signer (see bearer.h): the token's life
 * (fetch from the source, set, refresh before expiry on the AWS chain's
 * schedule, refresh at once after a 401) and the hooks of the HTTP client's
 * signer seam (gate, sign, refused, explain). */
#include "bearer.h"
#include "creds.h"
#include "oauth.h"
#include "url.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NO_TIMER           (-1)
#define RETRY_DELAY_MS_MAX 60000

struct rf_bearer {
	rf_loop *loop;
	rf_http *h;
	rf_http_auth auth;
	char what[16];
	rf_bearer_source src; /* src.request NULL: unsigned */
	char tried[600];      /* the chain as tried: never a secret */
	char *header;         /* "Authorization: Bearer TOKEN": a secret */
	const char *always;   /* a static line every request carries (or NULL) */
	int64_t obtained_ms, expires_ms;
	uint64_t gen;    /* bumped by every token set */
	uint64_t tokens; /* tokens obtained */
	bool hold;       /* requests wait: no token yet, or one refused (a refresh runs) */
	bool initial;    /* no token has come yet */
	int fail_code;   /* sticky failure of every request (0: none) */
	char *fail_msg;
	/* the token fetch in flight */
	bool fetching;
	rf_http_xfer *xfer;
	rf_bearer_request req;
	char *body;
	char shown[300];
	int64_t refresh_timer, now_timer;
};

/* One signed request's own. */
typedef struct bearer_req {
	uint64_t gen; /* the token its current attempt carried (0: none) */
	bool retried; /* met a 401 once already */
} bearer_req;

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void request_wipe(rf_bearer_request *r)
{
	free(r->url);
	rf_secret_free(r->post);
	*r = (rf_bearer_request){0};
}

static void fetch_stop(rf_bearer *b)
{
	if (b->xfer)
		rf_http_cancel(b->h, b->xfer);
	b->xfer = NULL;
	b->fetching = false;
	request_wipe(&b->req);
	rf_secret_free(b->body);
	b->body = NULL;
}

/* ------------------------------------------------------- the token's life */

static void on_token(void *arg, int64_t res, const char *msg);
static void on_refresh_timer(void *arg, int res);

static void schedule(rf_bearer *b, int64_t *timer, int64_t delay_ms)
{
	rf_loop_cancel(b->loop, *timer);
	int64_t id = rf_loop_timer(b->loop, (uint64_t)delay_ms * 1000000ull, on_refresh_timer, b);
	*timer = id >= 0 ? id : NO_TIMER;
}

/* The token request's own signer: it signs nothing (the request carries
 * its secret in the body); its refusal names OAuth's error word ("HTTP 400
 * (the token endpoint: refused: invalid_grant)"), never the description. */
static int token_sign(void *state, void *data, rf_http_xfer *x)
{
	(void)state;
	(void)data;
	(void)x;
	return 0;
}

static void token_explain(void *state, void *data, const rf_http_xfer *x, char *out, size_t cap)
{
	(void)state;
	(void)data;
	const char *body = rf_http_xfer_error_body(x);
	char *token = NULL;
	int64_t expires_ms = 0;
	rf_error e = {0};
	out[0] = '\0';
	if (rf_oauth_token_parse(body, strlen(body), "the token endpoint", 0, &token, &expires_ms,
	                         &e) == -EACCES)
		snprintf(out, cap, " (%s)", e.msg);
	rf_secret_free(token);
}

static const rf_http_auth_ops token_ops = {
    .name = "token request",
    .sign = token_sign,
    .explain = token_explain,
};
static const rf_http_auth token_auth = {&token_ops, NULL};

static int fetch_start(rf_bearer *b, rf_error *err)
{
	fetch_stop(b);
	RF_TRY(b->src.request(b->src.ctx, wall_ms() / 1000, &b->req, err));
	const char *u = b->req.url;
	rf_url_redact(u, b->shown, sizeof(b->shown));
	/* a request that sends a secret goes over https, or to a loopback stand-in */
	if (b->req.post && !rf_oauth_endpoint_ok(u, strlen(u), true)) {
		request_wipe(&b->req);
		return rf_fail(err, -EINVAL,
		               "the token endpoint %s is not https:// (or http:// to a loopback "
		               "address): no secret is sent there",
		               b->shown);
	}
	rf_http_request hr = {
	    .kind = RF_HTTP_GET_ALL,
	    .url = u,
	    .name = b->shown,
	    .auth = &token_auth,
	    .max_bytes = RF_OAUTH_BODY_MAX,
	    .body = &b->body,
	    .method = b->req.post ? "POST" : NULL,
	    .post = b->req.post,
	    .post_len = b->req.post ? strlen(b->req.post) : 0,
	    .headers = b->req.headers[0] ? b->req.headers : NULL,
	    .connect_timeout_ms = b->req.connect_timeout_ms,
	    .retries = b->req.retries,
	    .uncounted = true,
	    .credential = true,
	};
	int rc = rf_http_start(b->h, &hr, on_token, b, &b->xfer, err);
	if (rc < 0) {
		request_wipe(&b->req);
		return rc;
	}
	b->fetching = true;
	return 0;
}

static void release(rf_bearer *b)
{
	if (b->hold) {
		b->hold = false;
		rf_http_kick(b->h); /* held requests start with the new token */
	}
}

static int token_set(rf_bearer *b, char *token, int64_t expires_ms, rf_error *err)
{
	int64_t now = wall_ms();
	/* a token (nearly) expired on arrival would bring the refresh back at once */
	if (expires_ms <= now + 1000)
		return rf_fail(err, -EPROTO, "the token received expires within a second");
	char *h = rf_http_dup_printf("Authorization: Bearer %s", token);
	if (!h)
		return rf_fail(err, -ENOMEM, "out of memory");
	rf_secret_free(b->header);
	b->header = h;
	b->gen++;
	b->tokens++;
	b->obtained_ms = now;
	b->expires_ms = expires_ms;
	b->initial = false;
	free(b->fail_msg);
	b->fail_msg = NULL;
	b->fail_code = 0;
	release(b);
	schedule(b, &b->refresh_timer, rf_creds_refresh_delay_ms(now, now, expires_ms));
	if (rf_http_tracing(b->h))
		fprintf(stderr, "http: %s token %llu set (%lld ms of life)\n", b->what,
		        (unsigned long long)b->tokens, (long long)(expires_ms - now));
	return 0;
}

static void set_failed(rf_bearer *b, int code, const char *msg)
{
	free(b->fail_msg);
	b->fail_msg = strdup(msg);
	b->fail_code = b->fail_msg ? (code < 0 ? code : -EACCES) : 0;
}

static void fetch_failed(rf_bearer *b, int rc, const char *why)
{
	char msg[1024]; /* rf_fail and the client cut it to RF_ERROR_MSG_BYTES */
	snprintf(msg, sizeof(msg), "%s credentials from %.160s: %.200s (tried: %.300s)", b->what,
	         b->src.name, why, b->tried);
	if (b->initial && b->src.anonymous_on_failure) {
		/* the last source of the chain is not here: unsigned, and a refusal says why */
		char tried[sizeof(b->tried)];
		snprintf(tried, sizeof(tried), "%.300s (%.280s)", b->tried, why);
		memcpy(b->tried, tried, sizeof(tried));
		b->src.request = NULL;
		release(b);
		return;
	}
	if (b->initial) {
		b->hold = false;
		rf_http_fail_queued(b->h, &b->auth, rc, msg);
		set_failed(b, rc, msg);
		return;
	}
	/* A refresh failed: requests held for it (their 401 said the old token
	 * is no good) fail; the others go on with the old token while it lasts,
	 * and another refresh is tried before it expires. */
	if (b->hold) {
		b->hold = false;
		rf_http_fail_queued(b->h, &b->auth, rc, msg);
	}
	int64_t left = b->expires_ms - wall_ms();
	if (left > 1000)
		schedule(b, &b->refresh_timer, RF_MIN(RF_MAX(left / 4, 500), RETRY_DELAY_MS_MAX));
	fprintf(stderr, "ringfeed: %s\n", msg);
}

static void on_token(void *arg, int64_t res, const char *msg)
{
	rf_bearer *b = arg;
	rf_error err = {0};
	b->xfer = NULL;
	b->fetching = false;
	int rc = res < 0 ? (int)res : 0;
	if (rc == 0) {
		char *token = NULL;
		int64_t expires_ms = 0;
		rc = rf_oauth_token_parse(b->body, (size_t)res, b->shown, wall_ms(), &token,
		                          &expires_ms, &err);
		if (rc == 0)
			rc = token_set(b, token, expires_ms, &err);
		rf_secret_free(token);
		msg = err.msg;
	}
	fetch_stop(b);
	if (rc < 0)
		fetch_failed(b, rc, msg ? msg : "failed");
}

/* Both timers: the scheduled refresh, and the one at once after a 401. */
static void on_refresh_timer(void *arg, int res)
{
	rf_bearer *b = arg;
	(void)res;
	b->refresh_timer = b->now_timer = NO_TIMER;
	if (b->fetching || !b->src.request)
		return;
	rf_error err = {0};
	int rc = fetch_start(b, &err);
	if (rc < 0)
		fetch_failed(b, rc, err.msg);
}

/* ------------------------------------------------------- the signer seam */

static int bearer_begin(void *state, const rf_http_request *req, rf_http_xfer *x, void **data)
{
	(void)state;
	(void)req;
	(void)x;
	bearer_req *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*data = r;
	return 0;
}

static void bearer_end(void *state, void *data)
{
	(void)state;
	free(data);
}

static rf_http_auth_gate bearer_gate(void *state, void *data, int *code, const char **msg)
{
	rf_bearer *b = state;
	(void)data;
	if (b->hold)
		return RF_AUTH_WAIT;
	if (b->fail_code) {
		*code = b->fail_code;
		*msg = b->fail_msg;
		return RF_AUTH_FAIL;
	}
	return RF_AUTH_GO;
}

static int bearer_sign(void *state, void *data, rf_http_xfer *x)
{
	rf_bearer *b = state;
	bearer_req *r = data;
	rf_http_xfer_path_as_is(x); /* object names are opaque */
	if (b->always)
		RF_TRY(rf_http_xfer_add_header(x, b->always));
	r->gen = b->header ? b->gen : 0;
	return b->header ? rf_http_xfer_add_header(x, b->header) : 0;
}

/* 401 with the current token: it expired early or was revoked; hold, fetch
 * a new one at once (from the loop, not inside the client's hook) and send
 * the request again. Once per request. */
static rf_http_auth_again bearer_refused(void *state, void *data, rf_http_xfer *x)
{
	rf_bearer *b = state;
	bearer_req *r = data;
	if (rf_http_xfer_status(x) != 401 || r->retried || !r->gen || !b->src.request)
		return RF_AUTH_NO;
	r->retried = true;
	if (rf_http_tracing(b->h))
		fprintf(stderr, "http: %s: HTTP 401, retry with a fresh %s token\n",
		        rf_http_xfer_name(x), b->what);
	if (r->gen == b->gen && !b->hold) {
		b->hold = true;
		if (!b->fetching)
			schedule(b, &b->now_timer, 0);
	}
	return RF_AUTH_RETRY;
}

static void bearer_explain(void *state, void *data, const rf_http_xfer *x, char *out, size_t cap)
{
	rf_bearer *b = state;
	(void)data;
	long status = rf_http_xfer_status(x);
	out[0] = '\0';
	if (status != 401 && status != 403)
		return;
	if (b->header)
		snprintf(out, cap, " (%s credentials: %.200s; tried: %.300s)", b->what, b->src.name,
		         b->tried);
	else
		snprintf(out, cap, " (sent unsigned: no %s credentials found: tried %.400s)",
		         b->what, b->tried);
}

static const rf_http_auth_ops bearer_ops = {
    .name = "bearer-token",
    .begin = bearer_begin,
    .end = bearer_end,
    .gate = bearer_gate,
    .sign = bearer_sign,
    .refused = bearer_refused,
    .explain = bearer_explain,
};

/* -------------------------------------------------------------- its life */

int rf_bearer_new(rf_loop *loop, rf_http *h, const char *what, rf_bearer **out, rf_error *err)
{
	rf_bearer *b = calloc(1, sizeof(*b));
	if (!b)
		return rf_fail(err, -ENOMEM, "out of memory for a token signer");
	b->loop = loop;
	b->h = h;
	b->auth = (rf_http_auth){&bearer_ops, b};
	snprintf(b->what, sizeof(b->what), "%s", what);
	b->refresh_timer = b->now_timer = NO_TIMER;
	*out = b;
	return 0;
}

void rf_bearer_free(rf_bearer *b)
{
	if (!b)
		return;
	fetch_stop(b);
	rf_loop_cancel(b->loop, b->refresh_timer);
	rf_loop_cancel(b->loop, b->now_timer);
	rf_secret_free(b->header);
	free(b->fail_msg);
	free(b);
}

const rf_http_auth *rf_bearer_auth(rf_bearer *b)
{
	return &b->auth;
}

void rf_bearer_set_header(rf_bearer *b, const char *line)
{
	b->always = line;
}

uint64_t rf_bearer_tokens(const rf_bearer *b)
{
	return b->tokens;
}

int rf_bearer_start(rf_bearer *b, const rf_bearer_source *src, const char *tried, rf_error *err)
{
	snprintf(b->tried, sizeof(b->tried), "%s", tried ? tried : "");
	if (!src || !src->request)
		return 0; /* unsigned; a refusal names what was tried */
	b->src = *src;
	b->initial = true;
	b->hold = true;
	int rc = fetch_start(b, err);
	if (rc < 0) {
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s credentials from %.160s: %.200s (tried: %.300s)",
		         b->what, b->src.name, err->msg, b->tried);
		b->hold = false;
		b->src.request = NULL;
		set_failed(b, rc, msg); /* every later request fails the same way */
		return rf_fail(err, rc, "%s", msg);
	}
	return 0;
}
