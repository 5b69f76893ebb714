/* layout.c - rf_layout_read_file: a local shard's layout through the format
 * seam, with the config's format options, for tools (inspect) that see the
 * library only through its public header. */
#include "config.h"
#include "format.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static rf_shard_index *index_dup(const rf_shard_index *ix)
{
	rf_shard_index *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	*c = *ix;
	c->block = malloc((ix->blocks ? ix->blocks : 1) * sizeof(*c->block));
	c->metadata = strdup(ix->metadata ? ix->metadata : "");
	if (!c->block || !c->metadata) {
		rf_index_free(c);
		return NULL;
	}
	memcpy(c->block, ix->block, ix->blocks * sizeof(*c->block));
	return c;
}

/* The records' bytes: a unit's decoded bytes less its record table, unless
 * the units are stored as they decode (then they hold no table). */
static uint64_t payload_of(const rf_format *fmt, const rf_shard_index *ix,
                           const struct rf_fmt_options *opt)
{
	bool copied = !fmt->in_place || (opt->seq_len && strcmp(fmt->name, "rfs") != 0);
	if (!copied)
		return ix->decoded_bytes;
	return ix->decoded_bytes - 4 * ix->records - 4 * (uint64_t)ix->blocks;
}

RF_API int rf_layout_read_file(const char *path, const rf_config *cfg, rf_shard_index **out,
                               rf_layout_info *info, rf_error *err)
{
	*out = NULL;
	struct rf_fmt_options opt = {0};
	if (cfg)
		RF_TRY(rf_config_format_options(cfg, &opt, err));
	char *alias = rf_format_local_name(path); /* PREFIX.bin -> PREFIX.idx */
	const rf_format *fmt = NULL;
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	int rc = rf_format_open_file(alias ? alias : path, NULL, &opt, &fmt, &ix, &priv, err);
	free(alias);
	if (rc < 0)
		return rc;
	*out = index_dup(ix);
	if (info)
		*info = (rf_layout_info){.format = fmt->name,
		                         .payload_bytes = payload_of(fmt, ix, &opt)};
	fmt->close(ix, priv);
	return *out ? 0 : rf_fail(err, -ENOMEM, "%s: out of memory", path);
}
