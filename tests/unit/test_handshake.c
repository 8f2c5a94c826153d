/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handshake state machine, driven from memory: negotiation, refusals, tampering, stale
 * bytes, replays. Over real processes: test_channel.c. The test vectors: test_vectors.c.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

#include "authkeys.h"
#include "channel.h"
#include "handshake.h"
#include "hs_helpers.h"
#include "keys.h"

struct fixture {
	struct keypair *host, *guest, *other;
	struct authkeys *ak;
	struct hs_side h, g;
	size_t hc, gc; /* cursors into what each side sent */
};

static void fixture_init(struct fixture *f, const struct hs_config *host_cfg,
                         const struct hs_config *guest_cfg)
{
	struct hs_config hc = {.role = HS_HOST}, gc = {.role = HS_GUEST};
	struct err e;

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(keys_generate(&f->host, &e), 0);
	ck_assert_int_eq(keys_generate(&f->guest, &e), 0);
	ck_assert_int_eq(keys_generate(&f->other, &e), 0);
	ck_assert_int_eq(authkeys_new(NULL, NULL, &f->ak, &e), 0);
	ck_assert_int_eq(authkeys_add(f->ak, f->host->pk, "host", &e), 0);
	if (host_cfg)
		hc = *host_cfg;
	if (guest_cfg)
		gc = *guest_cfg;
	hc.identity = f->host;
	gc.identity = f->guest;
	gc.authorized = f->ak;
	hs_side_init(&f->h, &hc);
	hs_side_init(&f->g, &gc);
}

static void fixture_dispose(struct fixture *f)
{
	hs_side_dispose(&f->h);
	hs_side_dispose(&f->g);
	authkeys_free(f->ak);
	keys_free(f->host);
	keys_free(f->guest);
	keys_free(f->other);
}

/* Offset of the first byte after the marker and n frames in buf. */
static size_t skip_frames(const uint8_t *buf, size_t n)
{
	size_t off = FRAME_MARKER_LEN;

	while (n--)
		off += FRAME_HEADER_LEN + get_be32(buf + off);
	return off;
}

START_TEST(test_handshake_completes)
{
	struct fixture f;
	uint8_t htx[HS_KEY_LEN], hrx[HS_KEY_LEN], gtx[HS_KEY_LEN], grx[HS_KEY_LEN];

	fixture_init(&f, NULL, NULL);
	hs_side_start(&f.h);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_CONTINUE);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_CONTINUE);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_DONE);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_DONE);
	ck_assert_int_eq(handshake_version(f.h.hs), 1);
	ck_assert_int_eq(handshake_version(f.g.hs), 1);
	ck_assert_mem_eq(handshake_peer_key(f.h.hs), f.guest->pk, KEYS_PUBLIC_LEN);
	ck_assert_mem_eq(handshake_peer_key(f.g.hs), f.host->pk, KEYS_PUBLIC_LEN);
	ck_assert_mem_eq(handshake_session_id(f.h.hs), handshake_session_id(f.g.hs), HS_HASH_LEN);
	handshake_session_keys(f.h.hs, htx, hrx);
	handshake_session_keys(f.g.hs, gtx, grx);
	ck_assert_mem_eq(htx, grx, HS_KEY_LEN);
	ck_assert_mem_eq(hrx, gtx, HS_KEY_LEN);
	ck_assert(memcmp(htx, hrx, HS_KEY_LEN) != 0);
	/* Both sides sent exactly: marker + 2 frames. */
	ck_assert_uint_eq(skip_frames(f.h.sent, 2), f.h.sent_len);
	ck_assert_uint_eq(skip_frames(f.g.sent, 2), f.g.sent_len);
	fixture_dispose(&f);
}
END_TEST

/* Progress counts the messages taken: noise frames (empty, or not for us) do not count. */
START_TEST(test_progress_counts_messages_not_noise)
{
	struct fixture f;
	struct hs_output out;
	struct err e;
	uint8_t junk[8] = {0x7e, 1, 2, 3, 4, 5, 6, 7};

	fixture_init(&f, NULL, NULL);
	ck_assert_uint_eq(handshake_frames(f.g.hs), 0);
	ck_assert_int_eq(handshake_on_frame(f.g.hs, junk, 0, &out, &e), HS_RESYNC);
	ck_assert_int_eq(handshake_on_frame(f.g.hs, junk, sizeof(junk), &out, &e), HS_RESYNC);
	ck_assert_uint_eq(handshake_frames(f.g.hs), 0);
	/* The host's hello to the guest, the guest's to the host, the host's auth to the guest. */
	hs_side_start(&f.h);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_CONTINUE);
	ck_assert_uint_eq(handshake_frames(f.g.hs), 1);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_CONTINUE);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_DONE);
	ck_assert_uint_eq(handshake_frames(f.g.hs), 2);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_fresh_keys_every_session)
{
	struct fixture a, b;
	uint8_t atx[HS_KEY_LEN], arx[HS_KEY_LEN], btx[HS_KEY_LEN], brx[HS_KEY_LEN];

	for (int i = 0; i < 2; i++) {
		struct fixture *f = i ? &b : &a;
		fixture_init(f, NULL, NULL);
		hs_side_start(&f->h);
		hs_side_pass(&f->h, &f->hc, &f->g);
		hs_side_pass(&f->g, &f->gc, &f->h);
		hs_side_pass(&f->h, &f->hc, &f->g);
		ck_assert_int_eq(hs_side_pass(&f->g, &f->gc, &f->h), HS_DONE);
	}
	handshake_session_keys(a.h.hs, atx, arx);
	handshake_session_keys(b.h.hs, btx, brx);
	ck_assert(memcmp(atx, btx, HS_KEY_LEN) != 0);
	ck_assert(memcmp(handshake_session_id(a.h.hs), handshake_session_id(b.h.hs), HS_HASH_LEN) !=
	          0);
	fixture_dispose(&a);
	fixture_dispose(&b);
}
END_TEST

START_TEST(test_version_highest_common)
{
	static const uint16_t hv[] = {1, 2, 3}, gv[] = {5, 2, 1};
	struct hs_config hc = {.role = HS_HOST, .versions = hv, .n_versions = 3};
	struct hs_config gc = {.role = HS_GUEST, .versions = gv, .n_versions = 3};
	struct fixture f;

	fixture_init(&f, &hc, &gc);
	hs_side_start(&f.h);
	hs_side_pass(&f.h, &f.hc, &f.g);
	hs_side_pass(&f.g, &f.gc, &f.h);
	hs_side_pass(&f.h, &f.hc, &f.g);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_DONE);
	ck_assert_int_eq(handshake_version(f.h.hs), 2);
	ck_assert_int_eq(handshake_version(f.g.hs), 2);
	ck_assert_uint_eq(handshake_pick_version(hv, 3, gv, 1), 0);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_version_none_in_common)
{
	static const uint16_t hv[] = {3, 4}, gv[] = {1, 2};
	struct hs_config hc = {.role = HS_HOST, .versions = hv, .n_versions = 2};
	struct hs_config gc = {.role = HS_GUEST, .versions = gv, .n_versions = 2};
	struct fixture f;

	fixture_init(&f, &hc, &gc);
	hs_side_start(&f.h);
	ck_assert_int_lt(hs_side_pass(&f.h, &f.hc, &f.g), 0);
	ck_assert_int_eq(f.g.err.code, EPROTONOSUPPORT);
	ck_assert_int_eq(f.g.err.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(f.g.err.msg, "the host speaks 3, 4, we speak 1, 2"));
	/* The guest answered with a refusal, which the host reports with both lists. */
	ck_assert_int_lt(hs_side_pass(&f.g, &f.gc, &f.h), 0);
	ck_assert_int_eq(f.h.err.code, EPROTONOSUPPORT);
	ck_assert_ptr_nonnull(strstr(f.h.err.msg, "it speaks 1, 2, we speak 3, 4"));
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_downgrade_detected)
{
	static const uint16_t both[] = {1, 2};
	struct hs_config hc = {.role = HS_HOST, .versions = both, .n_versions = 2};
	struct hs_config gc = {.role = HS_GUEST, .versions = both, .n_versions = 2};
	struct fixture f;
	const uint8_t *orig;
	uint8_t ch[256];
	size_t n = 0;

	fixture_init(&f, &hc, &gc);
	hs_side_start(&f.h);
	/* A man in the middle strips version 2 from the hello. */
	orig = f.h.sent + FRAME_MARKER_LEN + FRAME_HEADER_LEN;
	ck_assert_mem_eq(orig, "\x01SBXC\x02\x00\x01\x00\x02", 10);
	memcpy(ch, frame_marker, FRAME_MARKER_LEN);
	n = FRAME_MARKER_LEN;
	frame_put_header(ch + n, 1 + 4 + 1 + 2 + 32);
	n += FRAME_HEADER_LEN;
	memcpy(ch + n, "\x01SBXC\x01\x00\x01", 8);
	n += 8;
	memcpy(ch + n, orig + 10, 32);
	n += 32;
	f.hc = f.h.sent_len;
	ck_assert_int_eq(hs_side_feed(&f.g, ch, n), HS_CONTINUE);
	ck_assert_int_eq(handshake_version(f.g.hs), 1);
	/* The guest answers that hello: its hash is not the host's, so the host ignores it. */
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_RESYNC);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_host_key_not_authorized)
{
	struct fixture f;
	char fp[KEYS_FINGERPRINT_MAX];

	fixture_init(&f, NULL, NULL);
	authkeys_free(f.ak);
	ck_assert_int_eq(authkeys_new(NULL, NULL, &f.ak, &f.g.err), 0);
	ck_assert_int_eq(authkeys_add(f.ak, f.other->pk, "someone else", &f.g.err), 0);
	hs_side_dispose(&f.g);
	{
		struct hs_config gc = {.role = HS_GUEST, .identity = f.guest, .authorized = f.ak};
		hs_side_init(&f.g, &gc);
	}
	hs_side_start(&f.h);
	hs_side_pass(&f.h, &f.hc, &f.g);
	hs_side_pass(&f.g, &f.gc, &f.h);
	ck_assert_int_lt(hs_side_pass(&f.h, &f.hc, &f.g), 0);
	keys_fingerprint(f.host->pk, fp);
	ck_assert_int_eq(f.g.err.cls, ERR_REFUSED);
	ck_assert_int_eq(f.g.err.code, EKEYREJECTED);
	ck_assert_ptr_nonnull(strstr(f.g.err.msg, fp));
	ck_assert_ptr_nonnull(strstr(f.g.err.msg, "not authorized"));
	ck_assert_mem_eq(handshake_peer_key(f.g.hs), f.host->pk, KEYS_PUBLIC_LEN);
	/* The guest sent a refusal and no signature of its own. */
	ck_assert_uint_eq(f.g.sent[f.gc + FRAME_HEADER_LEN], HS_REFUSE);
	ck_assert_int_lt(hs_side_pass(&f.g, &f.gc, &f.h), 0);
	ck_assert_int_eq(f.h.err.code, EKEYREJECTED);
	ck_assert_ptr_nonnull(strstr(f.h.err.msg, "not in its authorized keys"));
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_pinned_key_mismatch_signs_nothing)
{
	struct fixture f;
	struct hs_config hc = {.role = HS_HOST};
	uint8_t pinned[KEYS_PUBLIC_LEN];
	size_t before;

	memset(pinned, 0x42, sizeof(pinned));
	hc.expected_peer = pinned;
	fixture_init(&f, &hc, NULL);
	hs_side_start(&f.h);
	hs_side_pass(&f.h, &f.hc, &f.g);
	before = f.h.sent_len;
	ck_assert_int_lt(hs_side_pass(&f.g, &f.gc, &f.h), 0);
	ck_assert_int_eq(f.h.err.cls, ERR_REFUSED);
	ck_assert_int_eq(f.h.err.code, EKEYREJECTED);
	ck_assert_ptr_nonnull(strstr(f.h.err.msg, "is not the pinned key"));
	/* What the host sent next is a bare refusal (no key, no signature). */
	ck_assert_uint_eq(f.h.sent[before + FRAME_HEADER_LEN], HS_REFUSE);
	ck_assert_uint_eq(get_be32(f.h.sent + before), 1 + HS_HASH_LEN + 1 + 1 + 2);
	ck_assert_int_lt(hs_side_pass(&f.h, &f.hc, &f.g), 0);
	ck_assert_ptr_nonnull(strstr(f.g.err.msg, "host refused the connection"));
	fixture_dispose(&f);
}
END_TEST

/* Run a handshake up to the point where `victim` gets its next bytes, flipped at frame offset i. */
enum { T_SERVER_HELLO, T_HOST_AUTH, T_GUEST_AUTH };

static void tamper_run(struct fixture *f, int what, size_t i)
{
	uint8_t wire[HS_WIRE_MAX];
	struct hs_side *from, *to;
	size_t *cursor, skip, n;

	fixture_init(f, NULL, NULL);
	hs_side_start(&f->h);
	hs_side_pass(&f->h, &f->hc, &f->g);
	if (what != T_SERVER_HELLO) {
		hs_side_pass(&f->g, &f->gc, &f->h);
		if (what == T_GUEST_AUTH)
			ck_assert_int_eq(hs_side_pass(&f->h, &f->hc, &f->g), HS_DONE);
	}
	from = what == T_HOST_AUTH ? &f->h : &f->g;
	to = what == T_HOST_AUTH ? &f->g : &f->h;
	cursor = what == T_HOST_AUTH ? &f->hc : &f->gc;
	skip = what == T_SERVER_HELLO ? FRAME_MARKER_LEN : 0;
	n = from->sent_len - *cursor;
	memcpy(wire, from->sent + *cursor, n);
	ck_assert_uint_lt(skip + i, n);
	wire[skip + i] ^= 0x01;
	*cursor = from->sent_len;
	hs_side_feed(to, wire, n);
}

START_TEST(test_tampered_server_hello)
{
	/* type 4, magic 5..8, hello hash 9..40, version 41..42, count 43, versions 44..45,
	 * ephemeral 46..77, identity 78..109 */
	for (size_t i = FRAME_HEADER_LEN; i < 110; i++) {
		struct fixture f;

		tamper_run(&f, T_SERVER_HELLO, i);
		if (i <= 40) {
			/* not an answer to our hello: skipped */
			ck_assert_int_eq(f.h.last, HS_RESYNC);
		} else if (i <= 45) {
			ck_assert_int_lt(f.h.last, 0);
			ck_assert_int_eq(f.h.err.code, EPROTO);
		} else {
			/* The host signs what it saw; the guest saw something else. */
			ck_assert_int_eq(f.h.last, HS_CONTINUE);
			ck_assert_int_lt(hs_side_pass(&f.h, &f.hc, &f.g), 0);
			ck_assert_int_eq(f.g.err.code, EBADMSG);
		}
		fixture_dispose(&f);
	}
}
END_TEST

START_TEST(test_tampered_host_auth)
{
	/* type 4, host key 5..36, signature 37..100 */
	for (size_t i = FRAME_HEADER_LEN; i < 101; i++) {
		struct fixture f;

		tamper_run(&f, T_HOST_AUTH, i);
		ck_assert_int_lt(f.g.last, 0);
		ck_assert_int_eq(f.g.err.code, i == 4 ? EPROTO : i <= 36 ? EKEYREJECTED : EBADMSG);
		/* Refused: the guest's only answer is a refusal. */
		ck_assert_uint_eq(f.g.sent[f.gc + FRAME_HEADER_LEN], HS_REFUSE);
		fixture_dispose(&f);
	}
}
END_TEST

START_TEST(test_tampered_guest_auth)
{
	/* type 4, signature 5..68 */
	for (size_t i = FRAME_HEADER_LEN; i < 69; i++) {
		struct fixture f;

		tamper_run(&f, T_GUEST_AUTH, i);
		ck_assert_int_lt(f.h.last, 0);
		ck_assert_int_eq(f.h.err.code, i == 4 ? EPROTO : EBADMSG);
		fixture_dispose(&f);
	}
}
END_TEST

START_TEST(test_recorded_host_replayed_to_new_guest)
{
	struct fixture a, b;

	/* Record a complete session... */
	fixture_init(&a, NULL, NULL);
	hs_side_start(&a.h);
	hs_side_pass(&a.h, &a.hc, &a.g);
	hs_side_pass(&a.g, &a.gc, &a.h);
	hs_side_pass(&a.h, &a.hc, &a.g);
	ck_assert_int_eq(hs_side_pass(&a.g, &a.gc, &a.h), HS_DONE);
	/* ...and play the host's bytes to a guest that trusts the same host key. */
	fixture_init(&b, NULL, NULL);
	ck_assert_int_eq(authkeys_add(b.ak, a.host->pk, "recorded", &b.g.err), 0);
	ck_assert_int_lt(hs_side_feed(&b.g, a.h.sent, a.h.sent_len), 0);
	ck_assert_int_eq(b.g.err.code, EBADMSG);
	ck_assert_ptr_nonnull(strstr(b.g.err.msg, "does not verify"));
	fixture_dispose(&a);
	fixture_dispose(&b);
}
END_TEST

START_TEST(test_recorded_guest_replayed_to_new_host)
{
	struct fixture a, b;
	size_t before;

	fixture_init(&a, NULL, NULL);
	hs_side_start(&a.h);
	hs_side_pass(&a.h, &a.hc, &a.g);
	hs_side_pass(&a.g, &a.gc, &a.h);
	hs_side_pass(&a.h, &a.hc, &a.g);
	ck_assert_int_eq(hs_side_pass(&a.g, &a.gc, &a.h), HS_DONE);
	/* The old server hello answers another client hello: the new host ignores all of it. */
	fixture_init(&b, NULL, NULL);
	hs_side_start(&b.h);
	before = b.h.sent_len;
	ck_assert_int_eq(hs_side_feed(&b.h, a.g.sent, a.g.sent_len), HS_RESYNC);
	ck_assert_uint_eq(b.h.sent_len, before); /* nothing signed, nothing sent */
	fixture_dispose(&a);
	fixture_dispose(&b);
}
END_TEST

/*
 * An old host's hello and authentication, never answered and cut short by a dropped
 * connection, then garbage, then a new host. cut: bytes missing from the old authentication.
 */
static void stale_session(size_t cut, bool expect_retry)
{
	struct fixture old, f;
	struct hs_config gc;
	uint8_t wire[3 * HS_WIRE_MAX];
	size_t n = 0;

	fixture_init(&old, NULL, NULL);
	hs_side_start(&old.h);
	hs_side_pass(&old.h, &old.hc, &old.g);
	hs_side_pass(&old.g, &old.gc, &old.h);
	fixture_init(&f, NULL, NULL);
	memcpy(wire + n, "\r\nGarbage\xff\xff", 11);
	n += 11;
	memcpy(wire + n, old.h.sent, old.h.sent_len - cut);
	n += old.h.sent_len - cut;
	hs_side_start(&f.h);
	memcpy(wire + n, f.h.sent, f.h.sent_len);
	n += f.h.sent_len;
	f.hc = f.h.sent_len;

	if (!expect_retry) {
		/* The fresh marker lands inside the cut frame: the guest starts over at once. */
		ck_assert_int_eq(hs_side_feed(&f.g, wire, n), HS_CONTINUE);
	} else {
		/* The cut frame completes with the first bytes of the fresh marker: that attempt
		 * fails, and the next attempt on the same stream finds the rest of the marker. */
		ck_assert_int_lt(hs_side_feed(&f.g, wire, n), 0);
		gc = (struct hs_config){.role = HS_GUEST, .identity = f.guest, .authorized = f.ak};
		hs_side_retry(&f.g, &gc);
		ck_assert_int_eq(hs_side_feed(&f.g, wire + f.g.fed, n - f.g.fed), HS_CONTINUE);
	}
	/* The guest answered the stale hello too; the host skips that answer and takes its own. */
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_CONTINUE);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_DONE);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_DONE);
	fixture_dispose(&old);
	fixture_dispose(&f);
}

START_TEST(test_stale_bytes_before_the_new_session)
{
	stale_session(40, false);
	stale_session(10, true);
	stale_session(97 + 4, false); /* the old authentication missing entirely */
}
END_TEST

START_TEST(test_host_fails_when_guest_restarts_late)
{
	struct fixture f;

	fixture_init(&f, NULL, NULL);
	hs_side_start(&f.h);
	hs_side_pass(&f.h, &f.hc, &f.g);
	hs_side_pass(&f.g, &f.gc, &f.h);
	ck_assert_int_lt(hs_side_feed(&f.h, frame_marker, FRAME_MARKER_LEN), 0);
	ck_assert_ptr_nonnull(strstr(f.h.err.msg, "started over"));
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_malformed_hello_refused)
{
	struct fixture f;
	uint8_t wire[64];
	size_t n = 0;

	fixture_init(&f, NULL, NULL);
	memcpy(wire, frame_marker, FRAME_MARKER_LEN);
	n = FRAME_MARKER_LEN;
	/* type, magic, 1 version, no ephemeral key */
	frame_put_header(wire + n, 8);
	n += FRAME_HEADER_LEN;
	memcpy(wire + n, "\x01SBXC\x01\x00\x01", 8);
	n += 8;
	ck_assert_int_lt(hs_side_feed(&f.g, wire, n), 0);
	ck_assert_int_eq(f.g.err.code, EPROTO);
	/* A refusal, after a marker like any first answer. */
	ck_assert_mem_eq(f.g.sent, frame_marker, FRAME_MARKER_LEN);
	ck_assert_uint_eq(f.g.sent[FRAME_MARKER_LEN + FRAME_HEADER_LEN], HS_REFUSE);
	ck_assert_uint_eq(f.g.sent[FRAME_MARKER_LEN + FRAME_HEADER_LEN + 1 + HS_HASH_LEN],
	                  HS_REFUSE_MALFORMED);
	fixture_dispose(&f);
}
END_TEST

/* ---- cipher negotiation ---- */

static const uint8_t aes_chacha[] = {HS_CIPHER_AES256_GCM, HS_CIPHER_CHACHA20_POLY1305};
static const uint8_t chacha[] = {HS_CIPHER_CHACHA20_POLY1305};
static const uint8_t aes[] = {HS_CIPHER_AES256_GCM};
static const uint8_t all[] = {HS_CIPHER_AEGIS256, HS_CIPHER_AES256_GCM,
                              HS_CIPHER_CHACHA20_POLY1305};

static void cipher_fixture(struct fixture *f, const uint8_t *hc, size_t nh, const uint8_t *gc,
                           size_t ng)
{
	struct hs_config h = {.role = HS_HOST, .ciphers = hc, .n_ciphers = nh};
	struct hs_config g = {.role = HS_GUEST, .ciphers = gc, .n_ciphers = ng};

	fixture_init(f, &h, &g);
	hs_side_start(&f->h);
}

/* The body length of the frame `s` sent at *cursor (after a marker, if any). */
static uint32_t next_len(const struct hs_side *s, size_t cursor)
{
	const uint8_t *p = s->sent + cursor;

	if (memcmp(p, frame_marker, FRAME_MARKER_LEN) == 0)
		p += FRAME_MARKER_LEN;
	return get_be32(p);
}

/*
 * Deliver the one frame `from` sent since *cursor, edited: its last `cut` bytes dropped, `add`
 * appended (the length follows), then the byte at `flip` (from the frame's length on) xored
 * with x.
 */
static int pass_edited(struct hs_side *from, size_t *cursor, struct hs_side *to, size_t cut,
                       const void *add, size_t add_len, size_t flip, uint8_t x)
{
	uint8_t wire[HS_WIRE_MAX];
	size_t n = from->sent_len - *cursor, skip = 0, body;

	memcpy(wire, from->sent + *cursor, n);
	*cursor = from->sent_len;
	if (memcmp(wire, frame_marker, FRAME_MARKER_LEN) == 0)
		skip = FRAME_MARKER_LEN;
	body = get_be32(wire + skip);
	ck_assert_uint_eq(skip + FRAME_HEADER_LEN + body, n);
	body -= cut;
	if (add_len > 0)
		memcpy(wire + skip + FRAME_HEADER_LEN + body, add, add_len);
	body += add_len;
	frame_put_header(wire + skip, (uint32_t)body);
	wire[skip + flip] ^= x;
	return hs_side_feed(to, wire, skip + FRAME_HEADER_LEN + body);
}

static void expect_cipher(const uint8_t *hc, size_t nh, const uint8_t *gc, size_t ng, uint8_t want,
                          uint32_t ch_len, uint32_t sh_len)
{
	struct fixture f;

	cipher_fixture(&f, hc, nh, gc, ng);
	ck_assert_uint_eq(next_len(&f.h, f.hc), ch_len);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_CONTINUE);
	ck_assert_uint_eq(next_len(&f.g, f.gc), sh_len);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_CONTINUE);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_DONE);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_DONE);
	ck_assert_uint_eq(handshake_cipher(f.h.hs), want);
	ck_assert_uint_eq(handshake_cipher(f.g.hs), want);
	fixture_dispose(&f);
}

START_TEST(test_cipher_negotiated)
{
	/* Both offer AES-256-GCM: the hello carries the offer (+4), the answer the choice (+3). */
	expect_cipher(aes_chacha, 2, aes_chacha, 2, HS_CIPHER_AES256_GCM, 40 + 4, 106 + 3);
	/* A host with ChaCha20-Poly1305 alone sends the hello of before and gets no choice. */
	expect_cipher(chacha, 1, aes_chacha, 2, HS_CIPHER_CHACHA20_POLY1305, 40, 106);
	/* A guest without AES-NI chooses ChaCha20-Poly1305, which everyone accepts. */
	expect_cipher(aes_chacha, 2, chacha, 1, HS_CIPHER_CHACHA20_POLY1305, 44, 109);
	expect_cipher(aes, 1, chacha, 1, HS_CIPHER_CHACHA20_POLY1305, 43, 109);
	ck_assert_str_eq(handshake_cipher_name(HS_CIPHER_AES256_GCM), "aes256-gcm");
	ck_assert_str_eq(handshake_cipher_name(HS_CIPHER_CHACHA20_POLY1305), "chacha20-poly1305");
}
END_TEST

/* AEGIS-256 is taken where both have it; a peer whose libsodium lacks it gets AES-256-GCM. */
START_TEST(test_cipher_aegis256_negotiated)
{
	expect_cipher(all, 3, all, 3, HS_CIPHER_AEGIS256, 40 + 5, 106 + 3);
	expect_cipher(all, 3, aes_chacha, 2, HS_CIPHER_AES256_GCM, 45, 109);
	expect_cipher(aes_chacha, 2, all, 3, HS_CIPHER_AES256_GCM, 44, 109);
	expect_cipher(all, 3, chacha, 1, HS_CIPHER_CHACHA20_POLY1305, 45, 109);
	ck_assert_str_eq(handshake_cipher_name(HS_CIPHER_AEGIS256), "aegis256");
	ck_assert_str_eq(handshake_cipher_name(0), "?");
}
END_TEST

/*
 * Id 3 agreed (both configured for it): a build whose libsodium has AEGIS-256 makes the channel,
 * one without it refuses with ENOTSUP rather than seal with another cipher's nonce and tag.
 */
START_TEST(test_cipher_aegis256_needs_libsodium)
{
	_cleanup_frame_io_ struct frame_io *io = NULL;
	_cleanup_channel_ struct channel *ch = NULL;
	struct fixture f;
	struct err e;
	int p[2];

	cipher_fixture(&f, all, 3, all, 3);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_CONTINUE);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_CONTINUE);
	ck_assert_int_eq(hs_side_pass(&f.h, &f.hc, &f.g), HS_DONE);
	ck_assert_uint_eq(handshake_cipher(f.h.hs), HS_CIPHER_AEGIS256);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(frame_io_new(p[0], &io, &e), 0);
#ifdef crypto_aead_aegis256_KEYBYTES
	ck_assert_int_eq(channel_from_handshake(io, f.h.hs, &ch, &e), 0);
	ck_assert_str_eq(channel_cipher_name(ch), "aegis256");
#else
	ck_assert_int_eq(channel_from_handshake(io, f.h.hs, &ch, &e), -ENOTSUP);
	ck_assert_msg(strstr(e.msg, "AEGIS-256") && strstr(e.msg, "1.0.19"), "%s", e.msg);
	ck_assert_ptr_null(ch);
#endif
	close(p[0]);
	close(p[1]);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_cipher_answer_without_choice)
{
	struct fixture f;

	/*
	 * A SERVER_HELLO without a choice is what a guest that predates the offer sends: the host
	 * takes ChaCha20-Poly1305. Cut from a guest that chose AES-256-GCM (a downgrade in
	 * transit), the guest's check of the host's signature fails.
	 */
	cipher_fixture(&f, aes_chacha, 2, aes_chacha, 2);
	hs_side_pass(&f.h, &f.hc, &f.g);
	ck_assert_int_eq(pass_edited(&f.g, &f.gc, &f.h, 3, NULL, 0, 0, 0), HS_CONTINUE);
	ck_assert_uint_eq(handshake_cipher(f.h.hs), HS_CIPHER_CHACHA20_POLY1305);
	ck_assert_int_lt(hs_side_pass(&f.h, &f.hc, &f.g), 0);
	ck_assert_int_eq(f.g.err.code, EBADMSG);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_cipher_choice_tampered)
{
	struct fixture f;

	/* The choice changed to ChaCha20-Poly1305 in transit: the signatures do not verify. */
	cipher_fixture(&f, aes_chacha, 2, aes_chacha, 2);
	hs_side_pass(&f.h, &f.hc, &f.g);
	ck_assert_int_eq(pass_edited(&f.g, &f.gc, &f.h, 0, NULL, 0, FRAME_HEADER_LEN + 108, 3),
	                 HS_CONTINUE);
	ck_assert_uint_eq(handshake_cipher(f.h.hs), HS_CIPHER_CHACHA20_POLY1305);
	ck_assert_int_lt(hs_side_pass(&f.h, &f.hc, &f.g), 0);
	ck_assert_int_eq(f.g.err.code, EBADMSG);
	fixture_dispose(&f);
	/* A choice the host did not offer, or one it never asked for: malformed. */
	cipher_fixture(&f, aes_chacha, 2, aes_chacha, 2);
	hs_side_pass(&f.h, &f.hc, &f.g);
	ck_assert_int_lt(pass_edited(&f.g, &f.gc, &f.h, 0, NULL, 0, FRAME_HEADER_LEN + 108, 4), 0);
	ck_assert_int_eq(f.h.err.code, EPROTO);
	fixture_dispose(&f);
	cipher_fixture(&f, chacha, 1, aes_chacha, 2);
	hs_side_pass(&f.h, &f.hc, &f.g);
	ck_assert_int_lt(pass_edited(&f.g, &f.gc, &f.h, 0, "\x01\x01\x01", 3, 0, 0), 0);
	ck_assert_int_eq(f.h.err.code, EPROTO);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_cipher_offer_stripped)
{
	struct fixture f;

	/* The guest answers the hello it got, whose hash is not the host's: ignored. */
	cipher_fixture(&f, aes_chacha, 2, aes_chacha, 2);
	ck_assert_int_eq(pass_edited(&f.h, &f.hc, &f.g, 4, NULL, 0, 0, 0), HS_CONTINUE);
	ck_assert_uint_eq(handshake_cipher(f.g.hs), HS_CIPHER_CHACHA20_POLY1305);
	ck_assert_uint_eq(next_len(&f.g, f.gc), 106);
	ck_assert_int_eq(hs_side_pass(&f.g, &f.gc, &f.h), HS_RESYNC);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_cipher_extensions_parsed)
{
	struct fixture f;

	/* Unknown extensions are skipped; an offer of AES-256-GCM after one is taken. */
	cipher_fixture(&f, chacha, 1, aes_chacha, 2);
	ck_assert_int_eq(pass_edited(&f.h, &f.hc, &f.g, 0, "\x09\x02xy\x01\x01\x02", 7, 0, 0),
	                 HS_CONTINUE);
	ck_assert_uint_eq(handshake_cipher(f.g.hs), HS_CIPHER_AES256_GCM);
	ck_assert_uint_eq(next_len(&f.g, f.gc), 109);
	fixture_dispose(&f);
	/*
	 * An extension longer than the hello, an empty or repeated offer, an offer of more than
	 * HS_CIPHERS_MAX (8) ids: refused as malformed.
	 */
	static const char *const bad[] = {"\x01\x05\x02", "\x01\x00", "\x01\x01\x02\x01\x01\x01",
	                                  "\x01", "\x01\x09\x02\x01\x01\x01\x01\x01\x01\x01\x01"};
	static const size_t bad_len[] = {3, 2, 6, 1, 11};
	for (size_t i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++) {
		cipher_fixture(&f, chacha, 1, aes_chacha, 2);
		ck_assert_int_lt(pass_edited(&f.h, &f.hc, &f.g, 0, bad[i], bad_len[i], 0, 0), 0);
		ck_assert_int_eq(f.g.err.code, EPROTO);
		fixture_dispose(&f);
	}
}
END_TEST

START_TEST(test_low_order_ephemeral_refused)
{
	struct fixture f;
	uint8_t wire[128];
	size_t n = FRAME_MARKER_LEN;

	fixture_init(&f, NULL, NULL);
	memcpy(wire, frame_marker, FRAME_MARKER_LEN);
	frame_put_header(wire + n, 8 + 32);
	n += FRAME_HEADER_LEN;
	memcpy(wire + n, "\x01SBXC\x01\x00\x01", 8);
	n += 8;
	memset(wire + n, 0, 32); /* the all-zero point */
	n += 32;
	ck_assert_int_lt(hs_side_feed(&f.g, wire, n), 0);
	ck_assert_ptr_nonnull(strstr(f.g.err.msg, "low-order"));
	fixture_dispose(&f);
}
END_TEST

static Suite *handshake_suite(void)
{
	Suite *s = suite_create("handshake");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_handshake_completes);
	tcase_add_test(tc, test_progress_counts_messages_not_noise);
	tcase_add_test(tc, test_fresh_keys_every_session);
	tcase_add_test(tc, test_version_highest_common);
	tcase_add_test(tc, test_version_none_in_common);
	tcase_add_test(tc, test_downgrade_detected);
	tcase_add_test(tc, test_host_key_not_authorized);
	tcase_add_test(tc, test_pinned_key_mismatch_signs_nothing);
	tcase_add_test(tc, test_tampered_server_hello);
	tcase_add_test(tc, test_tampered_host_auth);
	tcase_add_test(tc, test_tampered_guest_auth);
	tcase_add_test(tc, test_recorded_host_replayed_to_new_guest);
	tcase_add_test(tc, test_recorded_guest_replayed_to_new_host);
	tcase_add_test(tc, test_stale_bytes_before_the_new_session);
	tcase_add_test(tc, test_host_fails_when_guest_restarts_late);
	tcase_add_test(tc, test_malformed_hello_refused);
	tcase_add_test(tc, test_low_order_ephemeral_refused);
	tcase_add_test(tc, test_cipher_negotiated);
	tcase_add_test(tc, test_cipher_aegis256_negotiated);
	tcase_add_test(tc, test_cipher_aegis256_needs_libsodium);
	tcase_add_test(tc, test_cipher_answer_without_choice);
	tcase_add_test(tc, test_cipher_choice_tampered);
	tcase_add_test(tc, test_cipher_offer_stripped);
	tcase_add_test(tc, test_cipher_extensions_parsed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(handshake_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
