/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Claude Code CLI's environment for one session (docs/sessions.md, "Environment"), in
 * order: the boot spec's non-secret `env`, the request's `env`, then HOME, USER, LOGNAME, LANG,
 * PATH, the DISABLE_* variables, CLAUDE_CONFIG_DIR (HOME/api or HOME/login by mode) and git's
 * safe.directory for the checkout (GIT_CONFIG_COUNT/KEY_0/VALUE_0), none of which the files
 * can override.
 *
 * The credential comes from the caller's own environment only, and only in api_key mode
 * (ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN); a credential name in the spec or the request
 * is dropped. In sandbox_login mode no ANTHROPIC_* and no CLAUDE_CODE_OAUTH_TOKEN reach the
 * CLI from anywhere. GIT_* and LD_* from the files are dropped as well.
 */
#ifndef SA_SESSION_ENV_H
#define SA_SESSION_ENV_H

#include <stdbool.h>

#include "err.h"
#include "scrub.h"
#include "session_request.h"

struct session_env_spec {
	enum session_mode mode;
	char *const *spec_env;    /* the boot spec's `env` ("NAME=VALUE"), may be NULL */
	char *const *request_env; /* the request's `env`, may be NULL */
	char *const *caller_env;  /* the helper's own environment: the credential's only source */
	const char *home;         /* the claude user's home */
	const char *user;         /* and name */
	const char *path;         /* PATH for the CLI; NULL: SESSION_ENV_DEFAULT_PATH under home */
	const char *checkout;     /* the CLI's working directory, git's safe.directory */
};

#define SESSION_ENV_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN. */
bool session_env_name_is_credential(const char *name);
/* A name that must not reach a sandbox_login session: ANTHROPIC_* or CLAUDE_CODE_OAUTH_TOKEN. */
bool session_env_name_is_login_refused(const char *name);
/* "api" or "login": the CLAUDE_CONFIG_DIR below the claude user's home. */
const char *session_env_config_name(enum session_mode mode);

int session_env_build(const struct session_env_spec *spec, char ***ret_env, struct err *err);

/*
 * Add what the scrubber must mask for this session: the credentials in the caller's
 * environment (whatever the mode) and every caller variable whose name looks like a secret.
 */
int session_env_add_secrets(struct scrubber *s, char *const *caller_env, struct err *err);

/*
 * sandbox_login refusals in the checkout (checkout_fd: its directory): `.claude` a link, or
 * `.claude/settings.json` / `settings.local.json` a link, not a regular file, not a JSON object,
 * or setting `apiKeyHelper` or an `env` name session_env_name_is_login_refused() names.
 * ERR_REFUSED with the file and the reason.
 */
int session_env_check_login_settings(int checkout_fd, struct err *err);

#endif
