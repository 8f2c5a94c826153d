/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unix sockets, and the host side of a virtio-serial port: qemu's and Incus's chardev is a unix
 * socket (qemu -chardev socket,path=...), or a pty or other character device (-chardev pty).
 * A serial stream has no connection boundaries: whatever a dropped session left in it is
 * skipped by the channel's resync marker, so opening it is all this file does.
 */
#include "connect.h"

#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>

#include "frame_io.h"

/*
 * The socket's send buffer: room for about 64 frames of a push (docs/protocol.md §2), so that
 * sandbox-ctl reads and seals the next files while the daemon opens and writes the last ones,
 * instead of each waking the other every three frames of the default 208 KiB. SO_SNDBUFFORCE
 * (root, as a peer of the daemon's socket is) goes past net.core.wmem_max, which many kernels
 * leave at 208 KiB; else SO_SNDBUF, up to it. 64 MiB pushed into tmpfs: 860-880 MiB/s before,
 * 950-1100 after, on the test machine (bench/README.md, "push_bench.sh").
 */
#define UNIX_SNDBUF (4 * 1024 * 1024)

int connect_unix(const char *path, int64_t deadline, int *ret_fd, struct err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "the socket path %s is too long",
		               path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_errno(err, "cannot make a unix socket");
	/* Larger is faster, not needed: a refusal leaves the default. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &(int){UNIX_SNDBUF}, sizeof(int)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){UNIX_SNDBUF}, sizeof(int));
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno == EINTR)
			continue;
		/* A full backlog: the listener is busy, not gone. */
		if (errno == EAGAIN && clock_pause_until(deadline, 10))
			continue;
		return err_errno(err, "cannot connect to %s", path);
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int connect_unix_serial(const char *path, int64_t deadline, int *ret_fd, struct err *err)
{
	_cleanup_close_ int fd = -1;
	struct termios t;
	struct stat st;

	if (stat(path, &st) < 0)
		return err_errno(err, "cannot open the serial port %s", path);
	if (S_ISSOCK(st.st_mode))
		return connect_unix(path, deadline, ret_fd, err);
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "%s is neither a socket nor a character device: not the host side "
		               "of a serial port",
		               path);
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return err_errno(err, "cannot open the serial port %s", path);
	/* A pty or tty: raw bytes, no line discipline between us and the guest. */
	if (tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		if (tcsetattr(fd, TCSANOW, &t) < 0)
			return err_errno(err, "cannot set %s to raw mode", path);
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}
