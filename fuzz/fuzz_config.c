/* fuzz_config.c - libFuzzer target for the loader's configuration, which
 * comes from untrusted places: command-line flags, environment variables,
 * Python keyword arguments and (per source) a mixture file that may itself
 * be remote. The input is up to 16 settings, each a selector byte, a flags
 * byte and a value up to the next NUL:
 *   selector % (options + 1): an option of the table (engine/config.h), or
 *   (the last) an unknown key, taken from the value's first 12 bytes;
 *   flags bit 0: set for the last mixture source (rf_config_source_option:
 *   a mixture file's KEY=VALUE) instead of the whole loader (rf_config_set);
 *   flags bit 1: add a mixture source (weight 1) first.
 * Then every format parses its options from the result, the loader's and
 * each source's (rf_config_format_options: tar fields, token dtypes and
 * lengths, Parquet columns...), and the config is copied (rf_config_dup).
 * Checks: an accepted number lies within its option's bounds and reads back
 * as set; a refusal carries its code and a message and leaves the value as
 * it was; a source option is only ever a format's; the copy holds the same
 * values; the formats' parse accepts or refuses with a message. */
#include "config.h"
#include "format.h"
#include "fuzz.h"
#include "util.h"

#include <errno.h>

#define SETTINGS_MAX 16
#define VALUE_MAX    512

typedef struct opt_bounds {
	const char *name;
	uint64_t lo, hi;
	bool str, seconds; /* a string; a duration (kept in nanoseconds) */
} opt_bounds;

#define KIND_STR     true, false
#define KIND_U32     false, false
#define KIND_U64     false, false
#define KIND_BYTES   false, false
#define KIND_BOOL    false, false
#define KIND_SECONDS false, true
static const opt_bounds bounds[] = {
#define ROW(name, type, def, lo, hi, help) {#name, (uint64_t)(lo), (uint64_t)(hi), KIND_##type},
    RF_CONFIG_OPTIONS(ROW)
#undef ROW
};

/* The option's bounds as plain numbers (bytes for sizes): the last value
 * in is taken, the first one out is refused naming the option, and the value
 * set before is set again. */
static void check_edges(rf_config *cfg, uint32_t sel, const char *k, const char *value)
{
	const opt_bounds *b = &bounds[sel];
	char t[32];
	rf_error err = {0};
	snprintf(t, sizeof(t), "%llu", (unsigned long long)b->hi);
	FUZZ_CHECK(rf_config_set(cfg, k, t, &err) == 0 && cfg->num[sel] == b->hi);
	if (b->hi < UINT64_MAX) {
		snprintf(t, sizeof(t), "%llu", (unsigned long long)b->hi + 1);
		FUZZ_CHECK(rf_config_set(cfg, k, t, &err) < 0 && strstr(err.msg, k) &&
		           cfg->num[sel] == b->hi);
	}
	if (b->lo > 0) {
		snprintf(t, sizeof(t), "%llu", (unsigned long long)b->lo - 1);
		FUZZ_CHECK(rf_config_set(cfg, k, t, &err) < 0 && strstr(err.msg, k));
	}
	FUZZ_CHECK(rf_config_set(cfg, k, value, &err) == 0);
}

static void check_formats(const rf_config *cfg)
{
	rf_error err = {0};
	rf_fmt_optset *set = NULL;
	int rc = rf_config_format_options(cfg, &set, &err);
	if (rc < 0)
		fuzz_check_error(rc, &err);
	else
		rf_fmt_optset_free(set);
	for (uint32_t s = 0; s < cfg->nsources; s++) {
		rf_error e2 = {0};
		set = NULL;
		rc = rf_config_source_format_options(cfg, s, &set, &e2);
		if (rc < 0) {
			fuzz_check_error(rc, &e2);
			FUZZ_CHECK(set == NULL);
		}
		rf_fmt_optset_free(set);
	}
}

static void check_copy(const rf_config *cfg)
{
	rf_config *c = rf_config_dup(cfg);
	if (!c) /* a source without URLs is never copied (refused at open) */
		return;
	FUZZ_CHECK(memcmp(c->num, cfg->num, sizeof(c->num)) == 0);
	for (size_t i = 0; i < RF_CFG_COUNT; i++)
		FUZZ_CHECK((!c->str[i] && !cfg->str[i]) ||
		           (c->str[i] && cfg->str[i] && !strcmp(c->str[i], cfg->str[i])));
	FUZZ_CHECK(c->nsources == cfg->nsources && c->nsrc_opts == cfg->nsrc_opts);
	for (uint32_t j = 0; j < c->nsrc_opts; j++) {
		const rf_src_option *a = &c->src_opt[j], *b = &cfg->src_opt[j];
		FUZZ_CHECK(a->source == b->source && a->key == b->key && a->num == b->num);
		FUZZ_CHECK((!a->str && !b->str) || (a->str && b->str && !strcmp(a->str, b->str)));
	}
	rf_config_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FUZZ_CHECK(RF_ARRAY_LEN(bounds) == RF_CFG_COUNT);
	rf_config *cfg = rf_config_new();
	FUZZ_CHECK(cfg != NULL);
	size_t at = 0;
	for (int n = 0; n < SETTINGS_MAX && at + 2 <= size; n++) {
		uint32_t sel = data[at] % (RF_CFG_COUNT + 1);
		uint8_t flags = data[at + 1];
		at += 2;
		const uint8_t *nul = memchr(data + at, 0, size - at);
		size_t len = nul ? (size_t)(nul - (data + at)) : size - at;
		char value[VALUE_MAX + 1];
		size_t vlen = len < VALUE_MAX ? len : VALUE_MAX;
		memcpy(value, data + at, vlen);
		value[vlen] = '\0';
		at += len + (nul != NULL);
		char key[16] = "";
		if (sel == RF_CFG_COUNT) { /* a key from the value: maybe a real one */
			snprintf(key, sizeof(key), "%.12s", value);
			for (uint32_t i = 0; i < RF_CFG_COUNT && sel == RF_CFG_COUNT; i++)
				if (!strcmp(key, bounds[i].name))
					sel = i;
		}
		const char *k = key[0] || sel == RF_CFG_COUNT ? key : bounds[sel].name;
		rf_error err = {0};
		if (flags & 2) {
			int rc = rf_config_add_source(cfg, "1", &err);
			if (rc < 0) {
				fuzz_check_error(rc, &err);
			} else {
				/* every source gets a URL, so the copy is possible */
				FUZZ_CHECK(rf_config_add_url(cfg, "/nowhere/s.rfs", &err) == 0);
			}
			memset(&err, 0, sizeof(err));
		}
		uint64_t before[RF_CFG_COUNT];
		memcpy(before, cfg->num, sizeof(before));
		uint32_t opts_before = cfg->nsrc_opts;
		bool per_source = flags & 1;
		int rc = per_source ? rf_config_source_option(cfg, k, value, &err)
		                    : rf_config_set(cfg, k, value, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			/* a refusal names the option (or the unknown key) */
			FUZZ_CHECK(!k[0] || strstr(err.msg, k) != NULL);
			FUZZ_CHECK(memcmp(before, cfg->num, sizeof(before)) == 0);
			FUZZ_CHECK(cfg->nsrc_opts == opts_before);
			continue;
		}
		FUZZ_CHECK(sel < RF_CFG_COUNT); /* an unknown key is never taken */
		const opt_bounds *b = &bounds[sel];
		if (per_source) {
			FUZZ_CHECK(cfg->nsrc_opts == opts_before + 1);
			const rf_src_option *o = &cfg->src_opt[cfg->nsrc_opts - 1];
			FUZZ_CHECK(o->key == sel && o->source == cfg->nsources - 1);
			FUZZ_CHECK(b->str ? o->str != NULL && !strcmp(o->str, value)
			                  : o->num >= b->lo && o->num <= b->hi);
			FUZZ_CHECK(memcmp(before, cfg->num, sizeof(before)) == 0);
		} else if (b->str) {
			FUZZ_CHECK(cfg->str[sel] && !strcmp(cfg->str[sel], value));
		} else if (!(sel == RF_CFG_host_budget && cfg->num[sel] == RF_HOST_BUDGET_AUTO)) {
			FUZZ_CHECK(cfg->num[sel] >= b->lo && cfg->num[sel] <= b->hi);
			/* the same value again reads back the same */
			uint64_t v = cfg->num[sel];
			FUZZ_CHECK(rf_config_set(cfg, k, value, &err) == 0 && cfg->num[sel] == v);
			if (!b->seconds)
				check_edges(cfg, sel, k, value);
		}
	}
	check_formats(cfg);
	check_copy(cfg);
	rf_config_free(cfg);
	return 0;
}
