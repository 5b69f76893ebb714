/* faultproxy.c - rf-faultproxy: a TCP proxy for tests, placed between
 * ringfeed and a real server (nginx, s3rver) on 127.0.0.1, that adds latency
 * and jitter, periodic stalls, a bandwidth cap, connection resets and cut
 * bodies, so end-to-end tests exercise the real network path.
 *
 * One thread, edge-triggered epoll. Each connection has two directions
 * (client->server, server->client); each holds a bounded ring of bytes read
 * but not yet forwarded, cut into segments that carry a release time
 * (arrival + latency + jitter, never earlier than the previous segment, so
 * jitter never reorders a stream). A full ring stops reading (TCP pushes
 * back). Stalls hold every write for S seconds at the end of every period of
 * P seconds (counted from start). The bandwidth cap paces each direction of
 * each connection.
 *
 * Faults are decided per "unit" of --unit bytes of each direction's stream:
 * unit k is faulty with the given probability, and the fault strikes at the
 * middle of the unit: reset = both sockets closed with RST; cut = the
 * server->client direction ends (FIN to the client) mid-body and the server
 * connection is closed. Decisions and jitter are pure functions of (seed,
 * connection number, direction, stream offset), so a seed gives the same
 * faults at the same byte positions whatever the timing. */
#include "inject.h"
#include "rng.h"
#include "util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define FP_RING_BYTES  (256u * 1024u) /* per direction; a power of two */
#define FP_SEGS_MAX    512u           /* per direction; a power of two */
#define FP_IO_BYTES    (64u * 1024u)  /* largest single read / write */
#define FP_CONNS_MAX   1024u
#define FP_BURST_NS    10000000ull /* bandwidth catch-up after a late wake-up */
#define FP_PUMP_ROUNDS 16          /* reads + writes per direction per turn (fairness) */
/* epoll tags: connection id << 11 | slot << 1 | side (ids wrap after 2^53). */
#define FP_TAG_ID_SHIFT  11
#define FP_TAG_SLOT_MASK ((1ull << FP_TAG_ID_SHIFT) - 1)
#define FP_TAG_LISTEN    UINT64_MAX
#define FP_TAG_SIGNAL    (UINT64_MAX - 1)
#define FP_TAG_FAULT     0x66706661756c7431ull
#define FP_TAG_JITTER    0x66706a6974746572ull

enum { FP_C2S = 0, FP_S2C = 1 };
enum { FP_ACT_NONE = 0, FP_ACT_RESET, FP_ACT_CUT };

typedef struct fp_opts {
	struct sockaddr_in listen, to;
	uint64_t latency_ns, jitter_ns, stall_ns, stall_period_ns;
	uint64_t bandwidth_bytes_per_s; /* 0: unlimited */
	uint64_t reset_p12, cut_p12, seed, unit_bytes;
	uint32_t conns_max;
	bool quiet;
} fp_opts;

typedef struct fp_seg {
	uint32_t len;
	uint8_t action;
	uint64_t release_ns;
} fp_seg;

typedef struct fp_dir {
	uint8_t *ring;
	uint64_t in, out; /* free-running: bytes read from src / written to dst */
	fp_seg segs[FP_SEGS_MAX];
	uint32_t seg_head, seg_tail; /* free-running */
	uint32_t head_sent;          /* bytes of the head segment already written */
	uint64_t next_unit;          /* first fault unit not decided yet */
	uint64_t last_release_ns;
	uint64_t bw_next_ns;
	bool eof, fault_queued, shut;
} fp_dir;

typedef struct fp_conn {
	int fd[2]; /* [0] client, [1] server */
	bool readable[2], writable[2];
	bool connected, used;
	uint64_t id;
	fp_dir dir[2]; /* dir[FP_C2S] reads fd[0], writes fd[1] */
} fp_conn;

typedef struct fp_proxy {
	fp_opts o;
	int ep, lfd, sigfd;
	bool listening, stop;
	uint64_t start_ns, next_id;
	fp_conn *conns;
	uint32_t live;
	uint64_t bytes[2], resets, cuts, refused;
} fp_proxy;

static void fp_usage(FILE *to)
{
	fprintf(to,
	        "usage: rf-faultproxy --listen 127.0.0.1:PORT --to HOST:PORT [options]\n"
	        "  TCP proxy that adds faults (tests only). Prints 'listening HOST:PORT' on\n"
	        "  stdout once ready (PORT 0 picks a free port); stops on SIGTERM / SIGINT.\n"
	        "  --latency D      delay every chunk by D (e.g. 20ms)\n"
	        "  --jitter D       plus a uniform draw in [-D, +D] (order is kept)\n"
	        "  --stall S/P      forward nothing during the last S of every period P\n"
	        "  --bandwidth B    at most B bytes per second per direction and connection\n"
	        "  --reset P        probability per unit of stream that both sides get a RST\n"
	        "  --cut P          probability per unit of the server->client stream that it\n"
	        "                   ends there (FIN to the client mid-body)\n"
	        "  --unit BYTES     fault decision unit (default 16KiB)\n"
	        "  --seed N         seed of every decision (default 0)\n"
	        "  --max-conns N    concurrent connections (default 64, at most %u)\n"
	        "  --quiet          no summary on stderr at exit\n",
	        FP_CONNS_MAX);
}

static int fp_addr(const char *text, struct sockaddr_in *sa)
{
	const char *colon = strrchr(text, ':');
	char host[64];
	if (!colon || (size_t)(colon - text) >= sizeof(host))
		return -EINVAL;
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = '\0';
	char *end = NULL;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

static int fp_opt_value(int key, const char *v, fp_opts *o)
{
	size_t n = strlen(v);
	uint64_t x = 0;
	rf_error err = {0};
	switch (key) {
	case 'l':
		return fp_addr(v, &o->listen);
	case 't':
		return fp_addr(v, &o->to);
	case 'L':
		return rf_inject_parse_duration(v, n, &o->latency_ns);
	case 'J':
		return rf_inject_parse_duration(v, n, &o->jitter_ns);
	case 'S': {
		const char *slash = strchr(v, '/');
		if (!slash || rf_inject_parse_duration(v, (size_t)(slash - v), &o->stall_ns) < 0 ||
		    rf_inject_parse_duration(slash + 1, strlen(slash + 1), &o->stall_period_ns) <
		        0 ||
		    !o->stall_period_ns || o->stall_ns >= o->stall_period_ns)
			return -EINVAL;
		return 0;
	}
	case 'B':
		return rf_parse_bytes(v, &o->bandwidth_bytes_per_s, &err);
	case 'R':
		return rf_inject_parse_prob(v, n, &o->reset_p12);
	case 'C':
		return rf_inject_parse_prob(v, n, &o->cut_p12);
	case 'U':
		if (rf_parse_bytes(v, &x, &err) < 0 || x < 2 || x > (1ull << 30))
			return -EINVAL;
		o->unit_bytes = x;
		return 0;
	case 's':
	case 'M': {
		char *end = NULL;
		errno = 0;
		x = strtoull(v, &end, 10);
		if (!*v || *end || errno || *v == '-')
			return -EINVAL;
		if (key == 's')
			o->seed = x;
		else if (x < 1 || x > FP_CONNS_MAX)
			return -EINVAL;
		else
			o->conns_max = (uint32_t)x;
		return 0;
	}
	}
	return -EINVAL;
}

static int fp_parse_args(int argc, char **argv, fp_opts *o)
{
	static const struct option longs[] = {
	    {"listen", required_argument, 0, 'l'},
	    {"to", required_argument, 0, 't'},
	    {"latency", required_argument, 0, 'L'},
	    {"jitter", required_argument, 0, 'J'},
	    {"stall", required_argument, 0, 'S'},
	    {"bandwidth", required_argument, 0, 'B'},
	    {"reset", required_argument, 0, 'R'},
	    {"cut", required_argument, 0, 'C'},
	    {"unit", required_argument, 0, 'U'},
	    {"seed", required_argument, 0, 's'},
	    {"max-conns", required_argument, 0, 'M'},
	    {"quiet", no_argument, 0, 'q'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	memset(o, 0, sizeof(*o));
	o->unit_bytes = 16384;
	o->conns_max = 64;
	bool have_listen = false, have_to = false;
	int c, idx = 0;
	while ((c = getopt_long(argc, argv, "", longs, &idx)) != -1) {
		if (c == 'h') {
			fp_usage(stdout);
			exit(0);
		}
		if (c == 'q') {
			o->quiet = true;
			continue;
		}
		if (c == '?' || fp_opt_value(c, optarg, o) < 0) {
			if (c != '?')
				fprintf(stderr, "rf-faultproxy: bad value '%s' for --%s\n", optarg,
				        longs[idx].name);
			return -EINVAL;
		}
		have_listen |= c == 'l';
		have_to |= c == 't';
	}
	if (optind != argc || !have_listen || !have_to) {
		fprintf(stderr, "rf-faultproxy: --listen and --to are required (see --help)\n");
		return -EINVAL;
	}
	return 0;
}

/* ---- decisions ---------------------------------------------------------- */

static uint64_t fp_hash(const fp_proxy *p, uint64_t tag, uint64_t id, int dir, uint64_t at)
{
	rf_rng r;
	rf_rng_init(&r, p->o.seed, tag, id, (uint64_t)dir, at);
	return rf_rng_next(&r);
}

static uint64_t fp_delay_ns(const fp_proxy *p, const fp_conn *c, int d, uint64_t at)
{
	uint64_t lat = p->o.latency_ns, jit = p->o.jitter_ns;
	if (!jit)
		return lat;
	uint64_t j = fp_hash(p, FP_TAG_JITTER, c->id, d, at) % (2 * jit + 1);
	return lat + j > jit ? lat + j - jit : 0;
}

/* The fault of unit k of direction d: FP_ACT_NONE, _RESET or _CUT. */
static int fp_unit_fault(const fp_proxy *p, const fp_conn *c, int d, uint64_t k)
{
	uint64_t u = fp_hash(p, FP_TAG_FAULT, c->id, d, k) % RF_INJECT_PROB_ONE;
	if (u < p->o.reset_p12)
		return FP_ACT_RESET;
	if (d == FP_S2C && u < p->o.reset_p12 + p->o.cut_p12)
		return FP_ACT_CUT;
	return FP_ACT_NONE;
}

/* ns until the current stall window ends, 0 when not stalled. */
static uint64_t fp_stall_left(const fp_proxy *p, uint64_t now)
{
	if (!p->o.stall_period_ns || !p->o.stall_ns)
		return 0;
	uint64_t phase = (now - p->start_ns) % p->o.stall_period_ns;
	return phase >= p->o.stall_period_ns - p->o.stall_ns ? p->o.stall_period_ns - phase : 0;
}

/* ---- connections -------------------------------------------------------- */

static void fp_close_conn(fp_proxy *p, fp_conn *c, bool rst)
{
	for (int i = 0; i < 2; i++) {
		if (c->fd[i] < 0)
			continue;
		if (rst) {
			struct linger lg = {.l_onoff = 1, .l_linger = 0};
			setsockopt(c->fd[i], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		epoll_ctl(p->ep, EPOLL_CTL_DEL, c->fd[i], NULL);
		close(c->fd[i]);
		c->fd[i] = -1;
	}
	for (int d = 0; d < 2; d++)
		free(c->dir[d].ring);
	memset(c, 0, sizeof(*c));
	c->fd[0] = c->fd[1] = -1;
	p->live--;
}

static bool fp_dir_can_read(const fp_dir *dr)
{
	return !dr->eof && !dr->fault_queued && dr->in - dr->out < FP_RING_BYTES &&
	       dr->seg_tail - dr->seg_head < FP_SEGS_MAX;
}

static void fp_push_seg(fp_dir *dr, uint32_t len, int action, uint64_t release_ns)
{
	release_ns = RF_MAX(release_ns, dr->last_release_ns);
	dr->last_release_ns = release_ns;
	dr->segs[dr->seg_tail++ % FP_SEGS_MAX] =
	    (fp_seg){.len = len, .action = (uint8_t)action, .release_ns = release_ns};
}

/* One read from the direction's source. Returns 1 on progress, 0 when it
 * would block, -1 when the connection was closed. */
static int fp_read_once(fp_proxy *p, fp_conn *c, int d, uint64_t now)
{
	fp_dir *dr = &c->dir[d];
	uint32_t at = (uint32_t)(dr->in % FP_RING_BYTES);
	size_t room =
	    RF_MIN((size_t)(FP_RING_BYTES - (dr->in - dr->out)), (size_t)(FP_RING_BYTES - at));
	ssize_t n = recv(c->fd[d], dr->ring + at, RF_MIN(room, (size_t)FP_IO_BYTES), 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		c->readable[d] = false;
		return 0;
	}
	if (n < 0) { /* reset by the peer: pass the reset on */
		fp_close_conn(p, c, true);
		return -1;
	}
	if (n == 0) {
		dr->eof = true;
		return 1;
	}
	uint64_t a = dr->in, b = a + (uint64_t)n, half = p->o.unit_bytes / 2;
	int action = FP_ACT_NONE;
	while (dr->next_unit * p->o.unit_bytes + half < b) {
		uint64_t k = dr->next_unit++;
		action = fp_unit_fault(p, c, d, k);
		if (action != FP_ACT_NONE) {
			b = k * p->o.unit_bytes + half; /* the rest of this read is dropped */
			dr->fault_queued = true;
			break;
		}
	}
	dr->in = b;
	p->bytes[d] += b - a;
	fp_push_seg(dr, (uint32_t)(b - a), action, now + fp_delay_ns(p, c, d, a));
	return 1;
}

static int fp_act(fp_proxy *p, fp_conn *c, int action)
{
	if (action == FP_ACT_RESET) {
		p->resets++;
		fp_close_conn(p, c, true);
	} else {
		p->cuts++;
		shutdown(c->fd[0], SHUT_WR);
		fp_close_conn(p, c, false);
	}
	return -1;
}

/* Writes due bytes of direction d. Returns 1 on progress, 0 when nothing
 * more can go now, -1 when the connection was closed. */
static int fp_write_once(fp_proxy *p, fp_conn *c, int d, uint64_t now)
{
	fp_dir *dr = &c->dir[d];
	int dst = d == FP_C2S ? 1 : 0;
	if (dr->seg_head == dr->seg_tail || !c->connected)
		return 0;
	fp_seg *sg = &dr->segs[dr->seg_head % FP_SEGS_MAX];
	if (sg->release_ns > now || dr->bw_next_ns > now || fp_stall_left(p, now))
		return 0;
	if (dr->head_sent == sg->len) { /* segment done: its fault, then the next */
		int action = sg->action;
		dr->seg_head++;
		dr->head_sent = 0;
		return action != FP_ACT_NONE ? fp_act(p, c, action) : 1;
	}
	if (!c->writable[dst])
		return 0;
	uint32_t at = (uint32_t)(dr->out % FP_RING_BYTES);
	size_t n = RF_MIN((size_t)(sg->len - dr->head_sent), (size_t)(FP_RING_BYTES - at));
	n = RF_MIN(n, (size_t)FP_IO_BYTES);
	uint64_t bw = p->o.bandwidth_bytes_per_s;
	if (bw)
		n = RF_MIN(n, (size_t)RF_MAX(bw / 100, 1024u)); /* ~10 ms of pacing at a time */
	ssize_t w = send(c->fd[dst], dr->ring + at, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
		c->writable[dst] = false;
		return 0;
	}
	if (w < 0) {
		fp_close_conn(p, c, true);
		return -1;
	}
	dr->out += (uint64_t)w;
	dr->head_sent += (uint32_t)w;
	if (bw)
		/* A late wake-up may catch up on at most FP_BURST_NS of lost time. */
		dr->bw_next_ns = RF_MAX(dr->bw_next_ns, now - RF_MIN(now, FP_BURST_NS)) +
		                 (uint64_t)w * 1000000000ull / bw;
	return 1;
}

/* Forwards a finished direction's end of stream; closes the connection when
 * both directions are done. Returns -1 when closed. */
static int fp_finish_dirs(fp_proxy *p, fp_conn *c)
{
	for (int d = 0; d < 2; d++) {
		fp_dir *dr = &c->dir[d];
		if (dr->eof && !dr->shut && dr->seg_head == dr->seg_tail && c->connected) {
			shutdown(c->fd[d == FP_C2S ? 1 : 0], SHUT_WR);
			dr->shut = true;
		}
	}
	if (c->dir[0].shut && c->dir[1].shut) {
		fp_close_conn(p, c, false);
		return -1;
	}
	return 0;
}

/* Moves what can move now. Returns true when more work is ready at once. */
static bool fp_pump(fp_proxy *p, fp_conn *c, uint64_t now)
{
	for (int round = 0; round < FP_PUMP_ROUNDS; round++) {
		int progress = 0;
		for (int d = 0; d < 2; d++) {
			int rc = 0;
			if (c->readable[d] && fp_dir_can_read(&c->dir[d]))
				rc = fp_read_once(p, c, d, now);
			if (rc < 0)
				return false;
			progress |= rc;
			rc = fp_write_once(p, c, d, now);
			if (rc < 0)
				return false;
			progress |= rc;
		}
		if (fp_finish_dirs(p, c) < 0)
			return false;
		if (!progress)
			return false;
	}
	return true;
}

/* When direction d next has something to do (UINT64_MAX: nothing timed). */
static uint64_t fp_next_due(const fp_proxy *p, const fp_conn *c, int d, uint64_t now)
{
	const fp_dir *dr = &c->dir[d];
	if (dr->seg_head == dr->seg_tail || !c->connected)
		return UINT64_MAX;
	const fp_seg *sg = &dr->segs[dr->seg_head % FP_SEGS_MAX];
	if (dr->head_sent < sg->len && !c->writable[d == FP_C2S ? 1 : 0])
		return UINT64_MAX; /* waits for EPOLLOUT, not for time */
	uint64_t t = RF_MAX(sg->release_ns, dr->bw_next_ns);
	uint64_t stall = fp_stall_left(p, RF_MAX(t, now));
	return RF_MAX(t, now) + stall;
}

/* ---- accepting and the loop --------------------------------------------- */

static int fp_watch(fp_proxy *p, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.u64 = tag};
	return epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &ev);
}

static int fp_connect_upstream(fp_proxy *p, fp_conn *c, uint32_t slot)
{
	c->fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd[1] < 0)
		return -errno;
	int one = 1;
	setsockopt(c->fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd[1], (struct sockaddr *)&p->o.to, sizeof(p->o.to)) < 0 &&
	    errno != EINPROGRESS)
		return -errno;
	uint32_t ev = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
	uint64_t tag = c->id << FP_TAG_ID_SHIFT | (uint64_t)slot << 1;
	if (fp_watch(p, c->fd[0], tag, ev) < 0 || fp_watch(p, c->fd[1], tag | 1, ev) < 0)
		return -errno;
	return 0;
}

static void fp_accept(fp_proxy *p)
{
	while (p->live < p->o.conns_max) {
		int fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or a client gone before we got to it */
		uint32_t slot = 0;
		while (p->conns[slot].used)
			slot++;
		fp_conn *c = &p->conns[slot];
		memset(c, 0, sizeof(*c));
		c->used = true;
		c->id = p->next_id++ & ((1ull << 52) - 1);
		c->fd[0] = fd;
		c->fd[1] = -1;
		p->live++;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->dir[0].ring = malloc(FP_RING_BYTES);
		c->dir[1].ring = malloc(FP_RING_BYTES);
		int rc =
		    c->dir[0].ring && c->dir[1].ring ? fp_connect_upstream(p, c, slot) : -ENOMEM;
		if (rc < 0) {
			fprintf(stderr, "rf-faultproxy: connection %llu: upstream: %s\n",
			        (unsigned long long)c->id, strerror(-rc));
			p->refused++;
			fp_close_conn(p, c, true);
		}
	}
	/* Full: stop watching the listener until a slot frees (bounded). */
	struct epoll_event ev = {.events = 0, .data.u64 = FP_TAG_LISTEN};
	epoll_ctl(p->ep, EPOLL_CTL_MOD, p->lfd, &ev);
	p->listening = false;
}

static void fp_on_event(fp_proxy *p, const struct epoll_event *ev)
{
	if (ev->data.u64 == FP_TAG_LISTEN) {
		fp_accept(p);
		return;
	}
	if (ev->data.u64 == FP_TAG_SIGNAL) {
		p->stop = true;
		return;
	}
	uint64_t tag = ev->data.u64;
	fp_conn *c = &p->conns[(tag & FP_TAG_SLOT_MASK) >> 1];
	int side = (int)(tag & 1);
	if (!c->used || c->id != tag >> FP_TAG_ID_SHIFT)
		return; /* stale: that connection closed earlier in this batch */
	if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
		c->readable[side] = true;
	if (ev->events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		c->writable[side] = true;
	if (side == 1 && !c->connected && (ev->events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &soerr, &len);
		if (soerr) {
			fprintf(stderr, "rf-faultproxy: connection %llu: upstream: %s\n",
			        (unsigned long long)c->id, strerror(soerr));
			p->refused++;
			fp_close_conn(p, c, true);
			return;
		}
		c->connected = true;
	}
}

/* One turn: pump every connection; returns the epoll timeout in ms. */
static int fp_turn(fp_proxy *p)
{
	uint64_t now = rf_now_ns(), due = UINT64_MAX;
	bool hot = false;
	for (uint32_t i = 0; i < p->o.conns_max; i++) {
		fp_conn *c = &p->conns[i];
		if (!c->used)
			continue;
		hot |= fp_pump(p, c, now);
		if (!c->used)
			continue;
		for (int d = 0; d < 2; d++)
			due = RF_MIN(due, fp_next_due(p, c, d, now));
	}
	if (!p->listening && p->live < p->o.conns_max) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = FP_TAG_LISTEN};
		epoll_ctl(p->ep, EPOLL_CTL_MOD, p->lfd, &ev);
		p->listening = true;
	}
	if (hot)
		return 0;
	if (due == UINT64_MAX)
		return 1000;
	uint64_t wait = due > now ? due - now : 0;
	return (int)RF_MIN((wait + 999999) / 1000000, 1000u);
}

static int fp_setup(fp_proxy *p)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	p->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	p->ep = epoll_create1(EPOLL_CLOEXEC);
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	p->conns = calloc(p->o.conns_max, sizeof(*p->conns));
	if (p->sigfd < 0 || p->ep < 0 || p->lfd < 0 || !p->conns)
		return -errno;
	int one = 1;
	setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(p->lfd, (struct sockaddr *)&p->o.listen, sizeof(p->o.listen)) < 0 ||
	    listen(p->lfd, 128) < 0)
		return -errno;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	getsockname(p->lfd, (struct sockaddr *)&sa, &len);
	if (fp_watch(p, p->lfd, FP_TAG_LISTEN, EPOLLIN) < 0 ||
	    fp_watch(p, p->sigfd, FP_TAG_SIGNAL, EPOLLIN) < 0)
		return -errno;
	p->listening = true;
	char host[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	printf("listening %s:%u\n", host, ntohs(sa.sin_port));
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	fp_proxy p = {.ep = -1, .lfd = -1, .sigfd = -1};
	if (fp_parse_args(argc, argv, &p.o) < 0)
		return 2;
	if (p.o.reset_p12 + p.o.cut_p12 > RF_INJECT_PROB_ONE) {
		fprintf(stderr, "rf-faultproxy: --reset + --cut add up to more than 1\n");
		return 2;
	}
	int rc = fp_setup(&p);
	if (rc < 0) {
		fprintf(stderr, "rf-faultproxy: cannot listen: %s\n", strerror(-rc));
		return 1;
	}
	p.start_ns = rf_now_ns();
	struct epoll_event evs[64];
	while (!p.stop) {
		int n = epoll_wait(p.ep, evs, (int)RF_ARRAY_LEN(evs), fp_turn(&p));
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "rf-faultproxy: epoll_wait: %s\n", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++)
			fp_on_event(&p, &evs[i]);
	}
	for (uint32_t i = 0; i < p.o.conns_max; i++)
		if (p.conns[i].used)
			fp_close_conn(&p, &p.conns[i], false);
	if (!p.o.quiet)
		fprintf(stderr,
		        "rf-faultproxy: %llu connections, %llu bytes client->server, %llu bytes "
		        "server->client, %llu resets, %llu cuts, %llu upstream failures\n",
		        (unsigned long long)p.next_id, (unsigned long long)p.bytes[FP_C2S],
		        (unsigned long long)p.bytes[FP_S2C], (unsigned long long)p.resets,
		        (unsigned long long)p.cuts, (unsigned long long)p.refused);
	free(p.conns);
	close(p.lfd);
	close(p.ep);
	close(p.sigfd);
	return 0;
}
