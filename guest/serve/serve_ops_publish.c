/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publish.commit (docs/protocol.md §7.9): commit the work tree of an app directory and send
 * the commit to the host as a pack; the host pushes it (docs/design.md, "Channel": the guest
 * never pushes and never sees the push token).
 *
 * The daemon only checks the request and starts a runner (serve_jobs.c): a fresh exec of
 * `sandbox-agent serve --runner`, which holds none of the daemon's memory (not the guest's key,
 * not the session keys, no secret), and whose records reach the host through the daemon's one
 * poll loop, so a checkout that blocks libgit2 (a FIFO for .git/config) blocks only the runner.
 * The runner is killed at the daemon's --publish-timeout (5 minutes by default) and the host
 * gets a timeout error.
 *
 * The runner takes the app's boot lock (no checkout is swapped in meanwhile), becomes the
 * checkout's owner (never root), and then: git_publish_open() opens the checkout without
 * trusting its .git (see git_publish.h), git_publish_commit() writes the commit into memory
 * only (nothing in the checkout changes: not HEAD, not the index, not .git/objects), and
 * git_pack_write() streams everything the commit needs that is not reachable from the
 * checkout's base (HEAD) or from the commits the host says it has, as publish.data records,
 * then `ok`. Whatever the app could swap under libgit2 (a file for a link) is read with the
 * app's own rights, so no file only root may read can end up in the commit.
 */
#include "json_get.h"
#include "serve_ops_publish.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>

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

/* author {"name", "email"} (required), "have" [hex, ...] (optional). */
static int publish_request(json_object *req, const char **ret_name, const char **ret_email,
                           git_oid *have, size_t *n_have, struct err *err)
{
	json_object *a, *v, *h;

	*ret_name = *ret_email = NULL;
	if (req && json_object_object_get_ex(req, "author", &a) &&
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
	if (!req || !json_object_object_get_ex(req, "have", &h))
		return 0;
	if (!json_object_is_type(h, json_type_array) ||
	    json_object_array_length(h) > PUBLISH_HAVE_MAX - 1)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "publish.commit: \"have\" must be a list of at most %d commit ids",
		               PUBLISH_HAVE_MAX - 1);
	for (size_t i = 0; i < json_object_array_length(h); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(h, i));

		if (git_fetch_oid_parse(&have[*n_have], s) < 0)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "publish.commit: \"have\" holds something that is not a "
			               "40-digit commit id");
		(*n_have)++;
	}
	return 0;
}

static int64_t req_int(json_object *req, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	return json_object_get_int64(v);
}

/* ---- the daemon's half ---- */

int serve_ops_publish_commit(struct conn *c, struct stream *st, const struct msg *m)
{
	struct serve *srv = c->srv;
	_cleanup_free_ char *app_dir = NULL;
	_cleanup_free_ char *state_dir = NULL;
	_cleanup_free_ char *git_dir = NULL;
	_cleanup_json_ json_object *req = NULL;
	git_oid have[PUBLISH_HAVE_MAX];
	const char *dir, *name, *email;
	size_t n_have = 0;
	struct stat st_git;
	struct job *job;
	json_object *v;
	struct err err;

	err_clear(&err);
	dir = serve_stream_field_string(m, "app_dir", true, &err);
	if (!dir || serve_apps_normalize(dir, &app_dir, &err) < 0 ||
	    serve_apps_state_dir(srv, app_dir, &state_dir, &err) < 0)
		return serve_stream_error(c, st, &err);
	if (serve_jobs_find(srv, JOB_BOOT, state_dir) ||
	    serve_jobs_find(srv, JOB_CHECKOUT, state_dir) ||
	    serve_jobs_find(srv, JOB_PUBLISH, state_dir)) {
		err_set(&err, ERR_REFUSED, EBUSY,
		        "a boot, checkout or publish of %s is in progress: publish when it has "
		        "finished",
		        app_dir);
		return serve_stream_error(c, st, &err);
	}
	/* Refuse a bad request here already: the runner repeats the parse. */
	if (publish_request(m->json, &name, &email, have, &n_have, &err) < 0)
		return serve_stream_error(c, st, &err);
	if (asprintf(&git_dir, "%s/.git", app_dir) < 0) {
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	/* lstat() opens nothing: whatever the app made of .git cannot block the daemon. */
	if (lstat(git_dir, &st_git) < 0 || !S_ISDIR(st_git.st_mode)) {
		err_set(&err, ERR_REFUSED, ENOENT, "%s is not a git checkout", app_dir);
		return serve_stream_error(c, st, &err);
	}
	if (st_git.st_uid == 0) {
		err_set(
		    &err, ERR_REFUSED, EPERM,
		    "%s belongs to root: publishing reads a checkout as its owner, the run user",
		    app_dir);
		return serve_stream_error(c, st, &err);
	}
	req = json_object_new_object();
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	json_object_object_add(req, "state_dir", json_object_new_string(state_dir));
	json_object_object_add(req, "uid", json_object_new_int64((int64_t)st_git.st_uid));
	json_object_object_add(req, "gid", json_object_new_int64((int64_t)st_git.st_gid));
	if (json_object_object_get_ex(m->json, "author", &v))
		json_object_object_add(req, "author", json_object_get(v));
	if (json_object_object_get_ex(m->json, "have", &v))
		json_object_object_add(req, "have", json_object_get(v));
	if (msg_get_string(m, "message"))
		json_object_object_add(req, "message",
		                       json_object_new_string(msg_get_string(m, "message")));
	if (serve_jobs_spawn(srv, JOB_PUBLISH, req, false, app_dir, state_dir, &job, &err) < 0)
		return serve_stream_error(c, st, &err);
	job->deadline_ms = job->started_ms + (int64_t)srv->cfg->publish_timeout_ms;
	serve_jobs_follow(job, c->id, st->id);
	log_info("connection %" PRIu64 ": publishing %s (runner %d)", c->id, app_dir,
	         (int)job->pid);
	return 0;
}

/* ---- the runner's half ---- */

struct publish_send {
	serve_ops_publish_sink_fn sink;
	void *userdata;
	uint8_t buf[PUBLISH_CHUNK];
	size_t len;
	uint64_t total;
};

static int publish_flush(struct publish_send *ps)
{
	int r = 0;

	if (ps->len)
		r = ps->sink(ps->userdata, ps->buf, ps->len);
	ps->len = 0;
	return r;
}

/* git_pack_write's sink: the pack in records of PUBLISH_CHUNK bytes. */
static int publish_sink(void *userdata, const void *buf, size_t len)
{
	struct publish_send *ps = userdata;
	const uint8_t *p = buf;

	ps->total += len;
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

int serve_ops_publish_run(json_object *req, serve_ops_publish_sink_fn sink, void *userdata,
                          json_object **ret_reply, struct err *err)
{
	const char *app_dir = json_get_string(req, "app_dir"),
	           *state_dir = json_get_string(req, "state_dir");
	int64_t uid = req_int(req, "uid"), gid = req_int(req, "gid");
	git_oid all[PUBLISH_HAVE_MAX + 1], base, commit;
	_cleanup_git_repository_ git_repository *repo = NULL;
	_cleanup_free_ struct publish_send *ps = calloc(1, sizeof(*ps));
	_cleanup_close_ int lock_fd = -1;
	struct git_pack_stats stats = {0};
	const char *name, *email;
	char hex[GIT_OID_HEXSZ + 1];
	size_t n_have = 0;
	int r;

	if (!ps)
		return err_oom(err);
	ps->sink = sink;
	ps->userdata = userdata;
	if (!app_dir || !state_dir || uid <= 0 || gid < 0)
		return err_set(err, ERR_REFUSED, EINVAL, "publish.commit: a malformed request");
	if (publish_request(req, &name, &email, all, &n_have, err) < 0)
		return err_ret(err);
	if (file_mkdir_p(state_dir, 0700, err) < 0 ||
	    boot_state_lock_acquire(state_dir, &lock_fd, err) < 0)
		return err_ret(err);
	/* The checkout's owner from here on: the lock stays held through its descriptor. */
	if (setgroups(0, NULL) < 0 || setgid((gid_t)gid) < 0 || setuid((uid_t)uid) < 0 ||
	    getuid() != (uid_t)uid || setuid(0) == 0)
		return err_errno(err, "cannot become the checkout's owner (uid %lld)",
		                 (long long)uid);
	/* Not even the same uid may ptrace us. */
	prctl(PR_SET_DUMPABLE, 0);
	/* The commit goes to the host over the channel: no CA bundle. */
	if (git_fetch_global_init(&(struct git_fetch_global_opts){.local_only = true}, err) < 0)
		return err_ret(err);
	r = git_publish_open(app_dir, &repo, err);
	if (r == 0)
		r = git_publish_commit(repo, name, email, json_get_string(req, "message"), &base,
		                       &commit, err);
	if (r == 0) {
		all[n_have++] = base;
		r = git_pack_write(repo, &commit, all, n_have, publish_sink, ps, &stats, err);
		if (r < 0)
			err_wrap(err, "sending the commit of %s", app_dir);
	}
	if (r == 0 && publish_flush(ps) < 0)
		r = err_set(err, ERR_FAILED, EPIPE, "the daemon went away while sending");
	git_repository_free(TAKE_PTR(repo));
	git_fetch_global_shutdown();
	if (r < 0)
		return err_ret(err);
	*ret_reply = json_object_new_object();
	git_oid_tostr(hex, sizeof(hex), &commit);
	json_object_object_add(*ret_reply, "commit", json_object_new_string(hex));
	git_oid_tostr(hex, sizeof(hex), &base);
	json_object_object_add(*ret_reply, "base", json_object_new_string(hex));
	json_object_object_add(*ret_reply, "objects",
	                       json_object_new_int64((int64_t)stats.objects));
	json_object_object_add(*ret_reply, "bytes", json_object_new_int64((int64_t)ps->total));
	return 0;
}
