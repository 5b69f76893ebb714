/* fuzz_http.c - libFuzzer target for HTTP response header handling
 * (fetch/http.h): the input is a response head, one header per line, cut
 * and trimmed the way http.c's header callback does (1023 bytes, CR/LF
 * stripped). Status lines, Content-Length, Content-Range and Retry-After
 * (delta seconds, else an HTTP date through curl, as the retry timer does)
 * go through the same parsers the transfers use. */
#include "fuzz.h"
#include "http.h"

#include <curl/curl.h>
#include <strings.h>

#define LINE_BYTES 1024 /* http.c's on_header keeps this much of a line */

static const char *value_of(const char *line, const char *name)
{
	size_t n = strlen(name);
	return strncasecmp(line, name, n) == 0 && line[n] == ':' ? line + n + 1 : NULL;
}

static void content_range(const char *v)
{
	uint64_t first = 0, last = 0, total = 0;
	if (rf_http_parse_content_range(v, &first, &last, &total) < 0)
		return;
	if (first == UINT64_MAX) { /* "bytes * /TOTAL": unsatisfied, total known */
		FUZZ_CHECK(last == UINT64_MAX && total != UINT64_MAX);
	} else {
		FUZZ_CHECK(first <= last && last != UINT64_MAX);
		FUZZ_CHECK(total == UINT64_MAX || last < total);
	}
}

/* A kept validator is short printable ASCII; the version string holds it. */
static void validator(const char *v)
{
	char kept[RF_HTTP_VALIDATOR_BYTES_MAX + 1], made[RF_HTTP_VALIDATOR_BYTES_MAX + 32];
	bool ok = rf_http_validator_value(v, kept, sizeof(kept));
	size_t n = strlen(kept);
	FUZZ_CHECK(ok ? n >= 1 && n <= RF_HTTP_VALIDATOR_BYTES_MAX : n == 0);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(kept[i] >= 0x20 && kept[i] <= 0x7e);
	size_t m = rf_http_validator_make(kept, false, kept, made, sizeof(made));
	FUZZ_CHECK(m == strlen(made) && (ok ? m == n + 5 : m == 0));
}

static void one_line(const char *line)
{
	const char *v;
	if (!strncmp(line, "HTTP/", 5)) {
		long status = rf_http_status_line(line);
		(void)rf_http_status_retryable(status);
	} else if ((v = value_of(line, "content-length"))) {
		uint64_t n = 0;
		(void)rf_http_parse_content_length(v, &n);
	} else if ((v = value_of(line, "retry-after"))) {
		char kept[48]; /* what http.c keeps of the value */
		snprintf(kept, sizeof(kept), "%s", v + strspn(v, " \t"));
		int64_t ms = rf_http_retry_after_ms(kept);
		FUZZ_CHECK(ms >= -1 && ms <= RF_HTTP_RETRY_AFTER_MAX_MS);
		if (ms < 0 && kept[0])
			(void)curl_getdate(kept, NULL);
	} else if ((v = value_of(line, "content-range"))) {
		content_range(v);
	} else if ((v = value_of(line, "etag")) || (v = value_of(line, "last-modified"))) {
		validator(v);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[LINE_BYTES];
	size_t pos = 0;
	while (pos < size) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t n = nl ? (size_t)(nl - (data + pos)) + 1 : size - pos;
		size_t len = n < sizeof(line) - 1 ? n : sizeof(line) - 1;
		memcpy(line, data + pos, len);
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		line[len] = '\0';
		one_line(line);
		pos += n;
	}
	return 0;
}
