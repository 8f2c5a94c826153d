/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "dir_discard.h"
#include "file.h"
#include "tree_stage.h"

static char root[PATH_MAX];
static char app[PATH_MAX + 16];

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/test_tree_stage.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(app, sizeof(app), "%s/app", root);
}

/* How many old trees on their way out (.app.checkout-trash.*) are beside the app. */
static int trash_count(void)
{
	DIR *d = opendir(root);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += strncmp(de->d_name, ".app" DIR_DISCARD_INFIX,
		             strlen(".app" DIR_DISCARD_INFIX)) == 0;
	closedir(d);
	return n;
}

/* A discard's thread is done with its tree: none is left, within 20 s. */
static bool trash_gone(void)
{
	for (int i = 0; i < 2000; i++) {
		if (trash_count() == 0)
			return true;
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	}
	return false;
}

static void teardown(void)
{
	char cmd[PATH_MAX + 32];

	ck_assert(trash_gone());

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

static void put_file(const char *rel, const char *content)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
}

static bool exists(const char *rel)
{
	char path[PATH_MAX * 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0;
}

static char *slurp(const char *rel)
{
	char path[PATH_MAX * 2];
	static char buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static struct tree_stage *begin(unsigned flags)
{
	struct tree_stage_target t = {
	    .app_dir = app, .uid = (uid_t)-1, .gid = (gid_t)-1, .flags = flags};
	struct tree_stage *s = NULL;
	struct err err;

	ck_assert_msg(tree_stage_begin(&t, &s, &err) == 0, "%s", err.msg);
	return s;
}

static void push_normal(struct tree_stage *s)
{
	struct err err;

	ck_assert_msg(tree_stage_entry(s, "config", TREE_ENTRY_DIR, 0750, 0, NULL, &err) == 0, "%s",
	              err.msg);
	ck_assert_int_eq(
	    tree_stage_entry(s, "config/app.yml", TREE_ENTRY_FILE, 0640, 11, NULL, &err), 0);
	ck_assert_int_eq(tree_stage_data(s, "hello ", 6, &err), 0);
	ck_assert_int_eq(tree_stage_data(s, "world", 5, &err), 0);
	ck_assert_int_eq(tree_stage_entry(s, "bin/run", TREE_ENTRY_FILE, 0755, 0, NULL, &err), 0);
	ck_assert_int_eq(
	    tree_stage_entry(s, "link", TREE_ENTRY_SYMLINK, 0777, 0, "config/app.yml", &err), 0);
	ck_assert_int_eq(
	    tree_stage_entry(s, "config/up", TREE_ENTRY_SYMLINK, 0777, 0, "../bin", &err), 0);
}

START_TEST(test_push_and_swap)
{
	struct tree_stage *s;
	struct tree_stage_result res;
	struct stat st;
	struct err err;

	ck_assert_int_eq(mkdir(app, 0711), 0);
	put_file("app/old.txt", "old");
	s = begin(0);
	push_normal(s);
	/* Nothing is visible before the end. */
	ck_assert(exists("app/old.txt"));
	ck_assert(!exists("app/link"));
	ck_assert_msg(tree_stage_finish(s, 5, 11, &res, &err) == 0, "%s", err.msg);
	/* Swapped: the old tree waits beside the new one until it is removed, after the answer. */
	ck_assert(exists(".app" DIR_SWAP_OLD_SUFFIX "/old.txt"));
	ck_assert(!tree_stage_old_remove(s));
	ck_assert(!exists(".app" DIR_SWAP_OLD_SUFFIX));
	/* Once: nothing is left for a second call, or for the release. */
	ck_assert(!tree_stage_old_remove(s));
	tree_stage_free(s);
	ck_assert_int_eq(res.method, DIR_SWAP_EXCHANGE);
	ck_assert(!exists("app/old.txt"));
	ck_assert_str_eq(slurp("app/config/app.yml"), "hello world");
	ck_assert_str_eq(slurp("app/link"), "hello world");
	ck_assert_int_eq(lstat(strcat(strcpy((char[PATH_MAX + 32]){0}, app), "/config"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
	ck_assert_int_eq(
	    lstat(strcat(strcpy((char[PATH_MAX + 32]){0}, app), "/config/app.yml"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(lstat(strcat(strcpy((char[PATH_MAX + 32]){0}, app), "/bin"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	/* The app directory keeps its mode and is a real directory. */
	ck_assert_int_eq(lstat(app, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0711);
	ck_assert(!exists(".app" DIR_SWAP_NEW_SUFFIX));
	ck_assert(!exists(".app" DIR_SWAP_OLD_SUFFIX));
}
END_TEST

/* Every file gets its mode exactly, whether the umask or a default ACL would take from it. */
static void push_modes(void)
{
	static const unsigned modes[] = {0644, 0640, 0600, 0755, 0664, 0666, 0777, 0400};
	struct tree_stage *s = begin(0);
	struct tree_stage_result res;
	struct err err;
	char name[32], path[PATH_MAX * 2];
	struct stat st;

	for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++) {
		snprintf(name, sizeof(name), "f%o", modes[i]);
		ck_assert_msg(tree_stage_entry(s, name, TREE_ENTRY_FILE, modes[i], 0, NULL, &err) ==
		                  0,
		              "%s", err.msg);
	}
	ck_assert_msg(tree_stage_finish(s, sizeof(modes) / sizeof(*modes), 0, &res, &err) == 0,
	              "%s", err.msg);
	tree_stage_free(s);
	for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++) {
		snprintf(path, sizeof(path), "%s/f%o", app, modes[i]);
		ck_assert_int_eq(lstat(path, &st), 0);
		ck_assert_msg((st.st_mode & 07777) == modes[i], "%s: %o", path, st.st_mode & 07777);
	}
}

START_TEST(test_modes_exact)
{
	/* The kernel's ACL xattr: version 2, then (tag, perm, id) for u::rwx g::r-x o::--- */
	static const uint8_t acl[] = {2,    0,    0,    0, 0x01, 0,    7,    0,    0xff, 0xff,
	                              0xff, 0xff, 0x04, 0, 5,    0,    0xff, 0xff, 0xff, 0xff,
	                              0x20, 0,    0,    0, 0xff, 0xff, 0xff, 0xff};
	mode_t old = umask(022);
	char cmd[PATH_MAX + 32];

	push_modes();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", app);
	ck_assert_int_eq(system(cmd), 0);
	umask(077);
	push_modes();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", app);
	ck_assert_int_eq(system(cmd), 0);
	umask(022);
	/* A default ACL on the directory the stage is made in: it, not the umask, would apply. */
	if (setxattr(root, "system.posix_acl_default", acl, sizeof(acl), 0) == 0)
		push_modes();
	else
		fprintf(stderr, "test_modes_exact: no default ACL here (%s): that case not run\n",
		        strerror(errno));
	umask(old);
}
END_TEST

START_TEST(test_first_push_and_renames)
{
	struct tree_stage *s;
	struct tree_stage_result res;
	struct err err;

	s = begin(0);
	push_normal(s);
	ck_assert_int_eq(tree_stage_finish(s, 5, 11, &res, &err), 0);
	tree_stage_free(s);
	ck_assert_int_eq(res.method, DIR_SWAP_FIRST);
	ck_assert_str_eq(slurp("app/config/app.yml"), "hello world");

	s = begin(DIR_SWAP_NO_EXCHANGE);
	ck_assert_int_eq(tree_stage_entry(s, "new", TREE_ENTRY_FILE, 0644, 2, NULL, &err), 0);
	ck_assert_int_eq(tree_stage_data(s, "ok", 2, &err), 0);
	ck_assert_int_eq(tree_stage_finish(s, 1, 2, &res, &err), 0);
	/* The old tree goes with the release when nothing removed it before. */
	ck_assert(exists(".app" DIR_SWAP_OLD_SUFFIX "/config/app.yml"));
	tree_stage_free(s);
	ck_assert_int_eq(res.method, DIR_SWAP_RENAMES);
	ck_assert_str_eq(slurp("app/new"), "ok");
	ck_assert(!exists("app/config"));
	ck_assert(!exists(".app" DIR_SWAP_OLD_SUFFIX));
}
END_TEST

/* Each refusal leaves the app directory as it was and no stage behind. */
static void expect_refused(const char *path, enum tree_entry_kind kind, unsigned mode,
                           const char *target)
{
	struct tree_stage *s = begin(0);
	struct err err;

	ck_assert_int_lt(tree_stage_entry(s, path, kind, mode, 0, target, &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(err.msg, "tree entry"));
	/* Unusable afterwards. */
	ck_assert_int_lt(tree_stage_entry(s, "fine", TREE_ENTRY_DIR, 0755, 0, NULL, &err), 0);
	tree_stage_free(s);
	ck_assert_str_eq(slurp("app/keep"), "keep");
	ck_assert(!exists(".app" DIR_SWAP_NEW_SUFFIX));
}

START_TEST(test_refusals)
{
	ck_assert_int_eq(mkdir(app, 0755), 0);
	put_file("app/keep", "keep");
	expect_refused("/etc/passwd", TREE_ENTRY_FILE, 0644, NULL);
	expect_refused("../escape", TREE_ENTRY_FILE, 0644, NULL);
	expect_refused("a/../../escape", TREE_ENTRY_FILE, 0644, NULL);
	expect_refused("a/./b", TREE_ENTRY_FILE, 0644, NULL);
	expect_refused("a//b", TREE_ENTRY_FILE, 0644, NULL);
	expect_refused("a/", TREE_ENTRY_DIR, 0755, NULL);
	expect_refused("", TREE_ENTRY_FILE, 0644, NULL);
	expect_refused("suid", TREE_ENTRY_FILE, 04755, NULL);
	expect_refused("sgid", TREE_ENTRY_DIR, 02755, NULL);
	expect_refused("sticky", TREE_ENTRY_DIR, 01777, NULL);
	expect_refused("abs", TREE_ENTRY_SYMLINK, 0777, "/etc/passwd");
	expect_refused("up", TREE_ENTRY_SYMLINK, 0777, "..");
	expect_refused("a/b/up", TREE_ENTRY_SYMLINK, 0777, "../../../etc");
	expect_refused("a/b/up", TREE_ENTRY_SYMLINK, 0777, "x/../../../../etc");
	expect_refused("empty", TREE_ENTRY_SYMLINK, 0777, "");
	expect_refused("what", 9, 0644, NULL);
}
END_TEST

START_TEST(test_refused_mid_push)
{
	struct tree_stage *s;
	struct err err;

	ck_assert_int_eq(mkdir(app, 0755), 0);
	put_file("app/keep", "keep");

	/* Nothing is written through a link of the tree. */
	s = begin(0);
	ck_assert_int_eq(tree_stage_entry(s, "sub", TREE_ENTRY_DIR, 0755, 0, NULL, &err), 0);
	ck_assert_int_eq(tree_stage_entry(s, "l", TREE_ENTRY_SYMLINK, 0777, 0, "sub", &err), 0);
	ck_assert_int_lt(tree_stage_entry(s, "l/f", TREE_ENTRY_FILE, 0644, 0, NULL, &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	tree_stage_free(s);

	/* A duplicate. */
	s = begin(0);
	ck_assert_int_eq(tree_stage_entry(s, "f", TREE_ENTRY_FILE, 0644, 0, NULL, &err), 0);
	ck_assert_int_lt(tree_stage_entry(s, "f", TREE_ENTRY_FILE, 0644, 0, NULL, &err), 0);
	tree_stage_free(s);

	/* Too much data, too little, wrong totals. */
	s = begin(0);
	ck_assert_int_eq(tree_stage_entry(s, "f", TREE_ENTRY_FILE, 0644, 2, NULL, &err), 0);
	ck_assert_int_lt(tree_stage_data(s, "abc", 3, &err), 0);
	tree_stage_free(s);
	s = begin(0);
	ck_assert_int_eq(tree_stage_entry(s, "f", TREE_ENTRY_FILE, 0644, 2, NULL, &err), 0);
	ck_assert_int_eq(tree_stage_data(s, "a", 1, &err), 0);
	ck_assert_int_lt(tree_stage_entry(s, "g", TREE_ENTRY_FILE, 0644, 0, NULL, &err), 0);
	tree_stage_free(s);
	s = begin(0);
	ck_assert_int_eq(tree_stage_entry(s, "f", TREE_ENTRY_FILE, 0644, 2, NULL, &err), 0);
	ck_assert_int_eq(tree_stage_data(s, "a", 1, &err), 0);
	ck_assert_int_lt(tree_stage_finish(s, 1, 2, NULL, &err), 0);
	tree_stage_free(s);
	s = begin(0);
	ck_assert_int_eq(tree_stage_entry(s, "f", TREE_ENTRY_FILE, 0644, 1, NULL, &err), 0);
	ck_assert_int_eq(tree_stage_data(s, "a", 1, &err), 0);
	ck_assert_int_lt(tree_stage_finish(s, 2, 1, NULL, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "announced"));
	tree_stage_free(s);

	/* A link that leaves the tree only through another link: caught by the kernel's check. */
	s = begin(0);
	ck_assert_int_eq(tree_stage_entry(s, "a/up", TREE_ENTRY_SYMLINK, 0777, 0, "..", &err), 0);
	ck_assert_int_eq(tree_stage_entry(s, "b", TREE_ENTRY_SYMLINK, 0777, 0, "a/up/..", &err), 0);
	ck_assert_int_lt(tree_stage_finish(s, 2, 0, NULL, &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(err.msg, "out of the tree"));
	tree_stage_free(s);

	ck_assert_str_eq(slurp("app/keep"), "keep");
	ck_assert(!exists(".app" DIR_SWAP_NEW_SUFFIX));
	ck_assert(!exists(".app" DIR_SWAP_OLD_SUFFIX));
}
END_TEST

/* A swap interrupted between its two renames is undone (or finished) by the next push. */
START_TEST(test_recovery)
{
	struct tree_stage *s;
	struct err err;

	ck_assert_int_eq(mkdir(app, 0755), 0);
	put_file("app/keep", "keep");
	ck_assert_int_eq(rename(app, strcat(strcpy((char[PATH_MAX + 32]){0}, root),
	                                    "/.app" DIR_SWAP_OLD_SUFFIX)),
	                 0);
	s = begin(0);
	ck_assert_str_eq(slurp("app/keep"), "keep");
	tree_stage_free(s);

	/* Both sides present, app missing: the stage was complete, it goes in. */
	ck_assert_int_eq(rename(app, strcat(strcpy((char[PATH_MAX + 32]){0}, root),
	                                    "/.app" DIR_SWAP_OLD_SUFFIX)),
	                 0);
	ck_assert_int_eq(
	    mkdir(strcat(strcpy((char[PATH_MAX + 32]){0}, root), "/.app" DIR_SWAP_NEW_SUFFIX),
	          0755),
	    0);
	put_file(".app" DIR_SWAP_NEW_SUFFIX "/new", "new");
	s = begin(0);
	ck_assert_str_eq(slurp("app/new"), "new");
	ck_assert(!exists(".app" DIR_SWAP_OLD_SUFFIX));
	tree_stage_free(s);
	(void)err;
}
END_TEST

/* levels directories "d" nested below dir. */
static void make_chain(const char *dir, int levels)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	for (int i = 0; i < levels && fd >= 0; i++) {
		int sub;
		ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = sub;
	}
	ck_assert_int_ge(fd, 0);
	close(fd);
}

/* The hook of test_old_tree_discarded: on the discard's thread, held until the test lets go. */
struct held {
	int go[2];              /* the test writes a byte when the thread may go on */
	volatile int reached;   /* the thread is in the hook */
	volatile int timed_out; /* nobody let it go within 10 s (the discard ran on our thread) */
	size_t stack;           /* the thread's stack, where the C library says (glibc) */
};

static void hold_hook(void *userdata, const char *point)
{
	struct held *h = userdata;
	struct pollfd p;
	char c;

	if (strcmp(point, "discarding") != 0)
		return;
#ifdef __GLIBC__
	{
		pthread_attr_t attr;
		if (pthread_getattr_np(pthread_self(), &attr) == 0) {
			(void)pthread_attr_getstacksize(&attr, &h->stack);
			pthread_attr_destroy(&attr);
		}
	}
#endif
	h->reached = 1;
	p = (struct pollfd){.fd = h->go[0], .events = POLLIN};
	if (poll(&p, 1, 10000) != 1 || read(h->go[0], &c, 1) != 1)
		h->timed_out = 1;
}

/* The name of the one box beside the app (.app.checkout-trash.*), or NULL. */
static const char *box_of_app(void)
{
	static char name[NAME_MAX + 1];
	DIR *d = opendir(root);
	struct dirent *de;
	const char *r = NULL;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (strncmp(de->d_name, ".app" DIR_DISCARD_INFIX,
		            strlen(".app" DIR_DISCARD_INFIX)) == 0) {
			snprintf(name, sizeof(name), "%s", de->d_name);
			r = name;
		}
	closedir(d);
	return r;
}

/*
 * The release leaves the old tree to a thread: it returns at once, the old tree's name is free,
 * the tree waits in a box root's alone and locked, and a boot that counts the disk can wait for
 * it. The app holding a lock on its old tree changes nothing of that.
 */
START_TEST(test_old_tree_discarded)
{
	struct tree_stage_target t = {.uid = (uid_t)-1, .gid = (gid_t)-1, .hook = hold_hook};
	struct held h = {0};
	struct tree_stage_result res;
	struct tree_stage *s = NULL;
	char path[PATH_MAX * 2];
	const char *box;
	struct stat st;
	struct err err;
	int app_lock, fd;

	ck_assert_int_eq(mkdir(app, 0755), 0);
	for (int i = 0; i < 64; i++) {
		char name[32];
		snprintf(name, sizeof(name), "app/old-%d", i);
		put_file(name, "old");
	}
	/* Deep enough that the thread's walk needs a stack of its own size. */
	make_chain(app, 500);
	app_lock = open(app, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(flock(app_lock, LOCK_EX | LOCK_NB), 0);
	ck_assert_int_eq(pipe(h.go), 0);
	t.app_dir = app;
	t.hook_userdata = &h;
	ck_assert_msg(tree_stage_begin(&t, &s, &err) == 0, "%s", err.msg);
	push_normal(s);
	ck_assert_msg(tree_stage_finish(s, 5, 11, &res, &err) == 0, "%s", err.msg);
	ck_assert(exists(".app" DIR_SWAP_OLD_SUFFIX "/old-0"));
	tree_stage_free(s);
	for (int i = 0; i < 1000 && !h.reached; i++)
		usleep(10000);
	ck_assert(h.reached);

	ck_assert(!exists(".app" DIR_SWAP_OLD_SUFFIX));
	ck_assert_str_eq(slurp("app/config/app.yml"), "hello world");
	box = box_of_app();
	ck_assert_ptr_nonnull(box);
	snprintf(path, sizeof(path), "%s/%s", root, box);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, geteuid());
	snprintf(path, sizeof(path), "%s/%s/tree/old-0", root, box);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/%s", root, box);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_SH | LOCK_NB), -1);
	ck_assert_int_eq(errno, EWOULDBLOCK);
	close(fd);
	ck_assert(!dir_discard_wait(app, 50));

	ck_assert_int_eq(write(h.go[1], "g", 1), 1);
	ck_assert(dir_discard_wait(app, 20000));
	ck_assert(!h.timed_out);
#ifdef __GLIBC__
	ck_assert_uint_ge(h.stack, 1024 * 1024);
#endif
	ck_assert(trash_gone());
	close(app_lock);
	close(h.go[0]);
	close(h.go[1]);
}
END_TEST

/* A box: root's 0700 directory holding "tree" (what a discard makes), name below root. */
static void make_box(const char *name)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(chmod(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s/tree", root, name);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/tree/file", name);
	put_file(path, "old");
}

/*
 * Boxes left over (their process ended first) go with the next recovery; a held one (a discard
 * removes it now) stays; a link of a box's name is removed, not followed; what is not a box
 * (another name, not root's 0700) is left alone.
 */
START_TEST(test_trash_recovered)
{
	char path[PATH_MAX * 2], outside[PATH_MAX * 2];
	int lock_fd;

	ck_assert_int_eq(mkdir(app, 0755), 0);
	put_file("app/keep", "keep");
	make_box(".app" DIR_DISCARD_INFIX "0123456789abcdef");
	make_box(".app" DIR_DISCARD_INFIX "fedcba9876543210");
	snprintf(path, sizeof(path), "%s/.app" DIR_DISCARD_INFIX "fedcba9876543210", root);
	lock_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(lock_fd, 0);
	ck_assert_int_eq(flock(lock_fd, LOCK_EX | LOCK_NB), 0);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	ck_assert_int_eq(mkdir(outside, 0700), 0);
	put_file("outside/precious", "precious");
	snprintf(path, sizeof(path), "%s/.app" DIR_DISCARD_INFIX "1111111111111111", root);
	ck_assert_int_eq(symlink(outside, path), 0);
	snprintf(path, sizeof(path), "%s/.app" DIR_DISCARD_INFIX "sibling", root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.app" DIR_DISCARD_INFIX "2222222222222222", root);
	ck_assert_int_eq(mkdir(path, 0755), 0);

	tree_stage_free(begin(0));
	for (int i = 0; i < 1000 && exists(".app" DIR_DISCARD_INFIX "0123456789abcdef"); i++)
		usleep(10000);
	ck_assert(!exists(".app" DIR_DISCARD_INFIX "0123456789abcdef"));
	ck_assert(!exists(".app" DIR_DISCARD_INFIX "1111111111111111"));
	ck_assert_str_eq(slurp("outside/precious"), "precious");
	ck_assert_str_eq(slurp(".app" DIR_DISCARD_INFIX "fedcba9876543210/tree/file"), "old");
	ck_assert(exists(".app" DIR_DISCARD_INFIX "sibling"));
	ck_assert(exists(".app" DIR_DISCARD_INFIX "2222222222222222"));
	ck_assert_str_eq(slurp("app/keep"), "keep");

	close(lock_fd);
	tree_stage_free(begin(0));
	for (int i = 0; i < 1000 && exists(".app" DIR_DISCARD_INFIX "fedcba9876543210"); i++)
		usleep(10000);
	ck_assert(!exists(".app" DIR_DISCARD_INFIX "fedcba9876543210"));
	ck_assert(exists(".app" DIR_DISCARD_INFIX "sibling"));
	ck_assert_str_eq(slurp("app/keep"), "keep");
	/* Not boxes: the test's own to remove. */
	snprintf(path, sizeof(path), "%s/.app" DIR_DISCARD_INFIX "sibling", root);
	ck_assert_int_eq(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/.app" DIR_DISCARD_INFIX "2222222222222222", root);
	ck_assert_int_eq(rmdir(path), 0);
}
END_TEST

/*
 * An old tree too deep to remove, left beside the app: the recovery moves it into a box and
 * goes on (the swap's name is free again); the box that could not be emptied is set aside
 * (<box>.left), and fails no later recovery.
 */
START_TEST(test_old_tree_too_deep)
{
	char cmd[PATH_MAX + 32], left[NAME_MAX + 1];
	const char *box;

	ck_assert_int_eq(mkdir(app, 0755), 0);
	put_file("app/keep", "keep");
	snprintf(cmd, sizeof(cmd), "%s/.app" DIR_SWAP_OLD_SUFFIX, root);
	ck_assert_int_eq(mkdir(cmd, 0755), 0);
	make_chain(cmd, 600);

	tree_stage_free(begin(0));
	ck_assert(!exists(".app" DIR_SWAP_OLD_SUFFIX));
	ck_assert(dir_discard_wait(app, 20000));
	/* Set aside, never swept again. */
	box = box_of_app();
	ck_assert_ptr_nonnull(box);
	ck_assert_str_eq(box + strlen(box) - strlen(DIR_DISCARD_LEFT_SUFFIX),
	                 DIR_DISCARD_LEFT_SUFFIX);
	snprintf(left, sizeof(left), "%s", box);
	tree_stage_free(begin(0));
	ck_assert(dir_discard_wait(app, 20000));
	ck_assert_str_eq(box_of_app(), left);
	ck_assert_str_eq(slurp("app/keep"), "keep");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/.app" DIR_DISCARD_INFIX "*", root);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Every name beside the directory must fit: a discard's box is the longest. */
START_TEST(test_name_too_long)
{
	struct tree_stage_target t = {.uid = (uid_t)-1, .gid = (gid_t)-1};
	char dir[PATH_MAX];
	struct tree_stage *s = NULL;
	struct err err;
	int n;

	n = snprintf(dir, sizeof(dir), "%s/", root);
	memset(dir + n, 'a', 230);
	dir[n + 230] = '\0';
	t.app_dir = dir;
	ck_assert_int_lt(tree_stage_begin(&t, &s, &err), 0);
	ck_assert_int_eq(err.code, ENAMETOOLONG);
	dir[n + 200] = '\0';
	ck_assert_msg(tree_stage_begin(&t, &s, &err) == 0, "%s", err.msg);
	tree_stage_free(s);
}
END_TEST

START_TEST(test_target_inside)
{
	ck_assert(tree_stage_target_inside("a", "b"));
	ck_assert(tree_stage_target_inside("a/b", "../c"));
	ck_assert(tree_stage_target_inside("a/b", "./c/../d"));
	ck_assert(tree_stage_target_inside("a", "."));
	ck_assert(!tree_stage_target_inside("a", ".."));
	ck_assert(!tree_stage_target_inside("a/b", "../../c"));
	ck_assert(!tree_stage_target_inside("a/b", "c/../../../d"));
	ck_assert(!tree_stage_target_inside("a", "/etc"));
	ck_assert(!tree_stage_target_inside("a", ""));
	ck_assert_int_eq(tree_stage_entry_kind_from_string("symlink"), TREE_ENTRY_SYMLINK);
	ck_assert_int_eq(tree_stage_entry_kind_from_string("fifo"), -1);
}
END_TEST

static Suite *tree_stage_suite(void)
{
	Suite *s = suite_create("tree_stage");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_push_and_swap);
	tcase_add_test(tc, test_first_push_and_renames);
	tcase_add_test(tc, test_modes_exact);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_refused_mid_push);
	tcase_add_test(tc, test_recovery);
	tcase_add_test(tc, test_old_tree_discarded);
	tcase_add_test(tc, test_trash_recovered);
	tcase_add_test(tc, test_old_tree_too_deep);
	tcase_add_test(tc, test_name_too_long);
	tcase_add_test(tc, test_target_inside);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tree_stage_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
