/* format_verify.c - the verifier's walk for a shard of any format behind
 * the seam (tar, MDS): its open driven step by step through the walk's read
 * function, then every unit read and decoded, each problem reported and the
 * walk going on while the layout is sound (as verify.c does for .rfs). */
#include "format.h"
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>

#define U64(x)              ((unsigned long long)(x))
#define RF_VERIFY_STEPS_MAX (1u << 20)

typedef struct fv_run {
	const rf_verify_walk *w;
	uint32_t reported;
	uint64_t problems;
	rf_error first;
} fv_run;

static void problem(fv_run *v, const rf_error *e)
{
	if (v->problems++ == 0)
		v->first = *e;
	if (v->reported < v->w->max_reports && v->w->report) {
		v->reported++;
		v->w->report(v->w->ctx, e);
	}
}

static int open_layout(const rf_format *f, const rf_verify_walk *w, rf_shard_index **ix,
                       void **priv, rf_error *err)
{
	rf_fmt_open o = {.url = w->name, .name = w->name, .size = w->size};
	uint8_t *buf = NULL;
	int rc;
	uint32_t steps = 0;
	while ((rc = f->open_step(&o, err)) == RF_FMT_NEED) {
		const rf_fmt_want *want = &o.want;
		if (want->object || want->offset > w->size || want->len > w->size - want->offset ||
		    ++steps > RF_VERIFY_STEPS_MAX) {
			rc = rf_fail(err, -ENOTSUP,
			             "shard %s: the %s format asked for bytes verify cannot read "
			             "(another object, or past the end)",
			             w->name, f->name);
			break;
		}
		free(buf);
		if (!(buf = malloc(want->len ? want->len : 1))) {
			rc = rf_fail(err, -ENOMEM, "shard %s: no memory for %llu bytes", w->name,
			             U64(want->len));
			break;
		}
		if ((rc = w->read(w->read_ctx, want->offset, want->len, buf, err)) < 0)
			break;
		o.got = buf;
		o.got_offset = want->offset;
		o.got_len = want->len;
	}
	if (f->open_abort)
		f->open_abort(&o);
	free(buf);
	if (rc == RF_FMT_DONE) {
		*ix = o.index;
		*priv = o.priv;
	}
	return rc < 0 ? rc : 0;
}

static uint64_t dst_bytes(const rf_format *f, const rf_shard_index *ix, const void *priv,
                          uint32_t u)
{
	if (!f->in_place)
		return ix->block[u].decoded_bytes;
	return f->table_bytes ? f->table_bytes(ix, priv, u)
	                      : rf_fmt_table_bytes(ix->block[u].records);
}

/* Every unit decoded; a negative code only for I/O or memory errors. */
static int walk_units(fv_run *v, const rf_format *f, const rf_shard_index *ix, const void *priv,
                      rf_error *err)
{
	const rf_verify_walk *w = v->w;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		uint64_t cap = dst_bytes(f, ix, priv, u);
		uint8_t *src = malloc(b->compressed_bytes + 1ul), *dst = malloc(cap + 1);
		rf_error e = {0};
		int rc = src && dst
		             ? w->read(w->read_ctx, b->offset, b->compressed_bytes, src, &e)
		             : rf_fail(&e, -ENOMEM, "shard %s: no memory for unit %u", w->name, u);
		rf_unit_records r;
		if (rc == 0)
			rc = f->decode(NULL, ix, priv, u, src, b->compressed_bytes, dst, cap, &r,
			               w->name, &e);
		if (rc == 0 && r.records != b->records)
			rc = rf_fail(&e, RF_E_CORRUPT,
			             "shard %s: unit %u: %u records, the layout says %u", w->name,
			             u, r.records, b->records);
		free(src);
		free(dst);
		if (rc < 0 && rc != RF_E_CORRUPT) {
			*err = e;
			return rc;
		}
		if (rc < 0)
			problem(v, &e);
	}
	return 0;
}

int rf_format_verify_run(const rf_format *f, const rf_verify_walk *w, rf_error *err)
{
	fv_run v = {.w = w};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error e = {0};
	int rc = open_layout(f, w, &ix, &priv, &e);
	if (rc < 0) {
		if (w->report && w->max_reports)
			w->report(w->ctx, &e);
		if (err)
			*err = e;
		return rc;
	}
	if (w->listed && (ix->records != w->listed_records || w->size != w->listed_bytes)) {
		rf_fail(
		    &e, RF_E_CORRUPT,
		    "shard %s: holds %llu records in %llu bytes, the manifest says %llu in %llu "
		    "(listed in manifest %s line %llu)",
		    w->name, U64(ix->records), U64(w->size), U64(w->listed_records),
		    U64(w->listed_bytes), w->manifest ? w->manifest : "?", U64(w->listed_line));
		problem(&v, &e);
	}
	rc = walk_units(&v, f, ix, priv, err ? err : &e);
	f->close(ix, priv);
	if (rc < 0)
		return rc;
	if (v.problems) {
		if (err)
			*err = v.first;
		return RF_E_CORRUPT;
	}
	return 0;
}
