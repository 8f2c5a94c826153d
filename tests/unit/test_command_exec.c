/* SPDX-License-Identifier: Apache-2.0 */
/*
 * command_exec: which command strings run without the shell, the words and paths it prepares,
 * and, through proc_spawn() against real programs, that the direct way runs what `sh -c`
 * would have run (the same program, the same arguments, PATH's order) and hands every other
 * case (a word not found, a script without `#!`) to the shell.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command_exec.h"
#include "err.h"
#include "proc.h"

#include "test_watchdog.h"

static char *const env_path[] = {(char *)"HOME=/", (char *)"PATH=/usr/local/bin:/usr/bin:/", NULL};

static void setup(void)
{
	test_watchdog_start();
}

START_TEST(test_direct_commands)
{
	static const char *const direct[] = {
	    "node server.js",
	    "/usr/bin/python3 manifest.py",
	    "bin/rails db:prepare",
	    "npm ci --prefer-offline --no-audit --no-fund",
	    "exec node server.js",
	    "  bundle\tinstall  ",
	    "bin/rails server -b 0.0.0.0 -p 3000 --pid=tmp/x.pid user@host a,b +c %d ^e",
	    "A=1 node x",
	    "RAILS_ENV=test _X2=a=b exec bin/rails db:prepare",
	};
	for (size_t i = 0; i < sizeof(direct) / sizeof(direct[0]); i++)
		ck_assert_msg(command_exec_is_direct(direct[i], env_path), "%s", direct[i]);
}
END_TEST

START_TEST(test_shell_commands)
{
	static const char *const shell[] = {
	    "",
	    "   ",
	    "true",
	    "exec",
	    "cd app",
	    ". ./env",
	    ": x",
	    "echo hi",
	    "if x",
	    "while x",
	    "exec true",
	    "cd test/dummy && bin/rails db:prepare",
	    "node $APP",
	    "node ${APP}",
	    "node `x`",
	    "node $(x)",
	    "node 'a b'",
	    "node \"a\"",
	    "node a\\ b",
	    "node *.js",
	    "node a?",
	    "node [ab]",
	    "node ~/x",
	    "node ~",
	    "node x # comment",
	    "node x;y",
	    "node x|y",
	    "node x&",
	    "node x>out",
	    "node <in",
	    "node (x)",
	    "node {a,b}",
	    "node !x",
	    "A=1",
	    "A=1 exec",
	    "A=1 true",
	    "PATH=/bin node x",
	    "A=1 PATH=/bin x/y",
	    "exec A=1 node",
	    "1A=b node",
	    "-x y",
	    "exec -a n x",
	    "node x\ny",
	    "node \xc3\xa9",
	    "node x\r",
	};
	for (size_t i = 0; i < sizeof(shell) / sizeof(shell[0]); i++)
		ck_assert_msg(!command_exec_is_direct(shell[i], env_path), "[%s]", shell[i]);

	char long_cmd[4200];
	memset(long_cmd, 'a', sizeof(long_cmd) - 1);
	long_cmd[sizeof(long_cmd) - 1] = '\0';
	ck_assert(!command_exec_is_direct(long_cmd, env_path));
}
END_TEST

/* A word without a slash needs one PATH of absolute directories; with a slash, none. */
START_TEST(test_path_rules)
{
	char *const none[] = {(char *)"HOME=/", NULL};
	char *const empty_dir[] = {(char *)"PATH=/usr/bin::/bin", NULL};
	char *const trailing[] = {(char *)"PATH=/usr/bin:", NULL};
	char *const relative[] = {(char *)"PATH=bin:/usr/bin", NULL};
	char *const twice[] = {(char *)"PATH=/usr/bin", (char *)"PATH=/bin", NULL};
	char *const empty[] = {(char *)"PATH=", NULL};

	ck_assert(!command_exec_is_direct("node x", none));
	ck_assert(!command_exec_is_direct("node x", NULL));
	ck_assert(!command_exec_is_direct("node x", empty_dir));
	ck_assert(!command_exec_is_direct("node x", trailing));
	ck_assert(!command_exec_is_direct("node x", relative));
	ck_assert(!command_exec_is_direct("node x", twice));
	ck_assert(!command_exec_is_direct("node x", empty));
	ck_assert(command_exec_is_direct("bin/x y", none));
	ck_assert(command_exec_is_direct("./x", empty_dir));
}
END_TEST

/* got, a NULL-terminated list, holds exactly the strings of want (NULL-terminated too). */
static void assert_list(char *const *got, const char *const *want)
{
	size_t i = 0;

	ck_assert_ptr_nonnull(got);
	for (; want[i]; i++) {
		ck_assert_msg(got[i], "item %zu missing, want %s", i, want[i]);
		ck_assert_str_eq(got[i], want[i]);
	}
	ck_assert_msg(!got[i], "item %zu too many: %s", i, got[i]);
}

START_TEST(test_prepared_words_and_paths)
{
	struct command_exec c;

	/* No PWD: the directory's, as dash exports it. */
	ck_assert_int_eq(
	    command_exec_prepare(" exec  node\t server.js  --port=3 ", env_path, "/", &c), 0);
	assert_list(c.argv, (const char *const[]){"node", "server.js", "--port=3", NULL});
	assert_list(c.paths,
	            (const char *const[]){"/usr/local/bin/node", "/usr/bin/node", "/node", NULL});
	assert_list(c.sh_argv,
	            (const char *const[]){"sh", "-c", " exec  node\t server.js  --port=3 ", NULL});
	assert_list(c.env, (const char *const[]){"HOME=/", "PATH=/usr/local/bin:/usr/bin:/",
	                                         "PWD=/", NULL});
	command_exec_dispose(&c);

	char *const here[] = {(char *)"PWD=/", NULL};
	ck_assert_int_eq(command_exec_prepare("bin/rails db:prepare", here, "/", &c), 0);
	assert_list(c.paths, (const char *const[]){"bin/rails", NULL});
	assert_list(c.argv, (const char *const[]){"bin/rails", "db:prepare", NULL});
	ck_assert_ptr_null(c.env); /* PWD already names "/" */
	command_exec_dispose(&c);

	/* Assignments: the command's environment, a name set twice taking its last value. */
	char *const env[] = {(char *)"A=old", (char *)"PATH=/usr/bin", (char *)"B=keep",
	                     (char *)"PWD=/tmp", NULL};
	ck_assert_int_eq(command_exec_prepare("A=1 C=x=y A=2 exec node s.js", env, "/", &c), 0);
	assert_list(c.argv, (const char *const[]){"node", "s.js", NULL});
	assert_list(c.paths, (const char *const[]){"/usr/bin/node", NULL});
	assert_list(
	    c.env, (const char *const[]){"PATH=/usr/bin", "B=keep", "PWD=/", "C=x=y", "A=2", NULL});
	command_exec_dispose(&c);
	ck_assert_int_eq(command_exec_prepare("node s.js", env, "/tmp", &c), 0);
	ck_assert_ptr_null(c.env);
	command_exec_dispose(&c);

	/* No directory given: ours, by its real path. */
	char here_real[PATH_MAX], want_pwd[PATH_MAX + 8];
	ck_assert_ptr_nonnull(realpath(".", here_real));
	snprintf(want_pwd, sizeof(want_pwd), "PWD=%s", here_real);
	ck_assert_int_eq(command_exec_prepare("node s.js", env_path, NULL, &c), 0);
	assert_list(c.env, (const char *const[]){"HOME=/", "PATH=/usr/local/bin:/usr/bin:/",
	                                         want_pwd, NULL});
	command_exec_dispose(&c);

	ck_assert_int_eq(command_exec_prepare("cd x && y", env_path, "/", &c), 0);
	ck_assert_ptr_null(c.argv);
	ck_assert_ptr_null(c.env);
	ck_assert_str_eq(c.sh_argv[2], "cd x && y");
	command_exec_dispose(&c);
}
END_TEST

/* What dash sets itself at its start, or would refuse, leaves the command to it. */
START_TEST(test_environment_the_shell_rewrites)
{
	char *const no_equals[] = {(char *)"PATH=/usr/bin", (char *)"JUSTANAME", NULL};
	char *const bad_name[] = {(char *)"PATH=/usr/bin", (char *)"A-B=1", NULL};
	char *const function[] = {(char *)"PATH=/usr/bin", (char *)"BASH_FUNC_f%%=() { :; }", NULL};
	char *const twice[] = {(char *)"PATH=/usr/bin", (char *)"A=1", (char *)"A=2", NULL};
	char *const ifs[] = {(char *)"PATH=/usr/bin", (char *)"IFS=x", NULL};
	char *const optind[] = {(char *)"PATH=/usr/bin", (char *)"OPTIND=3", NULL};
	char *const ppid[] = {(char *)"PATH=/usr/bin", (char *)"PPID=1", NULL};

	ck_assert(!command_exec_is_direct("node x", no_equals));
	ck_assert(!command_exec_is_direct("node x", bad_name));
	ck_assert(!command_exec_is_direct("node x", function));
	ck_assert(!command_exec_is_direct("node x", twice));
	ck_assert(!command_exec_is_direct("node x", ifs));
	ck_assert(!command_exec_is_direct("node x", optind));
	ck_assert(!command_exec_is_direct("node x", ppid));
	ck_assert(!command_exec_is_direct("OPTIND=x node x", env_path));
	ck_assert(!command_exec_is_direct("+x y", env_path));
	ck_assert(command_exec_is_direct(" +x y", env_path));
	ck_assert(command_exec_is_direct("IFS=x node y", env_path));
}
END_TEST

/* ---- against real programs ---- */

static char dir[PATH_MAX];

static void make_dir(void)
{
	setup();
	snprintf(dir, sizeof(dir), "/tmp/test_command_exec.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

/* Run command in dir with env; its output in out (NUL-terminated), its wait status returned. */
static int run(const char *command, char *const *env, char *out, size_t len, pid_t *ret_pid)
{
	char path[PATH_MAX];
	struct proc_spec spec = {
	    .command = command, .cwd = dir, .env = env, .procs_fd = -1, .keep_fd = -1};
	struct err e;
	pid_t pid = -1;
	int fd, status = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/out", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	spec.output_fd = fd;
	err_clear(&e);
	ck_assert_msg(proc_spawn(&spec, &pid, &e) == 0, "%s: %s", command, e.msg);
	if (ret_pid)
		*ret_pid = pid;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	n = pread(fd, out, len - 1, 0);
	ck_assert_int_ge(n, 0);
	out[n] = '\0';
	close(fd);
	return status;
}

/* The program run directly is the process spawned: no shell between (dash forks commands). */
START_TEST(test_direct_is_the_process)
{
	char path_env[PATH_MAX + 8], exe[PATH_MAX], link[64];
	char *env[] = {path_env, NULL};
	struct proc_spec spec = {.command = "sleep 5", .cwd = "/", .procs_fd = -1, .keep_fd = -1};
	struct err e;
	pid_t pid = -1;
	ssize_t n;
	int status = 0;

	snprintf(path_env, sizeof(path_env), "PATH=/usr/bin:/bin");
	spec.env = env;
	spec.output_fd = -1;
	err_clear(&e);
	ck_assert_msg(proc_spawn(&spec, &pid, &e) == 0, "%s", e.msg);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	ck_assert_str_eq(exe, "/usr/bin/sleep");
	/* Killed, it is seen killed by its signal (dash reported exit 128+N). */
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGTERM);
}
END_TEST

static int strcmp_p(const char **a, const char **b)
{
	return strcmp(*a, *b);
}

/* Sorted lines of text, for environments printed in different orders. */
static void sort_lines(char *text)
{
	char *lines[128], *save = NULL, *l, copy[4096];
	size_t n = 0;

	ck_assert_uint_lt(strlen(text), sizeof(copy));
	strcpy(copy, text);
	for (l = strtok_r(copy, "\n", &save); l && n < 128; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof(lines[0]), (int (*)(const void *, const void *))strcmp_p);
	text[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		strcat(text, lines[i]);
		strcat(text, "\n");
	}
}

/* command run directly and through the shell (a `;` after it) print the same, end the same. */
static void same_as_the_shell(const char *command, char *const *env)
{
	char with_shell[512], direct[4096], shell[4096];
	int direct_status, shell_status;

	ck_assert_msg(command_exec_is_direct(command, env), "%s", command);
	snprintf(with_shell, sizeof(with_shell), "%s;", command);
	ck_assert(!command_exec_is_direct(with_shell, env));
	direct_status = run(command, env, direct, sizeof(direct), NULL);
	shell_status = run(with_shell, env, shell, sizeof(shell), NULL);
	sort_lines(direct);
	sort_lines(shell);
	ck_assert_str_eq(direct, shell);
	ck_assert_int_eq(direct_status, shell_status);
}

/* The environment the program gets, PWD included, is the one dash would have given it. */
START_TEST(test_direct_environment_is_the_shells)
{
	char real[PATH_MAX], link[PATH_MAX + 8], pwd_link[PATH_MAX + 8], pwd_real[PATH_MAX + 8];

	ck_assert_ptr_nonnull(realpath(dir, real));
	snprintf(pwd_real, sizeof(pwd_real), "PWD=%s", real);
	snprintf(link, sizeof(link), "%s.link", dir);
	ck_assert_int_eq(symlink(dir, link), 0);
	snprintf(pwd_link, sizeof(pwd_link), "PWD=%s", link);

	char *const elsewhere[] = {(char *)"PATH=/usr/bin:/bin", (char *)"PWD=/usr", NULL};
	char *const none[] = {(char *)"PATH=/usr/bin:/bin", (char *)"LANG=C", NULL};
	char *const relative[] = {(char *)"PATH=/usr/bin:/bin", (char *)"PWD=.", NULL};
	char *const right[] = {(char *)"PATH=/usr/bin:/bin", pwd_real, NULL};
	char *const linked[] = {(char *)"PATH=/usr/bin:/bin", pwd_link, NULL};

	same_as_the_shell("env", elsewhere);
	same_as_the_shell("env", none);
	same_as_the_shell("env", relative);
	same_as_the_shell("env", right);
	same_as_the_shell("env", linked);
	same_as_the_shell("A=1 B=x=y A=2 exec env", elsewhere);
	same_as_the_shell("PWD=/set/here env", elsewhere);
	same_as_the_shell("IFS=x env", none);
	same_as_the_shell("printenv NOT_SET_ANYWHERE", none);
	unlink(link);
}
END_TEST

/* The words arrive as the shell would have split them; argv[0] as written. */
START_TEST(test_direct_argv)
{
	char path_env[PATH_MAX + 8], out[256];
	char *env[] = {path_env, NULL};

	snprintf(path_env, sizeof(path_env), "PATH=%s", dir);
	write_file("args", "#!/bin/sh\nprintf '%s|' \"$0\" \"$@\"\n", 0755);
	ck_assert(command_exec_is_direct("args  a\tb   --c=d ", env));
	ck_assert_int_eq(run("args  a\tb   --c=d ", env, out, sizeof(out), NULL), 0);
	/* A script's $0 is the path the kernel ran, in both ways. */
	char want[PATH_MAX + 32];
	snprintf(want, sizeof(want), "%s/args|a|b|--c=d|", dir);
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(run("/bin/sh -c 'args  a\tb   --c=d '", env, out, sizeof(out), NULL), 0);
	ck_assert_str_eq(out, want);
}
END_TEST

/* The command's own variables reach it, over the environment's, as the shell gives them. */
START_TEST(test_direct_assignments)
{
	char path_env[PATH_MAX + 8], out[512];
	char *env[] = {path_env, (char *)"KEEP=1", (char *)"OVER=old", NULL};
	const char *cmd = "OVER=new ADDED=a=b exec env";

	snprintf(path_env, sizeof(path_env), "PATH=/usr/bin:/bin");
	ck_assert(command_exec_is_direct(cmd, env));
	ck_assert_int_eq(run(cmd, env, out, sizeof(out), NULL), 0);
	ck_assert_msg(strstr(out, "KEEP=1\n") && strstr(out, "OVER=new\n") &&
	                  strstr(out, "ADDED=a=b\n") && !strstr(out, "OVER=old"),
	              "%s", out);
}
END_TEST

/* PATH's order; a file there without the right to run it is passed over, as sh does. */
START_TEST(test_direct_path_order)
{
	char path_env[2 * PATH_MAX], out[256], sub[PATH_MAX];
	char *env[] = {path_env, NULL};

	snprintf(sub, sizeof(sub), "%s/b", dir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	write_file("which", "#!/bin/sh\necho first\n", 0755);
	write_file("b/which", "#!/bin/sh\necho second\n", 0755);
	snprintf(path_env, sizeof(path_env), "PATH=%s:%s", dir, sub);
	ck_assert_int_eq(run("which", env, out, sizeof(out), NULL), 0);
	ck_assert_str_eq(out, "first\n");
	write_file("which", "#!/bin/sh\necho first\n", 0644);
	ck_assert_int_eq(run("which", env, out, sizeof(out), NULL), 0);
	ck_assert_str_eq(out, "second\n");
	/* The first one found without `#!` is the shell's to run: the search stops there. */
	write_file("which", "echo first, as a script\n", 0755);
	ck_assert_int_eq(run("which", env, out, sizeof(out), NULL), 0);
	ck_assert_str_eq(out, "first, as a script\n");
}
END_TEST

/* Not found anywhere: the shell says so and exits 127, as before. */
START_TEST(test_direct_not_found_is_the_shells)
{
	char out[512];
	char *const env[] = {(char *)"PATH=/usr/bin:/bin", NULL};
	int status = run("no-such-program-here x", env, out, sizeof(out), NULL);

	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 127);
	ck_assert_msg(strstr(out, "no-such-program-here") && strstr(out, "not found"), "%s", out);
}
END_TEST

/* A script without `#!` cannot be exec'd: the shell runs it, as it would have. */
START_TEST(test_direct_script_without_shebang)
{
	char out[256];
	char *const env[] = {(char *)"PATH=/usr/bin:/bin", NULL};

	write_file("plain", "echo ran as a script \"$1\"\n", 0755);
	ck_assert(command_exec_is_direct("./plain one", env));
	ck_assert_int_eq(run("./plain one", env, out, sizeof(out), NULL), 0);
	ck_assert_str_eq(out, "ran as a script one\n");
}
END_TEST

static Suite *command_exec_suite(void)
{
	Suite *s = suite_create("command_exec");
	TCase *tc = tcase_create("rules");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_direct_commands);
	tcase_add_test(tc, test_shell_commands);
	tcase_add_test(tc, test_path_rules);
	tcase_add_test(tc, test_prepared_words_and_paths);
	tcase_add_test(tc, test_environment_the_shell_rewrites);
	suite_add_tcase(s, tc);

	tc = tcase_create("processes");
	tcase_add_checked_fixture(tc, make_dir, remove_dir);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_direct_is_the_process);
	tcase_add_test(tc, test_direct_argv);
	tcase_add_test(tc, test_direct_environment_is_the_shells);
	tcase_add_test(tc, test_direct_assignments);
	tcase_add_test(tc, test_direct_path_order);
	tcase_add_test(tc, test_direct_not_found_is_the_shells);
	tcase_add_test(tc, test_direct_script_without_shebang);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(command_exec_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
