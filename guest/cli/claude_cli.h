/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox-claude command line (docs/sessions.md): verbs, exit codes, JSON answers. */
#ifndef SA_CLAUDE_CLI_H
#define SA_CLAUDE_CLI_H

int claude_cli_main(int argc, char **argv);

#endif
