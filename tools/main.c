/* main.c - the `ringfeed` command (its main): dispatches to one subcommand. */
#include "commands.h"
#include "ringfeed.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	rf_command_fn fn;
	const char *help;
} commands[] = {
    {"pack", cmd_pack, "pack records into .rfs shards and a manifest"},
    {"inspect", cmd_inspect, "print a shard's figures (--json for a program)"},
    {"verify", cmd_verify, "decode every block and check every rule"},
    {"index", cmd_index, "write (or --check) WebDataset .idx index files beside .tar shards"},
    {"read", cmd_read, "read records through the loader (order, digest, resume)"},
    {"bench", cmd_bench, "the main job: read the demo dataset (or shards) and report"},
    {"sim", cmd_sim, "queue lab: how long an inventory of ready batches lasts"},
    {"plan", cmd_plan, "size depth and memory per stage for a rate and a pause"},
    {"report", cmd_report, "draw a trace (--trace FILE) as an SVG"},
    {"cache", cmd_cache, "the data cache of remote ranges: ls, du, verify, clear, warm"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ringfeed COMMAND [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "  %-9s %s\n", "version", "print the versions of the command and the library");
	fprintf(f, "  %-9s %s\n", "help", "`ringfeed help COMMAND` describes one command");
	fprintf(f, "\n`ringfeed COMMAND --help` describes each command's options.\n");
}

/* What a command printed is a requested output too: one that could not be
 * written (a full disk, a closed pipe) fails the command. */
static int rf_stdout_status(int rc)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	fprintf(stderr, "ringfeed: writing the standard output failed: %s\n", strerror(errno));
	return rc ? rc : 1;
}

/* The command's own version and the library's it runs against (the same
 * unless a program was linked against an older or newer libringfeed). */
static int version(void)
{
	printf("ringfeed %s (libringfeed %s)\n", RF_VERSION_STRING, rf_version());
	return 0;
}

static int dispatch(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[0], commands[i].name))
			return commands[i].fn(argc, argv);
	fprintf(stderr, "ringfeed: unknown command '%s'\n", argv[0]);
	usage(stderr);
	return 2;
}

/* `ringfeed help` (the command list) or `ringfeed help COMMAND` (its --help). */
static int help(int argc, char **argv)
{
	if (argc < 3 || !strcmp(argv[2], "version") || !strcmp(argv[2], "help")) {
		usage(stdout);
		return 0;
	}
	char *sub[] = {argv[2], "--help", NULL};
	return dispatch(2, sub);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "help"))
		return rf_stdout_status(help(argc, argv));
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))
		return rf_stdout_status(version());
	return rf_stdout_status(dispatch(argc - 1, argv + 1));
}
