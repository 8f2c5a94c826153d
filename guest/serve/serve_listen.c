/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The transports (docs/daemon.md "Transports"): a peer check on top of the handshake for the
 * two socket kinds (a unix peer must be root, a vsock peer the host's CID), one session at a
 * time on the serial port (one frame_io across sessions, so bytes read past the end of one
 * reach the next: the resync marker sorts them out), and stdin/stdout for exec pipes.
 */
#include "serve_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "log.h"
#include "serve_conn.h"

#if __has_include(<linux/vm_sockets.h>)
#include <linux/vm_sockets.h>
#define HAVE_VSOCK 1
#endif

static struct listener *listener_add(struct serve *srv, enum listener_kind kind, int fd,
                                     const char *path, struct err *err)
{
	struct listener *l;

	if (srv->n_listeners >= SERVE_LISTENERS_MAX) {
		err_set(err, ERR_REFUSED, E2BIG, "at most %d listeners", SERVE_LISTENERS_MAX);
		return NULL;
	}
	l = &srv->listeners[srv->n_listeners++];
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->fd = fd;
	l->path = path ? strdup(path) : NULL;
	return l;
}

static int unix_open(struct serve *srv, const char *path, struct err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "the socket path %s is too long",
		               path);
	strcpy(sa.sun_path, path);
	/* A socket left by an earlier daemon is replaced; anything else is not ours to remove. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return err_set(err, ERR_REFUSED, EEXIST,
			               "%s exists and is not a socket: refusing to replace it",
			               path);
		if (unlink(path) < 0)
			return err_errno(err, "removing the old socket %s", path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_errno(err, "socket(AF_UNIX)");
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 16) < 0) {
		r = err_errno(err, "listening on %s", path);
		close(fd);
		return r;
	}
	if (!listener_add(srv, LISTEN_UNIX, fd, path, err)) {
		close(fd);
		return -1;
	}
	log_info("listening on unix:%s", path);
	return 0;
}

static int vsock_open(struct serve *srv, unsigned port, struct err *err)
{
#ifdef HAVE_VSOCK
	struct sockaddr_vm sa = {
	    .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port};
	char name[32];
	int fd, r;

	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_errno(err, "socket(AF_VSOCK)");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		r = err_errno(err, "listening on vsock port %u", port);
		close(fd);
		return r;
	}
	snprintf(name, sizeof(name), "vsock:%u", port);
	if (!listener_add(srv, LISTEN_VSOCK, fd, name, err)) {
		close(fd);
		return -1;
	}
	log_info("listening on vsock port %u (accepting CID %u)", port, srv->cfg->vsock_allow_cid);
	return 0;
#else
	return err_set(err, ERR_REFUSED, EAFNOSUPPORT, "built without vsock support");
#endif
}

static void serial_session(struct serve *srv, struct listener *l)
{
	char peer[PATH_MAX + 16];

	snprintf(peer, sizeof(peer), "serial %s", l->path);
	l->busy = true;
	if (!serve_conn_new(srv, l->fd, l->fd, false, peer, l, l->io))
		l->busy = false;
}

/* Open the port (again); a failure is retried later, the port may come and go. */
static int serial_open(struct serve *srv, struct listener *l, struct err *err)
{
	int fd;

	fd = open(l->path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return err_errno(err, "opening the serial port %s", l->path);
	if (isatty(fd)) {
		/* A console port: bytes as they are, no echo, no line editing. */
		struct termios t;
		if (tcgetattr(fd, &t) == 0) {
			cfmakeraw(&t);
			tcsetattr(fd, TCSANOW, &t);
		}
	}
	if (frame_io_new(fd, &l->io, err) < 0) {
		close(fd);
		return -1;
	}
	l->fd = fd;
	l->retry_at = 0;
	serial_session(srv, l);
	return 0;
}

/*
 * The host went away: keep the port open and read it again later. Closing it would lose bytes:
 * the guest kernel drops what a new host sends between our last read and the close.
 */
static void serial_park(struct listener *l)
{
	l->busy = false;
	l->retry_at = frame_io_now_ms() + SERVE_SERIAL_RETRY_MS;
}

int serve_listen_open(struct serve *srv, struct err *err)
{
	const struct serve_config *cfg = srv->cfg;
	struct listener *l;
	int r;

	if (cfg->stdio) {
		int fl;
		l = listener_add(srv, LISTEN_STDIO, -1, "stdio", err);
		if (!l)
			return -1;
		for (int fd = 0; fd < 2; fd++)
			if ((fl = fcntl(fd, F_GETFL)) >= 0)
				fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		l->busy = true;
		if (!serve_conn_new(srv, 0, 1, false, "stdio", l, NULL))
			return err_oom(err);
		return 0;
	}
	for (size_t i = 0; cfg->unix_paths && cfg->unix_paths[i]; i++) {
		r = unix_open(srv, cfg->unix_paths[i], err);
		if (r < 0)
			return r;
	}
	if (cfg->vsock) {
		r = vsock_open(srv, cfg->vsock_port ? cfg->vsock_port : SERVE_VSOCK_PORT, err);
		if (r < 0)
			return r;
	}
	if (cfg->serial_path) {
		l = listener_add(srv, LISTEN_SERIAL, -1, cfg->serial_path, err);
		if (!l)
			return -1;
		r = serial_open(srv, l, err);
		if (r < 0 && cfg->serial_wait && err->code == ENOENT) {
			/* udev may not have made the port's link yet: the loop opens it later. */
			log_info("waiting for the serial port %s", cfg->serial_path);
			err_clear(err);
			l->retry_at = frame_io_now_ms() + SERVE_SERIAL_RETRY_MS;
		} else if (r < 0) {
			return r;
		} else {
			log_info("serving the serial port %s", cfg->serial_path);
		}
	}
	if (srv->n_listeners == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "no transport to listen on");
	return 0;
}

void serve_listen_close(struct serve *srv)
{
	for (size_t i = 0; i < srv->n_listeners; i++) {
		struct listener *l = &srv->listeners[i];
		if (l->kind == LISTEN_SERIAL) {
			frame_io_free(l->io);
			l->io = NULL;
		}
		if (l->fd >= 0)
			close(l->fd);
		if (l->kind == LISTEN_UNIX && l->path)
			unlink(l->path);
		free(l->path);
	}
	srv->n_listeners = 0;
}

/* Refused peers (a unix peer not root, a vsock peer not the host): a peer can make many. */
static struct log_ratelimit rl_peer;

static void unix_accept(struct serve *srv, struct listener *l, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char peer[PATH_MAX + 64];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warn("unix:%s: cannot tell who connected (%m): closed", l->path);
		close(fd);
		return;
	}
	if (cred.uid != 0) {
		unsigned n = 0;
		if (log_ratelimit_pass(&rl_peer, &n))
			log_notice("unix:%s: refused a connection from uid %u (pid %d): only root "
			           "may connect%s%u%s",
			           l->path, (unsigned)cred.uid, (int)cred.pid, n ? " (" : "", n,
			           n ? " more refusals not logged)" : "");
		close(fd);
		return;
	}
	snprintf(peer, sizeof(peer), "unix:%s pid %d", l->path, (int)cred.pid);
	serve_conn_new(srv, fd, fd, true, peer, NULL, NULL);
}

#ifdef HAVE_VSOCK
static void vsock_accept(struct serve *srv, struct listener *l, int fd,
                         const struct sockaddr_vm *sa)
{
	char peer[64];

	if (sa->svm_cid != srv->cfg->vsock_allow_cid) {
		unsigned n = 0;
		if (log_ratelimit_pass(&rl_peer, &n))
			log_notice("vsock: refused a connection from CID %u port %u: only CID %u "
			           "may connect%s%u%s",
			           sa->svm_cid, sa->svm_port, srv->cfg->vsock_allow_cid,
			           n ? " (" : "", n, n ? " more refusals not logged)" : "");
		close(fd);
		return;
	}
	snprintf(peer, sizeof(peer), "vsock CID %u port %u", sa->svm_cid, sa->svm_port);
	serve_conn_new(srv, fd, fd, true, peer, NULL, NULL);
}
#endif

static struct log_ratelimit rl_accept, rl_full;

/* Out of descriptors: accept one arrival with the reserve descriptor and close it. */
static void accept_and_close(struct serve *srv, struct listener *l)
{
	int fd;

	if (srv->reserve_fd < 0)
		return;
	close(srv->reserve_fd);
	fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void serve_listen_ready(struct serve *srv, struct listener *l)
{
	unsigned n = 0;

	if (l->kind == LISTEN_SERIAL) {
		struct err err;
		if (!l->busy && l->fd >= 0 && frame_io_now_ms() >= l->retry_at) {
			/* Parked: a new session on the port still open. */
			l->io->eof = false;
			l->retry_at = 0;
			serial_session(srv, l);
			return;
		}
		if (!l->busy && l->fd < 0 && frame_io_now_ms() >= l->retry_at &&
		    serial_open(srv, l, &err) < 0) {
			log_debug("%s", err.msg);
			l->retry_at = frame_io_now_ms() + SERVE_SERIAL_RETRY_MS;
		}
		return;
	}
	if (l->kind != LISTEN_UNIX && l->kind != LISTEN_VSOCK)
		return;
	/* A bounded batch per pass: the connections already open are served in between. */
	for (int i = 0; i < SERVE_ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			int e = errno;
			if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED)
				return;
			if (log_ratelimit_pass(&rl_accept, &n)) {
				errno = e;
				log_warn("accepting on %s: %m%s%u%s", l->path, n ? " (" : "", n,
				         n ? " more not logged)" : "");
			}
			/* Closing one arrival keeps poll() from waking us for it at once again. */
			if (e == EMFILE || e == ENFILE)
				accept_and_close(srv, l);
			return;
		}
		if (!serve_conn_admit(srv)) {
			if (log_ratelimit_pass(&rl_full, &n))
				log_warn("%s: %d connections are open: closing a new one%s%u%s",
				         l->path, SERVE_CONNS_MAX, n ? " (" : "", n,
				         n ? " more not logged)" : "");
			close(fd);
			continue;
		}
		if (l->kind == LISTEN_UNIX)
			unix_accept(srv, l, fd);
#ifdef HAVE_VSOCK
		else
			vsock_accept(srv, l, fd, (const struct sockaddr_vm *)&ss);
#endif
	}
}

void serve_listen_session_ended(struct serve *srv, struct listener *l, bool eof)
{
	struct pollfd p;

	if (l->kind == LISTEN_STDIO) {
		l->busy = false;
		srv->quit = true;
		return;
	}
	if (l->kind != LISTEN_SERIAL)
		return;
	l->busy = false;
	p = (struct pollfd){.fd = l->fd, .events = POLLIN};
	if (eof || (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))) {
		/* The host went away: read again once it may be back. */
		serial_park(l);
		return;
	}
	/* The next session on the same bytes: what was read past the last one is kept. */
	serial_session(srv, l);
}
