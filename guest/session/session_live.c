/* SPDX-License-Identifier: Apache-2.0 */
#include "session_live.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "file.h"
#include "json_get.h"
#include "json_strict.h"
#include "log.h"
#include "session_lines.h"
#include "session_live_event.h"
#include "session_run.h"
#include "session_status.h"

#define CONTROL_READ_MS 1000

struct pending {
	char *id;
	json_object *input; /* echoed as updatedInput by an allow */
	uint64_t deadline_ms;
};

struct live {
	struct session_job *job;
	struct session_status st; /* the live fields job->live points at */
	struct session_run_events *events;
	struct session_run_hooks hooks;
	int stdin_r, stdin_w;
	int listen_fd;
	char *first_turn;
	size_t first_len;
	struct pending pending[SESSION_LIVE_PENDING_MAX + 1]; /* one more: the one refused */
	size_t n_pending;
	pid_t pid;
	bool status_dirty; /* a turn or an answer changed it: written once the CLI's next output
	                    * has been passed on (poll_done) */
};

static void status_changed(struct live *l)
{
	struct err e;

	l->status_dirty = false;
	struct session_status st = {.state = SESSION_RUNNING, .pid = l->pid};

	snprintf(st.started_at, sizeof(st.started_at), "%s", l->job->started_at);
	l->st.pending = (unsigned)l->n_pending;
	if (session_job_status_write(l->job, &st, &e) < 0)
		log_debug("status.json: %s", e.msg);
}

void session_live_socket_room(int fd)
{
	int size = 2 * SESSION_LIVE_CONTROL_MAX;

	/* A SOCK_SEQPACKET record must fit the sender's buffer: room for the largest one. */
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* An event of ours: the object, framed (so scrubbed) like a line of the CLI's. */
static void event_own(struct live *l, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	_cleanup_free_ char *line = NULL;
	size_t len;

	line = session_lines_frame_own(l->job->scrub, s, strlen(s), &len);
	if (line && l->events)
		(void)session_run_event_append(l->events, line, len);
}

static int stdin_line(struct live *l, json_object *o, struct err *err)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	_cleanup_free_ char *line = NULL;

	if (l->stdin_w < 0)
		return err_set(err, ERR_REFUSED, EPIPE, "the session's CLI has ended");
	if (asprintf(&line, "%s\n", s) < 0)
		return err_oom(err);
	if (file_write_all(l->stdin_w, line, strlen(line)) < 0)
		return err_errno(err, "writing to the CLI's stdin");
	return 0;
}

/* The line's failure, after its event was recorded: an event of its own says so. */
static int stdin_failed(struct live *l, const struct err *e)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("sandbox"));
	json_object_object_add(o, "subtype", json_object_new_string("error"));
	json_object_object_add(o, "text", json_object_new_string(e->msg));
	event_own(l, o);
	json_object_put(o);
	return -1;
}

/*
 * Our event first, the CLI's stdin last, status.json in the loop's next round: the CLI's
 * answer then finds us back in the loop at once, not still writing files
 * (bench/session_live_bench.sh).
 */
static int send_turn(struct live *l, const char *text, size_t len, struct err *err)
{
	json_object *o, *msg;
	int rc;

	if (l->stdin_w < 0)
		return err_set(err, ERR_REFUSED, EPIPE, "the session's CLI has ended");
	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string("sandbox"));
	json_object_object_add(o, "subtype", json_object_new_string("user"));
	json_object_object_add(o, "turn", json_object_new_int64(l->st.turns + 1));
	json_object_object_add(o, "text", json_object_new_string_len(text, (int)len));
	event_own(l, o);
	json_object_put(o);
	l->st.turns++;
	l->st.busy = true;
	l->status_dirty = true;

	o = json_object_new_object();
	msg = json_object_new_object();
	json_object_object_add(msg, "role", json_object_new_string("user"));
	json_object_object_add(msg, "content", json_object_new_string_len(text, (int)len));
	json_object_object_add(o, "type", json_object_new_string("user"));
	json_object_object_add(o, "message", msg);
	rc = stdin_line(l, o, err);
	json_object_put(o);
	return rc < 0 ? stdin_failed(l, err) : 0;
}

static struct pending *pending_find(struct live *l, const char *id)
{
	for (size_t i = 0; i < l->n_pending; i++)
		if (strcmp(l->pending[i].id, id) == 0)
			return &l->pending[i];
	return NULL;
}

static void pending_drop(struct live *l, struct pending *p)
{
	free(p->id);
	json_object_put(p->input);
	*p = l->pending[--l->n_pending];
}

/* The answer event, p forgotten (whatever happens), then the CLI's control_response (see
 * send_turn). */
static int answer(struct live *l, struct pending *p, bool allow, const char *message,
                  bool interrupt, const char *by, struct err *err)
{
	json_object *o, *resp, *inner;
	int rc;

	if (l->stdin_w < 0) {
		pending_drop(l, p);
		return err_set(err, ERR_REFUSED, EPIPE, "the session's CLI has ended");
	}
	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string("sandbox"));
	json_object_object_add(o, "subtype", json_object_new_string("answer"));
	json_object_object_add(o, "request_id", json_object_new_string(p->id));
	json_object_object_add(o, "behavior", json_object_new_string(allow ? "allow" : "deny"));
	json_object_object_add(o, "by", json_object_new_string(by));
	if (!allow && message && *message)
		json_object_object_add(o, "message", json_object_new_string(message));
	if (!allow && interrupt)
		json_object_object_add(o, "interrupt", json_object_new_boolean(true));
	event_own(l, o);
	json_object_put(o);

	o = json_object_new_object();
	resp = json_object_new_object();
	inner = json_object_new_object();
	json_object_object_add(inner, "behavior", json_object_new_string(allow ? "allow" : "deny"));
	if (allow) {
		json_object_object_add(inner, "updatedInput",
		                       p->input ? json_object_get(p->input)
		                                : json_object_new_object());
	} else {
		json_object_object_add(
		    inner, "message",
		    json_object_new_string(
		        message && *message ? message : "The user denied this tool call."));
		if (interrupt)
			json_object_object_add(inner, "interrupt", json_object_new_boolean(true));
	}
	json_object_object_add(resp, "subtype", json_object_new_string("success"));
	json_object_object_add(resp, "request_id", json_object_new_string(p->id));
	json_object_object_add(resp, "response", inner);
	json_object_object_add(o, "type", json_object_new_string("control_response"));
	json_object_object_add(o, "response", resp);
	pending_drop(l, p);
	l->status_dirty = true;
	rc = stdin_line(l, o, err);
	json_object_put(o);
	return rc < 0 ? stdin_failed(l, err) : 0;
}

static bool get_bool(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* Each line the CLI printed: a can_use_tool request becomes pending, a result ends a turn. */
static void on_event(void *userdata, const char *line, size_t len)
{
	struct live *l = userdata;
	struct session_live_event ev;
	struct err e;

	if (session_live_event_parse(line, len, &ev) < 0 || ev.kind == SESSION_LIVE_EVENT_OTHER)
		return;
	if (ev.kind == SESSION_LIVE_EVENT_RESULT) {
		l->st.busy = false;
		status_changed(l);
		return;
	}
	if (pending_find(l, ev.request_id)) {
		session_live_event_dispose(&ev);
		return;
	}
	l->pending[l->n_pending++] = (struct pending){
	    .id = TAKE_PTR(ev.request_id),
	    .input = TAKE_PTR(ev.input),
	    .deadline_ms = clock_now_ms() + (uint64_t)l->job->req->approval_timeout * 1000,
	};
	/* Refused at once: more than we keep waiting, or an input too large to keep and echo. */
	if (l->n_pending > SESSION_LIVE_PENDING_MAX || len > SESSION_LIVE_CONTROL_MAX) {
		(void)answer(l, &l->pending[l->n_pending - 1], false,
		             len > SESSION_LIVE_CONTROL_MAX
		                 ? "The tool call's input is too large to be relayed for approval."
		                 : "Too many tool calls wait for an answer.",
		             false, "limit", &e);
		return;
	}
	status_changed(l);
}

static void expire(struct live *l)
{
	uint64_t now = clock_now_ms();
	char msg[128];
	struct err e;

	for (size_t i = 0; i < l->n_pending;) {
		if (now < l->pending[i].deadline_ms) {
			i++;
			continue;
		}
		snprintf(msg, sizeof(msg), "No answer came within %u s: denied.",
		         l->job->req->approval_timeout);
		/* Answered or not, it is forgotten: pending[i] is another request now. */
		(void)answer(l, &l->pending[i], false, msg, false, "timeout", &e);
	}
}

static size_t poll_fill(void *userdata, struct pollfd *pfd, size_t max)
{
	struct live *l = userdata;

	expire(l);
	if (max < 1 || l->listen_fd < 0)
		return 0;
	pfd[0] = (struct pollfd){.fd = l->listen_fd, .events = POLLIN};
	return 1;
}

static json_object *reply_error(const struct err *e)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(e->msg));
	json_object_object_add(o, "code", json_object_new_int(e->code));
	json_object_object_add(
	    o, "class", json_object_new_string(e->cls == ERR_REFUSED ? "refused" : "failed"));
	return o;
}

static json_object *control(struct live *l, json_object *rq)
{
	const char *op = json_get_string(rq, "op");
	json_object *ok;
	struct err e;

	err_clear(&e);
	if (!op) {
		err_set(&e, ERR_REFUSED, EINVAL, "a control request needs `op`");
	} else if (strcmp(op, "send") == 0) {
		json_object *t;

		if (!json_object_object_get_ex(rq, "text", &t) ||
		    !json_object_is_type(t, json_type_string) || json_object_get_string_len(t) == 0)
			err_set(&e, ERR_REFUSED, EINVAL, "session.send needs the turn's text");
		else if (json_object_get_string_len(t) > SESSION_LIVE_TURN_MAX)
			err_set(&e, ERR_REFUSED, E2BIG, "a turn is at most %d bytes",
			        SESSION_LIVE_TURN_MAX);
		else
			(void)send_turn(l, json_object_get_string(t),
			                (size_t)json_object_get_string_len(t), &e);
	} else if (strcmp(op, "answer") == 0) {
		const char *id = json_get_string(rq, "request_id");
		struct pending *p = id ? pending_find(l, id) : NULL;

		if (!id)
			err_set(&e, ERR_REFUSED, EINVAL, "session.answer needs `request_id`");
		else if (!p)
			err_set(&e, ERR_REFUSED, ENOENT,
			        "no tool call %.128s waits for an answer (answered, timed out, or "
			        "never asked): see the session's events",
			        id);
		else
			(void)answer(l, p, get_bool(rq, "allow"), json_get_string(rq, "message"),
			             get_bool(rq, "interrupt"), "host", &e);
	} else if (strcmp(op, "cancel") == 0) {
		int fd = openat(l->job->dirfd, "cancel",
		                O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd >= 0)
			close(fd);
		if (l->pid > 1)
			kill(-l->pid, SIGTERM);
	} else if (strcmp(op, "diff") == 0) {
		session_job_write_diff(l->job);
	} else {
		err_set(&e, ERR_REFUSED, EOPNOTSUPP, "unknown control request `%.32s`", op);
	}
	if (e.cls != ERR_NONE)
		return reply_error(&e);
	ok = json_object_new_object();
	json_object_object_add(ok, "ok", json_object_new_boolean(true));
	json_object_object_add(ok, "pending", json_object_new_int64((int64_t)l->n_pending));
	json_object_object_add(ok, "turns", json_object_new_int64(l->st.turns));
	return ok;
}

/* One connection: one request read (1 s at most), one reply. */
static void control_conn(struct live *l, int fd)
{
	_cleanup_free_ char *buf = malloc(SESSION_LIVE_CONTROL_MAX + 1);
	_cleanup_json_ json_object *rq = NULL, *reply = NULL;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	enum json_tokener_error jerr;
	size_t off;
	ssize_t n;
	const char *s;

	if (!buf || poll(&p, 1, CONTROL_READ_MS) <= 0)
		return;
	n = recv(fd, buf, SESSION_LIVE_CONTROL_MAX + 1, MSG_DONTWAIT | MSG_TRUNC);
	if (n <= 0)
		return;
	if ((size_t)n > SESSION_LIVE_CONTROL_MAX ||
	    json_strict_parse(buf, (size_t)n, &rq, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(rq, json_type_object)) {
		struct err e;

		err_set(&e, ERR_REFUSED, EINVAL,
		        "a control request is one JSON object of at most %d bytes",
		        SESSION_LIVE_CONTROL_MAX);
		reply = reply_error(&e);
	} else {
		reply = control(l, rq);
	}
	s = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN);
	(void)send(fd, s, strlen(s), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void poll_done(void *userdata, const struct pollfd *pfd, size_t n)
{
	struct live *l = userdata;

	/* The round after a turn or an answer: the CLI's output of this round is passed on. */
	if (l->status_dirty)
		status_changed(l);
	if (n < 1 || !(pfd[0].revents & POLLIN))
		return;
	for (int i = 0; i < 8; i++) {
		int fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);

		session_live_socket_room(fd);
		struct ucred cred;
		socklen_t cl = sizeof(cred);

		if (fd < 0)
			return;
		/* The daemon (root) only: the socket's directory is root's 0700 anyway. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && cred.uid == 0)
			control_conn(l, fd);
		close(fd);
	}
}

static void live_started(void *userdata, pid_t pid)
{
	struct live *l = userdata;
	struct err e;

	l->pid = pid;
	close(l->stdin_r);
	l->stdin_r = -1;
	if (send_turn(l, l->first_turn, l->first_len, &e) < 0)
		log_warn("the first turn: %s", e.msg);
}

static int listen_control(struct live *l, struct err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", l->job->dir,
	                     SESSION_LIVE_SOCKET) >= sizeof(sa.sun_path))
		return err_set(err, ERR_FAILED, ENAMETOOLONG,
		               "%s: the path is too long for a socket", l->job->dir);
	(void)unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_errno(err, "socket");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sa.sun_path, 0600) < 0 ||
	    listen(fd, 16) < 0) {
		close(fd);
		return err_errno(err, "cannot listen on %s", sa.sun_path);
	}
	l->listen_fd = fd;
	return 0;
}

static int live_setup(struct live *l, struct err *err);

/* A session that could not get as far as its CLI ends `finished` with the reason. */
int session_live_run(struct session_job *job, struct err *err)
{
	struct live l = {.job = job, .stdin_r = -1, .stdin_w = -1, .listen_fd = -1};
	char path[4096];
	int rc;

	l.st.live = true;
	l.st.dangerously_no_sandbox = job->req->dangerously_no_sandbox;
	job->live = &l.st;
	if (live_setup(&l, err) < 0) {
		struct session_status st = {.state = SESSION_FINISHED, .exit_status = 127};
		struct err e;

		snprintf(st.started_at, sizeof(st.started_at), "%s", job->started_at);
		session_status_now(st.finished_at);
		snprintf(st.error, sizeof(st.error), "%s", err->msg);
		(void)session_job_status_write(job, &st, &e);
		rc = -1;
	} else {
		rc = session_job_run(job, err);
	}
	snprintf(path, sizeof(path), "%s/%s", job->dir, SESSION_LIVE_SOCKET);
	if (l.listen_fd >= 0) {
		(void)unlink(path);
		close(l.listen_fd);
	}
	if (l.stdin_r >= 0)
		close(l.stdin_r);
	if (l.stdin_w >= 0)
		close(l.stdin_w);
	while (l.n_pending)
		pending_drop(&l, &l.pending[0]);
	free(l.first_turn);
	return rc;
}

static int live_setup(struct live *l, struct err *err)
{
	struct session_job *job = l->job;
	int fds[2];
	ssize_t n;

	l->first_turn = malloc(SESSION_LIVE_TURN_MAX + 1);
	if (!l->first_turn)
		return err_oom(err);
	n = file_read_all(job->prompt_fd, l->first_turn, SESSION_LIVE_TURN_MAX + 1);
	if (n < 0) {
		errno = (int)-n;
		return err_errno(err, "reading prompt.txt");
	}
	if ((size_t)n > SESSION_LIVE_TURN_MAX) {
		return err_set(err, ERR_REFUSED, E2BIG, "prompt.txt: a turn is at most %d bytes",
		               SESSION_LIVE_TURN_MAX);
	}
	l->first_len = (size_t)n;
	if (l->first_len == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "prompt.txt is empty");
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	l->stdin_r = fds[0];
	l->stdin_w = fds[1];
	if (listen_control(l, err) < 0)
		return err_ret(err);
	l->hooks = (struct session_run_hooks){
	    .userdata = l,
	    .events = &l->events,
	    .event = on_event,
	    .poll_fill = poll_fill,
	    .poll_done = poll_done,
	};
	job->hooks = &l->hooks;
	job->stdin_fd = l->stdin_r;
	job->started = live_started;
	return 0;
}
