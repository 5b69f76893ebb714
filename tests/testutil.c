/* testutil.c - see testutil.h. */
#include "testutil.h"

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
