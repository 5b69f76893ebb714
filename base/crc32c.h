/* crc32c.h - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum over a shard's index and footer. Internal. */
#ifndef RF_CRC32C_H
#define RF_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC: pass 0 to start; crc32c(crc32c(0, a), b) == crc32c(0, a||b). */
uint32_t rf_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
