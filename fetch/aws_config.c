/* aws_config.c - the AWS shared credentials and config files (see
 * aws_config.h). One streamed pass over the lines (fed in chunks, assembled
 * in a bounded line buffer); the sections not kept are skipped without
 * parsing their lines; every entry kept is one allocation of key and value,
 * in file order so the last of a repeated key wins. */
#include "aws_config.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
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
	const char *const *keep; /* NULL: every section */
	rf_error *err;
	unsigned line;
	int section;                    /* -1: before any section, or a skipped one */
	bool skipping;                  /* inside a section not kept (or that the SDKs ignore) */
	char *sub;                      /* the open sub-section's key, or NULL */
	ini_entry *last;                /* the last top-level entry (continuations) */
	uint64_t fed;                   /* bytes of the file so far */
	size_t len;                     /* of the line in buf */
	bool over;                      /* the line is longer than buf: only its start is in buf */
	char name[NAME_BYTES_MAX + 16]; /* the open section's, for messages */
	char buf[RF_AWS_INI_LINE_BYTES_MAX + 1]; /* the line being read */
} ini_parse;

static int bad(ini_parse *p, const char *what)
{
	const char *file = p->kind == RF_AWS_INI_CONFIG ? "config" : "credentials";
	if (p->section < 0)
		return rf_fail(p->err, -EINVAL, "AWS %s file %.200s line %u: %s", file, p->shown,
		               p->line, what);
	return rf_fail(p->err, -EINVAL, "AWS %s file %.200s line %u (%s%.100s): %s", file, p->shown,
	               p->line, strchr(p->name, ' ') ? "" : "profile ", p->name, what);
}

void rf_aws_ini_free(rf_aws_ini *ini)
{
	if (!ini)
		return;
	for (size_t i = 0; i < ini->nentries; i++) {
		free(ini->entries[i].key);
		free(ini->entries[i].sub);
		rf_secret_free(ini->entries[i].value);
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

static bool kept(const char *const *keep, const char *name)
{
	if (!keep)
		return true;
	for (; *keep; keep++)
		if (!strcmp(*keep, name))
			return true;
	return false;
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
	p->skipping = !name[0] || !kept(p->keep, name);
	p->section = -1;
	if (p->skipping)
		return 0;
	snprintf(p->name, sizeof(p->name), "%s", name);
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
		rf_secret_free(e->value);
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
	if (old + add + 1 > RF_AWS_INI_VALUE_BYTES_MAX) {
		char what[96];
		snprintf(what, sizeof(what),
		         "a value longer than %u bytes (with its continuations)",
		         RF_AWS_INI_VALUE_BYTES_MAX);
		return bad(p, what);
	}
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

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 && *s != '\t')
			return true;
	return false;
}

static int parse_line(ini_parse *p, char *raw)
{
	bool indent = raw[0] == ' ' || raw[0] == '\t';
	char *line = trim(raw);
	if (!*line || *line == '#' || *line == ';')
		return 0;
	if (*line == '[' && !indent)
		return has_control(line) ? bad(p, "a control character") : open_section(p, line);
	if (p->skipping)
		return 0; /* a section not kept: whatever it holds */
	if (has_control(line))
		return bad(p, "a control character");
	if (p->section < 0)
		return bad(p, "a setting before any [section]");
	return indent ? indented(p, line) : setting(p, line);
}

/* A line longer than the buffer: only its start is there. A comment, or a
 * line of a section not kept, is skipped; a section header cannot be (what
 * follows it is unknown): an error, as is a long line of a kept section. */
static int long_line(ini_parse *p)
{
	const char *s = p->buf;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '#' || *s == ';')
		return 0;
	char what[96];
	if (*s == '[' && s == p->buf) {
		snprintf(what, sizeof(what), "a section header longer than %u bytes",
		         RF_AWS_INI_LINE_BYTES_MAX);
		return bad(p, what);
	}
	if (p->skipping)
		return 0;
	snprintf(what, sizeof(what), "a line longer than %u bytes", RF_AWS_INI_LINE_BYTES_MAX);
	return bad(p, what);
}

static int end_line(ini_parse *p)
{
	size_t n = p->len;
	bool over = p->over;
	p->line++;
	p->len = 0;
	p->over = false;
	p->buf[n] = '\0';
	int rc;
	if (over)
		rc = long_line(p);
	else if (memchr(p->buf, '\0', n)) /* a NUL: matters only where a line is read */
		rc = p->skipping && p->buf[0] != '[' ? 0 : bad(p, "a NUL byte");
	else
		rc = parse_line(p, p->buf);
	explicit_bzero(p->buf, n);
	return rc;
}

/* Feeds the next bytes of the file; lines end at '\n'. */
static int feed(ini_parse *p, const char *data, size_t n)
{
	p->fed += n;
	if (p->fed > RF_AWS_INI_BYTES_MAX)
		return rf_fail(p->err, -EFBIG, "AWS shared file %.200s is larger than %u bytes",
		               p->shown, RF_AWS_INI_BYTES_MAX);
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		size_t room = RF_AWS_INI_LINE_BYTES_MAX - p->len;
		if (!p->over) {
			memcpy(p->buf + p->len, data, RF_MIN(take, room));
			p->len += RF_MIN(take, room);
			p->over = take > room;
		}
		if (!nl)
			return 0;
		RF_TRY(end_line(p));
		data += take + 1;
		n -= take + 1;
	}
	return 0;
}

static int parse_begin(ini_parse *p, rf_aws_ini_kind kind, const char *shown,
                       const char *const *keep, rf_error *err)
{
	memset(p, 0, offsetof(ini_parse, buf));
	p->kind = kind;
	p->shown = shown;
	p->keep = keep;
	p->err = err;
	p->section = -1;
	if (!(p->ini = calloc(1, sizeof(*p->ini))))
		return rf_fail(err, -ENOMEM, "out of memory reading %.200s", shown);
	return 0;
}

/* Ends the parse (rc: how the feeding went): *out, or everything freed. */
static int parse_end(ini_parse *p, int rc, rf_aws_ini **out)
{
	if (rc == 0 && (p->len > 0 || p->over)) /* a last line without '\n' */
		rc = end_line(p);
	explicit_bzero(p->buf, sizeof(p->buf));
	free(p->sub);
	p->sub = NULL;
	if (rc < 0) {
		rf_aws_ini_free(p->ini);
		return rc;
	}
	*out = p->ini;
	return 0;
}

int rf_aws_ini_parse_only(const char *text, size_t len, rf_aws_ini_kind kind, const char *shown,
                          const char *const *keep, rf_aws_ini **out, rf_error *err)
{
	*out = NULL;
	if (len > RF_AWS_INI_BYTES_MAX)
		return rf_fail(err, -EFBIG, "AWS shared file %.200s is larger than %u bytes", shown,
		               RF_AWS_INI_BYTES_MAX);
	ini_parse *p = malloc(sizeof(*p)); /* the line buffer: 16 KiB */
	if (!p)
		return rf_fail(err, -ENOMEM, "out of memory reading %.200s", shown);
	int rc = parse_begin(p, kind, shown, keep, err);
	if (rc == 0)
		rc = parse_end(p, feed(p, text, len), out);
	free(p);
	return rc;
}

int rf_aws_ini_parse(const char *text, size_t len, rf_aws_ini_kind kind, const char *shown,
                     rf_aws_ini **out, rf_error *err)
{
	return rf_aws_ini_parse_only(text, len, kind, shown, NULL, out, err);
}

#define LOAD_CHUNK_BYTES 16384

/* Streams fd into the parse: the file is never held whole. */
static int load_fd(ini_parse *p, int fd)
{
	char chunk[LOAD_CHUNK_BYTES];
	int rc = 0;
	for (;;) { /* bounded: feed refuses past RF_AWS_INI_BYTES_MAX */
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = rf_fail(p->err, -errno, "AWS shared file %.200s: %s", p->shown,
			             strerror(errno));
		if (n <= 0)
			break;
		rc = feed(p, chunk, (size_t)n);
		explicit_bzero(chunk, (size_t)n);
		if (rc < 0)
			break;
	}
	return rc;
}

int rf_aws_ini_load(const char *path, rf_aws_ini_kind kind, const char *const *keep,
                    rf_aws_ini **out, rf_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rf_fail(err, -errno, "AWS shared file %.200s: %s", path, strerror(errno));
	struct stat st;
	int rc = 0;
	ini_parse *p = NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		rc = rf_fail(err, -EINVAL, "AWS shared file %.200s is not a regular file", path);
	else if (st.st_size > RF_AWS_INI_BYTES_MAX)
		rc = rf_fail(err, -EFBIG, "AWS shared file %.200s is larger than %u bytes", path,
		             RF_AWS_INI_BYTES_MAX);
	else if (!(p = malloc(sizeof(*p))))
		rc = rf_fail(err, -ENOMEM, "out of memory reading %.200s", path);
	if (rc == 0)
		rc = parse_begin(p, kind, path, keep, err);
	if (rc == 0)
		rc = parse_end(p, load_fd(p, fd), out);
	close(fd);
	free(p);
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

static int load_optional(const char *path, rf_aws_ini_kind kind, const char *const *keep,
                         rf_aws_ini **out, rf_error *err)
{
	*out = NULL;
	if (!path)
		return 0;
	rf_error e2 = {0};
	int rc = rf_aws_ini_load(path, kind, keep, out, &e2);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;
	return rc < 0 ? rf_fail(err, rc, "%s", e2.msg) : 0;
}

static int load_pair(rf_aws_shared *s, const char *const *keep, rf_error *err)
{
	rf_aws_ini_free(s->credentials);
	rf_aws_ini_free(s->config);
	s->credentials = s->config = NULL;
	int rc =
	    load_optional(s->credentials_path, RF_AWS_INI_CREDENTIALS, keep, &s->credentials, err);
	return rc < 0 ? rc
	              : load_optional(s->config_path, RF_AWS_INI_CONFIG, keep, &s->config, err);
}

/* The sections the profile points to (source_profile, services), kept by a
 * second pass: keep[1..] are malloc'd, NULL when there is none. */
static int pointed_to(const rf_aws_shared *s, char *keep[3], rf_error *err)
{
	const char *src = rf_aws_profile_get(s, s->profile, "source_profile");
	const char *svc = rf_aws_profile_get(s, s->profile, "services");
	int n = 1;
	if (src && *src && strcmp(src, s->profile) && !(keep[n++] = strdup(src)))
		return rf_fail(err, -ENOMEM, "out of memory");
	if (svc && *svc && asprintf(&keep[n++], "services %s", svc) < 0) {
		keep[n - 1] = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	return n > 1;
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
	char *keep[4] = {out->profile, NULL, NULL, NULL};
	if (rc == 0)
		rc = load_pair(out, (const char *const *)keep, err);
	if (rc == 0)
		rc = pointed_to(out, keep, err);
	if (rc > 0)
		rc = load_pair(out, (const char *const *)keep, err);
	free(keep[1]);
	free(keep[2]);
	if (rc < 0)
		rf_aws_shared_free(out);
	return rc < 0 ? rc : 0;
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
