/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "keys.h"

/* RFC 8032, section 7.1, TEST 1; the fingerprint and base64 computed with Python's hashlib. */
static const uint8_t rfc_seed[32] = {
    0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
    0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
};
static const uint8_t rfc_pk[32] = {
    0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64, 0x07, 0x3a,
    0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a,
};
#define RFC_PK_B64 "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
#define RFC_SEED_B64 "nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A="
/* OpenSSH's wire form of the key, and SHA-256 over it (what ssh-keygen -l prints). */
#define RFC_SSH_B64 "AAAAC3NzaC1lZDI1NTE5AAAAINdamAGCsQq31Uv+08lkBzoO4XLz2qYjJa8CGmj3B1Ea"
#define RFC_FP "SHA256:bbXpuKG6zhzdmnxq256TlqzFBzRl2f6OOg722cYNbU8"
/* A key made by ssh-keygen -t ed25519 -N '' (OpenSSH 9.2), and its fingerprint by ssh-keygen -l. */
#define SSH_KEYGEN_SECRET                                                                          \
	"-----BEGIN OPENSSH PRIVATE KEY-----\n"                                                    \
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"                 \
	"QyNTUxOQAAACACc7LuAfhZS+eIZYRg/xtFQUY+cfLAb5DM9YqEoCZ5rwAAAJh7yqq+e8qq\n"                 \
	"vgAAAAtzc2gtZWQyNTUxOQAAACACc7LuAfhZS+eIZYRg/xtFQUY+cfLAb5DM9YqEoCZ5rw\n"                 \
	"AAAEAb/d6dJGSADUMCCcAvVZ34tsulKk/VNJCboRCpw33qnwJzsu4B+FlL54hlhGD/G0VB\n"                 \
	"Rj5x8sBvkMz1ioSgJnmvAAAAEm1hZGUgYnkgc3NoLWtleWdlbgECAw==\n"                               \
	"-----END OPENSSH PRIVATE KEY-----\n"
#define SSH_KEYGEN_PUBLIC                                                                          \
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAJzsu4B+FlL54hlhGD/G0VBRj5x8sBvkMz1ioSgJnmv made "   \
	"by "                                                                                      \
	"ssh-keygen"
#define SSH_KEYGEN_FP "SHA256:4mH9qm9qSopnnst+XiDKfh9yyWibZCBc0Nyn/lvXUP0"
/* RFC 8032 TEST 1: the signature of the empty message */
static const uint8_t rfc_sig[64] = {
    0xe5, 0x56, 0x43, 0x00, 0xc3, 0x60, 0xac, 0x72, 0x90, 0x86, 0xe2, 0xcc, 0x80, 0x6e, 0x82, 0x8a,
    0x84, 0x87, 0x7f, 0x1e, 0xb8, 0xe5, 0xd9, 0x74, 0xd8, 0x73, 0xe0, 0x65, 0x22, 0x49, 0x01, 0x55,
    0x5f, 0xb8, 0x82, 0x15, 0x90, 0xa3, 0x3b, 0xac, 0xc6, 0x1e, 0x39, 0x70, 0x1c, 0xf9, 0xb4, 0x6b,
    0xd2, 0x5b, 0xf5, 0xf0, 0x59, 0x5b, 0xbe, 0x24, 0x65, 0x51, 0x41, 0x43, 0x8e, 0x7a, 0x10, 0x0b,
};

static char tmpdir[64];

static void dir_setup(void)
{
	strcpy(tmpdir, "/tmp/test-keys-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void dir_teardown(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(tmpdir);
}

static char *path(const char *name)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

START_TEST(test_seed_matches_rfc8032)
{
	_cleanup_keypair_ struct keypair *kp = NULL;
	uint8_t sig[KEYS_SIGNATURE_LEN];
	char fp[KEYS_FINGERPRINT_MAX];
	struct err e;

	ck_assert_int_eq(keys_from_seed(rfc_seed, &kp, &e), 0);
	ck_assert_mem_eq(kp->pk, rfc_pk, 32);
	ck_assert_int_eq(keys_sign(kp, "", 0, sig, &e), 0);
	ck_assert_mem_eq(sig, rfc_sig, 64);
	ck_assert_int_eq(keys_verify(rfc_pk, "", 0, sig), 0);
	keys_fingerprint(rfc_pk, fp);
	ck_assert_str_eq(fp, RFC_FP);
}
END_TEST

START_TEST(test_sign_verify)
{
	_cleanup_keypair_ struct keypair *a = NULL, *b = NULL;
	uint8_t sig[KEYS_SIGNATURE_LEN];
	struct err e;

	ck_assert_int_eq(keys_generate(&a, &e), 0);
	ck_assert_int_eq(keys_generate(&b, &e), 0);
	ck_assert(memcmp(a->pk, b->pk, 32) != 0);
	ck_assert_int_eq(keys_sign(a, "transcript", 10, sig, &e), 0);
	ck_assert_int_eq(keys_verify(a->pk, "transcript", 10, sig), 0);
	ck_assert_int_eq(keys_verify(b->pk, "transcript", 10, sig), -1);
	ck_assert_int_eq(keys_verify(a->pk, "transcripT", 10, sig), -1);
	sig[5] ^= 1;
	ck_assert_int_eq(keys_verify(a->pk, "transcript", 10, sig), -1);
}
END_TEST

START_TEST(test_save_and_load)
{
	_cleanup_keypair_ struct keypair *kp = NULL, *back = NULL;
	_cleanup_free_ char *pub = NULL, *secret = NULL;
	uint8_t sig[KEYS_SIGNATURE_LEN];
	struct stat st;
	struct err e;
	DIR *d;
	struct dirent *de;
	int files = 0;

	ck_assert_int_eq(keys_from_seed(rfc_seed, &kp, &e), 0);
	ck_assert_int_eq(keys_set_comment(kp, "root@build-host", &e), 0);
	ck_assert_int_eq(keys_save(kp, path("host_key"), &e), 0);

	ck_assert_int_eq(stat(path("host_key"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(file_read_capped(AT_FDCWD, path("host_key"), 4096, 0, &secret, NULL, &e),
	                 0);
	/* OpenSSH's private key format (its check numbers are random: compare the frame). */
	ck_assert_msg(
	    strncmp(secret, "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA", 56) == 0,
	    "%s", secret);
	ck_assert_ptr_nonnull(strstr(secret, "\n-----END OPENSSH PRIVATE KEY-----\n"));
	for (const char *l = strchr(secret, '\n') + 1; *l != '-'; l = strchr(l, '\n') + 1)
		ck_assert_uint_le(strcspn(l, "\n"), 70);
	ck_assert_int_eq(stat(path("host_key.pub"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	ck_assert_int_eq(file_read_capped(AT_FDCWD, path("host_key.pub"), 4096, 0, &pub, NULL, &e),
	                 0);
	ck_assert_str_eq(pub, "ssh-ed25519 " RFC_SSH_B64 " root@build-host\n");
	/* No temporary file left behind. */
	d = opendir(tmpdir);
	while ((de = readdir(d)))
		files += de->d_name[0] != '.';
	closedir(d);
	ck_assert_int_eq(files, 2);

	ck_assert_int_eq(keys_load(path("host_key"), &back, &e), 0);
	ck_assert_mem_eq(back->pk, rfc_pk, 32);
	ck_assert_str_eq(back->comment, "root@build-host");
	ck_assert_int_eq(keys_sign(back, "m", 1, sig, &e), 0);
	ck_assert_int_eq(keys_verify(kp->pk, "m", 1, sig), 0);
}
END_TEST

START_TEST(test_save_random_key_round_trip)
{
	_cleanup_keypair_ struct keypair *kp = NULL, *back = NULL;
	struct err e;

	ck_assert_int_eq(keys_generate(&kp, &e), 0);
	ck_assert_int_eq(keys_save(kp, path("k"), &e), 0);
	ck_assert_int_eq(keys_load(path("k"), &back, &e), 0);
	ck_assert_mem_eq(back->pk, kp->pk, 32);
	ck_assert_str_eq(back->comment, "");
}
END_TEST

static void write_file(const char *name, const char *text, mode_t mode)
{
	struct err e;

	ck_assert_int_eq(
	    file_write_atomic(path(name), text, strlen(text), mode, (uid_t)-1, (gid_t)-1, &e), 0);
}

static void load_refused(const char *name, int code, const char *what)
{
	struct keypair *kp = NULL;
	struct err e;

	ck_assert_int_lt(keys_load(path(name), &kp, &e), 0);
	ck_assert_ptr_null(kp);
	ck_assert_int_eq(e.code, code);
	ck_assert_msg(strstr(e.msg, what), "'%s' not in '%s'", what, e.msg);
}

START_TEST(test_load_refusals)
{
	char big[5000];

	write_file("open", "sandbox-ed25519-secret " RFC_SEED_B64 "\n", 0644);
	load_refused("open", EACCES, "accessible by others (mode 0644): chmod 600 it");
	write_file("group", "sandbox-ed25519-secret " RFC_SEED_B64 "\n", 0640);
	load_refused("group", EACCES, "chmod 600");
	write_file("public", "sandbox-ed25519 " RFC_PK_B64 "\n", 0600);
	load_refused("public", EINVAL, "is not an OpenSSH private key");
	write_file("short", "sandbox-ed25519-secret AAAA\n", 0600);
	load_refused("short", EINVAL, "malformed key");
	write_file("junk", "sandbox-ed25519-secret " RFC_SEED_B64 "x\n", 0600);
	load_refused("junk", EINVAL, "malformed key");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	write_file("big", big, 0600);
	load_refused("big", EFBIG, "too large");
	write_file("real", "sandbox-ed25519-secret " RFC_SEED_B64 "\n", 0600);
	{
		char target[128];
		snprintf(target, sizeof(target), "%s", path("real"));
		ck_assert_int_eq(symlink(target, path("link")), 0);
	}
	load_refused("link", ELOOP, "symbolic link");
	load_refused("missing", ENOENT, "cannot open");
	/* OpenSSH keys that are not for us */
	write_file("cut",
	           "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
	           "AAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n",
	           0600);
	load_refused("cut", EINVAL, "malformed key");
	/* "openssh-key-v1", cipher aes256-ctr */
	write_file("encrypted",
	           "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAACmFlczI1"
	           "Ni1jdHIAAAAGYmNyeXB0\n-----END OPENSSH PRIVATE KEY-----\n",
	           0600);
	load_refused("encrypted", EINVAL, "protected by a passphrase");
}
END_TEST

/* Keys ssh-keygen made are read, and their fingerprints are ssh-keygen's. */
START_TEST(test_openssh_interop)
{
	_cleanup_keypair_ struct keypair *kp = NULL;
	_cleanup_free_ char *line = NULL;
	char fp[KEYS_FINGERPRINT_MAX];
	uint8_t pk[32];
	struct err e;

	write_file("ssh_key", SSH_KEYGEN_SECRET, 0600);
	ck_assert_int_eq(keys_load(path("ssh_key"), &kp, &e), 0);
	ck_assert_str_eq(kp->comment, "made by ssh-keygen");
	keys_fingerprint(kp->pk, fp);
	ck_assert_str_eq(fp, SSH_KEYGEN_FP);
	line = keys_format_public(kp->pk, kp->comment);
	ck_assert_str_eq(line, SSH_KEYGEN_PUBLIC);
	ck_assert_int_eq(keys_parse_public(SSH_KEYGEN_PUBLIC, pk, NULL, &e), 0);
	ck_assert_mem_eq(pk, kp->pk, 32);
	/* the format of earlier versions is still read */
	write_file("old", "sandbox-ed25519-secret " RFC_SEED_B64 " old host\n", 0600);
	keys_free(kp);
	kp = NULL;
	ck_assert_int_eq(keys_load(path("old"), &kp, &e), 0);
	ck_assert_mem_eq(kp->pk, rfc_pk, 32);
	ck_assert_str_eq(kp->comment, "old host");
}
END_TEST

START_TEST(test_parse_public)
{
	_cleanup_free_ char *comment = NULL, *comment2 = NULL, *line = NULL;
	uint8_t pk[32];
	struct err e;

	/* the format of earlier versions */
	ck_assert_int_eq(keys_parse_public("sandbox-ed25519 " RFC_PK_B64, pk, &comment, &e), 0);
	ck_assert_mem_eq(pk, rfc_pk, 32);
	ck_assert_str_eq(comment, "");
	free(comment);
	ck_assert_int_eq(keys_parse_public(" \tsandbox-ed25519\t" RFC_PK_B64 "  ci runner #3 \r\n",
	                                   pk, &comment, &e),
	                 0);
	ck_assert_str_eq(comment, "ci runner #3");
	ck_assert_int_eq(keys_parse_public("ssh-ed25519 " RFC_SSH_B64 " x", pk, &comment2, &e), 0);
	ck_assert_mem_eq(pk, rfc_pk, 32);
	ck_assert_str_eq(comment2, "x");
	/* the raw key under the OpenSSH type, another key type under it, another type */
	ck_assert_int_eq(keys_parse_public("ssh-ed25519 " RFC_PK_B64, pk, NULL, &e), -EINVAL);
	ck_assert_int_eq(
	    keys_parse_public(
	        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINdamAGCsQq31Uv+08lkBzoO4XLz2qYjJa8", pk, NULL,
	        &e),
	    -EINVAL);
	ck_assert_int_eq(
	    keys_parse_public("ssh-ed25519 AAAAC3NzaC1lZDI1NTE4AAAAINdamAGCsQq31Uv+08lkBz"
	                      "oO4XLz2qYjJa8CGmj3B1Ea",
	                      pk, NULL, &e),
	    -EINVAL);
	ck_assert_int_eq(keys_parse_public("ssh-rsa " RFC_SSH_B64, pk, NULL, &e), -EINVAL);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(keys_parse_public("sandbox-ed25519", pk, NULL, &e), -EINVAL);
	ck_assert_int_eq(keys_parse_public("sandbox-ed25519 AAAA", pk, NULL, &e), -EINVAL);
	/* 33 bytes */
	ck_assert_int_eq(keys_parse_public("sandbox-ed25519 "
	                                   "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURoA",
	                                   pk, NULL, &e),
	                 -EINVAL);
	ck_assert_int_eq(keys_parse_public("sandbox-ed25519 "
	                                   "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHUR*=",
	                                   pk, NULL, &e),
	                 -EINVAL);

	line = keys_format_public(rfc_pk, "a comment");
	ck_assert_str_eq(line, "ssh-ed25519 " RFC_SSH_B64 " a comment");
	free(line);
	line = keys_format_public(rfc_pk, NULL);
	ck_assert_str_eq(line, "ssh-ed25519 " RFC_SSH_B64);
}
END_TEST

START_TEST(test_comment_single_line)
{
	_cleanup_keypair_ struct keypair *kp = NULL;
	struct err e;

	ck_assert_int_eq(keys_generate(&kp, &e), 0);
	ck_assert_int_lt(keys_set_comment(kp, "two\nlines", &e), 0);
	ck_assert_str_eq(kp->comment, "");
}
END_TEST

static Suite *keys_suite(void)
{
	Suite *s = suite_create("keys");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
	tcase_add_test(tc, test_seed_matches_rfc8032);
	tcase_add_test(tc, test_sign_verify);
	tcase_add_test(tc, test_save_and_load);
	tcase_add_test(tc, test_save_random_key_round_trip);
	tcase_add_test(tc, test_load_refusals);
	tcase_add_test(tc, test_parse_public);
	tcase_add_test(tc, test_openssh_interop);
	tcase_add_test(tc, test_comment_single_line);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(keys_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
