/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "secrets_store.h"
#include "strv.h"

struct seen {
	char **lines;
	const uint8_t *last_value;
};

static int collect(void *userdata, const char *name, enum secret_scope scope, const uint8_t *value,
                   size_t len)
{
	struct seen *s = userdata;
	char buf[256];

	snprintf(buf, sizeof(buf), "%s:%s:%.*s", name, secrets_store_scope_name(scope), (int)len,
	         (const char *)value);
	strv_push(&s->lines, buf);
	s->last_value = value;
	return 0;
}

START_TEST(test_put_replace_drop)
{
	_cleanup_secrets_store_ struct secrets_store *s = NULL;
	struct seen seen = {0};
	struct err err;
	bool replaced = true;

	ck_assert_int_eq(secrets_store_new(&s, &err), 0);
	ck_assert_int_eq(secrets_store_put(s, "GH", SECRET_SCOPE_FETCH, "tok1", 4, &replaced, &err),
	                 0);
	ck_assert(!replaced);
	ck_assert_int_eq(secrets_store_put(s, "KEY", SECRET_SCOPE_BOOT, "sk-1", 4, NULL, &err), 0);
	ck_assert_int_eq(secrets_store_put(s, "AGENT", SECRET_SCOPE_SESSION, "a", 1, NULL, &err),
	                 0);
	ck_assert_int_eq(secrets_store_put(s, "GH", SECRET_SCOPE_BOOT, "tok2", 4, &replaced, &err),
	                 0);
	ck_assert(replaced);
	ck_assert_uint_eq(secrets_store_count(s, SECRET_SCOPE_ANY), 3);
	ck_assert_uint_eq(secrets_store_count(s, SECRET_SCOPE_BOOT), 2);
	ck_assert_int_eq(secrets_store_scope_of(s, "GH"), SECRET_SCOPE_BOOT);
	ck_assert_int_eq(secrets_store_scope_of(s, "NOPE"), -1);

	ck_assert_int_eq(secrets_store_visit(s, SECRET_SCOPE_BOOT, collect, &seen), 0);
	ck_assert_uint_eq(strv_length(seen.lines), 2);
	ck_assert_str_eq(seen.lines[0], "GH:boot:tok2");
	ck_assert_str_eq(seen.lines[1], "KEY:boot:sk-1");
	strv_free(seen.lines);

	ck_assert_int_eq(secrets_store_drop(s, "KEY"), 1);
	ck_assert_int_eq(secrets_store_drop(s, "KEY"), 0);
	ck_assert_uint_eq(secrets_store_drop_scope(s, SECRET_SCOPE_SESSION), 1);
	ck_assert_uint_eq(secrets_store_count(s, SECRET_SCOPE_ANY), 1);
	ck_assert_uint_eq(secrets_store_drop_scope(s, SECRET_SCOPE_ANY), 1);
	ck_assert_uint_eq(secrets_store_count(s, SECRET_SCOPE_ANY), 0);
}
END_TEST

START_TEST(test_refusals)
{
	_cleanup_secrets_store_ struct secrets_store *s = NULL;
	static char big[SECRETS_VALUE_MAX + 1];
	struct err err;

	ck_assert_int_eq(secrets_store_new(&s, &err), 0);
	ck_assert_int_lt(secrets_store_put(s, "1A", SECRET_SCOPE_BOOT, "v", 1, NULL, &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert_int_lt(secrets_store_put(s, "A-B", SECRET_SCOPE_BOOT, "v", 1, NULL, &err), 0);
	ck_assert_int_lt(secrets_store_put(s, "", SECRET_SCOPE_BOOT, "v", 1, NULL, &err), 0);
	ck_assert_int_lt(secrets_store_put(s, "A", 7, "v", 1, NULL, &err), 0);
	ck_assert_int_lt(secrets_store_put(s, "A", SECRET_SCOPE_BOOT, "", 0, NULL, &err), 0);
	ck_assert_int_lt(secrets_store_put(s, "A", SECRET_SCOPE_BOOT, "a\0b", 3, NULL, &err), 0);
	memset(big, 'x', sizeof(big));
	ck_assert_int_lt(secrets_store_put(s, "A", SECRET_SCOPE_BOOT, big, sizeof(big), NULL, &err),
	                 0);
	ck_assert_int_eq(err.code, E2BIG);
	/* The refused value is named nowhere in the message. */
	ck_assert_ptr_null(strstr(err.msg, "xxxxxxxx"));
	ck_assert_int_eq(
	    secrets_store_put(s, "A", SECRET_SCOPE_BOOT, big, SECRETS_VALUE_MAX, NULL, &err), 0);
	for (int i = 1; i < SECRETS_MAX; i++) {
		char name[32];
		snprintf(name, sizeof(name), "S%d", i);
		ck_assert_int_eq(secrets_store_put(s, name, SECRET_SCOPE_FETCH, "v", 1, NULL, &err),
		                 0);
	}
	ck_assert_int_lt(secrets_store_put(s, "ONE_MORE", SECRET_SCOPE_FETCH, "v", 1, NULL, &err),
	                 0);
	ck_assert_int_eq(err.code, ENOSPC);
	/* Replacing still works when full. */
	ck_assert_int_eq(secrets_store_put(s, "S1", SECRET_SCOPE_FETCH, "w", 1, NULL, &err), 0);
	ck_assert(secrets_store_scope_from_string("boot") == SECRET_SCOPE_BOOT);
	ck_assert(secrets_store_scope_from_string("nope") == -1);
	ck_assert(secrets_store_scope_from_string(NULL) == -1);
}
END_TEST

static void on_segv(int sig)
{
	_exit(99);
}

/* Between uses the value's page is inaccessible: reading it kills the reader. */
START_TEST(test_no_access_between_uses)
{
	_cleanup_secrets_store_ struct secrets_store *s = NULL;
	struct seen seen = {0};
	struct err err;
	int status;
	pid_t pid;

	ck_assert_int_eq(secrets_store_new(&s, &err), 0);
	ck_assert_int_eq(
	    secrets_store_put(s, "K", SECRET_SCOPE_BOOT, "secret-value-1", 14, NULL, &err), 0);
	ck_assert_int_eq(secrets_store_visit(s, SECRET_SCOPE_ANY, collect, &seen), 0);
	ck_assert_str_eq(seen.lines[0], "K:boot:secret-value-1");
	strv_free(seen.lines);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		volatile uint8_t c;
		signal(SIGSEGV, on_segv); /* ours, not the sanitizer's report */
		c = seen.last_value[0];
		_exit(c == 's' ? 0 : 3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 99);
}
END_TEST

static Suite *secrets_store_suite(void)
{
	Suite *s = suite_create("secrets_store");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_put_replace_drop);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_no_access_between_uses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(secrets_store_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
