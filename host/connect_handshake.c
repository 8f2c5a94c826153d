/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's handshake with the pin policy of sandbox-ctl. It runs the handshake state machine
 * (handshake.h) itself, like channel_handshake_host(), so that it can look at the guest's key
 * between SERVER_HELLO and HOST_AUTH: an instance without a pin gets no signature unless the
 * caller accepts new keys, and a failure says whether the key changed (exit 4) or the
 * connection or authentication failed (exit 3).
 */
#include "connect_session.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "pins.h"

/* The pins file's directory, made 0700 when missing (~/.config/sandbox-ctl). */
static int make_parent(const char *path, struct err *err)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return err_oom(err);
	return file_mkdir_p(dirname(copy), 0700, err);
}

/* A failure of the connection or the authentication, with context: exit 3. */
static int broke(struct err *err, const char *context)
{
	err_wrap(err, "%s", context);
	return CTL_EXIT_CONNECT;
}

static int write_out(struct frame_io *io, const struct hs_output *out, int64_t deadline,
                     struct err *err)
{
	if (out->len == 0)
		return 0;
	return frame_io_write(io, out->buf, out->len, deadline, err);
}

/* The pin verdict once the guest proved its key. */
static int pin_after(const struct session_pin_policy *p, bool pinned, const uint8_t *pk,
                     enum session_pin *ret_pin, struct err *err)
{
	int r;

	if (pinned && !p->replace) {
		*ret_pin = SESSION_PIN_MATCH;
		return 0;
	}
	if (make_parent(p->pins_path, err) < 0)
		return broke(err, "cannot pin the guest's key");
	r = pins_verify(p->pins_path, p->instance, pk,
	                PINS_ACCEPT_NEW | (p->replace ? PINS_REPLACE : 0), err);
	if (r < 0)
		/* Another sandbox-ctl pinned a different key meanwhile. */
		return err->code == EKEYREJECTED ? CTL_EXIT_KEY_CHANGED : CTL_EXIT_CONNECT;
	*ret_pin = r == PINS_ADDED      ? SESSION_PIN_ADDED
	           : r == PINS_REPLACED ? SESSION_PIN_REPLACED
	                                : SESSION_PIN_MATCH;
	return 0;
}

int connect_handshake(struct frame_io *io, const struct keypair *host_key,
                      const struct session_pin_policy *p, int timeout_ms, struct channel **ret,
                      enum session_pin *ret_pin, struct err *err)
{
	uint8_t pin[KEYS_PUBLIC_LEN];
	struct hs_config cfg = {.role = HS_HOST, .identity = host_key};
	_cleanup_hs_ struct handshake *hs = NULL;
	int64_t deadline = frame_io_deadline(timeout_ms);
	struct channel *ch = NULL;
	struct hs_output out;
	bool pinned;
	int r;

	r = pins_lookup(p->pins_path, p->instance, pin, err);
	if (r < 0)
		return broke(err, "cannot read the pinned guest keys");
	pinned = r == 1;
	if (pinned && !p->replace)
		cfg.expected_peer = pin;
	if (handshake_new(&cfg, &hs, err) < 0)
		return CTL_EXIT_CONNECT;
	frame_decoder_set_mode(&io->dec, FRAME_HANDSHAKE_MAX, true);
	frame_io_set_budget(io, CHANNEL_HANDSHAKE_MAX_BYTES);
	if (handshake_start(hs, &out, err) < 0 || write_out(io, &out, deadline, err) < 0)
		return broke(err, "handshake");

	for (;;) {
		enum frame_event ev;
		const uint8_t *body, *peer;
		size_t len;

		r = frame_io_next(io, deadline, &ev, err);
		if (r == -ETIMEDOUT) {
			err_reword(
			    err,
			    "the handshake did not complete within %d ms (is the agent serving "
			    "this address?)",
			    timeout_ms);
			return CTL_EXIT_CONNECT;
		}
		if (r < 0)
			return broke(err, "handshake");
		if (r == 0) {
			err_set(err, ERR_FAILED, ECONNRESET,
			        "the agent closed the connection during the handshake");
			return CTL_EXIT_CONNECT;
		}
		if (ev == FRAME_EV_MARKER) {
			if (handshake_on_marker(hs, err) < 0)
				return CTL_EXIT_CONNECT;
			continue;
		}
		body = frame_decoder_body(&io->dec, &len);
		r = handshake_on_frame(hs, body, len, &out, err);
		peer = handshake_peer_key(hs);
		if (r < 0) {
			struct err werr;
			char got[KEYS_FINGERPRINT_MAX], want[KEYS_FINGERPRINT_MAX];
			(void)write_out(io, &out, deadline, &werr); /* a REFUSE, if any */
			if (peer && pinned && memcmp(peer, pin, KEYS_PUBLIC_LEN) != 0) {
				keys_fingerprint(peer, got);
				keys_fingerprint(pin, want);
				err_reword(
				    err,
				    "the key of instance %s changed: pinned %s, the guest offers "
				    "%s; if the instance was rebuilt, connect once with "
				    "--replace-guest-key",
				    p->instance, want, got);
				return CTL_EXIT_KEY_CHANGED;
			}
			return CTL_EXIT_CONNECT;
		}
		if (peer && !pinned && !p->accept_new && !p->replace && out.len > 0) {
			/* The guest showed its key; we would sign next. We do not. */
			char got[KEYS_FINGERPRINT_MAX];
			keys_fingerprint(peer, got);
			err_set(err, ERR_FAILED, EKEYREJECTED,
			        "no guest key is pinned for instance %s (the guest offers %s): "
			        "if that is the guest you expect, connect once with "
			        "--accept-new-guest-key",
			        p->instance, got);
			return CTL_EXIT_CONNECT;
		}
		if (write_out(io, &out, deadline, err) < 0)
			return broke(err, "handshake");
		if (r == HS_RESYNC) {
			frame_decoder_set_mode(&io->dec, FRAME_HANDSHAKE_MAX, true);
			continue;
		}
		if (r == HS_DONE)
			break;
	}
	if (channel_from_handshake(io, hs, &ch, err) < 0)
		return CTL_EXIT_CONNECT;
	r = pin_after(p, pinned, channel_peer_key(ch), ret_pin, err);
	if (r != 0) {
		channel_free(ch);
		return r;
	}
	*ret = ch;
	return 0;
}
