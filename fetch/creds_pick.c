/* creds_pick.c - which credential source answers (see creds.h), decided
 * synchronously and in the SDKs' order, reading only the environment and the
 * shared files: web identity, the profile (static keys, role_arn with
 * source_profile or web_identity_token_file, credential_process), container
 * credentials, IMDSv2. Sets the source's kind and parameters, the name shown
 * in messages (never a secret) and the list of sources tried. */
#include "aws_config.h"
#include "creds_int.h"
#include "url.h"

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static void append(char *buf, size_t cap, const char *fmt, ...) RF_PRINTF(3, 4);
static void append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 1 >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, cap - n, fmt, ap);
	va_end(ap);
}

static int sts_endpoint(rf_creds *c, const char *region, rf_error *err)
{
	const char *ep = env("AWS_ENDPOINT_URL_STS");
	if (!ep)
		ep = env("AWS_ENDPOINT_URL");
	int rc = ep ? ((c->sts_url = strdup(ep)) ? 0 : -1)
	            : asprintf(&c->sts_url, "https://sts.%s.amazonaws.com", region);
	if (rc < 0) {
		c->sts_url = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	size_t n = strlen(c->sts_url);
	while (n > 0 && c->sts_url[n - 1] == '/')
		c->sts_url[--n] = '\0';
	rf_url_scheme s = rf_url_scheme_of(c->sts_url);
	if (s != RF_URL_HTTP && s != RF_URL_HTTPS)
		return rf_fail(err, -EINVAL, "STS endpoint '%.200s' must start with http(s)://",
		               c->sts_url);
	RF_TRY(creds_dup_to(&c->sts_region, region, err));
	return 0;
}

static int session_name(rf_creds *c, const char *given, rf_error *err)
{
	if (given)
		return creds_dup_to(&c->session_name, given, err);
	if (asprintf(&c->session_name, "ringfeed-%lld", (long long)creds_wall_ms()) < 0) {
		c->session_name = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* 1 = web identity picked, 0 = not configured. */
static int pick_web_identity(rf_creds *c, rf_error *err)
{
	const char *arn = env("AWS_ROLE_ARN"), *file = env("AWS_WEB_IDENTITY_TOKEN_FILE");
	append(c->tried, sizeof(c->tried), ", web identity");
	if (!arn || !file)
		return 0;
	c->kind = K_WEB_IDENTITY;
	snprintf(c->source, sizeof(c->source),
	         "web identity (AWS_ROLE_ARN, token file %.200s, STS AssumeRoleWithWebIdentity)",
	         file);
	RF_TRY(creds_dup_to(&c->role_arn, arn, err));
	RF_TRY(creds_dup_to(&c->token_file, file, err));
	RF_TRY(session_name(c, env("AWS_ROLE_SESSION_NAME"), err));
	RF_TRY(sts_endpoint(c, c->s3_region, err));
	return 1;
}

static int profile_keys(const rf_aws_shared *s, const char *profile, rf_creds_value *v,
                        rf_error *err)
{
	const char *ak = rf_aws_profile_get(s, profile, "aws_access_key_id");
	const char *sk = rf_aws_profile_get(s, profile, "aws_secret_access_key");
	if (!ak || !*ak || !sk || !*sk)
		return 0;
	const char *tok = rf_aws_profile_get(s, profile, "aws_session_token");
	RF_TRY(creds_dup_to(&v->access_key, ak, err));
	RF_TRY(creds_dup_to(&v->secret_key, sk, err));
	RF_TRY(creds_dup_to(&v->session_token, tok && *tok ? tok : NULL, err));
	return 1;
}

static int pick_assume_role(rf_creds *c, const rf_aws_shared *s, const char *where, const char *arn,
                            rf_error *err)
{
	const char *p = s->profile;
	const char *src = rf_aws_profile_get(s, p, "source_profile");
	const char *token_file = rf_aws_profile_get(s, p, "web_identity_token_file");
	const char *region = rf_aws_profile_get(s, p, "region");
	RF_TRY(creds_dup_to(&c->role_arn, arn, err));
	RF_TRY(session_name(c, rf_aws_profile_get(s, p, "role_session_name"), err));
	RF_TRY(sts_endpoint(c, region && *region ? region : c->s3_region, err));
	if (token_file && *token_file) {
		c->kind = K_WEB_IDENTITY;
		snprintf(c->source, sizeof(c->source),
		         "profile %.60s in %.300s (role_arn, web_identity_token_file)", p, where);
		return creds_dup_to(&c->token_file, token_file, err);
	}
	if (!src || !*src)
		return rf_fail(err, -EINVAL,
		               "profile %.60s in %.300s: role_arn needs source_profile (credential_"
		               "source is not supported)",
		               p, where);
	if (profile_keys(s, src, &c->source_keys, err) <= 0)
		return rf_fail(err, -EINVAL,
		               "profile %.60s in %.300s: source_profile %.60s has no "
		               "aws_access_key_id and aws_secret_access_key (chained roles are not "
		               "supported)",
		               p, where, src);
	c->kind = K_ASSUME_ROLE;
	snprintf(c->source, sizeof(c->source),
	         "profile %.60s in %.300s (role_arn with source_profile %.40s, STS AssumeRole)", p,
	         where, src);
	const char *ext = rf_aws_profile_get(s, p, "external_id");
	const char *dur = rf_aws_profile_get(s, p, "duration_seconds");
	RF_TRY(creds_dup_to(&c->external_id, ext && *ext ? ext : NULL, err));
	return creds_dup_to(&c->duration_s, dur && *dur ? dur : NULL, err);
}

/* 1 = a source to fetch from (c->kind set), 0 = the profile's static keys
 * in *v, or nothing configured (*v untouched). */
static int pick_profile_in(rf_creds *c, const rf_aws_shared *s, rf_creds_value *v, rf_error *err)
{
	const char *p = s->profile;
	char where[400];
	snprintf(where, sizeof(where), "%.190s and %.190s",
	         s->credentials_path ? s->credentials_path : "(no credentials file)",
	         s->config_path ? s->config_path : "(no config file)");
	append(c->tried, sizeof(c->tried), ", profile %.60s in %s", p, where);
	if (!rf_aws_profile_exists(s, p)) {
		if (env("AWS_PROFILE"))
			return rf_fail(err, -ENOENT, "AWS_PROFILE %.60s: no such profile in %s", p,
			               where);
		return 0;
	}
	const char *arn = rf_aws_profile_get(s, p, "role_arn");
	if (arn && *arn)
		return pick_assume_role(c, s, where, arn, err) < 0 ? -1 : 1;
	int rc = profile_keys(s, p, v, err);
	if (rc != 0) /* static keys: nothing to fetch (1 would fetch a kind never set) */
		return rc < 0 ? rc : 0;
	const char *cmd = rf_aws_profile_get(s, p, "credential_process");
	if (!cmd || !*cmd)
		return 0;
	c->kind = K_PROCESS;
	RF_TRY(rf_creds_split_command(cmd, &c->argv, err));
	snprintf(c->source, sizeof(c->source), "profile %.60s in %.300s (credential_process %.60s)",
	         p, where, c->argv[0]);
	return 1;
}

static int pick_profile(rf_creds *c, rf_creds_value *v, rf_error *err)
{
	rf_aws_shared s;
	RF_TRY(rf_aws_shared_load(NULL, &s, err));
	int rc = pick_profile_in(c, &s, v, err);
	rf_aws_shared_free(&s);
	return rc;
}

/* SDK rule: plain HTTP only to the container agents' addresses or loopback. */
static bool container_host_ok(const char *url)
{
	char origin[300];
	if (rf_url_scheme_of(url) == RF_URL_HTTPS)
		return true;
	if (rf_url_scheme_of(url) != RF_URL_HTTP || rf_url_origin(url, origin, sizeof(origin)) < 0)
		return false;
	const char *host = origin + strlen("http://");
	static const char *const ok[] = {
	    "127.", "localhost:", "[::1]:", "169.254.170.2:", "169.254.170.23:", "[fd00:ec2::23]:"};
	for (size_t i = 0; i < RF_ARRAY_LEN(ok); i++)
		if (!strncmp(host, ok[i], strlen(ok[i])))
			return true;
	return false;
}

static int pick_container(rf_creds *c, rf_error *err)
{
	const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	append(c->tried, sizeof(c->tried), ", container");
	if (!full && !rel)
		return 0;
	int rc = rel ? asprintf(&c->container_url, "http://169.254.170.2%s%s",
	                        rel[0] == '/' ? "" : "/", rel)
	             : ((c->container_url = strdup(full)) ? 0 : -1);
	if (rc < 0) {
		c->container_url = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	char shown[300];
	rf_url_redact(c->container_url, shown, sizeof(shown));
	if (!rel && !container_host_ok(full))
		return rf_fail(
		    err, -EINVAL,
		    "AWS_CONTAINER_CREDENTIALS_FULL_URI %s: plain http only to loopback or "
		    "the container agent (169.254.170.2, 169.254.170.23)",
		    shown);
	c->kind = K_CONTAINER;
	snprintf(c->source, sizeof(c->source), "container credentials at %s", shown);
	RF_TRY(creds_dup_to(&c->container_token, env("AWS_CONTAINER_AUTHORIZATION_TOKEN"), err));
	RF_TRY(creds_dup_to(&c->container_token_file, env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"),
	                    err));
	return 1;
}

static int pick_imds(rf_creds *c, rf_error *err)
{
	const char *off = env("AWS_EC2_METADATA_DISABLED");
	if (off && !strcasecmp(off, "true")) {
		append(c->tried, sizeof(c->tried), ", IMDS (AWS_EC2_METADATA_DISABLED)");
		return 0;
	}
	const char *ep = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	RF_TRY(creds_dup_to(&c->imds_url, ep ? ep : "http://169.254.169.254", err));
	size_t n = strlen(c->imds_url);
	while (n > 0 && c->imds_url[n - 1] == '/')
		c->imds_url[--n] = '\0';
	rf_url_scheme s = rf_url_scheme_of(c->imds_url);
	if (s != RF_URL_HTTP && s != RF_URL_HTTPS)
		return rf_fail(
		    err, -EINVAL,
		    "AWS_EC2_METADATA_SERVICE_ENDPOINT '%.200s' must start with http(s)://",
		    c->imds_url);
	append(c->tried, sizeof(c->tried), ", IMDS");
	c->kind = K_IMDS;
	snprintf(c->source, sizeof(c->source), "instance metadata (IMDSv2 at %.200s)", c->imds_url);
	return 1;
}

/* 1 = a source to fetch from (c->kind), 0 = static keys in *v or nothing. */
int rf_creds_pick(rf_creds *c, rf_creds_value *v, rf_error *err)
{
	snprintf(c->tried, sizeof(c->tried), "env");
	int rc = pick_web_identity(c, err);
	if (rc == 0)
		rc = pick_profile(c, v, err);
	if (rc != 0 && v->access_key) /* a source and static keys at once: a bug */
		rc = rf_fail(err, -EINVAL, "credential chain: static keys and %s both picked",
		             c->source);
	if (rc == 0 && v->access_key)
		return 0;
	if (rc == 0)
		rc = pick_container(c, err);
	if (rc == 0)
		rc = pick_imds(c, err);
	return rc;
}
