/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The authenticated, encrypted channel between sandbox-ctl (the host) and sandbox-agent (the
 * guest), over any reliable byte stream (docs/protocol.md).
 *
 * channel_handshake_host() / channel_handshake_guest() run the handshake (handshake.h) over a
 * frame_io, bounded by a deadline and a byte budget, and return a channel whose every frame is
 * sealed with the AEAD the handshake agreed (AES-256-GCM where both ends have AES-NI, else
 * ChaCha20-Poly1305 IETF) under a per-direction session key with the frame's sequence number as
 * nonce and authenticated data: a frame tampered with, replayed, reordered, dropped, or taken
 * from another session fails, and so does a stream cut short (every session ends with a close
 * message). Each failure is reported with a message that says which of these it was.
 *
 * Plaintext of received messages lives in a buffer that is wiped before the next receive and
 * on channel_free(); keys live in sodium_malloc memory and are wiped on channel_free(). A channel
 * borrows its frame_io, which must outlive it. Not thread-safe: one thread per channel.
 */
#ifndef SA_CHANNEL_H
#define SA_CHANNEL_H

#include <stdint.h>

#include "authkeys.h"
#include "err.h"
#include "frame_io.h"
#include "handshake.h"
#include "keys.h"
#include "msg.h"

/* Bytes a peer may send during one handshake attempt, garbage before the marker included. */
#define CHANNEL_HANDSHAKE_MAX_BYTES (64 * 1024)
/* What a caller should pass as the handshake deadline unless it has a reason not to. */
#define CHANNEL_HANDSHAKE_TIMEOUT_MS 5000

struct channel;

/*
 * Host side: send the hello, check the guest's key against pinned_guest_key (NULL: accept any
 * key the guest proves, and let the caller pin it: pins.h), prove our key. Fails with
 * ERR_REFUSED/EKEYREJECTED when the guest's key is not the pinned one (nothing is signed then)
 * or the guest does not accept our key.
 */
int channel_handshake_host(struct frame_io *io, const struct keypair *host_key,
                           const uint8_t *pinned_guest_key, int timeout_ms, struct channel **ret,
                           struct err *err);

/*
 * Guest side: skip to the marker, answer the hello, accept the host only if its key is in
 * authorized (re-read from its files first, so revocations apply at once) and its signature
 * verifies, then prove our key. ret_fingerprint (KEYS_FINGERPRINT_MAX bytes, may be NULL)
 * receives the host key's fingerprint as soon as the host presented one, also when the
 * handshake then fails, so that refusals can be logged with it ("" when none was presented).
 */
int channel_handshake_guest(struct frame_io *io, const struct keypair *guest_key,
                            struct authkeys *authorized, int timeout_ms, struct channel **ret,
                            char *ret_fingerprint, struct err *err);

/*
 * Host side with a policy of the caller's: like channel_handshake_host(), but check (may be
 * NULL) sees the guest's key once the guest proved it, before our signature goes out, and may
 * refuse it (a negative return with err filled: nothing is signed). When the handshake fails
 * after the guest showed a key, check is called again with failed set, and may reword err.
 */
struct channel_peer_check {
	int (*check)(void *data, const uint8_t *peer_key, bool failed, struct err *err);
	void *data;
};
int channel_handshake_host_checked(struct frame_io *io, const struct keypair *host_key,
                                   const uint8_t *pinned_guest_key,
                                   const struct channel_peer_check *check, int timeout_ms,
                                   struct channel **ret, struct err *err);

/*
 * The one handshake driver, for a caller with a loop of its own (the daemon): io in the
 * handshake's mode (channel_handshake_prepare() first), frames read until read_deadline
 * (frame_io_deadline(0): what is there now) and answers written by write_deadline. Returns 1
 * with *ret once the handshake is done, -ETIMEDOUT when it waits for the peer (call again
 * when io is readable), another negative value with err when it failed.
 */
void channel_handshake_prepare(struct frame_io *io);
int channel_handshake_pump(struct frame_io *io, struct handshake *hs, int64_t read_deadline,
                           int64_t write_deadline, const struct channel_peer_check *check,
                           struct channel **ret, struct err *err);

/* A channel over io with the keys of a finished handshake (the test vectors use this). */
int channel_from_handshake(struct frame_io *io, const struct handshake *hs, struct channel **ret,
                           struct err *err);

/* Encrypt and send one message; timeout_ms bounds waiting for the transport (-1: none). */
int channel_send(struct channel *ch, const struct msg *m, int timeout_ms, struct err *err);

/*
 * Receive one message: 1 with *ret filled (msg_dispose() it; its data part stays valid until
 * the next channel_recv()), 0 when the peer closed the session, or a negative errno-like value:
 * -ETIMEDOUT when timeout_ms passed (0 polls; call again later, nothing is lost), anything else
 * means the channel is broken and every later call fails the same way.
 */
int channel_recv(struct channel *ch, struct msg *ret, int timeout_ms, struct err *err);

/*
 * Like channel_send(), but the frame may wait in the channel's buffer with others until they
 * make CHANNEL_BATCH_BYTES, and go out in one write: for many small messages in a row (a tree
 * of small files). Frames keep their order: channel_send() and channel_close() write what
 * waits first. Call channel_flush() before waiting for the peer's answer to what was batched.
 */
#define CHANNEL_BATCH_BYTES (64 * 1024)
int channel_send_batched(struct channel *ch, const struct msg *m, int timeout_ms, struct err *err);
int channel_flush(struct channel *ch, int timeout_ms, struct err *err);

/*
 * Room for up to len bytes of the next message's data, where sealing puts them: read the data
 * there and send it with channel_send_room_batched(), and the channel encrypts the bytes in
 * place instead of copying them first (a tree push reads its files straight into the frames).
 * Any other message sent first, a channel_flush() while frames wait, or another room asked
 * for takes the room back (the send then fails with EINVAL and the channel stays usable);
 * bytes left in it unsent are wiped when the channel is freed. NULL with
 * err set when len is over a message's data limit or memory runs out.
 */
uint8_t *channel_data_room(struct channel *ch, size_t len, struct err *err);
/* channel_send_batched() of a message without JSON whose n bytes of data are in the room. */
int channel_send_room_batched(struct channel *ch, uint16_t type, uint32_t stream, size_t n,
                              int timeout_ms, struct err *err);

/* Send the close message that ends the session cleanly. */
int channel_close(struct channel *ch, int timeout_ms, struct err *err);

/* Wipes the keys and the plaintext buffer. Leaves the frame_io alone. */
void channel_free(struct channel *ch);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct channel *, channel_free)
#define _cleanup_channel_ _cleanup_(channel_freep)

const uint8_t *channel_peer_key(const struct channel *ch);
const char *channel_peer_fingerprint(const struct channel *ch);
/* The first 8 bytes of the session id (the transcript hash) in hex, for logs. */
const char *channel_session_name(const struct channel *ch);
uint16_t channel_version(const struct channel *ch);
/* The AEAD of the session's frames: "chacha20-poly1305" or "aes256-gcm". */
const char *channel_cipher_name(const struct channel *ch);

#endif
