/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file_read_capped on files whose size the kernel reports as 0 (/proc): they are read whole
 * until end-of-file, whatever their length against the first buffer, and never beyond the cap.
 * The files are the test process's own.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "err.h"
#include "file.h"

/* The whole file by stdio, for comparison. */
static size_t stdio_length(const char *path)
{
	FILE *f = fopen(path, "re");
	char buf[4096];
	size_t n, total = 0;

	ck_assert_ptr_nonnull(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		total += n;
	fclose(f);
	return total;
}

/* /proc files shorter and longer than the first buffer (a page) are read to their end. */
START_TEST(test_proc_file_is_read_whole)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	const char *last;
	struct err e;

	ck_assert_msg(file_read_capped(AT_FDCWD, "/proc/self/status", 1 << 20, 0, &buf, &len, &e) ==
	                  0,
	              "%s", e.msg);
	ck_assert_uint_eq(len, strlen(buf));
	/* Its first and its last field: the whole of it (lengths vary as counters grow). */
	ck_assert_int_eq(strncmp(buf, "Name:", 5), 0);
	ck_assert_ptr_nonnull(strstr(buf, "nonvoluntary_ctxt_switches:"));
	ck_assert_int_eq(buf[len - 1], '\n');
	free(buf);
	buf = NULL;
	/* Every mapping's entry ends with its VmFlags line: the last line says the end was read. */
	ck_assert_msg(file_read_capped(AT_FDCWD, "/proc/self/smaps", 1 << 24, 0, &buf, &len, &e) ==
	                  0,
	              "%s", e.msg);
	ck_assert_uint_gt(len, 4096);
	ck_assert_uint_eq(len, strlen(buf));
	ck_assert_int_eq(buf[len - 1], '\n');
	buf[len - 1] = '\0';
	last = strrchr(buf, '\n');
	ck_assert_ptr_nonnull(last);
	ck_assert_msg(strncmp(last + 1, "VmFlags:", 8) == 0, "last line: %s", last + 1);
}
END_TEST

/* /proc/self/cmdline does not change while the test runs: its length is known exactly. */
START_TEST(test_proc_file_over_the_cap_is_refused)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, whole = stdio_length("/proc/self/cmdline");
	struct err e;

	ck_assert_uint_gt(whole, 1);
	ck_assert_int_lt(
	    file_read_capped(AT_FDCWD, "/proc/self/cmdline", whole - 1, 0, &buf, &len, &e), 0);
	ck_assert_int_eq(e.code, EFBIG);
	ck_assert_ptr_null(buf);
	/* Exactly the file's length is allowed. */
	ck_assert_msg(file_read_capped(AT_FDCWD, "/proc/self/cmdline", whole, 0, &buf, &len, &e) ==
	                  0,
	              "%s", e.msg);
	ck_assert_uint_eq(len, whole);
}
END_TEST

static Suite *file_suite(void)
{
	Suite *s = suite_create("file");
	TCase *tc = tcase_create("read_capped");

	tcase_add_test(tc, test_proc_file_is_read_whole);
	tcase_add_test(tc, test_proc_file_over_the_cap_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(file_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
