/* cmd_pack.c - `ringfeed pack`: records from lines of a file, files of a
 * directory, or fixed-size slices of a file, into numbered .rfs shards and a
 * manifest; `--demo` generates the built-in demo dataset instead. */
#include "commands.h"
#include "demo.h"
#include "json.h"
#include "packer.h"
#include "ringfeed.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_MAX        (RF_BLOCK_DECODED_MAX - 8u) /* one record alone in a block */
#define READ_CHUNK        (4u << 20)
#define RF_MIN_LONG(a, b) ((a) < (b) ? (a) : (b))

static const char pack_usage[] =
    "usage: ringfeed pack --from lines FILE  | --from files DIR | --from fixed:N FILE\n"
    "                     -o DIR [--block-size 1MiB] [--shard-size 256MiB] [--level 3]\n"
    "                     [--allow-short] [--metadata TEXT] [--clean]\n"
    "       ringfeed pack --demo -o DIR [--demo-bytes 1GiB] [--demo-shards 64]\n"
    "\n"
    "Packs records into DIR/shard-000000.rfs, shard-000001.rfs, ... and writes\n"
    "DIR/manifest.rfm listing each shard with its size and record count. A DIR that\n"
    "already holds shards or a manifest is refused (two packs never mix; `read DIR`\n"
    "reads DIR/manifest.rfm) unless --clean, which first removes what an earlier pack\n"
    "wrote there (shard-*.rfs, manifest.rfm; other .rfs files are refused still).\n"
    "  --from lines FILE   each line is a record (newline removed); FILE may be -\n"
    "  --from files DIR    each regular file under DIR is a record, in sorted path order\n"
    "  --from fixed:N FILE N-byte records; a short tail is an error unless --allow-short\n"
    "  --block-size SIZE   decoded bytes per block (default 1MiB; KiB/MiB/GiB accepted)\n"
    "  --shard-size SIZE   a new shard starts once a shard's blocks reach SIZE (default\n"
    "                      256MiB; a shard can exceed it by up to two blocks)\n"
    "  --level N           zstd level (default 3)\n"
    "  --demo              generate the built-in demo dataset (token-like records);\n"
    "                      it takes --demo-bytes and --demo-shards, no other pack option\n"
    "  --clean             remove what an earlier pack wrote in DIR first\n"
    "  --json              print one JSON object (the figures below) instead of the line\n"
    "  -q, --quiet         no progress on stderr (progress shows the percent done and\n"
    "                      the time left when the input's size is known)\n"
    "The summary's ratio is record payload bytes over shard file bytes (blocks,\n"
    "index, footer), as `ringfeed inspect` prints it for one shard.\n";

typedef struct pack_args {
	const char *from, *input, *out, *metadata;
	uint64_t block_bytes, shard_bytes, demo_bytes, fixed;
	int level, allow_short, demo, clean;
	unsigned demo_shards;
	int json, quiet; /* output only: --json, -q */
	size_t out_len;  /* of out without its trailing slashes */
	/* the first option given that only packing records takes, and the
	 * first that only --demo takes: the other mode refuses it, never
	 * ignores it (--demo --block-size 16KiB made 1 MiB blocks) */
	const char *pack_only, *demo_only;
} pack_args;

static int read_lines(rf_pack *p, FILE *f, const char *name, rf_error *err)
{
	size_t cap = READ_CHUNK, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		return rf_tool_fail(err, -ENOMEM, "no memory");
	uint64_t line_no = 1;
	int rc = 0;
	for (;;) {
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		size_t pos = 0;
		char *nl;
		while (rc == 0 && (nl = memchr(buf + pos, '\n', len - pos))) {
			rc = rf_pack_add(p, buf + pos, (size_t)(nl - (buf + pos)), err);
			pos = (size_t)(nl - buf) + 1;
			line_no++;
		}
		memmove(buf, buf + pos, len - pos);
		len -= pos;
		if (rc < 0 || n == 0)
			break;
		if (len == cap) { /* one line fills the buffer: grow, up to the record limit */
			char *q = cap > RECORD_MAX ? NULL : realloc(buf, cap * 2);
			if (!q) {
				rc = rf_tool_fail(err, -EFBIG,
				                  "%s: line %llu is longer than %u bytes", name,
				                  (unsigned long long)line_no, RECORD_MAX);
				break;
			}
			buf = q;
			cap *= 2;
		}
	}
	if (rc == 0 && ferror(f))
		rc = rf_tool_fail(err, -EIO, "%s: read error near line %llu", name,
		                  (unsigned long long)line_no);
	if (rc == 0 && len > 0) /* last line without a newline */
		rc = rf_pack_add(p, buf, len, err);
	free(buf);
	return rc;
}

static int read_fixed(rf_pack *p, FILE *f, const char *name, uint64_t n, int allow_short,
                      rf_error *err)
{
	uint8_t *buf = malloc(n);
	if (!buf)
		return rf_tool_fail(err, -ENOMEM, "no memory for %llu-byte records",
		                    (unsigned long long)n);
	int rc = 0;
	uint64_t at = 0;
	for (;;) {
		size_t got = fread(buf, 1, n, f);
		if (got == 0)
			break;
		if (got < n && !allow_short && !ferror(f)) {
			rc = rf_tool_fail(
			    err, -EINVAL,
			    "%s: short tail of %zu bytes at byte %llu (records are %llu "
			    "bytes; --allow-short keeps it as a shorter record)",
			    name, got, (unsigned long long)at, (unsigned long long)n);
			break;
		}
		if ((rc = rf_pack_add(p, buf, got, err)) < 0 || got < n)
			break;
		at += got;
	}
	if (rc == 0 && ferror(f))
		rc = rf_tool_fail(err, -EIO, "%s: read error at byte %llu", name,
		                  (unsigned long long)at);
	free(buf);
	return rc;
}

typedef struct path_list {
	char **v;
	size_t n, cap;
	uint64_t skipped;
} path_list;

static int list_push(path_list *l, const char *path)
{
	if (l->n == l->cap) {
		size_t c = l->cap ? l->cap * 2 : 256;
		char **q = realloc(l->v, c * sizeof(*q));
		if (!q)
			return -ENOMEM;
		l->v = q;
		l->cap = c;
	}
	return (l->v[l->n] = strdup(path)) ? (int)(l->n++ * 0) : -ENOMEM;
}

#define WALK_DEPTH_MAX 64

/* Collects regular files under dir (symlinks are not followed). */
static int walk(const char *dir, int depth, path_list *l, rf_error *err)
{
	if (depth > WALK_DEPTH_MAX)
		return rf_tool_fail(err, -ELOOP, "%s: nested deeper than %d directories", dir,
		                    WALK_DEPTH_MAX);
	DIR *d = opendir(dir);
	if (!d)
		return rf_tool_fail(err, -errno, "%s: cannot open directory: %s", dir,
		                    strerror(errno));
	int rc = 0;
	struct dirent *e;
	char path[4096];
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path)) {
			rc = rf_tool_fail(err, -ENAMETOOLONG, "%s/%s: path too long", dir,
			                  e->d_name);
			break;
		}
		struct stat st;
		if (lstat(path, &st) < 0)
			rc = rf_tool_fail(err, -errno, "%s: %s", path, strerror(errno));
		else if (S_ISDIR(st.st_mode))
			rc = walk(path, depth + 1, l, err);
		else if (S_ISREG(st.st_mode))
			rc = list_push(l, path) < 0 ? rf_tool_fail(err, -ENOMEM, "no memory") : 0;
		else
			l->skipped++;
	}
	closedir(d);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_file(rf_pack *p, const char *path, uint8_t **buf, size_t *cap, rf_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return rf_tool_fail(err, -errno, "%s: cannot open: %s", path, strerror(errno));
	struct stat st;
	int rc = fstat(fileno(f), &st) < 0 ? rf_tool_fail(err, -errno, "%s: stat failed", path) : 0;
	if (rc == 0 && (uint64_t)st.st_size > RECORD_MAX)
		rc = rf_tool_fail(err, -EFBIG, "%s: %llu bytes is larger than a record may be (%u)",
		                  path, (unsigned long long)st.st_size, RECORD_MAX);
	size_t want = rc == 0 ? (size_t)st.st_size : 0;
	if (rc == 0 && want + 1 > *cap) {
		uint8_t *q = realloc(*buf, want + 1);
		if (!q)
			rc = rf_tool_fail(err, -ENOMEM, "no memory for %s", path);
		else {
			*buf = q;
			*cap = want + 1;
		}
	}
	/* read one byte more than stat said, to notice a file that grew */
	size_t got = rc == 0 ? fread(*buf, 1, want + 1, f) : 0;
	if (rc == 0 && got != want)
		rc = rf_tool_fail(err, -EIO,
		                  "%s: read %zu bytes, expected %zu (changed while packed?)", path,
		                  got, want);
	fclose(f);
	return rc < 0 ? rc : rf_pack_add(p, *buf, want, err);
}

static int read_files(rf_pack *p, const char *dir, rf_error *err)
{
	path_list l = {0};
	int rc = walk(dir, 0, &l, err);
	if (rc == 0 && l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), cmp_str);
	if (l.skipped)
		fprintf(stderr,
		        "ringfeed pack: %s: skipped %llu entries that are not regular files "
		        "or directories (symlinks, devices, ...)\n",
		        dir, (unsigned long long)l.skipped);
	uint8_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		rc = add_file(p, l.v[i], &buf, &cap, err);
	free(buf);
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	return rc;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "ringfeed pack: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n(ringfeed pack --help shows the options)\n");
	va_end(ap);
	return 2;
}

static int size_arg(const char *opt, const char *text, uint64_t *out)
{
	rf_error err = {0};
	if (rf_parse_bytes(text, out, &err) < 0) {
		fprintf(stderr, "ringfeed pack: %s: %s\n", opt, err.msg);
		return 2;
	}
	return 0;
}

static int parse_from(pack_args *a)
{
	if (!strcmp(a->from, "lines") || !strcmp(a->from, "files"))
		return 0;
	if (strncmp(a->from, "fixed:", 6) != 0)
		return usage_error("--from '%s': expected lines, files or fixed:N", a->from);
	if (size_arg("--from fixed:N", a->from + 6, &a->fixed))
		return 2;
	if (a->fixed == 0 || a->fixed > RECORD_MAX)
		return usage_error("--from '%s': N must be 1 .. 268435448 bytes", a->from);
	return 0;
}

static int parse_level(const char *text, int *out)
{
	char *end = NULL;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < -7 || v > 22)
		return usage_error("--level '%s': expected an integer from -7 to 22", text);
	*out = (int)v;
	return 0;
}

static int parse_opt(int c, const char *arg, pack_args *a)
{
	static const struct {
		int c;
		const char *name;
		bool demo; /* only --demo takes it (else only packing records) */
	} modal[] = {
	    {'f', "--from", false},  {'b', "--block-size", false},  {'s', "--shard-size", false},
	    {'l', "--level", false}, {'a', "--allow-short", false}, {'m', "--metadata", false},
	    {'c', "--clean", false}, {'B', "--demo-bytes", true},   {'S', "--demo-shards", true},
	};
	for (size_t i = 0; i < sizeof(modal) / sizeof(modal[0]); i++) {
		const char **first = modal[i].demo ? &a->demo_only : &a->pack_only;
		if (c == modal[i].c && !*first)
			*first = modal[i].name;
	}
	switch (c) {
	case 'f':
		a->from = arg;
		return 0;
	case 'o':
		a->out = arg;
		a->out_len = strlen(arg);
		while (a->out_len > 1 && arg[a->out_len - 1] == '/')
			a->out_len--; /* "data/" joins as data/manifest.rfm */
		return 0;
	case 'b':
		return size_arg("--block-size", arg, &a->block_bytes);
	case 's':
		return size_arg("--shard-size", arg, &a->shard_bytes);
	case 'l':
		return parse_level(arg, &a->level);
	case 'a':
		a->allow_short = 1;
		return 0;
	case 'm':
		a->metadata = arg;
		return 0;
	case 'd':
		a->demo = 1;
		return 0;
	case 'c':
		a->clean = 1;
		return 0;
	case 'j':
		a->json = 1;
		return 0;
	case 'q':
		a->quiet = 1;
		return 0;
	case 'B':
		return size_arg("--demo-bytes", arg, &a->demo_bytes);
	case 'S': {
		char *end = NULL;
		unsigned long v = strtoul(arg, &end, 10);
		if (end == arg || *end || v == 0 || v > 100000 || arg[0] == '-')
			return usage_error("--demo-shards '%s': expected 1 .. 100000", arg);
		a->demo_shards = (unsigned)v;
		return 0;
	}
	default:
		return 2;
	}
}

static int parse_args(int argc, char **argv, pack_args *a)
{
	static const struct option opts[] = {
	    {"from", required_argument, 0, 'f'},
	    {"output", required_argument, 0, 'o'},
	    {"block-size", required_argument, 0, 'b'},
	    {"shard-size", required_argument, 0, 's'},
	    {"level", required_argument, 0, 'l'},
	    {"allow-short", no_argument, 0, 'a'},
	    {"metadata", required_argument, 0, 'm'},
	    {"demo", no_argument, 0, 'd'},
	    {"clean", no_argument, 0, 'c'},
	    {"demo-bytes", required_argument, 0, 'B'},
	    {"demo-shards", required_argument, 0, 'S'},
	    {"json", no_argument, 0, 'j'},
	    {"quiet", no_argument, 0, 'q'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	*a = (pack_args){.block_bytes = 1u << 20,
	                 .shard_bytes = 256u << 20,
	                 .level = 3,
	                 .demo_bytes = 1ull << 30,
	                 .demo_shards = 64};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:hq", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(pack_usage, stdout);
			return -1;
		}
		if (c == '?')
			return usage_error("unknown option '%s'", argv[optind - 1]);
		if (c == ':')
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		if (parse_opt(c, optarg, a))
			return 2;
	}
	if (!a->out)
		return usage_error("%s", "-o DIR is required");
	if (a->demo && a->pack_only)
		return usage_error(
		    "%s does not apply to --demo (the demo dataset is always made the "
		    "same way; only --demo-bytes and --demo-shards size it)",
		    a->pack_only);
	if (!a->demo && a->demo_only)
		return usage_error("%s applies only to --demo", a->demo_only);
	if (a->demo)
		return optind == argc ? 0 : usage_error("unexpected argument '%s'", argv[optind]);
	if (!a->from)
		return usage_error("%s", "--from lines|files|fixed:N is required (or --demo)");
	if (optind + 1 != argc)
		return usage_error("%s",
		                   "expected exactly one input (FILE or DIR) after the options");
	a->input = argv[optind];
	if (a->block_bytes == 0 || a->block_bytes > RF_BLOCK_DECODED_MAX)
		return usage_error("%s", "--block-size must be 1 byte .. 256MiB");
	if (a->shard_bytes == 0)
		return usage_error("%s", "--shard-size must be at least 1 byte");
	return parse_from(a);
}

static int pack_input(const pack_args *a, rf_pack *p, rf_error *err)
{
	if (!strcmp(a->from, "files"))
		return read_files(p, a->input, err);
	char shown[4200]; /* a URL-shaped name is shown redacted */
	rf_url_redact(a->input, shown, sizeof(shown));
	FILE *f = strcmp(a->input, "-") ? fopen(a->input, "rb") : stdin;
	if (!f)
		return rf_tool_fail(err, -errno, "%s: cannot open: %s", shown, strerror(errno));
	int rc = a->fixed ? read_fixed(p, f, shown, a->fixed, a->allow_short, err)
	                  : read_lines(p, f, shown, err);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* One definition of the ratio, for the line and the JSON alike. */
/* One definition with inspect's (rf_tool_ratio): payload over file bytes. */
static double pack_ratio(const rf_pack *p)
{
	return rf_tool_ratio(p->in_bytes, p->out_bytes);
}

static void pack_report(const pack_args *a, const rf_pack *p, double s)
{
	if (!a->json) {
		printf(
		    "packed %llu records, %llu bytes into %u shards of %llu bytes (ratio %.3f) in "
		    "%.2f s (%.1f MB/s): %.*s/%s\n",
		    (unsigned long long)p->records, (unsigned long long)p->in_bytes, p->shard_no,
		    (unsigned long long)p->out_bytes, pack_ratio(p), s,
		    s > 0 ? (double)p->in_bytes / 1e6 / s : 0.0, (int)a->out_len, a->out,
		    RF_PACK_MANIFEST);
		return;
	}
	char manifest[4200];
	snprintf(manifest, sizeof(manifest), "%.*s/%s", (int)a->out_len, a->out, RF_PACK_MANIFEST);
	printf("{\"records\":%llu,\"payload_bytes\":%llu,\"shards\":%u,\"file_bytes\":%llu,"
	       "\"ratio\":%.4f,\"seconds\":%.6f,\"manifest\":",
	       (unsigned long long)p->records, (unsigned long long)p->in_bytes, p->shard_no,
	       (unsigned long long)p->out_bytes, pack_ratio(p), s);
	rf_json_fput(stdout, manifest);
	printf("}\n");
}

/* --demo: the generator reports on stdout; with --json that line goes to
 * stderr and stdout gets {"manifest": ...}. */
static int pack_demo(const pack_args *a)
{
	bool progress = isatty(2) && !a->quiet && !a->json;
	if (!a->json)
		return rf_demo_ensure(a->out, a->demo_bytes, a->demo_shards, progress) < 0 ? 1 : 0;
	fflush(stdout);
	int saved = dup(1);
	if (saved < 0 || dup2(2, 1) < 0)
		return 1;
	int rc = rf_demo_ensure(a->out, a->demo_bytes, a->demo_shards, progress);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	if (rc < 0)
		return 1;
	char manifest[4200];
	snprintf(manifest, sizeof(manifest), "%.*s/%s", (int)a->out_len, a->out, RF_PACK_MANIFEST);
	printf("{\"demo\":true,\"manifest\":");
	rf_json_fput(stdout, manifest);
	printf("}\n");
	return 0;
}

/* The input's size for the progress percent (0: unknown, e.g. stdin or a
 * directory), and the bytes each record adds to it beyond its payload. */
static void pack_progress_total(const pack_args *a, rf_pack *p)
{
	struct stat st;
	if (!strcmp(a->from, "files") || !strcmp(a->input, "-") || stat(a->input, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return;
	p->progress_total_bytes = (uint64_t)st.st_size;
	p->progress_record_extra_bytes = a->fixed ? 0 : 1; /* the newline */
}

int cmd_pack(int argc, char **argv)
{
	pack_args a;
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (a.demo)
		return pack_demo(&a);
	/* compression threads: one per core (the bytes do not depend on it) */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t threads = cpus < 1 ? 1 : (uint32_t)RF_MIN_LONG(cpus, RF_WRITER_THREADS_MAX);
	rf_writer_options wo = {.block_bytes = a.block_bytes,
	                        .level = a.level,
	                        .metadata = a.metadata,
	                        .threads = threads};
	rf_error err = {0};
	rf_pack p;
	uint64_t t0 = rf_tool_now_ns();
	rc = rf_pack_begin(&p, a.out, &wo, a.shard_bytes, isatty(2) && !a.quiet && !a.json, a.clean,
	                   &err);
	if (rc == 0) {
		pack_progress_total(&a, &p);
		rc = pack_input(&a, &p, &err);
		if (rc < 0)
			rf_pack_abort(&p);
		else
			rc = rf_pack_finish(&p, &err);
	}
	if (rc < 0) {
		fprintf(stderr, "ringfeed pack: %s\n", err.msg);
		return 1;
	}
	pack_report(&a, &p, (double)(rf_tool_now_ns() - t0) / 1e9);
	return 0;
}
