/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exec transport: run a command whose stdin and stdout are the stream to the agent
 * (`incus exec NAME -- sandbox-agent serve --stdio`, `kubectl exec ...`, `ssh host ...`). One
 * end of a socketpair is both its stdin and stdout; its stderr is ours, so what the remote
 * side says (a missing instance, a refused login) reaches the user as it happens.
 */
#include "connect.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the child: fd becomes target, without the close-on-exec flag. */
static int move_to(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, target) < 0 ? -1 : 0;
}

_noreturn_ static void child(char *const *argv, int fd, int report_fd)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int e;

	/* What the caller blocked or ignored is not the command's business. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	if (move_to(fd, STDIN_FILENO) < 0 || move_to(fd, STDOUT_FILENO) < 0) {
		e = errno;
		(void)!write(report_fd, &e, sizeof(e));
		_exit(127);
	}
	execvp(argv[0], argv);
	e = errno;
	(void)!write(report_fd, &e, sizeof(e));
	_exit(127);
}

int connect_exec(char *const *argv, int *ret_fd, pid_t *ret_pid, struct err *err)
{
	_cleanup_close_ int ours = -1, theirs = -1, report_r = -1, report_w = -1;
	int sv[2], rp[2], e = 0, flags;
	ssize_t n;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_errno(err, "cannot make a socketpair for %s", argv[0]);
	ours = sv[0];
	theirs = sv[1];
	if (pipe2(rp, O_CLOEXEC) < 0)
		return err_errno(err, "cannot make a pipe");
	report_r = rp[0];
	report_w = rp[1];
	pid = fork();
	if (pid < 0)
		return err_errno(err, "cannot fork to run %s", argv[0]);
	if (pid == 0)
		child(argv, theirs, report_w);
	close(TAKE_FD(theirs));
	close(TAKE_FD(report_w));
	/* The report pipe closes on a successful exec, or carries the errno of a failed one. */
	do
		n = read(report_r, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(e)) {
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		errno = e;
		return err_errno(err, "cannot run %s", argv[0]);
	}
	flags = fcntl(ours, F_GETFL);
	if (flags < 0 || fcntl(ours, F_SETFL, flags | O_NONBLOCK) < 0) {
		e = errno;
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno = e;
		return err_errno(err, "cannot set up the stream to %s", argv[0]);
	}
	*ret_fd = TAKE_FD(ours);
	*ret_pid = pid;
	return 0;
}
