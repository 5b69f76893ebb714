/* plan_rank.c - this rank's part of the epoch (see plan.h): the partition
 * of the sequence (equal slices, the tail policy, drop_last), the slice as
 * pieces of the global stream, each piece's units (the blocks of its
 * windows, unused ones marked), and the lookups between local stream
 * positions, local plan positions and units. Pure: no I/O, no threads, no
 * clocks. */
#include "plan_int.h"
#include "util.h"

static void plan_add_piece(rf_plan *plan, uint64_t x, uint64_t len)
{
	plan_piece *last = plan->npieces ? &plan->pieces[plan->npieces - 1] : NULL;
	if (last && last->x + last->len == x) {
		last->len += len;
		return;
	}
	plan->pieces[plan->npieces++] = (plan_piece){.x = x, .len = len};
}

/* Sequence position (below the sequence's length) -> segment index. */
static uint32_t plan_seq_find(const rf_segment *seq, const uint64_t *prefix, uint32_t n,
                              uint64_t pos)
{
	uint32_t lo = 0, hi = n;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (prefix[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	(void)seq;
	return lo;
}

/* This rank's slice of the sequence, as pieces of the global stream. */
static void plan_pieces(rf_plan *plan, const rf_segment *seq, const uint64_t *prefix, uint32_t nseq,
                        uint64_t length, uint64_t from, uint64_t count)
{
	plan->npieces = 0;
	while (count > 0) {
		uint64_t at = from % length;
		uint32_t j = plan_seq_find(seq, prefix, nseq, at);
		uint64_t off = at - prefix[j];
		uint64_t take = RF_MIN(count, seq[j].records - off);
		if (take == 0)
			break; /* unreachable: the last segment starting at or before `at` holds it
			        */
		plan_add_piece(plan, seq[j].start + off, take);
		from += take;
		count -= take;
	}
}

/* Appends the units of the blocks overlapping the piece's windows. */
static int plan_piece_units(rf_plan *plan, plan_piece *pc, uint64_t local_plan, rf_error *err)
{
	uint64_t w = plan->window, n = plan->total_records;
	pc->wa = pc->x / w * w;
	pc->wb = RF_MIN(n, (pc->x + pc->len + w - 1) / w * w);
	uint32_t lo = 0, hi = plan->nshards; /* last shard starting at or before wa */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (plan->shard_start[mid] <= pc->wa)
			lo = mid;
		else
			hi = mid;
	}
	pc->u0 = plan->unit_count;
	pc->p = local_plan;
	pc->g = UINT64_MAX;
	for (uint32_t k = lo; k < plan->nshards && plan->shard_start[k] < pc->wb; k++) {
		uint32_t s = plan->shard_order[k], nb = rf_plan_block_order(plan, s);
		uint64_t pos = plan->shard_start[k];
		for (uint32_t i = 0; i < nb && pos < pc->wb; i++) {
			uint32_t b = plan->block_perm[i];
			uint32_t rec = plan->block_records[plan->shard_first[s] + b];
			if (rec == 0 || pos + rec <= pc->wa) {
				pos += rec;
				continue;
			}
			RF_TRY(rf_plan_units_reserve(plan, plan->unit_count + 1, err));
			if (pc->g == UINT64_MAX)
				pc->g = pos;
			uint64_t rel = RF_MIN(n, (pos + rec + w - 1) / w * w);
			rel = rel > pc->x ? RF_MIN(rel - pc->x, pc->len) : 0;
			plan->units[plan->unit_count++] =
			    (rf_unit){.shard = s,
			              .block = b,
			              .records = rec,
			              .unused = true,
			              .first_plan_record = local_plan + (pos - pc->g),
			              .release_pos = pc->q + rel};
			pos += rec;
		}
	}
	if (pc->g == UINT64_MAX)
		pc->g = pc->wa;
	pc->u1 = plan->unit_count;
	pc->plen = 0;
	for (size_t u = pc->u0; u < pc->u1; u++)
		pc->plen += plan->units[u].records;
	return 0;
}

/* Marks used the units of piece pc holding a plan position in [a, b). */
static void plan_use_range(rf_plan *plan, const plan_piece *pc, uint64_t a, uint64_t b)
{
	for (size_t u = pc->u0; u < pc->u1 && a < b; u++) {
		rf_unit *un = &plan->units[u];
		uint64_t gs = pc->g + (un->first_plan_record - pc->p), ge = gs + un->records;
		if (gs < b && ge > a)
			un->unused = false;
	}
}

/* A boundary window k of the piece only partly in its stream range: marks
 * used the units holding the plan positions of its in-range records. */
static void plan_use_window(rf_plan *plan, const plan_piece *pc, uint64_t k)
{
	uint64_t w = plan->window, first = k * w;
	uint32_t n = rf_plan_window_size(plan, k);
	uint64_t a = RF_MAX(pc->x, first), b = RF_MIN(pc->x + pc->len, first + n);
	if (a == first && b == first + n) {
		plan_use_range(plan, pc, first, first + n);
		return;
	}
	const uint32_t *perm = rf_plan_window_perm(plan, k, n);
	memset(plan->marks, 0, n);
	for (uint64_t i = a; i < b; i++)
		plan->marks[perm[i - first]] = 1;
	for (size_t u = pc->u0; u < pc->u1; u++) {
		rf_unit *un = &plan->units[u];
		uint64_t gs = pc->g + (un->first_plan_record - pc->p), ge = gs + un->records;
		uint64_t s = RF_MAX(gs, first), e = RF_MIN(ge, first + n);
		for (uint64_t g = s; g < e && un->unused; g++)
			if (plan->marks[g - first])
				un->unused = false;
	}
}

static void plan_piece_use(rf_plan *plan, const plan_piece *pc)
{
	uint64_t w = plan->window;
	if (pc->len == 0)
		return;
	if (w <= 1) {
		plan_use_range(plan, pc, pc->x, pc->x + pc->len);
		return;
	}
	uint64_t ka = pc->wa / w, kb = (pc->wb - 1) / w;
	plan_use_window(plan, pc, ka);
	if (kb > ka)
		plan_use_window(plan, pc, kb);
	if (kb > ka + 1)
		plan_use_range(plan, pc, (ka + 1) * w, kb * w);
}

uint64_t rf_plan_partition(const rf_plan *plan, uint64_t length, uint64_t start, rf_plan_tail *tail)
{
	uint64_t w = plan->p.world;
	uint64_t s = length == 0 ? 0 : plan->p.pad ? (length + w - 1) / w : length / w;
	uint64_t eff = s;
	if (plan->p.drop_last > 0 && start <= s)
		eff = start + (s - start) / plan->p.drop_last * plan->p.drop_last;
	*tail = (rf_plan_tail){.sequence_records = length,
	                       .slice_records = s,
	                       .dropped_records = plan->p.pad ? 0 : length - s * w,
	                       .padded_records = plan->p.pad ? s * w - length : 0,
	                       .drop_last_records = s - eff};
	return eff;
}

/* The partition: S per rank, this rank's count after drop_last, the tail. */
static void plan_partition(rf_plan *plan, uint64_t length, uint64_t start, uint64_t *from,
                           uint64_t *count)
{
	*count = rf_plan_partition(plan, length, start, &plan->tail);
	plan->slice = plan->tail.slice_records;
	*from = (uint64_t)plan->p.rank * plan->slice;
}

int rf_plan_epoch(rf_plan *plan, uint64_t epoch, rf_error *err)
{
	plan->epoch = epoch;
	for (int i = 0; i < PLAN_WINDOW_SLOTS; i++)
		plan->cache->slot[i].number = UINT64_MAX;
	if (!plan->mix)
		rf_plan_shard_order(plan, epoch);
	bool over = epoch == plan->seq_epoch && plan->seq;
	uint64_t whole_prefix[2] = {0, plan->total_records};
	const rf_segment *seq = over ? plan->seq : &plan->whole;
	uint32_t nseq = over ? plan->nseq : 1;
	uint64_t *prefix = over ? plan->seq_prefix : whole_prefix;
	uint64_t length = 0;
	for (uint32_t i = 0; i < nseq; i++) {
		prefix[i] = length;
		length += seq[i].records;
	}
	prefix[nseq] = length;
	uint64_t from, count;
	plan_partition(plan, length, epoch == plan->seq_epoch ? plan->seq_start : 0, &from, &count);
	if (count > 0)
		plan_pieces(plan, seq, prefix, nseq, length, from, count);
	else
		plan->npieces = 0;
	plan->unit_count = 0;
	if (plan->mix)
		return plan->mixops->epoch(plan, err);
	uint64_t q = 0, p = 0;
	for (uint32_t i = 0; i < plan->npieces; i++) {
		plan_piece *pc = &plan->pieces[i];
		pc->q = q;
		RF_TRY(plan_piece_units(plan, pc, p, err));
		plan_piece_use(plan, pc);
		q += pc->len;
		p += pc->plen;
	}
	plan->epoch_records = q;
	plan->plan_records = p;
	return 0;
}

uint64_t rf_plan_epoch_records(const rf_plan *plan)
{
	return plan->epoch_records;
}

uint64_t rf_plan_epoch_plan_records(const rf_plan *plan)
{
	return plan->plan_records;
}

void rf_plan_epoch_tail(const rf_plan *plan, rf_plan_tail *out)
{
	*out = plan->tail;
}

size_t rf_plan_unit_count(const rf_plan *plan)
{
	return plan->unit_count;
}

const rf_unit *rf_plan_unit(const rf_plan *plan, size_t i)
{
	return i < plan->unit_count ? &plan->units[i] : NULL;
}

/* ------------------------------------------------------------- lookups */

/* The piece holding local stream position q (< E). */
const plan_piece *rf_plan_piece_at_stream(const rf_plan *plan, uint64_t q)
{
	uint32_t lo = 0, hi = plan->npieces;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (plan->pieces[mid].q <= q)
			lo = mid;
		else
			hi = mid;
	}
	return &plan->pieces[lo];
}

/* The piece holding local plan position p (< P). */
static const plan_piece *plan_piece_at_plan(const rf_plan *plan, uint64_t p)
{
	uint32_t lo = 0, hi = plan->npieces;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (plan->pieces[mid].p <= p)
			lo = mid;
		else
			hi = mid;
	}
	return &plan->pieces[lo];
}

uint64_t rf_plan_stream_global(const rf_plan *plan, uint64_t stream_pos)
{
	if (stream_pos >= plan->epoch_records)
		return UINT64_MAX;
	const plan_piece *pc = rf_plan_piece_at_stream(plan, stream_pos);
	return pc->x + (stream_pos - pc->q);
}

uint64_t rf_plan_stream_to_plan(const rf_plan *plan, uint64_t stream_pos)
{
	if (stream_pos >= plan->epoch_records)
		return plan->plan_records;
	if (plan->mix) {
		size_t u;
		uint32_t r;
		plan->mixops->locate(plan, stream_pos, &u, &r);
		return plan->units[u].first_plan_record + r;
	}
	const plan_piece *pc = rf_plan_piece_at_stream(plan, stream_pos);
	uint64_t g = rf_plan_global_to_plan(plan, pc->x + (stream_pos - pc->q));
	return pc->p + (g - pc->g);
}

void rf_plan_locate(const rf_plan *plan, uint64_t stream_pos, size_t *unit, uint32_t *record)
{
	*unit = plan->unit_count;
	*record = 0;
	if (stream_pos >= plan->epoch_records)
		return;
	if (plan->mix) {
		plan->mixops->locate(plan, stream_pos, unit, record);
		return;
	}
	const plan_piece *pc = rf_plan_piece_at_stream(plan, stream_pos);
	uint64_t p = pc->p + (rf_plan_global_to_plan(plan, pc->x + (stream_pos - pc->q)) - pc->g);
	size_t lo = pc->u0, hi = pc->u1; /* last unit of the piece starting at or before p */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (plan->units[mid].first_plan_record <= p)
			lo = mid;
		else
			hi = mid;
	}
	*unit = lo;
	*record = (uint32_t)(p - plan->units[lo].first_plan_record);
}

uint64_t rf_plan_resident_stream(const rf_plan *plan, uint64_t plan_pos)
{
	if (plan_pos >= plan->plan_records)
		return plan->epoch_records;
	if (plan->mix)
		return plan->mixops->resident_stream(plan, plan_pos);
	const plan_piece *pc = plan_piece_at_plan(plan, plan_pos);
	uint64_t g = pc->g + (plan_pos - pc->p);
	if (g >= pc->wb)
		return pc->q + pc->len;
	uint64_t full = g / plan->window * plan->window; /* windows below are complete */
	return pc->q + (full > pc->x ? RF_MIN(full - pc->x, pc->len) : 0);
}

uint64_t rf_plan_need(const rf_plan *plan, uint64_t stream_pos)
{
	if (stream_pos == 0)
		return 0;
	if (stream_pos > plan->epoch_records)
		return plan->plan_records;
	if (plan->mix)
		return plan->mixops->need(plan, stream_pos);
	const plan_piece *pc = rf_plan_piece_at_stream(plan, stream_pos - 1);
	uint64_t x = pc->x + (stream_pos - 1 - pc->q), w = plan->window;
	uint64_t we = RF_MIN(plan->total_records, (x / w + 1) * w);
	return pc->p + RF_MIN(pc->plen, we - pc->g);
}

uint64_t rf_plan_window_end(const rf_plan *plan, uint64_t plan_pos)
{
	if (plan_pos >= plan->plan_records)
		return plan->plan_records;
	if (plan->mix)
		return plan->mixops->window_end(plan, plan_pos);
	const plan_piece *pc = plan_piece_at_plan(plan, plan_pos);
	uint64_t g = RF_MAX(pc->g + (plan_pos - pc->p), pc->wa), w = plan->window;
	uint64_t we = RF_MIN(plan->total_records, (g / w + 1) * w);
	return pc->p + RF_MIN(pc->plen, we - pc->g);
}

size_t rf_plan_first_unit_needed(const rf_plan *plan, uint64_t stream_pos)
{
	if (plan->mix) { /* a mixture's release positions are not in unit order */
		size_t u = 0;
		while (u < plan->unit_count && plan->units[u].release_pos <= stream_pos)
			u++;
		return u;
	}
	size_t lo = 0, hi = plan->unit_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (plan->units[mid].release_pos <= stream_pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
