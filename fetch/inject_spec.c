/* inject_spec.c - the fault injection spec: a strict parser (every malformed
 * item is an error naming the key and its position) and the canonical
 * formatter. The grammar is in inject.h. */
#include "inject.h"
#include "util.h"

#include <stddef.h>
#include <stdio.h>

#define RF_INJECT_KEY_BYTES_MAX   16
#define RF_INJECT_VALUE_BYTES_MAX 64
#define RF_INJECT_FRACTION_DIGITS 12

typedef enum { RF_KEY_SEED, RF_KEY_DURATION, RF_KEY_STALL, RF_KEY_PROB } rf_key_kind;

typedef struct rf_inject_key {
	const char *name;
	rf_key_kind kind;
	size_t field; /* offsetof the uint64_t in rf_inject_spec */
} rf_inject_key;

static const rf_inject_key rf_inject_keys[] = {
    {"seed", RF_KEY_SEED, offsetof(rf_inject_spec, seed)},
    {"latency", RF_KEY_DURATION, offsetof(rf_inject_spec, latency_ns)},
    {"jitter", RF_KEY_DURATION, offsetof(rf_inject_spec, jitter_ns)},
    {"stall", RF_KEY_STALL, offsetof(rf_inject_spec, stall_ns)},
    {"error", RF_KEY_PROB, offsetof(rf_inject_spec, error_p12)},
    {"reset", RF_KEY_PROB, offsetof(rf_inject_spec, reset_p12)},
    {"short", RF_KEY_PROB, offsetof(rf_inject_spec, short_p12)},
    {"corrupt", RF_KEY_PROB, offsetof(rf_inject_spec, corrupt_p12)},
};
#define RF_INJECT_KNOWN "seed, latency, jitter, stall, error, reset, short, corrupt"

static bool rf_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Decimal "D+[.D{1,fdigits}]": the whole part and the fraction scaled by
 * 10^fdigits; false when malformed or the whole part overflows. */
static bool rf_parse_decimal(const char *t, size_t len, unsigned fdigits, uint64_t *whole,
                             uint64_t *frac, size_t *used)
{
	size_t i = 0;
	*whole = 0;
	*frac = 0;
	while (i < len && rf_is_digit(t[i])) {
		if (!rf_mul_u64(*whole, 10, whole) ||
		    !rf_add_u64(*whole, (uint64_t)(t[i++] - '0'), whole))
			return false;
	}
	if (i == 0)
		return false;
	unsigned digits = 0;
	if (i < len && t[i] == '.') {
		i++;
		while (i < len && rf_is_digit(t[i]) && digits < fdigits) {
			*frac = *frac * 10 + (uint64_t)(t[i++] - '0');
			digits++;
		}
		if (digits == 0 || (i < len && rf_is_digit(t[i])))
			return false; /* "1." or too many fraction digits */
	}
	for (unsigned d = digits; d < fdigits; d++)
		*frac *= 10;
	*used = i;
	return true;
}

int rf_inject_parse_prob(const char *text, size_t len, uint64_t *p12)
{
	uint64_t whole, frac;
	size_t used = 0;
	if (!rf_parse_decimal(text, len, RF_INJECT_FRACTION_DIGITS, &whole, &frac, &used) ||
	    used != len || whole > 1 || (whole == 1 && frac != 0))
		return -EINVAL;
	*p12 = whole * RF_INJECT_PROB_ONE + frac;
	return 0;
}

int rf_inject_parse_duration(const char *text, size_t len, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
	if (len == 1 && text[0] == '0') {
		*ns = 0;
		return 0;
	}
	uint64_t whole, frac, v;
	size_t used = 0;
	if (!rf_parse_decimal(text, len, 9, &whole, &frac, &used))
		return -EINVAL;
	for (size_t u = 0; u < RF_ARRAY_LEN(units); u++) {
		size_t n = strlen(units[u].unit);
		if (len - used != n || memcmp(text + used, units[u].unit, n) != 0)
			continue;
		uint64_t part = frac * units[u].ns; /* < 10^18 */
		if (part % 1000000000ull != 0)
			return -EINVAL; /* finer than a nanosecond */
		if (!rf_mul_u64(whole, units[u].ns, &v) ||
		    !rf_add_u64(v, part / 1000000000ull, &v) || v > RF_INJECT_DURATION_NS_MAX)
			return -ERANGE;
		*ns = v;
		return 0;
	}
	return -EINVAL;
}

static int rf_parse_seed(const char *t, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (len == 0 || len > 20)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!rf_is_digit(t[i]) || !rf_mul_u64(v, 10, &v) ||
		    !rf_add_u64(v, (uint64_t)(t[i] - '0'), &v))
			return -EINVAL;
	}
	*out = v;
	return 0;
}

static int rf_parse_stall(const char *t, size_t len, rf_inject_spec *spec)
{
	const char *slash = memchr(t, '/', len);
	if (!slash)
		return -EINVAL;
	size_t a = (size_t)(slash - t);
	uint64_t s, p;
	if (rf_inject_parse_duration(t, a, &s) < 0 ||
	    rf_inject_parse_duration(slash + 1, len - a - 1, &p) < 0 || p == 0 || s >= p)
		return -EINVAL;
	spec->stall_ns = s;
	spec->stall_period_ns = p;
	return 0;
}

static const char *rf_value_hint(rf_key_kind kind)
{
	switch (kind) {
	case RF_KEY_SEED:
		return "an unsigned decimal integer";
	case RF_KEY_DURATION:
		return "a duration like 20ms (ns, us, ms, s; at most 1 hour)";
	case RF_KEY_STALL:
		return "STALL/PERIOD durations like 2s/10s with STALL < PERIOD";
	case RF_KEY_PROB:
		return "a probability in [0, 1] like 0.01";
	}
	return "?";
}

/* One "key=value" item at text[pos, pos+len). */
static int rf_parse_item(const char *item, size_t len, size_t pos, rf_inject_spec *spec,
                         unsigned *seen, rf_error *err)
{
	const char *eq = memchr(item, '=', len);
	size_t klen = eq ? (size_t)(eq - item) : len;
	if (!eq || klen == 0)
		return rf_fail(err, -EINVAL, "inject: item '%.*s' at position %zu is not key=value",
		               (int)RF_MIN(len, (size_t)RF_INJECT_VALUE_BYTES_MAX), item, pos);
	size_t k = 0;
	while (k < RF_ARRAY_LEN(rf_inject_keys) && !(strlen(rf_inject_keys[k].name) == klen &&
	                                             !memcmp(rf_inject_keys[k].name, item, klen)))
		k++;
	if (k == RF_ARRAY_LEN(rf_inject_keys))
		return rf_fail(
		    err, -EINVAL, "inject: unknown key '%.*s' at position %zu (known: %s)",
		    (int)RF_MIN(klen, (size_t)RF_INJECT_KEY_BYTES_MAX), item, pos, RF_INJECT_KNOWN);
	const rf_inject_key *key = &rf_inject_keys[k];
	if (*seen & (1u << k))
		return rf_fail(err, -EINVAL, "inject: key '%s' at position %zu is given twice",
		               key->name, pos);
	*seen |= 1u << k;
	const char *v = eq + 1;
	size_t vlen = len - klen - 1;
	size_t vpos = pos + klen + 1;
	if (vlen == 0 || vlen > RF_INJECT_VALUE_BYTES_MAX)
		return rf_fail(
		    err, -EINVAL, "inject: %s value for '%s' at position %zu (expected %s)",
		    vlen ? "too long a" : "empty", key->name, vpos, rf_value_hint(key->kind));
	uint64_t *field = (uint64_t *)((char *)spec + key->field);
	int rc = -EINVAL;
	if (key->kind == RF_KEY_SEED)
		rc = rf_parse_seed(v, vlen, field);
	else if (key->kind == RF_KEY_DURATION)
		rc = rf_inject_parse_duration(v, vlen, field);
	else if (key->kind == RF_KEY_STALL)
		rc = rf_parse_stall(v, vlen, spec);
	else
		rc = rf_inject_parse_prob(v, vlen, field);
	if (rc < 0)
		return rf_fail(err, -EINVAL,
		               "inject: bad value '%.*s' for '%s' at position %zu (expected %s)",
		               (int)vlen, v, key->name, vpos, rf_value_hint(key->kind));
	return 0;
}

int rf_inject_parse(const char *text, rf_inject_spec *out, rf_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!text || !*text)
		return rf_fail(err, -EINVAL,
		               "inject: empty spec (expected e.g. seed=7,latency=20ms)");
	size_t total = strnlen(text, RF_INJECT_SPEC_BYTES_MAX + 1);
	if (total > RF_INJECT_SPEC_BYTES_MAX)
		return rf_fail(err, -EINVAL, "inject: spec is longer than %d bytes",
		               RF_INJECT_SPEC_BYTES_MAX);
	unsigned seen = 0;
	size_t i = 0;
	for (;;) {
		size_t end = i + strcspn(text + i, ",");
		size_t a = i, b = end;
		while (a < b && text[a] == ' ')
			a++;
		while (b > a && text[b - 1] == ' ')
			b--;
		if (a == b)
			return rf_fail(err, -EINVAL, "inject: empty item at position %zu", i + 1);
		RF_TRY(rf_parse_item(text + a, b - a, a + 1, out, &seen, err));
		if (text[end] == '\0')
			break;
		i = end + 1;
	}
	uint64_t sum = out->error_p12 + out->reset_p12 + out->short_p12 + out->corrupt_p12;
	if (sum > RF_INJECT_PROB_ONE)
		return rf_fail(
		    err, -EINVAL,
		    "inject: error + reset + short + corrupt add up to %.6g, more than 1",
		    (double)sum / (double)RF_INJECT_PROB_ONE);
	return 0;
}

static void rf_format_duration(uint64_t ns, char *buf, size_t cap)
{
	if (ns == 0)
		snprintf(buf, cap, "0");
	else if (ns % 1000000000ull == 0)
		snprintf(buf, cap, "%llus", (unsigned long long)(ns / 1000000000ull));
	else if (ns % 1000000ull == 0)
		snprintf(buf, cap, "%llums", (unsigned long long)(ns / 1000000ull));
	else if (ns % 1000ull == 0)
		snprintf(buf, cap, "%lluus", (unsigned long long)(ns / 1000ull));
	else
		snprintf(buf, cap, "%lluns", (unsigned long long)ns);
}

static void rf_format_prob(uint64_t p12, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%llu.%012llu", (unsigned long long)(p12 / RF_INJECT_PROB_ONE),
	                 (unsigned long long)(p12 % RF_INJECT_PROB_ONE));
	while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
		buf[--n] = '\0';
}

int rf_inject_format(const rf_inject_spec *s, char *buf, size_t cap)
{
	char lat[32], jit[32], st[32], per[32], e[32], r[32], sh[32], c[32];
	rf_format_duration(s->latency_ns, lat, sizeof(lat));
	rf_format_duration(s->jitter_ns, jit, sizeof(jit));
	rf_format_duration(s->stall_ns, st, sizeof(st));
	rf_format_duration(s->stall_period_ns, per, sizeof(per));
	rf_format_prob(s->error_p12, e, sizeof(e));
	rf_format_prob(s->reset_p12, r, sizeof(r));
	rf_format_prob(s->short_p12, sh, sizeof(sh));
	rf_format_prob(s->corrupt_p12, c, sizeof(c));
	char stall[80] = "";
	if (s->stall_period_ns)
		snprintf(stall, sizeof(stall), ",stall=%s/%s", st, per);
	int n = snprintf(buf, cap,
	                 "seed=%llu,latency=%s,jitter=%s%s,error=%s,reset=%s,short=%s,corrupt=%s",
	                 (unsigned long long)s->seed, lat, jit, stall, e, r, sh, c);
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}
