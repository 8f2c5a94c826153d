/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a long-lived session's supervisor looks for in a line of the CLI's output (framed and
 * scrubbed, session_lines.h): the end of a turn (`result`), or a tool call that waits for an
 * answer (`control_request` with `request.subtype` `can_use_tool`), its `request_id` and
 * `request.input`. Anything else, malformed JSON included, is "other": only passed on.
 */
#ifndef SA_SESSION_LIVE_EVENT_H
#define SA_SESSION_LIVE_EVENT_H

#include <json-c/json.h>
#include <stddef.h>

enum session_live_event_kind {
	SESSION_LIVE_EVENT_OTHER = 0,
	SESSION_LIVE_EVENT_RESULT,
	SESSION_LIVE_EVENT_CAN_USE_TOOL,
};

struct session_live_event {
	enum session_live_event_kind kind;
	char *request_id;   /* CAN_USE_TOOL: a copy, never empty; free() it */
	json_object *input; /* CAN_USE_TOOL: the request's input (a reference), or NULL */
};

/* Classify one line (its '\n' may be there). Returns 0, or -ENOMEM. */
int session_live_event_parse(const char *line, size_t len, struct session_live_event *ret);
void session_live_event_dispose(struct session_live_event *e);

#endif
