/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The encrypted frame layer (docs/protocol.md, "Encrypted frames"):
 *
 *   length u32 | seq u64 | AEAD(key, nonce = 0...0 || seq, ad = length || seq)
 *
 * The AEAD is the one the handshake agreed: ChaCha20-Poly1305 (IETF), or where both ends have
 * AES-NI, AEGIS-256 (libsodium 1.0.19 and later) or AES-256-GCM (its key schedule expanded once
 * per session, in the guarded key memory). The nonce is the cipher's length, 12 bytes or 32 for
 * AEGIS-256, zeros then seq; the tag is 16 bytes, 32 for AEGIS-256.
 *
 * seq counts the frames of one direction from 0. The receiver checks it before decrypting only
 * to say what went wrong (replay, reordering); the AEAD is what enforces it, since the nonce and
 * the authenticated data both carry it and the key is unique to the session and direction.
 */
#include "channel.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AD_LEN (FRAME_HEADER_LEN + FRAME_SEQ_LEN)
#define NONCE_LEN crypto_aead_chacha20poly1305_IETF_NPUBBYTES /* ChaCha20-Poly1305, AES-256-GCM */
#define NONCE_MAX 32                                          /* AEGIS-256 */

struct channel_keys {
	crypto_aead_aes256gcm_state tx_gcm; /* 16-byte aligned: AES-256-GCM only */
	crypto_aead_aes256gcm_state rx_gcm;
	uint8_t tx[HS_KEY_LEN];
	uint8_t rx[HS_KEY_LEN];
};

struct channel {
	struct frame_io *io;
	void *keys_mem;            /* sodium_malloc, keys within it aligned */
	struct json_tokener *tok;  /* msg_decode_with()'s, made at the first message */
	struct channel_keys *keys; /* in keys_mem */
	uint8_t cipher;            /* enum hs_cipher */
	uint8_t tag_len;           /* the cipher's: 16, or 32 for AEGIS-256 */
	uint8_t nonce_len;         /* the cipher's: 12, or 32 for AEGIS-256 */
	uint64_t tx_seq;
	uint64_t rx_seq;
	uint8_t *tx_buf; /* frames batched, then length | seq | ciphertext encrypted in place */
	size_t tx_cap;
	size_t tx_pending; /* bytes of whole frames at the start of tx_buf not written yet */
	uint8_t *rx_buf;   /* plaintext of the last message */
	size_t rx_cap;
	size_t rx_len;
	uint16_t version;
	uint8_t peer_pk[KEYS_PUBLIC_LEN];
	char peer_fp[KEYS_FINGERPRINT_MAX];
	uint8_t session_id[HS_HASH_LEN];
	char session_name[17];
	bool peer_closed;
	bool we_closed;
	bool broken;
	struct err broken_err;
	/* channel_data_room()'s last room (last, so the fields above keep their offsets). */
	const uint8_t *room;
	size_t room_len;
	uint64_t room_seq; /* tx_seq when it was given: a frame sealed since took it back */
};

static_assert(crypto_aead_chacha20poly1305_IETF_ABYTES == FRAME_TAG_LEN, "tag length");
static_assert(crypto_aead_chacha20poly1305_IETF_KEYBYTES == HS_KEY_LEN, "key length");
static_assert(crypto_aead_aes256gcm_ABYTES == FRAME_TAG_LEN, "tag length");
static_assert(crypto_aead_aes256gcm_KEYBYTES == HS_KEY_LEN, "key length");
static_assert(crypto_aead_aes256gcm_NPUBBYTES == NONCE_LEN, "nonce length");
#ifdef crypto_aead_aegis256_KEYBYTES
#define HAVE_AEGIS256 1
static_assert(crypto_aead_aegis256_ABYTES == FRAME_TAG_MAX, "tag length");
static_assert(crypto_aead_aegis256_KEYBYTES == HS_KEY_LEN, "key length");
static_assert(crypto_aead_aegis256_NPUBBYTES == NONCE_MAX, "nonce length");
#else
#define HAVE_AEGIS256 0
#endif

#define KEYS_ALIGN 16

/* The keys in guarded memory; sodium_malloc() aligns only sizes that are multiples. */
static int keys_alloc(struct channel *ch, uint8_t cipher, struct err *err)
{
	uintptr_t p;

	if (cipher == HS_CIPHER_AES256_GCM && !crypto_aead_aes256gcm_is_available())
		return err_set(err, ERR_FAILED, ENOTSUP,
		               "the handshake agreed on AES-256-GCM, which this CPU cannot run "
		               "(no AES-NI)");
	if (cipher == HS_CIPHER_AEGIS256 && !HAVE_AEGIS256)
		return err_set(err, ERR_FAILED, ENOTSUP,
		               "the handshake agreed on AEGIS-256, which this build's libsodium "
		               "(before 1.0.19) does not have");
	if (cipher != HS_CIPHER_AES256_GCM && cipher != HS_CIPHER_CHACHA20_POLY1305 &&
	    cipher != HS_CIPHER_AEGIS256)
		return err_set(err, ERR_FAILED, EPROTO, "the handshake agreed on unknown cipher %u",
		               cipher);
	ch->keys_mem = sodium_malloc(sizeof(*ch->keys) + KEYS_ALIGN);
	if (!ch->keys_mem)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	p = ((uintptr_t)ch->keys_mem + KEYS_ALIGN - 1) & ~(uintptr_t)(KEYS_ALIGN - 1);
	ch->keys = (struct channel_keys *)p;
	ch->cipher = cipher;
	ch->tag_len = cipher == HS_CIPHER_AEGIS256 ? FRAME_TAG_MAX : FRAME_TAG_LEN;
	ch->nonce_len = cipher == HS_CIPHER_AEGIS256 ? NONCE_MAX : NONCE_LEN;
	return 0;
}

int channel_from_handshake(struct frame_io *io, const struct handshake *hs, struct channel **ret,
                           struct err *err)
{
	struct channel *ch = calloc(1, sizeof(*ch));
	const uint8_t *peer = handshake_peer_key(hs);

	if (!ch)
		return err_oom(err);
	if (keys_alloc(ch, handshake_cipher(hs), err) < 0) {
		free(ch);
		return err_ret(err);
	}
	handshake_session_keys(hs, ch->keys->tx, ch->keys->rx);
	if (ch->cipher == HS_CIPHER_AES256_GCM) {
		crypto_aead_aes256gcm_beforenm(&ch->keys->tx_gcm, ch->keys->tx);
		crypto_aead_aes256gcm_beforenm(&ch->keys->rx_gcm, ch->keys->rx);
	}
	ch->io = io;
	ch->version = handshake_version(hs);
	if (peer) {
		memcpy(ch->peer_pk, peer, KEYS_PUBLIC_LEN);
		keys_fingerprint(peer, ch->peer_fp);
	}
	memcpy(ch->session_id, handshake_session_id(hs), HS_HASH_LEN);
	sodium_bin2hex(ch->session_name, sizeof(ch->session_name), ch->session_id, 8);
	frame_decoder_set_mode(&io->dec, FRAME_SEQ_LEN + FRAME_PLAINTEXT_MAX + ch->tag_len, false);
	frame_decoder_scan_bodies(&io->dec, !io->connection);
	frame_io_set_budget(io, UINT64_MAX);
	*ret = ch;
	return 0;
}

static void wipe_rx(struct channel *ch)
{
	if (ch->rx_len) {
		sodium_memzero(ch->rx_buf, ch->rx_len);
		ch->rx_len = 0;
	}
}

void channel_free(struct channel *ch)
{
	if (!ch)
		return;
	wipe_rx(ch);
	if (ch->tok)
		json_tokener_free(ch->tok);
	sodium_free(ch->keys_mem);
	free(ch->rx_buf);
	/* What channel_data_room() gave, if unsent (NULL and 0 before the first send: a no-op). */
	sodium_memzero(ch->tx_buf, ch->tx_cap);
	free(ch->tx_buf);
	free(ch);
}

const uint8_t *channel_peer_key(const struct channel *ch)
{
	return ch->peer_pk;
}

const char *channel_peer_fingerprint(const struct channel *ch)
{
	return ch->peer_fp;
}

const char *channel_session_name(const struct channel *ch)
{
	return ch->session_name;
}

uint16_t channel_version(const struct channel *ch)
{
	return ch->version;
}

const char *channel_cipher_name(const struct channel *ch)
{
	return handshake_cipher_name(ch->cipher);
}

/*
 * Buffers grow by replacing, never realloc(), so no copy of plaintext is left behind; the first
 * keep bytes (frames already encrypted) move to the new buffer.
 */
static int grow(uint8_t **buf, size_t *cap, size_t need, size_t keep, struct err *err)
{
	uint8_t *p;
	size_t n = *cap ? *cap : 4096;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = malloc(n);
	if (!p)
		return err_oom_at(err, "for a %zu-byte frame", need);
	if (*buf) {
		memcpy(p, *buf, keep);
		sodium_memzero(*buf, *cap);
		free(*buf);
	}
	*buf = p;
	*cap = n;
	return 0;
}

static void make_nonce(const struct channel *ch, uint8_t nonce[NONCE_MAX], uint64_t seq)
{
	memset(nonce, 0, ch->nonce_len);
	put_be64(nonce + ch->nonce_len - 8, seq);
}

/* Record the failure: the channel stays broken and every later call reports it. */
static int broken(struct channel *ch, struct err *err, int code, const char *fmt, ...)
    _printf_(4, 5);

static int broken(struct channel *ch, struct err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(&ch->broken_err, ERR_FAILED, code, fmt, ap);
	va_end(ap);
	ch->broken = true;
	return err_set(err, ERR_FAILED, code, "%s", ch->broken_err.msg);
}

static int check_sendable(struct channel *ch, struct err *err)
{
	if (ch->broken)
		return err_set(err, ch->broken_err.cls, ch->broken_err.code, "%s",
		               ch->broken_err.msg);
	if (ch->we_closed)
		return err_set(err, ERR_FAILED, EPIPE, "the channel was closed");
	if (ch->tx_seq == UINT64_MAX)
		return err_set(err, ERR_FAILED, EOVERFLOW,
		               "the channel ran out of sequence numbers");
	return 0;
}

/* Encrypt m as the next frame, after the frames already pending in tx_buf. */
static int seal(struct channel *ch, const struct msg *m, struct err *err)
{
	uint8_t nonce[NONCE_MAX], *f;
	unsigned long long clen;
	size_t plen;
	ssize_t n;
	int r;

	plen = msg_encoded_len(m, err);
	if (plen == 0)
		return err_ret(err);
	r = grow(&ch->tx_buf, &ch->tx_cap, ch->tx_pending + AD_LEN + plen + ch->tag_len,
	         ch->tx_pending, err);
	if (r < 0)
		return r;
	f = ch->tx_buf + ch->tx_pending;
	n = msg_encode(m, f + AD_LEN, ch->tx_cap - ch->tx_pending - AD_LEN, err);
	if (n < 0)
		return (int)n;
	frame_put_header(f, (uint32_t)(FRAME_SEQ_LEN + (size_t)n + ch->tag_len));
	put_be64(f + FRAME_HEADER_LEN, ch->tx_seq);
	make_nonce(ch, nonce, ch->tx_seq);
	/* Every case seals; keys_alloc() let only these three (AEGIS-256 where built) through. */
	switch (ch->cipher) {
	case HS_CIPHER_AES256_GCM:
		crypto_aead_aes256gcm_encrypt_afternm(f + AD_LEN, &clen, f + AD_LEN,
		                                      (unsigned long long)n, f, AD_LEN, NULL, nonce,
		                                      &ch->keys->tx_gcm);
		break;
#if HAVE_AEGIS256
	case HS_CIPHER_AEGIS256:
		crypto_aead_aegis256_encrypt(f + AD_LEN, &clen, f + AD_LEN, (unsigned long long)n,
		                             f, AD_LEN, NULL, nonce, ch->keys->tx);
		break;
#endif
	case HS_CIPHER_CHACHA20_POLY1305:
		crypto_aead_chacha20poly1305_ietf_encrypt(f + AD_LEN, &clen, f + AD_LEN,
		                                          (unsigned long long)n, f, AD_LEN, NULL,
		                                          nonce, ch->keys->tx);
		break;
	default:
		abort();
	}
	ch->tx_seq++;
	ch->tx_pending += AD_LEN + (size_t)clen;
	return 0;
}

static int write_pending(struct channel *ch, const struct msg *m, int timeout_ms, struct err *err)
{
	int r =
	    frame_io_write(ch->io, ch->tx_buf, ch->tx_pending, frame_io_deadline(timeout_ms), err);

	ch->tx_pending = 0;
	if (r < 0) {
		/* Part of the frame may be out: nothing can follow it on this stream. */
		if (m)
			err_wrap(err, "cannot send a %s message", msg_type_name(m->type) ?: "?");
		else
			err_wrap(err, "cannot send the messages batched");
		return broken(ch, err, err->code ? err->code : EIO, "%s", err->msg);
	}
	return 0;
}

int channel_send(struct channel *ch, const struct msg *m, int timeout_ms, struct err *err)
{
	int r = check_sendable(ch, err);

	if (r == 0)
		r = seal(ch, m, err);
	if (r == 0)
		r = write_pending(ch, m, timeout_ms, err);
	return r;
}

int channel_send_batched(struct channel *ch, const struct msg *m, int timeout_ms, struct err *err)
{
	int r = check_sendable(ch, err);

	if (r == 0)
		r = seal(ch, m, err);
	if (r == 0 && ch->tx_pending >= CHANNEL_BATCH_BYTES)
		r = write_pending(ch, m, timeout_ms, err);
	return r;
}

/* Where the data of the next message without JSON goes in tx_buf. */
static size_t room_offset(const struct channel *ch)
{
	return ch->tx_pending + AD_LEN + MSG_HEADER_LEN;
}

uint8_t *channel_data_room(struct channel *ch, size_t len, struct err *err)
{
	size_t at = room_offset(ch);

	ch->room = NULL;
	if (len > FRAME_PLAINTEXT_MAX - MSG_HEADER_LEN) {
		err_set(err, ERR_FAILED, EMSGSIZE,
		        "%zu bytes of data are over a message's limit of %d", len,
		        FRAME_PLAINTEXT_MAX - MSG_HEADER_LEN);
		return NULL;
	}
	if (grow(&ch->tx_buf, &ch->tx_cap, at + len + ch->tag_len, ch->tx_pending, err) < 0)
		return NULL;
	ch->room = ch->tx_buf + at;
	ch->room_len = len;
	ch->room_seq = ch->tx_seq;
	return ch->tx_buf + at;
}

int channel_send_room_batched(struct channel *ch, uint16_t type, uint32_t stream, size_t n,
                              int timeout_ms, struct err *err)
{
	const uint8_t *at = ch->tx_buf + room_offset(ch);
	struct msg m = {.type = type, .stream = stream, .data = at, .data_len = n};
	int r = check_sendable(ch, err);

	if (r < 0)
		return r;
	/* The room is where seal() puts the data, so msg_encode() copies nothing. */
	if (!ch->room || ch->room != at || ch->room_seq != ch->tx_seq || n > ch->room_len)
		return err_set(err, ERR_FAILED, EINVAL,
		               "a message's data is not in the room the channel gave for it");
	ch->room = NULL;
	return channel_send_batched(ch, &m, timeout_ms, err);
}

int channel_flush(struct channel *ch, int timeout_ms, struct err *err)
{
	if (ch->tx_pending == 0)
		return 0;
	return write_pending(ch, NULL, timeout_ms, err);
}

int channel_close(struct channel *ch, int timeout_ms, struct err *err)
{
	struct msg m = {.type = MSG_CLOSE, .flags = MSG_F_END, .stream = 0};
	int r;

	if (ch->we_closed)
		return 0;
	r = channel_send(ch, &m, timeout_ms, err);
	ch->we_closed = true;
	return r;
}

static int decrypt(struct channel *ch, unsigned long long *mlen, const uint8_t *c, size_t clen,
                   const uint8_t ad[AD_LEN], const uint8_t nonce[NONCE_MAX])
{
	switch (ch->cipher) {
	case HS_CIPHER_AES256_GCM:
		return crypto_aead_aes256gcm_decrypt_afternm(ch->rx_buf, mlen, NULL, c, clen, ad,
		                                             AD_LEN, nonce, &ch->keys->rx_gcm);
#if HAVE_AEGIS256
	case HS_CIPHER_AEGIS256:
		return crypto_aead_aegis256_decrypt(ch->rx_buf, mlen, NULL, c, clen, ad, AD_LEN,
		                                    nonce, ch->keys->rx);
#endif
	case HS_CIPHER_CHACHA20_POLY1305:
		return crypto_aead_chacha20poly1305_ietf_decrypt(ch->rx_buf, mlen, NULL, c, clen,
		                                                 ad, AD_LEN, nonce, ch->keys->rx);
	default:
		abort();
	}
}

static int open_frame(struct channel *ch, const uint8_t *body, size_t len, struct err *err)
{
	uint8_t ad[AD_LEN], nonce[NONCE_MAX];
	unsigned long long mlen;
	uint64_t seq;
	int r;

	if (len < FRAME_SEQ_LEN + (size_t)ch->tag_len)
		return broken(ch, err, EBADMSG, "frame %" PRIu64 " is too short (%zu bytes)",
		              ch->rx_seq, len);
	seq = get_be64(body);
	if (seq < ch->rx_seq)
		return broken(ch, err, EBADMSG,
		              "replayed frame: sequence number %" PRIu64
		              " was already received (expected %" PRIu64 ")",
		              seq, ch->rx_seq);
	if (seq > ch->rx_seq)
		return broken(ch, err, EBADMSG,
		              "frame out of order: sequence number %" PRIu64 " where %" PRIu64
		              " was expected (frames were dropped or reordered)",
		              seq, ch->rx_seq);
	r = grow(&ch->rx_buf, &ch->rx_cap, len - FRAME_SEQ_LEN - ch->tag_len + 1, 0, err);
	if (r < 0)
		return r;
	frame_put_header(ad, (uint32_t)len);
	memcpy(ad + FRAME_HEADER_LEN, body, FRAME_SEQ_LEN);
	make_nonce(ch, nonce, seq);
	if (decrypt(ch, &mlen, body + FRAME_SEQ_LEN, len - FRAME_SEQ_LEN, ad, nonce) < 0)
		return broken(ch, err, EBADMSG,
		              "frame %" PRIu64 " failed authentication: it was tampered with or "
		              "belongs to another session",
		              seq);
	ch->rx_len = (size_t)mlen;
	ch->rx_seq++;
	return 0;
}

int channel_recv(struct channel *ch, struct msg *ret, int timeout_ms, struct err *err)
{
	enum frame_event ev;
	const uint8_t *body;
	struct msg m;
	size_t len;
	int r;

	if (ch->broken)
		return err_set(err, ch->broken_err.cls, ch->broken_err.code, "%s",
		               ch->broken_err.msg);
	if (ch->peer_closed)
		return 0;
	wipe_rx(ch);
	r = frame_io_next(ch->io, frame_io_deadline(timeout_ms), &ev, err);
	if (r == -ETIMEDOUT)
		return r;
	if (r < 0)
		return broken(ch, err, err->code ? err->code : EPROTO, "%s", err->msg);
	if (r == 0) {
		if (frame_decoder_mid_frame(&ch->io->dec))
			return broken(ch, err, ECONNRESET,
			              "the connection ended in the middle of frame %" PRIu64
			              ": the stream was truncated",
			              ch->rx_seq);
		return broken(ch, err, ECONNRESET,
		              "the connection ended after %" PRIu64
		              " frames without a close message: the stream was truncated",
		              ch->rx_seq);
	}
	if (ev == FRAME_EV_MARKER)
		return broken(ch, err, ECONNRESET,
		              "the peer started a new session (resync marker) after frame %" PRIu64,
		              ch->rx_seq);
	body = frame_decoder_body(&ch->io->dec, &len);
	r = open_frame(ch, body, len, err);
	if (r < 0)
		return r;
	r = msg_decode_with(&ch->tok, ch->rx_buf, ch->rx_len, &m, err);
	if (r < 0)
		return broken(ch, err, EBADMSG, "frame %" PRIu64 ": %s", ch->rx_seq - 1, err->msg);
	if (m.type == MSG_CLOSE && m.stream == 0) {
		msg_dispose(&m);
		ch->peer_closed = true;
		return 0;
	}
	*ret = m;
	return 1;
}
