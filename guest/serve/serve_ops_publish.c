/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publish.commit (docs/protocol.md §7.9): commit the work tree of an app directory and send
 * the commit to the host as a pack; the host pushes it (docs/design.md, "Channel": the guest
 * never pushes and never sees the push token).
 *
 * It runs in the daemon, as checkout.pack does, holding the app's boot lock so no checkout is
 * swapped in meanwhile: git_publish_open() opens the checkout without trusting its .git (see
 * git_publish.h), git_publish_commit() writes the commit into memory only (nothing in the
 * checkout changes: not HEAD, not the index, not .git/objects), and git_pack_write() streams
 * everything the commit needs that is not reachable from the checkout's base (HEAD) or from
 * the commits the host says it has, as publish.data messages, then `ok`.
 */
#include "serve_ops_publish.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "boot_state.h"
#include "file.h"
#include "git_fetch.h"
#include "git_pack.h"
#include "git_publish.h"
#include "log.h"
#include "serve_apps.h"
#include "serve_jobs.h"
#include "serve_stream.h"

#define PUBLISH_HAVE_MAX 16
#define PUBLISH_CHUNK (60 * 1024)

struct publish_send {
	struct conn *c;
	uint32_t stream;
	uint8_t buf[PUBLISH_CHUNK];
	size_t len;
};

static int publish_flush(struct publish_send *ps)
{
	int r = 0;

	if (ps->len)
		r = serve_stream_send(ps->c, MSG_PUBLISH_DATA, 0, ps->stream, NULL, ps->buf,
		                      ps->len);
	ps->len = 0;
	return r;
}

static int publish_sink(void *userdata, const void *buf, size_t len)
{
	struct publish_send *ps = userdata;
	const uint8_t *p = buf;

	while (len > 0) {
		size_t n = PUBLISH_CHUNK - ps->len < len ? PUBLISH_CHUNK - ps->len : len;

		memcpy(ps->buf + ps->len, p, n);
		ps->len += n;
		p += n;
		len -= n;
		if (ps->len == PUBLISH_CHUNK && publish_flush(ps) < 0)
			return -1;
	}
	return 0;
}

/* Close every descriptor above 2 but a and b. */
static void close_all_but(int a, int b)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int self = d ? dirfd(d) : -1;

	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);
		if (fd > 2 && fd != a && fd != b && fd != self)
			close(fd);
	}
	closedir(d);
}

/* git_pack_write's sink in the child: the pack goes down the pipe to the daemon. */
static int publish_pipe_sink(void *userdata, const void *buf, size_t len)
{
	return file_write_all(*(int *)userdata, buf, len) < 0 ? -1 : 0;
}

/* author {"name", "email"} (required), "have" [hex, ...] (optional). */
static int publish_request(const struct msg *m, const char **ret_name, const char **ret_email,
                           git_oid *have, size_t *n_have, struct err *err)
{
	json_object *a, *v, *h;

	*ret_name = *ret_email = NULL;
	if (m->json && json_object_object_get_ex(m->json, "author", &a) &&
	    json_object_is_type(a, json_type_object)) {
		if (json_object_object_get_ex(a, "name", &v) &&
		    json_object_is_type(v, json_type_string))
			*ret_name = json_object_get_string(v);
		if (json_object_object_get_ex(a, "email", &v) &&
		    json_object_is_type(v, json_type_string))
			*ret_email = json_object_get_string(v);
	}
	if (!*ret_name || !*ret_email)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "publish.commit: \"author\" must be {\"name\", \"email\"}");
	*n_have = 0;
	if (!m->json || !json_object_object_get_ex(m->json, "have", &h))
		return 0;
	if (!json_object_is_type(h, json_type_array) ||
	    json_object_array_length(h) > PUBLISH_HAVE_MAX - 1)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "publish.commit: \"have\" must be a list of at most %d commit ids",
		               PUBLISH_HAVE_MAX - 1);
	for (size_t i = 0; i < json_object_array_length(h); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(h, i));

		if (!s || strlen(s) != GIT_OID_HEXSZ || git_oid_fromstr(&have[*n_have], s) < 0)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "publish.commit: \"have\" holds something that is not a "
			               "40-digit commit id");
		(*n_have)++;
	}
	return 0;
}

/*
 * In a child running as the checkout's owner (never root): open the checkout, make the commit
 * in memory and stream its pack to out_fd, after one line "COMMIT BASE\n". Whatever the app
 * could swap under libgit2 (a file for a link) is then read with the app's own rights, so no
 * file only root may read can end up in the commit. Errors go to err_fd as text.
 */
static _noreturn_ void publish_child(const struct msg *m, const char *app_dir, uid_t uid, gid_t gid,
                                     int out_fd, int err_fd)
{
	git_oid all[PUBLISH_HAVE_MAX + 1], base, commit;
	_cleanup_git_repository_ git_repository *repo = NULL;
	struct git_pack_stats stats = {0};
	const char *name, *email;
	char line[2 * GIT_OID_HEXSZ + 3];
	size_t n_have = 0;
	struct err err;

	err_clear(&err);
	/* Nothing of the daemon's but the two pipes: no connection, no listener. */
	close_all_but(out_fd, err_fd);
	if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0 || getuid() != uid ||
	    (uid != 0 && setuid(0) == 0)) {
		err_errno(&err, "cannot drop to the checkout's owner (uid %u)", (unsigned)uid);
		goto out_fail;
	}
	/* The daemon's memory (keys, secrets) stays out of reach of the same uid's ptrace. */
	prctl(PR_SET_DUMPABLE, 0);
	if (publish_request(m, &name, &email, all, &n_have, &err) < 0 ||
	    git_publish_open(app_dir, &repo, &err) < 0 ||
	    git_publish_commit(repo, name, email, msg_get_string(m, "message"), &base, &commit,
	                       &err) < 0)
		goto out_fail;
	all[n_have++] = base;
	git_oid_tostr(line, GIT_OID_HEXSZ + 1, &commit);
	line[GIT_OID_HEXSZ] = ' ';
	git_oid_tostr(line + GIT_OID_HEXSZ + 1, GIT_OID_HEXSZ + 1, &base);
	line[2 * GIT_OID_HEXSZ + 1] = '\n';
	if (file_write_all(out_fd, line, 2 * GIT_OID_HEXSZ + 2) < 0) {
		err_errno(&err, "cannot hand the commit over");
		goto out_fail;
	}
	if (git_pack_write(repo, &commit, all, n_have, publish_pipe_sink, &out_fd, &stats, &err) <
	    0) {
		err_wrap(&err, "sending the commit of %s", app_dir);
		goto out_fail;
	}
	_exit(0);
out_fail:
	(void)file_write_all(err_fd, err.msg, strlen(err.msg));
	_exit(err.cls == ERR_REFUSED ? 2 : 1);
}

static int publish_run(struct conn *c, struct stream *st, const struct msg *m, const char *app_dir,
                       json_object **ret, struct err *err)
{
	_cleanup_free_ struct publish_send *ps = NULL;
	_cleanup_free_ char *git_dir = NULL;
	_cleanup_close_ int out_r = -1, out_w = -1, err_r = -1, err_w = -1;
	char head[2 * GIT_OID_HEXSZ + 2], msgbuf[ERR_MSG_MAX];
	size_t head_len = 0, total = 0;
	git_oid have[PUBLISH_HAVE_MAX];
	size_t n_have = 0;
	const char *name, *email;
	struct stat st_git;
	int fds[2], status = 0;
	ssize_t n;
	pid_t pid;

	/* Refuse a bad request here already: the child repeats the parse as the owner. */
	if (publish_request(m, &name, &email, have, &n_have, err) < 0)
		return err_ret(err);
	if (asprintf(&git_dir, "%s/.git", app_dir) < 0)
		return err_oom(err);
	if (lstat(git_dir, &st_git) < 0 || !S_ISDIR(st_git.st_mode))
		return err_set(err, ERR_REFUSED, ENOENT, "%s is not a git checkout", app_dir);
	if (st_git.st_uid == 0)
		return err_set(err, ERR_REFUSED, EPERM,
		               "%s belongs to root: publishing reads a checkout as its owner, "
		               "the run user",
		               app_dir);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	out_r = fds[0];
	out_w = fds[1];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	err_r = fds[0];
	err_w = fds[1];
	pid = fork();
	if (pid < 0)
		return err_errno(err, "fork");
	if (pid == 0)
		publish_child(m, app_dir, st_git.st_uid, st_git.st_gid, out_w, err_w);
	closep(&out_w);
	out_w = -1;
	closep(&err_w);
	err_w = -1;
	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return err_oom(err);
	}
	ps->c = c;
	ps->stream = st->id;
	for (;;) {
		char buf[65536];
		size_t off = 0;

		n = read(out_r, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		while (head_len < sizeof(head) && off < (size_t)n)
			head[head_len++] = buf[off++];
		total += (size_t)n - off;
		if ((size_t)n > off && publish_sink(ps, buf + off, (size_t)n - off) < 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return err_set(err, ERR_FAILED, EPIPE,
			               "the connection failed while sending");
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		n = read(err_r, msgbuf, sizeof(msgbuf) - 1);
		msgbuf[n > 0 ? n : 0] = '\0';
		return err_set(
		    err, WIFEXITED(status) && WEXITSTATUS(status) == 2 ? ERR_REFUSED : ERR_FAILED,
		    EIO, "%s", msgbuf[0] ? msgbuf : "the publishing process failed");
	}
	if (head_len != sizeof(head) || head[GIT_OID_HEXSZ] != ' ')
		return err_set(err, ERR_FAILED, EIO, "the publishing process sent no commit");
	if (publish_flush(ps) < 0)
		return err_set(err, ERR_FAILED, EPIPE, "the connection failed while sending");
	head[GIT_OID_HEXSZ] = '\0';
	head[2 * GIT_OID_HEXSZ + 1] = '\0';
	*ret = json_object_new_object();
	json_object_object_add(*ret, "commit", json_object_new_string(head));
	json_object_object_add(*ret, "base", json_object_new_string(head + GIT_OID_HEXSZ + 1));
	json_object_object_add(*ret, "bytes", json_object_new_int64((int64_t)total));
	log_info("connection %" PRIu64 ": published %s of %s on %s (%zu bytes)", c->id, head,
	         app_dir, head + GIT_OID_HEXSZ + 1, total);
	return 0;
}

int serve_ops_publish_commit(struct conn *c, struct stream *st, const struct msg *m)
{
	_cleanup_free_ char *app_dir = NULL;
	_cleanup_free_ char *state_dir = NULL;
	_cleanup_close_ int lock_fd = -1;
	json_object *reply = NULL;
	const char *dir;
	struct err err;

	err_clear(&err);
	dir = serve_stream_field_string(m, "app_dir", true, &err);
	if (!dir || serve_apps_normalize(dir, &app_dir, &err) < 0 ||
	    serve_apps_state_dir(c->srv, app_dir, &state_dir, &err) < 0)
		return serve_stream_error(c, st, &err);
	if (serve_jobs_find(c->srv, JOB_BOOT, state_dir) ||
	    serve_jobs_find(c->srv, JOB_CHECKOUT, state_dir)) {
		err_set(&err, ERR_REFUSED, EBUSY,
		        "a boot or checkout of %s is in progress: publish when it has finished",
		        app_dir);
		return serve_stream_error(c, st, &err);
	}
	if (file_mkdir_p(state_dir, 0700, &err) < 0 ||
	    boot_state_lock_acquire(state_dir, &lock_fd, &err) < 0)
		return serve_stream_error(c, st, &err);
	if (publish_run(c, st, m, app_dir, &reply, &err) < 0) {
		log_info("connection %" PRIu64 ": publishing %s refused: %s", c->id, app_dir,
		         err.msg);
		return serve_stream_error(c, st, &err);
	}
	return serve_stream_ok(c, st, reply);
}
