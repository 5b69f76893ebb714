/* fuzz_verify.c - libFuzzer target for the shard verifier's walk
 * (rf_verify_run, behind `ringfeed verify` for every source): the input is a
 * whole shard file read through an in-memory read function, with a manifest
 * listing taken from its first bytes (so size and record mismatches are
 * reached too). Like fuzz_shard, the same bytes are also walked with both
 * CRCs recomputed, so mutations reach the index and the frames. Promises
 * checked: a failure carries its code and message, a sound verdict means
 * the reader accepts the footer and index, reports stay within the bound. */
#include "crc32c.h"
#include "fuzz.h"
#include "rfs.h"
#include "verify.h"

#define FUZZ_MAX_REPORTS 4u

typedef struct mem {
	const uint8_t *p;
	size_t n;
} mem;

static int mem_read(void *ctx, uint64_t offset, uint64_t len, void *buf, rf_error *err)
{
	const mem *m = ctx;
	FUZZ_CHECK(len > 0 && offset <= m->n && len <= m->n - offset); /* asked within size */
	memcpy(buf, m->p + offset, len);
	(void)err;
	return 0;
}

static void on_report(void *ctx, const rf_error *e)
{
	uint32_t *n = ctx;
	(*n)++;
	FUZZ_CHECK(e->code < 0 && e->msg[0] && memchr(e->msg, 0, sizeof(e->msg)));
}

static void walk(const uint8_t *data, size_t size, bool listed, uint64_t bytes, uint64_t records)
{
	mem m = {data, size};
	uint32_t reports = 0;
	rf_verify_walk w = {.name = "fuzz.rfs",
	                    .size = size,
	                    .read = mem_read,
	                    .read_ctx = &m,
	                    .report = on_report,
	                    .ctx = &reports,
	                    .max_reports = FUZZ_MAX_REPORTS,
	                    .listed = listed,
	                    .listed_bytes = bytes,
	                    .listed_records = records,
	                    .listed_line = 2,
	                    .manifest = "fuzz.rfm"};
	rf_error err = {0};
	int rc = rf_verify_run(&w, &err);
	FUZZ_CHECK(reports <= FUZZ_MAX_REPORTS + 1); /* the bound, plus "N more" */
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		return;
	}
	FUZZ_CHECK(rc == 0 && reports == 0);
	rf_footer ft;
	FUZZ_CHECK(rf_footer_parse(data, size, size, "fuzz.rfs", &ft, &err) == 0);
	rf_shard_index *ix = NULL;
	FUZZ_CHECK(rf_index_parse(data + ft.index_offset, ft.index_bytes, &ft, size, "fuzz.rfs",
	                          &ix, &err) == 0);
	FUZZ_CHECK(!listed || (bytes == size && records == ix->records));
	rf_index_free(ix);
}

/* Recomputes the index and footer CRCs; false when nothing changed. */
static bool fix_crcs(uint8_t *p, size_t size)
{
	if (size < RF_FOOTER_BYTES)
		return false;
	uint8_t *f = p + size - RF_FOOTER_BYTES;
	uint64_t at = rf_load_le64(f + RF_FOOTER_INDEX_OFFSET_AT);
	uint64_t n = rf_load_le64(f + RF_FOOTER_INDEX_BYTES_AT);
	bool changed = false;
	if (at <= size - RF_FOOTER_BYTES && n <= size - RF_FOOTER_BYTES - at) {
		uint32_t crc = rf_crc32c(0, p + at, n);
		changed |= crc != rf_load_le32(f + RF_FOOTER_INDEX_CRC_AT);
		rf_store_le32(f + RF_FOOTER_INDEX_CRC_AT, crc);
	}
	uint32_t crc = rf_crc32c(0, f, RF_FOOTER_CRC_AT);
	changed |= crc != rf_load_le32(f + RF_FOOTER_CRC_AT);
	rf_store_le32(f + RF_FOOTER_CRC_AT, crc);
	return changed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so reading one byte past the input is caught. */
	uint8_t *copy = malloc(size ? size : 1);
	FUZZ_CHECK(copy != NULL);
	memcpy(copy, data, size);
	/* the first byte decides the manifest's say: none, right size, or off */
	bool listed = size > 0 && (data[0] & 1);
	uint64_t bytes = size + (size > 0 && (data[0] & 2) ? 1 : 0);
	uint64_t records = size > 1 ? data[1] : 0;
	walk(copy, size, listed, bytes, records);
	if (fix_crcs(copy, size))
		walk(copy, size, listed, bytes, records);
	free(copy);
	return 0;
}
