/* icache.c - the index cache (see icache.h): key cleaning and hashing, the
 * entry file (header, key, payload) written by rename and read back as
 * untrusted bytes, and the bounds kept by each put (least recently used
 * entries removed). Only base/ and libc. */
#include "icache.h"
#include "cachedir.h"
#include "crc32c.h"
#include "url.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_MAGIC       "RFICACHE"
#define ENTRY_VERSION     1u
#define HEADER_BYTES      32u /* magic 8, version 4, key 4, payload 8, payload crc 4, crc 4 */
#define TEMP_STALE_NS     (3600ull * 1000000000ull) /* a crashed writer's temporary file */
#define ENTRY_SUFFIX      ".idx"
#define TEMP_PREFIX       ".tmp-"
#define PAYLOAD_BYTES_MAX (1ull << 40) /* no entry claims more, whatever the caller allows */

struct rf_icache {
	int dirfd;
	char *dir;
	uint64_t max_bytes;
	uint32_t max_entries;
	uint64_t temp_seq;
	/* the directory as this process believes it (see the bounds below) */
	bool scanned;
	uint64_t est_entries, est_bytes;
	rf_icache_counters counters;
};

/* ------------------------------------------------------------------ keys */

int rf_icache_clean_url(const char *url, char *out, size_t cap)
{
	return rf_url_clean(url, out, cap);
}

static bool format_ok(const char *f)
{
	size_t n = f ? strlen(f) : 0;
	if (n == 0 || n > RF_ICACHE_FORMAT_BYTES_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((f[i] >= 'a' && f[i] <= 'z') || (f[i] >= 'A' && f[i] <= 'Z') ||
		      (f[i] >= '0' && f[i] <= '9') || f[i] == '-' || f[i] == '_'))
			return false;
	return true;
}

/* The key as stored: length-prefixed strings, so no two keys serialise
 * alike. Returns its length, or -EINVAL when k is not cacheable. */
static int key_serialise(const rf_icache_key *k, char *out, size_t cap)
{
	char url[RF_ICACHE_URL_BYTES_MAX];
	size_t vlen = k->validator ? strlen(k->validator) : 0;
	if (!k->url || vlen == 0 || vlen > RF_ICACHE_VALIDATOR_BYTES_MAX || !format_ok(k->format) ||
	    rf_icache_clean_url(k->url, url, sizeof(url)) < 0)
		return -EINVAL;
	int n = snprintf(out, cap,
	                 "ringfeed-index-cache-key-1 url=%zu:%s size=%llu validator=%zu:%s "
	                 "format=%zu:%s format_version=%u",
	                 strlen(url), url, (unsigned long long)k->size, vlen, k->validator,
	                 strlen(k->format), k->format, k->format_version);
	return n < 0 || (size_t)n >= cap ? -EINVAL : n;
}

bool rf_icache_cacheable(const rf_icache_key *k)
{
	char key[RF_ICACHE_KEY_BYTES_MAX];
	return key_serialise(k, key, sizeof(key)) > 0;
}

static void name_of(const char *key, size_t n, char name[RF_ICACHE_NAME_BYTES])
{
	snprintf(name, RF_ICACHE_NAME_BYTES, "%016llx" ENTRY_SUFFIX,
	         (unsigned long long)rf_fnv1a(RF_FNV_OFFSET, key, n));
}

int rf_icache_entry_name(const rf_icache_key *k, char name[RF_ICACHE_NAME_BYTES])
{
	char key[RF_ICACHE_KEY_BYTES_MAX];
	int n = key_serialise(k, key, sizeof(key));
	if (n < 0)
		return n;
	name_of(key, (size_t)n, name);
	return 0;
}

static bool is_entry_name(const char *s)
{
	if (strlen(s) != RF_ICACHE_NAME_BYTES - 1 || strcmp(s + 16, ENTRY_SUFFIX) != 0)
		return false;
	for (int i = 0; i < 16; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* ------------------------------------------------------------- directory */

int rf_icache_default_dir(char *buf, size_t cap)
{
	return rf_cachedir_default("index", "", buf, cap);
}

int rf_icache_open(const char *dir, uint64_t max_bytes, uint32_t max_entries, rf_icache **out,
                   rf_error *why)
{
	*out = NULL;
	char def[RF_ICACHE_URL_BYTES_MAX];
	if (!dir || !*dir) {
		int rc = rf_icache_default_dir(def, sizeof(def));
		if (rc < 0)
			return rf_fail(
			    why, rc,
			    "index cache disabled: no directory (set RINGFEED_CACHE_DIR, "
			    "XDG_CACHE_HOME or HOME)");
		dir = def;
	}
	int fd = rf_cachedir_open(dir, "index cache disabled", true, true, why);
	if (fd < 0)
		return fd;
	rf_icache *c = calloc(1, sizeof(*c));
	if (!c || !(c->dir = strdup(dir))) {
		free(c);
		close(fd);
		return rf_fail(why, -ENOMEM, "index cache disabled: out of memory");
	}
	c->dirfd = fd;
	c->max_bytes = max_bytes ? max_bytes : RF_ICACHE_BYTES_DEFAULT;
	c->max_entries = max_entries ? RF_MIN(max_entries, (uint32_t)RF_ICACHE_ENTRIES_MAX)
	                             : RF_ICACHE_ENTRIES_DEFAULT;
	*out = c;
	return 0;
}

void rf_icache_close(rf_icache *c)
{
	if (!c)
		return;
	close(c->dirfd);
	free(c->dir);
	free(c);
}

void rf_icache_counters_get(const rf_icache *c, rf_icache_counters *out)
{
	*out = c ? c->counters : (rf_icache_counters){0};
}

/* ---------------------------------------------------------- reading back */

static int read_full(int fd, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* An open entry whose header and key were checked. */
typedef struct entry {
	int fd;
	struct stat st;
	uint64_t payload_bytes;
	uint32_t payload_crc;
	bool damaged; /* not what this cache writes: removed */
} entry;

/* Checks the header and the key of the open entry e against key. */
static int entry_check(entry *e, const char *key, size_t key_len)
{
	uint8_t h[HEADER_BYTES];
	char stored[RF_ICACHE_KEY_BYTES_MAX];
	e->damaged = true;
	if ((uint64_t)e->st.st_size < HEADER_BYTES || read_full(e->fd, h, HEADER_BYTES, 0) < 0 ||
	    memcmp(h, ENTRY_MAGIC, 8) != 0 || rf_load_le32(h + 8) != ENTRY_VERSION)
		return -ENOENT;
	uint32_t stored_len = rf_load_le32(h + 12);
	e->payload_bytes = rf_load_le64(h + 16);
	e->payload_crc = rf_load_le32(h + 24);
	if (stored_len == 0 || stored_len > sizeof(stored) ||
	    e->payload_bytes > PAYLOAD_BYTES_MAX ||
	    (uint64_t)e->st.st_size != HEADER_BYTES + stored_len + e->payload_bytes ||
	    read_full(e->fd, stored, stored_len, HEADER_BYTES) < 0)
		return -ENOENT;
	uint32_t crc = rf_crc32c(rf_crc32c(0, h, 28), stored, stored_len);
	if (crc != rf_load_le32(h + 28))
		return -ENOENT;
	e->damaged = false; /* well formed: another key is a miss, not damage */
	return stored_len == key_len && !memcmp(stored, key, key_len) ? 0 : -ENOENT;
}

/* Removes name if it still is the file e read (another process may have
 * renamed a good entry over it meanwhile). */
static void entry_remove(rf_icache *c, const char *name, const entry *e)
{
	struct stat now;
	if (fstatat(c->dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == e->st.st_ino &&
	    now.st_dev == e->st.st_dev)
		unlinkat(c->dirfd, name, 0);
}

/* Opens k's entry and checks it: 0 with e->fd open; -ENOENT (miss, e->fd
 * closed; a damaged entry removed); -EINVAL when k is not cacheable. */
static int entry_find(rf_icache *c, const rf_icache_key *k, entry *e, char *name)
{
	char key[RF_ICACHE_KEY_BYTES_MAX];
	int n = key_serialise(k, key, sizeof(key));
	*e = (entry){.fd = -1};
	if (!c || n < 0)
		return c ? n : -ENOENT;
	name_of(key, (size_t)n, name);
	e->fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (e->fd < 0)
		return -ENOENT;
	int rc = fstat(e->fd, &e->st) < 0 ? -ENOENT : 0;
	if (rc == 0 && !S_ISREG(e->st.st_mode))
		rc = -ENOENT; /* a FIFO or a device planted under an entry's name */
	else if (rc == 0)
		rc = entry_check(e, key, (size_t)n);
	if (rc < 0) {
		c->counters.corrupt += e->damaged || !S_ISREG(e->st.st_mode);
		if (e->damaged && S_ISREG(e->st.st_mode))
			entry_remove(c, name, e);
		close(e->fd);
		e->fd = -1;
	}
	return rc;
}

int rf_icache_stat(rf_icache *c, const rf_icache_key *k, uint64_t *payload_bytes)
{
	entry e;
	char name[RF_ICACHE_NAME_BYTES];
	int rc = entry_find(c, k, &e, name);
	if (rc < 0)
		return -ENOENT;
	*payload_bytes = e.payload_bytes;
	close(e.fd);
	return 0;
}

int rf_icache_get(rf_icache *c, const rf_icache_key *k, void *buf, uint64_t cap, uint64_t *len)
{
	entry e;
	char name[RF_ICACHE_NAME_BYTES];
	*len = 0;
	if (entry_find(c, k, &e, name) < 0) {
		if (c)
			c->counters.misses++;
		return -ENOENT;
	}
	int rc = 0;
	uint64_t off = (uint64_t)e.st.st_size - e.payload_bytes; /* checked: header + key before */
	if (e.payload_bytes > cap) {
		rc = -EFBIG;
	} else if (read_full(e.fd, buf, e.payload_bytes, off) < 0 ||
	           rf_crc32c(0, buf, e.payload_bytes) != e.payload_crc) {
		c->counters.corrupt++;
		entry_remove(c, name, &e);
		rc = -ENOENT;
	} else {
		futimens(e.fd, NULL); /* recently used: the last to be evicted */
		*len = e.payload_bytes;
	}
	close(e.fd);
	c->counters.hits += rc == 0;
	c->counters.misses += rc != 0;
	return rc;
}

int rf_icache_drop(rf_icache *c, const rf_icache_key *k)
{
	entry e;
	char name[RF_ICACHE_NAME_BYTES];
	if (entry_find(c, k, &e, name) < 0)
		return -ENOENT;
	entry_remove(c, name, &e);
	close(e.fd);
	c->counters.stale_drops++;
	return 0;
}

/* ------------------------------------------------------------- writing */

static int write_full(int fd, const void *buf, uint64_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (uint64_t)n;
	}
	return 0;
}

static void header_make(uint8_t h[HEADER_BYTES], const char *key, uint32_t key_len,
                        const void *payload, uint64_t len)
{
	memcpy(h, ENTRY_MAGIC, 8);
	rf_store_le32(h + 8, ENTRY_VERSION);
	rf_store_le32(h + 12, key_len);
	rf_store_le64(h + 16, len);
	rf_store_le32(h + 24, rf_crc32c(0, payload, len));
	rf_store_le32(h + 28, rf_crc32c(rf_crc32c(0, h, 28), key, key_len));
}

/* Writes the entry to a temporary file of this process, then renames it
 * over name: a reader sees the old entry or the new one, never half. */
static int entry_write(rf_icache *c, const char *name, const char *key, uint32_t key_len,
                       const void *payload, uint64_t len)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), TEMP_PREFIX "%ld-%llu-%.16s", (long)getpid(),
	         (unsigned long long)c->temp_seq++, name);
	int fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	uint8_t h[HEADER_BYTES];
	header_make(h, key, key_len, payload, len);
	int rc = write_full(fd, h, HEADER_BYTES);
	if (rc == 0)
		rc = write_full(fd, key, key_len);
	if (rc == 0)
		rc = write_full(fd, payload, len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(c->dirfd, tmp, c->dirfd, name) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(c->dirfd, tmp, 0);
	return rc;
}

/* ------------------------------------------------------------- bounds
 *
 * Each process keeps an estimate of the directory (entries, bytes), set by
 * a scan and raised by its own puts; only when the estimate passes a bound
 * does a put scan the directory (once, at most RF_ICACHE_SCAN_MAX names) and
 * remove the least recently used entries down to the low water mark (7/8 of
 * each bound), so scans are amortised over the puts between them. Other
 * processes' puts are seen at the next scan. */

typedef struct seen {
	uint64_t hash; /* the entry's name */
	int64_t mtime_ns;
	uint64_t bytes;
} seen;

static int64_t mtime_ns_of(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec;
}

static int seen_cmp(const void *a, const void *b)
{
	const seen *x = a, *y = b;
	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* A crashed writer's temporary file, old enough that no writer owns it. */
static void temp_sweep(rf_icache *c, const char *name, const struct stat *st)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t now_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
	if (S_ISREG(st->st_mode) && now_ns - mtime_ns_of(st) > (int64_t)TEMP_STALE_NS)
		unlinkat(c->dirfd, name, 0);
}

typedef struct scan_out {
	seen *v; /* grown as needed, at most RF_ICACHE_SCAN_MAX */
	size_t n, cap;
	uint64_t bytes;
} scan_out;

static int scan_add(scan_out *o, const char *name, const struct stat *st)
{
	if (o->n == o->cap) {
		size_t cap = RF_MIN(o->cap ? o->cap * 2 : 64, (size_t)RF_ICACHE_SCAN_MAX);
		seen *v = realloc(o->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n++] = (seen){.hash = strtoull(name, NULL, 16),
	                      .mtime_ns = mtime_ns_of(st),
	                      .bytes = (uint64_t)st->st_size};
	o->bytes += (uint64_t)st->st_size;
	return 0;
}

/* The entries of the directory (at most RF_ICACHE_SCAN_MAX names looked
 * at); stale temporary files removed on the way. */
static int scan(rf_icache *c, scan_out *o)
{
	int fd = openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	int rc = 0;
	struct dirent *de;
	for (int looked = 0; rc == 0 && looked < RF_ICACHE_SCAN_MAX && (de = readdir(d));
	     looked++) {
		struct stat st;
		bool named = is_entry_name(de->d_name);
		bool temp = !strncmp(de->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX));
		if ((!named && !temp) ||
		    fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (temp)
			temp_sweep(c, de->d_name, &st);
		else
			rc = scan_add(o, de->d_name, &st);
	}
	closedir(d);
	return rc;
}

/* Removes the least recently used entries until the directory is within
 * the low water marks; sets the estimate from what is left. */
static int enforce_bounds(rf_icache *c)
{
	scan_out o = {0};
	int rc = scan(c, &o);
	if (rc < 0) {
		free(o.v);
		return rc;
	}
	qsort(o.v, o.n, sizeof(*o.v), seen_cmp);
	uint64_t entries_low = c->max_entries - c->max_entries / 8;
	uint64_t bytes_low = c->max_bytes - c->max_bytes / 8;
	uint64_t left = o.n, bytes = o.bytes;
	for (size_t i = 0; i < o.n && (left > entries_low || bytes > bytes_low); i++) {
		char name[RF_ICACHE_NAME_BYTES];
		snprintf(name, sizeof(name), "%016llx" ENTRY_SUFFIX,
		         (unsigned long long)o.v[i].hash);
		if (unlinkat(c->dirfd, name, 0) < 0 && errno != ENOENT)
			continue;
		left--;
		bytes -= o.v[i].bytes;
		c->counters.evictions++;
	}
	free(o.v);
	c->est_entries = left;
	c->est_bytes = bytes;
	c->scanned = true;
	return 0;
}

int rf_icache_put(rf_icache *c, const rf_icache_key *k, const void *payload, uint64_t len)
{
	char key[RF_ICACHE_KEY_BYTES_MAX], name[RF_ICACHE_NAME_BYTES];
	if (!c)
		return -EINVAL;
	int n = key_serialise(k, key, sizeof(key));
	if (n < 0)
		return n;
	if (len > PAYLOAD_BYTES_MAX || HEADER_BYTES + (uint64_t)n + len > c->max_bytes)
		return -EFBIG;
	name_of(key, (size_t)n, name);
	RF_TRY(entry_write(c, name, key, (uint32_t)n, payload, len));
	c->counters.puts++;
	c->est_entries++;
	c->est_bytes += HEADER_BYTES + (uint64_t)n + len;
	if (c->scanned && c->est_entries <= c->max_entries && c->est_bytes <= c->max_bytes)
		return 0;
	return enforce_bounds(c);
}
