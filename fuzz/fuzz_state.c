/* fuzz_state.c - libFuzzer target for the resume state decoder
 * (engine/collate.h): the input is a saved state, as a user hands it back.
 * An accepted state must encode back to the very same bytes. The
 * checksum is also made right, so mutations reach the fields behind it. */
#include "collate.h"
#include "fuzz.h"
#include "state.h"
#include "util.h"

static void decode(const uint8_t *buf, size_t size)
{
	rf_position p;
	rf_error err = {0};
	int rc = rf_state_decode(buf, size, &p, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
	} else {
		uint8_t again[RF_STATE_BYTES];
		FUZZ_CHECK(rf_state_encode(&p, again, sizeof(again)) == RF_STATE_BYTES);
		FUZZ_CHECK(size == RF_STATE_BYTES && memcmp(again, buf, size) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	decode(buf, size);
	if (size == RF_STATE_BYTES) { /* again with the checksum made right */
		rf_store_le32(buf + 52, rf_state_crc32c(buf, 52));
		decode(buf, size);
	}
	free(buf);
	return 0;
}
