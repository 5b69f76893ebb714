/* test_drain.c - whole-object reads without decoding (bench --fetch-only's
 * engine), over local files: every byte counted, reads sized as asked,
 * failures named, bad settings refused. */
#include "drain.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_drain_files(void **state)
{
	(void)state;
	char *dir = rf_test_tmpdir("drain");
	uint64_t sizes[] = {1, 999, 1000, 1001, 25000};
	uint64_t total = 0, reads = 0;
	rf_url_list l = {0};
	rf_error err = {0};
	static uint8_t data[25000];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/o%zu.bin", dir, i);
		assert_int_equal(rf_test_write_file(path, data, sizes[i]), 0);
		/* a wrong hint would be caught by the file source; give the truth or none */
		assert_int_equal(
		    rf_url_list_add(&l, path, i % 2 ? sizes[i] : RF_SIZE_UNKNOWN, &err), 0);
		total += sizes[i];
		reads += (sizes[i] + 999) / 1000;
	}
	rf_loop *loop;
	rf_fetch *f;
	assert_int_equal(rf_loop_new(&loop, NULL), 0);
	assert_int_equal(rf_fetch_new(loop, NULL, &f, NULL), 0);
	rf_drain_report rep;
	assert_int_equal(rf_fetch_drain(f, &l, 1000, 3, &rep, &err), 0);
	assert_true(rep.bytes == total);
	assert_true(rep.reads == reads);
	assert_true(rep.objects == l.n);
	assert_int_equal(rep.registered_bytes, 0); /* direct_io off: nothing registered */
	/* direct_io on: the buffers (3 x 64 KiB) are registered and the reads
	 * that land in them go as READ_FIXED: with O_DIRECT the three aligned
	 * 64 KiB ranges (the 8 KiB tail goes through a bounce block), where the
	 * filesystem refuses O_DIRECT all four */
	char big[512];
	snprintf(big, sizeof(big), "%s/big.bin", dir);
	static uint8_t bigdata[200 << 10];
	for (size_t i = 0; i < sizeof(bigdata); i++)
		bigdata[i] = (uint8_t)(i * 7);
	assert_int_equal(rf_test_write_file(big, bigdata, sizeof(bigdata)), 0);
	rf_url_list lb = {0};
	assert_int_equal(rf_url_list_add(&lb, big, RF_SIZE_UNKNOWN, &err), 0);
	rf_fetch_options opt;
	rf_fetch_options_init(&opt);
	opt.direct_io = RF_DIRECT_IO_ON;
	rf_fetch *fd;
	assert_int_equal(rf_fetch_new(loop, &opt, &fd, NULL), 0);
	assert_int_equal(rf_fetch_drain(fd, &lb, 64 << 10, 3, &rep, &err), 0);
	assert_true(rep.bytes == sizeof(bigdata));
	/* the epoll backend (io_uring blocked) registers nothing: plain reads */
	bool reg = rf_loop_backend_of(loop) == RF_LOOP_IO_URING;
	assert_int_equal(rep.registered_bytes, reg ? 3 * (64 << 10) : 0);
	rf_fetch_counters c;
	rf_fetch_counters_get(fd, &c);
	assert_int_equal(c.register_error, reg ? 0 : -EOPNOTSUPP);
	assert_int_equal(c.registered_bytes, 0); /* unregistered at the end */
	assert_true(reg ? c.fixed_reads >= 3 : c.fixed_reads == 0);
	rf_fetch_free(fd);
	rf_url_list_free(&lb);
	/* a missing object: the error names it, nothing hangs */
	char missing[512];
	snprintf(missing, sizeof(missing), "%s/missing.bin", dir);
	assert_int_equal(rf_url_list_add(&l, missing, RF_SIZE_UNKNOWN, &err), 0);
	assert_true(rf_fetch_drain(f, &l, 1000, 3, &rep, &err) < 0);
	assert_non_null(strstr(err.msg, "missing.bin"));
	assert_int_equal(rf_fetch_drain(f, &l, 0, 3, &rep, &err), -EINVAL);
	assert_int_equal(rf_fetch_drain(f, &l, 1000, 0, &rep, &err), -EINVAL);
	rf_fetch_free(f);
	rf_loop_free(loop);
	rf_url_list_free(&l);
	rf_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drain_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
