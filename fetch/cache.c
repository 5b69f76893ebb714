/* cache.c - the data cache's source wrapper and its write-behind thread
 * (see cache.h for the layout). A read is:
 *
 *   HIT    the range is recorded: a loop read of the .dat file into the
 *          caller's buffer, its CRC-32C checked; a short read or a mismatch
 *          is a miss (counted as a verify failure) and goes on as MISS
 *   MISS   the inner source (the store) reads it; on success the bytes go
 *          to the caller, and a copy (when admitted, see below) to the
 *          writer
 *
 * The writer thread owns every write: pwrite of the range, fdatasync, then
 * the record's entry appended, then the range is put in the object's index.
 * At most RF_CACHE_WRITES_MAX ranges (RF_CACHE_STAGING_MAX bytes, reserved
 * from the loader's budget) wait; when full, or the budget says no, or the
 * disk is below its free floor, the range is simply not cached (counted),
 * never a wait or an error of the read. A write that fails (a full disk, a
 * read-only file system) turns writing off for the loader with one reason.
 *
 * Admission (a stable subset, not LRU): with cache_bytes C and the remote
 * bytes opened so far S, a range is admitted iff hash(URL, offset) / 2^64 <
 * C / S. Under a shuffled order the same ranges are admitted every epoch, so
 * the hit rate approaches C / S instead of LRU's thrash; while the cache
 * holds less than C the fraction only grows as objects are opened. */
#include "cache.h"
#include "crc32c.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define RF_CACHE_INDEX_MAX     (1u << 20)           /* ranges one object's index holds */
#define RF_CACHE_CLAIM_POLL_NS (5ull * 1000000)     /* a waiter looks again every 5 ms */
#define RF_CACHE_CLAIM_WAIT_NS (30ull * 1000000000) /* then it fetches the range itself */

typedef struct rf_cache_slot {
	uint64_t offset_plus1; /* 0: empty */
	uint32_t len;          /* 0: removed (failed its check) */
	uint32_t crc;
} rf_cache_slot;

typedef struct rf_cache_obj {
	rf_cache *c;
	int refs; /* under c->mu: the source and each pending write */
	int dirfd, rec_fd, dat_fd;
	uint64_t size, url_hash;
	uint64_t rec_parsed; /* bytes of the record read so far (loop thread) */
	char rec_name[RF_CACHE_NAME_BYTES], dat_name[RF_CACHE_NAME_BYTES];
	bool others_removed;  /* writer thread: other versions' files gone */
	rf_cache_slot *slots; /* under c->mu: open addressing by offset */
	uint32_t cap, n;
} rf_cache_obj;

typedef struct rf_cache_job {
	rf_cache_obj *obj;
	uint64_t offset;
	uint32_t len, crc;
	uint8_t *bytes;
	int claim_fd;   /* released (closed) once the entry is appended, or -1 */
	uint64_t grown; /* the .dat's blocks the write added, in bytes */
} rf_cache_job;

struct rf_cache {
	uint32_t mode;
	int dirfd;
	uint64_t max_bytes;
	const rf_fetch_options *opt; /* the fetch layer's (mem_reserve) */
	pthread_mutex_t mu;          /* guards everything below and the objects' indexes */
	pthread_cond_t cv;
	pthread_t writer;
	bool writer_started, stop;
	bool started; /* cache_start ran (auto: at the first remote object) */
	rf_cache_job jobs[RF_CACHE_WRITES_MAX]; /* ring */
	uint32_t head, count;
	uint64_t staged_bytes;
	uint64_t used_bytes;   /* on disk (scanned at start, plus what is written) */
	uint64_t opened_bytes; /* remote bytes opened (the admission's denominator) */
	bool write_off;
	bool claims_off;       /* the kernel has no OFD locks: concurrent loaders may fetch twice */
	bool scan_wanted;      /* the writer looks at the directory's size (and evicts) */
	uint64_t since_scan;   /* bytes written since its last look */
	uint64_t last_scan_ns; /* when (monotonic) */
	uint64_t scan_room;    /* the largest range refused for room since: the pass makes it */
	uint64_t last_room;    /* the room the last pass was asked for */
	char off[160];         /* why the cache (or its writing) is off, "" when on */
	rf_fetch_counters n;
};

/* A read this source answered lately: the engine re-reads a unit that
 * failed its check into the same place of the same buffer, soon after. */
#define RF_CACHE_RECENT    16
#define RF_CACHE_REREAD_NS (10ull * 1000000000)
typedef struct rf_cache_recent {
	uint64_t offset, len, done_ns;
	const uint8_t *buf;
} rf_cache_recent;

typedef struct rf_cache_source {
	rf_source base; /* first */
	rf_cache_recent recent[RF_CACHE_RECENT];
	uint32_t recent_next;
	rf_source *inner;
	rf_cache *c;
	rf_cache_obj *obj; /* NULL: not cached (no version, cache off) */
	char *url;         /* clean */
	rf_list reads;
} rf_cache_source;

#define RF_CACHE_PIECES_MAX 32 /* recorded ranges one read may be served from */

typedef struct rf_cache_read rf_cache_read;

typedef struct rf_cache_piece {
	rf_cache_read *r;
	uint64_t offset;
	uint32_t len, crc;
	int64_t op; /* its loop read, or -1 */
	bool bad;
} rf_cache_piece;

struct rf_cache_read {
	rf_list_node in_source;
	rf_cache_source *src;
	uint8_t *buf;
	uint64_t offset, len;
	uint64_t cached_end; /* the recorded chain from offset ends here */
	uint32_t npieces, pending;
	int claim_fd;        /* this read's claim on [cached_end, end) while it fetches, or -1 */
	int64_t timer;       /* waiting for another loader's claim: the next look, or -1 */
	uint64_t wait_until; /* monotonic ns: past it, fetch without waiting */
	bool waited;
	rf_cache_piece pieces[RF_CACHE_PIECES_MAX];
	rf_fetch_cb cb;
	void *arg;
};

/* ------------------------------------------------------------ the index */

static rf_cache_slot *slot_find(rf_cache_obj *o, uint64_t offset)
{
	if (!o->cap)
		return NULL;
	uint32_t mask = o->cap - 1;
	for (uint32_t i = (uint32_t)rf_fnv1a(RF_FNV_OFFSET, &offset, 8) & mask, k = 0; k < o->cap;
	     i = (i + 1) & mask, k++) {
		if (o->slots[i].offset_plus1 == 0 || o->slots[i].offset_plus1 == offset + 1)
			return &o->slots[i];
	}
	return NULL;
}

/* Under mu. Full (RF_CACHE_INDEX_MAX) or out of memory: not indexed. */
static void index_put(rf_cache_obj *o, const rf_cache_entry *e)
{
	if (o->n * 2 >= o->cap) {
		uint32_t cap = o->cap ? o->cap * 2 : 64;
		if (cap > RF_CACHE_INDEX_MAX * 2)
			return;
		rf_cache_slot *old = o->slots, *fresh = calloc(cap, sizeof(*fresh));
		if (!fresh)
			return;
		uint32_t oldcap = o->cap;
		o->slots = fresh;
		o->cap = cap;
		o->n = 0;
		for (uint32_t i = 0; i < oldcap; i++) {
			if (old[i].offset_plus1) {
				*slot_find(o, old[i].offset_plus1 - 1) = old[i];
				o->n++;
			}
		}
		free(old);
	}
	rf_cache_slot *s = slot_find(o, e->offset);
	if (!s)
		return;
	/* A finer range at an offset stays: reads chain ranges, and a coarser
	 * one (a merged read) would split no read that the finer ones serve. */
	if (s->offset_plus1 && s->len > 0 && s->len < e->len)
		return;
	if (!s->offset_plus1)
		o->n++;
	*s = (rf_cache_slot){.offset_plus1 = e->offset + 1, .len = e->len, .crc = e->crc};
}

static void index_put_cb(void *ctx, const rf_cache_entry *e)
{
	index_put(ctx, e);
}

/* Reads what the record gained since the last look (other loaders' writes
 * too) into the index. Loop thread; a local read of a few KiB. */
static void rec_refresh(rf_cache_obj *o)
{
	struct stat st;
	if (fstat(o->rec_fd, &st) < 0 || (uint64_t)st.st_size <= o->rec_parsed ||
	    (uint64_t)st.st_size > RF_CACHE_REC_BYTES_MAX)
		return;
	size_t n = (size_t)((uint64_t)st.st_size - o->rec_parsed);
	uint8_t *p = malloc(n);
	if (!p)
		return;
	ssize_t got = pread(o->rec_fd, p, n, (off_t)o->rec_parsed);
	if (got > 0) {
		uint64_t bad = 0;
		pthread_mutex_lock(&o->c->mu);
		o->rec_parsed +=
		    rf_cache_rec_entries(p, (size_t)got, o->size, index_put_cb, o, &bad);
		pthread_mutex_unlock(&o->c->mu);
	}
	free(p);
}

/* --------------------------------------------------------------- objects */

static void obj_unref(rf_cache_obj *o) /* under mu */
{
	if (--o->refs > 0)
		return;
	if (o->rec_fd >= 0)
		close(o->rec_fd);
	if (o->dat_fd >= 0)
		close(o->dat_fd);
	if (o->dirfd >= 0)
		close(o->dirfd);
	free(o->slots);
	free(o);
}

static int open_at(int dirfd, const char *name, bool rw, bool append)
{
	int flags = (rw ? O_RDWR | O_CREAT : O_RDONLY) | (rw && append ? O_APPEND : 0) |
	            O_NOFOLLOW | O_CLOEXEC;
	return openat(dirfd, name, flags, 0600);
}

/* Opens (or creates, readwrite) the files of (url, validator) and reads the
 * record. NULL when the object cannot be cached (the reason counted). */
static rf_cache_obj *obj_open(rf_cache *c, const char *url, const char *validator, uint64_t size)
{
	char dname[RF_CACHE_NAME_BYTES];
	rf_cache_obj *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	*o = (rf_cache_obj){
	    .c = c, .refs = 1, .dirfd = -1, .rec_fd = -1, .dat_fd = -1, .size = size};
	o->url_hash = rf_fnv1a(RF_FNV_OFFSET, url, strlen(url));
	rf_cache_names(url, validator, dname, o->rec_name, o->dat_name);
	bool rw = c->mode == RF_CACHE_READWRITE && !c->write_off;
	if (rw)
		(void)mkdirat(c->dirfd, dname, 0700);
	o->dirfd = openat(c->dirfd, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (o->dirfd >= 0)
		o->rec_fd = open_at(o->dirfd, o->rec_name, rw, true);
	if (o->rec_fd >= 0)
		o->dat_fd = open_at(o->dirfd, o->dat_name, rw, false);
	struct stat st;
	if (o->dat_fd < 0 || fstat(o->rec_fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (uint64_t)st.st_size > RF_CACHE_REC_BYTES_MAX ||
	    !rf_cache_in_use_mark(o->rec_fd, o->dat_fd))
		goto fail;
	uint8_t hdr[RF_CACHE_REC_HEADER + RF_CACHE_URL_BYTES_MAX + RF_SOURCE_VALIDATOR_BYTES];
	int hlen = rf_cache_rec_header_make(url, validator, size, hdr, sizeof(hdr));
	if (hlen < 0)
		goto fail;
	if (st.st_size == 0) { /* new: the header goes first (appended; a racing twin's is
		                * stepped over as garbage by every reader) */
		if (!rw || write(o->rec_fd, hdr, (size_t)hlen) != hlen)
			goto fail;
		o->rec_parsed = (uint64_t)hlen;
		if (fstat(o->rec_fd, &st) == 0) { /* its block counts against the bound */
			pthread_mutex_lock(&c->mu);
			c->used_bytes += (uint64_t)st.st_blocks * 512;
			pthread_mutex_unlock(&c->mu);
		}
		return o;
	}
	ssize_t got = pread(o->rec_fd, hdr, (size_t)hlen, 0);
	if (got != hlen || rf_cache_rec_header_check(hdr, (size_t)got, url, validator, size) < 0) {
		pthread_mutex_lock(&c->mu);
		c->n.cache_foreign++; /* another object's (a hash collision) or damaged */
		pthread_mutex_unlock(&c->mu);
		goto fail;
	}
	o->rec_parsed = (uint64_t)hlen;
	rec_refresh(o);
	return o;
fail:
	pthread_mutex_lock(&c->mu);
	obj_unref(o);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Removes the files of other versions of the object (writer thread, once
 * per object, before its first entry): only names the cache writes. */
static void remove_other_versions(rf_cache *c, rf_cache_obj *o)
{
	int fd = openat(o->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	uint32_t seen = 0;
	while ((de = readdir(d)) && seen++ < 4096) {
		if (!rf_cache_is_file_name(de->d_name) || !strncmp(de->d_name, o->rec_name, 16))
			continue;
		struct stat st;
		if (fstatat(o->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    unlinkat(o->dirfd, de->d_name, 0) == 0) {
			pthread_mutex_lock(&c->mu);
			c->n.cache_removed_files++;
			c->used_bytes -= RF_MIN(c->used_bytes, (uint64_t)st.st_blocks * 512);
			pthread_mutex_unlock(&c->mu);
		}
	}
	closedir(d);
}

/* ---------------------------------------------------------------- writer */

static void writer_off(rf_cache *c, const char *what, int code) /* under mu */
{
	if (c->write_off)
		return;
	c->write_off = true;
	snprintf(c->off, sizeof(c->off), "data cache writes off: %s: %s", what, strerror(-code));
	fprintf(stderr, "ringfeed: %s (reads go on from the store)\n", c->off);
}

static bool below_floor(int fd, uint64_t len)
{
	struct statvfs v;
	if (fstatvfs(fd, &v) < 0)
		return false;
	uint64_t total = (uint64_t)v.f_blocks * v.f_frsize;
	uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
	return avail < len || avail - len < total / 100 * RF_CACHE_FREE_FLOOR_PCT;
}

static int write_all(int fd, const uint8_t *p, uint64_t len, uint64_t offset)
{
	while (len > 0) {
		ssize_t w = pwrite(fd, p, len, (off_t)offset);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		p += w;
		len -= (uint64_t)w;
		offset += (uint64_t)w;
	}
	return 0;
}

/* One range: bytes, fdatasync, then its entry; returns 0 or -errno. */
static int job_write(rf_cache *c, rf_cache_job *j)
{
	rf_cache_obj *o = j->obj;
	if (!o->others_removed) {
		remove_other_versions(c, o);
		o->others_removed = true;
	}
	if (below_floor(o->dat_fd, j->len))
		return -ENOSPC;
	struct stat before, after, rec_before;
	if (fstat(o->dat_fd, &before) < 0 || fstat(o->rec_fd, &rec_before) < 0)
		return -errno;
	RF_TRY(write_all(o->dat_fd, j->bytes, j->len, j->offset));
	if (fdatasync(o->dat_fd) < 0)
		return -errno;
	j->grown = fstat(o->dat_fd, &after) == 0 && after.st_blocks > before.st_blocks
	               ? (uint64_t)(after.st_blocks - before.st_blocks) * 512
	               : 0;
	rf_cache_entry e = {.offset = j->offset, .len = j->len, .crc = j->crc};
	uint8_t ent[RF_CACHE_ENTRY_BYTES];
	rf_cache_entry_make(&e, ent);
	/* One write of 32 bytes: the record is opened O_APPEND, so entries of
	 * loaders appending at once never land on each other (a torn one, after
	 * a crash or a full disk, is stepped over by readers). */
	errno = 0;
	if (write(o->rec_fd, ent, sizeof(ent)) != (ssize_t)sizeof(ent))
		return errno ? -errno : -ENOSPC;
	if (fstat(o->rec_fd, &after) == 0 && after.st_blocks > rec_before.st_blocks)
		j->grown += (uint64_t)(after.st_blocks - rec_before.st_blocks) * 512;
	pthread_mutex_lock(&c->mu);
	index_put(o, &e);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* The writer's look at the whole directory (every loader's writes): its
 * bytes on disk, and the least recently used versions evicted past the
 * bound (cache_evict.c). Without mu: the loop thread goes on meanwhile. */
static void evict_pass(rf_cache *c)
{
	rf_cache_evicted ev;
	pthread_mutex_lock(&c->mu);
	uint64_t room = c->scan_room;
	c->last_room = RF_MAX(c->last_room, room);
	c->scan_room = 0;
	pthread_mutex_unlock(&c->mu);
	rf_cache_evict(c->dirfd, c->max_bytes, room, &ev);
	pthread_mutex_lock(&c->mu);
	if (!ev.failed)
		c->used_bytes = ev.total;
	c->n.cache_evictions += ev.objects;
	c->n.cache_evicted_bytes += ev.bytes;
	c->since_scan = 0;
	c->last_scan_ns = rf_now_ns();
	pthread_mutex_unlock(&c->mu);
}

static void *writer_main(void *arg)
{
	rf_cache *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (c->count == 0 && !c->stop && !c->scan_wanted)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->scan_wanted && !c->stop) {
			c->scan_wanted = false;
			pthread_mutex_unlock(&c->mu);
			evict_pass(c);
			pthread_mutex_lock(&c->mu);
			continue;
		}
		if (c->count == 0)
			break;
		rf_cache_job j = c->jobs[c->head % RF_CACHE_WRITES_MAX];
		bool off = c->write_off;
		pthread_mutex_unlock(&c->mu);
		int rc = off ? -ECANCELED : job_write(c, &j);
		if (j.claim_fd >= 0)
			close(j.claim_fd); /* after the entry: a waiter now finds the range */
		free(j.bytes);
		if (c->opt && c->opt->mem_release)
			c->opt->mem_release(c->opt->mem_ctx, j.len);
		pthread_mutex_lock(&c->mu);
		c->head++;
		c->count--;
		c->staged_bytes -= j.len;
		if (rc == 0) {
			c->n.cache_written_bytes += j.len;
			c->used_bytes += j.grown;
			c->since_scan += j.grown;
			/* past the bound, or an eighth of it written since the last
			 * look (the other loaders write too) */
			if (c->used_bytes > c->max_bytes || c->since_scan >= c->max_bytes / 8)
				c->scan_wanted = true;
		} else {
			c->n.cache_write_skipped++;
			if (rc != -ECANCELED)
				writer_off(c,
				           rc == -ENOSPC ? "the disk is full (or below 5% free)"
				                         : "a write failed",
				           rc);
		}
		obj_unref(j.obj);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Whether [offset, +len) of o is in the stable admitted subset (see the
 * top) and fits under the bound; when it does not fit, the writer is asked
 * to look at the directory and evict (for a range larger than any it was
 * asked to make room for, else at most once a second). */
static bool admitted(rf_cache *c, const rf_cache_obj *o, uint64_t offset,
                     uint64_t len) /* under mu */
{
	if (c->used_bytes + c->staged_bytes + len > c->max_bytes) {
		uint64_t room = RF_MIN(len, c->max_bytes / 2);
		c->scan_room = RF_MAX(c->scan_room, room);
		if (c->writer_started && !c->scan_wanted &&
		    (room > c->last_room || rf_now_ns() - c->last_scan_ns > 1000000000ull)) {
			c->scan_wanted = true;
			pthread_cond_signal(&c->cv);
		}
		return false;
	}
	if (c->opened_bytes <= c->max_bytes)
		return true;
	uint64_t h = rf_fnv1a(o->url_hash, &offset, sizeof(offset));
	h ^= h >> 29; /* FNV's low bits mix poorly for nearby offsets */
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	double frac = (double)c->max_bytes / (double)c->opened_bytes;
	return (double)(h >> 11) * 0x1p-53 < frac;
}

/* Hands a copy of a range the store delivered to the writer, or counts why
 * not; true when taken. Loop thread; never waits. claim_fd (the read's
 * claim on the range, or -1) goes with the job when taken. */
static bool write_behind_take(rf_cache *c, rf_cache_obj *o, uint64_t offset, const uint8_t *bytes,
                              uint64_t len, int claim_fd)
{
	pthread_mutex_lock(&c->mu);
	bool skip = c->write_off || c->mode != RF_CACHE_READWRITE;
	bool take = !skip && admitted(c, o, offset, len);
	if (!skip && !take)
		c->n.cache_not_admitted++;
	else if (take && (len > RF_CACHE_RANGE_BYTES_MAX || c->count >= RF_CACHE_WRITES_MAX ||
	                  c->staged_bytes + len > RF_CACHE_STAGING_MAX))
		take = false, c->n.cache_write_skipped++;
	pthread_mutex_unlock(&c->mu);
	if (!take)
		return false;
	if (c->opt && c->opt->mem_reserve && c->opt->mem_reserve(c->opt->mem_ctx, len) < 0) {
		pthread_mutex_lock(&c->mu);
		c->n.cache_write_skipped++;
		pthread_mutex_unlock(&c->mu);
		return false;
	}
	uint8_t *copy = malloc(len);
	if (copy)
		memcpy(copy, bytes, len);
	uint32_t crc = copy ? rf_crc32c(0, copy, len) : 0;
	pthread_mutex_lock(&c->mu);
	if (!copy || c->count >= RF_CACHE_WRITES_MAX) {
		c->n.cache_write_skipped++;
		pthread_mutex_unlock(&c->mu);
		free(copy);
		if (c->opt && c->opt->mem_release)
			c->opt->mem_release(c->opt->mem_ctx, len);
		return false;
	}
	o->refs++;
	c->jobs[(c->head + c->count) % RF_CACHE_WRITES_MAX] = (rf_cache_job){.obj = o,
	                                                                     .offset = offset,
	                                                                     .len = (uint32_t)len,
	                                                                     .crc = crc,
	                                                                     .bytes = copy,
	                                                                     .claim_fd = claim_fd};
	c->count++;
	c->staged_bytes += len;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return true;
}

/* As write_behind_take; a claim not taken with the job is released here. */
static void write_behind(rf_cache *c, rf_cache_obj *o, uint64_t offset, const uint8_t *bytes,
                         uint64_t len, int claim_fd)
{
	if (!write_behind_take(c, o, offset, bytes, len, claim_fd) && claim_fd >= 0)
		close(claim_fd);
}

/* ------------------------------------------------------------ the claims */

/* One fetch per range across the host's loaders. A loader that misses
 * [cached_end, end) and would write it claims it first: an OFD write lock
 * (F_OFD_SETLK) on that byte range of the object's .dat, through a
 * descriptor of its own, so two loaders conflict whether they are two
 * processes or two loaders of one; the kernel drops the lock of a loader
 * that dies (nothing stale to reclaim). The claim is released (its fd
 * closed) by the writer after the range's entry is appended, or at once
 * when the range is not written. A loader that finds an overlapping claim
 * waits without blocking its loop: every RF_CACHE_CLAIM_POLL_NS it reads
 * what the record gained; a full chain is a hit, a claim it now gets
 * (the holder finished without writing, or died) is its own fetch, and
 * past RF_CACHE_CLAIM_WAIT_NS it fetches unclaimed (counted). */

/* Whether a miss at offset would be written (so worth a claim). */
static bool claim_wanted(rf_cache *c, const rf_cache_obj *o, uint64_t offset, uint64_t len)
{
	pthread_mutex_lock(&c->mu);
	bool yes = c->mode == RF_CACHE_READWRITE && !c->write_off && !c->claims_off &&
	           len <= RF_CACHE_RANGE_BYTES_MAX && admitted(c, o, offset, len);
	pthread_mutex_unlock(&c->mu);
	return yes;
}

/* The claim's fd, -EAGAIN when another loader holds an overlapping claim,
 * or another -errno (no claim: fetch unclaimed). */
static int claim_try(rf_cache *c, rf_cache_obj *o, uint64_t offset, uint64_t end)
{
	int fd = openat(o->dirfd, o->dat_name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct flock fl = {.l_type = F_WRLCK,
	                   .l_whence = SEEK_SET,
	                   .l_start = (off_t)offset,
	                   .l_len = (off_t)(end - offset)};
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return fd;
	int rc = errno == EAGAIN || errno == EACCES ? -EAGAIN : -errno;
	close(fd);
	if (rc == -EINVAL) { /* a kernel without OFD locks */
		pthread_mutex_lock(&c->mu);
		c->claims_off = true;
		pthread_mutex_unlock(&c->mu);
	}
	return rc;
}

static void claim_release(rf_cache_read *r)
{
	if (r->claim_fd >= 0)
		close(r->claim_fd);
	r->claim_fd = -1;
}

/* ------------------------------------------------------------ the wrapper */

static void read_finish(rf_cache_read *r, int64_t res, const char *msg)
{
	claim_release(r);
	if (res >= 0)
		r->src->recent[r->src->recent_next++ % RF_CACHE_RECENT] = (rf_cache_recent){
		    .offset = r->offset, .len = r->len, .done_ns = rf_now_ns(), .buf = r->buf};
	rf_list_remove(&r->src->reads, &r->in_source);
	rf_fetch_cb cb = r->cb;
	void *arg = r->arg;
	free(r);
	cb(arg, res, msg); /* last: it may close the source */
}

static void on_inner(void *arg, int64_t res, const char *msg)
{
	rf_cache_read *r = arg;
	rf_cache_source *s = r->src;
	if (res >= 0) {
		pthread_mutex_lock(&s->c->mu);
		s->c->n.cache_store_bytes += r->len;
		pthread_mutex_unlock(&s->c->mu);
		uint64_t end = r->offset + r->len;
		if (s->obj && r->cached_end < end) { /* what the record lacks, from its first gap */
			write_behind(s->c, s->obj, r->cached_end,
			             r->buf + (r->cached_end - r->offset), end - r->cached_end,
			             r->claim_fd);
			r->claim_fd = -1; /* the writer's now (or released) */
		}
	}
	read_finish(r, res, msg);
}

static void go_inner(rf_cache_read *r)
{
	r->npieces = r->pending = 0;
	int rc = rf_source_read(r->src->inner, r->offset, r->len, r->buf, on_inner, r);
	if (rc < 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "%s: bytes [%llu, %llu): %s", r->src->base.name,
		         (unsigned long long)r->offset, (unsigned long long)(r->offset + r->len),
		         strerror(-rc));
		read_finish(r, rc, msg);
	}
}

/* Every piece read and checked: the bytes, or (any piece short or failing
 * its CRC) the store for the whole read, counted. */
static void hit_done(rf_cache_read *r)
{
	rf_cache_source *s = r->src;
	bool ok = true;
	pthread_mutex_lock(&s->c->mu);
	for (uint32_t i = 0; i < r->npieces; i++) {
		rf_cache_piece *p = &r->pieces[i];
		if (!p->bad)
			continue;
		ok = false;
		s->c->n.cache_verify_failures++;
		rf_cache_slot *sl = slot_find(s->obj, p->offset);
		if (sl && sl->offset_plus1 && sl->crc == p->crc)
			sl->len = 0; /* refetched and written again */
		r->cached_end = RF_MIN(r->cached_end, p->offset);
	}
	if (ok) {
		s->c->n.cache_hits++;
		s->c->n.cache_hit_bytes += r->len;
	} else {
		s->c->n.cache_misses++;
	}
	pthread_mutex_unlock(&s->c->mu);
	if (ok)
		read_finish(r, (int64_t)r->len, NULL);
	else
		go_inner(r);
}

static void on_piece(void *arg, int res)
{
	rf_cache_piece *p = arg;
	rf_cache_read *r = p->r;
	p->op = -1;
	p->bad = res < 0 || (uint64_t)res != p->len ||
	         rf_crc32c(0, r->buf + (p->offset - r->offset), p->len) != p->crc;
	if (--r->pending == 0)
		hit_done(r);
}

/* The chain of recorded ranges from r->offset (under mu): r->pieces, and
 * r->cached_end where it stops (the read's end: a hit). */
static void chain(rf_cache_source *s, rf_cache_read *r)
{
	uint64_t pos = r->offset, end = r->offset + r->len;
	r->npieces = 0;
	pthread_mutex_lock(&s->c->mu);
	while (pos < end && r->npieces < RF_CACHE_PIECES_MAX) {
		rf_cache_slot *sl = slot_find(s->obj, pos);
		if (!sl || !sl->offset_plus1 || sl->len == 0 || sl->len > end - pos)
			break;
		r->pieces[r->npieces++] = (rf_cache_piece){
		    .r = r, .offset = pos, .len = sl->len, .crc = sl->crc, .op = -1};
		pos += sl->len;
	}
	pthread_mutex_unlock(&s->c->mu);
	r->cached_end = pos;
}

/* Starts a loop read per piece; false (nothing pending) when the loop
 * refused one: the caller reads the store instead. */
static bool hit_start(rf_cache_read *r)
{
	rf_loop *loop = rf_fetch_loop(r->src->base.fetch);
	for (uint32_t i = 0; i < r->npieces; i++) {
		rf_cache_piece *p = &r->pieces[i];
		p->op = rf_loop_read(loop, r->src->obj->dat_fd, r->buf + (p->offset - r->offset),
		                     p->len, p->offset, on_piece, p);
		if (p->op < 0) {
			for (uint32_t k = 0; k < i; k++)
				rf_loop_cancel(loop, r->pieces[k].op);
			r->pending = 0;
			return false;
		}
		r->pending++;
	}
	return true;
}

/* Looks for the whole read in the record (and what other loaders added
 * since): true when it is there and its pieces' reads started. */
static bool look(rf_cache_read *r)
{
	rf_cache_source *s = r->src;
	uint64_t end = r->offset + r->len;
	chain(s, r);
	if (r->cached_end < end) { /* another loader may have written it since */
		rec_refresh(s->obj);
		chain(s, r);
	}
	if (r->cached_end == end && hit_start(r))
		return true;
	r->npieces = 0;
	return false;
}

static void on_claim_timer(void *arg, int res);

/* A miss of r (r->cached_end < its end): claims the gap (then the caller
 * reads the store), or waits for the loader holding an overlapping claim
 * (true: a timer armed), or finds the range written meanwhile (true: a hit
 * started). False: the caller reads the store, claimed or not. */
static bool miss(rf_cache_read *r)
{
	rf_cache_source *s = r->src;
	uint64_t end = r->offset + r->len;
	if (!claim_wanted(s->c, s->obj, r->cached_end, end - r->cached_end))
		return false;
	if (rf_now_ns() >= r->wait_until) {
		pthread_mutex_lock(&s->c->mu);
		s->c->n.cache_claim_timeouts++;
		pthread_mutex_unlock(&s->c->mu);
		return false;
	}
	int fd = claim_try(s->c, s->obj, r->cached_end, end);
	if (fd >= 0) {
		if (look(r)) { /* the holder wrote it between the look and the claim */
			close(fd);
			return true;
		}
		r->claim_fd = fd;
		return false;
	}
	if (fd != -EAGAIN)
		return false;
	r->timer =
	    rf_loop_timer(rf_fetch_loop(s->base.fetch), RF_CACHE_CLAIM_POLL_NS, on_claim_timer, r);
	if (r->timer < 0) {
		r->timer = -1;
		return false;
	}
	if (!r->waited) {
		r->waited = true;
		pthread_mutex_lock(&s->c->mu);
		s->c->n.cache_claim_waits++;
		pthread_mutex_unlock(&s->c->mu);
	}
	return true;
}

static void count_miss(rf_cache *c)
{
	pthread_mutex_lock(&c->mu);
	c->n.cache_misses++;
	pthread_mutex_unlock(&c->mu);
}

/* A waiter's next look (see the claims above). */
static void on_claim_timer(void *arg, int res)
{
	(void)res;
	rf_cache_read *r = arg;
	r->timer = -1;
	if (look(r)) {
		pthread_mutex_lock(&r->src->c->mu);
		r->src->c->n.cache_claim_served++;
		pthread_mutex_unlock(&r->src->c->mu);
		return;
	}
	if (miss(r))
		return;
	count_miss(r->src->c);
	go_inner(r);
}

/* Whether [offset, +len) into buf re-reads part of a read this source
 * answered lately, into the same place of the same buffer: the engine's
 * re-read of a unit that failed its check (a frame's checksum). The cached
 * bytes would be the same: the store answers it instead, the recorded
 * chain of the earlier read is dropped from the index and the unit's bytes
 * are written again (a later entry of an offset replaces an earlier one
 * of its length), so a corruption the store sent once does not stay. */
static bool reread(rf_cache_source *s, uint64_t offset, uint64_t len, const uint8_t *buf)
{
	uint64_t now = rf_now_ns();
	for (uint32_t i = 0; i < RF_CACHE_RECENT; i++) {
		rf_cache_recent *p = &s->recent[i];
		if (!p->buf || now - p->done_ns > RF_CACHE_REREAD_NS || offset < p->offset ||
		    offset + len > p->offset + p->len || buf != p->buf + (offset - p->offset))
			continue;
		pthread_mutex_lock(&s->c->mu);
		s->c->n.cache_rereads++;
		for (uint64_t pos = p->offset, k = 0; pos < p->offset + p->len && k < 64; k++) {
			rf_cache_slot *sl = slot_find(s->obj, pos);
			if (!sl || !sl->offset_plus1 || sl->len == 0)
				break;
			pos += sl->len;
			sl->len = 0;
		}
		pthread_mutex_unlock(&s->c->mu);
		p->buf = NULL;
		return true;
	}
	return false;
}

static int cache_read(rf_source *base, uint64_t offset, uint64_t len, void *buf, rf_fetch_cb cb,
                      void *arg)
{
	rf_cache_source *s = (rf_cache_source *)base;
	uint64_t end;
	if (!rf_add_u64(offset, len, &end) || end > base->size || len == 0 || !buf || !cb)
		return -EINVAL;
	rf_cache_read *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (rf_cache_read){.src = s,
	                     .buf = buf,
	                     .offset = offset,
	                     .len = len,
	                     .cached_end = end,
	                     .claim_fd = -1,
	                     .timer = -1,
	                     .cb = cb,
	                     .arg = arg};
	if (s->obj && reread(s, offset, len, buf)) {
		r->cached_end = offset; /* the whole read is written again */
		count_miss(s->c);
	} else if (s->obj) {
		r->wait_until = rf_now_ns() + RF_CACHE_CLAIM_WAIT_NS;
		if (look(r) || miss(r)) { /* a hit, a wait, or a hit found by the claim */
			rf_list_push_front(&s->reads, &r->in_source);
			return 0;
		}
		count_miss(s->c);
	}
	int rc = rf_source_read(s->inner, offset, len, buf, on_inner, r);
	if (rc < 0) {
		claim_release(r);
		free(r);
		return rc;
	}
	rf_list_push_front(&s->reads, &r->in_source);
	return 0;
}

static void cache_close(rf_source *base)
{
	rf_cache_source *s = (rf_cache_source *)base;
	rf_source_close(s->inner); /* its reads are cancelled: no callbacks after this */
	rf_loop *loop = rf_fetch_loop(base->fetch);
	while (!rf_list_empty(&s->reads)) {
		rf_cache_read *r = rf_list_entry(s->reads.head, rf_cache_read, in_source);
		for (uint32_t i = 0; i < r->npieces; i++)
			if (r->pieces[i].op >= 0)
				rf_loop_cancel(loop, r->pieces[i].op);
		if (r->timer >= 0)
			rf_loop_cancel(loop, r->timer);
		claim_release(r);
		rf_list_remove(&s->reads, &r->in_source);
		free(r);
	}
	if (s->obj) {
		pthread_mutex_lock(&s->c->mu);
		obj_unref(s->obj);
		pthread_mutex_unlock(&s->c->mu);
	}
	free(s->url);
	rf_source_free_base(base);
	free(s);
}

static size_t cache_validator(const rf_source *base, char *buf, size_t cap)
{
	return rf_source_validator(((const rf_cache_source *)base)->inner, buf, cap);
}

static const rf_source_ops rf_cache_ops = {
    .read = cache_read, .close = cache_close, .validator = cache_validator};

static void cache_on_open(void *arg, int64_t res, const char *msg)
{
	rf_cache_source *s = arg;
	if (res >= 0) {
		s->base.size = s->inner->size;
		char v[RF_SOURCE_VALIDATOR_BYTES];
		if (rf_source_validator(s->inner, v, sizeof(v)) > 0 && s->base.size > 0)
			s->obj = obj_open(s->c, s->url, v, s->base.size);
		pthread_mutex_lock(&s->c->mu);
		if (s->obj)
			s->c->opened_bytes += s->base.size;
		else
			s->c->n.cache_unversioned++;
		pthread_mutex_unlock(&s->c->mu);
	}
	rf_source_opened(&s->base, res, msg);
}

static void cache_start(rf_cache *c);

int rf_cache_wrap(rf_fetch *f, rf_cache *c, rf_source *inner, const char *url, rf_source **out,
                  rf_error *err)
{
	*out = NULL;
	if (!c->started)
		cache_start(c);
	if (c->dirfd < 0) { /* auto, and no usable directory: not wrapped */
		*out = inner;
		return 0;
	}
	rf_cache_source *s = calloc(1, sizeof(*s));
	char clean[RF_CACHE_URL_BYTES_MAX];
	if (rf_cache_clean_url(url, clean, sizeof(clean)) < 0)
		clean[0] = '\0'; /* too long: read through, not cached */
	if (!s || rf_source_init_base(&s->base, &rf_cache_ops, f, inner->name) < 0 ||
	    !(s->url = strdup(clean))) {
		if (s)
			rf_source_free_base(&s->base);
		free(s);
		return rf_fail(err, -ENOMEM, "%s: out of memory for the data cache", inner->name);
	}
	s->inner = inner;
	s->c = c;
	s->base.size = inner->size;
	s->base.open_cb = inner->open_cb;
	s->base.open_arg = inner->open_arg;
	inner->open_cb = cache_on_open;
	inner->open_arg = s;
	if (!clean[0]) { /* never cached: the open callback binds nothing */
		free(s->url);
		s->url = strdup("");
	}
	*out = &s->base;
	return 0;
}

/* ------------------------------------------------------------ the layer */

/* The bytes the directory's files take (bounded scan: two levels, the
 * cache's own names only). */
static uint64_t dir_usage(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	uint64_t total = 0;
	uint32_t seen = 0;
	struct dirent *de;
	while ((de = readdir(d)) && seen < 65536) {
		if (!rf_cache_is_dir_name(de->d_name))
			continue;
		int sub =
		    openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
		if (!sd) {
			if (sub >= 0)
				close(sub);
			continue;
		}
		struct dirent *fe;
		while ((fe = readdir(sd)) && seen++ < 65536) {
			struct stat st;
			if (rf_cache_is_file_name(fe->d_name) &&
			    fstatat(sub, fe->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				total += (uint64_t)st.st_blocks * 512;
		}
		closedir(sd);
	}
	closedir(d);
	return total;
}

/* Opens the directory, sums it and starts the writer: at creation for an
 * explicit mode (a directory it cannot use is said on stderr), at the
 * first remote object for auto (the default: a loader of local files
 * makes no directory and no thread; a directory it cannot use turns the
 * cache off quietly, the reason in the stats). Loop thread. */
static void cache_start(rf_cache *c)
{
	bool quiet = c->mode == RF_CACHE_AUTO;
	uint32_t mode = quiet ? RF_CACHE_READWRITE : c->mode;
	rf_error why = {0};
	int fd = rf_cache_dir_open(c->opt->cache_dir, mode, &why);
	pthread_mutex_lock(&c->mu);
	c->started = true;
	if (fd < 0) {
		snprintf(c->off, sizeof(c->off), quiet ? "%.140s (cache=auto)" : "%.159s", why.msg);
		c->mode = RF_CACHE_OFF;
		pthread_mutex_unlock(&c->mu);
		if (!quiet)
			fprintf(stderr, "ringfeed: %s (reads go on from the store)\n", c->off);
		return;
	}
	c->dirfd = fd;
	c->mode = mode;
	pthread_mutex_unlock(&c->mu);
	uint64_t used = dir_usage(fd);
	pthread_mutex_lock(&c->mu);
	c->used_bytes = used;
	c->scan_wanted = used > c->max_bytes; /* a smaller bound than the last job's */
	c->last_scan_ns = rf_now_ns();
	pthread_mutex_unlock(&c->mu);
	if (mode == RF_CACHE_READWRITE) {
		if (pthread_create(&c->writer, NULL, writer_main, c) == 0) {
			c->writer_started = true;
		} else {
			pthread_mutex_lock(&c->mu);
			c->write_off = true;
			snprintf(c->off, sizeof(c->off), "data cache writes off: no writer thread");
			pthread_mutex_unlock(&c->mu);
		}
	}
}

int rf_cache_new(const rf_fetch_options *opt, rf_cache **out)
{
	*out = NULL;
	rf_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->mode = opt->cache_mode;
	c->opt = opt;
	c->max_bytes = opt->cache_bytes ? opt->cache_bytes : RF_CACHE_BYTES_DEFAULT;
	c->dirfd = -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (c->mode != RF_CACHE_AUTO) /* asked for: its directory is checked (and said) now */
		cache_start(c);
	*out = c;
	return 0;
}

bool rf_cache_on(const rf_cache *c)
{
	return c && c->mode != RF_CACHE_OFF && (!c->started || c->dirfd >= 0);
}

void rf_cache_free(rf_cache *c)
{
	if (!c)
		return;
	if (c->writer_started) {
		pthread_mutex_lock(&c->mu);
		c->stop = true; /* the pending writes (bounded) are done first */
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->writer, NULL);
	}
	if (c->dirfd >= 0)
		close(c->dirfd);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void rf_cache_counters_add(rf_cache *c, rf_fetch_counters *out)
{
	pthread_mutex_lock(&c->mu);
	const rf_fetch_counters *n = &c->n;
	out->cache_hits += n->cache_hits;
	out->cache_misses += n->cache_misses;
	out->cache_hit_bytes += n->cache_hit_bytes;
	out->cache_store_bytes += n->cache_store_bytes;
	out->cache_written_bytes += n->cache_written_bytes;
	out->cache_write_skipped += n->cache_write_skipped;
	out->cache_not_admitted += n->cache_not_admitted;
	out->cache_verify_failures += n->cache_verify_failures;
	out->cache_removed_files += n->cache_removed_files;
	out->cache_foreign += n->cache_foreign;
	out->cache_unversioned += n->cache_unversioned;
	out->cache_claim_waits += n->cache_claim_waits;
	out->cache_claim_served += n->cache_claim_served;
	out->cache_claim_timeouts += n->cache_claim_timeouts;
	out->cache_evictions += n->cache_evictions;
	out->cache_evicted_bytes += n->cache_evicted_bytes;
	out->cache_rereads += n->cache_rereads;
	out->cache_used_bytes = c->used_bytes;
	out->cache_admit_fraction =
	    c->opened_bytes <= c->max_bytes ? 1.0 : (double)c->max_bytes / (double)c->opened_bytes;
	snprintf(out->cache_off, sizeof(out->cache_off), "%s", c->off);
	pthread_mutex_unlock(&c->mu);
}

const rf_cache_row rf_data_cache = {.create = rf_cache_new,
                                    .destroy = rf_cache_free,
                                    .on = rf_cache_on,
                                    .wrap = rf_cache_wrap,
                                    .counters_add = rf_cache_counters_add};
