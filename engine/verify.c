/* verify.c - verification of any shard the loader can read: the configured
 * names expanded as rf_open expands them (rf_config_shards), each shard read
 * through the fetch layer (local files, HTTP(S), S3: the same sources,
 * credentials and retries as a loader) and checked by shards/verify.c. */
#include "verify.h"
#include "config.h"
#include "engine.h"
#include "tar.h"
#include "url.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

RF_API void rf_shard_refs_free(rf_shard_ref *refs, size_t count)
{
	if (!refs)
		return;
	for (size_t i = 0; i < count; i++) {
		free(refs[i].url);
		free(refs[i].name);
		/* manifests are owned by the first ref that names each */
		if (refs[i].manifest && (i == 0 || refs[i - 1].manifest != refs[i].manifest))
			free((char *)refs[i].manifest);
	}
	free(refs);
}

static int rf_ref_fill(rf_shard_ref *r, const rf_shard *s, const char *manifest, rf_error *err)
{
	*r = (rf_shard_ref){.url = strdup(s->url),
	                    .name = strdup(s->name),
	                    .size_hint = s->size_hint,
	                    .listed = s->listed,
	                    .listed_bytes = s->listed_bytes,
	                    .listed_records = s->listed_records,
	                    .listed_line = s->listed_line,
	                    .manifest = manifest,
	                    .format = s->fmt ? s->fmt->name : NULL};
	return r->url && r->name ? 0 : rf_fail(err, -ENOMEM, "out of memory for the shard list");
}

RF_API int rf_config_shards(const rf_config *cfg, rf_shard_ref **out, size_t *count, rf_error *err)
{
	*out = NULL;
	*count = 0;
	rf_shard *shards = NULL;
	uint32_t n = 0, nsources = 0, *first = NULL; /* a mixture's: source k's first shard */
	if (rf_cfg_str(cfg, RF_CFG_mixture) && cfg->nurls == 0) { /* a mixture's sources */
		rf_config *dup = rf_config_dup(cfg);
		if (!dup)
			return rf_fail(err, -ENOMEM, "out of memory");
		int rc = rf_mixture_load(dup, err);
		first = rc == 0 ? calloc(dup->nsources + 1, sizeof(*first)) : NULL;
		if (rc == 0 && !first)
			rc = rf_fail(err, -ENOMEM, "out of memory");
		if (rc == 0)
			rc = rf_expand_sources(dup, &shards, &n, first, err);
		nsources = dup->nsources;
		rf_config_free(dup);
		if (rc < 0)
			free(first);
		RF_TRY(rc);
	} else {
		RF_TRY(rf_expand_urls(cfg, &shards, &n, err));
	}
	rf_shard_ref *refs = calloc(n ? n : 1, sizeof(*refs));
	int rc = refs ? 0 : rf_fail(err, -ENOMEM, "out of memory for %u shards", n);
	char *manifest = NULL;
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		if (shards[i].owns_manifest) {
			manifest = strdup(shards[i].manifest);
			if (!manifest) {
				rc = rf_fail(err, -ENOMEM, "out of memory for the shard list");
				break;
			}
		}
		rc = rf_ref_fill(&refs[i], &shards[i], shards[i].listed ? manifest : NULL, err);
		for (uint32_t k = 0; first && k < nsources; k++)
			if (first[k] <= i && i < first[k + 1])
				refs[i].source = k + 1;
		*count = i + 1;
	}
	free(first);
	rf_shards_free(shards, n);
	if (rc < 0) {
		rf_shard_refs_free(refs, *count); /* the refs own every manifest copy */
		*count = 0;
		return rc;
	}
	*out = refs;
	return 0;
}

/* ------------------------------------------------ reads through a source */

typedef struct rf_vsrc {
	rf_fetch *fetch;
	rf_source *src;
	rf_fetch_wait w; /* the pending open or read */
	rf_source *side; /* a sidecar the format reads (a Megatron .idx) */
	char *side_url;
	rf_fmt_optset *opts; /* every format's options, from the config */
	/* a mixture's sources: each one's own options (NULL: opts), nsrc of them */
	rf_fmt_optset **src_opts;
	uint32_t nsrc;
} rf_vsrc;

/* Runs the loop until the pending open or read has called back. */
static int rf_vsrc_wait(rf_vsrc *v, rf_error *err)
{
	int rc = rf_fetch_wait_run(v->fetch, &v->w);
	if (rc < 0)
		return rf_fail(err, rc, "the event loop failed: %s", strerror(-rc));
	if (v->w.res < 0)
		return rf_fail(err, (int)v->w.res, "%s", v->w.msg);
	return 0;
}

static int rf_vsrc_read(void *ctx, uint64_t offset, uint64_t len, void *buf, rf_error *err)
{
	rf_vsrc *v = ctx;
	v->w.done = false;
	int rc = rf_source_read(v->src, offset, len, buf, rf_fetch_wait_cb, &v->w);
	if (rc < 0)
		return rf_fail(err, rc, "%s: could not start a read of [%llu, +%llu): %s",
		               rf_source_name(v->src), (unsigned long long)offset,
		               (unsigned long long)len, strerror(-rc));
	return rf_vsrc_wait(v, err);
}

/* The sidecar `object` (opened once per shard): its size, and len bytes. */
static int rf_vsrc_read_object(void *ctx, const char *object, uint64_t offset, uint64_t len,
                               void *buf, uint64_t *size, rf_error *err)
{
	rf_vsrc *v = ctx;
	if (!v->side || strcmp(v->side_url, object) != 0) {
		rf_source_close(v->side);
		v->side = NULL;
		free(v->side_url);
		if (!(v->side_url = strdup(object)))
			return rf_fail(err, -ENOMEM, "out of memory");
		v->w.done = false;
		int rc = rf_source_open(v->fetch, object, UINT64_MAX, &v->side, rf_fetch_wait_cb,
		                        &v->w, err);
		if (rc == 0)
			rc = rf_vsrc_wait(v, err);
		if (rc < 0) {
			rf_source_close(v->side);
			v->side = NULL;
			return rc;
		}
	}
	if (size)
		*size = rf_source_size(v->side);
	if (len == 0)
		return 0;
	v->w.done = false;
	int rc = rf_source_read(v->side, offset, len, buf, rf_fetch_wait_cb, &v->w);
	if (rc < 0)
		return rf_fail(err, rc, "%s: could not start a read of [%llu, +%llu): %s",
		               rf_source_name(v->side), (unsigned long long)offset,
		               (unsigned long long)len, strerror(-rc));
	return rf_vsrc_wait(v, err);
}

static void rf_vsrc_free_src_opts(rf_vsrc *v)
{
	for (uint32_t k = 0; v->src_opts && k < v->nsrc; k++)
		rf_fmt_optset_free(v->src_opts[k]);
	free(v->src_opts);
	v->src_opts = NULL;
	v->nsrc = 0;
}

/* A mixture's sources' own format options (the file read again), for refs
 * that name their source. */
static int rf_verify_src_opts(rf_vsrc *v, const rf_config *cfg, rf_error *err)
{
	if (!rf_cfg_str(cfg, RF_CFG_mixture) || cfg->nurls > 0)
		return 0;
	rf_config *dup = rf_config_dup(cfg);
	if (!dup)
		return rf_fail(err, -ENOMEM, "out of memory");
	int rc = rf_mixture_load(dup, err);
	if (rc == 0 && dup->nsrc_opts > 0) {
		v->src_opts = calloc(dup->nsources, sizeof(*v->src_opts));
		rc = v->src_opts ? 0 : rf_fail(err, -ENOMEM, "out of memory");
		v->nsrc = v->src_opts ? dup->nsources : 0;
	}
	for (uint32_t k = 0; rc == 0 && k < v->nsrc; k++)
		rc = rf_config_source_format_options(dup, k, &v->src_opts[k], err);
	rf_config_free(dup);
	if (rc < 0)
		rf_vsrc_free_src_opts(v);
	return rc;
}

/* The options ref opens with: its source's own, else the config's. */
static const rf_fmt_optset *rf_vsrc_opts(const rf_vsrc *v, const rf_shard_ref *ref)
{
	if (ref->source > 0 && ref->source <= v->nsrc && v->src_opts[ref->source - 1])
		return v->src_opts[ref->source - 1];
	return v->opts;
}

/* One loop and fetch layer for every shard of a call (connections kept). */
static int rf_verify_setup(rf_vsrc *v, const rf_config *cfg, rf_error *err)
{
	rf_fetch_options fo;
	rf_config_fetch_options(cfg, &fo);
	RF_TRY(rf_config_format_options(cfg, &v->opts, err));
	rf_loop *loop = NULL;
	int rc = rf_fetch_loop_new(&fo, 0, &loop, err);
	if (rc == 0 && (rc = rf_fetch_new(loop, &fo, &v->fetch, err)) < 0)
		rf_loop_free(loop);
	if (rc < 0) {
		rf_fmt_optset_free(v->opts);
		v->opts = NULL;
	}
	return rc;
}

static void rf_verify_teardown(rf_vsrc *v)
{
	rf_fmt_optset_free(v->opts);
	v->opts = NULL;
	rf_vsrc_free_src_opts(v);
	if (!v->fetch)
		return;
	rf_loop *loop = rf_fetch_loop(v->fetch);
	rf_fetch_free(v->fetch);
	rf_loop_free(loop);
}

/* Opens ref's source (v->src), waiting for it. */
static int rf_vsrc_open(rf_vsrc *v, const rf_shard_ref *ref, rf_error *e)
{
	v->src = NULL;
	v->w.done = false;
	/* a listed size is checked, not trusted: the source finds the real one */
	uint64_t hint = ref->listed ? UINT64_MAX : ref->size_hint;
	int rc = rf_source_open(v->fetch, ref->url, hint, &v->src, rf_fetch_wait_cb, &v->w, e);
	return rc == 0 ? rf_vsrc_wait(v, e) : rc;
}

/* Closes the shard's source and the sidecar it read. */
static void rf_vsrc_close(rf_vsrc *v)
{
	rf_source_close(v->src);
	v->src = NULL;
	rf_source_close(v->side);
	v->side = NULL;
	free(v->side_url);
	v->side_url = NULL;
}

/* Opens ref's source, walks it, closes it: 0, RF_E_CORRUPT or an I/O error. */
static int rf_verify_one(rf_vsrc *v, const rf_shard_ref *ref,
                         void (*report)(void *ctx, const rf_error *e), void *ctx,
                         uint32_t max_reports, rf_error *e)
{
	int rc = rf_vsrc_open(v, ref, e);
	if (rc == 0) {
		rf_verify_walk w = {.name = rf_source_name(v->src),
		                    .url = ref->url,
		                    .local = !strstr(ref->url, "://") ||
		                             !strncmp(ref->url, "file://", 7),
		                    .size = rf_source_size(v->src),
		                    .read = rf_vsrc_read,
		                    .read_object = rf_vsrc_read_object,
		                    .read_ctx = v,
		                    .fmt = ref->format ? rf_format_by_name(ref->format) : NULL,
		                    .opts = rf_vsrc_opts(v, ref),
		                    .report = report,
		                    .ctx = ctx,
		                    .max_reports = max_reports,
		                    .listed = ref->listed,
		                    .listed_bytes = ref->listed_bytes,
		                    .listed_records = ref->listed_records,
		                    .listed_line = ref->listed_line,
		                    .manifest = ref->manifest};
		rc = rf_verify_run(&w, e);
	} else {
		size_t l = strlen(e->msg);
		if (ref->listed) /* name the line that listed it, as rf_open does */
			snprintf(e->msg + l, sizeof(e->msg) - l,
			         " (listed in manifest %s line %llu)", ref->manifest,
			         (unsigned long long)ref->listed_line);
		if (report && max_reports)
			report(ctx, e);
	}
	rf_vsrc_close(v);
	return rc;
}

/* ------------------------------------------- many shards at once
 *
 * rf_verify_shards runs `verify_jobs` workers, each with its own loop and
 * fetch layer (its own connections), taking shards in order; a worker keeps
 * what a shard reported and the caller's thread hands it on (report, then
 * done) in shard order, so the output is the serial walk's whatever the
 * timing. Bounds: a worker takes shard i only while i is fewer than
 * RF_VERIFY_AHEAD x jobs past the oldest not handed on, and a shard keeps
 * at most RF_VERIFY_HELD_BYTES of messages (the rest are counted, and said
 * in one message). One job is the serial walk, reports streamed as found. */

#define RF_VERIFY_AHEAD      4u
#define RF_VERIFY_HELD_BYTES (4u << 20)

typedef struct rf_vres {
	bool done;
	int rc;
	rf_error e;
	char **msg; /* reported messages, in order */
	int *code;
	uint32_t n, cap;
	uint64_t held, dropped; /* bytes of msg; reports not kept */
} rf_vres;

typedef struct rf_vjob {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a result is in, a slot is free, setup is done */
	const rf_config *cfg;
	const rf_shard_ref *refs;
	size_t n, next, emitted, window;
	uint32_t max_reports, jobs, set_up; /* workers whose setup is done */
	rf_vres *res;                       /* window slots: shard i in slot i % window */
	int setup_rc;
	rf_error setup_err;
	bool go, stop;
} rf_vjob;

typedef struct rf_vworker {
	rf_vjob *j;
	rf_vres *cur; /* the result being filled (its slot) */
	pthread_t tid;
	bool started;
} rf_vworker;

static void rf_vres_clear(rf_vres *r)
{
	for (uint32_t i = 0; i < r->n; i++)
		free(r->msg[i]);
	free(r->msg);
	free(r->code);
	*r = (rf_vres){0};
}

/* A worker's report callback: the message kept (within the bound). */
static void rf_vworker_report(void *ctx, const rf_error *e)
{
	rf_vworker *w = ctx;
	rf_vres *r = w->cur;
	size_t len = strlen(e->msg) + 1;
	if (r->held + len > RF_VERIFY_HELD_BYTES) {
		r->dropped++;
		return;
	}
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 8;
		char **m = realloc(r->msg, cap * sizeof(*m));
		if (m)
			r->msg = m;
		int *c = m ? realloc(r->code, cap * sizeof(*c)) : NULL;
		if (c)
			r->code = c;
		if (!m || !c) {
			r->dropped++;
			return;
		}
		r->cap = cap;
	}
	char *copy = strdup(e->msg);
	if (!copy) {
		r->dropped++;
		return;
	}
	r->msg[r->n] = copy;
	r->code[r->n++] = e->code;
	r->held += len;
}

static void *rf_vworker_main(void *arg)
{
	rf_vworker *w = arg;
	rf_vjob *j = w->j;
	rf_vsrc v = {0};
	rf_error e = {0};
	int rc = rf_verify_setup(&v, j->cfg, &e);
	if (rc == 0)
		rc = rf_verify_src_opts(&v, j->cfg, &e);
	pthread_mutex_lock(&j->mu);
	if (rc < 0 && j->setup_rc == 0) {
		j->setup_rc = rc;
		j->setup_err = e;
	}
	j->set_up++;
	pthread_cond_broadcast(&j->cv);
	while (!j->go && !j->stop)
		pthread_cond_wait(&j->cv, &j->mu);
	while (rc == 0 && !j->stop) {
		while (!j->stop && j->next < j->n && j->next >= j->emitted + j->window)
			pthread_cond_wait(&j->cv, &j->mu); /* far enough ahead: wait */
		if (j->stop || j->next >= j->n)
			break;
		size_t i = j->next++;
		w->cur = &j->res[i % j->window];
		pthread_mutex_unlock(&j->mu);
		rf_vres *r = w->cur;
		const rf_shard_ref *ref = &j->refs[i];
		r->rc = ref->url
		            ? rf_verify_one(&v, ref, rf_vworker_report, w, j->max_reports, &r->e)
		            : rf_fail(&r->e, -EINVAL, "shard %zu: no url", i);
		pthread_mutex_lock(&j->mu);
		r->done = true;
		pthread_cond_broadcast(&j->cv);
	}
	pthread_mutex_unlock(&j->mu);
	rf_verify_teardown(&v);
	return NULL;
}

/* Workers for n shards: verify_jobs, or the CPUs this process may use (at
 * least 8 when a shard is remote), never more than the shards. */
static uint32_t rf_verify_jobs(const rf_config *cfg, const rf_shard_ref *refs, size_t n)
{
	uint32_t jobs = (uint32_t)rf_cfg(cfg, RF_CFG_verify_jobs);
	if (jobs == 0) {
		rf_node_limits node;
		rf_node_limits_read("", &node);
		jobs = RF_MAX(1u, rf_node_cpus(&node));
		for (size_t i = 0; i < n && jobs < 8; i++)
			if (refs[i].url && strstr(refs[i].url, "://") &&
			    strncmp(refs[i].url, "file://", 7) != 0)
				jobs = 8;
	}
	jobs = RF_MIN(jobs, 64u);
	return (uint32_t)RF_MAX(1, RF_MIN((size_t)jobs, n));
}

/* One job: the serial walk, reports streamed as found. */
static int rf_verify_serial(const rf_config *cfg, const rf_shard_ref *refs, size_t n,
                            void (*report)(void *ctx, const rf_error *e),
                            void (*done)(void *ctx, size_t i, int rc), void *ctx,
                            uint32_t max_reports, rf_error *first)
{
	rf_error e = {0};
	rf_vsrc v = {0};
	int rc = rf_verify_setup(&v, cfg, first);
	if (rc == 0)
		rc = rf_verify_src_opts(&v, cfg, first);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int r = refs[i].url ? rf_verify_one(&v, &refs[i], report, ctx, max_reports, &e)
		                    : rf_fail(&e, -EINVAL, "shard %zu: no url", i);
		if (r < 0 && first->code == 0)
			*first = e;
		if (done)
			done(ctx, i, r);
	}
	rf_verify_teardown(&v);
	return rc;
}

/* Hands shard i's result on (the caller's thread, in order). */
static void rf_verify_emit(rf_vres *r, size_t i, const rf_shard_ref *ref,
                           void (*report)(void *ctx, const rf_error *e),
                           void (*done)(void *ctx, size_t i, int rc), void *ctx, rf_error *first)
{
	for (uint32_t k = 0; report && k < r->n; k++) {
		rf_error e = {.code = r->code[k]};
		snprintf(e.msg, sizeof(e.msg), "%s", r->msg[k]);
		report(ctx, &e);
	}
	if (report && r->dropped) {
		rf_error e = {.code = r->rc < 0 ? r->rc : RF_E_CORRUPT};
		snprintf(e.msg, sizeof(e.msg),
		         "shard %s: %llu more problems not shown (more than %u bytes of messages "
		         "while earlier shards were verified)",
		         ref->name ? ref->name : "?", (unsigned long long)r->dropped,
		         RF_VERIFY_HELD_BYTES);
		report(ctx, &e);
	}
	if (r->rc < 0 && first->code == 0)
		*first = r->e;
	if (done)
		done(ctx, i, r->rc);
}

static int rf_verify_parallel(const rf_config *cfg, const rf_shard_ref *refs, size_t n,
                              uint32_t jobs, void (*report)(void *ctx, const rf_error *e),
                              void (*done)(void *ctx, size_t i, int rc), void *ctx,
                              uint32_t max_reports, rf_error *first)
{
	rf_vjob j = {.cfg = cfg,
	             .refs = refs,
	             .n = n,
	             .max_reports = max_reports,
	             .jobs = jobs,
	             .window = (size_t)jobs * RF_VERIFY_AHEAD};
	rf_vworker *w = calloc(jobs, sizeof(*w));
	j.res = calloc(j.window, sizeof(*j.res));
	if (!w || !j.res) {
		free(w);
		free(j.res);
		return rf_fail(first, -ENOMEM, "out of memory for %u verify jobs", jobs);
	}
	pthread_mutex_init(&j.mu, NULL);
	pthread_cond_init(&j.cv, NULL);
	uint32_t started = 0;
	for (uint32_t k = 0; k < jobs; k++) {
		w[k].j = &j;
		if (pthread_create(&w[k].tid, NULL, rf_vworker_main, &w[k]) != 0)
			break;
		w[k].started = true;
		started++;
	}
	pthread_mutex_lock(&j.mu);
	while (j.set_up < started) /* every fetch layer set up, or one failed */
		pthread_cond_wait(&j.cv, &j.mu);
	int rc = j.setup_rc;
	if (rc == 0 && started == 0)
		rc = rf_fail(&j.setup_err, -EAGAIN, "could not start a verify thread");
	if (rc < 0) {
		*first = j.setup_err;
		j.stop = true;
	}
	j.go = true;
	pthread_cond_broadcast(&j.cv);
	while (rc == 0 && j.emitted < n) {
		rf_vres *r = &j.res[j.emitted % j.window];
		if (!r->done) {
			pthread_cond_wait(&j.cv, &j.mu);
			continue;
		}
		pthread_mutex_unlock(&j.mu); /* the callbacks run unlocked; the slot is ours */
		rf_verify_emit(r, j.emitted, &refs[j.emitted], report, done, ctx, first);
		rf_vres_clear(r);
		pthread_mutex_lock(&j.mu);
		j.emitted++;
		pthread_cond_broadcast(&j.cv);
	}
	pthread_mutex_unlock(&j.mu);
	for (uint32_t k = 0; k < jobs; k++)
		if (w[k].started)
			pthread_join(w[k].tid, NULL);
	for (size_t k = 0; k < j.window; k++)
		rf_vres_clear(&j.res[k]);
	free(j.res);
	free(w);
	pthread_cond_destroy(&j.cv);
	pthread_mutex_destroy(&j.mu);
	return rc;
}

RF_API int rf_verify_shards(const rf_config *cfg, const rf_shard_ref *refs, size_t n,
                            void (*report)(void *ctx, const rf_error *e),
                            void (*done)(void *ctx, size_t i, int rc), void *ctx,
                            uint32_t max_reports, rf_error *err)
{
	rf_error first = {0};
	int rc = 0;
	if (!cfg || (n && !refs))
		rc = rf_fail(&first, -EINVAL, "rf_verify_shards: bad arguments");
	else {
		uint32_t jobs = rf_verify_jobs(cfg, refs, n);
		rc = jobs <= 1
		         ? rf_verify_serial(cfg, refs, n, report, done, ctx, max_reports, &first)
		         : rf_verify_parallel(cfg, refs, n, jobs, report, done, ctx, max_reports,
		                              &first);
	}
	if (err)
		*err = first;
	return rc < 0 ? rc : first.code;
}

RF_API int rf_verify_shard(const rf_config *cfg, const rf_shard_ref *ref,
                           void (*report)(void *ctx, const rf_error *e), void *ctx,
                           uint32_t max_reports, rf_error *err)
{
	return rf_verify_shards(cfg, ref, ref ? 1 : 0, report, NULL, ctx, max_reports, err);
}

/* ------------------------------------------- a remote tar's index file */

/* The format's reads: the shard's own (object NULL) or a sidecar's. */
static int rf_vsrc_fmt_read(void *ctx, const char *object, uint64_t offset, uint64_t len, void *buf,
                            uint64_t *size, rf_error *err)
{
	rf_vsrc *v = ctx;
	if (object)
		return rf_vsrc_read_object(ctx, object, offset, len, buf, size, err);
	if (size)
		*size = rf_source_size(v->src);
	return len ? rf_vsrc_read(ctx, offset, len, buf, err) : 0;
}

RF_API int rf_tar_index_build_ref(const rf_config *cfg, const rf_shard_ref *ref,
                                  const char *idx_path, rf_error *err)
{
	if (!cfg || !ref || !ref->url || !idx_path)
		return rf_fail(err, -EINVAL, "rf_tar_index_build_ref: bad arguments");
	/* not a plain tar's name: refused before anything is opened */
	RF_TRY(rf_tar_index_name_check(ref->url, ref->name ? ref->name : "shard", err));
	rf_vsrc v = {0};
	RF_TRY(rf_verify_setup(&v, cfg, err));
	int rc = rf_vsrc_open(&v, ref, err);
	if (rc == 0) {
		rf_fmt_open o = {
		    .url = ref->url, .name = rf_source_name(v.src), .size = rf_source_size(v.src)};
		rc = rf_tar_index_build_with(&o, rf_vsrc_fmt_read, &v, idx_path, err);
	}
	rf_vsrc_close(&v);
	rf_verify_teardown(&v);
	return rc;
}
