/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "suggest.h"

static const char *const keys[] = {"env", "setup", "manifest", "start", NULL};

START_TEST(test_distance)
{
	ck_assert_uint_eq(suggest_distance("", ""), 0);
	ck_assert_uint_eq(suggest_distance("env", "envs"), 1);
	ck_assert_uint_eq(suggest_distance("strat", "start"), 1); /* a swap costs one */
	ck_assert_uint_eq(suggest_distance("setpu", "setup"), 1);
	ck_assert_uint_eq(suggest_distance("kitten", "sitting"), 3);
	ck_assert_uint_eq(suggest_distance("Setup", "setup"), 0);
	ck_assert_uint_eq(suggest_distance("abc", ""), 3);
	{
		char long_word[80];
		memset(long_word, 'a', sizeof(long_word) - 1);
		long_word[sizeof(long_word) - 1] = '\0';
		ck_assert_uint_eq(suggest_distance(long_word, "a"), SIZE_MAX);
	}
}
END_TEST

START_TEST(test_closest)
{
	ck_assert_str_eq(suggest_closest("envs", keys), "env");
	ck_assert_str_eq(suggest_closest("setpu", keys), "setup");
	ck_assert_str_eq(suggest_closest("strat", keys), "start");
	ck_assert_str_eq(suggest_closest("manfest", keys), "manifest");
	ck_assert_str_eq(suggest_closest("maniefst", keys), "manifest");
	ck_assert_ptr_null(suggest_closest("database", keys));
	ck_assert_ptr_null(suggest_closest("", keys));
	ck_assert_ptr_null(suggest_closest("ev", (const char *const[]){"xy", NULL}));
	ck_assert_ptr_null(suggest_closest("x", keys));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("suggest");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_distance);
	tcase_add_test(tc, test_closest);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
