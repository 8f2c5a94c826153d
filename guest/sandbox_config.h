/* SPDX-License-Identifier: Apache-2.0 */
/*
 * .activeagents/sandbox.yml: how a repository author customizes the boot (boot-contract.md,
 * "sandbox.yml"). Parsed with libyaml; aliases refused; size capped; unknown keys ignored.
 * Error messages are the <problem> part of "Sandbox configuration failed: <problem>", e.g.
 * ".activeagents/sandbox.yml is malformed: `setup` must be a list of commands (line 3, column 1)";
 * every refusal has class ERR_REFUSED.
 */
#ifndef SA_SANDBOX_CONFIG_H
#define SA_SANDBOX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define SANDBOX_CONFIG_PATH ".activeagents/sandbox.yml"
#define SANDBOX_CONFIG_MAX (256 * 1024)

#define SANDBOX_DEFAULT_SETUP_1 "bundle install"
#define SANDBOX_DEFAULT_SETUP_2 "bin/rails db:prepare"
#define SANDBOX_DEFAULT_MANIFEST "bin/rails action_agent:sandbox:manifest"
#define SANDBOX_DEFAULT_START "bin/rails server -b 127.0.0.1 -p $PORT"

struct sandbox_config {
	char **env;   /* "NAME=VALUE" in file order, values converted as decisions.md says */
	char **setup; /* commands, in order (the defaults when the file has no `setup`) */
	char *manifest;
	char *start;
	bool has_file; /* the file existed */
};

/* Parse a document; an empty document is {} and gives the defaults. */
int sandbox_config_parse(const char *buf, size_t len, struct sandbox_config *ret, struct err *err);
/*
 * Read APP_DIR/.activeagents/sandbox.yml without following symbolic links and without leaving
 * the app directory; a missing file gives the defaults.
 */
int sandbox_config_load(const char *app_dir, struct sandbox_config *ret, struct err *err);
void sandbox_config_dispose(struct sandbox_config *c);

#endif
