/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running the handshake (handshake.h) over a frame_io: resync mode with the handshake's frame
 * limit, a byte budget and a deadline, so a peer that never authenticates costs at most
 * CHANNEL_HANDSHAKE_MAX_BYTES and timeout_ms before the caller closes it.
 */
#include "channel.h"

#include <errno.h>
#include <string.h>

static int write_out(struct frame_io *io, const struct hs_output *out, int64_t deadline,
                     struct err *err)
{
	if (out->len == 0)
		return 0;
	return frame_io_write(io, out->buf, out->len, deadline, err);
}

int channel_handshake_pump(struct frame_io *io, struct handshake *hs, int64_t read_deadline,
                           int64_t write_deadline, const struct channel_peer_check *check,
                           struct channel **ret, struct err *err)
{
	struct hs_output out;

	for (;;) {
		enum frame_event ev;
		const uint8_t *body;
		size_t len;
		int r;

		r = frame_io_next(io, read_deadline, &ev, err);
		if (r == -ETIMEDOUT)
			return -ETIMEDOUT;
		if (r < 0)
			return err_wrap(err, "handshake");
		if (r == 0)
			return err_set(err, ERR_FAILED, ECONNRESET,
			               "the peer closed the connection during the handshake");
		if (ev == FRAME_EV_MARKER) {
			r = handshake_on_marker(hs, err);
			if (r < 0)
				return r;
			continue;
		}
		body = frame_decoder_body(&io->dec, &len);
		out.len = 0;
		r = handshake_on_frame(hs, body, len, &out, err);
		if (check && handshake_peer_key(hs)) {
			if (r < 0) {
				struct err werr;
				(void)write_out(io, &out, write_deadline, &werr); /* a REFUSE */
				check->check(check->data, handshake_peer_key(hs), true, err);
				return err_ret(err);
			}
			if (out.len > 0 &&
			    check->check(check->data, handshake_peer_key(hs), false, err) < 0)
				return err_ret(err);
		}
		if (out.len > 0) {
			struct err werr;
			int w = write_out(io, &out, write_deadline, &werr);
			if (r >= 0 && w < 0) {
				*err = werr;
				return err_wrap(err, "handshake");
			}
		}
		if (r < 0)
			return r;
		if (r == HS_RESYNC)
			frame_decoder_set_mode(&io->dec, FRAME_HANDSHAKE_MAX, true);
		else if (r == HS_DONE)
			return channel_from_handshake(io, hs, ret, err) < 0 ? err_ret(err) : 1;
	}
}

/* The blocking driver: pump until done, bounded by one deadline. */
static int drive(struct frame_io *io, struct handshake *hs, int64_t deadline, int timeout_ms,
                 const struct channel_peer_check *check, struct channel **ret, struct err *err)
{
	int r = channel_handshake_pump(io, hs, deadline, deadline, check, ret, err);

	if (r == -ETIMEDOUT)
		return err_set(err, ERR_FAILED, ETIMEDOUT,
		               "the handshake did not complete within %d ms", timeout_ms);
	return r < 0 ? r : 0;
}

void channel_handshake_prepare(struct frame_io *io)
{
	frame_decoder_set_mode(&io->dec, FRAME_HANDSHAKE_MAX, true);
	frame_io_set_budget(io, CHANNEL_HANDSHAKE_MAX_BYTES);
}

int channel_handshake_host(struct frame_io *io, const struct keypair *host_key,
                           const uint8_t *pinned_guest_key, int timeout_ms, struct channel **ret,
                           struct err *err)
{
	return channel_handshake_host_checked(io, host_key, pinned_guest_key, NULL, timeout_ms, ret,
	                                      err);
}

int channel_handshake_host_checked(struct frame_io *io, const struct keypair *host_key,
                                   const uint8_t *pinned_guest_key,
                                   const struct channel_peer_check *check, int timeout_ms,
                                   struct channel **ret, struct err *err)
{
	struct hs_config cfg = {
	    .role = HS_HOST,
	    .identity = host_key,
	    .expected_peer = pinned_guest_key,
	};
	_cleanup_hs_ struct handshake *hs = NULL;
	int64_t deadline = frame_io_deadline(timeout_ms);
	struct hs_output out;
	int r;

	r = handshake_new(&cfg, &hs, err);
	if (r < 0)
		return r;
	channel_handshake_prepare(io);
	r = handshake_start(hs, &out, err);
	if (r < 0)
		return r;
	r = write_out(io, &out, deadline, err);
	if (r < 0)
		return err_wrap(err, "handshake");
	return drive(io, hs, deadline, timeout_ms, check, ret, err);
}

int channel_handshake_guest(struct frame_io *io, const struct keypair *guest_key,
                            struct authkeys *authorized, int timeout_ms, struct channel **ret,
                            char *ret_fingerprint, struct err *err)
{
	struct hs_config cfg = {
	    .role = HS_GUEST,
	    .identity = guest_key,
	    .authorized = authorized,
	};
	_cleanup_hs_ struct handshake *hs = NULL;
	int64_t deadline = frame_io_deadline(timeout_ms);
	const uint8_t *peer;
	int r;

	if (ret_fingerprint)
		ret_fingerprint[0] = '\0';
	if (!authorized)
		return err_set(err, ERR_FAILED, EINVAL, "handshake: no authorized keys given");
	if (authkeys_has_sources(authorized)) {
		r = authkeys_reload(authorized, err);
		if (r < 0)
			return r;
	}
	r = handshake_new(&cfg, &hs, err);
	if (r < 0)
		return r;
	channel_handshake_prepare(io);
	r = drive(io, hs, deadline, timeout_ms, NULL, ret, err);
	peer = handshake_peer_key(hs);
	if (peer && ret_fingerprint)
		keys_fingerprint(peer, ret_fingerprint);
	return r;
}
