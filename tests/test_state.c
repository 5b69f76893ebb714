/* test_state.c - the saved position: round trip (with and without a
 * re-split sequence), every corruption rejected with a message saying which
 * check failed, the resume check naming the setting that differs (saved and
 * new value), and the elastic re-split's remaining sequence. */
#include "mix.h"
#include "mix_rebase.h"
#include "state.h"
#include "testutil.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static rf_position position(uint64_t epoch, uint64_t record, uint64_t batch)
{
	return (rf_position){.dataset_hash = 0x0123456789abcdefull,
	                     .dataset_records = 1000,
	                     .dataset_shards = 7,
	                     .window = 16,
	                     .seed = 42,
	                     .shuffle = true,
	                     .world = 4,
	                     .epoch = epoch,
	                     .record = record,
	                     .batch = batch,
	                     .skipped = 3,
	                     .skipped_blocks = 1,
	                     .names_hash = 0x1111222233334444ull,
	                     .content_hash = 0x5555666677778888ull};
}

static void assert_same(const rf_position *a, const rf_position *b)
{
	assert_int_equal(a->dataset_hash, b->dataset_hash);
	assert_int_equal(a->dataset_records, b->dataset_records);
	assert_int_equal(a->dataset_shards, b->dataset_shards);
	assert_int_equal(a->window, b->window);
	assert_int_equal(a->seed, b->seed);
	assert_int_equal(a->shuffle, b->shuffle);
	assert_int_equal(a->pad, b->pad);
	assert_int_equal(a->has_seq, b->has_seq);
	assert_int_equal(a->world, b->world);
	assert_int_equal(a->epoch, b->epoch);
	assert_int_equal(a->record, b->record);
	assert_int_equal(a->batch, b->batch);
	assert_int_equal(a->skipped, b->skipped);
	assert_int_equal(a->skipped_blocks, b->skipped_blocks);
	assert_int_equal(a->names_hash, b->names_hash);
	assert_int_equal(a->content_hash, b->content_hash);
	assert_int_equal(a->has_seq ? a->nsegs : 0, b->has_seq ? b->nsegs : 0);
	for (uint32_t i = 0; a->has_seq && i < a->nsegs; i++) {
		assert_int_equal(a->segs[i].start, b->segs[i].start);
		assert_int_equal(a->segs[i].records, b->segs[i].records);
	}
}

static void test_round_trip(void **state)
{
	(void)state;
	rf_segment segs[3] = {{10, 5}, {100, 50}, {990, 10}};
	rf_position cases[4] = {position(0, 0, 0), position(7, 100, 16), position(1, 64, 8),
	                        position(UINT64_MAX, UINT64_MAX, UINT64_MAX)};
	cases[2].has_seq = true, cases[2].nsegs = 3, cases[2].segs = segs, cases[2].pad = true;
	cases[3].dataset_records = UINT64_MAX;
	for (size_t i = 0; i < 4; i++) {
		uint8_t buf[RF_STATE_BYTES_MIN + 64];
		int n = rf_state_encode(&cases[i], buf, sizeof(buf));
		assert_int_equal(n, (int)rf_state_bytes(&cases[i]));
		assert_int_equal(n, RF_STATE_BYTES_MIN + (i == 2 ? 48 : 0));
		assert_memory_equal(buf, "RFSTATE3", 8);
		rf_position out;
		rf_error err = {0};
		assert_int_equal(rf_state_decode(buf, (size_t)n, &out, &err), 0);
		assert_same(&out, &cases[i]);
		assert_int_equal(out.version, 3);
		rf_position_clear(&out);
	}
	assert_int_equal(RF_STATE_BYTES_MIN, 112);
	uint8_t small[RF_STATE_BYTES_MIN + 47];
	assert_int_equal(rf_state_encode(&cases[2], small, sizeof(small)), -ENOSPC);
}

static void test_crc32c(void **state)
{
	(void)state;
	/* The standard check value of CRC-32C. */
	assert_int_equal(rf_state_crc32c("123456789", 9), 0xe3069283u);
	assert_int_equal(rf_state_crc32c("", 0), 0);
}

static void expect_reject(const uint8_t *buf, size_t len, const char *why)
{
	rf_position out = position(1, 2, 1), before = out;
	rf_error err = {0};
	int rc = rf_state_decode(buf, len, &out, &err);
	assert_true(rc < 0);
	assert_int_equal(err.code, rc);
	if (!strstr(err.msg, why))
		fail_msg("expected '%s' in: %s", why, err.msg);
	assert_memory_equal(&out, &before, sizeof(out)); /* untouched on failure */
}

/* Encodes p with its checksum made right after `edit` changed its bytes. */
static size_t encode_edited(const rf_position *p, uint8_t *buf, size_t at, uint32_t v)
{
	size_t n = (size_t)rf_state_encode(p, buf, RF_STATE_BYTES_MIN + 64);
	rf_store_le32(buf + at, v);
	rf_store_le32(buf + n - 4, rf_state_crc32c(buf, n - 4));
	return n;
}

static void test_corruption(void **state)
{
	(void)state;
	rf_segment segs[1] = {{10, 5}};
	rf_position p = position(2, 40, 4);
	p.has_seq = true, p.nsegs = 1, p.segs = segs;
	enum { N = RF_STATE_BYTES_MIN + 16 };
	uint8_t good[N], buf[N + 64];
	assert_int_equal(rf_state_encode(&p, good, sizeof(good)), N);
	/* Every single-bit flip anywhere is caught, by the check of its field. */
	for (size_t i = 0; i < N; i++)
		for (int bit = 0; bit < 8; bit++) {
			memcpy(buf, good, sizeof(good));
			buf[i] ^= (uint8_t)(1u << bit);
			expect_reject(buf, N,
			              i == 7 && buf[7] == '1'   ? "version 1" /* an older state */
			              : i == 7 && buf[7] == '2' ? "version 3 under magic RFSTATE2"
			              : i < 8                   ? "magic"
			              : i < 12                  ? "version"
			              : i >= 52 && i < 56       ? "segments"
			                                        : "checksum");
		}
	/* Wrong lengths, including none at all. */
	memcpy(buf, good, sizeof(good));
	buf[N] = 0;
	expect_reject(buf, N + 1, "segments");
	expect_reject(buf, N - 1, "segments");
	expect_reject(buf, 0, "0 bytes");
	/* A state of the previous layout (56 bytes, RFSTATE1) says so. */
	uint8_t v1[RF_STATE_BYTES_MIN] = "RFSTATE1";
	expect_reject(v1, sizeof(v1), "version 1");
	expect_reject(NULL, 0, "0 bytes");
	/* A future version with a valid checksum: named as a version problem. */
	expect_reject(buf, encode_edited(&p, buf, 8, 4), "version 4");
	/* Well-formed but impossible: more batches than records, unknown flags,
	 * world 0, a segment past the dataset. */
	rf_position bad = position(1, 3, 4);
	expect_reject(buf, (size_t)rf_state_encode(&bad, buf, sizeof(buf)), "4 batches");
	expect_reject(buf, encode_edited(&p, buf, 12, 0x10), "flags");
	expect_reject(buf, encode_edited(&p, buf, 48, 0), "world 0");
	segs[0] = (rf_segment){995, 6};
	expect_reject(buf, (size_t)rf_state_encode(&p, buf, sizeof(buf)), "segment 0");
}

static void expect_differs(const rf_position *saved, const rf_position *now, const char *what)
{
	rf_error err = {0};
	assert_true(rf_state_check(saved, now, &err) < 0);
	if (!strstr(err.msg, what))
		fail_msg("expected '%s' in: %s", what, err.msg);
}

static void test_check_names_the_difference(void **state)
{
	(void)state;
	rf_position s = position(1, 10, 1), n = s;
	rf_error err = {0};
	/* Another world, rank or batch size is a resume, not a refusal. */
	n.world = 9, n.record = 0, n.batch = 0, n.pad = true;
	assert_int_equal(rf_state_check(&s, &n, &err), 0);
	n = s, n.seed = 43;
	expect_differs(&s, &n, "seed differs: saved 42, now 43");
	n = s, n.shuffle = false;
	expect_differs(&s, &n, "shuffle differs: saved 1, now 0");
	n = s, n.window = 4096;
	expect_differs(&s, &n, "shuffle_window differs: saved 16, now 4096");
	n = s, n.dataset_records = 999;
	expect_differs(&s, &n, "saved 7 shards, 1000 records");
	n = s, n.dataset_shards = 8;
	expect_differs(&s, &n, "now 8 shards, 1000 records");
	n = s, n.dataset_hash ^= 1; /* same counts, a block rewritten */
	expect_differs(&s, &n, "another dataset");
	/* the same shape: other shard names, or other contents, each named */
	n = s, n.names_hash ^= 1;
	expect_differs(&s, &n, "same shape (7 shards, 1000 records) but other shard names");
	n = s, n.content_hash ^= 1;
	expect_differs(&s, &n, "and shard names but other contents");
}

/* A version 2 state (no content identity) is still read, written back as
 * it was, and checked for its shape only. */
static void test_version_2(void **state)
{
	(void)state;
	rf_segment segs[2] = {{10, 5}, {100, 50}};
	rf_position p = position(3, 12, 2);
	p.version = 2, p.has_seq = true, p.nsegs = 2, p.segs = segs;
	uint8_t buf[RF_STATE_BYTES_MIN + 64], again[sizeof(buf)];
	int n = rf_state_encode(&p, buf, sizeof(buf));
	assert_int_equal(n, RF_STATE_V2_BYTES_MIN + 32);
	assert_memory_equal(buf, "RFSTATE2", 8);
	assert_int_equal(rf_load_le32(buf + 8), 2);
	rf_position out;
	rf_error err = {0};
	assert_int_equal(rf_state_decode(buf, (size_t)n, &out, &err), 0);
	assert_int_equal(out.version, 2);
	assert_int_equal(out.names_hash, 0);
	assert_int_equal(out.nsegs, 2);
	assert_int_equal(out.segs[1].start, 100);
	assert_int_equal(rf_state_encode(&out, again, sizeof(again)), n);
	assert_memory_equal(again, buf, (size_t)n);
	rf_position now = position(0, 0, 0); /* any names and contents */
	assert_int_equal(rf_state_check(&out, &now, &err), 0);
	now.dataset_hash ^= 1;
	assert_true(rf_state_check(&out, &now, &err) < 0);
	rf_position_clear(&out);
	/* a version 3 header under the version 2 magic is refused */
	rf_store_le32(buf + 8, 3);
	rf_store_le32(buf + n - 4, rf_state_crc32c(buf, (size_t)n - 4));
	expect_reject(buf, (size_t)n, "version 3 under magic RFSTATE2");
}

/* The content identity: names by their last component (any store or
 * directory, any query), layouts unit by unit. */
static void test_content_identity(void **state)
{
	(void)state;
	rf_block_info blocks[2] = {
	    {.offset = 0, .compressed_bytes = 100, .decoded_bytes = 400, .records = 4},
	    {.offset = 100, .compressed_bytes = 90, .decoded_bytes = 300, .records = 3}};
	rf_shard_index ix = {
	    .file_bytes = 250, .records = 7, .blocks = 2, .metadata = "m", .block = blocks};
	const char *same[] = {"/data/a/shard-0.rfs", "s3://bucket/x/shard-0.rfs?X-Amz-Signature=1",
	                      "https://h/shard-0.rfs#f", "shard-0.rfs", "/data/a/shard-0.rfs/"};
	rf_position first = {0};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		rf_position p = {0};
		rf_state_content_add(&p, same[i], "rfs", &ix);
		if (i == 0)
			first = p;
		assert_int_equal(p.names_hash, first.names_hash);
		assert_int_equal(p.content_hash, first.content_hash);
	}
	rf_position p = {0};
	rf_state_content_add(&p, "/data/a/shard-1.rfs", "rfs", &ix);
	assert_int_not_equal(p.names_hash, first.names_hash);
	assert_int_equal(p.content_hash, first.content_hash);
	/* each field of the layout counts: one unit's stored bytes, the format,
	 * the metadata */
	blocks[1].compressed_bytes = 91;
	p = (rf_position){0};
	rf_state_content_add(&p, same[0], "rfs", &ix);
	assert_int_not_equal(p.content_hash, first.content_hash);
	blocks[1].compressed_bytes = 90;
	p = (rf_position){0};
	rf_state_content_add(&p, same[0], "tar", &ix);
	assert_int_not_equal(p.content_hash, first.content_hash);
	ix.metadata = "n";
	p = (rf_position){0};
	rf_state_content_add(&p, same[0], "rfs", &ix);
	assert_int_not_equal(p.content_hash, first.content_hash);
	/* the order of shards counts */
	rf_position ab = {0}, ba = {0};
	rf_state_content_add(&ab, "a.rfs", "rfs", &ix);
	rf_state_content_add(&ab, "b.rfs", "rfs", &ix);
	rf_state_content_add(&ba, "b.rfs", "rfs", &ix);
	rf_state_content_add(&ba, "a.rfs", "rfs", &ix);
	assert_int_not_equal(ab.names_hash, ba.names_hash);
}

/* The remaining sequence is every record of [0, L) minus what the W ranks
 * took, in order, exactly once. */
static void check_remaining(const rf_position *s, uint64_t length, const uint8_t *taken)
{
	rf_segment *segs = NULL;
	uint32_t n = 0;
	rf_error err = {0};
	assert_int_equal(rf_state_remaining(s, &segs, &n, &err), 0);
	uint8_t *seen = calloc(s->dataset_records, 1);
	uint64_t total = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint64_t k = 0; k < segs[i].records; k++) {
			assert_int_equal(seen[segs[i].start + k], 0);
			seen[segs[i].start + k] = 1;
			total++;
		}
	uint64_t want = 0;
	for (uint64_t g = 0; g < s->dataset_records; g++) {
		want += taken[g] == 0;
		if (seen[g])
			assert_int_equal(taken[g], 0);
	}
	(void)length;
	assert_int_equal(total, want);
	free(seen);
	free(segs);
}

static void test_remaining(void **state)
{
	(void)state;
	/* 1000 records, world 3: slices of 333 (record 999 dropped); after 100
	 * records on every rank the rest is three ranges. */
	rf_position s = position(0, 100, 10);
	s.world = 3;
	uint8_t taken[1000] = {0};
	for (int r = 0; r < 3; r++)
		for (int k = 0; k < 100; k++)
			taken[r * 333 + k] = 1;
	taken[999] = 1; /* the dropped tail is no rank's: it stays dropped */
	check_remaining(&s, 1000, taken);
	rf_segment *segs = NULL;
	uint32_t n = 0;
	rf_error err = {0};
	assert_int_equal(rf_state_remaining(&s, &segs, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(segs[1].start, 433);
	assert_int_equal(segs[1].records, 233);
	free(segs);
	/* At the slice's end nothing is left; past it is refused. */
	s.record = 333;
	assert_int_equal(rf_state_remaining(&s, &segs, &n, &err), 0);
	assert_int_equal(n, 0);
	s.record = 334;
	assert_true(rf_state_remaining(&s, &segs, &n, &err) < 0);
	assert_non_null(strstr(err.msg, "slice of 333"));
	/* A re-split sequence splits again (two resizes in one epoch). */
	rf_segment seq[2] = {{0, 10}, {500, 20}};
	s = position(0, 2, 1);
	s.world = 2, s.has_seq = true, s.nsegs = 2, s.segs = seq;
	memset(taken, 1, sizeof(taken));
	for (int k = 0; k < 10; k++)
		taken[k] = 0;
	for (int k = 0; k < 20; k++)
		taken[500 + k] = 0;
	taken[0] = taken[1] = 1;         /* rank 0: sequence positions 0, 1 */
	taken[500 + 5] = taken[506] = 1; /* rank 1: positions 15, 16 */
	check_remaining(&s, 30, taken);
	/* The bound: RF_PLAN_SEGMENTS_MAX segments of 5 records, split by 3
	 * ranks inside segments (slices of 6826) after one record each, would
	 * need 4098: refused, saying what to do. */
	rf_segment *many = calloc(RF_PLAN_SEGMENTS_MAX, sizeof(*many));
	for (uint32_t i = 0; i < RF_PLAN_SEGMENTS_MAX; i++)
		many[i] = (rf_segment){6ull * i, 5};
	s = position(0, 1, 0);
	s.dataset_records = 6ull * RF_PLAN_SEGMENTS_MAX;
	s.world = 3, s.has_seq = true, s.nsegs = RF_PLAN_SEGMENTS_MAX, s.segs = many;
	assert_int_equal(rf_state_remaining(&s, &segs, &n, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "too many resizes"));
	s.world = 1, s.record = 0; /* one rank from the start: the 4096 segments fit */
	assert_int_equal(rf_state_remaining(&s, &segs, &n, &err), 0);
	assert_int_equal(n, RF_PLAN_SEGMENTS_MAX);
	free(segs);
	free(many);
}

/* A mixture's part: round trip, every bit of it under the checksum, and the
 * check naming what differs (sources, a source's dataset, a weight taken
 * relatively, the stop rule, the epoch's samples, mixture or not). */
static void test_mixture(void **state)
{
	(void)state;
	uint64_t src[9] = {0xa1, 100, 500000, 0xb2, 7, 300000, 0xc3, 40, 200000};
	rf_position p = position(1, 20, 2);
	p.mix_sources = 3, p.mix_src = src, p.mix_samples = 1000;
	uint8_t buf[RF_STATE_BYTES_MIN + 128], flip[sizeof(buf)];
	int n = rf_state_encode(&p, buf, sizeof(buf));
	assert_int_equal(n, RF_STATE_BYTES_MIN + 16 + 72);
	rf_position q;
	rf_error err = {0};
	assert_int_equal(rf_state_decode(buf, (size_t)n, &q, &err), 0);
	assert_int_equal(q.mix_sources, 3);
	assert_true(q.mix_owned);
	assert_memory_equal(q.mix_src, src, sizeof(src));
	assert_int_equal(q.mix_samples, 1000);
	assert_int_equal(rf_state_check(&q, &p, &err), 0);
	rf_position_clear(&q);
	for (size_t i = RF_STATE_HEAD; i < (size_t)n; i++) {
		memcpy(flip, buf, (size_t)n);
		flip[i] ^= 0x10;
		assert_true(rf_state_decode(flip, (size_t)n, &q, &err) < 0);
	}
	rf_position now = p;
	uint64_t other[9];
	memcpy(other, src, sizeof(src));
	now.mix_src = other;
	for (int i = 0; i < 3; i++)
		other[3 * i + 2] *= 2; /* the same weights, relatively */
	assert_int_equal(rf_state_check(&p, &now, &err), 0);
	other[5] = 1000000;
	assert_true(rf_state_check(&p, &now, &err) < 0);
	assert_non_null(strstr(err.msg, "weights differ: saved 0.5,0.3,0.2, now 1,1,0.4"));
	memcpy(other, src, sizeof(src));
	other[4] = 8;
	assert_true(rf_state_check(&p, &now, &err) < 0);
	assert_non_null(strstr(err.msg, "mixture source 2 is another dataset"));
	memcpy(other, src, sizeof(src));
	now.mix_sources = 2;
	assert_true(rf_state_check(&p, &now, &err) < 0);
	assert_non_null(strstr(err.msg, "mixture of 3 sources, this one has 2"));
	now.mix_sources = 3;
	now.mix_stop_first = true;
	assert_true(rf_state_check(&p, &now, &err) < 0);
	assert_non_null(strstr(err.msg, "mix_stop differs"));
	now.mix_stop_first = false;
	now.mix_samples = 999;
	assert_true(rf_state_check(&p, &now, &err) < 0);
	assert_non_null(strstr(err.msg, "mix_samples"));
	now.mix_sources = 0;
	assert_true(rf_state_check(&p, &now, &err) < 0);
	assert_non_null(strstr(err.msg, "this is one dataset"));
}

/* A mixture whose weights changed at a resume: the change rides in the
 * state (round trip, every byte under the checksum or its own checks), and
 * a state of the same sources with other weights is a re-weighting, taken
 * by rf_state_check_reweight and named by rf_state_check. */
static void test_mixture_reweighted(void **state)
{
	(void)state;
	uint64_t src[6] = {0xa1, 100, 500000, 0xb2, 7, 500000};
	rf_position p = position(1, 20, 2);
	p.mix_sources = 2, p.mix_src = src, p.mix_samples = 1000;
	rf_mix *old = NULL;
	rf_error err = {0};
	const uint64_t w[2] = {500000, 500000};
	assert_int_equal(rf_mix_new(&old, 2, w, 1, &err), 0);
	rf_segment rem[2] = {{300, 200}, {800, 200}}; /* two ranks at 300 of 500 */
	const uint32_t win[2] = {4, 4};
	rf_mix_rebase *rb = NULL;
	rf_segment taken[2] = {{0, 300}, {500, 300}};
	assert_int_equal(
	    rf_mix_rebase_compose(old, NULL, 1000, 1, rem, 2, taken, 2, win, &rb, &err), 0);
	rf_mix_free(old);
	assert_int_equal(rb->epoch, 1);
	assert_int_equal(rb->length, 400);
	/* source 0 (every other sample): ordinals 650..750 and 900..1000 of
	 * the epoch's 500..1000, then everything from 1000 on: one range and a
	 * tail from 900 */
	assert_int_equal(rb->nranges, 2);
	assert_int_equal(rb->r[0].start, 650);
	assert_int_equal(rb->r[0].records, 100);
	assert_int_equal(rb->tail[0], 900);
	assert_int_equal(rf_mix_rebase_o(rb, 0, 100), 900);
	assert_int_equal(rf_mix_rebase_i(rb, 0, 700), 50);
	assert_int_equal(rf_mix_rebase_i(rb, 0, 800), UINT64_MAX); /* delivered */
	p.mix_rb = rb;
	uint8_t buf[RF_STATE_BYTES_MIN + 512], flip[sizeof(buf)];
	int n = rf_state_encode(&p, buf, sizeof(buf));
	assert_int_equal(n, RF_STATE_BYTES_MIN + 16 + 48 + 20 + 32 + 16 * 2);
	rf_position q;
	assert_int_equal(rf_state_decode(buf, (size_t)n, &q, &err), 0);
	assert_non_null(q.mix_rb);
	assert_int_equal(q.mix_rb->nranges, 2);
	assert_memory_equal(q.mix_rb->r, rb->r, 2 * sizeof(rf_segment));
	assert_int_equal(q.mix_rb->window[1], 4);
	rf_position_clear(&q);
	for (size_t i = RF_STATE_HEAD; i < (size_t)n; i++) {
		memcpy(flip, buf, (size_t)n);
		flip[i] ^= 0x10;
		assert_true(rf_state_decode(flip, (size_t)n, &q, &err) < 0);
	}
	/* a change recorded after the state's own epoch is refused even
	 * with a right checksum */
	memcpy(flip, buf, (size_t)n);
	rf_store_le64(flip + n - 4 - (20 + 32 + 32), 5);
	rf_store_le32(flip + n - 4, rf_state_crc32c(flip, (size_t)n - 4));
	assert_true(rf_state_decode(flip, (size_t)n, &q, &err) < 0);
	assert_non_null(strstr(err.msg, "weight change at epoch 5"));
	/* a tail so far out that the i-th ordinal from it would overflow
	 * (fuzz_state found it: fuzz/regressions/state/rebase-tail-overflow) */
	memcpy(flip, buf, (size_t)n);
	rf_store_le64(flip + n - 4 - (20 + 32 + 32) + 20, UINT64_MAX - 152);
	rf_store_le32(flip + n - 4, rf_state_crc32c(flip, (size_t)n - 4));
	assert_true(rf_state_decode(flip, (size_t)n, &q, &err) < 0);
	assert_non_null(strstr(err.msg, "ordinals to come from"));
	/* same sources, other weights: a re-weighting */
	uint64_t other[6];
	memcpy(other, src, sizeof(src));
	other[2] = 800000, other[5] = 200000;
	rf_position now = p;
	now.mix_src = other;
	now.mix_rb = NULL;
	assert_true(rf_state_mix_reweighted(&p, &now));
	assert_true(rf_state_check(&p, &now, &err) < 0);
	assert_non_null(strstr(err.msg, "weights differ: saved 0.5,0.5, now 0.8,0.2"));
	assert_int_equal(rf_state_check_reweight(&p, &now, &err), 0);
	other[4] = 8; /* another dataset is never a re-weighting */
	assert_false(rf_state_mix_reweighted(&p, &now));
	assert_true(rf_state_check_reweight(&p, &now, &err) < 0);
	rf_mix_rebase_free(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_crc32c),
	    cmocka_unit_test(test_corruption),
	    cmocka_unit_test(test_check_names_the_difference),
	    cmocka_unit_test(test_remaining),
	    cmocka_unit_test(test_version_2),
	    cmocka_unit_test(test_content_identity),
	    cmocka_unit_test(test_mixture),
	    cmocka_unit_test(test_mixture_reweighted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
