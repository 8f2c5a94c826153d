/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Boot runners: each boot and each stop runs in a child, a fresh `sandbox-agent serve
 * --runner` (an exec, so it holds none of the daemon's memory: not the guest's key, not the
 * session keys, not the secrets it is not given). The request and the secrets go down a
 * SOCK_SEQPACKET socket, one message (msg.h encoding) per record; boot.event, boot.log and the
 * result come back the same way and are relayed to every stream that follows the job. A
 * runner outlives the connection that started it, and the daemon: it is in a session of its
 * own and carries on when its socket breaks.
 */
#include "serve_jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "secrets_store.h"
#include "serve_stream.h"

#define JOB_RECORD_MAX (256 * 1024)

static int record_send(int fd, const struct msg *m, struct err *err)
{
	size_t len = msg_encoded_len(m, err);
	uint8_t *buf;
	ssize_t n;

	if (len == 0)
		return err_ret(err);
	buf = malloc(len);
	if (!buf)
		return err_oom(err);
	n = msg_encode(m, buf, len, err);
	if (n >= 0) {
		do
			n = send(fd, buf, (size_t)n, MSG_NOSIGNAL);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			err_errno(err, "sending a request to the boot runner");
	}
	sodium_memzero(buf, len); /* may hold a secret's value */
	free(buf);
	return n < 0 ? -1 : 0;
}

struct secret_send {
	int fd;
	const char *only; /* checkout.fetch: the one secret it names */
	struct err *err;
};

static int send_secret(void *userdata, const char *name, enum secret_scope scope,
                       const uint8_t *value, size_t len)
{
	struct secret_send *ss = userdata;
	json_object *o = json_object_new_object();
	struct msg m = {.type = MSG_SECRETS_PUT, .json = o, .data = value, .data_len = len};
	int r;

	if (ss->only && strcmp(name, ss->only) != 0) {
		json_object_put(o);
		return 0;
	}
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "scope", json_object_new_string(secrets_store_scope_name(scope)));
	r = record_send(ss->fd, &m, ss->err);
	json_object_put(o);
	return r;
}

static const char *job_kind_name(enum job_kind kind)
{
	return kind == JOB_BOOT      ? "boot"
	       : kind == JOB_STOP    ? "stop"
	       : kind == JOB_PUBLISH ? "publish"
	                             : "checkout";
}

static _noreturn_ void runner_exec(struct serve *srv, int sock)
{
	sigset_t none;
	char *argv[] = {"sandbox-agent", "serve", "--runner", NULL};
	int nul;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setsid();
	if (sock != 3) {
		if (dup2(sock, 3) < 0)
			_exit(127);
	} else {
		fcntl(3, F_SETFD, 0);
	}
	/* Never the channel (stdio) nor, under an exec pipe, its stderr: the pipe must see
	 * end-of-file when the daemon exits, whatever the runner still does. */
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		if (srv->cfg->stdio)
			dup2(nul, 2);
	}
	proc_close_inherited(3);
	execve(srv->cfg->runner, argv, srv->clean_env);
	_exit(127);
}

int serve_jobs_spawn(struct serve *srv, enum job_kind kind, json_object *request, bool with_secrets,
                     const char *app_dir, const char *state_dir, struct job **ret, struct err *err)
{
	struct job *j;
	struct msg m = {.type = kind == JOB_BOOT ? MSG_BOOT_START : MSG_STOP, .json = request};
	struct secret_send ss = {0};
	json_object *only;
	int sv[2], fl;
	pid_t pid;

	j = calloc(1, sizeof(*j));
	if (!j)
		return err_oom(err);
	j->kind = kind;
	j->fd = -1;
	j->app_dir = strdup(app_dir);
	j->state_dir = strdup(state_dir);
	if (!j->app_dir || !j->state_dir) {
		free(j->app_dir);
		free(j->state_dir);
		free(j);
		return err_oom(err);
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		free(j->app_dir);
		free(j->state_dir);
		free(j);
		return err_errno(err, "socketpair");
	}
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		runner_exec(srv, sv[1]);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		free(j->app_dir);
		free(j->state_dir);
		free(j);
		return err_errno(err, "starting the boot runner");
	}
	j->pid = pid;
	j->fd = sv[0];
	j->started_ms = frame_io_now_ms();
	j->next = srv->jobs;
	srv->jobs = j;

	/* The request, the secrets the runner needs, then the end of the request. */
	ss.fd = j->fd;
	ss.err = err;
	if (kind == JOB_PUBLISH)
		m.type = MSG_PUBLISH_COMMIT;
	if (kind == JOB_CHECKOUT) {
		m.type = MSG_CHECKOUT_FETCH;
		ss.only = json_object_object_get_ex(request, "secret", &only)
		              ? json_object_get_string(only)
		              : "";
	}
	if (record_send(j->fd, &m, err) < 0 ||
	    (with_secrets &&
	     secrets_store_visit(srv->secrets, SECRET_SCOPE_ANY, send_secret, &ss) < 0)) {
		kill(pid, SIGKILL);
		return -1;
	}
	m = (struct msg){.type = MSG_CLOSE, .flags = MSG_F_END};
	if (record_send(j->fd, &m, err) < 0) {
		kill(pid, SIGKILL);
		return -1;
	}
	fl = fcntl(j->fd, F_GETFL);
	fcntl(j->fd, F_SETFL, fl | O_NONBLOCK);
	log_debug("runner %d: %s of %s", (int)pid, job_kind_name(kind), app_dir);
	*ret = j;
	return 0;
}

int serve_jobs_follow(struct job *j, uint64_t conn_id, uint32_t stream)
{
	struct follower *v = reallocarray(j->followers, j->n_followers + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	j->followers = v;
	v[j->n_followers++] = (struct follower){.conn_id = conn_id, .stream = stream};
	return 0;
}

void serve_jobs_unfollow_conn(struct serve *srv, uint64_t conn_id)
{
	for (struct job *j = srv->jobs; j; j = j->next)
		for (size_t i = 0; i < j->n_followers;)
			if (j->followers[i].conn_id == conn_id)
				j->followers[i] = j->followers[--j->n_followers];
			else
				i++;
}

struct job *serve_jobs_find(struct serve *srv, enum job_kind kind, const char *state_dir)
{
	for (struct job *j = srv->jobs; j; j = j->next)
		if (j->kind == kind && !j->result_seen && strcmp(j->state_dir, state_dir) == 0)
			return j;
	return NULL;
}

/* Pass one message on to every stream that follows the job; END finishes them. */
static void relay(struct serve *srv, struct job *j, const struct msg *m)
{
	for (size_t i = 0; i < j->n_followers; i++) {
		struct conn *c = serve_stream_conn_find(srv, j->followers[i].conn_id);
		struct stream *st = c ? serve_stream_find(c, j->followers[i].stream) : NULL;

		if (!st || st->done)
			continue;
		if (m->flags & MSG_F_END)
			serve_stream_finish(c, st);
		serve_stream_send(c, m->type, m->flags, st->id,
		                  m->json ? json_object_get(m->json) : NULL, m->data, m->data_len);
	}
}

static void job_free(struct job *j)
{
	if (j->fd >= 0)
		close(j->fd);
	free(j->followers);
	free(j->app_dir);
	free(j->state_dir);
	free(j);
}

/* Both the socket closed and the process ended: say so if no result came, and forget it. */
static void job_check_done(struct serve *srv, struct job *j)
{
	char how[128];

	if (j->fd >= 0 || !j->exited)
		return;
	proc_describe_status(j->status, how, sizeof(how));
	log_debug("runner %d %s", (int)j->pid, how);
	if (!j->result_seen) {
		json_object *o = json_object_new_object();
		struct msg m = {.flags = MSG_F_END, .json = o};
		char reason[256];

		snprintf(reason, sizeof(reason),
		         "the %s of %s ended without a result: its process %s",
		         job_kind_name(j->kind), j->app_dir, how);
		if (j->kind == JOB_BOOT) {
			m.type = MSG_BOOT_RESULT;
			json_object_object_add(o, "status", json_object_new_string("failed"));
			json_object_object_add(o, "exit", json_object_new_int(1));
			json_object_object_add(o, "reason", json_object_new_string(reason));
		} else {
			m.type = MSG_ERROR;
			json_object_object_add(o, "code", json_object_new_int(EIO));
			json_object_object_add(o, "class", json_object_new_string("failed"));
			json_object_object_add(o, "msg", json_object_new_string(reason));
		}
		log_warn("%s", reason);
		j->result_seen = true;
		relay(srv, j, &m);
		json_object_put(o);
	}
	for (struct job **p = &srv->jobs; *p; p = &(*p)->next) {
		if (*p == j) {
			*p = j->next;
			job_free(j);
			return;
		}
	}
}

void serve_jobs_readable(struct serve *srv, struct job *j)
{
	_cleanup_free_ uint8_t *buf = malloc(JOB_RECORD_MAX);

	if (!buf)
		return;
	/* A bounded batch per pass: a runner that writes fast holds up no connection. */
	for (int i = 0; i < SERVE_BATCH && j->fd >= 0; i++) {
		struct msg m;
		struct err err;
		ssize_t n = recv(j->fd, buf, JOB_RECORD_MAX, MSG_DONTWAIT | MSG_TRUNC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			close(j->fd);
			j->fd = -1;
			break;
		}
		if ((size_t)n > JOB_RECORD_MAX || msg_decode(buf, (size_t)n, &m, &err) < 0) {
			log_warn("runner %d sent a malformed record: ignored", (int)j->pid);
			continue;
		}
		if (m.type == MSG_BOOT_RESULT || m.type == MSG_OK || m.type == MSG_ERROR) {
			m.flags |= MSG_F_END;
			j->result_seen = true;
		} else {
			m.flags &= (uint16_t)~MSG_F_END;
		}
		relay(srv, j, &m);
		msg_dispose(&m);
	}
	job_check_done(srv, j);
}

void serve_jobs_reap(struct serve *srv)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid <= 0)
			return;
		for (struct job *j = srv->jobs; j; j = j->next) {
			if (j->pid == pid) {
				j->exited = true;
				j->status = status;
				if (j->fd >= 0)
					serve_jobs_readable(srv, j); /* its last words first */
				else
					job_check_done(srv, j);
				break;
			}
		}
	}
}

/* The result a job did not give: an error on every stream that follows it. */
static void job_fail(struct serve *srv, struct job *j, const char *reason)
{
	json_object *o = json_object_new_object();
	struct msg m = {.type = MSG_ERROR, .flags = MSG_F_END, .json = o};

	json_object_object_add(o, "code", json_object_new_int(ETIMEDOUT));
	json_object_object_add(o, "class", json_object_new_string("failed"));
	json_object_object_add(o, "msg", json_object_new_string(reason));
	j->result_seen = true;
	relay(srv, j, &m);
	json_object_put(o);
}

void serve_jobs_expire(struct serve *srv)
{
	int64_t now = frame_io_now_ms();

	for (struct job *j = srv->jobs; j; j = j->next) {
		char reason[PATH_MAX + 128];

		if (!j->deadline_ms || j->result_seen || now < j->deadline_ms)
			continue;
		/* The runner is in a session of its own: its group is it and what it started. */
		kill(-j->pid, SIGKILL);
		kill(j->pid, SIGKILL);
		snprintf(reason, sizeof(reason),
		         "the %s of %s did not finish within %lld s: stopped",
		         job_kind_name(j->kind), j->app_dir,
		         (long long)((j->deadline_ms - j->started_ms + 999) / 1000));
		log_warn("%s", reason);
		job_fail(srv, j, reason);
		if (j->fd >= 0) {
			close(j->fd);
			j->fd = -1;
		}
	}
}

int64_t serve_jobs_next_deadline(const struct serve *srv)
{
	int64_t t = -1;

	for (const struct job *j = srv->jobs; j; j = j->next)
		if (j->deadline_ms && !j->result_seen && (t < 0 || j->deadline_ms < t))
			t = j->deadline_ms;
	return t;
}

void serve_jobs_free(struct serve *srv)
{
	while (srv->jobs) {
		struct job *j = srv->jobs;
		srv->jobs = j->next;
		job_free(j);
	}
}
