/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "strv.h"

START_TEST(test_env_set_replaces_in_place)
{
	_cleanup_strv_ char **env = NULL;

	ck_assert_int_eq(strv_env_set(&env, "A", "1"), 0);
	ck_assert_int_eq(strv_env_set(&env, "B", "2"), 0);
	ck_assert_int_eq(strv_env_set(&env, "A", "3"), 0);
	ck_assert_uint_eq(strv_length(env), 2);
	ck_assert_str_eq(env[0], "A=3");
	ck_assert_str_eq(strv_env_get(env, "B"), "2");
	ck_assert_ptr_null(strv_env_get(env, "AB"));
	strv_env_unset(env, "A");
	ck_assert_uint_eq(strv_length(env), 1);
	ck_assert_str_eq(env[0], "B=2");
}
END_TEST

START_TEST(test_env_name_valid)
{
	ck_assert(strv_env_name_valid("_A1"));
	ck_assert(strv_env_name_valid("rails_env"));
	ck_assert(!strv_env_name_valid("1A"));
	ck_assert(!strv_env_name_valid("A-B"));
	ck_assert(!strv_env_name_valid(""));
	ck_assert(!strv_env_name_valid("A=B"));
}
END_TEST

START_TEST(test_err_wrap_keeps_class)
{
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(err_set(&e, ERR_REFUSED, 22, "inner %d", 1), -22);
	err_wrap(&e, "outer");
	ck_assert_str_eq(e.msg, "outer: inner 1");
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, 22);
}
END_TEST

static Suite *strv_suite(void)
{
	Suite *s = suite_create("strv");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_env_set_replaces_in_place);
	tcase_add_test(tc, test_env_name_valid);
	tcase_add_test(tc, test_err_wrap_keeps_class);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(strv_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
