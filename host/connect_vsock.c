/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AF_VSOCK: the host connects to the guest's CID and the agent's port (Incus and qemu VMs).
 * Never run on a machine without a hypervisor of its own below it: there a connect to CID 1 or
 * 2 leaves the machine (docs/test-machines.md). The qemu guest test exercises it.
 */
#include "connect.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <linux/vm_sockets.h>

#include "frame_io.h"

int connect_vsock(uint32_t cid, uint32_t port, int64_t deadline, int *ret_fd, struct err *err)
{
	struct sockaddr_vm sa = {.svm_family = AF_VSOCK, .svm_cid = cid, .svm_port = port};
	_cleanup_close_ int fd = -1;
	socklen_t len = sizeof(int);
	int so_err = 0;

	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_errno(err, "cannot make a vsock socket (is the vsock module loaded?)");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS && errno != EINTR)
			return err_errno(err, "cannot connect to vsock CID %u port %u", cid, port);
		for (;;) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int64_t left = deadline < 0 ? -1 : deadline - frame_io_now_ms();
			int r;
			if (deadline >= 0 && left <= 0)
				return err_set(err, ERR_FAILED, ETIMEDOUT,
				               "cannot connect to vsock CID %u port %u: no answer "
				               "before the deadline",
				               cid, port);
			r = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
			if (r > 0)
				break;
			if (r < 0 && errno != EINTR)
				return err_errno(err, "cannot wait for vsock CID %u", cid);
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_err, &len) < 0)
			return err_errno(err, "cannot connect to vsock CID %u port %u", cid, port);
		if (so_err) {
			errno = so_err;
			return err_errno(err, "cannot connect to vsock CID %u port %u", cid, port);
		}
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}
