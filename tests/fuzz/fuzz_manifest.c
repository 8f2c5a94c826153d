/* SPDX-License-Identifier: Apache-2.0 */
/*
 * manifest_parse over arbitrary bytes (the manifest is written by untrusted code). A manifest
 * that passes must survive the trip through runtime.json unchanged: manifest_to_json, parsed
 * again, gives the same two values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest m = {0}, back = {0};
	struct err e;
	char *json;

	err_clear(&e);
	if (manifest_parse((const char *)data, size, &m, &e) < 0) {
		if (e.cls != ERR_FAILED)
			abort();
		return 0;
	}
	if (!m.mcp_path || m.mcp_path[0] != '/' || m.mcp_path[1] == '/')
		abort();
	json = manifest_to_json(&m);
	if (!json || manifest_parse(json, strlen(json), &back, &e) < 0)
		abort();
	if (strcmp(m.mcp_path, back.mcp_path) != 0)
		abort();
	if ((m.mcp_token == NULL) != (back.mcp_token == NULL))
		abort();
	if (m.mcp_token && strcmp(m.mcp_token, back.mcp_token) != 0)
		abort();
	free(json);
	manifest_dispose(&back);
	manifest_dispose(&m);
	return 0;
}
