/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_safe.h"
#include "scrub.h"
#include "session_env.h"
#include "strv.h"

static char *caller[] = {
    "ANTHROPIC_API_KEY=sk-ant-caller-0123456789",
    "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-caller-0123",
    "ANTHROPIC_BASE_URL=http://caller.invalid",
    "GITHUB_TOKEN=ghp_notpassedon0123456789",
    "PATH=/caller/bin",
    NULL,
};
static char *spec_env[] = {
    "RAILS_ENV=sandbox",
    "ANTHROPIC_API_KEY=sk-ant-from-the-spec-000",
    "LD_PRELOAD=/x.so",
    "HOME=/spec/home",
    NULL,
};
static char *request_env[] = {
    "ACTION_AGENT_SANDBOX_SESSION_ID=s1",
    "ANTHROPIC_BASE_URL=http://127.0.0.1:9",
    "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-request",
    "GIT_CONFIG_COUNT=7",
    "RAILS_ENV=test",
    NULL,
};

static char **build(enum session_mode mode)
{
	struct session_env_spec sp = {
	    .mode = mode,
	    .spec_env = spec_env,
	    .request_env = request_env,
	    .caller_env = caller,
	    .home = "/home/claude",
	    .user = "claude",
	    .checkout = "/workspace/app",
	};
	char **env = NULL;
	struct err err;

	ck_assert_int_eq(session_env_build(&sp, &env, &err), 0);
	return env;
}

START_TEST(test_api_key_mode)
{
	_cleanup_strv_ char **env = build(SESSION_MODE_API_KEY);

	/* The credential comes from the caller only. */
	ck_assert_str_eq(strv_env_get(env, "ANTHROPIC_API_KEY"), "sk-ant-caller-0123456789");
	ck_assert_str_eq(strv_env_get(env, "CLAUDE_CODE_OAUTH_TOKEN"), "sk-ant-oat01-caller-0123");
	/* The files' non-credential ANTHROPIC_* pass; the caller's other variables do not. */
	ck_assert_str_eq(strv_env_get(env, "ANTHROPIC_BASE_URL"), "http://127.0.0.1:9");
	ck_assert_ptr_null(strv_env_get(env, "GITHUB_TOKEN"));
	ck_assert_ptr_null(strv_env_get(env, "LD_PRELOAD"));
	/* The request comes after the spec. */
	ck_assert_str_eq(strv_env_get(env, "RAILS_ENV"), "test");
	ck_assert_str_eq(strv_env_get(env, "ACTION_AGENT_SANDBOX_SESSION_ID"), "s1");
	/* The fixed part overrides both. */
	ck_assert_str_eq(strv_env_get(env, "HOME"), "/home/claude");
	ck_assert_str_eq(strv_env_get(env, "USER"), "claude");
	ck_assert_str_eq(strv_env_get(env, "LANG"), "C.UTF-8");
	ck_assert_str_eq(strv_env_get(env, "PATH"),
	                 "/home/claude/.local/bin:/usr/local/bin:/usr/bin:/bin");
	ck_assert_str_eq(strv_env_get(env, "DISABLE_AUTOUPDATER"), "1");
	ck_assert_str_eq(strv_env_get(env, "DISABLE_TELEMETRY"), "1");
	ck_assert_str_eq(strv_env_get(env, "DISABLE_ERROR_REPORTING"), "1");
	ck_assert_str_eq(strv_env_get(env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), "1");
	ck_assert_str_eq(strv_env_get(env, "CLAUDE_CONFIG_DIR"), "/home/claude/api");
	ck_assert_str_eq(strv_env_get(env, "GIT_CONFIG_COUNT"), "1");
	ck_assert_str_eq(strv_env_get(env, "GIT_CONFIG_KEY_0"), "safe.directory");
	ck_assert_str_eq(strv_env_get(env, "GIT_CONFIG_VALUE_0"), "/workspace/app");
}
END_TEST

START_TEST(test_sandbox_login_mode)
{
	_cleanup_strv_ char **env = build(SESSION_MODE_SANDBOX_LOGIN);

	for (size_t i = 0; env[i]; i++) {
		ck_assert_msg(strncmp(env[i], "ANTHROPIC_", 10) != 0, "%s reached the CLI", env[i]);
		ck_assert_msg(strncmp(env[i], "CLAUDE_CODE_OAUTH_TOKEN=", 24) != 0, "%s", env[i]);
	}
	ck_assert_str_eq(strv_env_get(env, "CLAUDE_CONFIG_DIR"), "/home/claude/login");
	ck_assert_str_eq(strv_env_get(env, "RAILS_ENV"), "test");
}
END_TEST

START_TEST(test_no_credential_in_the_caller)
{
	char *none[] = {"PATH=/bin", NULL};
	struct session_env_spec sp = {
	    .mode = SESSION_MODE_API_KEY,
	    .request_env = request_env,
	    .caller_env = none,
	    .home = "/h",
	    .user = "u",
	    .path = "/only",
	    .checkout = "/c",
	};
	_cleanup_strv_ char **env = NULL;
	struct err err;

	ck_assert_int_eq(session_env_build(&sp, &env, &err), 0);
	ck_assert_ptr_null(strv_env_get(env, "ANTHROPIC_API_KEY"));
	ck_assert_ptr_null(strv_env_get(env, "CLAUDE_CODE_OAUTH_TOKEN"));
	ck_assert_str_eq(strv_env_get(env, "PATH"), "/only");
}
END_TEST

START_TEST(test_secrets_for_the_scrubber)
{
	struct scrubber *s = scrub_new();
	struct err err;
	size_t len;
	char *out;
	const char *in = "a sk-ant-caller-0123456789 b sk-ant-oat01-caller-0123 c "
	                 "ghp_notpassedon0123456789 d http://caller.invalid";

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(session_env_add_secrets(s, caller, &err), 0);
	out = scrub_string(s, in, strlen(in), &len);
	ck_assert_str_eq(out, "a [REDACTED] b [REDACTED] c [REDACTED] d http://caller.invalid");
	free(out);
	scrub_free(s);
}
END_TEST

static char dir[64];

static void write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void check_settings(const char *want)
{
	struct err err;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	ck_assert_int_ge(fd, 0);
	err_clear(&err);
	rc = session_env_check_login_settings(fd, &err);
	close(fd);
	if (!want) {
		ck_assert_msg(rc == 0, "refused: %s", err.msg);
		return;
	}
	ck_assert_int_lt(rc, 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert_msg(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
}

START_TEST(test_login_settings)
{
	char path[256], claude[256];
	struct err err;

	snprintf(dir, sizeof(dir), "/tmp/test-session-env.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	check_settings(NULL);
	snprintf(claude, sizeof(claude), "%s/.claude", dir);
	ck_assert_int_eq(symlink("/etc", claude), 0);
	check_settings(".claude is a symbolic link");
	unlink(claude);
	ck_assert_int_eq(mkdir(claude, 0755), 0);
	check_settings(NULL);
	write_file(".claude/settings.json", "{\"permissions\": {}, \"env\": {\"FOO\": \"1\"}}");
	check_settings(NULL);
	write_file(".claude/settings.local.json", "{\"apiKeyHelper\": \"/bin/true\"}");
	check_settings("settings.local.json sets apiKeyHelper");
	write_file(".claude/settings.local.json", "{\"env\": {\"ANTHROPIC_AUTH_TOKEN\": \"x\"}}");
	check_settings("sets ANTHROPIC_AUTH_TOKEN");
	write_file(".claude/settings.local.json",
	           "{\"env\": {\"CLAUDE_CODE_OAUTH_TOKEN\": \"x\"}}");
	check_settings("sets CLAUDE_CODE_OAUTH_TOKEN");
	write_file(".claude/settings.local.json", "[1]");
	check_settings("not a JSON object");
	snprintf(path, sizeof(path), "%s/.claude/settings.local.json", dir);
	unlink(path);
	ck_assert_int_eq(symlink("/etc/passwd", path), 0);
	check_settings("settings.local.json is a symbolic link");
	fs_safe_tree_remove(dir, &err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session_env");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_api_key_mode);
	tcase_add_test(tc, test_sandbox_login_mode);
	tcase_add_test(tc, test_no_credential_in_the_caller);
	tcase_add_test(tc, test_secrets_for_the_scrubber);
	tcase_add_test(tc, test_login_settings);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
