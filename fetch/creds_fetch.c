/* creds_fetch.c - the credential endpoints over HTTP (see creds.h): STS
 * AssumeRole (SigV4-signed with the source profile's keys) and
 * AssumeRoleWithWebIdentity (the token file re-read each time), container
 * credentials (the authorization token re-read), IMDSv2 (token, role name,
 * credentials). Requests go through the client the chain signs for, marked
 * uncounted; each answer is parsed (creds_parse.c) and ends the fetch through
 * c->done. */
#include "creds_int.h"
#include "url.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#define STS_VERSION      "2011-06-15"
#define IMDS_TOKEN_TTL_S 21600
#define FETCH_TIMEOUT_MS 10000u

/* A small file (a web identity or authorization token), trimmed. */
static int read_token_file(const char *path, const char *what, char **out, rf_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rf_fail(err, -errno, "%s file %.200s: %s", what, path, strerror(errno));
	char *buf = malloc(RF_CREDS_TOKEN_BYTES_MAX + 2);
	ssize_t n = buf ? read(fd, buf, RF_CREDS_TOKEN_BYTES_MAX + 1) : -1;
	int e = errno;
	close(fd);
	if (!buf)
		return rf_fail(err, -ENOMEM, "out of memory");
	int rc = 0;
	if (n < 0)
		rc = rf_fail(err, -e, "%s file %.200s: %s", what, path, strerror(e));
	else if (n > RF_CREDS_TOKEN_BYTES_MAX)
		rc = rf_fail(err, -EFBIG, "%s file %.200s is larger than %u bytes", what, path,
		             RF_CREDS_TOKEN_BYTES_MAX);
	if (rc == 0) {
		size_t len = (size_t)n;
		while (len > 0 &&
		       (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
			len--;
		buf[len] = '\0';
		n = (ssize_t)len;
		for (ssize_t i = 0; i < n && rc == 0; i++)
			if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
				rc =
				    rf_fail(err, -EINVAL,
				            "%s file %.200s holds a control character", what, path);
		if (rc == 0 && n == 0)
			rc = rf_fail(err, -EINVAL, "%s file %.200s is empty", what, path);
	}
	if (rc < 0) {
		explicit_bzero(buf, RF_CREDS_TOKEN_BYTES_MAX + 2);
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}

static void on_http(void *arg, int64_t res, const char *msg);

static int http_get(rf_creds *c, const char *what, const char *method, rf_error *err)
{
	char name[600];
	rf_url_redact(c->url, name, sizeof(name));
	snprintf(name + strlen(name), sizeof(name) - strlen(name), " (%s)", what);
	bool imds = c->kind == K_IMDS;
	rf_http_request req = {
	    .kind = RF_HTTP_GET_ALL,
	    .url = c->url,
	    .name = name,
	    .max_bytes = RF_CREDS_BODY_BYTES_MAX,
	    .body = &c->body,
	    .method = method,
	    .post = c->post,
	    .post_len = c->post ? strlen(c->post) : 0,
	    .headers = c->header ? c->headers : NULL,
	    .auth = c->kind == K_ASSUME_ROLE ? &c->sts.auth : NULL,
	    .connect_timeout_ms = imds ? RF_CREDS_IMDS_CONNECT_MS : 0,
	    .timeout_ms = imds ? 2 * RF_CREDS_IMDS_CONNECT_MS : FETCH_TIMEOUT_MS,
	    .retries = imds && c->step == 0 ? -1 : 2,
	    .uncounted = true,
	    .credential = true,
	};
	c->headers[0] = c->header;
	c->headers[1] = NULL;
	return rf_http_start(c->http, &req, on_http, c, &c->xfer, err);
}

static int form_add(char **post, const char *name, const char *value, rf_error *err)
{
	size_t cap = 3 * strlen(value) + 1;
	char *enc = malloc(cap);
	if (!enc)
		return rf_fail(err, -ENOMEM, "out of memory");
	rf_uri_encode(value, false, enc, cap);
	char *next = NULL;
	int rc = asprintf(&next, "%s%s%s=%s", *post ? *post : "", *post ? "&" : "", name, enc);
	rf_secret_free(enc);
	rf_secret_free(*post);
	*post = rc < 0 ? NULL : next;
	return rc < 0 ? rf_fail(err, -ENOMEM, "out of memory") : 0;
}

int rf_creds_sts_start(rf_creds *c, rf_error *err)
{
	bool web = c->kind == K_WEB_IDENTITY;
	char *token = NULL;
	if (web && !c->token_file)
		return rf_fail(err, -EINVAL, "web identity without a token file");
	if (web)
		RF_TRY(read_token_file(c->token_file, "web identity token", &token, err));
	/* Sorted by name (SigV4 signs the body's hash, the order is ours). */
	int rc =
	    form_add(&c->post, "Action", web ? "AssumeRoleWithWebIdentity" : "AssumeRole", err);
	if (rc == 0 && c->duration_s)
		rc = form_add(&c->post, "DurationSeconds", c->duration_s, err);
	if (rc == 0 && c->external_id)
		rc = form_add(&c->post, "ExternalId", c->external_id, err);
	if (rc == 0)
		rc = form_add(&c->post, "RoleArn", c->role_arn, err);
	if (rc == 0)
		rc = form_add(&c->post, "RoleSessionName", c->session_name, err);
	if (rc == 0)
		rc = form_add(&c->post, "Version", STS_VERSION, err);
	if (rc == 0 && web)
		rc = form_add(&c->post, "WebIdentityToken", token, err);
	rf_secret_free(token);
	if (rc < 0)
		return rc;
	snprintf(c->url, sizeof(c->url), "%s/", c->sts_url);
	rf_sigv4_fixed_init(&c->sts,
	                    &(rf_s3_keys){c->sts_region, c->source_keys.access_key,
	                                  c->source_keys.secret_key, c->source_keys.session_token,
	                                  NULL},
	                    "sts");
	return http_get(c, web ? "STS AssumeRoleWithWebIdentity" : "STS AssumeRole", "POST", err);
}

int rf_creds_container_start(rf_creds *c, rf_error *err)
{
	char *token = NULL;
	if (c->container_token_file)
		RF_TRY(read_token_file(c->container_token_file, "container authorization token",
		                       &token, err));
	const char *t = token ? token : c->container_token;
	if (t && (strpbrk(t, "\r\n") || asprintf(&c->header, "Authorization: %s", t) < 0)) {
		c->header = NULL;
		rf_secret_free(token);
		return rf_fail(err, -EINVAL, "container authorization token unusable");
	}
	rf_secret_free(token);
	snprintf(c->url, sizeof(c->url), "%s", c->container_url);
	return http_get(c, "container credentials", NULL, err);
}

int rf_creds_imds_step(rf_creds *c, rf_error *err)
{
	rf_secret_free(c->header);
	c->header = NULL;
	int rc = 0;
	if (c->step == 0) {
		snprintf(c->url, sizeof(c->url), "%s/latest/api/token", c->imds_url);
		rc = asprintf(&c->header, "X-aws-ec2-metadata-token-ttl-seconds: %d",
		              IMDS_TOKEN_TTL_S);
		if (rc >= 0 && !(c->post = strdup("")))
			rc = -1;
	} else {
		snprintf(c->url, sizeof(c->url), "%s/latest/meta-data/iam/security-credentials/%s",
		         c->imds_url, c->step == 2 ? c->imds_role : "");
		rc = asprintf(&c->header, "X-aws-ec2-metadata-token: %s", c->imds_token);
		rf_secret_free(c->post);
		c->post = NULL;
	}
	if (rc < 0) {
		c->header = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	static const char *const what[] = {"IMDSv2 token", "IMDS role", "IMDS credentials"};
	return http_get(c, what[c->step], c->step == 0 ? "PUT" : NULL, err);
}

/* The role name: the first line of the listing, a plain name. */
static int imds_role(rf_creds *c, const char *body, rf_error *err)
{
	size_t n = strcspn(body, "\r\n");
	if (n == 0 || n >= sizeof(c->imds_role))
		return rf_fail(err, -ENOENT, "no IAM role attached to this instance");
	for (size_t i = 0; i < n; i++)
		if (!(body[i] == '-' || body[i] == '_' || body[i] == '.' || body[i] == '+' ||
		      body[i] == '=' || body[i] == ',' || body[i] == '@' ||
		      (body[i] >= '0' && body[i] <= '9') || (body[i] >= 'A' && body[i] <= 'Z') ||
		      (body[i] >= 'a' && body[i] <= 'z')))
			return rf_fail(err, -EPROTO, "IMDS role name with an unexpected character");
	memcpy(c->imds_role, body, n);
	c->imds_role[n] = '\0';
	return 0;
}

/* An IMDS step answered: the next step, or the credentials (rc 1). */
static int imds_next(rf_creds *c, size_t len, rf_creds_value *v, rf_error *err)
{
	if (c->step == 0) {
		rf_secret_free(c->imds_token);
		c->imds_token = c->body;
		c->body = NULL;
		if (!*c->imds_token || strpbrk(c->imds_token, "\r\n") || len > 4096)
			return rf_fail(err, -EPROTO, "unusable IMDSv2 token");
	} else if (c->step == 1) {
		RF_TRY(imds_role(c, c->body, err));
	} else {
		RF_TRY(rf_creds_parse_json(c->body, len, RF_CREDS_JSON_CONTAINER, v, err));
		return 1;
	}
	c->step++;
	rf_secret_free(c->body);
	c->body = NULL;
	RF_TRY(rf_creds_imds_step(c, err));
	return 0;
}

static void on_http(void *arg, int64_t res, const char *msg)
{
	rf_creds *c = arg;
	c->xfer = NULL;
	rf_creds_value v = {0};
	rf_error err = {0};
	int rc = res < 0 ? (int)res : 0;
	if (rc < 0)
		return c->done(c, rc, msg, NULL);
	if (c->kind == K_IMDS) {
		rc = imds_next(c, (size_t)res, &v, &err);
		if (rc == 0)
			return; /* the next step is in flight */
		rc = rc > 0 ? 0 : rc;
	} else if (c->kind == K_CONTAINER) {
		rc = rf_creds_parse_json(c->body, (size_t)res, RF_CREDS_JSON_CONTAINER, &v, &err);
	} else {
		rc = rf_creds_parse_sts(c->body, (size_t)res, &v, &err);
	}
	c->done(c, rc, err.msg, &v);
}
