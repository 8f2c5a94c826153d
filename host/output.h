/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What sandbox-ctl writes: one JSON document on stdout per command (pretty on a terminal, one
 * line otherwise), and progress for a person on stderr: on a terminal a live line rewritten in
 * place, otherwise plain lines. The exit codes a controller acts on are defined here too.
 */
#ifndef SA_HOST_OUTPUT_H
#define SA_HOST_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include <json-c/json.h>

#include "json_strict.h"
#include "err.h"
#include "liveline.h"

/* Exit codes of sandbox-ctl (docs/sandbox-ctl.md). */
enum ctl_exit {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAILED = 1,      /* the operation failed: a boot failed, a deadline passed */
	CTL_EXIT_REFUSED = 2,     /* usage error, or the agent refused the request */
	CTL_EXIT_CONNECT = 3,     /* cannot connect or authenticate, or the connection broke */
	CTL_EXIT_KEY_CHANGED = 4, /* the guest's key is not the one pinned for the instance */
};

/* The exit code for an error the agent replied with: refused -> 2, else 1. */
int output_exit_of(const struct err *e);

enum output_level {
	OUTPUT_QUIET = -1, /* no progress, only the final error line */
	OUTPUT_NORMAL = 0,
	OUTPUT_VERBOSE = 1, /* also log lines and connection details */
};

struct output {
	FILE *out;   /* the JSON document */
	FILE *err;   /* progress and errors */
	bool tty;    /* err is a terminal: live lines */
	bool pretty; /* out is a terminal: indented JSON */
	int level;
	struct liveline line; /* the live line on err (common/base/liveline.h) */
};

void output_init(struct output *o, FILE *out, FILE *err, int level);

/* The command's document on stdout, with a newline. */
void output_json(struct output *o, struct json_object *doc);
/*
 * Write len bytes of JSON text (json-c's output, or a line from the guest) to out, each C1
 * control in it (U+0080..U+009F as UTF-8, which json-c leaves raw inside strings and some
 * terminals act on) written as its \u escape: the same JSON value, nothing a terminal runs.
 */
void output_json_text(FILE *out, const char *text, size_t len);

/* A progress line ("sandbox-ctl: ..."), unless quiet. Ends any live line first. */
void output_note(struct output *o, const char *fmt, ...) _printf_(2, 3);
/* A detail line, only when verbose. */
void output_detail(struct output *o, const char *fmt, ...) _printf_(2, 3);
/*
 * The live line: on a terminal it replaces the previous live line in place (cut to the
 * terminal's width); elsewhere it is a plain progress line.
 */
void output_live(struct output *o, const char *fmt, ...) _printf_(2, 3);
/* Keep the live line on the screen and start a new one below it. */
void output_live_done(struct output *o);
/* The error as the last line on stderr, even when quiet. */
void output_error(struct output *o, const struct err *e);

/* {"error": {"code": N, "class": "failed" | "refused", "msg": "..."}} */
struct json_object *output_error_doc(const struct err *e);

/*
 * Text from the guest made safe for a terminal: every C0 and C1 control (ESC, BEL, CSI, ...)
 * and every byte that is not UTF-8 becomes '?', a tab a blank. Writes at most len bytes to out
 * (out may be in). Returns the length written.
 */
size_t output_clean(char *out, const char *in, size_t len);

/*
 * A JSON string of arbitrary bytes: valid UTF-8 is kept, every invalid byte becomes U+FFFD
 * (log bytes are not always UTF-8; their offsets still count the original bytes).
 */
struct json_object *output_string_lossy(const char *buf, size_t len);
/* Whether buf holds only valid UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF): what output_string_lossy() would keep unchanged. */
bool output_utf8_valid(const char *buf, size_t len);

#endif
