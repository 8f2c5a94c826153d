/* SPDX-License-Identifier: Apache-2.0 */
#include "session_user.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file.h"
#include "proc.h"

int session_user_become(const struct run_user *u)
{
	int step;

	return proc_become_user(u->uid, u->gid, u->groups, u->n_groups, &step);
}

static bool is_caller(const struct run_user *u)
{
	return !u || u->uid == (uid_t)-1 || (getuid() == u->uid && geteuid() == u->uid);
}

int session_user_call(const struct run_user *u, session_user_fn fn, void *arg, size_t max,
                      char **ret_out, size_t *ret_len, struct err *err)
{
	_cleanup_free_ char *out = NULL;
	_cleanup_close_ int out_r = -1, err_r = -1;
	size_t len = 0, cap = 0;
	bool too_much = false;
	int out_p[2], err_p[2], status;
	struct err child_err;
	pid_t pid;

	if (!is_caller(u) && proc_user_switchable(u, "a helper process", err) < 0)
		return -1;
	if (pipe2(out_p, O_CLOEXEC) < 0)
		return err_errno(err, "cannot create a pipe");
	if (pipe2(err_p, O_CLOEXEC) < 0) {
		close(out_p[0]);
		close(out_p[1]);
		return err_errno(err, "cannot create a pipe");
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(out_p[0]), close(out_p[1]), close(err_p[0]), close(err_p[1]);
		errno = e;
		return err_errno(err, "fork");
	}
	if (pid == 0) {
		int rc;

		close(out_p[0]);
		close(err_p[0]);
		err_clear(&child_err);
		signal(SIGPIPE, SIG_DFL);
		rc = is_caller(u) ? 0 : session_user_become(u);
		/*
		 * This copy of the caller's memory holds what the caller holds (a session's
		 * credential): never readable through ptrace or /proc/PID/mem by the user it now
		 * runs as (the kernel clears the flag on the user switch too; this says so).
		 */
		(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		if (rc < 0)
			err_set(&child_err, ERR_FAILED, -rc, "cannot become user %s: %s", u->name,
			        strerror(-rc));
		else
			rc = fn(arg, out_p[1], &child_err);
		if (rc < 0)
			(void)file_write_all(err_p[1], &child_err, sizeof(child_err));
		_exit(rc < 0 ? 1 : 0);
	}
	close(out_p[1]);
	close(err_p[1]);
	out_r = out_p[0];
	err_r = err_p[0];
	for (;;) {
		char buf[65536];
		ssize_t n = read(out_r, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len + (size_t)n > max) {
			too_much = true;
			kill(pid, SIGKILL);
			break;
		}
		if (!ret_out)
			continue;
		if (len + (size_t)n + 1 > cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb;

			while (ncap < len + (size_t)n + 1)
				ncap *= 2;
			nb = realloc(out, ncap);
			if (!nb) {
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				return err_oom(err);
			}
			out = nb;
			cap = ncap;
		}
		memcpy(out + len, buf, (size_t)n);
		len += (size_t)n;
		out[len] = '\0';
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return err_errno(err, "waitpid");
	if (too_much)
		return err_set(err, ERR_FAILED, E2BIG, "more than %zu bytes of output", max);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		ssize_t n = read(err_r, &child_err, sizeof(child_err));

		if (n == (ssize_t)sizeof(child_err)) {
			child_err.msg[sizeof(child_err.msg) - 1] = '\0';
			*err = child_err;
			return err_ret(err);
		}
		char what[64];
		proc_describe_status(status, what, sizeof(what));
		return err_set(err, ERR_FAILED, EIO, "the helper process %s", what);
	}
	if (ret_out) {
		if (!out && !(out = strdup("")))
			return err_oom(err);
		*ret_out = TAKE_PTR(out);
	}
	if (ret_len)
		*ret_len = len;
	return 0;
}
