/* aws_config.c - the AWS shared credentials and config files (see
 * aws_config.h). One pass over the lines; every entry is one allocation of
 * key and value, kept in file order so the last of a repeated key wins. */
#include "aws_config.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_BYTES_MAX 256 /* a section, key or sub-section name */

typedef struct ini_entry {
	int section;
	char *sub; /* NULL, or the key that opened the sub-section */
	char *key;
	char *value;
} ini_entry;

struct rf_aws_ini {
	char **sections;
	int nsections;
	ini_entry *entries;
	size_t nentries;
};

typedef struct ini_parse {
	rf_aws_ini *ini;
	rf_aws_ini_kind kind;
	const char *shown;
	rf_error *err;
	unsigned line;
	int section;        /* -1: before any section, or a skipped one */
	bool skipping;      /* inside a section the SDKs ignore */
	char *sub;          /* the open sub-section's key, or NULL */
	ini_entry *last;    /* the last top-level entry (continuations) */
	size_t value_bytes; /* of every value: bounded by the file size */
} ini_parse;

static int bad(ini_parse *p, const char *what)
{
	return rf_fail(p->err, -EINVAL, "AWS %s file %.200s line %u: %s",
	               p->kind == RF_AWS_INI_CONFIG ? "config" : "credentials", p->shown, p->line,
	               what);
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void rf_aws_ini_free(rf_aws_ini *ini)
{
	if (!ini)
		return;
	for (size_t i = 0; i < ini->nentries; i++) {
		free(ini->entries[i].key);
		free(ini->entries[i].sub);
		wipe_free(ini->entries[i].value);
	}
	for (int i = 0; i < ini->nsections; i++)
		free(ini->sections[i]);
	free(ini->entries);
	free(ini->sections);
	free(ini);
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

static int find_section(const rf_aws_ini *ini, const char *name)
{
	for (int i = 0; i < ini->nsections; i++)
		if (!strcmp(ini->sections[i], name))
			return i;
	return -1;
}

/* The section's name as lookups know it, or "" when the SDKs ignore it. */
static void section_name(rf_aws_ini_kind kind, const char *raw, char *out, size_t cap)
{
	out[0] = '\0';
	if (kind == RF_AWS_INI_CREDENTIALS) {
		snprintf(out, cap, "%s", raw);
		return;
	}
	if (!strcmp(raw, "default")) {
		snprintf(out, cap, "default");
		return;
	}
	static const char *const prefixes[] = {"profile", "services", "sso-session"};
	for (size_t i = 0; i < RF_ARRAY_LEN(prefixes); i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(raw, prefixes[i], n) != 0 || (raw[n] != ' ' && raw[n] != '\t'))
			continue;
		const char *name = raw + n;
		while (*name == ' ' || *name == '\t')
			name++;
		if (!*name)
			return;
		if (i == 0)
			snprintf(out, cap, "%s", name);
		else
			snprintf(out, cap, "%s %s", prefixes[i], name);
		return;
	}
}

static int open_section(ini_parse *p, char *line)
{
	char *close = strchr(line, ']');
	if (!close)
		return bad(p, "a section header without ']'");
	*close = '\0';
	char *rest = trim(close + 1);
	if (*rest && *rest != '#' && *rest != ';')
		return bad(p, "text after a section header");
	char *raw = trim(line + 1);
	if (!*raw || strlen(raw) >= NAME_BYTES_MAX)
		return bad(p, "an empty or too long section name");
	char name[NAME_BYTES_MAX + 16];
	section_name(p->kind, raw, name, sizeof(name));
	free(p->sub);
	p->sub = NULL;
	p->last = NULL;
	p->skipping = !name[0];
	p->section = -1;
	if (p->skipping)
		return 0;
	rf_aws_ini *ini = p->ini;
	if ((p->section = find_section(ini, name)) >= 0)
		return 0; /* a repeated section continues the first */
	if (ini->nsections == RF_AWS_INI_SECTIONS_MAX)
		return bad(p, "more than 1024 sections");
	char **v = realloc(ini->sections, (size_t)(ini->nsections + 1) * sizeof(*v));
	if (!v)
		return rf_fail(p->err, -ENOMEM, "out of memory reading %.200s", p->shown);
	ini->sections = v;
	if (!(v[ini->nsections] = strdup(name)))
		return rf_fail(p->err, -ENOMEM, "out of memory reading %.200s", p->shown);
	p->section = ini->nsections++;
	return 0;
}

static int add_entry(ini_parse *p, const char *key, const char *value, ini_entry **out)
{
	rf_aws_ini *ini = p->ini;
	if (ini->nentries == RF_AWS_INI_ENTRIES_MAX)
		return bad(p, "more than 8192 settings");
	if (ini->nentries % 64 == 0) {
		ini_entry *v = realloc(ini->entries, (ini->nentries + 64) * sizeof(*v));
		if (!v)
			return rf_fail(p->err, -ENOMEM, "out of memory reading %.200s", p->shown);
		ini->entries = v;
	}
	ini_entry *e = &ini->entries[ini->nentries];
	*e = (ini_entry){.section = p->section};
	e->key = strdup(key);
	e->value = strdup(value);
	e->sub = p->sub ? strdup(p->sub) : NULL;
	if (!e->key || !e->value || (p->sub && !e->sub)) {
		free(e->key);
		wipe_free(e->value);
		free(e->sub);
		return rf_fail(p->err, -ENOMEM, "out of memory reading %.200s", p->shown);
	}
	for (char *c = e->key; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	ini->nentries++;
	*out = e;
	return 0;
}

/* Splits "key = value" (the first '='); false when there is none. */
static bool split_setting(char *line, char **key, char **value)
{
	char *eq = strchr(line, '=');
	if (!eq)
		return false;
	*eq = '\0';
	*key = trim(line);
	*value = trim(eq + 1);
	return true;
}

static int check_key(ini_parse *p, const char *key)
{
	if (!*key || strlen(key) >= NAME_BYTES_MAX)
		return bad(p, "an empty or too long setting name");
	for (const char *c = key; *c; c++)
		if ((unsigned char)*c < 0x20)
			return bad(p, "a control character in a setting name");
	return 0;
}

/* An indented line: a sub-section setting, or a continuation of a value. */
static int indented(ini_parse *p, char *line)
{
	char *key, *value;
	if (p->sub && split_setting(line, &key, &value)) {
		RF_TRY(check_key(p, key));
		ini_entry *e;
		return add_entry(p, key, value, &e);
	}
	if (!p->last || p->sub)
		return bad(p, "an indented line that continues nothing");
	size_t old = strlen(p->last->value), add = strlen(line);
	char *v = realloc(p->last->value, old + add + 2);
	if (!v)
		return rf_fail(p->err, -ENOMEM, "out of memory reading %.200s", p->shown);
	v[old] = '\n';
	memcpy(v + old + 1, line, add + 1);
	p->last->value = v;
	return 0;
}

static int setting(ini_parse *p, char *line)
{
	char *key, *value;
	if (!split_setting(line, &key, &value))
		return bad(p, "a line that is neither a section, a setting nor a comment");
	RF_TRY(check_key(p, key));
	free(p->sub);
	p->sub = NULL;
	ini_entry *e;
	RF_TRY(add_entry(p, key, value, &e));
	p->last = e;
	if (!*value && !(p->sub = strdup(e->key))) /* `s3 =` opens a sub-section */
		return rf_fail(p->err, -ENOMEM, "out of memory reading %.200s", p->shown);
	return 0;
}

static int parse_line(ini_parse *p, char *raw)
{
	bool indent = raw[0] == ' ' || raw[0] == '\t';
	char *line = trim(raw);
	if (!*line || *line == '#' || *line == ';')
		return 0;
	for (const char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 && *c != '\t')
			return bad(p, "a control character");
	if (*line == '[' && !indent)
		return open_section(p, line);
	if (p->skipping)
		return 0;
	if (p->section < 0)
		return bad(p, "a setting before any [section]");
	return indent ? indented(p, line) : setting(p, line);
}

int rf_aws_ini_parse(const char *text, size_t len, rf_aws_ini_kind kind, const char *shown,
                     rf_aws_ini **out, rf_error *err)
{
	*out = NULL;
	ini_parse p = {.kind = kind, .shown = shown, .err = err, .section = -1};
	if (len > RF_AWS_INI_BYTES_MAX)
		return rf_fail(err, -EFBIG, "AWS shared file %.200s is larger than %u bytes", shown,
		               RF_AWS_INI_BYTES_MAX);
	if (memchr(text, '\0', len))
		return rf_fail(err, -EINVAL, "AWS shared file %.200s holds a NUL byte", shown);
	if (!(p.ini = calloc(1, sizeof(*p.ini))))
		return rf_fail(err, -ENOMEM, "out of memory reading %.200s", shown);
	char line[RF_AWS_INI_LINE_BYTES_MAX + 1];
	int rc = 0;
	for (size_t at = 0; at < len && rc == 0;) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
		p.line++;
		if (n > RF_AWS_INI_LINE_BYTES_MAX) {
			rc = bad(&p, "a line longer than 4096 bytes");
			break;
		}
		memcpy(line, text + at, n);
		line[n] = '\0';
		rc = parse_line(&p, line);
		explicit_bzero(line, n);
		at += n + (nl != NULL);
	}
	free(p.sub);
	if (rc < 0) {
		rf_aws_ini_free(p.ini);
		return rc;
	}
	*out = p.ini;
	return 0;
}

int rf_aws_ini_load(const char *path, rf_aws_ini_kind kind, rf_aws_ini **out, rf_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rf_fail(err, -errno, "AWS shared file %.200s: %s", path, strerror(errno));
	struct stat st;
	int rc = 0;
	char *buf = NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		rc = rf_fail(err, -EINVAL, "AWS shared file %.200s is not a regular file", path);
	else if (st.st_size > RF_AWS_INI_BYTES_MAX)
		rc = rf_fail(err, -EFBIG, "AWS shared file %.200s is larger than %u bytes", path,
		             RF_AWS_INI_BYTES_MAX);
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		rc = rf_fail(err, -ENOMEM, "out of memory reading %.200s", path);
	size_t got = 0;
	while (rc == 0 && got < (size_t)st.st_size) { /* bounded by the size checked above */
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shrank while read: parse what is there */
		got += (size_t)n;
	}
	close(fd);
	if (rc == 0)
		rc = rf_aws_ini_parse(buf, got, kind, path, out, err);
	if (buf) {
		explicit_bzero(buf, got);
		free(buf);
	}
	return rc;
}

static const char *lookup(const rf_aws_ini *ini, const char *section, const char *sub,
                          const char *key)
{
	if (!ini)
		return NULL;
	int s = find_section(ini, section);
	if (s < 0)
		return NULL;
	for (size_t i = ini->nentries; i-- > 0;) {
		const ini_entry *e = &ini->entries[i];
		if (e->section != s || strcasecmp(e->key, key) != 0)
			continue;
		if (sub ? e->sub && !strcasecmp(e->sub, sub) : !e->sub)
			return e->value;
	}
	return NULL;
}

const char *rf_aws_ini_get(const rf_aws_ini *ini, const char *section, const char *key)
{
	return lookup(ini, section, NULL, key);
}

const char *rf_aws_ini_get_sub(const rf_aws_ini *ini, const char *section, const char *sub,
                               const char *key)
{
	return lookup(ini, section, sub, key);
}

bool rf_aws_ini_has_section(const rf_aws_ini *ini, const char *section)
{
	return ini && find_section(ini, section) >= 0;
}

/* ------------------------------------------------------ the pair of files */

static int shared_path(const char *env, const char *leaf, char **out, rf_error *err)
{
	const char *v = getenv(env);
	const char *home = getenv("HOME");
	int rc;
	if (v && *v)
		rc = (*out = strdup(v)) ? 0 : -1;
	else if (home && *home)
		rc = asprintf(out, "%s/.aws/%s", home, leaf);
	else
		return (*out = NULL), 0; /* no home: no default file */
	if (rc < 0) {
		*out = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int load_optional(const char *path, rf_aws_ini_kind kind, rf_aws_ini **out, rf_error *err)
{
	*out = NULL;
	if (!path)
		return 0;
	rf_error e2 = {0};
	int rc = rf_aws_ini_load(path, kind, out, &e2);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;
	return rc < 0 ? rf_fail(err, rc, "%s", e2.msg) : 0;
}

int rf_aws_shared_load(const char *profile, rf_aws_shared *out, rf_error *err)
{
	memset(out, 0, sizeof(*out));
	const char *p = profile && *profile ? profile : getenv("AWS_PROFILE");
	int rc = 0;
	if (!(out->profile = strdup(p && *p ? p : "default")))
		rc = rf_fail(err, -ENOMEM, "out of memory");
	if (rc == 0)
		rc = shared_path("AWS_SHARED_CREDENTIALS_FILE", "credentials",
		                 &out->credentials_path, err);
	if (rc == 0)
		rc = shared_path("AWS_CONFIG_FILE", "config", &out->config_path, err);
	if (rc == 0)
		rc = load_optional(out->credentials_path, RF_AWS_INI_CREDENTIALS, &out->credentials,
		                   err);
	if (rc == 0)
		rc = load_optional(out->config_path, RF_AWS_INI_CONFIG, &out->config, err);
	if (rc < 0)
		rf_aws_shared_free(out);
	return rc;
}

void rf_aws_shared_free(rf_aws_shared *s)
{
	rf_aws_ini_free(s->credentials);
	rf_aws_ini_free(s->config);
	free(s->credentials_path);
	free(s->config_path);
	free(s->profile);
	memset(s, 0, sizeof(*s));
}

const char *rf_aws_profile_get(const rf_aws_shared *s, const char *profile, const char *key)
{
	const char *v = rf_aws_ini_get(s->credentials, profile, key);
	return v ? v : rf_aws_ini_get(s->config, profile, key);
}

const char *rf_aws_profile_get_sub(const rf_aws_shared *s, const char *profile, const char *sub,
                                   const char *key)
{
	return rf_aws_ini_get_sub(s->config, profile, sub, key);
}

bool rf_aws_profile_exists(const rf_aws_shared *s, const char *profile)
{
	return rf_aws_ini_has_section(s->credentials, profile) ||
	       rf_aws_ini_has_section(s->config, profile);
}
