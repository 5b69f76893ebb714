/* fuzz_icache.c - libFuzzer target for the index cache's entry reader
 * (engine/icache.h): the input is an entry file, as another process or user
 * could leave it under the name of the key asked for. A hit must be a
 * well-formed entry of exactly that key whose payload fits the buffer; a
 * miss must never crash or read past the file. When the input's last byte
 * is odd, the header's and the payload's CRC-32C are made right first, so
 * mutations reach the length and key checks behind them. */
#include "crc32c.h"
#include "fuzz.h"
#include "icache.h"
#include "util.h"

#include <fcntl.h>
#include <unistd.h>

#define CAP_BYTES (64u << 10)

static rf_icache *cache;
static char dir[64], path[512];
static const rf_icache_key key = {.url = "https://host/ds/shard-000001.tar?X-Amz-Signature=s",
                                  .size = 1048576,
                                  .validator = "etag:\"5f3a-1e8\"",
                                  .format = "tar",
                                  .format_version = 1};

static void done(void)
{
	unlink(path);
	rmdir(dir); /* empty: every input's entry is removed after it */
}

static void init(void)
{
	snprintf(dir, sizeof(dir), "/tmp/fuzz-icache-XXXXXX");
	FUZZ_CHECK(mkdtemp(dir) != NULL);
	atexit(done);
	rf_error why = {0};
	FUZZ_CHECK(rf_icache_open(dir, 1ull << 30, 16, &cache, &why) == 0);
	char name[RF_ICACHE_NAME_BYTES];
	FUZZ_CHECK(rf_icache_entry_name(&key, name) == 0);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
}

/* Rights the CRCs of an entry laid out as icache.c writes it. */
static void fix_crcs(uint8_t *b, size_t size)
{
	uint32_t key_len = rf_load_le32(b + 12);
	uint64_t payload = rf_load_le64(b + 16);
	if (key_len <= size - 32 && payload == size - 32 - key_len)
		rf_store_le32(b + 24, rf_crc32c(0, b + 32 + key_len, payload));
	if (key_len <= size - 32)
		rf_store_le32(b + 28, rf_crc32c(rf_crc32c(0, b, 28), b + 32, key_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!cache)
		init();
	uint8_t *b = malloc(size ? size : 1);
	FUZZ_CHECK(b != NULL);
	memcpy(b, data, size);
	if (size >= 32 && (b[size - 1] & 1))
		fix_crcs(b, size);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	FUZZ_CHECK(fd >= 0 && write(fd, b, size) == (ssize_t)size && close(fd) == 0);
	static uint8_t out[CAP_BYTES];
	uint64_t bytes = 0, len = UINT64_MAX;
	int st = rf_icache_stat(cache, &key, &bytes);
	int rc = rf_icache_get(cache, &key, out, sizeof(out), &len);
	FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -EFBIG);
	if (rc == 0) {
		FUZZ_CHECK(st == 0 && len == bytes && len <= sizeof(out) && len < size);
		FUZZ_CHECK(memcmp(out, b + size - len, len) == 0);
	}
	FUZZ_CHECK(rc != -EFBIG || (st == 0 && bytes > sizeof(out)));
	if (st < 0)
		FUZZ_CHECK(rc == -ENOENT);
	free(b);
	unlink(path);
	return 0;
}
