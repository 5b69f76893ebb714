/* test_http_servers.c - the HTTP(S) and S3 sources against the real test
 * servers of scripts/servers.sh (nginx plain + TLS, s3rver, the SigV4
 * verifier, the misbehaving bad_http): exact bytes, listing with pagination,
 * signatures right and wrong, every error path with the number of
 * requests the server saw, and the objects' versions (validators). Skips (77) when the servers'
 * variables are missing, fails instead under RF_REQUIRE_SERVERS=1. */
#include "remote.h"
#include "source.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA_BYTES (1000u * 1000u + 7u)

typedef struct done {
	int calls;
	int64_t res;
	char msg[1200];
} done;

typedef struct env {
	rf_loop *loop;
	rf_fetch *fetch;
	uint8_t *data; /* DATA_BYTES of test data, also stored on every server */
	char tag[64];
} env;

static env E;

static const char *need(const char *var)
{
	const char *v = getenv(var);
	if (!v || !*v)
		fail_msg("%s not set", var);
	return v;
}

static void on_done(void *arg, int64_t res, const char *msg)
{
	done *d = arg;
	d->calls++;
	d->res = res;
	snprintf(d->msg, sizeof(d->msg), "%s", msg ? msg : "");
}

static void spin(done *d)
{
	uint64_t deadline = rf_now_ns() + 60000000000ull;
	while (d->calls == 0 && rf_now_ns() < deadline) {
		assert_true(rf_loop_run_once(E.loop, 50000000ull) >= 0);
	}
	assert_int_equal(d->calls, 1);
}

static void fetch_with(const rf_fetch_options *o)
{
	rf_fetch_free(E.fetch);
	E.fetch = NULL;
	rf_error err = {0};
	if (rf_fetch_new(E.loop, o, &E.fetch, &err) < 0)
		fail_msg("rf_fetch_new: %s", err.msg);
}

static void default_fetch(rf_fetch_options *o)
{
	rf_fetch_options_init(o);
	o->retries = 3;
	o->ca_file = getenv("RF_CA_FILE");
}

/* Opens url (size from a HEAD when hint is unknown). Returns res; *s on success. */
static int64_t open_src(const char *url, uint64_t hint, rf_source **s, done *d)
{
	rf_error err = {0};
	memset(d, 0, sizeof(*d));
	int rc = rf_source_open(E.fetch, url, hint, s, on_done, d, &err);
	if (rc < 0) {
		snprintf(d->msg, sizeof(d->msg), "%s", err.msg);
		return rc;
	}
	spin(d);
	if (d->res < 0) {
		rf_source_close(*s);
		*s = NULL;
	}
	return d->res;
}

static int64_t read_src(rf_source *s, uint64_t off, uint64_t len, void *buf, done *d)
{
	memset(d, 0, sizeof(*d));
	int rc = rf_source_read(s, off, len, buf, on_done, d);
	if (rc < 0)
		return rc;
	spin(d);
	return d->res;
}

static void write_under(const char *root, const char *rel)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	assert_int_equal(rf_test_write_file(path, E.data, DATA_BYTES), 0);
}

/* Requests the bad_http server saw for a path. */
static long bad_requests(const char *path)
{
	char *out = NULL;
	int rc = rf_test_sh(&out,
	                    "curl -sf '%s/_stats' | /usr/bin/python3 -c 'import json,sys; "
	                    "print(json.load(sys.stdin).get(\"%s\", {}).get(\"requests\", 0))'",
	                    need("RF_BAD_URL"), path);
	assert_int_equal(rc, 0);
	long n = strtol(out, NULL, 10);
	free(out);
	return n;
}

static int setup(void **state)
{
	(void)state;
	const char *vars[] = {"RF_NGINX_URL",    "RF_NGINX_TLS_URL", "RF_CA_FILE",
	                      "RF_NGINX_ROOT",   "RF_S3_ENDPOINT",   "RF_S3_BUCKET",
	                      "RF_SIGV4_URL",    "RF_SIGV4_ROOT",    "RF_SIGV4_SECRET",
	                      "RF_SIGV4_ACCESS", "RF_BAD_URL",       "RF_BAD_ROOT"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		if (getenv(vars[i]) && *getenv(vars[i]))
			continue;
		const char *req = getenv("RF_REQUIRE_SERVERS");
		fprintf(stderr, "%s: %s not set (scripts/servers.sh start DIR && . DIR/env)\n",
		        req && !strcmp(req, "1") ? "FAIL" : "SKIP", vars[i]);
		exit(req && !strcmp(req, "1") ? 1 : 77);
	}
	snprintf(E.tag, sizeof(E.tag), "http-test-%d", (int)getpid());
	E.data = malloc(DATA_BYTES);
	uint64_t x = 0x1234567;
	for (size_t i = 0; i < DATA_BYTES; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		E.data[i] = (uint8_t)(x >> 56);
	}
	char rel[256];
	snprintf(rel, sizeof(rel), "%s/data.bin", E.tag);
	write_under(need("RF_NGINX_ROOT"), rel);
	write_under(need("RF_BAD_ROOT"), rel);
	snprintf(rel, sizeof(rel), "%s/%s/data a+b.bin", need("RF_SIGV4_BUCKET"), E.tag);
	write_under(need("RF_SIGV4_ROOT"), rel);
	assert_int_equal(rf_loop_new(&E.loop, NULL), 0);
	rf_fetch_options o;
	default_fetch(&o);
	fetch_with(&o);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rf_fetch_free(E.fetch);
	rf_loop_free(E.loop);
	rf_test_sh(NULL, "rm -rf '%s/%s' '%s/%s' '%s/%s/%s'", need("RF_NGINX_ROOT"), E.tag,
	           need("RF_BAD_ROOT"), E.tag, need("RF_SIGV4_ROOT"), need("RF_SIGV4_BUCKET"),
	           E.tag);
	free(E.data);
	return 0;
}

static void spin_all(done *d, size_t n)
{
	uint64_t deadline = rf_now_ns() + 60000000000ull;
	for (;;) {
		size_t left = 0;
		for (size_t i = 0; i < n; i++)
			left += d[i].calls == 0;
		if (left == 0 || rf_now_ns() > deadline)
			break;
		assert_true(rf_loop_run_once(E.loop, 50000000ull) >= 0);
	}
	for (size_t i = 0; i < n; i++)
		assert_int_equal(d[i].calls, 1);
}

/* Many ranges at once (first byte, last byte, whole object, random spans):
 * every byte must be the stored one. */
static void check_ranges(rf_source *s)
{
	enum { N = 40 };
	static done d[N];
	uint8_t *buf[N];
	uint64_t off[N], len[N], x = 99;
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1;
		off[i] = (x >> 20) % DATA_BYTES;
		len[i] = 1 + (x >> 40) % RF_MIN(200000u, DATA_BYTES - off[i]);
	}
	off[0] = 0, len[0] = 1;
	off[1] = DATA_BYTES - 1, len[1] = 1;
	off[2] = 0, len[2] = DATA_BYTES;
	memset(d, 0, sizeof(d));
	for (int i = 0; i < N; i++) {
		buf[i] = malloc(len[i]);
		assert_int_equal(rf_source_read(s, off[i], len[i], buf[i], on_done, &d[i]), 0);
	}
	spin_all(d, N);
	for (int i = 0; i < N; i++) {
		if (d[i].res != (int64_t)len[i])
			fail_msg("range %d: %lld (%s)", i, (long long)d[i].res, d[i].msg);
		assert_memory_equal(buf[i], E.data + off[i], len[i]);
		free(buf[i]);
	}
	/* out of bounds is refused at once */
	uint8_t b;
	assert_int_equal(rf_source_read(s, DATA_BYTES, 1, &b, on_done, &d[0]), -EINVAL);
}

static void test_nginx(void **state)
{
	(void)state;
	char url[512];
	rf_source *s = NULL;
	done d;
	snprintf(url, sizeof(url), "%s/%s/data.bin", need("RF_NGINX_URL"), E.tag);
	assert_int_equal(open_src(url, RF_SIZE_UNKNOWN, &s, &d), 0); /* HEAD */
	assert_true(rf_source_size(s) == DATA_BYTES);
	check_ranges(s);
	rf_source_close(s);
	/* 40 reads at once through 3 connections: never more than 3 in flight */
	rf_fetch_options o;
	default_fetch(&o);
	o.connections = 3;
	fetch_with(&o);
	assert_int_equal(open_src(url, DATA_BYTES, &s, &d), 0);
	check_ranges(s);
	rf_source_close(s);
	rf_fetch_counters fc;
	rf_fetch_counters_get(E.fetch, &fc);
	assert_int_equal(fc.host_active_max, 3);
	assert_int_equal(fc.connects, 3); /* keep-alive: one connection per slot */
	assert_true(fc.requests == 40 && fc.retries == 0);
	default_fetch(&o);
	fetch_with(&o);
	/* a wrong size hint is caught by the Content-Range total */
	assert_int_equal(open_src(url, DATA_BYTES + 1, &s, &d), 0);
	uint8_t buf[10];
	assert_true(read_src(s, 0, 10, buf, &d) < 0);
	assert_non_null(strstr(d.msg, "Content-Range"));
	rf_source_close(s);
	/* a missing object on nginx */
	snprintf(url, sizeof(url), "%s/%s/nope.bin", need("RF_NGINX_URL"), E.tag);
	assert_int_equal(open_src(url, RF_SIZE_UNKNOWN, &s, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "404"));
}

static void test_nginx_tls(void **state)
{
	(void)state;
	char url[512];
	rf_source *s = NULL;
	done d;
	snprintf(url, sizeof(url), "%s/%s/data.bin", need("RF_NGINX_TLS_URL"), E.tag);
	assert_int_equal(open_src(url, RF_SIZE_UNKNOWN, &s, &d), 0);
	check_ranges(s);
	rf_source_close(s);
	/* without the CA file the certificate is refused, once, clearly */
	rf_fetch_options o;
	default_fetch(&o);
	o.ca_file = "/dev/null";
	fetch_with(&o);
	assert_true(open_src(url, RF_SIZE_UNKNOWN, &s, &d) < 0);
	if (!strstr(d.msg, "certificate") && !strstr(d.msg, "SSL"))
		fail_msg("unclear TLS error: %s", d.msg);
	assert_non_null(strstr(d.msg, ", 1 attempt"));
	default_fetch(&o);
	fetch_with(&o);
}

/* ------------------------------------------------------------------ S3 */

static void s3_fetch(const char *endpoint, const char *key, const char *secret, const char *token)
{
	rf_fetch_options o;
	default_fetch(&o);
	o.s3.endpoint = endpoint;
	o.s3.region = "us-east-1";
	o.s3.access_key = key;
	o.s3.secret_key = secret;
	o.s3.session_token = token;
	fetch_with(&o);
}

static bool is_rfs_key(const char *key, void *ctx)
{
	size_t n = strlen(key);
	return n >= 4 && !strcmp(key + n - 4, ".rfs");
}

static const rf_list_filter rfs_only = {.take = is_rfs_key, .what = ".rfs"};

static bool is_txt_key(const char *key, void *ctx)
{
	size_t n = strlen(key);
	return n >= 4 && !strcmp(key + n - 4, ".txt");
}

static bool take_none(const char *key, void *ctx)
{
	return false;
}

/* Expands names; returns the count or a negative error (message in err). */
static int expand(const char *name, uint32_t page, rf_url_list *out, rf_error *err)
{
	rf_remote_set_list_page(E.fetch, page);
	const char *names[] = {name};
	int rc = rf_url_expand(E.fetch, names, 1, &rfs_only, out, err);
	return rc < 0 ? rc : (int)out->n;
}

/* Object i of a listing test holds the first size_of(i) bytes of the data. */
static uint64_t size_of(int i)
{
	return 1000u * (uint64_t)(i + 1) + (uint64_t)i;
}

static void read_back_listed(const rf_url_list *l, int n)
{
	for (int i = 0; i < n; i++) {
		rf_source *s = NULL;
		done d;
		assert_true(l->v[i].size_hint == size_of(i));
		assert_int_equal(open_src(l->v[i].url, l->v[i].size_hint, &s, &d), 0);
		uint8_t *buf = malloc(size_of(i));
		if (read_src(s, 0, size_of(i), buf, &d) != (int64_t)size_of(i))
			fail_msg("%s: %s", l->v[i].url, d.msg);
		assert_memory_equal(buf, E.data, size_of(i));
		free(buf);
		rf_source_close(s);
	}
}

static void test_s3rver(void **state)
{
	(void)state;
	enum { N = 7 };
	const char *ep = need("RF_S3_ENDPOINT"), *bucket = need("RF_S3_BUCKET");
	char tmp[256];
	snprintf(tmp, sizeof(tmp), "/tmp/%s.bin", E.tag);
	assert_int_equal(rf_test_write_file(tmp, E.data, DATA_BYTES), 0);
	for (int i = 0; i <= N; i++) { /* N shards and one object that is not a shard */
		char key[128];
		if (i < N)
			snprintf(key, sizeof(key), "%s/ds/shard-%06d.rfs", E.tag, N - 1 - i);
		else
			snprintf(key, sizeof(key), "%s/ds/README.txt", E.tag);
		int j = i < N ? N - 1 - i : 0;
		assert_int_equal(
		    rf_test_sh(NULL,
		               "head -c %llu '%s' | curl -sf -o /dev/null --aws-sigv4 "
		               "aws:amz:us-east-1:s3 -H 'x-amz-content-sha256: "
		               "UNSIGNED-PAYLOAD' --user S3RVER:S3RVER -T - '%s/%s/%s'",
		               (unsigned long long)size_of(j), tmp, ep, bucket, key),
		    0);
	}
	remove(tmp);
	s3_fetch(ep, "S3RVER", "S3RVER", NULL);
	char url[256];
	rf_url_list l = {0};
	rf_error err = {0};
	/* the prefix, two keys per page: every .rfs in key order, with sizes */
	snprintf(url, sizeof(url), "s3://%s/%s/ds/", bucket, E.tag);
	if (expand(url, 2, &l, &err) != N)
		fail_msg("listing: %s", err.msg);
	for (int i = 0; i < N; i++) {
		char want[256];
		snprintf(want, sizeof(want), "s3://%s/%s/ds/shard-%06d.rfs", bucket, E.tag, i);
		assert_string_equal(l.v[i].url, want);
	}
	read_back_listed(&l, N);
	rf_url_list_free(&l);
	/* the store keeps what the caller's filter takes: it knows no shard names */
	const char *names[] = {url};
	const rf_list_filter txt = {.take = is_txt_key, .what = ".txt"};
	assert_int_equal(rf_url_expand(E.fetch, names, 1, &txt, &l, &err), 0);
	assert_int_equal(l.n, 1);
	char readme[256];
	snprintf(readme, sizeof(readme), "s3://%s/%s/ds/README.txt", bucket, E.tag);
	assert_string_equal(l.v[0].url, readme);
	rf_url_list_free(&l);
	const rf_list_filter none = {.take = take_none, .what = ".none"};
	assert_int_equal(rf_url_expand(E.fetch, names, 1, &none, &l, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no .none objects under"));
	rf_url_list_free(&l);
	/* single keys by brace range: sizes from HEAD */
	snprintf(url, sizeof(url), "s3://%s/%s/ds/shard-{000000..000006}.rfs", bucket, E.tag);
	assert_int_equal(expand(url, 0, &l, &err), N);
	for (int i = 0; i < N; i++)
		l.v[i].size_hint = size_of(i); /* checked against HEAD below */
	for (int i = 0; i < N; i++) {
		rf_source *s = NULL;
		done d;
		assert_int_equal(open_src(l.v[i].url, RF_SIZE_UNKNOWN, &s, &d), 0);
		assert_true(rf_source_size(s) == size_of(i));
		rf_source_close(s);
	}
	rf_url_list_free(&l);
	/* an empty prefix is an error that names it */
	snprintf(url, sizeof(url), "s3://%s/%s/none/", bucket, E.tag);
	assert_int_equal(expand(url, 0, &l, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "none/"));
	rf_url_list_free(&l);
}

static void test_sigv4(void **state)
{
	(void)state;
	enum { N = 5 };
	const char *ep = need("RF_SIGV4_URL"), *bucket = need("RF_SIGV4_BUCKET");
	for (int i = 0; i < N; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s/%s/l/x-%d.rfs", need("RF_SIGV4_ROOT"), bucket,
		         E.tag, i);
		write_under(need("RF_SIGV4_ROOT"), path + strlen(need("RF_SIGV4_ROOT")) + 1);
		assert_int_equal(truncate(path, (off_t)size_of(i)), 0);
	}
	/* the right secret: an encoded key (space, plus), ranges, a paginated listing */
	s3_fetch(ep, need("RF_SIGV4_ACCESS"), need("RF_SIGV4_SECRET"), NULL);
	char url[256];
	rf_source *s = NULL;
	done d;
	snprintf(url, sizeof(url), "s3://%s/%s/data a+b.bin", bucket, E.tag);
	if (open_src(url, RF_SIZE_UNKNOWN, &s, &d) != 0)
		fail_msg("%s", d.msg);
	assert_true(rf_source_size(s) == DATA_BYTES);
	check_ranges(s);
	rf_source_close(s);
	rf_url_list l = {0};
	rf_error err = {0};
	snprintf(url, sizeof(url), "s3://%s/%s/l/", bucket, E.tag);
	if (expand(url, 0, &l, &err) != N) /* the server caps pages at 3 keys */
		fail_msg("listing: %s", err.msg);
	read_back_listed(&l, N);
	rf_url_list_free(&l);

	/* a session token is sent as x-amz-security-token and signed with the rest */
	s3_fetch(ep, need("RF_SIGV4_ACCESS"), need("RF_SIGV4_SECRET"), "session-token-1");
	snprintf(url, sizeof(url), "s3://%s/%s/data a+b.bin", bucket, E.tag);
	if (open_src(url, RF_SIZE_UNKNOWN, &s, &d) != 0)
		fail_msg("with a session token: %s", d.msg);
	rf_source_close(s);

	/* a wrong secret (and a session token): 403 SignatureDoesNotMatch, no
	 * retry, and neither secret nor token in any message */
	const char *secret = "wrong-SECRET-4f9d2c", *token = "TOKEN-77e1a0";
	s3_fetch(ep, need("RF_SIGV4_ACCESS"), secret, token);
	snprintf(url, sizeof(url), "s3://%s/%s/data a+b.bin", bucket, E.tag);
	assert_int_equal(open_src(url, RF_SIZE_UNKNOWN, &s, &d), -EACCES);
	assert_non_null(strstr(d.msg, "403"));
	assert_non_null(strstr(d.msg, ", 1 attempt"));
	assert_null(strstr(d.msg, secret));
	assert_null(strstr(d.msg, token));
	assert_int_equal(open_src(url, DATA_BYTES, &s, &d), 0);
	uint8_t buf[100];
	assert_int_equal(read_src(s, 0, sizeof(buf), buf, &d), -EACCES);
	assert_non_null(strstr(d.msg, "SignatureDoesNotMatch"));
	assert_non_null(strstr(d.msg, "bytes 0-99"));
	assert_null(strstr(d.msg, secret));
	rf_source_close(s);
	snprintf(url, sizeof(url), "s3://%s/%s/l/", bucket, E.tag);
	assert_int_equal(expand(url, 0, &l, &err), -EACCES);
	assert_non_null(strstr(err.msg, "SignatureDoesNotMatch"));
	assert_null(strstr(err.msg, secret));
	assert_null(strstr(err.msg, token));
	rf_url_list_free(&l);
	rf_fetch_options o;
	default_fetch(&o);
	fetch_with(&o);
}

/* ------------------------------------------------------------- bad_http */

/* Reads [off, off+len) of /MODE/TAG/data.bin (size hint given: no HEAD),
 * checks the bytes on success; returns res, and the requests the server saw. */
static int64_t bad_read(const char *mode, uint64_t off, uint64_t len, done *d, long *requests)
{
	char url[512], path[256];
	snprintf(path, sizeof(path), "/%s/%s/data.bin", mode, E.tag);
	snprintf(url, sizeof(url), "%s%s", need("RF_BAD_URL"), path);
	rf_source *s = NULL;
	assert_int_equal(open_src(url, DATA_BYTES, &s, d), 0);
	uint8_t *buf = malloc(len);
	int64_t res = read_src(s, off, len, buf, d);
	if (res >= 0) {
		assert_int_equal(res, (int64_t)len);
		assert_memory_equal(buf, E.data + off, len);
	} else {
		assert_non_null(strstr(d->msg, path)); /* the message names the URL... */
		char range[64];                        /* ...and the range */
		snprintf(range, sizeof(range), "bytes %llu-%llu", (unsigned long long)off,
		         (unsigned long long)(off + len - 1));
		assert_non_null(strstr(d->msg, range));
	}
	free(buf);
	rf_source_close(s);
	*requests = bad_requests(path);
	return res;
}

static void expect_fail(const char *mode, int code, const char *words, long requests)
{
	done d;
	long n = 0;
	int64_t res = bad_read(mode, 1000, 5000, &d, &n);
	if (res != code || !strstr(d.msg, words) || n != requests)
		fail_msg("%s: res %lld, %ld requests, '%s' (wanted %d, %ld requests, '%s')", mode,
		         (long long)res, n, d.msg, code, requests, words);
}

static void expect_ok(const char *mode, uint64_t len, long requests)
{
	done d;
	long n = 0;
	rf_fetch_counters before, after;
	rf_fetch_counters_get(E.fetch, &before);
	int64_t res = bad_read(mode, 0, len, &d, &n);
	rf_fetch_counters_get(E.fetch, &after);
	if (res != (int64_t)len || n != requests)
		fail_msg("%s: res %lld, %ld requests, '%s' (wanted %ld requests)", mode,
		         (long long)res, n, d.msg, requests);
	assert_true(after.retries - before.retries == (uint64_t)requests - 1);
}

static void test_bad_no_retry(void **state)
{
	(void)state;
	expect_fail("404", -ENOENT, "HTTP 404", 1);
	expect_fail("403", -EACCES, "HTTP 403", 1);
	expect_fail("ignore-range", -EPROTO, "ignored the Range", 1);
	expect_fail("wrong-range", -EPROTO, "Content-Range", 1);
	expect_fail("huge-length", -EPROTO, ", 1 attempt", 1);
	done d;
	long n;
	/* a server that ignores Range is fine when the range is the whole object */
	assert_int_equal(bad_read("ignore-range", 0, DATA_BYTES, &d, &n), DATA_BYTES);
}

static void test_bad_retried(void **state)
{
	(void)state;
	expect_ok("500-once", 5000, 2);
	expect_ok("503-retry-after", 5000, 2);
	expect_ok("429-once", 5000, 2);
	expect_ok("reset-mid-body", 300000, 2);
	expect_ok("short-once", 300000, 2);
	/* retries run out: the message says how it ended */
	rf_fetch_counters before, after;
	rf_fetch_counters_get(E.fetch, &before);
	expect_fail("reset-always", -EIO, "4 attempts", 4); /* retries = 3 */
	expect_fail("short", -EIO, "retries exhausted", 4);
	rf_fetch_counters_get(E.fetch, &after);
	assert_true(after.errors - before.errors == 2);
}

/* Cut range bodies resumed (bad_http's short-*-versioned: exactly half of
 * each answer's body, then an orderly close, with an ETag): the retry asks
 * for the rest only; an attempt that kept 64 KiB or more uses up no retry. */
static void test_bad_resumed(void **state)
{
	(void)state;
	done d;
	long n = 0;
	rf_fetch_counters before, after;
	rf_fetch_counters_get(E.fetch, &before);
	/* cut at its half once, then the rest: the bytes checked by bad_read */
	assert_int_equal(bad_read("short-once-versioned", 1000, 300000, &d, &n), 300000);
	assert_int_equal(n, 2);
	rf_fetch_counters_get(E.fetch, &after);
	assert_int_equal(after.resumes - before.resumes, 1);
	assert_int_equal(after.resumed_bytes - before.resumed_bytes, 150000);
	assert_int_equal(after.retries - before.retries, 1);
	/* cut at the half of what is left, every time: the attempts keeping
	 * 480000, 240000 and 120000 bytes use no retry, those keeping 60000,
	 * 30000 and 15000 use the 3 (retries = 3), the 7th's cut ends it */
	before = after;
	int64_t res = bad_read("short-always-versioned", 0, 960000, &d, &n);
	rf_fetch_counters_get(E.fetch, &after);
	if (res != -EIO || !strstr(d.msg, "retries exhausted") || !strstr(d.msg, "7 attempts") ||
	    n != 7)
		fail_msg("short-always-versioned: res %lld, %ld requests, '%s'", (long long)res, n,
		         d.msg);
	assert_int_equal(after.resumes - before.resumes, 6);
	assert_int_equal(after.resumed_bytes - before.resumed_bytes,
	                 480000 + 240000 + 120000 + 60000 + 30000 + 15000 + 7500);
}

static void test_bad_stall(void **state)
{
	(void)state;
	rf_fetch_options o;
	default_fetch(&o);
	o.low_speed_bytes_per_s = 1000;
	o.low_speed_time_s = 1; /* the stall lasts RF_BAD_STALL_S (10 s) */
	fetch_with(&o);
	uint64_t t0 = rf_now_ns();
	expect_ok("stall", 300000, 2);
	fprintf(stderr, "stall recovered in %.1f s\n", (double)(rf_now_ns() - t0) / 1e9);
	done d;
	long n;
	assert_true(bad_read("redirect-loop", 0, 100, &d, &n) < 0);
	assert_non_null(strstr(d.msg, "edirect"));
	default_fetch(&o);
	fetch_with(&o);
}

/* ------------------------------------------------------------ validators */

/* What the server itself sends as url's ETag (curl -I; curl_opts e.g. the
 * S3 signature), as "etag:V"; "" when none. */
static void server_etag(const char *curl_opts, const char *url, char *out, size_t cap)
{
	char *got = NULL;
	assert_int_equal(rf_test_sh(&got,
	                            "curl -sfI %s '%s' | tr -d '\\r' | sed -n "
	                            "'s/^[Ee][Tt][Aa][Gg]: *//p'",
	                            curl_opts, url),
	                 0);
	got[strcspn(got, "\n")] = '\0';
	snprintf(out, cap, "%s%s", got[0] ? "etag:" : "", got);
	free(got);
}

static void validator_of(rf_source *s, char *out)
{
	rf_source_validator(s, out, RF_SOURCE_VALIDATOR_BYTES);
}

/* An object's version is the ETag the server sent, from the HEAD or, with a
 * size hint (no HEAD), from the first read; over nginx and s3rver. */
static void test_validator_servers(void **state)
{
	(void)state;
	char url[512], want[256], got[RF_SOURCE_VALIDATOR_BYTES];
	rf_source *s = NULL;
	done d;
	uint8_t buf[100];
	snprintf(url, sizeof(url), "%s/%s/data.bin", need("RF_NGINX_URL"), E.tag);
	server_etag("", url, want, sizeof(want));
	assert_true(strlen(want) > 7); /* nginx sends one */
	assert_int_equal(open_src(url, RF_SIZE_UNKNOWN, &s, &d), 0);
	validator_of(s, got);
	assert_string_equal(got, want);
	rf_source_close(s);
	assert_int_equal(open_src(url, DATA_BYTES, &s, &d), 0);
	validator_of(s, got);
	assert_string_equal(got, ""); /* no HEAD, no read yet: not known */
	assert_int_equal(read_src(s, 10, sizeof(buf), buf, &d), sizeof(buf));
	validator_of(s, got);
	assert_string_equal(got, want);
	rf_source_close(s);
	/* s3rver: a signed HEAD */
	const char *ep = need("RF_S3_ENDPOINT"), *bucket = need("RF_S3_BUCKET");
	char tmp[256], key[128];
	snprintf(tmp, sizeof(tmp), "/tmp/%s-v.bin", E.tag);
	snprintf(key, sizeof(key), "%s/v/data.rfs", E.tag);
	assert_int_equal(rf_test_write_file(tmp, E.data, 5000), 0);
	const char *sig = "--aws-sigv4 aws:amz:us-east-1:s3 -H 'x-amz-content-sha256: "
	                  "UNSIGNED-PAYLOAD' --user S3RVER:S3RVER";
	assert_int_equal(rf_test_sh(NULL, "curl -sf -o /dev/null %s -T '%s' '%s/%s/%s'", sig, tmp,
	                            ep, bucket, key),
	                 0);
	remove(tmp);
	snprintf(url, sizeof(url), "%s/%s/%s", ep, bucket, key);
	server_etag(sig, url, want, sizeof(want));
	assert_true(strlen(want) > 7);
	s3_fetch(ep, "S3RVER", "S3RVER", NULL);
	snprintf(url, sizeof(url), "s3://%s/%s", bucket, key);
	if (open_src(url, RF_SIZE_UNKNOWN, &s, &d) != 0)
		fail_msg("%s", d.msg);
	validator_of(s, got);
	assert_string_equal(got, want);
	rf_source_close(s);
	/* a listing carries the same version per key: known before any read */
	rf_url_list l = {0};
	rf_error err = {0};
	snprintf(url, sizeof(url), "s3://%s/%s/v/", bucket, E.tag);
	if (expand(url, 0, &l, &err) != 1)
		fail_msg("listing: %s", err.msg);
	assert_non_null(l.v[0].validator);
	assert_string_equal(l.v[0].validator, want);
	rf_url_list_free(&l);
	rf_fetch_options o;
	default_fetch(&o);
	fetch_with(&o);
}

/* Header values are untrusted: an over-long or binary ETag is "unknown"
 * (not the Last-Modified beside it); Last-Modified alone is used. */
static void test_validator_hostile(void **state)
{
	(void)state;
	const struct {
		const char *mode, *want;
	} cases[] = {
	    {"etag-long", ""},
	    {"etag-binary", ""},
	    {"last-modified", "last-modified:Tue, 01 Dec 2026 12:00:00 GMT"},
	    {"ok", ""},
	};
	for (size_t i = 0; i < RF_ARRAY_LEN(cases); i++) {
		for (int hinted = 0; hinted < 2; hinted++) {
			char url[512], got[RF_SOURCE_VALIDATOR_BYTES];
			snprintf(url, sizeof(url), "%s/%s/%s/data.bin", need("RF_BAD_URL"),
			         cases[i].mode, E.tag);
			rf_source *s = NULL;
			done d;
			assert_int_equal(
			    open_src(url, hinted ? DATA_BYTES : RF_SIZE_UNKNOWN, &s, &d), 0);
			uint8_t buf[100];
			assert_int_equal(read_src(s, 0, sizeof(buf), buf, &d), sizeof(buf));
			validator_of(s, got);
			if (strcmp(got, cases[i].want))
				fail_msg("%s (%s): '%s', wanted '%s'", cases[i].mode,
				         hinted ? "size hint" : "HEAD", got, cases[i].want);
			rf_source_close(s);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nginx),
	    cmocka_unit_test(test_nginx_tls),
	    cmocka_unit_test(test_s3rver),
	    cmocka_unit_test(test_sigv4),
	    cmocka_unit_test(test_bad_no_retry),
	    cmocka_unit_test(test_bad_retried),
	    cmocka_unit_test(test_bad_resumed),
	    cmocka_unit_test(test_bad_stall),
	    cmocka_unit_test(test_validator_servers),
	    cmocka_unit_test(test_validator_hostile),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
