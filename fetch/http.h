/* http.h - HTTP(S) transfers on the loop: libcurl's multi *socket* API
 * driven by one-shot rf_loop polls and rf_loop timers (no second event loop,
 * no thread). Each transfer is an explicit state machine (queued -> active ->
 * backoff -> ... -> done) with bounded retries, per-host connection limits
 * and strict acceptance of range responses. Used by the http(s):// and s3://
 * sources. Every call and callback happens on the loop thread. Internal.
 * The code, bottom-up (http_int.h): http_parse.c (pure parsers),
 * http_loop.c (curl on the loop), http_xfer.c (records), s3_sign.c (SigV4),
 * http_check.c (responses), http.c (state machine, the client). */
#ifndef RF_HTTP_H
#define RF_HTTP_H

#include "http_parse.h"
#include "loop.h"
#include "ringfeed.h"
#include "source.h"
#include <stdbool.h>
#include <stdint.h>

#define RF_HTTP_HOSTS_MAX        64    /* distinct hosts one rf_http talks to */
#define RF_HTTP_TRANSFERS_MAX    65536 /* transfers queued or in flight */
#define RF_HTTP_HEADER_BYTES_MAX 65536 /* all response headers of one response */
#define RF_HTTP_REDIRECTS_MAX    3

typedef struct rf_http rf_http;
typedef struct rf_http_xfer rf_http_xfer;

typedef enum rf_http_kind {
	RF_HTTP_RANGE = 0, /* GET bytes [offset, offset+len) into buf */
	RF_HTTP_HEAD,      /* object size from Content-Length */
	RF_HTTP_GET_ALL,   /* whole body (up to max_bytes) into a malloc'd buffer */
} rf_http_kind;

typedef struct rf_http_request {
	rf_http_kind kind;
	const char *url;    /* full URL; path and query already encoded */
	const char *name;   /* shown in messages; never holds credentials */
	bool sign;          /* S3 SigV4 with the credentials of rf_http_set_s3 */
	const char *region; /* signed: the SigV4 region (NULL = rf_http_set_s3's) */
	const char *bucket; /* signed: the bucket, so a region learned for it is reused */
	uint64_t offset, len;
	void *buf;            /* RANGE: len bytes */
	uint64_t object_size; /* RANGE: known object size (Content-Range total), or UINT64_MAX */
	uint64_t max_bytes;   /* GET_ALL: largest body accepted */
	char **body;          /* GET_ALL: receives the body (NUL-terminated; caller frees) */
	/* optional: when the request succeeds, the accepted response's version
	 * (rf_http_validator_make: "etag:V", "last-modified:V" or ""), written
	 * before the callback; kept by the caller until then */
	char *validator;
	size_t validator_cap;
	/* Credential fetches (creds.c) also use these. A request that is
	 * credential, signed (sign, sigv4) or carries a body or extra headers
	 * follows no redirect to another origin (scheme, host, port). */
	const char *method;             /* NULL: by kind; else e.g. "PUT", "POST" */
	const char *post;               /* request body (kept by the caller until the callback) */
	size_t post_len;                /* of post */
	const char *const *headers;     /* NULL-terminated "Name: value" lines (may hold secrets) */
	const struct rf_http_s3 *sigv4; /* SigV4 with these keys and sigv4_service, not S3's */
	const char *sigv4_service;
	uint32_t connect_timeout_ms; /* 0: the client's */
	uint32_t timeout_ms;         /* 0: the client's */
	int retries;                 /* 0: the client's; < 0: none; > 0: this many */
	bool uncounted;              /* not a data request: left out of the counters */
	bool credential;             /* a credential request (STS, container, IMDS): its answer, and
	                              * what it sends, are secrets: same-origin redirects only */
} rf_http_request;

/* S3 signing settings (copied). All key fields NULL = anonymous; then
 * anonymous_note (may be NULL), e.g. which credential sources were tried,
 * is added to the message of a signed request's 401/403. */
typedef struct rf_http_s3 {
	const char *region, *access_key, *secret_key, *session_token;
	const char *anonymous_note;
} rf_http_s3;

typedef struct rf_http_counters {
	uint64_t requests;        /* attempts started */
	uint64_t retries;         /* attempts started after a failed one */
	uint64_t errors;          /* requests that failed for good */
	uint64_t bytes;           /* body bytes accepted */
	uint64_t host_active_max; /* most transfers one host ever had in curl at once */
	uint64_t connects;        /* new connections opened (the rest reused one) */
} rf_http_counters;

int rf_http_new(rf_loop *loop, const rf_fetch_options *opt, rf_http **out, rf_error *err);
/* Cancels every transfer (no callbacks) and frees. Not from inside a callback. */
void rf_http_free(rf_http *h);
/* Sets the S3 credentials signed requests use from their next attempt on
 * (requests in flight keep theirs), and releases signed requests held by
 * rf_http_s3_hold. */
int rf_http_set_s3(rf_http *h, const rf_http_s3 *s3, rf_error *err);
/* Signed requests wait (queued, not started) until rf_http_set_s3 or
 * rf_http_s3_fail: while the credential chain has not answered yet. */
void rf_http_s3_hold(rf_http *h);
/* Fails every signed request held for credentials with code and msg (which
 * names the credential source, never a secret) and ends the hold; sticky:
 * later signed requests fail the same way until rf_http_set_s3. */
void rf_http_s3_fail(rf_http *h, int code, const char *msg, bool sticky);
/* With an owner set, a signed request that meets S3's ExpiredToken (HTTP
 * 400/403; for a HEAD, any 400/403 while a session token is in use) is
 * retried once: if its credentials are still the current ones, signed
 * requests are held and expired(arg) runs (from the loop) so the owner
 * refreshes them. Without one (static keys) nothing is retried. */
void rf_http_set_s3_expired(rf_http *h, void (*expired)(void *arg), void *arg);
/* Backoff bounds (defaults 50 ms base, 5 s cap) and the jitter seed; both
 * policies use them: full jitter for errors (at most `retries`), equal
 * jitter for throttling (at most `throttle_wait_ms` of waiting in total). */
void rf_http_set_backoff(rf_http *h, uint32_t base_ms, uint32_t cap_ms, uint64_t seed);
void rf_http_counters_get(const rf_http *h, rf_http_counters *out);

/* Starts a request. cb(arg, res, msg): RANGE res = len, HEAD res = object
 * size, GET_ALL res = body length; or res < 0 with a message naming the URL,
 * range, last status and attempts. The callback runs later, never inside
 * this call. *out (may be NULL) allows rf_http_cancel until the callback. */
int rf_http_start(rf_http *h, const rf_http_request *req, rf_fetch_cb cb, void *arg,
                  rf_http_xfer **out, rf_error *err);
/* Cancels a transfer whose callback has not run yet: it never runs. */
void rf_http_cancel(rf_http *h, rf_http_xfer *x);
unsigned rf_http_in_flight(const rf_http *h);
/* Whether x is in curl now (not queued for a slot, not backing off), and
 * when its current or last attempt went in (rf_now_ns; 0 = never): the
 * hedging clock, which must not count time spent waiting for a slot. Valid
 * until x's callback returns. */
bool rf_http_xfer_active(const rf_http_xfer *x, uint64_t *since_ns);
/* Failed attempts (retried or not) of url's host so far: a store that
 * errs or throttles is not hedged. */
uint64_t rf_http_host_trouble(rf_http *h, const char *url);

#endif
