/* fuzz_bundle.c - libFuzzer target for the index bundle parser
 * (shards/bundle.c). The input is parsed as it is, then again with its
 * checksum made right, so mutations reach the entry checks past the CRC.
 * An accepted bundle must hold what the parser promises: every entry's
 * path and tail inside the input, lengths within their bounds, a tail no
 * longer than its shard, a path without control characters. */
#include "bundle.h"
#include "crc32c.h"
#include "fuzz.h"
#include "util.h"

static void check(const uint8_t *buf, size_t len)
{
	rf_bundle *b = NULL;
	rf_error err = {0};
	int rc = rf_bundle_parse(buf, len, "fuzz.rfx", &b, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(b == NULL);
		return;
	}
	FUZZ_CHECK(b->count <= RF_MANIFEST_ENTRIES_MAX);
	for (uint32_t i = 0; i < b->count; i++) {
		const rf_bundle_entry *e = &b->entry[i];
		const uint8_t *p = (const uint8_t *)e->path;
		FUZZ_CHECK(p >= buf && p + e->path_len <= buf + len);
		FUZZ_CHECK(e->tail >= buf && e->tail + e->tail_len <= buf + len - 4);
		FUZZ_CHECK(e->path_len > 0 && e->path_len < RF_MANIFEST_LINE_MAX);
		FUZZ_CHECK(e->tail_len > 0 && e->tail_len <= e->file_bytes);
		for (uint32_t k = 0; k < e->path_len; k++)
			FUZZ_CHECK(p[k] >= 0x20 && p[k] != 0x7f);
	}
	rf_bundle_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* exact-size copies: the parser works on (buf, len), never past it */
	uint8_t *buf = malloc(size ? size : 1);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	check(buf, size);
	if (size >= 4) {
		rf_store_le32(buf + size - 4, rf_crc32c(0, buf, size - 4));
		check(buf, size);
	}
	free(buf);
	return 0;
}
