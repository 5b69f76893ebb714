/* verify.c - the shard verifier: reads a shard end to end through a read
 * function (pread for rf_verify_file, the fetch layer for rf_verify_shard)
 * and checks every rule the reader checks, on every block, plus the dataset
 * figures that only a full decode can confirm (largest record) and what a
 * manifest says of the shard. A damaged block is reported and the walk goes
 * on, so one run names every damaged block (up to a bound). */
#include "verify.h"
#include "format.h"
#include "rfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define U64(x) ((unsigned long long)(x))

typedef struct verify_run {
	const rf_verify_walk *w;
	uint32_t reported;
	uint64_t problems;
	rf_error first;
} verify_run;

static void problem(verify_run *v, const rf_error *e)
{
	if (v->problems++ == 0)
		v->first = *e;
	if (v->reported < v->w->max_reports && v->w->report) {
		v->reported++;
		v->w->report(v->w->ctx, e);
	}
}

static uint32_t largest_in_block(const uint32_t *ends, uint32_t records)
{
	uint32_t m = 0;
	for (uint32_t i = 0; i < records; i++)
		m = RF_MAX(m, rf_record_end(ends, i) - rf_record_end(ends, (int64_t)i - 1));
	return m;
}

/* The slab a unit decodes into: its decoded bytes, or its record table
 * for a format whose units are stored as they decode. */
static uint64_t slab_bytes_most(const rf_format *fmt, bool in_place, const rf_shard_index *ix,
                                const void *priv)
{
	if (!in_place)
		return ix->largest_block_decoded_bytes;
	uint64_t most = 0;
	for (uint32_t b = 0; b < ix->blocks; b++)
		most =
		    RF_MAX(most, fmt->table_bytes ? fmt->table_bytes(ix, priv, b) /* fields too */
		                                  : rf_fmt_table_bytes(ix->block[b].records));
	return most;
}

static int walk_read(void *ctx, const char *object, uint64_t offset, uint64_t len, void *buf,
                     uint64_t *size, rf_error *err);

/* Decodes unit b from its bytes src: a sequential layout's through the
 * one stream state *seq (in order: each unit's bytes follow the last's;
 * what the state lacks is read into src's buffer, cap bytes at a time). */
static int decode_one(const rf_verify_walk *w, const rf_format *fmt, const rf_shard_index *ix,
                      const void *priv, uint32_t b, rf_decoder *d, void **seq, uint8_t *src,
                      size_t cap, uint8_t *dst, uint64_t dst_cap, rf_unit_records *recs,
                      rf_error *e)
{
	const rf_block_info *bi = &ix->block[b];
	if (!ix->sequential)
		return fmt->decode(d, ix, priv, b, src, bi->compressed_bytes, dst, dst_cap, recs,
		                   w->name, e);
	return rf_fmt_decode_seq_with(fmt, seq, ix, priv, b, src, bi->compressed_bytes, bi->offset,
	                              src, cap, walk_read, (void *)w, dst, dst_cap, recs, NULL,
	                              w->name, e);
}

/* Decodes every unit; returns a negative code only for I/O or memory errors. */
static int walk_blocks(verify_run *v, const rf_format *fmt, bool in_place, const rf_shard_index *ix,
                       const void *priv, rf_error *err)
{
	const rf_verify_walk *w = v->w;
	uint64_t cap = slab_bytes_most(fmt, in_place, ix, priv);
	uint8_t *src = malloc(ix->largest_block_compressed_bytes + 1ul);
	uint8_t *dst = malloc(cap + 1);
	rf_decoder *d = rf_decoder_new();
	void *seq = NULL; /* a sequential layout's stream state */
	int rc = 0;
	if (!src || !dst || !d)
		rc = rf_fail(err, -ENOMEM, "shard %s: no memory to verify (%u-byte blocks)",
		             w->name, ix->largest_block_decoded_bytes);
	uint32_t largest = 0, sound = 0;
	for (uint32_t b = 0; rc == 0 && b < ix->blocks; b++) {
		const rf_block_info *bi = &ix->block[b];
		rf_error e = {0};
		rf_unit_records recs = {0};
		int r = bi->compressed_bytes /* a unit of empty records: nothing to read */
		            ? w->read(w->read_ctx, bi->offset, bi->compressed_bytes, src, &e)
		            : 0;
		if (r < 0 && r != RF_E_CORRUPT) {
			rc = r;
			*err = e;
			break;
		}
		if (r == 0)
			r = decode_one(w, fmt, ix, priv, b, d, &seq, src,
			               ix->largest_block_compressed_bytes + 1ul, dst, cap, &recs,
			               &e);
		if (r == 0 && recs.records != bi->records)
			r = rf_fail(&e, RF_E_CORRUPT,
			            "shard %s: block %u: decoded %u records, the layout says %u",
			            w->name, b, recs.records, bi->records);
		if (r < 0) {
			problem(v, &e);
			continue;
		}
		sound++;
		largest = RF_MAX(largest, largest_in_block(recs.ends, bi->records));
	}
	bool off = fmt->largest_record_bound ? largest > ix->largest_record_bytes
	                                     : largest != ix->largest_record_bytes;
	if (rc == 0 && sound == ix->blocks && off) {
		rf_error e;
		rf_fail(&e, RF_E_CORRUPT,
		        "shard %s: index at byte %llu: largest record is %u bytes, index says %u",
		        w->name, U64(ix->compressed_bytes + 20), largest, ix->largest_record_bytes);
		problem(v, &e);
	}
	if (seq)
		fmt->seq_free(seq);
	rf_decoder_free(d);
	free(src);
	free(dst);
	return rc;
}

static int walk_read(void *ctx, const char *object, uint64_t offset, uint64_t len, void *buf,
                     uint64_t *size, rf_error *err)
{
	const rf_verify_walk *w = ctx;
	if (!object)
		return w->read(w->read_ctx, offset, len, buf, err);
	if (!w->read_object)
		return rf_fail(err, -EPROTONOSUPPORT,
		               "shard %s: its layout lies in another object, which this verifier "
		               "cannot reach",
		               w->name);
	return w->read_object(w->read_ctx, object, offset, len, buf, size, err);
}

/* The layout through the shard's format: 0, RF_E_CORRUPT (a problem), or an I/O error. */
static int read_index(const rf_verify_walk *w, const rf_format **fmt, rf_shard_index **out,
                      void **priv, bool *in_place, rf_error *err)
{
	if (!(*fmt = w->fmt) && !(*fmt = rf_format_for(w->url ? w->url : w->name, true)))
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: no format reads this name (the formats read %s)", w->name,
		               rf_format_patterns());
	const char *url = w->url ? w->url : w->name;
	rf_error first = {0};
	for (;;) {
		rf_fmt_open o = {.url = url,
		                 .name = w->name,
		                 .size = w->size,
		                 .local = w->local,
		                 .opt = rf_fmt_optset_for(w->opts, *fmt),
		                 .in_place = (*fmt)->in_place};
		int rc = rf_format_open_with(*fmt, &o, walk_read, (void *)w, err);
		if (rc == RF_FMT_DONE) {
			*out = o.index;
			*priv = o.priv;
			*in_place = o.in_place;
			return rc;
		}
		/* not this format's (final, on a MAYBE claim): the next one that may read it */
		const rf_format *next = o.final && rf_format_claim(*fmt, url) == RF_FMT_MAYBE
		                            ? rf_format_next(url, *fmt)
		                            : NULL;
		if (!first.code)
			first = *err;
		if (!next) {
			*err = first; /* the first format's words: the name chose it */
			return first.code;
		}
		*fmt = next;
	}
}

/* What a manifest says of the shard, against the shard. */
static void check_listed(verify_run *v, const rf_shard_index *ix)
{
	const rf_verify_walk *w = v->w;
	rf_error e;
	if (!w->listed)
		return;
	if (w->size != w->listed_bytes) {
		rf_fail(&e, RF_E_CORRUPT,
		        "shard %s: file is %llu bytes, the manifest says %llu (listed in manifest "
		        "%s line %llu)",
		        w->name, U64(w->size), U64(w->listed_bytes), w->manifest,
		        U64(w->listed_line));
		problem(v, &e);
	}
	if (ix && ix->records != w->listed_records) {
		rf_fail(&e, RF_E_CORRUPT,
		        "shard %s: holds %llu records, the manifest says %llu (listed in manifest "
		        "%s line %llu)",
		        w->name, U64(ix->records), U64(w->listed_records), w->manifest,
		        U64(w->listed_line));
		problem(v, &e);
	}
}

int rf_verify_run(const rf_verify_walk *w, rf_error *err)
{
	verify_run v = {.w = w};
	rf_shard_index *ix = NULL;
	const rf_format *fmt = NULL;
	void *priv = NULL;
	rf_error e = {0};
	bool in_place = false;
	int rc = read_index(w, &fmt, &ix, &priv, &in_place, &e);
	if (rc < 0 && rc != RF_E_CORRUPT) {
		if (w->report && w->max_reports)
			w->report(w->ctx, &e);
		if (err)
			*err = e;
		return rc;
	}
	if (rc < 0)
		problem(&v, &e);
	check_listed(&v, ix);
	if (ix)
		rc = walk_blocks(&v, fmt, in_place, ix, priv, err ? err : &e);
	if (ix)
		fmt->close(ix, priv);
	if (rc < 0 && rc != RF_E_CORRUPT)
		return rc;
	if (v.problems > v.reported && w->report) {
		rf_fail(&e, RF_E_CORRUPT, "shard %s: %llu more problems not listed (bound %u)",
		        w->name, U64(v.problems - v.reported), w->max_reports);
		w->report(w->ctx, &e);
	}
	if (v.problems) {
		if (err)
			*err = v.first;
		return RF_E_CORRUPT;
	}
	return 0;
}

typedef struct pread_ctx {
	int fd;
	const char *path;
} pread_ctx;

static int pread_range(void *ctx, uint64_t offset, uint64_t len, void *buf, rf_error *err)
{
	pread_ctx *p = ctx;
	return rf_pread_full(p->fd, buf, len, offset, p->path, err);
}

/* A sidecar of a local shard (another local file), opened for each range:
 * the verifier reads a sidecar once, in a few ranges. */
static int pread_object(void *ctx, const char *object, uint64_t offset, uint64_t len, void *buf,
                        uint64_t *size, rf_error *err)
{
	(void)ctx;
	uint64_t n = 0;
	int fd = rf_open_regular(object, "shard", &n, err);
	if (fd < 0)
		return fd;
	if (size)
		*size = n;
	pread_ctx pc = {.fd = fd, .path = object};
	int rc = len ? pread_range(&pc, offset, len, buf, err) : 0;
	close(fd);
	return rc;
}

RF_API int rf_verify_file(const char *path, void (*report)(void *ctx, const rf_error *e), void *ctx,
                          uint32_t max_reports, rf_error *err)
{
	rf_error e = {0};
	uint64_t size = 0;
	int fd = rf_open_regular(path, "shard", &size, &e); /* never blocks on a FIFO */
	if (fd < 0) {
		if (report && max_reports)
			report(ctx, &e);
		if (err)
			*err = e;
		return fd;
	}
	pread_ctx pc = {.fd = fd, .path = path};
	rf_verify_walk w = {.name = path,
	                    .url = path,
	                    .local = true,
	                    .size = size,
	                    .read_object = pread_object,
	                    .read = pread_range,
	                    .read_ctx = &pc,
	                    .report = report,
	                    .ctx = ctx,
	                    .max_reports = max_reports};
	int rc = rf_verify_run(&w, err);
	close(fd);
	return rc;
}

RF_API int rf_shard_verify(const char *path, void (*report)(void *ctx, const rf_error *e),
                           void *ctx, uint32_t max_reports, rf_error *err)
{
	return rf_verify_file(path, report, ctx, max_reports, err);
}
