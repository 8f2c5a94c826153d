/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test driver for tests/integration/test_yaml_ruby_compat.sh: parses each file given on the
 * command line as a sandbox.yml and prints, one line per file, "OK <hex of env V>" or
 * "ERR<TAB><message>", the same shape the script's Ruby side prints.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "file.h"
#include "sandbox_config.h"
#include "strv.h"

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct sandbox_config c = {0};
		struct err e = {0};
		char *buf = NULL;
		size_t len = 0;
		const char *v;

		if (file_read_capped(AT_FDCWD, argv[i], SANDBOX_CONFIG_MAX, 0, &buf, &len, &e) <
		        0 ||
		    sandbox_config_parse(buf, len, &c, &e) < 0) {
			printf("ERR\t%s\n", e.msg);
			free(buf);
			continue;
		}
		v = strv_env_get(c.env, "V");
		if (!v) {
			printf("ERR\tno V\n");
		} else {
			printf("OK ");
			for (const unsigned char *p = (const unsigned char *)v; *p; p++)
				printf("%02x", *p);
			printf("\n");
		}
		sandbox_config_dispose(&c);
		free(buf);
	}
	return 0;
}
