/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session's status.json (docs/sessions.md, "States"), rewritten atomically at each change:
 *
 *   {"status": "starting", "started_at": T}
 *   {"status": "running", "pid": N, "started_at": T}
 *   {"status": "finished", "exit_status": N, "cancelled": B, "timed_out": B,
 *    "started_at": T, "finished_at": T[, "error": "..."]}
 *
 * T is ISO 8601 UTC with milliseconds. exit_status is 128+signal when the CLI was killed, 127
 * with `error` when it could not be run at all. `pid` (the CLI's, also its process group) stays
 * in the finished record.
 */
#ifndef SA_SESSION_STATUS_H
#define SA_SESSION_STATUS_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"

enum session_state {
	SESSION_STARTING = 0,
	SESSION_RUNNING,
	SESSION_FINISHED,
};

struct session_status {
	enum session_state state;
	pid_t pid; /* 0: not started */
	int exit_status;
	bool cancelled;
	bool timed_out;
	char started_at[32];
	char finished_at[32];
	char error[512];
	/* Long-lived sessions only (written when live). */
	bool live;
	bool dangerously_no_sandbox;
	bool busy;        /* a turn is under way */
	unsigned turns;   /* user turns sent */
	unsigned pending; /* can_use_tool requests waiting for an answer */
};

/* Now as ISO 8601 UTC with milliseconds: "2026-12-01T10:05:04.123Z". */
void session_status_now(char buf[32]);
const char *session_status_state_name(enum session_state s);
/* The exit status recorded for a waitpid() status: the code, or 128+signal. */
int session_status_exit_code(int wait_status);

int session_status_write(const char *path, const struct session_status *st, struct err *err);
/* Returns 1 when there is no file (st zeroed), 0 when read, or an error. */
int session_status_read(int dirfd, struct session_status *st, struct err *err);

#endif
