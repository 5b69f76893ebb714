/* file.c - the local file source: open + fstat at open time, byte ranges read
 * with IORING_OP_READ through the loop, short reads continued until the
 * range is complete. Errors name the path, the range and the cause. */
#include "source.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define RF_FILE_CHUNK_BYTES (1u << 30) /* largest single IORING_OP_READ */
#define RF_FILE_MSG_BYTES   600

typedef struct rf_file_read rf_file_read;
typedef struct rf_file_source {
	rf_source base; /* first */
	int fd;
	int64_t open_timer;
	rf_file_read *reads; /* in flight, doubly linked */
} rf_file_source;

struct rf_file_read {
	rf_file_read *prev, *next;
	rf_file_source *src;
	uint8_t *buf;
	uint64_t offset, len, done;
	int64_t op;
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

static void rf_file_finish(rf_file_read *r, int64_t res)
{
	rf_file_unlink(r);
	r->cb(r->arg, res, res < 0 ? r->msg : NULL);
	free(r);
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
	int64_t id = rf_loop_read(rf_fetch_loop(r->src->base.fetch), r->src->fd, r->buf + r->done,
	                          n, r->offset + r->done, rf_file_on_read, r);
	if (id < 0)
		return (int)id;
	r->op = id;
	return 0;
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
	    .src = fs, .buf = buf, .offset = offset, .len = len, .cb = cb, .arg = arg};
	int rc = rf_file_issue(r);
	if (rc < 0) {
		free(r);
		return rc;
	}
	r->next = fs->reads;
	if (fs->reads)
		fs->reads->prev = r;
	fs->reads = r;
	return 0;
}

static void rf_file_close(rf_source *s)
{
	rf_file_source *fs = (rf_file_source *)s;
	rf_loop *loop = rf_fetch_loop(s->fetch);
	rf_loop_cancel(loop, fs->open_timer);
	while (fs->reads) {
		rf_file_read *r = fs->reads;
		rf_loop_cancel(loop, r->op);
		rf_file_unlink(r);
		free(r);
	}
	if (fs->fd >= 0)
		close(fs->fd);
	rf_source_free_base(s);
	free(fs);
}

static const rf_source_ops rf_file_ops = {.read = rf_file_read_range, .close = rf_file_close};

static void rf_file_on_open_timer(void *arg, int res)
{
	rf_file_source *fs = arg;
	fs->open_timer = -1;
	rf_source_opened(&fs->base, 0, NULL);
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
	fs->open_timer = -1;
	/* a FIFO or device would block open(): refused before it can */
	uint64_t size = 0;
	fs->fd = rf_open_regular(path, "", &size, err);
	int rc = fs->fd < 0 ? fs->fd : 0;
	if (rc == 0 && size_hint != UINT64_MAX && size_hint != size)
		rc = rf_fail(err, -EIO, "%s: file is %llu bytes, the manifest says %llu", path,
		             (unsigned long long)size, (unsigned long long)size_hint);
	if (rc == 0) {
		fs->base.size = size;
		fs->open_timer = rf_loop_timer(rf_fetch_loop(f), 0, rf_file_on_open_timer, fs);
		if (fs->open_timer < 0)
			rc = rf_fail(err, (int)fs->open_timer, "%s: event loop is full", path);
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
    .open = rf_file_open,
};
