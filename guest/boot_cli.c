/* SPDX-License-Identifier: Apache-2.0 */
#include "boot_cli.h"

#include <stdio.h>

int boot_cli_main(int argc, char **argv)
{
	fprintf(stderr, "sandbox-app-boot: not implemented yet\n");
	return 2;
}
