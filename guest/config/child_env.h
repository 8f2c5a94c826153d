/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The environment every command of a boot gets (docs/platform-contract.md, "The child environment";
 * docs/design.md, "Environment and identity").
 */
#ifndef SA_CHILD_ENV_H
#define SA_CHILD_ENV_H

#include <stdbool.h>

#include "err.h"

/* The caller's variable NAME=VALUE must not reach the app (name or value rule). */
bool child_env_entry_is_dropped(const char *name, const char *value);
bool child_env_name_is_dropped(const char *name);
/* A value holding "scheme://user@". */
bool child_env_value_has_userinfo(const char *value);
/* A name that looks like a secret by the contract's list (used to hide values in --dry-run). */
bool child_env_name_looks_secret(const char *name);

struct child_env_request {
	char *const *caller_env;   /* the caller's environment (environ) */
	char *const *pass_env;     /* names the caller opted in: kept even when a rule drops them */
	char *const *db_env;       /* throwaway database variables, "NAME=VALUE" */
	char *const *file_env;     /* sandbox.yml `env` or the spec's `env`, "NAME=VALUE" */
	const char *manifest_path; /* ACTION_AGENT_SANDBOX_MANIFEST */
	const char *session_id;    /* ACTION_AGENT_SANDBOX_SESSION_ID */
	const char *secret_key_base; /* per-sandbox SECRET_KEY_BASE unless file_env sets one */
	const char *cache_root;      /* shared download caches live below it; NULL = none */
	const char *home;            /* run user's HOME, USER and LOGNAME; NULL = keep */
	const char *user;
	const char *egress_proxy; /* HTTPS_PROXY and the rest point here; NULL = keep */
};

/*
 * Build the environment of setup steps: the caller's minus the dropped names, plus opted-in
 * names, the database variables (unless file_env sets them), file_env, SECRET_KEY_BASE, the
 * download caches (bundler, npm, yarn, pnpm, bun: download caches only, never where an app
 * installs), HOME/USER/LOGNAME (and, with home, the run user's PATH), the egress proxy's
 * HTTPS_PROXY, HTTP_PROXY and NO_PROXY (lowercase too; egress_config.h), then the two
 * ACTION_AGENT_SANDBOX_* variables that the file cannot override. PORT is never set here.
 */
int child_env_build(const struct child_env_request *req, char ***ret_env, struct err *err);
/* The PATH the run user gets when none is left of the caller's. */
#define CHILD_ENV_USER_PATH "/usr/local/bin:/usr/bin:/bin"

/*
 * The caller's PATH as the run user gets it (when the commands run as another user): without
 * empty or relative entries, folders below caller_home or /root, and sbin folders;
 * CHILD_ENV_USER_PATH when nothing is left. -ENOMEM or 0 with *ret.
 */
int child_env_path_for_user(const char *path, const char *caller_home, char **ret);

/* A copy of env with PORT=port added, for manifest and start. */
int child_env_with_port(char *const *env, unsigned port, char ***ret_env, struct err *err);

/* The cache variables child_env_build sets below cache_root ("NAME=SUBDIR" pairs). */
extern const char *const child_env_cache_dirs[];

/*
 * Load the per-sandbox SECRET_KEY_BASE from path (0600, root-owned) or create it there with
 * libsodium (64 random bytes, hex: 128 characters). ret must hold 129 bytes.
 */
int child_env_secret_key_base_load(const char *path, char ret[129], struct err *err);

/* A new session id: 32 hex characters from libsodium. ret must hold 33 bytes. */
void child_env_session_id_generate(char ret[33]);

#endif
