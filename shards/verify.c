/* verify.c - rf_shard_verify: reads a local shard end to end and checks every
 * rule the reader checks, on every block, plus the dataset figures that only a
 * full decode can confirm (largest record). A damaged block is reported and
 * the walk goes on, so one run names every damaged block (up to a bound). */
#include "rfs.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct verify_run {
	const char *path;
	void (*report)(void *ctx, const rf_error *e);
	void *ctx;
	uint32_t max_reports, reported;
	uint64_t problems;
	rf_error first;
} verify_run;

static void problem(verify_run *v, const rf_error *e)
{
	if (v->problems++ == 0)
		v->first = *e;
	if (v->reported < v->max_reports && v->report) {
		v->reported++;
		v->report(v->ctx, e);
	}
}

static int read_block(int fd, const rf_block_info *bi, uint8_t *buf, const char *path, uint32_t b,
                      rf_error *err)
{
	size_t got = 0;
	while (got < bi->compressed_bytes) {
		ssize_t n =
		    pread(fd, buf + got, bi->compressed_bytes - got, (off_t)(bi->offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return rf_fail(err, n < 0 ? -errno : RF_E_CORRUPT,
			               "shard %s: block %u at byte %llu: read failed: %s", path, b,
			               (unsigned long long)(bi->offset + got),
			               n < 0 ? strerror(errno) : "file ended early");
		got += (size_t)n;
	}
	return 0;
}

static uint32_t largest_in_block(const uint32_t *ends, uint32_t records)
{
	uint32_t m = 0;
	for (uint32_t i = 0; i < records; i++)
		m = RF_MAX(m, rf_record_end(ends, i) - rf_record_end(ends, (int64_t)i - 1));
	return m;
}

/* Decodes every block; returns a negative code only for I/O or memory errors. */
static int walk_blocks(verify_run *v, int fd, const rf_shard_index *ix, rf_error *err)
{
	uint8_t *src = malloc(ix->largest_block_compressed_bytes + 1ul);
	uint8_t *dst = malloc(ix->largest_block_decoded_bytes + 1ul);
	rf_decoder *d = rf_decoder_new();
	int rc = 0;
	if (!src || !dst || !d)
		rc = rf_fail(err, -ENOMEM, "shard %s: no memory to verify (%u-byte blocks)",
		             v->path, ix->largest_block_decoded_bytes);
	uint32_t largest = 0, sound = 0;
	for (uint32_t b = 0; rc == 0 && b < ix->blocks; b++) {
		const rf_block_info *bi = &ix->block[b];
		rf_error e = {0};
		const uint32_t *ends = NULL;
		int r = read_block(fd, bi, src, v->path, b, &e);
		if (r < 0 && r != RF_E_CORRUPT) {
			rc = r;
			*err = e;
			break;
		}
		if (r == 0)
			r = rf_block_decode(d, ix, b, src, bi->compressed_bytes, dst,
			                    ix->largest_block_decoded_bytes, &ends, v->path, &e);
		if (r < 0) {
			problem(v, &e);
			continue;
		}
		sound++;
		largest = RF_MAX(largest, largest_in_block(ends, bi->records));
	}
	if (rc == 0 && sound == ix->blocks && largest != ix->largest_record_bytes) {
		rf_error e;
		rf_fail(&e, RF_E_CORRUPT,
		        "shard %s: index at byte %llu: largest record is %u bytes, index says %u",
		        v->path, (unsigned long long)(ix->compressed_bytes + 20), largest,
		        ix->largest_record_bytes);
		problem(v, &e);
	}
	rf_decoder_free(d);
	free(src);
	free(dst);
	return rc;
}

RF_API int rf_shard_verify(const char *path, void (*report)(void *ctx, const rf_error *e),
                           void *ctx, uint32_t max_reports, rf_error *err)
{
	verify_run v = {.path = path, .report = report, .ctx = ctx, .max_reports = max_reports};
	rf_shard_index *ix = NULL;
	rf_error e = {0};
	int rc = rf_index_read_file(path, &ix, &e);
	if (rc < 0) {
		if (report && max_reports)
			report(ctx, &e);
		if (err)
			*err = e;
		return rc;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		rc = rf_fail(err, -errno, "shard %s: cannot open: %s", path, strerror(errno));
	else
		rc = walk_blocks(&v, fd, ix, err ? err : &e);
	if (fd >= 0)
		close(fd);
	rf_index_free(ix);
	if (rc < 0)
		return rc;
	if (v.problems > v.reported && report) {
		rf_fail(&e, RF_E_CORRUPT, "shard %s: %llu more problems not listed (bound %u)",
		        path, (unsigned long long)(v.problems - v.reported), max_reports);
		report(ctx, &e);
	}
	if (v.problems) {
		if (err)
			*err = v.first;
		return RF_E_CORRUPT;
	}
	return 0;
}
