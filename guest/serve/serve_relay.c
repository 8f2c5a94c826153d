/* SPDX-License-Identifier: Apache-2.0 */
#include "serve_relay.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"

#define RELAY_CHUNK (64 * 1024)

int serve_relay_connect(const char *path, int *ret_fd, struct err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "socket path %s is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_errno(err, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			return 0;
		return err_errno(err, "cannot reach the daemon at %s", path);
	}
	*ret_fd = TAKE_FD(fd);
	return 1;
}

/* One read and its full write: bytes moved, 0 at end of file, or -errno. */
static ssize_t pass(int from, int to, char *buf)
{
	ssize_t n = read(from, buf, RELAY_CHUNK);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -errno;
	if (n > 0) {
		int w = file_write_all(to, buf, (size_t)n);
		if (w < 0)
			return w;
	}
	return n;
}

int serve_relay_run(int sock, int in_fd, int out_fd, struct err *err)
{
	char buf[RELAY_CHUNK];
	bool in_open = true;

	signal(SIGPIPE, SIG_IGN); /* a host gone is a write error, not a signal */
	for (;;) {
		struct pollfd pfd[2] = {{.fd = sock, .events = POLLIN},
		                        {.fd = in_open ? in_fd : -1, .events = POLLIN}};
		ssize_t n;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return err_errno(err, "relay: poll");
		}
		if (pfd[0].revents) {
			n = pass(sock, out_fd, buf);
			if (n == 0)
				return 0; /* the daemon ended the session */
			if (n < 0) {
				errno = (int)-n;
				return err_errno(err, "relay: from the daemon");
			}
		}
		if (in_open && pfd[1].revents) {
			n = pass(in_fd, sock, buf);
			if (n == 0) {
				/* The host closed its half: the daemon sees the end of the stream.
				 */
				in_open = false;
				shutdown(sock, SHUT_WR);
			} else if (n < 0) {
				errno = (int)-n;
				return err_errno(err, "relay: to the daemon");
			}
		}
	}
}
