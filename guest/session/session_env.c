/* SPDX-License-Identifier: Apache-2.0 */
#include "session_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child_env.h"
#include "egress_config.h"
#include "file.h"
#include "json_strict.h"
#include "strv.h"

#define SETTINGS_MAX (1024 * 1024)

static const char *const credential_names[] = {
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    NULL,
};

/* What api_key mode takes from the caller (the platform's two). */
static const char *const caller_credentials[] = {
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    NULL,
};

bool session_env_name_is_credential(const char *name)
{
	for (size_t i = 0; credential_names[i]; i++)
		if (strcmp(name, credential_names[i]) == 0)
			return true;
	return false;
}

bool session_env_name_is_login_refused(const char *name)
{
	return strncmp(name, "ANTHROPIC_", 10) == 0 || strcmp(name, "CLAUDE_CODE_OAUTH_TOKEN") == 0;
}

const char *session_env_config_name(enum session_mode mode)
{
	return mode == SESSION_MODE_SANDBOX_LOGIN ? "login" : "api";
}

/* A name from the spec or the request that never reaches the CLI. */
static bool file_name_dropped(enum session_mode mode, const char *name)
{
	if (session_env_name_is_credential(name))
		return true;
	if (mode == SESSION_MODE_SANDBOX_LOGIN && session_env_name_is_login_refused(name))
		return true;
	return strncmp(name, "GIT_", 4) == 0 || strncmp(name, "LD_", 3) == 0;
}

static int add_entries(char ***env, enum session_mode mode, char *const *entries)
{
	for (size_t i = 0; entries && entries[i]; i++) {
		size_t n = strv_env_name_len(entries[i]);
		_cleanup_free_ char *name = NULL;

		if (entries[i][n] != '=')
			continue;
		name = strndup(entries[i], n);
		if (!name)
			return -ENOMEM;
		if (!strv_env_name_valid(name) || file_name_dropped(mode, name))
			continue;
		if (strv_env_set(env, name, entries[i] + n + 1) < 0)
			return -ENOMEM;
	}
	return 0;
}

int session_env_build(const struct session_env_spec *spec, char ***ret_env, struct err *err)
{
	_cleanup_strv_ char **env = NULL;
	_cleanup_free_ char *config = NULL;
	_cleanup_free_ char *path = NULL;

	if (!spec->home || !spec->user || !spec->checkout)
		return err_set(err, ERR_FAILED, EINVAL,
		               "session environment: no home, user or checkout");
	if (asprintf(&config, "%s/%s", spec->home, session_env_config_name(spec->mode)) < 0)
		return err_oom(err);
	if (spec->path)
		path = strdup(spec->path);
	else if (asprintf(&path, "%s/.local/bin:%s", spec->home, SESSION_ENV_DEFAULT_PATH) < 0)
		path = NULL;
	if (!path)
		return err_oom(err);

	if (add_entries(&env, spec->mode, spec->spec_env) < 0 ||
	    add_entries(&env, spec->mode, spec->request_env) < 0)
		return err_oom_at(err, "building the session's environment");
	if (spec->mode == SESSION_MODE_API_KEY)
		for (size_t i = 0; caller_credentials[i]; i++) {
			const char *v = strv_env_get(spec->caller_env, caller_credentials[i]);

			if (v && *v && strv_env_set(&env, caller_credentials[i], v) < 0)
				return err_oom_at(err, "building the session's environment");
		}

	const char *fixed[][2] = {
	    {"HOME", spec->home},
	    {"USER", spec->user},
	    {"LOGNAME", spec->user},
	    {"LANG", "C.UTF-8"},
	    {"PATH", path},
	    {"DISABLE_AUTOUPDATER", "1"},
	    {"DISABLE_TELEMETRY", "1"},
	    {"DISABLE_ERROR_REPORTING", "1"},
	    {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
	    {"CLAUDE_CONFIG_DIR", config},
	    {"GIT_CONFIG_COUNT", "1"},
	    {"GIT_CONFIG_KEY_0", "safe.directory"},
	    {"GIT_CONFIG_VALUE_0", spec->checkout},
	};
	for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
		if (strv_env_set(&env, fixed[i][0], fixed[i][1]) < 0)
			return err_oom_at(err, "building the session's environment");
	/* The daemon's egress proxy (--egress-proxy): the claude user's only way out. */
	if (egress_config_proxy_env(&env, strv_env_get(spec->caller_env, EGRESS_ENV_PROXY)) < 0)
		return err_oom_at(err, "building the session's environment");
	*ret_env = TAKE_PTR(env);
	return 0;
}

int session_env_add_secrets(struct scrubber *s, char *const *caller_env, struct err *err)
{
	for (size_t i = 0; caller_env && caller_env[i]; i++) {
		size_t n = strv_env_name_len(caller_env[i]);
		_cleanup_free_ char *name = NULL;
		const char *v;
		int rc;

		if (caller_env[i][n] != '=')
			continue;
		name = strndup(caller_env[i], n);
		if (!name)
			return err_oom(err);
		if (!session_env_name_is_credential(name) && !child_env_name_looks_secret(name))
			continue;
		v = caller_env[i] + n + 1;
		rc = scrub_add(s, v, strlen(v));
		if (rc == -ENOMEM)
			return err_oom(err);
		/*
		 * A value too long to be a credential is not one (-E2BIG); -EBUSY cannot be: this
		 * scrubber is new and nothing scrubs with it yet.
		 */
	}
	return 0;
}

static int settings_check(int claude_fd, const char *name, struct err *err)
{
	_cleanup_json_ struct json_object *root = NULL;
	_cleanup_free_ char *buf = NULL;
	struct json_object *o;
	enum json_tokener_error jerr;
	struct stat st;
	size_t len = 0, off;

	if (fstatat(claude_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_errno(err, "sandbox_login: cannot check .claude/%s", name);
	}
	if (S_ISLNK(st.st_mode))
		return err_set(err, ERR_REFUSED, EPERM,
		               "sandbox_login: the checkout's .claude/%s is a symbolic link", name);
	if (!S_ISREG(st.st_mode))
		return err_set(err, ERR_REFUSED, EPERM,
		               "sandbox_login: the checkout's .claude/%s is not a regular file",
		               name);
	if (file_read_capped(claude_fd, name, SETTINGS_MAX, READ_NOFOLLOW, &buf, &len, err) < 0)
		return err_wrap(err, "sandbox_login: .claude/%s", name);
	if (json_strict_parse(buf, len, &root, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(root, json_type_object))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "sandbox_login: the checkout's .claude/%s is not a JSON object",
		               name);
	if (json_object_object_get_ex(root, "apiKeyHelper", &o))
		return err_set(err, ERR_REFUSED, EPERM,
		               "sandbox_login: the checkout's .claude/%s sets apiKeyHelper", name);
	if (json_object_object_get_ex(root, "env", &o) &&
	    json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val)
		{
			(void)val;
			if (session_env_name_is_login_refused(key))
				return err_set(
				    err, ERR_REFUSED, EPERM,
				    "sandbox_login: the checkout's .claude/%s sets %.64s", name,
				    key);
		}
	}
	return 0;
}

int session_env_check_login_settings(int checkout_fd, struct err *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (fstatat(checkout_fd, ".claude", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_errno(err, "sandbox_login: cannot check the checkout's .claude");
	}
	if (S_ISLNK(st.st_mode))
		return err_set(err, ERR_REFUSED, EPERM,
		               "sandbox_login: the checkout's .claude is a symbolic link");
	if (!S_ISDIR(st.st_mode))
		return 0;
	fd = openat(checkout_fd, ".claude", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "sandbox_login: cannot open the checkout's .claude");
	if (settings_check(fd, "settings.json", err) < 0 ||
	    settings_check(fd, "settings.local.json", err) < 0)
		return err_ret(err);
	return 0;
}
