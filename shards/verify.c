/* verify.c - placeholder */
#include "rfs.h"
RF_API int rf_shard_verify(const char *path, void (*report)(void *ctx, const rf_error *e),
                           void *ctx, uint32_t max_reports, rf_error *err)
{
	return rf_fail(err, -ENOSYS, "%s", path);
}
