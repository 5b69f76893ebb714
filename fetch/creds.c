/* creds.c - the credential chain and its refresh (see creds.h).
 *
 * pick_*() decide, synchronously and in the SDKs' order, which source
 * answers (reading only the environment and the shared files). A source
 * that needs a fetch is a small state machine on the loop: fetch_start()
 * begins it, each step's completion moves it on, fetch_done() ends it with
 * credentials or a failure. Credentials that expire get a refresh timer;
 * the client keeps signing with the old ones until the new ones are set. */
#include "creds.h"
#include "aws_config.h"
#include "url.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define NO_OP              (-1)
#define PROCESS_REAP_NS    (10 * 1000000ull)
#define STS_VERSION        "2011-06-15"
#define IMDS_TOKEN_TTL_S   21600
#define FETCH_TIMEOUT_MS   10000u
#define RETRY_DELAY_MS_MAX 60000

typedef enum creds_kind {
	K_WEB_IDENTITY = 0,
	K_ASSUME_ROLE,
	K_PROCESS,
	K_CONTAINER,
	K_IMDS,
} creds_kind;

struct rf_creds {
	rf_loop *loop;
	rf_http *http;
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
	rf_http_s3 sigv4;
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
};

static void fetch_done(rf_creds *c, int rc, const char *why, rf_creds_value *v);
static int fetch_start(rf_creds *c, rf_error *err);

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static int dup_to(char **dst, const char *src, rf_error *err)
{
	if (!src)
		return 0;
	return (*dst = strdup(src)) ? 0 : rf_fail(err, -ENOMEM, "out of memory");
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

/* ------------------------------------------------------------ setting */

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
	if (v->expires_ms && v->expires_ms <= wall_ms() + 1000)
		return rf_fail(err, -EPROTO, "the credentials received expire within a second");
	rf_http_s3 s3 = {c->s3_region, v->access_key, v->secret_key, v->session_token, NULL};
	RF_TRY(rf_http_set_s3(c->http, &s3, err));
	rf_creds_value_wipe(&c->cur);
	c->cur = *v;
	memset(v, 0, sizeof(*v));
	c->obtained_ms = wall_ms();
	c->initial = false;
	if (c->cur.expires_ms)
		schedule_refresh(c, rf_creds_refresh_delay_ms(c->obtained_ms, c->obtained_ms,
		                                              c->cur.expires_ms));
	return 0;
}

/* The chain found nothing: anonymous, and a denied request says why. */
static int anonymous(rf_http *h, const char *tried, rf_error *err)
{
	char note[600];
	snprintf(note, sizeof(note), "no credentials found: tried %.560s", tried);
	rf_http_s3 s3 = {.anonymous_note = note};
	return rf_http_set_s3(h, &s3, err);
}

static void fetch_failed(rf_creds *c, int rc, const char *why)
{
	char msg[RF_ERROR_MSG_BYTES];
	snprintf(msg, sizeof(msg), "S3 credentials from %.200s: %.280s", c->source, why);
	if (c->initial && c->kind == K_IMDS) { /* the last source: not on EC2 */
		char tried[sizeof(c->tried) + 300];
		snprintf(tried, sizeof(tried), "%s (%.280s)", c->tried, why);
		rf_error err = {0};
		if (anonymous(c->http, tried, &err) < 0)
			rf_http_s3_fail(c->http, err.code, err.msg, true);
		return;
	}
	if (c->initial) {
		rf_http_s3_fail(c->http, rc, msg, true);
		return;
	}
	/* A refresh failed: requests held for it fail; the old credentials stay
	 * while they last, and another refresh is tried before they expire. */
	rf_http_s3_fail(c->http, rc, msg, false);
	int64_t left = c->cur.expires_ms - wall_ms();
	if (left > 1000)
		schedule_refresh(c, RF_MIN(RF_MAX(left / 4, 500), RETRY_DELAY_MS_MAX));
	fprintf(stderr, "ringfeed: %s\n", msg);
}

static void fetch_done(rf_creds *c, int rc, const char *why, rf_creds_value *v)
{
	c->fetching = false;
	c->xfer = NULL;
	wipe_free(c->body);
	wipe_free(c->post);
	wipe_free(c->header);
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

/* ------------------------------------------------------------ HTTP steps */

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
	    .sigv4 = c->kind == K_ASSUME_ROLE ? &c->sigv4 : NULL,
	    .sigv4_service = "sts",
	    .connect_timeout_ms = imds ? RF_CREDS_IMDS_CONNECT_MS : 0,
	    .timeout_ms = imds ? 2 * RF_CREDS_IMDS_CONNECT_MS : FETCH_TIMEOUT_MS,
	    .retries = imds && c->step == 0 ? -1 : 2,
	    .uncounted = true,
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
	wipe_free(enc);
	wipe_free(*post);
	*post = rc < 0 ? NULL : next;
	return rc < 0 ? rf_fail(err, -ENOMEM, "out of memory") : 0;
}

static int sts_start(rf_creds *c, rf_error *err)
{
	bool web = c->kind == K_WEB_IDENTITY;
	char *token = NULL;
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
	wipe_free(token);
	if (rc < 0)
		return rc;
	snprintf(c->url, sizeof(c->url), "%s/", c->sts_url);
	c->sigv4 = (rf_http_s3){c->sts_region, c->source_keys.access_key, c->source_keys.secret_key,
	                        c->source_keys.session_token, NULL};
	return http_get(c, web ? "STS AssumeRoleWithWebIdentity" : "STS AssumeRole", "POST", err);
}

static int container_start(rf_creds *c, rf_error *err)
{
	char *token = NULL;
	if (c->container_token_file)
		RF_TRY(read_token_file(c->container_token_file, "container authorization token",
		                       &token, err));
	const char *t = token ? token : c->container_token;
	if (t && (strpbrk(t, "\r\n") || asprintf(&c->header, "Authorization: %s", t) < 0)) {
		c->header = NULL;
		wipe_free(token);
		return rf_fail(err, -EINVAL, "container authorization token unusable");
	}
	wipe_free(token);
	snprintf(c->url, sizeof(c->url), "%s", c->container_url);
	return http_get(c, "container credentials", NULL, err);
}

static int imds_step(rf_creds *c, rf_error *err)
{
	wipe_free(c->header);
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
		wipe_free(c->post);
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
		wipe_free(c->imds_token);
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
	wipe_free(c->body);
	c->body = NULL;
	RF_TRY(imds_step(c, err));
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
		return fetch_done(c, rc, msg, NULL);
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
	fetch_done(c, rc, err.msg, &v);
}

/* ------------------------------------------------------------ process */

static void process_reap(rf_creds *c, bool kill_it)
{
	if (c->pid <= 0)
		return;
	if (kill_it)
		kill(c->pid, SIGKILL);
	int st;
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	c->pid = 0;
}

static void process_stop(rf_creds *c)
{
	rf_loop_cancel(c->loop, c->poll_id);
	rf_loop_cancel(c->loop, c->reap_timer);
	rf_loop_cancel(c->loop, c->deadline_timer);
	c->poll_id = c->reap_timer = c->deadline_timer = NO_OP;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	process_reap(c, true);
	if (c->out)
		explicit_bzero(c->out, c->out_len);
	free(c->out);
	c->out = NULL;
	c->out_len = 0;
}

static void process_finish(rf_creds *c, int status)
{
	rf_creds_value v = {0};
	rf_error err = {0};
	int rc;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rc = rf_fail(&err, -EACCES,
		             "credential_process %.100s %s %d (its output not shown)", c->argv[0],
		             WIFEXITED(status) ? "exited with status" : "killed by signal",
		             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	else
		rc = rf_creds_parse_json(c->out, c->out_len, RF_CREDS_JSON_PROCESS, &v, &err);
	process_stop(c);
	fetch_done(c, rc, err.msg, &v);
}

static void on_reap(void *arg, int res)
{
	rf_creds *c = arg;
	c->reap_timer = NO_OP;
	int st;
	pid_t p = waitpid(c->pid, &st, WNOHANG);
	if (p == c->pid || (p < 0 && errno == ECHILD)) { /* ECHILD: SIGCHLD ignored */
		if (p != c->pid)
			st = 0; /* the status is lost: the output decides */
		c->pid = 0;
		return process_finish(c, st);
	}
	if (rf_now_ns() < c->deadline_ns) {
		c->reap_timer = rf_loop_timer(c->loop, PROCESS_REAP_NS, on_reap, c);
		if (c->reap_timer >= 0)
			return;
	}
	process_stop(c);
	fetch_done(c, -ETIMEDOUT, "credential_process did not exit in time (killed)", NULL);
}

static void process_fail(rf_creds *c, int rc, const char *why)
{
	process_stop(c);
	fetch_done(c, rc, why, NULL);
}

static void on_output(void *arg, int res)
{
	rf_creds *c = arg;
	c->poll_id = NO_OP;
	for (;;) { /* bounded: at most RF_CREDS_BODY_BYTES_MAX bytes are taken */
		if (c->out_len == RF_CREDS_BODY_BYTES_MAX)
			return process_fail(c, -EFBIG, "credential_process wrote more than 64 KiB");
		ssize_t n = read(c->fd, c->out + c->out_len, RF_CREDS_BODY_BYTES_MAX - c->out_len);
		if (n > 0) {
			c->out_len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		close(c->fd); /* end of output (or an error): reap */
		c->fd = -1;
		return on_reap(c, 0);
	}
	if (rf_now_ns() >= c->deadline_ns)
		return process_fail(c, -ETIMEDOUT, "credential_process took too long (killed)");
	c->poll_id = rf_loop_poll(c->loop, c->fd, POLLIN, on_output, c);
	if (c->poll_id < 0)
		process_fail(c, (int)c->poll_id, "no loop slot to read credential_process");
}

static void on_process_deadline(void *arg, int res)
{
	rf_creds *c = arg;
	c->deadline_timer = NO_OP;
	process_fail(c, -ETIMEDOUT, "credential_process took too long (killed)");
}

/* Runs argv directly (no shell: nothing in the command is interpreted
 * beyond its quotes), stdin from /dev/null, stdout into a pipe the ring
 * polls, stderr inherited, no other descriptor, signals unblocked. */
static int process_start(rf_creds *c, rf_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return rf_fail(err, -errno, "credential_process: pipe: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* none of our sockets or rings */
	posix_spawnattr_t at; /* the loop thread's signal mask is not the child's */
	posix_spawnattr_init(&at);
	sigset_t none, dflt;
	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dflt);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	int rc = posix_spawnp(&c->pid, c->argv[0], &fa, &at, c->argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		c->pid = 0;
		return rf_fail(err, -rc, "credential_process %.100s could not start: %s",
		               c->argv[0], strerror(rc));
	}
	c->fd = p[0];
	c->out = malloc(RF_CREDS_BODY_BYTES_MAX);
	c->deadline_ns = rf_now_ns() + RF_CREDS_PROCESS_TIMEOUT_MS * 1000000ull;
	c->poll_id = c->out ? rf_loop_poll(c->loop, c->fd, POLLIN, on_output, c) : -ENOMEM;
	c->deadline_timer = rf_loop_timer(c->loop, RF_CREDS_PROCESS_TIMEOUT_MS * 1000000ull,
	                                  on_process_deadline, c);
	if (c->poll_id < 0 || c->deadline_timer < 0) {
		process_stop(c);
		return rf_fail(err, -ENOMEM, "credential_process: no memory or loop slot");
	}
	return 0;
}

static int fetch_start(rf_creds *c, rf_error *err)
{
	c->fetching = true;
	c->step = 0;
	int rc;
	switch (c->kind) {
	case K_WEB_IDENTITY:
	case K_ASSUME_ROLE:
		rc = sts_start(c, err);
		break;
	case K_PROCESS:
		rc = process_start(c, err);
		break;
	case K_CONTAINER:
		rc = container_start(c, err);
		break;
	default:
		rc = imds_step(c, err);
		break;
	}
	if (rc < 0) {
		c->fetching = false;
		wipe_free(c->post);
		wipe_free(c->header);
		c->post = c->header = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------ the chain */

void rf_creds_free(rf_creds *c)
{
	if (!c)
		return;
	rf_http_set_s3_expired(c->http, NULL, NULL);
	if (c->xfer)
		rf_http_cancel(c->http, c->xfer);
	rf_loop_cancel(c->loop, c->refresh_timer);
	process_stop(c);
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
		wipe_free(*strs[i]);
	rf_creds_argv_free(c->argv);
	free(c);
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
	RF_TRY(dup_to(&c->sts_region, region, err));
	return 0;
}

static int session_name(rf_creds *c, const char *given, rf_error *err)
{
	if (given)
		return dup_to(&c->session_name, given, err);
	if (asprintf(&c->session_name, "ringfeed-%lld", (long long)wall_ms()) < 0) {
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
	RF_TRY(dup_to(&c->role_arn, arn, err));
	RF_TRY(dup_to(&c->token_file, file, err));
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
	RF_TRY(dup_to(&v->access_key, ak, err));
	RF_TRY(dup_to(&v->secret_key, sk, err));
	RF_TRY(dup_to(&v->session_token, tok && *tok ? tok : NULL, err));
	return 1;
}

static int pick_assume_role(rf_creds *c, const rf_aws_shared *s, const char *where, const char *arn,
                            rf_error *err)
{
	const char *p = s->profile;
	const char *src = rf_aws_profile_get(s, p, "source_profile");
	const char *token_file = rf_aws_profile_get(s, p, "web_identity_token_file");
	const char *region = rf_aws_profile_get(s, p, "region");
	RF_TRY(dup_to(&c->role_arn, arn, err));
	RF_TRY(session_name(c, rf_aws_profile_get(s, p, "role_session_name"), err));
	RF_TRY(sts_endpoint(c, region && *region ? region : c->s3_region, err));
	if (token_file && *token_file) {
		c->kind = K_WEB_IDENTITY;
		snprintf(c->source, sizeof(c->source),
		         "profile %.60s in %.300s (role_arn, web_identity_token_file)", p, where);
		return dup_to(&c->token_file, token_file, err);
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
	RF_TRY(dup_to(&c->external_id, ext && *ext ? ext : NULL, err));
	return dup_to(&c->duration_s, dur && *dur ? dur : NULL, err);
}

/* 1 = picked (static keys in *v, or c->kind set), 0 = not configured. */
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
	if (rc != 0)
		return rc;
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
	RF_TRY(dup_to(&c->container_token, env("AWS_CONTAINER_AUTHORIZATION_TOKEN"), err));
	RF_TRY(
	    dup_to(&c->container_token_file, env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), err));
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
	RF_TRY(dup_to(&c->imds_url, ep ? ep : "http://169.254.169.254", err));
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
static int pick(rf_creds *c, rf_creds_value *v, rf_error *err)
{
	snprintf(c->tried, sizeof(c->tried), "env");
	int rc = pick_web_identity(c, err);
	if (rc == 0)
		rc = pick_profile(c, v, err);
	if (rc == 0 && v->access_key)
		return 0;
	if (rc == 0)
		rc = pick_container(c, err);
	if (rc == 0)
		rc = pick_imds(c, err);
	return rc;
}

static int start_chain(rf_creds *c, rf_error *err)
{
	rf_creds_value v = {0};
	int rc = pick(c, &v, err);
	if (rc < 0 || (rc == 0 && v.access_key)) { /* a profile's static keys */
		if (rc == 0)
			rc = apply(c, &v, err);
		rf_creds_value_wipe(&v);
		return rc < 0 ? rc : 0;
	}
	if (rc == 0)
		return anonymous(c->http, c->tried, err) < 0 ? -ENOMEM : 0;
	c->initial = true;
	rf_http_s3_hold(c->http);
	rf_http_set_s3_expired(c->http, on_expired, c);
	rc = fetch_start(c, err);
	if (rc < 0) {
		char msg[RF_ERROR_MSG_BYTES];
		snprintf(msg, sizeof(msg), "S3 credentials from %.200s: %.280s", c->source,
		         err->msg);
		rf_http_set_s3_expired(c->http, NULL, NULL);
		return rf_fail(err, rc, "%s", msg);
	}
	return 1;
}

int rf_creds_start(rf_loop *loop, rf_http *h, const rf_fetch_options *opt, const rf_s3_config *s3,
                   rf_creds **out, rf_error *err)
{
	*out = NULL;
	rf_http_s3 keys = {s3->region, s3->access_key, s3->secret_key, s3->session_token, NULL};
	if (opt->s3.no_sign) /* asked: unsigned, whatever keys there are */
		return rf_http_set_s3(h, &(rf_http_s3){.region = s3->region}, err);
	if (s3->access_key) /* explicit or environment keys */
		return rf_http_set_s3(h, &keys, err);
	rf_creds *c = calloc(1, sizeof(*c));
	if (!c)
		return rf_fail(err, -ENOMEM, "out of memory");
	c->loop = loop;
	c->http = h;
	c->fd = -1;
	c->poll_id = c->reap_timer = c->deadline_timer = c->refresh_timer = NO_OP;
	int rc = dup_to(&c->s3_region, s3->region ? s3->region : "us-east-1", err);
	if (rc == 0)
		rc = start_chain(c, err);
	if (rc <= 0) { /* failed, or nothing to keep */
		rf_creds_free(c);
		return rc;
	}
	*out = c;
	return 0;
}
