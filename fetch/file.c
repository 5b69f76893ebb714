/* file.c - the local file source: stat at open time (no descriptor kept),
 * byte ranges read with IORING_OP_READ through the loop on a descriptor from
 * the bounded LRU set (fdcache.c), short reads continued until the range is
 * complete. Errors name the path, the range and the cause. */
#include "fdcache.h"
#include "source.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RF_FILE_CHUNK_BYTES (1u << 30) /* largest single IORING_OP_READ */
#define RF_FILE_MSG_BYTES   600

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
	rf_file_read *wait_head, *wait_tail;
	bool kicking; /* rf_file_kick is running (a finish inside it must not re-enter) */
	rf_file_source *opened_head, *opened_tail;
	int64_t opened_timer; /* armed while the list is not empty */
} rf_file_state;

struct rf_file_source {
	rf_source base; /* first */
	rf_file_state *st;
	rf_fdcache *fds; /* st->fds */
	rf_fd_slot slot; /* this file's descriptor while open */
	bool opening;    /* in st's opened list */
	rf_file_source *oprev, *onext;
	rf_file_read *reads; /* in flight, doubly linked */
};

struct rf_file_read {
	rf_file_read *prev, *next;   /* the source's reads */
	rf_file_read *wprev, *wnext; /* the wait list, while waiting */
	bool waiting;
	rf_file_source *src;
	uint8_t *buf;
	uint64_t offset, len, done;
	int fd;       /* acquired from the set, or -1 */
	int open_err; /* the descriptor's open failed (msg says why) */
	int64_t op;   /* the read in flight, the timer delivering an open failure, or -1 */
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
	rf_file_source *fs = r->src;
	if (r->prev)
		r->prev->next = r->next;
	else
		fs->reads = r->next;
	if (r->next)
		r->next->prev = r->prev;
}

static void rf_wait_unlink(rf_file_state *st, rf_file_read *r)
{
	if (r->wprev)
		r->wprev->wnext = r->wnext;
	else
		st->wait_head = r->wnext;
	if (r->wnext)
		r->wnext->wprev = r->wprev;
	else
		st->wait_tail = r->wprev;
	r->wprev = r->wnext = NULL;
	r->waiting = false;
}

static void rf_wait_push(rf_file_state *st, rf_file_read *r)
{
	r->waiting = true;
	r->wnext = NULL;
	r->wprev = st->wait_tail;
	if (st->wait_tail)
		st->wait_tail->wnext = r;
	else
		st->wait_head = r;
	st->wait_tail = r;
}

static void rf_file_kick(rf_file_state *st);

static void rf_file_finish(rf_file_read *r, int64_t res)
{
	rf_file_state *st = r->src->st;
	rf_file_unlink(r);
	if (r->waiting)
		rf_wait_unlink(st, r);
	if (r->fd >= 0)
		rf_fdcache_release(r->src->fds, &r->src->slot);
	r->cb(r->arg, res, res < 0 ? r->msg : NULL);
	free(r);
	rf_file_kick(st);
}

static int rf_file_issue(rf_file_read *r);

static void rf_file_on_read(void *arg, int res)
{
	rf_file_read *r = arg;
	r->op = -1;
	const char *path = r->src->base.name;
	unsigned long long at = (unsigned long long)(r->offset + r->done);
	unsigned long long end = (unsigned long long)(r->offset + r->len);
	if (res < 0) {
		snprintf(r->msg, sizeof(r->msg),
		         "%s: read of bytes [%llu, %llu) failed at %llu: %s", path,
		         (unsigned long long)r->offset, end, at, strerror(-res));
		rf_file_finish(r, res);
		return;
	}
	if (res == 0) {
		snprintf(r->msg, sizeof(r->msg),
		         "%s: unexpected end of file at byte %llu while reading [%llu, %llu) "
		         "(the file shrank?)",
		         path, at, (unsigned long long)r->offset, end);
		rf_file_finish(r, -EIO);
		return;
	}
	r->done += (uint64_t)res;
	if (r->done >= r->len) {
		rf_file_finish(r, (int64_t)r->len);
		return;
	}
	int rc = rf_file_issue(r); /* short read: continue */
	if (rc < 0) {
		snprintf(r->msg, sizeof(r->msg), "%s: could not continue read at %llu: %s", path,
		         (unsigned long long)(r->offset + r->done), strerror(-rc));
		rf_file_finish(r, rc);
	}
}

static int rf_file_issue(rf_file_read *r)
{
	uint64_t left = r->len - r->done;
	uint32_t n = (uint32_t)RF_MIN(left, (uint64_t)RF_FILE_CHUNK_BYTES);
	int64_t id = rf_loop_read(rf_fetch_loop(r->src->base.fetch), r->fd, r->buf + r->done, n,
	                          r->offset + r->done, rf_file_on_read, r);
	if (id < 0)
		return (int)id;
	r->op = id;
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
	int fd = rf_fdcache_acquire(fs->fds, &fs->slot, fs->base.name, r->msg, sizeof(r->msg));
	if (fd == -EAGAIN)
		return 1;
	if (fd >= 0) {
		r->fd = fd;
		int rc = rf_file_issue(r);
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
	while (st->wait_head) {
		rf_file_read *r = st->wait_head;
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
	rf_file_read *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (rf_file_read){
	    .src = fs, .buf = buf, .offset = offset, .len = len, .fd = -1, .cb = cb, .arg = arg};
	int rc = fs->st->wait_head ? 1 : rf_file_start(r);
	if (rc < 0) {
		free(r);
		return rc;
	}
	if (rc == 1)
		rf_wait_push(fs->st, r);
	r->next = fs->reads;
	if (fs->reads)
		fs->reads->prev = r;
	fs->reads = r;
	return 0;
}

static void rf_file_opened_unlink(rf_file_source *fs);

static void rf_file_close(rf_source *s)
{
	rf_file_source *fs = (rf_file_source *)s;
	rf_loop *loop = rf_fetch_loop(s->fetch);
	rf_file_opened_unlink(fs);
	while (fs->reads) {
		rf_file_read *r = fs->reads;
		rf_loop_cancel(loop, r->op);
		rf_file_unlink(r);
		if (r->waiting)
			rf_wait_unlink(fs->st, r);
		free(r);
	}
	if (fs->fds) {
		rf_fdcache_drop(fs->fds, &fs->slot);
		rf_file_kick(fs->st); /* its descriptor is free for a waiting read */
	}
	rf_source_free_base(s);
	free(fs);
}

static const rf_source_ops rf_file_ops = {.read = rf_file_read_range, .close = rf_file_close};

static void rf_file_opened_unlink(rf_file_source *fs)
{
	rf_file_state *st = fs->st;
	if (!fs->opening)
		return;
	if (fs->oprev)
		fs->oprev->onext = fs->onext;
	else
		st->opened_head = fs->onext;
	if (fs->onext)
		fs->onext->oprev = fs->oprev;
	else
		st->opened_tail = fs->oprev;
	fs->oprev = fs->onext = NULL;
	fs->opening = false;
}

static void rf_file_on_opened_timer(void *arg, int res);

/* The open completes at the next tick (never from inside rf_source_open). */
static int rf_file_opened_push(rf_file_source *fs)
{
	rf_file_state *st = fs->st;
	if (st->opened_timer < 0) {
		st->opened_timer = rf_loop_timer(st->loop, 0, rf_file_on_opened_timer, st);
		if (st->opened_timer < 0)
			return (int)st->opened_timer;
	}
	fs->opening = true;
	fs->onext = NULL;
	fs->oprev = st->opened_tail;
	if (st->opened_tail)
		st->opened_tail->onext = fs;
	else
		st->opened_head = fs;
	st->opened_tail = fs;
	return 0;
}

/* Delivers the opens queued before it fired (a callback may open or close
 * sources; those opened meanwhile wait for the next timer). */
static void rf_file_on_opened_timer(void *arg, int res)
{
	(void)res;
	rf_file_state *st = arg;
	st->opened_timer = -1;
	rf_file_source *last = st->opened_tail;
	bool more = last != NULL;
	while (more && st->opened_head) {
		rf_file_source *fs = st->opened_head;
		more = fs != last;
		rf_file_opened_unlink(fs);
		rf_source_opened(&fs->base, 0, NULL);
	}
	if (st->opened_head && st->opened_timer < 0)
		st->opened_timer = rf_loop_timer(st->loop, 0, rf_file_on_opened_timer, st);
}

/* The size, checked against the manifest's, from the path: no descriptor
 * is kept (reads open one through the set, and do not check again: a file
 * changed since shows as a short read or an end of file). */
static int rf_file_stat(rf_file_source *fs, const char *path, uint64_t size_hint, rf_error *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return rf_fail(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return rf_fail(err, -EINVAL, "%s: not a regular file", path);
	if (size_hint != UINT64_MAX && size_hint != (uint64_t)st.st_size)
		return rf_fail(err, -EIO, "%s: file is %llu bytes, the manifest says %llu", path,
		               (unsigned long long)st.st_size, (unsigned long long)size_hint);
	fs->base.size = (uint64_t)st.st_size;
	return 0;
}

static int rf_file_init(rf_fetch *f, void **state, rf_error *err)
{
	rf_file_state *st = calloc(1, sizeof(*st));
	if (!st || rf_fdcache_new(0, &st->fds) < 0) {
		free(st);
		return rf_fail(err, -ENOMEM, "out of memory for the file source");
	}
	st->loop = rf_fetch_loop(f);
	st->opened_timer = -1;
	*state = st;
	return 0;
}

static void rf_file_fini(void *state)
{
	rf_file_state *st = state;
	rf_loop_cancel(st->loop, st->opened_timer);
	rf_fdcache_free(st->fds);
	free(st);
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
		rc = rf_file_opened_push(fs);
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
};
