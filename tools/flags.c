/* flags.c - strict numeric flag parsing and small JSON output helpers for
 * the tools (see flags.h). */
#include "flags.h"
#include "ringfeed.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int flag_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "ringfeed %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see `ringfeed %s --help`)\n", cmd);
	return 2;
}

bool flag_double(const char *cmd, const char *flag, const char *text, double min, double max,
                 double *out)
{
	char *end = NULL;
	errno = 0;
	double v = text && *text ? strtod(text, &end) : NAN;
	if (!text || end == text || *end != '\0' || errno == ERANGE || !isfinite(v)) {
		flag_usage_error(cmd, "%s: '%s' is not a number", flag, text ? text : "");
		return false;
	}
	if (v < min || v > max) {
		flag_usage_error(cmd, "%s: %g is out of range [%g, %g]", flag, v, min, max);
		return false;
	}
	*out = v;
	return true;
}

bool flag_u64(const char *cmd, const char *flag, const char *text, uint64_t min, uint64_t max,
              uint64_t *out)
{
	char *end = NULL;
	errno = 0;
	if (!text || *text < '0' || *text > '9') {
		flag_usage_error(cmd, "%s: '%s' is not a whole number", flag, text ? text : "");
		return false;
	}
	unsigned long long v = strtoull(text, &end, 10);
	if (*end != '\0' || errno == ERANGE) {
		flag_usage_error(cmd, "%s: '%s' is not a whole number", flag, text);
		return false;
	}
	if (v < min || v > max) {
		flag_usage_error(cmd, "%s: %llu is out of range [%llu, %llu]", flag, v,
		                 (unsigned long long)min, (unsigned long long)max);
		return false;
	}
	*out = v;
	return true;
}

bool flag_bytes(const char *cmd, const char *flag, const char *text, uint64_t min, uint64_t *out)
{
	rf_error err = {0};
	uint64_t v = 0;
	if (rf_parse_bytes(text, &v, &err) < 0) {
		flag_usage_error(cmd, "%s: %s", flag, err.msg);
		return false;
	}
	if (v < min) {
		flag_usage_error(cmd, "%s: %llu bytes is below the minimum of %llu", flag,
		                 (unsigned long long)v, (unsigned long long)min);
		return false;
	}
	*out = v;
	return true;
}

const char *flag_shown(const char *name, char *buf, size_t cap)
{
	rf_url_redact(name ? name : "", buf, cap);
	return buf;
}

void json_number(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.15g", v);
	else
		fputs("null", f);
}

uint64_t proc_kib_field_bytes(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[256];
	size_t klen = strlen(key);
	unsigned long long kib = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':' &&
		    sscanf(line + klen + 1, " %llu kB", &kib) == 1)
			break;
	fclose(f);
	return kib > UINT64_MAX / 1024 ? 0 : (uint64_t)kib * 1024;
}
