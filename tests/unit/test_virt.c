/* SPDX-License-Identifier: Apache-2.0 */
/* virt_in_container(): the guest tells a container from a VM (so it never opens vsock there). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "virt.h"

static char root[64];

static void put(const char *rel, const char *data, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void setup(void)
{
	char path[256];

	snprintf(root, sizeof(root), "/tmp/test-virt.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/run", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/systemd", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/1", root);
	mkdir(path, 0755);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_vm_is_not_a_container)
{
	static const char env[] = "HOME=/\0TERM=linux\0";

	put("proc/1/environ", env, sizeof(env) - 1);
	ck_assert(!virt_in_container(root));
}
END_TEST

START_TEST(test_nothing_readable_is_not_a_container)
{
	ck_assert(!virt_in_container(root));
}
END_TEST

START_TEST(test_systemd_marker)
{
	put("run/systemd/container", "lxc\n", 4);
	ck_assert(virt_in_container(root));
}
END_TEST

START_TEST(test_pid1_environment)
{
	static const char env[] = "HOME=/\0container=lxc\0TERM=linux\0";

	put("proc/1/environ", env, sizeof(env) - 1);
	ck_assert(virt_in_container(root));
}
END_TEST

START_TEST(test_empty_container_variable)
{
	static const char env[] = "container=\0notcontainer=lxc\0";

	put("proc/1/environ", env, sizeof(env) - 1);
	ck_assert(!virt_in_container(root));
}
END_TEST

static Suite *virt_suite(void)
{
	Suite *s = suite_create("virt");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_vm_is_not_a_container);
	tcase_add_test(tc, test_nothing_readable_is_not_a_container);
	tcase_add_test(tc, test_systemd_marker);
	tcase_add_test(tc, test_pid1_environment);
	tcase_add_test(tc, test_empty_container_variable);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(virt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
