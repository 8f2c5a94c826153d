/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One one-shot session from `starting` to `finished` (docs/sessions.md, "A session, step by
 * step"): the checkout shared with the claude user (as the app user), the sandbox's base
 * commit recorded by its first session, the CLI run (session_run.h) with the prompt as stdin
 * (prompt.txt removed once the CLI has it), diff.patch written (taken as the app user, then
 * scrubbed), status.json kept up to date throughout. The caller has checked the request and
 * holds the session lock.
 */
#ifndef SA_SESSION_JOB_H
#define SA_SESSION_JOB_H

#include "err.h"
#include "proc.h"
#include "scrub.h"
#include "session_request.h"
#include "session_run.h"
#include "session_status.h"

struct session_job {
	const char *root; /* ROOT: base_commit lives there */
	const char *dir;  /* the session directory (ROOT/sessions/<digits>) */
	int dirfd;        /* and its descriptor */
	const struct session_request *req;
	char *const *argv; /* the request's argv with argv[0] the CLI's path */
	char *const *env;  /* the CLI's whole environment (session_env.h) */
	const char *checkout;
	const char *config_dir; /* CLAUDE_CONFIG_DIR, made by the claude user when missing */
	const struct run_user *claude_user;
	const struct run_user *app_user; /* NULL: the caller */
	int prompt_fd;
	const struct scrubber *scrub;
	const char *started_at; /* the `starting` record's, kept in every later one */
	int lock_fd; /* the session lock: released just before the `finished` record, or -1 */
	/* A long-lived session (session_live.h): stdin_fd replaces prompt_fd as the CLI's stdin,
	 * the hooks follow the run, and live's fields go into every status record. */
	const struct session_run_hooks *hooks;
	int stdin_fd;
	const struct session_status *live;
	void (*started)(void *userdata, pid_t pid); /* after `running` is recorded */
};

/*
 * Run the session to its end. Every outcome, including a CLI that could not be run (exit
 * status 127 with an error), ends in a `finished` status.json; an error is returned only
 * when even that could not be written.
 */
int session_job_run(const struct session_job *job, struct err *err);

/* Write diff.patch now: the checkout against ROOT/base_commit, as at a session's end. */
void session_job_write_diff(const struct session_job *job);

/* Rewrite status.json from st with live's fields (a long-lived session's changes). */
int session_job_status_write(const struct session_job *job, const struct session_status *st,
                             struct err *err);

#endif
