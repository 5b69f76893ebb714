/* http_parse.c - the HTTP client's pure helpers (see http_parse.h): no
 * state, no curl; each one unit tested and fuzzed (fuzz/fuzz_http.c). */
#include "http_int.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

uint64_t rf_http_backoff_ms(uint32_t attempt, uint32_t base_ms, uint32_t cap_ms, uint64_t *rng)
{
	uint64_t ceiling = base_ms;
	for (uint32_t i = 0; i < attempt && ceiling < cap_ms; i++)
		ceiling *= 2;
	ceiling = RF_MIN(ceiling, (uint64_t)cap_ms);
	return rf_splitmix64(rng) % (ceiling + 1);
}

uint64_t rf_http_throttle_backoff_ms(uint32_t attempt, uint32_t base_ms, uint32_t cap_ms,
                                     uint64_t *rng)
{
	uint64_t ceiling = base_ms;
	for (uint32_t i = 0; i < attempt && ceiling < cap_ms; i++)
		ceiling *= 2;
	ceiling = RF_MIN(ceiling, (uint64_t)cap_ms);
	uint64_t half = ceiling / 2;
	return RF_MAX(half + rf_splitmix64(rng) % (ceiling - half + 1), 1ull);
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
	return status == 429 || status == 503 ||
	       (s3_code && (!strcmp(s3_code, "SlowDown") || !strcmp(s3_code, "OperationTimedOut") ||
	                    !strcmp(s3_code, "ServerBusy")));
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

bool rf_http_validator_value(const char *v, char *out, size_t cap)
{
	out[0] = '\0';
	v += strspn(v, " \t");
	size_t n = strlen(v);
	while (n > 0 &&
	       (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
		n--;
	if (n == 0 || n > RF_HTTP_VALIDATOR_BYTES_MAX || n >= cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
			return false;
	memcpy(out, v, n);
	out[n] = '\0';
	return true;
}

size_t rf_http_validator_make(const char *etag, bool etag_bad, const char *last_modified, char *out,
                              size_t cap)
{
	if (cap == 0)
		return 0;
	out[0] = '\0';
	int n = 0;
	if (etag_bad)
		return 0;
	if (etag && etag[0])
		n = snprintf(out, cap, "etag:%s", etag);
	else if (last_modified && last_modified[0])
		n = snprintf(out, cap, "last-modified:%s", last_modified);
	if (n < 0 || (size_t)n >= cap) {
		out[0] = '\0';
		return 0;
	}
	return (size_t)n;
}

/* "<Code>X</Code>" of an S3 error body, letters and digits only. */
void rf_http_s3_error_code(const char *body, char *out, size_t cap)
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
char *rf_http_dup_printf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}
