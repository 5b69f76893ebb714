/* state.c - the consumer's position on disk: encoding, validation, the
 * comparison with a resuming configuration and the elastic re-split (see
 * state.h). */
#include "state.h"
#include "rng.h"
#include "util.h"

#include <stdlib.h>

enum { FLAG_SHUFFLE = 1, FLAG_PAD = 2, FLAG_SEQ = 4 };

void rf_state_identity(const rf_plan *plan, rf_position *out)
{
	const rf_plan_params *pp = rf_plan_params_of(plan);
	out->dataset_hash = rf_plan_dataset_hash(plan);
	out->dataset_records = rf_plan_total_records(plan);
	out->dataset_shards = rf_plan_shard_count(plan);
	out->window = pp->shuffle && pp->shuffle_window > 1 ? pp->shuffle_window : 1;
	out->seed = pp->seed;
	out->shuffle = pp->shuffle;
	out->pad = pp->pad;
	out->world = pp->world;
	out->version = RF_STATE_VERSION;
	out->names_hash = rf_mix64(0x4e414d45ull);   /* "NAME" */
	out->content_hash = rf_mix64(0x434f4e54ull); /* "CONT" */
}

static uint64_t hash_str(uint64_t h, const char *s, size_t n)
{
	return rf_mix64(rf_fnv1a(h ^ n, s, n));
}

void rf_state_content_add(rf_position *p, const char *name, const char *format,
                          const rf_shard_index *ix)
{
	size_t end = rf_url_path_len(name);
	while (end > 0 && name[end - 1] == '/')
		end--;
	size_t start = end;
	while (start > 0 && name[start - 1] != '/')
		start--;
	p->names_hash = hash_str(p->names_hash, name + start, end - start);
	uint64_t h = hash_str(p->content_hash, format, strlen(format));
	h = rf_mix64(h ^ ix->file_bytes);
	h = rf_mix64(h ^ ix->records);
	h = rf_mix64(h ^ ix->blocks);
	for (uint32_t b = 0; b < ix->blocks; b++) {
		const rf_block_info *u = &ix->block[b];
		h = rf_mix64(h ^ u->offset);
		h = rf_mix64(h ^ ((uint64_t)u->compressed_bytes << 32 | u->decoded_bytes));
		h = rf_mix64(h ^ u->records);
	}
	const char *meta = ix->metadata ? ix->metadata : "";
	p->content_hash = hash_str(h, meta, strlen(meta));
}

void rf_position_clear(rf_position *p)
{
	free(p->segs);
	p->segs = NULL;
	p->nsegs = 0;
	p->has_seq = false;
}

static bool state_v2(const rf_position *p)
{
	return p->version == 2;
}

static size_t state_head(const rf_position *p)
{
	return state_v2(p) ? RF_STATE_V2_HEAD : RF_STATE_HEAD;
}

size_t rf_state_bytes(const rf_position *p)
{
	return state_head(p) + 4 + 16u * (p->has_seq ? p->nsegs : 0);
}

int rf_state_encode(const rf_position *p, void *buf, size_t cap)
{
	size_t n = rf_state_bytes(p);
	uint32_t nsegs = p->has_seq ? p->nsegs : 0;
	if (cap < n || nsegs > RF_PLAN_SEGMENTS_MAX)
		return cap < n ? -ENOSPC : -E2BIG;
	uint8_t *b = buf;
	size_t head = state_head(p);
	memcpy(b, state_v2(p) ? "RFSTATE2" : RF_STATE_MAGIC, 8);
	rf_store_le32(b + 8, state_v2(p) ? 2 : RF_STATE_VERSION);
	rf_store_le32(b + 12, (p->shuffle ? FLAG_SHUFFLE : 0) | (p->pad ? FLAG_PAD : 0) |
	                          (p->has_seq ? FLAG_SEQ : 0));
	rf_store_le64(b + 16, p->dataset_hash);
	rf_store_le64(b + 24, p->dataset_records);
	rf_store_le32(b + 32, p->dataset_shards);
	rf_store_le32(b + 36, p->window);
	rf_store_le64(b + 40, p->seed);
	rf_store_le32(b + 48, p->world);
	rf_store_le32(b + 52, nsegs);
	rf_store_le64(b + 56, p->epoch);
	rf_store_le64(b + 64, p->record);
	rf_store_le64(b + 72, p->batch);
	rf_store_le64(b + 80, p->skipped);
	rf_store_le32(b + 88, p->skipped_blocks);
	if (!state_v2(p)) {
		rf_store_le64(b + 92, p->names_hash);
		rf_store_le64(b + 100, p->content_hash);
	}
	for (uint32_t i = 0; i < nsegs; i++) {
		rf_store_le64(b + head + 16 * i, p->segs[i].start);
		rf_store_le64(b + head + 16 * i + 8, p->segs[i].records);
	}
	rf_store_le32(b + n - 4, rf_state_crc32c(b, n - 4));
	return (int)n;
}

static int state_decode_head(const uint8_t *b, size_t len, rf_position *q, rf_error *err)
{
	if (!b || len < RF_STATE_V2_BYTES_MIN || len > RF_STATE_BYTES_MAX)
		return rf_fail(err, -EINVAL,
		               "resume state: %zu bytes, a ringfeed state has %d to %d", len,
		               RF_STATE_V2_BYTES_MIN, RF_STATE_BYTES_MAX);
	if (memcmp(b, "RFSTATE1", 8) == 0)
		return rf_fail(
		    err, -EINVAL,
		    "resume state: version 1 (saved before equal rank slices and elastic "
		    "resume changed the stream); this build reads version %u: start the "
		    "epoch afresh",
		    RF_STATE_VERSION);
	bool v2 = memcmp(b, "RFSTATE2", 8) == 0;
	if (!v2 && memcmp(b, RF_STATE_MAGIC, 8) != 0)
		return rf_fail(err, -EINVAL, "resume state: not a ringfeed state (magic is not %s)",
		               RF_STATE_MAGIC);
	uint32_t version = rf_load_le32(b + 8);
	if (version != (v2 ? 2 : RF_STATE_VERSION))
		return rf_fail(err, -EINVAL,
		               "resume state: version %u under magic %.8s, this build reads "
		               "version %u (and 2)",
		               version, (const char *)b, RF_STATE_VERSION);
	size_t head = v2 ? RF_STATE_V2_HEAD : RF_STATE_HEAD;
	uint32_t nsegs = rf_load_le32(b + 52);
	if (nsegs > RF_PLAN_SEGMENTS_MAX || len != head + 4 + 16ull * nsegs)
		return rf_fail(err, -EINVAL,
		               "resume state: %zu bytes do not hold its %u segments (at most %u)",
		               len, nsegs, RF_PLAN_SEGMENTS_MAX);
	uint32_t want = rf_load_le32(b + len - 4), got = rf_state_crc32c(b, len - 4);
	if (want != got)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: checksum mismatch (stored %08x, computed %08x)", want,
		               got);
	uint32_t flags = rf_load_le32(b + 12);
	*q = (rf_position){.shuffle = flags & FLAG_SHUFFLE,
	                   .pad = flags & FLAG_PAD,
	                   .has_seq = flags & FLAG_SEQ,
	                   .dataset_hash = rf_load_le64(b + 16),
	                   .dataset_records = rf_load_le64(b + 24),
	                   .dataset_shards = rf_load_le32(b + 32),
	                   .window = rf_load_le32(b + 36),
	                   .seed = rf_load_le64(b + 40),
	                   .world = rf_load_le32(b + 48),
	                   .nsegs = nsegs,
	                   .epoch = rf_load_le64(b + 56),
	                   .record = rf_load_le64(b + 64),
	                   .batch = rf_load_le64(b + 72),
	                   .skipped = rf_load_le64(b + 80),
	                   .skipped_blocks = rf_load_le32(b + 88),
	                   .version = version,
	                   .names_hash = v2 ? 0 : rf_load_le64(b + 92),
	                   .content_hash = v2 ? 0 : rf_load_le64(b + 100)};
	if ((flags & ~7u) || (nsegs && !q->has_seq) || q->world == 0 || q->window == 0)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: flags %#x, world %u, window %u, %u segments do not "
		               "make a state",
		               flags, q->world, q->window, nsegs);
	if (q->batch > q->record)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: %llu batches consumed but only %llu records",
		               (unsigned long long)q->batch, (unsigned long long)q->record);
	return 0;
}

int rf_state_decode(const void *buf, size_t len, rf_position *p, rf_error *err)
{
	rf_position q;
	RF_TRY(state_decode_head(buf, len, &q, err));
	const uint8_t *b = buf;
	size_t head = state_head(&q);
	uint64_t total = 0;
	if (q.nsegs > 0 && !(q.segs = calloc(q.nsegs, sizeof(*q.segs))))
		return rf_fail(err, -ENOMEM, "resume state: out of memory");
	for (uint32_t i = 0; i < q.nsegs; i++) {
		rf_segment s = {rf_load_le64(b + head + 16 * i),
		                rf_load_le64(b + head + 16 * i + 8)};
		if (s.start > q.dataset_records || s.records > q.dataset_records - s.start ||
		    s.records > q.dataset_records - total) {
			free(q.segs);
			return rf_fail(err, RF_E_CORRUPT,
			               "resume state: segment %u [%llu, +%llu) lies outside the "
			               "epoch's %llu records",
			               i, (unsigned long long)s.start,
			               (unsigned long long)s.records,
			               (unsigned long long)q.dataset_records);
		}
		total += s.records;
		q.segs[i] = s;
	}
	*p = q;
	return 0;
}

int rf_state_check(const rf_position *s, const rf_position *n, rf_error *err)
{
	if (s->dataset_hash != n->dataset_hash || s->dataset_records != n->dataset_records ||
	    s->dataset_shards != n->dataset_shards)
		return rf_fail(
		    err, -EINVAL,
		    "resume state is for another dataset: saved %u shards, %llu records, "
		    "shape %016llx; now %u shards, %llu records, shape %016llx (a shard "
		    "was added, removed, reordered or rewritten)",
		    s->dataset_shards, (unsigned long long)s->dataset_records,
		    (unsigned long long)s->dataset_hash, n->dataset_shards,
		    (unsigned long long)n->dataset_records, (unsigned long long)n->dataset_hash);
	/* a version 2 state names no content: its shape is all there is */
	if (!state_v2(s) && s->names_hash != n->names_hash)
		return rf_fail(err, -EINVAL,
		               "resume state is for another dataset: the same shape (%u shards, "
		               "%llu records) but other shard names (names %016llx saved, %016llx "
		               "now: a shard was renamed, or another dataset given)",
		               n->dataset_shards, (unsigned long long)n->dataset_records,
		               (unsigned long long)s->names_hash,
		               (unsigned long long)n->names_hash);
	if (!state_v2(s) && s->content_hash != n->content_hash)
		return rf_fail(err, -EINVAL,
		               "resume state is for another dataset: the same shape (%u shards, "
		               "%llu records) and shard names but other contents (layouts %016llx "
		               "saved, %016llx now: a shard's bytes, formats, units or metadata "
		               "differ; a shard was rewritten)",
		               n->dataset_shards, (unsigned long long)n->dataset_records,
		               (unsigned long long)s->content_hash,
		               (unsigned long long)n->content_hash);
	if (s->seed != n->seed)
		return rf_fail(err, -EINVAL, "resume state: seed differs: saved %llu, now %llu",
		               (unsigned long long)s->seed, (unsigned long long)n->seed);
	if (s->shuffle != n->shuffle)
		return rf_fail(err, -EINVAL, "resume state: shuffle differs: saved %d, now %d",
		               s->shuffle, n->shuffle);
	if (s->window != n->window)
		return rf_fail(err, -EINVAL,
		               "resume state: shuffle_window differs: saved %u, now %u "
		               "(1: no record shuffle)",
		               s->window, n->window);
	return 0;
}

/* Appends the sequence range [from, from + count) of the saved sequence
 * (positions past its length wrap: the pad policy) as global segments. */
static int remaining_add(const rf_position *s, uint64_t length, uint64_t from, uint64_t count,
                         rf_segment *out, uint32_t *n, rf_error *err)
{
	rf_segment whole = {0, s->dataset_records};
	const rf_segment *seq = s->has_seq ? s->segs : &whole;
	uint32_t nseq = s->has_seq ? s->nsegs : 1;
	uint32_t j = 0;
	uint64_t jstart = 0, at = from % length;
	while (count > 0) {
		while (j < nseq && jstart + seq[j].records <= at)
			jstart += seq[j++].records;
		if (j == nseq) { /* wrapped: back to the sequence's start */
			j = 0, jstart = 0, at = 0;
			continue;
		}
		uint64_t off = at - jstart, take = RF_MIN(count, seq[j].records - off);
		uint64_t x = seq[j].start + off;
		if (*n > 0 && out[*n - 1].start + out[*n - 1].records == x) {
			out[*n - 1].records += take;
		} else {
			if (*n == RF_PLAN_SEGMENTS_MAX)
				return rf_fail(
				    err, -E2BIG,
				    "resume state: what is left of epoch %llu is more than "
				    "%u stream segments (too many resizes within one epoch); "
				    "resume on world %u first, or at the epoch's end",
				    (unsigned long long)s->epoch, RF_PLAN_SEGMENTS_MAX, s->world);
			out[(*n)++] = (rf_segment){x, take};
		}
		at += take;
		count -= take;
	}
	return 0;
}

int rf_state_remaining(const rf_position *s, rf_segment **segs, uint32_t *nsegs, rf_error *err)
{
	*segs = NULL;
	*nsegs = 0;
	uint64_t length = 0;
	if (s->has_seq)
		for (uint32_t i = 0; i < s->nsegs; i++)
			length += s->segs[i].records;
	else
		length = s->dataset_records;
	uint64_t w = s->world;
	uint64_t slice = length == 0 ? 0 : s->pad ? (length + w - 1) / w : length / w;
	if (s->record > slice)
		return rf_fail(err, -EINVAL,
		               "resume state is at record %llu of a slice of %llu (world %u)",
		               (unsigned long long)s->record, (unsigned long long)slice, s->world);
	if (s->record == slice)
		return 0;
	rf_segment *out = calloc(RF_PLAN_SEGMENTS_MAX, sizeof(*out));
	if (!out)
		return rf_fail(err, -ENOMEM, "resume state: out of memory");
	uint32_t n = 0;
	for (uint64_t r = 0; r < w; r++) {
		int rc = remaining_add(s, length, r * slice + s->record, slice - s->record, out, &n,
		                       err);
		if (rc < 0) {
			free(out);
			return rc;
		}
	}
	*segs = out;
	*nsegs = n;
	return 0;
}
