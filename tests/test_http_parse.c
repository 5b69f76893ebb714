/* test_http_parse.c - the pure pieces of the HTTP client: Content-Range
 * parsing, full-jitter backoff, Retry-After, which statuses are retried. */
#include "http.h"
#include "testutil.h"
#include "util.h"

static void test_content_range(void **state)
{
	(void)state;
	uint64_t a, b, t;
	assert_int_equal(rf_http_parse_content_range("bytes 0-99/1000", &a, &b, &t), 0);
	assert_true(a == 0 && b == 99 && t == 1000);
	assert_int_equal(rf_http_parse_content_range(" bytes 5-5/6\r\n", &a, &b, &t), 0);
	assert_true(a == 5 && b == 5 && t == 6);
	assert_int_equal(rf_http_parse_content_range("BYTES 1-2/*", &a, &b, &t), 0);
	assert_true(t == UINT64_MAX);
	assert_int_equal(rf_http_parse_content_range("bytes */1000", &a, &b, &t), 0);
	assert_true(a == UINT64_MAX && t == 1000);
	/* refused */
	const char *bad[] = {
	    "bytes 10-5/100",                 /* last < first */
	    "bytes 0-100/100",                /* last beyond total */
	    "bytes 0-99",                     /* no total */
	    "items 0-99/100",                 /* wrong unit */
	    "bytes -5-9/100",                 /* negative */
	    "bytes 0-99/100 extra",           /* trailing junk */
	    "bytes */*",                      /* says nothing */
	    "bytes 0-99999999999999999999/1", /* overflow */
	    "bytes a-b/c",
	    "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (rf_http_parse_content_range(bad[i], &a, &b, &t) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
}

static void test_backoff(void **state)
{
	(void)state;
	uint64_t rng = 42, rng2 = 42;
	uint64_t seen_max = 0;
	for (uint32_t attempt = 0; attempt < 40; attempt++) {
		for (int k = 0; k < 200; k++) {
			uint64_t ceiling = attempt >= 10 ? 5000 : RF_MIN(5000, 50ull << attempt);
			uint64_t d = rf_http_backoff_ms(attempt, 50, 5000, &rng);
			assert_true(d <= ceiling);
			/* same seed, same sequence */
			assert_true(d == rf_http_backoff_ms(attempt, 50, 5000, &rng2));
			if (attempt == 39 && d > seen_max)
				seen_max = d;
		}
	}
	/* full jitter reaches well into the capped range */
	assert_true(seen_max > 2500);
	uint64_t other = 43;
	int differ = 0;
	rng = 42;
	for (int k = 0; k < 20; k++)
		differ += rf_http_backoff_ms(5, 50, 5000, &rng) !=
		          rf_http_backoff_ms(5, 50, 5000, &other);
	assert_true(differ > 10);
}

/* The default throttling policy rides out at least 10 s of consecutive
 * 429/503 (the old one gave up after about 1.5 s), waits exactly its budget in
 * total, in a bounded number of attempts, and is the same for the same seed. */
static void test_throttle_policy(void **state)
{
	(void)state;
	rf_fetch_options o;
	rf_fetch_options_init(&o);
	assert_true(o.throttle_wait_ms >= 10000);
	for (uint64_t seed = 1; seed <= 50; seed++) {
		uint64_t rng = seed, again = seed, waited = 0;
		uint32_t n = 0;
		int64_t ms;
		while ((ms = rf_http_throttle_delay_ms(n, waited, o.throttle_wait_ms, -1, 50, 5000,
		                                       &rng)) >= 0) {
			assert_true(ms >= 1 && ms <= 5000);
			assert_int_equal(ms,
			                 rf_http_throttle_delay_ms(n, waited, o.throttle_wait_ms,
			                                           -1, 50, 5000, &again));
			waited += (uint64_t)ms;
			n++;
			assert_true(n <= 7 + o.throttle_wait_ms / 2500 + 1);
		}
		assert_int_equal(waited, o.throttle_wait_ms);
	}
	/* equal jitter: never below half the ceiling */
	uint64_t rng = 7;
	for (uint32_t a = 0; a < 20; a++) {
		uint64_t c = a >= 7 ? 5000 : 50ull << a,
		         d = rf_http_throttle_backoff_ms(a, 50, 5000, &rng);
		assert_true(d >= c / 2 && d <= c);
	}
	assert_true(rf_http_throttle_backoff_ms(0, 1, 1, &rng) >= 1);
	/* Retry-After wins when longer, cut to what is left of the budget */
	assert_int_equal(rf_http_throttle_delay_ms(0, 0, 20000, 3000, 50, 5000, &rng), 3000);
	assert_int_equal(rf_http_throttle_delay_ms(3, 19000, 20000, 30000, 50, 5000, &rng), 1000);
	assert_int_equal(rf_http_throttle_delay_ms(3, 20000, 20000, 30000, 50, 5000, &rng), -1);
	assert_int_equal(
	    rf_http_throttle_delay_ms(RF_HTTP_THROTTLE_RETRIES_MAX, 0, 20000, -1, 50, 5000, &rng),
	    -1);
	assert_true(rf_http_throttled(429, ""));
	assert_true(rf_http_throttled(503, ""));
	assert_true(rf_http_throttled(500, "SlowDown"));
	assert_false(rf_http_throttled(500, "InternalError"));
	assert_false(rf_http_throttled(502, NULL));
}

static void test_retry_after(void **state)
{
	(void)state;
	assert_int_equal(rf_http_retry_after_ms("2"), 2000);
	assert_int_equal(rf_http_retry_after_ms(" 0\r\n"), 0);
	assert_int_equal(rf_http_retry_after_ms("100000"), RF_HTTP_RETRY_AFTER_MAX_MS);
	assert_int_equal(rf_http_retry_after_ms("99999999999999999999999"), -1);
	assert_int_equal(rf_http_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), -1);
	assert_int_equal(rf_http_retry_after_ms("-3"), -1);
	assert_int_equal(rf_http_retry_after_ms("3s"), -1);
}

static void test_status(void **state)
{
	(void)state;
	long yes[] = {408, 429, 500, 502, 503, 504, 599};
	long no[] = {200, 206, 301, 400, 401, 403, 404, 416, 600};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(rf_http_status_retryable(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(rf_http_status_retryable(no[i]));
}

/* ETag / Last-Modified are untrusted: short printable ASCII or nothing. */
static void test_validator(void **state)
{
	(void)state;
	char v[RF_HTTP_VALIDATOR_BYTES_MAX + 1], out[200];
	assert_true(rf_http_validator_value("  \"5f3a-1e8\"\r\n", v, sizeof(v)));
	assert_string_equal(v, "\"5f3a-1e8\"");
	assert_true(rf_http_validator_value(" W/\"x y\"", v, sizeof(v)));
	assert_string_equal(v, "W/\"x y\"");
	assert_false(rf_http_validator_value("   ", v, sizeof(v)));
	assert_string_equal(v, "");
	assert_false(rf_http_validator_value("\"a\x01b\"", v, sizeof(v)));
	assert_false(rf_http_validator_value("\"a\xff"
	                                     "b\"",
	                                     v, sizeof(v)));
	assert_false(rf_http_validator_value("\"a\x7f\"", v, sizeof(v)));
	assert_string_equal(v, "");
	char longest[RF_HTTP_VALIDATOR_BYTES_MAX + 2];
	memset(longest, 'a', sizeof(longest));
	longest[RF_HTTP_VALIDATOR_BYTES_MAX] = '\0';
	assert_true(rf_http_validator_value(longest, v, sizeof(v))); /* exactly the bound */
	longest[RF_HTTP_VALIDATOR_BYTES_MAX] = 'a';
	longest[RF_HTTP_VALIDATOR_BYTES_MAX + 1] = '\0';
	assert_false(rf_http_validator_value(longest, v, sizeof(v))); /* one past */
	assert_false(rf_http_validator_value("\"ok\"", v, 3));        /* never cut */
	/* the version string: the ETag first, Last-Modified without one */
	assert_int_equal(rf_http_validator_make("\"e\"", false, "Tue", out, sizeof(out)), 8);
	assert_string_equal(out, "etag:\"e\"");
	assert_int_equal(rf_http_validator_make("", false, "Tue", out, sizeof(out)), 17);
	assert_string_equal(out, "last-modified:Tue");
	assert_int_equal(rf_http_validator_make("", false, "", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* an ETag sent but unusable: unknown, not the weaker Last-Modified */
	assert_int_equal(rf_http_validator_make("", true, "Tue", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(rf_http_validator_make("\"e\"", false, "", out, 8), 0); /* no room */
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_content_range),   cmocka_unit_test(test_backoff),
	    cmocka_unit_test(test_throttle_policy), cmocka_unit_test(test_retry_after),
	    cmocka_unit_test(test_status),          cmocka_unit_test(test_validator),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
