/* creds.h - the AWS credential chain for S3 signing, in the SDKs' order:
 * explicit options -> environment (both resolved by rf_s3_config_resolve)
 * -> web identity (AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE, STS
 * AssumeRoleWithWebIdentity) -> the shared files' profile (static keys,
 * role_arn + source_profile via STS AssumeRole, credential_process) ->
 * container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI)
 * -> instance metadata (IMDSv2). Nothing found: anonymous, and the first
 * 401/403 says which sources were tried.
 *
 * Every fetch runs on the loop: HTTP through the client it signs for
 * (rf_http, the shared curl multi), credential_process as a child whose
 * stdout pipe the ring polls; nothing blocks. Temporary credentials are
 * refreshed before they expire (min(5 min, a third of their lifetime)
 * ahead) while reads go on with the old ones; a request that still meets
 * ExpiredToken waits for the refresh and is retried once (s3_sign.c). Failures
 * name the source tried, never a secret; secrets are wiped on free.
 * Internal. */
#ifndef RF_CREDS_H
#define RF_CREDS_H

#include "http.h"
#include "loop.h"
#include "s3.h"
#include "s3_sign.h"
#include "source.h"
#include <stdint.h>

#define RF_CREDS_BODY_BYTES_MAX     (64u << 10) /* one STS/container/IMDS response */
#define RF_CREDS_TOKEN_BYTES_MAX    (16u << 10) /* a session or web identity token */
#define RF_CREDS_PROCESS_TIMEOUT_MS 30000u      /* credential_process is killed after */
#define RF_CREDS_PROCESS_ARGS_MAX   64u
#define RF_CREDS_IMDS_CONNECT_MS    1000u /* not on EC2: fail fast, as the SDKs do */
#define RF_CREDS_REFRESH_AHEAD_MS   300000u

typedef struct rf_creds rf_creds;

/* Starts the chain for signer (region and the explicit or environment keys
 * from s3); its fetches (STS, container, IMDS) go through h. When the answer
 * needs a fetch, the signer holds signed requests until it comes. A chain
 * that cannot start (a bad shared file, a profile that does not exist) is an
 * error. *out is NULL when nothing needs to be kept (static keys, anonymous). */
int rf_creds_start(rf_loop *loop, rf_http *h, rf_s3_signer *signer, const rf_fetch_options *opt,
                   const rf_s3_config *s3, rf_creds **out, rf_error *err);
/* Cancels what is in flight (kills a credential_process) and wipes. Before
 * rf_http_free of its client. */
void rf_creds_free(rf_creds *c);

/* ---- pure helpers (unit tested, fuzzed) ---- */

typedef struct rf_creds_value {
	char *access_key, *secret_key, *session_token; /* token may be NULL */
	int64_t expires_ms;                            /* Unix ms; 0 = does not expire */
} rf_creds_value;

void rf_creds_value_wipe(rf_creds_value *v);

typedef enum rf_creds_json_kind {
	RF_CREDS_JSON_PROCESS = 0, /* credential_process: Version 1, SessionToken */
	RF_CREDS_JSON_CONTAINER,   /* container and IMDS: Token (IMDS: Code Success) */
} rf_creds_json_kind;

/* An STS AssumeRole / AssumeRoleWithWebIdentity response (or its
 * ErrorResponse: -EACCES with the code). Refuses DTDs, deep nesting,
 * oversized text, missing fields and keys that could not be sent. */
int rf_creds_parse_sts(const char *xml, size_t len, rf_creds_value *out, rf_error *err);
int rf_creds_parse_json(const char *json, size_t len, rf_creds_json_kind kind, rf_creds_value *out,
                        rf_error *err);
/* ISO 8601 UTC ("2026-12-01T10:00:00Z", optional fraction, "+00:00"). */
int rf_creds_parse_time(const char *s, int64_t *unix_ms);
/* credential_process's command line split into argv without a shell:
 * blanks separate, '...' and "..." quote, backslash escapes (in "..." and
 * bare); NULL-terminated, free with rf_creds_argv_free. */
int rf_creds_split_command(const char *cmd, char ***argv, rf_error *err);
void rf_creds_argv_free(char **argv);
/* How long from now_ms until credentials obtained at obtained_ms and
 * expiring at expires_ms are refreshed: min(5 min, a third of the
 * lifetime) before they expire, at least 500 ms from now. */
int64_t rf_creds_refresh_delay_ms(int64_t now_ms, int64_t obtained_ms, int64_t expires_ms);

#endif
