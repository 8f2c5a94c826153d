/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal guest for the sandbox-ctl tests, built from common/channel.h: the real handshake
 * and encrypted channel, and just enough of each operation (docs/protocol.md §7) to check what
 * sandbox-ctl sends and how it reads the answers. It is no stand-in for the daemon's logic:
 * boots are scripted by the app directory's name, logs are a fixed text.
 *
 *   fg_serve_unix()   a unix socket server, one session per connection (a forked process)
 *   fg_serve_fc()     the same behind a Firecracker-like socket: reads "CONNECT <port>\n",
 *                     closes silently the first N times, then answers "OK <n>\n"
 *   fg_serve_serial() a qemu-like chardev socket in front of one stream without connection
 *                     boundaries, with noise injected before each session
 *   fg_stdio_main()   sessions on stdin/stdout (sandbox-ctl's exec transport)
 *   fg_relay_main()   copies stdin/stdout to a unix socket (an exec command that relays)
 *
 * Every step is reported as a line on report_fd: "hello ...", "secret NAME SCOPE VALUE",
 * "boot {...}", "push-end N B", ... Header-only, included by test_ctl_*.c.
 */
#ifndef SA_TEST_CTL_GUEST_H
#define SA_TEST_CTL_GUEST_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "authkeys.h"
#include "channel.h"
#include "file.h"
#include "frame_io.h"
#include "keys.h"
#include "msg.h"

#define FG_TIMEOUT_MS 10000
#define FG_LOG_LINES 9000 /* "setup line NNNNNN\n": 18 bytes each, 162000 bytes */
#define FG_LOG_LINE_LEN 18
#define FG_CHUNK (64 * 1024)
#define FG_HOSTILE_BYTES (256LL * 1024 * 1024) /* what a hostile log stream sends at most */

struct fg_config {
	const struct keypair *key; /* the guest's identity */
	const uint8_t *host_pk;    /* the one host key it accepts */
	const char *tree_dir;      /* where a push lands */
	int report_fd;
};

struct fg_state {
	const struct fg_config *cfg;
	uint32_t push_stream;
	int file_fd;
	int64_t file_left;
	int64_t entries, bytes;
	bool data_seen; /* this push's first data message came (the on-data hook ran) */
	char staging[PATH_MAX];
	char names[32][64];
	size_t n_names;
};

/*
 * Pushes land in staging beside tree_dir and are swapped in at the end. A test's hooks,
 * executables beside tree_dir: "<tree_dir>.on-status" runs when a status request comes (a push
 * asks after its walk, before its first entry), "<tree_dir>.on-data" when a push's first data
 * message comes (sandbox-ctl is then still reading that file, held by the socket's buffer).
 */

/* Boots are scripted by the app directory's name: *fail*, *refuse*, else ready. */

/* The log from an offset in chunks; following, wait for the cancel. */

/* One session after the handshake: hello, then messages until close. */

/* Handshakes and sessions on one descriptor, `sessions` times (-1: until it ends). */

/* A unix socket server: one session per connection, until killed. Returns its pid. */

/* Firecracker's side of a host-initiated vsock connection: CONNECT, then OK (or silence). */

/* Copy what is readable from one descriptor to another; false at the end. */

/*
 * qemu's chardev socket in front of a virtio-serial port: the guest serves sessions on one
 * stream for as long as it runs; each client that connects is relayed to it, and noise (a
 * cut frame, a banner) goes into the port before each session, as a dropped session leaves.
 */

/* Keys for a guest run as its own program: DIR/guest_key and DIR/host.pub. */

/* An exec command that relays its stdin and stdout to a unix socket. */

void fg_report(const struct fg_config *cfg, const char *fmt, ...) _printf_(2, 3);
void fg_report(const struct fg_config *cfg, const char *fmt, ...);
void fg_log_text(char *buf);
int fg_send(struct channel *ch, uint16_t type, uint16_t flags, uint32_t stream,
            struct json_object *json, const void *data, size_t len);
struct json_object *fg_obj(const char *json_text);
int fg_error(struct channel *ch, uint32_t stream, int code, const char *cls, const char *text);
int fg_push_msg(struct channel *ch, struct fg_state *st, const struct msg *m);
int fg_event(struct channel *ch, uint32_t stream, const char *phase, const char *step,
             const char *status);
int fg_boot(struct channel *ch, struct fg_state *st, const struct msg *m);
int fg_logs_hostile(struct channel *ch, const struct msg *m, bool trickle);
int fg_logs(struct channel *ch, struct fg_state *st, const struct msg *m);
int fg_publish(struct channel *ch, const struct msg *m);
int fg_message(struct channel *ch, struct fg_state *st, const struct msg *m);
void fg_session(struct channel *ch, struct fg_state *st);
void fg_serve_fd(int fd, const struct fg_config *cfg, int sessions);
int fg_listen(const char *path);
pid_t fg_serve_unix(const char *path, const struct fg_config *cfg);
pid_t fg_serve_fc(const char *path, const struct fg_config *cfg, int silent_closes,
                  const char *reply);
bool fg_pump(int from, int to);
pid_t fg_serve_serial(const char *path, const struct fg_config *cfg);
int fg_stdio_main(const char *dir, const char *report);
int fg_relay_main(const char *path);

#endif
