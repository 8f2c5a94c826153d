/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How a command string of the boot contract runs: `sh -c CMD`, or, when the shell would do no
 * more than split the string into words at blanks and look the first word up in PATH, those
 * words exec'd directly, as make runs a recipe line without shell syntax (docs/design.md,
 * "Processes"), with the environment dash would have given the program (PWD included). The
 * shell's start is then spared: 2-3 ms a command on the test machine, twice in a re-sync, and
 * Debian's dash, which forks a command rather than exec it, does not stay beside the server
 * for its whole life. Whatever fails on the direct way (a word not found, a script without
 * `#!`) runs through `sh -c` after all, so those messages and exit statuses are the shell's; a
 * program killed by a signal is seen killed by it, where dash exited 128+N.
 */
#ifndef SA_COMMAND_EXEC_H
#define SA_COMMAND_EXEC_H

#include <stdbool.h>

struct command_exec {
	char *sh_argv[4]; /* "sh", "-c", the command, NULL: always there, the fallback */
	char **argv;      /* the words, or NULL: the command needs the shell */
	char **paths;     /* the files to try for argv[0], in PATH's order; NULL-terminated */
	char **env;       /* the environment with the command's NAME=value words and PWD, or NULL */
	char *pwd;        /* "PWD=..." where dash would set it, or NULL */
	char *store;      /* the words and the paths */
};

/*
 * Prepare command to run with the environment env (the child's: its PATH is the one searched)
 * in the directory cwd (NULL: ours). Returns 0 (ret->argv NULL when the shell is needed) or
 * -ENOMEM. Before the child exists: command_exec_run() only reads what this made.
 */
int command_exec_prepare(const char *command, char *const *env, const char *cwd,
                         struct command_exec *ret);
void command_exec_dispose(struct command_exec *c);

/*
 * In the child, its last step: execve() of each path in turn (with c->env where the command
 * set variables or PWD had to be set), then of /bin/sh with sh_argv and env. Returns only when
 * that last one failed, with its errno. Async-signal-safe (no allocation).
 */
int command_exec_run(const struct command_exec *c, char *const *env);

/* Whether command would run without the shell (for tests and the docs' examples). */
bool command_exec_is_direct(const char *command, char *const *env);

#endif
