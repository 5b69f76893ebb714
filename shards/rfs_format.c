/* rfs_format.c - .rfs behind the format seam (format.h): the open asks
 * for the file's last 4 KiB, or 8 KiB of a remote object (the footer and,
 * for most shards, the index in one read; the footer's 40 bytes when the
 * engine has no room), then for the index, parses it into the layout;
 * decode is rf_block_decode. */
#include "bundle.h"
#include "format.h"
#include "rfs.h"

#include <stdlib.h>

/* The first read: a local file's last 4 KiB (a second local read costs
 * little); a remote object's last 8 KiB, which holds the footer and the
 * index of a shard of up to ~330 blocks (pack's default, 256 MiB of 1 MiB
 * blocks, has a 6 KiB index), since a second request costs the store's
 * latency again. No larger: every open reads it, and bytes past the index
 * are fetched for nothing. */
#define RFS_TAIL_BYTES        4096u
#define RFS_TAIL_REMOTE_BYTES (8u << 10)
_Static_assert(RFS_TAIL_BYTES <= RF_BUNDLE_TAIL_MIN && RFS_TAIL_REMOTE_BYTES <= RF_BUNDLE_TAIL_MIN,
               "an index bundle's entry holds the first range an open asks for");

enum { RFS_STEP_TAIL = 0, RFS_STEP_FOOTER, RFS_STEP_INDEX };

/* What the first step keeps between steps: the parsed footer. */
typedef struct rfs_open_state {
	rf_footer footer;
} rfs_open_state;

_Static_assert(sizeof(rfs_open_state) <= sizeof(((rf_fmt_open *)0)->scratch),
               "the footer fits the open's inline scratch");

static const char *const rfs_names[] = {".rfs", NULL};

static int rfs_claim(const char *name)
{
	return rf_fmt_names_have(rfs_names, name) ? RF_FMT_YES : RF_FMT_MAYBE;
}

/* The most a parsed index of index_bytes can take: every byte after the
 * header as block entries, or as metadata (rf_index_parse's allocations). */
static uint64_t rfs_index_parsed_bound(uint64_t index_bytes)
{
	uint64_t rest =
	    index_bytes > RF_INDEX_HEADER_BYTES ? index_bytes - RF_INDEX_HEADER_BYTES : 0;
	return sizeof(rf_shard_index) + (rest / RF_INDEX_ENTRY_BYTES + 1) * sizeof(rf_block_info) +
	       rest + 1;
}

static uint64_t rfs_index_memory_bytes(const rf_shard_index *ix)
{
	return sizeof(*ix) + (uint64_t)RF_MAX(ix->blocks, 1) * sizeof(rf_block_info) +
	       strlen(ix->metadata) + 1;
}

static int rfs_open_step(rf_fmt_open *o, rf_error *err)
{
	rfs_open_state *st = (rfs_open_state *)o->scratch;
	if (o->step == RFS_STEP_TAIL) {
		if (o->size < RF_FOOTER_BYTES) { /* the footer parser names it */
			o->final = true;
			uint8_t none[RF_FOOTER_BYTES] = {0};
			return rf_footer_parse(none, sizeof(none), o->size, o->name, &st->footer,
			                       err);
		}
		uint64_t tail = o->local ? RFS_TAIL_BYTES : RFS_TAIL_REMOTE_BYTES;
		uint64_t n = o->size < tail ? o->size : tail;
		o->want =
		    (rf_fmt_want){.offset = o->size - n, .len = n, .min_len = RF_FOOTER_BYTES};
		o->step = RFS_STEP_FOOTER;
		return RF_FMT_NEED;
	}
	if (o->step == RFS_STEP_FOOTER) {
		/* the delivered range ends at the file's end: its last 40 bytes */
		const uint8_t *f = o->got + o->got_len - RF_FOOTER_BYTES;
		o->final = !rf_footer_magic_ok(f);
		RF_TRY(rf_footer_parse(f, RF_FOOTER_BYTES, o->size, o->name, &st->footer, err));
		o->final = false;
		o->want =
		    (rf_fmt_want){.offset = st->footer.index_offset,
		                  .len = st->footer.index_bytes,
		                  .parse_bound = rfs_index_parsed_bound(st->footer.index_bytes)};
		o->step = RFS_STEP_INDEX;
		return RF_FMT_NEED;
	}
	RF_TRY(rf_index_parse(o->got, o->got_len, &st->footer, o->size, o->name, &o->index, err));
	uint64_t bound = rfs_index_parsed_bound(st->footer.index_bytes);
	uint64_t held = rfs_index_memory_bytes(o->index);
	o->held_bytes = held < bound ? held : bound;
	return RF_FMT_DONE;
}

static void rfs_close(rf_shard_index *ix, void *priv)
{
	(void)priv;
	rf_index_free(ix);
}

static int rfs_decode(rf_decoder *d, const rf_shard_index *ix, const void *priv, uint32_t u,
                      const void *src, size_t src_len, void *dst, size_t dst_cap,
                      rf_unit_records *out, const char *name, rf_error *err)
{
	(void)priv;
	const uint32_t *ends = NULL;
	RF_TRY(rf_block_decode(d, ix, u, src, src_len, dst, dst_cap, &ends, name, err));
	*out = (rf_unit_records){.base = dst, .ends = ends, .records = ix->block[u].records};
	return 0;
}

/* Decoded blocks hold a u32 end per record and a u32 count besides the payload. */
static uint64_t rfs_payload_bytes(const rf_shard_index *ix)
{
	return ix->decoded_bytes - 4 * ix->records - 4 * (uint64_t)ix->blocks;
}

const rf_format rf_format_rfs = {
    .name = "rfs",
    .names = rfs_names,
    .claim = rfs_claim,
    .open_step = rfs_open_step,
    .open_abort = NULL,
    .close = rfs_close,
    .decode = rfs_decode,
    .payload_bytes = rfs_payload_bytes,
    .in_place = false,
};
