/* cmd_report.c - `ringfeed report TRACE -o FILE.svg`: draws a trace (written
 * by the loader's --trace or by `ringfeed sim --trace`) as an SVG. */
#include "commands.h"
#include "flags.h"
#include "json.h"
#include "report.h"
#include "trace.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char report_usage[] =
    "usage: ringfeed report TRACE -o FILE.svg [--json]\n"
    "\n"
    "Draws a trace (one JSON object per line, docs/trace.md) as stacked panels over\n"
    "time: ready queue and depth; memory by category against the budget; consumer\n"
    "waiting; rates r and c; coverage; events as numbered markers. A malformed line\n"
    "is an error that names its line number.\n"
    "\n"
    "  -o, --output FILE   the SVG to write (required)\n"
    "  --json              print a JSON summary instead of a sentence\n";

static const struct option report_longopts[] = {
    {"output", required_argument, NULL, 'o'},
    {"json", no_argument, NULL, 'j'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int write_svg(const char *out, const trace *t, const char *name)
{
	FILE *f = fopen(out, "w");
	if (!f) {
		fprintf(stderr, "ringfeed report: cannot write '%s': %s\n", out, strerror(errno));
		return 1;
	}
	int rc = report_svg(f, t, name);
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	if (rc < 0) {
		fprintf(stderr, "ringfeed report: writing '%s' failed: %s\n", out, strerror(-rc));
		unlink(out);
		return 1;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	const char *out = NULL;
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "o:", report_longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(report_usage, stdout);
			return 0;
		}
		if (c == 'o')
			out = optarg;
		else if (c == 'j')
			json = true;
		else
			return flag_usage_error("report", "bad option");
	}
	if (optind + 1 != argc)
		return flag_usage_error("report", "expected one TRACE file");
	if (!out)
		return flag_usage_error("report", "-o FILE.svg is required");
	const char *path = argv[optind];
	trace t;
	char msg[512];
	if (trace_load(path, &t, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "ringfeed report: %s\n", msg);
		return 1;
	}
	int rc = write_svg(out, &t, path);
	if (rc == 0 && json) {
		printf("{\"svg\":");
		rf_json_fput(stdout, out);
		printf(",\"lines\":%zu,\"t_first_s\":%.9g,\"t_last_s\":%.9g}\n", t.n, t.pt[0].t_s,
		       t.pt[t.n - 1].t_s);
	} else if (rc == 0) {
		printf("wrote %s (%zu intervals, %.4g s)\n", out, t.n,
		       t.pt[t.n - 1].t_s - t.pt[0].t_s);
	}
	trace_free(&t);
	return rc;
}
