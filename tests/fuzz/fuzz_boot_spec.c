/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot_spec_parse over arbitrary bytes. Besides memory errors, it checks what a successful
 * parse promises the engine: the required keys are there and every step name is valid.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot_spec.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct boot_spec s = {0};
	struct err e;

	err_clear(&e);
	if (boot_spec_parse((const char *)data, size, &s, &e) < 0) {
		if (e.cls != ERR_REFUSED && e.cls != ERR_FAILED)
			abort();
		return 0;
	}
	if (s.version != 1 || !s.app_dir || s.app_dir[0] != '/' || !s.manifest_path || s.port < 1 ||
	    s.port > 65535 || s.timeout < 1 || !s.manifest.command || !s.start.command ||
	    s.listen_port == s.port)
		abort();
	for (size_t i = 0; i < s.n_steps; i++) {
		if (!boot_spec_step_name_valid(s.steps[i].name))
			abort();
		if (!s.steps[i].command && !s.steps[i].skip)
			abort();
		if (boot_spec_find_step(&s, s.steps[i].name) != &s.steps[i])
			abort();
	}
	for (size_t i = 0; s.env && s.env[i]; i++) {
		size_t n = strv_env_name_len(s.env[i]);
		char name[128];

		if (s.env[i][n] != '=' || n >= sizeof(name))
			abort();
		memcpy(name, s.env[i], n);
		name[n] = '\0';
		if (!strv_env_name_valid(name))
			abort();
	}
	boot_spec_dispose(&s);
	return 0;
}
