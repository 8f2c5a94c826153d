/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled once, linked into every unit test (tests/unit/support/hs_helpers.h). */
#include "hs_helpers.h"

void hs_side_init(struct hs_side *s, const struct hs_config *cfg)
{
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(handshake_new(cfg, &s->hs, &s->err), 0);
	frame_decoder_init(&s->dec, FRAME_HANDSHAKE_MAX, true);
}

void hs_side_dispose(struct hs_side *s)
{
	handshake_free(s->hs);
	frame_decoder_dispose(&s->dec);
}

void hs_side_append(struct hs_side *s, const struct hs_output *o)
{
	ck_assert_uint_le(s->sent_len + o->len, sizeof(s->sent));
	memcpy(s->sent + s->sent_len, o->buf, o->len);
	s->sent_len += o->len;
}

void hs_side_start(struct hs_side *s)
{
	struct hs_output o;

	s->last = handshake_start(s->hs, &o, &s->err);
	ck_assert_int_eq(s->last, HS_CONTINUE);
	hs_side_append(s, &o);
}

int hs_side_feed(struct hs_side *s, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	s->fed = 0;
	while (off < len && s->last >= 0 && s->last != HS_DONE) {
		enum frame_event ev;
		ssize_t n = frame_decoder_feed(&s->dec, buf + off, len - off, &ev, &s->err);
		ck_assert_int_ge(n, 0);
		off += (size_t)n;
		s->fed = off;
		if (ev == FRAME_EV_MARKER) {
			s->last = handshake_on_marker(s->hs, &s->err);
		} else if (ev == FRAME_EV_FRAME) {
			struct hs_output o;
			size_t blen;
			const uint8_t *body = frame_decoder_body(&s->dec, &blen);
			s->last = handshake_on_frame(s->hs, body, blen, &o, &s->err);
			hs_side_append(s, &o);
			if (s->last == HS_RESYNC)
				frame_decoder_set_mode(&s->dec, FRAME_HANDSHAKE_MAX, true);
		}
	}
	return s->last;
}

void hs_side_retry(struct hs_side *s, const struct hs_config *cfg)
{
	handshake_free(s->hs);
	ck_assert_int_eq(handshake_new(cfg, &s->hs, &s->err), 0);
	s->last = HS_CONTINUE;
	frame_decoder_set_mode(&s->dec, FRAME_HANDSHAKE_MAX, true);
}

int hs_side_pass(struct hs_side *from, size_t *cursor, struct hs_side *to)
{
	size_t start = *cursor;

	*cursor = from->sent_len;
	return hs_side_feed(to, from->sent + start, from->sent_len - start);
}
