/* decode_limit.h - the decode limit for `ringfeed bench --decode-limit`: a
 * pure in-memory decode of every block of the given shards with N threads
 * (each with one reused decoder and one reused destination buffer). Shards
 * are loaded one at a time; only decoding is timed. Public API only. */
#ifndef RF_DECODE_LIMIT_H
#define RF_DECODE_LIMIT_H

#include <stdint.h>

typedef struct rf_decode_limit {
	uint64_t decoded_bytes;
	uint64_t blocks;
	double decode_s;     /* summed over shards, wall time of the parallel decode */
	double decode_cpu_s; /* process CPU (user + sys) over the same spans */
} rf_decode_limit;

/* paths: local .rfs shards. Returns 0 or -1 (message on stderr). */
int rf_decode_limit_run(char *const *paths, unsigned count, unsigned threads, rf_decode_limit *out);
/* Expands a file / directory / manifest argument into shard paths (appended
 * to *paths, malloc'd strings). Returns 0 or -1. */
int rf_decode_limit_expand(const char *arg, char ***paths, unsigned *count);

#endif
