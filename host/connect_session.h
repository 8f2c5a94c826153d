/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session with the agent: a stream (connect.h), the handshake with the guest's key checked
 * against its pin, both hellos, and operations on streams of their own (docs/protocol.md §6):
 * the host opens odd stream ids, sends the request, and reads the guest's messages on that
 * stream until its final reply.
 *
 * Functions here that end a command return 0 or the sandbox-ctl exit code that fits the
 * failure (enum ctl_exit): 3 when the connection or the authentication failed, 4 when the
 * guest's key is not the pinned one, 1 or 2 when the agent replied with an error.
 */
#ifndef SA_HOST_CONNECT_SESSION_H
#define SA_HOST_CONNECT_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "channel.h"
#include "connect.h"
#include "frame_io.h"
#include "keys.h"
#include "msg.h"
#include "output.h"

struct session_options {
	const struct connect_addr *addr; /* where the agent is, or NULL with incus */
	const char *incus;               /* --incus NAME */
	const char *incus_cmd;           /* the incus command ("incus") */
	const char *key_path;            /* the host's secret key */
	const char *pins_path;           /* known_guests */
	const char *instance;            /* the pin's name; NULL: from the address */
	bool accept_new;                 /* pin the key of an instance seen for the first time */
	bool replace;                    /* accept and pin a changed (or new) key */
	int timeout_ms;                  /* connecting and the handshake; each reply */
	struct output *out;              /* for progress (-v) */
};

/* How the guest's key compared with its pin (pins.h). */
enum session_pin {
	SESSION_PIN_MATCH = 0,
	SESSION_PIN_ADDED = 1,
	SESSION_PIN_REPLACED = 2,
};

struct session_pin_policy {
	const char *pins_path;
	const char *instance;
	bool accept_new;
	bool replace;
};

/*
 * The host's side of the handshake over io, with the pin policy applied before anything is
 * signed: a pinned key must match (else exit 4, with both fingerprints); an instance without a
 * pin is accepted only with accept_new (else exit 3, nothing signed); the key is pinned once
 * the guest proved it. *ret_pin says what happened to the pin.
 */
int connect_handshake(struct frame_io *io, const struct keypair *host_key,
                      const struct session_pin_policy *policy, int timeout_ms, struct channel **ret,
                      enum session_pin *ret_pin, struct err *err);

struct session {
	struct connect_stream stream;
	struct frame_io *io;
	struct channel *ch;
	struct json_object *guest_hello; /* the guest's hello message */
	char *instance;
	enum session_pin pin;
	uint32_t next_stream;  /* the next odd id */
	unsigned open_streams; /* ours the guest has not ended yet (connect_session_close) */
	bool one_shot; /* the guest's hello: no daemon, a sandbox-agent of this session's own */
	bool direct_socket; /* unix or vsock straight to the agent: our leaving fails its writes */
	int timeout_ms;
	struct output *out;
};

/* Connect, authenticate, exchange hellos. */
int connect_session_open(const struct session_options *o, struct session **ret, struct err *err);
/*
 * Send close and free everything. While a stream of ours is still open on the guest's side, wait
 * briefly for the guest's close first (it says the guest saw everything we sent); once the
 * guest has ended every stream we opened, it has, and the close is not waited for where the
 * guest sees us leave at once: a unix or vsock socket straight to a daemon. Over a serial port
 * (its close, unread, would block the single-threaded daemon's next write for its whole send
 * timeout) or an exec transport, and with a one-shot guest (the sandbox-agent serving this
 * session alone may still be finishing, a checkout's old tree removed after its answer with the
 * app's lock held), it still is.
 */
void connect_session_close(struct session *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct session *, connect_session_close)
#define _cleanup_session_ _cleanup_(connect_session_closep)

/* True when the guest's hello lists the capability. */
bool connect_session_has_capability(const struct session *s, const char *name);

/* A new stream id. */
uint32_t connect_session_new_stream(struct session *s);

/* Send one message; json may be NULL, data may be NULL. */
int connect_session_send(struct session *s, uint16_t type, uint16_t flags, uint32_t stream,
                         struct json_object *json, const void *data, size_t data_len,
                         struct err *err);

/*
 * Send one message that may wait with others for one write (channel_send_batched()); a
 * connect_session_send() or connect_session_flush() writes what waits.
 */
int connect_session_send_batched(struct session *s, uint16_t type, uint32_t stream,
                                 struct json_object *json, const void *data, size_t data_len,
                                 struct err *err);
int connect_session_flush(struct session *s, struct err *err);
/*
 * channel_data_room(): where the next message's data can be read to, then sent without a copy
 * by connect_session_send_room_batched() (channel_send_room_batched()).
 */
uint8_t *connect_session_data_room(struct session *s, size_t len, struct err *err);
int connect_session_send_room_batched(struct session *s, uint16_t type, uint32_t stream, size_t n,
                                      struct err *err);

/*
 * The next message on a stream other than 0, before deadline (frame_io_deadline(); -1: none).
 * Stream 0 is handled here: ping is answered, an error there ends the session, close means
 * the guest ended the session. Returns 1 with *ret (msg_dispose() it), or an exit code:
 * CTL_EXIT_CONNECT when the session ended or broke, or -ETIMEDOUT when the deadline passed.
 */
int connect_session_recv(struct session *s, struct msg *ret, int64_t deadline, struct err *err);

/*
 * Wait until the session has input or extra_fd (-1: none) is readable, before deadline.
 * Returns 1 (session), 2 (extra_fd), 0 (deadline passed), or a negative errno.
 */
int connect_session_wait(struct session *s, int extra_fd, int64_t deadline);

/*
 * One request, one reply: open a stream, send type with json (and data) flagged END, and
 * wait up to the session's timeout for `ok` on that stream. *ret_reply gets the ok's JSON (an
 * object, never NULL). An error reply returns 1 or 2 by its class.
 */
int connect_session_request(struct session *s, uint16_t type, struct json_object *json,
                            const void *data, size_t data_len, struct json_object **ret_reply,
                            struct err *err);

/* The error a message on our stream carries, when it is not the expected one. */
int connect_session_unexpected(const struct msg *m, struct err *err);

#endif
