/* oauth.h - what every bearer-token store shares (issue 29): the answer of
 * an OAuth 2.0 token endpoint or of a cloud's metadata token endpoint
 * (Google's token URI and metadata server, Microsoft Entra ID, Azure's
 * instance metadata: access_token, token_type Bearer, and expires_in as a
 * number or, as Azure's metadata service writes it, a decimal string; or
 * expires_on, Unix seconds), and the client-credentials request with a
 * federated assertion (RFC 7521/7523: Entra workload identity sends the
 * Kubernetes service-account token as the client assertion).
 *
 * Untrusted input: answers are bounded, fields checked, an OAuth error is
 * named only when it is one of OAuth's fixed words (its description may
 * echo input), never a token. Internal. */
#ifndef RF_OAUTH_H
#define RF_OAUTH_H

#include "ringfeed.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RF_OAUTH_BODY_MAX   (64u << 10) /* a token endpoint's answer */
#define RF_OAUTH_TOKEN_MAX  (16u << 10) /* an access token */
#define RF_OAUTH_LIFE_MAX_S (7 * 86400) /* the longest lifetime believed */

/* An access token from a token answer's JSON (what: names the endpoint in
 * errors). *expires_ms: Unix ms, from expires_in (relative to now_ms) or
 * expires_on. *token is malloc'd, a secret. */
int rf_oauth_token_parse(const char *json, size_t len, const char *what, int64_t now_ms,
                         char **token, int64_t *expires_ms, rf_error *err);

/* The form body of a client-credentials grant with a client assertion
 * (grant_type=client_credentials, client_assertion_type jwt-bearer,
 * client_id, client_assertion, scope), every value form-encoded. The
 * assertion (a JWT) must be visible ASCII. Malloc'd, a secret. */
int rf_oauth_assertion_request(const char *client_id, const char *assertion, const char *scope,
                               char **body, rf_error *err);

/* Where a token, an assertion or a refresh token may be sent: https://HOST...,
 * or http:// only to a loopback address (a test's stand-in); no userinfo,
 * no fragment, no space or control byte, and no query unless allow_query.
 * n: the bytes of u to check. */
bool rf_oauth_endpoint_ok(const char *u, size_t n, bool allow_query);

/* name=ENCODED(value), '&'-joined after the first, at out[*o] (cap bytes in
 * all); -1 when it does not fit. */
int rf_oauth_form_add(char *out, size_t cap, size_t *o, const char *name, const char *value);

#endif
