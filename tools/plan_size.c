/* plan_size.c - sizing arithmetic for `ringfeed plan` (see plan_size.h).
 * Per loader: fetch holds F compressed batches, decode F decoded batches,
 * collate D ready batches plus the one the consumer holds. */
#include "plan_size.h"

#include <errno.h>
#include <math.h>
#include <string.h>

const char *const plan_stage_name[PLAN_STAGES] = {"fetch", "decoded", "collated"};

static uint64_t ceil_count(double v)
{
	/* The tolerance keeps 40 x 0.3 = 12.000000000000002 at 12. */
	double c = ceil(v - 1e-9);
	return c <= 0 ? 0 : (uint64_t)c;
}

static int mul(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? -ERANGE : 0;
}

static int add(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? -ERANGE : 0;
}

/* The largest D whose host total fits in the host memory. */
static void depth_max(const plan_in *in, plan_out *out)
{
	out->depth_max_known = false;
	if (in->host_memory_bytes == 0 || in->ranks == 0)
		return;
	uint64_t per_loader = in->host_memory_bytes / in->ranks;
	uint64_t fixed = out->loader_bytes[PLAN_FETCH] + out->loader_bytes[PLAN_DECODED] +
	                 in->batch_bytes[PLAN_COLLATED]; /* the consumer's batch */
	out->depth_max_known = true;
	out->depth_max = per_loader > fixed && in->batch_bytes[PLAN_COLLATED] > 0
	                     ? (per_loader - fixed) / in->batch_bytes[PLAN_COLLATED]
	                     : 0;
}

int plan_compute(const plan_in *in, plan_out *out)
{
	memset(out, 0, sizeof(*out));
	out->depth = ceil_count(in->rate_bps * in->pause_s);
	out->in_flight = in->in_flight ? in->in_flight : ceil_count(in->rate_bps * in->latency_s);
	if (out->in_flight == 0)
		out->in_flight = 1;
	out->count[PLAN_FETCH] = out->in_flight;
	out->count[PLAN_DECODED] = out->in_flight;
	out->count[PLAN_COLLATED] = out->depth + 1;
	for (int s = 0; s < PLAN_STAGES; s++) {
		if (mul(out->count[s], in->batch_bytes[s], &out->loader_bytes[s]) < 0 ||
		    mul(out->loader_bytes[s], in->ranks, &out->host_bytes[s]) < 0 ||
		    add(out->loader_total_bytes, out->loader_bytes[s], &out->loader_total_bytes) <
		        0 ||
		    add(out->host_total_bytes, out->host_bytes[s], &out->host_total_bytes) < 0)
			return -ERANGE;
	}
	out->coverage_s = (double)out->depth / in->rate_bps;
	out->fits = in->host_memory_bytes == 0 || out->host_total_bytes <= in->host_memory_bytes;
	depth_max(in, out);
	return 0;
}
