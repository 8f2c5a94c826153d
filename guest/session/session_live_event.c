/* SPDX-License-Identifier: Apache-2.0 */
#include "session_live_event.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json_get.h"
#include "json_strict.h"

#define REQUEST_ID_MAX 256

int session_live_event_parse(const char *line, size_t len, struct session_live_event *ret)
{
	_cleanup_json_ json_object *o = NULL;
	json_object *req, *input;
	enum json_tokener_error jerr;
	const char *type, *id, *sub;
	size_t off;

	*ret = (struct session_live_event){0};
	if (len && line[len - 1] == '\n')
		len--;
	if (len < 2 || line[0] != '{' ||
	    json_strict_parse(line, len, &o, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(o, json_type_object) || !(type = json_get_string(o, "type")))
		return 0;
	if (strcmp(type, "result") == 0) {
		ret->kind = SESSION_LIVE_EVENT_RESULT;
		return 0;
	}
	if (strcmp(type, "control_request") != 0 ||
	    !json_object_object_get_ex(o, "request", &req) ||
	    !json_object_is_type(req, json_type_object) ||
	    !(sub = json_get_string(req, "subtype")) || strcmp(sub, "can_use_tool") != 0 ||
	    !(id = json_get_string(o, "request_id")) || !id[0] || strlen(id) > REQUEST_ID_MAX)
		return 0;
	ret->request_id = strdup(id);
	if (!ret->request_id)
		return -ENOMEM;
	ret->kind = SESSION_LIVE_EVENT_CAN_USE_TOOL;
	if (json_object_object_get_ex(req, "input", &input))
		ret->input = json_object_get(input);
	return 0;
}

void session_live_event_dispose(struct session_live_event *e)
{
	free(e->request_id);
	json_object_put(e->input);
	*e = (struct session_live_event){0};
}
