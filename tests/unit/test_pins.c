/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file.h"
#include "keys.h"
#include "pins.h"

static char tmpdir[64], pins[96], lock[112];
static struct keypair *a, *b;

static void setup(void)
{
	struct err e;

	strcpy(tmpdir, "/tmp/test-pins-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(pins, sizeof(pins), "%s/known_guests", tmpdir);
	snprintf(lock, sizeof(lock), "%s.lock", pins);
	ck_assert_int_eq(keys_generate(&a, &e), 0);
	ck_assert_int_eq(keys_generate(&b, &e), 0);
}

static void teardown(void)
{
	unlink(pins);
	unlink(lock);
	rmdir(tmpdir);
	keys_free(a);
	keys_free(b);
}

static char *contents(void)
{
	char *buf = NULL;
	struct err e;

	ck_assert_int_ge(file_read_capped(AT_FDCWD, pins, 1 << 20, READ_MISSING_OK, &buf, NULL, &e),
	                 0);
	return buf;
}

START_TEST(test_first_use_then_match)
{
	_cleanup_free_ char *text = NULL, *line = NULL, *expect = NULL;
	uint8_t pk[KEYS_PUBLIC_LEN];
	struct err e;

	ck_assert_int_eq(pins_lookup(pins, "web-1", pk, &e), 0);
	/* Unknown instance and no permission to pin: refused. */
	ck_assert_int_lt(pins_verify(pins, "web-1", a->pk, 0, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "no key is pinned for web-1"));
	ck_assert_int_eq(pins_verify(pins, "web-1", a->pk, PINS_ACCEPT_NEW, &e), PINS_ADDED);
	ck_assert_int_eq(pins_lookup(pins, "web-1", pk, &e), 1);
	ck_assert_mem_eq(pk, a->pk, KEYS_PUBLIC_LEN);
	ck_assert_int_eq(pins_verify(pins, "web-1", a->pk, 0, &e), PINS_MATCH);
	text = contents();
	line = keys_format_public(a->pk, NULL);
	ck_assert_int_ge(asprintf(&expect, "web-1 %s\n", line), 0);
	ck_assert_str_eq(text, expect);
}
END_TEST

START_TEST(test_changed_key_refused_unless_told)
{
	_cleanup_free_ char *before = NULL, *after = NULL;
	char fa[KEYS_FINGERPRINT_MAX], fb[KEYS_FINGERPRINT_MAX];
	uint8_t pk[KEYS_PUBLIC_LEN];
	struct err e;

	ck_assert_int_eq(pins_verify(pins, "web-1", a->pk, PINS_ACCEPT_NEW, &e), PINS_ADDED);
	before = contents();
	ck_assert_int_eq(pins_verify(pins, "web-1", b->pk, PINS_ACCEPT_NEW, &e), -EKEYREJECTED);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	keys_fingerprint(a->pk, fa);
	keys_fingerprint(b->pk, fb);
	ck_assert_ptr_nonnull(strstr(e.msg, "the key of web-1 changed"));
	ck_assert_ptr_nonnull(strstr(e.msg, fa));
	ck_assert_ptr_nonnull(strstr(e.msg, fb));
	after = contents();
	ck_assert_str_eq(before, after);

	ck_assert_int_eq(pins_verify(pins, "web-1", b->pk, PINS_REPLACE, &e), PINS_REPLACED);
	ck_assert_int_eq(pins_lookup(pins, "web-1", pk, &e), 1);
	ck_assert_mem_eq(pk, b->pk, KEYS_PUBLIC_LEN);
	ck_assert_int_eq(pins_verify(pins, "web-1", a->pk, 0, &e), -EKEYREJECTED);
}
END_TEST

START_TEST(test_other_lines_kept)
{
	_cleanup_free_ char *text = NULL, *la = NULL, *lb = NULL, *lb_bare = NULL, *expect = NULL;
	uint8_t pk[KEYS_PUBLIC_LEN];
	struct err e;

	la = keys_format_public(a->pk, NULL);
	lb = keys_format_public(b->pk, "rebuilt");
	ck_assert_int_ge(
	    asprintf(&text, "# pinned guests\nweb-10 %s\n\nweb-1 %s\nweb-1 %s\n", la, la, lb), 0);
	ck_assert_int_eq(
	    file_write_atomic(pins, text, strlen(text), 0644, (uid_t)-1, (gid_t)-1, &e), 0);
	free(text);
	/* "web-1" is not "web-10"; the first line of web-1 counts. */
	ck_assert_int_eq(pins_lookup(pins, "web-1", pk, &e), 1);
	ck_assert_mem_eq(pk, a->pk, KEYS_PUBLIC_LEN);
	ck_assert_int_eq(pins_verify(pins, "web-1", b->pk, PINS_REPLACE, &e), PINS_REPLACED);
	text = contents();
	lb_bare = keys_format_public(b->pk, NULL);
	ck_assert_int_ge(asprintf(&expect, "# pinned guests\nweb-10 %s\n\nweb-1 %s\n", la, lb_bare),
	                 0);
	ck_assert_str_eq(text, expect);
	ck_assert_int_eq(pins_remove(pins, "web-1", &e), 1);
	ck_assert_int_eq(pins_remove(pins, "web-1", &e), 0);
	ck_assert_int_eq(pins_lookup(pins, "web-10", pk, &e), 1);
}
END_TEST

START_TEST(test_names_validated)
{
	uint8_t pk[KEYS_PUBLIC_LEN];
	char long_name[300];
	struct err e;

	ck_assert(pins_name_valid("vsock:42"));
	ck_assert(pins_name_valid("unix:/run/sandbox/web-1.sock"));
	ck_assert(!pins_name_valid(""));
	ck_assert(!pins_name_valid("two words"));
	ck_assert(!pins_name_valid("#comment"));
	ck_assert(!pins_name_valid("tab\there"));
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	ck_assert(!pins_name_valid(long_name));
	ck_assert_int_eq(pins_lookup(pins, "a b", pk, &e), -EINVAL);
	ck_assert_int_eq(pins_verify(pins, "", a->pk, PINS_ACCEPT_NEW, &e), -EINVAL);
}
END_TEST

START_TEST(test_concurrent_pinning_loses_nothing)
{
	enum { N = 8 };
	pid_t pids[N];
	struct err e;

	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			char name[32];
			snprintf(name, sizeof(name), "instance-%d", i);
			for (int round = 0; round < 20; round++)
				if (pins_verify(pins, name, i % 2 ? a->pk : b->pk,
				                PINS_ACCEPT_NEW | PINS_REPLACE, &e) < 0)
					_exit(1);
			_exit(0);
		}
	}
	for (int i = 0; i < N; i++) {
		int status;
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	for (int i = 0; i < N; i++) {
		char name[32];
		uint8_t pk[KEYS_PUBLIC_LEN];
		snprintf(name, sizeof(name), "instance-%d", i);
		ck_assert_int_eq(pins_lookup(pins, name, pk, &e), 1);
		ck_assert_mem_eq(pk, i % 2 ? a->pk : b->pk, KEYS_PUBLIC_LEN);
	}
}
END_TEST

static Suite *pins_suite(void)
{
	Suite *s = suite_create("pins");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_first_use_then_match);
	tcase_add_test(tc, test_changed_key_refused_unless_told);
	tcase_add_test(tc, test_other_lines_kept);
	tcase_add_test(tc, test_names_validated);
	tcase_add_test(tc, test_concurrent_pinning_loses_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pins_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
