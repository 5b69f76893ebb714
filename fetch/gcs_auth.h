/* gcs_auth.h - Google Cloud Storage's OAuth pieces that need no I/O (issue
 * 29 item 2): the credential files Google's libraries read (a service
 * account key from GOOGLE_APPLICATION_CREDENTIALS; gcloud's application
 * default credentials, an `authorized_user` refresh token), the token
 * request each one makes (an RS256-signed JWT bearer assertion, RFC 7523,
 * signed with OpenSSL's libcrypto; or a refresh_token grant, RFC 6749 6;
 * the answers are oauth.h's). Not yet wired into the transport: the store seam that will carry
 * bearer tokens comes first.
 *
 * Untrusted input throughout: files and answers are bounded, fields are
 * checked, errors name the file or endpoint and the field, never a secret.
 * Secrets (the private key, client secret, refresh token, access token) are
 * wiped on free. Internal. */
#ifndef RF_GCS_AUTH_H
#define RF_GCS_AUTH_H

#include "oauth.h"
#include "ringfeed.h"
#include <stddef.h>
#include <stdint.h>

#define RF_GCS_KEY_FILE_MAX   (64u << 10) /* a credentials file */
#define RF_GCS_TOKEN_URI      "https://oauth2.googleapis.com/token"
#define RF_GCS_SCOPE_READ     "https://www.googleapis.com/auth/devstorage.read_only"
#define RF_GCS_ASSERTION_SECS 3600 /* a JWT's lifetime, as Google's libraries ask */

typedef enum rf_gcs_key_kind {
	RF_GCS_KEY_SERVICE_ACCOUNT = 1,
	RF_GCS_KEY_AUTHORIZED_USER,
} rf_gcs_key_kind;

typedef struct rf_gcs_key {
	rf_gcs_key_kind kind;
	char *token_uri;                     /* where the request goes (https, or loopback http) */
	char *client_email, *key_id;         /* service account: iss, kid */
	char *private_key;                   /* PEM; a secret */
	char *client_id;                     /* authorized user */
	char *client_secret, *refresh_token; /* secrets */
} rf_gcs_key;

/* Parses a credentials file's text (name: for errors). */
int rf_gcs_key_parse(const char *json, size_t len, const char *name, rf_gcs_key *out,
                     rf_error *err);
void rf_gcs_key_wipe(rf_gcs_key *k);

/* The form body (application/x-www-form-urlencoded) to POST to k->token_uri
 * at Unix time now_s: a signed JWT bearer assertion for a service account,
 * a refresh_token grant for an authorized user. Malloc'd, a secret: the
 * caller wipes it. */
int rf_gcs_token_request(const rf_gcs_key *k, int64_t now_s, const char *scope, char **body,
                         rf_error *err);

/* base64url without padding (RFC 4648 5) of n bytes into out (cap bytes,
 * NUL-terminated); the length written, or -1 when it does not fit. */
long rf_base64url(const unsigned char *in, size_t n, char *out, size_t cap);

#endif
