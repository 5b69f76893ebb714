/* json.c - the one JSON string writer (see json.h). */
#include "json.h"

#include <string.h>

size_t rf_json_escape(char *buf, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0, i = 0;
	for (; s[i] && n + 7 < cap; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)ch;
		} else if (ch < 0x20) {
			buf[n++] = '\\';
			buf[n++] = 'u';
			buf[n++] = '0';
			buf[n++] = '0';
			buf[n++] = hex[ch >> 4];
			buf[n++] = hex[ch & 15];
		} else {
			buf[n++] = (char)ch;
		}
	}
	buf[n] = '\0';
	return i;
}

const char *rf_json_quote(char *buf, size_t cap, const char *s)
{
	buf[0] = '"';
	rf_json_escape(buf + 1, cap - 2, s); /* room for the closing quote */
	size_t n = 1 + strlen(buf + 1);
	buf[n++] = '"';
	buf[n] = '\0';
	return buf;
}

void rf_json_fput(FILE *f, const char *s)
{
	char chunk[256];
	fputc('"', f);
	while (*s) {
		s += rf_json_escape(chunk, sizeof(chunk), s);
		fputs(chunk, f);
	}
	fputc('"', f);
}
