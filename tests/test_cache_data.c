/* test_cache_data.c - the data cache's record (fetch/cache.h): the header
 * is the asked object's exactly or refused; entries are walked in order, a
 * later one of an offset after an earlier, torn or foreign bytes stepped
 * over, ranges outside the object refused; the fuzz seeds parse as written;
 * names carry no query; the mode and directory rules. */
#include "cache.h"
#include "crc32c.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define URL  "https://host/ds/shard-000001.rfs"
#define VAL  "etag:\"5f3a-1e8\""
#define SIZE 1048576ull

typedef struct seen {
	rf_cache_entry e[16];
	size_t n;
} seen;

static void collect(void *ctx, const rf_cache_entry *e)
{
	seen *s = ctx;
	if (s->n < 16)
		s->e[s->n++] = *e;
}

static void test_header(void **state)
{
	(void)state;
	uint8_t h[512];
	int n = rf_cache_rec_header_make(URL, VAL, SIZE, h, sizeof(h));
	assert_int_equal(n, RF_CACHE_REC_HEADER + strlen(URL) + strlen(VAL));
	assert_int_equal(rf_cache_rec_header_check(h, (size_t)n, URL, VAL, SIZE), n);
	assert_int_equal(rf_cache_rec_header_check(h, (size_t)n, URL, "etag:\"other\"", SIZE),
	                 -EBADMSG); /* a new version is another object */
	assert_int_equal(rf_cache_rec_header_check(h, (size_t)n, URL "x", VAL, SIZE), -EBADMSG);
	assert_int_equal(rf_cache_rec_header_check(h, (size_t)n, URL, VAL, SIZE + 1), -EBADMSG);
	assert_int_equal(rf_cache_rec_header_check(h, (size_t)n - 1, URL, VAL, SIZE), -EBADMSG);
	h[40] ^= 1; /* inside the URL: the CRC catches it */
	assert_int_equal(rf_cache_rec_header_check(h, (size_t)n, URL, VAL, SIZE), -EBADMSG);
	assert_int_equal(rf_cache_rec_header_make("", VAL, SIZE, h, sizeof(h)), -EINVAL);
	assert_int_equal(rf_cache_rec_header_make(URL, "", SIZE, h, sizeof(h)), -EINVAL);
}

static void test_entries(void **state)
{
	(void)state;
	uint8_t p[6 * RF_CACHE_ENTRY_BYTES + 20];
	size_t n = 0;
	rf_cache_entry es[] = {{0, 4096, 1}, {4096, 100, 2}, {SIZE - 40, 40, 3}};
	for (size_t i = 0; i < 3; i++, n += RF_CACHE_ENTRY_BYTES)
		rf_cache_entry_make(&es[i], p + n);
	memcpy(p + n, p, 13); /* a torn append */
	n += 13;
	rf_cache_entry out = {SIZE - 40, 41, 4}; /* past the object's end */
	rf_cache_entry_make(&out, p + n);
	n += RF_CACHE_ENTRY_BYTES;
	rf_cache_entry again = {4096, 100, 9}; /* the same range written again */
	rf_cache_entry_make(&again, p + n);
	n += RF_CACHE_ENTRY_BYTES;
	memcpy(p + n, p, 7); /* an append in progress */
	n += 7;
	seen s = {0};
	uint64_t bad = 0;
	size_t used = rf_cache_rec_entries(p, n, SIZE, collect, &s, &bad);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.e[3].offset, 4096);
	assert_int_equal(s.e[3].crc, 9);
	assert_int_equal(s.e[2].offset, SIZE - 40);
	assert_int_equal(bad, 13 + RF_CACHE_ENTRY_BYTES);
	assert_int_equal(used, n - 7); /* the partial entry waits for the next read */
}

static void test_seed_parses(void **state)
{
	(void)state;
	char path[1024];
	const char *src = getenv("RF_SOURCE_DIR");
	snprintf(path, sizeof(path), "%s/fuzz/corpus/cache_data/record", src ? src : "..");
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	uint8_t p[512];
	size_t n = fread(p, 1, sizeof(p), f);
	fclose(f);
	int h = rf_cache_rec_header_check(p, n, URL, VAL, SIZE);
	assert_true(h > 0);
	seen s = {0};
	uint64_t bad = 0;
	rf_cache_rec_entries(p + h, n - (size_t)h, SIZE, collect, &s, &bad);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.e[1].len, 65536);
}

static void test_names(void **state)
{
	(void)state;
	char clean[256], d[RF_CACHE_NAME_BYTES], r[RF_CACHE_NAME_BYTES], a[RF_CACHE_NAME_BYTES];
	assert_int_equal(rf_cache_clean_url("https://user:pw@host/a/b.rfs?X-Amz-Signature=s#f",
	                                    clean, sizeof(clean)),
	                 0);
	assert_string_equal(clean, "https://host/a/b.rfs");
	rf_cache_names(clean, VAL, d, r, a);
	assert_true(rf_cache_is_dir_name(d));
	assert_true(rf_cache_is_file_name(r) && rf_cache_is_file_name(a));
	assert_int_equal(strncmp(r, a, 16), 0);
	char d2[RF_CACHE_NAME_BYTES], r2[RF_CACHE_NAME_BYTES], a2[RF_CACHE_NAME_BYTES];
	rf_cache_names(clean, "etag:\"other\"", d2, r2, a2);
	assert_string_equal(d, d2);     /* one directory per object */
	assert_string_not_equal(r, r2); /* one file per version */
	assert_false(rf_cache_is_file_name("notes.txt"));
	assert_false(rf_cache_is_file_name("0123456789abcdef.tmp"));
	uint32_t m;
	assert_int_equal(rf_cache_mode_parse("readwrite", &m), 0);
	assert_int_equal(m, RF_CACHE_READWRITE);
	assert_int_equal(rf_cache_mode_parse("rw", &m), -EINVAL);
}

static void test_dir_rules(void **state)
{
	(void)state;
	char dir[] = "/tmp/rf-test-cache-data-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	rf_error why = {0};
	int fd = rf_cache_dir_open(sub, RF_CACHE_READWRITE, &why);
	assert_true(fd >= 0);
	close(fd);
	chmod(sub, 0777);
	fd = rf_cache_dir_open(sub, RF_CACHE_READWRITE, &why);
	assert_int_equal(fd, -EPERM);
	assert_non_null(strstr(why.msg, "writable by others"));
	assert_int_equal(rf_cache_dir_open("relative/dir", RF_CACHE_READ, &why), -EINVAL);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/a", dir);
	rmdir(sub);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_header),      cmocka_unit_test(test_entries),
	    cmocka_unit_test(test_seed_parses), cmocka_unit_test(test_names),
	    cmocka_unit_test(test_dir_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
