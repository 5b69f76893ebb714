/* fuzz_tar.c - libFuzzer target for the WebDataset tar format (shards/
 * tar.c): the input is a whole tar, opened step by step as the engine
 * would (remote and local step sizes), and every unit of an accepted
 * layout decoded from the same bytes. An accepted layout must add up:
 * units tile the samples in order, each field lies inside its unit and
 * its sample, every sample has a field and a key, and decoding the bytes
 * the open accepted succeeds. Each input is also tried with every
 * ustar header's checksum made right. */
#include "fuzz.h"
#include "tar.h"

static int open_bytes(const uint8_t *data, size_t size, bool local, rf_shard_index **ix,
                      void **priv, rf_error *err)
{
	rf_fmt_open o = {.url = "fuzz.tar", .name = "fuzz.tar", .size = size, .local = local};
	for (uint32_t steps = 0;; steps++) {
		int rc = rf_tar_format.open_step(&o, err);
		if (rc != RF_FMT_NEED) {
			rf_tar_format.open_abort(&o);
			if (rc == RF_FMT_DONE) {
				*ix = o.index;
				*priv = o.priv;
			}
			return rc;
		}
		FUZZ_CHECK(steps < size / RF_TAR_BLOCK + 5); /* every step makes progress */
		o.absent = false;
		if (o.want.object) { /* the optional index file: none here (fuzz_tar_index) */
			FUZZ_CHECK(o.want.optional);
			o.absent = true;
			o.got = NULL;
			o.got_offset = o.got_len = 0;
			continue;
		}
		FUZZ_CHECK(o.want.offset <= size && o.want.len <= size - o.want.offset);
		o.got = data + o.want.offset;
		o.got_offset = o.want.offset;
		o.got_len = o.want.len;
	}
}

static void check_unit(const uint8_t *data, const rf_shard_index *ix, const void *priv, uint32_t u,
                       uint32_t names)
{
	const rf_block_info *b = &ix->block[u];
	FUZZ_CHECK(b->offset + b->compressed_bytes <= ix->file_bytes);
	FUZZ_CHECK(b->records > 0 && b->compressed_bytes == b->decoded_bytes);
	size_t cap = (size_t)rf_fmt_table_bytes(b->records);
	uint8_t *table = malloc(cap);
	FUZZ_CHECK(table != NULL);
	rf_unit_records r;
	rf_error err = {0};
	int rc = rf_tar_format.decode(NULL, ix, priv, u, data + b->offset, b->compressed_bytes,
	                              table, cap, &r, "fuzz.tar", &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(r.records == b->records && r.fields && r.keys);
	for (uint32_t i = 0; i < r.records; i++) {
		uint32_t start = rf_record_end(r.ends, (int64_t)i - 1),
		         end = rf_record_end(r.ends, i);
		FUZZ_CHECK(start <= end && end <= b->compressed_bytes);
		FUZZ_CHECK(r.field_first[i] < r.field_first[i + 1]);
		FUZZ_CHECK(r.key_first[i] < r.key_first[i + 1]);
		for (uint32_t f = r.field_first[i]; f < r.field_first[i + 1]; f++) {
			const rf_rec_field *fl = &r.fields[f];
			FUZZ_CHECK(fl->name < names);
			FUZZ_CHECK(fl->offset >= start && fl->offset <= end);
			FUZZ_CHECK(fl->len <= end - fl->offset);
			for (uint32_t g = r.field_first[i]; g < f; g++)
				FUZZ_CHECK(r.fields[g].name != fl->name);
		}
	}
	FUZZ_CHECK(rf_record_end(r.ends, (int64_t)r.records - 1) == b->compressed_bytes);
	free(table);
}

static void check_layout(const uint8_t *data, const rf_shard_index *ix, const void *priv)
{
	const char *const *names;
	uint32_t n = rf_tar_format.field_names(priv, &names);
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(names[i], names[j]) != 0);
	uint64_t rec = 0, end = 0;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		FUZZ_CHECK(ix->block[u].first_record == rec);
		FUZZ_CHECK(ix->block[u].offset >= end);
		rec += ix->block[u].records;
		end = ix->block[u].offset + ix->block[u].compressed_bytes;
		check_unit(data, ix, priv, u, n);
	}
	FUZZ_CHECK(rec == ix->records);
}

/* Gives every 512-byte block with the ustar magic a right checksum, so
 * mutations of names, sizes and types get past it. */
static void fix_checksums(uint8_t *p, size_t size)
{
	for (size_t at = 0; at + RF_TAR_BLOCK <= size; at += RF_TAR_BLOCK) {
		uint8_t *h = p + at;
		if (memcmp(h + 257, "ustar", 5) != 0)
			continue;
		unsigned sum = 0;
		for (int i = 0; i < RF_TAR_BLOCK; i++)
			sum += i >= 148 && i < 156 ? ' ' : h[i];
		snprintf((char *)h + 148, 8, "%06o", sum & 0777777);
		h[155] = ' ';
	}
}

static void one(const uint8_t *data, size_t size, bool fix)
{
	uint8_t *copy = malloc(size ? size : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(copy != NULL);
	memcpy(copy, data, size);
	if (fix)
		fix_checksums(copy, size);
	for (int local = 0; local < 2; local++) {
		rf_shard_index *ix = NULL;
		void *priv = NULL;
		rf_error err = {0};
		int rc = open_bytes(copy, size, local, &ix, &priv, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			continue;
		}
		check_layout(copy, ix, priv);
		rf_tar_format.close(ix, priv);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size, false);
	one(data, size, true);
	return 0;
}
