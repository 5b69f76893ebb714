/* fetch.c - the fetch layer's front door: options, the table of source kinds
 * (chosen by URL scheme), the optional wrapper (fault injection) and the
 * data cache's row. Every call runs on the loop thread. See source.h for
 * how to add a kind. It names the kinds' rows; they call only source.c
 * (below them), never this file, so references run one way. */
#include "cache.h"
#include "fetch_int.h"
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

/* The wrapper around every opened source when rf_fetch_options.inject is set
 * (inject.c; NULL would mean: not built in). Named as data, like the kinds:
 * the injector calls this file's helpers, this file calls it only through
 * the row's pointers. */
static const rf_source_wrapper *const rf_wrapper = &rf_source_wrapper_inject;

/* The data cache around remote sources (cache.c), named as data too. */
static const rf_cache_row *const rf_cache_layer = &rf_data_cache;

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

void rf_fetch_cache_counters_get(const rf_fetch *f, rf_fetch_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (f->cache)
		rf_cache_layer->counters_add(f->cache, out);
}

void rf_fetch_connections_set(rf_fetch *f, uint32_t per_host)
{
	f->opt.connections = RF_MAX(per_host, 1u);
	for (size_t k = 0; k < RF_ARRAY_LEN(rf_kinds); k++)
		if (f->ready[k] && rf_kinds[k]->connections_set)
			rf_kinds[k]->connections_set(f->state[k], f->opt.connections);
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
