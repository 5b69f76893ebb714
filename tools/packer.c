/* packer.c - see packer.h. Each shard is written by an rf_writer whose
 * compression threads work on blocks in parallel while the caller keeps
 * reading input; shard boundaries follow rf_writer_bytes, which depends only
 * on the input, so the same input always gives byte-identical shards. */
#include "packer.h"
#include "demo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int rf_tool_fail(rf_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return err->code = code;
}

uint64_t rf_tool_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rf_tool_mkdirs(const char *dir, rf_error *err)
{
	char buf[4096];
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof(buf)) {
		return rf_tool_fail(err, -ENAMETOOLONG, "output directory '%s': bad length", dir);
	}
	memcpy(buf, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST) {
			return rf_tool_fail(err, -errno, "cannot create directory %s: %s", buf,
			                    strerror(errno));
		}
		buf[i] = c;
	}
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		return rf_tool_fail(err, -ENOTDIR, "%s is not a directory", dir);
	}
	return 0;
}

int rf_pack_shard_name(char *buf, size_t cap, const char *dir, uint32_t no)
{
	int n = dir ? snprintf(buf, cap, "%s/shard-%06u.rfs", dir, no)
	            : snprintf(buf, cap, "shard-%06u.rfs", no);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* A name pack writes: shard-NNNNNN.rfs (6 digits or more) or the manifest. */
static int pack_made(const char *name)
{
	if (!strcmp(name, RF_PACK_MANIFEST) || !strcmp(name, RF_PACK_BUNDLE))
		return 1;
	size_t n = strlen(name);
	if (n < 16 || strncmp(name, "shard-", 6) != 0 || strcmp(name + n - 4, ".rfs") != 0)
		return 0;
	for (size_t i = 6; i < n - 4; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	return 1;
}

/* Counts what an earlier pack wrote in dir (removing it when clean) and the
 * other .rfs files (never removed); first names one of each. */
static int pack_dir_scan(const char *dir, int clean, uint64_t *ours, uint64_t *others,
                         char first[2][256], rf_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return rf_tool_fail(err, -errno, "%s: cannot open directory: %s", dir,
		                    strerror(errno));
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		int mine = pack_made(e->d_name);
		if (!mine && (n < 5 || strcmp(e->d_name + n - 4, ".rfs") != 0))
			continue;
		uint64_t *count = mine ? ours : others;
		if (!(*count)++)
			snprintf(first[mine], sizeof(first[mine]), "%s", e->d_name);
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (clean && mine && unlink(path) != 0 && errno != ENOENT)
			rc = rf_tool_fail(err, -errno, "%s: cannot remove: %s", path,
			                  strerror(errno));
	}
	closedir(d);
	return rc;
}

/* Two packs never mix in one directory: .rfs files pack did not write are
 * refused; what an earlier pack wrote is refused too, or removed when clean. */
static int pack_dir_check(const char *dir, int clean, rf_error *err)
{
	uint64_t ours = 0, others = 0;
	char first[2][256] = {"", ""};
	int rc = pack_dir_scan(dir, 0, &ours, &others, first, err);
	if (rc < 0)
		return rc;
	if (others)
		return rf_tool_fail(err, -EEXIST,
		                    "%s holds %llu .rfs files pack did not write, e.g. %s: "
		                    "use another -o DIR (pack never removes them)",
		                    dir, (unsigned long long)others, first[0]);
	if (ours && !clean)
		return rf_tool_fail(err, -EEXIST,
		                    "%s already holds an earlier pack (%llu files, e.g. %s): two "
		                    "packs never mix; use another -o DIR, or --clean to remove "
		                    "the earlier pack first",
		                    dir, (unsigned long long)ours, first[1]);
	return ours ? pack_dir_scan(dir, 1, &ours, &others, first, err) : 0;
}

int rf_pack_begin(rf_pack *p, const char *dir, const rf_writer_options *wopt, uint64_t shard_bytes,
                  int progress, int clean, rf_error *err)
{
	memset(p, 0, sizeof(*p));
	int rc = rf_tool_mkdirs(dir, err);
	if (rc == 0)
		rc = pack_dir_check(dir, clean, err);
	if (rc < 0)
		return rc;
	char marker[4096]; /* this directory no longer holds the demo dataset */
	snprintf(marker, sizeof(marker), "%s/%s", dir, RF_DEMO_MARKER);
	unlink(marker);
	p->dir = strdup(dir);
	if (!p->dir) {
		return rf_tool_fail(err, -ENOMEM, "no memory");
	}
	for (size_t n = strlen(p->dir); n > 1 && p->dir[n - 1] == '/'; n--)
		p->dir[n - 1] = '\0'; /* "data/" joins as data/shard-000000.rfs */
	p->wopt = *wopt;
	p->shard_bytes = shard_bytes;
	p->progress = progress;
	p->t0_ns = rf_tool_now_ns();
	p->last_ns = p->t0_ns; /* the first line after 250 ms, with a rate to go by */
	return 0;
}

static void pack_free(rf_pack *p)
{
	for (size_t i = 0; i < p->m.count; i++)
		free(p->m.entry[i].url);
	free(p->m.entry);
	free(p->dir);
	p->m.entry = NULL;
	p->m.count = 0;
	p->cap = 0;
	p->dir = NULL; /* the counters stay for the caller's summary */
}

static int shard_close(rf_pack *p, rf_error *err)
{
	rf_shard_summary s;
	int rc = rf_writer_close(p->w, &s, err);
	p->w = NULL;
	if (rc < 0)
		return rc;
	if (p->m.count == p->cap) {
		size_t n = p->cap ? p->cap * 2 : 64;
		rf_manifest_entry *e = realloc(p->m.entry, n * sizeof(*e));
		if (!e) {
			return rf_tool_fail(err, -ENOMEM, "no memory for the manifest");
		}
		p->m.entry = e;
		p->cap = n;
	}
	char name[64];
	rf_pack_shard_name(name, sizeof(name), NULL, p->shard_no);
	rf_manifest_entry *e = &p->m.entry[p->m.count];
	if (!(e->url = strdup(name))) {
		return rf_tool_fail(err, -ENOMEM, "no memory for the manifest");
	}
	e->bytes = s.file_bytes;
	e->records = s.records;
	p->m.count++;
	p->out_bytes += s.file_bytes;
	p->shard_no++;
	return 0;
}

static void progress_line(rf_pack *p, int final)
{
	uint64_t now = rf_tool_now_ns();
	if (!p->progress || (!final && now - p->last_ns < 250000000ull))
		return;
	p->last_ns = now;
	double s = (double)(now - p->t0_ns) / 1e9;
	fprintf(stderr, "\rpacking: %.1f MiB in, %llu records, %u shards, %.0f MB/s",
	        (double)p->in_bytes / 1048576.0, (unsigned long long)p->records,
	        p->shard_no + (p->w ? 1 : 0), s > 0 ? (double)p->in_bytes / 1e6 / s : 0.0);
	double done =
	    (double)p->in_bytes + (double)p->records * (double)p->progress_record_extra_bytes;
	if (p->progress_total_bytes && done > 0) {
		double f = done / (double)p->progress_total_bytes;
		f = f > 1 ? 1 : f;
		fprintf(stderr, ", %.0f%%, %.0f s left", 100 * f, s * (1 - f) / f);
	}
	fprintf(stderr, "   %s", final ? "\n" : "");
	fflush(stderr);
}

int rf_pack_add(rf_pack *p, const void *rec, size_t len, rf_error *err)
{
	if (!p->w) {
		char path[4096];
		if (rf_pack_shard_name(path, sizeof(path), p->dir, p->shard_no) < 0)
			return rf_tool_fail(err, -ENAMETOOLONG, "output path too long in %s",
			                    p->dir);
		p->w = rf_writer_open(path, &p->wopt, err);
		if (!p->w)
			return err->code;
		p->shard_records = 0;
	}
	int rc = rf_writer_add(p->w, rec, len, err);
	if (rc < 0)
		return rc;
	p->in_bytes += len;
	p->records++;
	p->shard_records++;
	if (rf_writer_bytes(p->w) >= p->shard_bytes || p->shard_records == UINT32_MAX)
		rc = shard_close(p, err);
	if ((p->records & 1023) == 0)
		progress_line(p, 0);
	return rc;
}

int rf_pack_finish(rf_pack *p, rf_error *err)
{
	int rc = p->w ? shard_close(p, err) : 0;
	char path[4096];
	if (rc == 0 && p->m.count > 0) { /* the bundle first: never a manifest without it */
		snprintf(path, sizeof(path), "%s/%s", p->dir, RF_PACK_BUNDLE);
		rc = rf_index_bundle_write(path, p->dir, &p->m, err);
		if (rc == -EFBIG) { /* a bundle is an aid: the shards open one by one */
			fprintf(stderr, "pack: no index bundle: %s\n", err->msg);
			rc = 0;
		}
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/%s", p->dir, RF_PACK_MANIFEST);
		rc = rf_manifest_write(path, &p->m, err);
	}
	progress_line(p, 1);
	if (rc < 0)
		rf_pack_abort(p);
	else
		pack_free(p);
	return rc;
}

void rf_pack_abort(rf_pack *p)
{
	if (p->w)
		rf_writer_abort(p->w);
	p->w = NULL;
	pack_free(p);
}

int rf_tool_read_head(const char *path, void *buf, size_t cap, rf_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return rf_tool_fail(err, -errno, "%s: cannot open: %s", path, strerror(errno));
	struct stat st;
	ssize_t n = 0;
	if (fstat(fd, &st) < 0)
		n = rf_tool_fail(err, -errno, "%s: stat: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		n = rf_tool_fail(err, -EINVAL, "%s: not a regular file", path);
	else if ((n = pread(fd, buf, cap, 0)) < 0)
		n = rf_tool_fail(err, -errno, "%s: read: %s", path, strerror(errno));
	close(fd);
	return (int)n;
}

double rf_tool_ratio(uint64_t payload_bytes, uint64_t file_bytes)
{
	return file_bytes ? (double)payload_bytes / (double)file_bytes : 0.0;
}
