/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Work a session does as another user than root: the app user's share of the checkout and its
 * diff, the claude user's CLI. Identities are struct run_user (proc.h).
 */
#ifndef SA_SESSION_USER_H
#define SA_SESSION_USER_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "proc.h"

/*
 * Become u for good (its groups as looked up with it, gid, uid; checked; root not reachable
 * again). Only system calls:
 * safe between fork and exec. Returns 0 or -errno.
 */
int session_user_become(const struct run_user *u);

/*
 * Run fn in a forked child as u (NULL or uid -1: as the caller): fn writes its answer to out_fd,
 * which the parent reads, up to max bytes (more: the child is killed, ERR_FAILED E2BIG), into
 * *ret_out (NUL-terminated; ret_out may be NULL to discard). A failure of fn comes back in err,
 * with its message. The child never returns, never execs and is not dumpable: the user it runs
 * as cannot read the caller's memory through it.
 */
typedef int (*session_user_fn)(void *arg, int out_fd, struct err *err);
int session_user_call(const struct run_user *u, session_user_fn fn, void *arg, size_t max,
                      char **ret_out, size_t *ret_len, struct err *err);

#endif
