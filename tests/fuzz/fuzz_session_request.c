/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session_request_parse over arbitrary bytes (guest/session/session_request.c). Besides memory
 * errors, it checks what a successful parse promises the session engine: a non-empty argv of
 * non-empty strings within the limits, a known mode, the timeout and the diff cap in range,
 * valid unique variable names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "session_request.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session_request r = {0};
	struct err e;
	size_t n;

	err_clear(&e);
	if (session_request_parse((const char *)data, size, &r, &e) < 0) {
		if (e.cls != ERR_REFUSED && e.cls != ERR_FAILED)
			abort();
		if (r.argv || r.env || r.pathspecs)
			abort();
		return 0;
	}
	n = strv_length(r.argv);
	if (n < 1 || n > SESSION_REQUEST_MAX_ARGS || !r.argv[0][0])
		abort();
	for (size_t i = 0; i < n; i++)
		if (strlen(r.argv[i]) > SESSION_REQUEST_MAX_ARG_LEN)
			abort();
	if (r.mode != SESSION_MODE_API_KEY && r.mode != SESSION_MODE_SANDBOX_LOGIN)
		abort();
	if (r.timeout < 1 || r.timeout > SESSION_TIMEOUT_MAX || r.max_diff_bytes < 1 ||
	    r.max_diff_bytes > SESSION_DIFF_BYTES_MAX)
		abort();
	for (size_t i = 0; r.env && r.env[i]; i++) {
		size_t nl = strv_env_name_len(r.env[i]);
		char name[160];

		if (r.env[i][nl] != '=' || nl >= sizeof(name))
			abort();
		memcpy(name, r.env[i], nl);
		name[nl] = '\0';
		if (!strv_env_name_valid(name) || strv_env_get(r.env, name) != r.env[i] + nl + 1)
			abort();
	}
	if (strv_length(r.pathspecs) > SESSION_REQUEST_MAX_PATHSPECS)
		abort();
	session_request_dispose(&r);
	return 0;
}
