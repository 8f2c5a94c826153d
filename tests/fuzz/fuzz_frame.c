/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frame decoding (common/frame.c) and message decoding (common/msg.c) of untrusted bytes.
 * The first byte picks the mode: bit 0 resync (handshake) or strict (session), bit 1 the
 * session limit or a small one, bit 2 decode every frame body as a message, bits 3..7 the size
 * of the pieces the rest is fed in. The same input is also fed in one piece; both runs must
 * report the same events, bodies and errors at the same offsets, since the decoder is
 * meant to be indifferent to how bytes arrive.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct trace {
	uint64_t hash;
	size_t events;
	uint64_t error_at; /* consumed bytes at the error, or UINT64_MAX */
};

static void mix(struct trace *t, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		t->hash ^= p[i];
		t->hash *= 1099511628211ULL;
	}
}

static void run(const uint8_t *data, size_t size, uint8_t mode, size_t piece, struct trace *t)
{
	struct frame_decoder d;
	size_t max = (mode & 2) ? FRAME_SESSION_MAX : 64;
	size_t off = 0;

	memset(t, 0, sizeof(*t));
	t->hash = 14695981039346656037ULL;
	t->error_at = UINT64_MAX;
	frame_decoder_init(&d, max, mode & 1);
	while (off < size) {
		size_t n = size - off < piece ? size - off : piece;
		enum frame_event ev;
		struct err e;
		ssize_t used = frame_decoder_feed(&d, data + off, n, &ev, &e);

		if (used < 0) {
			t->error_at = d.consumed;
			break;
		}
		if ((size_t)used > n || (ev == FRAME_EV_NONE && (size_t)used != n))
			abort();
		off += (size_t)used;
		if (ev == FRAME_EV_NONE)
			continue;
		t->events++;
		mix(t, (const uint8_t *)&ev, sizeof(ev));
		if (ev == FRAME_EV_FRAME) {
			size_t blen;
			const uint8_t *body = frame_decoder_body(&d, &blen);
			if (blen == 0 || blen > max)
				abort();
			mix(t, body, blen);
			if (mode & 4) {
				struct msg m;
				if (msg_decode(body, blen, &m, &e) == 0) {
					if (m.data_len > blen)
						abort();
					msg_dispose(&m);
				}
			}
		}
	}
	if ((t->error_at == UINT64_MAX && d.consumed != off) || d.skipped > d.consumed)
		abort();
	frame_decoder_dispose(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace a, b;
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	run(data + 1, size - 1, mode, 1 + (mode >> 3), &a);
	run(data + 1, size - 1, mode, size, &b);
	if (a.hash != b.hash || a.events != b.events || a.error_at != b.error_at)
		abort();
	return 0;
}
