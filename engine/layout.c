/* layout.c - rf_layout_open_config: a local shard's layout through the
 * format seam with a config's format options (token files read as the
 * loader reads them), for tools that see the library only through its
 * public header. */
#include "config.h"
#include "format.h"
#include "util.h"

RF_API int rf_layout_open_config(const char *path, const rf_config *cfg, rf_layout **out,
                                 rf_error *err)
{
	*out = NULL;
	rf_fmt_optset *opts = NULL;
	RF_TRY(rf_config_format_options(cfg, &opts, err));
	int rc = rf_layout_open_opts(path, opts, out, err);
	rf_fmt_optset_free(opts);
	return rc;
}
