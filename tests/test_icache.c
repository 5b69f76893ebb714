/* test_icache.c - the index cache (engine/icache.c): misses, round trips,
 * an entry of another key under the same name, damaged entries removed,
 * the bounds and the order of eviction, secrets never on disk, and the
 * directories it refuses (not the user's, writable by others, a symlink,
 * not creatable). */
#include "icache.h"
#include "testutil.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct env {
	char *tmp;
	char dir[600];
	rf_icache *c;
} env;

static int setup(void **state)
{
	env *e = calloc(1, sizeof(*e));
	e->tmp = rf_test_tmpdir("icache");
	snprintf(e->dir, sizeof(e->dir), "%s/a/b/index", e->tmp);
	rf_error why = {0};
	if (rf_icache_open(e->dir, 1 << 20, 100, &e->c, &why) < 0)
		fail_msg("open: %s", why.msg);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	env *e = *state;
	rf_icache_close(e->c);
	rf_test_sh(NULL, "chmod -R u+rwx '%s'", e->tmp);
	rf_test_rmtree(e->tmp);
	free(e->tmp);
	free(e);
	return 0;
}

static rf_icache_key key_of(const char *url, const char *validator)
{
	return (rf_icache_key){.url = url,
	                       .size = 123456,
	                       .validator = validator,
	                       .format = "tar",
	                       .format_version = 1};
}

static void entry_path(env *e, const rf_icache_key *k, char *out, size_t cap)
{
	char name[RF_ICACHE_NAME_BYTES];
	assert_int_equal(rf_icache_entry_name(k, name), 0);
	snprintf(out, cap, "%s/%s", e->dir, name);
}

/* Asks k the way the loader does: stat, reserve, get. Returns the length or
 * -ENOENT; the payload in buf. */
static int64_t lookup(env *e, const rf_icache_key *k, uint8_t *buf, uint64_t cap)
{
	uint64_t bytes = 0, len = 0;
	if (rf_icache_stat(e->c, k, &bytes) < 0)
		return -ENOENT;
	assert_true(bytes <= cap);
	int rc = rf_icache_get(e->c, k, buf, cap, &len);
	if (rc < 0)
		return rc;
	assert_int_equal(len, bytes);
	return (int64_t)len;
}

static void test_round_trip(void **state)
{
	env *e = *state;
	struct stat st;
	assert_int_equal(stat(e->dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700); /* created private, parents too */
	char parent[700];
	snprintf(parent, sizeof(parent), "%s/a", e->tmp);
	assert_int_equal(stat(parent, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	rf_icache_key k = key_of("http://host/ds/shard-0.tar", "etag:\"abc\"");
	uint8_t buf[4096], payload[3000];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), -ENOENT); /* miss */
	assert_int_equal(rf_icache_put(e->c, &k, payload, sizeof(payload)), 0);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), sizeof(payload));
	assert_memory_equal(buf, payload, sizeof(payload));
	/* a buffer too small is refused, the entry kept */
	uint64_t len = 0;
	assert_int_equal(rf_icache_get(e->c, &k, buf, 100, &len), -EFBIG);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), sizeof(payload));
	/* every part of the key tells entries apart */
	rf_icache_key other = k;
	other.size++;
	assert_int_equal(lookup(e, &other, buf, sizeof(buf)), -ENOENT);
	other = k;
	other.validator = "etag:\"abd\"";
	assert_int_equal(lookup(e, &other, buf, sizeof(buf)), -ENOENT);
	other = k;
	other.format_version = 2;
	assert_int_equal(lookup(e, &other, buf, sizeof(buf)), -ENOENT);
	other = k;
	other.format = "mds";
	assert_int_equal(lookup(e, &other, buf, sizeof(buf)), -ENOENT);
	/* a newer put replaces the entry; an empty payload is a payload */
	assert_int_equal(rf_icache_put(e->c, &k, "x", 1), 0);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), 1);
	assert_int_equal(rf_icache_put(e->c, &k, NULL, 0), 0);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), 0);
	/* an unknown version is never cached */
	rf_icache_key unknown = key_of("http://host/ds/shard-0.tar", "");
	assert_false(rf_icache_cacheable(&unknown));
	assert_int_equal(rf_icache_put(e->c, &unknown, "x", 1), -EINVAL);
	assert_int_equal(lookup(e, &unknown, buf, sizeof(buf)), -ENOENT);
	rf_icache_key badfmt = key_of("http://host/x", "etag:1");
	badfmt.format = "../x";
	assert_int_equal(rf_icache_put(e->c, &badfmt, "x", 1), -EINVAL);
	/* no cache at all: every call is a miss or a no-op */
	assert_int_equal(rf_icache_stat(NULL, &k, &len), -ENOENT);
	assert_int_equal(rf_icache_get(NULL, &k, buf, sizeof(buf), &len), -ENOENT);
	assert_true(rf_icache_put(NULL, &k, "x", 1) < 0);
	rf_icache_counters cn;
	rf_icache_counters_get(e->c, &cn);
	assert_true(cn.hits >= 4 && cn.puts == 3);
	/* a stale entry dropped: gone, counted; another key's is left; a
	 * second drop finds none */
	rf_icache_key kept = key_of("http://host/ds/shard-1.tar", "etag:\"abc\"");
	assert_int_equal(rf_icache_put(e->c, &kept, "y", 1), 0);
	assert_int_equal(rf_icache_drop(e->c, &k), 0);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(lookup(e, &kept, buf, sizeof(buf)), 1);
	assert_int_equal(rf_icache_drop(e->c, &k), -ENOENT);
	assert_int_equal(rf_icache_drop(NULL, &k), -ENOENT);
	rf_icache_counters_get(e->c, &cn);
	assert_int_equal(cn.stale_drops, 1);
}

/* A well-formed entry of another key under k's name: a miss, and left for
 * the next put to replace. */
static void test_key_mismatch(void **state)
{
	env *e = *state;
	rf_icache_key k = key_of("http://host/a.tar", "etag:1"),
	              o = key_of("http://host/b.tar", "etag:1");
	assert_int_equal(rf_icache_put(e->c, &o, "other", 5), 0);
	char from[700], to[700];
	entry_path(e, &o, from, sizeof(from));
	entry_path(e, &k, to, sizeof(to));
	assert_string_not_equal(from, to);
	assert_int_equal(rename(from, to), 0);
	uint8_t buf[16];
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), -ENOENT);
	uint64_t len;
	assert_int_equal(rf_icache_get(e->c, &k, buf, sizeof(buf), &len), -ENOENT);
	assert_int_equal(access(to, F_OK), 0);
	assert_int_equal(rf_icache_put(e->c, &k, "mine", 4), 0);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "mine", 4);
}

/* Flips one byte at off of k's entry file. */
static void flip(env *e, const rf_icache_key *k, long off)
{
	char path[700];
	entry_path(e, k, path, sizeof(path));
	unsigned char *bytes = NULL;
	long n = rf_test_read_file(path, &bytes);
	assert_true(n > 0);
	if (off < 0)
		off += n;
	bytes[off] ^= 0x40;
	assert_int_equal(rf_test_write_file(path, bytes, (size_t)n), 0);
	free(bytes);
}

static void test_corrupt_removed(void **state)
{
	env *e = *state;
	rf_icache_key k = key_of("s3://bucket/ds/x.tar", "etag:\"9\"");
	uint8_t payload[500], buf[600];
	memset(payload, 0x5a, sizeof(payload));
	char path[700];
	entry_path(e, &k, path, sizeof(path));
	/* a payload byte: the header still holds (stat hits), the get finds the CRC */
	assert_int_equal(rf_icache_put(e->c, &k, payload, sizeof(payload)), 0);
	flip(e, &k, -1);
	uint64_t bytes = 0, len = 0;
	assert_int_equal(rf_icache_stat(e->c, &k, &bytes), 0);
	assert_int_equal(rf_icache_get(e->c, &k, buf, sizeof(buf), &len), -ENOENT);
	assert_int_equal(access(path, F_OK), -1); /* removed */
	/* a header byte (the payload length), the magic, the key: a miss at stat */
	const long offsets[] = {16, 0, 40};
	for (size_t i = 0; i < RF_ARRAY_LEN(offsets); i++) {
		assert_int_equal(rf_icache_put(e->c, &k, payload, sizeof(payload)), 0);
		flip(e, &k, offsets[i]);
		assert_int_equal(rf_icache_stat(e->c, &k, &bytes), -ENOENT);
		assert_int_equal(access(path, F_OK), -1);
	}
	/* truncated, and too short for a header */
	assert_int_equal(rf_icache_put(e->c, &k, payload, sizeof(payload)), 0);
	assert_int_equal(truncate(path, 300), 0);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(rf_test_write_file(path, "RFIC", 4), 0);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(access(path, F_OK), -1);
	/* a symlink under the entry's name is not followed (nor removed) */
	char target[700];
	snprintf(target, sizeof(target), "%s/elsewhere", e->tmp);
	assert_int_equal(rf_icache_put(e->c, &k, payload, sizeof(payload)), 0);
	assert_int_equal(rename(path, target), 0);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(lookup(e, &k, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(access(target, F_OK), 0);
	rf_icache_counters cn;
	rf_icache_counters_get(e->c, &cn);
	assert_true(cn.corrupt >= 5);
}

static void set_mtime(env *e, const rf_icache_key *k, time_t sec)
{
	char path[700];
	entry_path(e, k, path, sizeof(path));
	struct timespec ts[2] = {{.tv_sec = sec}, {.tv_sec = sec}};
	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static bool present(env *e, const rf_icache_key *k)
{
	char path[700];
	entry_path(e, k, path, sizeof(path));
	return access(path, F_OK) == 0;
}

static long entry_files(env *e)
{
	char *out = NULL;
	assert_int_equal(rf_test_sh(&out, "ls '%s' | grep -c '\\.idx$' || true", e->dir), 0);
	long n = strtol(out, NULL, 10);
	free(out);
	return n;
}

/* Entries: at most max_entries, the least recently used (by mtime, a hit
 * touching it) removed first; bytes: the same by size. */
static void test_bounds_lru(void **state)
{
	env *e = *state;
	rf_icache_close(e->c);
	rf_error why = {0};
	assert_int_equal(rf_icache_open(e->dir, 1 << 20, 3, &e->c, &why), 0);
	char urls[5][64];
	rf_icache_key k[5];
	for (int i = 0; i < 5; i++) {
		snprintf(urls[i], sizeof(urls[i]), "https://h/ds/shard-%d.tar", i);
		k[i] = key_of(urls[i], "etag:1");
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(rf_icache_put(e->c, &k[i], "abc", 3), 0);
		set_mtime(e, &k[i], 1000000 + i); /* 0 oldest, 2 newest */
	}
	uint8_t buf[8];
	assert_int_equal(lookup(e, &k[0], buf, sizeof(buf)), 3); /* 0 is now the newest */
	assert_int_equal(rf_icache_put(e->c, &k[3], "abc", 3), 0);
	assert_true(present(e, &k[0]) && !present(e, &k[1]) && present(e, &k[2]) &&
	            present(e, &k[3]));
	assert_int_equal(rf_icache_put(e->c, &k[4], "abc", 3), 0);
	assert_true(present(e, &k[0]) && !present(e, &k[2]) && present(e, &k[3]) &&
	            present(e, &k[4]));
	assert_int_equal(entry_files(e), 3);
	rf_icache_counters cn;
	rf_icache_counters_get(e->c, &cn);
	assert_int_equal(cn.evictions, 2);

	/* bytes: 4 entries of ~10 KiB in a 32 KiB cache keep the newest 2 (7/8 of
	 * the bound after a scan), an entry larger than the cache is refused */
	rf_icache_close(e->c);
	assert_int_equal(rf_test_sh(NULL, "rm -f '%s'/*.idx", e->dir), 0);
	assert_int_equal(rf_icache_open(e->dir, 32 << 10, 100, &e->c, &why), 0);
	static uint8_t big[10 << 10];
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rf_icache_put(e->c, &k[i], big, sizeof(big)), 0);
		set_mtime(e, &k[i], 2000000 + i);
	}
	assert_true(!present(e, &k[0]) && present(e, &k[2]) && present(e, &k[3]));
	char *du = NULL;
	assert_int_equal(rf_test_sh(&du, "cat '%s'/*.idx | wc -c", e->dir), 0);
	assert_true(strtol(du, NULL, 10) <= 32 << 10);
	free(du);
	static uint8_t huge[40 << 10];
	assert_int_equal(rf_icache_put(e->c, &k[4], huge, sizeof(huge)), -EFBIG);
	/* another process's entries count: a fresh cache scans before trusting */
	rf_icache_close(e->c);
	assert_int_equal(rf_icache_open(e->dir, 32 << 10, 2, &e->c, &why), 0);
	assert_int_equal(rf_icache_put(e->c, &k[4], "abc", 3), 0);
	assert_true(entry_files(e) <= 2 && present(e, &k[4]));
	/* stale temporary files of a crashed writer are swept; fresh ones kept */
	char stale[700], fresh[700];
	snprintf(stale, sizeof(stale), "%s/.tmp-1-0-0123456789abcdef", e->dir);
	snprintf(fresh, sizeof(fresh), "%s/.tmp-2-0-0123456789abcdef", e->dir);
	assert_int_equal(rf_test_write_file(stale, "x", 1), 0);
	assert_int_equal(rf_test_write_file(fresh, "x", 1), 0);
	struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
	assert_int_equal(utimensat(AT_FDCWD, stale, old, 0), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(rf_icache_put(e->c, &k[i], "abc", 3), 0);
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(fresh, F_OK), 0);
}

/* Credentials in the URL (userinfo, a presigned query) reach neither a file
 * name nor a byte on disk; the same object without them is the same key. */
static void test_no_secrets(void **state)
{
	env *e = *state;
	const char *secret_url = "https://user:PASSWORD-91f@host.example/ds/a.tar?X-Amz-Signature="
	                         "SIG-3c7e&X-Amz-Credential=AKIA-77#frag";
	rf_icache_key k = key_of(secret_url, "etag:\"s\"");
	assert_int_equal(rf_icache_put(e->c, &k, "payload", 7), 0);
	const char *words[] = {"PASSWORD-91f", "SIG-3c7e", "AKIA-77", "user:", "X-Amz", "frag"};
	for (size_t i = 0; i < RF_ARRAY_LEN(words); i++) {
		int rc = rf_test_sh(NULL, "grep -rqaF -- '%s' '%s'", words[i], e->dir);
		if (rc != 1)
			fail_msg("'%s' found under the cache directory (grep %d)", words[i], rc);
		rc = rf_test_sh(NULL, "ls -a '%s' | grep -qF -- '%s'", e->dir, words[i]);
		assert_int_equal(rc, 1);
	}
	assert_int_equal(
	    rf_test_sh(NULL, "grep -rqaF 'https://host.example/ds/a.tar' '%s'", e->dir),
	    0); /* the cleaned URL is the key */
	rf_icache_key clean = key_of("https://host.example/ds/a.tar", "etag:\"s\"");
	uint8_t buf[16];
	assert_int_equal(lookup(e, &clean, buf, sizeof(buf)), 7);
	char out[256];
	assert_int_equal(rf_icache_clean_url("s3://b/k?versionId=1", out, sizeof(out)), 0);
	assert_string_equal(out, "s3://b/k");
	assert_int_equal(rf_icache_clean_url("http://a@b@h:80/p@q?x", out, sizeof(out)), 0);
	assert_string_equal(out, "http://h:80/p@q");
	assert_int_equal(rf_icache_clean_url("/local/p?x", out, sizeof(out)), 0);
	assert_string_equal(out, "/local/p?x"); /* a path has no query */
	assert_int_equal(rf_icache_clean_url("http://h/long", out, 8), -ENAMETOOLONG);
}

static void expect_disabled(const char *dir, const char *words)
{
	rf_icache *c = (rf_icache *)1;
	rf_error why = {0};
	int rc = rf_icache_open(dir, 0, 0, &c, &why);
	if (rc >= 0 || c || !strstr(why.msg, words))
		fail_msg("%s: rc %d, '%s' (wanted '%s')", dir, rc, why.msg, words);
	assert_non_null(strstr(why.msg, "index cache disabled"));
}

static void test_unsafe_dirs(void **state)
{
	env *e = *state;
	char d[700];
	snprintf(d, sizeof(d), "%s/shared", e->tmp);
	assert_int_equal(mkdir(d, 0777), 0);
	assert_int_equal(chmod(d, 0777), 0);
	expect_disabled(d, "writable by others");
	assert_int_equal(chmod(d, 0720), 0);
	expect_disabled(d, "writable by others");
	char link[700];
	snprintf(link, sizeof(link), "%s/link", e->tmp);
	assert_int_equal(symlink(e->dir, link), 0);
	expect_disabled(link, "symlink");
	snprintf(d, sizeof(d), "%s/file", e->tmp);
	assert_int_equal(rf_test_write_file(d, "x", 1), 0);
	char under[800];
	snprintf(under, sizeof(under), "%s/sub", d);
	expect_disabled(under, "cannot create");
	expect_disabled("relative/dir", "absolute");
	if (geteuid() != 0) { /* root may create anywhere and owns everything */
		char ro[700];
		snprintf(ro, sizeof(ro), "%s/ro", e->tmp);
		assert_int_equal(mkdir(ro, 0500), 0);
		snprintf(under, sizeof(under), "%s/index", ro);
		expect_disabled(under, "cannot create");
		expect_disabled(ro, "not writable"); /* ours, but we could never put */
		expect_disabled("/", "owned by uid 0");
	} else { /* root: a directory of another user */
		char theirs[700];
		snprintf(theirs, sizeof(theirs), "%s/theirs", e->tmp);
		assert_int_equal(mkdir(theirs, 0700), 0);
		assert_int_equal(chown(theirs, 12345, 12345), 0);
		expect_disabled(theirs, "owned by uid 12345");
	}
}

static void test_default_dir(void **state)
{
	(void)state;
	char buf[600];
	setenv("RINGFEED_CACHE_DIR", "/x/rf", 1);
	setenv("XDG_CACHE_HOME", "/x/xdg", 1);
	setenv("HOME", "/x/home", 1);
	assert_int_equal(rf_icache_default_dir(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/rf");
	unsetenv("RINGFEED_CACHE_DIR");
	assert_int_equal(rf_icache_default_dir(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/xdg/ringfeed/index");
	setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, as the XDG spec says */
	assert_int_equal(rf_icache_default_dir(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/home/.cache/ringfeed/index");
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	assert_int_equal(rf_icache_default_dir(buf, sizeof(buf)), -ENOENT);
	expect_disabled(NULL, "no directory");
	setenv("HOME", "/x/home", 1);
	assert_int_equal(rf_icache_default_dir(buf, 10), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_key_mismatch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_corrupt_removed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bounds_lru, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_secrets, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unsafe_dirs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_default_dir, setup, teardown),
	};
	return rf_test_run_group(tests, NULL, NULL);
}
