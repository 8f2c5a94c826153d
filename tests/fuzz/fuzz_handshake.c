/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handshake fed arbitrary bytes, as an unauthenticated peer would send them: the guest's
 * side (first byte even) or the host's side after its hello (first byte odd), a host that
 * offers ChaCha20-Poly1305 alone (bit 1 of the first byte clear: the vectors' hello) or the
 * ciphers of this machine (set); the guest accepts the ciphers of this machine. Keys and
 * ephemerals are those of the test vectors (tests/data/protocol-vectors/v1.json), so the
 * vectors' bytes complete a handshake and the fuzzer starts from a valid session: what follows
 * the handshake goes through the encrypted channel (replay, reordering, tampering, truncation).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authkeys.h"
#include "channel.h"
#include "frame.h"
#include "frame_io.h"
#include "handshake.h"
#include "keys.h"
#include "msg.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct keypair *host_key, *guest_key;
static struct authkeys *authorized;
static uint8_t host_eph[32], guest_eph[32];

static void fill(uint8_t out[32], uint8_t first)
{
	for (int i = 0; i < 32; i++)
		out[i] = (uint8_t)(first + i);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t seed[32];
	struct err e;

	fill(seed, 0x00);
	if (keys_from_seed(seed, &host_key, &e) < 0)
		abort();
	fill(seed, 0x20);
	if (keys_from_seed(seed, &guest_key, &e) < 0)
		abort();
	fill(host_eph, 0x40);
	fill(guest_eph, 0x60);
	if (authkeys_new(NULL, NULL, &authorized, &e) < 0 ||
	    authkeys_add(authorized, host_key->pk, "vectors", &e) < 0)
		abort();
	return 0;
}

/* The session after the handshake: the rest of the input through a pipe into channel_recv. */
static void run_session(const struct handshake *hs, const uint8_t *rest, size_t len)
{
	struct frame_io *io = NULL;
	struct channel *ch = NULL;
	struct err e;
	int p[2];

	if (len > 60000)
		len = 60000; /* stays within a pipe's buffer */
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		abort();
	if (len && write(p[1], rest, len) != (ssize_t)len)
		abort();
	close(p[1]);
	if (frame_io_new(p[0], &io, &e) < 0 || channel_from_handshake(io, hs, &ch, &e) < 0)
		abort();
	for (int i = 0; i < 256; i++) {
		struct msg m;
		int r = channel_recv(ch, &m, 0, &e);
		if (r != 1)
			break;
		msg_dispose(&m);
	}
	channel_free(ch);
	frame_io_free(io);
	close(p[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t chacha_only[] = {HS_CIPHER_CHACHA20_POLY1305};
	struct hs_config cfg = {0};
	struct frame_decoder d;
	struct hs_output out;
	struct handshake *hs = NULL;
	struct err e;
	size_t off = 0;
	int r = HS_CONTINUE;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		cfg = (struct hs_config){
		    .role = HS_HOST, .identity = host_key, .ephemeral_secret = host_eph};
		if (!(data[0] & 2)) {
			cfg.ciphers = chacha_only;
			cfg.n_ciphers = 1;
		}
	} else {
		cfg = (struct hs_config){.role = HS_GUEST,
		                         .identity = guest_key,
		                         .authorized = authorized,
		                         .ephemeral_secret = guest_eph};
	}
	data++;
	size--;
	if (handshake_new(&cfg, &hs, &e) < 0)
		abort();
	if (cfg.role == HS_HOST && handshake_start(hs, &out, &e) < 0)
		abort();
	frame_decoder_init(&d, FRAME_HANDSHAKE_MAX, true);
	while (off < size && r >= 0 && r != HS_DONE) {
		enum frame_event ev;
		ssize_t n = frame_decoder_feed(&d, data + off, size - off, &ev, &e);
		const uint8_t *body;
		size_t blen;

		if (n < 0)
			abort(); /* resync mode refuses nothing */
		off += (size_t)n;
		if (ev == FRAME_EV_MARKER) {
			r = handshake_on_marker(hs, &e);
		} else if (ev == FRAME_EV_FRAME) {
			body = frame_decoder_body(&d, &blen);
			r = handshake_on_frame(hs, body, blen, &out, &e);
			if (out.len > sizeof(out.buf))
				abort();
			if (r == HS_RESYNC)
				frame_decoder_set_mode(&d, FRAME_HANDSHAKE_MAX, true);
		}
		if (r < 0 && e.msg[0] == '\0')
			abort(); /* every failure says why */
	}
	if (r == HS_DONE) {
		if (!handshake_peer_key(hs))
			abort();
		run_session(hs, data + off, size - off);
	}
	frame_decoder_dispose(&d);
	handshake_free(hs);
	return 0;
}
