/* tfrecord_stream.c - the sequential units of a large .tfrecord.gz /
 * .tfrecord.zlib (tfrecord.h): a deflate stream cannot be entered mid-way
 * without an access point, so its units decode through one inflate state,
 * in order, as a large .tar.zst's do through one zstd state (tar_stream.c,
 * the same pattern): `in` is the next compressed byte the state needs,
 * `out` the decoded bytes it has given. A unit at or after `out` decodes
 * forward to it (the bytes before it dropped into scratch: skipped), one
 * before restarts the stream. Compressed bytes a unit's range held past
 * where its decoding stopped are kept in the carry ([in, in + carry_len))
 * for the next unit; whatever is missing is asked for (RF_FMT_MORE from
 * `in`). gzip members may follow each other; a zlib stream ends at the
 * object's last byte. The last unit decodes on to the stream's end, so its
 * trailers (gzip's CRC-32 and size, zlib's Adler-32) are checked. */
#include "tfrecord.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define U64(x) ((unsigned long long)(x))

typedef struct tfr_zseq {
	z_stream zs;
	int codec;
	uint64_t in, out;
	uint8_t *carry; /* RF_TFR_SEQ_CARRY: compressed [in, in + carry_len) */
	size_t carry_at, carry_len;
	uint8_t *scratch; /* RF_TFR_SEQ_SCRATCH: decoded bytes dropped */
	uint32_t unit;    /* the unit in progress (a call returned RF_FMT_MORE) */
	bool unit_live;
	bool ended; /* the stream's last member ended at the object's last byte */
} tfr_zseq;

static int window_bits(int codec)
{
	return codec == RF_TFR_GZIP ? 15 + 16 : 15;
}

uint64_t rf_tfr_seq_bytes(void)
{
	return sizeof(tfr_zseq) + RF_TFR_SEQ_CARRY + RF_TFR_SEQ_SCRATCH + RF_TFR_ZLIB_STATE;
}

void rf_tfr_seq_free(void *state)
{
	tfr_zseq *q = state;
	if (!q)
		return;
	inflateEnd(&q->zs);
	free(q->carry);
	free(q->scratch);
	free(q);
}

void rf_tfr_seq_reset(void *state)
{
	tfr_zseq *q = state;
	if (!q)
		return;
	inflateReset2(&q->zs, window_bits(q->codec));
	q->in = q->out = 0;
	q->carry_at = q->carry_len = 0;
	q->unit_live = false;
	q->ended = false;
}

static int seq_new(tfr_zseq **out, int codec, const char *name, rf_error *err)
{
	tfr_zseq *q = calloc(1, sizeof(*q));
	if (q) {
		q->codec = codec;
		q->carry = malloc(RF_TFR_SEQ_CARRY);
		q->scratch = malloc(RF_TFR_SEQ_SCRATCH);
	}
	if (!q || !q->carry || !q->scratch || inflateInit2(&q->zs, window_bits(codec)) != Z_OK) {
		if (q) {
			free(q->carry);
			free(q->scratch);
		}
		free(q);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for an inflate state", name);
	}
	*out = q;
	return 0;
}

/* The input the decoder takes next: the carry, else src from `in`. */
static const uint8_t *seq_input(const tfr_zseq *q, const uint8_t *src, size_t src_len,
                                uint64_t src_offset, size_t *n)
{
	*n = 0;
	if (q->carry_len) {
		*n = q->carry_len;
		return q->carry + q->carry_at;
	}
	if (src && q->in >= src_offset && q->in - src_offset < src_len) {
		*n = src_len - (size_t)(q->in - src_offset);
		return src + (q->in - src_offset);
	}
	return NULL;
}

/* The output the decoder fills next: scratch before the unit (dropped) and
 * after it (the last unit's trailer: nothing may come), else dst. */
static uint8_t *seq_output(tfr_zseq *q, const rf_tfr_seq_unit *w, uint8_t *dst, size_t *n)
{
	uint64_t end = w->start + w->span;
	if (q->out < w->start) {
		*n = (size_t)RF_MIN(w->start - q->out, RF_TFR_SEQ_SCRATCH);
		return q->scratch;
	}
	if (q->out < end) {
		*n = (size_t)RF_MIN(end - q->out, 1u << 30);
		return dst + (q->out - w->start);
	}
	*n = RF_TFR_SEQ_SCRATCH;
	return q->scratch;
}

static bool seq_done(const tfr_zseq *q, const rf_tfr_seq_unit *w)
{
	return q->out >= w->start + w->span && (!w->last || q->ended);
}

/* One inflate call: 1 (progress), 0 (it needs input it was not given), or
 * an error. */
static int seq_call(tfr_zseq *q, const rf_tfr_seq_unit *w, const uint8_t *src, size_t src_len,
                    uint64_t src_offset, uint8_t *dst, rf_fmt_more *more, const char *name,
                    rf_error *err)
{
	size_t in_n, out_n;
	const uint8_t *in = seq_input(q, src, src_len, src_offset, &in_n);
	uint8_t *out = seq_output(q, w, dst, &out_n);
	bool drop = q->out<w->start, from_carry = q->carry_len> 0;
	q->zs.next_in = (Bytef *)(uintptr_t)in;
	q->zs.avail_in = (uInt)RF_MIN(in_n, 1u << 30);
	q->zs.next_out = out;
	q->zs.avail_out = (uInt)out_n;
	uInt ai = q->zs.avail_in, ao = q->zs.avail_out;
	int r = inflate(&q->zs, Z_NO_FLUSH);
	size_t used = ai - q->zs.avail_in, made = ao - q->zs.avail_out;
	q->in += used;
	q->out += made;
	if (from_carry) {
		q->carry_at += used;
		q->carry_len -= used;
	}
	if (drop)
		more->skipped_bytes += made;
	if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: compressed byte %llu (decoded byte %llu): %s",
		               name, w->u, U64(q->in), U64(q->out),
		               q->zs.msg ? q->zs.msg : "not a zlib/gzip stream");
	if (q->out > w->decoded)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: the stream decodes to more than the %llu bytes "
		               "the open saw (compressed byte %llu)",
		               name, w->u, U64(w->decoded), U64(q->in));
	if (r == Z_STREAM_END) {
		if (q->in == w->size)
			q->ended = true;
		else if (q->codec != RF_TFR_GZIP)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: unit %u: %llu bytes past the zlib stream's end "
			               "(byte %llu)",
			               name, w->u, U64(w->size - q->in), U64(q->in));
		else if (inflateReset(&q->zs) != Z_OK) /* another gzip member */
			return rf_fail(err, -EINVAL, "shard %s: unit %u: inflateReset", name, w->u);
		return 1;
	}
	if (used || made)
		return 1;
	if (in_n > 0) /* input and room, yet no progress: never spin on it */
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: the stream near compressed byte %llu makes no "
		               "progress",
		               name, w->u, U64(q->in));
	return 0;
}

/* The rest of src past the bytes the state holds, into the carry when it
 * fits (else the next unit asks for it again). */
static void seq_keep(tfr_zseq *q, const uint8_t *src, size_t src_len, uint64_t src_offset)
{
	uint64_t from = q->in + q->carry_len;
	if (!src || from < src_offset || from - src_offset >= src_len)
		return;
	size_t rest = src_len - (size_t)(from - src_offset);
	if (q->carry_len + rest > RF_TFR_SEQ_CARRY)
		return;
	memmove(q->carry, q->carry + q->carry_at, q->carry_len);
	q->carry_at = 0;
	memcpy(q->carry + q->carry_len, src + (from - src_offset), rest);
	q->carry_len += rest;
}

static int seq_run(tfr_zseq *q, const rf_tfr_seq_unit *w, const uint8_t *src, size_t src_len,
                   uint64_t src_offset, uint8_t *dst, rf_fmt_more *more, const char *name,
                   rf_error *err)
{
	while (!seq_done(q, w)) {
		if (q->ended)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: unit %u: the stream ends at decoded byte %llu, "
			               "before the unit's end at %llu (the file changed since the "
			               "open)",
			               name, w->u, U64(q->out), U64(w->start + w->span));
		int rc = seq_call(q, w, src, src_len, src_offset, dst, more, name, err);
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		if (q->in < w->size) { /* the next bytes, from where the decoder stands */
			more->offset = q->in;
			more->len = RF_MIN(more->cap, w->size - q->in);
			return RF_FMT_MORE;
		}
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: the stream ends early: %llu compressed bytes "
		               "gave %llu decoded bytes and no end of stream",
		               name, w->u, U64(w->size), U64(q->out));
	}
	if (w->last && q->out != w->decoded)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: the stream decodes to %llu bytes, the open saw "
		               "%llu",
		               name, w->u, U64(q->out), U64(w->decoded));
	seq_keep(q, src, src_len, src_offset);
	q->unit_live = false;
	return 0;
}

int rf_tfr_seq_decode(void **state, const rf_tfr_seq_unit *w, const uint8_t *src, size_t src_len,
                      uint64_t src_offset, uint8_t *dst, rf_fmt_more *more, const char *name,
                      rf_error *err)
{
	tfr_zseq *q = *state;
	if (!q) {
		RF_TRY(seq_new(&q, w->codec, name, err));
		*state = q;
	}
	int rc = 0;
	if (more->cap == 0 || src_offset > w->size || src_len > w->size - src_offset ||
	    q->codec != w->codec)
		rc = rf_fail(err, -EINVAL,
		             "shard %s: unit %u: bytes [%llu, +%zu) of a %llu-byte object, "
		             "requests of at most %llu",
		             name, w->u, U64(src_offset), src_len, U64(w->size), U64(more->cap));
	else if (more->again && (!q->unit_live || q->unit != w->u))
		rc = rf_fail(err, -EINVAL,
		             "shard %s: unit %u: a call for more bytes of a unit not in progress",
		             name, w->u);
	if (rc < 0) {
		rf_tfr_seq_reset(q);
		return rc;
	}
	if (!more->again) {
		if (q->out > w->start) /* behind us: the stream from its start */
			rf_tfr_seq_reset(q);
		q->unit = w->u;
		q->unit_live = true;
	}
	rc = seq_run(q, w, src, src_len, src_offset, dst, more, name, err);
	if (rc < 0)
		rf_tfr_seq_reset(q);
	return rc;
}
