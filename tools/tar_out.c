/* tar_out.c - see tar_out.h. Members are written with mode 0644, owner 0
 * and time 0, so the same samples give the same bytes; names are made safe
 * to extract (rf_tar_out_safe_part) by the caller. */
#include "tar_out.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#define BLOCK 512

static int pad(FILE *f, uint64_t len)
{
	static const uint8_t zero[BLOCK];
	size_t n = (size_t)((BLOCK - len % BLOCK) % BLOCK);
	return n && fwrite(zero, 1, n, f) != n ? -1 : 0;
}

static int put_padded(FILE *f, const void *p, uint64_t len)
{
	if (len && fwrite(p, 1, len, f) != len)
		return -1;
	return pad(f, len);
}

static int header(FILE *f, const char *name, size_t name_len, uint64_t size, char type)
{
	uint8_t h[BLOCK] = {0};
	memcpy(h, name, name_len < 100 ? name_len : 99);
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
	memcpy(h + 136, "00000000000", 11);
	h[156] = (uint8_t)type;
	memcpy(h + 257,
	       "ustar\0"
	       "00",
	       8);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	return fwrite(h, 1, BLOCK, f) == BLOCK ? 0 : -1;
}

static size_t digits_of(size_t v)
{
	size_t d = 1;
	for (; v >= 10; v /= 10)
		d++;
	return d;
}

/* A PAX record "LEN path=NAME\n": LEN counts its own digits. */
static int pax_path(FILE *f, const char *name, size_t name_len)
{
	size_t body = name_len + 7; /* " path=" and "\n" */
	size_t total = body + digits_of(body);
	if (digits_of(total) != digits_of(body))
		total = body + digits_of(total);
	char lenbuf[32];
	int n = snprintf(lenbuf, sizeof(lenbuf), "%zu path=", total);
	if (header(f, "PaxHeader", 9, total, 'x') < 0 ||
	    fwrite(lenbuf, 1, (size_t)n, f) != (size_t)n ||
	    fwrite(name, 1, name_len, f) != name_len || fputc('\n', f) == EOF)
		return -1;
	return pad(f, total);
}

int rf_tar_out_member(FILE *f, const char *name, size_t name_len, const uint8_t *data, uint64_t len)
{
	if (memchr(name, 0, name_len) || name_len == 0)
		return -1;
	if (name_len >= 100 && pax_path(f, name, name_len) < 0)
		return -1;
	if (header(f, name, name_len, len, '0') < 0)
		return -1;
	return put_padded(f, data, len);
}

static bool part_safe(const char *p, size_t len)
{
	if (len == 0 || p[0] == '/')
		return false;
	for (size_t i = 0, start = 0; i <= len; i++) {
		if (i < len && ((unsigned char)p[i] < 0x20 || p[i] == 0x7f))
			return false;
		if (i < len && p[i] != '/')
			continue;
		size_t n = i - start;
		if (n == 0 || (n == 1 && p[start] == '.') ||
		    (n == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

int rf_tar_out_safe_part(const char *p, size_t len, char *out, size_t cap, bool *changed)
{
	*changed = !part_safe(p, len);
	if (!*changed) {
		if (len >= cap)
			return -1;
		memcpy(out, p, len);
		out[len] = 0;
		return (int)len;
	}
	size_t n = 0;
	for (size_t i = 0, start = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		size_t c = i - start;
		const char *s = p + start;
		start = i + 1;
		if (c == 0 || (c == 1 && s[0] == '.'))
			continue;
		if (n + c + 2 >= cap)
			return -1;
		if (n)
			out[n++] = '/';
		if (c == 2 && s[0] == '.' && s[1] == '.')
			s = "__";
		for (size_t k = 0; k < c; k++)
			out[n++] = (unsigned char)s[k] < 0x20 || s[k] == 0x7f ? '_' : s[k];
	}
	int m = snprintf(out + n, cap - n, "~%08llx",
	                 (unsigned long long)(rf_fnv1a(RF_FNV_OFFSET, p, len) & 0xffffffffu));
	return m < 0 || (size_t)m >= cap - n ? -1 : (int)(n + (size_t)m);
}

int rf_tar_out_end(FILE *f)
{
	static const uint8_t zero[2 * BLOCK];
	return fwrite(zero, 1, sizeof(zero), f) == sizeof(zero) ? 0 : -1;
}
