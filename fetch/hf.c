/* hf.c - the Hugging Face Hub's names, URLs, pages and token (see hf.h). */
#include "hf.h"
#include "oauth.h"
#include "util.h"

#include <ctype.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *rf_hf_type_prefix(rf_hf_type t)
{
	return t == RF_HF_DATASET ? "datasets/" : t == RF_HF_SPACE ? "spaces/" : "";
}

const char *rf_hf_type_api(rf_hf_type t)
{
	return t == RF_HF_DATASET ? "datasets" : t == RF_HF_SPACE ? "spaces" : "models";
}

void rf_hf_ref_free(rf_hf_ref *r)
{
	free(r->path);
	r->path = NULL;
}

/* The Hub's repository names: letters, digits, '-', '_', '.', not starting
 * or ending with '-' or '.', no "--" or "..". */
static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > RF_HF_NAME_MAX || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' ||
	    s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
		if (i > 0 && (s[i] == '-' || s[i] == '.') && s[i - 1] == s[i])
			return false;
	}
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes a revision ("refs%2Fconvert%2Fparquet"); no control bytes. */
static int rev_decode(const char *s, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%') {
			int h, l;
			if (i + 2 >= n)
				return -1;
			h = hexval(s[i + 1]), l = hexval(s[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			c = (char)(h << 4 | l);
			i += 2;
		}
		if ((unsigned char)c < 0x21 || c == 0x7f || o == RF_HF_REV_MAX)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return o ? 0 : -1;
}

/* The repository's type from what follows hf://; *p past its prefix. */
static int type_of(const char *url, const char **p, rf_hf_type *t, rf_error *err)
{
	static const char scheme[] = "hf://";
	if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
		return rf_fail(err, -EINVAL, "%.200s: a Hub name is " RF_HF_FORMS, url);
	const char *s = url + sizeof(scheme) - 1;
	/* HfFileSystem reads hf://models/X/Y as the model "models/X"; the Hub
	 * has no such organisation, so it is a mistake for hf://X/Y */
	if (!strncmp(s, "models/", 7))
		return rf_fail(
		    err, -EINVAL,
		    "%.200s: a model repository has no prefix: hf://ORG/NAME[@REVISION]/PATH "
		    "(datasets and spaces have one: hf://datasets/ORG/NAME/..., "
		    "hf://spaces/ORG/NAME/...)",
		    url);
	*t = !strncmp(s, "datasets/", 9) ? RF_HF_DATASET
	     : !strncmp(s, "spaces/", 7) ? RF_HF_SPACE
	                                 : RF_HF_MODEL;
	*p = s + strlen(rf_hf_type_prefix(*t));
	return 0;
}

int rf_hf_parse(const char *url, rf_hf_ref *out, rf_error *err)
{
	memset(out, 0, sizeof(*out));
	const char *p = NULL;
	RF_TRY(type_of(url, &p, &out->type, err));
	size_t org = strcspn(p, "/");
	if (!name_ok(p, org))
		return rf_fail(err, -EINVAL,
		               "%.200s: the organisation (or user) name is missing or "
		               "not a Hub name (a Hub name is " RF_HF_FORMS ")",
		               url);
	const char *name = p + org + (p[org] == '/'), *end = name + strcspn(name, "/@");
	if (!name_ok(name, (size_t)(end - name)))
		return rf_fail(err, -EINVAL,
		               "%.200s: the repository name is missing or not a Hub name (a Hub "
		               "name is " RF_HF_FORMS ")",
		               url);
	memcpy(out->repo, p, (size_t)(end - p));
	out->repo[end - p] = '\0';
	strcpy(out->revision, "main");
	const char *rest = end;
	if (*rest == '@') {
		const char *rs = rest + 1, *re = rs + strcspn(rs, "/");
		if (rev_decode(rs, (size_t)(re - rs), out->revision) < 0)
			return rf_fail(err, -EINVAL,
			               "%.200s: the revision after '@' is empty, longer "
			               "than %u bytes, or badly encoded",
			               url, RF_HF_REV_MAX);
		rest = re;
	}
	if (*rest == '/')
		rest++;
	for (const char *q = rest; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return rf_fail(err, -EINVAL, "%.200s: the path holds a control character",
			               url);
	/* ".." or "." segments would climb out of the repository in a URL */
	for (const char *seg = rest; *seg;) {
		size_t n = strcspn(seg, "/");
		if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return rf_fail(err, -EINVAL, "%.200s: the path has a '.' or '..' segment",
			               url);
		seg += n + (seg[n] == '/');
	}
	out->path = strdup(rest);
	if (!out->path)
		return rf_fail(err, -ENOMEM, "%.200s: no memory", url);
	return 0;
}

int rf_hf_endpoint(const char *env_value, char **out, rf_error *err)
{
	const char *e = env_value && *env_value ? env_value : RF_HF_ENDPOINT;
	size_t n = strlen(e);
	while (n > 0 && e[n - 1] == '/')
		n--;
	if (!rf_oauth_endpoint_ok(e, n, false))
		return rf_fail(err, -EINVAL,
		               "HF_ENDPOINT must be an https:// URL (or http:// to a "
		               "loopback address) without userinfo, query or fragment");
	*out = strndup(e, n);
	return *out ? 0 : rf_fail(err, -ENOMEM, "HF_ENDPOINT: no memory");
}

static char *enc(const char *s, bool keep_slash)
{
	size_t cap = strlen(s) * 3 + 1;
	char *o = malloc(cap);
	if (o && rf_uri_encode(s, keep_slash, o, cap) < 0) {
		free(o);
		o = NULL;
	}
	return o;
}

char *rf_hf_revision_url(const char *endpoint, const rf_hf_ref *r)
{
	char *rev = enc(r->revision, false);
	size_t n = strlen(endpoint) + strlen(r->repo) + (rev ? strlen(rev) : 0) + 32;
	char *v = rev ? malloc(n) : NULL;
	if (v)
		snprintf(v, n, "%s/api/%s/%s/revision/%s", endpoint, rf_hf_type_api(r->type),
		         r->repo, rev);
	free(rev);
	return v;
}

char *rf_hf_tree_url(const char *endpoint, const rf_hf_ref *r, const char *commit)
{
	char *rev = enc(commit, false), *path = enc(r->path, true);
	size_t n = strlen(endpoint) + strlen(r->repo) + (rev ? strlen(rev) : 0) +
	           (path ? strlen(path) : 0) + 64;
	char *u = rev && path ? malloc(n) : NULL;
	for (size_t e = path ? strlen(path) : 0; e > 0 && path[e - 1] == '/'; e--)
		path[e - 1] = '\0'; /* a folder is listed by its name, not "name/" */
	if (u)
		snprintf(u, n, "%s/api/%s/%s/tree/%s%s%s?recursive=true&expand=false", endpoint,
		         rf_hf_type_api(r->type), r->repo, rev, *path ? "/" : "", path);
	free(rev);
	free(path);
	return u;
}

char *rf_hf_resolve_url(const char *endpoint, const rf_hf_ref *r, const char *commit,
                        const char *file)
{
	char *rev = enc(commit, false), *path = enc(file, true);
	size_t n = strlen(endpoint) + strlen(r->repo) + (rev ? strlen(rev) : 0) +
	           (path ? strlen(path) : 0) + 32;
	char *u = rev && path ? malloc(n) : NULL;
	if (u)
		snprintf(u, n, "%s/%s%s/resolve/%s/%s", endpoint, rf_hf_type_prefix(r->type),
		         r->repo, rev, path);
	free(rev);
	free(path);
	return u;
}

int rf_hf_revision_parse(const char *json, size_t len, const char *what, char sha[41],
                         rf_error *err)
{
	if (len > RF_HF_PAGE_MAX)
		return rf_fail(err, -EFBIG, "%s: an answer of %zu bytes", what, len);
	json_error_t je;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return rf_fail(err, -EPROTO, "%s: not JSON (line %d column %d)", what, je.line,
		               je.column);
	json_t *s = json_object_get(o, "sha");
	int rc = 0;
	if (!json_is_string(s) || json_string_length(s) != 40) {
		rc = rf_fail(err, -EPROTO, "%s: no \"sha\" of 40 hex digits", what);
	} else {
		const char *v = json_string_value(s);
		for (int i = 0; i < 40 && rc == 0; i++)
			if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
				rc = rf_fail(err, -EPROTO,
				             "%s: \"sha\" is not 40 lower-case hex digits", what);
		if (rc == 0)
			memcpy(sha, v, 41);
	}
	json_decref(o);
	return rc;
}

char *rf_hf_name(const rf_hf_ref *r, const char *commit, const char *file)
{
	size_t n = strlen(r->repo) + strlen(commit) + strlen(file) + 32;
	char *u = malloc(n);
	if (u)
		snprintf(u, n, "hf://%s%s@%s/%s", rf_hf_type_prefix(r->type), r->repo, commit,
		         file);
	return u;
}

int rf_hf_tree_parse(const char *json, size_t len, const rf_hf_ref *r, const char *commit,
                     const char *what, rf_url_list *out, rf_error *err)
{
	if (len > RF_HF_PAGE_MAX)
		return rf_fail(err, -EFBIG, "%s: a page of %zu bytes, more than %u", what, len,
		               RF_HF_PAGE_MAX);
	json_error_t je;
	json_t *a = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!a)
		return rf_fail(err, -EPROTO, "%s: not JSON (line %d column %d)", what, je.line,
		               je.column);
	int rc = 0, added = 0;
	size_t before = out->n;
	if (!json_is_array(a)) {
		rc = rf_fail(err, -EPROTO, "%s: not a list of entries", what);
		goto out;
	}
	if (json_array_size(a) > RF_HF_PAGE_ENTRIES) {
		rc = rf_fail(err, -E2BIG, "%s: %zu entries on one page, more than %u", what,
		             json_array_size(a), RF_HF_PAGE_ENTRIES);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *e = json_array_get(a, i);
		json_t *type = json_object_get(e, "type"), *path = json_object_get(e, "path");
		json_t *size = json_object_get(e, "size");
		if (!json_is_string(type) || !json_is_string(path)) {
			rc = rf_fail(err, -EPROTO, "%s: entry %zu has no \"type\" or \"path\"",
			             what, i);
			goto out;
		}
		if (strcmp(json_string_value(type), "file") != 0)
			continue; /* directories: the listing is recursive */
		const char *p = json_string_value(path);
		size_t pl = json_string_length(path), rl = strlen(r->path);
		bool bad =
		    pl == 0 || pl > 4096 || p[0] == '/' || p[pl - 1] == '/' || strstr(p, "//");
		for (size_t j = 0; !bad && j < pl; j++)
			bad = (unsigned char)p[j] < 0x20 || p[j] == 0x7f;
		for (const char *seg = p; !bad && *seg;) {
			size_t n = strcspn(seg, "/");
			bad =
			    (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.');
			seg += n + (seg[n] == '/');
		}
		/* an entry outside the listed folder is the server's error, not ours to read */
		if (!bad && rl > 0)
			bad = !(strncmp(p, r->path, rl) == 0 &&
			        (pl == rl || p[rl] == '/' || r->path[rl - 1] == '/'));
		if (bad) {
			rc =
			    rf_fail(err, -EPROTO, "%s: entry %zu's path is not a file inside %s/%s",
			            what, i, r->repo, r->path);
			goto out;
		}
		if (!json_is_integer(size) || json_integer_value(size) < 0) {
			rc =
			    rf_fail(err, -EPROTO, "%s: entry %zu (%.200s) has no size", what, i, p);
			goto out;
		}
		char *u = rf_hf_name(r, commit, p);
		if (!u) {
			rc = rf_fail(err, -ENOMEM, "%s: no memory", what);
			goto out;
		}
		rc = rf_url_list_add(out, u, (uint64_t)json_integer_value(size), err);
		free(u);
		if (rc < 0)
			goto out;
		added++;
	}
out:
	json_decref(a);
	if (rc < 0) {
		rf_url_list_truncate(out, before);
		return rc;
	}
	return added;
}

int rf_hf_link_next(const char *link, const char *endpoint, char **next, rf_error *err)
{
	*next = NULL;
	if (!link)
		return 0;
	size_t n = strlen(link);
	if (n > 16384)
		return rf_fail(err, -EPROTO, "the tree listing's Link header is over 16 KiB");
	/* Link: <URL>; rel="next", <URL2>; rel="prev" */
	for (const char *p = link; (p = strchr(p, '<')) != NULL;) {
		const char *e = strchr(p, '>');
		if (!e)
			break;
		const char *params = e + 1, *stop = strchr(params, ',');
		size_t pl = stop ? (size_t)(stop - params) : strlen(params);
		bool is_next = false;
		for (size_t i = 0; i + 10 <= pl; i++)
			if (strncasecmp(params + i, "rel=\"next\"", 10) == 0 ||
			    strncasecmp(params + i, "rel=next", 8) == 0)
				is_next = true;
		if (is_next) {
			size_t ul = (size_t)(e - p - 1), el = strlen(endpoint);
			const char *u = p + 1;
			/* same endpoint, then a path: the token goes with the next page */
			if (ul <= el || strncmp(u, endpoint, el) != 0 || u[el] != '/')
				return rf_fail(err, -EPERM,
				               "the tree listing's next page is not on %s: "
				               "not followed (the token would go with it)",
				               endpoint);
			for (size_t i = 0; i < ul; i++)
				if ((unsigned char)u[i] <= 0x20 || u[i] == 0x7f)
					return rf_fail(err, -EPROTO,
					               "the tree listing's next page URL "
					               "holds a space or control character");
			*next = strndup(u, ul);
			return *next ? 1 : rf_fail(err, -ENOMEM, "no memory");
		}
		p = e + 1;
	}
	return 0;
}

/* A token from text: surrounding whitespace dropped; visible ASCII only. */
static int token_of(const char *s, size_t n, const char *from, char **token, rf_error *err)
{
	while (n > 0 && isspace((unsigned char)*s))
		s++, n--;
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 0)
		return 0;
	if (n > RF_HF_TOKEN_MAX)
		return rf_fail(err, -EINVAL, "%s: a token of %zu bytes, more than %u", from, n,
		               RF_HF_TOKEN_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return rf_fail(err, -EINVAL,
			               "%s: the token holds a byte that is not visible "
			               "ASCII (at %zu)",
			               from, i);
	*token = strndup(s, n);
	return *token ? 1 : rf_fail(err, -ENOMEM, "%s: no memory", from);
}

static int token_file(const char *path, const char *from, bool must, char **token, rf_error *err)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		if (!must && errno == ENOENT)
			return 0;
		return rf_fail(err, -errno, "%s (%.200s): %s", from, path, strerror(errno));
	}
	char buf[RF_HF_TOKEN_MAX + 64];
	size_t n = fread(buf, 1, sizeof(buf), f);
	int rc = ferror(f) ? rf_fail(err, -EIO, "%s (%.200s): read error", from, path) : 0;
	fclose(f);
	if (rc == 0 && n == sizeof(buf))
		rc = rf_fail(err, -EINVAL, "%s (%.200s): longer than a token", from, path);
	if (rc == 0)
		rc = token_of(buf, n, from, token, err);
	explicit_bzero(buf, sizeof(buf));
	return rc;
}

int rf_hf_token_find(const char *(*env)(const char *), char **token, const char **from,
                     rf_error *err)
{
	*token = NULL;
	*from = "none";
	const char *v = env("HF_TOKEN");
	if (v && *v) {
		*from = "HF_TOKEN";
		int rc = token_of(v, strlen(v), "HF_TOKEN", token, err);
		return rc < 0 ? rc : 0;
	}
	v = env("HF_TOKEN_PATH");
	if (v && *v) {
		*from = "HF_TOKEN_PATH";
		int rc = token_file(v, "HF_TOKEN_PATH", true, token, err);
		return rc < 0 ? rc : 0;
	}
	char path[4096];
	const char *home = env("HF_HOME"), *h = env("HOME");
	int n = home && *home ? snprintf(path, sizeof(path), "%s/token", home)
	        : h && *h     ? snprintf(path, sizeof(path), "%s/.cache/huggingface/token", h)
	                      : -1;
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	int rc = token_file(path, "the Hub's token file", false, token, err);
	if (rc > 0)
		*from = home && *home ? "$HF_HOME/token" : "~/.cache/huggingface/token";
	return rc < 0 ? rc : 0;
}
