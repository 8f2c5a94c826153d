/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session.* (docs/protocol.md "Coding sessions"): long-lived Claude Code sessions. The
 * session itself runs in the session engine's detached supervisor (guest/session/
 * session_live.h), started as `sandbox-claude session-start`; these operations write its
 * request, start it, talk to it through its control socket, and read its files, so they work
 * the same for a session a previous daemon started.
 */
#ifndef SA_SERVE_OPS_SESSION_H
#define SA_SERVE_OPS_SESSION_H

#include <stdbool.h>

#include "err.h"
#include "msg.h"
#include "serve_types.h"

/* What session.start asks for, as decided on by serve_ops_session_start_decide(). */
struct serve_session_start {
	const char *permission_mode; /* "ask", "accept_edits" or "skip" */
	bool dangerously_no_sandbox;
	const char *mode; /* "api_key" or "sandbox_login" */
};

/*
 * The one place a session's start is allowed or refused (ERR_REFUSED with the reason): only in
 * a sandbox whose confinement the record (STATE_DIR/confinement.json, written by `verify`)
 * says passed, unless `dangerously_no_sandbox`, which the session's status.json and the answer
 * then say (session_confine.h).
 */
int serve_ops_session_start_decide(const struct serve_session_start *s, const char *record,
                                   struct err *err);

int serve_ops_session_start(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_session_send(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_session_answer(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_session_cancel(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_session_events(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_session_diff(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_session_list(struct conn *c, struct stream *st, const struct msg *m);

#endif
