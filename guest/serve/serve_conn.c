/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One connection: the guest's side of the handshake, driven by the loop without ever waiting
 * (a peer that trickles bytes holds up nobody, and is dropped at its deadline), then the
 * session: messages dispatched by stream (docs/protocol.md "Streams"), replies, and the
 * operations' pumps.
 */
#include "serve_conn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "serve_ops.h"
#include "serve_stream.h"

void serve_conn_free(struct conn *c)
{
	if (!c)
		return;
	while (c->streams) {
		struct stream *st = c->streams;
		c->streams = st->next;
		serve_stream_free(st);
	}
	channel_free(c->ch);
	handshake_free(c->hs);
	if (c->owns_io)
		frame_io_free(c->io);
	if (c->owns_fds) {
		if (c->wfd != c->fd && c->wfd >= 0)
			close(c->wfd);
		if (c->fd >= 0)
			close(c->fd);
	}
	free(c);
}

/* A socket or a pipe: its bytes are one peer's, from its start. */
static bool fd_is_stream_of_one(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode));
}

static void error_on(struct conn *c, uint32_t stream, int code, const char *fmt, ...)
    _printf_(4, 5);
static void error_on(struct conn *c, uint32_t stream, int code, const char *fmt, ...)
{
	struct stream st = {.id = stream};
	struct err e;
	va_list ap;

	va_start(ap, fmt);
	err_vset(&e, ERR_REFUSED, code, fmt, ap);
	va_end(ap);
	serve_stream_error(c, &st, &e);
}

/* ---- the handshake ---- */

static void hello_send(struct conn *c)
{
	json_object *o = json_object_new_object();
	json_object *caps = json_object_new_array();
	static const char *const names[] = {"secrets", "tree.push", "boot",         "status",
	                                    "logs",    "stop",      "runtime.read", "checkout",
	                                    "publish", "verify",    "session"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		json_object_array_add(caps, json_object_new_string(names[i]));
	json_object_object_add(o, "agent", json_object_new_string("sandbox-agent"));
	json_object_object_add(o, "version", json_object_new_string(SA_VERSION));
	json_object_object_add(o, "capabilities", caps);
	json_object_object_add(o, "max_payload", json_object_new_int(FRAME_PLAINTEXT_MAX));
	json_object_object_add(o, "instance", json_object_new_string(c->srv->instance));
	/* "running": the guest's daemon; "one-shot": one for this session alone. */
	json_object_object_add(
	    o, "daemon", json_object_new_string(c->srv->cfg->one_shot ? "one-shot" : "running"));
	serve_stream_send(c, MSG_HELLO, 0, 0, o, NULL, 0);
}

/* Lines a peer can cause by connecting: each kind at most LOG_RATELIMIT_BURST per window. */
static struct log_ratelimit rl_refused, rl_failed, rl_dropped;

static void hs_fail(struct conn *c, const struct err *e)
{
	const uint8_t *peer = c->hs ? handshake_peer_key(c->hs) : NULL;
	unsigned n = 0;

	if (peer) {
		keys_fingerprint(peer, c->fingerprint);
		if (log_ratelimit_pass(&rl_refused, &n))
			log_notice("connection %" PRIu64 " (%s): host key %s refused: %s%s%u%s",
			           c->id, c->peer, c->fingerprint, e->msg, n ? " (" : "", n,
			           n ? " more refusals not logged)" : "");
	} else if (c->listener && c->listener->kind == LISTEN_SERIAL && e->code == ECONNRESET) {
		/* The port's host side is not connected: it is read again every 250 ms. */
		log_debug("connection %" PRIu64 " (%s): %s", c->id, c->peer, e->msg);
	} else if (log_ratelimit_pass(&rl_failed, &n)) {
		log_info("connection %" PRIu64 " (%s): handshake failed: %s%s%u%s", c->id, c->peer,
		         e->msg, n ? " (" : "", n, n ? " more failed handshakes not logged)" : "");
	}
	c->state = CONN_DEAD;
}

/* Close a connection at once (its memory goes at the loop's next sweep). */
static void conn_drop(struct conn *c)
{
	handshake_free(c->hs);
	c->hs = NULL;
	if (c->owns_fds) {
		if (c->wfd != c->fd && c->wfd >= 0)
			close(c->wfd);
		if (c->fd >= 0)
			close(c->fd);
		c->fd = c->wfd = -1;
	}
	c->state = CONN_DEAD;
}

/* All connections at once: SERVE_CONNS_MAX, or what the descriptor limit leaves. */
static size_t conn_cap(const struct serve *srv)
{
	size_t cap = SERVE_CONNS_MAX, jobs = 0;
	struct rlimit rl;

	for (const struct job *j = srv->jobs; j; j = j->next)
		jobs++;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		rlim_t used = SERVE_FDS_RESERVED + jobs + srv->n_listeners;
		rlim_t room = rl.rlim_cur > used ? rl.rlim_cur - used : 1;
		if (room < cap)
			cap = (size_t)room;
	}
	return cap ? cap : 1;
}

static int hs_begin(struct conn *c)
{
	struct serve *srv = c->srv;
	struct hs_config cfg = {
	    .role = HS_GUEST,
	    .identity = srv->key,
	    .authorized = srv->authkeys,
	};
	struct err err;

	/* Every connection sees the keys as they are now: added and revoked ones alike. */
	if (authkeys_has_sources(srv->authkeys) && authkeys_reload(srv->authkeys, &err) < 0) {
		err_wrap(&err, "cannot read the authorized keys, refusing every host");
		hs_fail(c, &err);
		return -1;
	}
	if (handshake_new(&cfg, &c->hs, &err) < 0) {
		hs_fail(c, &err);
		return -1;
	}
	channel_handshake_prepare(c->io);
	c->hs_deadline = frame_io_deadline(srv->cfg->handshake_timeout_ms);
	return 0;
}

static void hs_done(struct conn *c)
{
	const struct authkey *ak;

	handshake_free(c->hs);
	c->hs = NULL;
	c->state = CONN_SESSION;
	snprintf(c->fingerprint, sizeof(c->fingerprint), "%s", channel_peer_fingerprint(c->ch));
	ak = authkeys_find(c->srv->authkeys, channel_peer_key(c->ch));
	log_info("connection %" PRIu64 " (%s): host key %s%s%s%s accepted, session %s (%s)", c->id,
	         c->peer, c->fingerprint, ak && ak->comment && ak->comment[0] ? " (" : "",
	         ak && ak->comment ? ak->comment : "",
	         ak && ak->comment && ak->comment[0] ? ")" : "", channel_session_name(c->ch),
	         channel_cipher_name(c->ch));
	hello_send(c);
}

/* What the peer sent so far, through the channel's one handshake driver, never waiting. */
static void hs_step(struct conn *c)
{
	struct err err;
	int r = channel_handshake_pump(c->io, c->hs, frame_io_deadline(0), c->hs_deadline, NULL,
	                               &c->ch, &err);

	if (r == 1)
		hs_done(c);
	else if (r < 0 && r != -ETIMEDOUT)
		hs_fail(c, &err);
}

struct conn *serve_conn_new(struct serve *srv, int fd, int wfd, bool owns_fds, const char *peer,
                            struct listener *l, struct frame_io *io)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct err err;

	if (!c) {
		log_err("out of memory for a connection from %s", peer);
		if (owns_fds)
			close(fd);
		return NULL;
	}
	c->srv = srv;
	c->id = ++srv->next_conn_id;
	c->fd = fd;
	c->wfd = wfd;
	c->owns_fds = owns_fds;
	c->listener = l;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->state = CONN_HANDSHAKE;
	if (io) {
		c->io = io;
	} else {
		if (frame_io_new(fd, &c->io, &err) < 0) {
			log_err("connection from %s: %s", peer, err.msg);
			c->state = CONN_DEAD;
		} else {
			c->owns_io = true;
			/* An accepted socket, or stdio on a socket or pipe: one connection (the
			 * serial port brings its io; a terminal or a character device may hold
			 * bytes of an older session, so its bodies are still scanned). */
			if (fd_is_stream_of_one(fd))
				frame_io_set_connection(c->io);
			if (wfd != fd)
				frame_io_set_write_fd(c->io, wfd);
		}
	}
	c->next = srv->conns;
	srv->conns = c;
	log_debug("connection %" PRIu64 " from %s", c->id, peer);
	if (c->state == CONN_HANDSHAKE && hs_begin(c) == 0)
		hs_step(c); /* bytes may be buffered already (the serial port) */
	return c;
}

/* ---- the session ---- */

/* The unauthenticated connection to close first: the least progress, then the oldest. */
static struct conn *admit_victim(struct serve *srv, size_t *handshakes, size_t *open)
{
	struct conn *victim = NULL;

	*handshakes = *open = 0;
	for (struct conn *c = srv->conns; c; c = c->next) {
		if (c->state == CONN_DEAD || !c->owns_fds)
			continue;
		(*open)++;
		if (c->state != CONN_HANDSHAKE)
			continue;
		(*handshakes)++;
		if (!victim || handshake_frames(c->hs) < handshake_frames(victim->hs) ||
		    (handshake_frames(c->hs) == handshake_frames(victim->hs) && c->id < victim->id))
			victim = c;
	}
	return victim;
}

bool serve_conn_admit(struct serve *srv)
{
	size_t handshakes, open, cap = conn_cap(srv);
	struct conn *victim = admit_victim(srv, &handshakes, &open);
	unsigned n = 0;

	if (!victim || (handshakes < SERVE_HANDSHAKES_MAX && open < cap))
		return open < cap;
	/*
	 * A host that connected within the same accept batch has its hello in the socket but no
	 * frame read yet, like an idle flooder. Read what each candidate holds (never waiting)
	 * before closing it, so that only a connection with nothing to show is closed: at most
	 * one read per unauthenticated connection.
	 */
	for (size_t probes = 0; victim && handshake_frames(victim->hs) == 0 && probes < handshakes;
	     probes++) {
		hs_step(victim);
		if (victim->state == CONN_HANDSHAKE && handshake_frames(victim->hs) == 0)
			break; /* nothing to show: this one goes */
		/* Closed by its peer or failed: its descriptors go now, not at the next sweep. */
		if (victim->state == CONN_DEAD)
			conn_drop(victim);
		victim = admit_victim(srv, &handshakes, &open);
	}
	if (victim && (handshakes >= SERVE_HANDSHAKES_MAX || open >= cap)) {
		if (log_ratelimit_pass(&rl_dropped, &n))
			log_info("connection %" PRIu64 " (%s): dropped unauthenticated for a newer "
			         "one (%zu handshakes, %zu connections open)%s%u%s",
			         victim->id, victim->peer, handshakes, open, n ? " (" : "", n,
			         n ? " more not logged)" : "");
		conn_drop(victim);
		open--;
	}
	return open < cap;
}

static void conn_level(struct conn *c, const struct msg *m)
{
	switch (m->type) {
	case MSG_HELLO: {
		const char *client = msg_get_string(m, "client");
		const char *version = msg_get_string(m, "version");
		log_debug("connection %" PRIu64 ": %s %s", c->id, client ? client : "?",
		          version ? version : "?");
		break;
	}
	case MSG_PING: {
		json_object *o = json_object_new_object();
		int64_t t = 0;
		msg_get_int64(m, "t", &t);
		json_object_object_add(o, "t", json_object_new_int64(t));
		serve_stream_send(c, MSG_PONG, 0, 0, o, NULL, 0);
		break;
	}
	case MSG_ERROR: {
		struct err e;
		msg_error_to_err(m, &e);
		log_info("connection %" PRIu64 ": the host reports: %s", c->id, e.msg);
		break;
	}
	default:
		break; /* stream 0 ignores what it does not know (a newer peer probing) */
	}
}

static void dispatch(struct conn *c, const struct msg *m)
{
	struct stream *st;
	serve_ops_start_fn start;

	if (m->stream == 0) {
		conn_level(c, m);
		return;
	}
	st = serve_stream_find(c, m->stream);
	if (st) {
		if (m->type == MSG_CANCEL) {
			st->host_done = true;
			if (!st->done) {
				if (st->ops && st->ops->on_cancel) {
					st->ops->on_cancel(c, st);
				} else {
					struct err e;
					err_set(&e, ERR_FAILED, ECANCELED, "cancelled by the host");
					serve_stream_error(c, st, &e);
				}
			}
		} else if (st->host_done) {
			log_debug("connection %" PRIu64 " stream %" PRIu32
			          ": %s after its end, ignored",
			          c->id, st->id, msg_type_name(m->type) ?: "?");
			return;
		} else {
			if (m->flags & MSG_F_END)
				st->host_done = true;
			if (st->done) {
				/* We ended it (an error): the host's rest is dropped. */
			} else if (st->ops && st->ops->on_msg) {
				st->ops->on_msg(c, st, m);
			} else {
				struct err e;
				err_set(&e, ERR_REFUSED, EPROTO,
				        "%s does not belong on a %s stream",
				        msg_type_name(m->type) ?: "an unknown message",
				        msg_type_name(st->type) ?: "?");
				serve_stream_error(c, st, &e);
			}
		}
		if (c->state != CONN_DEAD)
			serve_stream_release(c, st);
		return;
	}
	if (m->stream <= c->last_stream) {
		/* A stream that ended already (a cancel that crossed our final reply). */
		log_debug("connection %" PRIu64 ": %s on finished stream %" PRIu32 ", ignored",
		          c->id, msg_type_name(m->type) ?: "?", m->stream);
		return;
	}
	if (!(m->stream & 1)) {
		error_on(c, m->stream, EPROTO, "stream %" PRIu32 ": hosts open odd stream ids",
		         m->stream);
		return;
	}
	c->last_stream = m->stream;
	if (m->type == MSG_CANCEL)
		return;
	if (c->n_streams >= SERVE_STREAMS_MAX) {
		error_on(c, m->stream, EMFILE, "too many open streams (at most %d)",
		         SERVE_STREAMS_MAX);
		return;
	}
	start = serve_ops_find(m->type);
	if (!start) {
		error_on(c, m->stream, EOPNOTSUPP,
		         "%s (type 0x%04x) is not supported by this agent",
		         msg_type_name(m->type) ?: "this message", m->type);
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		error_on(c, m->stream, ENOMEM, "out of memory");
		return;
	}
	st->id = m->stream;
	st->type = m->type;
	st->host_done = (m->flags & MSG_F_END) != 0;
	st->next = c->streams;
	c->streams = st;
	c->n_streams++;
	start(c, st, m);
	if (c->state != CONN_DEAD)
		serve_stream_release(c, st);
}

static void session_ended(struct conn *c, const struct err *e, bool clean)
{
	if (clean) {
		struct err err;
		channel_close(c->ch, 1000, &err);
		serve_stream_kill_conn(c, "the host closed the session");
		return;
	}
	serve_stream_kill_conn(c, e->msg);
}

static void session_step(struct conn *c)
{
	for (int i = 0; i < SERVE_BATCH && c->state == CONN_SESSION; i++) {
		struct msg m;
		struct err err;
		int r = channel_recv(c->ch, &m, 0, &err);

		if (r == -ETIMEDOUT)
			return;
		if (r <= 0) {
			session_ended(c, &err, r == 0);
			return;
		}
		dispatch(c, &m);
		msg_dispose(&m);
	}
}

void serve_conn_ready(struct conn *c)
{
	if (c->state == CONN_HANDSHAKE)
		hs_step(c);
	else if (c->state == CONN_SESSION)
		session_step(c);
	if (c->state == CONN_HANDSHAKE && frame_io_now_ms() >= c->hs_deadline) {
		struct err e;
		err_set(&e, ERR_FAILED, ETIMEDOUT, "the handshake did not complete within %d ms",
		        c->srv->cfg->handshake_timeout_ms);
		hs_fail(c, &e);
	}
}

int serve_conn_pump(struct conn *c)
{
	int more = 0;

	/* Streams a relayed result finished (serve_jobs.c) go now. */
	for (struct stream *st = c->streams, *next; st; st = next) {
		next = st->next;
		serve_stream_release(c, st);
	}

	for (struct stream *st = c->streams, *next; st && c->state == CONN_SESSION; st = next) {
		next = st->next;
		st->more = false;
		if (st->done || !st->ops || !st->ops->pump)
			continue;
		st->more = st->ops->pump(c, st) > 0;
		more |= st->more;
		if (c->state == CONN_SESSION)
			serve_stream_release(c, st);
	}
	return more;
}

bool serve_conn_has_pending(const struct conn *c)
{
	if (c->state == CONN_DEAD)
		return false;
	if (c->io && frame_io_buffered(c->io))
		return true;
	for (const struct stream *st = c->streams; st; st = st->next)
		if (st->more)
			return true;
	return false;
}

bool serve_conn_wants_timer(const struct conn *c)
{
	if (c->state == CONN_HANDSHAKE)
		return true;
	for (const struct stream *st = c->streams; st; st = st->next)
		if (!st->done && st->ops && st->ops->pump)
			return true;
	return false;
}
