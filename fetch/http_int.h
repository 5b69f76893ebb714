/* http_int.h - what the files of the HTTP client share (internal to
 * http.c, http_xfer.c and http_check.c; nobody else includes it: a store's
 * signer sees only http.h's seam).
 * Bottom-up, each file calls only the ones below it:
 *
 *   http_parse.c  pure parsers (status line, Content-Range, Retry-After...)
 *   http_loop.c   curl's multi socket API on the rf_loop (http_loop.h): polls,
 *                 curl's timer, the pump; calls up only through its ops
 *   http_xfer.c   the records: the state mover (rf_xfer_move, the one writer
 *                 of a transfer's state) with the queue/done lists it keeps,
 *                 hosts, a transfer's outcome and freeing, counters, the
 *                 signer's view of a transfer
 *   http_check.c  response checks: headers, range bodies, verdicts, backoff
 *   http.c        the transfer state machine: admission, configure, redirects,
 *                 the pump's work, the client, the public start/cancel */
#ifndef RF_HTTP_INT_H
#define RF_HTTP_INT_H

#include "http.h"
#include "http_loop.h"
#include "list.h"
#include "util.h"

#include <curl/curl.h>

#define HTTP_MAGIC       0x52464854u /* "RFHT" */
#define ERROR_BODY_BYTES 512         /* kept from an error response (S3 <Code>) */
#define NO_OP            (-1)        /* an op id meaning "none" (rf_loop_cancel ignores it) */

/* A transfer's life (one names table, rf_xfer_state_name; one mover,
 * rf_xfer_move, which keeps the lists and the host's count with it):
 *   NEW -> QUEUED (waiting for a slot of its host, or for its signer's gate)
 *   QUEUED -> ACTIVE (in curl) -> ANSWERED (the attempt ended: judged now)
 *   ANSWERED -> QUEUED (a redirect or a signer's hop/retry, first in line),
 *               BACKOFF (a retry timer) -> QUEUED (first in line), or DONE
 *   NEW, QUEUED -> DONE (nothing to ask; failed before starting)
 *   QUEUED, ACTIVE, BACKOFF, DONE -> CANCELLED (off every list; freed next) */
typedef enum xfer_state {
	X_NEW = 0,
	X_QUEUED,
	X_ACTIVE,
	X_ANSWERED,
	X_BACKOFF,
	X_DONE,
	X_CANCELLED,
	X_STATES
} xfer_state;

extern const char *const rf_xfer_state_name[X_STATES];

typedef struct host {
	char key[256]; /* scheme://authority */
	uint32_t active;
	uint64_t trouble; /* attempts that failed (retried or not): the hedging switch */
} host;

/* What an attempt must keep of a cut range to use up no retry (resume_update). */
#define RF_HTTP_RESUME_PROGRESS_BYTES (64u << 10)

struct rf_http_xfer {
	rf_http *h;
	rf_list_node link;     /* in h->queue (QUEUED) or h->done (DONE, until delivered) */
	rf_list_node all_link; /* in h->all: every transfer of h */
	bool listed;           /* link is in h->queue or h->done */
	xfer_state state;      /* written by rf_xfer_move only */
	rf_http_request req;
	char *url, *name;
	rf_fetch_cb cb;
	void *arg;
	host *host;
	char *redirect;    /* the current attempt's 3xx Location, resolved by curl */
	uint32_t hops;     /* redirects followed */
	void *auth_data;   /* signed: the signer's own (rf_http_auth_ops.begin) */
	bool following;    /* the next admission follows a redirect: not a new attempt */
	bool unsigned_hop; /* followed a redirect to another origin unsigned: never signed again */
	CURL *easy;
	struct curl_slist *headers;
	int64_t timer_id;
	uint32_t attempts;
	uint64_t active_ns;          /* when the current or last attempt went into curl */
	uint32_t error_retries;      /* retries after errors other than throttling */
	uint32_t throttles;          /* retries after throttling */
	uint64_t throttle_waited_ms; /* backoff spent riding out throttling */
	/* A range's bytes kept from earlier attempts whose bodies were cut
	 * (retryable failures after an accepted start): the next attempt asks
	 * only for the rest, [offset + resumed, offset + len), and must carry
	 * the same version (resume_version: the first accepted response's,
	 * "etag:V" or "last-modified:V"; a range without one is never
	 * resumed, a changed one starts the range over). */
	uint64_t resumed;
	char resume_version[RF_HTTP_VALIDATOR_BYTES_MAX + 16];
	bool resume_stale; /* this attempt's version is another: start the range over */
	bool retry_free;   /* this attempt kept enough to use up no retry (resume_update) */
	/* the current attempt's response */
	CURLcode curl_rc;
	long status;
	uint64_t got, content_length, header_bytes; /* got: this attempt's body bytes */
	bool have_content_length, body_checked;
	char retry_after[48];
	char etag[RF_HTTP_VALIDATOR_BYTES_MAX + 1]; /* kept when usable (rf_http_validator_value) */
	char last_modified[RF_HTTP_VALIDATOR_BYTES_MAX + 1];
	bool etag_bad;     /* an ETag was sent but is not usable: the version is unknown */
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

struct rf_http {
	uint32_t magic;
	rf_loop *loop;
	rf_http_loop curl; /* the multi handle on the loop, and the pump */
	rf_fetch_options opt;
	char *ca_file;
	host hosts[RF_HTTP_HOSTS_MAX];
	uint32_t nhosts;
	rf_list queue, done, all; /* of rf_http_xfer (link, link, all_link) */
	bool trace;               /* RF_HTTP_TRACE or RF_DEBUG set: state changes on stderr */
	unsigned transfers;
	CURL **pool;
	uint32_t npool, pool_max;
	uint32_t backoff_base_ms, backoff_cap_ms;
	uint64_t rng;
	rf_http_counters counters;
};

#define XFER_OF(node) rf_list_entry_or_null(node, rf_http_xfer, link)

/* http_xfer.c: the records (and the helpers every file shares) */
/* The one place a transfer changes state: checks the move is one of the
 * machine's, keeps the lists (QUEUED: last in line, or first), the host's
 * count (ACTIVE) and the backoff timer (BACKOFF), and traces "from -> to
 * (why)". A move the machine does not have is refused and said on stderr. */
void rf_xfer_move(rf_http_xfer *x, xfer_state to, bool first, const char *why);
void rf_xfer_finish(rf_http_xfer *x, int64_t result, const char *why); /* -> DONE */
/* The first finished transfer, off the done list (still DONE), or NULL. */
rf_http_xfer *rf_xfer_take_done(rf_http *h);
void rf_xfer_free(rf_http_xfer *x);
host *rf_http_host_of(rf_http *h, const char *url);
int rf_xfer_add_header(rf_http_xfer *x, const char *line);

/* http_check.c: the response */
size_t rf_xfer_on_header(char *data, size_t size, size_t n, void *userp);
size_t rf_xfer_on_write(char *data, size_t size, size_t n, void *userp);
/* 1 = accepted, 0 = retryable, -1 = failed for good; why receives the reason. */
int rf_xfer_judge(rf_http_xfer *x, char *why, size_t cap);
int64_t rf_xfer_retry_delay_ms(rf_http_xfer *x, char *why, size_t cap);
int rf_xfer_fail_code(const rf_http_xfer *x, int verdict);

#endif
