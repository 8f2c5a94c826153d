/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's command lines: `sandbox-agent serve ...`, `sandbox-agent keygen`. */
#ifndef SA_SERVE_CLI_H
#define SA_SERVE_CLI_H

/* `sandbox-agent serve ...`, `sandbox-agent keygen [--key FILE]`. */
int serve_cli_main(int argc, char **argv);
int serve_cli_keygen_main(int argc, char **argv);

#endif
