/* url.c - URL forms and brace expansion (see url.h). Pure string work: no
 * I/O, every length checked, every expansion bounded before it starts. */
#include "url.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BRACE_GROUPS_MAX      16
#define BRACE_DIGITS_MAX      18 /* keeps every bound below 10^18 */
#define BRACE_TOTAL_BYTES_MAX (256ull << 20)

static const struct {
	const char *prefix;
	rf_url_scheme scheme;
	const char *name;
} schemes[] = {
    {"file://", RF_URL_FILE, "file"},    {"http://", RF_URL_HTTP, "http"},
    {"https://", RF_URL_HTTPS, "https"}, {"s3://", RF_URL_S3, "s3"},
    {"gs://", RF_URL_GS, "gs"},          {"az://", RF_URL_AZ, "az"},
};

rf_url_scheme rf_url_scheme_of(const char *url)
{
	for (size_t i = 0; i < RF_ARRAY_LEN(schemes); i++)
		if (!strncasecmp(url, schemes[i].prefix, strlen(schemes[i].prefix)))
			return schemes[i].scheme;
	return strstr(url, "://") ? RF_URL_UNKNOWN : RF_URL_PATH;
}

const char *rf_url_scheme_name(rf_url_scheme s)
{
	for (size_t i = 0; i < RF_ARRAY_LEN(schemes); i++)
		if (schemes[i].scheme == s)
			return schemes[i].name;
	return s == RF_URL_PATH ? "path" : "unknown";
}

int rf_url_list_add(rf_url_list *l, const char *url, uint64_t size_hint, rf_error *err)
{
	return rf_url_list_add_version(l, url, size_hint, NULL, err);
}

int rf_url_list_add_version(rf_url_list *l, const char *url, uint64_t size_hint,
                            const char *validator, rf_error *err)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		rf_url_entry *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return rf_fail(err, -ENOMEM, "out of memory listing %zu shard names", l->n);
		l->v = v;
		l->cap = cap;
	}
	char *copy = strdup(url);
	char *version = validator && *validator ? strdup(validator) : NULL;
	if (!copy || (validator && *validator && !version)) {
		free(copy);
		free(version);
		return rf_fail(err, -ENOMEM, "out of memory listing %zu shard names", l->n);
	}
	l->v[l->n].url = copy;
	l->v[l->n].size_hint = size_hint;
	l->v[l->n].validator = version;
	l->n++;
	return 0;
}

void rf_url_list_truncate(rf_url_list *l, size_t n)
{
	for (size_t i = n; i < l->n; i++) {
		free(l->v[i].url);
		free(l->v[i].validator);
	}
	if (n < l->n)
		l->n = n;
}

void rf_url_list_free(rf_url_list *l)
{
	rf_url_list_truncate(l, 0);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------- brace expansion */

/* One {..} group: either a numeric range or a list of alternatives. */
typedef struct brace_group {
	size_t open, close; /* offsets of '{' and '}' in the pattern */
	bool range;
	uint64_t lo, hi; /* range: first and last value as written */
	int width;       /* zero padding width, 0 = none */
	size_t count;    /* names this group yields */
} brace_group;

static int parse_bound(const char *s, size_t len, uint64_t *v, const char *pattern, rf_error *err)
{
	if (len == 0 || len > BRACE_DIGITS_MAX)
		return rf_fail(err, -EINVAL,
		               "bad brace range in '%s': bounds must be 1 to %d digits", pattern,
		               BRACE_DIGITS_MAX);
	uint64_t x = 0;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return rf_fail(err, -EINVAL,
			               "bad brace range in '%s': '%.*s' is not a decimal number",
			               pattern, (int)len, s);
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return 0;
}

static int parse_group(const char *pattern, brace_group *g, rf_error *err)
{
	const char *body = pattern + g->open + 1;
	size_t len = g->close - g->open - 1;
	const char *dots = memmem(body, len, "..", 2);
	if (!dots) {
		size_t commas = 0;
		for (size_t i = 0; i < len; i++)
			commas += body[i] == ',';
		if (commas == 0)
			return rf_fail(err, -EINVAL,
			               "bad brace group in '%s': expected {A..B} or {x,y}",
			               pattern);
		g->range = false;
		g->count = commas + 1;
		return 0;
	}
	size_t alen = (size_t)(dots - body), blen = len - alen - 2;
	g->range = true;
	RF_TRY(parse_bound(body, alen, &g->lo, pattern, err));
	RF_TRY(parse_bound(dots + 2, blen, &g->hi, pattern, err));
	bool pad = (alen > 1 && body[0] == '0') || (blen > 1 && dots[2] == '0');
	g->width = pad ? (int)RF_MAX(alen, blen) : 0;
	uint64_t span = g->lo <= g->hi ? g->hi - g->lo : g->lo - g->hi;
	if (span >= RF_BRACE_EXPANSION_MAX)
		return rf_fail(err, -EINVAL, "brace range in '%s' expands to more than %u names",
		               pattern, RF_BRACE_EXPANSION_MAX);
	g->count = (size_t)span + 1;
	return 0;
}

/* Finds the groups; checks nesting, closing and the total count. */
static int find_groups(const char *pattern, brace_group *g, size_t *ngroups, rf_error *err)
{
	size_t n = 0, total = 1;
	for (size_t i = 0; pattern[i]; i++) {
		if (pattern[i] == '}')
			return rf_fail(err, -EINVAL, "unmatched '}' at offset %zu in '%s'", i,
			               pattern);
		if (pattern[i] != '{')
			continue;
		const char *end = strpbrk(pattern + i + 1, "{}");
		if (!end || *end == '{')
			return rf_fail(err, -EINVAL, "%s brace at offset %zu in '%s'",
			               end ? "nested" : "unclosed", i, pattern);
		if (n == BRACE_GROUPS_MAX)
			return rf_fail(err, -EINVAL, "more than %d brace groups in '%s'",
			               BRACE_GROUPS_MAX, pattern);
		g[n].open = i;
		g[n].close = (size_t)(end - pattern);
		RF_TRY(parse_group(pattern, &g[n], err));
		if (total > RF_BRACE_EXPANSION_MAX / g[n].count)
			return rf_fail(err, -EINVAL, "'%s' expands to more than %u names", pattern,
			               RF_BRACE_EXPANSION_MAX);
		total *= g[n].count;
		i = g[n].close;
		n++;
	}
	*ngroups = n;
	if ((uint64_t)total * (strlen(pattern) + 24) > BRACE_TOTAL_BYTES_MAX)
		return rf_fail(err, -EINVAL, "'%s' expands to more than %llu bytes of names",
		               pattern, (unsigned long long)BRACE_TOTAL_BYTES_MAX);
	return 0;
}

/* Appends alternative number k of group g to buf at *pos. */
static void put_choice(const char *pattern, const brace_group *g, size_t k, char *buf, size_t *pos)
{
	if (g->range) {
		uint64_t v = g->lo <= g->hi ? g->lo + k : g->lo - k;
		*pos += (size_t)sprintf(buf + *pos, "%0*llu", g->width, (unsigned long long)v);
		return;
	}
	const char *s = pattern + g->open + 1, *end = pattern + g->close;
	for (size_t i = 0; i < k; i++)
		s = (const char *)memchr(s, ',', (size_t)(end - s)) + 1;
	const char *e = memchr(s, ',', (size_t)(end - s));
	size_t len = (size_t)((e ? e : end) - s);
	memcpy(buf + *pos, s, len);
	*pos += len;
}

int rf_brace_expand(const char *pattern, rf_url_list *out, rf_error *err)
{
	brace_group g[BRACE_GROUPS_MAX];
	size_t ng = 0;
	if (strlen(pattern) > RF_URL_BYTES_MAX)
		return rf_fail(err, -ENAMETOOLONG, "name longer than %u bytes", RF_URL_BYTES_MAX);
	RF_TRY(find_groups(pattern, g, &ng, err));
	size_t idx[BRACE_GROUPS_MAX] = {0};
	char *buf = malloc(strlen(pattern) + (size_t)ng * BRACE_DIGITS_MAX + 1);
	if (!buf)
		return rf_fail(err, -ENOMEM, "out of memory expanding '%s'", pattern);
	int rc = 0;
	for (;;) {
		size_t pos = 0, from = 0;
		for (size_t j = 0; j < ng; j++) {
			memcpy(buf + pos, pattern + from, g[j].open - from);
			pos += g[j].open - from;
			put_choice(pattern, &g[j], idx[j], buf, &pos);
			from = g[j].close + 1;
		}
		strcpy(buf + pos, pattern + from);
		if ((rc = rf_url_list_add(out, buf, RF_SIZE_UNKNOWN, err)) < 0)
			break;
		size_t j = ng;
		while (j > 0 && ++idx[j - 1] == g[j - 1].count)
			idx[--j] = 0;
		if (j == 0)
			break;
	}
	free(buf);
	return rc;
}

/* ------------------------------------------------------------ URL pieces */

int rf_url_split_s3(const char *url, char **bucket, char **key, rf_error *err)
{
	char shown[512];
	rf_url_redact(url, shown, sizeof(shown));
	rf_url_scheme sch = rf_url_scheme_of(url);
	if (sch != RF_URL_S3 && sch != RF_URL_GS)
		return rf_fail(err, -EINVAL, "'%s' is not an s3:// or gs:// URL", shown);
	const char *b = url + 5, *slash = strchr(b, '/');
	size_t blen = slash ? (size_t)(slash - b) : strlen(b);
	if (blen < 1 || blen > 255)
		return rf_fail(err, -EINVAL, "bad bucket name in '%s'", shown);
	for (size_t i = 0; i < blen; i++)
		if (!isalnum((unsigned char)b[i]) && !strchr("-._", b[i]))
			return rf_fail(err, -EINVAL, "bad bucket name in '%s'", shown);
	const char *k = slash ? slash + 1 : "";
	if (strlen(k) > 1024)
		return rf_fail(err, -ENAMETOOLONG, "S3 key longer than 1024 bytes in '%s'", shown);
	*bucket = strndup(b, blen);
	*key = strdup(k);
	if (!*bucket || !*key) {
		free(*bucket);
		free(*key);
		*bucket = *key = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

bool rf_s3_bucket_virtual_ok(const char *bucket)
{
	size_t n = strlen(bucket);
	if (n < 3 || n > 63 || !isalnum((unsigned char)bucket[0]) ||
	    !isalnum((unsigned char)bucket[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)bucket[i]) && !isdigit((unsigned char)bucket[i]) &&
		    bucket[i] != '-')
			return false;
	return true;
}

bool rf_s3_region_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 40)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

/* The host of an http(s) URL: [*host, *host + *len). */
static bool url_host(const char *url, const char **host, size_t *len)
{
	const char *s = strstr(url, "://");
	if (!s)
		return false;
	s += 3;
	size_t n = strcspn(s, "/?#");
	const char *at = memchr(s, '@', n);
	if (at) {
		n -= (size_t)(at + 1 - s);
		s = at + 1;
	}
	const char *colon = memchr(s, ':', n);
	*host = s;
	*len = colon ? (size_t)(colon - s) : n;
	return *len > 0;
}

/* Finds "s3.REGION.amazonaws.com" / "s3-REGION..." / "s3.amazonaws.com" at
 * the end of host: its offset in host and the region. */
static bool aws_s3_suffix(const char *host, size_t len, size_t *at, char *region, size_t cap)
{
	static const char tail[] = ".amazonaws.com";
	size_t tl = sizeof(tail) - 1;
	if (len < tl + 2 || strncasecmp(host + len - tl, tail, tl) != 0)
		return false;
	size_t end = len - tl; /* host[0, end) = [BUCKET.]s3[.-]REGION or [BUCKET.]s3 */
	size_t start = end;
	while (start > 0 && host[start - 1] != '.')
		start--;
	const char *label = host + start;
	size_t ll = end - start;
	if (ll == 2 && !strncasecmp(label, "s3", 2)) {
		*at = start;
		snprintf(region, cap, "us-east-1");
		return true;
	}
	if (ll > 3 && !strncasecmp(label, "s3-", 3) && ll - 3 < cap) { /* s3-REGION (legacy) */
		*at = start;
		snprintf(region, cap, "%.*s", (int)(ll - 3), label + 3);
		return rf_s3_region_ok(region);
	}
	if (start < 3) /* s3.REGION: the label before REGION is "s3" */
		return false;
	size_t s3 = start - 1;
	while (s3 > 0 && host[s3 - 1] != '.')
		s3--;
	if (start - 1 - s3 != 2 || strncasecmp(host + s3, "s3", 2) != 0 || ll >= cap)
		return false;
	*at = s3;
	snprintf(region, cap, "%.*s", (int)ll, label);
	return rf_s3_region_ok(region);
}

bool rf_url_aws_s3_region(const char *url, char *region, size_t region_cap)
{
	const char *host;
	size_t len, at;
	return url_host(url, &host, &len) && aws_s3_suffix(host, len, &at, region, region_cap);
}

char *rf_url_aws_s3_with_region(const char *url, const char *region)
{
	const char *host;
	size_t len, at;
	char old[48];
	if (!rf_s3_region_ok(region) || !url_host(url, &host, &len) ||
	    !aws_s3_suffix(host, len, &at, old, sizeof(old)))
		return NULL;
	char *out = NULL;
	if (asprintf(&out, "%.*ss3.%s.amazonaws.com%s", (int)(host + at - url), url, region,
	             host + len) < 0)
		return NULL;
	return out;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int rf_url_file_path(const char *url, char **path, rf_error *err)
{
	const char *p = url + 7; /* after file:// */
	if (rf_url_scheme_of(url) != RF_URL_FILE)
		return rf_fail(err, -EINVAL, "'%s' is not a file:// URL", url);
	if (!strncasecmp(p, "localhost/", 10))
		p += 9;
	if (*p != '/')
		return rf_fail(err, -EINVAL, "'%s': file URLs need an absolute path (file:///...)",
		               url);
	char *out = malloc(strlen(p) + 1), *o = out;
	if (!out)
		return rf_fail(err, -ENOMEM, "out of memory");
	for (; *p; p++) {
		int hi, lo;
		if (*p == '%' && (hi = hexval(p[1])) >= 0 && (lo = hexval(p[2])) >= 0) {
			if (hi == 0 && lo == 0) {
				free(out);
				return rf_fail(err, -EINVAL, "'%s': %%00 in a file URL", url);
			}
			*o++ = (char)(hi << 4 | lo);
			p += 2;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	*path = out;
	return 0;
}

int rf_uri_encode(const char *in, bool keep_slash, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		bool keep = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
		            (keep_slash && *p == '/');
		if (o + (keep ? 1 : 3) >= cap)
			return -ENAMETOOLONG;
		if (keep) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	if (o >= cap)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return (int)o;
}

RF_API void rf_url_redact(const char *url, char *out, size_t cap)
{
	if (cap == 0)
		return;
	rf_url_scheme scheme = rf_url_scheme_of(url);
	if (scheme == RF_URL_PATH || scheme == RF_URL_FILE) {
		snprintf(out, cap, "%s", url);
		return;
	}
	const char *s = strstr(url, "://");
	const char *auth = s ? s + 3 : url;
	const char *auth_end = auth + strcspn(auth, "/?#");
	const char *at = NULL;
	for (const char *p = auth; p < auth_end; p++)
		if (*p == '@')
			at = p;
	size_t q = strcspn(url, "?");
	if (at && at + 1 - url > (ptrdiff_t)q)
		at = NULL; /* an '@' after the query begins is not userinfo */
	if (at)
		snprintf(out, cap, "%.*s%.*s%s", (int)(auth - url), url,
		         (int)(q - (size_t)(at + 1 - url)), at + 1, url[q] ? "?..." : "");
	else
		snprintf(out, cap, "%.*s%s", (int)q, url, url[q] ? "?..." : "");
}

char *rf_url_redact_dup(const char *url)
{
	size_t cap = strlen(url) + sizeof("?...");
	char *out = malloc(cap);
	if (out)
		rf_url_redact(url, out, cap);
	return out;
}

/* The authority of a scheme://... URL: [*start, *end), userinfo excluded. */
static bool authority_of(const char *url, const char **start, const char **end)
{
	const char *s = strstr(url, "://");
	if (!s)
		return false;
	const char *a = s + 3, *e = a + strcspn(a, "/?#");
	*start = a;
	for (const char *p = a; p < e; p++)
		if (*p == '@')
			*start = p + 1;
	*end = e;
	return true;
}

int rf_url_origin(const char *url, char *out, size_t cap)
{
	rf_url_scheme scheme = rf_url_scheme_of(url);
	if (scheme != RF_URL_HTTP && scheme != RF_URL_HTTPS)
		return -EINVAL;
	const char *a = NULL, *e = NULL;
	authority_of(url, &a, &e);
	const char *host_end = a;
	if (*a == '[') {
		const char *close = memchr(a, ']', (size_t)(e - a));
		if (!close)
			return -EINVAL;
		host_end = close + 1;
	} else {
		host_end = memchr(a, ':', (size_t)(e - a));
		if (!host_end)
			host_end = e;
	}
	if (host_end == a || (host_end < e && *host_end != ':'))
		return -EINVAL;
	unsigned long port = scheme == RF_URL_HTTPS ? 443 : 80;
	if (host_end < e && host_end + 1 < e) {
		port = 0;
		for (const char *p = host_end + 1; p < e; p++) {
			if (!isdigit((unsigned char)*p) || port > 65535)
				return -EINVAL;
			port = port * 10 + (unsigned long)(*p - '0');
		}
		if (port == 0 || port > 65535)
			return -EINVAL;
	}
	int n = snprintf(out, cap, "%s://%.*s:%lu", rf_url_scheme_name(scheme), (int)(host_end - a),
	                 a, port);
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return 0;
}

char *rf_url_without_userinfo(const char *url)
{
	const char *a = NULL, *e = NULL;
	if (!authority_of(url, &a, &e))
		return strdup(url);
	const char *s = strstr(url, "://") + 3;
	char *out = malloc(strlen(url) + 1);
	if (out)
		snprintf(out, strlen(url) + 1, "%.*s%s", (int)(s - url), url, a);
	return out;
}

int rf_url_clean(const char *url, char *out, size_t cap)
{
	const char *auth = strstr(url, "://");
	if (!auth) { /* a local path: no userinfo or query to drop */
		size_t n = strlen(url);
		if (n >= cap)
			return -ENAMETOOLONG;
		memcpy(out, url, n + 1);
		return 0;
	}
	auth += 3;
	size_t host_len = strcspn(auth, "/?#");
	const char *at = memrchr(auth, '@', host_len);
	const char *host = at ? at + 1 : auth;
	size_t scheme_len = (size_t)(auth - url);
	size_t rest = rf_url_path_len(host);
	if (scheme_len + rest >= cap)
		return -ENAMETOOLONG;
	memcpy(out, url, scheme_len);
	memcpy(out + scheme_len, host, rest);
	out[scheme_len + rest] = '\0';
	return 0;
}
