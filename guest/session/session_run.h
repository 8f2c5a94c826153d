/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running the Claude Code CLI for one session (docs/sessions.md, "Running"): argv exec'd as
 * the claude user in the checkout, in its own process group (and a process set: a cgroup when
 * one can be made), umask 002, stdin the prompt, stdout framed into JSON lines (session_lines.h)
 * and scrubbed into the events file, stderr scrubbed into a capped log, both 0600. Past the
 * deadline, or once the cancel file appears, the group gets SIGTERM and SIGKILL kill_after_ms
 * later; when the CLI has exited, whatever is left of the session is stopped.
 *
 * The pieces are separate so the daemon's long-lived sessions can use them with a stdin of
 * their own: session_run_spawn() starts the process, session_lines.h frames its output, and
 * session_run() follows a one-shot CLI to its end.
 */
#ifndef SA_SESSION_RUN_H
#define SA_SESSION_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "proc.h"
#include "scrub.h"

#define SESSION_STDERR_MAX (1024 * 1024)
#define SESSION_EVENTS_MAX (256ULL * 1024 * 1024)
#define SESSION_KILL_AFTER_MS 10000
#define SESSION_LEFTOVER_GRACE_MS 2000

struct session_spawn {
	char *const *argv;           /* argv[0]: the program's path */
	char *const *env;            /* the whole environment */
	const char *cwd;             /* NULL: stay */
	const struct run_user *user; /* NULL or uid -1: the caller */
	const char *mkdir_as_user;   /* made 0700 by the child as user (EEXIST fine), or NULL */
	int stdin_fd;                /* -1: /dev/null */
	int stdout_fd;               /* -1: /dev/null */
	int stderr_fd;               /* -1: /dev/null */
	int procs_fd;                /* cgroup.procs to join before exec, or -1 */
	int cgroup_fd;               /* a cgroup2 directory to start in (clone3), or -1 */
	bool ctty; /* a new session (setsid) with stdin, a terminal, as its controlling one */
};

/*
 * Fork and exec as session_spawn says, with umask 002, a clean signal mask and default
 * dispositions, in a new process group (pgid == pid). With cgroup_fd the child is created in
 * that cgroup (clone3 with CLONE_INTO_CGROUP): moving it there through cgroup.procs instead
 * waits for the kernel, 15-30 ms measured here. Where clone3 cannot, procs_fd is used. What fails
 * before exec is reported here
 * ("cannot run PROGRAM as USER: chdir DIR: ..."), and the child is reaped.
 */
int session_run_spawn(const struct session_spawn *sp, pid_t *ret_pid, struct err *err);

struct pollfd;
struct session_run_events;

/*
 * What a long-lived session (session_live.h) adds to the run: descriptors polled beside the
 * CLI's, and each event line seen once it is in the events file.
 */
struct session_run_hooks {
	void *userdata;
	/* Set by session_run() before the CLI starts: for session_run_event_append(). */
	struct session_run_events **events;
	/* Each line as written to the events file (scrubbed, ending in '\n'). */
	void (*event)(void *userdata, const char *line, size_t len);
	/* Fill at most max more descriptors to poll; return how many. */
	size_t (*poll_fill)(void *userdata, struct pollfd *pfd, size_t max);
	/* After each poll, with the descriptors poll_fill gave and their revents. */
	void (*poll_done)(void *userdata, const struct pollfd *pfd, size_t n);
};

/* One line of ours (a JSON object and '\n', scrubbed already) into the events file. */
int session_run_event_append(struct session_run_events *ev, const char *line, size_t len);

struct session_run_spec {
	struct session_spawn spawn; /* its stdout, stderr, procs_fd, cgroup_fd set by session_run */
	const char *events_path;    /* created, must not exist */
	const char *stderr_path;    /* appended, capped at stderr_max (0: SESSION_STDERR_MAX) */
	uint64_t stderr_max;
	const struct scrubber *scrub; /* NULL: nothing masked */
	unsigned timeout_s;           /* 0: none */
	unsigned kill_after_ms;       /* 0: SESSION_KILL_AFTER_MS */
	int cancel_dirfd;             /* with cancel_name: a file whose appearance cancels */
	const char *cancel_name;      /* NULL: no cancel file */
	const char *procset_name;     /* NULL: "sandbox-claude-<our pid>" */
	/* Called once the CLI runs (the caller records `running`), may be NULL. */
	void (*started)(void *userdata, pid_t pid);
	void *userdata;
	const struct session_run_hooks *hooks; /* NULL: a one-shot CLI */
};

struct session_run_result {
	pid_t pid;
	int wait_status;
	int exit_status; /* the code, or 128+signal */
	bool cancelled;
	bool timed_out;
	uint64_t events; /* lines written to the events file */
};

/*
 * Run one session to its end. Returns 0 once the CLI ran and exited (whatever its status),
 * or an error when it could not be started (nothing was run; result->pid is 0) or its output
 * files could not be made.
 */
int session_run(const struct session_run_spec *spec, struct session_run_result *result,
                struct err *err);

/* The cancel file below dirfd exists. */
bool session_run_cancel_requested(int dirfd, const char *name);

#endif
