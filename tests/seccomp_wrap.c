/* seccomp_wrap.c - rf-seccomp-wrap CMD [ARGS...]: runs CMD with io_uring
 * blocked exactly as Docker 25+'s and containerd 2.0's default seccomp
 * profiles block it (everything allowed; io_uring_setup, io_uring_enter and
 * io_uring_register fail with EPERM), so the tests can run ringfeed as it
 * runs inside a default container. The filter is inherited by every child
 * and thread. Exit 125 when the filter cannot be installed. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int block(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return -ENOSYS;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rf-seccomp-wrap CMD [ARGS...]\n");
		return 125;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		fprintf(stderr, "rf-seccomp-wrap: seccomp_init failed\n");
		return 125;
	}
	const char *calls[] = {"io_uring_setup", "io_uring_enter", "io_uring_register"};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		int rc = block(ctx, calls[i]);
		if (rc < 0) {
			fprintf(stderr, "rf-seccomp-wrap: %s: %s\n", calls[i], strerror(-rc));
			seccomp_release(ctx);
			return 125;
		}
	}
	int rc = seccomp_load(ctx); /* sets no_new_privs itself */
	seccomp_release(ctx);
	if (rc < 0) {
		fprintf(stderr, "rf-seccomp-wrap: seccomp_load: %s\n", strerror(-rc));
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "rf-seccomp-wrap: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
