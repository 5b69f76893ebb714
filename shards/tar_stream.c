/* tar_stream.c - compressed WebDataset tars (.tar.gz, .tgz, .tar.zst,
 * .tar.zstd; tar.h): a compressed stream cannot be range-read by tar
 * offset, so the open learns the samples by decoding the stream once, in
 * bounded memory: sequential ranges of the object are fed to the
 * decompressor (zlib's inflate, zstd's streaming decoder), whose output
 * passes through a window of RF_TAR_STREAM_WINDOW bytes where the header
 * scan of tar_scan.c runs; member data between headers is decoded and
 * dropped. A step decodes at most RF_TAR_STREAM_STEP_OUT bytes, so its
 * parse bound is known before its bytes arrive; the unconsumed rest of a
 * range is asked for again (the engine serves it from the bytes it holds).
 * The decoded tar is at most RF_TAR_DECODED_MAX: a larger one is refused,
 * naming the limit. A stream cannot be entered again mid-way, so an error
 * after the first step stands (final; re-reading the range cannot resume
 * it). A small compressed tar is then one read unit, the whole object; a
 * large .tar.gz is split at access points (below); a large .tar.zst is
 * read sequentially: the open keeps checkpoints (compressed bytes taken,
 * decoded bytes given), units are the compressed ranges between them, and
 * one decoder state decodes them in order (rf_tar_seq_decode, the end of
 * this file). */
#include "tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_estimateDStreamSize */

#include <zstd.h>
#include <zstd_errors.h>

#define U64(x) ((unsigned long long)(x))

#define RF_TAR_STREAM_WINDOW   (1u << 20) /* decoded bytes the scan sees at once */
#define RF_TAR_STREAM_STEP_OUT (4u << 20) /* decoded bytes one step produces at most */
#define RF_TAR_ZSTD_WINDOW_LOG 23 /* 8 MiB: zstd -1..-19; larger (--long, --ultra) refused */
#define RF_TAR_ZLIB_STATE      (64u << 10)   /* inflate's state and 32 KiB window */
#define RF_TAR_AP_SPACING      (16u << 20)   /* decoded bytes between gzip access points */
#define RF_TAR_DECODED_MAX     (64ull << 30) /* a compressed tar decodes to at most this */
#define RF_TAR_ZSTD_CALL_OUT   (128u << 10)  /* one zstd call's output at the open */
/* Decoded bytes per compressed byte past which the open refuses a stream
 * (a decompression bomb: its open would decode for minutes from a few
 * hundred KB), after the first RF_TAR_RATIO_FREE decoded bytes. Deflate
 * cannot pass 1032:1; real tars under zstd -19 stay far below 100:1; a
 * tar of zeros under zstd -3 is about 32000:1 (docs/design.md). */
#define RF_TAR_RATIO_MAX  2048u
#define RF_TAR_RATIO_FREE (64ull << 20)

struct tar_stream {
	int codec;
	ZSTD_DStream *zd;
	uint64_t zd_bytes; /* zd at its largest (the frames' windows) */
	z_stream zs;
	bool zs_live;
	uint64_t consumed; /* compressed bytes the decompressor took */
	uint8_t *win;      /* decoded [win_at, win_at + win_len) */
	size_t win_len;
	uint64_t win_at;
	uint64_t total; /* decoded so far */
	bool ended;     /* the stream's last frame / member is complete */
	tar_scan *scan;
	bool scan_end;
	bool failed; /* a step failed: every later call gives the same error */
	rf_error fail;
	/* gzip: the last 32 KiB of output, and the access points met */
	uint8_t *hist;
	size_t hist_at; /* the ring's next write */
	rf_tar_ap *aps;
	size_t aps_n, aps_cap;
	size_t aps_pending; /* aps[aps_pending..] wait for the first sample after them */
	uint64_t ap_last_out;
	/* zstd: the checkpoints met */
	rf_tar_cp *cps;
	size_t cps_n, cps_cap;
};

int rf_tar_codec_of(const char *leaf)
{
	size_t n = strlen(leaf);
	static const struct {
		const char *suffix;
		int codec;
	} rows[] = {{".tar.gz", RF_TAR_GZIP},
	            {".tgz", RF_TAR_GZIP},
	            {".tar.zst", RF_TAR_ZSTD},
	            {".tar.zstd", RF_TAR_ZSTD}};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t m = strlen(rows[i].suffix);
		if (n > m && strcmp(leaf + n - m, rows[i].suffix) == 0)
			return rows[i].codec;
	}
	return RF_TAR_PLAIN;
}

static const char *codec_name(int codec)
{
	return codec == RF_TAR_GZIP ? "gzip" : "zstd";
}

static uint64_t decomp_bytes(const tar_stream *t)
{
	if (t->codec == RF_TAR_ZSTD)
		return t->zd ? ZSTD_sizeof_DStream(t->zd) : 0;
	return (t->zs_live ? RF_TAR_ZLIB_STATE : 0) + (t->hist ? RF_TAR_WINDOW_BYTES : 0);
}

uint64_t rf_tar_stream_bytes(const tar_stream *t)
{
	return t ? sizeof(*t) + (t->win ? RF_TAR_STREAM_WINDOW : 0) + decomp_bytes(t) +
	               sizeof(tar_scan) + rf_tar_scan_bytes(t->scan) +
	               t->aps_cap * sizeof(rf_tar_ap) + t->aps_n * RF_TAR_WINDOW_BYTES +
	               t->cps_cap * sizeof(rf_tar_cp)
	         : 0;
}

/* The most a decoded tar of this codec may be (a .tar.gz in units at its
 * access points, a .tar.zst in sequential units: both the same). */
static uint64_t decoded_max(int codec)
{
	(void)codec;
	return RF_TAR_DECODED_MAX;
}

static void decomp_end(tar_stream *t)
{
	ZSTD_freeDStream(t->zd);
	t->zd = NULL;
	if (t->zs_live)
		inflateEnd(&t->zs);
	t->zs_live = false;
	free(t->win);
	t->win = NULL;
	free(t->hist);
	t->hist = NULL;
}

void rf_tar_stream_free(tar_stream *t)
{
	if (!t)
		return;
	decomp_end(t);
	rf_tar_scan_free(t->scan);
	for (size_t i = 0; i < t->aps_n; i++)
		free(t->aps[i].window);
	free(t->aps);
	free(t->cps);
	free(t);
}

rf_tar_ap *rf_tar_stream_take_aps(tar_stream *t, size_t *n)
{
	rf_tar_ap *a = t->aps;
	*n = t->aps_n;
	t->aps = NULL;
	t->aps_n = t->aps_cap = 0;
	return a;
}

uint64_t rf_tar_stream_zd_bytes(const tar_stream *t)
{
	return t->zd_bytes;
}

rf_tar_cp *rf_tar_stream_take_cps(tar_stream *t, size_t *n)
{
	rf_tar_cp *c = t->cps;
	*n = t->cps_n;
	t->cps = NULL;
	t->cps_n = t->cps_cap = 0;
	return c;
}

tar_scan *rf_tar_stream_scan(tar_stream *t)
{
	return t->scan;
}

uint64_t rf_tar_stream_decoded(const tar_stream *t)
{
	return t->total;
}

/* What one step may allocate: the scan's growth over a step's output (as
 * rf_tar_want_from counts it for a range of that many bytes), and on the
 * first step the window and the decompressor. */
static uint64_t step_bound(const tar_stream *t)
{
	uint64_t out =
	    RF_TAR_STREAM_STEP_OUT + RF_TAR_STREAM_WINDOW; /* the last call's overshoot */
	uint64_t headers = out / RF_TAR_BLOCK + 1;
	uint64_t scan = t ? rf_tar_scan_bytes(t->scan) : 0;
	uint64_t bound = 2 * scan + 2 * headers * (sizeof(tar_field) + sizeof(tar_sample)) + out;
	/* at most one access point per step (spacing > a step's output); its
	 * table doubling */
	bound += RF_TAR_WINDOW_BYTES + 2 * ((t ? t->aps_cap : 0) + 8) * sizeof(rf_tar_ap);
	/* zstd checkpoints: at most one per RF_TAR_CP_SPACING of the step's
	 * output and two more; the table doubling once or more to hold them */
	uint64_t cps = out / RF_TAR_CP_SPACING + 2;
	bound += 2 * ((t ? t->cps_cap : 0) + cps + 32) * sizeof(rf_tar_cp);
	if (!t)
		bound += sizeof(tar_stream) + RF_TAR_STREAM_WINDOW + RF_TAR_ZLIB_STATE +
		         RF_TAR_WINDOW_BYTES +
		         ZSTD_estimateDStreamSize((size_t)1 << RF_TAR_ZSTD_WINDOW_LOG);
	return bound;
}

/* The next range from where the decoder stopped: the rest of the range
 * delivered, when it stopped inside it (served from the bytes the engine
 * holds, no second read), else a new range. */
static int want_next(rf_fmt_open *o, const tar_stream *t)
{
	uint64_t at = t ? t->consumed : 0;
	uint64_t step = o->local ? RF_TAR_STEP_LOCAL_BYTES : RF_TAR_STEP_BYTES;
	uint64_t len = RF_MIN(step, o->size - at);
	if (o->got && at >= o->got_offset && at < o->got_offset + o->got_len)
		len = o->got_offset + o->got_len - at;
	o->want = (rf_fmt_want){
	    .offset = at,
	    .len = len,
	    .parse_bound = step_bound(t),
	};
	o->held_bytes = rf_tar_stream_bytes(t);
	return RF_FMT_NEED;
}

static int ap_add(rf_fmt_open *o, tar_stream *t, bool member, unsigned bits, rf_error *err);
static void aps_place(tar_stream *t);

static int stream_start(rf_fmt_open *o, int codec, tar_stream **out, rf_error *err)
{
	tar_stream *t = calloc(1, sizeof(*t));
	if (!t || !(t->win = malloc(RF_TAR_STREAM_WINDOW))) {
		free(t);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	}
	t->codec = codec;
	if (!(t->scan = calloc(1, sizeof(*t->scan)))) {
		free(t->win);
		free(t);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	}
	t->scan->member_start = UINT64_MAX;
	if (codec == RF_TAR_ZSTD) {
		t->zd = ZSTD_createDStream();
		if (!t->zd) {
			rf_tar_stream_free(t);
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		}
		ZSTD_DCtx_setParameter(t->zd, ZSTD_d_windowLogMax, RF_TAR_ZSTD_WINDOW_LOG);
	} else {
		/* 15 + 32: a gzip (or zlib) header, detected */
		if (inflateInit2(&t->zs, 15 + 32) != Z_OK) {
			rf_tar_stream_free(t);
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		}
		t->zs_live = true;
		if (!(t->hist = calloc(1, RF_TAR_WINDOW_BYTES)) || ap_add(o, t, true, 0, err) < 0) {
			rf_tar_stream_free(t);
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		}
	}
	*out = t;
	return 0;
}

static int too_large(rf_fmt_open *o, const tar_stream *t, rf_error *err)
{
	if (t->codec == RF_TAR_GZIP)
		return rf_fail(err, -EFBIG,
		               "shard %s: the gzip stream decodes to more than %llu GiB, the most "
		               "a .tar.gz may (its access points are metadata): write smaller "
		               "shards",
		               o->name, U64(RF_TAR_DECODED_MAX >> 30));
	return rf_fail(err, -EFBIG,
	               "shard %s: the zstd stream decodes to more than %llu GiB, the most a "
	               ".tar.zst may (its checkpoints are metadata): write smaller shards",
	               o->name, U64(RF_TAR_DECODED_MAX >> 30));
}

/* More than RF_TAR_RATIO_MAX decoded bytes per compressed byte taken (past
 * the first RF_TAR_RATIO_FREE): refused before the open decodes it all. */
static int too_dense(rf_fmt_open *o, const tar_stream *t, uint64_t decoded, rf_error *err)
{
	uint64_t in = RF_MAX(t->consumed, 1);
	if (decoded <= RF_TAR_RATIO_FREE || decoded / in < RF_TAR_RATIO_MAX)
		return 0;
	return rf_fail(err, -EFBIG,
	               "shard %s: the %s stream decodes to %llu bytes from its first %llu "
	               "compressed bytes, a ratio of %llu:1, past the %u:1 a compressed tar "
	               "may have (a decompression bomb?)",
	               o->name, codec_name(t->codec), U64(decoded), U64(t->consumed),
	               U64(decoded / in), RF_TAR_RATIO_MAX);
}

/* ------------------------------------------------ gzip access points
 *
 * zlib's zran.c, bounded: every RF_TAR_AP_SPACING decoded bytes, at the end
 * of a deflate block (inflate with Z_BLOCK stops there), the open keeps
 * where decoding can start again: the compressed byte, the bits of the
 * byte before still unused, and the 32 KiB of output the next block may
 * refer to; a gzip member's start needs no window. Units then begin at the
 * first sample at or after an access point and decode from it. */

/* The last 32 KiB of output, as a ring. */
static void hist_add(tar_stream *t, const uint8_t *p, size_t n)
{
	if (n >= RF_TAR_WINDOW_BYTES) {
		memcpy(t->hist, p + n - RF_TAR_WINDOW_BYTES, RF_TAR_WINDOW_BYTES);
		t->hist_at = 0;
		return;
	}
	size_t first = RF_MIN(n, RF_TAR_WINDOW_BYTES - t->hist_at);
	memcpy(t->hist + t->hist_at, p, first);
	memcpy(t->hist, p + first, n - first);
	t->hist_at = (t->hist_at + n) % RF_TAR_WINDOW_BYTES;
}

static int ap_add(rf_fmt_open *o, tar_stream *t, bool member, unsigned bits, rf_error *err)
{
	if (t->aps_n == t->aps_cap) {
		size_t cap = t->aps_cap ? 2 * t->aps_cap : 8;
		rf_tar_ap *a = realloc(t->aps, cap * sizeof(*a));
		if (!a)
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		t->aps = a;
		t->aps_cap = cap;
	}
	rf_tar_ap *a = &t->aps[t->aps_n];
	*a = (rf_tar_ap){.in = t->consumed,
	                 .out = t->total,
	                 .bits = (uint8_t)bits,
	                 .member = member,
	                 .first = UINT64_MAX};
	if (!member) { /* the window, oldest byte first */
		if (!(a->window = malloc(RF_TAR_WINDOW_BYTES)))
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		size_t tail = RF_TAR_WINDOW_BYTES - t->hist_at;
		memcpy(a->window, t->hist + t->hist_at, tail);
		memcpy(a->window + tail, t->hist, t->hist_at);
	}
	t->aps_n++;
	t->ap_last_out = t->total;
	return 0;
}

/* Gives the access points waiting for one the first sample that starts at
 * or after them; the one before ends where that sample starts, and the
 * compressed bytes read so far cover it (the scan saw its header). */
static void aps_place(tar_stream *t)
{
	const tar_scan *s = t->scan;
	while (t->aps_pending < t->aps_n) {
		rf_tar_ap *a = &t->aps[t->aps_pending];
		size_t i = a->first_hint;
		/* samples tile the tar (tar.c): sample i starts where i - 1 ends */
		while (i < s->sn && (i ? s->sv[i - 1].end : 0) < a->out)
			i++;
		a->first_hint = i;
		if (i == s->sn)
			return; /* not seen yet */
		a->first = i;
		if (t->aps_pending > 0)
			t->aps[t->aps_pending - 1].end_in = t->consumed;
		t->aps_pending++;
		if (t->aps_pending < t->aps_n)
			t->aps[t->aps_pending].first_hint = i;
	}
}

/* Whether the header the scan stopped at declares a member that ends past
 * the most a unit may decode to (the scan, not knowing the stream's end,
 * saw a tar of that size). */
static bool past_cap(const tar_stream *t)
{
	uint64_t at = t->scan->pos, size;
	if (at < t->win_at || at + RF_TAR_BLOCK > t->win_at + t->win_len)
		return false;
	const uint8_t *h = t->win + (at - t->win_at);
	if (!rf_tar_number(h + 124, 12, &size))
		return false;
	if (t->scan->ext.pax_size_set)
		size = t->scan->ext.pax_size;
	uint64_t max = decoded_max(t->codec);
	return at + RF_TAR_BLOCK > max || size > max - RF_TAR_BLOCK - at;
}

/* The scan over the window. With the stream not yet ended the tar's end is
 * not known: the scan sees a tar of the largest size a unit may decode to. */
static int scan_window(rf_fmt_open *o, tar_stream *t, rf_error *err)
{
	if (t->scan_end)
		return 0;
	rf_fmt_open d = {.name = o->name,
	                 .size = t->ended ? t->total : decoded_max(t->codec),
	                 .got = t->win,
	                 .got_offset = t->win_at,
	                 .got_len = t->win_len};
	int rc = rf_tar_scan_chunk(&d, t->scan, err);
	if (rc < 0 && !t->ended && past_cap(t))
		return too_large(o, t, err);
	if (rc < 0)
		return rc;
	if (rc == RF_TAR_SCAN_END)
		t->scan_end = true;
	aps_place(t);
	/* what lies before the next header is not needed again */
	uint64_t keep = t->scan->pos > t->win_at ? t->scan->pos - t->win_at : 0;
	if (keep >= t->win_len) {
		t->win_at += t->win_len;
		t->win_len = 0;
	} else if (keep) {
		memmove(t->win, t->win + keep, t->win_len - keep);
		t->win_len -= keep;
		t->win_at += keep;
	}
	return 0;
}

/* New decoded bytes [total, total + n) at win + win_len: kept from the next
 * header on (member data before it is dropped). */
static void took_output(tar_stream *t, size_t n)
{
	uint64_t from = t->total, to = t->total + n;
	t->total = to;
	uint64_t need = t->scan_end ? to : RF_MAX(t->scan->pos, t->win_at);
	if (t->win_len == 0)
		t->win_at = from;
	if (need >= to) { /* all of it skipped */
		t->win_len = 0;
		t->win_at = to;
		return;
	}
	t->win_len += n;
	if (need > t->win_at) {
		size_t drop = (size_t)(need - t->win_at);
		memmove(t->win, t->win + drop, t->win_len - drop);
		t->win_len -= drop;
		t->win_at = need;
	}
}

/* A checkpoint after a zstd call: the decoder has taken t->consumed bytes
 * and given `out`. The last one moves on until it lies RF_TAR_CP_SPACING
 * past the one before; then the next is added. */
static int cp_add(rf_fmt_open *o, tar_stream *t, uint64_t out, rf_error *err)
{
	rf_tar_cp c = {.out = out, .in = t->consumed};
	size_t n = t->cps_n;
	if (n >= 2 && t->cps[n - 1].out - t->cps[n - 2].out < RF_TAR_CP_SPACING) {
		t->cps[n - 1] = c;
		return 0;
	}
	if (n == t->cps_cap) {
		size_t cap = t->cps_cap ? 2 * t->cps_cap : 32;
		rf_tar_cp *a = realloc(t->cps, cap * sizeof(*a));
		if (!a)
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		t->cps = a;
		t->cps_cap = cap;
	}
	t->cps[t->cps_n++] = c;
	return 0;
}

/* Decodes from in[*pos..len) into the window's free room (zstd: at most
 * RF_TAR_ZSTD_CALL_OUT a call, so that a checkpoint follows each few input
 * bytes). */
static int decode_some(rf_fmt_open *o, tar_stream *t, const uint8_t *in, size_t len, size_t *pos,
                       size_t *made, rf_error *err)
{
	size_t room = RF_TAR_STREAM_WINDOW - t->win_len;
	*made = 0;
	if (t->codec == RF_TAR_ZSTD) {
		ZSTD_inBuffer ib = {in, len, *pos};
		ZSTD_outBuffer ob = {t->win + t->win_len, RF_MIN(room, RF_TAR_ZSTD_CALL_OUT), 0};
		size_t r = ZSTD_decompressStream(t->zd, &ob, &ib);
		if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
			return rf_fail(err, -ENOTSUP,
			               "shard %s: a zstd frame whose window is larger than %u MiB "
			               "(written with --long or --ultra?): recompress it without",
			               o->name, (1u << RF_TAR_ZSTD_WINDOW_LOG) >> 20);
		if (ZSTD_isError(r))
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: zstd stream near compressed byte %llu: %s",
			               o->name, U64(t->consumed + (ib.pos - *pos)),
			               ZSTD_getErrorName(r));
		t->consumed += ib.pos - *pos;
		*pos = ib.pos;
		*made = ob.pos;
		t->ended = r == 0 && ib.pos == ib.size && t->consumed == o->size;
		t->zd_bytes = RF_MAX(t->zd_bytes, (uint64_t)ZSTD_sizeof_DStream(t->zd));
		return cp_add(o, t, t->total + ob.pos, err);
	}
	t->zs.next_in = (Bytef *)(uintptr_t)(in + *pos);
	t->zs.avail_in = (uInt)RF_MIN(len - *pos, (size_t)UINT32_MAX);
	t->zs.next_out = t->win + t->win_len;
	t->zs.avail_out = (uInt)room;
	int r = inflate(&t->zs, Z_BLOCK); /* stops at each block's end: access points */
	size_t used = (size_t)(t->zs.next_in - (in + *pos));
	*made = room - t->zs.avail_out;
	hist_add(t, t->win + t->win_len, *made);
	t->consumed += used;
	*pos += used;
	bool spaced = t->total + *made - t->ap_last_out >= RF_TAR_AP_SPACING;
	if (r == Z_STREAM_END) {
		/* gzip members may follow one another (cat a.gz b.gz) */
		if (t->consumed < o->size) {
			inflateReset(&t->zs);
			if (spaced) {
				t->total += *made; /* the point lies after this output */
				int rc = ap_add(o, t, true, 0, err);
				t->total -= *made;
				RF_TRY(rc);
			}
		} else {
			t->ended = true;
		}
		return 0;
	}
	/* the end of a block that is not the last: decoding can start here */
	if (r == Z_OK && (t->zs.data_type & 128) && !(t->zs.data_type & 64) && spaced) {
		t->total += *made;
		int rc = ap_add(o, t, false, (unsigned)t->zs.data_type & 7, err);
		t->total -= *made;
		RF_TRY(rc);
	}
	if (r == Z_OK || (r == Z_BUF_ERROR && (*made || used)))
		return 0;
	if (r == Z_BUF_ERROR && *pos == len)
		return 0;     /* needs more input */
	if (r == Z_BUF_ERROR) /* input and room left, yet no progress: never loop on it */
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: gzip stream near compressed byte %llu: no progress",
		               o->name, U64(t->consumed));
	return rf_fail(err, RF_E_CORRUPT, "shard %s: gzip stream near compressed byte %llu: %s",
	               o->name, U64(t->consumed), t->zs.msg ? t->zs.msg : "corrupt");
}

/* Feeds the delivered range to the decompressor until it is consumed or the
 * step's output bound is reached. */
static int feed(rf_fmt_open *o, tar_stream *t, rf_error *err)
{
	const uint8_t *in = o->got;
	size_t len = (size_t)o->got_len, pos = (size_t)(t->consumed - o->got_offset);
	uint64_t out = 0;
	size_t made = 1;
	/* while input is left, or the decoder still gives bytes (a flush) */
	while ((pos < len || made > 0) && out < RF_TAR_STREAM_STEP_OUT && !t->ended) {
		size_t before = pos;
		RF_TRY(decode_some(o, t, in, len, &pos, &made, err));
		if (made == 0 && pos == before && pos < len) /* a decoder that stalls: never spin */
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: the %s stream near compressed byte %llu makes no "
			               "progress",
			               o->name, codec_name(t->codec), U64(t->consumed));
		if (t->total + made > decoded_max(t->codec))
			return too_large(o, t, err);
		RF_TRY(too_dense(o, t, t->total + made, err));
		took_output(t, made);
		out += made;
		if (t->win_len == RF_TAR_STREAM_WINDOW)
			RF_TRY(scan_window(o, t, err));
		if (t->win_len == RF_TAR_STREAM_WINDOW) /* the scan could use none of it */
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: decoded byte %llu: a header whose data does not "
			               "fit %u bytes",
			               o->name, U64(t->win_at), RF_TAR_STREAM_WINDOW);
	}
	return 0;
}

static int stream_step(rf_fmt_open *o, int codec, rf_error *err);

/* A stream cannot be entered again where it failed, so a failed step's
 * error stands: the same bytes delivered again get the same answer (the
 * engine re-reads a range whose step failed; that cannot resume a stream,
 * and the shard then fails naming the place). */
int rf_tar_stream_step(rf_fmt_open *o, int codec, rf_error *err)
{
	tar_stream *t = o->state;
	if (t && t->failed) {
		*err = t->fail;
		return err->code;
	}
	int rc = stream_step(o, codec, err);
	if (rc < 0 && (t = o->state)) {
		t->failed = true;
		t->fail = *err;
	}
	return rc;
}

static int stream_step(rf_fmt_open *o, int codec, rf_error *err)
{
	tar_stream *t = o->state;
	if (!o->got) {
		if (o->size == 0) {
			o->final = true;
			return rf_fail(err, RF_E_CORRUPT, "shard %s: an empty file is not a %s tar",
			               o->name, codec_name(codec));
		}
		return want_next(o, NULL);
	}
	if (!t) {
		RF_TRY(stream_start(o, codec, &t, err));
		o->state = t;
	}
	if (o->got_offset > t->consumed || o->got_offset + o->got_len <= t->consumed)
		return rf_fail(err, -EIO,
		               "shard %s: open step got bytes [%llu, +%llu), the stream is at %llu",
		               o->name, U64(o->got_offset), U64(o->got_len), U64(t->consumed));
	o->final = true; /* a stream cannot be entered again where it failed */
	RF_TRY(feed(o, t, err));
	if (!t->ended && t->consumed < o->size) {
		o->final = false;
		return want_next(o, t);
	}
	if (!t->ended)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: the %s stream ends early: %llu compressed bytes gave "
		               "%llu decoded bytes and no end of stream",
		               o->name, codec_name(codec), U64(o->size), U64(t->total));
	RF_TRY(scan_window(o, t, err)); /* the rest, now that the tar's size is known */
	if (!t->scan_end && t->scan->pos < t->total)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: decoded byte %llu: the tar's last header is cut short",
		               o->name, U64(t->scan->pos));
	if (t->scan->pos > t->total)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: the last member runs past the end of the decoded tar "
		               "(%llu bytes)",
		               o->name, U64(t->total));
	if (t->aps_pending > 0) /* the last placed point's unit ends with the object */
		t->aps[t->aps_pending - 1].end_in = o->size;
	decomp_end(t);
	o->final = false;
	o->held_bytes = rf_tar_stream_bytes(t);
	return RF_TAR_SCAN_END;
}

int rf_tar_stream_decode(int codec, const uint8_t *src, size_t src_len, uint8_t *dst,
                         size_t decoded, const char *name, rf_error *err)
{
	size_t got = 0;
	if (codec == RF_TAR_ZSTD) {
		size_t r = ZSTD_decompress(dst, decoded + 1, src, src_len);
		if (ZSTD_isError(r))
			return rf_fail(err, RF_E_CORRUPT, "shard %s: zstd stream: %s", name,
			               ZSTD_getErrorName(r));
		got = r;
	} else {
		z_stream zs = {0};
		if (inflateInit2(&zs, 15 + 32) != Z_OK)
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", name);
		zs.next_in = (Bytef *)(uintptr_t)src;
		zs.avail_in = (uInt)src_len;
		zs.next_out = dst;
		zs.avail_out = (uInt)(decoded + 1);
		int r;
		while ((r = inflate(&zs, Z_NO_FLUSH)) == Z_STREAM_END && zs.avail_in > 0)
			inflateReset(&zs);
		got = (size_t)(zs.next_out - dst);
		const char *msg = zs.msg;
		inflateEnd(&zs);
		if (r != Z_STREAM_END)
			return rf_fail(err, RF_E_CORRUPT, "shard %s: gzip stream: %s", name,
			               r == Z_BUF_ERROR ? "truncated, or longer than the open saw"
			                                : (msg ? msg : "corrupt"));
	}
	if (got != decoded)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: the %s stream decoded to %zu bytes, the open saw %zu",
		               name, codec_name(codec), got, decoded);
	return 0;
}

/* The gzip stream ended inside the unit: past a raw stream's trailer (CRC-32
 * and size), the next member starts with its own header. */
static int next_member(z_stream *zs, bool *raw)
{
	if (*raw) {
		if (zs->avail_in < 8)
			return -1;
		zs->next_in += 8;
		zs->avail_in -= 8;
		*raw = false;
		return inflateReset2(zs, 15 + 16) == Z_OK ? 0 : -1;
	}
	return inflateReset(zs) == Z_OK ? 0 : -1;
}

/* Inflates exactly want bytes into out (want > 0). */
static int inflate_exact(z_stream *zs, bool *raw, uint8_t *out, size_t want)
{
	zs->next_out = out;
	zs->avail_out = (uInt)want;
	while (zs->avail_out > 0) {
		uInt before = zs->avail_out;
		int r = inflate(zs, Z_NO_FLUSH);
		if (r == Z_STREAM_END) {
			if (zs->avail_out > 0 && next_member(zs, raw) < 0)
				return -1;
			continue;
		}
		if (r != Z_OK && !(r == Z_BUF_ERROR && zs->avail_out < before))
			return -1;
		if (zs->avail_out == before && zs->avail_in == 0)
			return -1; /* truncated */
	}
	return 0;
}

int rf_tar_stream_decode_at(const uint8_t *src, size_t src_len, const rf_tar_ap *a, uint64_t skip,
                            uint8_t *dst, size_t dst_cap, size_t span, const char *name, uint32_t u,
                            rf_error *err)
{
	z_stream zs = {0};
	bool raw = !a->member;
	if (inflateInit2(&zs, raw ? -15 : 15 + 16) != Z_OK)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", name);
	const uint8_t *p = src;
	size_t n = src_len;
	int rc = 0;
	if (raw && a->bits) { /* the bits of the byte before the point */
		if (n == 0 || inflatePrime(&zs, a->bits, p[0] >> (8 - a->bits)) != Z_OK)
			rc = -1;
		p++, n--;
	}
	if (rc == 0 && raw && inflateSetDictionary(&zs, a->window, RF_TAR_WINDOW_BYTES) != Z_OK)
		rc = -1;
	zs.next_in = (Bytef *)(uintptr_t)p;
	zs.avail_in = (uInt)n;
	for (uint64_t left = skip; rc == 0 && left > 0;) { /* dst as scratch */
		size_t step = (size_t)RF_MIN(left, (uint64_t)dst_cap);
		rc = inflate_exact(&zs, &raw, dst, step);
		left -= step;
	}
	if (rc == 0 && span > 0)
		rc = inflate_exact(&zs, &raw, dst, span);
	const char *msg = zs.msg;
	inflateEnd(&zs);
	if (rc < 0)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: unit %u: the gzip stream from compressed byte %llu does not "
		    "decode to the %zu bytes the open saw (%s)",
		    name, u, U64(a->in), span, msg ? msg : "truncated or damaged");
	return 0;
}

/* ------------------------------------------ sequential .tar.zst units
 *
 * One zstd frame cannot be entered mid-way, so a large .tar.zst's units
 * decode through one stream state, in order: `in` is the next compressed
 * byte the decoder needs, `out` the decoded bytes it has given. A unit at
 * or after `out` decodes forward to it (the bytes before it dropped into
 * scratch: skipped), one before restarts the stream. Compressed bytes a
 * unit's range held past where its decoding stopped are kept in the carry
 * ([in, in + carry_len)) for the next unit, whose range starts after them;
 * whatever is missing is asked for (RF_FMT_MORE from `in`). */

typedef struct tar_seq {
	ZSTD_DStream *zd;
	uint64_t in, out;
	uint8_t *carry; /* RF_TAR_SEQ_CARRY: compressed [in, in + carry_len) */
	size_t carry_at, carry_len;
	uint8_t *scratch; /* RF_TAR_SEQ_SCRATCH: decoded bytes dropped */
	uint32_t unit;    /* the unit in progress (a call returned RF_FMT_MORE) */
	bool unit_live;
	bool frame_end; /* the last call ended a frame (and flushed it) */
} tar_seq;

/* A fresh decoder's buffers for the same frames match the open's; the
 * margin covers its context's own bytes. */
uint64_t rf_tar_seq_need(uint64_t zd_bytes)
{
	return sizeof(tar_seq) + RF_TAR_SEQ_CARRY + RF_TAR_SEQ_SCRATCH + zd_bytes + (64u << 10);
}

uint64_t rf_tar_seq_held(const void *state)
{
	const tar_seq *q = state;
	return q ? sizeof(*q) + RF_TAR_SEQ_CARRY + RF_TAR_SEQ_SCRATCH + ZSTD_sizeof_DStream(q->zd)
	         : 0;
}

void rf_tar_seq_free(void *state)
{
	tar_seq *q = state;
	if (!q)
		return;
	ZSTD_freeDStream(q->zd);
	free(q->carry);
	free(q->scratch);
	free(q);
}

void rf_tar_seq_reset(void *state)
{
	tar_seq *q = state;
	if (!q)
		return;
	ZSTD_DCtx_reset(q->zd, ZSTD_reset_session_only);
	q->in = q->out = 0;
	q->carry_at = q->carry_len = 0;
	q->unit_live = false;
	q->frame_end = false;
}

static int seq_new(tar_seq **out, const char *name, rf_error *err)
{
	tar_seq *q = calloc(1, sizeof(*q));
	if (q) {
		q->zd = ZSTD_createDStream();
		q->carry = malloc(RF_TAR_SEQ_CARRY);
		q->scratch = malloc(RF_TAR_SEQ_SCRATCH);
	}
	if (!q || !q->zd || !q->carry || !q->scratch ||
	    ZSTD_isError(
	        ZSTD_DCtx_setParameter(q->zd, ZSTD_d_windowLogMax, RF_TAR_ZSTD_WINDOW_LOG))) {
		rf_tar_seq_free(q);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for a zstd stream state",
		               name);
	}
	*out = q;
	return 0;
}

/* The input the decoder takes next: the carry, else src from `in`. */
static ZSTD_inBuffer seq_input(const tar_seq *q, const uint8_t *src, size_t src_len,
                               uint64_t src_offset)
{
	if (q->carry_len)
		return (ZSTD_inBuffer){q->carry + q->carry_at, q->carry_len, 0};
	if (src && q->in >= src_offset && q->in - src_offset < src_len)
		return (ZSTD_inBuffer){src + (q->in - src_offset), src_len - (q->in - src_offset),
		                       0};
	return (ZSTD_inBuffer){NULL, 0, 0};
}

/* The output the decoder fills next: scratch before the unit (dropped) and
 * after it (the last unit's tail), else the unit's bytes in dst. */
static ZSTD_outBuffer seq_output(const tar_seq *q, const rf_tar_seq_unit *w, uint8_t *dst)
{
	uint64_t end = w->start + w->span;
	if (q->out < w->start)
		return (ZSTD_outBuffer){q->scratch,
		                        (size_t)RF_MIN(w->start - q->out, RF_TAR_SEQ_SCRATCH), 0};
	if (q->out < end)
		return (ZSTD_outBuffer){dst + (q->out - w->start), (size_t)(end - q->out), 0};
	return (ZSTD_outBuffer){q->scratch, RF_TAR_SEQ_SCRATCH, 0};
}

/* Whether the unit is complete: its bytes given, and for the last one the
 * stream's end met (every frame ended, flushed, checked). */
static bool seq_done(const tar_seq *q, const rf_tar_seq_unit *w)
{
	if (q->out < w->start + w->span)
		return false;
	return !w->last || (q->frame_end && q->in == w->size);
}

/* One decoder call: 1 (progress), 0 (it needs input it was not given), or
 * an error. */
static int seq_call(tar_seq *q, const rf_tar_seq_unit *w, const uint8_t *src, size_t src_len,
                    uint64_t src_offset, uint8_t *dst, rf_fmt_more *more, const char *name,
                    rf_error *err)
{
	ZSTD_inBuffer ib = seq_input(q, src, src_len, src_offset);
	ZSTD_outBuffer ob = seq_output(q, w, dst);
	bool drop = q->out<w->start, from_carry = q->carry_len> 0;
	size_t r = ZSTD_decompressStream(q->zd, &ob, &ib);
	if (ZSTD_isError(r))
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: zstd stream near compressed byte %llu: %s", name,
		               w->u, U64(q->in + ib.pos), ZSTD_getErrorName(r));
	q->in += ib.pos;
	q->out += ob.pos;
	if (from_carry) {
		q->carry_at += ib.pos;
		q->carry_len -= ib.pos;
	}
	if (drop)
		more->skipped_bytes += ob.pos;
	q->frame_end = r == 0;
	if (q->out > w->decoded)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: the zstd stream decodes to more than the %llu "
		               "bytes the open saw (compressed byte %llu)",
		               name, w->u, U64(w->decoded), U64(q->in));
	if (ib.pos || ob.pos)
		return 1;
	if (ib.size > 0) /* input and room, yet no progress: never spin on it */
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: unit %u: the zstd stream near compressed byte %llu makes no "
		    "progress",
		    name, w->u, U64(q->in));
	return 0;
}

/* The rest of src past the bytes the state holds, into the carry when it
 * fits (else the next unit asks for it again). */
static void seq_keep(tar_seq *q, const uint8_t *src, size_t src_len, uint64_t src_offset)
{
	uint64_t from = q->in + q->carry_len;
	if (!src || from < src_offset || from - src_offset >= src_len)
		return;
	size_t rest = src_len - (size_t)(from - src_offset);
	if (q->carry_len + rest > RF_TAR_SEQ_CARRY)
		return;
	memmove(q->carry, q->carry + q->carry_at, q->carry_len);
	q->carry_at = 0;
	memcpy(q->carry + q->carry_len, src + (from - src_offset), rest);
	q->carry_len += rest;
}

static int seq_run(tar_seq *q, const rf_tar_seq_unit *w, const uint8_t *src, size_t src_len,
                   uint64_t src_offset, uint8_t *dst, rf_fmt_more *more, const char *name,
                   rf_error *err)
{
	while (!seq_done(q, w)) {
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
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: unit %u: the zstd stream ends early: %llu compressed bytes "
		    "gave %llu decoded bytes and no end of stream",
		    name, w->u, U64(w->size), U64(q->out));
	}
	if (w->last && q->out != w->decoded)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: the zstd stream decodes to %llu bytes, the open "
		               "saw %llu",
		               name, w->u, U64(q->out), U64(w->decoded));
	seq_keep(q, src, src_len, src_offset);
	q->unit_live = false;
	return 0;
}

int rf_tar_seq_decode(void **state, const rf_tar_seq_unit *w, const uint8_t *src, size_t src_len,
                      uint64_t src_offset, uint8_t *dst, rf_fmt_more *more, const char *name,
                      rf_error *err)
{
	tar_seq *q = *state;
	if (!q) {
		RF_TRY(seq_new(&q, name, err));
		*state = q;
	}
	int rc = 0;
	if (more->cap == 0 || src_offset > w->size || src_len > w->size - src_offset)
		rc =
		    rf_fail(err, -EINVAL,
		            "shard %s: unit %u: bytes [%llu, +%zu) of a %llu-byte object, requests "
		            "of at most %llu",
		            name, w->u, U64(src_offset), src_len, U64(w->size), U64(more->cap));
	else if (more->again && (!q->unit_live || q->unit != w->u))
		rc = rf_fail(err, -EINVAL,
		             "shard %s: unit %u: a call for more bytes of a unit not in progress",
		             name, w->u);
	if (rc < 0) {
		rf_tar_seq_reset(q);
		return rc;
	}
	if (!more->again) {
		if (q->out > w->start) /* behind us: the stream from its start */
			rf_tar_seq_reset(q);
		q->unit = w->u;
		q->unit_live = true;
	}
	rc = seq_run(q, w, src, src_len, src_offset, dst, more, name, err);
	if (rc >= 0 && rf_tar_seq_held(q) > w->state_max)
		rc = rf_fail(err, RF_E_CORRUPT,
		             "shard %s: unit %u: its zstd stream's decoder holds %llu bytes, more "
		             "than the %llu the open's did (a larger window: the object changed?)",
		             name, w->u, U64(rf_tar_seq_held(q)), U64(w->state_max));
	if (rc < 0)
		rf_tar_seq_reset(q);
	return rc;
}
