/* decode.c - the worker threads: each owns one rf_decoder and decodes
 * fetched blocks into pool slabs reserved and allocated at admission (blocks
 * finish in any order), queues a frame that failed its checksum for a
 * re-read, fills planned batches and runs the collator (collation.c) when
 * it is kicked. */
#include "engine.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

/* A frame that fails its checksum may have been damaged in transit: the
 * loop thread reads the same range again into the same buffer, at most
 * rereads_max times per unit. The unit keeps its read (the buffer stays
 * alive) and its slab; reads_inflight counts it so the budget deadlock
 * check waits for it. Returns false when out of re-reads. mu held. */
static bool rf_reread_queue(rf_engine *e, rf_unit_slot *u)
{
	RF_MU_HELD(e);
	if (u->rereads >= e->rereads_max || e->stop || !e->ring.rereads)
		return false;
	u->rereads++;
	rf_unit_set(e, u, RF_U_READING);
	e->st.rereads++;
	e->sched.reads_inflight++;
	e->ring.rereads[e->ring.rereads_tail++ & (e->ring.units - 1)] = u->seq;
	rf_engine_wake_loop(e);
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

static void rf_decode_one(rf_engine *e, rf_decoder *dec, uint64_t seq)
{
	rf_unit_slot *u = rf_slot(e, seq);
	rf_unit_set(e, u, RF_U_DECODING);
	e->ring.decoding++;
	rf_engine_unlock(e);
	rf_error err = {0};
	const rf_shard *sh = &e->shards[u->shard];
	const rf_shard_index *ix = sh->index;
	uint64_t t0 = rf_now_ns();
	uint8_t *slab = u->slab; /* allocated with the read (sched.c) */
	rf_unit_records recs = {0};
	/* a multi-field unit's slab ends in its rf_unit_fields: not the format's */
	uint64_t dst_cap =
	    sh->fmt->field_names ? rf_unit_fields_at(sh, &ix->block[u->block]) : u->slab_bytes;
	int rc = slab ? sh->fmt->decode(dec, ix, sh->fmt_priv, u->block, u->read->buf + u->src_at,
	                                u->src_len, slab, dst_cap, &recs, sh->name, &err)
	              : rf_fail(&err, -ENOMEM, "shard %s: block %u: no memory for its slab",
	                        sh->name, u->block);
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
	e->st.decode_ns += t1 - t0;
	e->ring.decoding--;
	if (rc == RF_E_CORRUPT && !index_lies && rf_reread_queue(e, u))
		return;
	rf_read *rd = u->read;
	u->read = NULL;
	if (rc < 0) {
		if (u->rereads) {
			size_t l = strlen(err.msg);
			snprintf(err.msg + l, sizeof(err.msg) - l, " (still after %u re-reads)",
			         u->rereads);
		}
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
		e->st.decoded_bytes += ix->block[u->block].decoded_bytes;
		e->st.blocks++;
		if (sh->in_place) {
			u->read = rd; /* its bytes are the records: kept until the unit goes */
			rd = NULL;
		}
	}
	if (rd && --rd->units_left == 0)
		rf_read_free(e, rd);
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
		if (e->fill.q_head != e->fill.q_tail) {
			rf_fill_one(e, e->fill.q[e->fill.q_head++ % RF_READY_MAX]);
			continue;
		}
		if (dec && e->ring.jobs_head != e->ring.jobs_tail) {
			uint64_t seq = e->ring.jobs[e->ring.jobs_head++ & (e->ring.units - 1)];
			rf_decode_one(e, dec, seq);
			e->coll.kick = true;
		}
		if (e->coll.kick && !e->coll.running) {
			rf_collate_run(e);
			continue;
		}
		bool work = e->fill.q_head != e->fill.q_tail ||
		            (dec && e->ring.jobs_head != e->ring.jobs_tail) ||
		            (e->coll.kick && !e->coll.running);
		/* stop may have been set (and broadcast) while mu was dropped above */
		if (!work && !e->stop)
			rf_engine_wait_work(e);
	}
	rf_engine_unlock(e);
	rf_decoder_free(dec);
	return NULL;
}
