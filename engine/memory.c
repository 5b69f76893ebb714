/* memory.c - the loader's memory model at open: what the shard list, the
 * indexes, the plans, the unit ring and the decoders take (RF_MEM_METADATA
 * and RF_MEM_SCRATCH, reserved before they are allocated), the worst batch,
 * the unit ring's size, and the check that one batch's shuffle windows of
 * the largest blocks, one compressed block and one batch fit the budget
 * (rf_memory_check), which also sets what the scheduler and the controller
 * size against (batch_worst_bytes, ring_units, stage_bytes, read_align). */
#include "engine.h"
#include "hostbudget.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

#define RF_DECODER_SCRATCH_BYTES (256u << 10) /* one zstd DCtx, generously */

/* Reserves open-phase metadata (RF_MEM_METADATA) before it is allocated;
 * rf_memory_check trues the total up. what: the message's subject. */
int rf_memory_reserve_meta(rf_engine *e, uint64_t bytes, const char *what, rf_error *err)
{
	if (rf_budget_reserve(&e->budget, RF_MEM_METADATA, bytes, 0) == 0) {
		rf_open_meta_add(e->open, bytes);
		return 0;
	}
	char lim[32], held[32];
	return rf_fail(err, RF_E_BUDGET,
	               "budget %s is too small for %s: %llu more bytes needed on top of the %s "
	               "of metadata held so far (raise budget)",
	               rf_fmt_bytes(e->budget.limit_bytes, lim, sizeof(lim)), what,
	               (unsigned long long)bytes,
	               rf_fmt_bytes(e->open->meta_bytes, held, sizeof(held)));
}

/* A shard's entry and its strings (the name shares the URL's when equal). */
static uint64_t rf_shard_entry_bytes(const rf_shard *s)
{
	uint64_t n = sizeof(*s) + strlen(s->url) + 1 + s->tail_len;
	return s->name == s->url ? n : n + strlen(s->name) + 1;
}

/* The shard list (allocated by expand: reserved at once, before any index). */
int rf_memory_shard_list(rf_engine *e, rf_error *err)
{
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < e->nshards; i++)
		bytes += rf_shard_entry_bytes(&e->shards[i]);
	char what[64];
	snprintf(what, sizeof(what), "the list of %u shard(s)", e->nshards);
	return rf_memory_reserve_meta(e, bytes, what, err);
}

/* The most one plan of these shards can take (plan.c: per shard, per block,
 * per unit of the largest rank slice, two cached window permutations);
 * rf_open_plan reserves it before planning and keeps what the plans report. */
uint64_t rf_memory_plan_bound(const rf_engine *e, uint64_t window)
{
	uint64_t blocks = 0, records = 0, world = rf_cfg(e->cfg, RF_CFG_world);
	for (uint32_t i = 0; i < e->nshards; i++) {
		blocks += e->indexes[i]->blocks;
		records += e->indexes[i]->records;
	}
	uint64_t units = (blocks + world - 1) / world + 1;
	return 4096 + (uint64_t)(e->nshards + 1) * (sizeof(uint64_t) + sizeof(uint32_t)) +
	       (blocks + 1) * sizeof(uint32_t) + units * sizeof(rf_unit) +
	       4 * RF_MIN(window, records) * sizeof(uint32_t);
}

/* The largest batch: batch_records records of the largest record (or
 * pad_to), limited by batch_bytes. */
static uint64_t rf_batch_worst(const rf_engine *e, uint32_t largest_record, uint64_t records)
{
	uint64_t n = RF_MIN((uint64_t)e->cp.batch_records, RF_MAX(records, 1));
	uint64_t payload;
	if (e->cp.pad_to)
		payload = n * e->cp.pad_to;
	else if (e->cp.batch_bytes)
		payload = RF_MIN(n * largest_record, RF_MAX(e->cp.batch_bytes, largest_record));
	else
		payload = n * largest_record;
	uint64_t bytes =
	    rf_collate_bytes((uint32_t)n, payload) + rf_fields_extra_bytes(&e->fields, n);
	return e->default_alloc ? rf_pool_class_bytes(bytes) : bytes;
}

/* Joins the host budget (host_budget > 0), holding this loader's minimum
 * working set from it for the loader's life (see budget.h). */
static int rf_open_host_budget(rf_engine *e, uint64_t floor_bytes, rf_error *err)
{
	rf_node_limits node;
	rf_host_defaults hd;
	if (rf_cfg(e->cfg, RF_CFG_host_budget) == 0)
		return 0;
	rf_node_limits_read("", &node);
	RF_TRY(rf_default_host_budget(e->cfg, &node, &hd, err));
	snprintf(e->host_source, sizeof(e->host_source), "%s", hd.source);
	RF_TRY(rf_hostbudget_open(hd.name, hd.total_bytes, &e->host, err));
	return rf_budget_attach_host(&e->budget, e->host, floor_bytes, hd.loaders,
	                             RF_HOSTBUDGET_FLOOR_MS, err);
}

/* The most units with records that a span of `span` plan positions starting
 * at a multiple of `align` touches in the plan's current epoch (exact for that
 * epoch). rf_plan_units_in_window_max bounds every epoch but assumes all the
 * smallest blocks side by side, which overstates real datasets (each shard's
 * short last block) many times over. */
static uint32_t rf_span_units(const rf_plan *plan, uint64_t align, uint64_t span)
{
	size_t n = rf_plan_unit_count(plan);
	/* plan positions, not stream records: a rank's units hold its windows,
	 * whole, while it emits only its slice of them (a quarter of a window
	 * under world 4 is spread over all its blocks) */
	uint64_t records = rf_plan_epoch_plan_records(plan);
	uint32_t best = 0;
	size_t lo = 0; /* first unit ending after the span's start */
	for (uint64_t start = 0; start < records; start += align) {
		uint64_t end = RF_MIN(records, start + span);
		while (lo < n && rf_plan_unit(plan, lo)->first_plan_record +
		                         rf_plan_unit(plan, lo)->records <=
		                     start)
			lo++;
		uint32_t count = 0;
		for (size_t u = lo; u < n && rf_plan_unit(plan, u)->first_plan_record < end; u++)
			count +=
			    rf_plan_unit(plan, u)->records > 0 && !rf_plan_unit(plan, u)->unused;
		best = RF_MAX(best, count);
	}
	return best;
}

/* The plan positions whose units must be resident together for one batch
 * (a span starting at a multiple of *align): every shuffle window
 * its records fall in (a batch of more records than a window spans several
 * windows; the collator plans it only once all of them are resident), plus
 * the next window when a batch can straddle a window boundary; without a
 * window, the blocks one batch covers (two batch-sized spans when batches
 * need not start at multiples of the batch size). */
static uint64_t rf_batch_span(const rf_engine *e, uint64_t avg_record_bytes,
                              uint64_t *align) RF_ALONE
{
	uint64_t w = e->window, b = e->cp.batch_records;
	/* With world > 1 (or a re-split resume) the rank's local plan positions
	 * do not start on a window or batch boundary: count one span more. */
	bool aligned = rf_plan_params_of(e->sched->plan)->world == 1 && !e->cfg->has_resume;
	bool fixed = e->cp.batch_bytes == 0 && aligned; /* batches start at multiples of b */
	if (!fixed)
		b = RF_MIN(b, RF_MAX(1, e->cp.batch_bytes / RF_MAX(1, avg_record_bytes)));
	if (w > 1) {
		uint64_t span = (b + w - 1) / w * w;
		bool straddle = !fixed || (b % w != 0 && w % b != 0);
		*align = w;
		return straddle ? span + w : span;
	}
	*align = b;
	return fixed ? b : 2 * b;
}

/* The unit ring holds every unit from the oldest one not released to the
 * end of what the collator waits for: all the units one batch's windows
 * touch, in any epoch (a window of 5000 one-block records that a batch
 * straddles is 10000 units, more than RF_UNITS_RING: the scheduler stopped
 * at the ring's end while the collator waited for the window's last units).
 * At least RF_UNITS_RING (room to read ahead), a power of 2. */
static uint64_t rf_ring_units(const rf_engine *e, uint64_t span_records) RF_ALONE
{
	uint64_t need =
	    rf_plan_span_units_max(e->sched->plan, span_records) + 2ull * e->threads + 2;
	uint64_t ring = RF_UNITS_RING;
	while (ring < need)
		ring *= 2;
	return ring;
}

/* A mixture's ring: a source window is held from its first sample to its
 * last, while every source's units pass (rf_plan_mix_ring_units); refused
 * past RF_MIX_RING_MAX slots, naming the cause. */
#define RF_MIX_RING_MAX (1ull << 20)
static int rf_mix_ring(rf_engine *e, rf_error *err) RF_ALONE
{
	uint32_t longest = 0;
	uint64_t need = rf_plan_mix_ring_units(e->sched->plan, e->cp.batch_records, &longest) +
	                2ull * e->threads + 2;
	uint64_t ring = RF_UNITS_RING;
	while (ring < need && ring <= RF_MIX_RING_MAX)
		ring *= 2;
	if (ring > RF_MIX_RING_MAX)
		return rf_fail(
		    err, -E2BIG,
		    "mixture: source %u's shuffle window stays resident while %llu units "
		    "of the other sources pass, more than %llu (raise its weight or lower "
		    "shuffle_window)",
		    longest + 1, (unsigned long long)need, (unsigned long long)RF_MIX_RING_MAX);
	rf_ring_size_set(e, ring);
	return 0;
}

/* What the largest resident unit of an in_place shard holds: its stored
 * bytes (the read's buffer, kept as its records' bytes) and its record
 * table; 0 for other formats (their slab is the decoded bytes). */
static uint64_t rf_resident_unit_bytes(const rf_engine *e, const rf_shard *s)
{
	if (!s->in_place)
		return 0;
	uint64_t most = 0;
	for (uint32_t b = 0; b < s->index->blocks; b++)
		most = RF_MAX(most, rf_unit_slab_bytes(s, &s->index->block[b]));
	return most + rf_pool_class_bytes((uint64_t)s->index->largest_block_compressed_bytes +
	                                  e->read_align);
}

/* Sequential shards' decoder states (decode.c): threads + 1 of the largest
 * a format of theirs holds, when any shard is sequential. Allocates the
 * table; returns the bytes to reserve. */
static int rf_seq_states_size(rf_engine *e, uint64_t *bytes, rf_error *err) RF_ALONE
{
	uint64_t most = 0;
	*bytes = 0;
	for (uint32_t i = 0; i < e->nshards; i++) {
		const rf_shard *s = &e->shards[i];
		if (!s->index->sequential)
			continue;
		if (!s->fmt->decode_seq || !s->fmt->seq_free || !s->fmt->seq_state_bytes)
			return rf_fail(err, -EINVAL,
			               "shard %s: a sequential layout its format cannot decode",
			               s->name);
		most = RF_MAX(most, s->fmt->seq_state_bytes(s->index, s->fmt_priv));
	}
	if (most == 0 || e->seqs->v)
		return 0;
	uint32_t n = RF_MIN(e->threads + 1, 64u); /* a unit names its state in a byte */
	if (rf_seqs_alloc(e, n) < 0)
		return rf_fail(err, -ENOMEM, "out of memory for %u stream decoders", n);
	*bytes = e->seqs->n * (most + sizeof(*e->seqs->v));
	return 0;
}

/* Budget check at open: one window of the largest blocks (compressed +
 * decoded), one batch, the metadata and the decoders must fit. */
int rf_memory_check(rf_engine *e, rf_error *err) RF_ALONE
{
	uint32_t big_c = 0, big_d = 0, big_r = 0;
	uint64_t records = 0, meta = 0;
	for (uint32_t i = 0; i < e->nshards; i++) {
		const rf_shard_index *ix = e->indexes[i];
		big_c = RF_MAX(big_c, ix->largest_block_compressed_bytes);
		big_d = RF_MAX(big_d, ix->largest_block_decoded_bytes);
		big_r = RF_MAX(big_r, ix->largest_record_bytes);
		records += ix->records;
		meta += e->shards[i].fmt_held + rf_shard_entry_bytes(&e->shards[i]) +
		        rf_source_memory_bytes(e->shards[i].src);
	}
	meta += rf_plan_memory_bytes(e->sched->plan) + rf_plan_memory_bytes(e->coll->plan) +
	        e->fields.bytes;
	uint64_t scratch = (uint64_t)e->threads * RF_DECODER_SCRATCH_BYTES, seq_bytes = 0;
	RF_TRY(rf_seq_states_size(e, &seq_bytes, err));
	scratch += seq_bytes;
	uint64_t blocks = 0, decoded = 0;
	for (uint32_t i = 0; i < e->nshards; i++) {
		blocks += e->indexes[i]->blocks;
		decoded += e->indexes[i]->decoded_bytes;
	}
	uint64_t align, span = rf_batch_span(e, decoded / RF_MAX(records, 1), &align);
	if (rf_plan_is_mix(e->sched->plan))
		RF_TRY(rf_mix_ring(e, err));
	else
		rf_ring_size_set(e, rf_ring_units(e, span));
	meta += e->ring->units * (sizeof(rf_unit_slot) + sizeof(uint64_t)) + rf_engine_bytes() +
	        rf_recycle_seed_bytes(e);
	e->block_records_avg = RF_MAX(1, records / RF_MAX(blocks, 1));
	/* Resident blocks need their decoded slabs; only blocks in flight also
	 * hold compressed bytes, and one at a time is enough to make progress. */
	uint32_t units = RF_MAX(1, rf_span_units(e->sched->plan, align, span));
	if (rf_plan_is_mix(e->sched->plan))
		units = (uint32_t)RF_MIN(
		    UINT32_MAX,
		    RF_MAX(1, rf_plan_mix_resident_units(e->sched->plan, e->cp.batch_records)));
	rf_fetch_options fo;
	rf_config_fetch_options(e->cfg, &fo);
	e->read_align = fo.direct_io != RF_DIRECT_IO_OFF ? 4096u : 0; /* O_DIRECT's alignment */
	uint64_t slab = rf_pool_class_bytes(big_d);
	for (uint32_t i = 0; i < e->nshards; i++)
		slab = RF_MAX(slab, rf_resident_unit_bytes(e, &e->shards[i]));
	uint64_t frame = rf_pool_class_bytes((uint64_t)big_c + e->read_align);
	e->batch_worst_bytes = rf_batch_worst(e, big_r, records);
	uint64_t need = units * slab + frame + e->batch_worst_bytes + meta + scratch;
	if (need > e->budget.limit_bytes) {
		char b[6][32];
		return rf_fail(err, RF_E_BUDGET,
		               "budget %s is too small: needs at least %llu bytes (%s): %u decoded "
		               "block(s) of %s for one batch's shuffle window(s), one compressed "
		               "block of %s, one batch of %s, %s of metadata and decoders",
		               rf_fmt_bytes(e->budget.limit_bytes, b[0], sizeof(b[0])),
		               (unsigned long long)need, rf_fmt_bytes(need, b[1], sizeof(b[1])),
		               units, rf_fmt_bytes(slab, b[2], sizeof(b[2])),
		               rf_fmt_bytes(frame, b[3], sizeof(b[3])),
		               rf_fmt_bytes(e->batch_worst_bytes, b[4], sizeof(b[4])),
		               rf_fmt_bytes(meta + scratch, b[5], sizeof(b[5])));
	}
	RF_TRY(rf_open_host_budget(e, need, err));
	/* the open phase reserved most of it as it allocated: true it up */
	if (meta > e->open->meta_bytes)
		rf_budget_reserve(&e->budget, RF_MEM_METADATA, meta - e->open->meta_bytes, 0);
	else
		rf_budget_release(&e->budget, RF_MEM_METADATA, e->open->meta_bytes - meta);
	rf_open_meta_set(e->open, meta);
	rf_budget_reserve(&e->budget, RF_MEM_SCRATCH, scratch, 0);
	e->fixed_bytes = meta + scratch;
	e->stage_bytes = (units + 2ull * e->threads + 1) * (slab + frame);
	return 0;
}
