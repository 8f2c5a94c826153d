/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's setup and its loop: one poll() over the signalfd, the listeners, every
 * connection and every boot runner's socket. Nothing in the loop waits for a peer, except for
 * sending a reply (bounded by SERVE_SEND_TIMEOUT_MS): handshakes advance as bytes arrive, long
 * replies (logs) go out one chunk per pass, boots and stops run in runner processes.
 */
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "file.h"
#include "log.h"
#include "strv.h"
#include "secrets_store.h"
#include "serve_apps.h"
#include "serve_conn.h"
#include "serve_jobs.h"
#include "serve_listen.h"
#include "sigfd.h"

extern char **environ;

/* What systemd gives the daemon and no child may inherit. */
static const char *const systemd_vars[] = {
    "NOTIFY_SOCKET", "INVOCATION_ID",  "JOURNAL_STREAM", "LISTEN_FDS",
    "LISTEN_PID",    "LISTEN_FDNAMES", "WATCHDOG_PID",   "WATCHDOG_USEC",
};

/* sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. */
static void notify(const char *socket_path, const char *state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	int fd;

	if (!socket_path || !socket_path[0])
		return;
	len = strlen(socket_path);
	if (len >= sizeof(sa.sun_path) || (socket_path[0] != '/' && socket_path[0] != '@'))
		return;
	memcpy(sa.sun_path, socket_path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	           (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		log_debug("notify %s: %m", state);
	close(fd);
}

int serve_key_load_or_create(const char *path, struct keypair **ret, bool *ret_created,
                             struct err *err)
{
	_cleanup_keypair_ struct keypair *kp = NULL;
	_cleanup_free_ char *dir = NULL;
	char host[128] = "guest", comment[200];
	char *slash;

	if (ret_created)
		*ret_created = false;
	if (access(path, F_OK) == 0 || errno != ENOENT)
		return keys_load(path, ret, err);
	if (keys_generate(&kp, err) < 0)
		return -1;
	gethostname(host, sizeof(host) - 1);
	snprintf(comment, sizeof(comment), "sandbox-agent@%s", host);
	keys_set_comment(kp, comment, err);
	dir = strdup(path);
	if (!dir)
		return err_oom(err);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (file_mkdir_p(dir, 0700, err) < 0)
			return err_wrap(err, "cannot create the directory of the guest key");
	}
	if (keys_save(kp, path, err) < 0)
		return -1;
	if (ret_created)
		*ret_created = true;
	*ret = TAKE_PTR(kp);
	return 0;
}

static int hardening(struct err *err)
{
	struct rlimit no_core = {0, 0}, nofile;

	/* Room for SERVE_CONNS_MAX connections and the reserve, up to what the hard limit allows.
	 */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < SERVE_NOFILE_WANT &&
	    nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur =
		    nofile.rlim_max < SERVE_NOFILE_WANT ? nofile.rlim_max : SERVE_NOFILE_WANT;
		(void)setrlimit(RLIMIT_NOFILE, &nofile);
	}

	/* Secrets and keys live in this process: no core dumps, no ptrace by others. */
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return err_errno(err, "prctl(PR_SET_DUMPABLE)");
	if (setrlimit(RLIMIT_CORE, &no_core) < 0)
		return err_errno(err, "setrlimit(RLIMIT_CORE)");
	return 0;
}

static int signals_setup(struct serve *srv, struct err *err)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigfd_set(&set, SIGCHLD, SIGTERM, SIGINT, SIGHUP, 0);
	srv->sigfd = sigfd_open(&set, NULL, err);
	return srv->sigfd < 0 ? srv->sigfd : 0;
}

static void signals_read(struct serve *srv)
{
	struct signalfd_siginfo si;

	while (read(srv->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			serve_jobs_reap(srv);
			break;
		case SIGTERM:
		case SIGINT:
			log_info("signal %u: stopping (running apps and boots go on)",
			         si.ssi_signo);
			srv->quit = true;
			break;
		default:
			break; /* SIGHUP: the keys are read for every connection anyway */
		}
	}
}

static void conns_sweep(struct serve *srv)
{
	struct conn *dead = NULL;

	for (struct conn **p = &srv->conns; *p;) {
		struct conn *c = *p;
		if (c->state == CONN_DEAD) {
			*p = c->next;
			c->next = dead;
			dead = c;
		} else {
			p = &c->next;
		}
	}
	while (dead) {
		struct conn *c = dead;
		struct listener *l = c->listener;
		bool eof = c->io && c->io->eof;

		dead = c->next;
		serve_jobs_unfollow_conn(srv, c->id);
		serve_conn_free(c);
		if (l)
			serve_listen_session_ended(srv, l, eof);
	}
}

static int poll_timeout(struct serve *srv)
{
	int64_t now = frame_io_now_ms(), t = -1;

	for (struct conn *c = srv->conns; c; c = c->next) {
		if (serve_conn_has_pending(c))
			return 0;
		if (c->state == CONN_HANDSHAKE) {
			int64_t left = c->hs_deadline - now;
			if (t < 0 || left < t)
				t = left < 0 ? 0 : left;
		} else if (serve_conn_wants_timer(c) && (t < 0 || t > SERVE_FOLLOW_MS)) {
			t = SERVE_FOLLOW_MS;
		}
	}
	for (size_t i = 0; i < srv->n_listeners; i++) {
		struct listener *l = &srv->listeners[i];
		if (l->kind == LISTEN_SERIAL && !l->busy) {
			int64_t left = l->retry_at - now;
			if (t < 0 || left < t)
				t = left < 0 ? 0 : left;
		}
	}
	{
		int64_t d = serve_jobs_next_deadline(srv);
		if (d >= 0 && (t < 0 || d - now < t))
			t = d - now < 0 ? 0 : d - now;
	}
	return t > 1000000 ? 1000000 : (int)t;
}

static int loop_run(struct serve *srv)
{
	while (!srv->quit) {
		size_t n = 1, nconn = 0, njob = 0, nwake = 0;
		_cleanup_free_ struct pollfd *pfd = NULL;
		_cleanup_free_ struct conn **conns = NULL;
		_cleanup_free_ struct job **jobs = NULL;
		size_t li0, ci0, ji0;
		int r;

		for (struct conn *c = srv->conns; c; c = c->next)
			nconn++;
		for (struct job *j = srv->jobs; j; j = j->next)
			njob++;
		for (struct conn *c = srv->conns; c; c = c->next)
			for (const struct stream *st = c->streams; st; st = st->next)
				nwake += !st->done && st->ops && st->ops->wake_fd;
		pfd = calloc(1 + srv->n_listeners + nconn + njob + nwake, sizeof(*pfd));
		conns = calloc(nconn + 1, sizeof(*conns));
		jobs = calloc(njob + 1, sizeof(*jobs));
		if (!pfd || !conns || !jobs) {
			log_err("out of memory");
			return -ENOMEM;
		}
		pfd[0] = (struct pollfd){.fd = srv->sigfd, .events = POLLIN};
		li0 = n;
		for (size_t i = 0; i < srv->n_listeners; i++) {
			struct listener *l = &srv->listeners[i];
			bool polled = l->kind == LISTEN_UNIX || l->kind == LISTEN_VSOCK;
			pfd[n++] = (struct pollfd){.fd = polled ? l->fd : -1, .events = POLLIN};
		}
		ci0 = n;
		nconn = 0;
		for (struct conn *c = srv->conns; c; c = c->next) {
			conns[nconn++] = c;
			pfd[n++] = (struct pollfd){.fd = c->fd, .events = POLLIN};
		}
		ji0 = n;
		njob = 0;
		for (struct job *j = srv->jobs; j; j = j->next) {
			jobs[njob++] = j;
			pfd[n++] = (struct pollfd){.fd = j->fd, .events = POLLIN};
		}
		/* Only to wake the loop: every pump runs after each poll anyway. */
		for (struct conn *c = srv->conns; c; c = c->next)
			for (const struct stream *st = c->streams; st; st = st->next)
				if (!st->done && st->ops && st->ops->wake_fd)
					pfd[n++] = (struct pollfd){.fd = st->ops->wake_fd(st),
					                           .events = POLLIN};

		r = poll(pfd, n, poll_timeout(srv));
		if (r < 0 && errno != EINTR) {
			log_err("poll: %m");
			return -errno;
		}
		if (r > 0 && pfd[0].revents)
			signals_read(srv);
		for (size_t i = 0; i < srv->n_listeners; i++)
			if ((r > 0 && pfd[li0 + i].revents) ||
			    srv->listeners[i].kind == LISTEN_SERIAL)
				serve_listen_ready(srv, &srv->listeners[i]);
		for (size_t i = 0; i < nconn; i++) {
			struct conn *c = conns[i];
			if ((r > 0 && pfd[ci0 + i].revents) || serve_conn_has_pending(c) ||
			    (c->state == CONN_HANDSHAKE && frame_io_now_ms() >= c->hs_deadline))
				serve_conn_ready(c);
		}
		/* Jobs may be freed by serve_jobs_readable: only those still listed are looked at.
		 */
		for (size_t i = 0; i < njob; i++) {
			bool listed = false;
			for (struct job *j = srv->jobs; j; j = j->next)
				listed |= j == jobs[i];
			if (listed && r > 0 && pfd[ji0 + i].revents && jobs[i]->fd >= 0)
				serve_jobs_readable(srv, jobs[i]);
		}
		for (struct conn *c = srv->conns; c; c = c->next)
			if (c->state == CONN_SESSION)
				serve_conn_pump(c);
		serve_jobs_expire(srv);
		conns_sweep(srv);
	}
	return 0;
}

static void clean_environment(struct serve *srv, char **ret_notify)
{
	const char *ns = getenv("NOTIFY_SOCKET");

	*ret_notify = ns ? strdup(ns) : NULL;
	for (size_t i = 0; i < ELEMENTSOF(systemd_vars); i++)
		unsetenv(systemd_vars[i]);
	srv->clean_env = strv_copy(environ);
}

int serve_run(const struct serve_config *cfg, struct err *err)
{
	struct serve srv = {.cfg = cfg, .sigfd = -1, .reserve_fd = -1};
	_cleanup_free_ char *notify_socket = NULL;
	bool created = false;
	int r = -1;

	if (hardening(err) < 0)
		return -1;
	clean_environment(&srv, &notify_socket);
	if (!srv.clean_env)
		return err_oom(err);
	if (signals_setup(&srv, err) < 0)
		goto out;
	if (file_mkdir_p(cfg->state_dir, 0700, err) < 0) {
		err_wrap(err, "cannot create the state directory");
		goto out;
	}
	if (chmod(cfg->state_dir, 0700) < 0) {
		err_errno(err, "chmod 0700 %s", cfg->state_dir);
		goto out;
	}
	if (serve_key_load_or_create(cfg->key_path, &srv.key, &created, err) < 0) {
		err_wrap(err, "the guest key %s", cfg->key_path);
		goto out;
	}
	{
		char fp[KEYS_FINGERPRINT_MAX];
		keys_fingerprint(srv.key->pk, fp);
		log_info("guest key %s%s (%s)", fp, created ? ", new" : "", cfg->key_path);
	}
	if (authkeys_new(cfg->authkeys_file, cfg->authkeys_dir, &srv.authkeys, err) < 0 ||
	    secrets_store_new(&srv.secrets, err) < 0)
		goto out;
	serve_apps_load(&srv);
	if (gethostname(srv.instance, sizeof(srv.instance) - 1) < 0)
		snprintf(srv.instance, sizeof(srv.instance), "guest");
	if (serve_listen_open(&srv, err) < 0)
		goto out;
	srv.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	notify(notify_socket, "READY=1\nSTATUS=serving");
	r = loop_run(&srv);
	if (r < 0)
		err_set(err, ERR_FAILED, -r, "the daemon's loop failed");
	notify(notify_socket, "STOPPING=1");
out:
	while (srv.conns) {
		struct conn *c = srv.conns;
		srv.conns = c->next;
		if (c->state == CONN_SESSION) {
			struct err e;
			channel_close(c->ch, 1000, &e);
		}
		serve_conn_free(c);
	}
	serve_listen_close(&srv);
	serve_jobs_free(&srv);
	serve_apps_free(&srv);
	secrets_store_free(srv.secrets);
	authkeys_free(srv.authkeys);
	keys_free(srv.key);
	strv_free(srv.clean_env);
	if (srv.sigfd >= 0)
		close(srv.sigfd);
	if (srv.reserve_fd >= 0)
		close(srv.reserve_fd);
#ifdef __SANITIZE_ADDRESS__
	/* Everything secret is wiped: the leak checker may stop the world (it ptraces). */
	prctl(PR_SET_DUMPABLE, 1);
#endif
	return r < 0 ? -1 : 0;
}
