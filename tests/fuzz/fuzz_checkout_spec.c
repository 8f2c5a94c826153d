/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The platform's checkout spec as sandbox-ctl reads it (host/checkout_spec.c), any bytes:
 * checkout_spec_parse() then checkout_spec_dispose(), which wipes the strings json-c holds of
 * it. Checked: a spec taken is one JSON object with a clone_url, its token is the token
 * member's string with the length json-c gives it; a spec refused has a refusal with a bounded
 * message; dispose frees everything (ASan) and never crashes, whatever JSON value the text was.
 */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkout_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct checkout_spec sp = {0};
	struct err e = {0};

	if (size > CHECKOUT_SPEC_MAX || sodium_init() < 0)
		return 0;
	sp.buf = sodium_malloc(size + 1);
	if (!sp.buf)
		return 0;
	memcpy(sp.buf, data, size);
	sp.buf[size] = '\0';
	sp.len = size;
	if (checkout_spec_parse(&sp, &e) == 0) {
		json_object *t = NULL;

		if (!sp.obj || !json_object_is_type(sp.obj, json_type_object) || !sp.clone_url)
			abort();
		if (sp.token && (!json_object_object_get_ex(sp.obj, "token", &t) ||
		                 json_object_get_string(t) != sp.token ||
		                 (size_t)json_object_get_string_len(t) != sp.token_len ||
		                 sp.token[sp.token_len] != '\0'))
			abort();
		if (!sp.token && sp.token_len)
			abort();
	} else {
		size_t n = strnlen(e.msg, sizeof(e.msg));
		if (e.cls == ERR_NONE || n == 0 || n >= sizeof(e.msg))
			abort();
	}
	checkout_spec_dispose(&sp);
	return 0;
}
