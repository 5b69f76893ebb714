/* drain.c - whole-object reads without decoding (see drain.h). */
#include "drain.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct drain drain;
typedef struct drain_slot {
	drain *d;
	uint8_t *buf;
} drain_slot;

struct drain {
	rf_fetch *fetch;
	const rf_url_list *objs;
	rf_source **src;
	size_t opened, open_next, cursor;
	uint64_t offset; /* next byte of objs[cursor] to ask for */
	uint64_t request_bytes;
	drain_slot *slots;
	uint8_t *mem;    /* every slot's buffer, one page-aligned block */
	bool registered; /* mem is registered with the ring (READ_FIXED) */
	drain_slot **idle;
	uint32_t nidle, nslots, busy;
	int rc;
	rf_error *err;
	rf_drain_report *rep;
};

static void drain_fail(drain *d, int64_t res, const char *msg)
{
	if (d->rc == 0)
		d->rc = rf_fail(d->err, res < 0 ? (int)res : -EIO, "%s", msg ? msg : "read failed");
}

static void on_opened(void *arg, int64_t res, const char *msg)
{
	drain *d = arg;
	d->opened++;
	if (res < 0)
		drain_fail(d, res, msg);
}

static void issue(drain *d);

static void on_read(void *arg, int64_t res, const char *msg)
{
	drain_slot *s = arg;
	drain *d = s->d;
	d->busy--;
	d->idle[d->nidle++] = s;
	if (res < 0)
		return drain_fail(d, res, msg);
	d->rep->bytes += (uint64_t)res;
	d->rep->reads++;
	issue(d);
}

/* Starts reads until every slot is busy or every byte is asked for. */
static void issue(drain *d)
{
	while (d->rc == 0 && d->nidle > 0 && d->cursor < d->objs->n) {
		rf_source *src = d->src[d->cursor];
		uint64_t size = rf_source_size(src);
		if (d->offset >= size) {
			d->cursor++;
			d->offset = 0;
			continue;
		}
		drain_slot *s = d->idle[--d->nidle];
		uint64_t len = RF_MIN(d->request_bytes, size - d->offset);
		int rc = rf_source_read(src, d->offset, len, s->buf, on_read, s);
		if (rc < 0) {
			d->idle[d->nidle++] = s;
			d->rc = rf_fail(d->err, rc, "%s: could not start a read at %llu: %s",
			                rf_source_name(src), (unsigned long long)d->offset,
			                strerror(-rc));
			return;
		}
		d->busy++;
		d->offset += len;
	}
}

static int run_until(drain *d, rf_loop_until_fn done)
{
	int rc = rf_loop_drive(rf_fetch_loop(d->fetch), done, NULL, d);
	return rc < 0 ? rf_fail(d->err, rc, "the event loop failed: %s", strerror(-rc)) : 0;
}

static bool all_opened(void *ctx)
{
	const drain *d = ctx;
	return d->opened == d->open_next;
}

static bool all_read(void *ctx)
{
	const drain *d = ctx;
	return d->busy == 0 && (d->rc < 0 || d->cursor >= d->objs->n);
}

static int drain_setup(drain *d, uint32_t inflight, rf_error *err)
{
	d->src = calloc(d->objs->n ? d->objs->n : 1, sizeof(*d->src));
	d->slots = calloc(inflight, sizeof(*d->slots));
	d->idle = calloc(inflight, sizeof(*d->idle));
	if (!d->src || !d->slots || !d->idle)
		return rf_fail(err, -ENOMEM, "out of memory for %u reads", inflight);
	/* page-aligned, so O_DIRECT (direct_io) reads land in place */
	uint64_t slot_bytes = (d->request_bytes + 4095) / 4096 * 4096;
	if (posix_memalign((void **)&d->mem, 4096, slot_bytes * inflight) != 0)
		return rf_fail(err, -ENOMEM, "out of memory for %u buffers of %llu bytes", inflight,
		               (unsigned long long)d->request_bytes);
	/* Touch the pages now: first-touch faults are not the storage path. */
	memset(d->mem, 0, slot_bytes * inflight);
	for (uint32_t i = 0; i < inflight; i++) {
		d->slots[i] = (drain_slot){.d = d, .buf = d->mem + i * slot_bytes};
		d->idle[d->nidle++] = &d->slots[i];
		d->nslots++;
	}
	/* With direct_io, registered (READ_FIXED); refused: plain reads, counted. */
	if (rf_fetch_opts(d->fetch)->direct_io != RF_DIRECT_IO_OFF &&
	    slot_bytes * inflight <= RF_LOOP_REGION_BYTES_MAX)
		d->registered =
		    rf_fetch_buffers_register(d->fetch, d->mem, slot_bytes * inflight) == 0;
	d->rep->registered_bytes = d->registered ? slot_bytes * inflight : 0;
	return 0;
}

static void drain_teardown(drain *d)
{
	for (size_t i = 0; d->src && i < d->objs->n; i++)
		rf_source_close(d->src[i]);
	/* Closed sources never call back; their buffers are ours again. */
	if (d->registered)
		rf_fetch_buffers_unregister(d->fetch, d->mem);
	free(d->mem);
	free(d->slots);
	free(d->idle);
	free(d->src);
}

int rf_fetch_drain(rf_fetch *f, const rf_url_list *objs, uint64_t request_bytes, uint32_t inflight,
                   rf_drain_report *out, rf_error *err)
{
	memset(out, 0, sizeof(*out));
	if (request_bytes == 0 || request_bytes > (1ull << 30) || inflight == 0 ||
	    inflight > RF_DRAIN_INFLIGHT_MAX)
		return rf_fail(err, -EINVAL, "bad drain settings: %llu bytes x %u reads",
		               (unsigned long long)request_bytes, inflight);
	drain d = {
	    .fetch = f, .objs = objs, .request_bytes = request_bytes, .err = err, .rep = out};
	int rc = drain_setup(&d, inflight, err);
	uint64_t t0 = rf_now_ns();
	for (; rc == 0 && d.open_next < objs->n; d.open_next++)
		rc = rf_source_open(f, objs->v[d.open_next].url, objs->v[d.open_next].size_hint,
		                    &d.src[d.open_next], on_opened, &d, err);
	if (rc == 0)
		rc = run_until(&d, all_opened);
	if (rc == 0 && d.rc == 0) {
		issue(&d);
		rc = run_until(&d, all_read);
	}
	if (rc == 0)
		rc = d.rc;
	out->objects = d.cursor;
	out->seconds = (double)(rf_now_ns() - t0) / 1e9;
	/* Sources whose open failed were never handed out: rf_source_open set
	 * them only on success, and on_opened kept them; close every one. */
	drain_teardown(&d);
	return rc;
}
