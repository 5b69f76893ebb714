/* azure_entra.c - where the Azure store's Entra ID tokens come from (see
 * azure.h, rf_az_entra): workload identity, App Service managed identity or
 * instance metadata managed identity, picked from the environment, and each
 * one's token request for the bearer signer (bearer.h): the federated token
 * as a client assertion POSTed to the v2.0 token endpoint, a GET of the
 * platform's local identity endpoint with its secret header, or a GET of the
 * instance metadata token endpoint. */
#include "azure.h"
#include "oauth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORM_HEADER "Content-Type: application/x-www-form-urlencoded"

void rf_az_entra_free(rf_az_entra *e)
{
	free(e->token_url);
	free(e->client_id);
	free(e->token_file);
	free(e->imds_url);
	free(e->app_url);
	rf_secret_free(e->app_header);
	memset(e, 0, sizeof(*e));
}

static const char *env_of(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* ------------------------------------------------------ token requests */

/* The federated token file: at most RF_OAUTH_TOKEN_MAX bytes, trailing
 * white space cut (malloc'd, a secret). Never its bytes in a message. */
static int read_assertion(const char *path, char **out, rf_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rf_fail(err, -errno, "the federated token file %.300s: %s", path,
		               strerror(errno));
	char *buf = malloc(RF_OAUTH_TOKEN_MAX + 2);
	size_t len = 0;
	int rc = buf ? 0 : rf_fail(err, -ENOMEM, "out of memory");
	while (rc == 0 && len <= RF_OAUTH_TOKEN_MAX) {
		ssize_t n = read(fd, buf + len, RF_OAUTH_TOKEN_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = rf_fail(err, -errno, "the federated token file %.300s: %s", path,
			             strerror(errno));
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (rc == 0 && len > RF_OAUTH_TOKEN_MAX)
		rc = rf_fail(err, -EFBIG, "the federated token file %.300s is over %u bytes", path,
		             RF_OAUTH_TOKEN_MAX);
	while (rc == 0 && len > 0 && strchr(" \t\r\n", buf[len - 1]))
		len--;
	if (rc == 0 && len == 0)
		rc = rf_fail(err, -EINVAL, "the federated token file %.300s is empty", path);
	if (rc < 0) {
		if (buf)
			explicit_bzero(buf, RF_OAUTH_TOKEN_MAX + 2);
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

static int workload_request(void *ctx, int64_t now_s, rf_bearer_request *req, rf_error *err)
{
	rf_az_entra *e = ctx;
	(void)now_s;
	char *assertion = NULL;
	RF_TRY(read_assertion(e->token_file, &assertion, err));
	int rc =
	    rf_oauth_assertion_request(e->client_id, assertion, RF_AZ_TOKEN_SCOPE, &req->post, err);
	rf_secret_free(assertion);
	if (rc < 0)
		return rc;
	if (!(req->url = strdup(e->token_url))) {
		rf_secret_free(req->post);
		req->post = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	req->headers[0] = FORM_HEADER;
	return 0;
}

static int imds_request(void *ctx, int64_t now_s, rf_bearer_request *req, rf_error *err)
{
	rf_az_entra *e = ctx;
	(void)now_s;
	if (!(req->url = strdup(e->imds_url)))
		return rf_fail(err, -ENOMEM, "out of memory");
	req->headers[0] = "Metadata: true";
	req->connect_timeout_ms = RF_BEARER_CONNECT_MS_METADATA;
	req->retries = 1;
	return 0;
}

/* The platform's local agent: the secret header goes with every request
 * (a static line the entra struct owns and wipes), never a redirect away. */
static int app_service_request(void *ctx, int64_t now_s, rf_bearer_request *req, rf_error *err)
{
	rf_az_entra *e = ctx;
	(void)now_s;
	if (!(req->url = strdup(e->app_url)))
		return rf_fail(err, -ENOMEM, "out of memory");
	req->headers[0] = e->app_header;
	req->connect_timeout_ms = RF_BEARER_CONNECT_MS_METADATA;
	return 0;
}

/* -------------------------------------------------------------- sources */

/* A tenant or client id goes into a URL or a form: a GUID or a domain name. */
static bool id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > RF_AZ_ID_BYTES_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_",
		            s[i]))
			return false;
	return true;
}

/* scheme://host[:port] with an optional path and trailing '/', as the SDKs
 * take AZURE_AUTHORITY_HOST and the IMDS override; the '/'s cut off. */
static int host_url(const char *var, const char *v, char **out, rf_error *err)
{
	size_t n = strlen(v);
	while (n > 0 && v[n - 1] == '/')
		n--;
	bool ok = n > 0 && n <= RF_AZ_HOST_URL_MAX &&
	          (!strncmp(v, "https://", 8) || !strncmp(v, "http://", 7));
	for (size_t i = 0; ok && i < n; i++)
		ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:/[]",
		            v[i]) != NULL;
	if (!ok)
		return rf_fail(err, -EINVAL,
		               "%s is not http(s)://HOST[:PORT] (at most %u bytes of letters, "
		               "digits and .-_:/[])",
		               var, RF_AZ_HOST_URL_MAX);
	*out = strndup(v, n);
	return *out ? 0 : rf_fail(err, -ENOMEM, "out of memory");
}

static int workload(rf_az_entra *e, const char *file, const char *client, const char *tenant,
                    rf_error *err)
{
	if (!id_ok(client) || !id_ok(tenant))
		return rf_fail(err, -EINVAL,
		               "workload identity: %s is not an id (1 to %u letters, digits, "
		               "'.', '-', '_')",
		               id_ok(client) ? "AZURE_TENANT_ID" : "AZURE_CLIENT_ID",
		               RF_AZ_ID_BYTES_MAX);
	const char *ah = env_of("AZURE_AUTHORITY_HOST");
	char *authority = NULL;
	RF_TRY(host_url("AZURE_AUTHORITY_HOST", ah ? ah : RF_AZ_AUTHORITY, &authority, err));
	e->token_url = rf_http_dup_printf("%s/%s/oauth2/v2.0/token", authority, tenant);
	free(authority);
	if (!e->token_url || !(e->client_id = strdup(client)) || !(e->token_file = strdup(file)))
		return rf_fail(err, -ENOMEM, "out of memory");
	/* the assertion is a secret: https, or http to a loopback stand-in */
	if (!rf_oauth_endpoint_ok(e->token_url, strlen(e->token_url), false))
		return rf_fail(err, -EINVAL,
		               "workload identity: the token endpoint %.300s is not https:// (or "
		               "http:// to a loopback address): the federated token is not sent "
		               "there (AZURE_AUTHORITY_HOST)",
		               e->token_url);
	e->src.request = workload_request;
	e->src.ctx = e;
	snprintf(e->src.name, sizeof(e->src.name), "workload identity (%.200s, tenant %.60s)",
	         e->token_url, tenant);
	return 0;
}

__attribute__((format(printf, 2, 3))) static void tried_add(rf_az_entra *e, const char *fmt, ...)
{
	size_t o = strlen(e->tried);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->tried + o, sizeof(e->tried) - o, fmt, ap);
	va_end(ap);
}

static int managed(rf_az_entra *e, rf_error *err)
{
	const char *over = env_of("AZURE_POD_IDENTITY_AUTHORITY_HOST");
	const char *client = env_of("AZURE_CLIENT_ID");
	char *host = NULL;
	RF_TRY(host_url("AZURE_POD_IDENTITY_AUTHORITY_HOST", over ? over : RF_AZ_IMDS, &host, err));
	if (client && !id_ok(client)) {
		free(host);
		return rf_fail(err, -EINVAL, "managed identity: AZURE_CLIENT_ID is not an id");
	}
	/* resource=https://storage.azure.com/, form-encoded */
	e->imds_url = rf_http_dup_printf(
	    "%s%s?api-version=2018-02-01&resource=https%%3A%%2F%%2Fstorage.azure.com%%2F%s%s", host,
	    RF_AZ_IMDS_PATH, client ? "&client_id=" : "", client ? client : "");
	if (!e->imds_url) {
		free(host);
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	e->src.request = imds_request;
	e->src.ctx = e;
	e->src.anonymous_on_failure = true;
	snprintf(e->src.name, sizeof(e->src.name), "managed identity (%.200s%s%s)", host,
	         over ? ", AZURE_POD_IDENTITY_AUTHORITY_HOST" : "",
	         client ? ", user-assigned AZURE_CLIENT_ID" : "");
	tried_add(e, "managed identity (%.200s)", host);
	free(host);
	return 0;
}

/* 127.0.0.0/8 or 169.254.0.0/16 as a dotted quad of n bytes. */
static bool local_ipv4(const char *h, size_t n)
{
	unsigned octet[4] = {0}, k = 0, digits = 0;
	for (size_t i = 0; i < n; i++) {
		if (h[i] == '.' && digits > 0 && k < 3) {
			k++, digits = 0;
			continue;
		}
		if (h[i] < '0' || h[i] > '9' || ++digits > 3)
			return false;
		octet[k] = octet[k] * 10 + (unsigned)(h[i] - '0');
		if (octet[k] > 255)
			return false;
	}
	return k == 3 && digits > 0 && (octet[0] == 127 || (octet[0] == 169 && octet[1] == 254));
}

/* The local identity agent's address: https anywhere, or plain http to this
 * machine (loopback) or the link-local network a platform's agent listens
 * on (App Service on Linux: 169.254.x.x), the rule of the AWS container
 * credentials endpoint; no userinfo, query or fragment (the request's query
 * is added here), visible ASCII only. */
static bool app_endpoint_ok(const char *v)
{
	size_t n = strlen(v);
	if (n == 0 || n > RF_AZ_HOST_URL_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f ||
		    strchr("?#@\\", v[i]))
			return false;
	char origin[RF_AZ_HOST_URL_MAX + 32];
	if (rf_url_origin(v, origin, sizeof(origin)) < 0)
		return false;
	if (!strncmp(origin, "https://", 8))
		return true;
	const char *h = origin + strlen("http://"), *colon = strrchr(h, ':');
	size_t hn = (size_t)(colon - h); /* the origin always ends with :PORT */
	return (hn == 9 && !strncmp(h, "localhost", 9)) || (hn == 5 && !strncmp(h, "[::1]", 5)) ||
	       (hn > 6 && !strncmp(h, "[fe80:", 6)) || local_ipv4(h, hn);
}

/* IDENTITY_HEADER: a secret; its bytes never in a message. */
static bool app_secret_ok(const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return n > 0 && n <= RF_AZ_APP_SECRET_MAX;
}

static int app_service(rf_az_entra *e, const char *endpoint, const char *secret, rf_error *err)
{
	const char *client = env_of("AZURE_CLIENT_ID");
	if (!app_endpoint_ok(endpoint))
		return rf_fail(err, -EINVAL,
		               "app service managed identity: IDENTITY_ENDPOINT is not an https:// "
		               "URL or an http:// one to a loopback or link-local address (at most "
		               "%u bytes, no userinfo, query or fragment): the identity header is "
		               "not sent there",
		               RF_AZ_HOST_URL_MAX);
	if (!app_secret_ok(secret))
		return rf_fail(
		    err, -EINVAL,
		    "app service managed identity: IDENTITY_HEADER is not 1 to %u bytes of "
		    "visible ASCII",
		    RF_AZ_APP_SECRET_MAX);
	if (client && !id_ok(client))
		return rf_fail(err, -EINVAL,
		               "app service managed identity: AZURE_CLIENT_ID is not an id");
	e->app_url = rf_http_dup_printf("%s?api-version=%s&resource=https%%3A%%2F%%2Fstorage.azure."
	                                "com%%2F%s%s",
	                                endpoint, RF_AZ_APP_API_VERSION,
	                                client ? "&client_id=" : "", client ? client : "");
	e->app_header = rf_http_dup_printf("X-IDENTITY-HEADER: %s", secret);
	if (!e->app_url || !e->app_header)
		return rf_fail(err, -ENOMEM, "out of memory");
	e->src.request = app_service_request;
	e->src.ctx = e;
	snprintf(e->src.name, sizeof(e->src.name), "app service managed identity (%.200s%s)",
	         endpoint, client ? ", user-assigned AZURE_CLIENT_ID" : "");
	tried_add(e, "app service managed identity (%.200s); not reached: managed identity",
	          endpoint);
	return 0;
}

/* App Service's form when its variables say so (Service Fabric's, which adds
 * IDENTITY_SERVER_THUMBPRINT and pins the agent's certificate, is not
 * spoken: passed over, named), else the instance metadata endpoint. */
static int app_service_or_managed(rf_az_entra *e, rf_error *err)
{
	const char *ep = env_of("IDENTITY_ENDPOINT"), *secret = env_of("IDENTITY_HEADER");
	const char *why = !ep                                    ? "IDENTITY_ENDPOINT not set"
	                  : !secret                              ? "IDENTITY_HEADER not set"
	                  : env_of("IDENTITY_SERVER_THUMBPRINT") ? "IDENTITY_SERVER_THUMBPRINT "
	                                                           "set: Service Fabric's form, "
	                                                           "not supported"
	                                                         : NULL;
	if (!why)
		return app_service(e, ep, secret, err);
	tried_add(e, "app service managed identity (%s), ", why);
	return managed(e, err);
}

int rf_az_entra_pick(rf_az_entra *e, const char *tried, rf_error *err)
{
	memset(e, 0, sizeof(*e));
	const char *file = env_of("AZURE_FEDERATED_TOKEN_FILE");
	const char *client = env_of("AZURE_CLIENT_ID"), *tenant = env_of("AZURE_TENANT_ID");
	if (file && client && tenant) {
		snprintf(e->tried, sizeof(e->tried),
		         "%.250s, workload identity; not reached: app service managed identity, "
		         "managed identity",
		         tried);
		return workload(e, file, client, tenant, err);
	}
	snprintf(e->tried, sizeof(e->tried), "%.250s, workload identity (%s not set), ", tried,
	         !file     ? "AZURE_FEDERATED_TOKEN_FILE"
	         : !client ? "AZURE_CLIENT_ID"
	                   : "AZURE_TENANT_ID");
	return app_service_or_managed(e, err);
}
