/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox-app-boot command line: options, exit codes, what the user reads. */
#ifndef SA_BOOT_CLI_H
#define SA_BOOT_CLI_H

int boot_cli_main(int argc, char **argv);

#endif
