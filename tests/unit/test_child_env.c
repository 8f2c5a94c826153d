/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child_env.h"
#include "err.h"
#include "strv.h"

/* Build from a caller environment alone (plus optional pass_env). */
static char **build_from(char *const *caller, char *const *pass_env)
{
	struct child_env_request req = {.caller_env = caller, .pass_env = pass_env};
	char **env = NULL;
	struct err e;

	err_clear(&e);
	ck_assert_msg(child_env_build(&req, &env, &e) == 0, "%s", e.msg);
	ck_assert_ptr_nonnull(env);
	return env;
}

/* NAME=VALUE survives child_env_build on its own, as the caller's only variable. */
static bool survives(const char *name, const char *value)
{
	_cleanup_free_ char *entry = NULL;
	_cleanup_strv_ char **env = NULL;
	char *caller[2] = {NULL, NULL};

	ck_assert_int_ge(asprintf(&entry, "%s=%s", name, value), 0);
	caller[0] = entry;
	env = build_from(caller, NULL);
	return strv_env_get(env, name) != NULL;
}

static void assert_dropped(const char *name)
{
	ck_assert_msg(child_env_name_is_dropped(name), "%s should be dropped", name);
	ck_assert_msg(!survives(name, "harmless"), "%s reached the child", name);
}

static void assert_kept(const char *name)
{
	ck_assert_msg(!child_env_name_is_dropped(name), "%s should be kept", name);
	ck_assert_msg(survives(name, "harmless"), "%s did not reach the child", name);
}

START_TEST(test_exact_names_dropped)
{
	static const char *const names[] = {
	    "DATABASE_URL", "REDIS_URL", "SECRET_KEY_BASE", "RAILS_MASTER_KEY", "RAILS_ENV",
	    "RACK_ENV", "PORT", "BUNDLE_GEMFILE", "RUBYOPT", "RUBYLIB", "SSH_AUTH_SOCK",
	    "CLAUDECODE", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	    /* case does not matter */
	    "rails_env", "Database_Url"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		assert_dropped(names[i]);
}
END_TEST

START_TEST(test_near_misses_kept)
{
	static const char *const names[] = {"PATH",
	                                    "LANG",
	                                    "HOME",
	                                    "PORTAL",
	                                    "MY_PORT_RANGE",
	                                    "RAILS_LOG_TO_STDOUT",
	                                    "RUBY_VERSION",
	                                    "REDIS_HOST",
	                                    "DATABASE_URLS",
	                                    "DATABASE_URL_POOL",
	                                    "GIT_AUTHOR_NAME",
	                                    "GIT_SSH_COMMAND",
	                                    "BUNDLE",
	                                    "OPENAI",
	                                    "CLAUDE",
	                                    "SANDBOX_MODE",
	                                    "INSTANCE_TIER",
	                                    "SANDBOX_SESSION_ID",
	                                    "TERM"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		assert_kept(names[i]);
}
END_TEST

START_TEST(test_database_url_suffix_dropped)
{
	assert_dropped("ANIMALS_DATABASE_URL");
	assert_dropped("CACHE_DATABASE_URL");
	assert_dropped("queue_database_url");
}
END_TEST

START_TEST(test_prefixes_dropped)
{
	static const char *const names[] = {"ACTIVE_RECORD_ENCRYPTION_SALT",
	                                    "BUNDLE_PATH",
	                                    "BUNDLE_WITHOUT",
	                                    "BUNDLE_FROZEN",
	                                    "BUNDLER_VERSION",
	                                    "GIT_CONFIG",
	                                    "GIT_CONFIG_GLOBAL",
	                                    "GIT_CONFIG_SYSTEM",
	                                    "GIT_CONFIG_NOSYSTEM",
	                                    "GIT_CONFIG_COUNT",
	                                    "GIT_CONFIG_KEY_0",
	                                    "GIT_CONFIG_VALUE_0",
	                                    "GIT_CONFIG_KEY_12",
	                                    "GIT_CONFIG_PARAMETERS",
	                                    "ANTHROPIC_BASE_URL",
	                                    "ANTHROPIC_MODEL",
	                                    "CLAUDE_CONFIG_DIR",
	                                    "CLAUDE_CODE_USE_BEDROCK",
	                                    "OPENAI_BASE_URL",
	                                    "OPEN_AI_ORG",
	                                    "OPENROUTER_BASE",
	                                    "OPEN_ROUTER_MODEL",
	                                    "OLLAMA_HOST",
	                                    "ollama_models"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		/* each of these is dropped by its prefix, not by the secret-name rule */
		ck_assert_msg(!child_env_name_looks_secret(names[i]), "%s", names[i]);
		assert_dropped(names[i]);
	}
}
END_TEST

START_TEST(test_secret_words_anywhere)
{
	static const char *const names[] = {"MY_SECRET_THING",
	                                    "GITHUB_TOKEN_FILE",
	                                    "DB_PASSWORD_FILE",
	                                    "PASSWD_HINT",
	                                    "GPG_PASSPHRASE_FILE",
	                                    "STRIPE_API_KEY_ID",
	                                    "MAPS_APIKEY_ID",
	                                    "SSH_PRIVATE_KEY_PATH",
	                                    "GOOGLE_APPLICATION_CREDENTIALS",
	                                    "AWS_ACCESS_KEY_ID",
	                                    "SLACK_WEBHOOK_URL",
	                                    "github_token",
	                                    "npm_config__authToken",
	                                    "Secret"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		ck_assert_msg(child_env_name_looks_secret(names[i]), "%s", names[i]);
		assert_dropped(names[i]);
	}
}
END_TEST

START_TEST(test_secret_whole_words_at_end)
{
	static const char *const secret[] = {
	    "FOO_PASS", "PASS",       "smtp_pass", "DB_PWD",     "MYSQL_PWD",  "pwd", "GITHUB_PAT",
	    "PAT",      "STRIPE_KEY", "KEY",       "master_key", "SENTRY_DSN", "DSN", "sentry_dsn"};
	static const char *const plain[] = {"COMPASS",
	                                    "BYPASS",
	                                    "OLDPWD",
	                                    "PATH",
	                                    "SPAT",
	                                    "MONKEY",
	                                    "TURKEY",
	                                    "KEYBOARD_LAYOUT",
	                                    "PASSENGER_APP_ENV",
	                                    "PATTERN",
	                                    "SSH_KEY_PATH",
	                                    "PAT_HOST",
	                                    "DSN_HOST",
	                                    "PASS_THROUGH",
	                                    "XDG_RUNTIME_DIR"};

	for (size_t i = 0; i < ELEMENTSOF(secret); i++) {
		ck_assert_msg(child_env_name_looks_secret(secret[i]), "%s", secret[i]);
		assert_dropped(secret[i]);
	}
	for (size_t i = 0; i < ELEMENTSOF(plain); i++) {
		ck_assert_msg(!child_env_name_looks_secret(plain[i]), "%s", plain[i]);
		assert_kept(plain[i]);
	}
}
END_TEST

START_TEST(test_shell_pwd_kept)
{
	/* The shell's working directory is no secret (see child_env_name_looks_secret). */
	ck_assert(!child_env_name_looks_secret("PWD"));
	ck_assert(survives("PWD", "/workspace/app"));
	ck_assert(!survives("DB_PWD", "hunter2"));
}
END_TEST

START_TEST(test_looks_secret_is_the_name_rule_alone)
{
	/* dropped for other reasons, but their names do not look secret */
	ck_assert(!child_env_name_looks_secret("DATABASE_URL"));
	ck_assert(!child_env_name_looks_secret("RAILS_ENV"));
	ck_assert(!child_env_name_looks_secret("BUNDLE_PATH"));
	ck_assert(child_env_name_looks_secret("SECRET_KEY_BASE"));
	ck_assert(child_env_name_looks_secret("RAILS_MASTER_KEY"));
	ck_assert(!child_env_name_looks_secret(NULL));
}
END_TEST

START_TEST(test_userinfo_values)
{
	static const char *const with[] = {
	    "https://x-access-token:abc@github.com/org/repo.git",
	    "postgres://app:pw@db.internal/app",
	    "ssh://git@github.com/org/repo",
	    "https://:onlypassword@host",
	    "see redis://u:p@cache:6379/0 for details",
	    "git+https://user@host/x",
	};
	static const char *const without[] = {
	    "https://github.com/org/repo",
	    "https://@host/x",
	    "https://registry.npmjs.org/@babel/core",
	    "https://host/path?q=a@b",
	    "https://host/#frag@x",
	    "mailto:someone@example.com",
	    "someone@example.com",
	    "://user@host",
	    "https://exa mple@host",
	    "",
	};

	for (size_t i = 0; i < ELEMENTSOF(with); i++) {
		ck_assert_msg(child_env_value_has_userinfo(with[i]), "%s", with[i]);
		ck_assert(child_env_entry_is_dropped("HARMLESS_NAME", with[i]));
		ck_assert_msg(!survives("HARMLESS_NAME", with[i]), "%s", with[i]);
	}
	for (size_t i = 0; i < ELEMENTSOF(without); i++) {
		ck_assert_msg(!child_env_value_has_userinfo(without[i]), "%s", without[i]);
		ck_assert(!child_env_entry_is_dropped("HARMLESS_NAME", without[i]));
		ck_assert_msg(survives("HARMLESS_NAME", without[i]), "%s", without[i]);
	}
	ck_assert(!child_env_value_has_userinfo(NULL));
}
END_TEST

START_TEST(test_pass_env)
{
	char *caller[] = {"ANTHROPIC_API_KEY=sk-ant-1", "OPENAI_API_KEY=sk-2",
	                  "GIT_REMOTE=https://u:p@h/r", "PORT=9999", NULL};
	char *pass[] = {"ANTHROPIC_API_KEY", "GIT_REMOTE", "MISSING_KEY", "PORT", NULL};
	_cleanup_strv_ char **env = build_from(caller, pass);
	_cleanup_strv_ char **none = build_from(caller, NULL);

	ck_assert_str_eq(strv_env_get(env, "ANTHROPIC_API_KEY"), "sk-ant-1");
	/* the value rule yields to an opt-in too */
	ck_assert_str_eq(strv_env_get(env, "GIT_REMOTE"), "https://u:p@h/r");
	ck_assert_ptr_null(strv_env_get(env, "OPENAI_API_KEY"));
	/* only names present in the caller's environment */
	ck_assert_ptr_null(strv_env_get(env, "MISSING_KEY"));
	/* PORT never */
	ck_assert_ptr_null(strv_env_get(env, "PORT"));
	ck_assert_ptr_null(strv_env_get(none, "ANTHROPIC_API_KEY"));
	ck_assert_ptr_null(strv_env_get(none, "GIT_REMOTE"));
}
END_TEST

START_TEST(test_order_and_overrides)
{
	char *caller[] = {
	    "LANG=C.UTF-8", "PATH=/usr/bin", "DATABASE_URL=postgres://x/y",           "MALFORMED",
	    "=novalue",     "LANG=second",   "ACTION_AGENT_SANDBOX_MANIFEST=/caller", NULL};
	char *db[] = {"DATABASE_URL=postgresql:///app_sandbox_12345678",
	              "CACHE_DATABASE_URL=sqlite3:/w/db/development_cache.sqlite3",
	              "SKIP_TEST_DATABASE=1", NULL};
	char *file[] = {"CACHE_DATABASE_URL=sqlite3:/elsewhere.sqlite3",
	                "RAILS_ENV=development",
	                "LANG=fr_FR.UTF-8",
	                "PORT=1234",
	                "ACTION_AGENT_SANDBOX_MANIFEST=/tmp/evil",
	                "ACTION_AGENT_SANDBOX_SESSION_ID=evil",
	                "BUNDLE_GEMFILE=../../gemfiles/rails8.gemfile",
	                NULL};
	struct child_env_request req = {
	    .caller_env = caller,
	    .db_env = db,
	    .file_env = file,
	    .manifest_path = "/workspace/.sandbox/manifest.json",
	    .session_id = "0123456789abcdef0123456789abcdef",
	};
	_cleanup_strv_ char **env = NULL;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(child_env_build(&req, &env, &e), 0);
	/* caller's order kept, first of a repeated name wins, malformed entries skipped */
	ck_assert_str_eq(env[0], "LANG=fr_FR.UTF-8");
	ck_assert_str_eq(env[1], "PATH=/usr/bin");
	ck_assert(!strv_contains(env, "MALFORMED"));
	/* database variables, then the file's env over them */
	ck_assert_str_eq(strv_env_get(env, "DATABASE_URL"), "postgresql:///app_sandbox_12345678");
	ck_assert_str_eq(strv_env_get(env, "CACHE_DATABASE_URL"), "sqlite3:/elsewhere.sqlite3");
	ck_assert_str_eq(strv_env_get(env, "SKIP_TEST_DATABASE"), "1");
	ck_assert_str_eq(strv_env_get(env, "RAILS_ENV"), "development");
	ck_assert_str_eq(strv_env_get(env, "BUNDLE_GEMFILE"), "../../gemfiles/rails8.gemfile");
	/* the two platform variables cannot be overridden */
	ck_assert_str_eq(strv_env_get(env, "ACTION_AGENT_SANDBOX_MANIFEST"),
	                 "/workspace/.sandbox/manifest.json");
	ck_assert_str_eq(strv_env_get(env, "ACTION_AGENT_SANDBOX_SESSION_ID"),
	                 "0123456789abcdef0123456789abcdef");
	/* PORT never, not even from the file */
	ck_assert_ptr_null(strv_env_get(env, "PORT"));
}
END_TEST

START_TEST(test_first_of_repeated_name_wins)
{
	char *caller[] = {"LANG=C.UTF-8", "LANG=second", "X=1", NULL};
	_cleanup_strv_ char **env = build_from(caller, NULL);

	ck_assert_uint_eq(strv_length(env), 2);
	ck_assert_str_eq(strv_env_get(env, "LANG"), "C.UTF-8");
}
END_TEST

START_TEST(test_platform_variables_removed_when_unset)
{
	char *caller[] = {"ACTION_AGENT_SANDBOX_MANIFEST=/caller",
	                  "ACTION_AGENT_SANDBOX_SESSION_ID=caller", NULL};
	char *file[] = {"ACTION_AGENT_SANDBOX_SESSION_ID=file", NULL};
	struct child_env_request req = {.caller_env = caller, .file_env = file};
	_cleanup_strv_ char **env = NULL;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(child_env_build(&req, &env, &e), 0);
	ck_assert_ptr_null(strv_env_get(env, "ACTION_AGENT_SANDBOX_MANIFEST"));
	ck_assert_ptr_null(strv_env_get(env, "ACTION_AGENT_SANDBOX_SESSION_ID"));
}
END_TEST

START_TEST(test_bad_entries_refused)
{
	char *file[] = {"NOEQUALS", NULL};
	char *db[] = {"=x", NULL};
	struct child_env_request req = {.file_env = file};
	char **env = NULL;
	struct err e;

	err_clear(&e);
	ck_assert_int_lt(child_env_build(&req, &env, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "NOEQUALS"));
	ck_assert_ptr_null(env);
	req.file_env = NULL;
	req.db_env = db;
	err_clear(&e);
	ck_assert_int_lt(child_env_build(&req, &env, &e), 0);
	ck_assert_ptr_null(env);
}
END_TEST

START_TEST(test_empty_request)
{
	struct child_env_request req = {0};
	_cleanup_strv_ char **env = NULL;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(child_env_build(&req, &env, &e), 0);
	ck_assert_ptr_nonnull(env);
	ck_assert_uint_eq(strv_length(env), 0);
}
END_TEST

START_TEST(test_port_only_via_with_port)
{
	char *caller[] = {"PORT=1111", "A=1", NULL};
	_cleanup_strv_ char **env = build_from(caller, NULL);
	_cleanup_strv_ char **with = NULL;
	_cleanup_strv_ char **again = NULL;
	char **bad = NULL;
	struct err e;

	ck_assert_ptr_null(strv_env_get(env, "PORT"));
	err_clear(&e);
	ck_assert_int_eq(child_env_with_port(env, 4000, &with, &e), 0);
	ck_assert_str_eq(strv_env_get(with, "PORT"), "4000");
	ck_assert_str_eq(strv_env_get(with, "A"), "1");
	/* the original is untouched */
	ck_assert_ptr_null(strv_env_get(env, "PORT"));
	/* an existing PORT is replaced, not doubled */
	ck_assert_int_eq(child_env_with_port(with, 4001, &again, &e), 0);
	ck_assert_str_eq(strv_env_get(again, "PORT"), "4001");
	ck_assert_uint_eq(strv_length(again), strv_length(with));
	ck_assert_int_lt(child_env_with_port(env, 0, &bad, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_lt(child_env_with_port(env, 70000, &bad, &e), 0);
	ck_assert_ptr_null(bad);
}
END_TEST

START_TEST(test_identity)
{
	char *caller[] = {"HOME=/root", "USER=root", "LOGNAME=root", NULL};
	char *file[] = {"HOME=/tmp/elsewhere", NULL};
	struct child_env_request req = {
	    .caller_env = caller, .file_env = file, .home = "/home/sandbox", .user = "sandbox"};
	_cleanup_strv_ char **env = NULL;
	_cleanup_strv_ char **kept = NULL;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(child_env_build(&req, &env, &e), 0);
	ck_assert_str_eq(strv_env_get(env, "HOME"), "/home/sandbox");
	ck_assert_str_eq(strv_env_get(env, "USER"), "sandbox");
	ck_assert_str_eq(strv_env_get(env, "LOGNAME"), "sandbox");
	req.home = NULL;
	req.user = NULL;
	req.file_env = NULL;
	ck_assert_int_eq(child_env_build(&req, &kept, &e), 0);
	ck_assert_str_eq(strv_env_get(kept, "HOME"), "/root");
	ck_assert_str_eq(strv_env_get(kept, "USER"), "root");
}
END_TEST

START_TEST(test_run_user_path)
{
	char *caller[] = {"HOME=/root",
	                  "PATH=/root/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	                  "/sbin:/bin:.::bin:/opt/mise/shims:/root",
	                  NULL};
	char *file[] = {"PATH=/app/bin:/usr/sbin", NULL};
	struct child_env_request req = {
	    .caller_env = caller, .home = "/home/sandbox", .user = "sandbox"};
	_cleanup_strv_ char **env = NULL, **own = NULL, **same = NULL;
	_cleanup_free_ char *p = NULL;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(child_env_build(&req, &env, &e), 0);
	ck_assert_str_eq(strv_env_get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin:/opt/mise/shims");
	/* the file's own PATH is the author's choice */
	req.file_env = file;
	ck_assert_int_eq(child_env_build(&req, &own, &e), 0);
	ck_assert_str_eq(strv_env_get(own, "PATH"), "/app/bin:/usr/sbin");
	/* no other user: the caller's PATH as it is */
	req.file_env = NULL;
	req.home = NULL;
	ck_assert_int_eq(child_env_build(&req, &same, &e), 0);
	ck_assert_str_eq(strv_env_get(same, "PATH"), caller[1] + 5);
	/* nothing left, or no PATH at all: the usual one */
	ck_assert_int_eq(child_env_path_for_user("/root/bin:/sbin", "/root", &p), 0);
	ck_assert_str_eq(p, CHILD_ENV_USER_PATH);
	free(p);
	p = NULL;
	ck_assert_int_eq(child_env_path_for_user(NULL, NULL, &p), 0);
	ck_assert_str_eq(p, CHILD_ENV_USER_PATH);
	free(p);
	p = NULL;
	/* a folder that merely starts like /root stays */
	ck_assert_int_eq(child_env_path_for_user("/rootless/bin:/home/me/bin", "/home/me", &p), 0);
	ck_assert_str_eq(p, "/rootless/bin");
}
END_TEST

START_TEST(test_caches)
{
	char *caller[] = {"npm_config_cache=/caller/npm", "GEM_HOME=/usr/local/gems", NULL};
	char *file[] = {"BUN_INSTALL_CACHE_DIR=/app/bun", NULL};
	struct child_env_request req = {
	    .caller_env = caller, .file_env = file, .cache_root = "/workspace/.cache/"};
	_cleanup_strv_ char **env = NULL;
	_cleanup_strv_ char **none = NULL;
	size_t n = 0;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(child_env_build(&req, &env, &e), 0);
	ck_assert_str_eq(strv_env_get(env, "BUNDLE_USER_CACHE"), "/workspace/.cache/bundler");
	ck_assert_str_eq(strv_env_get(env, "npm_config_cache"), "/workspace/.cache/npm");
	ck_assert_str_eq(strv_env_get(env, "YARN_GLOBAL_FOLDER"), "/workspace/.cache/yarn");
	ck_assert_str_eq(strv_env_get(env, "pnpm_config_store_dir"),
	                 "/workspace/.cache/pnpm-store");
	/* the file's own setting wins */
	ck_assert_str_eq(strv_env_get(env, "BUN_INSTALL_CACHE_DIR"), "/app/bun");
	/* never where an app installs: the caller's GEM_HOME is left as it was */
	ck_assert_str_eq(strv_env_get(env, "GEM_HOME"), "/usr/local/gems");
	ck_assert_ptr_null(strv_env_get(env, "BUNDLE_PATH"));
	ck_assert_ptr_null(strv_env_get(env, "YARN_CACHE_FOLDER"));
	ck_assert_ptr_null(strv_env_get(env, "npm_config_prefix"));
	for (size_t i = 0; child_env_cache_dirs[i]; i++) {
		const char *p = child_env_cache_dirs[i];
		ck_assert_ptr_nonnull(strchr(p, '='));
		ck_assert_msg(strncmp(p, "GEM_", 4) != 0 && strncmp(p, "BUNDLE_PATH", 11) != 0,
		              "%s", p);
		n++;
	}
	ck_assert_uint_eq(n, 5);
	req.cache_root = NULL;
	ck_assert_int_eq(child_env_build(&req, &none, &e), 0);
	ck_assert_str_eq(strv_env_get(none, "npm_config_cache"), "/caller/npm");
	ck_assert_ptr_null(strv_env_get(none, "BUNDLE_USER_CACHE"));
}
END_TEST

static char tmpdir[64];

static void make_tmpdir(void)
{
	strcpy(tmpdir, "/tmp/test_child_env.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static bool is_hex128(const char *s)
{
	if (strlen(s) != 128)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

START_TEST(test_secret_key_base_created_and_kept)
{
	char path[128], a[129], b[129];
	struct stat st;
	struct err e;

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/secret_key_base", tmpdir);
	err_clear(&e);
	ck_assert_msg(child_env_secret_key_base_load(path, a, &e) == 0, "%s", e.msg);
	ck_assert(is_hex128(a));
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(st.st_size, 128);
	ck_assert_int_eq(child_env_secret_key_base_load(path, b, &e), 0);
	ck_assert_str_eq(a, b);
	/* no temporary files left beside it */
	{
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) -eq 1", tmpdir);
		ck_assert_int_eq(system(cmd), 0);
	}
	/* it reaches the environment unless the file's env sets one */
	{
		char *file[] = {"SECRET_KEY_BASE=from-file", NULL};
		char *caller[] = {"SECRET_KEY_BASE=from-caller", NULL};
		struct child_env_request req = {.caller_env = caller, .secret_key_base = a};
		_cleanup_strv_ char **env = NULL;
		_cleanup_strv_ char **over = NULL;

		ck_assert_int_eq(child_env_build(&req, &env, &e), 0);
		ck_assert_str_eq(strv_env_get(env, "SECRET_KEY_BASE"), a);
		req.file_env = file;
		ck_assert_int_eq(child_env_build(&req, &over, &e), 0);
		ck_assert_str_eq(strv_env_get(over, "SECRET_KEY_BASE"), "from-file");
	}
	/* a different sandbox gets a different key */
	{
		char other[128], c[129];
		snprintf(other, sizeof(other), "%s/other", tmpdir);
		ck_assert_int_eq(child_env_secret_key_base_load(other, c, &e), 0);
		ck_assert_str_ne(a, c);
	}
	remove_tmpdir();
}
END_TEST

static void write_file(const char *path, const char *data, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

START_TEST(test_secret_key_base_refusals)
{
	char path[128], link_path[128], out[129];
	char good[129];
	struct err e;

	memset(good, 'a', 128);
	good[128] = '\0';
	make_tmpdir();
	snprintf(path, sizeof(path), "%s/skb", tmpdir);
	snprintf(link_path, sizeof(link_path), "%s/skb-link", tmpdir);

	/* an existing good file is read as it is */
	write_file(path, good, 0600);
	err_clear(&e);
	ck_assert_int_eq(child_env_secret_key_base_load(path, out, &e), 0);
	ck_assert_str_eq(out, good);

	/* too open */
	ck_assert_int_eq(chmod(path, 0644), 0);
	strcpy(out, "untouched");
	ck_assert_int_lt(child_env_secret_key_base_load(path, out, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "0644"));
	ck_assert_str_eq(out, "untouched");

	/* wrong length, not hex */
	write_file(path, "abc", 0600);
	ck_assert_int_lt(child_env_secret_key_base_load(path, out, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "128 hex"));
	good[5] = 'z';
	write_file(path, good, 0600);
	ck_assert_int_lt(child_env_secret_key_base_load(path, out, &e), 0);
	good[5] = 'a';
	{
		char longer[131];
		memset(longer, 'b', 130);
		longer[130] = '\0';
		write_file(path, longer, 0600);
		ck_assert_int_lt(child_env_secret_key_base_load(path, out, &e), 0);
	}

	/* a symbolic link is never followed, even to a good file */
	write_file(path, good, 0600);
	ck_assert_int_eq(symlink(path, link_path), 0);
	ck_assert_int_lt(child_env_secret_key_base_load(link_path, out, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "symbolic link"));

	/* another owner */
	if (geteuid() == 0) {
		ck_assert_int_eq(chown(path, 1000, 1000), 0);
		ck_assert_int_lt(child_env_secret_key_base_load(path, out, &e), 0);
		ck_assert_int_eq(e.cls, ERR_REFUSED);
	}

	/* a missing directory is a failure, not a refusal */
	snprintf(path, sizeof(path), "%s/missing/skb", tmpdir);
	ck_assert_int_lt(child_env_secret_key_base_load(path, out, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	remove_tmpdir();
}
END_TEST

START_TEST(test_session_id)
{
	char a[33], b[33];

	child_env_session_id_generate(a);
	child_env_session_id_generate(b);
	ck_assert_uint_eq(strlen(a), 32);
	ck_assert_uint_eq(strspn(a, "0123456789abcdef"), 32);
	ck_assert_str_ne(a, b);
}
END_TEST

static Suite *child_env_suite(void)
{
	Suite *s = suite_create("child_env");
	TCase *names = tcase_create("names");
	TCase *build = tcase_create("build");
	TCase *secrets = tcase_create("secrets");

	tcase_add_test(names, test_exact_names_dropped);
	tcase_add_test(names, test_near_misses_kept);
	tcase_add_test(names, test_database_url_suffix_dropped);
	tcase_add_test(names, test_prefixes_dropped);
	tcase_add_test(names, test_secret_words_anywhere);
	tcase_add_test(names, test_secret_whole_words_at_end);
	tcase_add_test(names, test_shell_pwd_kept);
	tcase_add_test(names, test_looks_secret_is_the_name_rule_alone);
	tcase_add_test(names, test_userinfo_values);
	suite_add_tcase(s, names);

	tcase_add_test(build, test_pass_env);
	tcase_add_test(build, test_order_and_overrides);
	tcase_add_test(build, test_first_of_repeated_name_wins);
	tcase_add_test(build, test_platform_variables_removed_when_unset);
	tcase_add_test(build, test_bad_entries_refused);
	tcase_add_test(build, test_empty_request);
	tcase_add_test(build, test_port_only_via_with_port);
	tcase_add_test(build, test_identity);
	tcase_add_test(build, test_run_user_path);
	tcase_add_test(build, test_caches);
	suite_add_tcase(s, build);

	tcase_add_test(secrets, test_secret_key_base_created_and_kept);
	tcase_add_test(secrets, test_secret_key_base_refusals);
	tcase_add_test(secrets, test_session_id);
	suite_add_tcase(s, secrets);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(child_env_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
