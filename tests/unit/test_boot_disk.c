/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot_disk: a workspace's disk use by walking it, and the budget that fails closed when a walk
 * cannot measure (a tree deeper than the walk goes is not "under budget").
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot_disk.h"

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_boot_disk.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Write n bytes of data (not a hole) to name in the directory dfd. */
static void write_bytes(int dfd, const char *name, size_t n)
{
	char buf[65536];
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	memset(buf, 'x', sizeof(buf));
	for (size_t done = 0; done < n; done += sizeof(buf))
		ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	ck_assert_int_eq(fsync(fd), 0);
	close(fd);
}

START_TEST(test_usage_counts_files)
{
	uint64_t used = 0;
	struct err e;
	int d = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	write_bytes(d, "a", 1 << 20);
	close(d);
	ck_assert_int_eq(boot_disk_usage(tmpdir, &used, &e), 0);
	ck_assert_uint_ge(used, 1 << 20);
}
END_TEST

START_TEST(test_too_deep_fails_closed)
{
	struct boot_disk_budget b;
	uint64_t used = 0;
	struct err e;
	int d = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	/* Deeper than the walk goes. */
	for (int i = 0; i < BOOT_DISK_MAX_DEPTH + 4; i++) {
		int sub;
		ck_assert_int_eq(mkdirat(d, "d", 0700), 0);
		sub = openat(d, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(sub, 0);
		close(d);
		d = sub;
	}
	ck_assert_int_lt(boot_disk_usage(tmpdir, &used, &e), 0);
	ck_assert_int_eq(e.code, ELOOP);
	ck_assert_ptr_nonnull(strstr(e.msg, "levels deep"));
	/* A budget of 4 MiB: the walk cannot measure, so the filesystem's counters decide. */
	boot_disk_budget_init(&b, tmpdir, tmpdir, 4 << 20);
	ck_assert_int_eq(boot_disk_budget_check(&b, true, &used), 0);
	ck_assert(b.broken);
	/* 8 MiB written at the bottom, where no walk reaches: over the budget all the same. */
	write_bytes(d, "hidden", 8 << 20);
	close(d);
	ck_assert_int_eq(boot_disk_budget_check(&b, true, &used), 1);
	ck_assert_uint_gt(used, 4 << 20);
}
END_TEST

/*
 * A state directory on another filesystem than the workspace: what is written there shows in
 * the counters (each filesystem counted, told apart by device), and the budget sees it.
 */
START_TEST(test_state_dir_on_another_filesystem)
{
	char state[64] = "/dev/shm/test_boot_disk_state.XXXXXX", cmd[128];
	struct boot_disk_budget b;
	struct stat ws, sd;
	uint64_t used = 0;
	int d;

	if (!mkdtemp(state))
		return; /* no /dev/shm here: nothing to compare */
	ck_assert_int_eq(stat(tmpdir, &ws), 0);
	ck_assert_int_eq(stat(state, &sd), 0);
	if (ws.st_dev != sd.st_dev) {
		boot_disk_budget_init(&b, tmpdir, state, 4 << 20);
		ck_assert_int_eq(boot_disk_budget_check(&b, true, &used), 0);
		d = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		write_bytes(d, "log", 8 << 20);
		close(d);
		ck_assert_int_eq(boot_disk_budget_check(&b, true, &used), 1);
		ck_assert_uint_ge(used, 8 << 20);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("boot_disk");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_usage_counts_files);
	tcase_add_test(tc, test_too_deep_fails_closed);
	tcase_add_test(tc, test_state_dir_on_another_filesystem);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
