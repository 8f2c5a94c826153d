/* SPDX-License-Identifier: Apache-2.0 */
#include "frame_io.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#define READ_CHUNK (256 * 1024) /* a few frames of a tree push per read() */

int64_t frame_io_now_ms(void)
{
	return (int64_t)clock_now_ms();
}

int64_t frame_io_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return -1;
	return frame_io_now_ms() + timeout_ms;
}

static int remaining_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - frame_io_now_ms();
	if (left < 0)
		return 0;
	return left > 1000000000 ? 1000000000 : (int)left;
}

int frame_io_new(int fd, struct frame_io **ret, struct err *err)
{
	struct frame_io *io;
	struct stat st;
	int flags;

	io = calloc(1, sizeof(*io));
	if (!io)
		return err_oom(err);
	io->buf = malloc(READ_CHUNK);
	if (!io->buf) {
		free(io);
		return err_oom(err);
	}
	io->cap = READ_CHUNK;
	io->fd = fd;
	io->wfd = fd;
	io->is_socket = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
	flags = fcntl(fd, F_GETFL);
	io->nonblock = flags >= 0 && (flags & O_NONBLOCK);
	frame_decoder_init(&io->dec, FRAME_HANDSHAKE_MAX, true);
	io->limit = UINT64_MAX;
	*ret = io;
	return 0;
}

void frame_io_free(struct frame_io *io)
{
	if (!io)
		return;
	frame_decoder_dispose(&io->dec);
	free(io->buf);
	free(io);
}

void frame_io_set_connection(struct frame_io *io)
{
	io->connection = true;
}

void frame_io_set_budget(struct frame_io *io, uint64_t max)
{
	if (max == UINT64_MAX || io->dec.consumed > UINT64_MAX - max)
		io->limit = UINT64_MAX;
	else
		io->limit = io->dec.consumed + max;
}

void frame_io_set_write_fd(struct frame_io *io, int wfd)
{
	struct stat st;

	io->wfd = wfd;
	io->is_socket = fstat(wfd, &st) == 0 && S_ISSOCK(st.st_mode);
}

bool frame_io_buffered(const struct frame_io *io)
{
	return io->off < io->len;
}

/* Wait for events on the fd until the deadline: 1 ready, -ETIMEDOUT, or another error. */
static int wait_fd(int fd, short events, int64_t deadline, struct err *err)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		int r = poll(&p, 1, remaining_ms(deadline));
		if (r > 0)
			return 1;
		if (r == 0)
			return err_set(err, ERR_FAILED, ETIMEDOUT,
			               "timed out waiting for the peer");
		if (errno != EINTR)
			return err_errno(err, "poll");
	}
}

static int fill(struct frame_io *io, int64_t deadline, struct err *err)
{
	/* A read that cannot block past the deadline needs no poll() first. */
	bool wait = deadline >= 0 && !io->nonblock;
	/*
	 * Under a byte budget (the handshake's) read no more than it leaves and one byte: a peer
	 * not yet authenticated fills 64 KiB of the buffer at most, and the byte over the budget
	 * still refuses it at once.
	 */
	size_t want = io->cap;

	if (io->limit != UINT64_MAX) {
		uint64_t left = io->limit > io->dec.consumed ? io->limit - io->dec.consumed : 0;
		if (left < want - 1)
			want = (size_t)left + 1;
	}

	io->off = io->len = 0;
	for (;;) {
		ssize_t n;

		if (wait) {
			int r = wait_fd(io->fd, POLLIN, deadline, err);
			if (r < 0)
				return r;
		}
		wait = true;
		n = read(io->fd, io->buf, want);
		if (n > 0) {
			io->len = (size_t)n;
			return 0;
		}
		if (n == 0) {
			io->eof = true;
			return 0;
		}
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			continue;
		if (errno == ECONNRESET) {
			io->eof = true;
			return 0;
		}
		return err_errno(err, "read from the channel");
	}
}

int frame_io_next(struct frame_io *io, int64_t deadline, enum frame_event *ret_ev, struct err *err)
{
	for (;;) {
		if (io->off < io->len) {
			size_t avail = io->len - io->off;
			ssize_t n;

			if (io->dec.consumed >= io->limit)
				return err_set(err, ERR_FAILED, E2BIG,
				               "the peer sent more bytes than this stage allows");
			if (avail > io->limit - io->dec.consumed)
				avail = (size_t)(io->limit - io->dec.consumed);
			n = frame_decoder_feed(&io->dec, io->buf + io->off, avail, ret_ev, err);
			if (n < 0)
				return (int)n;
			io->off += (size_t)n;
			if (*ret_ev != FRAME_EV_NONE)
				return 1;
			/* The budget cut the input: refuse it above, never refill over it. */
			if (io->off < io->len)
				continue;
		}
		if (io->eof)
			return 0;
		int r = fill(io, deadline, err);
		if (r < 0)
			return r;
	}
}

int frame_io_write(struct frame_io *io, const void *buf, size_t len, int64_t deadline,
                   struct err *err)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n;

		if (io->is_socket)
			n = send(io->wfd, p, len, MSG_NOSIGNAL);
		else
			n = write(io->wfd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = wait_fd(io->wfd, POLLOUT, deadline, err);
			if (r < 0)
				return r;
			continue;
		}
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			return err_set(err, ERR_FAILED, EPIPE, "the peer closed the connection");
		return err_errno(err, "write to the channel");
	}
	return 0;
}
