/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subcommands of sandbox-ctl, one file each (cmd_<verb>.c). main.c parses the global
 * options into a struct ctl and calls one of these with the command's own words (argv[0] is
 * the command's name). A command returns the exit code (enum ctl_exit); it leaves its JSON
 * document in ctl->result (on success, and for failures that have a document of their own,
 * like a failed boot) and the reason of a failure in ctl->err. main.c prints both.
 */
#ifndef SA_HOST_CMD_H
#define SA_HOST_CMD_H

#include "connect.h"
#include "connect_session.h"
#include "output.h"

#define CTL_DEFAULT_APP_DIR "/workspace/app"

struct ctl {
	struct session_options so; /* so.addr points at addr when --connect was given */
	struct connect_addr addr;
	struct output out;
	struct json_object *result;
	struct err err;
};

int cmd_keygen(struct ctl *ctl, int argc, char **argv);
int cmd_hello(struct ctl *ctl, int argc, char **argv);
int cmd_secrets(struct ctl *ctl, int argc, char **argv);
int cmd_push(struct ctl *ctl, int argc, char **argv);
int cmd_boot(struct ctl *ctl, int argc, char **argv);
int cmd_status(struct ctl *ctl, int argc, char **argv);
int cmd_logs(struct ctl *ctl, int argc, char **argv);
int cmd_stop(struct ctl *ctl, int argc, char **argv);
int cmd_runtime(struct ctl *ctl, int argc, char **argv);
int cmd_checkout(struct ctl *ctl, int argc, char **argv);
int cmd_publish(struct ctl *ctl, int argc, char **argv);
int cmd_egress(struct ctl *ctl, int argc, char **argv);
int cmd_verify(struct ctl *ctl, int argc, char **argv);
int cmd_github_token(struct ctl *ctl, int argc, char **argv);
int cmd_session(struct ctl *ctl, int argc, char **argv);

/*
 * The checkout of cmd_checkout, for a command that goes on in the same session (boot
 * --checkout): the spec at spec_path fetched on the host (or by the guest with guest) and
 * placed in app_dir. The session it opened is left in *ret_session (the caller's to close,
 * also on failure); *ret is the checkout's result ({commit, ref, method, app_dir, agent}).
 * Returns the exit code, with the reason in ctl->err.
 */
int cmd_checkout_run(struct ctl *ctl, const char *spec_path, const char *app_dir, bool guest,
                     struct session **ret_session, struct json_object **ret);

/* A usage error of a command: sets ctl->err and returns CTL_EXIT_REFUSED. */
int cmd_usage(struct ctl *ctl, const char *usage, const char *fmt, ...) _printf_(3, 4);

/* The usage error for what getopt_long() returned (':' a value is missing, else unknown). */
int cmd_bad_option(struct ctl *ctl, const char *usage, int c, char **argv);

/* Seconds as given on the command line ("30", "2.5") into milliseconds; -1 when invalid. */
int cmd_parse_seconds(const char *s, int64_t max_ms, int64_t *ret_ms);

/*
 * Block SIGINT, SIGTERM and SIGHUP and return a signalfd that reads them (a command that waits
 * on the agent polls it, so an interrupt ends the wait cleanly), or -1.
 */
int cmd_signalfd(void);

/*
 * Reading the messages of one stream until it ends (logs, session events). Following: no
 * deadline, and SIGINT/TERM/HUP cancel the stream (MSG_CANCEL), whose error answer is then
 * the normal end; otherwise the whole read within the session's --timeout.
 */
struct cmd_stream_reader {
	uint32_t stream;
	bool follow;
	const char *what; /* "the log": the timeout's message says what did not come */
	/* A message of the stream (not the end of a cancel): 0, or the exit code; *ret_end. */
	int (*on_msg)(void *userdata, const struct msg *m, bool *ret_end);
	void (*on_other)(void *userdata, const struct msg *m); /* another stream's; NULL: dropped */
	bool (*enough)(void *userdata); /* asked before each wait; NULL: never */
	void *userdata;
};
int cmd_stream_read(struct ctl *ctl, struct session *s, const struct cmd_stream_reader *rd);
/*
 * A stable word for what happened, next to the exit code and the errno (docs/sandbox-ctl.md,
 * "Exit codes"): a controller can act on it without parsing the message ("busy", "timeout").
 */
const char *cmd_reason_of(int exit_code, const struct err *e);
/* The exit code for the signal cmd_signalfd() read: 128 + its number (130 for SIGINT). */
int cmd_signal_exit(int sigfd);
/*
 * A command whose only option is --app-dir DIR and whose answer is the reply to one request
 * {"app_dir": DIR} of the given message type (status, runtime).
 */
int cmd_app_request(struct ctl *ctl, int argc, char **argv, const char *usage, uint16_t type);

#endif
