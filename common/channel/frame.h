/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Framing of the host<->guest channel (docs/protocol.md, "Framing"): every frame is a 4-byte
 * big-endian length followed by that many bytes, and every session starts with a 16-byte
 * resync marker. This file holds no I/O: an incremental decoder takes bytes as they arrive, in
 * any split, and reports whole frames and markers.
 *
 * The decoder watches for the marker in every byte it consumes (between frames, in garbage, and
 * inside a frame body), because on a virtio-serial port a new session may start while bytes of
 * a dropped one are still in flight: whatever preceded the marker is dropped and never reaches a
 * handshake. A length over the limit is refused before anything is allocated, and a body buffer
 * grows only as its bytes arrive, so a forged length costs nothing.
 *
 * Two modes:
 *   resync (handshakes): the decoder starts by skipping to a marker, and anything that is not a
 *     well-formed frame sends it back to skipping;
 *   strict (sessions): an invalid length is an error; a marker is still reported (the peer
 *     started over).
 */
#ifndef SA_FRAME_H
#define SA_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define FRAME_MARKER_LEN 16
#define FRAME_HEADER_LEN 4

/* Limits (docs/protocol.md, "Limits"). */
#define FRAME_HANDSHAKE_MAX 512           /* body of a handshake frame */
#define FRAME_PLAINTEXT_MAX (1024 * 1024) /* a message, header included */
#define FRAME_SEQ_LEN 8
#define FRAME_TAG_LEN 16 /* ChaCha20-Poly1305, AES-256-GCM */
#define FRAME_TAG_MAX 32 /* AEGIS-256 */
#define FRAME_SESSION_MAX (FRAME_SEQ_LEN + FRAME_PLAINTEXT_MAX + FRAME_TAG_MAX)

extern const uint8_t frame_marker[FRAME_MARKER_LEN];

enum frame_event {
	FRAME_EV_NONE = 0, /* all input consumed, nothing complete yet */
	FRAME_EV_FRAME,    /* a whole frame: frame_decoder_body() */
	FRAME_EV_MARKER,   /* a resync marker; any partial frame before it was dropped */
};

enum frame_state {
	FRAME_ST_SCAN,         /* skipping to the next marker */
	FRAME_ST_HEADER,       /* reading the 4-byte length */
	FRAME_ST_MAYBE_MARKER, /* the "length" is the start of a marker: wait and see */
	FRAME_ST_BODY,         /* reading the body */
	FRAME_ST_READY,        /* a frame was returned; the next feed starts a new one */
};

struct frame_decoder {
	size_t max_body; /* largest accepted body length */
	bool resync;     /* resync mode (see above) instead of strict */
	enum frame_state state;
	uint8_t hdr[FRAME_HEADER_LEN];
	size_t hdr_len;
	uint32_t want; /* body length announced by the header */
	uint8_t *body;
	const uint8_t *view; /* the body of the frame returned, when it lay whole in the input */
	size_t body_len;
	size_t body_cap;
	size_t marker_matched; /* bytes of the marker matched by the most recent input */
	bool bodies_unscanned; /* strict mode on a connection: markers between frames only */
	bool at_marker;        /* nothing consumed since the last marker */
	uint64_t consumed;     /* all bytes consumed */
	uint64_t accounted;    /* bytes of whole frames and markers among them */
	uint64_t last_event;   /* consumed at the last event */
	uint64_t skipped;      /* the others, as of the last event: garbage, cut frames */
};

/* Starts in resync mode (skipping to a marker) or strict mode (expecting a header). */
void frame_decoder_init(struct frame_decoder *d, size_t max_body, bool resync);
void frame_decoder_dispose(struct frame_decoder *d);

/*
 * Switch mode. Entering resync mode skips to the next marker unless one was just seen;
 * entering strict mode expects a header next.
 */
void frame_decoder_set_mode(struct frame_decoder *d, size_t max_body, bool resync);

/*
 * Consume bytes from buf until an event or the end of the input. Returns the number of bytes
 * consumed (the rest belongs to what follows the event) and the event in *ret_ev, or a negative
 * errno-like value with err set (strict mode only: an invalid length, EMSGSIZE or EPROTO; or
 * ENOMEM). After FRAME_EV_FRAME the body stays valid until the next call, and while buf does: a
 * body that lay whole in buf is not copied (frame_decoder_body() points into buf).
 */
ssize_t frame_decoder_feed(struct frame_decoder *d, const uint8_t *buf, size_t len,
                           enum frame_event *ret_ev, struct err *err);

const uint8_t *frame_decoder_body(const struct frame_decoder *d, size_t *ret_len);

/* True between the first byte of a frame's header and its last byte (EOF here = truncation). */
bool frame_decoder_mid_frame(const struct frame_decoder *d);

/*
 * In strict mode, whether frame bodies are scanned for the marker (the default, and always in
 * resync mode). A session on one connection (a socket, an exec pipe: nothing of an older
 * session can be in it) need not: a marker there comes from the authenticated peer itself, and
 * a frame it cuts fails its AEAD. A marker between frames is still reported.
 */
void frame_decoder_scan_bodies(struct frame_decoder *d, bool scan);

/* Write the 4-byte big-endian length header. */
void frame_put_header(uint8_t out[FRAME_HEADER_LEN], uint32_t body_len);

/* Big-endian helpers shared by the protocol code. */
static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

#endif
