/* http_int.h - what the files of the HTTP client share (internal to
 * http.c, http_xfer.c, http_check.c and s3_sign.c; nobody else includes it).
 * Bottom-up, each file calls only the ones below it:
 *
 *   http_parse.c  pure parsers (status line, Content-Range, Retry-After...)
 *   http_loop.c   curl's multi socket API on the rf_loop (http_loop.h): polls,
 *                 curl's timer, the pump; calls up only through its ops
 *   http_xfer.c   the records: queue/done lists, hosts, a transfer's outcome
 *                 and freeing, counters; header lines, wiping secrets
 *   s3_sign.c     the S3 store's signing: SigV4 keys, the credential hold,
 *                 region following, ExpiredToken refresh
 *   http_check.c  response checks: headers, range bodies, verdicts, backoff
 *   http.c        the transfer state machine: admission, configure, redirects,
 *                 the pump's work, the client, the public start/cancel */
#ifndef RF_HTTP_INT_H
#define RF_HTTP_INT_H

#include "http.h"
#include "http_loop.h"
#include "util.h"

#include <curl/curl.h>

#define HTTP_MAGIC       0x52464854u /* "RFHT" */
#define ERROR_BODY_BYTES 512         /* kept from an error response (S3 <Code>) */
#define NO_OP            (-1)        /* an op id meaning "none" (rf_loop_cancel ignores it) */
#define REGIONS_MAX      64          /* buckets whose region was learned from a mismatch */
#define REGION_BYTES     48

typedef enum xfer_state { X_QUEUED = 0, X_ACTIVE, X_BACKOFF, X_DONE, X_STATES } xfer_state;

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
	bool trace; /* RF_HTTP_TRACE set: state changes on stderr */
	unsigned transfers;
	CURL **pool;
	uint32_t npool, pool_max;
	uint32_t backoff_base_ms, backoff_cap_ms;
	uint64_t rng;
	rf_http_counters counters;
};

/* http_xfer.c: the records (and the helpers every file shares) */
void rf_xfer_queue(rf_http_xfer *x);       /* QUEUED, last in line */
void rf_xfer_queue_first(rf_http_xfer *x); /* QUEUED, first in line */
void rf_xfer_unqueue(rf_http_xfer *x);     /* off the queue (still QUEUED) */
void rf_xfer_undone(rf_http_xfer *x);      /* off the done list */
void rf_xfer_finish(rf_http_xfer *x, int64_t result, const char *why); /* DONE, listed */
void rf_xfer_fail_queued(rf_http_xfer *x, int code, const char *msg);
void rf_xfer_free(rf_http_xfer *x);
host *rf_http_host_of(rf_http *h, const char *url);
int rf_xfer_add_header(rf_http_xfer *x, const char *line);
void rf_http_wipe_free(char *s);

/* http_parse.c */
char *rf_http_dup_printf(const char *fmt, ...) RF_PRINTF(1, 2);

/* s3_sign.c: the S3 store's signing */
int rf_xfer_sign_s3(rf_http *h, rf_http_xfer *x);
int rf_xfer_sign_sigv4(rf_http_xfer *x);
void rf_xfer_s3_region(const rf_http_xfer *x, char *out, size_t cap);
const char *rf_xfer_region(const rf_http_xfer *x);
/* A wrong-region answer followed: x is queued again, first in line (true). */
bool rf_xfer_follow_region(rf_http_xfer *x);
bool rf_xfer_expired_token(rf_http_xfer *x);
void rf_xfer_wait_for_credentials(rf_http_xfer *x); /* queues x again, first in line */
int rf_xfer_start_region(rf_http_xfer *x, const rf_http_request *req);

/* http_check.c: the response */
size_t rf_xfer_on_header(char *data, size_t size, size_t n, void *userp);
size_t rf_xfer_on_write(char *data, size_t size, size_t n, void *userp);
/* 1 = accepted, 0 = retryable, -1 = failed for good; why receives the reason. */
int rf_xfer_judge(rf_http_xfer *x, char *why, size_t cap);
int64_t rf_xfer_retry_delay_ms(rf_http_xfer *x, char *why, size_t cap);
int rf_xfer_fail_code(const rf_http_xfer *x, int verdict);

#endif
