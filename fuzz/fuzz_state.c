/* fuzz_state.c - libFuzzer target for the resume state decoder
 * (engine/collate.h): the input is a saved state, as a user hands it back.
 * An accepted state must encode back to the very same bytes. The
 * checksum is also made right, so mutations reach the fields behind it. */
#include "collate.h"
#include "fuzz.h"
#include "mix_rebase.h"
#include "state.h"
#include "util.h"

#include <stdlib.h>

static void decode(const uint8_t *buf, size_t size)
{
	rf_position p;
	rf_error err = {0};
	int rc = rf_state_decode(buf, size, &p, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
	} else {
		uint8_t *again = malloc(size);
		FUZZ_CHECK(again != NULL);
		FUZZ_CHECK(rf_state_bytes(&p) == size);
		FUZZ_CHECK(rf_state_encode(&p, again, size) == (int)size);
		FUZZ_CHECK(memcmp(again, buf, size) == 0);
		free(again);
		/* the re-split of any accepted state is bounded and never crashes */
		rf_segment *segs = NULL;
		uint32_t n = 0;
		if (p.world <= 4096 && rf_state_remaining(&p, &segs, &n, &err) == 0)
			FUZZ_CHECK(n <= RF_PLAN_SEGMENTS_MAX);
		free(segs);
		/* an accepted weight change's lookups agree both ways */
		const rf_mix_rebase *rb = p.mix_rb;
		for (uint32_t k = 0; rb && k < rb->k; k++)
			for (uint64_t i = 0; i < 64; i++) {
				uint64_t o = rf_mix_rebase_o(rb, k, i * 7);
				FUZZ_CHECK(rf_mix_rebase_i(rb, k, o) == i * 7);
			}
		rf_position_clear(&p);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	decode(buf, size);
	if (size >= RF_STATE_BYTES_MIN) { /* again with the checksum made right */
		rf_store_le32(buf + size - 4, rf_state_crc32c(buf, size - 4));
		decode(buf, size);
	}
	free(buf);
	return 0;
}
