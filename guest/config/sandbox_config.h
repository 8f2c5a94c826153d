/* SPDX-License-Identifier: Apache-2.0 */
/*
 * .activeagents/sandbox.yml: how a repository author customizes the boot
 * (docs/platform-contract.md, "sandbox.yml"). Parsed with libyaml; aliases refused; size capped;
 * unknown keys ignored with a warning (docs/messages.md). Error messages are the <problem> part of
 * "Sandbox configuration failed: <problem>", e.g.
 * ".activeagents/sandbox.yml is malformed: `setup` must be a list of commands (line 3, column 1)";
 * every refusal has class ERR_REFUSED.
 */
#ifndef SA_SANDBOX_CONFIG_H
#define SA_SANDBOX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "egress_config.h"
#include "err.h"
#include "limits_config.h"

#define SANDBOX_CONFIG_PATH ".activeagents/sandbox.yml"
#define SANDBOX_CONFIG_MAX (256 * 1024)
/* Mappings and lists nest at most this deep, anywhere in the file (unknown keys included). */
#define SANDBOX_CONFIG_MAX_DEPTH 64

#define SANDBOX_DEFAULT_SETUP_1 "bundle install"
#define SANDBOX_DEFAULT_SETUP_2 "bin/rails db:prepare"
#define SANDBOX_DEFAULT_MANIFEST "bin/rails action_agent:sandbox:manifest"
#define SANDBOX_DEFAULT_START "bin/rails server -b 127.0.0.1 -p $PORT"

struct sandbox_config {
	char **env;   /* "NAME=VALUE" in file order, values converted as docs/design.md says */
	char **setup; /* commands, in order (the defaults when the file has no `setup`) */
	char *manifest;
	char *start;
	struct limits_request limits; /* `limits:`, 0 where not given */
	struct egress_request egress; /* `egress:` */
	bool has_file;                /* the file existed */
};

/* Flags for sandbox_config_load_at(). */
enum {
	/* Skip openat2() and resolve component by component with O_NOFOLLOW, as is done when
	 * the kernel or a seccomp filter refuses openat2 (tests use it to cover that path). */
	SANDBOX_CONFIG_NO_OPENAT2 = 1 << 0,
};

/*
 * Parse a document; an empty document (no document, only comments, `---`, or a null) is {}
 * and gives the defaults. More than one document is refused. has_file is left false.
 */
int sandbox_config_parse(const char *buf, size_t len, struct sandbox_config *ret, struct err *err);
/*
 * Read APP_DIR/.activeagents/sandbox.yml without following symbolic links and without leaving
 * the app directory; a missing file gives the defaults.
 */
int sandbox_config_load(const char *app_dir, struct sandbox_config *ret, struct err *err);
/*
 * The same under an open app directory. A symbolic link anywhere in .activeagents/sandbox.yml,
 * a directory, FIFO, socket or device in its place, and a file over SANDBOX_CONFIG_MAX bytes
 * are refused (ERR_REFUSED); a missing .activeagents or file gives the defaults, has_file false.
 */
int sandbox_config_load_at(int app_dirfd, unsigned flags, struct sandbox_config *ret,
                           struct err *err);
/*
 * The same, adding to *notes (when notes is not NULL) the lines a repository author should
 * read, compiler style: ".activeagents/sandbox.yml:3:1: warning: unknown setting `envs` is
 * ignored; did you mean `env`?", a look-alike file when there is no file, and for a YAML syntax
 * error "...:LINE:COL: error: PROBLEM", the line, a caret under the column and a "hint: ..."
 * line. Notes are added on success and on failure alike; the caller frees them.
 */
int sandbox_config_parse_noted(const char *buf, size_t len, char ***notes,
                               struct sandbox_config *ret, struct err *err);
int sandbox_config_load_noted(const char *app_dir, char ***notes, struct sandbox_config *ret,
                              struct err *err);
int sandbox_config_load_at_noted(int app_dirfd, unsigned flags, char ***notes,
                                 struct sandbox_config *ret, struct err *err);
void sandbox_config_dispose(struct sandbox_config *c);

#endif
