/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl's commands in one table: the function each runs, whether it connects, and what
 * `sandbox-ctl help COMMAND` / `COMMAND --help` print (options and an example); also which of
 * a command's options take a value, so that the global options are not looked for among those
 * values (`publish --message -q`), and the word lists of the shell completion.
 */
#ifndef SA_HOST_CMD_HELP_H
#define SA_HOST_CMD_HELP_H

#include <stdbool.h>
#include <stdio.h>

#include "cmd.h"

struct cmd_info {
	const char *name;
	int (*fn)(struct ctl *ctl, int argc, char **argv);
	bool connects;
	const char *synopsis;             /* after "sandbox-ctl " */
	const char *summary;              /* one line */
	const char *options;              /* "  --opt VALUE   what\n" lines, or NULL */
	const char *example;              /* one or more command lines */
	const char *const *value_options; /* NULL-terminated, or NULL */
	const char *const *flag_options;  /* NULL-terminated, or NULL */
};

extern const struct cmd_info cmd_help_commands[];
extern const size_t cmd_help_n_commands;
/* The global options, with and without a value (for help, suggestions and completion). */
extern const char *const cmd_help_global_value_options[];
extern const char *const cmd_help_global_flag_options[];

/* The command of that name, or NULL. */
const struct cmd_info *cmd_help_find(const char *name);
/* The command name closest to a typo, or NULL (common/base/suggest.h). */
const char *cmd_help_suggest(const char *word);
/* The closest global option to a typo ("--jsno" -> NULL, "--conect" -> "--connect"). */
const char *cmd_help_suggest_option(const char *word);
/* Whether arg ("--msg" or "--msg=x") is an option of c that takes its value from the next word. */
bool cmd_help_takes_value(const struct cmd_info *c, const char *arg);
/* Synopsis, summary, options and example of one command. */
void cmd_help_print(FILE *f, const struct cmd_info *c);

/* `sandbox-ctl help [COMMAND]`. */
int cmd_help(struct ctl *ctl, int argc, char **argv);
/* `sandbox-ctl completion bash`: a bash completion script on stdout. */
int cmd_help_completion(struct ctl *ctl, int argc, char **argv);

#endif
