/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checkout_stage: staged checkouts swapped in, interrupted at every point and recovered; trees
 * that would write through a symbolic link; the guest-side fetch with a token against the real
 * git server of tests/git-server/ and the host-side fetch + pack stream.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../git-server/server.h"
#include "checkout_stage.h"
#include "git_fetch.h"
#include "git_pack.h"

#define RUN_UID 65534
#define RUN_GID 65534

static struct test_server srv;
static struct ts_ids ids;  /* the standard repository, served and at file:// */
static char http_url[320]; /* its URL on the server */
static char file_url[320]; /* file:// of the same repository */
static char fixtures[64];  /* a directory of local fixture repositories */
static char tmpdir[64];
static char app[128];

static void suite_setup(void)
{
	char repos[300];

	ts_start(&srv);
	ts_repos(&srv, repos, sizeof(repos));
	ts_fixture(repos, "app", NULL, NULL, &ids);
	snprintf(http_url, sizeof(http_url), "%s/app.git", srv.url);
	snprintf(file_url, sizeof(file_url), "file://%s/app.git", repos);
	snprintf(fixtures, sizeof(fixtures), "/tmp/test_checkout_fx.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(fixtures));
}

static void suite_teardown(void)
{
	char cmd[128];

	ts_stop(&srv);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fixtures);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fixtures);
}

static void setup(void)
{
	struct err e;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_checkout.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	ck_assert_int_eq(chmod(tmpdir, 0755), 0);
	snprintf(app, sizeof(app), "%s/ws/app", tmpdir);
	{
		char ws[100];

		snprintf(ws, sizeof(ws), "%s/ws", tmpdir);
		ck_assert_int_eq(mkdir(ws, 0755), 0);
	}
	ck_assert_msg(git_fetch_global_init(NULL, &e) == 0, "%s", e.msg);
}

static char *tpath(const char *fmt, ...) _printf_(1, 2);

/* A release's thread is done with the old tree (no .app.checkout-trash.* left), within 20 s. */
static bool trash_gone(void)
{
	for (int i = 0; i < 2000; i++) {
		DIR *d = opendir(tpath("ws"));
		struct dirent *de;
		int n = 0;

		if (!d)
			return true;
		while ((de = readdir(d)))
			n += strncmp(de->d_name, ".app" DIR_DISCARD_INFIX,
			             strlen(".app" DIR_DISCARD_INFIX)) == 0;
		closedir(d);
		if (n == 0)
			return true;
		usleep(10000);
	}
	return false;
}

static void teardown(void)
{
	char cmd[128];

	ck_assert(trash_gone());
	git_fetch_global_shutdown();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *tpath(const char *fmt, ...) _printf_(1, 2);
static char *tpath(const char *fmt, ...)
{
	static char buf[8][512];
	static int n;
	char *p = buf[n++ % 8], rel[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(p, 512, "%s/%s", tmpdir, rel);
	return p;
}

/* Run a shell command; returns its exit status. */
static int sh(const char *fmt, ...) _printf_(1, 2);
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The output of a shell command, trimmed. */
static char *sh_out(const char *fmt, ...) _printf_(1, 2);
static char *sh_out(const char *fmt, ...)
{
	static char out[4][512];
	static int n;
	char cmd[2048], *o = out[n++ % 4];
	size_t len;
	va_list ap;
	FILE *p;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	len = fread(o, 1, 511, p);
	o[len] = '\0';
	pclose(p);
	while (len && (o[len - 1] == '\n' || o[len - 1] == ' '))
		o[--len] = '\0';
	return o;
}

#define GIT "GIT_OPTIONAL_LOCKS=0 git -c safe.directory='*' -c core.fsmonitor=false"

static bool is_root(void)
{
	return geteuid() == 0;
}

static struct checkout_target target(void)
{
	struct checkout_target t = {
	    .app_dir = app,
	    .clone_url = http_url,
	    .uid = is_root() ? RUN_UID : (uid_t)-1,
	    .gid = is_root() ? RUN_GID : (gid_t)-1,
	};
	return t;
}

static struct git_fetch_spec file_spec(const char *ref)
{
	struct git_fetch_spec s = {.clone_url = file_url, .ref = ref};
	return s;
}

static struct git_fetch_spec http_spec(const char *ref)
{
	struct git_fetch_spec s = {
	    .clone_url = http_url,
	    .ref = ref,
	    .username = srv.user,
	    .token = srv.token,
	    .token_len = strlen(srv.token),
	};
	return s;
}

static void checkout_ok(const struct checkout_target *t, const struct git_fetch_spec *s,
                        struct checkout_result *res)
{
	struct err e;

	ck_assert_msg(checkout_stage_fetch(t, s, NULL, res, &e) == 0, "checkout of %s: %s", s->ref,
	              e.msg);
}

/* The app directory is whole at commit: HEAD there, detached, nothing changed or missing. */
static bool whole_at(const char *dir, const char *commit)
{
	const char *head, *status;

	if (access(dir, F_OK) != 0)
		return false;
	head = sh_out(GIT " -C '%s' rev-parse HEAD 2>/dev/null", dir);
	if (strcmp(head, commit) != 0)
		return false;
	if (sh(GIT " -C '%s' symbolic-ref -q HEAD >/dev/null 2>&1", dir) == 0)
		return false; /* not detached */
	status = sh_out(GIT " -C '%s' status --porcelain --ignored 2>&1", dir);
	return status[0] == '\0';
}

static bool leftovers(void)
{
	return access(tpath("ws/.app.checkout-new"), F_OK) == 0 ||
	       access(tpath("ws/.app.checkout-old"), F_OK) == 0;
}

/* Every file below dir (links not followed) is owned by uid:gid. */
static int foreign_owned(const char *dir, uid_t uid, gid_t gid)
{
	return sh("test -z \"$(find '%s' \\( ! -user %d -o ! -group %d \\) -print -quit)\"", dir,
	          (int)uid, (int)gid) == 0
	           ? 0
	           : 1;
}

/* A reference checkout made by git itself; diff -r without following links. */
static void assert_same_as_git(const char *dir, const char *commit)
{
	ck_assert_int_eq(sh("git clone -q --no-checkout '%s/repos/app.git' '%s' && " GIT
	                    " -C '%s' checkout -q --detach %s",
	                    srv.dir, tpath("ref"), tpath("ref"), commit),
	                 0);
	ck_assert_msg(
	    sh("diff -r --no-dereference -x .git '%s' '%s' >/dev/null", tpath("ref"), dir) == 0,
	    "%s differs from git's own checkout of %s", dir, commit);
}

static int to_file(void *userdata, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, userdata) == len ? 0 : -1;
}

START_TEST(test_first_checkout_from_pack)
{
	_cleanup_git_repository_ git_repository *host = NULL;
	_cleanup_checkout_stage_ struct checkout_stage *s = NULL;
	_cleanup_git_pack_receiver_ struct git_pack_receiver *r = NULL;
	struct checkout_target t = target();
	struct git_fetch_spec spec = http_spec("main");
	struct git_fetch_result fr;
	struct checkout_result res;
	git_oid commit;
	char *data = NULL, link[64];
	size_t len = 0;
	FILE *stream;
	struct stat st;
	ssize_t n;
	struct err e;

	/* Host side: a private bare repository, fetched with the token, packed to a stream. */
	ck_assert_int_eq(mkdir(tpath("host"), 0700), 0);
	ck_assert_msg(git_fetch_repo_init(tpath("host"), true, &host, &e) == 0, "%s", e.msg);
	ck_assert_msg(git_fetch_ref(host, &spec, &fr, &e) == 0, "%s", e.msg);
	stream = open_memstream(&data, &len);
	ck_assert_ptr_nonnull(stream);
	ck_assert_msg(git_pack_write(host, &fr.tip, NULL, 0, to_file, stream, NULL, &e) == 0, "%s",
	              e.msg);
	fclose(stream);

	/* Guest side: the stage receives the pack and checks the commit out. */
	ck_assert_msg(checkout_stage_begin(&t, &s, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(checkout_stage_path(s), tpath("ws/.app.checkout-new"));
	ck_assert_msg(git_pack_receiver_new(checkout_stage_repo(s), GIT_PACK_INTO_EMPTY, &r, &e) ==
	                  0,
	              "%s", e.msg);
	ck_assert_msg(git_pack_receiver_append(r, data, len, &e) == 0, "%s", e.msg);
	ck_assert_msg(git_pack_receiver_finish(r, &fr.tip, fr.local_ref, &commit, NULL, &e) == 0,
	              "%s", e.msg);
	git_pack_receiver_free(TAKE_PTR(r));
	free(data);
	ck_assert_msg(checkout_stage_checkout(s, &commit, &e) == 0, "%s", e.msg);
	ck_assert_msg(checkout_stage_swap(s, &res, &e) == 0, "%s", e.msg);
	checkout_stage_free(TAKE_PTR(s));

	ck_assert_int_eq(res.method, CHECKOUT_SWAP_FIRST);
	ck_assert(whole_at(app, ts_id(&ids, "c4")));
	assert_same_as_git(app, ts_id(&ids, "c4"));
	ck_assert(!leftovers());
	ck_assert_str_eq(sh_out(GIT " -C '%s' config remote.origin.url", app), http_url);
	ck_assert_str_eq(sh_out(GIT " -C '%s' config remote.origin.fetch", app),
	                 "+refs/heads/*:refs/remotes/origin/*");
	ck_assert_str_eq(sh_out(GIT " -C '%s' config core.protectNTFS", app), "true");
	ck_assert_str_eq(sh_out(GIT " -C '%s' config core.protectHFS", app), "true");
	ck_assert_str_eq(sh_out(GIT " -C '%s' rev-parse refs/remotes/origin/main", app),
	                 ts_id(&ids, "c4"));
	ck_assert_int_eq(sh(GIT " -C '%s' fsck --full --no-dangling >/dev/null 2>&1", app), 0);
	/* A real directory, 0755; links stay links, executables executable. */
	ck_assert_int_eq(lstat(app, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(lstat(tpath("ws/app/abs-link"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	n = readlink(tpath("ws/app/abs-link"), link, sizeof(link) - 1);
	ck_assert_int_eq(n, 4);
	link[n] = '\0';
	ck_assert_str_eq(link, "/etc");
	ck_assert_int_eq(lstat(tpath("ws/app/run.sh"), &st), 0);
	ck_assert(st.st_mode & S_IXUSR);
	if (is_root()) {
		ck_assert_int_eq(st.st_uid, RUN_UID);
		ck_assert_int_eq(foreign_owned(app, RUN_UID, RUN_GID), 0);
		ck_assert_int_eq(lstat(tpath("ws/app/abs-link"), &st), 0);
		ck_assert_int_eq(st.st_uid, RUN_UID); /* the link itself, not /etc */
		ck_assert_int_eq(stat("/etc", &st), 0);
		ck_assert_int_eq(st.st_uid, 0);
	}
}
END_TEST

/*
 * checkout_stage_swap() leaves the old tree beside the app directory, so the daemon can answer
 * before removing it; checkout_stage_old_remove() and checkout_stage_free() remove it.
 */
START_TEST(test_old_tree_removed_after_swap)
{
	struct checkout_target t = target();
	struct git_fetch_spec spec = file_spec(NULL);
	struct checkout_result res;

	t.clone_url = file_url;
	spec.ref = ts_id(&ids, "c1");
	checkout_ok(&t, &spec, &res);
	for (int by_free = 0; by_free < 2; by_free++) {
		_cleanup_checkout_stage_ struct checkout_stage *s = NULL;
		struct git_fetch_result fr;
		struct err e;

		ck_assert_int_eq(sh("echo scratch > '%s/untracked.txt'", app), 0);
		spec.ref = by_free ? ts_id(&ids, "c1") : "main";
		ck_assert_msg(checkout_stage_begin(&t, &s, &e) == 0, "%s", e.msg);
		ck_assert_msg(git_fetch_ref(checkout_stage_repo(s), &spec, &fr, &e) == 0, "%s",
		              e.msg);
		ck_assert_msg(checkout_stage_checkout(s, &fr.commit, &e) == 0, "%s", e.msg);
		ck_assert_msg(checkout_stage_swap(s, &res, &e) == 0, "%s", e.msg);
		ck_assert_int_eq(res.method, CHECKOUT_SWAP_EXCHANGE);
		/* Swapped: the new tree in place, the old one (with its scratch file) beside it. */
		ck_assert(whole_at(app, by_free ? ts_id(&ids, "c1") : ts_id(&ids, "c4")));
		ck_assert_int_ne(access(tpath("ws/app/untracked.txt"), F_OK), 0);
		ck_assert_int_eq(access(tpath("ws/.app.checkout-old/untracked.txt"), F_OK), 0);
		if (by_free) {
			/* The release leaves it to a thread: the name is free at once. */
			checkout_stage_free(TAKE_PTR(s));
			ck_assert(access(tpath("ws/.app.checkout-old"), F_OK) != 0);
			ck_assert(trash_gone());
		} else {
			ck_assert(!checkout_stage_old_remove(s));
			ck_assert(!leftovers());
			/* Once: nothing is left for a second call, or for the release. */
			ck_assert(!checkout_stage_old_remove(s));
		}
		ck_assert(!leftovers());
	}
}
END_TEST

START_TEST(test_swap_over_old_tree)
{
	struct checkout_target t = target();
	struct git_fetch_spec s = file_spec(NULL);
	struct checkout_result res;

	t.clone_url = file_url;
	s.ref = ts_id(&ids, "c1");
	checkout_ok(&t, &s, &res);
	ck_assert_int_eq(res.method, CHECKOUT_SWAP_FIRST);
	ck_assert(whole_at(app, ts_id(&ids, "c1")));
	/* Work the old tree's owner did, and a mode the new tree keeps. */
	ck_assert_int_eq(sh("echo scratch > '%s/untracked.txt' && mkdir -p '%s/node_modules/x' && "
	                    "chmod 0750 '%s'",
	                    app, app, app),
	                 0);

	s.ref = "main";
	checkout_ok(&t, &s, &res);
	ck_assert_int_eq(res.method, CHECKOUT_SWAP_EXCHANGE);
	ck_assert(!res.old_tree_left);
	ck_assert(whole_at(app, ts_id(&ids, "c4")));
	ck_assert_int_ne(access(tpath("ws/app/untracked.txt"), F_OK), 0);
	ck_assert(!leftovers());
	{
		struct stat st;

		ck_assert_int_eq(stat(app, &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, 0750);
	}

	/* The same with two renames, as on a filesystem without RENAME_EXCHANGE. */
	t.flags = CHECKOUT_NO_EXCHANGE;
	s.ref = "feature";
	checkout_ok(&t, &s, &res);
	ck_assert_int_eq(res.method, CHECKOUT_SWAP_RENAMES);
	ck_assert(whole_at(app, ts_id(&ids, "feature")));
	ck_assert(!leftovers());
}
END_TEST

/*
 * Kill a checkout of c4 over c1 at point; what is the app directory then, and after recovery?
 * expect_before: "old", "new" or "missing"; expect_action: checkout_stage_recover's answer.
 */
static void kill_at(const char *point, unsigned int flags, bool first, const char *expect_before,
                    int expect_action, const char *expect_after)
{
	struct checkout_target t = target();
	struct git_fetch_spec s = file_spec(NULL);
	struct checkout_result res;
	enum checkout_recovery action = -1;
	const char *c1 = ts_id(&ids, "c1"), *c4 = ts_id(&ids, "c4");
	struct err e;
	pid_t pid;
	int status;

	t.clone_url = file_url;
	if (!first) {
		s.ref = c1;
		checkout_ok(&t, &s, &res);
	}
	t.flags = flags;
	t.hook = checkout_stage_hook_kill_at;
	t.hook_userdata = (void *)point;
	s.ref = "main";
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int r = checkout_stage_fetch(&t, &s, NULL, &res, &e);

		_exit(r < 0 ? 2 : 3); /* never reached the point */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	              "%s: the checkout was not killed there (status %d)", point, status);

	if (!strcmp(expect_before, "old"))
		ck_assert_msg(whole_at(app, c1), "%s: the old tree is not whole", point);
	else if (!strcmp(expect_before, "new"))
		ck_assert_msg(whole_at(app, c4), "%s: the new tree is not whole", point);
	else
		ck_assert_msg(access(app, F_OK) != 0, "%s: the app directory is there", point);

	ck_assert_msg(checkout_stage_recover(app, &action, &e) == 0, "%s", e.msg);
	ck_assert_msg((int)action == expect_action, "%s: recovery did %d, not %d", point, action,
	              expect_action);
	if (!strcmp(expect_after, "old"))
		ck_assert_msg(whole_at(app, c1), "%s: the old tree is not whole after recovery",
		              point);
	else if (!strcmp(expect_after, "new"))
		ck_assert_msg(whole_at(app, c4), "%s: the new tree is not whole after recovery",
		              point);
	else
		ck_assert_msg(access(app, F_OK) != 0, "%s: an app directory appeared", point);
	ck_assert_msg(!leftovers(), "%s: something is left beside the app directory", point);
	/* A second recovery has nothing to do, and the next checkout works. */
	ck_assert_int_eq(checkout_stage_recover(app, &action, &e), 0);
	ck_assert_int_eq(action, CHECKOUT_RECOVER_NONE);
	t.hook = NULL;
	s.ref = "feature";
	checkout_ok(&t, &s, &res);
	ck_assert(whole_at(app, ts_id(&ids, "feature")));
}

START_TEST(test_killed_exchange_staged)
{
	kill_at("staged", 0, false, "old", CHECKOUT_RECOVER_CLEANED, "old");
}
END_TEST

START_TEST(test_killed_exchange_fsynced)
{
	kill_at("fsynced", 0, false, "old", CHECKOUT_RECOVER_CLEANED, "old");
}
END_TEST

START_TEST(test_killed_exchange_before_swap)
{
	kill_at("before-swap", 0, false, "old", CHECKOUT_RECOVER_CLEANED, "old");
}
END_TEST

START_TEST(test_killed_exchange_after_swap)
{
	kill_at("after-swap", 0, false, "new", CHECKOUT_RECOVER_CLEANED, "new");
}
END_TEST

START_TEST(test_killed_renames_before_swap)
{
	kill_at("before-swap", CHECKOUT_NO_EXCHANGE, false, "old", CHECKOUT_RECOVER_CLEANED, "old");
}
END_TEST

START_TEST(test_killed_renames_in_window)
{
	/* The documented window: the app directory is missing until recovery finishes. */
	kill_at("renamed-old", CHECKOUT_NO_EXCHANGE, false, "missing", CHECKOUT_RECOVER_FINISHED,
	        "new");
}
END_TEST

START_TEST(test_killed_renames_after_swap)
{
	kill_at("after-swap", CHECKOUT_NO_EXCHANGE, false, "new", CHECKOUT_RECOVER_CLEANED, "new");
}
END_TEST

START_TEST(test_killed_first_checkout)
{
	kill_at("fsynced", 0, true, "missing", CHECKOUT_RECOVER_CLEANED, "missing");
}
END_TEST

START_TEST(test_killed_first_checkout_after_swap)
{
	kill_at("after-swap", 0, true, "new", CHECKOUT_RECOVER_NONE, "new");
}
END_TEST

static void make_dir_with(const char *dir, const char *file)
{
	ck_assert_int_eq(sh("mkdir -p '%s/sub' && echo %s > '%s/sub/%s'", dir, file, dir, file), 0);
}

START_TEST(test_recover_states)
{
	enum checkout_recovery a;
	struct err e;

	/* Nothing there. */
	ck_assert_int_eq(checkout_stage_recover(app, &a, &e), 0);
	ck_assert_int_eq(a, CHECKOUT_RECOVER_NONE);

	/* Only the old tree: the first rename happened, the stage is gone: put it back. */
	make_dir_with(tpath("ws/.app.checkout-old"), "old");
	ck_assert_int_eq(checkout_stage_recover(app, &a, &e), 0);
	ck_assert_int_eq(a, CHECKOUT_RECOVER_RESTORED);
	ck_assert_int_eq(access(tpath("ws/app/sub/old"), F_OK), 0);

	/* The app and both others: remove the others. A link in them is not followed. */
	make_dir_with(tpath("ws/.app.checkout-new"), "new");
	make_dir_with(tpath("ws/.app.checkout-old"), "old2");
	make_dir_with(tpath("outside"), "keep");
	ck_assert_int_eq(symlink(tpath("outside"), tpath("ws/.app.checkout-new/sub/escape")), 0);
	ck_assert_int_eq(symlink(tpath("outside"), tpath("ws/.app.checkout-old/escape")), 0);
	/* A read-only directory (as module caches are) goes too. */
	ck_assert_int_eq(sh("mkdir -p '%s/ro' && touch '%s/ro/f' && chmod 0555 '%s/ro'",
	                    tpath("ws/.app.checkout-old"), tpath("ws/.app.checkout-old"),
	                    tpath("ws/.app.checkout-old")),
	                 0);
	ck_assert_int_eq(checkout_stage_recover(app, &a, &e), 0);
	ck_assert_int_eq(a, CHECKOUT_RECOVER_CLEANED);
	ck_assert(!leftovers());
	ck_assert_int_eq(access(tpath("outside/sub/keep"), F_OK), 0);
	ck_assert_int_eq(access(tpath("ws/app/sub/old"), F_OK), 0);

	/* Between the two renames: finish. */
	ck_assert_int_eq(rename(app, tpath("ws/.app.checkout-old")), 0);
	make_dir_with(tpath("ws/.app.checkout-new"), "new");
	ck_assert_int_eq(checkout_stage_recover(app, &a, &e), 0);
	ck_assert_int_eq(a, CHECKOUT_RECOVER_FINISHED);
	ck_assert_int_eq(access(tpath("ws/app/sub/new"), F_OK), 0);
	ck_assert(!leftovers());

	/* Only a stage, no app: a first checkout that never finished. */
	ck_assert_int_eq(sh("rm -rf '%s'", app), 0);
	make_dir_with(tpath("ws/.app.checkout-new"), "new");
	ck_assert_int_eq(checkout_stage_recover(app, &a, &e), 0);
	ck_assert_int_eq(a, CHECKOUT_RECOVER_CLEANED);
	ck_assert_int_ne(access(app, F_OK), 0);
	ck_assert(!leftovers());

	/* A link where the old tree would be is removed, its target kept. */
	make_dir_with(app, "x");
	ck_assert_int_eq(symlink(tpath("outside"), tpath("ws/.app.checkout-old")), 0);
	ck_assert_int_eq(checkout_stage_recover(app, &a, &e), 0);
	ck_assert(!leftovers());
	ck_assert_int_eq(access(tpath("outside/sub/keep"), F_OK), 0);
}
END_TEST

START_TEST(test_symlink_escape_refused)
{
	struct checkout_target t = target();
	struct git_fetch_spec s = file_spec("main");
	struct checkout_result res;
	char url[400];
	struct ts_ids esc;
	struct err e;
	const char *targets[] = {"/etc", tpath("outside")};

	ck_assert_int_eq(mkdir(tpath("outside"), 0755), 0);
	t.clone_url = NULL;
	/* An old tree to keep. */
	s.ref = ts_id(&ids, "c1");
	checkout_ok(&t, &s, &res);

	for (size_t i = 0; i < ELEMENTSOF(targets); i++) {
		char name[32];

		snprintf(name, sizeof(name), "escape%zu", i);
		ts_fixture(fixtures, name, "escape", targets[i], &esc);
		snprintf(url, sizeof(url), "file://%s/%s.git", fixtures, name);
		s.clone_url = url;
		s.ref = "main";
		ck_assert_int_lt(checkout_stage_fetch(&t, &s, NULL, &res, &e), 0);
		ck_assert_int_eq(e.cls, ERR_REFUSED);
		ck_assert_msg(strstr(e.msg, "refusing to check out") && strstr(e.msg, "link"), "%s",
		              e.msg);
		ck_assert_int_ne(access("/etc/x", F_OK), 0);
		ck_assert_int_ne(access(tpath("outside/x"), F_OK), 0);
		ck_assert(whole_at(app, ts_id(&ids, "c1")));
		ck_assert(!leftovers());
	}
	/* "LINK/x" beside a link "link": refused too (a case-folding filesystem would follow). */
	ck_assert_int_eq(sh("set -e; d=$(mktemp -d); cd $d; git init -q; ln -s '%s' link; "
	                    "mkdir LINK; echo p > LINK/x; git add -A; "
	                    "git -c user.name=t -c user.email=t@t commit -qm c; "
	                    "git clone -q --bare . '%s/case.git'; rm -rf $d",
	                    tpath("outside"), fixtures),
	                 0);
	snprintf(url, sizeof(url), "file://%s/case.git", fixtures);
	s.clone_url = url;
	s.ref = NULL;
	ck_assert_int_lt(checkout_stage_fetch(&t, &s, NULL, &res, &e), 0);
	ck_assert_msg(strstr(e.msg, "LINK/x lies beneath a symbolic link"), "%s", e.msg);
	ck_assert_int_ne(access(tpath("outside/x"), F_OK), 0);
	ck_assert(whole_at(app, ts_id(&ids, "c1")));
}
END_TEST

START_TEST(test_link_then_directory)
{
	struct checkout_target t = target();
	struct git_fetch_spec s = file_spec(NULL);
	struct checkout_result res;
	struct ts_ids rl;
	char url[400];
	struct stat st;

	ck_assert_int_eq(mkdir(tpath("outside"), 0755), 0);
	ts_fixture(fixtures, "relink", "relink", tpath("outside"), &rl);
	snprintf(url, sizeof(url), "file://%s/relink.git", fixtures);
	s.clone_url = url;
	t.clone_url = url;

	/* A link to outside, checked out as a link, then a directory where the link was. */
	s.ref = ts_id(&rl, "c1");
	checkout_ok(&t, &s, &res);
	ck_assert_int_eq(lstat(tpath("ws/app/link"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	s.ref = ts_id(&rl, "c2");
	checkout_ok(&t, &s, &res);
	ck_assert_int_eq(lstat(tpath("ws/app/link"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(access(tpath("ws/app/link/x"), F_OK), 0);
	ck_assert_int_ne(access(tpath("outside/x"), F_OK), 0);
}
END_TEST

START_TEST(test_guest_fetch_with_token)
{
	struct checkout_target t = target();
	struct git_fetch_spec s = http_spec("v1");
	struct git_fetch_result fr;
	struct checkout_result res;
	struct ts_secret secret;
	char first[4096] = "";
	int files = 0;
	struct err e;

	ck_assert_msg(checkout_stage_fetch(&t, &s, &fr, &res, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(fr.kind, GIT_FETCH_TAG);
	ck_assert(whole_at(app, ts_id(&ids, "c2")));
	ck_assert_str_eq(sh_out(GIT " -C '%s' config remote.origin.url", app), http_url);
	ck_assert_str_eq(sh_out(GIT " -C '%s' rev-parse refs/tags/v1", app), ts_id(&ids, "tag_v1"));

	ts_secret_init(&secret, srv.user, srv.token);
	ck_assert_int_eq(ts_scan_tree(&secret, tpath("ws"), first, sizeof(first), &files), 0);
	ck_assert_int_gt(files, 10);

	/* A wrong token changes nothing: the old tree stays, no stage is left. */
	s = http_spec("main");
	s.token = "definitely-not-the-token";
	s.token_len = strlen(s.token);
	ck_assert_int_lt(checkout_stage_fetch(&t, &s, NULL, &res, &e), 0);
	ck_assert_int_eq(e.code, EACCES);
	ck_assert_msg(strstr(e.msg, "authentication failed for"), "%s", e.msg);
	ck_assert(whole_at(app, ts_id(&ids, "c2")));
	ck_assert(!leftovers());

	/* A missing ref likewise. */
	s = http_spec("no-such-ref");
	ck_assert_int_lt(checkout_stage_fetch(&t, &s, NULL, &res, &e), 0);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert(whole_at(app, ts_id(&ids, "c2")));
	ck_assert(!leftovers());
	ts_secret_dispose(&secret);
}
END_TEST

START_TEST(test_refusals)
{
	_cleanup_checkout_stage_ struct checkout_stage *st = NULL;
	struct checkout_target t = target();
	struct git_fetch_spec s = file_spec("main");
	struct checkout_result res;
	git_oid c4;
	struct err e;

	/* An app directory that is a link. */
	ck_assert_int_eq(mkdir(tpath("elsewhere"), 0755), 0);
	ck_assert_int_eq(symlink(tpath("elsewhere"), app), 0);
	ck_assert_int_lt(checkout_stage_fetch(&t, &s, NULL, &res, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_msg(strstr(e.msg, "not a directory"), "%s", e.msg);
	ck_assert_int_eq(unlink(app), 0);

	/* origin with credentials. */
	t.clone_url = "https://x-access-token:abc@github.com/o/r.git";
	ck_assert_int_lt(checkout_stage_fetch(&t, &s, NULL, &res, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_msg(strstr(e.msg, "carries credentials"), "%s", e.msg);
	t.clone_url = NULL;

	/* Relative paths. */
	t.app_dir = "ws/app";
	ck_assert_int_lt(checkout_stage_begin(&t, &st, &e), 0);
	t.app_dir = app;

	/* A commit the stage does not have. */
	ck_assert_msg(checkout_stage_begin(&t, &st, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(git_oid_fromstr(&c4, ts_id(&ids, "c4")), 0);
	ck_assert_int_lt(checkout_stage_checkout(st, &c4, &e), 0);
	ck_assert_int_eq(e.code, ENOENT);
	/* Swapping what was never checked out. */
	ck_assert_int_lt(checkout_stage_swap(st, &res, &e), 0);
	/* Freed unswapped: no stage left. */
	checkout_stage_free(TAKE_PTR(st));
	ck_assert(!leftovers());
	ck_assert_int_ne(access(app, F_OK), 0);
}
END_TEST

static Suite *checkout_stage_suite(void)
{
	Suite *s = suite_create("checkout_stage");
	TCase *tc = tcase_create("core");

	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_first_checkout_from_pack);
	tcase_add_test(tc, test_swap_over_old_tree);
	tcase_add_test(tc, test_old_tree_removed_after_swap);
	tcase_add_test(tc, test_killed_exchange_staged);
	tcase_add_test(tc, test_killed_exchange_fsynced);
	tcase_add_test(tc, test_killed_exchange_before_swap);
	tcase_add_test(tc, test_killed_exchange_after_swap);
	tcase_add_test(tc, test_killed_renames_before_swap);
	tcase_add_test(tc, test_killed_renames_in_window);
	tcase_add_test(tc, test_killed_renames_after_swap);
	tcase_add_test(tc, test_killed_first_checkout);
	tcase_add_test(tc, test_killed_first_checkout_after_swap);
	tcase_add_test(tc, test_recover_states);
	tcase_add_test(tc, test_symlink_escape_refused);
	tcase_add_test(tc, test_link_then_directory);
	tcase_add_test(tc, test_guest_fetch_with_token);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(checkout_stage_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
