/* SPDX-License-Identifier: Apache-2.0 */
/* A host command run to completion with its output captured (the incus client). */
#ifndef SA_HOST_EXEC_CAPTURE_H
#define SA_HOST_EXEC_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/*
 * Run argv (PATH searched) with input on stdin (NULL: /dev/null), its stdout (and stderr when
 * with_stderr, else /dev/null) into out, at most cap - 1 bytes and NUL-terminated; output past
 * that is read and dropped. Killed after timeout_ms (an ETIMEDOUT error). *ret_status: the
 * wait status.
 */
int exec_capture_run(char *const *argv, const char *input, bool with_stderr, int timeout_ms,
                     char *out, size_t cap, int *ret_status, struct err *err);

#endif
