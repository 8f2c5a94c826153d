/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's handshake with the pin policy of sandbox-ctl, run by the channel's one handshake
 * driver (channel_handshake_host_checked()), whose check looks at the guest's key between
 * SERVER_HELLO and HOST_AUTH: an instance without a pin gets no signature unless the
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

/* What the pin policy needs while the handshake runs, and its verdict. */
struct pin_check {
	const struct session_pin_policy *p;
	const uint8_t *pin; /* the pinned key, or NULL */
	int exit;           /* 0, CTL_EXIT_CONNECT or CTL_EXIT_KEY_CHANGED */
};

/*
 * The guest proved its key: an instance without a pin gets no signature from us unless the
 * caller accepts new keys. After a failure: a key other than the pinned one is a changed key.
 */
static int pin_check(void *data, const uint8_t *peer, bool failed, struct err *err)
{
	struct pin_check *pc = data;
	const struct session_pin_policy *p = pc->p;
	char got[KEYS_FINGERPRINT_MAX], want[KEYS_FINGERPRINT_MAX];

	keys_fingerprint(peer, got);
	if (failed) {
		if (pc->pin && memcmp(peer, pc->pin, KEYS_PUBLIC_LEN) != 0) {
			keys_fingerprint(pc->pin, want);
			pc->exit = CTL_EXIT_KEY_CHANGED;
			return err_reword(
			    err,
			    "the key of instance %s changed: pinned %s, the guest offers "
			    "%s; if the instance was rebuilt, connect once with "
			    "--replace-guest-key",
			    p->instance, want, got);
		}
		return err_ret(err);
	}
	if (!pc->pin && !p->accept_new && !p->replace)
		return err_set(err, ERR_FAILED, EKEYREJECTED,
		               "no guest key is pinned for instance %s (the guest offers %s): "
		               "if that is the guest you expect, connect once with "
		               "--accept-new-guest-key",
		               p->instance, got);
	return 0;
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
	struct pin_check pc = {.p = p};
	struct channel_peer_check check = {.check = pin_check, .data = &pc};
	struct channel *ch = NULL;
	bool pinned;
	int r;

	r = pins_lookup(p->pins_path, p->instance, pin, err);
	if (r < 0)
		return broke(err, "cannot read the pinned guest keys");
	pinned = r == 1;
	if (pinned)
		pc.pin = pin;
	r = channel_handshake_host_checked(io, host_key, pinned && !p->replace ? pin : NULL, &check,
	                                   timeout_ms, &ch, err);
	if (r < 0) {
		if (pc.exit)
			return pc.exit;
		if (err->code == ETIMEDOUT)
			err_reword(
			    err,
			    "the handshake did not complete within %d ms (is the agent serving "
			    "this address?)",
			    timeout_ms);
		else if (err->code == ECONNRESET)
			err_reword(err, "the agent closed the connection during the handshake");
		return CTL_EXIT_CONNECT;
	}
	r = pin_after(p, pinned, channel_peer_key(ch), ret_pin, err);
	if (r != 0) {
		channel_free(ch);
		return r;
	}
	*ret = ch;
	return 0;
}
