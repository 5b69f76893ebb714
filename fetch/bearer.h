/* bearer.h - the bearer-token signer every OAuth store shares (issue 29):
 * GCS now (gcs_store.c, its sources in gcs_creds.c), Azure's Entra tokens
 * next. A store picks a token *source* (what request fetches a token: a
 * service account's signed JWT, a refresh-token grant, a metadata server, a
 * federated assertion) and hands it here; the signer sends that request
 * through the HTTP client (a credential request: its answer and what it
 * sends are secrets, same-origin redirects only), parses the OAuth answer
 * (oauth.h), adds `Authorization: Bearer` to every request that names it,
 * and refreshes the token before it expires on the AWS chain's schedule
 * (rf_creds_refresh_delay_ms: min(5 min, a third of the lifetime) ahead)
 * while requests go on with the old one. A 401 with the current token holds
 * requests, refreshes at once and retries the request once. Until the first
 * token arrives, requests wait (the gate); when the source fails the first
 * time, they fail with a message naming the source and the chain tried (or,
 * when the store says so, go unsigned with that note). Never a secret in a
 * message; the token and requests are wiped when replaced or freed. Every
 * call on the loop thread. Internal. */
#ifndef RF_BEARER_H
#define RF_BEARER_H

#include "http.h"
#include "loop.h"

#define RF_BEARER_CONNECT_MS_METADATA 1000u /* not on a cloud VM: fail fast */

/* One token request, built by the source each time (a JWT is signed anew). */
typedef struct rf_bearer_request {
	char *url;                   /* malloc'd; checked by rf_oauth_endpoint_ok */
	char *post;                  /* malloc'd form body, a secret (NULL: GET) */
	const char *headers[3];      /* static "Name: value" lines, NULL-terminated */
	uint32_t connect_timeout_ms; /* 0: the client's */
	int retries;                 /* 0: the client's; < 0: none */
} rf_bearer_request;

/* Where tokens come from. request builds the next request at Unix time
 * now_s; name says which source in messages (never a secret). */
typedef struct rf_bearer_source {
	int (*request)(void *ctx, int64_t now_s, rf_bearer_request *req, rf_error *err);
	void *ctx;
	char name[300];
	bool anonymous_on_failure; /* the chain's last resort (a metadata server): a
	                            * first failure means "not here": unsigned */
} rf_bearer_source;

typedef struct rf_bearer rf_bearer;

/* what: the store's words for messages ("GCS"). */
int rf_bearer_new(rf_loop *loop, rf_http *h, const char *what, rf_bearer **out, rf_error *err);
/* Cancels the fetch in flight and the timers, wipes. Before rf_http_free. */
void rf_bearer_free(rf_bearer *b);
/* What a signed request names (rf_http_request.auth). */
const rf_http_auth *rf_bearer_auth(rf_bearer *b);
/* Starts fetching from src (copied; src->ctx kept by the caller until
 * rf_bearer_free); requests wait until the first token. src NULL: unsigned
 * requests. tried: the chain as tried, for every refusal ("tried:
 * GOOGLE_APPLICATION_CREDENTIALS (not set), ..."). */
int rf_bearer_start(rf_bearer *b, const rf_bearer_source *src, const char *tried, rf_error *err);

/* A static "Name: value" line every request through this signer carries,
 * with a token or unsigned (Azure's x-ms-version, which bearer auth needs);
 * line is kept by the caller until rf_bearer_free. NULL: none. */
void rf_bearer_set_header(rf_bearer *b, const char *line);

/* Tokens obtained so far (tests and traces). */
uint64_t rf_bearer_tokens(const rf_bearer *b);

#endif
