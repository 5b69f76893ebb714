/* fuzz_parquet.c - libFuzzer target for Parquet (shards/parquet*.c,
 * shards/thrift.c). The first byte picks what the rest is: 0 a whole file
 * (opened step by step through rf_format_open_mem, which checks every
 * request and what the format holds against its bounds; every unit of an
 * accepted layout decoded: pages, codecs, encodings, levels, rows), 1 the
 * same file read with only its second column, 2 a page header, 3 a
 * FileMetaData. An accepted unit must add up: its records lie in its slab,
 * its fields inside their records. */
#include "fuzz.h"
#include "parquet.h"

#include <stdlib.h>

extern const rf_format rf_parquet_format;

static void decode_all(const uint8_t *data, size_t size, const rf_pq_opts *opt)
{
	const rf_format *f = &rf_parquet_format;
	rf_fmt_object obj = {.url = "d/part-0.parquet", .data = data, .size = size};
	rf_shard_index *ix = NULL;
	void *priv = NULL;
	rf_error err = {0};
	if (rf_format_open_mem(f, &obj, 1, opt, &ix, &priv, NULL, NULL, &err) < 0)
		return;
	for (uint32_t u = 0; u < ix->blocks; u++) {
		const rf_block_info *b = &ix->block[u];
		FUZZ_CHECK(b->offset <= size && b->compressed_bytes <= size - b->offset);
		uint8_t *dst = malloc(b->decoded_bytes ? b->decoded_bytes : 1);
		FUZZ_CHECK(dst);
		rf_unit_records r;
		if (f->decode(NULL, ix, priv, u, data + b->offset, b->compressed_bytes, dst,
		              b->decoded_bytes, &r, "fuzz", &err) == 0) {
			FUZZ_CHECK(r.records == b->records);
			uint32_t prev = 0;
			for (uint32_t i = 0; i < r.records; i++) {
				uint32_t end = rf_record_end(r.ends, i);
				FUZZ_CHECK(end >= prev && end <= b->decoded_bytes);
				FUZZ_CHECK(r.fields || !opt || !opt->tok.seq_len ||
				           end - prev == 17 * 4);
				for (uint32_t k = r.fields ? r.field_first[i] : 0;
				     r.fields && k < r.field_first[i + 1]; k++)
					FUZZ_CHECK(r.fields[k].offset >= prev &&
					           r.fields[k].offset + (uint64_t)r.fields[k].len <=
					               end);
				prev = end;
			}
		}
		free(dst);
	}
	f->close(ix, priv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0] % 5;
	data++, size--;
	if (mode == 0) {
		decode_all(data, size, NULL);
	} else if (mode == 1) {
		rf_pq_opts opt = {.columns = "s"};
		decode_all(data, size, &opt);
	} else if (mode == 4) {
		rf_pq_opts opt = {.columns = "li", .tok = {.seq_len = 16}};
		decode_all(data, size, &opt);
	} else if (mode == 2) {
		pq_page_header h;
		uint32_t hl;
		const char *why;
		if (rf_pq_page_header(data, size, &h, &hl, &why) == 0)
			FUZZ_CHECK(hl <= size);
	} else {
		pq_file_meta m;
		rf_error err = {0};
		if (rf_pq_meta_parse(data, size, &m, "fuzz", 0, &err) == 0) {
			FUZZ_CHECK(m.held_bytes <= rf_pq_meta_bound(size));
			rf_pq_meta_free(&m);
		}
	}
	return 0;
}
