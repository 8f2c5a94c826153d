/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Firecracker's host-initiated vsock connections: Firecracker exposes the VM's vsock device as
 * a unix socket on the host; a client connects, writes "CONNECT <port>\n" and reads
 * "OK <host-side port>\n", after which the stream is the guest's. While nothing listens on the
 * port in the guest (the agent is still starting), Firecracker closes the connection without a
 * word: retry with a backoff until the deadline.
 */
#include "connect.h"

#include "clock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame_io.h"

#define BACKOFF_FIRST_MS 50
#define BACKOFF_MAX_MS 1000
#define REST_WAIT_MS 100

/* poll() one descriptor until the deadline; 1 ready, 0 deadline passed, <0 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int64_t left = deadline < 0 ? -1 : deadline - frame_io_now_ms();
		int r;
		if (deadline >= 0 && left <= 0)
			return 0;
		r = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* After a refused reply: what else came with it, up to the newline, briefly. */
static size_t read_rest(int fd, char *buf, size_t len, size_t cap)
{
	int64_t deadline = frame_io_deadline(REST_WAIT_MS);

	while (len < cap && buf[len - 1] != '\n') {
		ssize_t n = read(fd, buf + len, 1);
		if (n == 1)
			len++;
		else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			break;
		else if (n < 0 && errno == EAGAIN && wait_fd(fd, POLLIN, deadline) <= 0)
			break;
	}
	return len;
}

/*
 * One exchange on a connected socket: 1 when the guest's stream follows, 0 when Firecracker
 * closed without a reply (nothing listens yet), or an error.
 */
static int exchange(int fd, const char *path, uint32_t port, int64_t deadline, struct err *err)
{
	char req[32], reply[CONNECT_FC_REPLY_MAX];
	size_t len = 0, off = 0, req_len;
	uint32_t host_port;
	int r;

	req_len = (size_t)snprintf(req, sizeof(req), "CONNECT %u\n", port);
	while (off < req_len) {
		ssize_t n = send(fd, req + off, req_len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			return 0;
		if (n < 0 && errno == EAGAIN && (r = wait_fd(fd, POLLOUT, deadline)) > 0)
			continue;
		return err_errno(err, "cannot send CONNECT to %s", path);
	}
	/* One byte at a time: the guest's bytes follow the newline directly. */
	for (;;) {
		ssize_t n = read(fd, reply + len, 1);
		if (n == 0) {
			if (len == 0)
				return 0;
			return err_set(
			    err, ERR_FAILED, ECONNRESET,
			    "%s closed the connection in the middle of its reply to CONNECT", path);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET && len == 0)
				return 0;
			if (errno != EAGAIN)
				return err_errno(err, "cannot read the reply to CONNECT from %s",
				                 path);
			r = wait_fd(fd, POLLIN, deadline);
			if (r == 0)
				return err_set(err, ERR_FAILED, ETIMEDOUT,
				               "%s did not answer CONNECT %u before the deadline",
				               path, port);
			if (r < 0) {
				errno = -r;
				return err_errno(err, "cannot wait for %s", path);
			}
			continue;
		}
		len++;
		r = connect_fc_reply_parse(reply, len, &host_port, err);
		if (r < 0) {
			/* Show the whole line: whatever answered may say what it is. */
			len = read_rest(fd, reply, len, sizeof(reply));
			connect_fc_reply_parse(reply, len, &host_port, err);
			return err_wrap(err, "%s", path);
		}
		if (r == 1)
			return 1;
	}
}

int connect_fc(const char *path, uint32_t port, int64_t deadline, int *ret_fd, struct err *err)
{
	int delay = BACKOFF_FIRST_MS, silent = 0;
	struct err last = {0};

	for (;;) {
		_cleanup_close_ int fd = -1;
		int r = connect_unix(path, deadline, &fd, &last);
		if (r == 0) {
			r = exchange(fd, path, port, deadline, &last);
			if (r == 1) {
				*ret_fd = TAKE_FD(fd);
				return 0;
			}
			if (r == -ETIMEDOUT && silent > 0)
				break; /* the deadline came while waiting on another silent attempt
				        */
			if (r < 0) {
				*err = last;
				return r;
			}
			silent++;
		} else if (last.cls == ERR_REFUSED ||
		           (last.code != ENOENT && last.code != ECONNREFUSED)) {
			*err = last;
			return r;
		}
		if (!clock_pause_until(deadline, delay))
			break;
		delay = delay * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay * 2;
	}
	if (silent > 0)
		return err_set(err, ERR_FAILED, ECONNREFUSED,
		               "nothing listens on vsock port %u behind %s: Firecracker closed the "
		               "connection without a reply %d time%s before the deadline (is the "
		               "agent running in the guest?)",
		               port, path, silent, silent == 1 ? "" : "s");
	*err = last;
	return err_wrap(err, "Firecracker's vsock socket did not appear before the deadline");
}
