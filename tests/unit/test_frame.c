/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

/* What a decoder reported over a whole input: events in order, frame bodies concatenated. */
struct trace {
	char events[256]; /* 'F' frame, 'M' marker, 'E' error */
	size_t n;
	uint8_t bodies[8192];
	size_t bodies_len;
	size_t lens[64];
	size_t nframes;
	struct err err;
};

static void run(struct frame_decoder *d, const uint8_t *buf, size_t len, size_t chunk,
                struct trace *t)
{
	size_t off = 0;

	memset(t, 0, sizeof(*t));
	while (off < len) {
		size_t n = len - off < chunk ? len - off : chunk;
		enum frame_event ev;
		ssize_t used = frame_decoder_feed(d, buf + off, n, &ev, &t->err);
		if (used < 0) {
			t->events[t->n++] = 'E';
			return;
		}
		ck_assert_uint_le((size_t)used, n);
		off += (size_t)used;
		if (ev == FRAME_EV_FRAME) {
			size_t blen;
			const uint8_t *b = frame_decoder_body(d, &blen);
			t->events[t->n++] = 'F';
			memcpy(t->bodies + t->bodies_len, b, blen);
			t->bodies_len += blen;
			t->lens[t->nframes++] = blen;
		} else if (ev == FRAME_EV_MARKER) {
			t->events[t->n++] = 'M';
		} else {
			ck_assert_uint_eq((size_t)used, n);
		}
	}
}

static size_t put_frame(uint8_t *out, const void *body, size_t len)
{
	frame_put_header(out, (uint32_t)len);
	memcpy(out + FRAME_HEADER_LEN, body, len);
	return FRAME_HEADER_LEN + len;
}

static size_t put_marker(uint8_t *out)
{
	memcpy(out, frame_marker, FRAME_MARKER_LEN);
	return FRAME_MARKER_LEN;
}

START_TEST(test_frames_any_split)
{
	uint8_t buf[512];
	size_t n = 0;

	n += put_marker(buf + n);
	n += put_frame(buf + n, "hello", 5);
	n += put_frame(buf + n, "\xff\xff", 2);
	n += put_frame(buf + n, "x", 1);
	for (size_t chunk = 1; chunk <= n; chunk++) {
		struct frame_decoder d;
		struct trace t;

		frame_decoder_init(&d, 64, true);
		run(&d, buf, n, chunk, &t);
		ck_assert_str_eq(t.events, "MFFF");
		ck_assert_uint_eq(t.bodies_len, 8);
		ck_assert_mem_eq(t.bodies, "hello\xff\xffx", 8);
		ck_assert(!frame_decoder_mid_frame(&d));
		ck_assert_uint_eq(d.skipped, 0);
		frame_decoder_dispose(&d);
	}
}
END_TEST

START_TEST(test_garbage_before_marker_skipped)
{
	uint8_t buf[512];
	size_t n = 0;
	struct frame_decoder d;
	struct trace t;

	/* Text, a stray 0xff, half a marker, a frame header without marker: all garbage. */
	memcpy(buf,
	       "login: \xff\xff"
	       "sandbox",
	       16);
	n = 16;
	n += put_frame(buf + n, "stale", 5);
	n += put_marker(buf + n);
	n += put_frame(buf + n, "fresh", 5);
	for (size_t chunk = 1; chunk <= n; chunk += 3) {
		frame_decoder_init(&d, 64, true);
		run(&d, buf, n, chunk, &t);
		ck_assert_str_eq(t.events, "MF");
		ck_assert_mem_eq(t.bodies, "fresh", 5);
		ck_assert_uint_eq(d.skipped, 16 + 9);
		frame_decoder_dispose(&d);
	}
}
END_TEST

START_TEST(test_marker_with_repeated_ff)
{
	/* "ff ff ff s a n d ..." : the marker starts at the second 0xff. */
	uint8_t buf[64];
	size_t n = 0;
	struct frame_decoder d;
	struct trace t;

	buf[n++] = 0xff;
	n += put_marker(buf + n);
	n += put_frame(buf + n, "ok", 2);
	frame_decoder_init(&d, 64, true);
	run(&d, buf, n, 1, &t);
	ck_assert_str_eq(t.events, "MF");
	ck_assert_uint_eq(d.skipped, 1);
	frame_decoder_dispose(&d);
}
END_TEST

/* The decoder finds markers exactly where a plain search does, whatever surrounds them. */
START_TEST(test_marker_search_matches_naive)
{
	unsigned seed = 1;

	for (int round = 0; round < 2000; round++) {
		uint8_t buf[96];
		size_t len = sizeof(buf), expected = 0, found = 0;
		struct frame_decoder d;

		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245 + 12345;
			/* Mostly marker bytes so that partial matches are common. */
			buf[i] = (seed >> 16) % 4 ? frame_marker[(seed >> 8) % FRAME_MARKER_LEN]
			                          : (uint8_t)(seed >> 20);
		}
		if (round % 3 == 0)
			memcpy(buf + (seed >> 8) % (len - FRAME_MARKER_LEN), frame_marker,
			       FRAME_MARKER_LEN);
		/* Non-overlapping occurrences from the left, as a scanner sees them. */
		for (size_t i = 0; i + FRAME_MARKER_LEN <= len;) {
			if (memcmp(buf + i, frame_marker, FRAME_MARKER_LEN) == 0) {
				expected++;
				i += FRAME_MARKER_LEN;
			} else {
				i++;
			}
		}
		frame_decoder_init(&d, 64, true);
		for (size_t off = 0; off < len;) {
			enum frame_event ev;
			struct err e;
			ssize_t used;
			/* Keep the decoder scanning: only markers matter here. */
			d.state = FRAME_ST_SCAN;
			used = frame_decoder_feed(&d, buf + off, len - off, &ev, &e);
			ck_assert_int_ge(used, 0);
			off += (size_t)used;
			if (ev == FRAME_EV_MARKER)
				found++;
		}
		ck_assert_uint_eq(found, expected);
		frame_decoder_dispose(&d);
	}
}
END_TEST

/*
 * Inside a frame's body too (the scan there skips to pairs of 0xff, 64 bytes a step where it
 * can): a marker is found where a plain search finds the first one, in any split of the input,
 * also one split between its two leading 0xff bytes; a body without one is a frame.
 */
START_TEST(test_marker_in_body_matches_naive)
{
	unsigned seed = 7;

	for (int round = 0; round < 3000; round++) {
		uint8_t buf[FRAME_HEADER_LEN + 700];
		size_t body = sizeof(buf) - FRAME_HEADER_LEN, end = 0;
		/* Dense rounds: partial markers everywhere; sparse ones: long runs without a pair.
		 */
		unsigned dense = round % 4 ? 3 : 200;
		struct frame_decoder d;
		size_t off = 0, at = 0;
		enum frame_event ev = FRAME_EV_NONE;

		frame_put_header(buf, (uint32_t)body);
		for (size_t i = FRAME_HEADER_LEN; i < sizeof(buf); i++) {
			seed = seed * 1103515245 + 12345;
			buf[i] = (seed >> 16) % dense == 0 ? frame_marker[(seed >> 8) % 3]
			                                   : (uint8_t)((seed >> 20) % 255);
		}
		if (round % 2 == 0)
			memcpy(buf + FRAME_HEADER_LEN + (seed >> 8) % (body - FRAME_MARKER_LEN),
			       frame_marker, FRAME_MARKER_LEN);
		for (size_t i = FRAME_HEADER_LEN; i + FRAME_MARKER_LEN <= sizeof(buf); i++)
			if (memcmp(buf + i, frame_marker, FRAME_MARKER_LEN) == 0) {
				end = i + FRAME_MARKER_LEN;
				break;
			}
		frame_decoder_init(&d, 4096, false);
		while (off < sizeof(buf) && ev == FRAME_EV_NONE) {
			size_t n;
			struct err e;
			ssize_t used;

			seed = seed * 1103515245 + 12345;
			n = 1 + (seed >> 16) % (round % 3 ? 40 : 400);
			if (n > sizeof(buf) - off)
				n = sizeof(buf) - off;
			used = frame_decoder_feed(&d, buf + off, n, &ev, &e);
			ck_assert_int_ge(used, 0);
			off += (size_t)used;
			at = off;
		}
		if (end) {
			ck_assert_int_eq(ev, FRAME_EV_MARKER);
			ck_assert_uint_eq(at, end);
		} else {
			ck_assert_int_eq(ev, FRAME_EV_FRAME);
			ck_assert_uint_eq(at, sizeof(buf));
		}
		frame_decoder_dispose(&d);
	}
}
END_TEST

START_TEST(test_oversized_length_refused_before_allocating)
{
	struct frame_decoder d;
	struct trace t;
	uint8_t hdr[FRAME_HEADER_LEN];

	frame_decoder_init(&d, FRAME_SESSION_MAX, false);
	frame_put_header(hdr, 0x7fffffff);
	run(&d, hdr, sizeof(hdr), 1, &t);
	ck_assert_str_eq(t.events, "E");
	ck_assert_int_eq(t.err.code, EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(t.err.msg, "over the limit"));
	ck_assert_ptr_null(d.body);
	ck_assert_uint_eq(d.body_cap, 0);
	frame_decoder_dispose(&d);

	/* Just over the limit, too. */
	frame_decoder_init(&d, FRAME_SESSION_MAX, false);
	frame_put_header(hdr, FRAME_SESSION_MAX + 1);
	run(&d, hdr, sizeof(hdr), 4, &t);
	ck_assert_str_eq(t.events, "E");
	ck_assert_uint_eq(d.body_cap, 0);
	frame_decoder_dispose(&d);

	/* Zero is not a length either. */
	frame_decoder_init(&d, FRAME_SESSION_MAX, false);
	frame_put_header(hdr, 0);
	run(&d, hdr, sizeof(hdr), 4, &t);
	ck_assert_str_eq(t.events, "E");
	ck_assert_int_eq(t.err.code, EPROTO);
	frame_decoder_dispose(&d);
}
END_TEST

START_TEST(test_forged_length_allocates_only_what_arrives)
{
	struct frame_decoder d;
	struct trace t;
	uint8_t buf[FRAME_HEADER_LEN + 100];

	frame_decoder_init(&d, FRAME_SESSION_MAX, false);
	frame_put_header(buf, FRAME_SESSION_MAX);
	memset(buf + FRAME_HEADER_LEN, 'a', 100);
	run(&d, buf, sizeof(buf), sizeof(buf), &t);
	ck_assert_uint_eq(t.n, 0);
	ck_assert(frame_decoder_mid_frame(&d));
	ck_assert_uint_le(d.body_cap, 256);
	frame_decoder_dispose(&d);
}
END_TEST

START_TEST(test_strict_mode_refuses_garbage_but_reports_marker)
{
	uint8_t buf[128];
	size_t n = 0;
	struct frame_decoder d;
	struct trace t;

	/* A marker at a frame boundary: the peer started over. Not an error. */
	n += put_frame(buf + n, "one", 3);
	n += put_marker(buf + n);
	n += put_frame(buf + n, "two", 3);
	for (size_t chunk = 1; chunk <= n; chunk++) {
		frame_decoder_init(&d, 64, false);
		run(&d, buf, n, chunk, &t);
		ck_assert_str_eq(t.events, "FMF");
		frame_decoder_dispose(&d);
	}

	/* Something that starts like a marker but is not one: an error in strict mode... */
	n = 0;
	n += put_frame(buf + n, "one", 3);
	memcpy(buf + n, frame_marker, 6);
	n += 6;
	buf[n++] = 'X';
	frame_decoder_init(&d, 64, false);
	run(&d, buf, n, 1, &t);
	ck_assert_str_eq(t.events, "FE");
	ck_assert_int_eq(t.err.code, EMSGSIZE);
	frame_decoder_dispose(&d);

	/* ...and skipped in resync mode. */
	memmove(buf + FRAME_MARKER_LEN, buf, n);
	put_marker(buf);
	n += FRAME_MARKER_LEN;
	n += put_marker(buf + n);
	n += put_frame(buf + n, "two", 3);
	frame_decoder_init(&d, 64, true);
	run(&d, buf, n, 1, &t);
	ck_assert_str_eq(t.events, "MFMF");
	frame_decoder_dispose(&d);
}
END_TEST

START_TEST(test_marker_inside_body_drops_the_partial_frame)
{
	uint8_t buf[128];
	size_t n = 0;

	/* A frame cut short by a new session: its header promised 40 bytes, 5 came. */
	n += put_marker(buf + n);
	frame_put_header(buf + n, 40);
	n += FRAME_HEADER_LEN;
	memcpy(buf + n, "parti", 5);
	n += 5;
	n += put_marker(buf + n);
	n += put_frame(buf + n, "next", 4);
	for (int resync = 0; resync <= 1; resync++)
		for (size_t chunk = 1; chunk <= n; chunk++) {
			struct frame_decoder d;
			struct trace t;

			frame_decoder_init(&d, 64, resync);
			run(&d, buf + (resync ? 0 : FRAME_MARKER_LEN),
			    n - (resync ? 0 : FRAME_MARKER_LEN), chunk, &t);
			ck_assert_str_eq(t.events, resync ? "MMF" : "MF");
			ck_assert_uint_eq(t.bodies_len, 4);
			ck_assert_mem_eq(t.bodies, "next", 4);
			frame_decoder_dispose(&d);
		}
}
END_TEST

START_TEST(test_unscanned_bodies_on_a_connection)
{
	uint8_t buf[256], body[40];
	size_t n = 0;

	/* A marker inside a body is body bytes; one between frames is still reported. */
	memset(body, 'x', sizeof(body));
	memcpy(body + 10, frame_marker, FRAME_MARKER_LEN);
	n += put_frame(buf + n, body, sizeof(body));
	n += put_marker(buf + n);
	n += put_frame(buf + n, "next", 4);
	for (size_t chunk = 1; chunk <= n; chunk++) {
		struct frame_decoder d;
		struct trace t;

		frame_decoder_init(&d, 64, false);
		frame_decoder_scan_bodies(&d, false);
		run(&d, buf, n, chunk, &t);
		ck_assert_str_eq(t.events, "FMF");
		ck_assert_uint_eq(t.lens[0], sizeof(body));
		ck_assert_mem_eq(t.bodies, body, sizeof(body));
		/*
		 * Scanned (the default, and again after a handshake): the frame is cut at the
		 * marker, and the rest of its body is no frame.
		 */
		frame_decoder_set_mode(&d, 64, true);
		frame_decoder_set_mode(&d, 64, false);
		run(&d, buf, n, chunk, &t);
		ck_assert_str_eq(t.events, "ME");
		frame_decoder_dispose(&d);
	}
}
END_TEST

START_TEST(test_resync_mode_skips_oversized)
{
	uint8_t buf[128];
	size_t n = 0;
	struct frame_decoder d;
	struct trace t;

	n += put_marker(buf + n);
	frame_put_header(buf + n, 1000); /* over this decoder's 64 */
	n += FRAME_HEADER_LEN;
	memset(buf + n, 'z', 20);
	n += 20;
	n += put_marker(buf + n);
	n += put_frame(buf + n, "ok", 2);
	frame_decoder_init(&d, 64, true);
	run(&d, buf, n, 7, &t);
	ck_assert_str_eq(t.events, "MMF");
	ck_assert_uint_le(d.body_cap, 64); /* the 1000-byte claim never allocated */
	ck_assert_uint_eq(d.skipped, FRAME_HEADER_LEN + 20);
	frame_decoder_dispose(&d);
}
END_TEST

START_TEST(test_set_mode_after_marker_keeps_position)
{
	uint8_t buf[64];
	size_t n = 0;
	struct frame_decoder d;
	struct trace t;

	/* Strict session; the peer starts over; a handshake picks up right after the marker. */
	n += put_marker(buf + n);
	n += put_frame(buf + n, "hi", 2);
	frame_decoder_init(&d, 64, false);
	run(&d, buf, FRAME_MARKER_LEN, FRAME_MARKER_LEN, &t);
	ck_assert_str_eq(t.events, "M");
	frame_decoder_set_mode(&d, 64, true);
	run(&d, buf + FRAME_MARKER_LEN, n - FRAME_MARKER_LEN, 1, &t);
	ck_assert_str_eq(t.events, "F");

	/* Without a fresh marker, entering resync mode skips to the next one. */
	frame_decoder_set_mode(&d, 64, true);
	run(&d, buf + FRAME_MARKER_LEN, n - FRAME_MARKER_LEN, 1, &t);
	ck_assert_uint_eq(t.n, 0);
	frame_decoder_dispose(&d);
}
END_TEST

START_TEST(test_marker_overlapping_a_frame_counted_once)
{
	uint8_t buf[64];
	size_t n = 0;
	struct frame_decoder d;
	struct trace t;

	/* A frame whose last bytes start a marker that the next bytes complete. */
	n += put_marker(buf + n);
	n += put_frame(buf + n, "ab\xff\xffsandbox", 11);
	memcpy(buf + n, "-chan\r\n", 7);
	n += 7;
	frame_decoder_init(&d, 64, true);
	run(&d, buf, n, 1, &t);
	ck_assert_str_eq(t.events, "MFM");
	ck_assert_uint_eq(d.consumed, n);
	ck_assert_uint_eq(d.skipped, 0);
	frame_decoder_dispose(&d);
}
END_TEST

START_TEST(test_be_helpers)
{
	uint8_t b[8];

	put_be64(b, 0x0102030405060708ULL);
	ck_assert_mem_eq(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	ck_assert(get_be64(b) == 0x0102030405060708ULL);
	put_be16(b, 0xabcd);
	ck_assert_uint_eq(get_be16(b), 0xabcd);
	frame_put_header(b, 0x00100018);
	ck_assert_mem_eq(b, "\x00\x10\x00\x18", 4);
}
END_TEST

static Suite *frame_suite(void)
{
	Suite *s = suite_create("frame");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_frames_any_split);
	tcase_add_test(tc, test_garbage_before_marker_skipped);
	tcase_add_test(tc, test_marker_with_repeated_ff);
	tcase_add_test(tc, test_marker_search_matches_naive);
	tcase_add_test(tc, test_marker_in_body_matches_naive);
	tcase_add_test(tc, test_oversized_length_refused_before_allocating);
	tcase_add_test(tc, test_forged_length_allocates_only_what_arrives);
	tcase_add_test(tc, test_strict_mode_refuses_garbage_but_reports_marker);
	tcase_add_test(tc, test_marker_inside_body_drops_the_partial_frame);
	tcase_add_test(tc, test_unscanned_bodies_on_a_connection);
	tcase_add_test(tc, test_resync_mode_skips_oversized);
	tcase_add_test(tc, test_set_mode_after_marker_keeps_position);
	tcase_add_test(tc, test_marker_overlapping_a_frame_counted_once);
	tcase_add_test(tc, test_be_helpers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(frame_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
