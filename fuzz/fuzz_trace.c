/* fuzz_trace.c - libFuzzer target for the trace reader of `ringfeed report`
 * and `ringfeed plan --from-trace` (tools/trace.c): the input is a whole
 * trace file (read through a memfd, as trace_load reads any file). An
 * accepted trace must hold what the reader promises: at least one line,
 * bounded count, finite non-negative numbers (NAN only where null or absent
 * is allowed), time that never decreases, labels of bounded length. */
#include "fuzz.h"
#include "trace.h"

#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

static void check_point(const trace_point *p)
{
	const double always[] = {p->t_s,       p->depth,        p->ready, p->decoded,
	                         p->in_flight, p->budget_bytes, p->wait_s};
	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
		FUZZ_CHECK(isfinite(always[i]) && always[i] >= 0);
	for (int m = 0; m < TRACE_MEM_CATEGORIES; m++)
		FUZZ_CHECK(isfinite(p->mem_bytes[m]) && p->mem_bytes[m] >= 0);
	const double maybe[] = {p->r_bps, p->c_bps, p->coverage_s, p->pause_s};
	for (size_t i = 0; i < sizeof(maybe) / sizeof(maybe[0]); i++)
		FUZZ_CHECK(isnan(maybe[i]) || (isfinite(maybe[i]) && maybe[i] >= 0));
	FUZZ_CHECK(!p->event || strlen(p->event) <= TRACE_EVENT_BYTES_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-trace", 0);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
	char path[64], msg[512] = "";
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	trace t;
	if (trace_load(path, &t, msg, sizeof(msg)) < 0) {
		FUZZ_CHECK(msg[0] != '\0'); /* a refusal names what was wrong */
		close(fd);
		return 0;
	}
	FUZZ_CHECK(t.n >= 1 && t.n <= TRACE_LINES_MAX);
	for (size_t i = 0; i < t.n; i++) {
		check_point(&t.pt[i]);
		FUZZ_CHECK(i == 0 || t.pt[i].t_s >= t.pt[i - 1].t_s);
	}
	trace_free(&t);
	close(fd);
	return 0;
}
