/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client side of the transports (docs/protocol.md, "Transports"): parsing an address and
 * opening a byte stream to the guest agent over it. Every transport ends as one descriptor,
 * O_NONBLOCK and O_CLOEXEC, that carries the channel both ways:
 *
 *   vsock:CID[:PORT]    AF_VSOCK connect (never used on a machine without a hypervisor below)
 *   unix:PATH           connect to a unix socket (an Incus proxy device, a test)
 *   serial:PATH         the host side of a virtio-serial port: qemu's or Incus's chardev unix
 *                       socket, or a character device; the stream has no connection boundaries
 *   fc:PATH[:PORT]      Firecracker's vsock unix socket: "CONNECT <port>\n", then "OK <n>\n",
 *                       retried while Firecracker closes silently (nothing listens yet)
 *   exec -- CMD ARGS    CMD with one end of a socketpair as its stdin and stdout; its stderr
 *                       reaches ours filtered (control characters replaced, each line marked
 *                       "sandbox-ctl: exec: "), so the remote side's complaints reach the user
 */
#ifndef SA_HOST_CONNECT_H
#define SA_HOST_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* The agent's port on vsock and behind Firecracker's socket unless the address names one. */
#define CONNECT_DEFAULT_PORT 7340
/* Firecracker's reply line is at most this long, newline included. */
#define CONNECT_FC_REPLY_MAX 64

enum connect_kind {
	CONNECT_VSOCK,
	CONNECT_UNIX,
	CONNECT_SERIAL,
	CONNECT_FC,
	CONNECT_EXEC,
};

struct connect_addr {
	enum connect_kind kind;
	char *path;    /* unix, serial, fc */
	uint32_t cid;  /* vsock */
	uint32_t port; /* vsock, fc */
	char **argv;   /* exec: the command and its arguments */
};

/*
 * Parse "vsock:CID[:PORT]", "unix:PATH", "serial:PATH", "fc:PATH[:PORT]" or "exec" (then
 * exec_argv, the words after "--", is the command). Refused (ERR_REFUSED, EINVAL) with a
 * message that names the accepted forms.
 */
int connect_addr_parse(const char *spec, char *const *exec_argv, struct connect_addr *ret,
                       struct err *err);
void connect_addr_dispose(struct connect_addr *a);
/* A copy of a (deep). */
int connect_addr_copy(const struct connect_addr *a, struct connect_addr *ret, struct err *err);
/* The address as text for messages ("unix:/run/agent.sock", "exec: incus exec vm -- ..."). */
char *connect_addr_format(const struct connect_addr *a);
/*
 * The name the guest's key is pinned under when the caller gives none: "vsock:42:7340",
 * "unix:/path", "serial:/path", "fc:/path:7340", or "exec:" and the command's words joined with
 * ',' (blanks and other unprintable bytes as '_'). Refused when that is no valid pin name
 * (too long): the caller must then name the instance.
 */
int connect_addr_instance(const struct connect_addr *a, char **ret, struct err *err);

/* An open stream to the agent. */
/* The last line of an exec command's stderr kept for its error (bytes, cleaned). */
#define CONNECT_EXEC_SAID_MAX 512

struct connect_stream {
	int fd;          /* O_NONBLOCK, O_CLOEXEC; -1 when closed */
	pid_t child;     /* exec: the command, else 0 */
	pid_t filter;    /* exec: the process filtering its stderr onto ours, else 0 */
	bool reaped;     /* exec: the command was waited for; its status is in wait_status */
	int wait_status; /* exec: as waitpid() gives it */
	int said_fd;     /* exec: the filter's last line of the command's stderr, or -1 */
	char *what;      /* connect_addr_format() of the address, for messages */
};

/*
 * Open the stream before deadline (frame_io_deadline(); -1: none). Connection failures are
 * ERR_FAILED with the address in the message.
 */
int connect_open(const struct connect_addr *a, int64_t deadline, struct connect_stream *ret,
                 struct err *err);
/*
 * Close the descriptor and, for exec, wait for the command (grace_ms, then SIGTERM, then
 * SIGKILL). Returns the command's wait status, or -1 when there was none.
 */
int connect_stream_dispose(struct connect_stream *s, int grace_ms);
/*
 * For messages after the stream ended early: when the exec command has exited, reap it and
 * append how (" (the exec command exited with status N)") to err. Does nothing otherwise.
 */
void connect_stream_explain(struct connect_stream *s, struct err *err);

/* The transports, each opening one kind of address. */
int connect_unix(const char *path, int64_t deadline, int *ret_fd, struct err *err);
int connect_unix_serial(const char *path, int64_t deadline, int *ret_fd, struct err *err);
int connect_fc(const char *path, uint32_t port, int64_t deadline, int *ret_fd, struct err *err);
int connect_vsock(uint32_t cid, uint32_t port, int64_t deadline, int *ret_fd, struct err *err);
int connect_exec(char *const *argv, int *ret_fd, pid_t *ret_pid, pid_t *ret_filter,
                 int *ret_said_fd, struct err *err);

/*
 * Firecracker's reply, parsed by hand (it is the one piece of the transports that is not the
 * channel): buf holds the bytes read so far. Returns 1 with the port when buf is exactly
 * "OK <u32>\n", 0 when buf is a proper prefix of such a line and shorter than
 * CONNECT_FC_REPLY_MAX (read on), or ERR_REFUSED (EPROTO) for anything else, with the
 * offending bytes shown escaped.
 */
int connect_fc_reply_parse(const char *buf, size_t len, uint32_t *ret_port, struct err *err);

/*
 * Incus: the address of instance name. Runs `INCUS config get NAME volatile.vsock_id` (incus
 * is the command to run, "incus" by default); a number there is a VM's vsock CID, so the
 * address is vsock:CID:port. Otherwise (a container, or no answer) the address is
 * `exec -- INCUS exec NAME -- sandbox-agent serve --stdio`. ret_fallback (may be NULL) gets the
 * exec address too, for when the vsock connection fails.
 */
int connect_incus_resolve(const char *incus, const char *name, uint32_t port,
                          struct connect_addr *ret, struct connect_addr *ret_fallback,
                          struct err *err);

#endif
