/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frames over a file descriptor: a read buffer in front of the frame decoder (frame.h), reads
 * and writes bounded by a deadline, for blocking and nonblocking descriptors alike (a read on a
 * blocking descriptor with a deadline waits in poll() first; everything else waits in poll()
 * only when it would block). Set O_NONBLOCK before frame_io_new() or not at all. Any fd that
 * carries a reliable byte stream will do: a socket, a pipe pair, a virtio-serial port, a tty.
 *
 * The frame_io borrows the descriptor (the caller closes it) and outlives the sessions run over
 * it: on a transport without connection boundaries (virtio-serial) one frame_io serves session
 * after session, and bytes already read past the end of one stay buffered for the next.
 */
#ifndef SA_FRAME_IO_H
#define SA_FRAME_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "frame.h"

struct frame_io {
	int fd;         /* read from */
	int wfd;        /* written to: fd, unless frame_io_set_write_fd() gave another one */
	bool is_socket; /* wfd is a socket: send(MSG_NOSIGNAL) instead of write() */
	bool nonblock;  /* O_NONBLOCK when created: reads go first, poll() only on EAGAIN */
	bool eof;
	struct frame_decoder dec;
	uint8_t *buf; /* bytes read and not yet fed to the decoder: buf[off..len) */
	size_t off;
	size_t len;
	size_t cap;
	uint64_t limit;  /* frame_io_next() fails once the decoder consumed this many bytes */
	bool connection; /* one connection's stream: a session's bodies are not scanned for markers
	                  */
};

/* A frame_io over fd, starting in resync mode with the handshake's limit. */
int frame_io_new(int fd, struct frame_io **ret, struct err *err);
/*
 * The stream is one connection (an accepted socket, an exec pipe), which no older session
 * shares: once a session runs on it, frame bodies are not scanned for the resync marker
 * (frame_decoder_scan_bodies()). Never for a virtio-serial port.
 */
void frame_io_set_connection(struct frame_io *io);
void frame_io_free(struct frame_io *io);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct frame_io *, frame_io_free)
#define _cleanup_frame_io_ _cleanup_(frame_io_freep)

/* CLOCK_MONOTONIC in milliseconds, and the deadline timeout_ms from now (-1: no deadline). */
int64_t frame_io_now_ms(void);
int64_t frame_io_deadline(int timeout_ms);

/*
 * Read until the decoder reports an event. Returns 1 with the event in *ret_ev, 0 at the end of
 * the stream (frame_decoder_mid_frame() tells whether a frame was cut), or a negative errno-like
 * value: -ETIMEDOUT when the deadline passed (bytes read so far stay buffered; call again to
 * continue), -E2BIG when the budget is spent, a read error, or a decoder error (strict mode).
 */
int frame_io_next(struct frame_io *io, int64_t deadline, enum frame_event *ret_ev, struct err *err);

/* Allow max more bytes from now on (UINT64_MAX: no limit). */
void frame_io_set_budget(struct frame_io *io, uint64_t max);

/*
 * Write to wfd instead of fd (borrowed too): an exec pipe's stdin and stdout are two
 * descriptors carrying one stream.
 */
void frame_io_set_write_fd(struct frame_io *io, int wfd);

/* Write all of buf before the deadline; -EPIPE when the peer is gone. */
int frame_io_write(struct frame_io *io, const void *buf, size_t len, int64_t deadline,
                   struct err *err);

/* True when bytes are buffered that the decoder has not seen (poll() on the fd would miss them). */
bool frame_io_buffered(const struct frame_io *io);

#endif
