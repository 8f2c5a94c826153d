/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl's operations end to end against the minimal guest (test_ctl_guest.h) over a unix
 * socket: secrets from stdin, a tree pushed and compared, boots waited for (ready, failed,
 * refused) or only started, logs from an offset, followed and interrupted, status, stop and
 * runtime.json. What is asserted is what a controller reads: the JSON on stdout, the exit code,
 * the last line of stderr; and what the guest received.
 */
#include <check.h>
#include <sys/stat.h>

#include "test_ctl_env.h"

static struct ctl_env env;
static char addr[PATH_MAX + 16];

static void setup(void)
{
	struct ctl_run r;

	ctl_env_setup(&env);
	snprintf(addr, sizeof(addr), "unix:%s", env.sock);
	ctl_env_server(&env, fg_serve_unix(env.sock, &env.cfg));
	r = CTL_RUN(&env, NULL, "hello", "--connect", addr, "--accept-new-guest-key");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ctl_run_dispose(&r);
}

static void teardown(void)
{
	ctl_env_teardown(&env);
}

#define RUN(input, ...) CTL_RUN(&env, (input), "--connect", addr, __VA_ARGS__)

START_TEST(test_secrets_put)
{
	_cleanup_free_ char *report = NULL;
	struct ctl_run r;

	r = RUN("{\"GITHUB_TOKEN\": \"ghp_0123456789secret\", \"OTHER\": \"two words\"}\n",
	        "secrets", "put", "--scope", "fetch", "GITHUB_TOKEN", "OTHER");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_int_eq(json_object_array_length(ctl_obj(r.json, "put")), 2);
	ck_assert_str_eq(json_object_get_string(
	                     ctl_obj(json_object_array_get_idx(ctl_obj(r.json, "put"), 0), "name")),
	                 "GITHUB_TOKEN");
	/* The value is nowhere in what sandbox-ctl printed. */
	ck_assert_ptr_null(strstr(r.out, "ghp_0123456789secret"));
	ck_assert_ptr_null(strstr(r.err, "ghp_0123456789secret"));
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	/* It arrived whole, in the data part: the request's JSON does not hold it. */
	ck_assert_ptr_nonnull(strstr(report, "secret GITHUB_TOKEN fetch ghp_0123456789secret "
	                                     "pass_env=-1 json={\"name\":\"GITHUB_TOKEN\","
	                                     "\"scope\":\"fetch\"}\n"));
	ck_assert_ptr_nonnull(strstr(report, "secret OTHER fetch two words pass_env=-1"));

	r = RUN("{\"ANTHROPIC_API_KEY\": \"sk-ant-1\"}", "secrets", "put", "--scope", "boot",
	        "ANTHROPIC_API_KEY");
	ck_assert_int_eq(r.rc, 0);
	ctl_run_dispose(&r);
	free(report);
	report = ctl_report(&env);
	ck_assert_ptr_nonnull(strstr(report, "secret ANTHROPIC_API_KEY boot sk-ant-1 pass_env=-1"));

	r = RUN(NULL, "secrets", "drop", "--scope", "session");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(ctl_int(r.json, "dropped"), 1);
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_secrets_refused_before_connecting)
{
	_cleanup_free_ char *report = NULL;
	static const char *const cases[][3] = {
	    /* stdin, the names, what the error says */
	    {"{\"A\": \"x\"}", "B", "B is not in the object on stdin"},
	    {"{\"A\": \"x\", \"B\": \"y\"}", "A", "stdin holds B, which is not named"},
	    {"{\"A\": 42}", "A", "the value of A on stdin is not a string"},
	    {"[\"A\"]", "A", "not a JSON object"},
	    {"{\"A\": \"x\"", "A", "stdin is not one JSON object"},
	    {"{\"A\": \"x\"} {}", "A", "more than one JSON object"},
	    {"", "A", "stdin is not one JSON object"},
	    {"{\"1A\": \"x\"}", "1A", "invalid secret name"},
	};
	struct ctl_run r;

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		r = RUN(cases[i][0], "secrets", "put", "--scope", "boot", (char *)cases[i][1]);
		ck_assert_msg(r.rc == 2, "case %zu: rc %d", i, r.rc);
		ck_assert_msg(strstr(r.err, cases[i][2]), "case %zu: %s", i, r.err);
		/* Values are never echoed back, not even in refusals. */
		ck_assert_ptr_null(strstr(r.err, "\"x\""));
		ctl_run_dispose(&r);
	}
	r = RUN("{\"A\": \"x\"}", "secrets", "put", "--scope", "everything", "A");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	r = RUN("{\"A\": \"x\"}", "secrets", "put", "A");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	/* Only the setup's hello reached the guest. */
	report = ctl_report(&env);
	ck_assert_uint_eq(ctl_count(report, "hs-ok"), 1);
	ck_assert_ptr_null(strstr(report, "secret "));
}
END_TEST

/* "path type mode [target]" of every entry under dir, sorted, without .git. */
static char *listing(const char *dir)
{
	char cmd[PATH_MAX * 2];
	FILE *p;
	char *out;
	int fd;

	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && find . -mindepth 1 -not -path './.git*' -printf '%%P %%y %%m %%l\\n' "
	         "| sort",
	         dir);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	fd = fileno(p);
	out = ctl_read_fd(fd);
	pclose(p);
	return out;
}

static void write_file(const char *dir, const char *name, size_t size, mode_t mode)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < size; i++)
		fputc((int)((i * 7 + i / 1000) & 0xff), f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

START_TEST(test_push_tree)
{
	_cleanup_free_ char *report = NULL, *want = NULL, *got = NULL;
	char src[PATH_MAX + 16], path[PATH_MAX * 2], cmd[PATH_MAX * 3];
	struct ctl_run r;

	snprintf(src, sizeof(src), "%s/src", env.dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/config/deep' '%s/.git/objects' '%s/empty'", src,
	         src, src);
	ck_assert_int_eq(system(cmd), 0);
	write_file(src, "server.py", 1234, 0644);
	write_file(src, "run.sh", 10, 0755);
	write_file(src, "big.bin", 300 * 1024 + 17, 0600); /* several data messages */
	write_file(src, "zero", 0, 0644);
	write_file(src, "config/deep/app.yml", 99, 0640);
	write_file(src, ".git/config", 50, 0644);
	snprintf(path, sizeof(path), "%s/setuid", src);
	write_file(src, "setuid", 5, 0755);
	ck_assert_int_eq(chmod(path, 04755), 0);
	snprintf(path, sizeof(path), "%s/config/link", src);
	ck_assert_int_eq(symlink("../server.py", path), 0);
	snprintf(path, sizeof(path), "%s/fifo", src);
	ck_assert_int_eq(mkfifo(path, 0644), 0);

	r = RUN(NULL, "push", src, "--app-dir", "/workspace/app");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	/* dirs config, config/deep, empty; 6 files; 1 link: .git and the FIFO left out */
	ck_assert_int_eq(ctl_int(r.json, "entries"), 10);
	ck_assert_int_eq(ctl_int(r.json, "bytes"), 1234 + 10 + 300 * 1024 + 17 + 99 + 5);
	ck_assert(json_object_get_boolean(ctl_obj(r.json, "swapped")));
	ck_assert_str_eq(ctl_str(&r, "app_dir"), "/workspace/app");
	ck_assert_str_eq(json_object_to_json_string(ctl_obj(r.json, "skipped")), "[ \"fifo\" ]");
	ctl_run_dispose(&r);

	/* The same tree arrived: names, kinds, modes (setuid dropped), link targets, contents. */
	snprintf(path, sizeof(path), "%s/fifo", src);
	unlink(path);
	snprintf(path, sizeof(path), "%s/setuid", src);
	ck_assert_int_eq(chmod(path, 0755), 0);
	want = listing(src);
	got = listing(env.tree);
	ck_assert_str_eq(got, want);
	snprintf(cmd, sizeof(cmd), "diff -r --no-dereference -x .git '%s' '%s'", src, env.tree);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/.git", env.tree);
	ck_assert_int_eq(access(path, F_OK), -1);
	report = ctl_report(&env);
	/* The walk counts entries; the bytes are counted as they are read, and sent at the end. */
	ck_assert_ptr_nonnull(strstr(report, "push-begin {\"app_dir\":\"\\/workspace\\/app\","
	                                     "\"entries\":10}"));
	ck_assert_ptr_nonnull(strstr(report, "push-end 10 308565"));

	/* --include-git sends it. */
	r = RUN(NULL, "push", src, "--include-git");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(ctl_int(r.json, "entries"), 13);
	ctl_run_dispose(&r);
	snprintf(path, sizeof(path), "%s/.git/config", env.tree);
	ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

/* The test guest's hook NAME ("on-status", "on-data"): sh, in the source tree, running change. */
static void hook_write(const char *name, const char *change)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s.%s", env.tree, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "#!/bin/sh\ncd '%s/src' && %s\n", env.dir, change);
	fclose(f);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

static void hook_remove(const char *name)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s.%s", env.tree, name);
	unlink(path);
}

/*
 * The source tree changed between the walk and the send (by the guest's on-status hook, which
 * runs after the walk and before the first entry): each case fails with exit 1 and "push
 * again", and nothing is swapped in.
 */
static void push_changed(const char *change, const char *want)
{
	_cleanup_free_ char *report = NULL;
	char src[PATH_MAX + 16], cmd[PATH_MAX * 4];
	struct ctl_run r;

	snprintf(src, sizeof(src), "%s/src", env.dir);
	snprintf(cmd, sizeof(cmd),
	         "rm -rf '%s' '%s/outside' && mkdir -p '%s/sub' '%s/outside' && "
	         "echo inside > '%s/sub/a.txt' && echo SECRET-OUTSIDE > '%s/outside/a.txt' && "
	         "printf 12345 > '%s/f' && : > '%s/empty' && echo g > '%s/g'",
	         src, env.dir, src, env.dir, src, env.dir, src, src, src);
	ck_assert_int_eq(system(cmd), 0);
	hook_write("on-status", change);
	r = RUN(NULL, "push", src, "--app-dir", "/workspace/app");
	hook_remove("on-status");
	ck_assert_msg(r.rc == 1, "%s: exit %d, %s", change, r.rc, r.err);
	ck_assert_msg(strstr(r.err, "changed while it was pushed") && strstr(r.err, want) &&
	                  strstr(r.err, "push again"),
	              "%s: %s", change, r.err);
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_ptr_null(strstr(report, "push-end"));
	snprintf(cmd, sizeof(cmd), "grep -rqs SECRET-OUTSIDE '%s' '%s.staging'", env.tree,
	         env.tree);
	ck_assert_int_ne(system(cmd), 0);
}

static void hook_data(const char *change, const char *want1, const char *want2)
{
	char path[PATH_MAX + 32];
	struct ctl_run r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/src/big", env.dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(ftruncate(fileno(f), 32 << 20), 0);
	fclose(f);
	hook_write("on-data", change);
	snprintf(path, sizeof(path), "%s/src", env.dir);
	r = RUN(NULL, "push", path, "--app-dir", "/workspace/app");
	hook_remove("on-data");
	ck_assert_msg(r.rc == 1 && strstr(r.err, want1) && strstr(r.err, want2), "%s: exit %d: %s",
	              change, r.rc, r.err);
	ctl_run_dispose(&r);
}

START_TEST(test_push_changed_during)
{
	char path[PATH_MAX + 32];
	struct ctl_run r;

	/* A directory replaced by a link to one outside the tree: not followed. */
	push_changed("rm -r sub && ln -s ../outside sub", "a directory on its path");
	push_changed("rm -r sub && echo x > sub", "a directory on its path");
	push_changed("rm f && mkfifo f", "no longer");
	push_changed("rm f && ln -s g f", "or a link");
	push_changed("rm f", "it is gone");
	push_changed(
	    "rm f && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"f\")'",
	    "a socket");

	/* A file that changed before it was opened goes as it is then: its size is read there. */
	snprintf(path, sizeof(path), "rm -f '%s/src/f' && printf 12345 > '%s/src/f'", env.dir,
	         env.dir);
	ck_assert_int_eq(system(path), 0);
	hook_write("on-status", "printf 123456789 > f");
	snprintf(path, sizeof(path), "%s/src", env.dir);
	r = RUN(NULL, "push", path, "--app-dir", "/workspace/app");
	hook_remove("on-status");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_int_eq(ctl_int(r.json, "bytes"), 9 + 7 + 2);
	ctl_run_dispose(&r);

	/*
	 * A file that grows and one that shrinks while they are read: 32 MiB, the first file of the
	 * tree, changed by the on-data hook when its first bytes reach the guest. While the hook
	 * runs the guest reads nothing, so sandbox-ctl stops once the socket's buffer is full (4
	 * MiB, host/connect_unix.c), well before the file's end.
	 */
	hook_data("printf x >> big", "big changed while it was pushed", "more now");
	hook_data("truncate -s 1M big", "big changed while it was pushed", "fewer now");
}
END_TEST

START_TEST(test_push_refusals)
{
	_cleanup_free_ char *report = NULL;
	char src[PATH_MAX + 16], path[PATH_MAX * 2];
	struct ctl_run r;

	snprintf(src, sizeof(src), "%s/src", env.dir);
	ck_assert_int_eq(mkdir(src, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub", src);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub/escape", src);
	ck_assert_int_eq(symlink("../../outside", path), 0);
	r = RUN(NULL, "push", src);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "sub/escape"));
	ck_assert_ptr_nonnull(strstr(r.err, "leaves the tree"));
	ctl_run_dispose(&r);
	unlink(path);
	ck_assert_int_eq(symlink("/etc/passwd", path), 0);
	r = RUN(NULL, "push", src);
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	unlink(path);
	ck_assert_int_eq(symlink("../sub/./x/../..", path), 0);
	r = RUN(NULL, "push", src);
	ck_assert_msg(r.rc == 0, "a link to the tree's root stays inside: %s", r.err);
	ctl_run_dispose(&r);

	r = RUN(NULL, "push", "/nonexistent/dir");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	r = RUN(NULL, "push", src, "--app-dir", "relative/app");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	/* A boot in progress: refused before a byte of the tree is sent. */
	r = RUN(NULL, "push", src, "--app-dir", "/workspace/busy");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "a boot of /workspace/busy is in progress: "
	                                                "push when it has finished"));
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "error"), "reason")),
	                 "busy");
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_uint_eq(ctl_count(report, "push-begin"), 1);
}
END_TEST

START_TEST(test_boot_wait_ready)
{
	_cleanup_free_ char *report = NULL;
	struct ctl_run r;

	r = RUN(NULL, "boot", "--wait", "--pass-env", "ANTHROPIC_API_KEY", "--deadline", "90",
	        "--with-token", "--restart", "--from", "setup");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "status"), "ready");
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "runtime"), "mcp_path")),
	                 "/mcp");
	/* Not a terminal: one plain line per event, the log lines only with -v. */
	ck_assert_ptr_nonnull(strstr(r.err, "sandbox-ctl: config: started\n"));
	ck_assert_ptr_nonnull(strstr(r.err, "sandbox-ctl: setup echo: done\n"));
	ck_assert_ptr_nonnull(strstr(r.err, "sandbox-ctl: ready\n"));
	ck_assert_ptr_null(strstr(r.err, "$ echo hi"));
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_ptr_nonnull(strstr(report,
	                             "boot {\"runtime_token\":true,\"restart\":true,"
	                             "\"from\":\"setup\",\"app_dir\":\"\\/workspace\\/app\","
	                             "\"pass_env\":[\"ANTHROPIC_API_KEY\"],\"timeout\":90}\n"));

	/* Without --pass-env the request names none: every boot secret goes (the agent's rule). */
	r = RUN(NULL, "boot", "--wait", "-v");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "sandbox-ctl: setup: $ echo hi\n"));
	ctl_run_dispose(&r);
	free(report);
	report = ctl_report(&env);
	ck_assert_ptr_nonnull(strstr(report, "boot {\"app_dir\":\"\\/workspace\\/app\"}\n"));
	r = RUN(NULL, "boot", "--wait", "-q");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.err, "");
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_boot_wait_failed_and_refused)
{
	struct ctl_run r;

	r = RUN(NULL, "boot", "--wait", "--app-dir", "/workspace/fail");
	ck_assert_int_eq(r.rc, 1);
	ck_assert_str_eq(ctl_str(&r, "status"), "failed");
	ck_assert_str_eq(ctl_str(&r, "step"), "echo");
	ck_assert_str_eq(ctl_str(&r, "reason"), "`false` exited with status 1");
	/* The cause is the last line, as sandbox-app-boot writes it. */
	ck_assert_str_eq(ctl_last_line(&r), "sandbox-ctl: Sandbox echo failed: `false` exited with "
	                                    "status 1");
	ctl_run_dispose(&r);

	r = RUN(NULL, "boot", "--wait", "--app-dir", "/workspace/refuse");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "error"), "class")),
	                 "refused");
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "already in progress"));
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "error"), "reason")),
	                 "busy");
	/* one shape for every refused boot: status refused, exit 2, the reason, an error */
	ck_assert_str_eq(ctl_str(&r, "status"), "refused");
	ck_assert_int_eq(ctl_int(r.json, "exit"), 2);
	ck_assert_str_eq(ctl_str(&r, "reason"), "Sandbox boot refused: a boot of /workspace/app is "
	                                        "already in progress");
	ck_assert_str_eq(ctl_last_line(&r), "sandbox-ctl: Sandbox boot refused: a boot of "
	                                    "/workspace/app is already in progress");
	ctl_run_dispose(&r);

	r = RUN(NULL, "boot", "--app-dir", "/a", "--spec", "/b");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	r = RUN(NULL, "boot", "--pass-env", "NOT-A-NAME");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	r = RUN(NULL, "boot", "--deadline", "soon");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_boot_without_wait_and_spec)
{
	_cleanup_free_ char *report = NULL;
	char spec[PATH_MAX + 16];
	struct ctl_run r;
	FILE *f;

	/* Returns once the agent reports the boot running. */
	r = RUN(NULL, "boot");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "status"), "started");
	ck_assert_str_eq(ctl_str(&r, "phase"), "config");
	ctl_run_dispose(&r);

	snprintf(spec, sizeof(spec), "%s/spec.json", env.dir);
	f = fopen(spec, "w");
	fputs("{\"version\": 1, \"steps\": [{\"name\": \"bundle\", \"run\": \"true\"}]}", f);
	fclose(f);
	r = RUN(NULL, "boot", "--spec", spec, "--wait");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_ptr_nonnull(
	    strstr(report, "\"spec\":{\"version\":1,\"steps\":[{\"name\":\"bundle\""));

	f = fopen(spec, "w");
	fputs("[1, 2]", f);
	fclose(f);
	r = RUN(NULL, "boot", "--spec", spec);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "is not a JSON object"));
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_logs_from_offset)
{
	static char text[FG_LOG_LINES * FG_LOG_LINE_LEN + 1];
	size_t total = FG_LOG_LINES * FG_LOG_LINE_LEN;
	struct ctl_run r;

	fg_log_text(text);
	r = RUN(NULL, "logs", "--log", "setup", "--offset", "100");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(ctl_str(&r, "log"), "setup");
	ck_assert_int_eq(ctl_int(r.json, "offset"), 100);
	ck_assert_int_eq(ctl_int(r.json, "next_offset"), (int64_t)total);
	ck_assert_str_eq(ctl_str(&r, "data"), text + 100);
	ctl_run_dispose(&r);

	r = RUN(NULL, "logs", "--log", "setup", "--offset", "36", "--max", "18");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(ctl_str(&r, "data"), "setup line 000002\n");
	ck_assert_int_eq(ctl_int(r.json, "next_offset"), 54);
	ctl_run_dispose(&r);

	/* --raw: the bytes as they are, the next offset last on stderr. */
	r = RUN(NULL, "logs", "--log", "setup", "--raw", "--offset", "1000");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.out, text + 1000);
	ck_assert_str_eq(ctl_last_line(&r), "sandbox-ctl: next offset 162000");
	ctl_run_dispose(&r);

	r = RUN(NULL, "logs");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
}
END_TEST

/* --tail N: the agent is asked for the last N lines, and the document starts at them. */
START_TEST(test_logs_tail)
{
	static char text[FG_LOG_LINES * FG_LOG_LINE_LEN + 1];
	size_t total = FG_LOG_LINES * FG_LOG_LINE_LEN;
	_cleanup_free_ char *report = NULL;
	struct ctl_run r;

	fg_log_text(text);
	r = RUN(NULL, "logs", "--log", "setup", "--tail", "2");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_int_eq(ctl_int(r.json, "offset"), (int64_t)(total - 2 * FG_LOG_LINE_LEN));
	ck_assert_int_eq(ctl_int(r.json, "next_offset"), (int64_t)total);
	ck_assert_str_eq(ctl_str(&r, "data"), text + total - 2 * FG_LOG_LINE_LEN);
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_ptr_nonnull(strstr(report, "logs {\"app_dir\":\"\\/workspace\\/app\","
	                                     "\"log\":\"setup\",\"tail\":2,\"follow\":false,"));

	/* --raw too; then the refusals before connecting. */
	r = RUN(NULL, "logs", "--log", "setup", "--tail", "1", "--raw");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.out, text + total - FG_LOG_LINE_LEN);
	ctl_run_dispose(&r);
	r = RUN(NULL, "logs", "--log", "setup", "--tail", "10001");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "--tail takes at most 10000 lines"));
	ctl_run_dispose(&r);
	r = RUN(NULL, "logs", "--log", "setup", "--tail", "3", "--offset", "5");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "error"), "reason")),
	                 "invalid");
	ctl_run_dispose(&r);
	r = RUN(NULL, "logs", "--log", "setup", "--tail", "many");
	ck_assert_int_eq(r.rc, 2);
	ctl_run_dispose(&r);
	/* The per-command help names it. */
	r = CTL_RUN(&env, NULL, "logs", "--help");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "  --tail N "));
	ctl_run_dispose(&r);
}
END_TEST

/* A log that does not exist: the agent's refusal, whole, with reason not_found (exit 2). */
START_TEST(test_logs_not_found)
{
	struct ctl_run r;

	r = RUN(NULL, "logs", "--log", "setpu");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_str_eq(ctl_last_line(&r), "sandbox-ctl: no log named 'setpu' for /workspace/app: "
	                                    "its logs are setup");
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "error"), "reason")),
	                 "not_found");
	ctl_run_dispose(&r);
}
END_TEST

START_TEST(test_logs_follow_until_interrupted)
{
	_cleanup_free_ char *report = NULL;
	char *const argv[] = {"--connect", addr, "logs", "--log", "setup", "--follow", NULL};
	size_t total = FG_LOG_LINES * FG_LOG_LINE_LEN, lines = 0;
	int out_fd, err_fd, status;
	char buf[65536 * 4];
	size_t len = 0;
	FILE *out;
	pid_t pid;

	pid = ctl_spawn(&env, NULL, argv, NULL, &out_fd, &err_fd);
	out = fdopen(out_fd, "r");
	/* One JSON document per line; the last of what is kept ends at 162000. */
	while (fgets(buf + len, (int)(sizeof(buf) - len), out)) {
		struct json_object *j = json_tokener_parse(buf);
		ck_assert_ptr_nonnull(j);
		lines++;
		if (ctl_int(j, "next_offset") == (int64_t)total) {
			json_object_put(j);
			break;
		}
		json_object_put(j);
	}
	ck_assert_uint_eq(lines, 3);
	/* A controller stops following: sandbox-ctl cancels the stream and ends cleanly. */
	kill(pid, SIGINT);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	fclose(out);
	close(err_fd);
	report = ctl_report_wait_lines(&env, "closed", 2);
	ck_assert_ptr_nonnull(strstr(report, "\"follow\":true"));
	ck_assert_ptr_nonnull(strstr(report, "cancel 1\n"));
	ck_assert_uint_eq(ctl_count_lines(report, "closed"), 2);
}
END_TEST

START_TEST(test_boot_wait_interrupted)
{
	char *const argv[] = {"--connect",       addr, "boot", "--wait", "--app-dir",
	                      "/workspace/slow", NULL};
	_cleanup_free_ char *report = NULL;
	int out_fd, err_fd;
	struct ctl_run r;
	pid_t pid;

	pid = ctl_spawn(&env, NULL, argv, NULL, &out_fd, &err_fd);
	report = ctl_report_wait(&env, "boot {");
	ck_assert_ptr_nonnull(report);
	usleep(100000); /* the events reach sandbox-ctl */
	kill(pid, SIGINT);
	r = ctl_finish(pid, out_fd, err_fd);
	/* 128 + SIGINT, after saying that the boot goes on */
	ck_assert_int_eq(r.rc, 130);
	ck_assert_str_eq(ctl_str(&r, "status"), "interrupted");
	ck_assert_ptr_nonnull(strstr(ctl_last_line(&r), "the boot goes on in the agent"));
	ctl_run_dispose(&r);
}
END_TEST

/*
 * A guest that ignores max and never ends the stream: sandbox-ctl keeps --max bytes (or its own
 * cap) and stops reading; a guest that trickles a line every 100 ms meets the command's
 * overall deadline, not a per-message one.
 */
START_TEST(test_logs_hostile_guest)
{
	struct ctl_run r;

	r = RUN(NULL, "logs", "--app-dir", "/w/endless", "--log", "setup", "--max", "100000");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_uint_eq(strlen(ctl_str(&r, "data")), 100000);
	ck_assert_int_eq(ctl_int(r.json, "next_offset"), 100000);
	ctl_run_dispose(&r);

	r = RUN(NULL, "logs", "--app-dir", "/w/endless", "--log", "setup", "--raw", "--max",
	        "70000");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_uint_eq(strlen(r.out), 70000);
	ctl_run_dispose(&r);

	r = CTL_RUN(&env, NULL, "--timeout", "1", "--connect", addr, "logs", "--app-dir",
	            "/w/trickle", "--log", "setup");
	ck_assert_int_eq(r.rc, 1);
	ck_assert_msg(strstr(ctl_last_line(&r), "within 1 s"), "%s", r.err);
	ctl_run_dispose(&r);
}
END_TEST

/*
 * A guest that answers publish with a 167-byte pack whose delta resolves into a 1 GiB blob:
 * sandbox-ctl refuses it while it arrives (exit 2, the limit named) and pushes nothing. The
 * spec's repository is a local bare one (file://, no token), so the fetch needs no server.
 */
START_TEST(test_publish_hostile_pack)
{
	char spec[PATH_MAX + 256], cmd[2 * PATH_MAX + 256];
	struct ctl_run r;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && git init -q -b main src && cd src && git -c user.name=t -c "
	         "user.email=t@example.com commit -q --allow-empty -m base && cd .. && git clone "
	         "-q --bare src origin.git",
	         env.dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(spec, sizeof(spec), "%s/spec.json", env.dir);
	f = fopen(spec, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
	        "{\"repository\": \"t/app\", \"ref\": \"main\", \"clone_url\": "
	        "\"file://%s/origin.git\"}",
	        env.dir);
	fclose(f);
	chmod(spec, 0600);
	r = RUN(NULL, "publish", "--spec", spec, "--branch", "sandbox/bomb");
	ck_assert_msg(r.rc == 2, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(strstr(r.err, "resolved from a delta (1073741824) is over the limit"), "%s",
	              r.err);
	ctl_run_dispose(&r);
	snprintf(cmd, sizeof(cmd),
	         "git --git-dir='%s/origin.git' rev-parse -q --verify sandbox/bomb", env.dir);
	ck_assert_int_ne(system(cmd), 0);
}
END_TEST

START_TEST(test_status_stop_runtime)
{
	_cleanup_free_ char *report = NULL;
	struct ctl_run r;

	r = RUN(NULL, "status", "--app-dir", "/srv/app");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(ctl_str(&r, "status"), "ready");
	ck_assert_int_eq(ctl_int(ctl_obj(r.json, "logs"), "setup"), 162000);
	ctl_run_dispose(&r);
	r = RUN(NULL, "runtime");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "runtime"), "mcp_token")),
	                 "aa_token");
	ctl_run_dispose(&r);
	/* A runtime that is gone says so: exit 1, reason not_found. */
	r = RUN(NULL, "runtime", "--app-dir", "/workspace/gone");
	ck_assert_int_eq(r.rc, 1);
	ck_assert_str_eq(ctl_last_line(&r), "sandbox-ctl: the app's runtime is gone: its server is "
	                                    "not running (last boot: stopped)");
	ck_assert_str_eq(json_object_get_string(ctl_obj(ctl_obj(r.json, "error"), "reason")),
	                 "not_found");
	ctl_run_dispose(&r);
	r = RUN(NULL, "stop", "--discard", "--grace", "2.5");
	ck_assert_int_eq(r.rc, 0);
	ck_assert(json_object_get_boolean(ctl_obj(r.json, "stopped")));
	ctl_run_dispose(&r);
	report = ctl_report(&env);
	ck_assert_ptr_nonnull(strstr(report, "status {\"app_dir\":\"\\/srv\\/app\"}"));
	ck_assert_ptr_nonnull(strstr(report, "stop {\"app_dir\":\"\\/workspace\\/app\","
	                                     "\"discard\":true,\"grace\":3}"));
}
END_TEST

static Suite *ctl_ops_suite(void)
{
	Suite *s = suite_create("ctl_ops");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_secrets_put);
	tcase_add_test(tc, test_secrets_refused_before_connecting);
	tcase_add_test(tc, test_push_tree);
	tcase_add_test(tc, test_push_refusals);
	tcase_add_test(tc, test_push_changed_during);
	tcase_add_test(tc, test_boot_wait_ready);
	tcase_add_test(tc, test_boot_wait_failed_and_refused);
	tcase_add_test(tc, test_boot_without_wait_and_spec);
	tcase_add_test(tc, test_boot_wait_interrupted);
	tcase_add_test(tc, test_logs_from_offset);
	tcase_add_test(tc, test_logs_tail);
	tcase_add_test(tc, test_logs_not_found);
	tcase_add_test(tc, test_logs_follow_until_interrupted);
	tcase_add_test(tc, test_logs_hostile_guest);
	tcase_add_test(tc, test_publish_hostile_pack);
	tcase_add_test(tc, test_status_stop_runtime);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	sr = srunner_create(ctl_ops_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
