/* manifest.c - parses and writes the manifest: a magic first line, then one
 * "PATH<TAB>FILE_BYTES<TAB>RECORDS" line per shard. Parsing works on a
 * buffer (the engine also fetches manifests over HTTP); lines and entries
 * are bounded so a hostile manifest fails clearly instead of exhausting memory. */
#include "manifest.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

RF_API int rf_manifest_is(const void *buf, size_t len)
{
	size_t m = strlen(RF_MANIFEST_MAGIC);
	if (len < m || memcmp(buf, RF_MANIFEST_MAGIC, m) != 0)
		return 0;
	return len == m || ((const char *)buf)[m] == '\n' || ((const char *)buf)[m] == '\r';
}

static int is_url(const char *s)
{
	const char *c = strstr(s, "://");
	if (!c || c == s)
		return 0;
	for (const char *p = s; p < c; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' || *p == '.'))
			return 0;
	return 1;
}

char *rf_manifest_join(const char *base, const char *path)
{
	if (!base || !*base || path[0] == '/' || is_url(path))
		return strdup(path);
	size_t bl = strlen(base);
	while (bl > 1 && base[bl - 1] == '/')
		bl--;
	if (bl == 1 && base[0] == '/')
		bl = 0; /* root: "/" + path */
	char *s = malloc(bl + 1 + strlen(path) + 1);
	if (s)
		sprintf(s, "%.*s/%s", (int)bl, base, path);
	return s;
}

static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	if (n == 0 || n > 20)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (!rf_mul_u64(v, 10, &v) || !rf_add_u64(v, (uint64_t)(s[i] - '0'), &v))
			return -1;
	}
	*out = v;
	return 0;
}

/* One "PATH\tBYTES\tRECORDS" line (without its newline). */
static int parse_line(const char *s, size_t n, const char *base, const char *name, size_t line_no,
                      rf_manifest_entry *e, rf_error *err)
{
	const char *t1 = memchr(s, '\t', n);
	const char *t2 = t1 ? memchr(t1 + 1, '\t', n - (size_t)(t1 + 1 - s)) : NULL;
	const char *end = s + n;
	if (!t1 || !t2 || memchr(t2 + 1, '\t', (size_t)(end - t2 - 1)))
		return rf_fail(err, -EINVAL,
		               "manifest %s: line %zu: expected PATH<TAB>FILE_BYTES<TAB>RECORDS",
		               name, line_no);
	if (t1 == s)
		return rf_fail(err, -EINVAL, "manifest %s: line %zu: empty path", name, line_no);
	for (const char *p = s; p < t1; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return rf_fail(err, -EINVAL,
			               "manifest %s: line %zu: control character in the path", name,
			               line_no);
	if (parse_u64(t1 + 1, (size_t)(t2 - t1 - 1), &e->bytes) < 0 || e->bytes < RF_FOOTER_BYTES)
		return rf_fail(
		    err, -EINVAL, "manifest %s: line %zu: FILE_BYTES '%.*s' is not a number >= %d",
		    name, line_no, (int)RF_MIN(t2 - t1 - 1, 40), t1 + 1, RF_FOOTER_BYTES);
	if (parse_u64(t2 + 1, (size_t)(end - t2 - 1), &e->records) < 0 || e->records > UINT32_MAX)
		return rf_fail(err, -EINVAL,
		               "manifest %s: line %zu: RECORDS '%.*s' is not a number <= %u", name,
		               line_no, (int)RF_MIN(end - t2 - 1, 40), t2 + 1, UINT32_MAX);
	e->line = line_no;
	char *path = strndup(s, (size_t)(t1 - s));
	e->url = path ? rf_manifest_join(base, path) : NULL;
	free(path);
	if (!e->url)
		return rf_fail(err, -ENOMEM, "manifest %s: line %zu: no memory", name, line_no);
	return 0;
}

static int add_entry(rf_manifest *m, size_t *cap, const rf_manifest_entry *e)
{
	uint64_t bytes;
	if (!rf_add_u64(m->bytes, e->bytes, &bytes))
		return -EOVERFLOW; /* a total that wrapped would be a wrong total */
	if (m->count == *cap) {
		size_t n = *cap ? *cap * 2 : 64;
		if (n > RF_MANIFEST_ENTRIES_MAX)
			n = RF_MANIFEST_ENTRIES_MAX;
		rf_manifest_entry *q = realloc(m->entry, n * sizeof(*q));
		if (!q)
			return -ENOMEM;
		m->entry = q;
		*cap = n;
	}
	m->entry[m->count++] = *e;
	m->bytes = bytes;
	m->records += e->records; /* at most 10^6 entries of < 2^32 records: no wrap */
	return 0;
}

/* The line number of the first entry line (not empty, not a comment) past
 * RF_MANIFEST_ENTRIES_MAX, or 0: found before anything is allocated. */
static size_t line_over_limit(const char *buf, size_t len, size_t pos)
{
	size_t n = 0;
	for (size_t line_no = 2; pos < len; line_no++) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - buf) : len;
		if (end > pos && buf[pos] != '#' && !(end == pos + 1 && buf[pos] == '\r') &&
		    ++n > RF_MANIFEST_ENTRIES_MAX)
			return line_no;
		pos = end + 1;
	}
	return 0;
}

/* Walks the lines after the magic one. */
static int parse_lines(const char *buf, size_t len, size_t pos, const char *base, const char *name,
                       rf_manifest *m, rf_error *err)
{
	size_t cap = 0;
	for (size_t line_no = 2; pos < len; line_no++) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		if (n + 1 > RF_MANIFEST_LINE_MAX)
			return rf_fail(err, -EINVAL,
			               "manifest %s: line %zu is longer than %d bytes", name,
			               line_no, RF_MANIFEST_LINE_MAX);
		const char *s = buf + pos;
		pos += n + (nl ? 1 : 0);
		if (n && s[n - 1] == '\r')
			n--;
		if (n == 0 || s[0] == '#')
			continue;
		if (m->count >= RF_MANIFEST_ENTRIES_MAX)
			return rf_fail(
			    err, -E2BIG,
			    "manifest %s: line %zu: more than %d shards (the most a manifest "
			    "may list)",
			    name, line_no, RF_MANIFEST_ENTRIES_MAX);
		rf_manifest_entry e = {0};
		RF_TRY(parse_line(s, n, base, name, line_no, &e, err));
		int rc = add_entry(m, &cap, &e);
		if (rc < 0) {
			free(e.url);
			return rc == -EOVERFLOW
			           ? rf_fail(err, rc,
			                     "manifest %s: line %zu: FILE_BYTES %llu makes the "
			                     "total exceed 2^64-1 bytes",
			                     name, line_no, (unsigned long long)e.bytes)
			           : rf_fail(err, -ENOMEM, "manifest %s: line %zu: no memory", name,
			                     line_no);
		}
	}
	return 0;
}

RF_API int rf_manifest_parse(const char *buf, size_t len, const char *base, const char *name,
                             rf_manifest **out, rf_error *err)
{
	*out = NULL;
	name = name && *name ? name : "(unnamed)";
	if (!rf_manifest_is(buf, len))
		return rf_fail(err, -EINVAL, "manifest %s: line 1: expected '%s'", name,
		               RF_MANIFEST_MAGIC);
	if (memchr(buf, 0, len))
		return rf_fail(err, -EINVAL, "manifest %s: holds a NUL byte (not a text file)",
		               name);
	const char *nl = memchr(buf, '\n', len);
	size_t first = nl ? (size_t)(nl - buf) + 1 : len;
	size_t over = line_over_limit(buf, len, first);
	if (over)
		return rf_fail(err, -E2BIG,
		               "manifest %s: line %zu: more than %d shards (the most a manifest "
		               "may list)",
		               name, over, RF_MANIFEST_ENTRIES_MAX);
	rf_manifest *m = calloc(1, sizeof(*m));
	if (!m)
		return rf_fail(err, -ENOMEM, "manifest %s: no memory", name);
	int rc = parse_lines(buf, len, first, base, name, m, err);
	if (rc < 0) {
		rf_manifest_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

RF_API void rf_manifest_free(rf_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->count; i++)
		free(m->entry[i].url);
	free(m->entry);
	free(m);
}

#define RF_MANIFEST_FILE_MAX (512ull << 20)

static int slurp(const char *path, char **out, size_t *len, rf_error *err)
{
	uint64_t size = 0;
	int fd = rf_open_regular(path, "manifest", &size, err); /* never blocks on a FIFO */
	if (fd < 0)
		return fd;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		return rf_fail(err, -ENOMEM, "manifest %s: no memory", path);
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int rc = buf ? 0 : -ENOMEM;
	while (rc == 0) {
		if (n == cap) {
			char *q = cap >= RF_MANIFEST_FILE_MAX ? NULL : realloc(buf, cap * 2);
			if (!q) {
				rc = cap >= RF_MANIFEST_FILE_MAX ? -EFBIG : -ENOMEM;
				break;
			}
			buf = q;
			cap *= 2;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = -EIO;
	fclose(f);
	if (rc < 0) {
		free(buf);
		return rf_fail(err, rc, "manifest %s: %s", path,
		               rc == -EFBIG ? "larger than 512 MiB" : "cannot read");
	}
	*out = buf;
	*len = n;
	return 0;
}

RF_API int rf_manifest_read_file(const char *path, rf_manifest **out, rf_error *err)
{
	*out = NULL;
	char *buf = NULL;
	size_t len = 0;
	RF_TRY(slurp(path, &buf, &len, err));
	char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	int rc = dir ? rf_manifest_parse(buf, len, slash ? dir : "", path, out, err)
	             : rf_fail(err, -ENOMEM, "manifest %s: no memory", path);
	free(dir);
	free(buf);
	return rc;
}

int rf_manifest_read_file_raw(const char *path, rf_manifest **out, rf_error *err)
{
	*out = NULL;
	char *buf = NULL;
	size_t len = 0;
	RF_TRY(slurp(path, &buf, &len, err));
	int rc = rf_manifest_parse(buf, len, NULL, path, out, err);
	free(buf);
	return rc;
}

RF_API int rf_manifest_write(const char *path, const rf_manifest *m, rf_error *err)
{
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		return rf_fail(err, -ENAMETOOLONG, "manifest %s: path too long", path);
	for (size_t i = 0; i < m->count; i++)
		if (!*m->entry[i].url || strpbrk(m->entry[i].url, "\t\r\n") ||
		    strlen(m->entry[i].url) + 48 > RF_MANIFEST_LINE_MAX)
			return rf_fail(err, -EINVAL,
			               "manifest %s: entry %zu: path '%s' is empty, too "
			               "long, or holds a tab or newline",
			               path, i, m->entry[i].url);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return rf_fail(err, -errno, "manifest %s: cannot create: %s", tmp, strerror(errno));
	fprintf(f, "%s\n", RF_MANIFEST_MAGIC);
	for (size_t i = 0; i < m->count; i++)
		fprintf(f, "%s\t%llu\t%llu\n", m->entry[i].url,
		        (unsigned long long)m->entry[i].bytes,
		        (unsigned long long)m->entry[i].records);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		return rf_fail(err, -e, "manifest %s: write failed: %s", path, strerror(e));
	}
	return 0;
}

/* ------------------------------------------- counting before building */

static void count_line_end(rf_manifest_count *c)
{
	if (!c->skip && c->at_line > 0) {
		if (++c->entries == RF_MANIFEST_ENTRIES_MAX + 1ull)
			c->over_line = c->lines + 1;
		c->entry_bytes += c->at_line;
	}
	c->at_line = 0;
}

void rf_manifest_count_feed(rf_manifest_count *c, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];
		if (ch == '\n') {
			count_line_end(c);
			c->lines++;
			continue;
		}
		if (c->at_line == 0) /* a line's first byte: the magic line, or a comment */
			c->skip = c->lines == 0 || ch == '#' || ch == '\r';
		c->at_line++;
	}
}

void rf_manifest_count_end(rf_manifest_count *c)
{
	count_line_end(c);
}

int rf_manifest_count_file(const char *path, rf_manifest_count *c, rf_error *err)
{
	*c = (rf_manifest_count){0};
	uint64_t size = 0;
	int fd = rf_open_regular(path, "manifest", &size, err); /* never blocks on a FIFO */
	if (fd < 0)
		return fd;
	char buf[1 << 16];
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		rf_manifest_count_feed(c, buf, (size_t)r);
	int e = r < 0 ? errno : 0;
	close(fd);
	if (r < 0)
		return rf_fail(err, -e, "manifest %s: cannot read: %s", path, strerror(e));
	rf_manifest_count_end(c);
	return 0;
}
