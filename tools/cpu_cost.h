/* cpu_cost.h - CPU per byte, the figure of merit of `ringfeed bench`: the
 * whole process's user + system CPU-seconds (getrusage) per decoded GB. On a
 * loaded machine throughput moves with what else runs; the CPU a byte costs
 * moves much less, so the loader's CPU/GB against the decode limit's is the
 * stable efficiency ratio. */
#ifndef RF_CPU_COST_H
#define RF_CPU_COST_H

#include <stdint.h>

/* user + system CPU-seconds of every thread of this process so far */
double rf_cpu_process_s(void);
/* CPU-seconds per 10^9 bytes, or 0 when no bytes */
double rf_cpu_s_per_gb(double cpu_s, uint64_t bytes);

#endif
