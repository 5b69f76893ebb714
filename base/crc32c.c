/* crc32c.c - CRC-32C, table-driven slicing-by-8 (about 1.5 GB/s per core,
 * plenty for an index that is a few KiB to a few MiB), or on x86-64 CPUs
 * with SSE4.2 its crc32 instruction, 8 bytes at a time (several GB/s: a
 * TFRecord's every record is checked with it). The tables and the choice
 * are made once, on first use. */
#include "crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define RF_CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool crc_hw_ok;

#if defined(__x86_64__)
/* c is the running (inverted) CRC, as the table loop keeps it. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi(c, *p++);
		len--;
	}
	uint64_t c64 = c;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

static void crc_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ RF_CRC32C_POLY : c >> 1;
		crc_table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = crc_table[0][n];
		for (int t = 1; t < 8; t++) {
			c = crc_table[0][c & 0xff] ^ (c >> 8);
			crc_table[t][n] = c;
		}
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_hw_ok = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t rf_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	const uint8_t *p = buf;
	uint32_t c = ~crc;
#if defined(__x86_64__)
	if (crc_hw_ok)
		return ~crc_hw(c, p, len);
#endif
	while (len && ((uintptr_t)p & 7)) {
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		                   (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
		              (uint32_t)p[7] << 24;
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}
