/* rfs_write.c - the .rfs writer: gathers records into blocks of about
 * block_bytes decoded, compresses each block into one zstd frame (content
 * size + checksum), and ends the file with the index and the footer.
 *
 * With threads = W >= 1, W workers compress blocks in parallel while the
 * caller fills the next one; each worker writes its frame when every earlier
 * block is written, so blocks land in order. Block k uses slot k % SLOTS; the
 * caller never runs more than RF_WRITER_LAG_BLOCKS blocks ahead of the writes.
 * Every frame is compressed alone with the same parameters, so the file is
 * byte-identical whatever the threading. */
#include "crc32c.h"
#include "rfs.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define RF_WRITER_SLOTS (RF_WRITER_LAG_BLOCKS + 1)

typedef struct rf_wblock {
	uint8_t *buf; /* payloads, then (at finish) the record table */
	size_t len, cap;
	uint32_t *ends; /* host-order end offsets until the block is finished */
	uint32_t records, ends_cap;
	uint32_t largest_record;
} rf_wblock;

/* One compressor: the caller's when threads == 0, else one per worker. */
typedef struct rf_wctx {
	rf_writer *w;
	ZSTD_CCtx *cctx;
	uint8_t *zbuf;
	size_t zcap;
	pthread_t thread;
} rf_wctx;

struct rf_writer {
	int fd;
	char *path;
	char *metadata;
	uint64_t block_target;
	int level;
	rf_wblock slot[RF_WRITER_SLOTS];
	rf_wctx ctx[RF_WRITER_THREADS_MAX];
	uint32_t workers, started; /* 0 workers: the caller compresses */
	/* Written by the worker whose turn it is to write (written == its block). */
	rf_block_info *block;
	uint32_t blocks_cap;
	uint64_t offset; /* end of the last written block */
	uint32_t largest_compressed, largest_decoded, largest_record;
	uint64_t decoded_bytes, payload_bytes;
	/* Under mu when workers > 0. */
	uint32_t submitted; /* blocks handed over (the caller fills block `submitted`) */
	uint32_t taken;     /* blocks a worker has started compressing */
	uint32_t written;   /* blocks written, in order */
	bool stop, sync_ready;
	bool regular; /* the path is a regular file: removed on failure */
	int failed;   /* sticky error code */
	rf_error werr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Caller only. */
	int dead; /* a submit failed: the writer only reports that now */
	uint64_t records;
	uint64_t known_bytes;
};

static int write_all(rf_writer *w, const void *buf, size_t len, rf_error *err)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = write(w->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return rf_fail(
			    err, n < 0 ? -errno : -EIO, "shard %s: write at byte %llu: %s", w->path,
			    (unsigned long long)w->offset, n < 0 ? strerror(errno) : "short write");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int grow(void **p, size_t elem, uint32_t *cap, uint64_t need, uint64_t max)
{
	if (need <= *cap)
		return 0;
	uint64_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	if (n > max)
		n = max;
	if (n < need)
		return -EFBIG;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = (uint32_t)n;
	return 0;
}

static int buf_reserve(rf_wblock *b, uint64_t need)
{
	if (need <= b->cap)
		return 0;
	uint64_t n = b->cap ? b->cap : 4096;
	while (n < need)
		n *= 2;
	uint8_t *q = realloc(b->buf, n);
	if (!q)
		return -ENOMEM;
	b->buf = q;
	b->cap = n;
	return 0;
}

/* Appends the record table: [u32 end per record][u32 count]. */
static int block_finish(rf_wblock *b)
{
	uint64_t total = b->len + RF_BLOCK_TABLE_BYTES(b->records);
	if (buf_reserve(b, total) < 0)
		return -ENOMEM;
	uint8_t *t = b->buf + b->len;
	for (uint32_t i = 0; i < b->records; i++)
		rf_store_le32(t + 4 * (size_t)i, b->ends[i]);
	rf_store_le32(t + 4 * (size_t)b->records, b->records);
	b->len = total;
	return 0;
}

static void slot_reset(rf_wblock *b)
{
	b->len = 0;
	b->records = 0;
	b->largest_record = 0;
}

/* Compresses slot b (block seq) with c; *n = frame length. */
static int block_compress(rf_writer *w, rf_wctx *c, const rf_wblock *b, uint32_t seq, size_t *n,
                          rf_error *err)
{
	size_t bound = ZSTD_compressBound(b->len);
	if (bound > c->zcap) {
		uint8_t *q = realloc(c->zbuf, bound);
		if (!q)
			return rf_fail(err, -ENOMEM,
			               "shard %s: block %u: no memory for a %zu-byte frame",
			               w->path, seq, bound);
		c->zbuf = q;
		c->zcap = bound;
	}
	*n = ZSTD_compress2(c->cctx, c->zbuf, c->zcap, b->buf, b->len);
	if (ZSTD_isError(*n) || *n > UINT32_MAX)
		return rf_fail(err, -EIO, "shard %s: block %u: zstd compression failed: %s",
		               w->path, seq,
		               ZSTD_isError(*n) ? ZSTD_getErrorName(*n) : "frame too large");
	return 0;
}

/* Records the block just written (caller: the one whose turn it was; under
 * mu when there are workers, since the caller reads block[]). */
static int block_record(rf_writer *w, const rf_wblock *b, uint32_t seq, size_t n, rf_error *err)
{
	if (grow((void **)&w->block, sizeof(*w->block), &w->blocks_cap, (uint64_t)seq + 1,
	         RF_INDEX_BLOCKS_MAX) < 0)
		return rf_fail(err, -ENOMEM, "shard %s: cannot index block %u", w->path, seq);
	rf_block_info *bi = &w->block[seq];
	bi->offset = w->offset;
	bi->compressed_bytes = (uint32_t)n;
	bi->decoded_bytes = (uint32_t)b->len;
	bi->records = b->records;
	bi->first_record = seq ? bi[-1].first_record + bi[-1].records : 0;
	w->offset += n;
	w->largest_compressed = RF_MAX(w->largest_compressed, (uint32_t)n);
	w->largest_decoded = RF_MAX(w->largest_decoded, (uint32_t)b->len);
	w->largest_record = RF_MAX(w->largest_record, b->largest_record);
	w->decoded_bytes += b->len;
	w->payload_bytes += b->records ? b->ends[b->records - 1] : 0;
	return 0;
}

static void set_failed(rf_writer *w, int rc, const rf_error *e)
{
	if (rc < 0 && !w->failed) {
		w->failed = rc;
		w->werr = *e;
	}
}

/* Worker: take the next block, compress it, wait for its turn, write it. */
static void *worker_main(void *arg)
{
	rf_wctx *c = arg;
	rf_writer *w = c->w;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && w->taken == w->submitted)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->taken == w->submitted)
			break;
		uint32_t seq = w->taken++;
		rf_wblock *b = &w->slot[seq % RF_WRITER_SLOTS];
		int skip = w->failed;
		pthread_mutex_unlock(&w->mu);
		rf_error e = {0};
		size_t n = 0;
		int rc = skip ? 0 : block_compress(w, c, b, seq, &n, &e);
		pthread_mutex_lock(&w->mu);
		while (w->written != seq)
			pthread_cond_wait(&w->cv, &w->mu);
		if (rc == 0 && !w->failed) {
			pthread_mutex_unlock(&w->mu); /* our turn: nobody else writes */
			rc = write_all(w, c->zbuf, n, &e);
			pthread_mutex_lock(&w->mu);
			if (rc == 0)
				rc = block_record(w, b, seq, n, &e);
		}
		set_failed(w, rc, &e);
		slot_reset(b);
		w->written++;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Bytes of blocks [0, upto). */
static uint64_t bytes_before(const rf_writer *w, uint32_t upto)
{
	return upto ? w->block[upto - 1].offset + w->block[upto - 1].compressed_bytes : 0;
}

static int fail_copy(rf_writer *w, rf_error *err)
{
	if (w->failed && err)
		*err = w->werr;
	return w->failed;
}

static int submit_inline(rf_writer *w, rf_wblock *b, rf_error *err)
{
	uint32_t seq = w->submitted++;
	size_t n = 0;
	rf_error e = {0};
	int rc = block_compress(w, &w->ctx[0], b, seq, &n, &e);
	if (rc == 0)
		rc = write_all(w, w->ctx[0].zbuf, n, &e);
	if (rc == 0)
		rc = block_record(w, b, seq, n, &e);
	set_failed(w, rc, &e);
	slot_reset(b);
	w->written++;
	if (!w->failed)
		w->known_bytes =
		    bytes_before(w, RF_MIN(w->written, w->submitted > RF_WRITER_LAG_BLOCKS
		                                           ? w->submitted - RF_WRITER_LAG_BLOCKS
		                                           : 0));
	return fail_copy(w, err);
}

/* Completes the block being filled and hands it over. Afterwards every block
 * but the last RF_WRITER_LAG_BLOCKS is written, so known_bytes is exact. */
static int block_submit(rf_writer *w, rf_error *err)
{
	rf_wblock *b = &w->slot[w->submitted % RF_WRITER_SLOTS];
	if (block_finish(b) < 0)
		return rf_fail(err, -ENOMEM, "shard %s: no memory for block %u's record table",
		               w->path, w->submitted);
	if (w->workers == 0)
		return submit_inline(w, b, err);
	pthread_mutex_lock(&w->mu);
	w->submitted++;
	pthread_cond_broadcast(&w->cv);
	uint32_t need =
	    w->submitted > RF_WRITER_LAG_BLOCKS ? w->submitted - RF_WRITER_LAG_BLOCKS : 0;
	while (w->written < need)
		pthread_cond_wait(&w->cv, &w->mu);
	if (!w->failed)
		w->known_bytes = bytes_before(w, need);
	int rc = fail_copy(w, err);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* Waits until every submitted block is written; returns the sticky error. */
static int wait_idle(rf_writer *w, rf_error *err)
{
	if (w->workers == 0)
		return fail_copy(w, err);
	pthread_mutex_lock(&w->mu);
	while (w->written < w->submitted)
		pthread_cond_wait(&w->cv, &w->mu);
	int rc = fail_copy(w, err);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

RF_API uint64_t rf_writer_bytes(const rf_writer *w)
{
	return w ? w->known_bytes : 0;
}

RF_API int rf_writer_add(rf_writer *w, const void *record, size_t len, rf_error *err)
{
	if (w->dead) {
		if (err)
			*err = w->werr;
		return w->dead;
	}
	if (len > RF_BLOCK_DECODED_MAX - RF_BLOCK_TABLE_BYTES(1))
		return rf_fail(
		    err, -EFBIG,
		    "shard %s: record %llu is %zu bytes; a record may hold at most %llu "
		    "(RF_BLOCK_DECODED_MAX less its table)",
		    w->path, (unsigned long long)w->records, len,
		    (unsigned long long)(RF_BLOCK_DECODED_MAX - RF_BLOCK_TABLE_BYTES(1)));
	if (w->records >= RF_RECORDS_MAX)
		return rf_fail(err, -EOVERFLOW, "shard %s: a shard holds at most %u records",
		               w->path, RF_RECORDS_MAX);
	rf_wblock *b = &w->slot[w->submitted % RF_WRITER_SLOTS];
	uint64_t need = b->len + len + RF_BLOCK_TABLE_BYTES(b->records + 1);
	if (b->records && need > w->block_target) {
		int rc = block_submit(w, err);
		if (rc < 0)
			return w->dead = rc;
		b = &w->slot[w->submitted % RF_WRITER_SLOTS];
	}
	if (b->records == 0 && w->submitted >= RF_INDEX_BLOCKS_MAX)
		return rf_fail(err, -EFBIG, "shard %s: a shard holds at most %u blocks", w->path,
		               RF_INDEX_BLOCKS_MAX);
	if (buf_reserve(b, b->len + len) < 0 ||
	    grow((void **)&b->ends, sizeof(uint32_t), &b->ends_cap, (uint64_t)b->records + 1,
	         UINT32_MAX) < 0)
		return rf_fail(err, -ENOMEM, "shard %s: no memory for record %llu (%zu bytes)",
		               w->path, (unsigned long long)w->records, len);
	if (len)
		memcpy(b->buf + b->len, record, len);
	b->len += len;
	b->ends[b->records++] = (uint32_t)b->len;
	b->largest_record = RF_MAX(b->largest_record, (uint32_t)len);
	w->records++;
	return 0;
}

static int ctx_setup(rf_writer *w, rf_wctx *c, rf_error *err)
{
	c->w = w;
	c->cctx = ZSTD_createCCtx();
	if (!c->cctx)
		return rf_fail(err, -ENOMEM, "shard %s: no memory for a zstd context", w->path);
	if (ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, w->level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_contentSizeFlag, 1)))
		return rf_fail(err, -EINVAL, "shard %s: zstd refused the frame parameters",
		               w->path);
	return 0;
}

static int writer_setup(rf_writer *w, const rf_writer_options *opt, rf_error *err)
{
	w->level = opt->level ? opt->level : 3;
	if (w->level < ZSTD_minCLevel() || w->level > ZSTD_maxCLevel())
		return rf_fail(err, -EINVAL, "shard %s: zstd level %d is outside %d..%d", w->path,
		               w->level, ZSTD_minCLevel(), ZSTD_maxCLevel());
	if (opt->threads > RF_WRITER_THREADS_MAX)
		return rf_fail(err, -EINVAL, "shard %s: %u compression threads, at most %d",
		               w->path, opt->threads, RF_WRITER_THREADS_MAX);
	w->workers = opt->threads;
	for (uint32_t i = 0; i < RF_MAX(w->workers, 1u); i++)
		RF_TRY(ctx_setup(w, &w->ctx[i], err));
	w->fd = open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0)
		return rf_fail(err, -errno, "shard %s: cannot create: %s", w->path,
		               strerror(errno));
	struct stat st;
	/* only a regular file is removed when writing fails (never a device or FIFO) */
	w->regular = fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->sync_ready = true;
	for (; w->started < w->workers; w->started++) {
		int rc = pthread_create(&w->ctx[w->started].thread, NULL, worker_main,
		                        &w->ctx[w->started]);
		if (rc)
			return rf_fail(err, -rc, "shard %s: cannot start a compression thread: %s",
			               w->path, strerror(rc));
	}
	return 0;
}

static void writer_free(rf_writer *w)
{
	if (w->started) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
		for (uint32_t i = 0; i < w->started; i++)
			pthread_join(w->ctx[i].thread, NULL);
	}
	if (w->fd >= 0)
		close(w->fd);
	if (w->sync_ready) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
	}
	for (int i = 0; i < RF_WRITER_SLOTS; i++) {
		free(w->slot[i].buf);
		free(w->slot[i].ends);
	}
	for (int i = 0; i < RF_WRITER_THREADS_MAX; i++) {
		ZSTD_freeCCtx(w->ctx[i].cctx);
		free(w->ctx[i].zbuf);
	}
	free(w->block);
	free(w->metadata);
	free(w->path);
	free(w);
}

RF_API rf_writer *rf_writer_open(const char *path, const rf_writer_options *opt, rf_error *err)
{
	static const rf_writer_options defaults = {0};
	if (!opt)
		opt = &defaults;
	if (!path || !*path) {
		rf_fail(err, -EINVAL, "shard writer: empty path");
		return NULL;
	}
	size_t meta_len = opt->metadata ? strlen(opt->metadata) : 0;
	uint64_t target = opt->block_bytes ? opt->block_bytes : (1u << 20);
	if (meta_len > RF_METADATA_MAX || target > RF_BLOCK_DECODED_MAX) {
		rf_fail(err, -EINVAL, "shard %s: %s", path,
		        meta_len > RF_METADATA_MAX
		            ? "metadata exceeds RF_METADATA_MAX (64 KiB)"
		            : "block size exceeds RF_BLOCK_DECODED_MAX (256 MiB)");
		return NULL;
	}
	rf_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path)) ||
	    !(w->metadata = strdup(opt->metadata ? opt->metadata : ""))) {
		if (w)
			free(w->path);
		free(w);
		rf_fail(err, -ENOMEM, "shard %s: no memory for a writer", path);
		return NULL;
	}
	w->fd = -1;
	w->block_target = target;
	if (writer_setup(w, opt, err) < 0) {
		bool remove = w->regular;
		writer_free(w);
		if (remove)
			unlink(path);
		return NULL;
	}
	return w;
}

/* Writes the index and the footer after the last block. */
static int write_tail(rf_writer *w, rf_error *err)
{
	size_t meta_len = strlen(w->metadata);
	size_t bytes = RF_INDEX_HEADER_BYTES + meta_len + (size_t)RF_INDEX_ENTRY_BYTES * w->written;
	uint8_t *ix = malloc(bytes + RF_FOOTER_BYTES);
	if (!ix)
		return rf_fail(err, -ENOMEM, "shard %s: no memory for a %zu-byte index", w->path,
		               bytes);
	rf_store_le32(ix, w->written);
	rf_store_le64(ix + 4, w->records);
	rf_store_le32(ix + 12, w->largest_compressed);
	rf_store_le32(ix + 16, w->largest_decoded);
	rf_store_le32(ix + 20, w->largest_record);
	rf_store_le32(ix + 24, (uint32_t)meta_len);
	memcpy(ix + RF_INDEX_HEADER_BYTES, w->metadata, meta_len);
	uint8_t *e = ix + RF_INDEX_HEADER_BYTES + meta_len;
	for (uint32_t i = 0; i < w->written; i++, e += RF_INDEX_ENTRY_BYTES) {
		rf_store_le64(e, w->block[i].offset);
		rf_store_le32(e + 8, w->block[i].compressed_bytes);
		rf_store_le32(e + 12, w->block[i].decoded_bytes);
		rf_store_le32(e + 16, w->block[i].records);
		rf_store_le32(e + 20, (uint32_t)w->block[i].first_record);
	}
	uint8_t *f = ix + bytes;
	memcpy(f, RF_FOOTER_MAGIC, RF_FOOTER_MAGIC_BYTES);
	rf_store_le32(f + RF_FOOTER_VERSION_AT, RF_FORMAT_VERSION);
	rf_store_le32(f + RF_FOOTER_FLAGS_AT, 0);
	rf_store_le64(f + RF_FOOTER_INDEX_OFFSET_AT, w->offset);
	rf_store_le64(f + RF_FOOTER_INDEX_BYTES_AT, bytes);
	rf_store_le32(f + RF_FOOTER_INDEX_CRC_AT, rf_crc32c(0, ix, bytes));
	rf_store_le32(f + RF_FOOTER_CRC_AT, rf_crc32c(0, f, RF_FOOTER_CRC_AT));
	int rc = write_all(w, ix, bytes + RF_FOOTER_BYTES, err);
	free(ix);
	return rc;
}

RF_API int rf_writer_close(rf_writer *w, rf_shard_summary *out, rf_error *err)
{
	if (!w)
		return rf_fail(err, -EINVAL, "shard writer: NULL");
	int rc = 0;
	if (w->dead) {
		rc = w->dead;
		if (err)
			*err = w->werr;
	}
	if (rc == 0 && w->slot[w->submitted % RF_WRITER_SLOTS].records)
		rc = block_submit(w, err);
	if (rc == 0)
		rc = wait_idle(w, err);
	if (rc == 0)
		rc = write_tail(w, err);
	if (rc == 0) {
		int fd = w->fd;
		w->fd = -1;
		if (close(fd) < 0)
			rc = rf_fail(err, -errno, "shard %s: close: %s", w->path, strerror(errno));
	}
	if (rc < 0) {
		if (w->regular)
			unlink(w->path);
		writer_free(w);
		return rc;
	}
	if (out) {
		out->file_bytes = w->offset + RF_INDEX_HEADER_BYTES + strlen(w->metadata) +
		                  (uint64_t)RF_INDEX_ENTRY_BYTES * w->written + RF_FOOTER_BYTES;
		out->records = w->records;
		out->blocks = w->written;
		out->decoded_bytes = w->decoded_bytes;
		out->payload_bytes = w->payload_bytes;
	}
	writer_free(w);
	return 0;
}

RF_API void rf_writer_abort(rf_writer *w)
{
	if (!w)
		return;
	char *path = w->regular ? strdup(w->path) : NULL;
	writer_free(w);
	if (path)
		unlink(path);
	free(path);
}
