/* SPDX-License-Identifier: Apache-2.0 */
#include "session_run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "file.h"
#include "log.h"
#include "logfile.h"
#include "procset.h"
#include "session_lines.h"
#include "session_user.h"
#include "proc.h"

#define DRAIN_AFTER_EXIT_MS 2000
#define TICK_MS 100
#define SESSION_RUN_HOOK_FDS 4

enum {
	STAGE_PGRP = 1,
	STAGE_JOIN,
	STAGE_STDIO,
	STAGE_USER,
	STAGE_MKDIR,
	STAGE_CHDIR,
	STAGE_EXEC,
};

struct child_args {
	const struct session_spawn *sp;
	bool joined; /* created in the cgroup already */
	int devnull;
	int report, report_read;
	bool switch_user;
};

static _noreturn_ void child_run(const struct child_args *a)
{
	static char *const empty_env[] = {NULL};
	const struct session_spawn *sp = a->sp;
	int fds[3] = {sp->stdin_fd, sp->stdout_fd, sp->stderr_fd};
	int high[3];
	sigset_t none;
	int rfd = a->report;
	int rc;

	proc_reset_signals();
	if (sp->ctty ? setsid() < 0 : setpgid(0, 0) < 0)
		proc_child_fail(rfd, STAGE_PGRP, errno);
	if (!a->joined && sp->procs_fd >= 0 && write(sp->procs_fd, "0\n", 2) != 2)
		proc_child_fail(rfd, STAGE_JOIN, errno);
	/* Above 2 first, so one target never overwrites another's source. */
	for (int i = 0; i < 3; i++) {
		high[i] = fcntl(fds[i] >= 0 ? fds[i] : a->devnull, F_DUPFD_CLOEXEC, 3);
		if (high[i] < 0)
			proc_child_fail(rfd, STAGE_STDIO, errno);
	}
	for (int i = 0; i < 3; i++)
		if (dup2(high[i], i) < 0)
			proc_child_fail(rfd, STAGE_STDIO, errno);
	if (sp->ctty && ioctl(STDIN_FILENO, TIOCSCTTY, 0) < 0)
		proc_child_fail(rfd, STAGE_STDIO, errno);
	if (a->switch_user) {
		rc = session_user_become(sp->user);
		if (rc < 0)
			proc_child_fail(rfd, STAGE_USER, -rc);
	}
	umask(002);
	if (sp->mkdir_as_user && mkdir(sp->mkdir_as_user, 0700) < 0 && errno != EEXIST)
		proc_child_fail(rfd, STAGE_MKDIR, errno);
	if (sp->cwd && chdir(sp->cwd) < 0)
		proc_child_fail(rfd, STAGE_CHDIR, errno);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(sp->argv[0], sp->argv, sp->env ? sp->env : empty_env);
	proc_child_fail(rfd, STAGE_EXEC, errno);
}

/* The child's start (proc_spawn_child): it shares the caller's memory until exec, so a is
 * only read; the report pipe moves above 2 in a copy. */
static int child_main(void *arg)
{
	struct child_args a = *(const struct child_args *)arg;

	close(a.report_read);
	if (a.report < 3)
		a.report = fcntl(a.report, F_DUPFD_CLOEXEC, 3);
	child_run(&a);
}

static const char *stage_text(const struct session_spawn *sp, int stage, char *buf, size_t len)
{
	switch (stage) {
	case STAGE_PGRP:
		return "setpgid";
	case STAGE_JOIN:
		return "join the process set";
	case STAGE_STDIO:
		return "redirect stdin, stdout and stderr";
	case STAGE_USER:
		return "switch user";
	case STAGE_MKDIR:
		snprintf(buf, len, "mkdir %s", sp->mkdir_as_user);
		return buf;
	case STAGE_CHDIR:
		snprintf(buf, len, "chdir %s", sp->cwd);
		return buf;
	case STAGE_EXEC:
		return "exec";
	default:
		return "prepare the child";
	}
}

int session_run_spawn(const struct session_spawn *sp, pid_t *ret_pid, struct err *err)
{
	_cleanup_close_ int devnull = -1;
	struct child_args a = {.sp = sp};
	struct proc_spawn_report rep;
	const char *who = sp->user && sp->user->uid != (uid_t)-1 ? sp->user->name : NULL;
	char stage_buf[PATH_MAX + 16];
	int pipefd[2];
	int r;
	pid_t pid;

	if (!sp->argv || !sp->argv[0])
		return err_set(err, ERR_FAILED, EINVAL, "session_run_spawn: no program");
	if (who && !(getuid() == sp->user->uid && geteuid() == sp->user->uid)) {
		if (proc_user_switchable(sp->user, sp->argv[0], err) < 0)
			return -1;
		a.switch_user = true;
	}
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (devnull < 0)
		return err_errno(err, "open /dev/null");
	a.devnull = devnull;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	/* The report pipe must not sit on 0..2, which the child replaces. */
	a.report = pipefd[1];

	a.report_read = pipefd[0];
	pid = proc_spawn_child(sp->cgroup_fd, a.switch_user ? PROC_CHILD_SWITCHES_USER : 0,
	                       &a.joined, child_main, &a);
	int fork_errno = errno;
	close(pipefd[1]);
	if (pid < 0) {
		close(pipefd[0]);
		errno = fork_errno;
		return err_errno(err, "cannot run %s: fork", sp->argv[0]);
	}
	if (!sp->ctty)
		(void)setpgid(pid, pid);
	r = proc_spawn_wait_exec(pipefd[0], pid, &rep);
	close(pipefd[0]);
	if (r == 0) {
		*ret_pid = pid;
		return 0;
	}
	if (r < 0)
		return err_set(err, ERR_FAILED, EIO, "cannot run %s: the child died before exec",
		               sp->argv[0]);
	return err_set(err, ERR_FAILED, rep.error, "cannot run %s%s%s: %s: %s", sp->argv[0],
	               who ? " as " : "", who ? who : "",
	               stage_text(sp, rep.stage, stage_buf, sizeof(stage_buf)),
	               strerror(rep.error));
}

bool session_run_cancel_requested(int dirfd, const char *name)
{
	struct stat st;

	return name && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

struct session_run_events {
	int fd;
	uint64_t bytes;
	bool full;
	bool failed;
	const struct session_run_hooks *hooks;
};

static int events_sink(void *userdata, const char *buf, size_t len)
{
	struct session_run_events *e = userdata;
	static const char full_line[] =
	    "{\"type\":\"raw\",\"text\":\"(events.jsonl is full: later events are dropped)\"}\n";

	if (e->full || e->failed)
		return 0;
	if (e->bytes + len > SESSION_EVENTS_MAX) {
		e->full = true;
		buf = full_line;
		len = sizeof(full_line) - 1;
	}
	if (file_write_all(e->fd, buf, len) < 0) {
		e->failed = true;
		log_debug("writing events.jsonl: %s", strerror(errno));
		return 0;
	}
	e->bytes += len;
	if (e->hooks && e->hooks->event && !e->full)
		e->hooks->event(e->hooks->userdata, buf, len);
	return 0;
}

int session_run_event_append(struct session_run_events *ev, const char *line, size_t len)
{
	return events_sink(ev, line, len);
}

static void scrub_stream_freep(struct scrub_stream **s)
{
	if (*s)
		scrub_stream_free(*s);
}

static void session_lines_freep(struct session_lines **l)
{
	if (*l)
		session_lines_free(*l);
}

/* TERM or KILL to the group, and to the rest of the set. */
static void signal_session(pid_t pgid, struct procset *ps, int sig)
{
	pid_t *pids = NULL;
	size_t n = 0;
	struct err e;

	if (pgid > 1)
		kill(-pgid, sig);
	if (ps && procset_pids(ps, &pids, &n, &e) == 0) {
		for (size_t i = 0; i < n; i++)
			if (pids[i] > 1 && pids[i] != getpid())
				kill(pids[i], sig);
		free(pids);
	}
}

static bool read_into(int fd, bool *eof, struct session_lines *lines, struct scrub_stream *errs)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0) {
		if (lines)
			(void)session_lines_feed(lines, buf, (size_t)n);
		else
			(void)scrub_stream_write(errs, buf, (size_t)n);
		return true;
	}
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		*eof = true;
	return false;
}

int session_run(const struct session_run_spec *spec, struct session_run_result *res,
                struct err *err)
{
	_cleanup_procset_ struct procset *ps = NULL;
	_cleanup_logfile_ struct logfile *errlog = NULL;
	_cleanup_(scrub_stream_freep) struct scrub_stream *errs = NULL;
	_cleanup_(session_lines_freep) struct session_lines *lines = NULL;
	_cleanup_close_ int events_fd = -1, out_r = -1, out_w = -1, err_r = -1, err_w = -1;
	_cleanup_close_ int pidfd = -1;
	struct session_run_events ev = {.fd = -1, .hooks = spec->hooks};
	struct session_spawn sp = spec->spawn;
	unsigned kill_after = spec->kill_after_ms ? spec->kill_after_ms : SESSION_KILL_AFTER_MS;
	uint64_t start, deadline = 0, kill_at = 0, drain_until = 0, next_tick = 0;
	bool exited = false, out_eof = false, err_eof = false, termed = false, killed = false;
	char psname[64];
	int fds[2], status = 0, rc;
	pid_t pid;

	*res = (struct session_run_result){0};
	events_fd = open(spec->events_path,
	                 O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (events_fd < 0)
		return err_errno(err, "cannot create %s", spec->events_path);
	ev.fd = events_fd;
	if (spec->hooks && spec->hooks->events)
		*spec->hooks->events = &ev;
	if (logfile_open(spec->stderr_path,
	                 spec->stderr_max ? spec->stderr_max : SESSION_STDERR_MAX, (uid_t)-1,
	                 (gid_t)-1, &errlog, err) < 0)
		return err_ret(err);
	errs = spec->scrub ? scrub_stream_new(spec->scrub, logfile_sink, errlog) : NULL;
	lines = session_lines_new(spec->scrub, 0, events_sink, &ev);
	if ((spec->scrub && !errs) || !lines)
		return err_oom(err);

	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	out_r = fds[0], out_w = fds[1];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	err_r = fds[0], err_w = fds[1];
	if (fcntl(out_r, F_SETFL, O_NONBLOCK) < 0 || fcntl(err_r, F_SETFL, O_NONBLOCK) < 0)
		return err_errno(err, "fcntl");

	/* Orphans of the session (a daemon it started) become our children, so we find them. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	snprintf(psname, sizeof(psname), "sandbox-claude-%d", (int)getpid());
	{
		struct err pe;

		if (procset_create(spec->procset_name ? spec->procset_name : psname, &ps, &pe) <
		    0) {
			log_debug("no process set for the session: %s", pe.msg);
			ps = NULL;
		} else {
			procset_add_root(ps, getpid(), proc_start_time(getpid()));
		}
	}

	sp.stdout_fd = out_w;
	sp.stderr_fd = err_w;
	sp.procs_fd = ps ? procset_procs_fd(ps) : -1;
	sp.cgroup_fd = -1;
	if (ps && procset_backend_of(ps) == PROCSET_CGROUP2)
		sp.cgroup_fd = open(procset_cgroup_path(ps), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = session_run_spawn(&sp, &pid, err);
	if (sp.cgroup_fd >= 0)
		close(sp.cgroup_fd);
	if (rc < 0) {
		if (ps)
			procset_destroy(ps);
		return err_ret(err);
	}
	closep(&out_w);
	out_w = -1;
	closep(&err_w);
	err_w = -1;
	res->pid = pid;
	if (ps && procset_backend_of(ps) == PROCSET_NO_CGROUP)
		procset_add_group(ps, pid, proc_start_time(pid));
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (spec->started)
		spec->started(spec->userdata, pid);

	start = clock_now_ms();
	if (spec->timeout_s)
		deadline = start + (uint64_t)spec->timeout_s * 1000;
	while (!(exited && out_eof && err_eof)) {
		struct pollfd pfd[3 + SESSION_RUN_HOOK_FDS];
		int nfds = 0, timeout = TICK_MS, first_hook;
		uint64_t now = clock_now_ms();

		if (!exited) {
			if (!termed && deadline && now >= deadline) {
				res->timed_out = true;
				termed = true;
				kill_at = now + kill_after;
				signal_session(pid, ps, SIGTERM);
			}
			if (!termed && now >= next_tick) {
				next_tick = now + TICK_MS;
				if (session_run_cancel_requested(spec->cancel_dirfd,
				                                 spec->cancel_name)) {
					res->cancelled = true;
					termed = true;
					kill_at = now + kill_after;
					signal_session(pid, ps, SIGTERM);
				}
			}
			if (termed && !killed && now >= kill_at) {
				killed = true;
				signal_session(pid, ps, SIGKILL);
			}
		} else if (now >= drain_until) {
			break;
		}
		if (!out_eof)
			pfd[nfds++] = (struct pollfd){.fd = out_r, .events = POLLIN};
		if (!err_eof)
			pfd[nfds++] = (struct pollfd){.fd = err_r, .events = POLLIN};
		if (!exited && pidfd >= 0)
			pfd[nfds++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		first_hook = nfds;
		if (!exited && spec->hooks && spec->hooks->poll_fill)
			nfds += (int)spec->hooks->poll_fill(spec->hooks->userdata, pfd + nfds,
			                                    SESSION_RUN_HOOK_FDS);
		if (poll(pfd, (nfds_t)nfds, timeout) < 0 && errno != EINTR)
			break;
		if (!out_eof)
			while (read_into(out_r, &out_eof, lines, NULL))
				;
		if (!err_eof && errs)
			while (read_into(err_r, &err_eof, NULL, errs))
				;
		else if (!err_eof) {
			char buf[65536];
			ssize_t n = read(err_r, buf, sizeof(buf));

			if (n > 0) {
				struct err le;
				(void)logfile_write(errlog, buf, (size_t)n, &le);
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				err_eof = true;
			}
		}
		if (nfds > first_hook && spec->hooks->poll_done)
			spec->hooks->poll_done(spec->hooks->userdata, pfd + first_hook,
			                       (size_t)(nfds - first_hook));
		siginfo_t si = {0};
		if (!exited && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == pid) {
			struct err se;

			/* Still a zombie: its pid and group cannot be reused while we stop the
			 * rest. */
			exited = true;
			drain_until = clock_now_ms() + DRAIN_AFTER_EXIT_MS;
			/* Leftovers may hold the pipes open: stop them now. */
			if (ps && procset_stop(ps, SESSION_LEFTOVER_GRACE_MS, getpid(), &se) < 0)
				log_debug("after the session: %s", se.msg);
			kill(-pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		}
	}
	(void)session_lines_finish(lines);
	if (errs)
		scrub_stream_flush(errs);
	if (!exited) {
		signal_session(pid, ps, SIGKILL);
		waitpid(pid, &status, 0);
	}
	if (ps) {
		struct err se;
		if (procset_stop(ps, SESSION_LEFTOVER_GRACE_MS, getpid(), &se) < 0)
			log_debug("after the session: %s", se.msg);
		procset_destroy(ps);
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	/* A cancel that came as the platform's own TERM to the group still counts. */
	if (!res->cancelled && !res->timed_out &&
	    session_run_cancel_requested(spec->cancel_dirfd, spec->cancel_name))
		res->cancelled = true;
	res->wait_status = status;
	res->exit_status = WIFEXITED(status)     ? WEXITSTATUS(status)
	                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
	                                         : 127;
	res->events = session_lines_count(lines);
	return 0;
}
