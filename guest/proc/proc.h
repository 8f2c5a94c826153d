/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spawning the commands of a boot: `sh -c COMMAND` (or, without shell syntax, exec'd directly
 * as the shell would run it: command_exec.h) in its own process group, stdin /dev/null,
 * stdout and stderr to one descriptor, as the run user, with a clean signal mask, joined to the
 * boot's process set before exec. Processes are identified by pid plus start time (field 22 of
 * /proc/PID/stat) so a recycled pid is never signalled.
 */
#ifndef SA_PROC_H
#define SA_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

struct run_user {
	uid_t uid; /* (uid_t)-1: run as the caller */
	gid_t gid;
	char *name; /* NULL with uid -1 */
	char *home;
	/*
	 * Its supplementary groups, looked up with it (proc_user_lookup()), not again at each
	 * spawn (musl asks nscd and reads /etc/group each time); what a switch to it sets. NULL
	 * when they could not be looked up: a switch to the user is then refused.
	 */
	gid_t *groups;
	size_t n_groups;
};

/*
 * Look up a user by name, with its supplementary groups; ERR_REFUSED "user NAME does not exist"
 * when missing.
 */
int proc_user_lookup(const char *name, struct run_user *ret, struct err *err);
/*
 * 0 when a switch to u can set its groups, else ERR_FAILED "cannot run WHAT as NAME: its
 * supplementary groups could not be looked up": a switch never runs with fewer groups.
 */
int proc_user_switchable(const struct run_user *u, const char *what, struct err *err);
/* The caller itself (uid -1), with HOME from the environment. */
void proc_user_self(struct run_user *ret);
void proc_user_dispose(struct run_user *u);

struct proc_spec {
	const char *command;         /* run as: /bin/sh -c command, or directly (command_exec.h) */
	const char *cwd;             /* NULL: stay where the caller is */
	char *const *env;            /* the whole environment; NULL: an empty one */
	const struct run_user *user; /* NULL: the caller */
	int output_fd;               /* stdout and stderr; -1: /dev/null */
	int procs_fd;                /* cgroup.procs (or tasks) to join before exec; -1: none */
	const int *join_fds;         /* more cgroup.procs to join (v1 limits), n_join_fds of them */
	unsigned n_join_fds;
	bool new_session; /* setsid() instead of setpgid(0, 0) */
	int keep_fd; /* one more descriptor kept open across exec (e.g. a notify pipe), or -1 */
};

/*
 * A negative oom_score_adj of this process (inherited from an engine protected while it sits
 * in the boot's limits, or from a daemon's own setting) back to 0: 0, or -errno. Every child
 * of proc_spawn() does this before exec, and so does the supervisor for itself.
 */
int proc_oom_score_reset(void);
/*
 * Keep this process out of the kernel's choice when memory runs out (oom_score_adj -1000),
 * its value before in before (size len, "" when it could not be read or set): 0, or -errno.
 * proc_oom_score_restore() puts that value back (nothing for ""). The engine does both around
 * its time in the boot's limits, where its steps are killed and not itself.
 */
int proc_oom_score_protect(char *before, size_t len);
int proc_oom_score_restore(const char *before);

/*
 * Fork and exec; on return the child is in its own process group (pgid == pid) and has joined
 * the process set. Whatever fails between fork and exec (chdir, the user switch, exec itself) is
 * reported here, e.g. "cannot run CMD as USER: chdir /x: No such file or directory", and the
 * child is reaped; no child is left that exits 127. The child does only system calls between
 * fork and exec (supplementary groups are looked up before the fork), so spawning from a process
 * with threads is safe. keep_fd must be -1 or >= 3.
 */
int proc_spawn(const struct proc_spec *spec, pid_t *ret_pid, struct err *err);
/*
 * proc_spawn(), and in *ret_exec_us the moment (clock_now_us()) the command's exec began, read
 * by the child just before its execve into the memory it shares with us (clone3 with CLONE_VM):
 * returns 1. A forked child (no clone3; another architecture; a child that switches user where
 * fs.suid_dumpable is not 0) cannot tell us: then the moment the exec was seen done, and 0.
 * The app's time runs from there: the exec is its command's, and so is the wait before the
 * caller runs again, while the command already runs.
 */
int proc_spawn_at(const struct proc_spec *spec, pid_t *ret_pid, uint64_t *ret_exec_us,
                  struct err *err);

/* The fields of /proc/PID/stat we use. */
struct proc_stat {
	pid_t pid;
	char state; /* 'R', 'S', 'D', 'Z', ... */
	pid_t ppid;
	pid_t pgrp;
	pid_t session;
	uint64_t start_time; /* field 22, clock ticks since boot */
	char comm[64];
};

/*
 * Parse the text of /proc/PID/stat. comm is chosen by the process and may hold spaces and ')':
 * it ends at the LAST ')'. Returns 0 or -EINVAL.
 */
int proc_stat_parse(const char *buf, size_t len, struct proc_stat *ret);
/* Read and parse /proc/PID/stat; -ESRCH when pid does not exist. */
int proc_stat_read(pid_t pid, struct proc_stat *ret);

/* Start time of pid in clock ticks since boot (field 22 of /proc/PID/stat); 0 if gone. */
uint64_t proc_start_time(pid_t pid);
/* pid still runs (not a zombie) and has that start time. */
bool proc_is(pid_t pid, uint64_t start_time);
/* Parent pid from /proc/PID/stat, or -1. */
pid_t proc_parent(pid_t pid);

/*
 * Send sig to pid only if it is still the process that started at start_time (0: unknown, not
 * checked). Uses a pidfd where the kernel has them, so a pid recycled between the check and the
 * signal is never hit. Refuses pid <= 1 and the caller itself (-EPERM). Returns 0, -ESRCH when
 * the process is gone or is another one now, or another -errno.
 *
 * With wait_ms, then waits for the process to end, at most that long: through the pidfd,
 * which turns readable when it ends (without one, its /proc entry is read every 10 ms).
 * Returns 0 once it has ended, -ETIMEDOUT when it still runs; a wait needs start_time (-EINVAL).
 */
int proc_signal_wait(pid_t pid, uint64_t start_time, int sig, unsigned wait_ms);
static inline int proc_signal(pid_t pid, uint64_t start_time, int sig)
{
	return proc_signal_wait(pid, start_time, sig, 0);
}

/* "SIGTERM", "SIGRTMIN+3", or "signal N" when unknown; buf holds at least 16 bytes. */
const char *proc_signal_name(int sig, char *buf, size_t len);

/* "exited with status N" / "was killed by signal NAME" for a waitpid() status. */
void proc_describe_status(int status, char *buf, size_t len);

/* Close every descriptor >= 3 except keep (or -1); uses close_range where available. */
void proc_close_inherited(int keep);

/*
 * Make a forked helper show `title` as its command line and no environment in /proc (the
 * caller's argv and environment, secrets included, are overwritten in place).
 */
int proc_hide_caller(const char *title);

/*
 * How a forked child tells its parent that it could not exec: one {stage, error} record on a
 * close-on-exec pipe; a successful exec closes the pipe with nothing written.
 */
struct proc_spawn_report {
	int stage; /* the spawner's own step numbers */
	int error; /* errno */
};
/* In the child: report the failed stage (error 0 reads as EIO) and _exit(127). */
_noreturn_ void proc_child_fail(int report_fd, int stage, int error);
/*
 * In the parent, with the child's end closed: read the report from report_fd. 0 when the
 * child exec'd; 1 with *ret filled when it reported a failure (it is reaped); -EIO when it
 * died before exec without a word (reaped too).
 */
int proc_spawn_wait_exec(int report_fd, pid_t pid, struct proc_spawn_report *ret);

/*
 * A child that runs fn(arg) and exits with its result (fn normally execs), in the cgroup2
 * directory cgroup_fd when it is not -1 (created there by clone3 CLONE_INTO_CGROUP where the
 * kernel can: *ret_inside). On x86-64 (kernel 5.7 or later) the child
 * shares the caller's memory until it execs or exits, on a stack of its own (clone3 CLONE_VM |
 * CLONE_VFORK, as posix_spawn does): no page table is copied and none of the caller's pages
 * faults again afterwards, and the call returns once the child has exec'd or exited. fn may
 * then make system calls only (no allocation, no stdio, no C library call that takes a lock:
 * proc_become_user() for a user switch) and must not write the caller's memory beyond what
 * arg points to; errno may change. PROC_CHILD_SWITCHES_USER: fn changes credentials (shared
 * only where fs.suid_dumpable is 0; the caller's dumpable flag is put back). Elsewhere it is a
 * fork(). Signals are blocked around it. Returns the pid, or -1 with errno (EAGAIN: the
 * set's pids.max).
 */
#define PROC_CHILD_SWITCHES_USER 1u
pid_t proc_spawn_child(int cgroup_fd, unsigned flags, bool *ret_inside, int (*fn)(void *),
                       void *arg);
/*
 * In a child before exec, as root: become uid/gid with groups for good, by the system calls
 * themselves (the C library's wrappers may take a lock of the caller's whose memory a spawned
 * child shares). 0, or -errno with *ret_step 0 setgroups, 1 setresgid, 2 setresuid, 3 the
 * check that the switch stuck and root is out of reach.
 */
int proc_become_user(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups, int *ret_step);

/*
 * In a child before exec: every signal back to SIG_DFL through the system call (the C library
 * refuses to touch the signals it reserves, yet an ignored one would survive exec).
 */
void proc_reset_signals(void);

#endif
