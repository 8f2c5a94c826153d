/* SPDX-License-Identifier: Apache-2.0 */
#include "session_job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "log.h"
#include "logfile.h"
#include "session_checkout.h"
#include "session_diff.h"
#include "session_dir.h"
#include "session_run.h"
#include "session_status.h"
#include "session_user.h"

struct job_state {
	const struct session_job *job;
	char *status_path;
	struct session_status st;
	bool prompt_removed;
};

static void live_fields(const struct session_job *job, struct session_status *st)
{
	/* Every session's status says when it runs in a sandbox nobody verified. */
	st->dangerously_no_sandbox = job->req->dangerously_no_sandbox;
	if (!job->live)
		return;
	st->live = true;
	st->busy = st->state == SESSION_RUNNING && job->live->busy;
	st->turns = job->live->turns;
	st->pending = st->state == SESSION_RUNNING ? job->live->pending : 0;
}

static void status_save(struct job_state *s)
{
	struct err e;

	live_fields(s->job, &s->st);
	if (session_status_write(s->status_path, &s->st, &e) < 0)
		log_debug("status.json: %s", e.msg);
}

int session_job_status_write(const struct session_job *job, const struct session_status *st,
                             struct err *err)
{
	_cleanup_free_ char *path = NULL;
	struct session_status copy = *st;

	if (asprintf(&path, "%s/status.json", job->dir) < 0)
		return err_oom(err);
	live_fields(job, &copy);
	return session_status_write(path, &copy, err);
}

static void job_started(void *userdata, pid_t pid)
{
	struct job_state *s = userdata;

	/* The CLI holds the prompt as its stdin now. */
	if (unlinkat(s->job->dirfd, "prompt.txt", 0) == 0)
		s->prompt_removed = true;
	s->st.state = SESSION_RUNNING;
	s->st.pid = pid;
	status_save(s);
	if (s->job->started)
		s->job->started(s->job->hooks ? s->job->hooks->userdata : NULL, pid);
}

/* A line of our own at the end of stderr.log (the platform shows its last lines). */
static void note(const struct session_job *job, const char *what, const char *msg)
{
	_cleanup_free_ char *path = NULL, *line = NULL, *clean = NULL;
	_cleanup_logfile_ struct logfile *lf = NULL;
	size_t len;
	struct err e;

	if (asprintf(&path, "%s/stderr.log", job->dir) < 0 ||
	    asprintf(&line, "sandbox-claude: %s: %s\n", what, msg) < 0)
		return;
	clean = job->scrub ? scrub_string(job->scrub, line, strlen(line), &len) : NULL;
	if (logfile_open(path, SESSION_STDERR_MAX, (uid_t)-1, (gid_t)-1, &lf, &e) == 0)
		(void)logfile_write(lf, clean ? clean : line, strlen(clean ? clean : line), &e);
}

struct diff_args {
	const char *checkout;
	const char *base;
	char *const *pathspecs;
	size_t max;
};

static int diff_fn(void *arg, int out_fd, struct err *err)
{
	struct diff_args *a = arg;
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (session_diff_text(a->checkout, a->base, a->pathspecs, a->max, &text, &len, err) < 0)
		return err_ret(err);
	if (file_write_all(out_fd, text, len) < 0)
		return err_errno(err, "writing the diff");
	return 0;
}

static int head_fn(void *arg, int out_fd, struct err *err)
{
	char head[41];

	if (session_diff_head(arg, head, err) < 0)
		return err_ret(err);
	if (file_write_all(out_fd, head, 40) < 0)
		return err_errno(err, "writing the commit id");
	return 0;
}

/* ROOT/base_commit, recorded from the checkout's HEAD when this is the first session. */
static int base_commit(const struct session_job *job, char ret[41], struct err *err)
{
	_cleanup_free_ char *head = NULL;
	size_t len = 0;
	int rc = session_dir_base_commit(job->root, NULL, ret, err);

	if (rc <= 0)
		return rc;
	if (session_user_call(job->app_user, head_fn, (void *)job->checkout, 64, &head, &len, err) <
	    0)
		return err_wrap(err, "reading the checkout's HEAD");
	if (len != 40)
		return err_set(err, ERR_FAILED, EIO, "reading the checkout's HEAD: no commit id");
	return session_dir_base_commit(job->root, head, ret, err);
}

static void write_diff(const struct session_job *job, const char *base);

void session_job_write_diff(const struct session_job *job)
{
	char base[41];
	struct err e;

	if (session_dir_base_commit(job->root, NULL, base, &e) != 0)
		write_diff(job, NULL);
	else
		write_diff(job, base);
}

static void write_diff(const struct session_job *job, const char *base)
{
	_cleanup_free_ char *path = NULL, *text = NULL, *clean = NULL;
	struct diff_args a = {
	    .checkout = job->checkout,
	    .base = base,
	    .pathspecs = job->req->pathspecs,
	    .max = job->req->max_diff_bytes,
	};
	size_t len = 0, clean_len = 0;
	struct err e;

	if (asprintf(&path, "%s/diff.patch", job->dir) < 0)
		return;
	if (!base) {
		text = strdup("");
	} else if (session_user_call(job->app_user, diff_fn, &a, a.max + 64, &text, &len, &e) < 0) {
		note(job, "no diff", e.msg);
		text = strdup("");
		len = 0;
	}
	if (!text)
		return;
	if (job->scrub)
		clean = scrub_string(job->scrub, text, len, &clean_len);
	if (file_write_replace(path, clean ? clean : text, clean ? clean_len : len, 0600, (uid_t)-1,
	                       (gid_t)-1, &e) < 0)
		log_debug("diff.patch: %s", e.msg);
}

int session_job_run(const struct session_job *job, struct err *err)
{
	struct job_state s = {.job = job};
	struct session_run_result res;
	struct err e;
	char base[41];
	bool have_base = false;
	int rc;

	if (asprintf(&s.status_path, "%s/status.json", job->dir) < 0)
		return err_oom(err);
	s.st.state = SESSION_STARTING;
	snprintf(s.st.started_at, sizeof(s.st.started_at), "%s",
	         job->started_at ? job->started_at : "");
	if (!s.st.started_at[0])
		session_status_now(s.st.started_at);

	if (session_run_cancel_requested(job->dirfd, "cancel")) {
		s.st.state = SESSION_FINISHED;
		s.st.cancelled = true;
		s.st.exit_status = 128 + 15;
		(void)unlinkat(job->dirfd, "prompt.txt", 0);
		goto finish;
	}
	if (session_checkout_share_as(job->checkout, job->app_user, &e) < 0)
		note(job, "sharing the checkout", e.msg);
	if (base_commit(job, base, &e) < 0)
		note(job, "base commit", e.msg);
	else
		have_base = true;

	{
		_cleanup_free_ char *events = NULL, *stderr_path = NULL;
		struct session_run_spec spec = {
		    .spawn =
		        {
		            .argv = job->argv,
		            .env = job->env,
		            .cwd = job->checkout,
		            .user = job->claude_user,
		            .mkdir_as_user = job->config_dir,
		            .stdin_fd = job->hooks ? job->stdin_fd : job->prompt_fd,
		        },
		    .scrub = job->scrub,
		    .timeout_s = job->req->timeout,
		    .cancel_dirfd = job->dirfd,
		    .cancel_name = "cancel",
		    .started = job_started,
		    .userdata = &s,
		    .hooks = job->hooks,
		};

		if (asprintf(&events, "%s/events.jsonl", job->dir) < 0 ||
		    asprintf(&stderr_path, "%s/stderr.log", job->dir) < 0) {
			free(s.status_path);
			return err_oom(err);
		}
		spec.events_path = events;
		spec.stderr_path = stderr_path;
		if (session_run(&spec, &res, &e) < 0) {
			s.st.state = SESSION_FINISHED;
			s.st.exit_status = 127;
			snprintf(s.st.error, sizeof(s.st.error), "%s", e.msg);
			if (job->scrub) {
				_cleanup_free_ char *clean = NULL;
				size_t cl;

				clean = scrub_string(job->scrub, e.msg, strlen(e.msg), &cl);
				if (clean)
					snprintf(s.st.error, sizeof(s.st.error), "%s", clean);
			}
		} else {
			s.st.exit_status = res.exit_status;
			s.st.cancelled = res.cancelled;
			s.st.timed_out = res.timed_out;
		}
	}
	if (!s.prompt_removed)
		(void)unlinkat(job->dirfd, "prompt.txt", 0);
	write_diff(job, have_base ? base : NULL);
finish:
	s.st.state = SESSION_FINISHED;
	session_status_now(s.st.finished_at);
	/* Whoever sees `finished` may start the next session at once. */
	if (job->lock_fd >= 0)
		close(job->lock_fd);
	live_fields(job, &s.st);
	rc = session_status_write(s.status_path, &s.st, err);
	free(s.status_path);
	return rc < 0 ? err_ret(err) : 0;
}
