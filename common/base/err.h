/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Errors travel up as a fixed-size struct, after crun's libcrun_error: library code fills one
 * and returns a negative value; each caller may add context with err_wrap(); only main.c turns
 * it into an exit code and a message. The buffer is fixed so the error path never allocates.
 *
 * The class says how a caller must treat the failure:
 *   ERR_FAILED  - a step failed or a deadline passed (sandbox-app-boot exit 1)
 *   ERR_REFUSED - the request, the spec or sandbox.yml was refused (exit 2)
 */
#ifndef SA_ERR_H
#define SA_ERR_H

#include <stdarg.h>

#include "cleanup.h"

enum err_class {
	ERR_NONE = 0,
	ERR_FAILED = 1,
	ERR_REFUSED = 2,
};

#define ERR_MSG_MAX 1024

struct err {
	int cls;  /* enum err_class */
	int code; /* errno-like, positive, 0 when unknown */
	char msg[ERR_MSG_MAX];
};

/* Set the error and return -1 (or -code when code is non-zero). */
int err_set(struct err *err, int cls, int code, const char *fmt, ...) _printf_(4, 5);
int err_vset(struct err *err, int cls, int code, const char *fmt, va_list ap) _printf_(4, 0);
/* "out of memory" (ERR_FAILED, ENOMEM); err_oom_at() adds what was being done. */
int err_oom(struct err *err);
int err_oom_at(struct err *err, const char *fmt, ...) _printf_(2, 3);
/* Like err_set with ERR_FAILED and errno as the code; appends ": strerror(errno)". */
int err_errno(struct err *err, const char *fmt, ...) _printf_(2, 3);
/* Prefix the message with "context: "; keeps class and code; returns the same value as set. */
int err_wrap(struct err *err, const char *fmt, ...) _printf_(2, 3);
/* Replace the message entirely, keeping class and code. */
int err_reword(struct err *err, const char *fmt, ...) _printf_(2, 3);
void err_clear(struct err *err);
/* The value err_set returned: -code or -1. */
int err_ret(const struct err *err);

#endif
