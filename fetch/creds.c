/* creds.c - the credential chain's life (see creds.h, creds_int.h): start
 * it (the source picked by creds_pick.c), set what arrives in the client it
 * signs for, refresh before expiry (the client keeps signing with the old
 * credentials until the new ones are set), start a fetch of the picked
 * source (creds_fetch.c, creds_process.c) and end it with credentials or a
 * failure naming the source, free. */
#include "creds_int.h"

#include <stdio.h>

#define RETRY_DELAY_MS_MAX 60000

static void fetch_done(rf_creds *c, int rc, const char *why, rf_creds_value *v);
static int fetch_start(rf_creds *c, rf_error *err);

static void schedule_refresh(rf_creds *c, int64_t delay_ms);

static void on_refresh_timer(void *arg, int res)
{
	rf_creds *c = arg;
	c->refresh_timer = NO_OP;
	if (c->fetching)
		return;
	rf_error err = {0};
	int rc = fetch_start(c, &err);
	if (rc < 0)
		fetch_done(c, rc, err.msg, NULL);
}

static void schedule_refresh(rf_creds *c, int64_t delay_ms)
{
	rf_loop_cancel(c->loop, c->refresh_timer);
	int64_t id = rf_loop_timer(c->loop, (uint64_t)delay_ms * 1000000ull, on_refresh_timer, c);
	c->refresh_timer = id >= 0 ? id : NO_OP;
}

static int apply(rf_creds *c, rf_creds_value *v, rf_error *err)
{
	/* Credentials that are (nearly) expired when they arrive would bring the
	 * refresh back at once, and again: refused, so refreshes stay bounded. */
	if (v->expires_ms && v->expires_ms <= creds_wall_ms() + 1000)
		return rf_fail(err, -EPROTO, "the credentials received expire within a second");
	rf_s3_keys k = {c->s3_region, v->access_key, v->secret_key, v->session_token, NULL};
	RF_TRY(rf_s3_signer_set(c->signer, &k, err));
	rf_creds_value_wipe(&c->cur);
	c->cur = *v;
	memset(v, 0, sizeof(*v));
	c->obtained_ms = creds_wall_ms();
	c->initial = false;
	if (c->cur.expires_ms)
		schedule_refresh(c, rf_creds_refresh_delay_ms(c->obtained_ms, c->obtained_ms,
		                                              c->cur.expires_ms));
	return 0;
}

/* The chain found nothing: anonymous, and a denied request says why. */
static int anonymous(rf_s3_signer *s, const char *tried, rf_error *err)
{
	char note[600];
	snprintf(note, sizeof(note), "no credentials found: tried %.560s", tried);
	return rf_s3_signer_set(s, &(rf_s3_keys){.anonymous_note = note}, err);
}

static void fetch_failed(rf_creds *c, int rc, const char *why)
{
	char msg[RF_ERROR_MSG_BYTES];
	snprintf(msg, sizeof(msg), "S3 credentials from %.200s: %.280s", c->source, why);
	if (c->initial && c->kind == K_IMDS) { /* the last source: not on EC2 */
		char tried[sizeof(c->tried) + 300];
		snprintf(tried, sizeof(tried), "%s (%.280s)", c->tried, why);
		rf_error err = {0};
		if (anonymous(c->signer, tried, &err) < 0)
			rf_s3_signer_fail(c->signer, err.code, err.msg, true);
		return;
	}
	if (c->initial) {
		rf_s3_signer_fail(c->signer, rc, msg, true);
		return;
	}
	/* A refresh failed: requests held for it fail; the old credentials stay
	 * while they last, and another refresh is tried before they expire. */
	rf_s3_signer_fail(c->signer, rc, msg, false);
	int64_t left = c->cur.expires_ms - creds_wall_ms();
	if (left > 1000)
		schedule_refresh(c, RF_MIN(RF_MAX(left / 4, 500), RETRY_DELAY_MS_MAX));
	fprintf(stderr, "ringfeed: %s\n", msg);
}

static void fetch_done(rf_creds *c, int rc, const char *why, rf_creds_value *v)
{
	c->fetching = false;
	c->xfer = NULL;
	rf_secret_free(c->body);
	rf_secret_free(c->post);
	rf_secret_free(c->header);
	c->body = c->post = c->header = NULL;
	rf_error err = {0};
	if (rc == 0 && (rc = apply(c, v, &err)) < 0)
		why = err.msg;
	if (v)
		rf_creds_value_wipe(v);
	if (rc < 0)
		fetch_failed(c, rc, why ? why : "failed");
}

static void on_expired(void *arg)
{
	rf_creds *c = arg;
	if (c->fetching)
		return; /* the refresh in flight releases the held requests */
	rf_loop_cancel(c->loop, c->refresh_timer);
	c->refresh_timer = NO_OP;
	rf_error err = {0};
	int rc = fetch_start(c, &err);
	if (rc < 0)
		fetch_done(c, rc, err.msg, NULL);
}

static int fetch_start(rf_creds *c, rf_error *err)
{
	c->fetching = true;
	c->step = 0;
	int rc;
	switch (c->kind) {
	case K_WEB_IDENTITY:
	case K_ASSUME_ROLE:
		rc = rf_creds_sts_start(c, err);
		break;
	case K_PROCESS:
		rc = rf_creds_process_start(c, err);
		break;
	case K_CONTAINER:
		rc = rf_creds_container_start(c, err);
		break;
	case K_IMDS:
		rc = rf_creds_imds_step(c, err);
		break;
	default:
		rc = rf_fail(err, -EINVAL, "no credential source was picked to fetch from");
		break;
	}
	if (rc < 0) {
		c->fetching = false;
		rf_secret_free(c->post);
		rf_secret_free(c->header);
		c->post = c->header = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------ the chain */

void rf_creds_free(rf_creds *c)
{
	if (!c)
		return;
	rf_s3_signer_on_expired(c->signer, NULL, NULL);
	if (c->xfer)
		rf_http_cancel(c->http, c->xfer);
	rf_loop_cancel(c->loop, c->refresh_timer);
	rf_creds_process_stop(c);
	rf_creds_value_wipe(&c->cur);
	rf_creds_value_wipe(&c->source_keys);
	char **strs[] = {&c->s3_region,
	                 &c->sts_url,
	                 &c->sts_region,
	                 &c->role_arn,
	                 &c->session_name,
	                 &c->token_file,
	                 &c->external_id,
	                 &c->duration_s,
	                 &c->container_url,
	                 &c->container_token,
	                 &c->container_token_file,
	                 &c->imds_url,
	                 &c->body,
	                 &c->post,
	                 &c->header,
	                 &c->imds_token};
	for (size_t i = 0; i < RF_ARRAY_LEN(strs); i++)
		rf_secret_free(*strs[i]);
	rf_creds_argv_free(c->argv);
	free(c);
}

static int start_chain(rf_creds *c, rf_error *err)
{
	rf_creds_value v = {0};
	int rc = rf_creds_pick(c, &v, err);
	if (rc < 0 || (rc == 0 && v.access_key)) { /* a profile's static keys */
		if (rc == 0)
			rc = apply(c, &v, err);
		rf_creds_value_wipe(&v);
		return rc < 0 ? rc : 0;
	}
	if (rc == 0)
		return anonymous(c->signer, c->tried, err) < 0 ? -ENOMEM : 0;
	c->initial = true;
	rf_s3_signer_hold(c->signer);
	rf_s3_signer_on_expired(c->signer, on_expired, c);
	rc = fetch_start(c, err);
	if (rc < 0) {
		char msg[RF_ERROR_MSG_BYTES];
		snprintf(msg, sizeof(msg), "S3 credentials from %.200s: %.280s", c->source,
		         err->msg);
		rf_s3_signer_on_expired(c->signer, NULL, NULL);
		return rf_fail(err, rc, "%s", msg);
	}
	return 1;
}

int rf_creds_start(rf_loop *loop, rf_http *h, rf_s3_signer *signer, const rf_fetch_options *opt,
                   const rf_s3_config *s3, rf_creds **out, rf_error *err)
{
	*out = NULL;
	rf_s3_keys keys = {s3->region, s3->access_key, s3->secret_key, s3->session_token, NULL};
	if (opt->s3.no_sign) /* asked: unsigned, whatever keys there are */
		return rf_s3_signer_set(signer, &(rf_s3_keys){.region = s3->region}, err);
	if (s3->access_key) /* explicit or environment keys */
		return rf_s3_signer_set(signer, &keys, err);
	rf_creds *c = calloc(1, sizeof(*c));
	if (!c)
		return rf_fail(err, -ENOMEM, "out of memory");
	c->loop = loop;
	c->http = h;
	c->signer = signer;
	c->fd = -1;
	c->poll_id = c->reap_timer = c->deadline_timer = c->refresh_timer = NO_OP;
	c->done = fetch_done;
	int rc = creds_dup_to(&c->s3_region, s3->region ? s3->region : "us-east-1", err);
	if (rc == 0)
		rc = start_chain(c, err);
	if (rc <= 0) { /* failed, or nothing to keep */
		rf_creds_free(c);
		return rc;
	}
	*out = c;
	return 0;
}
