/* mix_file.c - the mixture file's two spellings (see mix_file.h): tab
 * separated text with a magic first line, or JSON through jansson. Every
 * source is checked (no control characters, bounded options, a weight that
 * parses exactly) and a remote mixture file may only name remote sources. */
#include "mix_file.h"
#include "manifest.h"
#include "mix.h"
#include "util.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_url(const char *s)
{
	const char *p = strstr(s, "://");
	if (!p || p == s)
		return false;
	for (const char *q = s; q < p; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		      (*q >= '0' && *q <= '9') || *q == '+' || *q == '-' || *q == '.'))
			return false;
	return true;
}

/* A remote mixture file (base is a URL) may only name remote sources: a
 * file:// or absolute local path there would read this machine's files. */
static bool remote_ok(const char *s)
{
	static const char *const schemes[] = {"http://", "https://", "s3://",
	                                      "gs://",   "az://",    "hf://"};
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncasecmp(s, schemes[i], strlen(schemes[i])) == 0)
			return true;
	return false;
}

static bool has_ctl(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

void rf_mix_file_free(rf_mix_file *f)
{
	if (!f)
		return;
	for (uint32_t i = 0; i < f->count; i++) {
		rf_mix_entry *s = &f->src[i];
		free(s->source);
		for (uint32_t j = 0; j < s->noptions; j++) {
			free(s->option[j].key);
			free(s->option[j].value);
		}
		free(s->option);
	}
	free(f->src);
	free(f);
}

int rf_mix_file_is(const char *buf, size_t len)
{
	size_t m = strlen(RF_MIX_FILE_MAGIC);
	if (len >= m && memcmp(buf, RF_MIX_FILE_MAGIC, m) == 0 &&
	    (len == m || buf[m] == '\n' || buf[m] == '\r'))
		return 1;
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	if (i >= len || buf[i] != '{')
		return 0;
	for (i++; i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r');
	     i++)
		;
	return len - i >= 9 && memcmp(buf + i, "\"mixture\"", 9) == 0;
}

/* Appends a source (weight parsed, path checked and joined). */
static int add_source(rf_mix_file *f, const char *base, const char *name, uint32_t line,
                      const char *what, const char *weight, const char *src, size_t srclen,
                      rf_error *err)
{
	if (f->count == RF_MIX_SOURCES_MAX)
		return rf_fail(err, -E2BIG, "mixture %s: %s: more than %u sources", name, what,
		               RF_MIX_SOURCES_MAX);
	if (srclen == 0)
		return rf_fail(err, -EINVAL, "mixture %s: %s: the source is empty", name, what);
	if (srclen >= RF_MANIFEST_LINE_MAX || has_ctl(src, srclen))
		return rf_fail(err, -EINVAL,
		               "mixture %s: %s: the source is longer than %u bytes or holds a "
		               "control character",
		               name, what, RF_MANIFEST_LINE_MAX);
	rf_mix_entry s = {.line = line};
	int rc = rf_mix_weight_parse(weight, what, &s.weight, err);
	if (rc < 0) {
		char tmp[RF_ERROR_MSG_BYTES];
		snprintf(tmp, sizeof(tmp), "%s", err->msg);
		return rf_fail(err, rc, "mixture %s: %s", name, tmp);
	}
	char *raw = strndup(src, srclen);
	if (!raw)
		return rf_fail(err, -ENOMEM, "mixture %s: no memory", name);
	s.source = rf_manifest_join(base, raw);
	free(raw);
	if (!s.source)
		return rf_fail(err, -ENOMEM, "mixture %s: no memory", name);
	if (base && is_url(base) && !remote_ok(s.source)) {
		free(s.source);
		return rf_fail(err, -EPERM,
		               "mixture %s: %s: a remote mixture file may only name http(s), s3, "
		               "gs, az or hf sources",
		               name, what);
	}
	if (f->count % 16 == 0) {
		rf_mix_entry *n = realloc(f->src, (f->count + 16) * sizeof(*n));
		if (!n) {
			free(s.source);
			return rf_fail(err, -ENOMEM, "mixture %s: no memory", name);
		}
		f->src = n;
		f->bytes += 16 * sizeof(*n);
	}
	f->bytes += strlen(s.source) + 1;
	f->src[f->count++] = s;
	return 0;
}

static int add_option(rf_mix_file *f, const char *name, const char *what, const char *key,
                      size_t klen, const char *val, size_t vlen, rf_error *err)
{
	rf_mix_entry *s = &f->src[f->count - 1];
	if (s->noptions == RF_MIX_OPTIONS_MAX)
		return rf_fail(err, -E2BIG, "mixture %s: %s: more than %u options", name, what,
		               RF_MIX_OPTIONS_MAX);
	if (klen == 0 || klen > RF_MIX_OPTION_KEY_MAX)
		return rf_fail(err, -EINVAL,
		               "mixture %s: %s: an option has no name or one over %u "
		               "bytes (options are KEY=VALUE)",
		               name, what, RF_MIX_OPTION_KEY_MAX);
	for (size_t i = 0; i < klen; i++)
		if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9') ||
		      key[i] == '_'))
			return rf_fail(err, -EINVAL,
			               "mixture %s: %s: option name '%.*s' (lower-case letters, "
			               "digits and _)",
			               name, what, (int)RF_MIN(klen, 64), key);
	if (has_ctl(val, vlen))
		return rf_fail(err, -EINVAL,
		               "mixture %s: %s: option %.*s's value holds a control "
		               "character",
		               name, what, (int)klen, key);
	for (uint32_t j = 0; j < s->noptions; j++)
		if (strlen(s->option[j].key) == klen && memcmp(s->option[j].key, key, klen) == 0)
			return rf_fail(err, -EINVAL, "mixture %s: %s: option %.*s given twice",
			               name, what, (int)klen, key);
	if (s->noptions % 4 == 0) {
		rf_mix_option *n = realloc(s->option, (s->noptions + 4) * sizeof(*n));
		if (!n)
			return rf_fail(err, -ENOMEM, "mixture %s: no memory", name);
		s->option = n;
		f->bytes += 4 * sizeof(*n);
	}
	rf_mix_option o = {strndup(key, klen), strndup(val, vlen)};
	if (!o.key || !o.value) {
		free(o.key);
		free(o.value);
		return rf_fail(err, -ENOMEM, "mixture %s: no memory", name);
	}
	f->bytes += klen + vlen + 2;
	s->option[s->noptions++] = o;
	return 0;
}

/* One "WEIGHT\tSOURCE[\tKEY=VALUE]..." line, without its newline. */
static int parse_line(rf_mix_file *f, const char *base, const char *name, uint32_t no,
                      const char *l, size_t n, rf_error *err)
{
	char what[32], weight[48];
	snprintf(what, sizeof(what), "line %u", no);
	const char *tab = memchr(l, '\t', n);
	if (!tab)
		return rf_fail(err, -EINVAL,
		               "mixture %s: %s: expected WEIGHT<TAB>SOURCE[<TAB>KEY=VALUE...]",
		               name, what);
	size_t wl = (size_t)(tab - l);
	if (wl >= sizeof(weight) || memchr(l, '\0', wl))
		return rf_fail(err, -EINVAL,
		               "mixture %s: %s: the weight is not a plain decimal "
		               "number",
		               name, what);
	memcpy(weight, l, wl);
	weight[wl] = '\0';
	const char *p = tab + 1, *end = l + n;
	const char *next = memchr(p, '\t', (size_t)(end - p));
	const char *se = next ? next : end;
	int rc = add_source(f, base, name, no, what, weight, p, (size_t)(se - p), err);
	while (rc == 0 && next) {
		p = next + 1;
		next = memchr(p, '\t', (size_t)(end - p));
		se = next ? next : end;
		const char *eq = memchr(p, '=', (size_t)(se - p));
		if (!eq)
			return rf_fail(err, -EINVAL,
			               "mixture %s: %s: option '%.*s' is not KEY=VALUE", name, what,
			               (int)RF_MIN((size_t)(se - p), 64), p);
		rc = add_option(f, name, what, p, (size_t)(eq - p), eq + 1, (size_t)(se - eq - 1),
		                err);
	}
	return rc;
}

static int parse_text(rf_mix_file *f, const char *buf, size_t len, const char *base,
                      const char *name, rf_error *err)
{
	size_t off = 0;
	uint32_t no = 0;
	while (off < len) {
		const char *l = buf + off;
		const char *nl = memchr(l, '\n', len - off);
		size_t n = nl ? (size_t)(nl - l) : len - off;
		off += n + (nl ? 1 : 0);
		no++;
		if (n + 1 > RF_MANIFEST_LINE_MAX)
			return rf_fail(err, -EINVAL, "mixture %s: line %u: longer than %u bytes",
			               name, no, RF_MANIFEST_LINE_MAX);
		if (n > 0 && l[n - 1] == '\r')
			n--;
		if (memchr(l, '\0', n))
			return rf_fail(err, -EINVAL, "mixture %s: line %u: holds a NUL byte", name,
			               no);
		if (no == 1) {
			if (n != strlen(RF_MIX_FILE_MAGIC) || memcmp(l, RF_MIX_FILE_MAGIC, n) != 0)
				return rf_fail(err, -EINVAL, "mixture %s: line 1 is not '%s'", name,
				               RF_MIX_FILE_MAGIC);
			continue;
		}
		if (n == 0 || l[0] == '#')
			continue;
		int rc = parse_line(f, base, name, no, l, n, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* A JSON weight: a string as in text, an integer, or a real taken to 6
 * places only when it is one exactly (0.1 is, 1e-7 is not). */
static int json_weight(const json_t *w, char *out, size_t cap)
{
	if (json_is_string(w)) {
		if (json_string_length(w) + 1 > cap)
			return -1;
		snprintf(out, cap, "%s", json_string_value(w));
		return strlen(out) == json_string_length(w) ? 0 : -1;
	}
	if (json_is_integer(w)) {
		snprintf(out, cap, "%lld", (long long)json_integer_value(w));
		return 0;
	}
	if (json_is_real(w)) {
		double x = json_real_value(w);
		if (!(x >= 0 && x < 1e12))
			return -1;
		snprintf(out, cap, "%.6f", x);
		double back = strtod(out, NULL);
		return back == x ? 0 : -1;
	}
	return -1;
}

static int parse_json(rf_mix_file *f, const char *buf, size_t len, const char *base,
                      const char *name, rf_error *err)
{
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return rf_fail(err, -EINVAL, "mixture %s: JSON at line %d column %d: %.80s", name,
		               je.line, je.column, je.text);
	int rc = 0;
	json_t *ver = json_object_get(root, "mixture"), *srcs = json_object_get(root, "sources");
	if (!json_is_object(root) || !json_is_integer(ver) || json_integer_value(ver) != 1) {
		rc = rf_fail(err, -EINVAL,
		             "mixture %s: expected {\"mixture\": 1, \"sources\": [...]}", name);
		goto out;
	}
	if (!json_is_array(srcs)) {
		rc = rf_fail(err, -EINVAL, "mixture %s: \"sources\" is not a list", name);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(srcs) && rc == 0; i++) {
		json_t *s = json_array_get(srcs, i);
		char what[40], weight[48];
		snprintf(what, sizeof(what), "source %zu", i + 1);
		json_t *path = json_object_get(s, "source"), *w = json_object_get(s, "weight");
		json_t *opts = json_object_get(s, "options");
		if (!json_is_object(s) || !json_is_string(path) || !w) {
			rc = rf_fail(err, -EINVAL,
			             "mixture %s: %s: needs \"source\" (a string) and "
			             "\"weight\"",
			             name, what);
			break;
		}
		if (json_weight(w, weight, sizeof(weight)) < 0) {
			rc = rf_fail(err, -EINVAL,
			             "mixture %s: %s: weight is not a number >= 0 with at "
			             "most 6 decimal places",
			             name, what);
			break;
		}
		rc = add_source(f, base, name, (uint32_t)(i + 1), what, weight,
		                json_string_value(path), json_string_length(path), err);
		if (rc == 0 && opts && !json_is_object(opts))
			rc = rf_fail(err, -EINVAL, "mixture %s: %s: \"options\" is not an object",
			             name, what);
		const char *k;
		json_t *v;
		if (rc == 0 && opts)
			json_object_foreach(opts, k, v)
			{
				if (!json_is_string(v)) {
					rc = rf_fail(err, -EINVAL,
					             "mixture %s: %s: option %.64s is not a "
					             "string",
					             name, what, k);
					break;
				}
				rc = add_option(f, name, what, k, strlen(k), json_string_value(v),
				                json_string_length(v), err);
				if (rc < 0)
					break;
			}
	}
out:
	json_decref(root);
	return rc;
}

int rf_mix_file_parse(const char *buf, size_t len, const char *base, const char *name,
                      rf_mix_file **out, rf_error *err)
{
	*out = NULL;
	if (len > RF_MIX_FILE_MAX)
		return rf_fail(err, -EFBIG, "mixture %s: %zu bytes, more than %u", name, len,
		               RF_MIX_FILE_MAX);
	rf_mix_file *f = calloc(1, sizeof(*f));
	if (!f)
		return rf_fail(err, -ENOMEM, "mixture %s: no memory", name);
	f->bytes = sizeof(*f);
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	int rc = i < len && buf[i] == '{' ? parse_json(f, buf, len, base, name, err)
	                                  : parse_text(f, buf, len, base, name, err);
	if (rc == 0 && f->count == 0)
		rc = rf_fail(err, -EINVAL, "mixture %s: lists no sources", name);
	uint64_t sum = 0;
	for (uint32_t j = 0; rc == 0 && j < f->count; j++)
		sum += f->src[j].weight;
	if (rc == 0 && sum == 0)
		rc = rf_fail(err, -EINVAL, "mixture %s: every weight is 0", name);
	if (rc < 0) {
		rf_mix_file_free(f);
		return rc;
	}
	*out = f;
	return 0;
}
