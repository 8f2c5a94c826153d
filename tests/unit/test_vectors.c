/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protocol's test vectors (tests/data/protocol-vectors/v1.json, and v1-aes256gcm.json for a
 * session that agreed on AES-256-GCM; docs/protocol.md): a handshake and a few messages between
 * fixed keys with fixed ephemerals. Two checks of each:
 *   - the implementation, run with those keys, produces exactly the bytes in the file;
 *   - the file agrees with the protocol as documented, recomputed here with libsodium's raw
 *     primitives only (no code of ours): hashes, signatures, X25519, key derivation, AEAD.
 * SANDBOX_WRITE_VECTORS=1 rewrites the files from the implementation (review the diff!). The
 * AES-256-GCM file is checked only where the CPU has AES-NI (libsodium needs it).
 * tests/data/protocol-vectors/check.py is a third, independent check in Python.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "authkeys.h"
#include "channel.h"
#include "frame_io.h"
#include "handshake.h"
#include "hs_helpers.h"
#include "keys.h"
#include "msg.h"

/* [0] ChaCha20-Poly1305: the host offers nothing else; [1] AES-256-GCM: offered and chosen. */
static const char *const vector_files[] = {
    "tests/data/protocol-vectors/v1.json",
    "tests/data/protocol-vectors/v1-aes256gcm.json",
};
static const uint8_t chacha_only[] = {HS_CIPHER_CHACHA20_POLY1305};
static const uint8_t aes_first[] = {HS_CIPHER_AES256_GCM, HS_CIPHER_CHACHA20_POLY1305};

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put)
#define _cleanup_json_ _cleanup_(json_object_putp)

static void fill(uint8_t out[32], uint8_t first)
{
	for (int i = 0; i < 32; i++)
		out[i] = (uint8_t)(first + i);
}

static json_object *hex(const void *buf, size_t len)
{
	char *s = malloc(len * 2 + 1);
	json_object *o;

	sodium_bin2hex(s, len * 2 + 1, buf, len);
	o = json_object_new_string(s);
	free(s);
	return o;
}

static void add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

/* Read all bytes currently queued on a nonblocking fd. */
static size_t drain(int fd, uint8_t *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	while ((n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	return len;
}

struct message_spec {
	const char *from;
	uint16_t type;
	uint16_t flags;
	uint32_t stream;
	const char *json; /* NULL: no JSON part */
	const char *data;
};

static const struct message_spec messages[] = {
    {"host", MSG_HELLO, 0, 0, "{\"client\":\"sandbox-ctl\",\"version\":\"0.1.0\"}", NULL},
    {"guest", MSG_HELLO, 0, 0,
     "{\"agent\":\"sandbox-agent\",\"version\":\"0.1.0\",\"capabilities\":[\"secrets\",\"tree."
     "push\","
     "\"boot\",\"status\",\"logs\",\"stop\",\"runtime.read\"],\"max_payload\":1048576}",
     NULL},
    {"host", MSG_SECRETS_PUT, MSG_F_END, 1, "{\"name\":\"GITHUB_TOKEN\",\"scope\":\"fetch\"}",
     "ghp_exampleexampleexampleexample0000"},
    {"guest", MSG_OK, MSG_F_END, 1, "{\"name\":\"GITHUB_TOKEN\",\"scope\":\"fetch\"}", NULL},
    {"host", MSG_TREE_PUSH_DATA, 0, 3, NULL, "#!/bin/sh\necho hello\n"},
    {"guest", MSG_ERROR, MSG_F_END, 3,
     "{\"code\":22,\"class\":\"refused\",\"msg\":\"tree.push.data before tree.push.entry\"}", NULL},
    {"host", MSG_CLOSE, MSG_F_END, 0, NULL, NULL},
};

/* Run the implementation with the fixed keys; returns the vectors as JSON. */
static json_object *generate(bool aes)
{
	uint8_t hseed[32], gseed[32], he[32], ge[32], hepk[32], gepk[32];
	_cleanup_keypair_ struct keypair *host = NULL, *guest = NULL;
	_cleanup_authkeys_ struct authkeys *ak = NULL;
	struct hs_side h, g;
	size_t hc = 0, gc = 0;
	uint8_t htx[32], hrx[32];
	char fp[KEYS_FINGERPRINT_MAX], *line;
	json_object *v = json_object_new_object(), *list = json_object_new_array();
	struct err e;

	fill(hseed, 0x00);
	fill(gseed, 0x20);
	fill(he, 0x40);
	fill(ge, 0x60);
	crypto_scalarmult_base(hepk, he);
	crypto_scalarmult_base(gepk, ge);
	ck_assert_int_eq(keys_from_seed(hseed, &host, &e), 0);
	ck_assert_int_eq(keys_from_seed(gseed, &guest, &e), 0);
	ck_assert_int_eq(authkeys_new(NULL, NULL, &ak, &e), 0);
	ck_assert_int_eq(authkeys_add(ak, host->pk, NULL, &e), 0);
	/*
	 * v1.json: a host that offers ChaCha20-Poly1305 alone (the hello of before the offer);
	 * v1-aes256gcm.json: one that offers AES-256-GCM first, which the guest takes.
	 */
	hs_side_init(&h, &(struct hs_config){.role = HS_HOST,
	                                     .identity = host,
	                                     .ephemeral_secret = he,
	                                     .ciphers = aes ? aes_first : chacha_only,
	                                     .n_ciphers = aes ? 2 : 1});
	hs_side_init(&g, &(struct hs_config){.role = HS_GUEST,
	                                     .identity = guest,
	                                     .authorized = ak,
	                                     .ephemeral_secret = ge,
	                                     .ciphers = aes_first,
	                                     .n_ciphers = 2});
	hs_side_start(&h);
	hs_side_pass(&h, &hc, &g);
	hs_side_pass(&g, &gc, &h);
	ck_assert_int_eq(hs_side_pass(&h, &hc, &g), HS_DONE);
	ck_assert_int_eq(hs_side_pass(&g, &gc, &h), HS_DONE);

	add(v, "about",
	    json_object_new_string("sandbox-channel protocol v1 test vectors, see "
	                           "docs/protocol.md; all binary values in hex"));
	add(v, "version", json_object_new_int(1));
	add(v, "cipher", json_object_new_string(handshake_cipher_name(handshake_cipher(h.hs))));
	add(v, "marker", hex(frame_marker, FRAME_MARKER_LEN));
	add(v, "host_identity_seed", hex(hseed, 32));
	add(v, "host_identity_public", hex(host->pk, 32));
	line = keys_format_public(host->pk, "host");
	add(v, "host_public_line", json_object_new_string(line));
	free(line);
	keys_fingerprint(host->pk, fp);
	add(v, "host_fingerprint", json_object_new_string(fp));
	add(v, "guest_identity_seed", hex(gseed, 32));
	add(v, "guest_identity_public", hex(guest->pk, 32));
	keys_fingerprint(guest->pk, fp);
	add(v, "guest_fingerprint", json_object_new_string(fp));
	add(v, "host_ephemeral_secret", hex(he, 32));
	add(v, "host_ephemeral_public", hex(hepk, 32));
	add(v, "guest_ephemeral_secret", hex(ge, 32));
	add(v, "guest_ephemeral_public", hex(gepk, 32));
	add(v, "host_sends", hex(h.sent, h.sent_len));
	add(v, "guest_sends", hex(g.sent, g.sent_len));
	add(v, "session_id", hex(handshake_session_id(h.hs), HS_HASH_LEN));
	handshake_session_keys(h.hs, htx, hrx);
	add(v, "key_host_to_guest", hex(htx, 32));
	add(v, "key_guest_to_host", hex(hrx, 32));

	/* Messages: each side's channel writes into a socketpair we read raw. */
	{
		int hp[2], gp[2];
		struct frame_io *hio, *gio;
		struct channel *hch, *gch;

		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, hp), 0);
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, gp), 0);
		ck_assert_int_eq(frame_io_new(hp[0], &hio, &e), 0);
		ck_assert_int_eq(frame_io_new(gp[0], &gio, &e), 0);
		ck_assert_int_eq(channel_from_handshake(hio, h.hs, &hch, &e), 0);
		ck_assert_int_eq(channel_from_handshake(gio, g.hs, &gch, &e), 0);
		for (size_t i = 0; i < ELEMENTSOF(messages); i++) {
			const struct message_spec *ms = &messages[i];
			bool from_host = strcmp(ms->from, "host") == 0;
			struct msg m = {.type = ms->type, .flags = ms->flags, .stream = ms->stream};
			json_object *entry = json_object_new_object();
			static uint8_t frame[8192], plain[8192];
			size_t flen;
			ssize_t plen;

			if (ms->json)
				m.json = json_tokener_parse(ms->json);
			if (ms->data) {
				m.data = (const uint8_t *)ms->data;
				m.data_len = strlen(ms->data);
			}
			plen = msg_encode(&m, plain, sizeof(plain), &e);
			ck_assert_int_gt(plen, 0);
			ck_assert_int_eq(channel_send(from_host ? hch : gch, &m, 0, &e), 0);
			flen = drain(from_host ? hp[1] : gp[1], frame, sizeof(frame));
			add(entry, "from", json_object_new_string(ms->from));
			add(entry, "seq", json_object_new_int64((int64_t)get_be64(frame + 4)));
			add(entry, "type", json_object_new_string(msg_type_name(ms->type)));
			add(entry, "type_id", json_object_new_int(ms->type));
			add(entry, "flags", json_object_new_int(ms->flags));
			add(entry, "stream", json_object_new_int64(ms->stream));
			add(entry, "json", json_object_new_string(ms->json ? ms->json : ""));
			add(entry, "data",
			    hex(ms->data ? ms->data : "", ms->data ? strlen(ms->data) : 0));
			add(entry, "plaintext", hex(plain, (size_t)plen));
			add(entry, "frame", hex(frame, flen));
			json_object_array_add(list, entry);
			msg_dispose(&m);
		}
		channel_free(hch);
		channel_free(gch);
		frame_io_free(hio);
		frame_io_free(gio);
		close(hp[0]);
		close(hp[1]);
		close(gp[0]);
		close(gp[1]);
	}
	add(v, "messages", list);
	hs_side_dispose(&h);
	hs_side_dispose(&g);
	return v;
}

static json_object *load_vectors(int i)
{
	json_object *v = json_object_from_file(vector_files[i]);

	ck_assert_msg(v, "cannot read %s (run from the top of the repository)", vector_files[i]);
	return v;
}

/* The AES-256-GCM vectors need AES-NI to run the implementation or open a frame. */
static bool can_check(int i)
{
	return i == 0 || (sodium_init() >= 0 && crypto_aead_aes256gcm_is_available());
}

START_TEST(test_implementation_matches_vectors)
{
	_cleanup_json_ json_object *gen = NULL;
	_cleanup_json_ json_object *file = NULL;

	if (!can_check(_i))
		return;
	gen = generate(_i == 1);
	if (getenv("SANDBOX_WRITE_VECTORS")) {
		ck_assert_int_eq(json_object_to_file_ext(vector_files[_i], gen,
		                                         JSON_C_TO_STRING_PRETTY |
		                                             JSON_C_TO_STRING_NOSLASHESCAPE),
		                 0);
	}
	file = load_vectors(_i);
	json_object_object_foreach(gen, key, val)
	{
		json_object *other = NULL;
		ck_assert_msg(json_object_object_get_ex(file, key, &other), "%s missing", key);
		ck_assert_msg(json_object_equal(val, other),
		              "%s differs: implementation %s, file %s", key,
		              json_object_to_json_string(val), json_object_to_json_string(other));
	}
	ck_assert_int_eq(json_object_object_length(gen), json_object_object_length(file));
}
END_TEST

/* ---- the second check: the documented formulas with raw libsodium ---- */

static size_t unhex(json_object *v, const char *key, uint8_t *out, size_t cap)
{
	json_object *s;
	size_t len = 0;

	ck_assert_msg(json_object_object_get_ex(v, key, &s), "%s missing", key);
	ck_assert_int_eq(sodium_hex2bin(out, cap, json_object_get_string(s),
	                                (size_t)json_object_get_string_len(s), NULL, &len, NULL),
	                 0);
	return len;
}

static void blake2b(uint8_t out[32], const uint8_t *key, size_t klen, const uint8_t *a, size_t alen,
                    const uint8_t *b, size_t blen)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, key, klen, 32);
	crypto_generichash_update(&st, a, alen);
	crypto_generichash_update(&st, b, blen);
	crypto_generichash_final(&st, out, 32);
}

static void expect_hex(json_object *v, const char *key, const uint8_t *want, size_t len)
{
	uint8_t got[256];

	ck_assert_uint_eq(unhex(v, key, got, sizeof(got)), len);
	ck_assert_msg(memcmp(got, want, len) == 0, "%s does not follow the documented formula",
	              key);
}

/* Split "marker, frame, frame" into its two frames. */
static void two_frames(const uint8_t *wire, size_t len, const uint8_t **f1, size_t *l1,
                       const uint8_t **f2, size_t *l2)
{
	ck_assert_mem_eq(wire, "\xff\xffsandbox-chan\r\n", 16);
	*f1 = wire + 16;
	*l1 = 4 + get_be32(*f1);
	*f2 = *f1 + *l1;
	*l2 = 4 + get_be32(*f2);
	ck_assert_uint_eq(16 + *l1 + *l2, len);
}

START_TEST(test_vectors_follow_the_document)
{
	_cleanup_json_ json_object *v = load_vectors(_i);
	bool aes = _i == 1;
	uint8_t hseed[32], gseed[32], hpk[32], gpk[32], hsk[64], gsk[64], he[32], ge[32];
	uint8_t hepk[32], gepk[32], hwire[1024], gwire[1024], dh1[32], dh2[32];
	uint8_t t[2048], th[32], k[32], sid[32], kh2g[32], kg2h[32], msgbuf[128];
	const uint8_t *ch, *ha, *sh, *ga;
	size_t chl, hal, shl, gal, hl, gl, tl = 0, n;
	json_object *list;

	unhex(v, "host_identity_seed", hseed, 32);
	unhex(v, "guest_identity_seed", gseed, 32);
	crypto_sign_seed_keypair(hpk, hsk, hseed);
	crypto_sign_seed_keypair(gpk, gsk, gseed);
	expect_hex(v, "host_identity_public", hpk, 32);
	expect_hex(v, "guest_identity_public", gpk, 32);
	unhex(v, "host_ephemeral_secret", he, 32);
	unhex(v, "guest_ephemeral_secret", ge, 32);
	crypto_scalarmult_base(hepk, he);
	crypto_scalarmult_base(gepk, ge);
	hl = unhex(v, "host_sends", hwire, sizeof(hwire));
	gl = unhex(v, "guest_sends", gwire, sizeof(gwire));
	two_frames(hwire, hl, &ch, &chl, &ha, &hal);
	two_frames(gwire, gl, &sh, &shl, &ga, &gal);

	/* CLIENT_HELLO: 01 "SBXC" n=1 0001 e_H [offer: 01 02 02 01] */
	ck_assert_uint_eq(chl, 4 + 40 + (aes ? 4 : 0));
	ck_assert_mem_eq(ch + 4, "\x01SBXC\x01\x00\x01", 8);
	ck_assert_mem_eq(ch + 12, hepk, 32);
	if (aes)
		ck_assert_mem_eq(ch + 44, "\x01\x02\x02\x01", 4);
	/* SERVER_HELLO: 02 "SBXC" H(CH) 0001 n=1 0001 e_G S_G [choice: 01 01 02] */
	ck_assert_uint_eq(shl, 4 + 106 + (aes ? 3 : 0));
	if (aes)
		ck_assert_mem_eq(sh + 110, "\x01\x01\x02", 3);
	ck_assert_mem_eq(sh + 4, "\x02SBXC", 5);
	blake2b(th, NULL, 0, ch, chl, NULL, 0);
	ck_assert_mem_eq(sh + 9, th, 32);
	ck_assert_mem_eq(sh + 41, "\x00\x01\x01\x00\x01", 5);
	ck_assert_mem_eq(sh + 46, gepk, 32);
	ck_assert_mem_eq(sh + 78, gpk, 32);
	/* HOST_AUTH: 03 S_H sig(label || H(CH || SH || HA[0..37))) */
	ck_assert_uint_eq(hal, 4 + 97);
	ck_assert_uint_eq(ha[4], 3);
	ck_assert_mem_eq(ha + 5, hpk, 32);
	memcpy(t, ch, chl);
	tl = chl;
	memcpy(t + tl, sh, shl);
	tl += shl;
	blake2b(th, NULL, 0, t, tl, ha, 37);
	n = strlen("sandbox-channel v1 host auth");
	memcpy(msgbuf, "sandbox-channel v1 host auth", n);
	memcpy(msgbuf + n, th, 32);
	ck_assert_int_eq(crypto_sign_verify_detached(ha + 37, msgbuf, n + 32, hpk), 0);
	memcpy(t + tl, ha, hal);
	tl += hal;
	/* GUEST_AUTH: 04 sig(label || H(CH || SH || HA || GA[0..5))) */
	ck_assert_uint_eq(gal, 4 + 65);
	ck_assert_uint_eq(ga[4], 4);
	blake2b(th, NULL, 0, t, tl, ga, 5);
	n = strlen("sandbox-channel v1 guest auth");
	memcpy(msgbuf, "sandbox-channel v1 guest auth", n);
	memcpy(msgbuf + n, th, 32);
	ck_assert_int_eq(crypto_sign_verify_detached(ga + 5, msgbuf, n + 32, gpk), 0);
	memcpy(t + tl, ga, gal);
	tl += gal;
	/* Session id and keys. */
	blake2b(sid, NULL, 0, t, tl, NULL, 0);
	expect_hex(v, "session_id", sid, 32);
	ck_assert_int_eq(crypto_scalarmult(dh1, he, gepk), 0);
	ck_assert_int_eq(crypto_scalarmult(dh2, ge, hepk), 0);
	ck_assert_mem_eq(dh1, dh2, 32);
	blake2b(kh2g, dh1, 32, (const uint8_t *)"sandbox-channel v1 host->guest", 30, sid, 32);
	blake2b(kg2h, dh1, 32, (const uint8_t *)"sandbox-channel v1 guest->host", 30, sid, 32);
	expect_hex(v, "key_host_to_guest", kh2g, 32);
	expect_hex(v, "key_guest_to_host", kg2h, 32);

	/* Every message frame opens with the documented nonce and authenticated data. */
	if (!can_check(_i))
		return;
	ck_assert(json_object_object_get_ex(v, "messages", &list));
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *m = json_object_array_get_idx(list, i), *from;
		static uint8_t frame[8192], plain[8192], want[8192];
		uint8_t nonce[12] = {0};
		unsigned long long mlen;
		size_t fl, wl;
		uint32_t jlen;

		json_object_object_get_ex(m, "from", &from);
		fl = unhex(m, "frame", frame, sizeof(frame));
		wl = unhex(m, "plaintext", want, sizeof(want));
		ck_assert_uint_eq(get_be32(frame), fl - 4);
		memcpy(nonce + 4, frame + 4, 8);
		memcpy(k, strcmp(json_object_get_string(from), "host") == 0 ? kh2g : kg2h, 32);
		if (aes)
			ck_assert_int_eq(crypto_aead_aes256gcm_decrypt(plain, &mlen, NULL,
			                                               frame + 12, fl - 12, frame,
			                                               12, nonce, k),
			                 0);
		else
			ck_assert_int_eq(
			    crypto_aead_chacha20poly1305_ietf_decrypt(
			        plain, &mlen, NULL, frame + 12, fl - 12, frame, 12, nonce, k),
			    0);
		ck_assert_uint_eq(mlen, wl);
		ck_assert_mem_eq(plain, want, wl);
		/* type | flags | stream | json_len | json | data */
		jlen = get_be32(plain + 8);
		{
			json_object *f;
			json_object_object_get_ex(m, "type_id", &f);
			ck_assert_int_eq(get_be16(plain), json_object_get_int(f));
			json_object_object_get_ex(m, "flags", &f);
			ck_assert_int_eq(get_be16(plain + 2), json_object_get_int(f));
			json_object_object_get_ex(m, "stream", &f);
			ck_assert_int_eq(get_be32(plain + 4), json_object_get_int64(f));
			json_object_object_get_ex(m, "json", &f);
			ck_assert_uint_eq(jlen, (size_t)json_object_get_string_len(f));
			ck_assert_mem_eq(plain + 12, json_object_get_string(f), jlen);
		}
		{
			uint8_t data[8192];
			size_t dl = unhex(m, "data", data, sizeof(data));
			ck_assert_uint_eq(wl, 12 + jlen + dl);
			ck_assert_mem_eq(plain + 12 + jlen, data, dl);
		}
	}
}
END_TEST

static Suite *vectors_suite(void)
{
	Suite *s = suite_create("vectors");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_implementation_matches_vectors, 0, 2);
	tcase_add_loop_test(tc, test_vectors_follow_the_document, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vectors_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
