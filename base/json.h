/* json.h - the one JSON string writer: quotes and backslashes escaped,
 * control bytes as \u00XX, every other byte as it is (UTF-8 passes through).
 * Bounded writers into a caller's buffer for the library's stats and trace
 * lines, and a FILE* writer for the CLI. Internal. */
#ifndef RF_JSON_H
#define RF_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Writes s, escaped (no quotes), into buf (cap >= 8), NUL-terminated; stops
 * before a character whose escape would leave less than one byte beyond it
 * (so the text is cut, never an escape). Returns the bytes of s consumed:
 * s[return] is '\0' unless the text was cut. */
size_t rf_json_escape(char *buf, size_t cap, const char *s);

/* Writes s as a quoted JSON string into buf (cap >= 10; cut as
 * rf_json_escape, the quotes always present) and returns buf. */
const char *rf_json_quote(char *buf, size_t cap, const char *s);

/* Writes s as a quoted JSON string to f, whole. */
void rf_json_fput(FILE *f, const char *s);

#endif
