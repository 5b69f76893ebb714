/* cpu_cost.c - process CPU time and CPU-seconds per decoded GB (cpu_cost.h). */
#include "cpu_cost.h"

#include <sys/resource.h>

double rf_cpu_process_s(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

double rf_cpu_s_per_gb(double cpu_s, uint64_t bytes)
{
	return bytes ? cpu_s / ((double)bytes / 1e9) : 0;
}
