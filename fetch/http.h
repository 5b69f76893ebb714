/* http.h - HTTP(S) transfers on the loop: libcurl's multi *socket* API
 * driven by one-shot rf_loop polls and rf_loop timers (no second event loop,
 * no thread). Each transfer is an explicit state machine (queued -> active ->
 * backoff -> ... -> done) with bounded retries, per-host connection limits
 * and strict acceptance of range responses. Used by the http(s):// and s3://
 * sources. Every call and callback happens on the loop thread. Internal.
 * The client knows requests, not stores: a request that is signed names its
 * signer (rf_http_auth, below), which a store implements in its own files
 * (S3: s3_sign.c). The code, bottom-up (http_int.h): http_parse.c (pure
 * parsers), http_loop.c (curl on the loop), http_xfer.c (records, the state
 * mover), http_check.c (responses), http.c (state machine, the client). */
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
typedef struct rf_http_auth rf_http_auth;

typedef enum rf_http_kind {
	RF_HTTP_RANGE = 0, /* GET bytes [offset, offset+len) into buf */
	RF_HTTP_HEAD,      /* object size from Content-Length */
	RF_HTTP_GET_ALL,   /* whole body (up to max_bytes) into a malloc'd buffer */
} rf_http_kind;

typedef struct rf_http_request {
	rf_http_kind kind;
	const char *url;          /* full URL; path and query already encoded */
	const char *name;         /* shown in messages; never holds credentials */
	const rf_http_auth *auth; /* its signer (NULL: unsigned); kept by the caller */
	const char *scope;        /* signed: the signer's scope (S3: the SigV4 region) */
	const char *bucket;       /* signed: the bucket (S3: a region learned for it is reused) */
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
	 * credential, signed (auth) or carries a body or extra headers
	 * follows no redirect to another origin (scheme, host, port). */
	const char *method;          /* NULL: by kind; else e.g. "PUT", "POST" */
	const char *post;            /* request body (kept by the caller until the callback) */
	size_t post_len;             /* of post */
	const char *const *headers;  /* NULL-terminated "Name: value" lines (may hold secrets) */
	uint32_t connect_timeout_ms; /* 0: the client's */
	uint32_t timeout_ms;         /* 0: the client's */
	int retries;                 /* 0: the client's; < 0: none; > 0: this many */
	bool uncounted;              /* not a data request: left out of the counters */
	bool credential;             /* a credential request (STS, container, IMDS): its answer, and
	                              * what it sends, are secrets: same-origin redirects only */
} rf_http_request;

typedef struct rf_http_counters {
	uint64_t requests;        /* attempts started */
	uint64_t retries;         /* attempts started after a failed one */
	uint64_t errors;          /* requests that failed for good */
	uint64_t bytes;           /* body bytes accepted */
	uint64_t host_active_max; /* most transfers one host ever had in curl at once */
	uint64_t connects;        /* new connections opened (the rest reused one) */
	uint64_t resumes;         /* attempts that asked only for the rest of a cut range */
	uint64_t resumed_bytes;   /* the bytes those kept instead of fetching them again */
} rf_http_counters;

int rf_http_new(rf_loop *loop, const rf_fetch_options *opt, rf_http **out, rf_error *err);
/* Cancels every transfer (no callbacks) and frees. Not from inside a callback. */
void rf_http_free(rf_http *h);
/* Backoff bounds (defaults 50 ms base, 5 s cap) and the jitter seed; both
 * policies use them: full jitter for errors (at most `retries`), equal
 * jitter for throttling (at most `throttle_wait_ms` of waiting in total). */
void rf_http_set_backoff(rf_http *h, uint32_t base_ms, uint32_t cap_ms, uint64_t seed);
void rf_http_counters_get(const rf_http *h, rf_http_counters *out);
/* The per-host connection limit from now on (opt.connections at
 * rf_http_new): raised, queued transfers are admitted; lowered, transfers
 * past it finish and no new one starts until a host is below it. */
void rf_http_connections_set(rf_http *h, uint32_t connections);

/* Starts a request. cb(arg, res, msg): RANGE res = len, HEAD res = object
 * size, GET_ALL res = body length; or res < 0 with a message naming the URL,
 * range, last status and attempts. The callback runs later, never inside
 * this call. *out (may be NULL) allows rf_http_cancel until the callback. */
int rf_http_start(rf_http *h, const rf_http_request *req, rf_fetch_cb cb, void *arg,
                  rf_http_xfer **out, rf_error *err);
/* Cancels a transfer whose callback has not run yet: it never runs. */
void rf_http_cancel(rf_http *h, rf_http_xfer *x);
/* Whether x is in curl now (not queued for a slot, not backing off), and
 * when its current or last attempt went in (rf_now_ns; 0 = never): the
 * hedging clock, which must not count time spent waiting for a slot. Valid
 * until x's callback returns. */
bool rf_http_xfer_active(const rf_http_xfer *x, uint64_t *since_ns);
/* Failed attempts (retried or not) of url's host so far: a store that
 * errs or throttles is not hedged. */
uint64_t rf_http_host_trouble(rf_http *h, const char *url);

/* ------------------------------------------------------- the signer seam
 * A store that signs its requests (credentials, signing, following where
 * the service says the object lives, refreshing what expired) implements
 * rf_http_auth_ops in its own files; the client calls them at fixed points
 * of a transfer's life and acts on the answers, so a new signing store
 * touches no file of the client. Every hook runs on the loop thread, never
 * inside curl. data is the request's own (begin/end; may stay NULL). */
typedef enum rf_http_auth_gate {
	RF_AUTH_GO = 0, /* sign and start it now */
	RF_AUTH_WAIT,   /* credentials not known yet: stays queued (rf_http_kick when they are) */
	RF_AUTH_FAIL,   /* fails with *code and *msg (naming the source, never a secret) */
} rf_http_auth_gate;

typedef enum rf_http_auth_again {
	RF_AUTH_NO = 0, /* judge the answer as it is */
	RF_AUTH_HOP,    /* queued again first in line, as a hop (not a new attempt) */
	RF_AUTH_RETRY,  /* queued again first in line, as a new attempt */
} rf_http_auth_again;

typedef struct rf_http_auth_ops {
	const char *name; /* "s3", "sts" */
	/* A redirect to another origin (scheme, host, port) is followed, sent
	 * unsigned from then on (sign is not called for any later attempt of
	 * it), instead of refused: for a service that redirects its reads to a
	 * CDN whose URL carries its own grant (the Hugging Face Hub). Never for a
	 * request with a body, extra headers or marked credential. */
	bool unsigned_across;
	/* At rf_http_start (x not queued yet): the request's own data. */
	int (*begin)(void *state, const rf_http_request *req, rf_http_xfer *x, void **data);
	void (*end)(void *state, void *data); /* when x is freed */
	/* Before each admission; NULL = always RF_AUTH_GO. */
	rf_http_auth_gate (*gate)(void *state, void *data, int *code, const char **msg);
	/* Signs the attempt about to start (rf_http_xfer_add_header, _sigv4). */
	int (*sign)(void *state, void *data, rf_http_xfer *x);
	/* Each response header line (a status line starts a new response). */
	void (*header)(void *state, void *data, const char *line, size_t len);
	/* A complete answer, before it is judged: HOP to send it again (e.g.
	 * signed for the region the service named); NULL = RF_AUTH_NO. */
	rf_http_auth_again (*answered)(void *state, void *data, rf_http_xfer *x);
	/* An answer judged a failure for good: RETRY once (e.g. with fresh
	 * credentials); NULL = RF_AUTH_NO. */
	rf_http_auth_again (*refused)(void *state, void *data, rf_http_xfer *x);
	/* A 3xx-5xx status's words after "HTTP nnn CODE" (hints, which sources
	 * were tried; never a secret); NULL = none. */
	void (*explain)(void *state, void *data, const rf_http_xfer *x, char *out, size_t cap);
} rf_http_auth_ops;

struct rf_http_auth {
	const rf_http_auth_ops *ops;
	void *state;
};

/* What a signer may see and do of a transfer (only from its hooks). */
const char *rf_http_xfer_url(const rf_http_xfer *x);
const char *rf_http_xfer_name(const rf_http_xfer *x); /* redacted, for messages */
rf_http_kind rf_http_xfer_kind(const rf_http_xfer *x);
const char *rf_http_xfer_method(const rf_http_xfer *x); /* "GET", "HEAD", the request's */
/* A range request's bytes [first, last] (what its Range header says). */
bool rf_http_xfer_range(const rf_http_xfer *x, uint64_t *first, uint64_t *last);
long rf_http_xfer_status(const rf_http_xfer *x);
const char *rf_http_xfer_error_body(const rf_http_xfer *x); /* the first 512 bytes */
int rf_http_xfer_add_header(rf_http_xfer *x, const char *line);
/* curl's SigV4 ("aws:amz:REGION:SERVICE", "KEY:SECRET"; both copied by curl). */
void rf_http_xfer_sigv4(rf_http_xfer *x, const char *scope, const char *userpwd);
/* The path goes out as given (object keys are opaque: no dot segments removed). */
void rf_http_xfer_path_as_is(rf_http_xfer *x);
/* Points x at another URL of the same request (the connection limit of its host). */
int rf_http_xfer_retarget(rf_http_xfer *x, const char *url);
/* Fails every queued request signed by auth with code and msg. */
void rf_http_fail_queued(rf_http *h, const rf_http_auth *auth, int code, const char *msg);
/* Runs the pump soon: requests a gate held may start. */
void rf_http_kick(rf_http *h);
/* RF_HTTP_TRACE or RF_DEBUG is set: say state changes on stderr (no secret). */
bool rf_http_tracing(const rf_http *h);

#endif
