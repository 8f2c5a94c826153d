/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exec transport: run a command whose stdin and stdout are the stream to the agent
 * (`incus exec NAME -- sandbox-agent serve --stdio`, `kubectl exec ...`, `ssh host ...`). One
 * end of a socketpair is both its stdin and stdout. Its stderr goes through a pipe to a small
 * filter process that writes it to ours, line by line, each line marked "sandbox-ctl: exec: "
 * and with every control character replaced (output_clean()), so what the remote side says (a
 * missing instance, a refused login) reaches the user as it happens, but a hostile guest cannot
 * retitle the window, clear the screen or print a line that looks like our own progress. Lines
 * are cut at EXEC_LINE_MAX bytes, and after EXEC_STDERR_MAX bytes the rest is read and dropped.
 */
#include "connect.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file.h"
#include "output.h"

#define EXEC_LINE_MAX 1024
#define EXEC_STDERR_MAX (1024 * 1024)
#define EXEC_PREFIX "sandbox-ctl: exec: "

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* In the child: fd becomes target, without the close-on-exec flag. */
static int move_to(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, target) < 0 ? -1 : 0;
}

static void emit_line(const char *line, size_t len)
{
	char out[sizeof(EXEC_PREFIX) + EXEC_LINE_MAX + 1];
	size_t n = sizeof(EXEC_PREFIX) - 1;

	memcpy(out, EXEC_PREFIX, n);
	n += output_clean(out + n, line, len);
	out[n++] = '\n';
	(void)file_write_all(STDERR_FILENO, out, n);
}

/* The last line emitted, cleaned: handed to sandbox-ctl on fd 3 at the end (CONNECT_EXEC_SAID_MAX).
 */
static char said[CONNECT_EXEC_SAID_MAX];

static void keep_said(const char *line, size_t len)
{
	size_t n;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return;
	n = output_clean(said, line,
	                 len < CONNECT_EXEC_SAID_MAX / 4 ? len : CONNECT_EXEC_SAID_MAX / 4);
	said[n < sizeof(said) ? n : sizeof(said) - 1] = '\0';
}

/* The filter: reads the command's stderr on fd 0 until end-of-file. */
_noreturn_ static void filter(void)
{
	char line[EXEC_LINE_MAX], buf[4096];
	size_t len = 0, total = 0;
	ssize_t n;

	while ((n = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (total >= EXEC_STDERR_MAX)
			continue; /* drained, so the command never blocks on its stderr */
		total += (size_t)n;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n')
				line[len++] = buf[i];
			if (buf[i] == '\n' || len == sizeof(line)) {
				emit_line(line, len);
				keep_said(line, len);
				len = 0;
			}
		}
		if (total >= EXEC_STDERR_MAX) {
			if (len)
				emit_line(line, len);
			len = 0;
			static const char more[] = "(the rest of the command's stderr is dropped)";
			emit_line(more, sizeof(more) - 1);
		}
	}
	if (len) {
		emit_line(line, len);
		keep_said(line, len);
	}
	(void)file_write_all(3, said, strlen(said));
	_exit(0);
}

/*
 * Fork the filter with the pipe's read end as its stdin, said_fd as its fd 3 (where its last
 * line goes) and nothing else of ours.
 */
static pid_t filter_start(int read_fd, int said_fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	/* Our stdout is not its business: a caller waiting for its end must not wait for us. */
	if (dup2(read_fd, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 ||
	    dup2(said_fd, 3) < 0)
		_exit(1);
	if (syscall(SYS_close_range, 4U, ~0U, 0U) < 0)
		for (int fd = 4; fd < 65536; fd++)
			close(fd);
	filter();
}

_noreturn_ static void child(char *const *argv, int fd, int err_fd, int report_fd)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int e;

	/*
	 * A group of its own: a Ctrl-C at the terminal reaches sandbox-ctl, which ends the session
	 * cleanly, and not the command under it, which would cut the session first.
	 */
	setpgid(0, 0);
	/* What the caller blocked or ignored is not the command's business. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	if (move_to(fd, STDIN_FILENO) < 0 || move_to(fd, STDOUT_FILENO) < 0 ||
	    (err_fd >= 0 && move_to(err_fd, STDERR_FILENO) < 0)) {
		e = errno;
		(void)!write(report_fd, &e, sizeof(e));
		_exit(127);
	}
	execvp(argv[0], argv);
	e = errno;
	(void)!write(report_fd, &e, sizeof(e));
	_exit(127);
}

int connect_exec(char *const *argv, int *ret_fd, pid_t *ret_pid, pid_t *ret_filter,
                 int *ret_said_fd, struct err *err)
{
	_cleanup_close_ int ours = -1, theirs = -1, report_r = -1, report_w = -1;
	_cleanup_close_ int err_r = -1, err_w = -1, said_r = -1, said_w = -1;
	int sv[2], rp[2], ep[2], sp[2], e = 0, flags;
	pid_t pid, filter_pid;
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_errno(err, "cannot make a socketpair for %s", argv[0]);
	ours = sv[0];
	theirs = sv[1];
	if (pipe2(rp, O_CLOEXEC) < 0)
		return err_errno(err, "cannot make a pipe");
	report_r = rp[0];
	report_w = rp[1];
	if (pipe2(ep, O_CLOEXEC) < 0)
		return err_errno(err, "cannot make a pipe");
	err_r = ep[0];
	err_w = ep[1];
	if (pipe2(sp, O_CLOEXEC) < 0)
		return err_errno(err, "cannot make a pipe");
	said_r = sp[0];
	said_w = sp[1];
	filter_pid = filter_start(err_r, said_w);
	if (filter_pid < 0)
		return err_errno(err, "cannot fork to filter the stderr of %s", argv[0]);
	close(TAKE_FD(err_r));
	close(TAKE_FD(said_w));
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(TAKE_FD(err_w));
		while (waitpid(filter_pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno = e;
		return err_errno(err, "cannot fork to run %s", argv[0]);
	}
	if (pid == 0)
		child(argv, theirs, err_w, report_w);
	close(TAKE_FD(theirs));
	close(TAKE_FD(report_w));
	close(TAKE_FD(err_w));
	/* The report pipe closes on a successful exec, or carries the errno of a failed one. */
	do
		n = read(report_r, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(e)) {
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		while (waitpid(filter_pid, NULL, 0) < 0 && errno == EINTR)
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
		while (waitpid(filter_pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno = e;
		return err_errno(err, "cannot set up the stream to %s", argv[0]);
	}
	*ret_fd = TAKE_FD(ours);
	*ret_pid = pid;
	*ret_filter = filter_pid;
	*ret_said_fd = TAKE_FD(said_r);
	return 0;
}
