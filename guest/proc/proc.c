/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spawning one command of a boot and identifying processes by pid plus start time.
 *
 * proc_spawn() prepares everything that may allocate or read files (argv, /dev/null, the
 * supplementary groups) before fork(); between fork() and execve() the child makes system
 * calls only, and reports the first one that fails to the parent over a close-on-exec pipe.
 * End-of-file on that pipe means execve() succeeded.
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "command_exec.h"
#include "file.h"
#include "log.h"

#if defined(__SANITIZE_ADDRESS__)
#define PROC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROC_ASAN 1
#endif
#endif
#ifndef PROC_ASAN
#define PROC_ASAN 0
#endif
#if PROC_ASAN
#include <sanitizer/asan_interface.h>
#endif
/* Children that share our memory until exec: x86-64 (not x32), where clone3_run() is written. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define PROC_SHARED_SPAWN 1
#else
#define PROC_SHARED_SPAWN 0
#endif

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ---- users ---- */

/* u->groups from getgrouplist(). */
static int groups_lookup(struct run_user *u, struct err *err)
{
	int n = 32;

	for (int tries = 0; tries < 8; tries++) {
		gid_t *g = calloc((size_t)n, sizeof(gid_t));
		int want = n;

		if (!g)
			return err_oom(err);
		if (getgrouplist(u->name, u->gid, g, &want) >= 0) {
			u->groups = g;
			u->n_groups = (size_t)want;
			return 0;
		}
		free(g);
		n = want > n ? want : n * 2;
	}
	return err_set(err, ERR_FAILED, E2BIG, "look up the groups of user %s: too many", u->name);
}

int proc_user_lookup(const char *name, struct run_user *ret, struct err *err)
{
	struct err gerr;
	_cleanup_free_ char *buf = NULL;
	struct passwd pw, *found = NULL;
	size_t size = 4096;
	int r;

	if (!name || !*name)
		return err_set(err, ERR_REFUSED, EINVAL, "user name is empty");
	for (;;) {
		char *n = realloc(buf, size);

		if (!n)
			return err_set(err, ERR_FAILED, ENOMEM, "look up user %s: out of memory",
			               name);
		buf = n;
		r = getpwnam_r(name, &pw, buf, size, &found);
		if (r != ERANGE || size >= (1u << 20))
			break;
		size *= 2;
	}
	if (r != 0 && r != ENOENT && r != ESRCH) {
		errno = r;
		return err_errno(err, "look up user %s", name);
	}
	if (!found)
		return err_set(err, ERR_REFUSED, ENOENT, "user %s does not exist", name);

	char *n = strdup(pw.pw_name);
	char *home = strdup(pw.pw_dir ? pw.pw_dir : "/");
	if (!n || !home) {
		free(n);
		free(home);
		return err_set(err, ERR_FAILED, ENOMEM, "look up user %s: out of memory", name);
	}
	ret->uid = pw.pw_uid;
	ret->gid = pw.pw_gid;
	ret->name = n;
	ret->home = home;
	ret->groups = NULL;
	ret->n_groups = 0;
	/* Without them the user is found all the same; proc_user_switchable() refuses a switch. */
	if (groups_lookup(ret, &gerr) < 0)
		log_debug("%s", gerr.msg);
	return 0;
}

int proc_user_switchable(const struct run_user *u, const char *what, struct err *err)
{
	if (u->groups)
		return 0;
	return err_set(err, ERR_FAILED, EINVAL,
	               "cannot run %s as %s: its supplementary groups could not be looked up", what,
	               u->name ? u->name : "(no name)");
}

void proc_user_self(struct run_user *ret)
{
	const char *home = getenv("HOME");

	ret->uid = (uid_t)-1;
	ret->gid = (gid_t)-1;
	ret->name = NULL;
	ret->groups = NULL;
	ret->n_groups = 0;
	ret->home = home ? strdup(home) : NULL;
}

void proc_user_dispose(struct run_user *u)
{
	if (!u)
		return;
	free(u->name);
	free(u->home);
	free(u->groups);
	u->name = NULL;
	u->home = NULL;
	u->groups = NULL;
	u->n_groups = 0;
}

/* ---- /proc/PID/stat ---- */

int proc_stat_parse(const char *buf, size_t len, struct proc_stat *ret)
{
	const char *open = memchr(buf, '(', len);
	const char *close = NULL;
	struct proc_stat st = {0};
	char *end;

	if (!open)
		return -EINVAL;
	for (const char *p = buf + len; p > open; p--)
		if (p[-1] == ')') {
			close = p - 1;
			break;
		}
	if (!close)
		return -EINVAL;

	errno = 0;
	long pid = strtol(buf, &end, 10);
	if (errno || end == buf || pid <= 0 || pid > INT32_MAX)
		return -EINVAL;
	size_t clen = (size_t)(close - open - 1);
	if (clen >= sizeof(st.comm))
		clen = sizeof(st.comm) - 1;
	memcpy(st.comm, open + 1, clen);
	st.pid = (pid_t)pid;

	/* Fields from 3 on, separated by single spaces; we need 3..6 and 22. */
	const char *p = close + 1;
	const char *lim = buf + len;
	for (int field = 3; field <= 22; field++) {
		char tok[32];
		size_t n = 0;

		if (p >= lim || *p != ' ')
			return -EINVAL;
		p++;
		while (p < lim && *p != ' ' && *p != '\n') {
			if (n + 1 >= sizeof(tok))
				return -EINVAL;
			tok[n++] = *p++;
		}
		tok[n] = '\0';
		if (n == 0)
			return -EINVAL;
		if (field == 3) {
			if (n != 1)
				return -EINVAL;
			st.state = tok[0];
			continue;
		}
		if (field > 6 && field < 22)
			continue;
		errno = 0;
		if (field == 22) {
			unsigned long long v = strtoull(tok, &end, 10);
			if (errno || *end || tok[0] == '-')
				return -EINVAL;
			st.start_time = v;
		} else {
			long v = strtol(tok, &end, 10);
			if (errno || *end || v < -1 || v > INT32_MAX)
				return -EINVAL;
			if (field == 4)
				st.ppid = (pid_t)v;
			else if (field == 5)
				st.pgrp = (pid_t)v;
			else
				st.session = (pid_t)v;
		}
	}
	*ret = st;
	return 0;
}

int proc_stat_read(pid_t pid, struct proc_stat *ret)
{
	char path[64], buf[2048];
	_cleanup_close_ int fd = -1;
	size_t len = 0;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ESRCH ? -ESRCH : -errno;
		if (n == 0 || len + (size_t)n >= sizeof(buf) - 1) {
			len += (size_t)n;
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (len == 0)
		return -ESRCH;
	return proc_stat_parse(buf, len, ret);
}

uint64_t proc_start_time(pid_t pid)
{
	struct proc_stat st;

	if (proc_stat_read(pid, &st) < 0)
		return 0;
	return st.start_time;
}

bool proc_is(pid_t pid, uint64_t start_time)
{
	struct proc_stat st;

	if (proc_stat_read(pid, &st) < 0)
		return false;
	if (st.state == 'Z' || st.state == 'X' || st.state == 'x')
		return false;
	return st.start_time == start_time;
}

pid_t proc_parent(pid_t pid)
{
	struct proc_stat st;

	if (proc_stat_read(pid, &st) < 0)
		return -1;
	return st.ppid;
}

int proc_signal_wait(pid_t pid, uint64_t start_time, int sig, unsigned wait_ms)
{
	_cleanup_close_ int pidfd = -1;
	uint64_t until;

	if (pid <= 1 || pid == getpid())
		return -EPERM;
	if (wait_ms && !start_time)
		return -EINVAL; /* whatever has that pid now is not waited for */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 && errno == ESRCH)
		return -ESRCH;
	/* With a pidfd the check below pins the process: it cannot be recycled under us. */
	if (start_time != 0) {
		struct proc_stat st;

		if (proc_stat_read(pid, &st) < 0 || st.start_time != start_time)
			return -ESRCH;
	}
	if (pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0) {
		if (pidfd >= 0 && errno != ENOSYS)
			return -errno;
		if (kill(pid, sig) < 0)
			return -errno;
	}
	if (!wait_ms)
		return 0;
	/*
	 * The pidfd turns readable when the process ends; without one (poll() then only sleeps),
	 * its /proc entry is read every 10 ms.
	 */
	until = clock_now_ms() + wait_ms;
	for (uint64_t now; (now = clock_now_ms()) < until;) {
		struct pollfd pfd = {.fd = pidfd, .events = POLLIN};

		if (pidfd < 0 && !proc_is(pid, start_time))
			return 0;
		int r = poll(&pfd, 1, pidfd < 0 ? 10 : (int)(until - now));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR && pidfd >= 0) /* the /proc entry from now on */
			pidfd = (close(pidfd), -1);
	}
	return -ETIMEDOUT;
}

/* ---- status text ---- */

static const char *const signal_names[] = {
    [SIGHUP] = "SIGHUP",       [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT",
    [SIGILL] = "SIGILL",       [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
    [SIGBUS] = "SIGBUS",       [SIGFPE] = "SIGFPE",   [SIGKILL] = "SIGKILL",
    [SIGUSR1] = "SIGUSR1",     [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
    [SIGPIPE] = "SIGPIPE",     [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
    [SIGCHLD] = "SIGCHLD",     [SIGCONT] = "SIGCONT", [SIGSTOP] = "SIGSTOP",
    [SIGTSTP] = "SIGTSTP",     [SIGTTIN] = "SIGTTIN", [SIGTTOU] = "SIGTTOU",
    [SIGURG] = "SIGURG",       [SIGXCPU] = "SIGXCPU", [SIGXFSZ] = "SIGXFSZ",
    [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF", [SIGWINCH] = "SIGWINCH",
    [SIGIO] = "SIGIO",         [SIGPWR] = "SIGPWR",   [SIGSYS] = "SIGSYS",
#ifdef SIGSTKFLT
    [SIGSTKFLT] = "SIGSTKFLT",
#endif
};

const char *proc_signal_name(int sig, char *buf, size_t len)
{
	if (sig > 0 && (size_t)sig < ELEMENTSOF(signal_names) && signal_names[sig])
		return signal_names[sig];
	if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

void proc_describe_status(int status, char *buf, size_t len)
{
	char name[32];

	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %s%s",
		         proc_signal_name(WTERMSIG(status), name, sizeof(name)),
		         WCOREDUMP(status) ? " (core dumped)" : "");
	else if (WIFSTOPPED(status))
		snprintf(buf, len, "was stopped by signal %s",
		         proc_signal_name(WSTOPSIG(status), name, sizeof(name)));
	else
		snprintf(buf, len, "ended with wait status 0x%x", (unsigned)status);
}

/* ---- descriptors ---- */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/*
 * Close (or mark close-on-exec) every descriptor >= 3 except keep by listing /proc/self/fd with
 * getdents64 into a stack buffer: no allocation, so it is safe between fork and exec. Returns
 * -errno when /proc is not there.
 */
static int fds_walk(int keep, bool cloexec)
{
	char buf[4096] __attribute__((aligned(8)));
	int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		bool closed_any = false;

		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			int fd = 0;
			bool num = d->d_name[0] != '\0';

			off += d->d_reclen;
			for (const char *c = d->d_name; *c; c++) {
				if (*c < '0' || *c > '9' || fd > 100000000) {
					num = false;
					break;
				}
				fd = fd * 10 + (*c - '0');
			}
			if (!num || fd < 3 || fd == keep || fd == dfd)
				continue;
			if (cloexec) {
				int fl = fcntl(fd, F_GETFD);
				if (fl >= 0 && !(fl & FD_CLOEXEC))
					fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
			} else {
				close(fd);
				closed_any = true;
			}
		}
		/* Closing changes the directory; start over so nothing is skipped. */
		if (closed_any)
			lseek(dfd, 0, SEEK_SET);
	}
	close(dfd);
	return 0;
}

/* Last resort without close_range and /proc: every possible descriptor number. */
static void fds_brute(int keep, bool cloexec)
{
	long max = sysconf(_SC_OPEN_MAX);

	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = 3; fd < max; fd++) {
		if (fd == keep)
			continue;
		if (cloexec)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
		else
			close(fd);
	}
}

static int close_range_sys(unsigned first, unsigned last, unsigned flags)
{
	if (first > last)
		return 0;
	return (int)syscall(SYS_close_range, first, last, flags);
}

/* Async-signal-safe: used in the child between fork and exec. */
static void fds_release(int keep, bool cloexec)
{
	unsigned flags = cloexec ? CLOSE_RANGE_CLOEXEC : 0;
	int r;

	if (keep < 3)
		r = close_range_sys(3, ~0U, flags);
	else {
		r = close_range_sys(3, (unsigned)keep - 1, flags);
		if (r == 0)
			r = close_range_sys((unsigned)keep + 1, ~0U, flags);
	}
	if (r == 0)
		return;
	if (fds_walk(keep, cloexec) < 0)
		fds_brute(keep, cloexec);
}

void proc_close_inherited(int keep)
{
	fds_release(keep, false);
}

/* ---- spawning ---- */

enum spawn_stage {
	STAGE_PGRP,
	STAGE_SESSION,
	STAGE_JOIN,
	STAGE_OOM,
	STAGE_STDIO,
	STAGE_GROUPS,
	STAGE_GID,
	STAGE_UID,
	STAGE_VERIFY,
	STAGE_CHDIR,
	STAGE_KEEP_FD,
	STAGE_EXEC,
};

struct child_args {
	const struct proc_spec *spec;
	const struct command_exec *cmd;
	char *const *env;
	int devnull;
	int report_fd, report_read;
	bool switch_user;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t n_groups;
	bool born_inside; /* created in the process set's cgroup (clone3): nothing to join */
	/* The caller's, written just before execve (seen by the caller when memory is shared). */
	uint64_t *exec_us;
};

void proc_child_fail(int report_fd, int stage, int error)
{
	struct proc_spawn_report rep = {.stage = stage, .error = error ? error : EIO};
	ssize_t n;

	do
		n = write(report_fd, &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	_exit(127);
}

int proc_spawn_wait_exec(int report_fd, pid_t pid, struct proc_spawn_report *ret)
{
	struct proc_spawn_report rep;
	size_t got = 0;

	while (got < sizeof(rep)) {
		ssize_t n = read(report_fd, (char *)&rep + got, sizeof(rep) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got == 0)
		return 0;
	/* The child reported a failure and exits 127: reap it (a reaper of the caller may win). */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (got != sizeof(rep))
		return -EIO;
	*ret = rep;
	return 1;
}

/*
 * Every signal back to SIG_DFL, through the system call: the C library refuses to touch the
 * signals it reserves for itself (glibc's 32 and 33), yet an ignored one would be inherited
 * across exec. An all-zero kernel sigaction is SIG_DFL with no flags and an empty mask on every
 * architecture, whatever the field order.
 */
void proc_reset_signals(void)
{
	unsigned long zero[8] = {0};

	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, zero, NULL, (size_t)8);
}

static int dup_high(int fd)
{
	return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

int proc_oom_score_reset(void)
{
	char buf[16];
	_cleanup_close_ int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno; /* no /proc: nothing to read back */
	n = read(fd, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	if (n > 0 && buf[0] == '-' && pwrite(fd, "0", 1, 0) != 1)
		return -errno;
	return 0;
}

int proc_oom_score_protect(char *before, size_t len)
{
	_cleanup_close_ int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	ssize_t n;

	before[0] = '\0';
	if (fd < 0)
		return -errno;
	n = read(fd, before, len - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	before[n] = '\0';
	n = pwrite(fd, "-1000", 5, 0);
	if (n != 5) {
		int e = n < 0 ? errno : EIO;
		before[0] = '\0';
		return -e;
	}
	return 0;
}

int proc_oom_score_restore(const char *before)
{
	_cleanup_close_ int fd = -1;

	if (!before[0])
		return 0;
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : file_write_all(fd, before, strlen(before));
}

int proc_become_user(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups, int *ret_step)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	*ret_step = 0;
	if (syscall(SYS_setgroups, n_groups, groups) < 0)
		return -errno;
	*ret_step = 1;
	if (syscall(SYS_setresgid, gid, gid, gid) < 0)
		return -errno;
	*ret_step = 2;
	if (syscall(SYS_setresuid, uid, uid, uid) < 0)
		return -errno;
	*ret_step = 3;
	if (syscall(SYS_getresuid, &ru, &eu, &su) < 0 || syscall(SYS_getresgid, &rg, &eg, &sg) < 0)
		return -errno;
	if (ru != uid || eu != uid || su != uid || rg != gid || eg != gid || sg != gid)
		return -EPERM;
	/* Dropped for good: root must not be reachable again. */
	if (uid != 0 && (syscall(SYS_setresuid, -1, 0, -1) == 0 || syscall(SYS_setuid, 0) == 0))
		return -EPERM;
	return 0;
}

static _noreturn_ void child_run(const struct child_args *a);

static int child_main(void *arg)
{
	const struct child_args *a = arg;

	close(a->report_read);
	child_run(a);
}

static _noreturn_ void child_run(const struct child_args *a)
{
	const struct proc_spec *spec = a->spec;
	sigset_t none;
	int rfd, out, nul;

	/* The report pipe must not sit on 0..2, which are replaced below. */
	rfd = a->report_fd >= 3 ? a->report_fd : dup_high(a->report_fd);
	if (rfd < 0)
		proc_child_fail(a->report_fd, STAGE_STDIO, errno);

	proc_reset_signals();

	if (spec->new_session) {
		if (setsid() < 0)
			proc_child_fail(rfd, STAGE_SESSION, errno);
	} else if (setpgid(0, 0) < 0) {
		proc_child_fail(rfd, STAGE_PGRP, errno);
	}

	for (unsigned i = 0; i <= spec->n_join_fds; i++) {
		int fd = i == 0 ? spec->procs_fd : spec->join_fds[i - 1], r;

		/* Created in the set's cgroup already (clone3): only the limits' v1 cgroups. */
		if (fd < 0 || (i == 0 && a->born_inside))
			continue;
		r = file_write_all(fd, "0\n", 2);
		if (r < 0)
			proc_child_fail(rfd, STAGE_JOIN, -r);
	}

	/*
	 * Whatever the caller's protection from the out-of-memory killer (the engine's, while it
	 * sits in the limits; a daemon's own): never the child's. While still root: a reset done
	 * as the run user would leave it free to go back.
	 */
	int oom = proc_oom_score_reset();
	if (oom < 0)
		proc_child_fail(rfd, STAGE_OOM, -oom);

	nul = dup_high(a->devnull);
	out = dup_high(spec->output_fd >= 0 ? spec->output_fd : a->devnull);
	if (nul < 0 || out < 0 || dup2(nul, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
	    dup2(out, STDERR_FILENO) < 0)
		proc_child_fail(rfd, STAGE_STDIO, errno);

	if (a->switch_user) {
		static const int stages[] = {STAGE_GROUPS, STAGE_GID, STAGE_UID, STAGE_VERIFY};
		int step = 3, r = proc_become_user(a->uid, a->gid, a->groups, a->n_groups, &step);

		if (r < 0)
			proc_child_fail(rfd, stages[step], -r);
	}

	if (spec->cwd && chdir(spec->cwd) < 0)
		proc_child_fail(rfd, STAGE_CHDIR, errno);

	/* Everything >= 3 closes at exec, except keep_fd; the report pipe stays open until then. */
	fds_release(spec->keep_fd, true);
	if (spec->keep_fd >= 3 && fcntl(spec->keep_fd, F_SETFD, 0) < 0)
		proc_child_fail(rfd, STAGE_KEEP_FD, errno);

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	*a->exec_us = clock_now_us();
	proc_child_fail(rfd, STAGE_EXEC, command_exec_run(a->cmd, a->env));
}

static const char *stage_text(const struct proc_spec *spec, int stage, char *buf, size_t len)
{
	switch (stage) {
	case STAGE_PGRP:
		return "setpgid";
	case STAGE_SESSION:
		return "setsid";
	case STAGE_JOIN:
		return "join the process set";
	case STAGE_OOM:
		return "reset oom_score_adj to 0";
	case STAGE_STDIO:
		return "redirect stdin, stdout and stderr";
	case STAGE_GROUPS:
		return "setgroups";
	case STAGE_GID:
		return "setgid";
	case STAGE_UID:
		return "setuid";
	case STAGE_VERIFY:
		return "drop privileges (the user switch did not stick)";
	case STAGE_CHDIR:
		snprintf(buf, len, "chdir %s", spec->cwd);
		return buf;
	case STAGE_KEEP_FD:
		return "keep the notify descriptor open";
	case STAGE_EXEC:
		return "exec /bin/sh";
	default:
		return "prepare the child";
	}
}

static int spawn_error(struct err *err, const struct proc_spec *spec, int code, const char *what)
{
	const char *user = spec->user && spec->user->uid != (uid_t)-1 ? spec->user->name : NULL;
	int cmax = 200;

	return err_set(err, ERR_FAILED, code, "cannot run %.*s%s%s%s: %s: %s", cmax, spec->command,
	               strlen(spec->command) > (size_t)cmax ? "..." : "", user ? " as " : "",
	               user ? user : "", what, strerror(code));
}

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#define PROC_CLONE_INTO_CGROUP 0x200000000ULL

/* The kernel's struct clone_args up to `cgroup` (CLONE_ARGS_SIZE_VER2). */
struct proc_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
	    set_tid_size, cgroup;
};

/*
 * The cgroup2 directory whose cgroup.procs procs_fd is, opened, or -1 (cgroup v1, or not
 * found): a child can then be created in it rather than moved there, which spares a wait of
 * about 10 ms for the kernel (moving a process waits for an RCU grace period).
 */
static int cgroup_dir_of(int procs_fd)
{
	char link[64], path[4096], *slash;
	struct statfs sf;
	ssize_t n;
	int fd;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", procs_fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return -1;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash || strcmp(slash, "/cgroup.procs") != 0)
		return -1;
	*slash = '\0';
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && (fstatfs(fd, &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * clone3 failed for want of the feature (an old kernel, a seccomp filter that answers ENOSYS or
 * EPERM), not of a resource: EAGAIN is the set's pids.max, and a child forked outside and moved
 * in afterwards would pass that limit.
 */
static bool clone3_unsupported(int error)
{
	return error != EAGAIN && error != ENOMEM;
}

#if PROC_SHARED_SPAWN
#define PROC_CLONE_VM 0x00000100ULL
#define PROC_CLONE_VFORK 0x00004000ULL
/*
 * clone3 with the child on a stack of its own, running fn(arg): the system call returns to the
 * same instruction in both, and the child, whose stack pointer the kernel set, calls fn there
 * and exits with what it returns (fn normally execs). Returns the child's pid or -errno.
 */
static long clone3_run(struct proc_clone_args *ca, int (*fn)(void *), void *arg)
{
	register long rax __asm__("rax") = SYS_clone3;
	register long rdi __asm__("rdi") = (long)ca;
	register long rsi __asm__("rsi") = (long)sizeof(*ca);
	register long r12 __asm__("r12") = (long)fn;
	register long r13 __asm__("r13") = (long)arg;

	__asm__ volatile("syscall\n\t"
	                 "test %%rax, %%rax\n\t"
	                 "jnz 1f\n\t"
	                 "xor %%ebp, %%ebp\n\t"
	                 "mov %%r13, %%rdi\n\t"
	                 "call *%%r12\n\t"
	                 "mov %%eax, %%edi\n\t"
	                 "mov $60, %%eax\n\t" /* exit */
	                 "syscall\n\t"
	                 "hlt\n"
	                 "1:"
	                 : "+r"(rax)
	                 : "r"(rdi), "r"(rsi), "r"(r12), "r"(r13)
	                 : "rcx", "r11", "memory");
	return rax;
}

/*
 * Whether a child may share our memory until exec:
 * - a kernel of 5.7 or later: clone3 before "clone3: validate stack arguments" (5.5) took
 *   `stack` for the stack pointer itself, and the child would run over our frames; 5.7 has
 *   CLONE_INTO_CGROUP too;
 * - for a child that switches users, fs.suid_dumpable 0: the kernel marks the memory the child
 *   shares with us dumpable as that setting says when the child's credentials change, and with
 *   1 the app's user could trace it, and so us, until it execs. Our own flag is put back
 *   after (a 2, which prctl cannot set, stays 0: less than it was, never more).
 */
static bool shared_spawn_ok(unsigned flags, int *ret_dumpable)
{
	struct utsname u;
	unsigned major = 0, minor = 0;
	char v[4] = "";
	ssize_t n;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2 || major < 5 ||
	    (major == 5 && minor < 7))
		return false;
	*ret_dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	if (!(flags & PROC_CHILD_SWITCHES_USER))
		return true;
	_cleanup_close_ int fd = open("/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, v, sizeof(v) - 1);
	return n > 0 && v[0] == '0';
}

static long spawn_shared(int cgroup_fd, bool *ret_inside, int (*fn)(void *), void *arg)
{
	/*
	 * Deep enough for the children of proc_spawn() and the session runner (about 5 KB: a 4 KiB
	 * getdents buffer and a few frames), on our stack, whose pages are already there. Nothing
	 * guards its end: the child code must stay small.
	 */
	char stack[32768] __attribute__((aligned(16)));
	struct proc_clone_args ca = {
	    .flags =
	        PROC_CLONE_VM | PROC_CLONE_VFORK | (cgroup_fd >= 0 ? PROC_CLONE_INTO_CGROUP : 0),
	    .exit_signal = SIGCHLD,
	    .stack = (uint64_t)(uintptr_t)stack,
	    .stack_size = sizeof(stack),
	    .cgroup = cgroup_fd >= 0 ? (uint64_t)cgroup_fd : 0,
	};
	long pid = clone3_run(&ca, fn, arg);

	*ret_inside = pid >= 0 && cgroup_fd >= 0;
#if PROC_ASAN
	/* The child's frames, never returned from, left their red zones marked in the shadow
	 * memory it shared with us. */
	__asan_unpoison_memory_region(stack, sizeof(stack));
#endif
	return pid;
}
#endif

/*
 * fork(), into the cgroup2 directory cgroup_fd (clone3 CLONE_INTO_CGROUP) when it is not -1 and
 * the kernel can (*ret_inside), else a plain fork().
 */
static pid_t fork_into(int cgroup_fd, bool *ret_inside)
{
	*ret_inside = false;
	if (cgroup_fd >= 0) {
		struct proc_clone_args ca = {
		    .flags = PROC_CLONE_INTO_CGROUP,
		    .exit_signal = SIGCHLD,
		    .cgroup = (uint64_t)cgroup_fd,
		};
		pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));

		if (pid >= 0) {
			*ret_inside = true;
			return pid;
		}
		if (!clone3_unsupported(errno))
			return -1;
	}
	return fork();
}

pid_t proc_spawn_child(int cgroup_fd, unsigned flags, bool *ret_inside, int (*fn)(void *),
                       void *arg)
{
	sigset_t all, old;
	long r = -ENOSYS;

	/* No handler of ours may run in the child (it may share our memory) before its reset. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
#if PROC_SHARED_SPAWN
	int dumpable = -1;

	if (shared_spawn_ok(flags, &dumpable)) {
		r = spawn_shared(cgroup_fd, ret_inside, fn, arg);
		if ((flags & PROC_CHILD_SWITCHES_USER) &&
		    prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != dumpable)
			(void)prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
	}
#endif
	if (r < 0 && clone3_unsupported((int)-r)) {
		r = fork_into(cgroup_fd, ret_inside);
		if (r == 0)
			_exit(fn(arg));
		if (r < 0)
			r = -errno;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (pid_t)r;
}

int proc_spawn(const struct proc_spec *spec, pid_t *ret_pid, struct err *err)
{
	return proc_spawn_at(spec, ret_pid, NULL, err) < 0 ? -1 : 0;
}

int proc_spawn_at(const struct proc_spec *spec, pid_t *ret_pid, uint64_t *ret_exec_us,
                  struct err *err)
{
	static char *const empty_env[] = {NULL};
	_cleanup_(command_exec_dispose) struct command_exec cmd = {0};
	uint64_t exec_us = 0;
	_cleanup_close_ int devnull = -1, cgroup_fd = -1;
	int pipefd[2] = {-1, -1};
	struct child_args a = {0};
	struct proc_spawn_report rep;
	char stage_buf[512];
	int r;
	pid_t pid;

	if (!spec->command)
		return err_set(err, ERR_FAILED, EINVAL, "proc_spawn: no command");
	if (spec->keep_fd >= 0 && spec->keep_fd < 3)
		return spawn_error(err, spec, EINVAL, "keep descriptor below 3");

	a.spec = spec;
	a.exec_us = &exec_us;
	a.env = spec->env ? spec->env : empty_env;
	if (command_exec_prepare(spec->command, a.env, spec->cwd, &cmd) < 0)
		return spawn_error(err, spec, ENOMEM, "prepare the command");
	a.cmd = &cmd;

	if (spec->user && spec->user->uid != (uid_t)-1) {
		const struct run_user *u = spec->user;

		if (!u->name)
			return spawn_error(err, spec, EINVAL, "user without a name");
		/* Already that user and not root: nothing to switch (and no right to). */
		if (!(geteuid() != 0 && getuid() == u->uid && geteuid() == u->uid &&
		      getgid() == u->gid && getegid() == u->gid)) {
			if (proc_user_switchable(u, spec->command, err) < 0)
				return -1;
			a.switch_user = true;
			a.uid = u->uid;
			a.gid = u->gid;
			a.groups = u->groups;
			a.n_groups = u->n_groups;
		}
	}

	devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (devnull < 0)
		return spawn_error(err, spec, errno, "open /dev/null");
	a.devnull = devnull;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return spawn_error(err, spec, errno, "pipe");
	a.report_fd = pipefd[1];

	if (spec->procs_fd >= 0)
		cgroup_fd = cgroup_dir_of(spec->procs_fd);
	a.report_read = pipefd[0];
	pid = proc_spawn_child(cgroup_fd, a.switch_user ? PROC_CHILD_SWITCHES_USER : 0,
	                       &a.born_inside, child_main, &a);
	int fork_errno = errno;
	close(pipefd[1]);
	if (pid < 0) {
		close(pipefd[0]);
		return spawn_error(err, spec, fork_errno, "fork");
	}
	/* Both sides set the group, so it holds whichever runs first. */
	if (!spec->new_session)
		(void)setpgid(pid, pid);

	r = proc_spawn_wait_exec(pipefd[0], pid, &rep);
	close(pipefd[0]);
	if (r == 0) {
		*ret_pid = pid;
		/* A forked child (no shared memory) wrote its own copy: ours is still 0. */
		if (ret_exec_us)
			*ret_exec_us = exec_us ? exec_us : clock_now_us();
		return exec_us ? 1 : 0;
	}
	if (r < 0)
		return spawn_error(err, spec, EIO, "the child died before exec");
	return spawn_error(err, spec, rep.error,
	                   stage_text(spec, rep.stage, stage_buf, sizeof(stage_buf)));
}

/*
 * A forked helper (the supervisor) still shows its parent's argv and initial environment in
 * /proc/PID/cmdline and /proc/PID/environ: the caller's model credential among them. Overwrite
 * both blocks in place (their addresses are fields 48-51 of /proc/self/stat) so the process
 * reads as `title` and carries no caller variable; the C library's environment is cleared too.
 */
int proc_hide_caller(const char *title)
{
	unsigned long long vals[4];
	char buf[2048], *p;
	ssize_t n;
	int fd, field;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	/* p + 1 is the space before field 3; walk to the space before field 48. */
	for (field = 3, p++; field < 48 && p; field++)
		p = strchr(p + 1, ' ');
	for (int i = 0; i < 4; i++) {
		char *end;
		if (!p)
			return -EINVAL;
		vals[i] = strtoull(p + 1, &end, 10);
		p = *end == ' ' ? end : NULL;
	}
	clearenv();
	/* arg_start, arg_end, env_start, env_end */
	if (vals[3] > vals[2])
		explicit_bzero((void *)(uintptr_t)vals[2], (size_t)(vals[3] - vals[2]));
	if (vals[1] > vals[0]) {
		size_t len = (size_t)(vals[1] - vals[0]);
		char *args = (char *)(uintptr_t)vals[0];
		explicit_bzero(args, len);
		if (title)
			memcpy(args, title, strnlen(title, len - 1));
	}
	return 0;
}
