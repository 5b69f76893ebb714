/* state.c - the consumer's position on disk: encoding, validation, the
 * comparison with a resuming configuration and the elastic re-split (see
 * state.h). */
#include "state.h"
#include "mix_rebase.h"
#include "rng.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

enum { FLAG_SHUFFLE = 1, FLAG_PAD = 2, FLAG_SEQ = 4, FLAG_MIX = 8, FLAG_REBASE = 16 };

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
	const uint64_t *src = NULL;
	out->mix_sources =
	    rf_plan_mix_identity(plan, &src, &out->mix_samples, &out->mix_stop_first);
	out->mix_src = (uint64_t *)src; /* the plan's: read-only, not owned */
	out->mix_rb = (struct rf_mix_rebase *)rf_plan_mix_rebase(plan);
	out->mix_owned = false;
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
	if (p->mix_owned) {
		free(p->mix_src);
		rf_mix_rebase_free(p->mix_rb);
	}
	p->mix_src = NULL;
	p->mix_rb = NULL;
	p->mix_sources = 0;
	p->mix_owned = false;
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

static size_t state_mix_bytes(uint32_t sources)
{
	return sources ? 16 + 24 * (size_t)sources : 0;
}

size_t rf_state_bytes(const rf_position *p)
{
	bool mix = !state_v2(p) && p->mix_sources > 0;
	return state_head(p) + 4 + 16u * (p->has_seq ? p->nsegs : 0) +
	       (mix ? state_mix_bytes(p->mix_sources) + rf_mix_rebase_bytes(p->mix_rb) : 0);
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
	bool mix = !state_v2(p) && p->mix_sources > 0;
	rf_store_le32(b + 12, (p->shuffle ? FLAG_SHUFFLE : 0) | (p->pad ? FLAG_PAD : 0) |
	                          (p->has_seq ? FLAG_SEQ : 0) | (mix ? FLAG_MIX : 0) |
	                          (mix && p->mix_rb ? FLAG_REBASE : 0));
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
	if (mix) {
		uint8_t *m = b + head + 16 * (size_t)nsegs;
		rf_store_le32(m, p->mix_sources);
		rf_store_le32(m + 4, p->mix_stop_first);
		rf_store_le64(m + 8, p->mix_samples);
		for (size_t i = 0; i < 3 * (size_t)p->mix_sources; i++)
			rf_store_le64(m + 16 + 8 * i, p->mix_src[i]);
		if (p->mix_rb)
			rf_mix_rebase_encode(p->mix_rb, m + state_mix_bytes(p->mix_sources));
	}
	rf_store_le32(b + n - 4, rf_state_crc32c(b, n - 4));
	return (int)n;
}

/* The length, magic and version of a state: v2 (the older head) or the
 * current one. */
static int state_check_version(const uint8_t *b, size_t len, bool *v2_out, uint32_t *version_out,
                               rf_error *err)
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
	*v2_out = v2;
	*version_out = version;
	return 0;
}

/* The mixture part at b + at (sources' counts; a weight change at rb_at,
 * rb_len bytes, when rebase), into q (checked against its head). */
static int state_decode_mix(const uint8_t *b, size_t at, size_t rb_at, size_t rb_len,
                            uint32_t sources, bool rebase, rf_position *q, rf_error *err)
{
	const uint8_t *m = b + at;
	q->mix_sources = sources;
	q->mix_stop_first = rf_load_le32(m + 4) != 0;
	q->mix_samples = rf_load_le64(m + 8);
	if (rf_load_le32(m + 4) > 1 || q->mix_samples != q->dataset_records)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: a mixture of %llu samples an epoch in a state "
		               "of %llu records",
		               (unsigned long long)q->mix_samples,
		               (unsigned long long)q->dataset_records);
	if (!(q->mix_src = calloc(3 * (size_t)sources, sizeof(uint64_t))))
		return rf_fail(err, -ENOMEM, "resume state: out of memory");
	q->mix_owned = true;
	for (size_t i = 0; i < 3 * (size_t)sources; i++)
		q->mix_src[i] = rf_load_le64(m + 16 + 8 * i);
	if (rebase) {
		int rc = rf_mix_rebase_decode(b + rb_at, rb_len, sources, q->mix_samples, q->epoch,
		                              &q->mix_rb, err);
		if (rc < 0) {
			rf_position_clear(q);
			return rc;
		}
	}
	return 0;
}

static int state_decode_head(const uint8_t *b, size_t len, rf_position *q, rf_error *err)
{
	bool v2 = false;
	uint32_t version = 0;
	RF_TRY(state_check_version(b, len, &v2, &version, err));
	size_t head = v2 ? RF_STATE_V2_HEAD : RF_STATE_HEAD;
	uint32_t nsegs = rf_load_le32(b + 52);
	bool mix = !v2 && (rf_load_le32(b + 12) & FLAG_MIX);
	uint32_t sources = 0;
	size_t at = head + 16ull * RF_MIN(nsegs, RF_PLAN_SEGMENTS_MAX);
	if (mix && len >= at + 16 + 4)
		sources = rf_load_le32(b + at);
	if (sources > 4096)
		sources = 0; /* no mixture part: the length or the checksum says what is wrong */
	bool rebase = mix && (rf_load_le32(b + 12) & FLAG_REBASE);
	size_t rb_at = at + state_mix_bytes(sources), rb_len = 0;
	if (rebase && sources > 0 && len >= rb_at + 4) {
		uint32_t n = rf_mix_rebase_peek(b + rb_at, len - rb_at - 4);
		rb_len = rf_mix_rebase_bytes_for(sources, RF_MIN(n, RF_MIX_REBASE_RANGES_MAX + 1));
	}
	if (nsegs > RF_PLAN_SEGMENTS_MAX ||
	    len != head + 4 + 16ull * nsegs + state_mix_bytes(sources) + rb_len)
		return rf_fail(err, -EINVAL,
		               "resume state: %zu bytes do not hold its %u segments (at most %u)%s",
		               len, nsegs, RF_PLAN_SEGMENTS_MAX, mix ? " and its mixture" : "");
	uint32_t want = rf_load_le32(b + len - 4), got = rf_state_crc32c(b, len - 4);
	if (want != got)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: checksum mismatch (stored %08x, computed %08x)", want,
		               got);
	if (mix && sources == 0)
		return rf_fail(err, RF_E_CORRUPT, "resume state: a mixture of 0 sources");
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
	if ((flags & ~31u) || (v2 && (flags & FLAG_MIX)) || (nsegs && !q->has_seq) ||
	    ((flags & FLAG_REBASE) && !(flags & FLAG_MIX)) || q->world == 0 || q->window == 0)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: flags %#x, world %u, window %u, %u segments do not "
		               "make a state",
		               flags, q->world, q->window, nsegs);
	if (q->batch > q->record)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: %llu batches consumed but only %llu records",
		               (unsigned long long)q->batch, (unsigned long long)q->record);
	return mix ? state_decode_mix(b, at, rb_at, rb_len, sources, rebase, q, err) : 0;
}

int rf_state_decode(const void *buf, size_t len, rf_position *p, rf_error *err)
{
	rf_position q;
	RF_TRY(state_decode_head(buf, len, &q, err));
	const uint8_t *b = buf;
	size_t head = state_head(&q);
	uint64_t total = 0;
	if (q.nsegs > 0 && !(q.segs = calloc(q.nsegs, sizeof(*q.segs)))) {
		rf_position_clear(&q);
		return rf_fail(err, -ENOMEM, "resume state: out of memory");
	}
	for (uint32_t i = 0; i < q.nsegs; i++) {
		rf_segment s = {rf_load_le64(b + head + 16 * i),
		                rf_load_le64(b + head + 16 * i + 8)};
		if (s.start > q.dataset_records || s.records > q.dataset_records - s.start ||
		    s.records > q.dataset_records - total) {
			rf_position_clear(&q);
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

static void mix_weight_str(uint64_t w, char *out, size_t cap)
{
	snprintf(out, cap, "%llu.%06llu", (unsigned long long)(w / 1000000),
	         (unsigned long long)(w % 1000000));
	size_t n = strlen(out);
	while (n > 0 && out[n - 1] == '0')
		out[--n] = '\0';
	if (n > 0 && out[n - 1] == '.')
		out[--n] = '\0';
}

/* "0.5,0.3,0.2" (the first 8, then "...") */
static void mix_weights_str(const rf_position *p, char *out, size_t cap)
{
	size_t at = 0;
	out[0] = '\0';
	for (uint32_t i = 0; i < p->mix_sources && at + 16 < cap; i++) {
		char w[32];
		mix_weight_str(p->mix_src[3 * i + 2], w, sizeof(w));
		at +=
		    (size_t)snprintf(out + at, cap - at, "%s%s", i ? "," : "", i == 8 ? "..." : w);
		if (i == 8)
			break;
	}
}

/* Both mixtures' weights name the same shares. */
static bool mix_same_weights(const rf_position *s, const rf_position *n)
{
	/* weights are relative: (0.5, 0.5) is (1, 1) */
	unsigned __int128 ss = 0, ns = 0;
	for (uint32_t i = 0; i < s->mix_sources; i++) {
		ss += s->mix_src[3 * i + 2];
		ns += n->mix_src[3 * i + 2];
	}
	bool same = true;
	for (uint32_t i = 0; i < s->mix_sources; i++)
		same &= (unsigned __int128)s->mix_src[3 * i + 2] * ns ==
		        (unsigned __int128)n->mix_src[3 * i + 2] * ss;
	return same;
}

bool rf_state_mix_reweighted(const rf_position *s, const rf_position *n)
{
	if (state_v2(s) || !s->mix_sources || s->mix_sources != n->mix_sources)
		return false;
	for (uint32_t i = 0; i < s->mix_sources; i++)
		if (s->mix_src[3 * i] != n->mix_src[3 * i] ||
		    s->mix_src[3 * i + 1] != n->mix_src[3 * i + 1])
			return false;
	return !mix_same_weights(s, n);
}

void rf_state_mix_weights_str(const rf_position *p, char *out, size_t cap)
{
	mix_weights_str(p, out, cap);
}

/* A mixture's state against this mixture: what differs, by name (with
 * `reweight`, new weights are taken, and with stop_first so is the epoch's
 * size they give). */
static int mix_check(const rf_position *s, const rf_position *n, bool reweight, rf_error *err)
{
	if (!s->mix_sources != !n->mix_sources)
		return rf_fail(err, -EINVAL, "resume state is for %s, this is %s",
		               s->mix_sources ? "a mixture" : "one dataset (no mixture)",
		               n->mix_sources ? "a mixture" : "one dataset (no mixture)");
	if (!s->mix_sources)
		return 0;
	if (s->mix_sources != n->mix_sources)
		return rf_fail(err, -EINVAL,
		               "resume state is for a mixture of %u sources, this one has %u",
		               s->mix_sources, n->mix_sources);
	for (uint32_t i = 0; i < s->mix_sources; i++) {
		const uint64_t *a = s->mix_src + 3 * i, *b = n->mix_src + 3 * i;
		if (a[0] != b[0] || a[1] != b[1])
			return rf_fail(
			    err, -EINVAL,
			    "resume state: mixture source %u is another dataset: saved %llu "
			    "records a pass (shape %016llx), now %llu (shape %016llx)",
			    i + 1, (unsigned long long)a[1], (unsigned long long)a[0],
			    (unsigned long long)b[1], (unsigned long long)b[0]);
	}
	if (!reweight && !mix_same_weights(s, n)) {
		char x[160], y[160];
		mix_weights_str(s, x, sizeof(x));
		mix_weights_str(n, y, sizeof(y));
		return rf_fail(err, -EINVAL,
		               "resume state: the mixture's weights differ: saved %s, now %s", x,
		               y);
	}
	if (s->mix_stop_first != n->mix_stop_first)
		return rf_fail(err, -EINVAL, "resume state: mix_stop differs: saved %s, now %s",
		               s->mix_stop_first ? "first_exhausted" : "none",
		               n->mix_stop_first ? "first_exhausted" : "none");
	if (s->mix_samples != n->mix_samples && !(reweight && s->mix_stop_first))
		return rf_fail(
		    err, -EINVAL,
		    "resume state: samples per mixture epoch differ: saved %llu, now %llu "
		    "(mix_samples)",
		    (unsigned long long)s->mix_samples, (unsigned long long)n->mix_samples);
	return 0;
}

static int state_check(const rf_position *s, const rf_position *n, bool reweight, rf_error *err)
{
	if (!state_v2(s))
		RF_TRY(mix_check(s, n, reweight, err));
	/* with stop_first the weights set the epoch's size: a change may change it */
	bool size_free = reweight && s->mix_stop_first;
	if (s->dataset_hash != n->dataset_hash ||
	    (s->dataset_records != n->dataset_records && !size_free) ||
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

int rf_state_check(const rf_position *s, const rf_position *n, rf_error *err)
{
	return state_check(s, n, false, err);
}

int rf_state_check_reweight(const rf_position *s, const rf_position *n, rf_error *err)
{
	return state_check(s, n, true, err);
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

/* What every rank of s's world had left of its slice (or, `taken`, what
 * it had taken), as global segments. */
static int state_parts(const rf_position *s, bool taken, rf_segment **segs, uint32_t *nsegs,
                       rf_error *err)
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
	if (taken ? s->record == 0 : s->record == slice)
		return 0;
	rf_segment *out = calloc(RF_PLAN_SEGMENTS_MAX, sizeof(*out));
	if (!out)
		return rf_fail(err, -ENOMEM, "resume state: out of memory");
	uint32_t n = 0;
	for (uint64_t r = 0; r < w; r++) {
		int rc = taken ? remaining_add(s, length, r * slice, s->record, out, &n, err)
		               : remaining_add(s, length, r * slice + s->record, slice - s->record,
		                               out, &n, err);
		if (rc < 0) {
			free(out);
			return rc;
		}
	}
	*segs = out;
	*nsegs = n;
	return 0;
}

int rf_state_remaining(const rf_position *s, rf_segment **segs, uint32_t *nsegs, rf_error *err)
{
	return state_parts(s, false, segs, nsegs, err);
}

int rf_state_taken(const rf_position *s, rf_segment **segs, uint32_t *nsegs, rf_error *err)
{
	return state_parts(s, true, segs, nsegs, err);
}
