/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helpers: run the handshake state machine (handshake.h) from memory, the way
 * channel_handshake.c runs it over a descriptor. Header-only, included by the tests that use it.
 */
#ifndef SA_TEST_HS_HELPERS_H
#define SA_TEST_HS_HELPERS_H

#include <check.h>
#include <string.h>

#include "frame.h"
#include "handshake.h"

#define HS_WIRE_MAX 4096

struct hs_side {
	struct handshake *hs;
	struct frame_decoder dec;
	uint8_t sent[HS_WIRE_MAX]; /* everything this side sent */
	size_t sent_len;
	int last;   /* last hs_* return value */
	size_t fed; /* bytes the last hs_side_feed() consumed */
	struct err err;
};

/* Feed bytes to a side; stops at the first error. Returns the last hs_* value. */

/* After a failed attempt: a new handshake on the same decoder, as a serial daemon does. */

/* Deliver what `from` sent since *cursor to `to`. */

void hs_side_init(struct hs_side *s, const struct hs_config *cfg);
void hs_side_dispose(struct hs_side *s);
void hs_side_append(struct hs_side *s, const struct hs_output *o);
void hs_side_start(struct hs_side *s);
int hs_side_feed(struct hs_side *s, const uint8_t *buf, size_t len);
void hs_side_retry(struct hs_side *s, const struct hs_config *cfg);
int hs_side_pass(struct hs_side *from, size_t *cursor, struct hs_side *to);

#endif
