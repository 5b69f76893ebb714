/* s3_sign.h - the S3 store's signer behind the HTTP client's seam
 * (rf_http_auth, http.h): SigV4 with the keys the credential chain sets
 * (creds.c), the hold while the chain has not answered, following a
 * bucket's region once, one refresh-and-retry on ExpiredToken, and the
 * words a refusal gets. Also a fixed-key SigV4 signer for the chain's own
 * STS requests. Secrets live only in the signer's strings (wiped when
 * replaced or freed) and curl's copies; they never reach a message. Every
 * call on the loop thread. Internal. */
#ifndef RF_S3_SIGN_H
#define RF_S3_SIGN_H

#include "http.h"
#include "loop.h"

#define RF_S3_REGIONS_MAX  64 /* buckets whose region was learned from a mismatch */
#define RF_S3_REGION_BYTES 48

/* SigV4 keys (borrowed). All key fields NULL = anonymous; then
 * anonymous_note (may be NULL), e.g. which credential sources were tried,
 * is added to the message of a signed request's 401/403. */
typedef struct rf_s3_keys {
	const char *region, *access_key, *secret_key, *session_token;
	const char *anonymous_note;
} rf_s3_keys;

typedef struct rf_s3_signer rf_s3_signer;

/* Anonymous, region us-east-1, until rf_s3_signer_set. */
int rf_s3_signer_new(rf_loop *loop, rf_http *h, rf_s3_signer **out, rf_error *err);
void rf_s3_signer_free(rf_s3_signer *s); /* before the client */
/* What a signed request names (rf_http_request.auth). */
const rf_http_auth *rf_s3_signer_auth(rf_s3_signer *s);
/* The keys signed requests use from their next attempt on (requests in
 * flight keep theirs); ends a hold (held requests start) and a failure. */
int rf_s3_signer_set(rf_s3_signer *s, const rf_s3_keys *k, rf_error *err);
/* Signed requests wait (queued) until rf_s3_signer_set or _fail. */
void rf_s3_signer_hold(rf_s3_signer *s);
/* Fails every signed request queued now with code and msg (which names the
 * credential source, never a secret) and ends the hold; sticky: later ones
 * fail the same way until rf_s3_signer_set. */
void rf_s3_signer_fail(rf_s3_signer *s, int code, const char *msg, bool sticky);
/* With an owner set, a signed request that meets S3's ExpiredToken (HTTP
 * 400/403; for a HEAD, any 400/403 while a session token is in use) is
 * retried once: if its credentials are still the current ones, signed
 * requests are held and expired(arg) runs (from the loop) so the owner
 * refreshes them. Without one (static keys) nothing is retried. */
void rf_s3_signer_on_expired(rf_s3_signer *s, void (*expired)(void *arg), void *arg);

/* SigV4 with fixed keys for one service (STS AssumeRole): no hold, no
 * region following. Keys and service are borrowed until the request ends. */
typedef struct rf_sigv4_fixed {
	rf_s3_keys keys;
	const char *service;
	rf_http_auth auth;
} rf_sigv4_fixed;
void rf_sigv4_fixed_init(rf_sigv4_fixed *f, const rf_s3_keys *keys, const char *service);

#endif
