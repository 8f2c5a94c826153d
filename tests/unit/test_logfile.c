/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "clock.h"
#include "logfile.h"
#include "logtimes.h"
#include "scrub.h"

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_logfile.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *tpath(const char *name)
{
	static char buf[4][256];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 256, "%s/%s", tmpdir, name);
	return p;
}

static char *slurp(const char *path, size_t *ret_len)
{
	struct err e;
	char *buf = NULL;
	size_t len = 0;

	ck_assert_msg(file_read_capped(AT_FDCWD, path, 1 << 24, 0, &buf, &len, &e) == 0, "%s",
	              e.msg);
	if (ret_len)
		*ret_len = len;
	return buf;
}

static void write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(file_write_all(fd, data, len), 0);
	close(fd);
}

START_TEST(test_open_write_offset)
{
	_cleanup_logfile_ struct logfile *lf = NULL;
	_cleanup_free_ char *got = NULL;
	const char *p = tpath("step.log");
	struct err e;
	struct stat st;

	ck_assert_int_eq(logfile_open(p, 0, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	ck_assert_int_eq(logfile_write(lf, "$ make\n", 7, &e), 0);
	ck_assert_int_eq(logfile_write(lf, "ok\n", 3, &e), 0);
	ck_assert_uint_eq(logfile_offset(lf), 10);
	ck_assert_uint_eq(logfile_file_start(lf), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	logfile_close(TAKE_PTR(lf));

	/* Reopened: appends, and the offset goes on from the existing size. */
	ck_assert_int_eq(logfile_open(p, 0, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	ck_assert_uint_eq(logfile_offset(lf), 10);
	ck_assert_int_eq(logfile_write(lf, "again\n", 6, &e), 0);
	ck_assert_uint_eq(logfile_offset(lf), 16);
	got = slurp(p, NULL);
	ck_assert_str_eq(got, "$ make\nok\nagain\n");
}
END_TEST

START_TEST(test_owner)
{
	_cleanup_logfile_ struct logfile *lf = NULL;
	const char *p = tpath("owned.log");
	uid_t uid = geteuid() == 0 ? 1000 : geteuid();
	gid_t gid = geteuid() == 0 ? 1000 : getegid();
	struct err e;
	struct stat st;

	ck_assert_int_eq(logfile_open(p, 10, uid, gid, &lf, &e), 0);
	ck_assert_int_eq(logfile_write(lf, "0123456789abc", 13, &e), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_uid, uid);
	ck_assert_uint_eq(st.st_gid, gid);
	/* The rotated-in file too. */
	ck_assert_int_eq(stat(tpath("owned.log.1"), &st), 0);
	ck_assert_uint_eq(st.st_uid, uid);
}
END_TEST

START_TEST(test_rotation)
{
	_cleanup_logfile_ struct logfile *lf = NULL;
	const char *p = tpath("server.log");
	char a[60], b[60], c[60];
	struct err e;
	size_t n;

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	memset(c, 'c', sizeof(c));
	write_file(tpath("server.log.1"), "old rotated\n", 12);
	ck_assert_int_eq(logfile_open(p, 100, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	ck_assert_int_eq(logfile_write(lf, a, sizeof(a), &e), 0);
	/* 60 + 60 > 100: rotate before writing, replacing the old .1. */
	ck_assert_int_eq(logfile_write(lf, b, sizeof(b), &e), 0);
	{
		_cleanup_free_ char *cur = slurp(p, &n), *old = slurp(tpath("server.log.1"), NULL);
		ck_assert_uint_eq(n, 60);
		ck_assert_mem_eq(cur, b, 60);
		ck_assert_uint_eq(strlen(old), 60);
		ck_assert_mem_eq(old, a, 60);
	}
	ck_assert_int_eq(logfile_write(lf, c, 40, &e), 0); /* exactly 100: no rotation */
	ck_assert_uint_eq(logfile_offset(lf), 160);
	ck_assert_uint_eq(logfile_file_start(lf), 60);
	ck_assert_int_eq(logfile_write(lf, c, 1, &e), 0);
	ck_assert_uint_eq(logfile_file_start(lf), 160);
	ck_assert_uint_eq(logfile_offset(lf), 161);
}
END_TEST

START_TEST(test_write_larger_than_cap)
{
	_cleanup_logfile_ struct logfile *lf = NULL;
	const char *p = tpath("big.log");
	char big[250];
	struct err e;
	size_t n1, n2;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('A' + i % 26);
	ck_assert_int_eq(logfile_open(p, 100, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	ck_assert_int_eq(logfile_write(lf, "x", 1, &e), 0);
	ck_assert_int_eq(logfile_write(lf, big, sizeof(big), &e), 0);
	ck_assert_uint_eq(logfile_offset(lf), 251);
	{
		_cleanup_free_ char *cur = slurp(p, &n1), *old = slurp(tpath("big.log.1"), &n2);
		/* No file ever passes the cap; the newest bytes are in the current file. */
		ck_assert_uint_eq(n2, 100);
		ck_assert_mem_eq(old, big + 100, 100);
		ck_assert_uint_eq(n1, 50);
		ck_assert_mem_eq(cur, big + 200, 50);
	}
}
END_TEST

START_TEST(test_symlink_refused)
{
	struct logfile *lf = NULL;
	struct err e;

	ck_assert_int_eq(symlink("/etc/passwd", tpath("link.log")), 0);
	ck_assert_int_lt(logfile_open(tpath("link.log"), 0, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	ck_assert_ptr_null(lf);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, ELOOP);
}
END_TEST

START_TEST(test_dev_full)
{
	_cleanup_logfile_ struct logfile *lf = NULL;
	struct err e;

	/* A character device: written, never rotated (the cap is ignored). */
	ck_assert_int_eq(logfile_open("/dev/full", 4, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	ck_assert_int_eq(logfile_write(lf, "hello world", 11, &e), -ENOSPC);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_int_eq(e.code, ENOSPC);
	ck_assert_str_eq(e.msg, "disk full writing /dev/full");
	ck_assert_uint_eq(logfile_offset(lf), 0);
	ck_assert_int_eq(access("/dev/full.1", F_OK), -1);
}
END_TEST

/* A real full filesystem: a 64 KiB tmpfs in a private mount namespace (needs root). */
START_TEST(test_tmpfs_full)
{
	_cleanup_logfile_ struct logfile *lf = NULL;
	const char *mnt = tpath("small");
	char chunk[4096], path[300];
	struct err e;
	struct stat st;
	int r = 0;

	if (unshare(CLONE_NEWNS) < 0) {
		fprintf(stderr, "test_tmpfs_full: skipped, unshare(CLONE_NEWNS): %m\n");
		return;
	}
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	ck_assert_int_eq(mount("tmpfs", mnt, "tmpfs", 0, "size=64k,mode=0700"), 0);
	snprintf(path, sizeof(path), "%s/setup.log", mnt);
	memset(chunk, 'z', sizeof(chunk));
	/* The cap is larger than the filesystem, so the disk fills before any rotation. */
	ck_assert_int_eq(logfile_open(path, 1 << 20, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	for (int i = 0; i < 64 && r == 0; i++)
		r = logfile_write(lf, chunk, sizeof(chunk), &e);
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_int_eq(e.code, ENOSPC);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_ptr_nonnull(strstr(e.msg, "disk full writing "));
	ck_assert_ptr_nonnull(strstr(e.msg, path));
	/* What reached the disk is counted, nothing more. */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_gt(st.st_size, 0);
	ck_assert_uint_eq(logfile_offset(lf), (uint64_t)st.st_size);
	logfile_close(TAKE_PTR(lf));
	umount2(mnt, MNT_DETACH);
}
END_TEST

START_TEST(test_scrubbed_stream_into_log)
{
	_cleanup_logfile_ struct logfile *lf = NULL;
	struct scrubber *s = scrub_new();
	struct scrub_stream *st;
	_cleanup_free_ char *got = NULL;
	const char *in = "token: sup3rs3cr3t!\nbye\n";
	struct err e;
	size_t n;

	ck_assert_int_eq(scrub_add(s, "sup3rs3cr3t!", 12), 0);
	ck_assert_int_eq(logfile_open(tpath("s.log"), 0, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	st = scrub_stream_new(s, logfile_sink, lf);
	for (size_t i = 0; in[i]; i++)
		ck_assert_int_eq(scrub_stream_write(st, in + i, 1), 0);
	ck_assert_int_eq(scrub_stream_flush(st), 0);
	got = slurp(tpath("s.log"), &n);
	ck_assert_str_eq(got, "token: [REDACTED]\nbye\n");
	/* Offsets count scrubbed bytes. */
	ck_assert_uint_eq(logfile_offset(lf), n);
	scrub_stream_free(st);
	scrub_free(s);
}
END_TEST

static char *tail_of(const char *content, size_t len, size_t nlines, size_t max)
{
	const char *p = tpath("tail.log");
	char *out = NULL;
	struct err e;

	write_file(p, content, len);
	ck_assert_msg(logfile_tail(p, nlines, max, &out, &e) == 0, "%s", e.msg);
	return out;
}

#define ck_tail(content, nlines, max, want)                                                        \
	do {                                                                                       \
		_cleanup_free_ char *_t = tail_of(content, strlen(content), nlines, max);          \
		ck_assert_str_eq(_t, want);                                                        \
	} while (0)

/* Wait for the wall clock's next second, so the next write gets a record of its own. */
static void next_second(void)
{
	int64_t sec = clock_realtime_ms() / 1000;

	while (clock_realtime_ms() / 1000 == sec)
		usleep(10000);
}

START_TEST(test_times_index)
{
	_cleanup_logfile_ struct logfile *lf = NULL;
	const char *p = tpath("setup.log");
	struct logtimes_rec r[8];
	struct err e;
	int64_t t0, t1;
	size_t n;

	write_file(p, "from before\n", 12);
	ck_assert_int_eq(logfile_open(p, 100, (uid_t)-1, (gid_t)-1, &lf, &e), 0);
	ck_assert_int_eq(logfile_keep_times(lf, &e), 0);
	t0 = clock_realtime_ms();
	ck_assert_int_eq(logfile_write(lf, "one\n", 4, &e), 0);
	ck_assert_int_eq(logfile_write(lf, "two\n", 4, &e), 0); /* the same second, mostly */
	next_second();
	ck_assert_int_eq(logfile_write(lf, "three\n", 6, &e), 0);
	t1 = clock_realtime_ms();
	/* The index, record by record: where each write began in the file, and when. */
	n = logtimes_lookup(tpath("setup.log.times"), 0, 1000, r, 8);
	ck_assert_uint_ge(n, 2);
	ck_assert_uint_eq(r[0].pos, 12);
	ck_assert_int_ge(r[0].ms, t0 - 1);
	ck_assert_uint_eq(r[n - 1].pos, 20);
	ck_assert_int_le(r[n - 1].ms, t1);
	ck_assert_int_ge(r[n - 1].ms / 1000, r[0].ms / 1000 + 1);
	/* A range asks for the record before it and those inside it. */
	n = logtimes_lookup(tpath("setup.log.times"), 21, 26, r, 8);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(r[0].pos, 20);
	n = logtimes_lookup(tpath("setup.log.times"), 0, 12, r, 8);
	ck_assert_uint_eq(n, 0); /* before the first record: no time known */
	/* Rotating the log rotates its index: the new file's positions start at 0 again. */
	next_second();
	{
		char big[90];
		memset(big, 'x', sizeof(big));
		big[89] = '\n';
		ck_assert_int_eq(logfile_write(lf, big, sizeof(big), &e), 0);
	}
	ck_assert_int_eq(access(tpath("setup.log.1.times"), F_OK), 0);
	n = logtimes_lookup(tpath("setup.log.times"), 0, 90, r, 8);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(r[0].pos, 0);
	n = logtimes_lookup(tpath("setup.log.1.times"), 0, 100, r, 8);
	ck_assert_uint_ge(n, 2);
	ck_assert_uint_eq(r[0].pos, 12);
}
END_TEST

START_TEST(test_times_records)
{
	char buf[LOGTIMES_RECORD];
	struct logtimes_rec r;

	logtimes_format(buf, 0x1234, INT64_C(1796114216123));
	ck_assert_mem_eq(buf, "0000000000001234 1796114216123\n", LOGTIMES_RECORD);
	ck_assert_int_eq(logtimes_parse(buf, &r), 0);
	ck_assert_uint_eq(r.pos, 0x1234);
	ck_assert_int_eq(r.ms, INT64_C(1796114216123));
	buf[3] = 'g';
	ck_assert_int_eq(logtimes_parse(buf, &r), -1);
	/* An index that is not ours gives no records, not garbage. */
	write_file(tpath("x.log.times"), "not an index at all, no records\n", 32);
	ck_assert_uint_eq(logtimes_lookup(tpath("x.log.times"), 0, 10, &r, 1), 0);
	ck_assert_uint_eq(logtimes_lookup(tpath("missing.times"), 0, 10, &r, 1), 0);
}
END_TEST

START_TEST(test_tail_lines)
{
	ck_tail("1\n2\n3\n4\n5\n", 3, 500, "3\n4\n5\n");
	ck_tail("1\n2\n", 20, 500, "1\n2\n");
	ck_tail("1\n2\n3", 2, 500, "2\n3\n");         /* no trailing newline */
	ck_tail("1\r\n2\r\n3\r\n", 2, 500, "2\n3\n"); /* CRLF */
	ck_tail("a\r\rb\r\n", 1, 500, "a\r\rb\n");    /* only the CR before LF goes */
	ck_tail("", 20, 500, "");
	ck_tail("\n", 20, 500, "\n");
	ck_tail("a\n\n\nb\n\n", 3, 500, "\nb\n\n");
	ck_tail("1\n2\n", 0, 500, "");
}
END_TEST

START_TEST(test_tail_since)
{
	const char *log = "earlier boot 1\nearlier boot 2\n$ cmd\nthis boot\n";
	const char *p = tpath("since.log");
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
	struct err e;

	write_file(p, log, strlen(log));
	ck_assert_int_eq(logfile_tail_since(p, 30, 20, 500, &a, &e), 0);
	ck_assert_str_eq(a, "$ cmd\nthis boot\n");
	/* nothing written since: nothing shown */
	ck_assert_int_eq(logfile_tail_since(p, strlen(log), 20, 500, &b, &e), 0);
	ck_assert_str_eq(b, "");
	/* an offset past the end: the file was rotated since, all of it is new */
	ck_assert_int_eq(logfile_tail_since(p, 10000, 2, 500, &c, &e), 0);
	ck_assert_str_eq(c, "$ cmd\nthis boot\n");
}
END_TEST

START_TEST(test_tail_long_lines)
{
	char line[2000];
	char *content;
	_cleanup_free_ char *got = NULL;
	size_t len;

	memset(line, 'x', sizeof(line));
	ck_assert(asprintf(&content, "first\n%.*s\nshort\n%.*s", 2000, line, 600, line) > 0);
	len = strlen(content);
	got = tail_of(content, len, 3, 500);
	ck_assert_uint_eq(strlen(got), 500 + 1 + 6 + 500 + 1);
	ck_assert_mem_eq(got, line, 500);
	ck_assert_mem_eq(got + 500, "\nshort\n", 7);
	free(content);
	free(got);

	/* UTF-8: characters, not bytes; never a cut inside one ("é" is 2 bytes, "€" 3). */
	got = tail_of("é€é€\nend\n", strlen("é€é€\nend\n"), 2, 3);
	ck_assert_str_eq(got, "é€é\nend\n");
}
END_TEST

/* Only the end is read: a sparse 1 TiB file answers at once and without a 1 TiB buffer. */
START_TEST(test_tail_reads_only_the_end)
{
	const char *p = tpath("huge.log");
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	_cleanup_free_ char *out = NULL;
	char lines[64 * 30];
	size_t o = 0;
	struct err e;

	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 30; i++)
		o += (size_t)snprintf(lines + o, sizeof(lines) - o, "line %d\n", i);
	ck_assert_int_eq(pwrite(fd, lines, o, (off_t)1 << 40), (ssize_t)o);
	close(fd);
	ck_assert_msg(logfile_tail(p, 3, 500, &out, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(out, "line 27\nline 28\nline 29\n");
	free(TAKE_PTR(out));
	/* More lines than the window's newlines: the read stops at its cap. */
	ck_assert_int_eq(logfile_tail(p, 40, 10, &out, &e), 0);
	/* The zeros and "line 0" are one line, shown from the window's start and cut. */
	ck_assert_int_eq(strncmp(out, "??????????\nline 1\n", 18), 0);
	ck_assert_uint_lt(strlen(out), 2 * 1024 * 1024);
}
END_TEST

START_TEST(test_tail_missing)
{
	char *out = NULL;
	struct err e;

	ck_assert_int_lt(logfile_tail(tpath("nope.log"), 20, 500, &out, &e), 0);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_ptr_nonnull(strstr(e.msg, "nope.log"));
	ck_assert_ptr_null(out);
}
END_TEST

static Suite *logfile_suite(void)
{
	Suite *s = suite_create("logfile");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_open_write_offset);
	tcase_add_test(tc, test_owner);
	tcase_add_test(tc, test_rotation);
	tcase_add_test(tc, test_write_larger_than_cap);
	tcase_add_test(tc, test_symlink_refused);
	tcase_add_test(tc, test_dev_full);
	tcase_add_test(tc, test_tmpfs_full);
	tcase_add_test(tc, test_scrubbed_stream_into_log);
	tcase_add_test(tc, test_times_index);
	tcase_add_test(tc, test_times_records);
	tcase_add_test(tc, test_tail_lines);
	tcase_add_test(tc, test_tail_since);
	tcase_add_test(tc, test_tail_long_lines);
	tcase_add_test(tc, test_tail_reads_only_the_end);
	tcase_add_test(tc, test_tail_missing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(logfile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
