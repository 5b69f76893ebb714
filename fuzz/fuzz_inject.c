/* fuzz_inject.c - libFuzzer target for the --inject spec parser
 * (fetch/inject.h). An accepted spec must format to a canonical string that
 * parses back to the same spec; the duration and probability parsers also
 * get the raw bytes (they take a length, not a NUL-terminated string). */
#include "fuzz.h"
#include "inject.h"

static void round_trip(const char *text)
{
	rf_inject_spec spec, again;
	rf_error err = {0};
	int rc = rf_inject_parse(text, &spec, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		return;
	}
	FUZZ_CHECK(strlen(text) <= RF_INJECT_SPEC_BYTES_MAX);
	FUZZ_CHECK(spec.latency_ns <= RF_INJECT_DURATION_NS_MAX);
	FUZZ_CHECK(spec.jitter_ns <= RF_INJECT_DURATION_NS_MAX);
	FUZZ_CHECK(spec.stall_period_ns == 0 || spec.stall_ns < spec.stall_period_ns);
	FUZZ_CHECK(spec.error_p12 + spec.reset_p12 + spec.short_p12 + spec.corrupt_p12 <=
	           RF_INJECT_PROB_ONE);
	char buf[RF_INJECT_SPEC_BYTES_MAX];
	int n = rf_inject_format(&spec, buf, sizeof(buf));
	FUZZ_CHECK(n > 0 && (size_t)n < sizeof(buf));
	rc = rf_inject_parse(buf, &again, &err);
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(memcmp(&spec, &again, sizeof(spec)) == 0);
	char small[16];
	FUZZ_CHECK(rf_inject_format(&spec, small, sizeof(small)) == -ENOSPC);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	round_trip(s);
	free(s);
	char *raw = malloc(size ? size : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(raw != NULL);
	memcpy(raw, data, size);
	uint64_t v = 0;
	if (rf_inject_parse_duration(raw, size, &v) == 0)
		FUZZ_CHECK(v <= RF_INJECT_DURATION_NS_MAX);
	if (rf_inject_parse_prob(raw, size, &v) == 0)
		FUZZ_CHECK(v <= RF_INJECT_PROB_ONE);
	free(raw);
	return 0;
}
