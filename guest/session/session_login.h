/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subscription login of sandbox_login sessions (docs/sessions.md, "Subscription login"):
 * the unmodified `claude auth login` run as the claude user under a terminal we hold, its
 * sign-in URL picked from what it prints, the one-time code handed to it through a FIFO, and
 * `claude auth status --json` / `claude auth logout` run the same way.
 *
 * Files below ROOT/login (root's, 0700): status.json (0600), code.fifo (0600, while a flow
 * waits for its code), cancel (asks a running flow to stop), flow.lock (held by the flow's
 * supervisor for its whole life). status.json goes starting -> awaiting_code (with
 * authorize_url) -> submitted -> completed | failed | expired | cancelled. Nothing the CLI
 * prints once it has the code is kept or passed on.
 */
#ifndef SA_SESSION_LOGIN_H
#define SA_SESSION_LOGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "proc.h"

#define SESSION_LOGIN_DEFAULT_TIMEOUT 300
#define SESSION_LOGIN_TIMEOUT_MAX 600
#define SESSION_LOGIN_CODE_MAX 4096
#define SESSION_LOGIN_URL_MAX 8192

/* What running the CLI for the login needs. */
struct session_login_cli {
	const char *root; /* ROOT; the flow's files are in ROOT/login */
	const char *bin;  /* the CLI */
	char *const *env; /* its environment (session_env_build in sandbox_login mode) */
	const struct run_user *user;
	const char *home;       /* its cwd */
	const char *config_dir; /* CLAUDE_CONFIG_DIR (HOME/login), made by the user when missing */
};

struct session_login_status {
	char status[32]; /* "" when there is no status.json */
	char authorize_url[SESSION_LOGIN_URL_MAX];
	pid_t pid;
	char error[512];
};

/* A sign-in URL we pass on: https, one of the vendor's authorize pages, URL characters only. */
bool session_login_url_allowed(const char *url);
/*
 * The first allowed sign-in URL in text (terminal output: escape sequences are skipped), as a
 * heap string, or NULL.
 */
char *session_login_find_url(const char *text, size_t len);

/* ROOT/login, made root's 0700 when missing: its descriptor. */
int session_login_dir(const char *root, struct err *err);
/* Take ROOT/login/flow.lock without waiting: the descriptor, 0-or-more; -EBUSY when held. */
int session_login_lock(int login_fd, struct err *err);
int session_login_status_read(int login_fd, struct session_login_status *st, struct err *err);

/*
 * Stop a running flow (cancel file, SIGTERM to its group) and wait up to 5 s for it to end;
 * then `claude auth logout` (which revokes the login) and the config directory removed.
 */
int session_login_logout(const struct session_login_cli *cli, struct err *err);

/*
 * The flow itself, run by a detached supervisor that holds flow.lock: `claude auth login`
 * under a terminal, timeout_s at most (expired), ROOT/login/cancel (cancelled). status.json is
 * kept up to date; an error is returned only when it cannot be written.
 */
int session_login_run(const struct session_login_cli *cli, int login_fd, unsigned timeout_s,
                      struct err *err);

/* Hand the code to the waiting flow. ERR_REFUSED when no flow waits for one. */
int session_login_submit(int login_fd, const char *code, struct err *err);

/*
 * `claude auth status --json`: logged in, and the method ("claude.ai", "none", ...), in
 * method (at least 64 bytes).
 */
int session_login_auth_status(const struct session_login_cli *cli, bool *logged_in, char *method,
                              size_t method_len, struct err *err);

#endif
