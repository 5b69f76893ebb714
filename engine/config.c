/* config.c - rf_config: options set by name from text, checked strictly
 * against the one table in config.h; shard URLs (with {000..063} brace
 * ranges expanded); the batch allocator; the resume position. */
#include "config.h"
#include "cache.h"
#include "format.h"
#include "hostbudget.h"
#include "inject.h"
#include "loop.h"
#include "mix.h"
#include "url.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define RF_CONFIG_MAGIC 0x52464346u /* "RFCF" */

enum rf_opt_type { RF_T_U32, RF_T_U64, RF_T_BYTES, RF_T_BOOL, RF_T_STR, RF_T_SECONDS };

typedef struct rf_option {
	const char *name;
	enum rf_opt_type type;
	const char *def;
	uint64_t lo, hi;
	const char *help;
} rf_option;

static const rf_option rf_options[RF_CFG_COUNT] = {
#define RF_CONFIG_ROW(name, type, def, lo, hi, help) {#name, RF_T_##type, def, lo, hi, help},
    RF_CONFIG_OPTIONS(RF_CONFIG_ROW)
#undef RF_CONFIG_ROW
};

static const char rf_keys_text[] =
#define RF_CONFIG_KEY(name, type, def, lo, hi, help) #name "\0" help " (default: " def ")\0"
    RF_CONFIG_OPTIONS(RF_CONFIG_KEY)
#undef RF_CONFIG_KEY
    ; /* the literal's own NUL makes the final double NUL */

RF_API const char *rf_config_keys(void)
{
	return rf_keys_text;
}

static int rf_parse_u64(const char *text, uint64_t *out)
{
	if (!text || *text < '0' || *text > '9')
		return -EINVAL;
	uint64_t v = 0;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (!rf_mul_u64(v, 10, &v) || !rf_add_u64(v, (uint64_t)(*p - '0'), &v))
			return -ERANGE;
	}
	*out = v;
	return 0;
}

/* "2.5" (seconds) or a duration with a unit ("500ms"), in nanoseconds. */
static int rf_parse_seconds(const char *text, uint64_t *out)
{
	size_t len = strlen(text);
	if (len == 0 || len > 64)
		return -EINVAL;
	char with_unit[72];
	bool bare = text[len - 1] >= '0' && text[len - 1] <= '9';
	snprintf(with_unit, sizeof(with_unit), "%s%s", text, bare && strcmp(text, "0") ? "s" : "");
	return rf_inject_parse_duration(with_unit, strlen(with_unit), out);
}

static int rf_parse_bool(const char *text, uint64_t *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};
	for (size_t i = 0; i < RF_ARRAY_LEN(yes); i++) {
		if (!strcasecmp(text, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(text, no[i]))
			return *out = 0, 0;
	}
	return -EINVAL;
}

/* A value of option o in its own unit ("1.0 MiB", "0.01 s"), for messages;
 * with a prefix ("(") it is an aside after the text as given, or "" for
 * plain numbers. */
static const char *rf_option_fmt(const rf_option *o, uint64_t v, const char *prefix, char *buf,
                                 size_t cap)
{
	char tmp[24];
	bool aside = *prefix != '\0';
	if (o->type == RF_T_BYTES)
		snprintf(buf, cap, "%s%s%s", prefix, rf_fmt_bytes(v, tmp, sizeof(tmp)),
		         aside ? ")" : "");
	else if (o->type == RF_T_SECONDS)
		snprintf(buf, cap, "%s%g s%s", prefix, (double)v / 1e9, aside ? ")" : "");
	else if (aside)
		buf[0] = '\0';
	else
		snprintf(buf, cap, "%llu", (unsigned long long)v);
	return buf;
}

static int rf_option_parse(const rf_option *o, const char *value, uint64_t *out, rf_error *err)
{
	int rc = 0;
	switch (o->type) {
	case RF_T_BOOL:
		if (rf_parse_bool(value, out) < 0)
			return rf_fail(err, -EINVAL, "option %s: '%s' is not a boolean (use 0/1)",
			               o->name, value);
		return 0;
	case RF_T_BYTES: {
		rf_error why = {0}; /* its words, after the option's name */
		rc = rf_parse_bytes(value, out, &why);
		if (rc < 0)
			return rf_fail(err, rc, "option %s: %s", o->name, why.msg);
		break;
	}
	case RF_T_SECONDS:
		if (rf_parse_seconds(value, out) < 0)
			return rf_fail(err, -EINVAL,
			               "option %s: '%s' is not a duration (seconds like 2.5, or "
			               "500ms, 3s; at most 1 hour)",
			               o->name, value);
		break;
	default:
		rc = rf_parse_u64(value, out);
		if (rc == -ERANGE)
			return rf_fail(err, -ERANGE, "option %s: '%s' is too large", o->name,
			               value);
		if (rc < 0)
			return rf_fail(err, -EINVAL, "option %s: '%s' is not a whole number",
			               o->name, value);
	}
	if (*out < o->lo || *out > o->hi) {
		char v[32], lo[32], hi[32];
		return rf_fail(err, -ERANGE, "option %s: %s%s is out of range [%s, %s]", o->name,
		               value, rf_option_fmt(o, *out, " (", v, sizeof(v)),
		               rf_option_fmt(o, o->lo, "", lo, sizeof(lo)),
		               rf_option_fmt(o, o->hi, "", hi, sizeof(hi)));
	}
	return 0;
}

/* direct_io: "off" (or unset), "on", "auto" into RF_DIRECT_IO_*. */
static int rf_direct_io_parse(const char *value, uint32_t *out, rf_error *err)
{
	static const char *const names[] = {"off", "on", "auto"};
	for (uint32_t k = 0; k < RF_ARRAY_LEN(names); k++) {
		if (!strcmp(value, names[k])) {
			*out = k;
			return 0;
		}
	}
	return rf_fail(err, -EINVAL, "option direct_io: '%.40s' is not auto, on or off", value);
}

/* index_cache: "off", "" (the default directory) or an absolute path (a
 * relative one would depend on the working directory of each run). */
static int rf_index_cache_check(const char *value, rf_error *err)
{
	if (!strcmp(value, "off") || value[0] == '\0' || value[0] == '/')
		return 0;
	return rf_fail(err, -EINVAL, "option index_cache: '%.60s' is not off or an absolute path",
	               value);
}

const char *rf_config_index_cache_dir(const rf_config *cfg)
{
	const char *v = rf_cfg_str(cfg, RF_CFG_index_cache);
	if (!v)
		return "";
	return strcmp(v, "off") ? v : NULL;
}

static int rf_config_set_index(rf_config *cfg, size_t i, const char *value, rf_error *err)
{
	const rf_option *o = &rf_options[i];
	if (i == RF_CFG_index_cache)
		RF_TRY(rf_index_cache_check(value, err));
	uint32_t cache_mode;
	if (i == RF_CFG_cache && rf_cache_mode_parse(value, &cache_mode) < 0)
		return rf_fail(err, -EINVAL, "option cache: '%.40s' is not off, read or readwrite",
		               value);
	if (i == RF_CFG_cache_dir && value[0] && value[0] != '/')
		return rf_fail(err, -EINVAL, "option cache_dir: '%.60s' is not an absolute path",
		               value);
	if (i == RF_CFG_host_budget_name) {
		rf_error why = {0};
		int rc = rf_hostbudget_name_check(value, &why);
		if (rc < 0)
			return rf_fail(err, rc, "option %s: %s", o->name, why.msg);
	}
	uint32_t mode;
	if (i == RF_CFG_direct_io)
		RF_TRY(rf_direct_io_parse(value, &mode, err));
	if (i == RF_CFG_io_backend && rf_loop_backend_parse(value, &mode) < 0)
		return rf_fail(err, -EINVAL,
		               "option io_backend: '%.40s' is not auto, io_uring or epoll", value);
	if (o->type == RF_T_STR) {
		char *copy = strdup(value);
		if (!copy)
			return rf_fail(err, -ENOMEM, "out of memory");
		free(cfg->str[i]);
		cfg->str[i] = copy;
		return 0;
	}
	uint64_t v;
	if (i == RF_CFG_host_budget && !strcmp(value, "auto"))
		v = RF_HOST_BUDGET_AUTO;
	else
		RF_TRY(rf_option_parse(o, value, &v, err));
	cfg->num[i] = v;
	return 0;
}

RF_API rf_config *rf_config_new(void)
{
	rf_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return NULL;
	cfg->magic = RF_CONFIG_MAGIC;
	for (size_t i = 0; i < RF_CFG_COUNT; i++) {
		if (rf_options[i].type != RF_T_STR &&
		    rf_config_set_index(cfg, i, rf_options[i].def, NULL) < 0) {
			rf_config_free(cfg);
			return NULL; /* a default outside its bounds: caught by the tests */
		}
	}
	return cfg;
}

RF_API void rf_config_free(rf_config *cfg)
{
	if (!cfg || cfg->magic != RF_CONFIG_MAGIC)
		return;
	for (size_t i = 0; i < RF_CFG_COUNT; i++)
		free(cfg->str[i]);
	for (size_t i = 0; i < cfg->nurls; i++)
		free(cfg->urls[i]);
	free(cfg->urls);
	free(cfg->src_url);
	free(cfg->src_weight);
	for (uint32_t j = 0; j < cfg->nsrc_opts; j++)
		free(cfg->src_opt[j].str);
	free(cfg->src_opt);
	free(cfg->resume_buf);
	cfg->magic = 0;
	free(cfg);
}

RF_API int rf_config_set(rf_config *cfg, const char *key, const char *value, rf_error *err)
{
	if (!cfg || cfg->magic != RF_CONFIG_MAGIC)
		return rf_fail(err, -EINVAL, "rf_config_set: not a config");
	if (!key || !value)
		return rf_fail(err, -EINVAL, "rf_config_set: NULL key or value");
	for (size_t i = 0; i < RF_CFG_COUNT; i++) {
		if (strcmp(key, rf_options[i].name) != 0)
			continue;
		RF_TRY(rf_config_set_index(cfg, i, value, err));
		cfg->set[i] = true;
		return 0;
	}
	return rf_fail(err, -EINVAL, "unknown option '%s' (rf_config_keys() lists them)", key);
}

static int rf_config_push_url(rf_config *cfg, const char *url, size_t len, rf_error *err)
{
	if (cfg->nurls >= RF_CONFIG_URLS_MAX)
		return rf_fail(err, -E2BIG, "more than %u shard URLs", RF_CONFIG_URLS_MAX);
	if (cfg->nurls == cfg->urls_cap) {
		size_t cap = cfg->urls_cap ? cfg->urls_cap * 2 : 16;
		char **n = realloc(cfg->urls, cap * sizeof(*n));
		if (!n)
			return rf_fail(err, -ENOMEM, "out of memory for shard URLs");
		cfg->urls = n;
		cfg->urls_cap = cap;
	}
	char *copy = strndup(url, len);
	if (!copy)
		return rf_fail(err, -ENOMEM, "out of memory for shard URLs");
	cfg->urls[cfg->nurls++] = copy;
	return 0;
}

RF_API int rf_config_add_url(rf_config *cfg, const char *url, rf_error *err)
{
	if (!cfg || cfg->magic != RF_CONFIG_MAGIC || !url)
		return rf_fail(err, -EINVAL, "rf_config_add_url: bad arguments");
	if (!*url)
		return rf_fail(err, -EINVAL, "empty shard URL");
	/* Brace ranges as WebDataset writes them (fetch/url.c); S3 prefixes and
	 * directories are expanded at open time. */
	rf_url_list names = {0};
	int rc = rf_brace_expand(url, &names, err);
	for (size_t i = 0; rc == 0 && i < names.n; i++)
		rc = rf_config_push_url(cfg, names.v[i].url, strlen(names.v[i].url), err);
	rf_url_list_free(&names);
	return rc;
}

int rf_config_push_source(rf_config *cfg, uint64_t weight, rf_error *err)
{
	if (cfg->nsources == 0 && cfg->nurls > 0)
		return rf_fail(
		    err, -EINVAL,
		    "a mixture's URLs belong to its sources: %zu URL(s) were added before "
		    "the first source",
		    cfg->nurls);
	if (cfg->nsources >= RF_MIX_SOURCES_MAX)
		return rf_fail(err, -E2BIG, "more than %u mixture sources", RF_MIX_SOURCES_MAX);
	if (cfg->nsources > 0 && cfg->src_url[cfg->nsources - 1] == cfg->nurls)
		return rf_fail(err, -EINVAL, "mixture source %u has no URLs", cfg->nsources);
	if (cfg->nsources == cfg->sources_cap) {
		uint32_t cap = cfg->sources_cap ? cfg->sources_cap * 2 : 8;
		size_t *u = realloc(cfg->src_url, cap * sizeof(*u));
		if (u)
			cfg->src_url = u;
		uint64_t *w = realloc(cfg->src_weight, cap * sizeof(*w));
		if (w)
			cfg->src_weight = w;
		if (!u || !w)
			return rf_fail(err, -ENOMEM, "out of memory for mixture sources");
		cfg->sources_cap = cap;
	}
	cfg->src_url[cfg->nsources] = cfg->nurls;
	cfg->src_weight[cfg->nsources++] = weight;
	return 0;
}

RF_API int rf_config_add_source(rf_config *cfg, const char *weight, rf_error *err)
{
	if (!cfg || cfg->magic != RF_CONFIG_MAGIC || !weight)
		return rf_fail(err, -EINVAL, "rf_config_add_source: bad arguments");
	char what[48];
	snprintf(what, sizeof(what), "source %u's weight", cfg->nsources + 1);
	uint64_t w;
	RF_TRY(rf_mix_weight_parse(weight, what, &w, err));
	return rf_config_push_source(cfg, w, err);
}

RF_API int rf_config_set_allocator(rf_config *cfg, const rf_allocator *alloc)
{
	if (!cfg || cfg->magic != RF_CONFIG_MAGIC)
		return -EINVAL;
	if (!alloc) {
		cfg->has_alloc = false;
		return 0;
	}
	if (!alloc->alloc || !alloc->free)
		return -EINVAL;
	cfg->alloc = *alloc;
	cfg->has_alloc = true;
	return 0;
}

RF_API int rf_config_set_resume(rf_config *cfg, const void *state, size_t len, rf_error *err)
{
	if (!cfg || cfg->magic != RF_CONFIG_MAGIC)
		return rf_fail(err, -EINVAL, "rf_config_set_resume: not a config");
	if (!state) {
		cfg->has_resume = false;
		return 0;
	}
	rf_position p;
	RF_TRY(rf_state_decode(state, len, &p, err));
	rf_position_clear(&p);
	uint8_t *copy = malloc(len);
	if (!copy)
		return rf_fail(err, -ENOMEM, "out of memory for a resume state");
	memcpy(copy, state, len);
	free(cfg->resume_buf);
	cfg->resume_buf = copy;
	cfg->resume_len = len;
	cfg->resume = p;
	cfg->has_resume = true;
	return 0;
}

void rf_config_fetch_options(const rf_config *cfg, rf_fetch_options *out)
{
	rf_fetch_options_init(out);
	out->connections = (uint32_t)rf_cfg(cfg, RF_CFG_connections);
	out->retries = (uint32_t)rf_cfg(cfg, RF_CFG_retries);
	out->throttle_wait_ms = (uint32_t)(rf_cfg(cfg, RF_CFG_throttle_wait) / 1000000ull);
	out->connect_timeout_ms = (uint32_t)rf_cfg(cfg, RF_CFG_connect_timeout_ms);
	out->request_timeout_ms = (uint32_t)rf_cfg(cfg, RF_CFG_request_timeout_ms);
	out->low_speed_bytes_per_s = (uint32_t)rf_cfg(cfg, RF_CFG_low_speed_bytes_per_s);
	out->low_speed_time_s = (uint32_t)rf_cfg(cfg, RF_CFG_low_speed_time_s);
	out->ca_file = rf_cfg_str(cfg, RF_CFG_ca_file);
	out->s3.endpoint = rf_cfg_str(cfg, RF_CFG_s3_endpoint);
	out->s3.region = rf_cfg_str(cfg, RF_CFG_s3_region);
	out->s3.access_key = rf_cfg_str(cfg, RF_CFG_s3_access_key);
	out->s3.secret_key = rf_cfg_str(cfg, RF_CFG_s3_secret_key);
	out->s3.session_token = rf_cfg_str(cfg, RF_CFG_s3_session_token);
	out->s3.addressing = rf_cfg_str(cfg, RF_CFG_s3_addressing);
	out->gs.endpoint = rf_cfg_str(cfg, RF_CFG_gs_endpoint);
	out->hedge = rf_cfg(cfg, RF_CFG_hedge) != 0;
	out->hedge_floor_ms = (uint32_t)(rf_cfg(cfg, RF_CFG_hedge_floor) / 1000000ull);
	out->s3.no_sign = rf_cfg(cfg, RF_CFG_s3_no_sign) != 0;
	const char *dio = rf_cfg_str(cfg, RF_CFG_direct_io);
	if (!dio || rf_direct_io_parse(dio, &out->direct_io, NULL) < 0)
		out->direct_io = RF_DIRECT_IO_OFF; /* checked when set */
	out->direct_io_memory_bytes = rf_cfg(cfg, RF_CFG_direct_io_memory);
	const char *iob = rf_cfg_str(cfg, RF_CFG_io_backend);
	if (!iob || rf_loop_backend_parse(iob, &out->io_backend) < 0)
		out->io_backend = RF_LOOP_AUTO; /* checked when set */
	out->io_threads = (uint32_t)rf_cfg(cfg, RF_CFG_io_threads);
	const char *cache = rf_cfg_str(cfg, RF_CFG_cache);
	if (!cache)
		out->cache_mode = RF_CACHE_AUTO; /* the default */
	else if (rf_cache_mode_parse(cache, &out->cache_mode) < 0)
		out->cache_mode = RF_CACHE_OFF; /* checked when set */
	out->cache_dir = rf_cfg_str(cfg, RF_CFG_cache_dir);
	out->cache_bytes = rf_cfg(cfg, RF_CFG_cache_bytes);
	out->inject = rf_cfg_str(cfg, RF_CFG_inject);
	if (!out->inject) { /* the third way in: tests that cannot pass flags */
		const char *env = getenv("RINGFEED_INJECT");
		out->inject = env && *env ? env : NULL;
	}
}

void rf_config_collate_params(const rf_config *cfg, rf_collate_params *out)
{
	memset(out, 0, sizeof(*out));
	out->batch_records = (uint32_t)rf_cfg(cfg, RF_CFG_batch);
	out->batch_bytes = rf_cfg(cfg, RF_CFG_batch_bytes);
	if (out->batch_bytes > 0 && !cfg->set[RF_CFG_batch])
		out->batch_records = 65536;
	out->pad_to = (uint32_t)rf_cfg(cfg, RF_CFG_pad_to);
	out->truncate = rf_cfg(cfg, RF_CFG_truncate) != 0;
}

/* What the formats' getter reads: the loader's config, with one source's
 * own options over it (source UINT32_MAX: none), and optionally a key to
 * watch for (rf_config_is_format_option). */
typedef struct rf_fmt_view {
	const rf_config *cfg;
	uint32_t source;
	const char *watch;
	bool seen;
} rf_fmt_view;

/* The formats' view of the config (rf_fmt_config): any key of the table,
 * by name, a source's own value first; the formats parse and check their
 * own options. */
static int rf_config_fmt_get(void *ctx, const char *key, uint64_t *num, const char **str)
{
	rf_fmt_view *v = ctx;
	const rf_config *cfg = v->cfg;
	if (v->watch && !strcmp(key, v->watch))
		v->seen = true;
	for (size_t i = 0; i < RF_CFG_COUNT; i++) {
		if (strcmp(key, rf_options[i].name) != 0)
			continue;
		*num = cfg->num[i];
		*str = rf_options[i].type == RF_T_STR ? rf_cfg_str(cfg, (rf_config_key)i) : NULL;
		for (uint32_t j = 0; j < cfg->nsrc_opts; j++) {
			const rf_src_option *o = &cfg->src_opt[j];
			if (o->source != v->source || o->key != i)
				continue;
			*num = o->num;
			*str = o->str && *o->str ? o->str : NULL;
		}
		return 0;
	}
	return -ENOENT;
}

int rf_config_format_options(const rf_config *cfg, rf_fmt_optset **out, rf_error *err)
{
	rf_fmt_view v = {.cfg = cfg, .source = UINT32_MAX};
	rf_fmt_config get = {.get = rf_config_fmt_get, .ctx = &v};
	return rf_fmt_optset_new(cfg ? &get : NULL, out, err);
}

int rf_config_source_format_options(const rf_config *cfg, uint32_t source, rf_fmt_optset **out,
                                    rf_error *err)
{
	*out = NULL;
	bool any = false;
	for (uint32_t j = 0; j < cfg->nsrc_opts && !any; j++)
		any = cfg->src_opt[j].source == source;
	if (!any)
		return 0;
	rf_fmt_view v = {.cfg = cfg, .source = source};
	rf_fmt_config get = {.get = rf_config_fmt_get, .ctx = &v};
	return rf_fmt_optset_new(&get, out, err);
}

/* True when some format's options hook reads key (the formats' options
 * are whatever they ask the getter for: the engine keeps no list). */
static bool rf_config_is_format_option(const char *key)
{
	rf_config *dflt = rf_config_new();
	if (!dflt)
		return false;
	rf_fmt_view v = {.cfg = dflt, .source = UINT32_MAX, .watch = key};
	rf_fmt_config get = {.get = rf_config_fmt_get, .ctx = &v};
	rf_fmt_optset *set = NULL;
	if (rf_fmt_optset_new(&get, &set, NULL) == 0)
		rf_fmt_optset_free(set);
	rf_config_free(dflt);
	return v.seen;
}

/* The keys a source may set, for a refusal's message. */
static void rf_config_format_keys(char *out, size_t cap)
{
	size_t at = 0;
	out[0] = '\0';
	for (size_t i = 0; i < RF_CFG_COUNT && at < cap; i++)
		if (rf_config_is_format_option(rf_options[i].name))
			at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? ", " : "",
			                       rf_options[i].name);
}

static int rf_config_src_opt_push(rf_config *cfg, const rf_src_option *o, rf_error *err)
{
	if (cfg->nsrc_opts >= RF_SRC_OPTIONS_MAX)
		return rf_fail(err, -E2BIG, "more than %u per-source options", RF_SRC_OPTIONS_MAX);
	if (cfg->nsrc_opts == cfg->src_opts_cap) {
		uint32_t cap = cfg->src_opts_cap ? cfg->src_opts_cap * 2 : 8;
		rf_src_option *n = realloc(cfg->src_opt, cap * sizeof(*n));
		if (!n)
			return rf_fail(err, -ENOMEM, "out of memory for per-source options");
		cfg->src_opt = n;
		cfg->src_opts_cap = cap;
	}
	rf_src_option c = *o;
	if (o->str && !(c.str = strdup(o->str)))
		return rf_fail(err, -ENOMEM, "out of memory for per-source options");
	cfg->src_opt[cfg->nsrc_opts++] = c;
	return 0;
}

int rf_config_source_option(rf_config *cfg, const char *key, const char *value, rf_error *err)
{
	if (!cfg || cfg->magic != RF_CONFIG_MAGIC || !key || !value)
		return rf_fail(err, -EINVAL, "rf_config_source_option: bad arguments");
	if (cfg->nsources == 0)
		return rf_fail(err, -EINVAL, "option %.64s: no mixture source to apply it to", key);
	size_t i = 0;
	while (i < RF_CFG_COUNT && strcmp(key, rf_options[i].name) != 0)
		i++;
	if (i == RF_CFG_COUNT)
		return rf_fail(err, -EINVAL, "unknown option '%.64s' (rf_config_keys() lists them)",
		               key);
	uint32_t src = cfg->nsources - 1;
	for (uint32_t j = 0; j < cfg->nsrc_opts; j++)
		if (cfg->src_opt[j].source == src && cfg->src_opt[j].key == i)
			return rf_fail(err, -EINVAL, "option %s given twice for one source", key);
	if (!rf_config_is_format_option(key)) {
		char keys[256];
		rf_config_format_keys(keys, sizeof(keys));
		return rf_fail(err, -EINVAL,
		               "option %s applies to the whole loader, not to one source (a "
		               "source may set the formats' options: %s)",
		               key, keys);
	}
	rf_config *tmp = rf_config_new(); /* the value checked as the loader's would be */
	if (!tmp)
		return rf_fail(err, -ENOMEM, "out of memory");
	int rc = rf_config_set_index(tmp, i, value, err);
	rf_src_option o = {
	    .source = src, .key = (uint32_t)i, .num = tmp->num[i], .str = tmp->str[i]};
	if (rc == 0)
		rc = rf_config_src_opt_push(cfg, &o, err);
	rf_config_free(tmp);
	return rc;
}

rf_config *rf_config_dup(const rf_config *cfg)
{
	rf_config *c = rf_config_new();
	if (!c)
		return NULL;
	memcpy(c->num, cfg->num, sizeof(c->num));
	memcpy(c->set, cfg->set, sizeof(c->set));
	c->alloc = cfg->alloc;
	c->has_alloc = cfg->has_alloc;
	c->has_resume = cfg->has_resume;
	c->resume = cfg->resume;
	c->test_loop_ops = cfg->test_loop_ops;
	c->test_reads_max = cfg->test_reads_max;
	bool ok = true;
	if (cfg->resume_buf) {
		c->resume_buf = malloc(cfg->resume_len);
		ok = c->resume_buf != NULL;
		if (ok)
			memcpy(c->resume_buf, cfg->resume_buf, cfg->resume_len);
		c->resume_len = cfg->resume_len;
	}
	for (size_t i = 0; i < RF_CFG_COUNT; i++)
		if (cfg->str[i] && !(c->str[i] = strdup(cfg->str[i])))
			ok = false;
	for (size_t i = 0, j = 0; ok && i < cfg->nurls; i++) {
		for (; ok && j < cfg->nsources && cfg->src_url[j] == i; j++)
			ok = rf_config_push_source(c, cfg->src_weight[j], NULL) == 0;
		ok = ok && rf_config_push_url(c, cfg->urls[i], strlen(cfg->urls[i]), NULL) == 0;
	}
	for (uint32_t j = 0; ok && j < cfg->nsrc_opts; j++)
		ok = rf_config_src_opt_push(c, &cfg->src_opt[j], NULL) == 0;
	if (ok && cfg->nsources > 0 && cfg->src_url[cfg->nsources - 1] == cfg->nurls)
		ok = false; /* a source without URLs: refused at open, never copied */
	if (!ok) {
		rf_config_free(c);
		return NULL;
	}
	return c;
}
