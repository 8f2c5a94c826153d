/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a forge's REST API answers (host/forge_reply.c), from a server sandbox-ctl does not
 * control. The first two bytes pick the status (100..599); the rest is the body, read as a
 * success (forge_reply_object) and as an error (forge_reply_error, forge_reply_mentions).
 * Checked: an error is always set with a class and a bounded message that holds no control
 * character (it reaches a terminal), the class follows the status, and a success is a JSON
 * object or an EPROTO error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forge_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_message(const struct err *e)
{
	size_t n = strnlen(e->msg, sizeof(e->msg));

	if (n >= sizeof(e->msg) || n == 0)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)e->msg[i] < 0x20 || e->msg[i] == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct forge_reply_hints hints = {
	    .what = "fuzzing", .on_401 = "a", .on_403 = "b", .on_404 = "c", .on_422 = "d"};
	const char *body = (const char *)data + 2;
	struct err e = {0};
	json_object *obj = NULL;
	size_t len;
	long status;
	int r;

	if (size < 2)
		return 0;
	status = 100 + ((data[0] << 8 | data[1]) % 500);
	len = size - 2;

	r = forge_reply_error(status, body, len, &hints, &e);
	if (r >= 0 || e.cls == ERR_NONE)
		abort();
	if ((status == 401 || status == 403 || status == 404 || status == 422) !=
	    (e.cls == ERR_REFUSED))
		abort();
	check_message(&e);
	(void)forge_reply_mentions(body, len, "already exists");

	e = (struct err){0};
	r = forge_reply_object(body, len, "fuzzing", &obj, &e);
	if (r == 0 && (!obj || !json_object_is_type(obj, json_type_object)))
		abort();
	if (r < 0 && (obj || e.code != EPROTO))
		abort();
	if (r == 0)
		(void)forge_reply_string(obj, "html_url");
	json_object_put(obj);
	return 0;
}
