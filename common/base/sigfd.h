/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signals read from a descriptor inside a poll loop: the one way every process of the project
 * (the daemon, the boot engine, the supervisor, init, sandbox-ctl) takes its signals.
 */
#ifndef SA_SIGFD_H
#define SA_SIGFD_H

#include <signal.h>

#include "err.h"

/* A set of the signals given, ended by 0: sigfd_set(&set, SIGTERM, SIGINT, 0). */
void sigfd_set(sigset_t *set, ...);

/*
 * Block set's signals (the mask before in ret_old, may be NULL) and open a non-blocking,
 * close-on-exec signalfd for them: the descriptor, or a negative errno-like value with err.
 */
int sigfd_open(const sigset_t *set, sigset_t *ret_old, struct err *err);

#endif
