/* creds_int.h - what the files of the credential chain share (internal to
 * creds.c, creds_pick.c, creds_fetch.c and creds_process.c; the rest of
 * fetch/ sees creds.h).
 *
 *   creds.c          the chain's life: start, set and refresh credentials,
 *                    start a fetch of the picked source and end it, free
 *   creds_pick.c     which source answers, in the SDKs' order, decided
 *                    synchronously from the environment and the shared files
 *   creds_fetch.c    the HTTP endpoints: STS (AssumeRole, web identity),
 *                    container credentials, IMDSv2
 *   creds_process.c  credential_process: a child whose stdout the ring polls
 *   creds_parse.c    the pure parsers of what the sources answer
 * A fetch ends through c->done (set by creds.c), so creds.c calls the
 * fetchers and the picker and nothing calls back up into creds.c. */
#ifndef RF_CREDS_INT_H
#define RF_CREDS_INT_H

#include "creds.h"
#include "s3_sign.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#define NO_OP (-1)

typedef enum creds_kind {
	K_NONE = 0, /* nothing picked: a fetch of it is refused */
	K_WEB_IDENTITY,
	K_ASSUME_ROLE,
	K_PROCESS,
	K_CONTAINER,
	K_IMDS,
} creds_kind;

struct rf_creds {
	rf_loop *loop;
	rf_http *http;
	rf_s3_signer *signer; /* where the credentials go */
	creds_kind kind;
	char source[480]; /* names the source in messages: never a secret */
	char tried[480];  /* the sources tried before it (for "nothing found") */
	char *s3_region;
	/* the source's parameters */
	char *sts_url, *sts_region, *role_arn, *session_name, *token_file, *external_id;
	char *duration_s;
	rf_creds_value source_keys; /* AssumeRole: signed with the source profile's */
	char **argv;                /* credential_process */
	char *container_url, *container_token, *container_token_file;
	char *imds_url;
	/* the fetch in flight */
	bool fetching;
	int step; /* IMDS: 0 token, 1 role name, 2 credentials */
	rf_http_xfer *xfer;
	char *body, *post, *header, *imds_token;
	const char *headers[2];
	rf_sigv4_fixed sts; /* AssumeRole: signed with source_keys */
	char imds_role[256];
	char url[1024];
	/* credential_process */
	pid_t pid;
	int fd;
	int64_t poll_id, reap_timer, deadline_timer;
	uint64_t deadline_ns;
	char *out;
	size_t out_len;
	/* what is set */
	rf_creds_value cur;
	bool initial;
	int64_t obtained_ms;
	int64_t refresh_timer;
	/* Set by the chain (creds.c): how a fetch (creds_fetch.c,
	 * creds_process.c) ends, with credentials (rc 0, *v taken) or a failure
	 * naming why. Called, not linked, so the fetchers never call back up
	 * into the chain. */
	void (*done)(rf_creds *c, int rc, const char *why, rf_creds_value *v);
};

static inline int64_t creds_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int creds_dup_to(char **dst, const char *src, rf_error *err)
{
	if (!src)
		return 0;
	return (*dst = strdup(src)) ? 0 : rf_fail(err, -ENOMEM, "out of memory");
}

/* creds_pick.c: 1 = a source to fetch from (c->kind, its parameters set),
 * 0 = a profile's static keys in *v, or nothing found (c->tried says what
 * was tried). */
int rf_creds_pick(rf_creds *c, rf_creds_value *v, rf_error *err);

/* creds_fetch.c: start the first request of a source (its answer ends the
 * fetch through c->done). */
int rf_creds_sts_start(rf_creds *c, rf_error *err);       /* K_WEB_IDENTITY, K_ASSUME_ROLE */
int rf_creds_container_start(rf_creds *c, rf_error *err); /* K_CONTAINER */
int rf_creds_imds_step(rf_creds *c, rf_error *err);       /* K_IMDS, step c->step */

/* creds_process.c: runs credential_process (c->argv); its exit ends the
 * fetch through c->done. Stop kills and reaps it, and wipes its output. */
int rf_creds_process_start(rf_creds *c, rf_error *err);
void rf_creds_process_stop(rf_creds *c);

#endif
