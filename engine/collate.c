/* collate.c - batch decisions and filling (see collate.h). Pure: records come
 * through the caller's callback, memory from the caller.
 *
 * Batch buffer layout (each section starts 64-byte aligned):
 *   payload (ragged: the records back to back; padded: records x pad_to)
 *   int64 offsets[records + 1]
 *   u32 lengths[records] */
#include "collate.h"
#include "util.h"

#include <assert.h>

#define ALIGN 64u

static uint64_t align_up(uint64_t v)
{
	return (v + ALIGN - 1) / ALIGN * ALIGN;
}

typedef struct layout {
	uint64_t offsets_at, lengths_at, bytes;
} layout;

static layout collate_layout(uint32_t records, uint64_t payload_bytes)
{
	layout l;
	l.offsets_at = align_up(payload_bytes);
	l.lengths_at = align_up(l.offsets_at + 8ull * ((uint64_t)records + 1));
	l.bytes = align_up(l.lengths_at + 4ull * records);
	return l;
}

uint64_t rf_collate_bytes(uint32_t records, uint64_t payload_bytes)
{
	return collate_layout(records, payload_bytes).bytes;
}

int rf_collate_check(const rf_collate_params *p, rf_error *err)
{
	if (p->batch_records == 0)
		return rf_fail(err, -EINVAL, "collate: batch must hold at least one record");
	if (p->pad_to > RF_BLOCK_DECODED_MAX)
		return rf_fail(err, -EINVAL,
		               "collate: pad_to %u bytes exceeds the largest record (%u)",
		               p->pad_to, RF_BLOCK_DECODED_MAX);
	return 0;
}

/* Bytes record (pos, len) takes in the payload, or an error when padded and
 * too long without truncation. */
static int64_t record_cost(const rf_collate_params *p, uint64_t pos, uint32_t len, rf_error *err)
{
	if (p->pad_to == 0)
		return len;
	if (len > p->pad_to && !p->truncate)
		return rf_fail(err, -EINVAL,
		               "collate: record at stream position %llu is %u bytes, longer than "
		               "pad_to %u (use truncate to cut it)",
		               (unsigned long long)pos, len, p->pad_to);
	return p->pad_to;
}

long rf_collate_plan(const rf_collate_params *p, rf_record_fn fn, void *ctx, uint64_t pos,
                     uint64_t available, uint64_t epoch_end, uint64_t *bytes, rf_error *err)
{
	*bytes = 0;
	RF_TRY(rf_collate_check(p, err));
	if (pos >= epoch_end)
		return rf_fail(err, -EINVAL,
		               "collate: position %llu is at or past the epoch end %llu",
		               (unsigned long long)pos, (unsigned long long)epoch_end);
	uint64_t limit = RF_MIN((uint64_t)p->batch_records, epoch_end - pos);
	uint64_t payload = 0, count = 0;
	while (count < limit) {
		if (count >= available)
			return 0; /* the batch's end is not known yet */
		const uint8_t *data;
		uint32_t len;
		fn(ctx, pos + count, &data, &len);
		int64_t cost = record_cost(p, pos + count, len, err);
		if (cost < 0)
			return (long)cost;
		if (p->batch_bytes > 0 && count > 0 && payload + (uint64_t)cost > p->batch_bytes)
			break;
		payload += (uint64_t)cost;
		count++;
		if (p->batch_bytes > 0 && payload >= p->batch_bytes)
			break; /* full (or one record larger than the limit: a batch alone) */
	}
	*bytes = collate_layout((uint32_t)count, payload).bytes;
	return (long)count;
}

void rf_collate_fill(const rf_collate_params *p, rf_record_fn fn, void *ctx, uint64_t pos,
                     uint32_t count, void *mem, uint64_t bytes, rf_batch *b)
{
	uint8_t *base = mem;
	uint64_t payload = 0;
	for (uint32_t i = 0; i < count && p->pad_to == 0; i++) {
		const uint8_t *data;
		uint32_t len;
		fn(ctx, pos + i, &data, &len);
		payload += len;
	}
	if (p->pad_to > 0)
		payload = (uint64_t)count * p->pad_to;
	layout l = collate_layout(count, payload);
	assert(l.bytes <= bytes);
	if (l.bytes > bytes) { /* caller broke the contract: deliver nothing rather than overrun */
		*b = (rf_batch){.payload = base, .offsets = (const int64_t *)base};
		return;
	}
	int64_t *offsets = (int64_t *)(base + l.offsets_at);
	uint32_t *lengths = (uint32_t *)(base + l.lengths_at);
	uint64_t at = 0;
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *data;
		uint32_t len;
		fn(ctx, pos + i, &data, &len);
		uint32_t keep = p->pad_to > 0 ? RF_MIN(len, p->pad_to) : len;
		offsets[i] = (int64_t)at;
		lengths[i] = keep;
		if (keep > 0)
			memcpy(base + at, data, keep);
		uint64_t row = p->pad_to > 0 ? p->pad_to : keep;
		if (row > keep)
			memset(base + at + keep, 0, row - keep);
		at += row;
	}
	offsets[count] = (int64_t)at;
	b->records = count;
	b->row_bytes = p->pad_to;
	b->payload = base;
	b->payload_bytes = payload;
	b->offsets = offsets;
	b->lengths = lengths;
}
