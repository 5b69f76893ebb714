/* http_check.c - what a response must be to be accepted: headers recorded
 * as they arrive (status, Content-Length, Content-Range, Retry-After,
 * the ETag / Last-Modified validators; every line to a signed request's
 * signer too), a range body checked at its first byte
 * and never written past the caller's buffer, and the verdict on a finished attempt (accepted,
 * retryable, failed) with its backoff. */
#include "http_int.h"
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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
	x->etag[0] = x->last_modified[0] = '\0';
	x->etag_bad = false;
}

size_t rf_xfer_on_header(char *data, size_t size, size_t n, void *userp)
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
	const rf_http_auth *a = x->req.auth;
	if (a && a->ops->header) /* it only records: this runs inside curl */
		a->ops->header(a->state, x->auth_data, line, len);
	if (!strncmp(line, "HTTP/", 5)) {
		response_reset(x, line);
	} else if (header_is(line, len, "content-length", &v)) {
		x->have_content_length = rf_http_parse_content_length(v, &x->content_length);
	} else if (header_is(line, len, "etag", &v)) {
		x->etag_bad = !rf_http_validator_value(v, x->etag, sizeof(x->etag));
	} else if (header_is(line, len, "last-modified", &v)) {
		rf_http_validator_value(v, x->last_modified, sizeof(x->last_modified));
	} else if (header_is(line, len, "retry-after", &v)) {
		snprintf(x->retry_after, sizeof(x->retry_after), "%s", v + strspn(v, " \t"));
	} else if (header_is(line, len, "content-range", &v) && x->req.kind == RF_HTTP_RANGE &&
	           x->status == 206) {
		uint64_t first, last, total;
		uint64_t want_first = x->req.offset + x->resumed;
		uint64_t want_last = x->req.offset + x->req.len - 1;
		if (rf_http_parse_content_range(v, &first, &last, &total) < 0)
			set_problem(x, false, "unreadable Content-Range '%.60s'",
			            v + strspn(v, " \t"));
		else if (first != want_first || last != want_last ||
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

/* A resumed attempt's response carries the version the range's first part
 * came with; another (or none) starts the range over (resume_stale). */
static bool resume_version_ok(rf_http_xfer *x)
{
	if (x->resumed == 0)
		return true;
	char v[sizeof(x->resume_version)];
	rf_http_validator_make(x->etag, x->etag_bad, x->last_modified, v, sizeof(v));
	if (!strcmp(v, x->resume_version))
		return true;
	x->resume_stale = true;
	set_problem(x, true,
	            "the object's version changed after %llu bytes of the range had come: read "
	            "again from its start",
	            (unsigned long long)x->resumed);
	return false;
}

/* Decides, at the first body byte of a range response, whether it is what was asked. */
static bool range_body_ok(rf_http_xfer *x)
{
	uint64_t rest = x->req.len - x->resumed;
	if (x->status == 206) {
		if (!x->body_checked && !x->problem[0])
			set_problem(x, false, "HTTP 206 without a Content-Range");
		if (x->body_checked && x->have_content_length && x->content_length != rest)
			set_problem(x, false, "Content-Length %llu for a range of %llu bytes",
			            (unsigned long long)x->content_length,
			            (unsigned long long)rest);
		return !x->problem[0] && resume_version_ok(x);
	}
	if (x->status == 200 && x->req.offset == 0 && x->resumed == 0 && x->have_content_length &&
	    x->content_length == x->req.len)
		return true; /* the whole object is exactly the range asked */
	if (x->status == 200)
		set_problem(x, false,
		            "server ignored the Range header (HTTP 200 with the whole object)");
	else
		set_problem(x, false, "unexpected HTTP %ld to a range request", x->status);
	return false;
}

size_t rf_xfer_on_write(char *data, size_t size, size_t n, void *userp)
{
	rf_http_xfer *x = userp;
	if (x->status < 200 || x->status > 299)
		return keep_error_body(x, data, n);
	if (x->problem[0])
		return 0;
	if (x->req.kind == RF_HTTP_RANGE) {
		if (x->got == 0 && !range_body_ok(x))
			return 0;
		if (n > x->req.len - x->resumed - x->got) {
			set_problem(x, false, "body longer than the %llu bytes asked",
			            (unsigned long long)(x->req.len - x->resumed));
			return 0; /* never write past the caller's buffer */
		}
		memcpy((char *)x->req.buf + x->resumed + x->got, data, n);
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

/* "HTTP nnn CODE" and, for a signed request, its signer's words. */
static int judge_status(const rf_http_xfer *x, char *why, size_t cap)
{
	char code[64], more[800] = "";
	rf_http_s3_error_code(x->error_body, code, sizeof(code));
	const rf_http_auth *a = x->req.auth;
	if (a && a->ops->explain)
		a->ops->explain(a->state, x->auth_data, x, more, sizeof(more));
	snprintf(why, cap, "HTTP %ld%s%s%s", x->status, code[0] ? " " : "", code, more);
	return rf_http_status_retryable(x->status) ? 0 : -1;
}

/* Judges a finished attempt: 1 = accepted, 0 = retryable, -1 = failed for good.
 * why receives the reason. */
int rf_xfer_judge(rf_http_xfer *x, char *why, size_t cap)
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
	if (r->kind == RF_HTTP_RANGE && x->resumed + x->got != r->len) {
		snprintf(why, cap, "short body: %llu of %llu bytes",
		         (unsigned long long)(x->resumed + x->got), (unsigned long long)r->len);
		return 0;
	}
	if (r->kind == RF_HTTP_HEAD && !x->have_content_length) {
		snprintf(why, cap, "HTTP %ld without a Content-Length", x->status);
		return -1;
	}
	return 1;
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
int64_t rf_xfer_retry_delay_ms(rf_http_xfer *x, char *why, size_t cap)
{
	rf_http *h = x->h;
	char code[64];
	rf_http_s3_error_code(x->error_body, code, sizeof(code));
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
	/* bounded: each kept 64 KiB more of a finite range; none where no retry is allowed */
	bool free = x->retry_free && retries_max > 0;
	x->retry_free = false;
	if (!free && x->error_retries >= retries_max) {
		snprintf(why + n, cap - n, ", retries exhausted");
		return -1;
	}
	int64_t ms = (int64_t)rf_http_backoff_ms(x->error_retries, h->backoff_base_ms,
	                                         h->backoff_cap_ms, &h->rng);
	x->error_retries += !free;
	return RF_MAX(ms, ra);
}

int rf_xfer_fail_code(const rf_http_xfer *x, int verdict)
{
	if (verdict == 0 || x->status >= 500)
		return -EIO;
	if (x->status == 404)
		return -ENOENT;
	if (x->status == 401 || x->status == 403)
		return -EACCES;
	return -EPROTO;
}
