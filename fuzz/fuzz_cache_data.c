/* fuzz_cache_data.c - libFuzzer target for the data cache's record reader
 * (fetch/cache.h): the input is a record file as another process, a crash
 * mid-append or a planted file could leave it under the name of the object
 * asked for. The header must be that object's exactly or be refused; every
 * entry handed out must be well formed and inside the object; the walk
 * must consume at most the input and never read past it. When the input's
 * last byte is odd, the header's CRC and every 32-byte entry's CRC are made
 * right first, so mutations reach the length and range checks behind them. */
#include "cache.h"
#include "crc32c.h"
#include "fuzz.h"
#include "util.h"

#define URL       "https://host/ds/shard-000001.rfs"
#define VALIDATOR "etag:\"5f3a-1e8\""
#define SIZE      1048576ull

static uint64_t entries_seen;

static void on_entry(void *ctx, const rf_cache_entry *e)
{
	(void)ctx;
	FUZZ_CHECK(e->len > 0 && e->len <= RF_CACHE_RANGE_BYTES_MAX);
	FUZZ_CHECK(e->offset < SIZE && e->len <= SIZE - e->offset);
	entries_seen++;
}

static void fix_crcs(uint8_t *p, size_t n)
{
	if (n >= RF_CACHE_REC_HEADER) {
		uint32_t ul = rf_load_le32(p + 12), vl = rf_load_le32(p + 16);
		if ((uint64_t)ul + vl <= n - RF_CACHE_REC_HEADER) {
			uint32_t crc = rf_crc32c(0, p, 28);
			crc = rf_crc32c(crc, p + RF_CACHE_REC_HEADER, (size_t)ul + vl);
			rf_store_le32(p + 28, crc);
		}
	}
	size_t hdr = RF_CACHE_REC_HEADER + strlen(URL) + strlen(VALIDATOR);
	for (size_t at = hdr; at + RF_CACHE_ENTRY_BYTES <= n; at += RF_CACHE_ENTRY_BYTES)
		rf_store_le32(p + at + 28, rf_crc32c(0, p + at, 28));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size ? size : 1);
	FUZZ_CHECK(p != NULL);
	memcpy(p, data, size);
	if (size && (data[size - 1] & 1))
		fix_crcs(p, size);
	int h = rf_cache_rec_header_check(p, size, URL, VALIDATOR, SIZE);
	FUZZ_CHECK(h == -EBADMSG || (h > 0 && (size_t)h <= size));
	if (h > 0) {
		FUZZ_CHECK((size_t)h == RF_CACHE_REC_HEADER + strlen(URL) + strlen(VALIDATOR));
		FUZZ_CHECK(memcmp(p + RF_CACHE_REC_HEADER, URL, strlen(URL)) == 0);
	}
	/* The entries walk runs on any bytes (a header refused is never walked
	 * by the cache, but the walk must hold on its own). */
	size_t from = h > 0 ? (size_t)h : 0;
	uint64_t bad = 0;
	entries_seen = 0;
	size_t used = rf_cache_rec_entries(p + from, size - from, SIZE, on_entry, NULL, &bad);
	FUZZ_CHECK(used <= size - from);
	FUZZ_CHECK(size - from - used < RF_CACHE_ENTRY_BYTES);
	FUZZ_CHECK(entries_seen * RF_CACHE_ENTRY_BYTES + bad == used);
	free(p);
	return 0;
}
