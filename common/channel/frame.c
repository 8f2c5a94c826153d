/* SPDX-License-Identifier: Apache-2.0 */
#include "frame.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* 0xff 0xff never starts a valid length, and never occurs in UTF-8 text. */
const uint8_t frame_marker[FRAME_MARKER_LEN] = {
    0xff, 0xff, 's', 'a', 'n', 'd', 'b', 'o', 'x', '-', 'c', 'h', 'a', 'n', '\r', '\n',
};

#define BODY_MIN_ALLOC 256

void frame_put_header(uint8_t out[FRAME_HEADER_LEN], uint32_t body_len)
{
	put_be32(out, body_len);
}

/*
 * Knuth-Morris-Pratt step without a table: after k matched bytes and a mismatching byte b, the
 * new match is the longest suffix of marker[0..k) + b that is a prefix of the marker.
 */
static size_t marker_next(size_t k, uint8_t b)
{
	if (frame_marker[k] == b)
		return k + 1;
	for (size_t j = k; j > 0; j--)
		if (frame_marker[j - 1] == b &&
		    memcmp(frame_marker + k + 1 - j, frame_marker, j - 1) == 0)
			return j;
	return 0;
}

static bool marker_step(struct frame_decoder *d, uint8_t b)
{
	d->marker_matched = marker_next(d->marker_matched, b);
	if (d->marker_matched < FRAME_MARKER_LEN)
		return false;
	d->marker_matched = 0;
	return true;
}

/*
 * The first i with p[i] and p[i + 1] both 0xff, or n: a marker starts with such a pair, and
 * one occurs in a ciphertext once in 65536 positions (a single 0xff once in 256). With SSE2,
 * 64 bytes per step; else memchr() from one 0xff to the next (musl's memchr() is byte-wise
 * and slow here, which is what the shipped static binaries use).
 */
static size_t pair_find(const uint8_t *p, size_t n)
{
	size_t i = 0;

#ifdef __SSE2__
	const __m128i ff = _mm_set1_epi8((char)0xff);

	for (; i + 65 <= n; i += 64) {
		__m128i m = _mm_setzero_si128();
		for (size_t k = 0; k < 64; k += 16) {
			__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(p + i + k));
			__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + i + k + 1));
			m = _mm_or_si128(
			    m, _mm_and_si128(_mm_cmpeq_epi8(a, ff), _mm_cmpeq_epi8(b, ff)));
		}
		if (_mm_movemask_epi8(m))
			break;
	}
#else
	while (i + 1 < n) {
		const uint8_t *q = memchr(p + i, 0xff, n - 1 - i);
		if (!q)
			return n;
		i = (size_t)(q - p);
		if (p[i + 1] == 0xff)
			return i;
		i += 2;
	}
#endif
	for (; i + 1 < n; i++)
		if (p[i] == 0xff && p[i + 1] == 0xff)
			return i;
	return n;
}

/* Scan a run of body bytes; true when a marker completes, with the bytes used up to its end. */
static bool marker_scan(struct frame_decoder *d, const uint8_t *p, size_t n, size_t *ret_used)
{
	size_t i = 0;

	static_assert(FRAME_MARKER_LEN >= 2, "the marker starts with a pair of 0xff");
	while (i < n) {
		if (d->marker_matched == 0) {
			/* Skip to the next pair of 0xff, or past the end when there is none. */
			size_t k = pair_find(p + i, n - i);
			if (k == n - i) {
				/* A 0xff at the end may start a pair that ends in the next input.
				 */
				if (p[n - 1] == frame_marker[0])
					d->marker_matched = 1;
				return false;
			}
			i += k;
		}
		if (marker_step(d, p[i++])) {
			*ret_used = i;
			return true;
		}
	}
	return false;
}

/*
 * Bytes consumed that were neither a whole frame nor a marker: garbage, partial frames. A
 * marker may begin in the last bytes of a frame already returned; those count once.
 */
static void account(struct frame_decoder *d, uint64_t n)
{
	uint64_t fresh = d->consumed - d->last_event;

	d->accounted += n < fresh ? n : fresh;
	d->last_event = d->consumed;
	d->skipped = d->consumed - d->accounted;
}

static void start_frame(struct frame_decoder *d)
{
	d->state = FRAME_ST_HEADER;
	d->hdr_len = 0;
	d->body_len = 0;
	d->view = NULL;
}

void frame_decoder_init(struct frame_decoder *d, size_t max_body, bool resync)
{
	memset(d, 0, sizeof(*d));
	d->max_body = max_body;
	d->resync = resync;
	d->state = resync ? FRAME_ST_SCAN : FRAME_ST_HEADER;
}

void frame_decoder_dispose(struct frame_decoder *d)
{
	free(d->body);
	d->body = NULL;
	d->view = NULL;
	d->body_cap = 0;
	d->body_len = 0;
}

void frame_decoder_set_mode(struct frame_decoder *d, size_t max_body, bool resync)
{
	d->max_body = max_body;
	d->resync = resync;
	if (resync)
		d->bodies_unscanned = false;
	start_frame(d);
	if (resync && !d->at_marker)
		d->state = FRAME_ST_SCAN;
}

void frame_decoder_scan_bodies(struct frame_decoder *d, bool scan)
{
	d->bodies_unscanned = !scan && !d->resync;
}

bool frame_decoder_mid_frame(const struct frame_decoder *d)
{
	switch (d->state) {
	case FRAME_ST_HEADER:
		return d->hdr_len > 0;
	case FRAME_ST_MAYBE_MARKER:
	case FRAME_ST_BODY:
		return true;
	default:
		return false;
	}
}

const uint8_t *frame_decoder_body(const struct frame_decoder *d, size_t *ret_len)
{
	*ret_len = d->body_len;
	return d->view ? d->view : d->body;
}

static int bad_length(struct frame_decoder *d, struct err *err)
{
	if (d->resync) {
		d->state = FRAME_ST_SCAN;
		d->hdr_len = 0;
		return 0;
	}
	if (d->want == 0)
		return err_set(err, ERR_FAILED, EPROTO, "invalid frame: zero length");
	return err_set(err, ERR_FAILED, EMSGSIZE,
	               "invalid frame: length %u is over the limit of %zu bytes", d->want,
	               d->max_body);
}

/* Grow the body buffer for need bytes, never beyond the announced length. */
static int body_reserve(struct frame_decoder *d, size_t need, struct err *err)
{
	size_t cap;
	uint8_t *p;

	if (need <= d->body_cap)
		return 0;
	cap = d->body_cap ? d->body_cap : BODY_MIN_ALLOC;
	while (cap < need)
		cap *= 2;
	if (cap > d->want)
		cap = d->want;
	p = realloc(d->body, cap);
	if (!p)
		return err_oom_at(err, "for a %u-byte frame", d->want);
	d->body = p;
	d->body_cap = cap;
	return 0;
}

static ssize_t feed_body(struct frame_decoder *d, const uint8_t *buf, size_t len,
                         enum frame_event *ret_ev, struct err *err)
{
	size_t n = d->want - d->body_len;
	size_t used;
	int r;

	if (n > len)
		n = len;
	if (d->bodies_unscanned) {
		d->marker_matched = 0; /* a marker begins between frames, if at all */
	} else if (marker_scan(d, buf, n, &used)) {
		d->consumed += used;
		account(d, FRAME_MARKER_LEN);
		start_frame(d);
		d->at_marker = true;
		*ret_ev = FRAME_EV_MARKER;
		return (ssize_t)used;
	}
	if (d->body_len == 0 && n == d->want) {
		d->view = buf; /* the whole body is in the input: no copy */
	} else {
		r = body_reserve(d, d->body_len + n, err);
		if (r < 0)
			return r;
		memcpy(d->body + d->body_len, buf, n);
	}
	d->body_len += n;
	d->consumed += n;
	if (n > 0)
		d->at_marker = false;
	if (d->body_len == d->want) {
		account(d, FRAME_HEADER_LEN + d->want);
		d->state = FRAME_ST_READY;
		*ret_ev = FRAME_EV_FRAME;
	}
	return (ssize_t)n;
}

ssize_t frame_decoder_feed(struct frame_decoder *d, const uint8_t *buf, size_t len,
                           enum frame_event *ret_ev, struct err *err)
{
	size_t i = 0;

	*ret_ev = FRAME_EV_NONE;
	if (d->state == FRAME_ST_READY)
		start_frame(d);
	while (i < len) {
		size_t prev;
		uint8_t b;
		int r;

		if (d->state == FRAME_ST_BODY) {
			ssize_t n = feed_body(d, buf + i, len - i, ret_ev, err);
			if (n < 0)
				return n;
			i += (size_t)n;
			if (*ret_ev != FRAME_EV_NONE)
				return (ssize_t)i;
			continue;
		}
		b = buf[i++];
		d->consumed++;
		d->at_marker = false;
		prev = d->marker_matched;
		if (marker_step(d, b)) {
			account(d, FRAME_MARKER_LEN);
			start_frame(d);
			d->at_marker = true;
			*ret_ev = FRAME_EV_MARKER;
			return (ssize_t)i;
		}
		switch (d->state) {
		case FRAME_ST_HEADER:
			d->hdr[d->hdr_len++] = b;
			if (d->hdr_len < FRAME_HEADER_LEN)
				break;
			d->want = get_be32(d->hdr);
			if (d->want >= 1 && d->want <= d->max_body) {
				d->state = FRAME_ST_BODY;
				d->body_len = 0;
			} else if (d->marker_matched >= FRAME_HEADER_LEN) {
				d->state = FRAME_ST_MAYBE_MARKER;
			} else if ((r = bad_length(d, err)) < 0) {
				return r;
			}
			break;
		case FRAME_ST_MAYBE_MARKER:
			/* Still a marker only while every byte extends the match. */
			d->hdr_len++;
			if (d->marker_matched != prev + 1 && (r = bad_length(d, err)) < 0)
				return r;
			break;
		default:
			break;
		}
	}
	return (ssize_t)i;
}
