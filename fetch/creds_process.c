/* creds_process.c - credential_process (see creds.h): the command runs as
 * a child without a shell, stdin /dev/null, stdout a non-blocking pipe the
 * ring polls (RF_CREDS_BODY_BYTES_MAX at most), killed after
 * RF_CREDS_PROCESS_TIMEOUT_MS; its exit status is checked, its output parsed
 * (creds_parse.c) and never shown, and the fetch ends through c->done. */
#include "creds_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define PROCESS_REAP_NS (10 * 1000000ull)

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

void rf_creds_process_stop(rf_creds *c)
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
	rf_creds_process_stop(c);
	c->done(c, rc, err.msg, &v);
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
	rf_creds_process_stop(c);
	c->done(c, -ETIMEDOUT, "credential_process did not exit in time (killed)", NULL);
}

static void process_fail(rf_creds *c, int rc, const char *why)
{
	rf_creds_process_stop(c);
	c->done(c, rc, why, NULL);
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
int rf_creds_process_start(rf_creds *c, rf_error *err)
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
		rf_creds_process_stop(c);
		return rf_fail(err, -ENOMEM, "credential_process: no memory or loop slot");
	}
	return 0;
}
