/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "authkeys.h"
#include "file.h"
#include "keys.h"

static char tmpdir[64], keydir[96], sysfile[96];
static struct keypair *k[6];

static void setup(void)
{
	struct err e;

	strcpy(tmpdir, "/tmp/test-authkeys-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(keydir, sizeof(keydir), "%s/keys.d", tmpdir);
	snprintf(sysfile, sizeof(sysfile), "%s/authorized_keys", tmpdir);
	ck_assert_int_eq(mkdir(keydir, 0755), 0);
	for (size_t i = 0; i < ELEMENTSOF(k); i++)
		ck_assert_int_eq(keys_generate(&k[i], &e), 0);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void teardown(void)
{
	nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	for (size_t i = 0; i < ELEMENTSOF(k); i++)
		keys_free(k[i]);
}

/* The public lines of the given keys, one per line, after a prefix. */
static void write_keys(const char *path, mode_t mode, const char *prefix, int a, int b)
{
	char text[2048];
	size_t n = (size_t)snprintf(text, sizeof(text), "%s", prefix);
	struct err e;

	for (int i = a; i <= b; i++) {
		char *line = keys_format_public(k[i]->pk, "key");
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s %d\n", line, i);
		free(line);
	}
	ck_assert_int_eq(file_write_atomic(path, text, n, mode, (uid_t)-1, (gid_t)-1, &e), 0);
}

static char *in_dir(const char *name)
{
	static char buf[4][160];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", keydir, name);
	return p;
}

START_TEST(test_file_and_directory)
{
	_cleanup_authkeys_ struct authkeys *ak = NULL;
	const struct authkey *found;
	struct err e;
	char src[160];

	write_keys(
	    sysfile, 0644,
	    "# baked into the image\n\n   \nsandbox-ed25519 not-base64 broken\n"
	    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDQKqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
	    0, 0);
	write_keys(in_dir("instance-a.pub"), 0644, "", 1, 1);
	write_keys(in_dir("instance-b.pub"), 0600, "", 2, 3);
	write_keys(in_dir("notes.txt"), 0644, "", 4, 4);   /* not *.pub */
	write_keys(in_dir(".hidden.pub"), 0644, "", 4, 4); /* hidden */
	write_keys(in_dir("open.pub"), 0666, "", 5, 5);    /* writable by anyone */
	ck_assert_int_eq(symlink(sysfile, in_dir("link.pub")), 0);

	ck_assert_int_eq(authkeys_new(sysfile, keydir, &ak, &e), 0);
	ck_assert(authkeys_has_sources(ak));
	ck_assert_uint_eq(authkeys_count(ak), 0); /* nothing read before a reload */
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_uint_eq(authkeys_count(ak), 4);
	for (int i = 0; i <= 3; i++)
		ck_assert_ptr_nonnull(authkeys_find(ak, k[i]->pk));
	ck_assert_ptr_null(authkeys_find(ak, k[4]->pk));
	ck_assert_ptr_null(authkeys_find(ak, k[5]->pk));
	found = authkeys_find(ak, k[0]->pk);
	snprintf(src, sizeof(src), "%s:6", sysfile);
	ck_assert_str_eq(found->source, src);
	ck_assert_str_eq(found->comment, "key 0");
	found = authkeys_find(ak, k[3]->pk);
	ck_assert_str_eq(found->source, in_dir("instance-b.pub:2"));
}
END_TEST

START_TEST(test_reload_sees_changes)
{
	_cleanup_authkeys_ struct authkeys *ak = NULL;
	struct err e;

	ck_assert_int_eq(authkeys_new(sysfile, keydir, &ak, &e), 0);
	ck_assert_int_eq(authkeys_add(ak, k[5]->pk, "from the command line", &e), 0);
	/* Missing file, empty directory: no keys, no error. */
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_uint_eq(authkeys_count(ak), 1);

	write_keys(in_dir("x.pub"), 0644, "", 1, 1);
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_ptr_nonnull(authkeys_find(ak, k[1]->pk));

	/* Rewritten in place within the same second: still seen. */
	write_keys(in_dir("x.pub"), 0644, "", 2, 2);
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_ptr_null(authkeys_find(ak, k[1]->pk));
	ck_assert_ptr_nonnull(authkeys_find(ak, k[2]->pk));

	ck_assert_int_eq(unlink(in_dir("x.pub")), 0);
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_ptr_null(authkeys_find(ak, k[2]->pk));
	ck_assert_ptr_nonnull(authkeys_find(ak, k[5]->pk)); /* added keys stay */

	/* The whole directory gone: no keys from it. */
	ck_assert_int_eq(rmdir(keydir), 0);
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_uint_eq(authkeys_count(ak), 1);
}
END_TEST

START_TEST(test_untrusted_directory_ignored)
{
	_cleanup_authkeys_ struct authkeys *ak = NULL;
	struct err e;

	write_keys(in_dir("a.pub"), 0644, "", 1, 1);
	ck_assert_int_eq(chmod(keydir, 0777), 0);
	ck_assert_int_eq(authkeys_new(NULL, keydir, &ak, &e), 0);
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_uint_eq(authkeys_count(ak), 0);
	ck_assert_int_eq(chmod(keydir, 0755), 0);
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_uint_eq(authkeys_count(ak), 1);
}
END_TEST

START_TEST(test_read_error_fails_closed)
{
	_cleanup_authkeys_ struct authkeys *ak = NULL;
	char bad[160];
	struct err e;

	write_keys(in_dir("a.pub"), 0644, "", 1, 1);
	write_keys(sysfile, 0644, "", 2, 2);
	ck_assert_int_eq(authkeys_new(sysfile, keydir, &ak, &e), 0);
	ck_assert_int_eq(authkeys_reload(ak, &e), 0);
	ck_assert_uint_eq(authkeys_count(ak), 2);
	authkeys_free(ak);

	/* The file's path runs through a regular file: not missing, unreadable. */
	snprintf(bad, sizeof(bad), "%s/authorized_keys", sysfile);
	ck_assert_int_eq(authkeys_new(bad, keydir, &ak, &e), 0);
	ck_assert_int_eq(authkeys_add(ak, k[0]->pk, "added", &e), 0);
	ck_assert_int_lt(authkeys_reload(ak, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "cannot load the authorized keys"));
	ck_assert_ptr_null(authkeys_find(ak, k[1]->pk));
	ck_assert_uint_eq(authkeys_count(ak), 1);
}
END_TEST

START_TEST(test_limits)
{
	_cleanup_authkeys_ struct authkeys *ak = NULL;
	_cleanup_free_ char *text = NULL;
	char b64[64], *line = NULL;
	size_t len, n = 0;
	struct err e;

	/*
	 * One key more than allowed (the same key on every line still counts), in the shorter
	 * line format of earlier versions, so that the file stays below its size limit.
	 */
	sodium_bin2base64(b64, sizeof(b64), k[0]->pk, KEYS_PUBLIC_LEN,
	                  sodium_base64_VARIANT_ORIGINAL);
	ck_assert_int_ge(asprintf(&line, "sandbox-ed25519 %s", b64), 0);
	len = strlen(line);
	text = malloc((len + 1) * (AUTHKEYS_MAX + 1));
	for (int i = 0; i <= AUTHKEYS_MAX; i++) {
		memcpy(text + n, line, len);
		n += len;
		text[n++] = '\n';
	}
	free(line);
	ck_assert_int_eq(file_write_atomic(sysfile, text, n, 0644, (uid_t)-1, (gid_t)-1, &e), 0);
	ck_assert_int_eq(authkeys_new(sysfile, NULL, &ak, &e), 0);
	ck_assert_int_lt(authkeys_reload(ak, &e), 0);
	ck_assert_int_eq(e.code, E2BIG);
	ck_assert_uint_eq(authkeys_count(ak), 0);

	/* A file over the size limit. */
	text = realloc(text, AUTHKEYS_FILE_MAX + 2);
	memset(text, '#', AUTHKEYS_FILE_MAX + 1);
	text[AUTHKEYS_FILE_MAX + 1] = '\n';
	ck_assert_int_eq(
	    file_write_atomic(sysfile, text, AUTHKEYS_FILE_MAX + 2, 0644, (uid_t)-1, (gid_t)-1, &e),
	    0);
	ck_assert_int_lt(authkeys_reload(ak, &e), 0);
	ck_assert_int_eq(e.code, EFBIG);
}
END_TEST

static Suite *authkeys_suite(void)
{
	Suite *s = suite_create("authkeys");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_file_and_directory);
	tcase_add_test(tc, test_reload_sees_changes);
	tcase_add_test(tc, test_untrusted_directory_ignored);
	tcase_add_test(tc, test_read_error_fails_closed);
	tcase_add_test(tc, test_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(authkeys_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
