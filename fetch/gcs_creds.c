/* gcs_creds.c - where GCS bearer tokens come from (see gcs.h): the chain
 * in Google's libraries' order, decided synchronously from the environment
 * and the files, and each source's token request for the bearer signer
 * (bearer.h): a signed JWT or a refresh-token grant POSTed to the key's
 * token_uri, or a GET of the metadata server's token endpoint. */
#include "gcs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORM_HEADER "Content-Type: application/x-www-form-urlencoded"

void rf_gcs_creds_free(rf_gcs_creds *c)
{
	rf_gcs_key_wipe(&c->key);
	free(c->metadata_url);
	memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------ token requests */

static int key_request(void *ctx, int64_t now_s, rf_bearer_request *req, rf_error *err)
{
	rf_gcs_creds *c = ctx;
	RF_TRY(rf_gcs_token_request(&c->key, now_s, RF_GCS_SCOPE_READ, &req->post, err));
	if (!(req->url = strdup(c->key.token_uri))) {
		rf_secret_free(req->post);
		req->post = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	req->headers[0] = FORM_HEADER;
	return 0;
}

static int metadata_request(void *ctx, int64_t now_s, rf_bearer_request *req, rf_error *err)
{
	rf_gcs_creds *c = ctx;
	(void)now_s;
	if (!(req->url = strdup(c->metadata_url)))
		return rf_fail(err, -ENOMEM, "out of memory");
	req->headers[0] = "Metadata-Flavor: Google";
	req->connect_timeout_ms = RF_BEARER_CONNECT_MS_METADATA;
	req->retries = 1;
	return 0;
}

/* -------------------------------------------------------------- sources */

/* A credentials file: 0 and parsed into c->key; 1 when it does not exist
 * and may not (the ADC file); < 0 naming the file. */
static int key_file(rf_gcs_creds *c, const char *path, bool must, rf_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !must)
		return 1;
	if (fd < 0)
		return rf_fail(err, -errno, "credentials file %.300s: %s", path, strerror(errno));
	struct stat sb;
	char *buf = NULL;
	int rc = 0;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
		rc = rf_fail(err, -EINVAL, "credentials file %.300s is not a regular file", path);
	else if (sb.st_size > (off_t)RF_GCS_KEY_FILE_MAX)
		rc = rf_fail(err, -EFBIG, "credentials file %.300s is larger than %u bytes", path,
		             RF_GCS_KEY_FILE_MAX);
	else if (!(buf = malloc(RF_GCS_KEY_FILE_MAX + 1)))
		rc = rf_fail(err, -ENOMEM, "out of memory");
	size_t len = 0;
	while (rc == 0 && len <= RF_GCS_KEY_FILE_MAX) {
		ssize_t n = read(fd, buf + len, RF_GCS_KEY_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = rf_fail(err, -errno, "credentials file %.300s: %s", path,
			             strerror(errno));
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (rc == 0 && len > RF_GCS_KEY_FILE_MAX)
		rc = rf_fail(err, -EFBIG, "credentials file %.300s is larger than %u bytes", path,
		             RF_GCS_KEY_FILE_MAX);
	if (rc == 0)
		rc = rf_gcs_key_parse(buf, len, path, &c->key, err);
	if (buf) {
		explicit_bzero(buf, RF_GCS_KEY_FILE_MAX + 1);
		free(buf);
	}
	return rc;
}

static void use_key(rf_gcs_creds *c, const char *from, const char *path)
{
	c->src.request = key_request;
	c->src.ctx = c;
	if (c->key.kind == RF_GCS_KEY_SERVICE_ACCOUNT)
		snprintf(c->src.name, sizeof(c->src.name), "%s %.160s (service account %.60s)",
		         from, path, c->key.client_email);
	else
		snprintf(c->src.name, sizeof(c->src.name), "%s %.160s (authorized_user)", from,
		         path);
}

/* host[:port] or [v6]:port, the metadata server's address as Google's
 * libraries take it. */
static bool metadata_host_ok(const char *h)
{
	size_t n = strlen(h);
	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]_",
		            h[i]))
			return false;
	return true;
}

static int metadata(rf_gcs_creds *c, rf_error *err)
{
	const char *h = getenv("GCE_METADATA_HOST");
	bool set = h && *h;
	if (!set)
		h = RF_GCS_METADATA_HOST;
	if (!metadata_host_ok(h))
		return rf_fail(err, -EINVAL,
		               "GCE_METADATA_HOST '%.80s' is not host[:port] (letters, digits, "
		               ".-:[]_)",
		               h);
	c->metadata_url = rf_http_dup_printf("http://%s%s", h, RF_GCS_METADATA_PATH);
	if (!c->metadata_url)
		return rf_fail(err, -ENOMEM, "out of memory");
	c->src.request = metadata_request;
	c->src.ctx = c;
	c->src.anonymous_on_failure = true;
	snprintf(c->src.name, sizeof(c->src.name), "the metadata server http://%.200s%s", h,
	         set ? " (GCE_METADATA_HOST)" : "");
	size_t o = strlen(c->tried);
	snprintf(c->tried + o, sizeof(c->tried) - o, "metadata server (http://%.200s)", h);
	return 0;
}

static int adc_path(char *out, size_t cap, rf_error *err)
{
	const char *dir = getenv("CLOUDSDK_CONFIG"), *home = getenv("HOME");
	int n;
	if (dir && *dir)
		n = snprintf(out, cap, "%s/application_default_credentials.json", dir);
	else if (home && *home)
		n = snprintf(out, cap, "%s/.config/gcloud/application_default_credentials.json",
		             home);
	else
		n = snprintf(out, cap, "%s", "");
	if (n < 0 || (size_t)n >= cap)
		return rf_fail(err, -ENAMETOOLONG, "the gcloud ADC file's path is too long");
	return 0;
}

int rf_gcs_creds_pick(rf_gcs_creds *c, rf_error *err)
{
	memset(c, 0, sizeof(*c));
	const char *gac = getenv("GOOGLE_APPLICATION_CREDENTIALS");
	if (gac && *gac) {
		RF_TRY(key_file(c, gac, true, err));
		use_key(c, "GOOGLE_APPLICATION_CREDENTIALS", gac);
		snprintf(c->tried, sizeof(c->tried),
		         "GOOGLE_APPLICATION_CREDENTIALS; not reached: gcloud ADC file, metadata "
		         "server");
		return 0;
	}
	char path[1024];
	RF_TRY(adc_path(path, sizeof(path), err));
	int rc = path[0] ? key_file(c, path, false, err) : 1;
	if (rc < 0)
		return rc;
	if (rc == 0) {
		use_key(c, "the gcloud ADC file", path);
		snprintf(c->tried, sizeof(c->tried),
		         "GOOGLE_APPLICATION_CREDENTIALS (not set), gcloud ADC file; not reached: "
		         "metadata server");
		return 0;
	}
	snprintf(c->tried, sizeof(c->tried),
	         "GOOGLE_APPLICATION_CREDENTIALS (not set), gcloud ADC file (%.200s: none), ",
	         path[0] ? path : "no HOME");
	return metadata(c, err);
}
