/* test_engine_limits.c - the loader at its bounds: a shuffle window of more
 * blocks than the event loop has op slots is read as slots free (a full
 * table is backpressure, not an error), and a consumer that keeps every
 * batch gets an error naming the budget and what it holds instead of a
 * hang, an index that understates its largest record is corrupt input
 * naming the record, and shard indexes wait for budget in the open phase. */
#include "crc32c.h"
#include "engine.h"
#include "rfs.h"
#include "ringfeed.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef rf_test_dataset dataset;

/* Records of record_bytes (named by shard and number, then filler). */
static size_t make_record(uint32_t s, uint32_t r, uint8_t *buf, size_t cap, void *arg)
{
	uint32_t record_bytes = *(const uint32_t *)arg;
	int n = snprintf((char *)buf, 64, "s%u-r%u:", s, r);
	for (uint32_t i = (uint32_t)n; i < record_bytes && i < cap; i++)
		buf[i] = (uint8_t)('a' + (r * 7 + i) % 26);
	return record_bytes;
}

static void make_dataset(dataset *d, uint32_t nshards, uint32_t records, uint32_t record_bytes,
                         uint64_t block_bytes)
{
	rf_test_dataset_make(d, "limits", nshards, records, record_bytes + 64, block_bytes,
	                     make_record, &record_bytes);
}

typedef struct run {
	uint64_t *ids;
	size_t n;
	int rc;
	char msg[RF_ERROR_MSG_BYTES];
} run;

static void batch_ids(run *r, const rf_batch *b)
{
	r->ids = realloc(r->ids, (r->n + b->records) * sizeof(*r->ids));
	for (uint32_t i = 0; i < b->records; i++)
		r->ids[r->n++] = rf_test_rec_id(b->payload + b->offsets[i],
		                                (uint32_t)(b->offsets[i + 1] - b->offsets[i]));
}

/* Reads to the end with the loop's op table and read bound set (0: defaults). */
static run read_all(const dataset *d, const char *const *kv, uint32_t loop_ops, uint32_t reads_max)
{
	rf_config *c = rf_test_config(d, kv);
	c->test_loop_ops = loop_ops;
	c->test_reads_max = reads_max;
	rf_error err = {0};
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open: %s", err.msg);
	run r = {0};
	for (;;) {
		rf_batch *b = NULL;
		int rc = rf_next(l, &b, 10000);
		if (rc != 0) {
			r.rc = rc;
			snprintf(r.msg, sizeof(r.msg), "%s", rf_last_error(l));
			break;
		}
		batch_ids(&r, b);
		rf_release(l, b);
	}
	rf_close(l);
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* One record per block, a window of 600 records: every window needs 600
 * reads at once, far more than a 32-slot loop holds. With the reads bounded
 * by the table (default: half of it) and with more allowed than the table
 * holds (the loop refuses some: they wait for a slot; with 3 slots, one
 * left for reads, every read after the first waits, the last one too), the
 * stream is the one read with the default table, and every record comes
 * once. */
static void test_window_wider_than_loop(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 2, 600, 600, 512);
	const char *kv[] = {"seed=11",      "shuffle_window=600", "batch=50",
	                    "budget=64MiB", "threads=2",          NULL};
	run ref = read_all(&d, kv, 0, 0);
	if (ref.rc != RF_END)
		fail_msg("default loop: %s", ref.msg);
	assert_int_equal(ref.n, d.total);
	uint64_t *sorted = malloc(d.total * sizeof(uint64_t));
	memcpy(sorted, ref.ids, d.total * sizeof(uint64_t));
	qsort(sorted, d.total, sizeof(uint64_t), cmp_u64);
	qsort(d.ids, d.total, sizeof(uint64_t), cmp_u64);
	assert_memory_equal(sorted, d.ids, d.total * sizeof(uint64_t));
	const uint32_t shapes[][2] = {{32, 0}, {32, 400}, {8, 0}, {3, 100}};
	for (size_t i = 0; i < RF_ARRAY_LEN(shapes); i++) {
		run r = read_all(&d, kv, shapes[i][0], shapes[i][1]);
		if (r.rc != RF_END)
			fail_msg("%u loop slots, %u reads: %s", shapes[i][0], shapes[i][1], r.msg);
		assert_int_equal(r.n, ref.n);
		assert_memory_equal(r.ids, ref.ids, ref.n * sizeof(uint64_t));
		free(r.ids);
	}
	free(sorted);
	free(ref.ids);
	rf_test_dataset_free(&d);
}

/* A consumer that keeps every batch: once the held batches fill the
 * budget, rf_next says so (budget, batches held, their bytes) within a
 * bounded wait instead of waiting forever; after the batches are released
 * the stream goes on to the end, every record once. */
static void test_consumer_holds_budget(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 2, 400, 4000, 16384);
	const char *kv[] = {"seed=3",    "shuffle_window=8", "batch=8", "budget=2MiB",
	                    "threads=2", "depth=4",          NULL};
	rf_config *c = rf_test_config(&d, kv);
	rf_error err = {0};
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open: %s", err.msg);
	rf_batch *held[256];
	uint32_t nheld = 0;
	int rc;
	for (;;) {
		rf_batch *b = NULL;
		/* far longer than the engine's bounded wait: a hang fails here */
		rc = rf_next(l, &b, 30000);
		if (rc != 0)
			break;
		assert_true(nheld < RF_ARRAY_LEN(held));
		held[nheld++] = b;
	}
	if (rc != RF_E_BUDGET)
		fail_msg("after %u held batches: rc %d: %s", nheld, rc, rf_last_error(l));
	const char *msg = rf_last_error(l);
	char want[64];
	snprintf(want, sizeof(want), ": %u batch(es) of ", nheld);
	if (!strstr(msg, "budget 2.0 MiB is held by the consumer") || !strstr(msg, want))
		fail_msg("message: %s", msg);
	unsigned long long bytes = strtoull(strstr(msg, want) + strlen(want), NULL, 10);
	assert_true(nheld > 4);
	assert_true(bytes >= (unsigned long long)nheld * 8 * 4000 && bytes <= 2u << 20);
	run r = {0};
	for (uint32_t i = 0; i < nheld; i++) {
		batch_ids(&r, held[i]);
		rf_release(l, held[i]);
	}
	for (;;) {
		rf_batch *b = NULL;
		rc = rf_next(l, &b, 30000);
		if (rc != 0)
			break;
		batch_ids(&r, b);
		rf_release(l, b);
	}
	if (rc != RF_END)
		fail_msg("after the releases: %s", rf_last_error(l));
	rf_close(l);
	assert_int_equal(r.n, d.total);
	qsort(r.ids, r.n, sizeof(uint64_t), cmp_u64);
	qsort(d.ids, d.total, sizeof(uint64_t), cmp_u64);
	assert_memory_equal(r.ids, d.ids, d.total * sizeof(uint64_t));
	free(r.ids);
	rf_test_dataset_free(&d);
}

/* Rewrites the index header's largest-record figure of a shard file and
 * seals the index and footer CRCs again (a lying but well-formed index). */
static void set_largest_record(const char *path, uint32_t bytes)
{
	unsigned char *b = NULL;
	long n = rf_test_read_file(path, &b);
	assert_true(n > RF_FOOTER_BYTES);
	uint8_t *f = b + n - RF_FOOTER_BYTES;
	uint64_t io = rf_load_le64(f + RF_FOOTER_INDEX_OFFSET_AT);
	uint64_t ib = rf_load_le64(f + RF_FOOTER_INDEX_BYTES_AT);
	rf_store_le32(b + io + 20, bytes);
	rf_store_le32(f + RF_FOOTER_INDEX_CRC_AT, rf_crc32c(0, b + io, ib));
	rf_store_le32(f + RF_FOOTER_CRC_AT, rf_crc32c(0, f, RF_FOOTER_CRC_AT));
	assert_int_equal(rf_test_write_file(path, b, (size_t)n), 0);
	free(b);
}

/* The open-time budget trusted the index's largest record; a record larger
 * than it is found as its block decodes, and the stream stops there naming
 * the shard, block and record (before: read on, or "budget too small" at
 * position 0 when the understated batch did not fit). */
static void test_index_understates_largest_record(void **state)
{
	(void)state;
	dataset d;
	make_dataset(&d, 1, 200, 300, 2048);
	set_largest_record(d.path[0], 100);
	const char *kv[] = {"shuffle=0", "batch=4", "budget=8MiB", NULL};
	run r = read_all(&d, kv, 0, 0);
	assert_int_equal(r.rc, RF_E_CORRUPT);
	assert_int_equal(r.n, 0);
	if (!strstr(r.msg, "shard-00.rfs: block 0: record 0 (record 0 of the shard) is 300 bytes, "
	                   "larger than the index's largest record of 100 bytes"))
		fail_msg("message: %s", r.msg);
	free(r.ids);
	rf_test_dataset_free(&d);
}

/* Index buffers wait for budget rather than all being read at once: one
 * shard with 60,000 bytes of metadata listed 64 times (one open round), at
 * 6 MiB: every parsed index and the plans fit, but not more than about a
 * dozen index buffers with their parse bounds besides (every read takes
 * 50 ms, so many are in flight together). The open succeeds (shards opened
 * fewer at a time), the budget's metadata peak stayed within it, and every
 * listing's records come. */
static void test_indexes_wait_for_budget(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("limits");
	char path[600];
	snprintf(path, sizeof(path), "%s/meta.rfs", dir);
	char *meta = malloc(60001);
	memset(meta, 'm', 60000);
	meta[60000] = '\0';
	rf_writer_options o = {.block_bytes = 1024, .level = 1, .metadata = meta};
	rf_error err = {0};
	rf_writer *w = rf_writer_open(path, &o, &err);
	assert_non_null(w);
	for (int r = 0; r < 100; r++)
		assert_int_equal(rf_writer_add(w, "record", 6, &err), 0);
	assert_int_equal(rf_writer_close(w, NULL, &err), 0);
	free(meta);
	rf_shard_index *ix = NULL;
	assert_int_equal(rf_index_read_file(path, &ix, &err), 0);
	uint64_t ib = RF_INDEX_HEADER_BYTES + 60000 + (uint64_t)ix->blocks * RF_INDEX_ENTRY_BYTES;
	/* each: its buffer, and the bound of its parse (every byte after the
	 * header as entries or as metadata), as the open phase reserves them */
	uint64_t rest = ib - RF_INDEX_HEADER_BYTES;
	uint64_t all_at_once =
	    64 * (ib + 1 + (rest / RF_INDEX_ENTRY_BYTES + 1) * sizeof(rf_block_info) + rest);
	rf_index_free(ix);
	rf_config *c = rf_config_new();
	for (int i = 0; i < 64; i++)
		assert_int_equal(rf_config_add_url(c, path, &err), 0);
	const char *kv[][2] = {
	    {"shuffle_window", "4"}, {"batch", "4"}, {"threads", "1"}, {"budget", "6MiB"}};
	for (size_t i = 0; i < RF_ARRAY_LEN(kv); i++)
		assert_int_equal(rf_config_set(c, kv[i][0], kv[i][1], &err), 0);
	rf_loader *l = rf_open(c, &err);
	rf_config_free(c);
	if (!l)
		fail_msg("rf_open: %s", err.msg);
	rf_engine *e = (rf_engine *)l;
	rf_budget_snapshot sn;
	rf_budget_snapshot_get(&e->budget, &sn);
	assert_true(all_at_once > sn.limit_bytes); /* all at once would not have fit */
	assert_true(sn.peak_bytes[RF_MEM_METADATA] <= sn.limit_bytes);
	uint64_t records = 0;
	rf_batch *b = NULL;
	int rc;
	while ((rc = rf_next(l, &b, 10000)) == 0) {
		records += b->records;
		rf_release(l, b);
	}
	if (rc != RF_END)
		fail_msg("%s", rf_last_error(l));
	rf_close(l);
	assert_int_equal(records, 64 * 100);
	rf_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_window_wider_than_loop),
	    cmocka_unit_test(test_consumer_holds_budget),
	    cmocka_unit_test(test_index_understates_largest_record),
	    cmocka_unit_test(test_indexes_wait_for_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
