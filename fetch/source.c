/* source.c - what every source kind, the cache and the injector call
 * (below the tables in fetch.c and stores.c): the fetch layer's loop and
 * options, waiting for one callback, a source's base fields and ops, and
 * batched opens. It names no kind, store or wrapper. */
#include "source.h"
#include "fetch_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

void rf_fetch_wait_cb(void *arg, int64_t res, const char *msg)
{
	rf_fetch_wait *w = arg;
	w->done = true;
	w->res = res;
	snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "failed");
}

static bool rf_fetch_waited(void *ctx)
{
	return ((rf_fetch_wait *)ctx)->done;
}

int rf_fetch_wait_run(rf_fetch *f, rf_fetch_wait *w)
{
	return rf_loop_drive(f->loop, rf_fetch_waited, NULL, w);
}

rf_loop *rf_fetch_loop(const rf_fetch *f)
{
	return f->loop;
}

const rf_fetch_options *rf_fetch_opts(const rf_fetch *f)
{
	return &f->opt;
}

uint64_t rf_fetch_epoch_ns(const rf_fetch *f)
{
	return f->epoch_ns;
}

void rf_source_opened(rf_source *s, int64_t res, const char *msg)
{
	rf_fetch_cb cb = s->open_cb;
	s->open_cb = NULL;
	if (cb)
		cb(s->open_arg, res, msg);
}

/* ------------------------------------------------------ batched opens */

void rf_open_batch_init(rf_open_batch *b, rf_loop *loop)
{
	*b = (rf_open_batch){.loop = loop, .timer = -1};
}

void rf_open_batch_remove(rf_open_batch *b, rf_source *s)
{
	if (!s->due)
		return;
	rf_list_remove(&b->due, &s->in_due);
	s->due = false;
}

static void rf_open_batch_fire(void *arg, int res);

int rf_open_batch_push(rf_open_batch *b, rf_source *s)
{
	if (b->timer < 0) {
		b->timer = rf_loop_timer(b->loop, 0, rf_open_batch_fire, b);
		if (b->timer < 0)
			return (int)b->timer;
	}
	s->due = true;
	rf_list_push_back(&b->due, &s->in_due);
	return 0;
}

/* Delivers the opens pushed before it fired (a callback may open or close
 * sources; those pushed meanwhile wait for the next timer). */
static void rf_open_batch_fire(void *arg, int res)
{
	(void)res;
	rf_open_batch *b = arg;
	b->timer = -1;
	rf_source *last = rf_list_entry_or_null(b->due.tail, rf_source, in_due);
	bool more = last != NULL;
	while (more && !rf_list_empty(&b->due)) {
		rf_source *s = rf_list_entry(b->due.head, rf_source, in_due);
		more = s != last;
		rf_open_batch_remove(b, s);
		rf_source_opened(s, 0, NULL);
	}
	if (!rf_list_empty(&b->due) && b->timer < 0)
		b->timer = rf_loop_timer(b->loop, 0, rf_open_batch_fire, b);
}

void rf_open_batch_fini(rf_open_batch *b)
{
	rf_loop_cancel(b->loop, b->timer);
	b->timer = -1;
}

int rf_source_init_base(rf_source *s, const rf_source_ops *ops, rf_fetch *f, const char *name)
{
	s->ops = ops;
	s->fetch = f;
	s->size = UINT64_MAX;
	s->name = strdup(name);
	return s->name ? 0 : -ENOMEM;
}

void rf_source_free_base(rf_source *s)
{
	free(s->name);
	s->name = NULL;
}

uint64_t rf_source_size(const rf_source *s)
{
	return s->size;
}

const char *rf_source_name(const rf_source *s)
{
	return s->name;
}

uint64_t rf_source_memory_bytes(const rf_source *s)
{
	if (!s)
		return 0;
	if (s->ops->memory_bytes)
		return s->ops->memory_bytes(s);
	return sizeof(*s) + (s->name ? strlen(s->name) + 1 : 0);
}

size_t rf_source_validator(const rf_source *s, char *buf, size_t cap)
{
	if (cap == 0)
		return 0;
	buf[0] = '\0';
	if (!s || !s->ops->validator)
		return 0;
	size_t n = s->ops->validator(s, buf, cap);
	if (n >= cap || strlen(buf) != n) { /* a kind's mistake is "unknown", never a cut string */
		buf[0] = '\0';
		return 0;
	}
	return n;
}

int rf_source_read(rf_source *s, uint64_t offset, uint64_t len, void *buf, rf_fetch_cb cb,
                   void *arg)
{
	return s->ops->read(s, offset, len, buf, cb, arg);
}

void rf_source_close(rf_source *s)
{
	if (s)
		s->ops->close(s);
}
