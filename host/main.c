/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl: the host companion a controller calls. One JSON document on stdout per command.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"

int main(int argc, char **argv)
{
	log_setup("sandbox-ctl");
	if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		printf("sandbox-ctl %s\n", SA_VERSION);
		return 0;
	}
	fprintf(stderr, "usage: sandbox-ctl --version\n");
	return 2;
}
