/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Before a coding session starts (both faces: sandbox-claude and the daemon's session.start):
 * the sandbox's confinement must have been verified (`sandbox-ctl verify`, docs/isolation.md),
 * unless the caller said --dangerously-no-sandbox.
 */
#ifndef SA_SESSION_CONFINE_H
#define SA_SESSION_CONFINE_H

#include <stdbool.h>

#include "err.h"

/*
 * 0 when the last verification recorded in /run/sandbox-agent/confinement.json passed, or
 * when dangerously_no_sandbox is true (the caller then says so in its answer and the session's
 * status: `"sandbox": "unverified (--dangerously-no-sandbox)"`). Otherwise ERR_REFUSED with a
 * message that says what to run.
 */
int session_confine_check(bool dangerously_no_sandbox, struct err *err);
/*
 * Where the record is: $SANDBOX_CONFINEMENT_RECORD (the daemon names the one its verify wrote,
 * STATE_DIR/confinement.json), else /run/sandbox-agent/confinement.json.
 */
#define SESSION_CONFINE_RECORD_ENV "SANDBOX_CONFINEMENT_RECORD"
const char *session_confine_record_path(void);
/* What a start's answer says of the sandbox: "verified" or "unverified (...)". */
const char *session_confine_word(bool dangerously_no_sandbox);
/* The same with the record at path (tests, another state directory). */
int session_confine_check_at(const char *path, bool dangerously_no_sandbox, struct err *err);

#endif
