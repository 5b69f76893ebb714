/* remote_ops.c - dataset URL expansion (brace ranges, store prefix
 * listings) and one request waited for on a private loop (rf_remote_peek,
 * rf_remote_get, rf_fetch_list): they make and drive a fetch layer
 * (fetch.c), whose table names the remote kind (remote.c), so they sit
 * above both. */
#include "remote_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ expansion */

/* Lists a store prefix through its store, on f's loop. */
static int list_prefix(rf_fetch *f, remote_state *st, const char *url, const rf_list_filter *filter,
                       rf_url_list *out, rf_error *err)
{
	const rf_store *store = NULL;
	void *state = NULL, *l = NULL;
	RF_TRY(rf_remote_store(st, url, &store, &state, err));
	RF_TRY(store->credentials(state, url, err));
	rf_fetch_wait w = {0};
	RF_TRY(store->list_start(state, url, st->list_page, filter, out, rf_fetch_wait_cb, &w, &l,
	                         err));
	/* bounded: every request has a deadline and bounded retries */
	int rc = rf_fetch_wait_run(f, &w);
	if (rc < 0) {
		store->list_cancel(l);
		char shown[512];
		rf_url_redact(url, shown, sizeof(shown));
		return rf_fail(err, rc, "listing %s: the event loop failed", shown);
	}
	if (w.res < 0)
		return rf_fail(err, (int)w.res, "%s", w.msg);
	if (w.res == 0) {
		char shown[512];
		rf_url_redact(url, shown, sizeof(shown));
		return rf_fail(err, -ENOENT, "no %s objects under %s", filter->what, shown);
	}
	return 0;
}

int rf_url_expand(rf_fetch *f, const char *const *names, size_t n, const rf_list_filter *filter,
                  rf_url_list *out, rf_error *err)
{
	rf_url_list all = {0};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = rf_brace_expand(names[i], &all, err);
	void *state = NULL;
	for (size_t i = 0; i < all.n && rc == 0; i++) {
		if (!rf_store_is_prefix(all.v[i].url)) {
			rc = rf_url_list_add(out, all.v[i].url, RF_SIZE_UNKNOWN, err);
			continue;
		}
		if (!state)
			rc = rf_fetch_kind_state(f, &rf_source_kind_remote, &state, err);
		if (rc == 0)
			rc = list_prefix(f, state, all.v[i].url, filter, out, err);
	}
	rf_url_list_free(&all);
	return rc;
}

/* ------------------------------------------------- one request, waited for */

typedef struct one_request {
	rf_http_request req;
	char *target, *bucket;
} one_request;

/* Runs one request on f's loop until its callback ran. */
static int run_one(rf_fetch *f, const char *url, one_request *o, rf_fetch_wait *w, rf_error *err)
{
	void *state = NULL;
	RF_TRY(rf_fetch_kind_state(f, &rf_source_kind_remote, &state, err));
	remote_state *st = state;
	char shown[RF_URL_BYTES_MAX];
	rf_url_redact(url, shown, sizeof(shown));
	o->req.name = shown;
	rf_store_target t;
	int rc = rf_remote_target(st, url, &t, err);
	o->target = t.url;
	o->bucket = t.bucket;
	o->req.auth = t.auth;
	o->req.scope = t.scope;
	RF_TRY(rc);
	o->req.url = o->target;
	o->req.bucket = o->bucket;
	rf_http_xfer *x = NULL;
	RF_TRY(rf_http_start(st->http, &o->req, rf_fetch_wait_cb, w, &x, err));
	/* bounded: the request has a deadline and bounded retries */
	rc = rf_fetch_wait_run(f, w);
	if (rc < 0) {
		rf_http_cancel(st->http, x);
		return rf_fail(err, rc, "%s: the event loop failed", shown);
	}
	return w->res < 0 ? rf_fail(err, (int)w->res, "%s", w->msg) : 0;
}

/* A private loop and fetch layer around run_one. */
static int one_request_run(const rf_fetch_options *opt, const char *url, one_request *o,
                           int64_t *res, rf_error *err)
{
	rf_loop *loop = NULL;
	rf_fetch *f = NULL;
	rf_fetch_wait w = {0};
	RF_TRY(rf_fetch_loop_new(opt, 0, &loop, err));
	int rc = rf_fetch_new(loop, opt, &f, err);
	if (rc == 0)
		rc = run_one(f, url, o, &w, err);
	*res = w.res;
	rf_fetch_free(f);
	rf_loop_free(loop);
	free(o->target);
	free(o->bucket);
	return rc;
}

int rf_remote_peek(const rf_fetch_options *opt, const char *url, uint64_t *size, void *head,
                   size_t cap, size_t *head_len, rf_error *err)
{
	one_request o = {.req = {.kind = RF_HTTP_HEAD}};
	int64_t res = 0;
	*head_len = 0;
	RF_TRY(one_request_run(opt, url, &o, &res, err));
	*size = (uint64_t)res;
	if (cap == 0 || *size == 0)
		return 0;
	one_request r = {.req = {.kind = RF_HTTP_RANGE,
	                         .offset = 0,
	                         .len = RF_MIN((uint64_t)cap, *size),
	                         .buf = head,
	                         .object_size = *size}};
	RF_TRY(one_request_run(opt, url, &r, &res, err));
	*head_len = (size_t)res;
	return 0;
}

int rf_remote_get(const rf_fetch_options *opt, const char *url, uint64_t max_bytes, char **body,
                  size_t *len, rf_error *err)
{
	*body = NULL;
	one_request o = {.req = {.kind = RF_HTTP_GET_ALL, .max_bytes = max_bytes, .body = body}};
	int64_t res = 0;
	int rc = one_request_run(opt, url, &o, &res, err);
	if (rc < 0) {
		free(*body);
		*body = NULL;
		return rc;
	}
	*len = (size_t)res;
	return 0;
}

#ifdef RF_TEST_HOOKS
void rf_remote_set_list_page(rf_fetch *f, uint32_t max_keys)
{
	void *state = NULL;
	if (rf_fetch_kind_state(f, &rf_source_kind_remote, &state, NULL) == 0)
		((remote_state *)state)->list_page = max_keys;
}
#endif

int rf_fetch_list(const rf_fetch_options *opt, const char *url, const rf_list_filter *filter,
                  rf_url_list *out, rf_error *err)
{
	rf_loop *loop = NULL;
	rf_fetch *f = NULL;
	RF_TRY(rf_fetch_loop_new(opt, 0, &loop, err));
	int rc = rf_fetch_new(loop, opt, &f, err);
	if (rc == 0) {
		const char *names[] = {url};
		rc = rf_url_expand(f, names, 1, filter, out, err);
	}
	rf_fetch_free(f);
	rf_loop_free(loop);
	return rc;
}
