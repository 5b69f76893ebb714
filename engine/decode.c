/* decode.c - the worker threads: each owns one rf_decoder and decodes
 * fetched blocks into pool slabs reserved and allocated at admission (blocks
 * finish in any order), queues a frame that failed its checksum for a
 * re-read, fills planned batches and runs the collator (collator.c) when
 * it is kicked. */
#include "config.h"
#include "engine.h"
#include "icache.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

/* Hands u (its read set up) to the loop thread for another read into its
 * buffer: a re-read, or the bytes its stream's decoder asked for. mu held. */
static void rf_reread_push(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_unit_set(e, u, RF_U_READING);
	rf_sched_reread_started(e->sched);
	rf_ring_reread_push(e, u->seq);
	rf_engine_wake_loop(e);
}

/* A frame that fails its checksum may have been damaged in transit: the
 * loop thread reads the same range again into the same buffer, at most
 * rereads_max times per unit. The unit keeps its read (the buffer stays
 * alive) and its slab; reads_inflight counts it so the budget deadlock
 * check waits for it. Returns false when out of re-reads. mu held. */
static bool rf_reread_queue(rf_engine *e, rf_unit_slot *u) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (u->rereads >= e->rereads_max || e->stop || !e->ring->rereads)
		return false;
	u->rereads++;
	e->st->rereads++;
	rf_reread_push(e, u);
	return true;
}

/* The open-time budget check sized the worst batch from the index's largest
 * record: a record larger than that is a lying index, reported as corrupt
 * input (naming the record) rather than as a "budget too small" later. */
static int rf_records_check(const rf_shard_index *ix, uint32_t block, const uint32_t *ends,
                            const char *url, rf_error *err)
{
	const rf_block_info *bi = &ix->block[block];
	for (uint32_t r = 0; r < bi->records; r++) {
		uint32_t len = rf_record_end(ends, r) - rf_record_end(ends, (int64_t)r - 1);
		if (len > ix->largest_record_bytes)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: block %u: record %u (record %llu of the shard) is %u "
			    "bytes, larger than the index's largest record of %u bytes "
			    "(corrupt index)",
			    url, block, r, (unsigned long long)(bi->first_record + r), len,
			    ix->largest_record_bytes);
	}
	return 0;
}

/* ------------------------------------------------- sequential shards */

/* The decoder state for a unit of sequential shard `shard`: the one bound
 * to it when free, else the free one used longest ago, which forgets its
 * stream (a later unit of that shard restarts it: stream_skipped_bytes
 * says what that cost). Busy: a worker decodes with it, or a unit holds it
 * across its MORE reads. NULL when every one is busy (the unit waits for
 * rf_seq_wake). mu held. */
static struct rf_seq_state *rf_seq_take(rf_engine *e, uint32_t shard) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	struct rf_seq_state *best = NULL;
	for (uint32_t i = 0; i < e->seqs->n; i++) {
		struct rf_seq_state *s = &e->seqs->v[i];
		if (s->busy)
			continue;
		if (s->shard == shard && s->fmt) {
			best = s;
			break;
		}
		if (!best || s->used < best->used)
			best = s;
	}
	if (!best)
		return NULL;
	if (best->shard != shard || !best->fmt) {
		best->stale = best->state != NULL; /* freed by the worker, outside mu */
		best->shard = shard;
	}
	best->busy = true;
	best->used = ++e->seqs->clock;
	return best;
}

/* Decodes a sequential unit through its shard's state. mu not held. */
static int rf_decode_seq(struct rf_seq_state *ss, const rf_shard *sh, rf_unit_slot *u,
                         uint64_t dst_cap, rf_unit_records *recs, rf_fmt_more *more, rf_error *err)
{
	if (ss->stale) {
		ss->fmt->seq_free(ss->state);
		ss->state = NULL;
		ss->stale = false;
	}
	ss->fmt = sh->fmt;
	rf_read *rd = u->read;
	return sh->fmt->decode_seq(&ss->state, sh->index, sh->fmt_priv, u->block,
	                           rd->buf + u->src_at, u->src_len, rd->offset + u->src_at, u->slab,
	                           dst_cap, recs, more, sh->name, err);
}

/* The decoder asked for more of the shard (RF_FMT_MORE): the loop thread
 * reads it into the unit's own buffer (sequential units are read alone)
 * and the unit decodes again. Returns false (err set) for a request that
 * does not fit the buffer or the object. mu held. */
static bool rf_more_queue(rf_engine *e, rf_unit_slot *u, const rf_fmt_more *m, rf_error *err)
    RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	rf_read *rd = u->read;
	const rf_shard *sh = &e->shards[u->shard];
	if (m->len == 0 || m->len > m->cap || m->offset > sh->index->file_bytes ||
	    m->len > sh->index->file_bytes - m->offset || e->stop) {
		rf_fail(err, -EIO, "shard %s: block %u: its decoder asked for [%llu, +%llu)",
		        sh->name, u->block, (unsigned long long)m->offset,
		        (unsigned long long)m->len);
		return false;
	}
	uint8_t *base = rd->buf - rd->buf_shift;
	rd->buf_shift = e->read_align ? (uint32_t)(m->offset % e->read_align) : 0;
	rd->buf = base + rd->buf_shift;
	rd->offset = m->offset;
	u->src_at = 0;
	u->src_len = (uint32_t)m->len;
	rf_unit_sub_set(e, u, RF_SUB_MORE);
	e->st->stream_more_reads++;
	rf_reread_push(e, u);
	return true;
}

/* What a MORE read may ask for: the unit's buffer, less O_DIRECT's
 * alignment slack at both ends. */
static uint64_t rf_more_cap(const rf_engine *e, const rf_read *rd)
{
	uint64_t slack = 2ull * e->read_align;
	uint64_t cap = rd->buf_bytes > slack ? rd->buf_bytes - slack : 0;
	return RF_MIN(cap, (uint64_t)UINT32_MAX);
}

/* A unit whose stored bytes failed: true when they are the bytes that
 * failed before its last re-read (a local file's, or a store's that
 * answers the same): damage at rest, which another re-read cannot mend.
 * A sequential unit's buffer holds its decoder's last request: never
 * compared. */
static bool rf_reread_same(rf_unit_slot *u, bool sequential)
{
	if (sequential)
		return false;
	uint32_t sum = (uint32_t)rf_fnv1a(RF_FNV_OFFSET, u->read->buf + u->src_at, u->src_len);
	u->same_bytes = u->rereads > 0 && sum == u->failed_sum;
	u->failed_sum = sum;
	return u->same_bytes;
}

/* What the re-reads of a failed unit showed, after its error. */
static void rf_reread_note(const rf_unit_slot *u, rf_error *err)
{
	size_t l = strlen(err->msg);
	if (u->same_bytes)
		snprintf(err->msg + l, sizeof(err->msg) - l,
		         " (the same bytes on re-read: not damage in transit)");
	else if (u->rereads)
		snprintf(err->msg + l, sizeof(err->msg) - l,
		         " (still after %u re-reads, each with other bytes)", u->rereads);
}

/* A unit (its re-reads spent) contradicts the layout the index cache gave
 * its shard (rf_format.layout_cached): the shard changed under the same
 * key (an object rewritten with its size and ETag or mtime put back). The
 * entry is removed, once per shard, so that the next open scans the shard
 * again; counted in index_cache_stale_drops. The key as the open built it
 * (open.c, rf_cache_key). mu held: a few system calls on an error path. */
static void rf_cache_drop_stale(rf_engine *e, rf_shard *sh, int rc) RF_REQUIRES(rf_engine_mu)
{
	RF_MU_HELD(e);
	if (rc != RF_E_CORRUPT || sh->cache_dropped || !sh->fmt->layout_cached ||
	    !sh->fmt->layout_cached(sh->fmt_priv))
		return;
	sh->cache_dropped = true;
	const char *dir = rf_config_index_cache_dir(e->cfg);
	rf_icache *c = NULL;
	rf_error why = {0};
	if (!dir || rf_icache_open(dir, rf_cfg(e->cfg, RF_CFG_index_cache_bytes), 0, &c, &why) < 0)
		return;
	char v[RF_SOURCE_VALIDATOR_BYTES] = "";
	if (sh->src)
		rf_source_validator(sh->src, v, sizeof(v));
	if (!v[0] && sh->validator)
		snprintf(v, sizeof(v), "%s", sh->validator);
	rf_icache_key k = {.url = sh->url,
	                   .size = rf_source_size(sh->src),
	                   .validator = v,
	                   .format = sh->fmt->cache_tag,
	                   .format_version = sh->fmt->cache_version};
	if (rf_icache_drop(c, &k) == 0)
		e->st->index_cache_stale_drops++;
	rf_icache_close(c);
}

static void rf_decode_one(rf_engine *e, rf_decoder *dec, uint64_t seq) RF_REQUIRES(rf_engine_mu)
{
	rf_unit_slot *u = rf_slot(e, seq);
	const rf_shard *sh = &e->shards[u->shard];
	const rf_shard_index *ix = sh->index;
	struct rf_seq_state *ss = NULL;
	if (ix->sequential) { /* its own state after a MORE read, else a free one */
		ss = u->seq_state ? &e->seqs->v[u->seq_state - 1] : rf_seq_take(e, u->shard);
		if (!ss) { /* every one busy: waits until one is given back (rf_seq_wake) */
			rf_unit_sub_set(e, u, RF_SUB_SEQ_WAIT);
			return;
		}
	}
	rf_unit_set(e, u, RF_U_DECODING);
	rf_ring_decode_begin(e);
	rf_fmt_more more = {.cap = rf_more_cap(e, u->read), .again = u->sub == RF_SUB_AGAIN};
	rf_engine_unlock(e);
	rf_error err = {0};
	uint64_t t0 = rf_now_ns();
	uint8_t *slab = u->slab; /* allocated with the read (sched.c) */
	rf_unit_records recs = {0};
	/* a multi-field unit's slab ends in its rf_unit_fields: not the format's */
	uint64_t dst_cap =
	    sh->fmt->field_names ? rf_unit_fields_at(sh, &ix->block[u->block]) : u->slab_bytes;
	int rc = !slab ? rf_fail(&err, -ENOMEM, "shard %s: block %u: no memory for its slab",
	                         sh->name, u->block)
	         : ss  ? rf_decode_seq(ss, sh, u, dst_cap, &recs, &more, &err)
	               : sh->fmt->decode(dec, ix, sh->fmt_priv, u->block, u->read->buf + u->src_at,
	                                 u->src_len, slab, dst_cap, &recs, sh->name, &err);
	bool index_lies = false; /* the frame passed its checksum: re-reading cannot help */
	if (rc == 0 && recs.records != ix->block[u->block].records)
		rc = rf_fail(&err, RF_E_CORRUPT,
		             "shard %s: block %u: decoded %u records, the layout says %u", sh->name,
		             u->block, recs.records, ix->block[u->block].records);
	if (rc == 0) {
		rc = rf_records_check(ix, u->block, recs.ends, sh->name, &err);
		if (rc == 0)
			rc = rf_fields_check(&e->fields, u->shard, &recs, sh->name, u->block, &err);
		index_lies = rc < 0;
	}
	uint64_t t1 = rf_now_ns();
	rf_engine_lock(e);
	e->st->decode_ns += t1 - t0;
	rf_ring_decode_end(e);
	if (ss)
		e->st->stream_skipped_bytes += more.skipped_bytes;
	if (rc == RF_FMT_MORE && rf_more_queue(e, u, &more, &err)) {
		u->seq_state = (uint8_t)(ss - e->seqs->v + 1); /* kept for its next call */
		ss->busy = true;
		return;
	}
	if (rc == RF_FMT_MORE)
		rc = err.code;
	if (ss) {
		ss->busy = false;
		u->seq_state = 0;
	}
	rf_unit_sub_set(e, u, RF_SUB_NONE);
	if (rc == RF_E_CORRUPT && !index_lies && !rf_reread_same(u, ss != NULL) &&
	    rf_reread_queue(e, u))
		return;
	rf_read *rd = u->read;
	u->read = NULL;
	if (rc < 0) {
		rf_reread_note(u, &err);
		rf_cache_drop_stale(e, &e->shards[u->shard], rc);
		rf_unit_fail(e, u, rc, err.msg); /* returns the slab */
	} else {
		u->slab = slab;
		u->base = recs.base;
		u->ends = recs.ends;
		if (sh->fmt
		        ->field_names) { /* the slab has room for them after the format's bytes */
			rf_unit_fields *uf =
			    (rf_unit_fields *)(slab + rf_unit_fields_at(sh, &ix->block[u->block]));
			*uf = (rf_unit_fields){.fields = recs.fields,
			                       .field_first = recs.field_first,
			                       .key_first = recs.key_first,
			                       .keys = recs.keys};
			u->uf = uf;
		}
		rf_unit_set(e, u, RF_U_DECODED);
		e->st->decoded_bytes += ix->block[u->block].decoded_bytes;
		e->st->blocks++;
		if (sh->in_place) {
			u->read = rd; /* its bytes are the records: kept until the unit goes */
			rd = NULL;
		}
	}
	if (rd && --rd->units_left == 0)
		rf_read_free(e, rd);
	if (ix->sequential)
		rf_seq_wake(e);
	rf_frontier_advance(e);
	rf_engine_wake_loop(e);
}

void *rf_worker_main(void *arg)
{
	rf_engine *e = arg;
	rf_decoder *dec = rf_decoder_new();
	rf_engine_lock(e);
	if (!dec)
		rf_engine_finish(e, -ENOMEM, "out of memory for a decoder");
	while (!e->stop) {
		rf_ebatch *b = rf_fill_pop(e);
		if (b) {
			rf_fill_one(e, b);
			continue;
		}
		uint64_t seq;
		if (dec && rf_ring_job_pop(e, &seq)) {
			rf_decode_one(e, dec, seq);
			rf_coll_kick(e->coll);
		}
		if (e->coll->kick && !e->coll->running) {
			rf_collate_run(e);
			continue;
		}
		bool work = e->fill->q_head != e->fill->q_tail ||
		            (dec && e->ring->jobs_head != e->ring->jobs_tail) ||
		            (e->coll->kick && !e->coll->running);
		/* stop may have been set (and broadcast) while mu was dropped above */
		if (!work && !e->stop)
			rf_engine_wait_work(e);
	}
	rf_engine_unlock(e);
	rf_decoder_free(dec);
	return NULL;
}

/* ------------------------------------------------------------ at open */

int rf_seqs_alloc(rf_engine *e, uint32_t n) RF_ALONE
{
	e->seqs->v = calloc(n, sizeof(*e->seqs->v));
	if (!e->seqs->v)
		return -ENOMEM;
	e->seqs->n = n;
	return 0;
}

void rf_seqs_free(rf_engine *e) RF_ALONE
{
	for (uint32_t i = 0; i < e->seqs->n; i++)
		if (e->seqs->v[i].state)
			e->seqs->v[i].fmt->seq_free(e->seqs->v[i].state);
	free(e->seqs->v);
	e->seqs->v = NULL;
	e->seqs->n = 0;
}
