/* SPDX-License-Identifier: Apache-2.0 */
#include "serve_ops_session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "file.h"
#include "json_strict.h"
#include "log.h"
#include "proc.h"
#include "secrets_store.h"
#include "serve_config.h"
#include "session_confine.h"
#include "serve_stream.h"
#include "session_dir.h"
#include "session_live.h"
#include "session_request.h"
#include "session_status.h"
#include "strv.h"

#define CONTROL_REPLY_MS 10000 /* the supervisor answers at once, but a diff takes a while */
#define HELPER_ANSWER_MS 30000
#define HELPER_ANSWER_MAX 65536
#define LIST_MAX 256
#define MAX_TURNS_MAX 1000
#define DIFF_SEND_MAX 1000000

static const char *session_root(void)
{
	const char *r = getenv("SANDBOX_CLAUDE_ROOT");

	return r && *r ? r : SESSION_DIR_ROOT;
}

static bool id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (id[i] < '0' || id[i] > '9')
			return false;
	return true;
}

/* The session directory of the request's `id`, opened (session_dir_open's checks). */
static int session_open(const struct msg *m, char dir[PATH_MAX], const char **ret_id,
                        struct err *err)
{
	const char *id = msg_get_string(m, "id");
	int fd;

	if (!id_valid(id))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "a session request needs `id`, the digits session.start answered");
	snprintf(dir, PATH_MAX, "%s/sessions/%s", session_root(), id);
	fd = session_dir_open(session_root(), dir, false, err);
	if (fd < 0 && err->code == ENOENT)
		return err_set(
		    err, ERR_REFUSED, ENOENT,
		    "there is no session %s in this guest: session.list names those there are", id);
	if (ret_id)
		*ret_id = id;
	return fd;
}

/* One request to the session's supervisor through its control socket, one reply. */
static int control_call(const char *dir, json_object *rq, json_object **ret, struct err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	const char *s = json_object_to_json_string_ext(rq, JSON_C_TO_STRING_PLAIN);
	struct pollfd p;
	enum json_tokener_error jerr;
	size_t off;
	ssize_t n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, SESSION_LIVE_SOCKET);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_errno(err, "socket");
	session_live_socket_room(fd);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			return err_set(err, ERR_REFUSED, ESRCH,
			               "the session has ended: it takes no more turns or answers "
			               "(its events and diff are still there)");
		return err_errno(err, "cannot reach the session's supervisor at %s", sa.sun_path);
	}
	if (send(fd, s, strlen(s), MSG_NOSIGNAL) < 0)
		return err_errno(err, "sending to the session's supervisor");
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&p, 1, CONTROL_REPLY_MS) <= 0)
		return err_set(err, ERR_FAILED, ETIMEDOUT,
		               "the session's supervisor did not answer within %d s",
		               CONTROL_REPLY_MS / 1000);
	buf = malloc(SESSION_LIVE_CONTROL_MAX);
	if (!buf)
		return err_oom(err);
	n = recv(fd, buf, SESSION_LIVE_CONTROL_MAX, MSG_DONTWAIT);
	if (n <= 0 || json_strict_parse(buf, (size_t)n, ret, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(*ret, json_type_object)) {
		if (n > 0 && *ret) {
			json_object_put(*ret);
			*ret = NULL;
		}
		return err_set(err, ERR_FAILED, EIO,
		               "the session's supervisor sent no valid answer");
	}
	{
		json_object *e, *code, *cls;

		if (json_object_object_get_ex(*ret, "error", &e)) {
			int c = json_object_object_get_ex(*ret, "code", &code)
			            ? json_object_get_int(code)
			            : EIO;
			bool refused = json_object_object_get_ex(*ret, "class", &cls) &&
			               strcmp(json_object_get_string(cls), "refused") == 0;

			err_set(err, refused ? ERR_REFUSED : ERR_FAILED, c, "%s",
			        json_object_get_string(e));
			json_object_put(*ret);
			*ret = NULL;
			return -1;
		}
	}
	return 0;
}

/* An operation that is one control request: the session's id, the request, the reply. */
static int control_op(struct conn *c, struct stream *st, const struct msg *m, json_object *rq)
{
	char dir[PATH_MAX];
	_cleanup_close_ int fd = -1;
	json_object *reply = NULL;
	const char *id;
	struct err err;

	err_clear(&err);
	fd = session_open(m, dir, &id, &err);
	if (fd < 0 || control_call(dir, rq, &reply, &err) < 0) {
		json_object_put(rq);
		return serve_stream_error(c, st, &err);
	}
	json_object_put(rq);
	json_object_object_del(reply, "ok");
	json_object_object_add(reply, "id", json_object_new_string(id));
	return serve_stream_ok(c, st, reply);
}

/* ---- session.start ---- */

int serve_ops_session_start_decide(const struct serve_session_start *s, const char *record,
                                   struct err *err)
{
	/* The same check sandbox-claude makes again, here before anything is written. */
	return session_confine_check_at(record, s->dangerously_no_sandbox, err);
}

struct cred_find {
	const char *name;
	char *value; /* sodium_malloc'ed, NUL-terminated */
};

static int cred_visit(void *userdata, const char *name, enum secret_scope scope,
                      const uint8_t *value, size_t len)
{
	struct cred_find *f = userdata;

	(void)scope;
	if (strcmp(name, f->name) != 0 || f->value)
		return 0;
	f->value = sodium_malloc(len + 1);
	if (!f->value)
		return -ENOMEM;
	memcpy(f->value, value, len);
	f->value[len] = '\0';
	return 0;
}

static bool model_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("._:-[]", s[i])))
			return false;
	return true;
}

static void add_arg(json_object *argv, const char *s)
{
	json_object_array_add(argv, json_object_new_string(s));
}

/* request.json for the helper, from session.start's fields. */
static int build_request(const struct msg *m, const struct serve_session_start *s,
                         json_object **ret, struct err *err)
{
	json_object *o = json_object_new_object(), *argv = json_object_new_array(), *v;
	const char *model = msg_get_string(m, "model");
	int64_t n;

	add_arg(argv, "claude");
	add_arg(argv, "-p");
	add_arg(argv, "--input-format");
	add_arg(argv, "stream-json");
	add_arg(argv, "--output-format");
	add_arg(argv, "stream-json");
	add_arg(argv, "--verbose");
	add_arg(argv, "--no-session-persistence");
	if (model) {
		if (!model_valid(model)) {
			json_object_put(argv);
			json_object_put(o);
			return err_set(err, ERR_REFUSED, EINVAL,
			               "session.start: `model` is a model's name (letters, digits, "
			               "._:-[], at most 128)");
		}
		add_arg(argv, "--model");
		add_arg(argv, model);
	}
	if (msg_get_int64(m, "max_turns", &n)) {
		char buf[32];

		if (n < 1 || n > MAX_TURNS_MAX) {
			json_object_put(argv);
			json_object_put(o);
			return err_set(err, ERR_REFUSED, ERANGE,
			               "session.start: `max_turns` must be 1 to %d", MAX_TURNS_MAX);
		}
		snprintf(buf, sizeof(buf), "%" PRId64, n);
		add_arg(argv, "--max-turns");
		add_arg(argv, buf);
	}
	if (strcmp(s->permission_mode, "skip") == 0) {
		add_arg(argv, "--permission-mode");
		add_arg(argv, "bypassPermissions");
	} else {
		if (strcmp(s->permission_mode, "accept_edits") == 0) {
			add_arg(argv, "--permission-mode");
			add_arg(argv, "acceptEdits");
		}
		add_arg(argv, "--permission-prompt-tool");
		add_arg(argv, "stdio");
	}
	json_object_object_add(o, "argv", argv);
	json_object_object_add(o, "mode", json_object_new_string(s->mode));
	json_object_object_add(o, "live", json_object_new_boolean(true));
	json_object_object_add(o, "dangerously_no_sandbox",
	                       json_object_new_boolean(s->dangerously_no_sandbox));
	if (msg_get_int64(m, "timeout", &n))
		json_object_object_add(o, "timeout", json_object_new_int64(n));
	if (msg_get_int64(m, "approval_timeout", &n))
		json_object_object_add(o, "approval_timeout", json_object_new_int64(n));
	if (m->json && json_object_object_get_ex(m->json, "env", &v))
		json_object_object_add(o, "env", json_object_get(v));
	if (m->json && json_object_object_get_ex(m->json, "pathspecs", &v))
		json_object_object_add(o, "pathspecs", json_object_get(v));
	/* The helper checks every value again (session_request.c): the one set of rules. */
	{
		const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
		struct session_request rq;

		if (session_request_parse(text, strlen(text), &rq, err) < 0) {
			json_object_put(o);
			return err_wrap(err, "session.start");
		}
		session_request_dispose(&rq);
	}
	*ret = o;
	return 0;
}

/* A new ROOT/sessions/<n>, one past the highest there is. */
static int new_session_dir(char dir[PATH_MAX], char id[40], struct err *err)
{
	char sessions[PATH_MAX];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	unsigned long long max = 0;

	snprintf(sessions, sizeof(sessions), "%s/sessions", session_root());
	if (file_mkdir_p(sessions, 0700, err) < 0)
		return err_ret(err);
	d = opendir(sessions);
	while (d && (de = readdir(d)))
		if (id_valid(de->d_name) && strlen(de->d_name) < 19 &&
		    strtoull(de->d_name, NULL, 10) > max)
			max = strtoull(de->d_name, NULL, 10);
	for (int tries = 0; tries < 16; tries++) {
		snprintf(id, 40, "%llu", max + 1 + (unsigned long long)tries);
		snprintf(dir, PATH_MAX, "%s/%s", sessions, id);
		if (mkdir(dir, 0700) == 0)
			return 0;
		if (errno != EEXIST)
			return err_errno(err, "cannot make %s", dir);
	}
	return err_set(err, ERR_FAILED, EEXIST, "no new session directory below %s", sessions);
}

static void env_wipe_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		sodium_memzero(env[i], strlen(env[i]));
	strv_free(env);
}

/*
 * Run `sandbox-claude session-start --dir DIR` (the part-1 helper, the same binary) with the
 * credential in its environment only, and read its one-line answer.
 */
static int run_helper(struct serve *srv, const char *dir, const char *cred_name, const char *cred,
                      const char *record, struct err *err)
{
	char *argv[] = {"sandbox-claude", "session-start", "--dir", (char *)dir, NULL};
	_cleanup_free_ char *out = malloc(HELPER_ANSWER_MAX + 1);
	char **env = strv_copy(srv->clean_env);
	size_t len = 0;
	int pipefd[2], status = 0;
	uint64_t deadline = clock_now_ms() + HELPER_ANSWER_MS;
	pid_t pid;

	if (!out || !env) {
		strv_free(env);
		return err_oom(err);
	}
	/* Only the one credential the request names, whatever the daemon's own environment. */
	strv_env_unset(env, "ANTHROPIC_API_KEY");
	strv_env_unset(env, "ANTHROPIC_AUTH_TOKEN");
	strv_env_unset(env, "CLAUDE_CODE_OAUTH_TOKEN");
	if ((cred && strv_env_set(&env, cred_name, cred) < 0) ||
	    strv_env_set(&env, SESSION_CONFINE_RECORD_ENV, record) < 0) {
		env_wipe_free(env);
		return err_oom(err);
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		env_wipe_free(env);
		return err_errno(err, "pipe");
	}
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(pipefd[1], 1) < 0 || dup2(nul, 2) < 0)
			_exit(127);
		execve(srv->cfg->runner, argv, env);
		_exit(127);
	}
	close(pipefd[1]);
	env_wipe_free(env);
	if (pid < 0) {
		close(pipefd[0]);
		return err_errno(err, "starting the session: fork");
	}
	for (;;) {
		struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
		uint64_t now = clock_now_ms();
		ssize_t n;

		if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
			break;
		n = read(pipefd[0], out + len, HELPER_ANSWER_MAX - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == HELPER_ANSWER_MAX)
			break;
	}
	close(pipefd[0]);
	if (clock_now_ms() >= deadline)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[len] = '\0';
	while (len && out[len - 1] == '\n')
		out[--len] = '\0';
	{
		const char *last = strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
		_cleanup_json_ json_object *a = json_tokener_parse(last);
		json_object *e;

		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			return 0;
		if (a && json_object_object_get_ex(a, "error", &e))
			return err_set(err, WEXITSTATUS(status) == 2 ? ERR_REFUSED : ERR_FAILED,
			               strstr(json_object_get_string(e), "still running") ? EBUSY
			                                                                  : EINVAL,
			               "session.start: %s", json_object_get_string(e));
		return err_set(err, ERR_FAILED, EIO, "session.start: the session helper %s",
		               WIFEXITED(status) ? "exited without an answer" : "was killed");
	}
}

static void dir_remove(const char *dir)
{
	char p[PATH_MAX + 32];
	const char *names[] = {"request.json", "prompt.txt", "status.json", "events.jsonl"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		(void)unlink(p);
	}
	(void)rmdir(dir);
}

int serve_ops_session_start(struct conn *c, struct stream *st, const struct msg *m)
{
	struct serve_session_start s = {.permission_mode = "ask", .mode = "api_key"};
	_cleanup_json_ json_object *req = NULL;
	_cleanup_free_ char *record = NULL;
	struct cred_find cf = {.name = "ANTHROPIC_API_KEY"};
	char dir[PATH_MAX], id[40], path[PATH_MAX + 32];
	const char *v;
	json_object *reply, *b;
	struct err err;
	int rc;

	err_clear(&err);
	if ((v = msg_get_string(m, "permission_mode")))
		s.permission_mode = v;
	if (strcmp(s.permission_mode, "ask") != 0 &&
	    strcmp(s.permission_mode, "accept_edits") != 0 &&
	    strcmp(s.permission_mode, "skip") != 0) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "session.start: `permission_mode` is ask, accept_edits or skip");
		return serve_stream_error(c, st, &err);
	}
	if ((v = msg_get_string(m, "mode")))
		s.mode = v;
	if (strcmp(s.mode, "api_key") != 0 && strcmp(s.mode, "sandbox_login") != 0) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "session.start: `mode` is api_key or sandbox_login");
		return serve_stream_error(c, st, &err);
	}
	s.dangerously_no_sandbox =
	    m->json && json_object_object_get_ex(m->json, "dangerously_no_sandbox", &b) &&
	    json_object_get_boolean(b);
	if ((v = msg_get_string(m, "credential")))
		cf.name = v;
	if (strcmp(cf.name, "ANTHROPIC_API_KEY") != 0 &&
	    strcmp(cf.name, "CLAUDE_CODE_OAUTH_TOKEN") != 0) {
		err_set(
		    &err, ERR_REFUSED, EINVAL,
		    "session.start: `credential` is ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN, "
		    "a secret of the session scope");
		return serve_stream_error(c, st, &err);
	}
	if (m->data_len == 0 || m->data_len > SESSION_LIVE_TURN_MAX) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "session.start: the prompt (the message's data part) must be 1 to %d bytes",
		        SESSION_LIVE_TURN_MAX);
		return serve_stream_error(c, st, &err);
	}
	if (asprintf(&record, "%s/confinement.json", c->srv->cfg->state_dir) < 0) {
		record = NULL;
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	if (build_request(m, &s, &req, &err) < 0 ||
	    serve_ops_session_start_decide(&s, record, &err) < 0)
		return serve_stream_error(c, st, &err);
	if (strcmp(s.mode, "api_key") == 0) {
		if (secrets_store_visit(c->srv->secrets, SECRET_SCOPE_SESSION, cred_visit, &cf) <
		    0) {
			err_oom(&err);
			return serve_stream_error(c, st, &err);
		}
		if (!cf.value) {
			err_set(&err, ERR_REFUSED, ENOKEY,
			        "session.start: there is no %s of the session scope: put it first "
			        "(sandbox-ctl secrets put --scope session %s)",
			        cf.name, cf.name);
			return serve_stream_error(c, st, &err);
		}
	}
	rc = new_session_dir(dir, id, &err);
	if (rc == 0) {
		const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);

		snprintf(path, sizeof(path), "%s/request.json", dir);
		rc = file_write_replace(path, text, strlen(text), 0600, (uid_t)-1, (gid_t)-1, &err);
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/prompt.txt", dir);
		rc = file_write_replace(path, m->data, m->data_len, 0600, (uid_t)-1, (gid_t)-1,
		                        &err);
	}
	if (rc == 0)
		rc = run_helper(c->srv, dir, cf.name, cf.value, record, &err);
	if (cf.value)
		sodium_free(cf.value);
	if (rc < 0) {
		if (dir[0] && access(dir, F_OK) == 0) {
			struct stat sst;

			snprintf(path, sizeof(path), "%s/status.json", dir);
			if (stat(path, &sst) < 0)
				dir_remove(dir);
		}
		return serve_stream_error(c, st, &err);
	}
	log_info("connection %" PRIu64 ": session %s started (%s%s)", c->id, id, s.permission_mode,
	         s.dangerously_no_sandbox ? ", dangerously_no_sandbox" : "");
	reply = json_object_new_object();
	json_object_object_add(reply, "id", json_object_new_string(id));
	json_object_object_add(reply, "status", json_object_new_string("started"));
	json_object_object_add(
	    reply, "sandbox",
	    json_object_new_string(session_confine_word(s.dangerously_no_sandbox)));
	json_object_object_add(reply, "dir", json_object_new_string(dir));
	return serve_stream_ok(c, st, reply);
}

/* ---- send, answer, cancel, diff ---- */

int serve_ops_session_send(struct conn *c, struct stream *st, const struct msg *m)
{
	json_object *rq = json_object_new_object();

	json_object_object_add(rq, "op", json_object_new_string("send"));
	json_object_object_add(rq, "text",
	                       json_object_new_string_len((const char *)m->data, (int)m->data_len));
	return control_op(c, st, m, rq);
}

int serve_ops_session_answer(struct conn *c, struct stream *st, const struct msg *m)
{
	json_object *rq = json_object_new_object(), *v;
	const char *behavior = msg_get_string(m, "behavior");
	const char *rid = msg_get_string(m, "request_id");
	const char *message = msg_get_string(m, "message");
	struct err err;

	if (!rid || !behavior ||
	    (strcmp(behavior, "allow") != 0 && strcmp(behavior, "deny") != 0)) {
		json_object_put(rq);
		err_set(&err, ERR_REFUSED, EINVAL,
		        "session.answer needs `request_id` and `behavior` (allow or deny)");
		return serve_stream_error(c, st, &err);
	}
	json_object_object_add(rq, "op", json_object_new_string("answer"));
	json_object_object_add(rq, "request_id", json_object_new_string(rid));
	json_object_object_add(rq, "allow",
	                       json_object_new_boolean(strcmp(behavior, "allow") == 0));
	if (message)
		json_object_object_add(rq, "message", json_object_new_string(message));
	json_object_object_add(rq, "interrupt",
	                       json_object_new_boolean(
	                           m->json && json_object_object_get_ex(m->json, "interrupt", &v) &&
	                           json_object_get_boolean(v)));
	return control_op(c, st, m, rq);
}

int serve_ops_session_cancel(struct conn *c, struct stream *st, const struct msg *m)
{
	char dir[PATH_MAX];
	_cleanup_close_ int fd = -1;
	json_object *rq, *reply = NULL, *ok;
	struct session_status ss;
	const char *id;
	struct err err;

	err_clear(&err);
	fd = session_open(m, dir, &id, &err);
	if (fd < 0)
		return serve_stream_error(c, st, &err);
	ok = json_object_new_object();
	json_object_object_add(ok, "id", json_object_new_string(id));
	if (session_status_read(fd, &ss, &err) == 0 && ss.state == SESSION_FINISHED) {
		json_object_object_add(ok, "status", json_object_new_string("finished"));
		return serve_stream_ok(c, st, ok);
	}
	/* The cancel file first: it also stops a session whose supervisor cannot be reached. */
	{
		int cf = openat(fd, "cancel", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (cf >= 0)
			close(cf);
	}
	rq = json_object_new_object();
	json_object_object_add(rq, "op", json_object_new_string("cancel"));
	if (control_call(dir, rq, &reply, &err) < 0)
		log_debug("session %s: cancel: %s (the cancel file stays)", id, err.msg);
	json_object_put(rq);
	json_object_put(reply);
	json_object_object_add(ok, "status", json_object_new_string("cancelling"));
	return serve_stream_ok(c, st, ok);
}

int serve_ops_session_diff(struct conn *c, struct stream *st, const struct msg *m)
{
	char dir[PATH_MAX];
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL;
	json_object *rq, *reply = NULL, *ok;
	const char *id;
	size_t len = 0;
	bool live = true;
	struct err err, ce;
	int rc;

	err_clear(&err);
	fd = session_open(m, dir, &id, &err);
	if (fd < 0)
		return serve_stream_error(c, st, &err);
	rq = json_object_new_object();
	json_object_object_add(rq, "op", json_object_new_string("diff"));
	/* A running session writes diff.patch now; an ended one wrote it last. */
	if (control_call(dir, rq, &reply, &ce) < 0)
		live = false;
	json_object_put(rq);
	json_object_put(reply);
	rc = file_read_capped(fd, "diff.patch", SESSION_DIFF_BYTES_MAX,
	                      READ_NOFOLLOW | READ_MISSING_OK, &text, &len, &err);
	if (rc < 0)
		return serve_stream_error(c, st, &err);
	ok = json_object_new_object();
	json_object_object_add(ok, "id", json_object_new_string(id));
	json_object_object_add(ok, "bytes", json_object_new_int64((int64_t)len));
	json_object_object_add(ok, "truncated", json_object_new_boolean(len > DIFF_SEND_MAX));
	json_object_object_add(ok, "live", json_object_new_boolean(live));
	st->done = true;
	return serve_stream_send(c, MSG_OK, MSG_F_END, st->id, ok, text,
	                         len > DIFF_SEND_MAX ? DIFF_SEND_MAX : len);
}

/* ---- list ---- */

static json_object *status_json(const char *id, const struct session_status *ss)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "status",
	                       json_object_new_string(session_status_state_name(ss->state)));
	json_object_object_add(o, "live", json_object_new_boolean(ss->live));
	if (ss->started_at[0])
		json_object_object_add(o, "started_at", json_object_new_string(ss->started_at));
	if (ss->state == SESSION_FINISHED) {
		json_object_object_add(o, "exit_status", json_object_new_int(ss->exit_status));
		json_object_object_add(o, "cancelled", json_object_new_boolean(ss->cancelled));
		if (ss->finished_at[0])
			json_object_object_add(o, "finished_at",
			                       json_object_new_string(ss->finished_at));
	}
	if (ss->live) {
		json_object_object_add(o, "busy", json_object_new_boolean(ss->busy));
		json_object_object_add(o, "turns", json_object_new_int64(ss->turns));
		json_object_object_add(o, "pending", json_object_new_int64(ss->pending));
		json_object_object_add(o, "dangerously_no_sandbox",
		                       json_object_new_boolean(ss->dangerously_no_sandbox));
	}
	if (ss->error[0])
		json_object_object_add(o, "error", json_object_new_string(ss->error));
	return o;
}

static int id_cmp(const void *a, const void *b)
{
	unsigned long long x = strtoull(*(char *const *)a, NULL, 10),
	                   y = strtoull(*(char *const *)b, NULL, 10);

	return x < y ? -1 : x > y;
}

int serve_ops_session_list(struct conn *c, struct stream *st, const struct msg *m)
{
	char sessions[PATH_MAX];
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_strv_ char **ids = NULL;
	json_object *arr = json_object_new_array(), *ok;
	struct dirent *de;
	size_t n = 0;

	(void)m;
	snprintf(sessions, sizeof(sessions), "%s/sessions", session_root());
	d = opendir(sessions);
	while (d && (de = readdir(d)))
		if (id_valid(de->d_name) && strv_push(&ids, de->d_name) == 0)
			n++;
	if (n)
		qsort(ids, n, sizeof(ids[0]), id_cmp);
	for (size_t i = n > LIST_MAX ? n - LIST_MAX : 0; i < n; i++) {
		char dir[PATH_MAX];
		struct session_status ss;
		struct err err;
		int fd;

		snprintf(dir, sizeof(dir), "%s/%s", sessions, ids[i]);
		fd = session_dir_open(session_root(), dir, false, &err);
		if (fd < 0)
			continue;
		if (session_status_read(fd, &ss, &err) == 0)
			json_object_array_add(arr, status_json(ids[i], &ss));
		close(fd);
	}
	ok = json_object_new_object();
	json_object_object_add(ok, "sessions", arr);
	json_object_object_add(ok, "more", json_object_new_boolean(n > LIST_MAX));
	return serve_stream_ok(c, st, ok);
}

/* ---- events ---- */

struct events_op {
	char path[PATH_MAX];
	int dirfd;
	int inotify_fd; /* the session directory's changes, or -1 */
	uint64_t offset;
	bool follow;
	char id[40];
};

static void events_free(void *data)
{
	struct events_op *op = data;

	if (op->dirfd >= 0)
		close(op->dirfd);
	if (op->inotify_fd >= 0)
		close(op->inotify_fd);
	free(op);
}

static uint64_t size_of(const char *path)
{
	struct stat s;

	return lstat(path, &s) == 0 && S_ISREG(s.st_mode) ? (uint64_t)s.st_size : 0;
}

static bool session_ended(struct events_op *op)
{
	struct session_status ss;
	struct err err;

	return session_status_read(op->dirfd, &ss, &err) != 0 || ss.state == SESSION_FINISHED;
}

static int send_events(struct conn *c, struct stream *st, struct events_op *op, const void *buf,
                       size_t len, bool end)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_string(op->id));
	json_object_object_add(o, "offset", json_object_new_int64((int64_t)op->offset));
	if (end) {
		json_object_object_add(o, "ended", json_object_new_boolean(session_ended(op)));
		st->done = true;
	}
	return serve_stream_send(c, MSG_SESSION_EVENT, end ? MSG_F_END : 0, st->id, o, buf, len);
}

/*
 * Whole lines from the offset, at most SERVE_CHUNK a message (a longer line goes in pieces);
 * with follow, on until the session has ended and everything it wrote was sent.
 */
static int events_pump(struct conn *c, struct stream *st)
{
	struct events_op *op = st->data;
	uint8_t buf[SERVE_CHUNK];
	uint64_t size, want;
	ssize_t n;
	int fd;

	if (op->inotify_fd >= 0) {
		char drain[4096];

		while (read(op->inotify_fd, drain, sizeof(drain)) > 0)
			;
	}
	size = size_of(op->path);
	if (op->offset > size)
		op->offset = size;
	want = size - op->offset;
	if (want > sizeof(buf))
		want = sizeof(buf);
	if (want == 0) {
		if (!op->follow)
			send_events(c, st, op, NULL, 0, true);
		else if (session_ended(op) && size_of(op->path) == size)
			send_events(c, st, op, NULL, 0, true);
		return 0;
	}
	fd = open(op->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	n = fd < 0 ? -1 : pread(fd, buf, want, (off_t)op->offset);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	{
		size_t keep = (size_t)n;

		while (keep && buf[keep - 1] != '\n')
			keep--;
		if (keep == 0 && (size_t)n < sizeof(buf))
			return 0; /* half a line: the rest comes with its newline */
		if (keep)
			n = (ssize_t)keep;
	}
	if (send_events(c, st, op, buf, (size_t)n, false) < 0)
		return 0;
	op->offset += (uint64_t)n;
	return 1;
}

static void events_cancel(struct conn *c, struct stream *st)
{
	send_events(c, st, st->data, NULL, 0, true);
}

static int events_wake_fd(const struct stream *st)
{
	const struct events_op *op = st->data;

	return op->inotify_fd;
}

static const struct stream_ops events_ops = {
    .on_cancel = events_cancel,
    .pump = events_pump,
    .free = events_free,
    .wake_fd = events_wake_fd,
};

int serve_ops_session_events(struct conn *c, struct stream *st, const struct msg *m)
{
	char dir[PATH_MAX];
	struct events_op *op;
	const char *id;
	json_object *v;
	int64_t offset = 0;
	struct err err;
	int fd;

	err_clear(&err);
	if (msg_get_int64(m, "offset", &offset) && offset < 0) {
		err_set(&err, ERR_REFUSED, EINVAL, "session.events: `offset` counts bytes from 0");
		return serve_stream_error(c, st, &err);
	}
	fd = session_open(m, dir, &id, &err);
	if (fd < 0)
		return serve_stream_error(c, st, &err);
	op = calloc(1, sizeof(*op));
	if (!op) {
		close(fd);
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	op->dirfd = fd;
	op->inotify_fd = -1;
	snprintf(op->id, sizeof(op->id), "%s", id);
	snprintf(op->path, sizeof(op->path), "%s/events.jsonl", dir);
	op->offset = (uint64_t)offset;
	op->follow = m->json && json_object_object_get_ex(m->json, "follow", &v) &&
	             json_object_get_boolean(v);
	/* Following: woken by each write of events.jsonl and each new status.json. */
	if (op->follow) {
		op->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (op->inotify_fd >= 0 &&
		    inotify_add_watch(op->inotify_fd, dir,
		                      IN_MODIFY | IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
			close(op->inotify_fd);
			op->inotify_fd = -1;
		}
	}
	st->data = op;
	st->ops = &events_ops;
	return 0;
}
