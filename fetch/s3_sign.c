/* s3_sign.c - the S3 store's request signing in the HTTP client: the SigV4
 * keys signed requests use (set by the credential chain, creds.c), the hold
 * while the chain has not answered, a request's own keys (STS), following a
 * bucket's region once, and one refresh-and-retry on ExpiredToken. Secrets
 * live only in the client's strings (wiped when replaced) and curl's copies;
 * they never reach a message. Below the state machine (http.c): it calls
 * only the client's records (http_xfer.c) and its loop (http_loop.c). */
#include "http_int.h"
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rf_xfer_sign_s3(rf_http *h, rf_http_xfer *x)
{
	RF_TRY(rf_xfer_add_header(x, "x-amz-content-sha256: UNSIGNED-PAYLOAD"));
	x->s3_gen = h->s3_gen;
	if (!h->s3_userpwd)
		return 0; /* anonymous */
	if (h->s3_token_header)
		RF_TRY(rf_xfer_add_header(x, h->s3_token_header));
	char sigv4[REGION_BYTES + 16];
	if (x->region) /* all four fields, or curl derives region and service from the host */
		snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", x->region);
	curl_easy_setopt(x->easy, CURLOPT_AWS_SIGV4, x->region ? sigv4 : h->s3_sigv4); /* copied */
	curl_easy_setopt(x->easy, CURLOPT_USERPWD, h->s3_userpwd);
	return 0;
}

/* SigV4 with the request's own keys and service (STS AssumeRole). curl
 * copies both strings; ours are wiped at once. */
int rf_xfer_sign_sigv4(rf_http_xfer *x)
{
	const rf_http_s3 *k = x->req.sigv4;
	if (!k->access_key || !k->secret_key)
		return -EINVAL;
	char *scope =
	    rf_http_dup_printf("aws:amz:%s:%s", k->region && *k->region ? k->region : "us-east-1",
	                       x->req.sigv4_service ? x->req.sigv4_service : "s3");
	char *userpwd = rf_http_dup_printf("%s:%s", k->access_key, k->secret_key);
	char *token = k->session_token && *k->session_token
	                  ? rf_http_dup_printf("x-amz-security-token: %s", k->session_token)
	                  : NULL;
	int rc =
	    scope && userpwd && (token || !k->session_token || !*k->session_token) ? 0 : -ENOMEM;
	if (rc == 0 && token)
		rc = rf_xfer_add_header(x, token);
	if (rc == 0) {
		curl_easy_setopt(x->easy, CURLOPT_AWS_SIGV4, scope);
		curl_easy_setopt(x->easy, CURLOPT_USERPWD, userpwd);
	}
	free(scope);
	rf_http_wipe_free(userpwd);
	rf_http_wipe_free(token);
	return rc;
}

/* The region S3 says the bucket is in: x-amz-bucket-region, else the
 * <Region> of the error body; "" when neither is a plausible name. */
void rf_xfer_s3_region(const rf_http_xfer *x, char *out, size_t cap)
{
	snprintf(out, cap, "%s", x->bucket_region);
	const char *r = out[0] ? NULL : strstr(x->error_body, "<Region>");
	if (r) {
		r += 8;
		size_t n = strcspn(r, "<");
		snprintf(out, cap, "%.*s", (int)RF_MIN(n, cap - 1), r);
	}
	if (!rf_s3_region_ok(out))
		out[0] = '\0';
}

const char *rf_xfer_region(const rf_http_xfer *x)
{
	return x->region ? x->region : x->h->region;
}

/* ------------------------------------------------------ region mismatch */

static const char *region_learned(const rf_http *h, const char *bucket)
{
	for (uint32_t i = 0; bucket && i < h->nregions; i++)
		if (!strcmp(h->regions[i].bucket, bucket))
			return h->regions[i].region;
	return NULL;
}

static void region_learn(rf_http *h, const char *bucket, const char *region)
{
	if (!bucket || strlen(bucket) >= sizeof(h->regions[0].bucket))
		return;
	uint32_t i = 0;
	while (i < h->nregions && strcmp(h->regions[i].bucket, bucket) != 0)
		i++;
	if (i == h->nregions) {
		if (h->nregions < REGIONS_MAX)
			h->nregions++;
		else
			i = h->regions_next++ % REGIONS_MAX;
	}
	snprintf(h->regions[i].bucket, sizeof(h->regions[i].bucket), "%s", bucket);
	snprintf(h->regions[i].region, sizeof(h->regions[i].region), "%s", region);
}

/* Points x at region: signs for it and, on an AWS endpoint, moves the URL
 * to s3.REGION.amazonaws.com (a custom endpoint keeps its host). */
static int xfer_set_region(rf_http_xfer *x, const char *region)
{
	char *r = strdup(region);
	char *url = rf_url_aws_s3_with_region(x->url, region);
	host *hh = url ? rf_http_host_of(x->h, url) : x->host;
	if (!r || !hh) {
		free(r);
		free(url);
		return -ENOMEM;
	}
	free(x->region);
	x->region = r;
	if (url) {
		free(x->url);
		x->url = url;
		x->host = hh;
	}
	return 0;
}

/* A signed request to the wrong region (S3 answers 400
 * AuthorizationHeaderMalformed, or 301 PermanentRedirect without a
 * Location, naming the bucket's region in x-amz-bucket-region or the
 * body): once per request, the region is learned for the bucket and the
 * request goes again, first in line, signed for it (not a new attempt).
 * True when queued. */
bool rf_xfer_follow_region(rf_http_xfer *x)
{
	rf_http *h = x->h;
	char code[64], region[REGION_BYTES];
	if (!x->req.sign || x->region_followed || (x->status != 400 && x->status != 301))
		return false;
	rf_http_s3_error_code(x->error_body, code, sizeof(code));
	if (strcmp(code, x->status == 400 ? "AuthorizationHeaderMalformed" : "PermanentRedirect"))
		return false;
	rf_xfer_s3_region(x, region, sizeof(region));
	if (!region[0] || !strcmp(region, rf_xfer_region(x)))
		return false;
	char *moved = rf_url_aws_s3_with_region(x->url, region);
	bool useful = moved || h->s3_userpwd; /* anonymous: only another host helps */
	free(moved);
	if (!useful || xfer_set_region(x, region) < 0)
		return false;
	region_learn(h, x->bucket, region);
	if (h->trace)
		fprintf(stderr,
		        "http: %s: HTTP %ld %s: the bucket is in region %s, signing for it\n",
		        x->name, x->status, code, region);
	x->region_followed = true;
	x->following = true;
	rf_xfer_queue_first(x);
	return true;
}

static void on_expired_timer(void *arg, int res)
{
	rf_http *h = arg;
	h->s3_expired_timer = NO_OP;
	if (h->s3_expired)
		h->s3_expired(h->s3_expired_arg);
}

/* S3's answer to credentials that expired: 400 (or 403) ExpiredToken. A
 * HEAD has no body to say so: with a session token, its 400/403 counts as
 * possibly expired (one refresh and retry at worst). Once per request, and
 * only for credentials an owner can refresh (static ones would fail again). */
bool rf_xfer_expired_token(rf_http_xfer *x)
{
	char code[64];
	if (!x->req.sign || x->expiry_retried || !x->h->s3_expired ||
	    (x->status != 400 && x->status != 403))
		return false;
	if (x->req.kind == RF_HTTP_HEAD)
		return x->h->s3_token_header != NULL;
	rf_http_s3_error_code(x->error_body, code, sizeof(code));
	return !strcmp(code, "ExpiredToken");
}

/* Queues x again, first in line; it starts when fresh credentials are set
 * (at once when they already were, since x was signed). */
void rf_xfer_wait_for_credentials(rf_http_xfer *x)
{
	rf_http *h = x->h;
	x->expiry_retried = true;
	if (h->trace)
		fprintf(stderr, "http: %s: ExpiredToken, retry with fresh credentials\n", x->name);
	if (x->s3_gen == h->s3_gen && !h->s3_hold) {
		h->s3_hold = true;
		if (h->s3_expired_timer < 0) {
			int64_t id = rf_loop_timer(h->loop, 0, on_expired_timer, h);
			h->s3_expired_timer = id >= 0 ? id : NO_OP;
		}
	}
	rf_xfer_queue_first(x);
}

/* A signed request's region: a region learned for its bucket, else the
 * one asked for; and its bucket. */
int rf_xfer_start_region(rf_http_xfer *x, const rf_http_request *req)
{
	if (req->bucket && !(x->bucket = strdup(req->bucket)))
		return -ENOMEM;
	const char *learned = region_learned(x->h, req->bucket);
	if (learned)
		return xfer_set_region(x, learned);
	if (req->region && rf_s3_region_ok(req->region) && !(x->region = strdup(req->region)))
		return -ENOMEM;
	return 0;
}

int rf_http_set_s3(rf_http *h, const rf_http_s3 *s3, rf_error *err)
{
	rf_http_wipe_free(h->s3_sigv4);
	rf_http_wipe_free(h->s3_userpwd);
	rf_http_wipe_free(h->s3_token_header);
	free(h->s3_note);
	free(h->s3_fail_msg);
	h->s3_sigv4 = h->s3_userpwd = h->s3_token_header = h->s3_note = h->s3_fail_msg = NULL;
	h->s3_fail_code = 0;
	h->s3_gen++;
	if (h->s3_hold) {
		h->s3_hold = false;
		rf_http_loop_kick(&h->curl); /* held requests start with these credentials */
	}
	/* the default signing region: kept when only the keys change */
	if (s3->region && *s3->region)
		snprintf(h->region, sizeof(h->region), "%s", s3->region);
	else if (!h->region[0])
		snprintf(h->region, sizeof(h->region), "us-east-1");
	if (!s3->access_key || !*s3->access_key || !s3->secret_key || !*s3->secret_key) {
		if (s3->anonymous_note && !(h->s3_note = strdup(s3->anonymous_note)))
			return rf_fail(err, -ENOMEM, "out of memory");
		return 0; /* anonymous */
	}
	/* All four fields, or curl derives region and service from the host name. */
	h->s3_sigv4 = rf_http_dup_printf("aws:amz:%s:s3", h->region);
	h->s3_userpwd = rf_http_dup_printf("%s:%s", s3->access_key, s3->secret_key);
	if (s3->session_token && *s3->session_token)
		h->s3_token_header =
		    rf_http_dup_printf("x-amz-security-token: %s", s3->session_token);
	if (!h->s3_sigv4 || !h->s3_userpwd ||
	    (s3->session_token && *s3->session_token && !h->s3_token_header))
		return rf_fail(err, -ENOMEM, "out of memory for S3 credentials");
	return 0;
}

void rf_http_s3_hold(rf_http *h)
{
	h->s3_hold = true;
}

void rf_http_s3_fail(rf_http *h, int code, const char *msg, bool sticky)
{
	h->s3_hold = false;
	rf_http_xfer *next;
	for (rf_http_xfer *x = h->queue_head; x; x = next) {
		next = x->next;
		if (x->req.sign)
			rf_xfer_fail_queued(x, code, msg);
	}
	free(h->s3_fail_msg);
	h->s3_fail_msg = NULL;
	h->s3_fail_code = 0;
	if (sticky && (h->s3_fail_msg = strdup(msg ? msg : "no S3 credentials")))
		h->s3_fail_code = code < 0 ? code : -EACCES;
	rf_http_loop_kick(&h->curl);
}

void rf_http_set_s3_expired(rf_http *h, void (*expired)(void *arg), void *arg)
{
	h->s3_expired = expired;
	h->s3_expired_arg = arg;
}
