/* fuzz.h - what every libFuzzer target here shares: the entry point's
 * prototype and the invariant checks. A broken invariant aborts with a
 * message, so libFuzzer records the input as a crash (docs/fuzzing.md). */
#ifndef RF_FUZZ_H
#define RF_FUZZ_H

#include "ringfeed.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__,       \
			        #cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A failure must carry its code and a message (the "clear error" rule). */
static inline void fuzz_check_error(int rc, const rf_error *err)
{
	FUZZ_CHECK(rc < 0);
	FUZZ_CHECK(err->code == rc);
	FUZZ_CHECK(err->msg[0] != '\0');
	FUZZ_CHECK(memchr(err->msg, 0, sizeof(err->msg)) != NULL);
}

/* The input as a NUL-terminated string (cut at its first NUL). Caller frees. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
