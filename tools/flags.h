/* flags.h - strict parsing of numeric command-line values for the tools:
 * a value is a whole, finite number within the stated range or it is an
 * error that names the flag. Shared by sim, plan and report. */
#ifndef RF_TOOLS_FLAGS_H
#define RF_TOOLS_FLAGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Parses text as a finite double in [min, max]; on failure prints
 * "ringfeed CMD: --FLAG: ..." to stderr and returns false. */
bool flag_double(const char *cmd, const char *flag, const char *text, double min, double max,
                 double *out);
/* Parses a whole number in [min, max]. */
bool flag_u64(const char *cmd, const char *flag, const char *text, uint64_t min, uint64_t max,
              uint64_t *out);
/* Parses a size through rf_parse_bytes ("64MiB"), at least min bytes. */
bool flag_bytes(const char *cmd, const char *flag, const char *text, uint64_t min, uint64_t *out);
/* Prints "ringfeed CMD: message" to stderr; returns 2 (the usage exit code). */
int flag_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* name as messages may show it: a URL without its user:password@ and its
 * query (rf_url_redact), any other name unchanged. Returns buf. */
const char *flag_shown(const char *name, char *buf, size_t cap);

/* Writes a double as JSON (null when not finite). */
void json_number(FILE *f, double v);

/* A "Key: N kB" line of a /proc file (e.g. /proc/self/status VmRSS, VmHWM;
 * /proc/meminfo MemAvailable), in bytes; 0 when unknown. */
uint64_t proc_kib_field_bytes(const char *path, const char *key);

#endif
