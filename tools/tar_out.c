/* tar_out.c - see tar_out.h. Members are written with mode 0644, owner 0
 * and time 0, so the same samples give the same bytes. */
#include "tar_out.h"

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

int rf_tar_out_end(FILE *f)
{
	static const uint8_t zero[2 * BLOCK];
	return fwrite(zero, 1, sizeof(zero), f) == sizeof(zero) ? 0 : -1;
}
