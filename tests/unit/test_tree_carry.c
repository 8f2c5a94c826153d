/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree_carry.h"

static char root[PATH_MAX];
static int old_fd = -1, new_fd = -1;

static void run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run(const char *fmt, ...)
{
	char cmd[4096], full[4200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "cd '%s' && %s", root, cmd);
	ck_assert_msg(system(full) == 0, "%s", cmd);
}

static int open_dir(const char *rel)
{
	char path[PATH_MAX * 2];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/test_tree_carry.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	run("mkdir old new && echo '{\"lock\":1}' >old/package-lock.json && "
	    "cp old/package-lock.json new/ && echo '{}' >old/package.json && cp old/package.json "
	    "new/ "
	    "&& mkdir -p old/node_modules/express && echo x >old/node_modules/express/index.js");
	old_fd = open_dir("old");
	new_fd = open_dir("new");
}

static void teardown(void)
{
	close(old_fd);
	close(new_fd);
	run("rm -rf '%s'", root);
}

static bool exists(const char *rel)
{
	char path[PATH_MAX * 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0;
}

static const struct tree_carry_entry *entry(const struct tree_carry_report *r, const char *path)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->e[i].path, path) == 0)
			return &r->e[i];
	return NULL;
}

START_TEST(test_unchanged_moves)
{
	struct tree_carry_report r;
	const struct tree_carry_entry *e;

	tree_carry_run(old_fd, new_fd, getuid(), getgid(), &r);
	e = entry(&r, "node_modules");
	ck_assert_ptr_nonnull(e);
	ck_assert(e->moved);
	ck_assert_ptr_nonnull(strstr(e->why, "package-lock.json"));
	ck_assert(exists("new/node_modules/express/index.js"));
	ck_assert(!exists("old/node_modules"));
}
END_TEST

START_TEST(test_changed_stays)
{
	struct tree_carry_report r;
	const struct tree_carry_entry *e;

	run("echo '{\"lock\":2}' >new/package-lock.json");
	tree_carry_run(old_fd, new_fd, getuid(), getgid(), &r);
	e = entry(&r, "node_modules");
	ck_assert_ptr_nonnull(e);
	ck_assert(!e->moved);
	ck_assert_str_eq(e->why, "package-lock.json changed: built again");
	ck_assert(!exists("new/node_modules"));
	ck_assert(exists("old/node_modules/express"));
}
END_TEST

START_TEST(test_missing_input_counts_as_change)
{
	struct tree_carry_report r;

	run("rm new/package.json");
	tree_carry_run(old_fd, new_fd, getuid(), getgid(), &r);
	ck_assert(!entry(&r, "node_modules")->moved);
	ck_assert(!exists("new/node_modules"));
}
END_TEST

START_TEST(test_hostile_new_tree)
{
	struct tree_carry_report r;

	/* The new tree's own node_modules (a link to elsewhere) is kept and never entered. */
	run("mkdir victim && ln -s ../victim new/node_modules");
	tree_carry_run(old_fd, new_fd, getuid(), getgid(), &r);
	ck_assert(!entry(&r, "node_modules")->moved);
	ck_assert_str_eq(entry(&r, "node_modules")->why,
	                 "the new tree has its own node_modules: built again");
	ck_assert(!exists("victim/express"));
	ck_assert(exists("old/node_modules/express"));
}
END_TEST

START_TEST(test_hostile_parent_link)
{
	struct tree_carry_report r;
	const struct tree_carry_entry *e;

	/* tmp/cache: the new tree's tmp is a link: nothing is moved through it. */
	run("echo 'gem \"rails\"' >old/Gemfile && cp old/Gemfile new/ && mkdir -p "
	    "old/tmp/cache/bootsnap "
	    "&& mkdir victim && ln -s ../victim new/tmp");
	tree_carry_run(old_fd, new_fd, getuid(), getgid(), &r);
	e = entry(&r, "tmp/cache");
	ck_assert_ptr_nonnull(e);
	ck_assert(!e->moved);
	ck_assert_ptr_nonnull(strstr(e->why, "is a link or not a directory"));
	ck_assert(!exists("victim/cache"));
	ck_assert(exists("old/tmp/cache/bootsnap"));
}
END_TEST

START_TEST(test_hostile_old_tree)
{
	struct tree_carry_report r;
	const struct tree_carry_entry *e;

	/* The old tree's node_modules is a link (to a directory the app does not own). */
	run("rm -rf old/node_modules && mkdir -p secret/express && ln -s ../secret "
	    "old/node_modules");
	tree_carry_run(old_fd, new_fd, getuid(), getgid(), &r);
	e = entry(&r, "node_modules");
	ck_assert_ptr_nonnull(e);
	ck_assert(!e->moved);
	ck_assert(!exists("new/node_modules"));
	ck_assert(exists("secret/express"));
	/* A directory of another owner stays where it is. */
	run("rm old/node_modules && mkdir old/node_modules");
	tree_carry_run(old_fd, new_fd, getuid() + 1, getgid(), &r);
	e = entry(&r, "node_modules");
	ck_assert(!e->moved);
	ck_assert_ptr_nonnull(strstr(e->why, "belongs to uid"));
	ck_assert(!exists("new/node_modules"));
}
END_TEST

START_TEST(test_parent_created)
{
	struct tree_carry_report r;

	run("echo 'gem \"rails\"' >old/Gemfile && cp old/Gemfile new/ && "
	    "mkdir -p old/vendor/bundle/ruby old/tmp/cache/assets");
	tree_carry_run(old_fd, new_fd, getuid(), getgid(), &r);
	ck_assert(entry(&r, "vendor/bundle")->moved);
	ck_assert(entry(&r, "tmp/cache")->moved);
	ck_assert(exists("new/vendor/bundle/ruby"));
	ck_assert(exists("new/tmp/cache/assets"));
}
END_TEST

START_TEST(test_installer_commands)
{
	ck_assert_str_eq(tree_carry_group_of_command("npm ci --prefer-offline --no-audit")->name,
	                 "node");
	ck_assert_str_eq(tree_carry_group_of_command("npm install")->name, "node");
	ck_assert_str_eq(tree_carry_group_of_command("yarn")->name, "node");
	ck_assert_str_eq(tree_carry_group_of_command("bundle install --jobs=4")->name, "ruby");
	ck_assert_str_eq(tree_carry_group_of_command("bundle")->name, "ruby");
	ck_assert_str_eq(tree_carry_group_of_command("bundle exec rake db:prepare")->name,
	                 "database");
	ck_assert_str_eq(tree_carry_group_of_command("bin/rails db:prepare")->name, "database");
	ck_assert_ptr_null(tree_carry_group_of_command("bundle exec rake db:migrate"));
	ck_assert_ptr_null(
	    tree_carry_group_of_command("bin/rails db:prepare && bin/rails db:seed"));
	ck_assert_ptr_null(tree_carry_group_of_command("npm install express"));
	ck_assert_ptr_null(tree_carry_group_of_command("npm ci && rm -rf /tmp/x"));
	ck_assert_ptr_null(tree_carry_group_of_command("cd sub && bundle install"));
	ck_assert_ptr_null(tree_carry_group_of_command("npm ci $(cat flags)"));
}
END_TEST

/* A Rails tree, the same in both. */
static void rails_trees(void)
{
	run("for t in old new; do mkdir -p $t/db/migrate $t/config && "
	    "echo 'gem \"rails\"' >$t/Gemfile && echo 'ActiveRecord::Schema.define' "
	    ">$t/db/schema.rb "
	    "&& echo 'class CreateKeys' >$t/db/migrate/20240101000000_create_keys.rb && "
	    "echo 'development: {}' >$t/config/database.yml; done");
}

/* Whether input has the same digest in both trees (both present). */
static bool same_in_both(const char *input)
{
	unsigned char a[TREE_CARRY_DIGEST_BYTES], b[TREE_CARRY_DIGEST_BYTES];
	bool pa, pb;

	ck_assert_int_eq(tree_carry_input_digest(old_fd, input, a, &pa), 0);
	ck_assert_int_eq(tree_carry_input_digest(new_fd, input, b, &pb), 0);
	ck_assert(pa && pb);
	return memcmp(a, b, sizeof(a)) == 0;
}

START_TEST(test_directory_input)
{
	rails_trees();
	ck_assert(same_in_both("db/migrate/"));
	ck_assert(same_in_both("db/schema.rb"));
	/* A new migration, an edited one, a renamed one: each is a change. */
	run("echo 'class AddName' >new/db/migrate/20250101000000_add_name.rb");
	ck_assert(!same_in_both("db/migrate/"));
	run("rm new/db/migrate/20250101000000_add_name.rb");
	ck_assert(same_in_both("db/migrate/"));
	run("echo 'class CreateKeys # edited' >new/db/migrate/20240101000000_create_keys.rb");
	ck_assert(!same_in_both("db/migrate/"));
	run("echo 'class CreateKeys' >new/db/migrate/20240101000000_create_keys.rb");
	ck_assert(same_in_both("db/migrate/"));
	run("mv new/db/migrate/20240101000000_create_keys.rb "
	    "new/db/migrate/20240101000001_create_keys.rb");
	ck_assert(!same_in_both("db/migrate/"));
}
END_TEST

START_TEST(test_directory_input_refuses_links)
{
	unsigned char d[TREE_CARRY_DIGEST_BYTES];
	bool present;

	rails_trees();
	/* A link among the migrations (to a file elsewhere) cannot be compared. */
	run("echo secret >outside && ln -s ../../../outside new/db/migrate/20250101_x.rb");
	ck_assert_int_lt(tree_carry_input_digest(new_fd, "db/migrate/", d, &present), 0);
	/* A subdirectory among them neither. */
	run("rm new/db/migrate/20250101_x.rb && mkdir new/db/migrate/sub");
	ck_assert_int_lt(tree_carry_input_digest(new_fd, "db/migrate/", d, &present), 0);
	/* db itself a link in the new tree: refused, not followed. */
	run("rm -rf new/db && mkdir elsewhere && echo x >elsewhere/schema.rb && "
	    "ln -s ../elsewhere new/db");
	ck_assert_int_lt(tree_carry_input_digest(new_fd, "db/schema.rb", d, &present), 0);
	ck_assert_int_lt(tree_carry_input_digest(new_fd, "db/migrate/", d, &present), 0);
	/* A missing directory is an input too: missing, with a digest. */
	run("rm new/db");
	ck_assert_int_eq(tree_carry_input_digest(new_fd, "db/migrate/", d, &present), 0);
	ck_assert(!present);
}
END_TEST

START_TEST(test_database_group_moves_nothing)
{
	struct tree_carry_report r;

	/* db:prepare builds the workspace's database, not a directory of the tree. */
	rails_trees();
	run("echo sqlite >old/db/development.sqlite3");
	tree_carry_run(old_fd, new_fd, getuid(), getgid(), &r);
	ck_assert_ptr_null(entry(&r, "db/development.sqlite3"));
	ck_assert(exists("old/db/development.sqlite3"));
	ck_assert(!exists("new/db/development.sqlite3"));
}
END_TEST

static Suite *tree_carry_suite(void)
{
	Suite *s = suite_create("tree_carry");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_unchanged_moves);
	tcase_add_test(tc, test_changed_stays);
	tcase_add_test(tc, test_missing_input_counts_as_change);
	tcase_add_test(tc, test_hostile_new_tree);
	tcase_add_test(tc, test_hostile_parent_link);
	tcase_add_test(tc, test_hostile_old_tree);
	tcase_add_test(tc, test_parent_created);
	tcase_add_test(tc, test_installer_commands);
	tcase_add_test(tc, test_directory_input);
	tcase_add_test(tc, test_directory_input_refuses_links);
	tcase_add_test(tc, test_database_group_moves_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tree_carry_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
