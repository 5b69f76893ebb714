/* testutil.c - see testutil.h. */
#include "testutil.h"
#include "ringfeed.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

char *rf_test_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char tmpl[512];
	snprintf(tmpl, sizeof(tmpl), "%s/rftest-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

void rf_test_rmtree(const char *path)
{
	if (!path || !*path || !strcmp(path, "/"))
		return;
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", path);
}

int rf_test_sh(char **out, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	if (buf)
		buf[len] = '\0';
	int st = pclose(p);
	if (out)
		*out = buf;
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char *rf_test_cli(void)
{
	const char *c = getenv("RF_CLI");
	return c && *c ? c : "./ringfeed";
}

long rf_test_read_file(const char *path, unsigned char **out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*out = buf;
	return n;
}

int rf_test_write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(buf, 1, len, f);
	return (fclose(f) == 0 && w == len) ? 0 : -1;
}

const char *rf_test_server_env(const char *name)
{
	const char *v = getenv(name);
	if (v && *v)
		return v;
	const char *req = getenv("RF_REQUIRE_SERVERS");
	if (req && !strcmp(req, "1"))
		fail_msg("test servers required but %s is not set (scripts/servers.sh env)", name);
	rf_test_skip("SKIP: %s not set; run under scripts/test.sh, or: scripts/servers.sh start "
	             "DIR && . DIR/env\n",
	             name);
	return NULL;
}

static int rf_test_skipped;

void rf_test_mark_skipped(void)
{
	rf_test_skipped = 1;
}

int rf_test_exit_code(int failed)
{
	return failed ? 1 : rf_test_skipped ? 77 : 0;
}

uint64_t rf_test_rec_id(const uint8_t *p, uint32_t len)
{
	return rf_fnv1a(RF_FNV_OFFSET ^ len, p, len);
}

void rf_test_dataset_make(rf_test_dataset *d, const char *tag, uint32_t nshards, uint32_t records,
                          size_t record_cap, uint64_t block_bytes, rf_test_record_fn make,
                          void *arg)
{
	assert_true(nshards <= RF_TEST_SHARDS_MAX);
	memset(d, 0, sizeof(*d));
	d->dir = rf_test_tmpdir(tag);
	d->nshards = nshards;
	d->ids = calloc((size_t)nshards * records + 1, sizeof(uint64_t));
	uint8_t *buf = malloc(record_cap + 1);
	assert_non_null(d->ids);
	assert_non_null(buf);
	for (uint32_t s = 0; s < nshards; s++) {
		snprintf(d->path[s], sizeof(d->path[s]), "%s/shard-%02u.rfs", d->dir, s);
		rf_writer_options o = {.block_bytes = block_bytes, .level = 1};
		rf_error err = {0};
		rf_writer *w = rf_writer_open(d->path[s], &o, &err);
		assert_non_null(w);
		for (uint32_t r = 0; r < records; r++) {
			size_t len = make(s, r, buf, record_cap, arg);
			assert_true(len <= record_cap);
			assert_int_equal(rf_writer_add(w, buf, len, &err), 0);
			d->ids[d->total++] = rf_test_rec_id(buf, (uint32_t)len);
		}
		assert_int_equal(rf_writer_close(w, NULL, &err), 0);
	}
	free(buf);
}

void rf_test_dataset_free(rf_test_dataset *d)
{
	rf_test_rmtree(d->dir);
	free(d->dir);
	free(d->ids);
}

rf_config *rf_test_config(const rf_test_dataset *d, const char *const *kv)
{
	rf_config *c = rf_config_new();
	rf_error err = {0};
	for (uint32_t s = 0; s < d->nshards; s++)
		assert_int_equal(rf_config_add_url(c, d->path[s], &err), 0);
	for (; kv && *kv; kv++) {
		char key[64];
		const char *eq = strchr(*kv, '=');
		assert_non_null(eq);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - *kv), *kv);
		if (rf_config_set(c, key, eq + 1, &err) != 0)
			fail_msg("config %s: %s", *kv, err.msg);
	}
	return c;
}
