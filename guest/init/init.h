/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sandbox-agent init`: PID 1 of a minimal image or microVM without systemd (docs/init.md).
 * Mounts the basic filesystems, starts the daemon, forwards signals to it, reaps every child
 * (adopted orphans too) and, when told to stop, stops the daemon and powers off. Not PID 1 it
 * makes itself a child subreaper and exits instead of powering off, so it can be tested as an
 * ordinary process.
 */
#ifndef SA_INIT_H
#define SA_INIT_H

#include <stdbool.h>

#include "err.h"

struct init_opts {
	const char *daemon_path; /* the program to run; NULL: daemon_argv[0] */
	char **daemon_argv;      /* the daemon's command line */
	int grace_ms; /* between TERM and KILL when stopping (and for the rest as PID 1) */
	bool pid1;    /* power off at the end instead of returning */
};

/*
 * Mount proc, sysfs, devtmpfs and a 0755 tmpfs on ROOT/proc, /sys, /dev and /run where nothing
 * is mounted yet (a directory on the same device as its parent), and make ROOT/run/sandbox-agent
 * a 0700 directory. ROOT is "" for the real root.
 */
int init_mount_basics(const char *root, struct err *err);

/*
 * Turn fs.protected_hardlinks, protected_symlinks, protected_fifos and protected_regular on
 * under ROOT/proc/sys/fs where they are 0 (a higher value stays; a file that is missing or
 * read-only is left as it is). As PID 1 only: it changes the whole kernel's behaviour.
 */
void init_protect_links(const char *root);

/*
 * Run the loop: block the signals init handles, start the daemon, and serve until the daemon is
 * gone (it exited, or a stop signal ended it). *ret_status gets the exit code init should end
 * with: the daemon's exit code, or 128 + the signal that ended it. As PID 1 (opts->pid1) this
 * does not return on success: it ends every process, syncs and powers off.
 */
int init_run(const struct init_opts *opts, int *ret_status, struct err *err);

/* `sandbox-agent init [--grace MS] [--no-mount] [-- SERVE_ARGS...]` */
int init_cli_main(int argc, char **argv);

#endif
