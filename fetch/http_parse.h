/* http_parse.h - the HTTP client's pure helpers: parsers of response
 * fields (status line, Content-Length, Content-Range, Retry-After, an S3
 * error code, ETag / Last-Modified validators) and the backoff arithmetic. No state; unit tested
 * (test_http_parse) and fuzzed (fuzz/fuzz_http.c). Internal. */
#ifndef RF_HTTP_PARSE_H
#define RF_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RF_HTTP_RETRY_AFTER_MAX_MS   30000
#define RF_HTTP_THROTTLE_RETRIES_MAX 1000 /* a bound even for a tiny backoff base */

/* Parses a Content-Range value "bytes FIRST-LAST/TOTAL" (TOTAL may be '*' ->
 * UINT64_MAX) or "bytes * /TOTAL" (unsatisfied; first = last = UINT64_MAX). */
int rf_http_parse_content_range(const char *v, uint64_t *first, uint64_t *last, uint64_t *total);
/* Full-jitter backoff: uniform in [0, min(cap, base * 2^attempt)] ms, from a
 * splitmix64 state (rf_splitmix64, base/rng.h). */
uint64_t rf_http_backoff_ms(uint32_t attempt, uint32_t base_ms, uint32_t cap_ms, uint64_t *rng);
/* Throttling backoff ("equal jitter"): uniform in [c/2, c] ms, at least 1,
 * c = min(cap, base * 2^attempt): every wait makes progress, so a time
 * budget is spent in a bounded number of attempts. */
uint64_t rf_http_throttle_backoff_ms(uint32_t attempt, uint32_t base_ms, uint32_t cap_ms,
                                     uint64_t *rng);
/* The wait before throttle retry number n (0-based) of a request that has
 * waited waited_ms out of budget_ms: the throttling backoff, or the server's
 * Retry-After (retry_after_ms, < 0 = none) when longer, cut to what is left
 * of the budget; -1 when the budget is spent (or n reached
 * RF_HTTP_THROTTLE_RETRIES_MAX). Riding out throttling therefore waits
 * exactly budget_ms in total before the request fails. */
int64_t rf_http_throttle_delay_ms(uint32_t n, uint64_t waited_ms, uint64_t budget_ms,
                                  int64_t retry_after_ms, uint32_t base_ms, uint32_t cap_ms,
                                  uint64_t *rng);
/* Whether a response is throttling: 429, 503, or the S3 code SlowDown. */
bool rf_http_throttled(long status, const char *s3_code);
/* Retry-After as delta seconds; -1 when absent or not a plain number (HTTP
 * dates are handled by the caller). Capped at RF_HTTP_RETRY_AFTER_MAX_MS. */
int64_t rf_http_retry_after_ms(const char *v);
/* The status code of a status line ("HTTP/1.1 206 Partial Content"),
 * NUL-terminated; 0 when it has none. */
long rf_http_status_line(const char *line);
/* A Content-Length value (leading blanks skipped, digits read): false when
 * it does not start with a digit or overflows. */
bool rf_http_parse_content_length(const char *v, uint64_t *out);
/* Whether an HTTP status is worth retrying (408, 429, 5xx). */
bool rf_http_status_retryable(long status);

/* Object validators (ETag, Last-Modified) are untrusted: a value of at
 * most this many bytes of printable ASCII, or none. */
#define RF_HTTP_VALIDATOR_BYTES_MAX 128
/* A validator header's value (blanks around it trimmed) into out (cap >
 * RF_HTTP_VALIDATOR_BYTES_MAX): true when it is 1..RF_HTTP_VALIDATOR_BYTES_MAX
 * bytes of printable ASCII (0x20..0x7e); false and out "" otherwise. */
bool rf_http_validator_value(const char *v, char *out, size_t cap);
/* The version string of a response: "etag:V" when it carried a usable ETag,
 * else "last-modified:V", else ""; an ETag that was sent but unusable
 * (etag_bad) makes it "" (unknown): a weaker Last-Modified does not stand
 * in for a version the server named but we cannot read. Returns its
 * length; "" when it does not fit cap. */
size_t rf_http_validator_make(const char *etag, bool etag_bad, const char *last_modified, char *out,
                              size_t cap);

/* The "<Code>X</Code>" of an S3 error body into out (letters and digits
 * only; "" when none). */
void rf_http_s3_error_code(const char *body, char *out, size_t cap);
/* A malloc'd printf (NULL when out of memory). */
char *rf_http_dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
