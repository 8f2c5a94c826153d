/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The channel's handshake as a state machine without I/O (docs/protocol.md, "Handshake"):
 * frames in, frames out. channel.c drives it over a descriptor; the fuzz target and the test
 * vectors drive it from memory.
 *
 *   host                                             guest
 *   marker, CLIENT_HELLO {versions, host ephemeral} ->
 *                    <- marker, SERVER_HELLO {hash of the hello, version, versions,
 *                                             guest ephemeral, guest identity key}
 *   HOST_AUTH {host identity key, signature of the transcript} ->
 *                    <- GUEST_AUTH {signature of the transcript}
 *   session keys: BLAKE2b keyed with X25519(ephemerals), over the transcript hash, per direction
 *
 * Either side may answer with REFUSE {hash of the hello, reason, versions} instead, and then
 * closes. The guest reveals nothing but its public key before the host has proved a key it
 * trusts; the host signs nothing before the guest's key matched its pin.
 */
#ifndef SA_HANDSHAKE_H
#define SA_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "authkeys.h"
#include "err.h"
#include "frame.h"
#include "keys.h"

#define HS_MAGIC "SBXC"
#define HS_MAGIC_LEN 4
#define HS_PROTOCOL_VERSION 1
#define HS_VERSIONS_MAX 16
#define HS_X25519_LEN 32
#define HS_HASH_LEN 32
#define HS_KEY_LEN 32
/* The AEAD of the session frames (docs/protocol.md, "Cipher negotiation"). */
#define HS_CIPHERS_MAX 8
#define HS_EXT_CIPHERS 1 /* CLIENT_HELLO: the host's offer; SERVER_HELLO: the guest's choice */

#define HS_LABEL_HOST_AUTH "sandbox-channel v1 host auth"
#define HS_LABEL_GUEST_AUTH "sandbox-channel v1 guest auth"
#define HS_LABEL_HOST_TO_GUEST "sandbox-channel v1 host->guest"
#define HS_LABEL_GUEST_TO_HOST "sandbox-channel v1 guest->host"

enum hs_role {
	HS_HOST = 1,
	HS_GUEST = 2,
};

enum hs_type {
	HS_CLIENT_HELLO = 1,
	HS_SERVER_HELLO = 2,
	HS_HOST_AUTH = 3,
	HS_GUEST_AUTH = 4,
	HS_REFUSE = 5,
};

enum hs_cipher {
	HS_CIPHER_CHACHA20_POLY1305 =
	    1,                    /* ChaCha20-Poly1305 (IETF): always accepted, the default */
	HS_CIPHER_AES256_GCM = 2, /* AES-256-GCM: only where the CPU has AES-NI */
	HS_CIPHER_AEGIS256 = 3,   /* AEGIS-256: AES-NI, AVX and a libsodium of 1.0.19 or later */
};

enum hs_refuse_reason {
	HS_REFUSE_VERSION = 1,   /* no protocol version in common */
	HS_REFUSE_KEY = 2,       /* the identity key is not authorized / not the pinned one */
	HS_REFUSE_SIGNATURE = 3, /* a signature does not verify */
	HS_REFUSE_MALFORMED = 4, /* a message could not be parsed or was unexpected */
};

/* Return values of handshake_on_frame() and handshake_on_marker() besides errors. */
enum {
	HS_CONTINUE = 0, /* waiting for the next frame */
	HS_DONE = 1,     /* keys are ready (send out first, if any) */
	HS_RESYNC = 2,   /* the frame was not for us: skip to the next marker */
};

struct hs_config {
	enum hs_role role;
	const struct keypair *identity;
	const uint8_t *expected_peer;      /* host: the pinned guest key, or NULL to accept any */
	const struct authkeys *authorized; /* guest: the host keys it accepts */
	const uint8_t *ephemeral_secret; /* fixed X25519 secret (vectors, fuzzing); NULL: random */
	const uint16_t *versions;        /* NULL: {HS_PROTOCOL_VERSION} */
	size_t n_versions;
	/*
	 * Host: the ciphers it offers, preferred first; guest: the ones it accepts. ChaCha20-
	 * Poly1305 is accepted by everyone whether listed or not. NULL: handshake_local_ciphers().
	 */
	const uint8_t *ciphers;
	size_t n_ciphers;
};

/* Bytes to send: a marker and/or one frame. */
struct hs_output {
	uint8_t buf[FRAME_MARKER_LEN + FRAME_HEADER_LEN + FRAME_HANDSHAKE_MAX];
	size_t len;
};

struct handshake;

int handshake_new(const struct hs_config *cfg, struct handshake **ret, struct err *err);
void handshake_free(struct handshake *hs);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct handshake *, handshake_free)
#define _cleanup_hs_ _cleanup_(handshake_freep)

/* Host: the opening bytes (marker and CLIENT_HELLO). */
int handshake_start(struct handshake *hs, struct hs_output *out, struct err *err);

/*
 * A frame body arrived. Returns HS_CONTINUE, HS_DONE or HS_RESYNC, or a negative errno-like
 * value with err set; out->len > 0 means bytes to send first, also on error (a REFUSE).
 * After an error every further call fails.
 */
int handshake_on_frame(struct handshake *hs, const uint8_t *body, size_t len, struct hs_output *out,
                       struct err *err);

/* A resync marker arrived: the guest starts over; the host fails once past SERVER_HELLO. */
int handshake_on_marker(struct handshake *hs, struct err *err);

/* The peer's identity key once it was received (also when it was then refused), else NULL. */
const uint8_t *handshake_peer_key(const struct handshake *hs);
/* After HS_DONE. */
uint16_t handshake_version(const struct handshake *hs);
const uint8_t *handshake_session_id(const struct handshake *hs); /* the final transcript hash */
void handshake_session_keys(const struct handshake *hs, uint8_t tx[HS_KEY_LEN],
                            uint8_t rx[HS_KEY_LEN]);

/* After HS_DONE: the AEAD agreed (enum hs_cipher). */
uint8_t handshake_cipher(const struct handshake *hs);
/*
 * The ciphers this machine runs, preferred first: AEGIS-256 where the CPU has AES-NI and AVX and
 * libsodium has it, AES-256-GCM where libsodium says the CPU runs it; ChaCha20-Poly1305 always.
 */
size_t handshake_local_ciphers(uint8_t out[HS_CIPHERS_MAX]);
/* "chacha20-poly1305", "aes256-gcm", "aegis256", or "?" */
const char *handshake_cipher_name(uint8_t cipher);

/* Highest version in both lists, 0 when none. */
uint16_t handshake_pick_version(const uint16_t *a, size_t na, const uint16_t *b, size_t nb);

/*
 * How many of the peer's handshake messages were taken so far (its progress; frames skipped
 * as noise do not count; 0 for NULL).
 */
unsigned handshake_frames(const struct handshake *hs);

#endif
