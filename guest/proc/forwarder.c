/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The forwarder: one listening socket, and per connection two sockets and two pipes.
 * Each direction is a socket -> pipe -> socket splice. Both sockets of a connection are
 * registered edge-triggered; any event pumps both directions until neither makes progress,
 * so a direction stopped by a full pipe is resumed by the event that drains it. The listener
 * is level-triggered so that pausing it (the cap) and resuming it never loses an arrival.
 */
#include "forwarder.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Bytes asked of one splice(); the pipe's capacity limits what really moves. */
#define FWD_SPLICE_LEN (1u << 20)
/* Descriptors a connection holds, and those kept aside for everything else. */
#define FWD_FDS_PER_CONN 6u
#define FWD_FDS_RESERVED 32u
#define FWD_END_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)
/* Rounds one event may pump before the connection yields (a pipe, 64 KiB, each way a round). */
#define FWD_PUMP_ROUNDS 4u
/* How often idle connections are looked for, at most. */
#define FWD_TICK_MAX_MS 1000u

struct fwd_conn;

/* One socket of a connection, and the pipe holding what was read from it. */
struct fwd_end {
	struct ev_handler h;
	struct fwd_conn *conn;
	int fd;
	int pipe_rd;
	int pipe_wr;
	size_t pending; /* bytes in the pipe, not yet written to the other end */
	bool eof;       /* fd reached end-of-file */
	bool done;      /* eof carried across: the other end was shut down for writing */
};

/* Where a client comes from: its IPv4 address, or the /64 of its IPv6 address. */
struct fwd_source {
	uint8_t bytes[8];
	uint8_t len;
};

struct fwd_conn {
	struct forwarder *fw;
	struct fwd_conn *prev;
	struct fwd_conn *next;
	struct fwd_end end[2]; /* [0] the client, [1] the target */
	struct fwd_source source;
	uint64_t active_ms; /* when a byte last moved (or the connection arrived) */
	bool connected;
	bool dead;
};

struct forwarder {
	struct ev_handler h;
	int epfd;
	int listen_fd;
	int reserve_fd; /* given up for a moment to accept-and-drop when out of descriptors */
	bool paused;
	struct sockaddr_storage target;
	socklen_t target_len;
	uint16_t listen_port;
	unsigned max_conns;
	unsigned n_conns;
	struct fwd_conn *conns;
	struct fwd_conn *dead;
	struct ev_handler tick_h;
	int tick_fd; /* timerfd: looks for idle connections while there are any */
	bool ticking;
	unsigned idle_ms;  /* a connection idle this long is closed */
	unsigned evict_ms; /* at a cap, a connection idle this long makes room */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int addr_parse(const char *addr, uint16_t port, struct sockaddr_storage *ret,
                      socklen_t *ret_len)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(addr);

	memset(ret, 0, sizeof(*ret));
	if (n >= 2 && n < sizeof(buf) && addr[0] == '[' && addr[n - 1] == ']') {
		memcpy(buf, addr + 1, n - 2);
		buf[n - 2] = '\0';
		addr = buf;
	}
	struct sockaddr_in *in4 = (struct sockaddr_in *)ret;
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		*ret_len = sizeof(*in4);
		return 0;
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ret;
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*ret_len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

static void addr_set_port(struct sockaddr_storage *sa, uint16_t port)
{
	if (sa->ss_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

static uint16_t addr_port(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
}

/* The cap: the configured maximum, lowered to what the descriptor limit leaves room for. */
static unsigned conn_cap(const struct forwarder *fw)
{
	struct rlimit rl;
	unsigned cap = fw->max_conns;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		rlim_t room = rl.rlim_cur > FWD_FDS_RESERVED ? rl.rlim_cur - FWD_FDS_RESERVED : 0;
		if (room / FWD_FDS_PER_CONN < cap)
			cap = (unsigned)(room / FWD_FDS_PER_CONN);
	}
	return cap ? cap : 1;
}

/* What one source may hold: the cap less a quarter kept for everyone else. */
static unsigned source_cap(unsigned cap)
{
	return cap >= 4 ? cap - cap / 4 : cap;
}

static void source_of(const struct sockaddr_storage *sa, struct fwd_source *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (sa->ss_family == AF_INET) {
		memcpy(ret->bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		ret->len = 4;
		return;
	}
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (IN6_IS_ADDR_V4MAPPED(a6)) {
		memcpy(ret->bytes, a6->s6_addr + 12, 4);
		ret->len = 4;
		return;
	}
	memcpy(ret->bytes, a6->s6_addr, 8);
	ret->len = 8;
}

static bool source_eq(const struct fwd_source *a, const struct fwd_source *b)
{
	return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

static void tick_set(struct forwarder *fw, bool on)
{
	unsigned ms = fw->idle_ms / 2 < FWD_TICK_MAX_MS ? fw->idle_ms / 2 : FWD_TICK_MAX_MS;
	struct itimerspec its = {0};

	if (fw->tick_fd < 0 || fw->ticking == on)
		return;
	if (on) {
		ms = ms ? ms : 1;
		its.it_interval.tv_sec = ms / 1000;
		its.it_interval.tv_nsec = (long)(ms % 1000) * 1000000L;
		its.it_value = its.it_interval;
	}
	if (timerfd_settime(fw->tick_fd, 0, &its, NULL) == 0)
		fw->ticking = on;
}

static void listener_set(struct forwarder *fw, bool paused)
{
	struct epoll_event ev = {.events = paused ? 0 : EPOLLIN, .data.ptr = &fw->h};

	if (fw->paused == paused)
		return;
	if (epoll_ctl(fw->epfd, EPOLL_CTL_MOD, fw->listen_fd, &ev) == 0)
		fw->paused = paused;
}

/* Close a socket so that the peer sees a reset rather than an orderly end. */
static void close_reset(int fd)
{
	static const struct linger lg = {.l_onoff = 1, .l_linger = 0};

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static void end_close(struct forwarder *fw, struct fwd_end *e, bool reset)
{
	if (e->fd >= 0) {
		/* Unhook explicitly: a forked child may still share the description. */
		(void)epoll_ctl(fw->epfd, EPOLL_CTL_DEL, e->fd, NULL);
		if (reset)
			close_reset(e->fd);
		else
			close(e->fd);
		e->fd = -1;
	}
	if (e->pipe_rd >= 0)
		close(e->pipe_rd);
	if (e->pipe_wr >= 0)
		close(e->pipe_wr);
	e->pipe_rd = e->pipe_wr = -1;
}

/*
 * Close a connection: orderly when both directions are done, else with a reset on both
 * sides. The memory waits in the dead list until forwarder_reap(): other events of the
 * current batch may still point at it.
 */
static void conn_close(struct fwd_conn *c, bool reset)
{
	struct forwarder *fw = c->fw;

	if (c->dead)
		return;
	c->dead = true;
	end_close(fw, &c->end[0], reset);
	end_close(fw, &c->end[1], reset);
	if (c->prev)
		c->prev->next = c->next;
	else
		fw->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = NULL;
	c->next = fw->dead;
	fw->dead = c;
	fw->n_conns--;
	if (fw->paused && fw->n_conns < conn_cap(fw))
		listener_set(fw, false);
	if (fw->n_conns == 0)
		tick_set(fw, false);
}

/*
 * The connection idle the longest (of one source, when source is set), if it has been idle
 * at least min_idle_ms; NULL otherwise.
 */
static struct fwd_conn *conn_idlest(struct forwarder *fw, const struct fwd_source *source,
                                    uint64_t now, unsigned min_idle_ms)
{
	struct fwd_conn *best = NULL;

	for (struct fwd_conn *c = fw->conns; c; c = c->next)
		if ((!source || source_eq(&c->source, source)) &&
		    (!best || c->active_ms < best->active_ms))
			best = c;
	return best && now - best->active_ms >= min_idle_ms ? best : NULL;
}

static void tick_event(struct ev_handler *h, uint32_t events)
{
	struct forwarder *fw = container_of(h, struct forwarder, tick_h);
	uint64_t expirations, now = now_ms();
	struct fwd_conn *c, *next;

	(void)!read(fw->tick_fd, &expirations, sizeof(expirations));
	for (c = fw->conns; c; c = next) {
		next = c->next;
		if (now - c->active_ms >= fw->idle_ms) {
			log_debug("forward: closing a connection idle for %u ms", fw->idle_ms);
			conn_close(c, true);
		}
	}
}

/*
 * Move what can move in the direction a -> b. Returns 1 on progress, 0 when blocked,
 * a negative errno on a socket error.
 */
static int direction_pump(struct fwd_end *a, struct fwd_end *b)
{
	const unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
	int progress = 0;
	ssize_t n;

	if (a->done)
		return 0;
	/* Fill the pipe until the socket is empty or the pipe is full (both EAGAIN). */
	while (!a->eof) {
		n = splice(a->fd, NULL, a->pipe_wr, NULL, FWD_SPLICE_LEN, flags);
		if (n > 0) {
			a->pending += (size_t)n;
			progress = 1;
		} else if (n == 0) {
			a->eof = true;
			progress = 1;
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN) {
			break;
		} else {
			return -errno;
		}
	}
	/* Drain it until it is empty or the other socket is full. */
	while (a->pending > 0) {
		n = splice(a->pipe_rd, NULL, b->fd, NULL, a->pending, flags);
		if (n > 0) {
			a->pending -= (size_t)n;
			progress = 1;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			break;
		} else {
			return n < 0 ? -errno : -EPIPE;
		}
	}
	if (a->eof && a->pending == 0) {
		if (shutdown(b->fd, SHUT_WR) < 0 && errno != ENOTCONN)
			return -errno;
		a->done = true;
		progress = 1;
	}
	return progress;
}

/* Hand both sockets back to epoll as if new: queued again at once when still ready. */
static void conn_rearm(struct fwd_conn *c)
{
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = {.events = FWD_END_EVENTS, .data.ptr = &c->end[i].h};
		if (epoll_ctl(c->fw->epfd, EPOLL_CTL_MOD, c->end[i].fd, &ev) < 0) {
			conn_close(c, true);
			return;
		}
	}
}

/*
 * Move bytes both ways until neither direction can (edge-triggered: every socket must have
 * reached EAGAIN before we wait again), or until the round budget is spent: then the sockets
 * are re-armed, so a busy connection yields to the rest of the loop and is served again on
 * the next pass.
 */
static void serve_conn_pump(struct fwd_conn *c)
{
	for (unsigned round = 0;; round++) {
		int r0 = direction_pump(&c->end[0], &c->end[1]);
		int r1 = r0 < 0 ? 0 : direction_pump(&c->end[1], &c->end[0]);

		if (r0 < 0 || r1 < 0) {
			log_debug("forward: connection aborted: %s", strerror(r0 < 0 ? -r0 : -r1));
			conn_close(c, true);
			return;
		}
		if (r0 == 0 && r1 == 0)
			break;
		c->active_ms = now_ms();
		if (round + 1 == FWD_PUMP_ROUNDS && !(c->end[0].done && c->end[1].done)) {
			conn_rearm(c);
			return;
		}
	}
	if (c->end[0].done && c->end[1].done)
		conn_close(c, false);
}

static void end_event(struct ev_handler *h, uint32_t events)
{
	struct fwd_end *e = container_of(h, struct fwd_end, h);
	struct fwd_conn *c = e->conn;

	if (c->dead)
		return;
	if (!c->connected) {
		if (e == &c->end[0]) {
			/* The client went away while the target was still connecting. */
			if (events & (EPOLLERR | EPOLLHUP))
				conn_close(c, true);
			return;
		}
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		if (getsockopt(e->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr) {
			log_debug("forward: cannot connect to the target: %s", strerror(soerr));
			conn_close(c, true);
			return;
		}
		if (!(events & EPOLLOUT))
			return;
		c->connected = true;
	}
	serve_conn_pump(c);
}

static int end_init(struct fwd_conn *c, struct fwd_end *e, int fd)
{
	int p[2];

	e->h.fn = end_event;
	e->conn = c;
	e->fd = fd;
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	e->pipe_rd = p[0];
	e->pipe_wr = p[1];
	return 0;
}

static int end_register(struct forwarder *fw, struct fwd_end *e)
{
	struct epoll_event ev = {.events = FWD_END_EVENTS, .data.ptr = &e->h};

	return epoll_ctl(fw->epfd, EPOLL_CTL_ADD, e->fd, &ev) < 0 ? -errno : 0;
}

/* Take an accepted client: connect to the target and hook both sockets up. */
static int conn_start(struct forwarder *fw, int cfd, const struct fwd_source *source)
{
	struct fwd_conn *c = calloc(1, sizeof(*c));
	int tfd, r;

	if (!c) {
		close_reset(cfd);
		return -ENOMEM;
	}
	c->fw = fw;
	c->source = *source;
	c->active_ms = now_ms();
	tick_set(fw, true);
	c->end[0].fd = c->end[1].fd = -1;
	c->end[0].pipe_rd = c->end[0].pipe_wr = c->end[1].pipe_rd = c->end[1].pipe_wr = -1;
	c->next = fw->conns;
	if (fw->conns)
		fw->conns->prev = c;
	fw->conns = c;
	fw->n_conns++;

	r = end_init(c, &c->end[0], cfd);
	if (r < 0)
		goto fail;
	tfd = socket(fw->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (tfd < 0) {
		r = -errno;
		goto fail;
	}
	r = end_init(c, &c->end[1], tfd);
	if (r < 0)
		goto fail;
	if (connect(tfd, (struct sockaddr *)&fw->target, fw->target_len) == 0) {
		c->connected = true;
	} else if (errno != EINPROGRESS) {
		log_debug("forward: cannot connect to the target: %m");
		r = -errno;
		goto fail;
	}
	r = end_register(fw, &c->end[0]);
	if (r == 0)
		r = end_register(fw, &c->end[1]);
	if (r < 0)
		goto fail;
	if (c->connected)
		serve_conn_pump(c);
	return 0;
fail:
	conn_close(c, true);
	return r;
}

/* Out of descriptors with no connection to wait for: accept one arrival and reset it. */
static void listener_drop_one(struct forwarder *fw)
{
	int fd;

	if (fw->reserve_fd < 0)
		return;
	close(fw->reserve_fd);
	fd = accept4(fw->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close_reset(fd);
	fw->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* How many connections source holds. */
static unsigned source_count(const struct forwarder *fw, const struct fwd_source *source)
{
	unsigned n = 0;

	for (const struct fwd_conn *c = fw->conns; c; c = c->next)
		n += source_eq(&c->source, source);
	return n;
}

/*
 * The caps, in order: at the total cap the connection idle the longest makes room if it has
 * been idle evict_ms, else the listener pauses (the backlog holds arrivals); a source at its
 * own cap (a quarter of the total kept for others) gives up its idlest connection the same
 * way, else the new one is reset.
 */
static void listener_event(struct ev_handler *h, uint32_t events)
{
	struct forwarder *fw = container_of(h, struct forwarder, h);
	unsigned cap = conn_cap(fw);

	for (;;) {
		struct sockaddr_storage peer;
		socklen_t peer_len = sizeof(peer);
		struct fwd_source source;
		struct fwd_conn *victim;
		int fd, r;

		if (fw->n_conns >= cap) {
			victim = conn_idlest(fw, NULL, now_ms(), fw->evict_ms);
			if (!victim) {
				listener_set(fw, true);
				return;
			}
			log_debug("forward: at the cap of %u connections: closing the idlest", cap);
			conn_close(victim, true);
		}
		fd = accept4(fw->listen_fd, (struct sockaddr *)&peer, &peer_len,
		             SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			switch (errno) {
			case EAGAIN:
				return;
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				log_debug("forward: cannot accept: %m");
				if (fw->n_conns > 0)
					listener_set(fw, true);
				else
					listener_drop_one(fw);
				return;
			default:
				/* The arrival failed (ECONNABORTED, network errors): take the next.
				 */
				continue;
			}
		}
		source_of(&peer, &source);
		if (source_count(fw, &source) >= source_cap(cap)) {
			victim = conn_idlest(fw, &source, now_ms(), fw->evict_ms);
			if (!victim) {
				log_debug("forward: one client holds %u connections: refusing more",
				          source_cap(cap));
				close_reset(fd);
				continue;
			}
			conn_close(victim, true);
		}
		r = conn_start(fw, fd, &source);
		if ((r == -EMFILE || r == -ENFILE || r == -ENOMEM) && fw->n_conns > 0) {
			listener_set(fw, true);
			return;
		}
	}
}

int forwarder_new(int epfd, const char *listen_addr, uint16_t listen_port, const char *target_addr,
                  uint16_t target_port, struct forwarder **ret, struct err *err)
{
	struct sockaddr_storage la;
	socklen_t la_len;
	struct forwarder *fw;
	int one = 1;

	if (addr_parse(listen_addr, listen_port, &la, &la_len) < 0)
		return err_set(err, ERR_REFUSED, EINVAL, "forwarder: %s is not an IP address",
		               listen_addr);
	fw = calloc(1, sizeof(*fw));
	if (!fw)
		return err_oom(err);
	fw->h.fn = listener_event;
	fw->epfd = epfd;
	fw->listen_fd = -1;
	fw->reserve_fd = -1;
	fw->tick_fd = -1;
	fw->tick_h.fn = tick_event;
	fw->max_conns = FORWARD_MAX_CONNECTIONS;
	fw->idle_ms = FORWARD_IDLE_MS;
	fw->evict_ms = FORWARD_EVICT_IDLE_MS;
	if (addr_parse(target_addr, target_port, &fw->target, &fw->target_len) < 0) {
		free(fw);
		return err_set(err, ERR_REFUSED, EINVAL, "forwarder: %s is not an IP address",
		               target_addr);
	}
	fw->listen_fd = socket(la.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fw->listen_fd < 0) {
		err_errno(err, "forwarder: cannot create a socket");
		goto fail;
	}
	(void)setsockopt(fw->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fw->listen_fd, (struct sockaddr *)&la, la_len) < 0) {
		if (errno == EADDRINUSE)
			err_set(err, ERR_FAILED, EADDRINUSE,
			        "cannot listen on %s:%u: port %u is in use", listen_addr,
			        listen_port, listen_port);
		else
			err_errno(err, "cannot listen on %s:%u", listen_addr, listen_port);
		goto fail;
	}
	if (listen(fw->listen_fd, SOMAXCONN) < 0) {
		err_errno(err, "cannot listen on %s:%u", listen_addr, listen_port);
		goto fail;
	}
	la_len = sizeof(la);
	if (getsockname(fw->listen_fd, (struct sockaddr *)&la, &la_len) == 0)
		fw->listen_port = addr_port(&la);
	fw->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &fw->h};
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fw->listen_fd, &ev) < 0) {
		err_errno(err, "forwarder: cannot watch the listening socket");
		goto fail;
	}
	fw->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &fw->tick_h};
	if (fw->tick_fd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, fw->tick_fd, &tev) < 0) {
		err_errno(err, "forwarder: cannot set up the idle timer");
		goto fail;
	}
	*ret = fw;
	return 0;
fail:
	forwarder_free(fw);
	return err_ret(err);
}

void forwarder_set_target(struct forwarder *fw, uint16_t target_port)
{
	addr_set_port(&fw->target, target_port);
}

uint16_t forwarder_target_port(const struct forwarder *fw)
{
	return addr_port(&fw->target);
}

uint16_t forwarder_listen_port(const struct forwarder *fw)
{
	return fw->listen_port;
}

void forwarder_set_max_connections(struct forwarder *fw, unsigned max)
{
	if (max == 0 || max > FORWARD_MAX_CONNECTIONS)
		max = FORWARD_MAX_CONNECTIONS;
	fw->max_conns = max;
	if (fw->paused && fw->n_conns < conn_cap(fw))
		listener_set(fw, false);
}

void forwarder_set_idle(struct forwarder *fw, unsigned idle_ms, unsigned evict_ms)
{
	bool was = fw->ticking;

	fw->idle_ms = idle_ms ? idle_ms : FORWARD_IDLE_MS;
	fw->evict_ms = evict_ms;
	/* Re-arm at the new period. */
	tick_set(fw, false);
	if (was)
		tick_set(fw, true);
}

unsigned forwarder_connections(const struct forwarder *fw)
{
	return fw->n_conns;
}

void forwarder_reap(struct forwarder *fw)
{
	while (fw->dead) {
		struct fwd_conn *c = fw->dead;
		fw->dead = c->next;
		free(c);
	}
}

void forwarder_free(struct forwarder *fw)
{
	if (!fw)
		return;
	while (fw->conns)
		conn_close(fw->conns, true);
	forwarder_reap(fw);
	if (fw->listen_fd >= 0) {
		(void)epoll_ctl(fw->epfd, EPOLL_CTL_DEL, fw->listen_fd, NULL);
		close(fw->listen_fd);
	}
	if (fw->reserve_fd >= 0)
		close(fw->reserve_fd);
	if (fw->tick_fd >= 0) {
		(void)epoll_ctl(fw->epfd, EPOLL_CTL_DEL, fw->tick_fd, NULL);
		close(fw->tick_fd);
	}
	free(fw);
}
