/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session_live_event_parse over arbitrary bytes (guest/session/session_live_event.c): a line of
 * the CLI's output, which the model's words shape. Besides memory errors it checks what the
 * supervisor relies on: a tool call always has a non-empty request id of at most 256 bytes,
 * and nothing else carries one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "session_live_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session_live_event e;

	if (session_live_event_parse((const char *)data, size, &e) < 0)
		return 0;
	if (e.kind == SESSION_LIVE_EVENT_CAN_USE_TOOL) {
		if (!e.request_id || !e.request_id[0] || strlen(e.request_id) > 256)
			abort();
	} else if (e.request_id || e.input) {
		abort();
	}
	session_live_event_dispose(&e);
	return 0;
}
