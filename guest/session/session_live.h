/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A long-lived session (docs/sessions.md, "Long-lived sessions"): one CLI started with
 * `--input-format stream-json`, its stdin held here, each user turn one JSON line on it, the
 * first one the prompt. Runs inside the detached supervisor, so the CLI and its stdin outlive
 * the daemon that asked for it; the daemon talks to it through DIR/control.sock
 * (SOCK_SEQPACKET, one JSON request and one JSON reply per connection, root only):
 *
 *   {"op": "send", "text": "..."}                     another user turn
 *   {"op": "answer", "request_id": "...", "allow": B, "message": "...", "interrupt": B}
 *   {"op": "cancel"}                                  SIGTERM to the CLI's group
 *   {"op": "diff"}                                    diff.patch written now
 *
 * answered {"ok": true, ...} or {"error": "...", "code": ERRNO}. Each can_use_tool
 * control_request the CLI prints is pending until answered, or denied once approval_timeout
 * seconds have passed. Turns sent and answers given become events of our own
 * ({"type": "sandbox", "subtype": "user" | "answer", ...}) in events.jsonl.
 */
#ifndef SA_SESSION_LIVE_H
#define SA_SESSION_LIVE_H

#include "err.h"
#include "session_job.h"

#define SESSION_LIVE_TURN_MAX (256 * 1024)     /* a user turn's text */
#define SESSION_LIVE_CONTROL_MAX (1024 * 1024) /* a control request */

/* Make fd's send buffer hold a whole control record (SESSION_LIVE_CONTROL_MAX). */
void session_live_socket_room(int fd);
#define SESSION_LIVE_PENDING_MAX 64
#define SESSION_LIVE_SOCKET "control.sock"

/* Run job as a long-lived session; job->prompt_fd holds the first turn. */
int session_live_run(struct session_job *job, struct err *err);

#endif
