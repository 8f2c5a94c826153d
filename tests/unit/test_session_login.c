/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "session_login.h"

#define URL                                                                                        \
	"https://claude.com/cai/oauth/authorize?code=true&client_id=9d1c&response_type=code"       \
	"&redirect_uri=https%3A%2F%2Fplatform.claude.com%2Foauth%2Fcode%2Fcallback&state=x-Y_z"

static char *find(const char *text)
{
	return session_login_find_url(text, strlen(text));
}

START_TEST(test_the_clis_output)
{
	/* As 2.1.197 prints it under a terminal. */
	char *u =
	    find("Opening browser to sign in\xe2\x80\xa6\r\nIf the browser didn't open, visit: " URL
	         "\r\nPaste code here if prompted > ");

	ck_assert_ptr_nonnull(u);
	ck_assert_str_eq(u, URL);
	free(u);
	u = find("visit: \x1b[1m" URL "\x1b[0m\n");
	ck_assert_ptr_nonnull(u);
	ck_assert_str_eq(u, URL);
	free(u);
	u = find("\x1b]8;;" URL
	         "\x1b\\link\x1b]8;;\x1b\\ then https://claude.ai/oauth/authorize?a=1 ");
	ck_assert_ptr_nonnull(u);
	ck_assert_str_eq(u, "https://claude.ai/oauth/authorize?a=1");
	free(u);
}
END_TEST

START_TEST(test_only_the_vendors_pages)
{
	ck_assert(session_login_url_allowed(URL));
	ck_assert(session_login_url_allowed("https://console.anthropic.com/oauth/authorize?x=1"));
	ck_assert(!session_login_url_allowed("https://claude.com/cai/oauth/authorize?"));
	ck_assert(!session_login_url_allowed("http://claude.com/cai/oauth/authorize?x=1"));
	ck_assert(
	    !session_login_url_allowed("https://claude.com.evil.example/oauth/authorize?x=1"));
	ck_assert(
	    !session_login_url_allowed("https://evil.example/?https://claude.ai/oauth/authorize?"));
	ck_assert(!session_login_url_allowed("https://claude.ai/oauth/authorize?x=\"><script>"));
	ck_assert(!session_login_url_allowed("https://claude.ai/oauth/authorize?x=1 y"));
	ck_assert_ptr_null(find("visit: https://evil.example/oauth/authorize?code=true\n"));
	ck_assert_ptr_null(find("no url at all"));
	ck_assert_ptr_null(find(""));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session_login");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_the_clis_output);
	tcase_add_test(tc, test_only_the_vendors_pages);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
