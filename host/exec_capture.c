/* SPDX-License-Identifier: Apache-2.0 */
/* A command run to completion under a deadline, its output captured. */
#include "exec_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "file.h"

int exec_capture_run(char *const *argv, const char *input, bool with_stderr, int timeout_ms,
                     char *out, size_t cap, int *ret_status, struct err *err)
{
	uint64_t deadline = clock_now_ms() + (uint64_t)timeout_ms;
	_cleanup_close_ int null = -1;
	_cleanup_close_ int in = -1, rd = -1, wr = -1;
	size_t len = 0;
	int p[2], status;
	pid_t pid;

	in = input ? memfd_create("incus-input", MFD_CLOEXEC)
	           : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0 ||
	    (input && (file_write_all(in, input, strlen(input)) < 0 || lseek(in, 0, SEEK_SET) < 0)))
		return err_errno(err, "cannot prepare the input of %s", argv[0]);
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0)
		return err_errno(err, "cannot open /dev/null");
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_errno(err, "cannot make a pipe");
	rd = p[0];
	wr = p[1];
	pid = fork();
	if (pid < 0)
		return err_errno(err, "cannot fork to run %s", argv[0]);
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in, STDIN_FILENO) < 0 || dup2(wr, STDOUT_FILENO) < 0 ||
		    dup2(with_stderr ? wr : null, STDERR_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(TAKE_FD(wr));
	for (;;) {
		struct pollfd pf = {.fd = rd, .events = POLLIN};
		int64_t left = (int64_t)deadline - (int64_t)clock_now_ms();
		char sink[512];
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)left) == 0) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return err_set(err, ERR_FAILED, ETIMEDOUT,
			               "%s %s did not answer within %d s", argv[0],
			               argv[1] ? argv[1] : "", timeout_ms / 1000);
		}
		/* Past the cap the output is read and dropped: the client never blocks on us. */
		n = len < cap - 1 ? read(rd, out + len, cap - 1 - len)
		                  : read(rd, sink, sizeof(sink));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len < cap - 1)
			len += (size_t)n;
	}
	out[len] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return err_errno(err, "cannot wait for %s", argv[0]);
	*ret_status = status;
	return 0;
}
