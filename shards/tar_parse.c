/* tar_parse.c - the tar header parser (tar.h), the first file of the tar
 * format's line: numeric fields (octal, GNU base-256), checksums, member
 * names (ustar prefix, GNU long names, PAX path and size), and
 * webdataset's naming rules (a member's key; metadata and dot-files left
 * out). Pure functions of bytes; it references no other tar file. Above
 * it: the header scan (tar_scan.c), the compressed stream (tar_stream.c),
 * index files (tar_index.c), the format (tar.c), index building
 * (tar_build.c). */
#include "tar.h"

#include <stdio.h>
#include <stdlib.h>

#define U64(x) ((unsigned long long)(x))

bool rf_tar_number(const uint8_t *f, size_t len, uint64_t *out)
{
	if (f[0] & 0x80) { /* base-256: big-endian, the first byte's high bit the mark */
		if (f[0] != 0x80)
			return false; /* negative (0xff) or more than 2^88: no sound size */
		uint64_t v = 0;
		for (size_t i = 1; i < len; i++) {
			if (v >> 56)
				return false;
			v = v << 8 | f[i];
		}
		*out = v;
		return true;
	}
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	uint64_t v = 0;
	size_t digits = 0;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
		if (v >> 61)
			return false;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	*out = v;
	return digits > 0 || len == 0;
}

bool rf_tar_checksum_ok(const uint8_t *h)
{
	uint64_t stored;
	if (!rf_tar_number(h + 148, 8, &stored))
		return false;
	uint64_t sum_u = 0;
	int64_t sum_s = 0;
	for (int i = 0; i < RF_TAR_BLOCK; i++) {
		uint8_t c = i >= 148 && i < 156 ? ' ' : h[i];
		sum_u += c;
		sum_s += (int8_t)c;
	}
	return stored == sum_u || (int64_t)stored == sum_s;
}

bool rf_tar_all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* A name fit for a message: printable ASCII, others '?', cut at 80. */
const char *rf_tar_shown(const char *s, size_t len, char *buf, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 4 < cap && i < 80; i++)
		buf[o++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (len > 80 && o + 4 < cap)
		memcpy(buf + o, "...", 3), o += 3;
	buf[o] = '\0';
	return buf;
}

/* ------------------------------------------------------------ names */

/* webdataset's metadata rule: a first component `__...__` (tar_file_iterator). */
static bool is_meta(const char *n, size_t len)
{
	if (len < 2 || n[0] != '_' || n[1] != '_')
		return false;
	const char *slash = memchr(n, '/', len);
	size_t first = slash ? (size_t)(slash - n) : len;
	if (!slash && n[len - 1] == '_' && n[len - 2] == '_')
		return true;
	return first >= 4 && n[first - 1] == '_' && n[first - 2] == '_';
}

bool rf_tar_member_key(const char *n, size_t len, size_t *key_len)
{
	const char *slash = memrchr(n, '/', len);
	size_t base = slash ? (size_t)(slash - n) + 1 : 0;
	const char *dot = memchr(n + base, '.', len - base);
	if (is_meta(n, len) || base == len || n[base] == '.' || !dot)
		return false;
	*key_len = (size_t)(dot - n);
	return true;
}

/* The name of a regular member from its header and pending extensions. */
size_t rf_tar_member_name(const tar_ext *x, const uint8_t *h, char *buf)
{
	if (x->long_name) {
		memcpy(buf, x->long_name, x->long_len);
		return x->long_len;
	}
	size_t o = 0;
	bool ustar = memcmp(h + 257, "ustar\0", 6) == 0; /* POSIX: the prefix field counts */
	if (ustar && h[345]) {
		size_t pl = strnlen((const char *)h + 345, 155);
		memcpy(buf, h + 345, pl);
		buf[pl] = '/';
		o = pl + 1;
	}
	size_t nl = strnlen((const char *)h, 100);
	memcpy(buf + o, h, nl);
	return o + nl;
}

/* PAX records "LEN key=value\n": path and size are what a member needs. */
int rf_tar_pax_parse(tar_ext *x, const uint8_t *p, size_t len, uint64_t at, const char *name,
                     rf_error *err)
{
	size_t i = 0;
	while (i < len) {
		if (rf_tar_all_zero(p + i, len - i))
			break; /* trailing NUL padding */
		size_t j = i;
		uint64_t rl = 0;
		while (j < len && p[j] >= '0' && p[j] <= '9' && rl < len)
			rl = rl * 10 + (uint64_t)(p[j++] - '0');
		if (j == i || j >= len || p[j] != ' ' || rl > len - i || rl < (j - i) + 3 ||
		    p[i + rl - 1] != '\n')
			return rf_fail(err, RF_E_CORRUPT,
			               "shard %s: PAX header at byte %llu: malformed record at its "
			               "byte %zu",
			               name, U64(at), i);
		const uint8_t *kv = p + j + 1, *stop = p + i + rl - 1;
		const uint8_t *eq = memchr(kv, '=', (size_t)(stop - kv));
		if (!eq)
			return rf_fail(
			    err, RF_E_CORRUPT,
			    "shard %s: PAX header at byte %llu: record without '=' at its "
			    "byte %zu",
			    name, U64(at), i);
		size_t kl = (size_t)(eq - kv), vl = (size_t)(stop - eq - 1);
		if (kl == 4 && memcmp(kv, "path", 4) == 0) {
			if (vl == 0 || vl > RF_TAR_NAME_MAX || memchr(eq + 1, 0, vl))
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: PAX header at byte %llu: path of %zu bytes is "
				    "empty, longer than %u or holds a NUL",
				    name, U64(at), vl, RF_TAR_NAME_MAX);
			free(x->long_name);
			if (!(x->long_name = malloc(vl)))
				return rf_fail(err, -ENOMEM, "shard %s: out of memory", name);
			memcpy(x->long_name, eq + 1, vl);
			x->long_len = vl;
		} else if (kl == 4 && memcmp(kv, "size", 4) == 0) {
			uint64_t v = 0;
			bool ok = vl > 0 && vl <= 19;
			for (size_t k = 0; ok && k < vl; k++)
				ok = eq[1 + k] >= '0' && eq[1 + k] <= '9',
				v = v * 10 + (uint64_t)(eq[1 + k] - '0');
			if (!ok)
				return rf_fail(
				    err, RF_E_CORRUPT,
				    "shard %s: PAX header at byte %llu: size '%.*s' is not a "
				    "number",
				    name, U64(at), (int)RF_MIN(vl, 24), (const char *)eq + 1);
			x->pax_size = v;
			x->pax_size_set = true;
		}
		i += rl;
	}
	return 0;
}
