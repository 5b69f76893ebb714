/* format_mem.c - drives a format's open over objects held in memory (the
 * fuzz targets and the format tests use it; the engine drives the same
 * steps through its loop). */
#include "format.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#define RF_FMT_MEM_STEPS_MAX (1u << 24) /* an open that asks more is looping */

static const rf_fmt_object *find_object(const rf_fmt_object *objs, size_t n, const char *url)
{
	if (!url)
		return &objs[0];
	for (size_t i = 1; i < n; i++)
		if (strcmp(objs[i].url, url) == 0)
			return &objs[i];
	return NULL;
}

static int deliver(rf_fmt_open *o, const rf_fmt_object *objs, size_t n, rf_error *err)
{
	const rf_fmt_want *w = &o->want;
	const rf_fmt_object *ob = find_object(objs, n, w->object);
	o->absent = false;
	if (!ob && w->optional) { /* an optional sidecar that does not exist */
		o->absent = true;
		o->got = NULL;
		o->got_offset = o->got_len = o->got_object_size = 0;
		return 0;
	}
	if (!ob)
		return rf_fail(err, -ENOENT, "%s: no object %s", o->name, w->object);
	if (w->offset > ob->size || w->len > ob->size - w->offset)
		return rf_fail(err, RF_E_CORRUPT,
		               "%s: bytes [%" PRIu64 ", +%" PRIu64
		               ") asked of %s, which has %" PRIu64 " bytes (truncated?)",
		               o->name, w->offset, w->len, w->object ? w->object : o->name,
		               ob->size);
	o->got = ob->data + w->offset;
	o->got_offset = w->offset;
	o->got_len = w->len;
	o->got_object_size = w->object ? ob->size : 0; /* as the engine */
	return 0;
}

int rf_format_open_mem(const rf_format *fmt, const rf_fmt_object *objs, size_t nobjs,
                       const void *opt, rf_shard_index **index, void **priv, uint64_t *held_bytes,
                       uint64_t *reserved_bytes, rf_error *err)
{
	rf_fmt_open o = {.url = objs[0].url,
	                 .name = objs[0].url,
	                 .size = objs[0].size,
	                 .local = true,
	                 .opt = opt,
	                 .in_place = fmt->in_place};
	uint64_t reserved = 0, had = 0, bound = 0;
	int rc = -ELOOP;
	for (uint32_t step = 0; step < RF_FMT_MEM_STEPS_MAX; step++) {
		rc = fmt->open_step(&o, err);
		if (rc == RF_E_CORRUPT && o.got) {
			/* the engine reads the same bytes again and calls the step once
			 * more: a failed step must have left the state as it was */
			rf_error again = {0};
			int rc2 = fmt->open_step(&o, &again);
			if (rc2 != rc || strcmp(again.msg, err->msg) != 0)
				rc = rf_fail(err, -EPROTO,
				             "%s: the %s format answered the same bytes twice "
				             "differently (%d, then %d: %s)",
				             o.name, fmt->name, rc, rc2, again.msg);
		}
		/* as the engine: what it holds now is at most what it held plus the bound */
		if (rc >= 0 && o.held_bytes > had + bound)
			rc = rf_fail(err, -EOVERFLOW,
			             "%s: the %s format holds %" PRIu64
			             " bytes, more than the %" PRIu64 " it declared (step %u)",
			             o.name, fmt->name, o.held_bytes, had + bound, step);
		if (rc >= 0)
			had = o.held_bytes;
		if (rc != RF_FMT_NEED)
			break;
		bound = o.want.parse_bound;
		reserved = RF_MAX(reserved, had + o.want.len + bound);
		if ((rc = deliver(&o, objs, nobjs, err)) < 0)
			break;
	}
	if (rc == 0 && !o.index) /* the steps ran out after a delivery */
		rc = -ELOOP;
	if (rc == RF_FMT_DONE && reserved < had)
		reserved = had;
	if (rc == -ELOOP)
		rf_fail(err, rc, "%s: the open did not finish in %u steps", o.name,
		        RF_FMT_MEM_STEPS_MAX);
	if (fmt->open_abort)
		fmt->open_abort(&o);
	if (rc != RF_FMT_DONE)
		return rc < 0 ? rc : -EINVAL;
	*index = o.index;
	*priv = o.priv;
	if (held_bytes)
		*held_bytes = o.held_bytes;
	if (reserved_bytes)
		*reserved_bytes = reserved;
	return 0;
}
