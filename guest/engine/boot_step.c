/* SPDX-License-Identifier: Apache-2.0 */
#include "boot_step.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "boot_limits.h"
#include "clock.h"
#include "file.h"
#include "log.h"
#include "logfile.h"
#include "proc.h"
#include "scrub.h"
#include "strv.h"

#define CAPTURE_MAX (1024 * 1024)
#define DRAIN_AFTER_EXIT_MS 2000

void boot_step_observe(const struct boot_plan *p, const struct boot_observer *obs, const char *step,
                       const char *phase, const char *detail)
{
	_cleanup_free_ char *clean = NULL;
	size_t len;

	if (!obs || !obs->phase)
		return;
	if (detail && p->scrub)
		clean = scrub_string(p->scrub, detail, strlen(detail), &len);
	obs->phase(obs->userdata, step, phase, clean ? clean : (p->scrub ? NULL : detail));
}

void boot_step_explain_exit(const char *how, char *const *env, char *buf, size_t len)
{
	const char *path = strv_env_get(env, "PATH");

	buf[0] = '\0';
	if (strcmp(how, "exited with status 127") == 0)
		snprintf(buf, len,
		         ": a program it runs was not found on PATH (%s); the log has the shell's "
		         "message",
		         path ? path : "not set");
	else if (strcmp(how, "exited with status 126") == 0)
		snprintf(buf, len,
		         ": a program it runs is not executable (a file without its x bit, a "
		         "directory, or a script whose #! line names a missing interpreter)");
}

bool boot_step_interrupted(const struct step_context *ctx, struct err *err)
{
	struct signalfd_siginfo si;
	char name[32];

	if (ctx->signal_fd < 0 || read(ctx->signal_fd, &si, sizeof(si)) != sizeof(si))
		return false;
	err_set(err, ERR_FAILED, EINTR, "the boot was interrupted by %s",
	        proc_signal_name((int)si.ssi_signo, name, sizeof(name)));
	return true;
}

struct step_sink {
	struct logfile *log;
	const struct boot_observer *obs;
	const char *name;
	char *capture;
	size_t capture_len;
	struct err *err;
	int failed;
};

/* Scrubbed output goes to the log, the observer and (for captures) a buffer. */
static int step_sink_write(void *userdata, const char *buf, size_t len)
{
	struct step_sink *s = userdata;

	if (s->log && !s->failed && logfile_write(s->log, buf, len, s->err) < 0)
		s->failed = 1;
	if (s->obs && s->obs->output)
		s->obs->output(s->obs->userdata, s->name, buf, len);
	if (s->capture && s->capture_len + len < CAPTURE_MAX) {
		memcpy(s->capture + s->capture_len, buf, len);
		s->capture_len += len;
		s->capture[s->capture_len] = '\0';
	}
	return 0;
}

static int pidfd_open_compat(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void scrub_stream_freep(struct scrub_stream **s)
{
	if (*s)
		scrub_stream_free(*s);
}

static int step_execute(const struct step_context *ctx, const char *name, const char *command,
                        char *const *env, unsigned timeout_s, const char *log_path, char **ret_out,
                        struct err *err)
{
	const struct boot_plan *p = ctx->plan;
	_cleanup_logfile_ struct logfile *log = NULL;
	_cleanup_(scrub_stream_freep) struct scrub_stream *stream = NULL;
	_cleanup_close_ int out_r = -1, out_w = -1, pidfd = -1;
	_cleanup_free_ char *header = NULL;
	struct step_sink sink = {.obs = ctx->obs, .name = name, .err = err};
	struct err log_err;
	uint64_t start = clock_now_ms(), limit = ctx->deadline_ms, exited_at = 0;
	/* The command's time is taken in us and rounded to ms: cut, it would lean towards ours. */
	uint64_t spawned_us = clock_now_us();
	bool step_limit = false, exited = false, eof = false;
	struct err interrupt = {0}, limit_err = {0};
	struct boot_limits_watch watch = {0};
	const char *limit_hit = NULL;
	int status = 0, fds[2], join[CGROUP_LIMITS_N];
	pid_t pid;
	char buf[65536];

	err_clear(&log_err);
	sink.err = &log_err;
	if (timeout_s && start + (uint64_t)timeout_s * 1000 < limit) {
		limit = start + (uint64_t)timeout_s * 1000;
		step_limit = true;
	}
	if (logfile_open(log_path, BOOT_LOG_MAX_BYTES, (uid_t)-1, (gid_t)-1, &log, err) < 0)
		return err_wrap(err, "cannot open the log of step %s", name);
	logfile_keep_times_or_say(log);
	sink.log = log;
	if (ret_out) {
		sink.capture = malloc(CAPTURE_MAX);
		if (!sink.capture)
			return err_oom(err);
		sink.capture[0] = '\0';
	}
	stream = scrub_stream_new(p->scrub, step_sink_write, &sink);
	if (!stream) {
		free(sink.capture);
		return err_oom(err);
	}
	if (asprintf(&header, "$ %s\n", command) < 0) {
		free(sink.capture);
		return err_oom(err);
	}
	/* The command line is logged, but never offered to the capture. */
	{
		char *saved = sink.capture;
		sink.capture = NULL;
		scrub_stream_write(stream, header, strlen(header));
		scrub_stream_flush(stream);
		sink.capture = saved;
	}

	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(sink.capture);
		return err_errno(err, "cannot create a pipe");
	}
	out_r = fds[0];
	out_w = fds[1];
	if (fcntl(out_r, F_SETFL, O_NONBLOCK) < 0) {
		free(sink.capture);
		return err_errno(err, "cannot set up the output pipe");
	}
	{
		struct proc_spec spec = {
		    .command = command,
		    .cwd = p->app_dir,
		    .env = env,
		    .user = &p->user,
		    .output_fd = out_w,
		    .procs_fd = ctx->procs ? procset_procs_fd(ctx->procs) : -1,
		    .join_fds = join,
		    /* A session of its own: no step can join the engine's process group. */
		    .new_session = true,
		    .keep_fd = -1,
		};
		if (ctx->procs) {
			spec.n_join_fds = procset_join_fds(ctx->procs, join);
			boot_limits_watch_begin(p, ctx->procs, &watch);
		}
		if (proc_spawn_at(&spec, &pid, &spawned_us, err) < 0) {
			free(sink.capture);
			return err_wrap(err, "cannot start step %s", name);
		}
		/* The command's time runs from its exec: what came before it is ours. */
	}
	closep(&out_w);
	out_w = -1;
	/* With a cgroup the group is in it already; the fallback must remember it. */
	if (ctx->procs && procset_backend_of(ctx->procs) == PROCSET_NO_CGROUP)
		procset_add_group(ctx->procs, pid, proc_start_time(pid));
	pidfd = pidfd_open_compat(pid);
	boot_step_observe(p, ctx->obs, name, "started", command);
	/* Its output pipe's write end is closed above: nothing forked here holds it. */
	if (ctx->spawned)
		ctx->spawned(ctx->spawned_userdata);

	while (!(exited && eof)) {
		struct pollfd pfd[3];
		int nfds = 0, timeout;
		uint64_t now = clock_now_ms();

		if (!exited && now >= limit)
			break;
		if (!exited && boot_step_interrupted(ctx, &interrupt))
			break;
		if (!exited && ctx->procs &&
		    boot_limits_watch_check(p, ctx->procs, ctx->disk, &watch, command, false,
		                            &limit_hit, &limit_err) < 0)
			break;
		if (exited && now >= exited_at + DRAIN_AFTER_EXIT_MS)
			break;
		timeout = (int)((exited ? exited_at + DRAIN_AFTER_EXIT_MS : limit) - now);
		if (!eof)
			pfd[nfds++] = (struct pollfd){.fd = out_r, .events = POLLIN};
		if (!exited && pidfd >= 0)
			pfd[nfds++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		if (!exited && ctx->signal_fd >= 0)
			pfd[nfds++] = (struct pollfd){.fd = ctx->signal_fd, .events = POLLIN};
		if (!exited && pidfd < 0 && timeout > 50)
			timeout = 50;
		if (!exited && ctx->procs && timeout > BOOT_LIMITS_LOOK_MS)
			timeout = BOOT_LIMITS_LOOK_MS;
		if (poll(pfd, (nfds_t)nfds, timeout) < 0 && errno != EINTR) {
			err_errno(err, "poll");
			break;
		}
		if (!eof) {
			ssize_t n = read(out_r, buf, sizeof(buf));
			if (n > 0)
				scrub_stream_write(stream, buf, (size_t)n);
			else if (n == 0)
				eof = true;
			else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				eof = true;
		}
		if (!exited) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid) {
				exited = true;
				/* Orphans the step left (we are their subreaper) are reaped too. */
				while (waitpid(-1, NULL, WNOHANG) > 0)
					;
				exited_at = clock_now_ms();
				if (ctx->command_ms)
					*ctx->command_ms =
					    (int64_t)(clock_now_us() - spawned_us + 500) / 1000;
				/* Leftovers may hold the pipe open: stop them now. */
				if (ctx->procs) {
					struct err stop_err;
					if (procset_stop(ctx->procs, ctx->grace_ms, getpid(),
					                 &stop_err) < 0)
						log_debug("after step %s: %s", name, stop_err.msg);
					while (waitpid(-1, NULL, WNOHANG) > 0)
						;
				}
			}
		}
	}
	scrub_stream_flush(stream);

	if (!exited) {
		/* Timed out: stop the step's processes, then collect it. */
		struct err stop_err;
		if (ctx->procs)
			procset_stop(ctx->procs, ctx->grace_ms, getpid(), &stop_err);
		kill(-pid, SIGKILL);
		waitpid(pid, &status, 0);
		if (ret_out)
			free(sink.capture);
		if (interrupt.cls) {
			*err = interrupt;
			return err_ret(err);
		}
		if (limit_hit) {
			if (ctx->limit_hit)
				*ctx->limit_hit = limit_hit;
			*err = limit_err;
			return err_ret(err);
		}
		if (step_limit)
			return err_set(err, ERR_FAILED, ETIMEDOUT, "`%s` timed out after %u s",
			               command, timeout_s);
		return err_set(err, ERR_FAILED, ETIMEDOUT,
		               "the boot's deadline (%u s) passed while `%s` was running",
		               p->timeout, command);
	}
	if (sink.failed) {
		if (ret_out)
			free(sink.capture);
		*err = log_err;
		return err_wrap(err, "step %s", name);
	}
	/* A step that succeeded all the same is not failed for a process the kernel killed. */
	if (ctx->procs && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
	    boot_limits_explain(p, ctx->procs, &watch, command, status, err))
		limit_hit = "memory";
	else if (ctx->procs && boot_limits_watch_check(p, ctx->procs, ctx->disk, &watch, command,
	                                               true, &limit_hit, err) < 0)
		limit_hit = limit_hit ? limit_hit : "disk";
	if (limit_hit) {
		if (ctx->limit_hit)
			*ctx->limit_hit = limit_hit;
		if (ret_out)
			free(sink.capture);
		return err_ret(err);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char how[64], why[512];
		proc_describe_status(status, how, sizeof(how));
		boot_step_explain_exit(how, env, why, sizeof(why));
		if (ret_out)
			free(sink.capture);
		return err_set(err, ERR_FAILED, 0, "`%s` %s%s", command, how, why);
	}
	if (ret_out)
		*ret_out = sink.capture;
	return 0;
}

int boot_step_run(const struct step_context *ctx, const char *name, const char *command,
                  char *const *env, unsigned timeout_s, const char *log_path, struct err *err)
{
	return step_execute(ctx, name, command, env, timeout_s, log_path, NULL, err);
}

int boot_step_capture(const struct step_context *ctx, const char *name, const char *command,
                      char *const *env, unsigned timeout_s, const char *log_path, char **ret_out,
                      struct err *err)
{
	return step_execute(ctx, name, command, env, timeout_s, log_path, ret_out, err);
}
