/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_safe.h"
#include "session_request.h"
#include "strv.h"

static int parse(const char *json, struct session_request *r, struct err *err)
{
	err_clear(err);
	return session_request_parse(json, strlen(json), r, err);
}

/* Refused, with want in the message. */
static void refused(const char *json, const char *want)
{
	struct session_request r = {0};
	struct err err;

	ck_assert_msg(parse(json, &r, &err) < 0, "accepted: %s", json);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert_msg(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
	ck_assert_ptr_null(r.argv);
}

START_TEST(test_the_platforms_request)
{
	struct session_request r;
	struct err err;

	ck_assert_int_eq(
	    parse("{\"argv\": [\"claude\", \"-p\", \"--output-format\", \"stream-json\", "
	          "\"--max-turns\", \"5\"], \"mode\": \"sandbox_login\", \"timeout\": "
	          "900, \"env\": {\"ACTION_AGENT_SANDBOX_SESSION_ID\": \"abc\"}, "
	          "\"pathspecs\": [\":(exclude)vendor\"], \"max_diff_bytes\": 5000, "
	          "\"later\": true}",
	          &r, &err),
	    0);
	ck_assert_int_eq(strv_length(r.argv), 6);
	ck_assert_str_eq(r.argv[0], "claude");
	ck_assert_str_eq(r.argv[5], "5");
	ck_assert_int_eq(r.mode, SESSION_MODE_SANDBOX_LOGIN);
	ck_assert_str_eq(session_request_mode_name(r.mode), "sandbox_login");
	ck_assert_uint_eq(r.timeout, 900);
	ck_assert_str_eq(strv_env_get(r.env, "ACTION_AGENT_SANDBOX_SESSION_ID"), "abc");
	ck_assert_str_eq(r.pathspecs[0], ":(exclude)vendor");
	ck_assert_ptr_null(r.pathspecs[1]);
	ck_assert_uint_eq(r.max_diff_bytes, 5000);
	session_request_dispose(&r);
}
END_TEST

START_TEST(test_defaults)
{
	struct session_request r;
	struct err err;

	ck_assert_int_eq(parse("{\"argv\": [\"claude\"]}", &r, &err), 0);
	ck_assert_int_eq(r.mode, SESSION_MODE_API_KEY);
	ck_assert_uint_eq(r.timeout, SESSION_DEFAULT_TIMEOUT);
	ck_assert_uint_eq(r.max_diff_bytes, SESSION_DEFAULT_DIFF_BYTES);
	ck_assert_ptr_null(r.env);
	ck_assert_ptr_null(r.pathspecs);
	ck_assert(!r.live);
	ck_assert(!r.dangerously_no_sandbox);
	ck_assert_uint_eq(r.approval_timeout, SESSION_DEFAULT_APPROVAL_TIMEOUT);
	session_request_dispose(&r);
}
END_TEST

START_TEST(test_a_long_lived_request)
{
	struct session_request r;
	struct err err;

	ck_assert_int_eq(parse("{\"argv\": [\"claude\"], \"live\": true, \"approval_timeout\": 7, "
	                       "\"dangerously_no_sandbox\": true}",
	                       &r, &err),
	                 0);
	ck_assert(r.live);
	ck_assert(r.dangerously_no_sandbox);
	ck_assert_uint_eq(r.approval_timeout, 7);
	session_request_dispose(&r);
	refused("{\"argv\": [\"claude\"], \"live\": 1}", "`live` must be true or false");
	refused("{\"argv\": [\"claude\"], \"dangerously_no_sandbox\": \"yes\"}",
	        "`dangerously_no_sandbox` must be true or false");
	refused("{\"argv\": [\"claude\"], \"approval_timeout\": 0}",
	        "`approval_timeout` must be 1 to");
}
END_TEST

START_TEST(test_refusals)
{
	refused("{}", "no `argv`");
	refused("{\"argv\": []}", "no `argv`");
	refused("{\"argv\": null}", "no `argv`");
	refused("{\"argv\": \"claude -p\"}", "`argv` must be a list");
	refused("{\"argv\": [\"claude\", 5]}", "`argv[1]` must be a string");
	refused("{\"argv\": [\"\"]}", "`argv[0]` must not be empty");
	refused("{\"argv\": [\"claude\"], \"mode\": \"root\"}", "`mode`");
	refused("{\"argv\": [\"claude\"], \"mode\": 1}", "`mode`");
	refused("{\"argv\": [\"claude\"], \"timeout\": 0}", "`timeout` must be 1 to 86400");
	refused("{\"argv\": [\"claude\"], \"timeout\": 86401}", "`timeout`");
	refused("{\"argv\": [\"claude\"], \"timeout\": \"60\"}",
	        "`timeout` must be a whole number");
	refused("{\"argv\": [\"claude\"], \"timeout\": 1.5}", "`timeout`");
	refused("{\"argv\": [\"claude\"], \"max_diff_bytes\": -1}", "`max_diff_bytes`");
	refused("{\"argv\": [\"claude\"], \"env\": [\"A=b\"]}", "`env` must be an object");
	refused("{\"argv\": [\"claude\"], \"env\": {\"A B\": \"x\"}}", "not a valid variable name");
	refused("{\"argv\": [\"claude\"], \"env\": {\"A\": 1}}", "`env.A` must be a string");
	refused("{\"argv\": [\"claude\"], \"pathspecs\": \"x\"}", "`pathspecs` must be a list");
	refused("[\"claude\"]", "must be a JSON object");
	refused("{\"argv\": [\"claude\"]", "not");
	refused("{\"argv\": [\"claude\"]} {}", "request: not");
	refused("{\"argv\": [\"cla\\u0000ude\"]}", "request: not");
}
END_TEST

START_TEST(test_limits)
{
	char *big = malloc(SESSION_REQUEST_MAX_ARG_LEN + 64);
	char *many = malloc(SESSION_REQUEST_MAX_ARGS * 8 + 64);
	size_t n;

	ck_assert_ptr_nonnull(big);
	n = (size_t)sprintf(big, "{\"argv\": [\"");
	memset(big + n, 'a', SESSION_REQUEST_MAX_ARG_LEN + 1);
	strcpy(big + n + SESSION_REQUEST_MAX_ARG_LEN + 1, "\"]}");
	refused(big, "longer than 4096 bytes");
	n = (size_t)sprintf(many, "{\"argv\": [");
	for (int i = 0; i <= SESSION_REQUEST_MAX_ARGS; i++)
		n += (size_t)sprintf(many + n, "%s\"a\"", i ? "," : "");
	strcpy(many + n, "]}");
	refused(many, "more than 64 entries");
	free(big);
	free(many);
}
END_TEST

START_TEST(test_load_from_a_directory)
{
	char dir[] = "/tmp/test-session-request.XXXXXX", path[128];
	struct session_request r;
	struct err err;
	int dfd;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_lt(session_request_load(dfd, &r, &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert_str_eq(err.msg, "there is no request.json");
	snprintf(path, sizeof(path), "%s/request.json", dir);
	ck_assert_int_eq(symlink("/etc/hostname", path), 0);
	ck_assert_int_lt(session_request_load(dfd, &r, &err), 0);
	unlink(path);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"argv\": [\"claude\", \"-p\"]}\n", f);
	fclose(f);
	ck_assert_int_eq(session_request_load(dfd, &r, &err), 0);
	ck_assert_str_eq(r.argv[1], "-p");
	session_request_dispose(&r);
	close(dfd);
	fs_safe_tree_remove(dir, &err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session_request");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_the_platforms_request);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_a_long_lived_request);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_load_from_a_directory);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
