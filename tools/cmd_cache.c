/* cmd_cache.c - `ringfeed cache ls|du|verify|clear [--cache-dir DIR]`: the
 * data cache's files (rf_data_cache_admin). verify exits 1 when a range's
 * bytes fail their CRC-32C (the loader would refetch it, never deliver it). */
#include "commands.h"
#include "ringfeed.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: ringfeed cache ls|du|verify|clear [--cache-dir DIR]\n\n"
	        "The data cache of remote ranges (loader option cache=read|readwrite).\n"
	        "  ls       each object version: URL (no query), version, ranges, bytes\n"
	        "  du       objects, ranges, recorded bytes, bytes on disk\n"
	        "  verify   read every range back against its CRC-32C (exit 1: a bad one)\n"
	        "  clear    remove the cache's files (nothing else in the directory)\n"
	        "  --cache-dir DIR  the directory (default $RINGFEED_CACHE_DIR/data, else\n"
	        "                   $XDG_CACHE_HOME/ringfeed/data, else ~/.cache/ringfeed/data)\n");
}

static void print_one(void *ctx, const char *url, const char *validator, uint64_t size,
                      uint64_t ranges, uint64_t bytes, uint64_t bad)
{
	(void)ctx;
	printf("%s\t%s\tsize=%llu\tranges=%llu\tbytes=%llu%s\n", url, validator,
	       (unsigned long long)size, (unsigned long long)ranges, (unsigned long long)bytes,
	       bad ? "\tBAD" : "");
}

int cmd_cache(int argc, char **argv)
{
	static const char *const actions[] = {"du", "ls", "verify", "clear"};
	const char *dir = NULL;
	int action = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strncmp(argv[i], "--cache-dir=", 12)) {
			dir = argv[i] + 12;
		} else if (action < 0) {
			for (int a = 0; a < 4; a++)
				if (!strcmp(argv[i], actions[a]))
					action = a;
			if (action < 0) {
				fprintf(stderr, "ringfeed cache: unknown action '%s'\n", argv[i]);
				usage(stderr);
				return 2;
			}
		} else {
			fprintf(stderr, "ringfeed cache: unexpected '%s'\n", argv[i]);
			return 2;
		}
	}
	if (action < 0) {
		usage(stderr);
		return 2;
	}
	rf_data_cache_info info;
	rf_error err = {0};
	int rc = rf_data_cache_admin(dir, action, action == 1 || action == 2 ? print_one : NULL,
	                             NULL, &info, &err);
	if (rc < 0) {
		fprintf(stderr, "ringfeed cache %s: %s\n", actions[action], err.msg);
		return 1;
	}
	printf("objects=%llu ranges=%llu recorded_bytes=%llu disk_bytes=%llu foreign=%llu",
	       (unsigned long long)info.objects, (unsigned long long)info.ranges,
	       (unsigned long long)info.recorded_bytes, (unsigned long long)info.disk_bytes,
	       (unsigned long long)info.foreign);
	if (action == 2)
		printf(" bad=%llu", (unsigned long long)info.bad_ranges);
	if (action == 3)
		printf(" removed=%llu", (unsigned long long)info.removed);
	printf("\n");
	return action == 2 && info.bad_ranges ? 1 : 0;
}
