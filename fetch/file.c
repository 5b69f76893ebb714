/* file.c - the local file source: size checked at open on a descriptor of
 * the bounded LRU set (fdcache.c; the source owns none), byte ranges read
 * with IORING_OP_READ through the loop (READ_FIXED into registered
 * buffers; with direct_io: O_DIRECT, aligned in place, edges bounced), short
 * reads continued until the range is complete; direct_io auto's memory
 * figure (the option, or physical memory and the cgroup's limit). Errors
 * name the path, the range and the cause. */
#include "fdcache.h"
#include "list.h"
#include "source.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RF_FILE_CHUNK_BYTES  (1u << 30) /* largest single IORING_OP_READ */
#define RF_FILE_MSG_BYTES    600
#define RF_FILE_SPARE_MAX    64u
#define RF_FILE_DIRECT_ALIGN 4096u /* O_DIRECT offsets, lengths and memory */
/* below this the aligned interior is not worth a read of its own: bounced */
#define RF_FILE_DIRECT_MIN_BYTES (64u << 10)
#define RF_FILE_BOUNCE_EDGES     (2 * RF_FILE_DIRECT_ALIGN) /* an in-place read's two edges */

typedef struct rf_file_read rf_file_read;

typedef struct rf_file_source rf_file_source;

/* The kind's per-loader state: the descriptor set; the reads waiting for a
 * descriptor while every one of the set has reads in flight (started, in
 * order, as descriptors are released); the sources whose open completes at
 * the next tick, all from one zero-delay timer (a timer each cost 20 us of
 * kernel time, most of the open phase of 100,000 shards). */
typedef struct rf_file_state {
	rf_loop *loop;
	rf_fdcache *fds;
	rf_list waiting;      /* of rf_file_read (in_wait), oldest first */
	bool kicking;         /* rf_file_kick is running (a finish inside it must not re-enter) */
	rf_open_batch opens;  /* sources whose open completes at the next tick */
	uint32_t direct_io;   /* RF_DIRECT_IO_* */
	uint64_t bytes_total; /* of every file opened: auto turns direct I/O on above memory */
	uint64_t memory_bytes;
	uint64_t direct_bytes;             /* read with O_DIRECT */
	uint64_t fixed_reads, fixed_bytes; /* issued as READ_FIXED (registered destination) */
	uint64_t bounce_allocs;            /* bounce blocks allocated (not taken from spares) */
	uint8_t *bounce_spare[RF_FILE_SPARE_MAX]; /* edge blocks (2 x align) kept for reuse */
	uint32_t bounce_n;
	rf_list
	    spare; /* of rf_file_read: finished reads kept for the next ones (no malloc per read) */
	uint32_t spare_n; /* <= RF_FILE_SPARE_MAX */
} rf_file_state;

struct rf_file_source {
	rf_source base; /* first */
	rf_file_state *st;
	rf_fdcache *fds; /* st->fds */
	rf_fd_slot slot; /* this file's descriptor while open */
	rf_list reads;   /* of rf_file_read (in_source), in flight */
	/* the version seen at open (rf_source_validator) */
	uint64_t dev, ino, mtime_ns, ctime_ns;
};

/* One read of the file into memory: the whole range (page cache), or with
 * O_DIRECT the aligned interior straight into the caller's buffer and the
 * unaligned edges through an aligned bounce buffer (see rf_file_plan). */
typedef struct rf_file_part {
	rf_file_read *r;
	uint8_t *dst;
	uint64_t at;         /* file offset of dst[0] */
	uint64_t want, need; /* bytes asked; bytes that must arrive (the rest is past EOF) */
	uint64_t done;
	int64_t op; /* in flight, or -1 */
} rf_file_part;

#define RF_FILE_PARTS 3

struct rf_file_read {
	rf_list_node in_source; /* the source's reads (or st's spare ones) */
	rf_list_node in_wait;   /* the wait list, while waiting */
	bool waiting;
	rf_file_source *src;
	uint8_t *buf;
	uint64_t offset, len;
	int fd;       /* acquired from the set, or -1 */
	bool direct;  /* fd is O_DIRECT */
	int open_err; /* the descriptor's open failed (msg says why) */
	int64_t op;   /* the timer delivering an open failure, or -1 */
	rf_file_part part[RF_FILE_PARTS];
	uint32_t parts, parts_left;
	uint8_t *bounce; /* aligned; the parts that are not in buf */
	uint64_t bounce_bytes;
	rf_loop_deferred defer; /* closed while bounce reads were in flight */
	rf_fetch_cb cb;
	void *arg;
	char msg[RF_FILE_MSG_BYTES];
};

static bool rf_file_claims(const char *url)
{
	return !strncmp(url, "file://", 7) || !strstr(url, "://");
}

static void rf_file_unlink(rf_file_read *r)
{
	rf_list_remove(&r->src->reads, &r->in_source);
}

static void rf_wait_unlink(rf_file_state *st, rf_file_read *r)
{
	rf_list_remove(&st->waiting, &r->in_wait);
	r->waiting = false;
}

static void rf_wait_push(rf_file_state *st, rf_file_read *r)
{
	r->waiting = true;
	rf_list_push_back(&st->waiting, &r->in_wait);
}

static void rf_file_kick(rf_file_state *st);

/* on: always; auto: once the files opened outgrow memory (the page cache
 * could not hold them, so caching them only costs a copy). */
static bool rf_file_want_direct(const rf_file_state *st)
{
	return st->direct_io == RF_DIRECT_IO_ON ||
	       (st->direct_io == RF_DIRECT_IO_AUTO && st->bytes_total > st->memory_bytes);
}

static void rf_file_read_drop(rf_file_state *st, rf_file_read *r);

static void rf_file_finish(rf_file_read *r, int64_t res)
{
	rf_file_state *st = r->src->st;
	rf_file_unlink(r);
	if (r->waiting)
		rf_wait_unlink(st, r);
	if (r->fd >= 0)
		rf_fdcache_release(r->src->fds, &r->src->slot);
	r->cb(r->arg, res, res < 0 ? r->msg : NULL);
	rf_file_read_drop(st, r);
	rf_file_kick(st);
}

static int rf_file_issue(rf_file_part *p);

/* The bounce parts' bytes into the caller's buffer (direct reads only). */
static void rf_file_unbounce(rf_file_read *r)
{
	uint64_t end = r->offset + r->len;
	for (uint32_t i = 0; i < r->parts; i++) {
		rf_file_part *p = &r->part[i];
		if (p->dst >= r->buf && p->dst < r->buf + r->len)
			continue; /* read in place */
		uint64_t from = RF_MAX(p->at, r->offset), to = RF_MIN(p->at + p->need, end);
		if (from < to)
			memcpy(r->buf + (from - r->offset), p->dst + (from - p->at), to - from);
	}
}

static void rf_file_part_fail(rf_file_part *p, int code, const char *why)
{
	rf_file_read *r = p->r;
	unsigned long long at = (unsigned long long)(p->at + p->done);
	snprintf(r->msg, sizeof(r->msg), "%s: read of bytes [%llu, %llu) failed at %llu: %s",
	         r->src->base.name, (unsigned long long)r->offset,
	         (unsigned long long)(r->offset + r->len), at, why);
	for (uint32_t i = 0; i < r->parts; i++)
		rf_loop_cancel(rf_fetch_loop(r->src->base.fetch), r->part[i].op);
	rf_file_finish(r, code);
}

static void rf_file_on_read(void *arg, int res)
{
	rf_file_part *p = arg;
	rf_file_read *r = p->r;
	p->op = -1;
	if (res < 0) {
		rf_file_part_fail(p, res, strerror(-res));
		return;
	}
	if (res == 0 && p->done < p->need) {
		snprintf(r->msg, sizeof(r->msg),
		         "%s: unexpected end of file at byte %llu while reading [%llu, %llu) "
		         "(the file shrank?)",
		         r->src->base.name, (unsigned long long)(p->at + p->done),
		         (unsigned long long)r->offset, (unsigned long long)(r->offset + r->len));
		for (uint32_t i = 0; i < r->parts; i++)
			rf_loop_cancel(rf_fetch_loop(r->src->base.fetch), r->part[i].op);
		rf_file_finish(r, -EIO);
		return;
	}
	p->done += (uint64_t)res;
	if (p->done < p->need) { /* short read: continue (aligned, for O_DIRECT) */
		bool aligned = ((p->at + p->done) % RF_FILE_DIRECT_ALIGN) == 0;
		int rc = r->direct && !aligned ? -EIO : rf_file_issue(p);
		if (rc < 0)
			rf_file_part_fail(p, rc, "could not continue the read");
		return;
	}
	if (--r->parts_left > 0)
		return;
	if (r->direct)
		rf_file_unbounce(r);
	rf_file_finish(r, (int64_t)r->len);
}

/* READ_FIXED when the destination lies in a registered region (its pages
 * are pinned already), else a plain read. */
static int rf_file_issue(rf_file_part *p)
{
	rf_file_read *r = p->r;
	rf_file_state *st = r->src->st;
	uint64_t left = p->want - p->done;
	uint32_t n = (uint32_t)RF_MIN(left, (uint64_t)RF_FILE_CHUNK_BYTES);
	uint8_t *dst = p->dst + p->done;
	int idx = rf_loop_region_find(st->loop, dst, n);
	int64_t id =
	    idx >= 0 ? rf_loop_read_fixed(st->loop, r->fd, dst, n, p->at + p->done, idx,
	                                  rf_file_on_read, p)
	             : rf_loop_read(st->loop, r->fd, dst, n, p->at + p->done, rf_file_on_read, p);
	if (id < 0)
		return (int)id;
	if (idx >= 0) {
		st->fixed_reads++;
		st->fixed_bytes += n;
	}
	p->op = id;
	return 0;
}

static void rf_file_part_set(rf_file_read *r, uint8_t *dst, uint64_t at, uint64_t want,
                             uint64_t need)
{
	r->part[r->parts++] =
	    (rf_file_part){.r = r, .dst = dst, .at = at, .want = want, .need = need, .op = -1};
}

/* Edge blocks (both edges of an in-place read) come from the spares; other
 * sizes are allocated. r->bounce is set, or -ENOMEM. */
static int rf_file_bounce_get(rf_file_state *st, rf_file_read *r, uint64_t bytes)
{
	r->bounce_bytes = bytes;
	if (bytes == RF_FILE_BOUNCE_EDGES && st->bounce_n > 0) {
		r->bounce = st->bounce_spare[--st->bounce_n];
		return 0;
	}
	if (posix_memalign((void **)&r->bounce, RF_FILE_DIRECT_ALIGN, bytes) != 0) {
		r->bounce = NULL;
		return -ENOMEM;
	}
	st->bounce_allocs++;
	return 0;
}

/* The read's bounce block back (no read into it in flight). */
static void rf_file_bounce_put(rf_file_state *st, rf_file_read *r)
{
	if (r->bounce && r->bounce_bytes == RF_FILE_BOUNCE_EDGES &&
	    st->bounce_n < RF_FILE_SPARE_MAX)
		st->bounce_spare[st->bounce_n++] = r->bounce;
	else
		free(r->bounce);
	r->bounce = NULL;
}

/* How the read goes: one part for the page cache. For O_DIRECT, offsets,
 * lengths and memory must be aligned: when buf and offset agree modulo the
 * alignment, the aligned interior is read in place and each unaligned edge
 * as one aligned block into the bounce buffer; otherwise the enclosing
 * aligned range goes through the bounce buffer (a copy). */
static int rf_file_plan(rf_file_read *r)
{
	const uint64_t a = RF_FILE_DIRECT_ALIGN, size = r->src->base.size;
	uint64_t end = r->offset + r->len;
	r->parts = 0;
	if (!r->direct) {
		rf_file_part_set(r, r->buf, r->offset, r->len, r->len);
		return 0;
	}
	uint64_t lo = r->offset / a * a, hi = (end + a - 1) / a * a;
	uint64_t in_lo = (r->offset + a - 1) / a * a, in_hi = end / a * a;
	bool in_place = ((uintptr_t)r->buf - r->offset) % a == 0 && in_hi > in_lo &&
	                in_hi - in_lo >= RF_FILE_DIRECT_MIN_BYTES;
	bool edges = lo < in_lo || in_hi < end;
	if ((!in_place || edges) &&
	    rf_file_bounce_get(r->src->st, r, in_place ? RF_FILE_BOUNCE_EDGES : hi - lo) < 0)
		return -ENOMEM;
	if (!in_place) {
		rf_file_part_set(r, r->bounce, lo, hi - lo, end - lo);
		return 0;
	}
	if (lo < in_lo)
		rf_file_part_set(r, r->bounce, lo, a, a);
	rf_file_part_set(r, r->buf + (in_lo - r->offset), in_lo, in_hi - in_lo, in_hi - in_lo);
	if (in_hi < end)
		rf_file_part_set(r, r->bounce + a, in_hi, a, RF_MIN(end, size) - in_hi);
	return 0;
}

static int rf_file_issue_all(rf_file_read *r)
{
	int rc = rf_file_plan(r);
	if (rc < 0)
		return rc;
	r->parts_left = r->parts;
	for (uint32_t i = 0; i < r->parts; i++) {
		rc = rf_file_issue(&r->part[i]);
		if (rc < 0) {
			for (uint32_t k = 0; k < i; k++)
				rf_loop_cancel(rf_fetch_loop(r->src->base.fetch), r->part[k].op);
			/* The bounce block stays with r: a cancelled part may still write
			 * it, so rf_file_read_drop keeps it to the loop's drain. */
			return rc;
		}
	}
	if (r->direct)
		r->src->st->direct_bytes += r->len;
	return 0;
}

/* The descriptor could not be opened: the read fails from the loop, with
 * the message, as any other read failure does. */
static void rf_file_on_open_failed(void *arg, int res)
{
	(void)res;
	rf_file_read *r = arg;
	r->op = -1;
	rf_file_finish(r, r->open_err);
}

/* Acquires the descriptor and issues the read. Returns 0, 1 when every
 * descriptor of the set is busy (the read must wait), or -errno (msg set
 * when the open failed: then the failure is delivered from the loop). */
static int rf_file_start(rf_file_read *r)
{
	rf_file_source *fs = r->src;
	bool direct = rf_file_want_direct(fs->st);
	int fd =
	    rf_fdcache_acquire(fs->fds, &fs->slot, fs->base.name, direct, r->msg, sizeof(r->msg));
	if (fd == -EAGAIN)
		return 1;
	if (fd >= 0) {
		r->fd = fd;
		r->direct = fs->slot.direct;
		int rc = rf_file_issue_all(r);
		if (rc < 0) {
			rf_fdcache_release(fs->fds, &fs->slot);
			r->fd = -1;
		}
		return rc;
	}
	r->open_err = fd;
	int64_t id = rf_loop_timer(rf_fetch_loop(fs->base.fetch), 0, rf_file_on_open_failed, r);
	if (id < 0)
		return (int)id;
	r->op = id;
	return 0;
}

/* Starts waiting reads, oldest first, while descriptors are free. */
static void rf_file_kick(rf_file_state *st)
{
	if (st->kicking)
		return;
	st->kicking = true;
	while (!rf_list_empty(&st->waiting)) {
		rf_file_read *r = rf_list_entry(st->waiting.head, rf_file_read, in_wait);
		int rc = rf_file_start(r);
		if (rc == 1)
			break;
		rf_wait_unlink(st, r);
		if (rc < 0) {
			snprintf(r->msg, sizeof(r->msg),
			         "%s: could not start the read of [%llu, %llu): %s",
			         r->src->base.name, (unsigned long long)r->offset,
			         (unsigned long long)(r->offset + r->len), strerror(-rc));
			rf_file_finish(r, rc);
		}
	}
	st->kicking = false;
}

static int rf_file_read_range(rf_source *s, uint64_t offset, uint64_t len, void *buf,
                              rf_fetch_cb cb, void *arg)
{
	rf_file_source *fs = (rf_file_source *)s;
	uint64_t end;
	if (!rf_add_u64(offset, len, &end) || end > s->size || len == 0)
		return -EINVAL;
	rf_file_state *st = fs->st;
	rf_file_read *r = rf_list_entry_or_null(st->spare.head, rf_file_read, in_source);
	if (r) {
		rf_list_remove(&st->spare, &r->in_source);
		st->spare_n--;
	} else if (!(r = malloc(sizeof(*r)))) {
		return -ENOMEM;
	}
	*r = (rf_file_read){
	    .src = fs, .buf = buf, .offset = offset, .len = len, .fd = -1, .cb = cb, .arg = arg};
	int rc = !rf_list_empty(&fs->st->waiting) ? 1 : rf_file_start(r);
	if (rc < 0) {
		rf_file_read_drop(st, r);
		return rc;
	}
	if (rc == 1)
		rf_wait_push(fs->st, r);
	rf_list_push_front(&fs->reads, &r->in_source);
	return 0;
}

static void rf_file_read_free_deferred(rf_loop_deferred *node)
{
	rf_file_read *r = (rf_file_read *)((char *)node - offsetof(rf_file_read, defer));
	free(r->bounce);
	free(r);
}

/* A cancelled read's bounce buffer may still be written by the kernel: it
 * is freed after the loop's drain (the caller's buffers are the caller's). */
static void rf_file_read_drop(rf_file_state *st, rf_file_read *r)
{
	bool inflight = false;
	for (uint32_t i = 0; i < r->parts; i++)
		inflight |= r->part[i].op >= 0;
	if (r->bounce && inflight) {
		rf_loop_defer(st->loop, &r->defer, rf_file_read_free_deferred);
		return;
	}
	rf_file_bounce_put(st, r);
	if (st->spare_n >= RF_FILE_SPARE_MAX) {
		free(r);
		return;
	}
	rf_list_push_front(&st->spare, &r->in_source);
	st->spare_n++;
}

static void rf_file_close(rf_source *s)
{
	rf_file_source *fs = (rf_file_source *)s;
	rf_loop *loop = rf_fetch_loop(s->fetch);
	rf_open_batch_remove(&fs->st->opens, s);
	while (!rf_list_empty(&fs->reads)) {
		rf_file_read *r = rf_list_entry(fs->reads.head, rf_file_read, in_source);
		rf_loop_cancel(loop, r->op);
		for (uint32_t i = 0; i < r->parts; i++)
			rf_loop_cancel(loop, r->part[i].op);
		rf_file_unlink(r);
		if (r->waiting)
			rf_wait_unlink(fs->st, r);
		rf_file_read_drop(fs->st, r);
	}
	if (fs->fds) {
		rf_fdcache_drop(fs->fds, &fs->slot);
		rf_file_kick(fs->st); /* its descriptor is free for a waiting read */
	}
	rf_source_free_base(s);
	free(fs);
}

static uint64_t rf_file_memory_bytes(const rf_source *s)
{
	return sizeof(rf_file_source) + strlen(s->name) + 1;
}

/* Device, inode, size, mtime and ctime: a file rewritten in place or
 * replaced by a rename shows as another version, also when a tool restores
 * its size and mtime over the same inode (cp -p, tar -x, rsync --inplace
 * -t): no tool can set the ctime, any write or chmod moves it. (A chmod or
 * a new link then costs one rescan.) */
static size_t rf_file_validator(const rf_source *s, char *buf, size_t cap)
{
	const rf_file_source *fs = (const rf_file_source *)s;
	int n = snprintf(buf, cap, "file:dev=%llu,ino=%llu,size=%llu,mtime_ns=%llu,ctime_ns=%llu",
	                 (unsigned long long)fs->dev, (unsigned long long)fs->ino,
	                 (unsigned long long)s->size, (unsigned long long)fs->mtime_ns,
	                 (unsigned long long)fs->ctime_ns);
	if (n < 0 || (size_t)n >= cap) {
		if (cap)
			buf[0] = '\0';
		return 0;
	}
	return (size_t)n;
}

static const rf_source_ops rf_file_ops = {.read = rf_file_read_range,
                                          .close = rf_file_close,
                                          .memory_bytes = rf_file_memory_bytes,
                                          .validator = rf_file_validator};

/* The size, checked against the manifest's. The descriptor the check opens
 * stays in the set (idle), so the first read (footer and index) needs no
 * second path lookup; when every descriptor is busy, a stat of the path
 * instead. Reads do not check again: a file changed since shows as a short
 * read or an end of file. */
static int rf_file_stat(rf_file_source *fs, const char *path, uint64_t size_hint, rf_error *err)
{
	struct stat st;
	char msg[RF_FILE_MSG_BYTES];
	int fd = rf_fdcache_acquire(fs->fds, &fs->slot, path, rf_file_want_direct(fs->st), msg,
	                            sizeof(msg));
	if (fd >= 0) {
		int rc = fstat(fd, &st) < 0 ? -errno : 0;
		rf_fdcache_release(fs->fds, &fs->slot);
		if (rc < 0)
			return rf_fail(err, rc, "%s: %s", path, strerror(-rc));
	} else if (fd != -EAGAIN) {
		return rf_fail(err, fd, "%s", msg);
	} else if (stat(path, &st) < 0) {
		return rf_fail(err, -errno, "%s: %s", path, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return rf_fail(err, -EINVAL, "%s: not a regular file (it is %s)", path,
		               rf_file_kind(st.st_mode));
	if (size_hint != UINT64_MAX && size_hint != (uint64_t)st.st_size)
		return rf_fail(err, -EIO, "%s: file is %llu bytes, the manifest says %llu", path,
		               (unsigned long long)st.st_size, (unsigned long long)size_hint);
	fs->base.size = (uint64_t)st.st_size;
	fs->dev = (uint64_t)st.st_dev;
	fs->ino = (uint64_t)st.st_ino;
	fs->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	fs->ctime_ns = (uint64_t)st.st_ctim.tv_sec * 1000000000ull + (uint64_t)st.st_ctim.tv_nsec;
	fs->st->bytes_total += fs->base.size;
	return 0;
}

/* The first number in path, or UINT64_MAX ("max", none, unreadable). */
static uint64_t rf_file_read_limit(const char *path)
{
	unsigned long long v = 0;
	FILE *f = fopen(path, "r");
	bool ok = f && fscanf(f, "%llu", &v) == 1 && v > 0;
	if (f)
		fclose(f);
	return ok ? (uint64_t)v : UINT64_MAX;
}

/* This process's cgroup memory limit: v2 memory.max, or v1's
 * memory.limit_in_bytes; UINT64_MAX where there is none. */
static uint64_t rf_file_cgroup_max(void)
{
	char line[512], path[600];
	uint64_t limit = UINT64_MAX;
	FILE *f = fopen("/proc/self/cgroup", "r");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		const char *rest = strchr(line, ':');
		if (rest && !strncmp(rest, "::", 2))
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", rest + 2);
		else if (rest && !strncmp(rest, ":memory:", 8))
			snprintf(path, sizeof(path),
			         "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", rest + 8);
		else
			continue;
		limit = RF_MIN(limit, rf_file_read_limit(path));
	}
	if (f)
		fclose(f);
	return limit;
}

/* What the page cache could hold for us: physical memory, or the cgroup's
 * limit where it is lower (its page cache is charged to it; v1's "no
 * limit" is a huge number, above any physical memory). */
static uint64_t rf_file_cache_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
	return RF_MIN(phys, rf_file_cgroup_max());
}

static int rf_file_init(rf_fetch *f, void **state, rf_error *err)
{
	rf_file_state *st = calloc(1, sizeof(*st));
	if (!st || rf_fdcache_new(0, &st->fds) < 0) {
		free(st);
		return rf_fail(err, -ENOMEM, "out of memory for the file source");
	}
	st->loop = rf_fetch_loop(f);
	rf_open_batch_init(&st->opens, st->loop);
	st->direct_io = rf_fetch_opts(f)->direct_io;
	st->memory_bytes = rf_fetch_opts(f)->direct_io_memory_bytes;
	if (!st->memory_bytes)
		st->memory_bytes = rf_file_cache_bytes();
	*state = st;
	return 0;
}

static void rf_file_fini(void *state)
{
	rf_file_state *st = state;
	rf_open_batch_fini(&st->opens);
	rf_list_for_each(n, next, &st->spare) free(rf_list_entry(n, rf_file_read, in_source));
	while (st->bounce_n > 0)
		free(st->bounce_spare[--st->bounce_n]);
	rf_fdcache_free(st->fds);
	free(st);
}

static void rf_file_counters(void *state, rf_fetch_counters *out)
{
	rf_file_state *st = state;
	rf_fdcache_counters k;
	rf_fdcache_counters_get(st->fds, &k);
	out->direct_bytes += st->direct_bytes;
	out->direct_refused += k.direct_refused;
	out->fixed_reads += st->fixed_reads;
	out->fixed_bytes += st->fixed_bytes;
	out->bounce_allocs += st->bounce_allocs;
}

static int rf_file_open(rf_fetch *f, void *state, const char *url, uint64_t size_hint,
                        rf_source **out, rf_error *err)
{
	const char *path = !strncmp(url, "file://", 7) ? url + 7 : url;
	rf_file_source *fs = calloc(1, sizeof(*fs));
	if (!fs || rf_source_init_base(&fs->base, &rf_file_ops, f, path) < 0) {
		free(fs);
		return rf_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	fs->st = state;
	fs->fds = fs->st->fds;
	rf_fd_slot_init(&fs->slot);
	int rc = rf_file_stat(fs, path, size_hint, err);
	if (rc == 0) {
		rc = rf_open_batch_push(&fs->st->opens, &fs->base); /* never from inside open */
		if (rc < 0)
			rc = rf_fail(err, rc, "%s: event loop is full", path);
	}
	if (rc < 0) {
		rf_file_close(&fs->base);
		return rc;
	}
	*out = &fs->base;
	return 0;
}

const rf_source_kind rf_source_kind_file = {
    .name = "file",
    .claims = rf_file_claims,
    .init = rf_file_init,
    .fini = rf_file_fini,
    .open = rf_file_open,
    .counters = rf_file_counters,
};
