/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the tests that start real processes (test_proc, test_procset, test_listen_check,
 * test_supervisor). Every process a test starts carries SA_TEST_OWNER=<test pid> in its
 * environment (owner_env, to put in the child environments). A watchdog outside the test's
 * process tree waits for the test process to end, however it ends (Check ends a failed test
 * with _exit(), so atexit() would not run; a timeout is SIGKILL), and then kills those
 * processes by pid. On the normal path each test stops what it started itself.
 */
#ifndef SA_TEST_WATCHDOG_H
#define SA_TEST_WATCHDOG_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

extern char owner_env[64];
bool environ_has(pid_t pid, const char *entry);
void _unused_ kill_owned(const char *entry);
void _unused_ test_watchdog_start(void);

#endif
