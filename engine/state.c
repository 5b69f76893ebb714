/* state.c - the consumer's position on disk: encoding, validation and the
 * configuration fingerprint (see state.h). */
#include "state.h"
#include "rng.h"
#include "util.h"

uint32_t rf_state_crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = 0xffffffffu;
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
	}
	return ~crc;
}

uint64_t rf_state_fingerprint(const rf_plan *plan, const rf_collate_params *c)
{
	uint64_t h = rf_plan_hash(plan, 0x52465354415445ull);
	h = rf_mix64(h ^ c->batch_records);
	h = rf_mix64(h ^ c->batch_bytes);
	h = rf_mix64(h ^ ((uint64_t)c->pad_to << 1 | (c->truncate ? 1u : 0u)));
	return h;
}

int rf_state_encode(const rf_position *p, void *buf, size_t cap)
{
	if (cap < RF_STATE_BYTES)
		return -ENOSPC;
	uint8_t *b = buf;
	memcpy(b, RF_STATE_MAGIC, 8);
	rf_store_le32(b + 8, RF_STATE_VERSION);
	rf_store_le64(b + 12, p->fingerprint);
	rf_store_le64(b + 20, p->epoch);
	rf_store_le64(b + 28, p->record);
	rf_store_le64(b + 36, p->batch);
	rf_store_le64(b + 44, p->skipped);
	rf_store_le32(b + 52, rf_state_crc32c(b, 52));
	return RF_STATE_BYTES;
}

int rf_state_decode(const void *buf, size_t len, rf_position *p, rf_error *err)
{
	const uint8_t *b = buf;
	if (!buf || len != RF_STATE_BYTES)
		return rf_fail(err, -EINVAL, "resume state: %zu bytes, a ringfeed state has %d",
		               len, RF_STATE_BYTES);
	if (memcmp(b, RF_STATE_MAGIC, 8) != 0)
		return rf_fail(err, -EINVAL, "resume state: not a ringfeed state (magic is not %s)",
		               RF_STATE_MAGIC);
	uint32_t version = rf_load_le32(b + 8);
	if (version != RF_STATE_VERSION)
		return rf_fail(err, -EINVAL,
		               "resume state: version %u, this build reads version %u", version,
		               RF_STATE_VERSION);
	uint32_t want = rf_load_le32(b + 52), got = rf_state_crc32c(b, 52);
	if (want != got)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: checksum mismatch (stored %08x, computed %08x)", want,
		               got);
	rf_position q = {
	    .fingerprint = rf_load_le64(b + 12),
	    .epoch = rf_load_le64(b + 20),
	    .record = rf_load_le64(b + 28),
	    .batch = rf_load_le64(b + 36),
	    .skipped = rf_load_le64(b + 44),
	};
	if (q.batch > q.record)
		return rf_fail(err, RF_E_CORRUPT,
		               "resume state: %llu batches consumed but only %llu records",
		               (unsigned long long)q.batch, (unsigned long long)q.record);
	*p = q;
	return 0;
}
