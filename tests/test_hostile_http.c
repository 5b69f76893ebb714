/* test_hostile_http.c - reading a shard over HTTP from a hostile server
 * (bad_http of scripts/servers.sh) fails clearly and in bounded time: a
 * Content-Length of 10^15 (on the HEAD that sizes the object and on the
 * range GETs), an endless redirect loop, a server that trickles one byte per
 * second. Each read goes the way the engine reads a shard (open -> footer
 * range -> index range -> block range -> decode) through the remote source,
 * and each failure must name the URL and the range, and say why. No CLI
 * command reads a shard URL yet, hence a C test. Skips (77) when the
 * servers' variables are missing, fails instead under RF_REQUIRE_SERVERS=1. */
#include "rfs.h"
#include "source.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A hang guard far above the expected seconds (the bound itself comes from
 * the options: 3 redirects, 1000 B/s low-speed limit over 1 s, 1 retry). */
#define HANG_GUARD_S 60

typedef struct done {
	int calls;
	int64_t res;
	char msg[1200];
} done;

static rf_loop *loop;
static rf_fetch *fetch;
static char tag[64], url_base[512], shard_path[1200];
static uint64_t shard_bytes;

static void on_done(void *arg, int64_t res, const char *msg)
{
	done *d = arg;
	d->calls++;
	d->res = res;
	snprintf(d->msg, sizeof(d->msg), "%s", msg ? msg : "");
}

static int64_t wait_done(done *d)
{
	uint64_t deadline = rf_now_ns() + HANG_GUARD_S * 1000000000ull;
	while (d->calls == 0 && rf_now_ns() < deadline) {
		assert_true(rf_loop_run_once(loop, 50000000ull) >= 0);
	}
	if (d->calls != 1)
		fail_msg("no answer within %d s (a hang)", HANG_GUARD_S);
	return d->res;
}

static int64_t read_range(rf_source *s, uint64_t off, uint64_t len, void *buf, done *d)
{
	memset(d, 0, sizeof(*d));
	int rc = rf_source_read(s, off, len, buf, on_done, d);
	return rc < 0 ? rc : wait_done(d);
}

/* Reads url as a shard: size (hint or HEAD), footer, index, block 0. Returns
 * 0 or the first failure, whose message lands in d->msg. */
static int64_t read_shard(const char *url, uint64_t hint, done *d)
{
	rf_error err = {0};
	rf_source *s = NULL;
	memset(d, 0, sizeof(*d));
	int64_t rc = rf_source_open(fetch, url, hint, &s, on_done, d, &err);
	if (rc < 0) {
		snprintf(d->msg, sizeof(d->msg), "%s", err.msg);
		return rc;
	}
	if ((rc = wait_done(d)) < 0) {
		rf_source_close(s);
		return rc;
	}
	uint64_t size = rf_source_size(s);
	uint8_t foot[RF_FOOTER_BYTES], *index = NULL, *frame = NULL, *slab = NULL;
	rf_footer ft;
	rf_shard_index *ix = NULL;
	rf_decoder *dec = rf_decoder_new();
	if (size < RF_FOOTER_BYTES)
		rc = rf_fail(&err, RF_E_CORRUPT, "shard %s: %llu bytes", url,
		             (unsigned long long)size);
	else if ((rc = read_range(s, size - RF_FOOTER_BYTES, RF_FOOTER_BYTES, foot, d)) >= 0 &&
	         (rc = rf_footer_parse(foot, sizeof(foot), size, url, &ft, &err)) == 0 &&
	         (index = malloc(ft.index_bytes)) &&
	         (rc = read_range(s, ft.index_offset, ft.index_bytes, index, d)) >= 0 &&
	         (rc = rf_index_parse(index, ft.index_bytes, &ft, size, url, &ix, &err)) == 0 &&
	         ix->blocks > 0) {
		const rf_block_info *bi = &ix->block[0];
		frame = malloc(bi->compressed_bytes);
		slab = malloc(bi->decoded_bytes);
		if ((rc = read_range(s, bi->offset, bi->compressed_bytes, frame, d)) >= 0)
			rc = rf_block_decode(dec, ix, 0, frame, bi->compressed_bytes, slab,
			                     bi->decoded_bytes, NULL, url, &err);
	}
	if (rc < 0 && err.code)
		snprintf(d->msg, sizeof(d->msg), "%s", err.msg);
	rf_index_free(ix);
	rf_decoder_free(dec);
	free(index);
	free(frame);
	free(slab);
	rf_source_close(s);
	return rc < 0 ? rc : 0;
}

static void url_of(char *out, size_t cap, const char *mode)
{
	snprintf(out, cap, "%s/%s/%s/shard.rfs", url_base, mode, tag);
}

/* The read fails with code, within the guard, naming the URL and why. */
static void expect_fail(const char *mode, uint64_t hint, int code, const char *why)
{
	char url[1024];
	url_of(url, sizeof(url), mode);
	done d;
	uint64_t t0 = rf_now_ns();
	int64_t rc = read_shard(url, hint, &d);
	double s = (double)(rf_now_ns() - t0) / 1e9;
	print_message("%-14s hint %-4s -> %lld in %.1f s: %s\n", mode,
	              hint == UINT64_MAX ? "HEAD" : "size", (long long)rc, s, d.msg);
	char path[256];
	snprintf(path, sizeof(path), "/%s/%s/shard.rfs", mode, tag);
	if (rc != code || !strstr(d.msg, path) || !strstr(d.msg, why))
		fail_msg("%s: got %lld '%s'; wanted %d naming '%s' and '%s'", mode, (long long)rc,
		         d.msg, code, path, why);
}

static void test_sound_shard_reads(void **state)
{
	(void)state;
	char url[1024];
	url_of(url, sizeof(url), "ok");
	done d;
	int64_t rc = read_shard(url, UINT64_MAX, &d);
	if (rc != 0)
		fail_msg("the control read failed: %s", d.msg);
}

static void test_huge_content_length(void **state)
{
	(void)state;
	/* sized by HEAD: the object "is" 10^15 bytes; the footer range lies past
	 * the real end, the server answers 200 with the huge length */
	expect_fail("huge-length", UINT64_MAX, -EPROTO,
	            "bytes 999999999999960-999999999999999: server ignored the Range");
	/* sized by the manifest: a 206 whose Content-Length is 10^15 is refused
	 * at the headers, before any body byte */
	expect_fail("huge-length", shard_bytes, -EPROTO, "Content-Length 1000000000000000");
}

static void test_redirect_loop(void **state)
{
	(void)state;
	expect_fail("redirect-loop", UINT64_MAX, -EPROTO, "edirects followed");
	expect_fail("redirect-loop", shard_bytes, -EPROTO, "edirects followed");
}

static void test_trickle(void **state)
{
	(void)state;
	/* one byte per second: below the low-speed limit, retried once, then a
	 * failure naming the range and the cause */
	expect_fail("trickle", shard_bytes, -EIO, "too slow");
}

static void write_shard(const char *root)
{
	snprintf(tag, sizeof(tag), "hostile-http-%d", (int)getpid());
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/%s", root, tag);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(shard_path, sizeof(shard_path), "%s/shard.rfs", dir);
	rf_error err = {0};
	rf_writer_options o = {.block_bytes = 4096};
	rf_writer *w = rf_writer_open(shard_path, &o, &err);
	assert_non_null(w);
	char rec[300];
	for (int i = 0; i < 100; i++) {
		memset(rec, 'a' + i % 26, sizeof(rec));
		assert_int_equal(rf_writer_add(w, rec, (size_t)(i * 3) % sizeof(rec), &err), 0);
	}
	rf_shard_summary sum;
	assert_int_equal(rf_writer_close(w, &sum, &err), 0);
	shard_bytes = sum.file_bytes;
}

static int setup(void **state)
{
	(void)state;
	const char *vars[] = {"RF_BAD_URL", "RF_BAD_ROOT"};
	for (size_t i = 0; i < 2; i++) {
		if (getenv(vars[i]) && *getenv(vars[i]))
			continue;
		const char *req = getenv("RF_REQUIRE_SERVERS");
		int must = req && !strcmp(req, "1");
		fprintf(stderr, "%s: %s not set (scripts/servers.sh start DIR && . DIR/env)\n",
		        must ? "FAIL" : "SKIP", vars[i]);
		exit(must ? 1 : 77);
	}
	snprintf(url_base, sizeof(url_base), "%s", getenv("RF_BAD_URL"));
	write_shard(getenv("RF_BAD_ROOT"));
	assert_int_equal(rf_loop_new(&loop, NULL), 0);
	rf_fetch_options o;
	rf_fetch_options_init(&o);
	o.retries = 1;
	o.connect_timeout_ms = 5000;
	o.request_timeout_ms = 20000;
	o.low_speed_bytes_per_s = 1000;
	o.low_speed_time_s = 1;
	rf_error err = {0};
	if (rf_fetch_new(loop, &o, &fetch, &err) < 0)
		fail_msg("rf_fetch_new: %s", err.msg);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rf_fetch_free(fetch);
	rf_loop_free(loop);
	rf_test_sh(NULL, "rm -rf '%s/%s'", getenv("RF_BAD_ROOT"), tag);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sound_shard_reads),
	    cmocka_unit_test(test_huge_content_length),
	    cmocka_unit_test(test_redirect_loop),
	    cmocka_unit_test(test_trickle),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
