/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A command string exec'd directly when the shell would only split it and search PATH.
 *
 * The test is a list of what is allowed, never of what is not: letters, digits, blanks and
 * `_-./,:+@%=^`, which no POSIX shell treats specially outside the first word (quotes,
 * expansions, globs, redirections, operators, comments, tildes and any byte above 127 all
 * send the command to the shell). Leading `NAME=value` words are the command's own
 * variables, put in its environment as the shell would (one setting PATH is left to the
 * shell, whose search it changes); then an `exec` is dropped (`sh -c 'exec CMD'` replaces the
 * shell by CMD, which is what running CMD directly does). The command word must not be a
 * reserved word or one of dash's builtins (their behaviour is the shell's own), hold a `=`,
 * nor start with `-`, and the string must not start with `+` or `-` (dash reads it as more
 * options). Without a `/` the word is searched in the child's PATH, which must be one entry
 * of absolute directories (an empty or relative one means the current directory to the shell:
 * left to it).
 *
 * The environment is the one dash would export: an environment dash would rewrite at its start
 * (entries without `=` or with names it would not take, a name given twice, IFS, OPTIND,
 * PPID) is left to it, and PWD is set as dash sets it. One difference is known: dash checks
 * the caller's PWD as the run user, this as the engine (root), so a PWD that reaches the
 * directory through a path only root may walk is kept where dash would give the real path.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "command_exec.h"
#include "strv.h"

#define COMMAND_DIRECT_MAX 4096 /* longer commands go through the shell */
#define PATH_DIRS_MAX 64

static const char *const shell_words[] = {
    /* reserved words */
    "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then", "until", "while",
    /* dash's builtins */
    ".", ":", "alias", "bg", "break", "cd", "chdir", "command", "continue", "echo", "eval", "exec",
    "exit", "export", "false", "fc", "fg", "getopts", "hash", "jobs", "kill", "local", "printf",
    "pwd", "read", "readonly", "return", "set", "shift", "test", "times", "trap", "true", "type",
    "ulimit", "umask", "unalias", "unset", "wait"};

static bool plain_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("_-./,:+@%=^", c));
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool shell_word(const char *w, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(shell_words); i++)
		if (strlen(shell_words[i]) == len && memcmp(shell_words[i], w, len) == 0)
			return true;
	return false;
}

/* The number of PATH's directories, or 0 when one is empty, relative, or they are too many. */
static size_t path_dirs(const char *path)
{
	size_t n = 0;

	for (const char *p = path;; p++) {
		if (*p != '/')
			return 0;
		if (++n > PATH_DIRS_MAX)
			return 0;
		p = strchr(p, ':');
		if (!p)
			return n;
	}
}

void command_exec_dispose(struct command_exec *c)
{
	free(c->argv);
	free(c->paths);
	free(c->env);
	free(c->pwd);
	free(c->store);
	c->argv = c->paths = c->env = NULL;
	c->store = c->pwd = NULL;
}

/* The shell's way, after all: nothing prepared for the direct one. */
static int needs_shell(struct command_exec *c)
{
	command_exec_dispose(c);
	return 0;
}

static int prepare_oom(struct command_exec *c)
{
	command_exec_dispose(c);
	return -ENOMEM;
}

/* NAME=value, NAME a shell variable's name: a word the shell takes for an assignment. */
static bool assignment(const char *w)
{
	size_t n = strv_env_name_len(w);

	return w[n] == '=' && strv_env_name_valid_n(w, n);
}

static bool same_name(const char *a, const char *b)
{
	size_t n = strv_env_name_len(a);

	return n == strv_env_name_len(b) && memcmp(a, b, n) == 0;
}

/* Split s in place at blanks into words (room for one every two bytes), returns how many. */
static size_t split_words(char *s, char **words)
{
	size_t n = 0;

	while (*s) {
		while (blank(*s))
			*s++ = '\0';
		if (!*s)
			break;
		words[n++] = s;
		while (*s && !blank(*s))
			s++;
	}
	return n;
}

/*
 * The environment the command is given: env less the names set, then each setting (the last of
 * a name wins, as in the shell). sets: PWD's if any, then the command's NAME=value words.
 */
static char **env_with(char *const *env, char *const *sets, size_t n_sets)
{
	size_t n_env = strv_length(env), k = 0;
	char **out;

	out = calloc(n_env + n_sets + 1, sizeof(char *));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n_env; i++) {
		bool set = false;
		for (size_t j = 0; j < n_sets && !set; j++)
			set = same_name(env[i], sets[j]);
		if (!set)
			out[k++] = env[i];
	}
	for (size_t j = 0; j < n_sets; j++) {
		bool later = false;
		for (size_t l = j + 1; l < n_sets && !later; l++)
			later = same_name(sets[j], sets[l]);
		if (!later)
			out[k++] = sets[j];
	}
	return out;
}

/*
 * Whether dash would hand env to a command as it is: every entry NAME=value with a name the
 * shell accepts, each name once, and none of the variables dash sets itself at its start
 * (IFS, OPTIND, PPID; PWD is set below as dash sets it). Else the shell's way.
 */
static bool env_plain(char *const *env)
{
	for (size_t i = 0; env && env[i]; i++) {
		if (!assignment(env[i]))
			return false;
		for (size_t j = 0; j < i; j++)
			if (same_name(env[i], env[j]))
				return false;
	}
	return !strv_env_get(env, "IFS") && !strv_env_get(env, "OPTIND") &&
	       !strv_env_get(env, "PPID");
}

/*
 * PWD as dash exports it in the directory cwd (NULL: ours): the caller's PWD when it is
 * absolute and names that directory, else the directory's real path. Returns 0 (keep it), 1
 * (*ret: a new "PWD=..." entry) or -1 (cannot tell: the shell's way).
 */
static int pwd_entry(char *const *env, const char *cwd, char **ret)
{
	struct stat here, there;
	const char *pwd = strv_env_get(env, "PWD");
	char real[PATH_MAX];

	if (stat(cwd ? cwd : ".", &here) < 0)
		return -1;
	if (pwd && pwd[0] == '/' && stat(pwd, &there) == 0 && there.st_dev == here.st_dev &&
	    there.st_ino == here.st_ino)
		return 0;
	if (!realpath(cwd ? cwd : ".", real))
		return -1;
	if (asprintf(ret, "PWD=%s", real) < 0) {
		*ret = NULL;
		return -1;
	}
	return 1;
}

int command_exec_prepare(const char *command, char *const *env, const char *cwd,
                         struct command_exec *ret)
{
	size_t len = strlen(command), n_words, n_dirs = 0, n_assigns, first, cmd_len, n_sets;
	_cleanup_free_ char **words = NULL, **sets = NULL;
	const char *path = NULL, *cmd;
	bool has_slash;
	char *s;

	*ret =
	    (struct command_exec){.sh_argv = {(char *)"sh", (char *)"-c", (char *)command, NULL}};
	if (len == 0 || len > COMMAND_DIRECT_MAX)
		return 0;
	/* dash reads a string starting with + or - as more options */
	if (command[0] == '+' || command[0] == '-' || !env_plain(env))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!plain_byte((unsigned char)command[i]) && !blank(command[i]))
			return 0;

	/* The command line's words, in a copy the paths will follow (PATH is there once at most).
	 */
	path = strv_env_get(env, "PATH");
	n_dirs = path ? path_dirs(path) : 0;
	ret->store = malloc(len + 1 + (path ? strlen(path) + 1 + n_dirs * (len + 2) : 0));
	words = calloc(len / 2 + 2, sizeof(char *));
	if (!ret->store || !words)
		return prepare_oom(ret);
	memcpy(ret->store, command, len + 1);
	n_words = split_words(ret->store, words);

	/* NAME=value words, then `exec`, then the command; PATH set here is left to the shell. */
	for (n_assigns = 0; n_assigns < n_words && assignment(words[n_assigns]); n_assigns++)
		if (same_name(words[n_assigns], "PATH") || same_name(words[n_assigns], "OPTIND"))
			return needs_shell(ret);
	first = n_assigns;
	if (first + 1 < n_words && strcmp(words[first], "exec") == 0)
		first++;
	if (first == n_words)
		return needs_shell(ret);
	cmd = words[first];
	cmd_len = strlen(cmd);
	has_slash = strchr(cmd, '/') != NULL;
	if (cmd[0] == '-' || strchr(cmd, '=') || shell_word(cmd, cmd_len) ||
	    (!has_slash && n_dirs == 0))
		return needs_shell(ret);

	ret->argv = calloc(n_words - first + 1, sizeof(char *));
	ret->paths = calloc((has_slash ? 1 : n_dirs) + 1, sizeof(char *));
	if (!ret->argv || !ret->paths)
		return prepare_oom(ret);
	memcpy(ret->argv, words + first, (n_words - first) * sizeof(char *));
	/* The settings: PWD where dash would set it, then the NAME=value words (which win). */
	sets = calloc(n_assigns + 2, sizeof(char *));
	if (!sets)
		return prepare_oom(ret);
	n_sets = 0;
	switch (pwd_entry(env, cwd, &ret->pwd)) {
	case -1:
		return needs_shell(ret);
	case 1:
		sets[n_sets++] = ret->pwd;
		break;
	}
	memcpy(sets + n_sets, words, n_assigns * sizeof(char *));
	n_sets += n_assigns;
	if (n_sets > 0 && !(ret->env = env_with(env, sets, n_sets)))
		return prepare_oom(ret);
	if (has_slash) {
		ret->paths[0] = ret->argv[0];
		return 0;
	}
	s = ret->store + len + 1;
	for (size_t i = 0; i < n_dirs; i++) {
		size_t dl = strcspn(path, ":");

		ret->paths[i] = s;
		memcpy(s, path, dl);
		s += dl;
		if (dl > 1) /* the root directory "/" has its slash */
			*s++ = '/';
		memcpy(s, cmd, cmd_len);
		s += cmd_len;
		*s++ = '\0';
		path += dl + (path[dl] == ':');
	}
	return 0;
}

int command_exec_run(const struct command_exec *c, char *const *env)
{
	if (c->argv)
		for (char *const *p = c->paths; *p; p++) {
			execve(*p, c->argv, c->env ? c->env : env);
			if (errno == ENOEXEC)
				break; /* a script without `#!`: the shell runs it as one */
		}
	execve("/bin/sh", c->sh_argv, env);
	return errno;
}

bool command_exec_is_direct(const char *command, char *const *env)
{
	struct command_exec c;
	bool direct;

	if (command_exec_prepare(command, env, NULL, &c) < 0)
		return false;
	direct = c.argv != NULL;
	command_exec_dispose(&c);
	return direct;
}
