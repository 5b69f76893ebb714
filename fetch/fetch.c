/* fetch.c - the fetch layer's front door: options, the table of source kinds
 * (chosen by URL scheme) and the optional wrapper (fault injection). Every
 * call runs on the loop thread. See source.h for how to add a kind. */
#include "cache.h"
#include "source.h"
#include "store.h"
#include "url.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

/* Source kinds, tried in order. HTTP(S) and S3 add their entries here. */
static const rf_source_kind *const rf_kinds[] = {
    &rf_source_kind_file,
    &rf_source_kind_remote,
};
#define RF_KINDS_MAX 8

/* Object stores behind the remote kind (bucket URLs: credentials, signing,
 * listing), tried in order. A store is one file and a row here (store.h). */
static const rf_store *const rf_stores[] = {
    &rf_store_s3,
    &rf_store_azure,
};

/* The wrapper around every opened source when rf_fetch_options.inject is set
 * (inject.c; NULL would mean: not built in). Named as data, like the kinds:
 * the injector calls this file's helpers, this file calls it only through
 * the row's pointers. */
static const rf_source_wrapper *const rf_wrapper = &rf_source_wrapper_inject;

/* The data cache around remote sources (cache.c), named as data too. */
static const rf_cache_row *const rf_cache_layer = &rf_data_cache;

struct rf_fetch {
	rf_loop *loop;
	rf_fetch_options opt;
	char *strings[12]; /* owned copies of the option strings */
	rf_cache *cache;   /* NULL when cache_mode is off */
	void *state[RF_KINDS_MAX];
	bool ready[RF_KINDS_MAX];
	uint64_t epoch_ns; /* creation time: fault injection stalls count from here */
	uint64_t registered_bytes, register_refused; /* rf_fetch_buffers_register */
	int register_error;
};

void rf_fetch_options_init(rf_fetch_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	opt->connections = 16;
	opt->retries = 5;
	opt->throttle_wait_ms = RF_FETCH_THROTTLE_WAIT_MS_DEFAULT;
	opt->connect_timeout_ms = 10000;
	opt->request_timeout_ms = 60000;
	opt->low_speed_bytes_per_s = 1024;
	opt->low_speed_time_s = 30;
	opt->hedge_floor_ms = 50;
}

int rf_fetch_loop_new(const rf_fetch_options *opt, uint32_t ops_max, rf_loop **out, rf_error *err)
{
	rf_loop_opts lo = {
	    .ops_max = ops_max, .backend = opt->io_backend, .read_threads = opt->io_threads};
	return rf_loop_new_opts(out, &lo, err);
}

static int rf_fetch_copy(rf_fetch *f, const char **field, size_t i)
{
	if (!*field)
		return 0;
	f->strings[i] = strdup(*field);
	if (!f->strings[i])
		return -ENOMEM;
	*field = f->strings[i];
	return 0;
}

int rf_fetch_new(rf_loop *loop, const rf_fetch_options *opt, rf_fetch **out, rf_error *err)
{
	_Static_assert(RF_ARRAY_LEN(rf_kinds) <= RF_KINDS_MAX, "too many source kinds");
	_Static_assert(RF_ARRAY_LEN(rf_stores) <= RF_STORES_MAX, "too many stores");
	*out = NULL;
	rf_fetch *f = calloc(1, sizeof(*f));
	if (!f)
		return rf_fail(err, -ENOMEM, "out of memory for the fetch layer");
	f->loop = loop;
	if (opt)
		f->opt = *opt;
	else
		rf_fetch_options_init(&f->opt);
	const char **fields[] = {&f->opt.ca_file,       &f->opt.s3.endpoint,
	                         &f->opt.s3.region,     &f->opt.s3.access_key,
	                         &f->opt.s3.secret_key, &f->opt.s3.session_token,
	                         &f->opt.s3.addressing, &f->opt.gs.endpoint,
	                         &f->opt.inject,        &f->opt.cache_dir};
	for (size_t i = 0; i < RF_ARRAY_LEN(fields); i++) {
		if (rf_fetch_copy(f, fields[i], i) < 0) {
			rf_fetch_free(f);
			return rf_fail(err, -ENOMEM, "out of memory for fetch options");
		}
	}
	if (f->opt.inject && *f->opt.inject && !rf_wrapper) {
		rf_fetch_free(f);
		return rf_fail(err, -ENOTSUP,
		               "fault injection ('inject') is not built into this library");
	}
	if (f->opt.inject && *f->opt.inject) { /* a bad spec fails here, not at the first open */
		int rc = rf_wrapper->check(f->opt.inject, err);
		if (rc < 0) {
			rf_fetch_free(f);
			return rc;
		}
	}
	if (f->opt.cache_mode != RF_CACHE_OFF && rf_cache_layer->create(&f->opt, &f->cache) < 0) {
		rf_fetch_free(f);
		return rf_fail(err, -ENOMEM, "out of memory for the data cache");
	}
	f->epoch_ns = rf_now_ns();
	*out = f;
	return 0;
}

void rf_fetch_free(rf_fetch *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < RF_ARRAY_LEN(rf_kinds); i++)
		if (f->ready[i] && rf_kinds[i]->fini)
			rf_kinds[i]->fini(f->state[i]);
	rf_cache_layer->destroy(f->cache);
	for (size_t i = 0; i < RF_ARRAY_LEN(f->strings); i++)
		free(f->strings[i]);
	free(f);
}

int rf_fetch_kind_state(rf_fetch *f, const rf_source_kind *kind, void **state, rf_error *err)
{
	for (size_t k = 0; k < RF_ARRAY_LEN(rf_kinds); k++) {
		if (rf_kinds[k] != kind)
			continue;
		if (!f->ready[k] && kind->init)
			RF_TRY(kind->init(f, &f->state[k], err));
		f->ready[k] = true;
		*state = f->state[k];
		return 0;
	}
	return rf_fail(err, -ENOENT, "source kind %s is not built in", kind->name);
}

int rf_fetch_buffers_register(rf_fetch *f, void *base, size_t len)
{
	int rc = rf_loop_region_add(f->loop, base, len);
	if (rc >= 0) {
		f->registered_bytes += len;
		return 0;
	}
	f->register_refused++;
	if (!f->register_error)
		f->register_error = rc;
	return rc;
}

void rf_fetch_buffers_unregister(rf_fetch *f, void *base)
{
	f->registered_bytes -= rf_loop_region_remove(f->loop, base);
}

void rf_fetch_counters_get(const rf_fetch *f, rf_fetch_counters *out)
{
	memset(out, 0, sizeof(*out));
	out->registered_bytes = f->registered_bytes;
	out->register_refused = f->register_refused;
	out->register_error = f->register_error;
	for (size_t k = 0; k < RF_ARRAY_LEN(rf_kinds); k++)
		if (f->ready[k] && rf_kinds[k]->counters)
			rf_kinds[k]->counters(f->state[k], out);
	if (f->cache)
		rf_cache_layer->counters_add(f->cache, out);
}

const rf_store *rf_store_of(const char *url, size_t *row)
{
	for (size_t i = 0; i < RF_ARRAY_LEN(rf_stores); i++) {
		if (rf_stores[i]->claims(url)) {
			if (row)
				*row = i;
			return rf_stores[i];
		}
	}
	return NULL;
}

const rf_store *rf_store_at(size_t row)
{
	return row < RF_ARRAY_LEN(rf_stores) ? rf_stores[row] : NULL;
}

bool rf_store_is_prefix(const char *url)
{
	const rf_store *s = rf_store_of(url, NULL);
	return s && s->is_prefix(url);
}

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

/* "scheme" of "scheme://..." into buf, or "" when url has none. */
static const char *rf_scheme_text(const char *url, char *buf, size_t cap)
{
	const char *p = strstr(url, "://");
	size_t n = p ? (size_t)(p - url) : 0;
	if (n == 0 || n >= cap || strcspn(url, "/") < n)
		n = 0;
	memcpy(buf, url, n);
	buf[n] = '\0';
	return buf;
}

int rf_source_open(rf_fetch *f, const char *url, uint64_t size_hint, rf_source **out,
                   rf_fetch_cb cb, void *arg, rf_error *err)
{
	*out = NULL;
	size_t k = 0;
	while (k < RF_ARRAY_LEN(rf_kinds) && !rf_kinds[k]->claims(url))
		k++;
	if (k == RF_ARRAY_LEN(rf_kinds)) {
		char scheme[32], shown[512];
		rf_url_redact(url, shown, sizeof(shown));
		return rf_fail(err, -EPROTONOSUPPORT, "%s: unsupported URL scheme '%s'", shown,
		               rf_scheme_text(url, scheme, sizeof(scheme)));
	}
	const rf_source_kind *kind = rf_kinds[k];
	if (!f->ready[k] && kind->init) {
		RF_TRY(kind->init(f, &f->state[k], err));
	}
	f->ready[k] = true;
	rf_source *s = NULL;
	RF_TRY(kind->open(f, f->state[k], url, size_hint, &s, err));
	s->open_cb = cb;
	s->open_arg = arg;
	/* Remote objects only: a local dataset is never cached. */
	if (kind != &rf_source_kind_file && rf_cache_layer->on(f->cache)) {
		rf_source *c = NULL;
		int rc = rf_cache_layer->wrap(f, f->cache, s, url, &c, err);
		if (rc < 0) {
			rf_source_close(s);
			return rc;
		}
		s = c;
	}
	if (f->opt.inject && *f->opt.inject && rf_wrapper) {
		rf_source *w = NULL;
		int rc = rf_wrapper->wrap(f, s, f->opt.inject, &w, err);
		if (rc < 0) {
			rf_source_close(s);
			return rc;
		}
		s = w;
	}
	*out = s;
	return 0;
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
