/* s3_sign.c - the S3 store's signer (s3_sign.h) behind the HTTP client's
 * seam (rf_http_auth_ops, http.h): SigV4 through curl with the keys the
 * credential chain sets, the hold while it has not answered, a bucket's
 * region followed once and remembered, one refresh-and-retry on
 * ExpiredToken, and the words of a refusal. It sees a transfer only through
 * http.h; the client knows nothing of S3. */
#include "s3_sign.h"
#include "s3.h"
#include "url.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NO_TIMER (-1)

struct rf_s3_signer {
	rf_loop *loop;
	rf_http *h;
	rf_http_auth auth;
	char *sigv4, *userpwd, *token_header; /* secrets: wiped when replaced */
	char *note;                           /* anonymous: which credential sources were tried */
	uint64_t gen;                         /* bumped by every rf_s3_signer_set */
	bool hold;                            /* signed requests wait for credentials */
	int fail_code;                        /* sticky failure of signed requests (0 = none) */
	char *fail_msg;
	void (*expired)(void *arg);
	void *expired_arg;
	int64_t expired_timer;
	struct {
		char bucket[64], region[RF_S3_REGION_BYTES];
	} regions[RF_S3_REGIONS_MAX]; /* learned from wrong-region answers; oldest replaced */
	uint32_t nregions, regions_next;
	char region[RF_S3_REGION_BYTES]; /* the default signing region */
};

/* One signed request's own. */
typedef struct s3_req {
	char *region;         /* its SigV4 region (NULL = the signer's) */
	char *bucket;         /* NULL = unknown */
	bool region_followed; /* a region mismatch was followed once */
	bool expiry_retried;  /* met ExpiredToken once already */
	uint64_t gen;         /* credentials the current attempt was signed with */
	char bucket_region[RF_S3_REGION_BYTES]; /* x-amz-bucket-region of the current response */
} s3_req;

static const char *req_region(const rf_s3_signer *s, const s3_req *r)
{
	return r->region ? r->region : s->region;
}

/* ------------------------------------------------------ region mismatch */

static const char *region_learned(const rf_s3_signer *s, const char *bucket)
{
	for (uint32_t i = 0; bucket && i < s->nregions; i++)
		if (!strcmp(s->regions[i].bucket, bucket))
			return s->regions[i].region;
	return NULL;
}

static void region_learn(rf_s3_signer *s, const char *bucket, const char *region)
{
	if (!bucket || strlen(bucket) >= sizeof(s->regions[0].bucket))
		return;
	uint32_t i = 0;
	while (i < s->nregions && strcmp(s->regions[i].bucket, bucket) != 0)
		i++;
	if (i == s->nregions) {
		if (s->nregions < RF_S3_REGIONS_MAX)
			s->nregions++;
		else
			i = s->regions_next++ % RF_S3_REGIONS_MAX;
	}
	snprintf(s->regions[i].bucket, sizeof(s->regions[i].bucket), "%s", bucket);
	snprintf(s->regions[i].region, sizeof(s->regions[i].region), "%s", region);
}

/* Points x at region: signs for it and, on an AWS endpoint, moves the URL
 * to s3.REGION.amazonaws.com (a custom endpoint keeps its host). */
static int set_region(rf_http_xfer *x, s3_req *r, const char *region)
{
	char *reg = strdup(region);
	char *url = rf_url_aws_s3_with_region(rf_http_xfer_url(x), region);
	int rc = reg ? 0 : -ENOMEM;
	if (rc == 0 && url)
		rc = rf_http_xfer_retarget(x, url);
	free(url);
	if (rc < 0) {
		free(reg);
		return rc;
	}
	free(r->region);
	r->region = reg;
	return 0;
}

/* The region S3 says the bucket is in: x-amz-bucket-region, else the
 * <Region> of the error body; "" when neither is a plausible name. */
static void region_named(const s3_req *r, const rf_http_xfer *x, char *out, size_t cap)
{
	snprintf(out, cap, "%s", r->bucket_region);
	const char *p = out[0] ? NULL : strstr(rf_http_xfer_error_body(x), "<Region>");
	if (p) {
		p += 8;
		size_t n = strcspn(p, "<");
		snprintf(out, cap, "%.*s", (int)RF_MIN(n, cap - 1), p);
	}
	if (!rf_s3_region_ok(out))
		out[0] = '\0';
}

/* ------------------------------------------------------------ the hooks */

/* A signed request's region: a region learned for its bucket, else the
 * one asked for (scope); and its bucket. */
static int s3_begin(void *state, const rf_http_request *req, rf_http_xfer *x, void **data)
{
	rf_s3_signer *s = state;
	s3_req *r = calloc(1, sizeof(*r));
	if (!r || (req->bucket && !(r->bucket = strdup(req->bucket)))) {
		free(r);
		return -ENOMEM;
	}
	const char *learned = region_learned(s, req->bucket);
	int rc = 0;
	if (learned)
		rc = set_region(x, r, learned);
	else if (req->scope && rf_s3_region_ok(req->scope) && !(r->region = strdup(req->scope)))
		rc = -ENOMEM;
	if (rc < 0) {
		free(r->bucket);
		free(r);
		return rc;
	}
	*data = r;
	return 0;
}

static void s3_end(void *state, void *data)
{
	s3_req *r = data;
	(void)state;
	if (r) {
		free(r->region);
		free(r->bucket);
		free(r);
	}
}

static rf_http_auth_gate s3_gate(void *state, void *data, int *code, const char **msg)
{
	rf_s3_signer *s = state;
	(void)data;
	if (s->hold)
		return RF_AUTH_WAIT;
	if (s->fail_code) {
		*code = s->fail_code;
		*msg = s->fail_msg;
		return RF_AUTH_FAIL;
	}
	return RF_AUTH_GO;
}

static int s3_sign(void *state, void *data, rf_http_xfer *x)
{
	rf_s3_signer *s = state;
	s3_req *r = data;
	r->bucket_region[0] = '\0';
	/* S3 keys are opaque: "a/../b" names its own object, so the path goes
	 * out (and is signed) as given; curl would remove dot segments. */
	rf_http_xfer_path_as_is(x);
	RF_TRY(rf_http_xfer_add_header(x, "x-amz-content-sha256: UNSIGNED-PAYLOAD"));
	r->gen = s->gen;
	if (!s->userpwd)
		return 0; /* anonymous */
	if (s->token_header)
		RF_TRY(rf_http_xfer_add_header(x, s->token_header));
	char sigv4[RF_S3_REGION_BYTES + 16];
	if (r->region) /* all four fields, or curl derives region and service from the host */
		snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", r->region);
	rf_http_xfer_sigv4(x, r->region ? sigv4 : s->sigv4, s->userpwd);
	return 0;
}

/* Runs inside curl's header callback: records only. */
static void s3_header(void *state, void *data, const char *line, size_t len)
{
	s3_req *r = data;
	static const char name[] = "x-amz-bucket-region:";
	(void)state;
	if (!strncmp(line, "HTTP/", 5)) {
		r->bucket_region[0] = '\0'; /* a new response */
		return;
	}
	if (len < sizeof(name) - 1 || strncasecmp(line, name, sizeof(name) - 1) != 0)
		return;
	const char *v = line + sizeof(name) - 1;
	snprintf(r->bucket_region, sizeof(r->bucket_region), "%s", v + strspn(v, " \t"));
	if (!rf_s3_region_ok(r->bucket_region))
		r->bucket_region[0] = '\0'; /* untrusted: only a plausible name is used */
}

/* A signed request to the wrong region (S3 answers 400
 * AuthorizationHeaderMalformed, or 301 PermanentRedirect without a
 * Location, naming the bucket's region in x-amz-bucket-region or the
 * body): once per request, the region is learned for the bucket and the
 * request goes again, first in line, signed for it (a hop). */
static rf_http_auth_again s3_answered(void *state, void *data, rf_http_xfer *x)
{
	rf_s3_signer *s = state;
	s3_req *r = data;
	long status = rf_http_xfer_status(x);
	char code[64], region[RF_S3_REGION_BYTES];
	if (r->region_followed || (status != 400 && status != 301))
		return RF_AUTH_NO;
	rf_http_s3_error_code(rf_http_xfer_error_body(x), code, sizeof(code));
	if (strcmp(code, status == 400 ? "AuthorizationHeaderMalformed" : "PermanentRedirect"))
		return RF_AUTH_NO;
	region_named(r, x, region, sizeof(region));
	if (!region[0] || !strcmp(region, req_region(s, r)))
		return RF_AUTH_NO;
	char *moved = rf_url_aws_s3_with_region(rf_http_xfer_url(x), region);
	bool useful = moved || s->userpwd; /* anonymous: only another host helps */
	free(moved);
	if (!useful || set_region(x, r, region) < 0)
		return RF_AUTH_NO;
	region_learn(s, r->bucket, region);
	if (rf_http_tracing(s->h))
		fprintf(stderr,
		        "http: %s: HTTP %ld %s: the bucket is in region %s, signing for it\n",
		        rf_http_xfer_name(x), status, code, region);
	r->region_followed = true;
	return RF_AUTH_HOP;
}

static void on_expired_timer(void *arg, int res)
{
	rf_s3_signer *s = arg;
	(void)res;
	s->expired_timer = NO_TIMER;
	if (s->expired)
		s->expired(s->expired_arg);
}

/* S3's answer to credentials that expired: 400 (or 403) ExpiredToken. A
 * HEAD has no body to say so: with a session token, its 400/403 counts as
 * possibly expired (one refresh and retry at worst). Once per request, and
 * only for credentials an owner can refresh (static ones would fail again). */
static bool expired_token(const rf_s3_signer *s, const s3_req *r, const rf_http_xfer *x)
{
	char code[64];
	long status = rf_http_xfer_status(x);
	if (r->expiry_retried || !s->expired || (status != 400 && status != 403))
		return false;
	if (rf_http_xfer_kind(x) == RF_HTTP_HEAD)
		return s->token_header != NULL;
	rf_http_s3_error_code(rf_http_xfer_error_body(x), code, sizeof(code));
	return !strcmp(code, "ExpiredToken");
}

/* Expired: the request goes again first in line; it starts when fresh
 * credentials are set (at once when they already were, since it was signed). */
static rf_http_auth_again s3_refused(void *state, void *data, rf_http_xfer *x)
{
	rf_s3_signer *s = state;
	s3_req *r = data;
	if (!expired_token(s, r, x))
		return RF_AUTH_NO;
	r->expiry_retried = true;
	if (rf_http_tracing(s->h))
		fprintf(stderr, "http: %s: ExpiredToken, retry with fresh credentials\n",
		        rf_http_xfer_name(x));
	if (r->gen == s->gen && !s->hold) {
		s->hold = true;
		if (s->expired_timer < 0) {
			int64_t id = rf_loop_timer(s->loop, 0, on_expired_timer, s);
			s->expired_timer = id >= 0 ? id : NO_TIMER;
		}
	}
	return RF_AUTH_RETRY;
}

static void s3_explain(void *state, void *data, const rf_http_xfer *x, char *out, size_t cap)
{
	rf_s3_signer *s = state;
	s3_req *r = data;
	long status = rf_http_xfer_status(x);
	char code[64], region[RF_S3_REGION_BYTES], hint[256] = "";
	rf_http_s3_error_code(rf_http_xfer_error_body(x), code, sizeof(code));
	region_named(r, x, region, sizeof(region));
	bool denied = status == 403 || status == 401;
	/* anonymous because the credential chain found nothing: say so */
	const char *note = denied && !s->userpwd && s->note ? s->note : NULL;
	if (!code[0] && denied && !note)
		snprintf(
		    hint, sizeof(hint),
		    " (no S3 error code: a HEAD has no body; a wrong key or secret is likely)");
	else if (region[0] && (status == 301 || status == 400))
		snprintf(hint, sizeof(hint),
		         " (the bucket is in region %s; this request was for %s: set s3_region or "
		         "AWS_REGION, and an endpoint of that region)",
		         region, r->region_followed ? "it, and still refused" : req_region(s, r));
	snprintf(out, cap, "%s%s%s%s", hint, note ? " (sent unsigned: " : "", note ? note : "",
	         note ? ")" : "");
}

static const rf_http_auth_ops s3_ops = {
    .name = "S3",
    .begin = s3_begin,
    .end = s3_end,
    .gate = s3_gate,
    .sign = s3_sign,
    .header = s3_header,
    .answered = s3_answered,
    .refused = s3_refused,
    .explain = s3_explain,
};

/* ------------------------------------------------------------ the signer */

int rf_s3_signer_new(rf_loop *loop, rf_http *h, rf_s3_signer **out, rf_error *err)
{
	rf_s3_signer *s = calloc(1, sizeof(*s));
	if (!s)
		return rf_fail(err, -ENOMEM, "out of memory for the S3 signer");
	s->loop = loop;
	s->h = h;
	s->auth = (rf_http_auth){&s3_ops, s};
	s->expired_timer = NO_TIMER;
	snprintf(s->region, sizeof(s->region), "us-east-1");
	*out = s;
	return 0;
}

static void forget_keys(rf_s3_signer *s)
{
	rf_secret_free(s->sigv4);
	rf_secret_free(s->userpwd);
	rf_secret_free(s->token_header);
	free(s->note);
	free(s->fail_msg);
	s->sigv4 = s->userpwd = s->token_header = s->note = s->fail_msg = NULL;
}

void rf_s3_signer_free(rf_s3_signer *s)
{
	if (!s)
		return;
	rf_loop_cancel(s->loop, s->expired_timer);
	forget_keys(s);
	free(s);
}

const rf_http_auth *rf_s3_signer_auth(rf_s3_signer *s)
{
	return &s->auth;
}

int rf_s3_signer_set(rf_s3_signer *s, const rf_s3_keys *k, rf_error *err)
{
	forget_keys(s);
	s->fail_code = 0;
	s->gen++;
	if (s->hold) {
		s->hold = false;
		rf_http_kick(s->h); /* held requests start with these credentials */
	}
	/* the default signing region: kept when only the keys change */
	if (k->region && *k->region)
		snprintf(s->region, sizeof(s->region), "%s", k->region);
	if (!k->access_key || !*k->access_key || !k->secret_key || !*k->secret_key) {
		if (k->anonymous_note && !(s->note = strdup(k->anonymous_note)))
			return rf_fail(err, -ENOMEM, "out of memory");
		return 0; /* anonymous */
	}
	/* All four fields, or curl derives region and service from the host name. */
	s->sigv4 = rf_http_dup_printf("aws:amz:%s:s3", s->region);
	s->userpwd = rf_http_dup_printf("%s:%s", k->access_key, k->secret_key);
	if (k->session_token && *k->session_token)
		s->token_header = rf_http_dup_printf("x-amz-security-token: %s", k->session_token);
	if (!s->sigv4 || !s->userpwd || (k->session_token && *k->session_token && !s->token_header))
		return rf_fail(err, -ENOMEM, "out of memory for S3 credentials");
	return 0;
}

void rf_s3_signer_hold(rf_s3_signer *s)
{
	s->hold = true;
}

void rf_s3_signer_fail(rf_s3_signer *s, int code, const char *msg, bool sticky)
{
	s->hold = false;
	rf_http_fail_queued(s->h, &s->auth, code, msg ? msg : "no S3 credentials");
	free(s->fail_msg);
	s->fail_msg = NULL;
	s->fail_code = 0;
	if (sticky && (s->fail_msg = strdup(msg ? msg : "no S3 credentials")))
		s->fail_code = code < 0 ? code : -EACCES;
}

void rf_s3_signer_on_expired(rf_s3_signer *s, void (*expired)(void *arg), void *arg)
{
	s->expired = expired;
	s->expired_arg = arg;
}

/* ------------------------------------------- fixed keys (STS AssumeRole) */

/* curl copies both strings; ours are wiped at once. */
static int fixed_sign(void *state, void *data, rf_http_xfer *x)
{
	const rf_sigv4_fixed *f = state;
	const rf_s3_keys *k = &f->keys;
	(void)data;
	if (!k->access_key || !k->secret_key)
		return -EINVAL;
	char *scope =
	    rf_http_dup_printf("aws:amz:%s:%s", k->region && *k->region ? k->region : "us-east-1",
	                       f->service ? f->service : "s3");
	char *userpwd = rf_http_dup_printf("%s:%s", k->access_key, k->secret_key);
	char *token = k->session_token && *k->session_token
	                  ? rf_http_dup_printf("x-amz-security-token: %s", k->session_token)
	                  : NULL;
	int rc =
	    scope && userpwd && (token || !k->session_token || !*k->session_token) ? 0 : -ENOMEM;
	if (rc == 0 && token)
		rc = rf_http_xfer_add_header(x, token);
	if (rc == 0)
		rf_http_xfer_sigv4(x, scope, userpwd);
	free(scope);
	rf_secret_free(userpwd);
	rf_secret_free(token);
	return rc;
}

static const rf_http_auth_ops fixed_ops = {.name = "SigV4", .sign = fixed_sign};

void rf_sigv4_fixed_init(rf_sigv4_fixed *f, const rf_s3_keys *keys, const char *service)
{
	f->keys = *keys;
	f->service = service;
	f->auth = (rf_http_auth){&fixed_ops, f};
}
