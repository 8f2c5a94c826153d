/* SPDX-License-Identifier: Apache-2.0 */
/*
 * command_exec_prepare over arbitrary command strings (a repository's sandbox.yml writes them)
 * and PATH values (its `env` may set PATH). The input is the command, then optionally a NUL
 * and PATH's value. A command taken the direct way must be one the shell would only split:
 * every byte allowed, its words those of a plain split at blanks after the assignments and an
 * `exec`, each path to try the word itself or a directory of PATH joined to it, and its
 * environment of shell names only, with PWD set once (the caller's has none).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "command_exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool allowed(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("_-./,:+@%=^ \t", c));
}

/* NAME=..., NAME a name the shell takes for a variable. */
static bool shell_name_before_equals(const char *w)
{
	const char *eq = strchr(w, '=');

	if (!eq || eq == w || (w[0] >= '0' && w[0] <= '9'))
		return false;
	for (const char *p = w; p < eq; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 1), *cmd, *path_entry, *copy, *save = NULL, *w;
	const char *path = "/usr/bin:/bin";
	struct command_exec c;
	size_t i = 0;

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	cmd = in;
	if (strlen(in) < size)
		path = in + strlen(in) + 1;
	path_entry = malloc(strlen(path) + 6);
	if (!path_entry) {
		free(in);
		return 0;
	}
	strcpy(path_entry, "PATH=");
	strcat(path_entry, path);
	char *const env[] = {(char *)"HOME=/", path_entry, NULL};

	if (command_exec_prepare(cmd, env, "/", &c) < 0)
		abort();
	if (strcmp(c.sh_argv[0], "sh") || strcmp(c.sh_argv[1], "-c") || c.sh_argv[2] != cmd ||
	    c.sh_argv[3])
		abort();
	if (!c.argv) {
		if (c.paths || c.env || c.store)
			abort();
		goto out;
	}
	for (const char *p = cmd; *p; p++)
		if (!allowed(*p))
			abort();
	/* The plain split, past NAME=value words and one `exec`. */
	copy = strdup(cmd);
	if (!copy)
		abort();
	w = strtok_r(copy, " \t", &save);
	while (w && shell_name_before_equals(w))
		w = strtok_r(NULL, " \t", &save);
	if (w && strcmp(w, "exec") == 0)
		w = strtok_r(NULL, " \t", &save);
	for (i = 0; w; i++, w = strtok_r(NULL, " \t", &save))
		if (!c.argv[i] || strcmp(c.argv[i], w) != 0)
			abort();
	if (c.argv[i] || i == 0)
		abort();
	free(copy);
	if (c.argv[0][0] == '-' || strchr(c.argv[0], '='))
		abort();
	for (i = 0; c.paths[i]; i++) {
		size_t pl = strlen(c.paths[i]), al = strlen(c.argv[0]);
		if (strchr(c.argv[0], '/')
		        ? strcmp(c.paths[i], c.argv[0]) != 0
		        : (pl <= al || strcmp(c.paths[i] + pl - al, c.argv[0]) ||
		           c.paths[i][pl - al - 1] != '/' || c.paths[i][0] != '/'))
			abort();
	}
	if (i == 0)
		abort();
	/* No PWD came in, so it is set, to the directory given ("/"), once. */
	size_t pwds = 0;
	for (i = 0; c.env && c.env[i]; i++) {
		if (!shell_name_before_equals(c.env[i]))
			abort();
		pwds += strncmp(c.env[i], "PWD=", 4) == 0;
		if (strncmp(c.env[i], "PWD=", 4) == 0 && strcmp(c.env[i], "PWD=/") != 0 &&
		    !strstr(cmd, "PWD="))
			abort();
	}
	if (!c.env || pwds != 1)
		abort();
out:
	command_exec_dispose(&c);
	free(path_entry);
	free(in);
	return 0;
}
