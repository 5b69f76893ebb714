/* hf_store.c - the Hugging Face Hub store (store.h): model, dataset and
 * space repositories, hf://[datasets/|spaces/]ORG/NAME[@REVISION]/PATH,
 * names and pages from hf.c.
 * Listing a folder (a name ending in '/', or the repository itself) pins
 * the revision first (the revision API's "sha"), then pages through the
 * recursive tree API by its Link header; each file is listed as
 * hf://[datasets/|spaces/]ORG/NAME@SHA/FILE, so every read of one open is
 * of one commit. An object is read with ranges through its resolve URL.
 * The token (HF_TOKEN, HF_TOKEN_PATH, $HF_HOME/token) goes as a bearer
 * token to the endpoint's own origin only: a resolve that redirects to
 * another host (the Hub's CDN) is followed unsigned (the signer's
 * unsigned_across), and the signer itself refuses to sign for any other
 * origin. Messages name the repository, revision and path, never the token. */
#include "hf.h"
#include "store.h"
#include "util.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HF_LIST_PAGES_MAX 1000u
#define HF_LIST_FILES_MAX 1000000u
#define HF_LINK_BYTES_MAX 16384u
#define HF_ORIGIN_BYTES   300u
#define HF_PINS_MAX       16u   /* branches and tags named by files of one loader */
#define HF_PLACES_MAX     1024u /* files whose CDN location is remembered */

/* Where the Hub last sent a file's reads (its resolve URL at a commit ->
 * the CDN URL, which carries its own grant: a secret, wiped when dropped),
 * so a file's later reads go there at once instead of asking the Hub for
 * each range (the Hub counts and limits resolves). A grant the CDN refuses
 * (expired) is dropped and the read asks the Hub again, once. */
typedef struct hf_place {
	char *from, *to;
} hf_place;

/* A branch or tag of a repository named directly by files (not listed):
 * its commit, asked once; until then its reads wait (the gate), after it
 * each is sent to the commit's resolve URL instead. */
typedef struct hf_pin {
	struct hf_store *st;
	rf_hf_type type;
	char repo[2 * RF_HF_NAME_MAX + 2];
	char revision[RF_HF_REV_MAX + 1];
	char *from; /* {endpoint}/[datasets/|spaces/]{repo}/resolve/{revision}/ */
	char *to;   /* the same at the commit, once known */
	int rc;     /* 1 asking, 0 known, < 0 failed (msg says why) */
	char *url;  /* the revision API's */
	char *body;
	rf_http_xfer *xfer;
	char msg[RF_ERROR_MSG_BYTES];
	char what[RF_HF_REV_MAX + 2 * RF_HF_NAME_MAX + 80];
} hf_pin;

typedef struct hf_store {
	rf_fetch *fetch;
	rf_http *http;
	rf_http_auth auth;      /* reads: hf_read_ops, state = this */
	rf_http_auth list_auth; /* the API's requests: hf_list_ops, state = this */
	char *endpoint;         /* HF_ENDPOINT or huggingface.co, no trailing '/' */
	char origin[HF_ORIGIN_BYTES];
	char *token;            /* a secret (NULL: none, public repositories) */
	const char *token_from; /* "HF_TOKEN", ..., "none" */
	bool ready;
	rf_http_auth api_auth; /* the pins' revision requests: hf_api_ops */
	hf_pin pins[HF_PINS_MAX];
	uint32_t npins;
	hf_place places[HF_PLACES_MAX]; /* by a hash of from; a collision replaces */
} hf_store;

/* ---------------------------------------------------------- the signer */

static bool on_hub(const hf_store *st, const rf_http_xfer *x)
{
	char o[HF_ORIGIN_BYTES];
	return rf_url_origin(rf_http_xfer_url(x), o, sizeof(o)) == 0 && !strcmp(o, st->origin);
}

/* The bearer token, to the Hub's own origin only. */
static int hf_sign_for(hf_store *st, rf_http_xfer *x)
{
	rf_http_xfer_path_as_is(x); /* file names are opaque */
	if (!st->token || !on_hub(st, x))
		return 0;
	char *line = rf_http_dup_printf("Authorization: Bearer %s", st->token);
	int rc = line ? rf_http_xfer_add_header(x, line) : -ENOMEM;
	rf_secret_free(line);
	return rc;
}

static void hf_explain_for(hf_store *st, const rf_http_xfer *x, char *out, size_t cap)
{
	long status = rf_http_xfer_status(x);
	out[0] = '\0';
	if (!on_hub(st, x))
		return;
	if ((status == 401 || status == 403) && st->token)
		snprintf(out, cap,
		         " (the Hub refused the token from %s for this repository: is it private "
		         "or gated, and does the token have access?)",
		         st->token_from);
	else if (status == 401 || status == 403)
		snprintf(out, cap,
		         " (no Hub token was found: a private or gated repository needs one in "
		         "HF_TOKEN, HF_TOKEN_PATH or $HF_HOME/token)");
	else if (status == 404)
		snprintf(out, cap, " (no such repository, revision or file on %s)", st->endpoint);
}

static int hf_read_sign(void *state, void *data, rf_http_xfer *x)
{
	(void)data;
	return hf_sign_for(state, x);
}

static void hf_read_explain(void *state, void *data, const rf_http_xfer *x, char *out, size_t cap)
{
	(void)data;
	hf_explain_for(state, x, out, cap);
}

/* ------------------------------------------------------------ the pins */

/* A read's own: the pin its URL is under (NULL: a commit already), whether
 * it moved to the commit, its resolve URL once there, and whether it went
 * to a remembered CDN location (and asked the Hub again after a refusal). */
typedef struct hf_read {
	hf_pin *pin;
	rf_http_xfer *x;
	bool moved, placed, cached, again;
	char *from;
} hf_read;

static hf_place *place_of(hf_store *st, const char *from)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *c = from; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	return &st->places[h % HF_PLACES_MAX];
}

static void place_drop(hf_place *pl)
{
	free(pl->from);
	rf_secret_free(pl->to);
	*pl = (hf_place){0};
}

static int hf_read_begin(void *state, const rf_http_request *req, rf_http_xfer *x, void **data)
{
	hf_store *st = state;
	hf_read *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (hf_read){.x = x, .moved = true};
	for (uint32_t i = 0; i < st->npins && !r->pin; i++)
		if (!strncmp(req->url, st->pins[i].from, strlen(st->pins[i].from)))
			*r = (hf_read){.pin = &st->pins[i], .x = x};
	*data = r;
	return 0;
}

static void hf_read_end(void *state, void *data)
{
	hf_read *r = data;
	(void)state;
	if (r)
		free(r->from);
	free(r);
}

/* Once at its commit: to the file's remembered CDN location, if any. */
static int read_place(hf_store *st, hf_read *r)
{
	r->placed = true;
	if (!(r->from = strdup(rf_http_xfer_url(r->x))))
		return -ENOMEM;
	hf_place *pl = place_of(st, r->from);
	if (!pl->from || strcmp(pl->from, r->from) != 0)
		return 0;
	RF_TRY(rf_http_xfer_retarget(r->x, pl->to));
	r->cached = true; /* signed for the Hub only: the CDN's origin gets no token */
	return 0;
}

/* An answer from another origin than the Hub's (the CDN, after the
 * resolve's redirect): its URL is where the file's next reads go. */
static rf_http_auth_again hf_read_answered(void *state, void *data, rf_http_xfer *x)
{
	hf_store *st = state;
	hf_read *r = data;
	long status = rf_http_xfer_status(x);
	if (!r || !r->from || r->cached || (status != 200 && status != 206) || on_hub(st, x))
		return RF_AUTH_NO;
	hf_place *pl = place_of(st, r->from);
	char *from = strdup(r->from), *to = strdup(rf_http_xfer_url(x));
	if (!from || !to) {
		free(from);
		free(to);
		return RF_AUTH_NO; /* not remembered: the next read asks the Hub */
	}
	place_drop(pl);
	*pl = (hf_place){from, to};
	return RF_AUTH_NO;
}

/* A remembered location the CDN refuses (its grant expired): forgotten,
 * and this read asks the Hub again (once). */
static rf_http_auth_again hf_read_refused(void *state, void *data, rf_http_xfer *x)
{
	hf_store *st = state;
	hf_read *r = data;
	if (!r || !r->cached || r->again)
		return RF_AUTH_NO;
	hf_place *pl = place_of(st, r->from);
	if (pl->from && !strcmp(pl->from, r->from))
		place_drop(pl);
	if (rf_http_xfer_retarget(x, r->from) < 0)
		return RF_AUTH_NO;
	r->cached = false;
	r->again = true;
	return RF_AUTH_RETRY;
}

/* A read under a branch or tag waits for its commit, then goes to it; at
 * its commit, a read goes to the file's remembered CDN location if any. */
static rf_http_auth_gate hf_read_gate(void *state, void *data, int *code, const char **msg)
{
	hf_read *r = data;
	if (!r)
		return RF_AUTH_GO;
	if (!r->moved) {
		if (r->pin->rc > 0)
			return RF_AUTH_WAIT;
		if (r->pin->rc < 0) {
			*code = r->pin->rc;
			*msg = r->pin->msg;
			return RF_AUTH_FAIL;
		}
		const char *url = rf_http_xfer_url(r->x);
		char *to = rf_http_dup_printf("%s%s", r->pin->to, url + strlen(r->pin->from));
		int rc = to ? rf_http_xfer_retarget(r->x, to) : -ENOMEM;
		free(to);
		if (rc < 0) {
			*code = rc;
			*msg = "moving a read to its commit's URL failed (out of memory or hosts)";
			return RF_AUTH_FAIL;
		}
		r->moved = true;
	}
	if (!r->placed && read_place(state, r) < 0) {
		*code = -ENOMEM;
		*msg = "out of memory (or hosts) sending a read to its CDN location";
		return RF_AUTH_FAIL;
	}
	return RF_AUTH_GO;
}

static const rf_http_auth_ops hf_read_ops = {
    .name = "Hugging Face Hub",
    .unsigned_across = true, /* resolve -> CDN: the token stays behind */
    .begin = hf_read_begin,
    .end = hf_read_end,
    .gate = hf_read_gate,
    .sign = hf_read_sign,
    .answered = hf_read_answered,
    .refused = hf_read_refused,
    .explain = hf_read_explain,
};

static const rf_http_auth_ops hf_api_ops = {
    .name = "Hugging Face Hub",
    .sign = hf_read_sign,
    .explain = hf_read_explain,
};

static bool is_commit(const char *rev)
{
	size_t n = strlen(rev);
	if (n != 40)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((rev[i] >= '0' && rev[i] <= '9') || (rev[i] >= 'a' && rev[i] <= 'f')))
			return false;
	return true;
}

static void on_pin(void *arg, int64_t res, const char *msg)
{
	hf_pin *p = arg;
	rf_error err = {0};
	char sha[41];
	p->xfer = NULL;
	int rc =
	    res < 0 ? (int)res : rf_hf_revision_parse(p->body, (size_t)res, p->what, sha, &err);
	if (res < 0)
		snprintf(p->msg, sizeof(p->msg), "%s", msg ? msg : "the revision request failed");
	else if (rc < 0)
		snprintf(p->msg, sizeof(p->msg), "%s", err.msg);
	free(p->body);
	p->body = NULL;
	if (rc == 0) {
		rf_hf_ref at = {.type = p->type, .path = (char *)""};
		memcpy(at.repo, p->repo, sizeof(at.repo));
		p->to = rf_hf_resolve_url(p->st->endpoint, &at, sha, "");
		if (!p->to) {
			rc = -ENOMEM;
			snprintf(p->msg, sizeof(p->msg), "%.400s: out of memory", p->what);
		}
	}
	p->rc = rc < 0 ? rc : 0;
	rf_http_kick(p->st->http); /* its reads start, or fail with its message */
}

/* ------------------------------------------------------------ the store */

static bool hf_claims(const char *url)
{
	return !strncasecmp(url, "hf://", 5);
}

/* The repository itself, or a name ending in '/': a folder, listed. */
static bool hf_is_prefix(const char *url)
{
	rf_hf_ref r;
	rf_error err = {0};
	if (rf_hf_parse(url, &r, &err) < 0)
		return false; /* read, and refused there by name */
	bool folder = !r.path[0] || r.path[strlen(r.path) - 1] == '/';
	rf_hf_ref_free(&r);
	return folder;
}

static const rf_http_auth_ops hf_list_ops;

static int hf_init(rf_fetch *f, rf_http *http, void **state, rf_error *err)
{
	hf_store *st = calloc(1, sizeof(*st));
	if (!st)
		return rf_fail(err, -ENOMEM, "out of memory for the Hugging Face Hub store");
	st->fetch = f;
	st->http = http;
	st->auth = (rf_http_auth){&hf_read_ops, st};
	st->list_auth = (rf_http_auth){&hf_list_ops, st};
	st->api_auth = (rf_http_auth){&hf_api_ops, st};
	st->token_from = "none";
	*state = st;
	return 0;
}

static void hf_fini(void *state)
{
	hf_store *st = state;
	for (uint32_t i = 0; i < st->npins; i++) {
		hf_pin *p = &st->pins[i];
		if (p->xfer)
			rf_http_cancel(st->http, p->xfer);
		free(p->from);
		free(p->to);
		free(p->url);
		free(p->body);
	}
	for (uint32_t i = 0; i < HF_PLACES_MAX; i++)
		place_drop(&st->places[i]);
	rf_secret_free(st->token);
	free(st->endpoint);
	free(st);
}

static const char *hf_env(const char *name)
{
	return getenv(name);
}

/* The endpoint and the token, found once. */
static int hf_config(hf_store *st, rf_error *err)
{
	if (st->ready)
		return 0;
	RF_TRY(rf_hf_endpoint(getenv("HF_ENDPOINT"), &st->endpoint, err));
	if (rf_url_origin(st->endpoint, st->origin, sizeof(st->origin)) < 0)
		return rf_fail(err, -EINVAL, "HF_ENDPOINT: not a usable http(s) URL");
	RF_TRY(rf_hf_token_find(hf_env, &st->token, &st->token_from, err));
	st->ready = true;
	return 0;
}

/* A file named under a branch or tag: its commit is asked once (a pin),
 * so every read of this loader is of one version. A folder's lister asks
 * for its own. */
static int hf_credentials(void *state, const char *url, rf_error *err)
{
	hf_store *st = state;
	RF_TRY(hf_config(st, err));
	rf_hf_ref r;
	RF_TRY(rf_hf_parse(url, &r, err));
	int rc = 0;
	/* a folder's lister asks for its commit itself */
	bool known = is_commit(r.revision) || !r.path[0] || r.path[strlen(r.path) - 1] == '/';
	for (uint32_t i = 0; !known && i < st->npins; i++)
		known = st->pins[i].type == r.type && !strcmp(st->pins[i].repo, r.repo) &&
		        !strcmp(st->pins[i].revision, r.revision);
	if (!known && st->npins == HF_PINS_MAX)
		rc = rf_fail(err, -E2BIG,
		             "%.300s: files under more than %u branches or tags in one open (name "
		             "commits, or list folders)",
		             url, HF_PINS_MAX);
	if (!known && rc == 0) {
		hf_pin *p = &st->pins[st->npins];
		*p = (hf_pin){.st = st, .type = r.type, .rc = 1};
		memcpy(p->repo, r.repo, sizeof(p->repo));
		memcpy(p->revision, r.revision, sizeof(p->revision));
		snprintf(p->what, sizeof(p->what), "hf://%s%s@%s (the revision's commit)",
		         rf_hf_type_prefix(r.type), r.repo, r.revision);
		p->from = rf_hf_resolve_url(st->endpoint, &r, r.revision, "");
		p->url = rf_hf_revision_url(st->endpoint, &r);
		rf_http_request req = {.kind = RF_HTTP_GET_ALL,
		                       .url = p->url,
		                       .name = p->what,
		                       .auth = &st->api_auth,
		                       .max_bytes = RF_HF_PAGE_MAX,
		                       .body = &p->body};
		rc = p->from && p->url ? rf_http_start(st->http, &req, on_pin, p, &p->xfer, err)
		                       : rf_fail(err, -ENOMEM, "%.300s: out of memory", url);
		if (rc < 0) {
			free(p->from);
			free(p->url);
		} else {
			st->npins++;
		}
	}
	rf_hf_ref_free(&r);
	return rc;
}

static int hf_target(void *state, const char *url, rf_store_target *out, rf_error *err)
{
	hf_store *st = state;
	*out = (rf_store_target){.auth = &st->auth};
	RF_TRY(hf_config(st, err));
	rf_hf_ref r;
	RF_TRY(rf_hf_parse(url, &r, err));
	int rc = 0;
	if (!r.path[0] || r.path[strlen(r.path) - 1] == '/')
		rc = rf_fail(err, -EISDIR,
		             "%.300s names a folder of %s@%s, not a file (a folder is listed: "
		             "end its name with '/')",
		             url, r.repo, r.revision);
	else if (!(out->url = rf_hf_resolve_url(st->endpoint, &r, r.revision, r.path)))
		rc = rf_fail(err, -ENOMEM, "%.300s: out of memory", url);
	rf_hf_ref_free(&r);
	return rc;
}

/* --------------------------------------------------------- the lister */

typedef struct hf_lister {
	hf_store *st;
	rf_hf_ref ref;
	char sha[41];
	char *body; /* its address names the lister to hf_list_begin */
	char *url, *link;
	bool link_long; /* the Link header was over HF_LINK_BYTES_MAX */
	uint32_t pages;
	rf_list_filter filter;
	rf_url_list all; /* every file listed, before the filter */
	rf_url_list *out;
	rf_http_xfer *xfer;
	rf_fetch_cb cb;
	void *arg;
	char shown[1024]; /* hf://[datasets/|spaces/]ORG/NAME@REVISION/PATH */
	char what[1200];  /* the request, for messages */
} hf_lister;

/* A listing request's data is its lister (which may be freed in the
 * request's callback, before the client frees the request: no end hook). */
static int hf_list_begin(void *state, const rf_http_request *req, rf_http_xfer *x, void **data)
{
	(void)state, (void)x;
	*data = (char *)req->body - offsetof(hf_lister, body);
	return 0;
}

/* Keeps the Link header of the latest response (several lines are joined). */
static void hf_list_header(void *state, void *data, const char *line, size_t len)
{
	hf_lister *l = data;
	(void)state;
	if (len >= 5 && !strncmp(line, "HTTP/", 5)) { /* a new response */
		free(l->link);
		l->link = NULL;
		l->link_long = false;
		return;
	}
	if (len < 5 || strncasecmp(line, "link:", 5) != 0)
		return;
	line += 5, len -= 5;
	while (len > 0 && (*line == ' ' || *line == '\t'))
		line++, len--;
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' '))
		len--;
	size_t have = l->link ? strlen(l->link) : 0;
	if (l->link_long || have + len + 2 > HF_LINK_BYTES_MAX) {
		l->link_long = true;
		return;
	}
	char *v = realloc(l->link, have + len + 3);
	if (!v) {
		l->link_long = true; /* refused at the page, as too long */
		return;
	}
	if (have)
		memcpy(v + have, ", ", 2), have += 2;
	memcpy(v + have, line, len);
	v[have + len] = '\0';
	l->link = v;
}

static const rf_http_auth_ops hf_list_ops = {
    .name = "Hugging Face Hub",
    .begin = hf_list_begin,
    .sign = hf_read_sign,
    .header = hf_list_header,
    .explain = hf_read_explain,
};

static void lister_free(hf_lister *l)
{
	rf_hf_ref_free(&l->ref);
	rf_url_list_free(&l->all);
	free(l->url);
	free(l->body);
	free(l->link);
	free(l);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const rf_url_entry *)a)->url, ((const rf_url_entry *)b)->url);
}

/* Keeps what the filter takes (the key is the file's path in the
 * repository), in key order as every store lists (the Hub's recursive
 * tree pages need not be: folders come with their files). */
static void finish(hf_lister *l, int64_t rc, const char *msg)
{
	rf_error err = {0};
	size_t before = l->out->n;
	if (rc >= 0 && l->all.n > 1)
		qsort(l->all.v, l->all.n, sizeof(l->all.v[0]), entry_cmp);
	char base[RF_HF_NAME_MAX * 2 + 80];
	int skip = snprintf(base, sizeof(base), "hf://%s%s@%s/", rf_hf_type_prefix(l->ref.type),
	                    l->ref.repo, l->sha);
	for (size_t i = 0; rc >= 0 && i < l->all.n; i++) {
		const char *key = l->all.v[i].url + skip;
		if (!l->filter.take || l->filter.take(key, l->filter.ctx))
			rc = rf_url_list_add(l->out, l->all.v[i].url, l->all.v[i].size_hint, &err);
	}
	if (rc < 0 && !msg)
		msg = err.msg;
	if (rc < 0)
		rf_url_list_truncate(l->out, before);
	else
		rc = (int64_t)(l->out->n - before);
	rf_fetch_cb cb = l->cb;
	void *arg = l->arg;
	char kept[RF_ERROR_MSG_BYTES];
	snprintf(kept, sizeof(kept), "%s", rc < 0 && msg ? msg : "");
	lister_free(l);
	cb(arg, rc, rc < 0 ? kept : NULL);
}

static void on_page(void *arg, int64_t res, const char *msg);
static void on_revision(void *arg, int64_t res, const char *msg);

static int get(hf_lister *l, char *url, rf_fetch_cb cb, rf_error *err)
{
	free(l->url);
	l->url = url;
	rf_http_request req = {
	    .kind = RF_HTTP_GET_ALL,
	    .url = l->url,
	    .name = l->what,
	    .auth = &l->st->list_auth,
	    .max_bytes = RF_HF_PAGE_MAX,
	    .body = &l->body,
	};
	return rf_http_start(l->st->http, &req, cb, l, &l->xfer, err);
}

static int first_page(hf_lister *l, rf_error *err)
{
	char *u = rf_hf_tree_url(l->st->endpoint, &l->ref, l->sha);
	if (!u)
		return rf_fail(err, -ENOMEM, "listing %s: out of memory", l->shown);
	snprintf(l->what, sizeof(l->what), "%s (listing at commit %.12s, page 1)", l->shown,
	         l->sha);
	return get(l, u, on_page, err);
}

static void on_revision(void *arg, int64_t res, const char *msg)
{
	hf_lister *l = arg;
	rf_error err = {0};
	l->xfer = NULL;
	if (res < 0)
		return finish(l, res, msg);
	int rc = rf_hf_revision_parse(l->body, (size_t)res, l->what, l->sha, &err);
	free(l->body);
	l->body = NULL;
	if (rc == 0)
		rc = first_page(l, &err);
	if (rc < 0)
		finish(l, rc, err.msg);
}

static void on_page(void *arg, int64_t res, const char *msg)
{
	hf_lister *l = arg;
	rf_error err = {0};
	char *next = NULL;
	l->xfer = NULL;
	if (res < 0)
		return finish(l, res, msg);
	int rc = rf_hf_tree_parse(l->body, (size_t)res, &l->ref, l->sha, l->what, &l->all, &err);
	free(l->body);
	l->body = NULL;
	if (rc >= 0 && l->all.n > HF_LIST_FILES_MAX)
		rc = rf_fail(&err, -E2BIG, "listing %s: more than %u files", l->shown,
		             HF_LIST_FILES_MAX);
	if (rc >= 0 && l->link_long)
		rc = rf_fail(&err, -EPROTO, "%s: a Link header over %u bytes", l->what,
		             HF_LINK_BYTES_MAX);
	if (rc >= 0)
		rc = rf_hf_link_next(l->link, l->st->endpoint, &next, &err);
	if (rc > 0 && !strcmp(next, l->url))
		rc = rf_fail(&err, -EPROTO, "%s: the next page is this page again", l->what);
	if (rc > 0 && ++l->pages >= HF_LIST_PAGES_MAX)
		rc = rf_fail(&err, -E2BIG, "listing %s: more than %u pages", l->shown,
		             HF_LIST_PAGES_MAX);
	if (rc > 0) {
		snprintf(l->what, sizeof(l->what), "%s (listing at commit %.12s, page %u)",
		         l->shown, l->sha, l->pages + 1);
		rc = get(l, next, on_page, &err);
		next = NULL; /* the lister's now */
		if (rc == 0)
			return;
	}
	free(next);
	finish(l, rc < 0 ? rc : 0, rc < 0 ? err.msg : NULL);
}

static int hf_list_start(void *state, const char *url, uint32_t page_keys,
                         const rf_list_filter *filter, rf_url_list *out, rf_fetch_cb cb, void *arg,
                         void **lister, rf_error *err)
{
	hf_store *st = state;
	(void)page_keys; /* the Hub sizes its pages */
	RF_TRY(hf_config(st, err));
	hf_lister *l = calloc(1, sizeof(*l));
	if (!l)
		return rf_fail(err, -ENOMEM, "out of memory");
	*l = (hf_lister){.st = st, .out = out, .cb = cb, .arg = arg};
	if (filter)
		l->filter = *filter;
	int rc = rf_hf_parse(url, &l->ref, err);
	if (rc == 0) {
		snprintf(l->shown, sizeof(l->shown), "hf://%s%s@%s/%.400s",
		         rf_hf_type_prefix(l->ref.type), l->ref.repo, l->ref.revision, l->ref.path);
		if (is_commit(l->ref.revision)) {
			memcpy(l->sha, l->ref.revision, sizeof(l->sha));
			rc = first_page(l, err);
		} else {
			/* a branch or tag: its commit, once, so the whole open reads one */
			char *u = rf_hf_revision_url(st->endpoint, &l->ref);
			snprintf(l->what, sizeof(l->what), "%s (the revision's commit)", l->shown);
			rc = u ? get(l, u, on_revision, err)
			       : rf_fail(err, -ENOMEM, "listing %s: out of memory", l->shown);
		}
	}
	if (rc < 0) {
		lister_free(l);
		return rc;
	}
	*lister = l;
	return 0;
}

static void hf_list_cancel(void *lister)
{
	hf_lister *l = lister;
	if (!l)
		return;
	if (l->xfer)
		rf_http_cancel(l->st->http, l->xfer);
	lister_free(l);
}

const rf_store rf_store_hf = {
    .name = "hf",
    .claims = hf_claims,
    .is_prefix = hf_is_prefix,
    .init = hf_init,
    .fini = hf_fini,
    .credentials = hf_credentials,
    .target = hf_target,
    .list_start = hf_list_start,
    .list_cancel = hf_list_cancel,
};
