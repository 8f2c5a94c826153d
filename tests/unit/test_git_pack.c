/* SPDX-License-Identifier: Apache-2.0 */
/*
 * git_pack's receiver against hostile packs (a guest publishing is not trusted): a delta that
 * resolves into a 1 GiB blob from 167 bytes, a header that declares 2^32-1 objects
 * (tests/data/hostile/make_packs.py wrote both), an object whose header declares more than the
 * limit, zlib data that inflates past its declared size, and an endless stream of valid
 * objects. Each is refused while the bytes arrive, before libgit2 resolves anything.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "git_fetch.h"
#include "git_pack.h"

static char tmpdir[64];
static git_repository *repo;

static void setup(void)
{
	struct err e;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_git_pack.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	ck_assert_msg(git_fetch_global_init(NULL, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(git_repository_init(&repo, tmpdir, 1), 0);
}

static void teardown(void)
{
	char cmd[128];

	git_repository_free(repo);
	git_fetch_global_shutdown();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	(void)!system(cmd);
}

static size_t read_pack(const char *name, char *buf, size_t cap)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "tests/data/hostile/%s", name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "%s: %m", path);
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

/* Append the whole pack, then finish it; the first failure's return value. */
static int receive(const char *buf, size_t len, struct err *e)
{
	_cleanup_git_pack_receiver_ struct git_pack_receiver *r = NULL;
	git_oid none = {{0}};

	ck_assert_msg(git_pack_receiver_new(repo, 0, &r, e) == 0, "%s", e->msg);
	if (git_pack_receiver_append(r, buf, len, e) < 0)
		return -1;
	/* Not refused while arriving: libgit2 resolves it here (the attack). */
	return git_pack_receiver_finish(r, &none, NULL, NULL, NULL, e) < 0 ? -2 : 0;
}

START_TEST(test_delta_bomb_refused)
{
	char buf[4096];
	size_t n = read_pack("delta-bomb.pack", buf, sizeof(buf));
	struct err e;

	ck_assert_uint_lt(n, 200);
	err_clear(&e);
	ck_assert_int_eq(receive(buf, n, &e), -1);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, EFBIG);
	ck_assert_msg(strstr(e.msg, "resolved from a delta (1073741824)"), "%s", e.msg);
}
END_TEST

START_TEST(test_count_bomb_refused)
{
	char buf[4096];
	size_t n = read_pack("count-bomb.pack", buf, sizeof(buf));
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(receive(buf, n, &e), -1);
	ck_assert_int_eq(e.code, EFBIG);
	ck_assert_msg(strstr(e.msg, "object count (4294967295)"), "%s", e.msg);
}
END_TEST

/* A pack header, then one object header for (type, size). */
static size_t obj_header(uint8_t *out, int type, uint64_t size)
{
	size_t n = 0;

	out[n] = (uint8_t)(type << 4 | (size & 15));
	size >>= 4;
	while (size) {
		out[n++] |= 0x80;
		out[n] = size & 0x7f;
		size >>= 7;
	}
	return n + 1;
}

static size_t pack_header(uint8_t *out, uint32_t count)
{
	memcpy(out, "PACK\0\0\0\2", 8);
	out[8] = (uint8_t)(count >> 24);
	out[9] = (uint8_t)(count >> 16);
	out[10] = (uint8_t)(count >> 8);
	out[11] = (uint8_t)count;
	return 12;
}

START_TEST(test_declared_size_and_zlib_bomb_refused)
{
	_cleanup_free_ uint8_t *zeros = calloc(1, 1 << 20);
	uint8_t buf[4096];
	uLongf zlen = sizeof(buf) - 32;
	size_t n;
	struct err e;

	/* A blob that says it is 4 GiB: refused at its header. */
	n = pack_header(buf, 1);
	n += obj_header(buf + n, 3, 4ULL << 30);
	err_clear(&e);
	ck_assert_int_eq(receive((char *)buf, n, &e), -1);
	ck_assert_msg(strstr(e.msg, "the size of an object (4294967296)"), "%s", e.msg);

	/* A blob that says 10 bytes and inflates to 1 MiB. */
	n = pack_header(buf, 1);
	n += obj_header(buf + n, 3, 10);
	ck_assert_int_eq(compress2(buf + n, &zlen, zeros, 1 << 20, 9), Z_OK);
	n += zlen;
	err_clear(&e);
	ck_assert_int_eq(receive((char *)buf, n, &e), -1);
	ck_assert_msg(strstr(e.msg, "inflates past its declared size"), "%s", e.msg);

	/* Not a pack at all. */
	err_clear(&e);
	ck_assert_int_eq(receive("GET / HTTP/1.1\r\n", 16, &e), -1);
	ck_assert_int_eq(e.code, EPROTO);
}
END_TEST

START_TEST(test_endless_pack_refused_at_byte_limit)
{
	_cleanup_git_pack_receiver_ struct git_pack_receiver *r = NULL;
	struct git_pack_limits lim = {.max_bytes = 1 << 20};
	uint8_t obj[256], data[100];
	uLongf zlen = sizeof(obj) - 16;
	size_t n, sent = 0;
	struct err e;
	int rc = 0, i;

	/* Valid blobs, one after another, under a header that promises a million. */
	memset(data, 'x', sizeof(data));
	ck_assert_msg(git_pack_receiver_new(repo, 0, &r, &e) == 0, "%s", e.msg);
	git_pack_receiver_set_limits(r, &lim);
	n = pack_header(obj, 1000000);
	ck_assert_int_eq(git_pack_receiver_append(r, obj, n, &e), 0);
	for (i = 0; i < 100000 && rc == 0; i++) {
		snprintf((char *)data, sizeof(data), "blob %d", i);
		n = obj_header(obj, 3, sizeof(data));
		zlen = sizeof(obj) - 16;
		ck_assert_int_eq(compress2(obj + n, &zlen, data, sizeof(data), 1), Z_OK);
		n += zlen;
		rc = git_pack_receiver_append(r, obj, n, &e);
		sent += n;
	}
	ck_assert_int_lt(rc, 0);
	ck_assert_msg(e.code == EFBIG, "%s (after %zu bytes)", e.msg, sent);
	ck_assert_uint_le(sent, (1 << 20) + n);
	ck_assert_msg(strstr(e.msg, "its size in bytes"), "%s", e.msg);
	/* Refused for good. */
	ck_assert_int_lt(git_pack_receiver_append(r, obj, n, &e), 0);
}
END_TEST

/*
 * A stream libgit2's indexer refuses (an object whose size runs past what it can hold: found
 * by fuzzing, tests/fuzz/corpus/git_pack/indexer-refusal) stays refused: the indexer is not
 * fed again, whatever comes next.
 */
START_TEST(test_indexer_refusal_for_good)
{
	static const uint8_t bad[] = {'P',  'A',  'C',  'K',  0,    0,    0,    2,    0,   0, 0, 2,
	                              0x6d, 0xb0, 0x80, 0x20, 0x78, 0xda, 0xed, 0x09, 0,   0, 0, 0,
	                              0,    0,    0,    0xc1, 0x01, 0x01, 'y',  'n',  'c', 0, 0, 0};
	_cleanup_git_pack_receiver_ struct git_pack_receiver *r = NULL;
	struct err e;

	for (unsigned flags = 0; flags <= GIT_PACK_INTO_EMPTY; flags += GIT_PACK_INTO_EMPTY) {
		ck_assert_msg(git_pack_receiver_new(repo, flags, &r, &e) == 0, "%s", e.msg);
		ck_assert_int_eq(git_pack_receiver_append(r, bad, 6, &e), 0);
		ck_assert_int_lt(git_pack_receiver_append(r, bad + 6, sizeof(bad) - 6, &e), 0);
		ck_assert_msg(strstr(e.msg, "indexing the received pack"), "%s", e.msg);
		err_clear(&e);
		ck_assert_int_lt(git_pack_receiver_append(r, "PACK", 4, &e), 0);
		ck_assert_msg(strstr(e.msg, "indexing the received pack"), "%s", e.msg);
		git_pack_receiver_free(TAKE_PTR(r));
	}
}
END_TEST

static Suite *git_pack_suite(void)
{
	Suite *s = suite_create("git_pack");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_delta_bomb_refused);
	tcase_add_test(tc, test_count_bomb_refused);
	tcase_add_test(tc, test_declared_size_and_zlib_bomb_refused);
	tcase_add_test(tc, test_endless_pack_refused_at_byte_limit);
	tcase_add_test(tc, test_indexer_refusal_for_good);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(git_pack_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
