/* loop_pool.c - the epoll backend's file reads (see loop_int.h): a small
 * bounded pool of threads doing pread(2), fed by a queue of requests and
 * answering through a queue of completions that the loop thread drains
 * after an eventfd wake. Both queues hold at most one entry per op slot, so
 * the op table bounds them. `mu` guards everything below it. */
#include "loop_int.h"
#include "util.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct rf_loop_pool_req {
	uint64_t udata;
	int fd;
	uint32_t len;
	void *buf;
	uint64_t offset;
} rf_loop_pool_req;

struct rf_loop_pool {
	rf_loop *loop; /* its ops' cancel_gen (atomic) only */
	uint32_t cap;  /* the op table's size */
	uint32_t threads_max;
	int wake_fd;
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* requests queued, or stop (mu) */
	bool stop;             /* (mu) */
	uint32_t nthreads;     /* started (mu) */
	uint32_t idle;         /* waiting on cv (mu) */
	uint32_t req_head;     /* (mu) */
	uint32_t req_n;        /* (mu) */
	uint32_t done_head;    /* (mu) */
	uint32_t done_n;       /* (mu) */
	rf_loop_pool_req *req; /* cap (mu) */
	uint64_t *done_udata;  /* cap (mu) */
	int *done_res;         /* cap (mu) */
	pthread_t threads[RF_LOOP_READ_THREADS_MAX];
};

int rf_loop_pool_new(rf_loop_pool **out, rf_loop *loop, uint32_t threads_max, int wake_fd,
                     rf_error *err)
{
	rf_loop_pool *p = calloc(1, sizeof(*p));
	uint32_t cap = loop->ops_max;
	if (p) {
		p->req = calloc(cap, sizeof(*p->req));
		p->done_udata = calloc(cap, sizeof(*p->done_udata));
		p->done_res = calloc(cap, sizeof(*p->done_res));
	}
	if (!p || !p->req || !p->done_udata || !p->done_res) {
		if (p) {
			free(p->req);
			free(p->done_udata);
			free(p->done_res);
		}
		free(p);
		return rf_fail(err, -ENOMEM, "out of memory for the event loop's read threads");
	}
	p->loop = loop;
	p->cap = cap;
	p->threads_max = RF_MAX(1u, RF_MIN(threads_max, RF_LOOP_READ_THREADS_MAX));
	p->wake_fd = wake_fd;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	*out = p;
	return 0;
}

/* The read itself: skipped when its op was cancelled before it started. */
static int rf_loop_pool_do(rf_loop_pool *p, const rf_loop_pool_req *r)
{
	uint32_t slot = (uint32_t)r->udata, gen = (uint32_t)(r->udata >> 32);
	if (atomic_load_explicit(&p->loop->ops[slot].cancel_gen, memory_order_relaxed) == gen)
		return -ECANCELED;
	for (;;) {
		ssize_t n = r->offset == UINT64_MAX
		                ? read(r->fd, r->buf, r->len)
		                : pread(r->fd, r->buf, r->len, (off_t)r->offset);
		if (n >= 0)
			return (int)RF_MIN((size_t)n, (size_t)INT32_MAX);
		if (errno != EINTR)
			return -errno;
	}
}

static void rf_loop_pool_done(rf_loop_pool *p, uint64_t udata, int res)
{
	uint32_t at = (p->done_head + p->done_n) % p->cap;
	p->done_udata[at] = udata;
	p->done_res[at] = res;
	if (++p->done_n > 1)
		return; /* the loop has a wake-up coming already */
	pthread_mutex_unlock(&p->mu);
	uint64_t one = 1;
	ssize_t w = write(p->wake_fd, &one, sizeof(one));
	(void)w;
	pthread_mutex_lock(&p->mu);
}

static void *rf_loop_pool_main(void *arg)
{
	rf_loop_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->req_n == 0 && !p->stop) {
			p->idle++;
			pthread_cond_wait(&p->cv, &p->mu);
			p->idle--;
		}
		if (p->req_n == 0)
			break; /* stop, and nothing left */
		rf_loop_pool_req r = p->req[p->req_head];
		p->req_head = (p->req_head + 1) % p->cap;
		p->req_n--;
		pthread_mutex_unlock(&p->mu);
		int res = rf_loop_pool_do(p, &r);
		pthread_mutex_lock(&p->mu);
		rf_loop_pool_done(p, r.udata, res);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* One more thread (mu held), with every signal blocked: they go to the
 * program's own threads. */
static int rf_loop_pool_spawn(rf_loop_pool *p)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&p->threads[p->nthreads], NULL, rf_loop_pool_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -rc;
	p->nthreads++;
	return 0;
}

int rf_loop_pool_submit(rf_loop_pool *p, uint64_t udata, int fd, void *buf, uint32_t len,
                        uint64_t offset)
{
	pthread_mutex_lock(&p->mu);
	if (p->req_n + p->done_n >= p->cap) { /* cannot happen: one entry per slot */
		pthread_mutex_unlock(&p->mu);
		return -EAGAIN;
	}
	if (p->req_n >= p->idle && p->nthreads < p->threads_max) {
		int rc = rf_loop_pool_spawn(p);
		if (rc < 0 && p->nthreads == 0) {
			pthread_mutex_unlock(&p->mu);
			return rc;
		}
	}
	p->req[(p->req_head + p->req_n) % p->cap] =
	    (rf_loop_pool_req){.udata = udata, .fd = fd, .len = len, .buf = buf, .offset = offset};
	p->req_n++;
	if (p->idle > 0)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

uint32_t rf_loop_pool_take(rf_loop_pool *p, uint64_t *udata, int *res, uint32_t max)
{
	pthread_mutex_lock(&p->mu);
	uint32_t n = RF_MIN(max, p->done_n);
	for (uint32_t i = 0; i < n; i++) {
		udata[i] = p->done_udata[p->done_head];
		res[i] = p->done_res[p->done_head];
		p->done_head = (p->done_head + 1) % p->cap;
	}
	p->done_n -= n;
	pthread_mutex_unlock(&p->mu);
	return n;
}

bool rf_loop_pool_has_done(rf_loop_pool *p)
{
	pthread_mutex_lock(&p->mu);
	bool any = p->done_n > 0;
	pthread_mutex_unlock(&p->mu);
	return any;
}

void rf_loop_pool_free(rf_loop_pool *p, bool running)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	if (running)
		p->req_n = 0; /* queued reads are not started: the op table goes away */
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		if (running)
			pthread_detach(p->threads[i]);
		else
			pthread_join(p->threads[i], NULL);
	}
	if (running)
		return; /* a read the drain gave up on still holds p (and wake_fd): left */
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->req);
	free(p->done_udata);
	free(p->done_res);
	free(p);
}
