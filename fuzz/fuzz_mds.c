/* fuzz_mds.c - libFuzzer target for MosaicML MDS (shards/mds.c). The first
 * byte picks what the rest is: 0 an uncompressed shard (opened step by
 * step, every unit of an accepted layout decoded), 1 a zstd shard (the same),
 * 2 an index.json (rf_mds_index_parse, and read in small pieces through
 * rf_mds_index_scan: the same answer), 3 a config JSON
 * (rf_mds_config_parse), 4 a column encoding (rf_mds_encoding_size). An
 * accepted layout must add up: units tile the samples in order, every field
 * lies inside its sample, names are the shard's columns. */
#include "fuzz.h"
#include "mds.h"

static int open_bytes(const rf_format *f, const uint8_t *data, size_t size, rf_shard_index **ix,
                      void **priv, rf_error *err)
{
	rf_fmt_open o = {.url = "d/shard.00000.mds", .name = "fuzz.mds", .size = size};
	for (uint32_t steps = 0;; steps++) {
		int rc = f->open_step(&o, err);
		if (rc != RF_FMT_NEED) {
			if (f->open_abort)
				f->open_abort(&o);
			if (rc == RF_FMT_DONE) {
				*ix = o.index;
				*priv = o.priv;
			}
			return rc;
		}
		FUZZ_CHECK(steps < 64);
		FUZZ_CHECK(o.want.offset <= size && o.want.len <= size - o.want.offset);
		o.got = data + o.want.offset;
		o.got_offset = o.want.offset;
		o.got_len = o.want.len;
	}
}

static void check_units(const rf_format *f, const uint8_t *data, const rf_shard_index *ix,
                        const void *priv)
{
	const char *const *names;
	uint32_t cols = f->field_names(priv, &names);
	uint64_t rec = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		FUZZ_CHECK(b->first_record == rec &&
		           b->offset + b->compressed_bytes <= ix->file_bytes);
		rec += b->records;
		uint64_t cap = f->in_place ? f->table_bytes(ix, priv, u) : b->decoded_bytes;
		uint8_t *dst = malloc(cap ? cap : 1);
		FUZZ_CHECK(dst != NULL);
		rf_unit_records r;
		rf_error err = {0};
		int rc = f->decode(NULL, ix, priv, u, data + b->offset, b->compressed_bytes, dst,
		                   cap, &r, "fuzz.mds", &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
		} else {
			FUZZ_CHECK(r.records == b->records);
			for (uint32_t i = 0; i < r.records; i++) {
				uint32_t s = rf_record_end(r.ends, (int64_t)i - 1),
				         e = rf_record_end(r.ends, i);
				FUZZ_CHECK(s <= e &&
				           r.field_first[i + 1] - r.field_first[i] == cols);
				for (uint32_t k = r.field_first[i]; k < r.field_first[i + 1]; k++) {
					FUZZ_CHECK(r.fields[k].name < cols);
					FUZZ_CHECK(r.fields[k].offset >= s &&
					           r.fields[k].offset <= e);
					FUZZ_CHECK(r.fields[k].len <= e - r.fields[k].offset);
				}
			}
		}
		free(dst);
	}
	FUZZ_CHECK(rec == ix->records);
}

typedef struct pieces {
	const uint8_t *p;
	size_t left, calls;
} pieces;

static int pieces_read(void *ctx, uint8_t *buf, size_t cap, size_t *got, rf_error *err)
{
	(void)err;
	pieces *r = ctx;
	size_t piece = 1 + (r->calls++ * 7) % 13; /* RF_MIN evaluates twice */
	*got = RF_MIN(RF_MIN(cap, r->left), piece);
	memcpy(buf, r->p, *got);
	r->p += *got;
	r->left -= *got;
	return 0;
}

static int count_add(void *ctx, const char *basename, uint64_t size, rf_error *err)
{
	FUZZ_CHECK(*basename && !strchr(basename, '/') && strcmp(basename, ".."));
	(*(size_t *)ctx)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t kind = data[0] % 5;
	size--;
	uint8_t *p = malloc(size + 1); /* exact size (+1 for the encoding's NUL) */
	FUZZ_CHECK(p != NULL);
	memcpy(p, data + 1, size);
	rf_error err = {0};
	if (kind <= 1) {
		const rf_format *f = kind ? &rf_mds_zstd_format : &rf_mds_format;
		rf_shard_index *ix = NULL;
		void *priv = NULL;
		int rc = open_bytes(f, p, size, &ix, &priv, &err);
		if (rc < 0)
			fuzz_check_error(rc, &err);
		else {
			check_units(f, p, ix, priv);
			f->close(ix, priv);
		}
	} else if (kind == 2) {
		size_t n = 0, pieces_n = 0;
		int rc = rf_mds_index_parse(p, size, "fuzz/index.json", count_add, &n, &err);
		if (rc < 0)
			fuzz_check_error(rc, &err);
		else
			FUZZ_CHECK(n > 0);
		/* read in pieces of 1..13 bytes: every value split across reads
		 * gives the same answer */
		pieces r = {p, size, 0};
		rf_error err2 = {0};
		int rc2 = rf_mds_index_scan(pieces_read, &r, "fuzz/index.json", count_add,
		                            &pieces_n, &err2);
		FUZZ_CHECK(rc2 == rc && pieces_n == n);
	} else if (kind == 3) {
		rf_mds_columns c;
		int rc = rf_mds_config_parse((const char *)p, size, &c, "fuzz.mds", &err);
		if (rc < 0)
			fuzz_check_error(rc, &err);
		else {
			FUZZ_CHECK(c.n >= 1 && c.n <= RF_MDS_COLUMNS_MAX && c.variable <= c.n);
			rf_mds_columns_free(&c);
		}
	} else {
		p[size] = 0;
		int64_t s = rf_mds_encoding_size((const char *)p);
		FUZZ_CHECK(s >= -2 && s <= RF_BLOCK_DECODED_MAX);
	}
	free(p);
	return 0;
}
