/* tfrecord.c - TensorFlow's TFRecord files behind the format seam. A file
 * is a run of frames (tensorflow/core/lib/io/record_writer.cc):
 *
 *   u64 length, u32 masked CRC-32C of the length, data, u32 masked CRC-32C
 *   of the data     (masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8)
 *
 * with no index, so open learns the layout by walking the frames in large
 * sequential ranges (every length's CRC checked, every Example's keys read
 * for the field names and the decoded sizes), checking each frame against
 * a DALI tfrecord2idx sidecar PREFIX.idx ("OFFSET SIZE" per record) when
 * there is one; raw records take the index alone (checked against the
 * file's size, then against every frame at decode). Records are grouped into
 * units of about RF_TFR_UNIT_BYTES. A record is a tf.train.Example whose
 * features become its fields (protobuf.c; the encoding in protobuf.h), or,
 * with rf_tfr_opts.raw (option tfrecord_raw), its data as one field
 * ("record"), read in place. A .tfrecord.gz / .tfrecord.zlib (TensorFlow's
 * GZIP / ZLIB compression) is inflated once at open in bounded memory, its
 * frames walked as they come (the compressed open, below); one of at most
 * RF_TFR_WHOLE_MAX decoded bytes is then one unit, the whole object,
 * decoded again at decode; a larger one (up to RF_TFR_DECODED_MAX) is
 * sequential units between the open's checkpoints, decoded in order
 * through one inflate state (tfrecord_stream.c). Every data CRC is checked
 * at decode. */
#include "tfrecord.h"

#include "crc32c.h"
#include "protobuf.h"

#include <stdlib.h>
#include <zlib.h>

#define U64(x) ((unsigned long long)(x))

/* ------------------------------------------------------------ framing */

uint32_t rf_tfr_masked_crc(const void *p, size_t len)
{
	uint32_t c = rf_crc32c(0, p, len);
	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

int rf_tfr_frame(const uint8_t *p, uint64_t avail, uint64_t at, uint64_t record, bool check_data,
                 uint64_t *data_len, uint64_t *frame, const char *name, rf_error *err)
{
	if (avail < 12)
		return 2;
	uint64_t len = rf_load_le64(p);
	uint32_t crc = rf_load_le32(p + 8), want = rf_tfr_masked_crc(p, 8);
	if (crc != want)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: record %llu (frame at byte %llu): byte %llu: the length's "
		    "CRC is 0x%08x, its length bytes give 0x%08x",
		    name, U64(record), U64(at), U64(at + 8), crc, want);
	if (len > RF_TFR_RECORD_MAX)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: record %llu (frame at byte %llu): a record of %llu bytes "
		               "(at most %u)",
		               name, U64(record), U64(at), U64(len), RF_TFR_RECORD_MAX);
	*data_len = len;
	*frame = RF_TFR_FRAME_BYTES + len;
	if (avail < *frame)
		return 1;
	if (check_data) {
		uint32_t dc = rf_load_le32(p + 12 + len), dw = rf_tfr_masked_crc(p + 12, len);
		if (dc != dw)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: record %llu (frame at byte %llu): byte %llu: the "
			               "data's CRC is 0x%08x, its %llu data bytes give 0x%08x",
			               name, U64(record), U64(at), U64(at + 12 + len), dc, U64(len),
			               dw);
	}
	return 0;
}

int rf_tfr_codec_of(const char *leaf)
{
	size_t n = strlen(leaf);
	if (n > 3 && strcmp(leaf + n - 3, ".gz") == 0)
		return RF_TFR_GZIP;
	if (n > 5 && strcmp(leaf + n - 5, ".zlib") == 0)
		return RF_TFR_ZLIB;
	return RF_TFR_PLAIN;
}

/* The stream's decoded bytes into dst[0, cap): *out_len of them; a stream
 * longer than cap is an error (-EFBIG); gzip members may follow each
 * other. */
static int inflate_all(int codec, const uint8_t *src, uint64_t len, uint8_t *dst, uint64_t cap,
                       uint64_t *out_len, const char *name, rf_error *err)
{
	z_stream z = {0};
	int bits = codec == RF_TFR_GZIP ? 15 + 16 : 15;
	if (inflateInit2(&z, bits) != Z_OK)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for zlib", name);
	uint64_t in = 0, out = 0;
	int rc = 0;
	for (;;) {
		z.next_in = (Bytef *)(src + in);
		z.avail_in = (uInt)RF_MIN(len - in, 1u << 30);
		z.next_out = dst + out;
		z.avail_out = (uInt)RF_MIN(cap - out, 1u << 30);
		uInt ai = z.avail_in, ao = z.avail_out;
		int zr = inflate(&z, Z_NO_FLUSH);
		in += ai - z.avail_in;
		out += ao - z.avail_out;
		if (zr == Z_STREAM_END) {
			if (in == len)
				break;
			if (codec != RF_TFR_GZIP) {
				rc = rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: %llu bytes past the zlib stream's end (byte %llu)",
				    name, U64(len - in), U64(in));
				break;
			}
			inflateReset(&z); /* another gzip member */
			continue;
		}
		if (zr == Z_OK && out == cap) {
			rc = rf_fail(err, -EFBIG,
			             "shard %s: decodes to more than %llu bytes (at most %u MiB "
			             "for a compressed TFRecord: decompress it, or write smaller "
			             "files)",
			             name, U64(cap - 1), RF_TFR_WHOLE_MAX >> 20);
			break;
		}
		if (zr == Z_OK && ai != z.avail_in)
			continue;
		rc = rf_fail(err, RF_E_CORRUPT,
		             "shard %s: compressed byte %llu (decoded byte %llu): %s", name,
		             U64(in), U64(out),
		             zr == Z_OK || zr == Z_BUF_ERROR ? "the stream ends early"
		             : z.msg                         ? z.msg
		                                             : "not a zlib/gzip stream");
		break;
	}
	inflateEnd(&z);
	*out_len = out;
	return rc;
}

/* ------------------------------------------------------------ names */

/* Feature key -> name id: the hint first (records keep their keys in one
 * order), then every name. -1 when absent. */
static int name_find(char *const *names, uint32_t n, const uint8_t *key, uint32_t len,
                     uint32_t *hint)
{
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (*hint + k) % n;
		if (strncmp(names[i], (const char *)key, len) == 0 && names[i][len] == 0) {
			*hint = (i + 1) % n;
			return (int)i;
		}
	}
	return -1;
}

/* ------------------------------------------------------------ the layout */

typedef struct tfr_layout {
	bool raw, from_index;
	bool from_cache; /* the index's bytes were the index cache's entry */
	int codec;
	uint64_t decoded; /* a compressed file's decoded bytes */
	/* a large compressed file's sequential units (else NULL): unit u's
	 * decoded bytes [unit_out[u], + unit_span[u]) */
	uint64_t *unit_out;
	uint32_t *unit_span;
	uint32_t *len;  /* every record's data bytes */
	uint32_t *slab; /* walked Examples: every record's slab bytes (the cache's entry) */
	char **names;
	uint32_t names_n;
	char stem[48];
} tfr_layout;

static void names_free(char **names, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void tfr_close(rf_shard_index *ix, void *priv)
{
	tfr_layout *L = priv;
	if (L) {
		free(L->len);
		free(L->slab);
		free(L->unit_out);
		free(L->unit_span);
		names_free(L->names, L->names_n);
		free(L);
	}
	rf_index_free(ix);
}

static void set_stem(tfr_layout *L, const char *url)
{
	const char *b = strrchr(url, '/');
	b = b ? b + 1 : url;
	size_t n = rf_url_path_len(b);
	const char *dot = memmem(b, n, ".tfrecord", 9);
	if (dot)
		n = (size_t)(dot - b);
	snprintf(L->stem, sizeof(L->stem), "%.*s", (int)RF_MIN(n, 40), b);
}

/* ------------------------------------------------------------ the scan */

typedef struct tfr_scan {
	uint64_t pos;        /* the next frame's byte (decoded, for a compressed file) */
	uint64_t n, cap;     /* records met */
	uint32_t *len, *dec; /* per record: data bytes, slab bytes (Examples read) */
	char **names;
	uint32_t names_n, hint;
	bool raw, cache_only;
	bool idx_cached; /* the index read is the index cache's entry */
	int codec;
	char *idx_url, *idx_name;
	uint64_t idx_bytes, idx_lines;
	uint32_t *idx_lens; /* Examples with an index: its records' data bytes */
	uint32_t largest;   /* the largest record's bytes as decode delivers it */
	uint64_t idx_n;
	uint64_t names_bytes;
	/* a compressed file's stream: inflate (live once the first step ran),
	 * the compressed bytes it took and the decoded bytes it gave, and the
	 * window of decoded bytes [pos, pos + win_len) not walked yet (at most
	 * win_cap; win_want: the frame at pos needs that much, grown at the
	 * next step, within its declared bound) */
	z_stream zs;
	bool zs_live, z_ended;
	bool z_failed; /* a step failed: every later call gives the same error */
	rf_error z_fail;
	uint64_t z_in, z_out;
	uint8_t *win;
	uint64_t win_len, win_cap, win_want;
	struct tfr_cp {
		uint64_t out, in; /* [0, in) compressed decodes to at least [0, out) */
	} * cps;
	uint64_t cps_n, cps_cap;
	/* the walk's carry: the bytes [pos, pos + carry_len) of a frame a range
	 * ended inside, so the next range starts where the last one ended
	 * (asking from pos again read those bytes twice: 1.7 times a file of
	 * 600 KB records at the open) */
	uint8_t *carry;
	uint64_t carry_len, carry_cap;
} tfr_scan;

/* What build_layout may allocate for n records (at most a unit each). */
static uint64_t layout_bound(uint64_t n)
{
	return sizeof(rf_shard_index) + sizeof(tfr_layout) + 4096 + n * (sizeof(rf_block_info) + 4);
}

static uint64_t scan_bytes(const tfr_scan *s)
{
	return sizeof(*s) + s->cap * 8 + s->idx_n * 4 + s->names_bytes + s->carry_cap +
	       (s->zs_live ? RF_TFR_ZLIB_STATE : 0) + s->win_cap +
	       s->cps_cap * sizeof(struct tfr_cp) + (s->idx_url ? 2 * strlen(s->idx_url) + 2 : 0);
}

static void scan_free(tfr_scan *s)
{
	if (!s)
		return;
	free(s->len);
	free(s->dec);
	names_free(s->names, s->names_n);
	free(s->idx_url);
	free(s->idx_name);
	free(s->idx_lens);
	free(s->carry);
	if (s->zs_live)
		inflateEnd(&s->zs);
	free(s->win);
	free(s->cps);
	free(s);
}

static int scan_push(tfr_scan *s, uint32_t len, uint32_t dec, const char *name, rf_error *err)
{
	if (s->n == s->cap) {
		uint64_t cap = s->cap ? 2 * s->cap : 1024;
		uint32_t *a = realloc(s->len, cap * 4);
		if (a)
			s->len = a;
		uint32_t *b = a ? realloc(s->dec, cap * 4) : NULL;
		if (b)
			s->dec = b;
		if (!a || !b)
			return rf_fail(err, -ENOMEM, "shard %s: out of memory for the records",
			               name);
		s->cap = cap;
	}
	s->len[s->n] = len;
	s->dec[s->n] = dec;
	s->n++;
	return 0;
}

/* An Example's keys interned, its slab bytes summed. */
typedef struct ex_sum {
	tfr_scan *s;
	uint64_t out, nf;
	const char *name;
	rf_error *err;
	int rc;
} ex_sum;

static int sum_feature(void *ctx, const rf_ex_feature *f)
{
	ex_sum *x = ctx;
	tfr_scan *s = x->s;
	if (name_find(s->names, s->names_n, f->key, f->key_len, &s->hint) < 0) {
		if (s->names_n >= RF_TFR_FIELDS_MAX) {
			x->rc = rf_fail(x->err, RF_E_CORRUPT,
			                "shard %s: more than %u distinct feature keys", x->name,
			                RF_TFR_FIELDS_MAX);
			return 1;
		}
		char **v = s->names_n % 64 ? s->names
		                           : realloc(s->names, (s->names_n + 64) * sizeof(char *));
		char *k = v ? strndup((const char *)f->key, f->key_len) : NULL;
		if (v)
			s->names = v;
		if (!k) {
			x->rc = rf_fail(x->err, -ENOMEM, "shard %s: out of memory", x->name);
			return 1;
		}
		s->names[s->names_n++] = k;
		s->names_bytes += f->key_len + 1 + sizeof(char *) + 16;
	}
	x->out += (f->out_bytes + 7) & ~7ull;
	x->nf++;
	return 0;
}

/* A record's data that is not an Example: a CRC error when the data's CRC
 * is wrong (the bytes are damaged), else the walk's. */
static int not_example(const uint8_t *frame, uint64_t len, uint64_t at, uint64_t record,
                       const rf_pb_error *pe, const char *name, rf_error *err)
{
	uint64_t dl, fl;
	RF_TRY(
	    rf_tfr_frame(frame, RF_TFR_FRAME_BYTES + len, at, record, true, &dl, &fl, name, err));
	return rf_fail(err, RF_E_CORRUPT,
	               "shard %s: record %llu (frame at byte %llu): byte %llu: not a "
	               "tf.train.Example: %s (read the records as bytes: tfrecord_raw)",
	               name, U64(record), U64(at), U64(at + 12 + pe->at), pe->what);
}

/* The frames of p[0, avail) from stream byte `at` (s->pos): whole ones
 * taken (an Example's keys and sizes with them), s->pos past them. *need:
 * 0, or the bytes from s->pos the next frame needs. `check_data`: every
 * data CRC checked (a compressed file's, decoded here anyway). */
static int scan_frames(tfr_scan *s, const uint8_t *p, uint64_t avail, bool check_data,
                       uint64_t *need, const char *name, rf_error *err)
{
	uint64_t off = 0;
	*need = 0;
	while (off < avail) {
		uint64_t len, frame;
		int rc = rf_tfr_frame(p + off, avail - off, s->pos, s->n, check_data, &len, &frame,
		                      name, err);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			*need = rc == 2 ? 12 : frame;
			return 0;
		}
		if (s->idx_lens && (s->n >= s->idx_n || len != s->idx_lens[s->n]))
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "index %s: record %llu at offset %llu: the frame holds %llu data "
			    "bytes, the index says %llu (the index is stale or wrong: write "
			    "it again with ringfeed index)",
			    s->idx_name, U64(s->n), U64(s->pos), U64(len),
			    s->n < s->idx_n ? U64(s->idx_lens[s->n]) : 0ull);
		uint64_t dec = rf_tfr_rec_table(1), rec = frame; /* a raw record: its frame */
		if (!s->raw) {
			ex_sum x = {.s = s, .name = name, .err = err};
			rf_pb_error pe = {0};
			int w = rf_example_walk(p + off + 12, len, sum_feature, &x, NULL, &pe);
			if (w > 0)
				return x.rc;
			if (w < 0)
				return not_example(p + off, len, s->pos, s->n, &pe, name, err);
			dec = x.out + rf_tfr_rec_table(x.nf);
			rec = x.out; /* its fields, each padded to 8 */
		}
		s->largest = (uint32_t)RF_MAX(s->largest, rec);
		if (dec > RF_BLOCK_DECODED_MAX / 2)
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: record %llu (frame at byte %llu) decodes to %llu "
			               "bytes (at most %u)",
			               name, U64(s->n), U64(s->pos), U64(dec),
			               RF_BLOCK_DECODED_MAX / 2);
		RF_TRY(scan_push(s, (uint32_t)len, (uint32_t)dec, name, err));
		s->pos += frame;
		off += frame;
	}
	return 0;
}

/* ------------------------------------------------------------ units */

/* Units: runs of whole records of about RF_TFR_UNIT_BYTES stored, closed
 * before one would decode past the largest block (a sequential unit's
 * slab holds its frames too: `frames`). */
static uint32_t units_fill(const tfr_scan *s, bool frames, rf_shard_index *ix)
{
	uint32_t u = 0;
	rf_block_info *b = NULL, tmp;
	uint64_t at = 0, stored = 0, dec = 0;
	for (uint64_t i = 0; i < s->n; i++) {
		uint64_t f = RF_TFR_FRAME_BYTES + (uint64_t)s->len[i];
		uint64_t d = s->dec[i] + (frames ? f : 0);
		if (b && (stored >= RF_TFR_UNIT_BYTES || dec + d + 64 > RF_BLOCK_DECODED_MAX ||
		          stored + f > UINT32_MAX))
			b = NULL;
		if (!b) {
			b = ix ? &ix->block[u] : &tmp;
			*b = (rf_block_info){.offset = at, .first_record = i};
			u++;
			stored = dec = 0;
		}
		stored += f;
		dec += d;
		b->records++;
		b->compressed_bytes = (uint32_t)stored;
		b->decoded_bytes = (uint32_t)(dec + (frames ? 32 : 24)); /* frames: padded to 8 */
		at += f;
	}
	return u;
}

/* A large compressed file's sequential units: runs of whole records
 * (units_fill over the decoded frames), unit u the compressed range
 * [c(u - 1), c(u)), c(u) the compressed bytes of the first checkpoint at
 * or past the unit's decoded end (c(-1) = 0; the last unit ends with the
 * object): the bytes that decode past it, read in order. */
static int fill_seq(rf_fmt_open *o, const tfr_scan *s, tfr_layout *L, rf_shard_index *ix,
                    rf_error *err)
{
	ix->blocks = units_fill(s, true, ix);
	uint64_t prev = 0, k = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		rf_block_info *b = &ix->block[u];
		uint64_t start = b->offset, span = b->compressed_bytes;
		while (k < s->cps_n && s->cps[k].out < start + span)
			k++;
		uint64_t c = u + 1 < ix->blocks && k < s->cps_n ? s->cps[k].in : o->size;
		if (c < prev || c > o->size || c - prev > UINT32_MAX ||
		    b->decoded_bytes > RF_BLOCK_DECODED_MAX)
			return rf_fail(
			    err, -EFBIG,
			    "shard %s: records %llu..%llu decode to %llu bytes from "
			    "compressed bytes [%llu, %llu): more than one unit may be (%u "
			    "MiB decoded, 4 GiB stored)",
			    o->name, U64(b->first_record), U64(b->first_record + b->records - 1),
			    U64(span), U64(prev), U64(c), RF_BLOCK_DECODED_MAX >> 20);
		L->unit_out[u] = start;
		L->unit_span[u] = (uint32_t)span;
		b->offset = prev;
		b->compressed_bytes = (uint32_t)(c - prev);
		prev = c;
	}
	rf_fmt_layout_sums(ix);
	ix->sequential = 1;
	return 0;
}

static int build_layout(rf_fmt_open *o, tfr_scan *s, bool from_index, rf_error *err)
{
	tfr_layout *L = calloc(1, sizeof(*L));
	rf_shard_index *ix = calloc(1, sizeof(*ix));
	if (L) {
		L->raw = s->raw;
		L->from_index = from_index;
		L->from_cache = from_index && s->idx_cached;
		L->codec = s->codec;
	}
	bool seq = s->codec && s->z_out > RF_TFR_WHOLE_MAX && s->n > 0;
	uint32_t units = L ? units_fill(s, seq, NULL) : 0;
	if (s->codec && !seq && units > 1)
		units = 1; /* the whole object */
	if (L && seq) {
		L->unit_out = calloc(units, sizeof(uint64_t));
		L->unit_span = calloc(units, sizeof(uint32_t));
	}
	if (ix) {
		ix->metadata = strdup("");
		ix->block = calloc(units ? units : 1, sizeof(rf_block_info));
	}
	if (!L || !ix || !ix->metadata || !ix->block || (seq && (!L->unit_out || !L->unit_span))) {
		tfr_close(ix, L);
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for the layout", o->name);
	}
	ix->file_bytes = o->size;
	ix->records = s->n;
	ix->largest_record_bytes = s->largest;
	L->decoded = s->z_out;
	if (seq) {
		int rc = fill_seq(o, s, L, ix, err);
		if (rc < 0) {
			tfr_close(ix, L);
			return rc;
		}
	} else if (s->codec) {
		uint64_t dec = (s->z_out + 7) / 8 * 8 + 24;
		for (uint64_t i = 0; i < s->n; i++)
			dec += s->dec[i];
		ix->blocks = s->n ? 1 : 0;
		if (s->n) {
			if (dec > RF_BLOCK_DECODED_MAX || o->size > UINT32_MAX) {
				tfr_close(ix, L);
				return rf_fail(
				    err, -EFBIG,
				    "shard %s: %llu records decode to %llu bytes, more than "
				    "one unit may be (%u MiB)",
				    o->name, U64(s->n), U64(dec), RF_BLOCK_DECODED_MAX >> 20);
			}
			ix->block[0] = (rf_block_info){.compressed_bytes = (uint32_t)o->size,
			                               .decoded_bytes = (uint32_t)dec,
			                               .records = (uint32_t)s->n};
		}
		rf_fmt_layout_sums(ix);
	} else {
		ix->blocks = units_fill(s, false, ix);
		rf_fmt_layout_sums(ix);
		for (uint32_t u = 0; u < ix->blocks; u++)
			if (ix->block[u].decoded_bytes > RF_BLOCK_DECODED_MAX) {
				uint64_t r = ix->block[u].first_record;
				tfr_close(ix, L);
				o->final = true;
				return rf_fail(
				    err, -EFBIG,
				    "shard %s: record %llu of %u bytes may decode to more "
				    "than a unit holds (%u MiB) when its Example is unread: "
				    "open it without its index file",
				    o->name, U64(r), s->len[r], RF_BLOCK_DECODED_MAX >> 20);
			}
	}
	L->len = s->len, s->len = NULL;
	if (!s->raw && !s->codec && !from_index) /* kept for the index cache's entry */
		L->slab = s->dec, s->dec = NULL;
	L->names = s->names, s->names = NULL;
	L->names_n = s->names_n, s->names_n = 0;
	set_stem(L, o->url);
	if (s->codec || !s->raw)
		o->in_place = false; /* Examples decode by copy, a stream into a slab */
	o->index = ix;
	o->priv = L;
	o->held_bytes = sizeof(*ix) + sizeof(*L) + (uint64_t)ix->blocks * sizeof(rf_block_info) +
	                4 * s->n + (L->slab ? 4 * s->n : 0) + s->names_bytes + 64 +
	                (seq ? 12 * (uint64_t)ix->blocks : 0);
	return RF_FMT_DONE;
}

/* ------------------------------------------------------------ the open */

enum {
	TFR_BEGIN = 0, /* declares the state's bound */
	TFR_STATE,     /* allocates the state, asks for PREFIX.idx's size or scans */
	TFR_IDX_SIZE,  /* the index's size (or its absence) */
	TFR_IDX_BYTES, /* the index's bytes: its lines counted */
	TFR_IDX_PARSE, /* the same bytes again (from the buffer), parsed */
	TFR_SCAN,      /* walking the frames */
	TFR_Z,         /* a compressed file: its stream inflated, its frames walked */
};

static int tfr_claim(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	char leaf[256];
	size_t n = strlen(base);
	if (n >= sizeof(leaf))
		return RF_FMT_NO;
	memcpy(leaf, base, n + 1);
	if (rf_tfr_codec_of(leaf)) /* drop .gz / .zlib */
		leaf[n - (leaf[n - 1] == 'z' ? 3 : 5)] = 0;
	n = strlen(leaf);
	bool yes = (n > 9 && strcmp(leaf + n - 9, ".tfrecord") == 0) ||
	           (n > 10 && strcmp(leaf + n - 10, ".tfrecords") == 0) ||
	           strstr(leaf, ".tfrecord-") != NULL || strstr(leaf, ".tfrecords-") != NULL;
	return yes && leaf[0] != '.' ? RF_FMT_YES : RF_FMT_NO;
}

static int codec_of_url(const char *url)
{
	char leaf[256];
	const char *slash = strrchr(url, '/');
	snprintf(leaf, sizeof(leaf), "%.*s", (int)rf_url_path_len(slash ? slash + 1 : url),
	         slash ? slash + 1 : url);
	return rf_tfr_codec_of(leaf);
}

char *rf_tfr_idx_sibling(const char *url, bool *query)
{
	size_t path = rf_url_path_len(url), cut;
	if (path > 10 && memcmp(url + path - 10, ".tfrecords", 10) == 0)
		cut = 10;
	else if (path > 9 && memcmp(url + path - 9, ".tfrecord", 9) == 0)
		cut = 9;
	else
		return NULL;
	bool q = url[path] == '?';
	if (query)
		*query = q;
	size_t n = q ? path : strlen(url);
	char *s = malloc(n - cut + 5);
	if (s) {
		memcpy(s, url, path - cut);
		memcpy(s + path - cut, ".idx", 4);
		memcpy(s + path - cut + 4, url + path, n - path);
		s[n - cut + 4] = 0;
	}
	return s;
}

static void tfr_open_abort(rf_fmt_open *o)
{
	scan_free(o->state);
	o->state = NULL;
}

static uint64_t state_bound(const rf_fmt_open *o)
{
	/* the state, or an empty file's layout at the next step */
	return sizeof(tfr_scan) + 2 * (strlen(o->url) + strlen(o->name) + 8) + layout_bound(1);
}

/* The next scan range from where the carry ends: a step's bytes, or the
 * rest of the next frame when it is larger; the bound: the tables doubling
 * past a frame per 16 bytes, the names, and the carry grown to hold what
 * it holds and the whole range (the old one still held while it moves). */
static int want_scan(rf_fmt_open *o, tfr_scan *s, uint64_t need)
{
	uint64_t step = o->local ? RF_TFR_STEP_LOCAL_BYTES : RF_TFR_STEP_BYTES;
	uint64_t at = s->pos + s->carry_len;
	uint64_t rest = need > s->carry_len ? need - s->carry_len : 0;
	uint64_t len = RF_MIN(RF_MAX(step, rest), o->size - at);
	o->held_bytes = scan_bytes(s);
	o->want = (rf_fmt_want){
	    .offset = at,
	    .len = len,
	    .parse_bound = 2 * (s->cap + len / RF_TFR_FRAME_BYTES + 1024) * 8 +
	                   (uint64_t)RF_TFR_FIELDS_MAX * (RF_EX_KEY_MAX + 1 + 24) +
	                   layout_bound(s->cap + len / RF_TFR_FRAME_BYTES + 1) + s->carry_cap +
	                   s->carry_len + len,
	};
	return RF_FMT_NEED;
}

static int z_want(rf_fmt_open *o, tfr_scan *s);

static int state_new(rf_fmt_open *o, rf_error *err)
{
	tfr_scan *s = calloc(1, sizeof(*s));
	if (!s)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	o->state = s;
	const rf_tfr_opts *opt = o->opt;
	s->raw = opt && opt->raw;
	s->codec = codec_of_url(o->url);
	if (s->codec) {
		o->step = TFR_Z;
		return z_want(o, s);
	}
	bool want_idx = !(opt && opt->scan_only);
	if (want_idx && (s->idx_url = rf_tfr_idx_sibling(o->url, &s->cache_only)) &&
	    !(s->idx_name = rf_tfr_idx_sibling(o->name, NULL)))
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	o->held_bytes = scan_bytes(s);
	if (!s->idx_url) {
		o->step = TFR_SCAN;
		return want_scan(o, s, 0);
	}
	o->step = TFR_IDX_SIZE;
	o->want =
	    (rf_fmt_want){.object = s->idx_url, .optional = true, .cache_only = s->cache_only};
	return RF_FMT_NEED;
}

static int got_check(const rf_fmt_open *o, rf_error *err)
{
	if (!o->got || o->got_offset != o->want.offset || o->got_len != o->want.len)
		return rf_fail(
		    err, -EIO,
		    "shard %s: open step got bytes [%llu, +%llu), asked for [%llu, +%llu)", o->name,
		    U64(o->got_offset), U64(o->got_len), U64(o->want.offset), U64(o->want.len));
	return 0;
}

/* The carry at least `cap` bytes (within the bound want_scan declared). */
static int carry_room(tfr_scan *s, uint64_t cap, const char *name, rf_error *err)
{
	if (cap <= s->carry_cap)
		return 0;
	uint8_t *c = realloc(s->carry, cap);
	if (!c)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for a frame's bytes", name);
	s->carry = c;
	s->carry_cap = cap;
	return 0;
}

/* The frame the carry began, completed from p[0, *avail) (p, avail moved
 * past what it took) and walked. *need: 0 when it is done (the carry
 * empty), else the bytes from s->pos the frame needs (p all taken). */
static int carry_frame(tfr_scan *s, const uint8_t **p, uint64_t *avail, uint64_t *need,
                       const char *name, rf_error *err)
{
	*need = 0;
	while (s->carry_len) {
		RF_TRY(scan_frames(s, s->carry, s->carry_len, false, need, name, err));
		if (!*need) { /* the frame walked: the carry held it exactly */
			s->carry_len = 0;
			return 0;
		}
		uint64_t take = RF_MIN(*avail, *need - s->carry_len);
		if (!take)
			return 0;
		RF_TRY(carry_room(s, s->carry_len + take, name, err));
		memcpy(s->carry + s->carry_len, *p, take);
		s->carry_len += take;
		*p += take;
		*avail -= take;
	}
	return 0;
}

static int scan_step(rf_fmt_open *o, tfr_scan *s, rf_error *err)
{
	RF_TRY(got_check(o, err));
	uint64_t need = 0, pos0 = s->pos, carry0 = s->carry_len;
	uint64_t n0 = s->n;
	uint32_t largest0 = s->largest;
	const uint8_t *p = o->got;
	uint64_t avail = o->got_len;
	int rc = carry_frame(s, &p, &avail, &need, o->name, err);
	if (rc == 0 && !need)
		rc = scan_frames(s, p, avail, false, &need, o->name, err);
	uint64_t left = o->got_offset + o->got_len - (s->pos + s->carry_len);
	if (rc == 0 && need && s->pos + need > o->size)
		rc = rf_fail(err, RF_E_CORRUPT,
		             "shard %s: record %llu (frame at byte %llu): the file ends at byte "
		             "%llu, inside its %llu-byte frame",
		             o->name, U64(s->n), U64(s->pos), U64(o->size), U64(need));
	if (rc == 0 && left) /* the frame the range ended inside: kept, not read again */
		rc = carry_room(s, left, o->name, err);
	if (rc < 0) { /* the state as it was: the engine may read the range again
		       * (the carry's first carry0 bytes are unchanged: only appended to) */
		s->pos = pos0, s->n = n0, s->largest = largest0, s->carry_len = carry0;
		o->final = pos0 == 0 && n0 == 0 && carry0 == 0; /* the first frame is not one */
		return rc;
	}
	if (left) {
		memcpy(s->carry, o->got + o->got_len - left, left);
		s->carry_len = left;
	}
	if (s->pos == o->size)
		return build_layout(o, s, s->idx_lens != NULL, err);
	return want_scan(o, s, need);
}

/* ---------------------------------------------- a compressed file's open
 *
 * The stream inflated once, in bounded memory: sequential ranges of the
 * object (1 MiB remote, 4 MiB local) feed inflate, whose output goes into
 * a window where the frames are walked as a plain file's (every CRC
 * checked: the bytes are decoded here anyway); a walked frame's bytes are
 * dropped. A step decodes at most Z_STEP_OUT bytes, so its bound is known
 * before its bytes arrive; a frame larger than the window grows it at the
 * next step, whose bound says so (the rest of the range asked for again:
 * the engine serves it from the bytes it holds). Checkpoints every
 * RF_TFR_CP_SPACING of output make the sequential units of a large file.
 * A stream cannot be entered again mid-way, so an error stands (final). */

#define Z_STEP_OUT                                                                                 \
	(1u << 20)              /* decoded bytes one step produces at most (its frames:            \
	                         * a table entry per 16 bytes in its bound) */
#define Z_CALL_OUT (128u << 10) /* one inflate call's output: checkpoints follow it */
#define Z_WIN      (1u << 20)   /* the window's first size */

/* What one step may allocate: the tables over the frames its window may
 * hold, the names, the layout, the checkpoints; the window's growth, and
 * on the first step inflate and the window. */
static uint64_t z_bound(const tfr_scan *s)
{
	/* the frames a step walks: the one the window began, and those of its
	 * output (the window's other bytes were walked at the step before) */
	uint64_t frames = (Z_STEP_OUT + Z_CALL_OUT) / RF_TFR_FRAME_BYTES + 2, n = s->cap + frames;
	uint64_t bound = 2 * (n + 1024) * 8 + (uint64_t)RF_TFR_FIELDS_MAX * (RF_EX_KEY_MAX + 25) +
	                 layout_bound(n) + 12 * n +
	                 2 * (s->cps_cap + (Z_STEP_OUT + Z_CALL_OUT) / RF_TFR_CP_SPACING + 34) *
	                     sizeof(struct tfr_cp);
	if (s->win_want > s->win_cap)
		bound += s->win_want + s->win_cap; /* the old window held while it moves */
	if (!s->zs_live)
		bound += RF_TFR_ZLIB_STATE + Z_WIN;
	return bound;
}

/* The next range from where inflate stopped: the rest of the range
 * delivered when it stopped inside it (no second read), else a new one. */
static int z_want(rf_fmt_open *o, tfr_scan *s)
{
	uint64_t step = o->local ? RF_TFR_STEP_LOCAL_BYTES : RF_TFR_STEP_BYTES;
	uint64_t len = RF_MIN(step, o->size - s->z_in);
	if (o->got && s->z_in >= o->got_offset && s->z_in < o->got_offset + o->got_len)
		len = o->got_offset + o->got_len - s->z_in;
	o->held_bytes = scan_bytes(s);
	o->want = (rf_fmt_want){.offset = s->z_in, .len = len, .parse_bound = z_bound(s)};
	return RF_FMT_NEED;
}

static int z_start(rf_fmt_open *o, tfr_scan *s, rf_error *err)
{
	if (!(s->win = malloc(Z_WIN)))
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	s->win_cap = Z_WIN;
	if (inflateInit2(&s->zs, s->codec == RF_TFR_GZIP ? 15 + 16 : 15) != Z_OK)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory for zlib", o->name);
	s->zs_live = true;
	return 0;
}

/* A checkpoint after an inflate call; the last one moves on until it lies
 * RF_TFR_CP_SPACING past the one before, then the next is added. */
static int cp_add(tfr_scan *s, const char *name, rf_error *err)
{
	struct tfr_cp c = {.out = s->z_out, .in = s->z_in};
	uint64_t n = s->cps_n;
	if (n >= 2 && s->cps[n - 1].out - s->cps[n - 2].out < RF_TFR_CP_SPACING) {
		s->cps[n - 1] = c;
		return 0;
	}
	if (n == s->cps_cap) {
		uint64_t cap = s->cps_cap ? 2 * s->cps_cap : 32;
		struct tfr_cp *a = realloc(s->cps, cap * sizeof(*a));
		if (!a)
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", name);
		s->cps = a;
		s->cps_cap = cap;
	}
	s->cps[s->cps_n++] = c;
	return 0;
}

/* One inflate call from in[*pos, len) into the window's room: *made bytes. */
static int z_inflate(rf_fmt_open *o, tfr_scan *s, const uint8_t *in, uint64_t len, uint64_t *pos,
                     uint64_t *made, rf_error *err)
{
	s->zs.next_in = (Bytef *)(uintptr_t)(in + *pos);
	s->zs.avail_in = (uInt)RF_MIN(len - *pos, 1u << 30);
	s->zs.next_out = s->win + s->win_len;
	s->zs.avail_out = (uInt)RF_MIN(s->win_cap - s->win_len, Z_CALL_OUT);
	uInt ai = s->zs.avail_in, ao = s->zs.avail_out;
	int r = inflate(&s->zs, Z_NO_FLUSH);
	uint64_t used = ai - s->zs.avail_in;
	*made = ao - s->zs.avail_out;
	*pos += used;
	s->z_in += used;
	s->z_out += *made;
	s->win_len += *made;
	if (r == Z_STREAM_END) {
		if (s->z_in == o->size)
			s->z_ended = true;
		else if (s->codec != RF_TFR_GZIP)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: %llu bytes past the zlib stream's end (byte %llu)", o->name,
			    U64(o->size - s->z_in), U64(s->z_in));
		else
			inflateReset(&s->zs); /* another gzip member */
	} else if (r != Z_OK && !(r == Z_BUF_ERROR && (used || *made || *pos == len))) {
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: compressed byte %llu (decoded byte %llu): %s", o->name,
		               U64(s->z_in), U64(s->z_out),
		               r == Z_BUF_ERROR ? "the stream makes no progress"
		               : s->zs.msg      ? s->zs.msg
		                                : "not a zlib/gzip stream");
	}
	if (s->z_out > RF_TFR_DECODED_MAX)
		return rf_fail(err, -EFBIG,
		               "shard %s: decodes to more than %llu GiB, the most a compressed "
		               "TFRecord may (its checkpoints are metadata): write smaller files",
		               o->name, U64(RF_TFR_DECODED_MAX >> 30));
	return cp_add(s, o->name, err);
}

/* The window's whole frames walked and dropped; *need: what the frame at
 * s->pos needs (0: none begun). */
static int z_walk(rf_fmt_open *o, tfr_scan *s, uint64_t *need, rf_error *err)
{
	char where[RF_ERROR_MSG_BYTES / 2];
	snprintf(where, sizeof(where), "%s (decoded)", o->name);
	uint64_t pos0 = s->pos;
	RF_TRY(scan_frames(s, s->win, s->win_len, true, need, where, err));
	uint64_t used = s->pos - pos0;
	memmove(s->win, s->win + used, s->win_len - used);
	s->win_len -= used;
	return 0;
}

/* Inflates the delivered range until it is taken (*starved: inflate
 * needs more input), the step's output bound is reached, or the window is
 * full of one frame (win_want set: it grows at the next step). */
static int z_feed(rf_fmt_open *o, tfr_scan *s, uint64_t *need, bool *starved, rf_error *err)
{
	uint64_t pos = s->z_in - o->got_offset, out = 0;
	*need = 0;
	*starved = false;
	RF_TRY(z_walk(o, s, need, err)); /* *need: the frame the window holds part of */
	while (out < Z_STEP_OUT && !s->z_ended) {
		if (s->win_len == s->win_cap) { /* the frame at pos is larger than the window */
			s->win_want = *need;
			return 0;
		}
		uint64_t made = 0, before = pos;
		RF_TRY(z_inflate(o, s, o->got, o->got_len, &pos, &made, err));
		out += made;
		RF_TRY(z_walk(o, s, need, err));
		if (!made && pos == before) {
			*starved = true;
			return 0;
		}
	}
	return 0;
}

static int z_step(rf_fmt_open *o, tfr_scan *s, rf_error *err)
{
	bool none = o->got && o->got_len == 0 && o->got_offset == s->z_in && s->z_in == o->size;
	if (!none && (!o->got || o->got_offset > s->z_in || o->got_offset + o->got_len <= s->z_in))
		return rf_fail(err, -EIO,
		               "shard %s: open step got bytes [%llu, +%llu), the stream is at %llu",
		               o->name, U64(o->got_offset), U64(o->got_len), U64(s->z_in));
	o->final = true; /* a stream cannot be entered again where it failed */
	if (!s->zs_live)
		RF_TRY(z_start(o, s, err));
	if (s->win_want > s->win_cap) { /* declared by the step before */
		uint8_t *w = realloc(s->win, s->win_want);
		if (!w)
			return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
		s->win = w;
		s->win_cap = s->win_want;
	}
	uint64_t need = 0;
	bool starved = false;
	RF_TRY(z_feed(o, s, &need, &starved, err));
	if (s->z_ended && s->win_len)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: record %llu (frame at decoded byte %llu): the stream ends "
		    "at decoded byte %llu, inside its %llu-byte frame",
		    o->name, U64(s->n), U64(s->pos), U64(s->z_out), U64(need));
	if (s->z_ended) {
		if (s->zs_live)
			inflateEnd(&s->zs);
		s->zs_live = false;
		free(s->win);
		s->win = NULL;
		s->win_cap = s->win_len = 0;
		o->final = false;
		return build_layout(o, s, false, err);
	}
	if (s->z_in == o->size && starved)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: the stream ends early: %llu compressed bytes gave %llu "
		               "decoded bytes and no end of stream",
		               o->name, U64(o->size), U64(s->z_out));
	o->final = false;
	return z_want(o, s);
}

/* ------------------------------------------------ the index sidecar */

static int idx_size(rf_fmt_open *o, tfr_scan *s, rf_error *err)
{
	if (o->absent) { /* no index beside the file: walk its frames */
		free(s->idx_url);
		free(s->idx_name);
		s->idx_url = s->idx_name = NULL;
		o->step = TFR_SCAN;
		return want_scan(o, s, 0);
	}
	uint64_t n = o->got_object_size;
	if (n > RF_TFR_INDEX_BYTES_MAX || (n == 0 && o->size > 0)) {
		o->final = true;
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "index %s: %llu bytes: not a tfrecord2idx index of at most %u bytes "
		    "for a %llu-byte file (remove it, or write it again: ringfeed index)",
		    s->idx_name, U64(n), RF_TFR_INDEX_BYTES_MAX, U64(o->size));
	}
	s->idx_bytes = n;
	if (n == 0) /* an empty file, an empty index */
		return build_layout(o, s, true, err);
	o->step = TFR_IDX_BYTES;
	o->want = (rf_fmt_want){.object = s->idx_url, .offset = 0, .len = n};
	return RF_FMT_NEED;
}

static int idx_got(const rf_fmt_open *o, const tfr_scan *s, rf_error *err)
{
	if (!o->got || o->got_offset != 0 || o->got_len != s->idx_bytes)
		return rf_fail(err, -EIO,
		               "index %s: the open got bytes [%llu, +%llu), asked for [0, +%llu)",
		               s->idx_name, U64(o->got_offset), U64(o->got_len), U64(s->idx_bytes));
	return 0;
}

static int idx_bytes(rf_fmt_open *o, tfr_scan *s, rf_error *err)
{
	RF_TRY(idx_got(o, s, err));
	s->idx_lines = rf_tfr_index_lines(o->got, (size_t)o->got_len);
	o->step = TFR_IDX_PARSE;
	o->want = (rf_fmt_want){.object = s->idx_url,
	                        .offset = 0,
	                        .len = s->idx_bytes,
	                        .parse_bound = rf_tfr_cache_parse_bound(s->idx_lines) + 64 +
	                                       layout_bound(s->idx_lines)};
	return RF_FMT_NEED;
}

/* The index cache's entry of a walked Examples layout: the layout, no walk
 * (read raw, its frames only). */
static int idx_parse_examples(rf_fmt_open *o, tfr_scan *s, rf_error *err)
{
	rf_tfr_cached c;
	int rc = rf_tfr_cache_parse(o->got, (size_t)o->got_len, o->size, s->idx_name, &c, err);
	if (rc < 0) {
		o->final = true;
		return rc;
	}
	s->idx_cached = true;
	s->len = c.lens, c.lens = NULL;
	s->n = s->cap = c.n;
	if (s->raw) {
		for (uint64_t i = 0; i < c.n; i++) {
			c.slab[i] = (uint32_t)rf_tfr_rec_table(1);
			s->largest =
			    (uint32_t)RF_MAX(s->largest, RF_TFR_FRAME_BYTES + (uint64_t)s->len[i]);
		}
	} else {
		s->largest = c.largest;
		s->names = c.names, c.names = NULL;
		s->names_n = c.names_n, c.names_n = 0;
		s->names_bytes = c.names_bytes;
	}
	s->dec = c.slab, c.slab = NULL;
	rf_tfr_cached_free(&c);
	o->held_bytes = scan_bytes(s);
	return build_layout(o, s, true, err);
}

static int idx_parse(rf_fmt_open *o, tfr_scan *s, rf_error *err)
{
	RF_TRY(idx_got(o, s, err));
	if (rf_tfr_cache_examples(o->got, (size_t)o->got_len))
		return idx_parse_examples(o, s, err);
	uint32_t *lens = NULL;
	uint64_t n = 0;
	int rc =
	    rf_tfr_index_parse(o->got, (size_t)o->got_len, o->size, s->idx_name, &lens, &n, err);
	if (rc < 0) {
		o->final = true;
		return rc;
	}
	s->idx_cached = rf_tfr_index_cached(o->got, (size_t)o->got_len);
	s->len = lens;
	s->dec = calloc(n ? n : 1, 4);
	if (!s->dec)
		return rf_fail(err, -ENOMEM, "shard %s: out of memory", o->name);
	s->n = s->cap = n;
	for (uint64_t i = 0; i < n; i++) {
		s->dec[i] = (uint32_t)rf_tfr_rec_table(1);
		s->largest = (uint32_t)RF_MAX(s->largest, RF_TFR_FRAME_BYTES + (uint64_t)lens[i]);
	}
	o->held_bytes = scan_bytes(s);
	if (s->raw || n == 0)
		return build_layout(o, s, true, err);
	/* Examples: their keys and decoded sizes are in the records, not in the
	 * index, so the frames are walked too, each checked against its line */
	s->idx_lens = s->len, s->idx_n = n;
	s->largest = 0;
	s->len = NULL;
	free(s->dec);
	s->dec = NULL;
	s->n = s->cap = 0;
	o->step = TFR_SCAN;
	return want_scan(o, s, 0);
}

static int tfr_open_step(rf_fmt_open *o, rf_error *err)
{
	tfr_scan *s = o->state;
	switch (o->step) {
	case TFR_BEGIN: /* nothing allocated before a bound is declared */
		o->step = TFR_STATE;
		o->held_bytes = 0;
		o->want = (rf_fmt_want){.len = 0, .parse_bound = state_bound(o)};
		return RF_FMT_NEED;
	case TFR_STATE:
		if (o->size == 0 && !codec_of_url(o->url)) { /* TensorFlow's file of no records */
			const rf_tfr_opts *opt = o->opt;
			tfr_scan none = {.raw = opt && opt->raw};
			return build_layout(o, &none, false, err);
		}
		if (o->size == 0) { /* before any state: the same answer every time */
			o->final = true;
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: an empty file is not a zlib/gzip stream",
			               o->name);
		}
		return state_new(o, err);
	case TFR_IDX_SIZE:
		return idx_size(o, s, err);
	case TFR_IDX_BYTES:
		return idx_bytes(o, s, err);
	case TFR_IDX_PARSE:
		return idx_parse(o, s, err);
	case TFR_Z: { /* a stream cannot be entered again: a failed step's error stands */
		if (s->z_failed) {
			*err = s->z_fail;
			return err->code;
		}
		int rc = z_step(o, s, err);
		if (rc < 0) {
			s->z_failed = true;
			s->z_fail = *err;
		}
		return rc;
	}
	default:
		return scan_step(o, s, err);
	}
}

/* ------------------------------------------------------------ decode */

/* The slab's tables after `at` (8-aligned) for r records and nf fields. */
typedef struct tfr_table {
	uint8_t *ends;
	uint32_t *field_first, *key_first;
	rf_rec_field *fields;
	char *keys;
	uint64_t end; /* the slab bytes used */
} tfr_table;

static tfr_table table_at(uint8_t *dst, uint64_t at, uint64_t r, uint64_t nf)
{
	tfr_table t;
	at = (at + 7) & ~7ull;
	t.ends = dst + at;
	t.field_first = (uint32_t *)(dst + at + 4 * r + 4);
	t.key_first = t.field_first + r + 1;
	t.fields = (rf_rec_field *)(t.key_first + r + 1);
	t.keys = (char *)(t.fields + nf);
	t.end = at + 4 * r + 4 + 8 * (r + 1) + 12 * nf + RF_TFR_KEY_MAX * r;
	return t;
}

/* A decoding record's fields. */
typedef struct ex_out {
	const tfr_layout *L;
	uint8_t *base; /* the payload's start */
	uint64_t at;   /* the next field's offset from base */
	rf_rec_field *fields;
	uint64_t nf, out;
	uint64_t seen[(RF_TFR_FIELDS_MAX + 63) / 64];
	uint32_t hint;
	bool write;
	const char *bad_key; /* a key the layout does not have, or one twice */
	uint32_t bad_len;
	bool twice;
} ex_out;

static int out_feature(void *ctx, const rf_ex_feature *f)
{
	ex_out *x = ctx;
	int id = name_find(x->L->names, x->L->names_n, f->key, f->key_len, &x->hint);
	if (id < 0 || (x->seen[id / 64] >> (id % 64) & 1)) {
		x->bad_key = (const char *)f->key;
		x->bad_len = f->key_len;
		x->twice = id >= 0;
		return 1;
	}
	x->seen[id / 64] |= 1ull << (id % 64);
	uint64_t at = (x->at + 7) & ~7ull;
	if (x->write) {
		memset(x->base + x->at, 0, at - x->at); /* padding: part of the record */
		rf_example_encode(f, x->base + at);
		x->fields[x->nf] = (rf_rec_field){
		    .name = (uint32_t)id, .offset = (uint32_t)at, .len = (uint32_t)f->out_bytes};
	}
	x->at = at + f->out_bytes;
	x->out += (f->out_bytes + 7) & ~7ull;
	x->nf++;
	return 0;
}

static int ex_fail(const ex_out *x, int w, const rf_pb_error *pe, uint64_t r, uint64_t at,
                   const char *name, uint32_t u, rf_error *err)
{
	if (w < 0)
		return rf_fail(
		    err, RF_E_CORRUPT,
		    "shard %s: unit %u: record %llu (frame at byte %llu): byte %llu: not a "
		    "tf.train.Example: %s (read the records as bytes: tfrecord_raw)",
		    name, u, U64(r), U64(at), U64(at + 12 + pe->at), pe->what);
	char k[RF_EX_KEY_MAX + 1];
	snprintf(k, sizeof(k), "%.*s", (int)x->bad_len, x->bad_key);
	for (char *c = k; *c; c++)
		if (*c < 32 || *c > 126)
			*c = '?';
	return rf_fail(err, RF_E_CORRUPT,
	               "shard %s: unit %u: record %llu (frame at byte %llu): feature '%s' %s", name,
	               u, U64(r), U64(at), k,
	               x->twice ? "twice in one Example"
	                        : "is not among the keys the open read (the file changed "
	                          "since)");
}

/* Unit u's frames p[0, len) from stream byte `at`: every frame and CRC
 * checked against the layout, the records tabled into dst. `pay`: where the
 * payload starts in dst (Examples), `base`: the raw records' base. */
static int unit_records(const tfr_layout *L, const rf_block_info *b, uint32_t u, const uint8_t *p,
                        uint64_t len, uint64_t at, uint8_t *dst, size_t dst_cap, uint64_t pay,
                        const uint8_t *base, rf_unit_records *out, const char *name, rf_error *err)
{
	uint64_t off = 0, payload = 0, nf = 0;
	for (uint32_t i = 0; i < b->records; i++) { /* pass 1: frames, CRCs, sizes */
		uint64_t r = b->first_record + i, dl = 0, fl = 0;
		int rc = rf_tfr_frame(p + off, len - off, at + off, r, true, &dl, &fl, name, err);
		if (rc < 0)
			return rc;
		if (rc > 0 || dl != L->len[r])
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: unit %u: record %llu (frame at byte %llu): %s%s",
			               name, u, U64(r), U64(at + off),
			               rc > 0 ? "the frame ends past the unit"
			                      : "its length is not the layout's",
			               L->from_index
			                   ? " (the index file is stale or wrong: write it "
			                     "again with ringfeed index)"
			                   : " (the file changed since the open)");
		if (!L->raw) {
			ex_out x = {.L = L};
			rf_pb_error pe = {0};
			int w = rf_example_walk(p + off + 12, dl, out_feature, &x, NULL, &pe);
			if (w)
				return ex_fail(&x, w, &pe, r, at + off, name, u, err);
			payload += x.out;
			nf += x.nf;
		} else {
			nf++;
		}
		off += fl;
	}
	if (off != len)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: %llu bytes past its %u records (from byte %llu)",
		               name, u, U64(len - off), b->records, U64(at + off));
	tfr_table t = table_at(dst, pay + payload, b->records, nf);
	if (t.end > dst_cap)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: unit %u: decodes to %llu bytes, the layout allowed %zu "
		               "(the file changed since the open)",
		               name, u, U64(t.end), dst_cap);
	uint64_t keys = 0, f = 0, rec_at = 0;
	off = 0;
	for (uint32_t i = 0; i < b->records; i++) { /* pass 2: the records */
		uint64_t r = b->first_record + i, dl = rf_load_le64(p + off);
		t.field_first[i] = (uint32_t)f;
		t.key_first[i] = (uint32_t)keys;
		if (L->raw) {
			t.fields[f++] = (rf_rec_field){.name = 0,
			                               .offset = (uint32_t)(p + off + 12 - base),
			                               .len = (uint32_t)dl};
			rec_at = (uint64_t)(p + off + RF_TFR_FRAME_BYTES + dl - base);
		} else {
			ex_out x = {.L = L,
			            .base = dst + pay,
			            .at = rec_at,
			            .fields = t.fields + f,
			            .write = true};
			rf_pb_error pe;
			rf_example_walk(p + off + 12, dl, out_feature, &x, NULL, &pe);
			f += x.nf;
			rec_at = (x.at + 7) & ~7ull; /* the record ends padded: x.out bytes */
			memset(dst + pay + x.at, 0, rec_at - x.at);
		}
		rf_store_le32(t.ends + 4 * i, (uint32_t)rec_at);
		keys +=
		    (uint64_t)snprintf(t.keys + keys, RF_TFR_KEY_MAX, "%s/%08llu", L->stem, U64(r));
		off += RF_TFR_FRAME_BYTES + dl;
	}
	rf_store_le32(t.ends + 4 * (uint64_t)b->records, b->records);
	t.field_first[b->records] = (uint32_t)f;
	t.key_first[b->records] = (uint32_t)keys;
	*out = (rf_unit_records){.base = L->raw ? base : dst + pay,
	                         .ends = (const uint32_t *)t.ends,
	                         .records = b->records,
	                         .fields = t.fields,
	                         .field_first = t.field_first,
	                         .keys = t.keys,
	                         .key_first = t.key_first};
	return 0;
}

static int tfr_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                      const void *src, size_t src_len, void *dst, size_t dst_cap,
                      rf_unit_records *out, const char *name, rf_error *err)
{
	(void)d;
	const tfr_layout *L = priv;
	if (u >= ix->blocks)
		return rf_fail(err, -EINVAL, "shard %s: unit %u of %u", name, u, ix->blocks);
	const rf_block_info *b = &ix->block[u];
	if (src_len != b->compressed_bytes)
		return rf_fail(err, -EINVAL, "shard %s: unit %u: %zu stored bytes (expected %u)",
		               name, u, src_len, b->compressed_bytes);
	if (!L->codec)
		return unit_records(L, b, u, src, src_len, b->offset, dst, dst_cap, 0, src, out,
		                    name, err);
	if (L->unit_out)
		return rf_fail(err, -EINVAL,
		               "shard %s: unit %u: a sequential layout (a large compressed file): "
		               "use decode_seq",
		               name, u);
	uint64_t n = 0, room = (L->decoded + 7) & ~7ull;
	if (dst_cap < room + 8)
		return rf_fail(err, -EINVAL, "shard %s: unit %u: a slab of %zu bytes", name, u,
		               dst_cap);
	RF_TRY(inflate_all(L->codec, src, src_len, dst, L->decoded + 1, &n, name, err));
	if (n != L->decoded)
		return rf_fail(err, RF_E_CORRUPT,
		               "shard %s: decodes to %llu bytes, %llu when it was opened (the file "
		               "changed since)",
		               name, U64(n), U64(L->decoded));
	char where[RF_ERROR_MSG_BYTES / 2];
	snprintf(where, sizeof(where), "%s (decoded)", name);
	return unit_records(L, b, u, dst, n, 0, dst, dst_cap, room, dst, out, where, err);
}

/* A large compressed file's unit: its frames from the stream state
 * (tfrecord_stream.c) into the slab, then checked and tabled as a plain
 * unit's, its fields after them. */
static int tfr_decode_seq(void **state, const rf_shard_index *ix, const void *priv, uint32_t u,
                          const void *src, size_t src_len, uint64_t src_offset, void *dst,
                          size_t dst_cap, rf_unit_records *out, rf_fmt_more *more, const char *name,
                          rf_error *err)
{
	const tfr_layout *L = priv;
	if (!L || !L->unit_out || !ix->sequential || u >= ix->blocks) {
		rf_tfr_seq_reset(*state); /* every error resets the state */
		return rf_fail(err, -EINVAL, "shard %s: unit %u of %u: not a sequential layout's",
		               name, u, ix->blocks);
	}
	const rf_block_info *b = &ix->block[u];
	uint64_t span = L->unit_span[u], pay = (span + 7) & ~7ull;
	if (dst_cap < b->decoded_bytes) {
		rf_tfr_seq_reset(*state);
		return rf_fail(err, -EINVAL, "shard %s: unit %u: a slab of %zu bytes, %u needed",
		               name, u, dst_cap, b->decoded_bytes);
	}
	rf_tfr_seq_unit w = {.u = u,
	                     .codec = L->codec,
	                     .start = L->unit_out[u],
	                     .span = span,
	                     .last = u + 1 == ix->blocks,
	                     .size = ix->file_bytes,
	                     .decoded = L->decoded};
	int rc = rf_tfr_seq_decode(state, &w, src, src_len, src_offset, dst, more, name, err);
	if (rc != 0)
		return rc;
	char where[RF_ERROR_MSG_BYTES / 2];
	snprintf(where, sizeof(where), "%s (decoded)", name);
	rc = unit_records(L, b, u, dst, span, w.start, dst, dst_cap, pay, dst, out, where, err);
	if (rc < 0)
		rf_tfr_seq_reset(*state);
	return rc;
}

static uint64_t tfr_seq_state_bytes(const rf_shard_index *ix, const void *priv)
{
	(void)ix;
	const tfr_layout *L = priv;
	return L && L->unit_out ? rf_tfr_seq_bytes() : 0;
}

static uint32_t tfr_field_names(const void *priv, const char *const **names)
{
	static const char *const raw[] = {RF_TFR_RAW_FIELD};
	const tfr_layout *L = priv;
	if (L->raw) {
		*names = raw;
		return 1;
	}
	*names = (const char *const *)L->names;
	return L->names_n;
}

/* A raw, plain file's units are read in place: the slab holds the table. */
static uint64_t tfr_table_bytes(const rf_shard_index *ix, const void *priv, uint32_t u)
{
	(void)priv;
	return u < ix->blocks ? ix->block[u].decoded_bytes : 0;
}

/* A plain file's walked layout is kept in the index cache: raw records as
 * a tfrecord2idx index, Examples with what the walk learned of them (their
 * keys, each record's slab bytes, the largest record: rf_tfr_cache_write).
 * The open then reads the entry alone, and decode checks every frame and
 * Example against it. */
static bool tfr_cacheable(const void *priv)
{
	const tfr_layout *L = priv;
	return L && !L->from_index && L->codec == RF_TFR_PLAIN && (L->raw || L->slab);
}

static bool tfr_layout_cached(const void *priv)
{
	const tfr_layout *L = priv;
	return L && L->from_cache;
}

/* The layout's records, frames back to back from byte 0. */
int rf_tfr_index_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err)
{
	bool compressed = true;
	const uint32_t *len = rf_tfr_layout_lens(priv, &compressed);
	if (compressed || (ix->records && !len))
		return rf_fail(err, -EINVAL,
		               "shard %s: not a plain TFRecord's layout (DALI's tfrecord2idx "
		               "indexes uncompressed files)",
		               name);
	uint64_t at = 0;
	for (uint64_t r = 0; r < ix->records; r++) {
		uint64_t f = RF_TFR_FRAME_BYTES + (uint64_t)len[r];
		if (fprintf(out, "%llu %llu\n", U64(at), U64(f)) < 0)
			return rf_fail(err, -EIO, "shard %s: writing its index failed", name);
		at += f;
	}
	if (at != ix->file_bytes)
		return rf_fail(err, -EINVAL, "shard %s: its records do not tile the file", name);
	return 0;
}

/* A walked Examples layout's entry (tfrecord.h, RF_TFR_CACHE_EX_MARK). */
static int cache_write_examples(const rf_shard_index *ix, const tfr_layout *L, FILE *out,
                                const char *name, rf_error *err)
{
	bool ok = fprintf(out, "%s%u\n", RF_TFR_CACHE_EX_MARK, ix->largest_record_bytes) > 0;
	for (uint32_t i = 0; ok && i < L->names_n; i++) {
		ok = fputs("# key ", out) >= 0;
		for (const char *c = L->names[i]; ok && *c; c++)
			ok = fprintf(out, "%02x", (unsigned)(uint8_t)*c) > 0;
		ok = ok && fputc('\n', out) != EOF;
	}
	uint64_t at = 0;
	for (uint64_t r = 0; ok && r < ix->records; r++) {
		uint64_t f = RF_TFR_FRAME_BYTES + (uint64_t)L->len[r];
		ok = fprintf(out, "%llu %llu %u\n", U64(at), U64(f), L->slab[r]) > 0;
		at += f;
	}
	if (!ok)
		return rf_fail(err, -EIO, "shard %s: writing its index failed", name);
	return 0;
}

int rf_tfr_cache_write(const rf_shard_index *ix, const void *priv, FILE *out, const char *name,
                       rf_error *err)
{
	const tfr_layout *L = priv;
	if (L && !L->raw && L->slab && L->codec == RF_TFR_PLAIN)
		return cache_write_examples(ix, L, out, name, err);
	if (fprintf(out, "%s\n", RF_TFR_CACHE_MARK) < 0)
		return rf_fail(err, -EIO, "shard %s: writing its index failed", name);
	return rf_tfr_index_write(ix, priv, out, name, err);
}

const uint32_t *rf_tfr_layout_lens(const void *priv, bool *compressed)
{
	const tfr_layout *L = priv;
	*compressed = L && L->codec != RF_TFR_PLAIN;
	return L ? L->len : NULL;
}

bool rf_tfr_layout_from_index(const void *priv)
{
	const tfr_layout *L = priv;
	return L && L->from_index;
}

static const char *const tfr_sidecar_suffixes[] = {".tfrecord", ".tfrecords", NULL};
static const char *const tfr_names[] = {
    ".tfrecord",       ".tfrecords", ".tfrecord.gz", ".tfrecords.gz", ".tfrecord.zlib",
    ".tfrecords.zlib", NULL}; /* tfr_claim also takes NAME.tfrecord-* */

/* The key tfrecord_raw into out (an rf_tfr_opts; scan_only is its tools'). */
static int tfr_options(const rf_fmt_config *cfg, void *out, rf_error *err)
{
	rf_tfr_opts *o = out;
	uint64_t raw = 0;
	memset(o, 0, sizeof(*o));
	RF_TRY(rf_fmt_cfg_num(cfg, "tfrecord_raw", &raw, err));
	o->raw = raw != 0;
	return 0;
}

const rf_format rf_tfrecord_format = {
    .names = tfr_names,
    .sidecar = ".idx",
    .sidecar_suffixes = tfr_sidecar_suffixes,
    .name = "tfrecord",
    .claim = tfr_claim,
    .open_step = tfr_open_step,
    .open_abort = tfr_open_abort,
    .close = tfr_close,
    .decode = tfr_decode,
    .in_place = true,
    .field_names = tfr_field_names,
    .table_bytes = tfr_table_bytes,
    .cacheable = tfr_cacheable,
    .sidecar_write = rf_tfr_cache_write,
    .layout_cached = tfr_layout_cached,
    .decode_seq = tfr_decode_seq,
    .seq_free = rf_tfr_seq_free,
    .seq_state_bytes = tfr_seq_state_bytes,
    .cache_tag = "tfrecord",
    .cache_version = 3, /* 2: raw layouts kept, the first line the cache's mark;
                         * 3: walked Examples layouts too (their keys and slabs) */
    .options = tfr_options,
    .options_bytes = sizeof(rf_tfr_opts),
};
