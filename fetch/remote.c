/* remote.c - http(s):// and s3:// sources over the shared HTTP client
 * (http.c), and dataset URL expansion with S3 prefix listing (see remote.h).
 * The size of an object comes from the caller's hint (a manifest or a
 * listing) or from a HEAD; every read is one exact range GET. */
#include "remote.h"
#include "creds.h"
#include "s3.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

typedef struct remote_state {
	rf_fetch *fetch;
	rf_http *http;
	rf_s3_config s3;
	rf_creds *creds; /* NULL: static keys or anonymous */
	bool s3_ready;
	uint32_t list_page;
} remote_state;

typedef struct remote_read remote_read;
typedef struct remote_source {
	rf_source base; /* first */
	remote_state *st;
	char *url; /* what curl fetches (encoded, path-style for S3) */
	bool sign;
	int64_t open_timer;
	rf_http_xfer *head;
	remote_read *reads; /* in flight, doubly linked */
} remote_source;

struct remote_read {
	remote_read *prev, *next;
	remote_source *src;
	rf_http_xfer *xfer;
	rf_fetch_cb cb;
	void *arg;
};

static bool remote_claims(const char *url)
{
	rf_url_scheme s = rf_url_scheme_of(url);
	return s == RF_URL_HTTP || s == RF_URL_HTTPS || s == RF_URL_S3;
}

static int remote_init(rf_fetch *f, void **state, rf_error *err)
{
	remote_state *st = calloc(1, sizeof(*st));
	if (!st)
		return rf_fail(err, -ENOMEM, "out of memory for the HTTP source");
	st->fetch = f;
	int rc = rf_http_new(rf_fetch_loop(f), rf_fetch_opts(f), &st->http, err);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void remote_fini(void *state)
{
	remote_state *st = state;
	rf_creds_free(st->creds); /* before the client it fetches with */
	rf_http_free(st->http);
	rf_s3_config_free(&st->s3);
	free(st);
}

static void remote_counters(void *state, rf_fetch_counters *out)
{
	remote_state *st = state;
	rf_http_counters c;
	rf_http_counters_get(st->http, &c);
	out->requests += c.requests;
	out->retries += c.retries;
	out->errors += c.errors;
	out->bytes += c.bytes;
	out->host_active_max = RF_MAX(out->host_active_max, c.host_active_max);
	out->connects += c.connects;
}

/* S3 settings are resolved on first use, so a bad AWS_ENDPOINT_URL only
 * matters to s3:// datasets. The credential chain starts here too: signed
 * requests wait in the client until it answers (creds.c). */
static int remote_s3(remote_state *st, rf_error *err)
{
	if (st->s3_ready)
		return 0;
	const rf_fetch_options *opt = rf_fetch_opts(st->fetch);
	RF_TRY(rf_s3_config_resolve(opt, &st->s3, err));
	int rc = rf_creds_start(rf_fetch_loop(st->fetch), st->http, opt, &st->s3, &st->creds, err);
	if (rc < 0) {
		rf_s3_config_free(&st->s3);
		return rc;
	}
	st->s3_ready = true;
	return 0;
}

/* The URL curl fetches for a source URL (malloc'd). */
static int remote_target(remote_state *st, const char *url, char **target, bool *sign,
                         rf_error *err)
{
	*sign = false;
	if (rf_url_scheme_of(url) != RF_URL_S3) {
		*target = strdup(url);
		return *target ? 0 : rf_fail(err, -ENOMEM, "out of memory");
	}
	char *bucket = NULL, *key = NULL;
	RF_TRY(rf_url_split_s3(url, &bucket, &key, err));
	int rc = 0;
	if (!*key || key[strlen(key) - 1] == '/') {
		char shown[512];
		rf_url_redact(url, shown, sizeof(shown));
		rc = rf_fail(err, -EISDIR, "%s names a prefix, not an object (list it first)",
		             shown);
	}
	if (rc == 0)
		rc = remote_s3(st, err);
	if (rc == 0)
		rc = rf_s3_object_url(&st->s3, bucket, key, target, err);
	*sign = true;
	free(bucket);
	free(key);
	return rc;
}

/* ------------------------------------------------------------ the source */

static void read_unlink(remote_read *r)
{
	remote_source *rs = r->src;
	if (r->prev)
		r->prev->next = r->next;
	else
		rs->reads = r->next;
	if (r->next)
		r->next->prev = r->prev;
}

static void on_read_done(void *arg, int64_t res, const char *msg)
{
	remote_read *r = arg;
	rf_fetch_cb cb = r->cb;
	void *cb_arg = r->arg;
	read_unlink(r);
	free(r);
	cb(cb_arg, res, msg);
}

static int remote_read_range(rf_source *s, uint64_t offset, uint64_t len, void *buf, rf_fetch_cb cb,
                             void *arg)
{
	remote_source *rs = (remote_source *)s;
	uint64_t end;
	if (!rf_add_u64(offset, len, &end) || end > s->size || len == 0)
		return -EINVAL;
	remote_read *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (remote_read){.src = rs, .cb = cb, .arg = arg};
	rf_http_request req = {.kind = RF_HTTP_RANGE,
	                       .url = rs->url,
	                       .name = s->name,
	                       .sign = rs->sign,
	                       .offset = offset,
	                       .len = len,
	                       .buf = buf,
	                       .object_size = s->size};
	rf_error err = {0};
	int rc = rf_http_start(rs->st->http, &req, on_read_done, r, &r->xfer, &err);
	if (rc < 0) {
		free(r);
		return rc;
	}
	r->next = rs->reads;
	if (rs->reads)
		rs->reads->prev = r;
	rs->reads = r;
	return 0;
}

static void remote_close(rf_source *s)
{
	remote_source *rs = (remote_source *)s;
	rf_loop_cancel(rf_fetch_loop(s->fetch), rs->open_timer);
	if (rs->head)
		rf_http_cancel(rs->st->http, rs->head);
	while (rs->reads) {
		remote_read *r = rs->reads;
		rf_http_cancel(rs->st->http, r->xfer);
		read_unlink(r);
		free(r);
	}
	free(rs->url);
	rf_source_free_base(s);
	free(rs);
}

static const rf_source_ops remote_ops = {.read = remote_read_range, .close = remote_close};

static void on_size_known(void *arg, int res)
{
	remote_source *rs = arg;
	rs->open_timer = -1;
	rf_source_opened(&rs->base, 0, NULL);
}

static void on_head(void *arg, int64_t res, const char *msg)
{
	remote_source *rs = arg;
	rs->head = NULL;
	if (res >= 0)
		rs->base.size = (uint64_t)res;
	rf_source_opened(&rs->base, res < 0 ? res : 0, msg);
}

static int remote_start_open(remote_source *rs, uint64_t size_hint, rf_error *err)
{
	if (size_hint != RF_SIZE_UNKNOWN) {
		rs->base.size = size_hint;
		rs->open_timer = rf_loop_timer(rf_fetch_loop(rs->base.fetch), 0, on_size_known, rs);
		return rs->open_timer < 0
		           ? rf_fail(err, (int)rs->open_timer, "%s: no loop slot to finish opening",
		                     rs->base.name)
		           : 0;
	}
	rf_http_request req = {
	    .kind = RF_HTTP_HEAD, .url = rs->url, .name = rs->base.name, .sign = rs->sign};
	return rf_http_start(rs->st->http, &req, on_head, rs, &rs->head, err);
}

static int remote_open(rf_fetch *f, void *state, const char *url, uint64_t size_hint,
                       rf_source **out, rf_error *err)
{
	remote_state *st = state;
	remote_source *rs = calloc(1, sizeof(*rs));
	char shown[RF_URL_BYTES_MAX];
	rf_url_redact(url, shown, sizeof(shown));
	if (!rs || rf_source_init_base(&rs->base, &remote_ops, f, shown) < 0) {
		free(rs);
		return rf_fail(err, -ENOMEM, "out of memory opening %s", shown);
	}
	rs->st = st;
	rs->open_timer = -1;
	int rc = remote_target(st, url, &rs->url, &rs->sign, err);
	if (rc == 0)
		rc = remote_start_open(rs, size_hint, err);
	if (rc < 0) {
		remote_close(&rs->base);
		return rc;
	}
	*out = &rs->base;
	return 0;
}

const rf_source_kind rf_source_kind_remote = {
    .name = "remote",
    .claims = remote_claims,
    .init = remote_init,
    .fini = remote_fini,
    .open = remote_open,
    .counters = remote_counters,
};

/* ------------------------------------------------------------ expansion */

typedef struct list_wait {
	bool done;
	int64_t res;
	char msg[RF_ERROR_MSG_BYTES];
} list_wait;

static void on_listed(void *arg, int64_t res, const char *msg)
{
	list_wait *w = arg;
	w->done = true;
	w->res = res;
	snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
}

static bool is_prefix(const char *url)
{
	if (rf_url_scheme_of(url) != RF_URL_S3)
		return false;
	const char *slash = strchr(url + 5, '/');
	return !slash || !slash[1] || url[strlen(url) - 1] == '/';
}

static int list_prefix(rf_fetch *f, remote_state *st, const char *url, rf_url_list *out,
                       rf_error *err)
{
	RF_TRY(remote_s3(st, err));
	list_wait w = {0};
	rf_s3_lister *l = NULL;
	RF_TRY(
	    rf_s3_list_start(st->http, &st->s3, url, st->list_page, out, on_listed, &w, &l, err));
	rf_loop *loop = rf_fetch_loop(f);
	while (!w.done) { /* bounded: every request has a deadline and bounded retries */
		int rc = rf_loop_run_once(loop, 100 * 1000000ull);
		if (rc < 0) {
			rf_s3_list_cancel(l);
			char shown[512];
			rf_url_redact(url, shown, sizeof(shown));
			return rf_fail(err, rc, "listing %s: the event loop failed", shown);
		}
		rf_fetch_tick(f);
	}
	if (w.res < 0)
		return rf_fail(err, (int)w.res, "%s", w.msg);
	if (w.res == 0) {
		char shown[512];
		rf_url_redact(url, shown, sizeof(shown));
		return rf_fail(err, -ENOENT, "no .rfs objects under %s", shown);
	}
	return 0;
}

int rf_url_expand(rf_fetch *f, const char *const *names, size_t n, rf_url_list *out, rf_error *err)
{
	rf_url_list all = {0};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = rf_brace_expand(names[i], &all, err);
	void *state = NULL;
	for (size_t i = 0; i < all.n && rc == 0; i++) {
		if (!is_prefix(all.v[i].url)) {
			rc = rf_url_list_add(out, all.v[i].url, RF_SIZE_UNKNOWN, err);
			continue;
		}
		if (!state)
			rc = rf_fetch_kind_state(f, &rf_source_kind_remote, &state, err);
		if (rc == 0)
			rc = list_prefix(f, state, all.v[i].url, out, err);
	}
	rf_url_list_free(&all);
	return rc;
}

void rf_remote_set_list_page(rf_fetch *f, uint32_t max_keys)
{
	void *state = NULL;
	if (rf_fetch_kind_state(f, &rf_source_kind_remote, &state, NULL) == 0)
		((remote_state *)state)->list_page = max_keys;
}

int rf_remote_list(const rf_fetch_options *opt, const char *url, rf_url_list *out, rf_error *err)
{
	rf_loop *loop = NULL;
	rf_fetch *f = NULL;
	RF_TRY(rf_loop_new(&loop, err));
	int rc = rf_fetch_new(loop, opt, &f, err);
	if (rc == 0) {
		const char *names[] = {url};
		rc = rf_url_expand(f, names, 1, out, err);
	}
	rf_fetch_free(f);
	rf_loop_free(loop);
	return rc;
}

bool rf_url_is_s3_prefix(const char *url)
{
	return is_prefix(url);
}
