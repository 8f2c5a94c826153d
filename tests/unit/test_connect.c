/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client side of the transports, piece by piece: addresses, the names guest keys are
 * pinned under, Firecracker's reply parser, Incus's CID lookup (with `incus` faked by a script;
 * nothing connects to the CID it finds), the exec transport's command and its exit status, a
 * serial port that is a pty, and the lossy JSON strings of log bytes. Never AF_VSOCK.
 */
#include <check.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "connect.h"
#include "file.h"
#include "frame_io.h"
#include "output.h"

START_TEST(test_addr_parse)
{
	char *argv[] = {"incus", "exec", "vm 1", "--", "sandbox-agent", "serve", "--stdio", NULL};
	struct connect_addr a;
	struct err e;
	char *s;

	ck_assert_int_eq(connect_addr_parse("vsock:42", NULL, &a, &e), 0);
	ck_assert_int_eq(a.kind, CONNECT_VSOCK);
	ck_assert_uint_eq(a.cid, 42);
	ck_assert_uint_eq(a.port, CONNECT_DEFAULT_PORT);
	connect_addr_dispose(&a);
	ck_assert_int_eq(connect_addr_parse("vsock:3:1024", NULL, &a, &e), 0);
	ck_assert_uint_eq(a.port, 1024);
	s = connect_addr_format(&a);
	ck_assert_str_eq(s, "vsock:3:1024");
	free(s);
	connect_addr_dispose(&a);

	ck_assert_int_eq(connect_addr_parse("fc:/run/fc/v.sock", NULL, &a, &e), 0);
	ck_assert_int_eq(a.kind, CONNECT_FC);
	ck_assert_str_eq(a.path, "/run/fc/v.sock");
	ck_assert_uint_eq(a.port, CONNECT_DEFAULT_PORT);
	connect_addr_dispose(&a);
	/* The port is a numeric suffix; a path may hold colons itself. */
	ck_assert_int_eq(connect_addr_parse("fc:/run/a:b/v.sock:5000", NULL, &a, &e), 0);
	ck_assert_str_eq(a.path, "/run/a:b/v.sock");
	ck_assert_uint_eq(a.port, 5000);
	connect_addr_dispose(&a);
	ck_assert_int_eq(connect_addr_parse("fc:/run/a:b/v.sock", NULL, &a, &e), 0);
	ck_assert_str_eq(a.path, "/run/a:b/v.sock");
	connect_addr_dispose(&a);

	ck_assert_int_eq(connect_addr_parse("unix:/run/agent.sock", NULL, &a, &e), 0);
	ck_assert_int_eq(a.kind, CONNECT_UNIX);
	connect_addr_dispose(&a);
	ck_assert_int_eq(connect_addr_parse("serial:/dev/pts/3", NULL, &a, &e), 0);
	ck_assert_int_eq(a.kind, CONNECT_SERIAL);
	connect_addr_dispose(&a);

	ck_assert_int_eq(connect_addr_parse("exec", argv, &a, &e), 0);
	ck_assert_int_eq(a.kind, CONNECT_EXEC);
	ck_assert_str_eq(a.argv[2], "vm 1");
	s = connect_addr_format(&a);
	ck_assert_str_eq(s, "exec: incus exec vm 1 -- sandbox-agent serve --stdio");
	free(s);
	connect_addr_dispose(&a);

	static const char *const bad[] = {
	    "vsock:",
	    "vsock:x",
	    "vsock:4294967295",
	    "vsock:3:",
	    "vsock:3:99999999999",
	    "vsock:-3",
	    "vsock:3:4294967295",
	    "fc:",
	    "fc::5",
	    "unix:",
	    "serial:",
	    "tcp:1.2.3.4:5",
	    "exec",
	    "",
	    "unix",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		ck_assert_msg(connect_addr_parse(bad[i], NULL, &a, &e) < 0, "%s parsed", bad[i]);
		ck_assert_int_eq(e.cls, ERR_REFUSED);
		ck_assert_ptr_nonnull(strstr(e.msg, "expected vsock:CID"));
	}
	/* sun_path holds 107 characters. */
	char longpath[160] = "unix:/";
	memset(longpath + 6, 'a', 120);
	ck_assert_int_lt(connect_addr_parse(longpath, NULL, &a, &e), 0);
}
END_TEST

START_TEST(test_addr_instance)
{
	char *argv[] = {"incus", "exec", "vm1", "--", "sandbox-agent", "serve", "--stdio", NULL};
	char *spaced[] = {"sh", "-c", "exec agent\tserve", NULL};
	char *huge[] = {"x", NULL, NULL};
	char big[400];
	struct connect_addr a;
	struct err e;
	char *s;

	ck_assert_int_eq(connect_addr_parse("fc:/run/v.sock", NULL, &a, &e), 0);
	ck_assert_int_eq(connect_addr_instance(&a, &s, &e), 0);
	ck_assert_str_eq(s, "fc:/run/v.sock:7340");
	free(s);
	connect_addr_dispose(&a);

	ck_assert_int_eq(connect_addr_parse("exec", argv, &a, &e), 0);
	ck_assert_int_eq(connect_addr_instance(&a, &s, &e), 0);
	ck_assert_str_eq(s, "exec:incus,exec,vm1,--,sandbox-agent,serve,--stdio");
	free(s);
	connect_addr_dispose(&a);

	/* Blanks cannot be part of a pin's name. */
	ck_assert_int_eq(connect_addr_parse("exec", spaced, &a, &e), 0);
	ck_assert_int_eq(connect_addr_instance(&a, &s, &e), 0);
	ck_assert_str_eq(s, "exec:sh,-c,exec_agent_serve");
	free(s);
	connect_addr_dispose(&a);

	/* Too long for a pin: the caller must name the instance. */
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	huge[1] = big;
	ck_assert_int_eq(connect_addr_parse("exec", huge, &a, &e), 0);
	ck_assert_int_lt(connect_addr_instance(&a, &s, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "--instance"));
	connect_addr_dispose(&a);

	ck_assert_int_eq(connect_addr_parse("unix:/run/my agent.sock", NULL, &a, &e), 0);
	ck_assert_int_lt(connect_addr_instance(&a, &s, &e), 0);
	connect_addr_dispose(&a);
}
END_TEST

static int fc(const char *s, uint32_t *port)
{
	struct err e;

	return connect_fc_reply_parse(s, strlen(s), port, &e);
}

START_TEST(test_fc_reply)
{
	static const char *const refused[] = {
	    "ok 5\n",           "OK5\n",   "OK  5\n",   "OK \n",
	    "OK -5\n",          "OK 5 \n", "OK 5\r\n",  "OK 4294967296\n",
	    "OK 12345678901\n", "OK 5\nX", "FAILURE\n", "\n",
	    "OK 0x10\n",        "O\n",
	};
	uint32_t port = 0;
	struct err e;

	ck_assert_int_eq(fc("OK 1073741824\n", &port), 1);
	ck_assert_uint_eq(port, 1073741824);
	ck_assert_int_eq(fc("OK 0\n", &port), 1);
	ck_assert_uint_eq(port, 0);
	ck_assert_int_eq(fc("OK 4294967295\n", &port), 1);
	ck_assert_uint_eq(port, 4294967295u);
	/* Every proper prefix asks for more. */
	ck_assert_int_eq(fc("", &port), 0);
	ck_assert_int_eq(fc("O", &port), 0);
	ck_assert_int_eq(fc("OK", &port), 0);
	ck_assert_int_eq(fc("OK ", &port), 0);
	ck_assert_int_eq(fc("OK 12", &port), 0);
	for (size_t i = 0; i < ELEMENTSOF(refused); i++)
		ck_assert_msg(fc(refused[i], &port) < 0, "accepted %s", refused[i]);
	/* The offending bytes are shown, escaped. */
	ck_assert_int_lt(connect_fc_reply_parse("OK \x1b[31m\n", 9, &port, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "not a Firecracker vsock socket"));
	ck_assert_ptr_nonnull(strstr(e.msg, "\"OK \\x1b[31m\\n\""));
	/* A NUL is a byte like any other. */
	ck_assert_int_lt(connect_fc_reply_parse("OK \0\n", 5, &port, &e), 0);
}
END_TEST

static void write_script(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "#!/bin/sh\n%s", body);
	fclose(f);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

START_TEST(test_incus_resolve)
{
	char dir[] = "/tmp/connect-test.XXXXXX", script[64], cmd[96];
	struct connect_addr a, fb;
	struct err e;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(script, sizeof(script), "%s/incus", dir);

	/* A VM: its CID, and the exec route to fall back on. Nothing connects here. */
	write_script(script, "[ \"$*\" = 'config get vm1 volatile.vsock_id' ] && echo 42\n");
	ck_assert_int_eq(connect_incus_resolve(script, "vm1", 7340, &a, &fb, &e), 0);
	ck_assert_int_eq(a.kind, CONNECT_VSOCK);
	ck_assert_uint_eq(a.cid, 42);
	ck_assert_uint_eq(a.port, 7340);
	ck_assert_int_eq(fb.kind, CONNECT_EXEC);
	ck_assert_str_eq(fb.argv[0], script);
	ck_assert_str_eq(fb.argv[2], "vm1");
	ck_assert_str_eq(fb.argv[6], "--stdio");
	connect_addr_dispose(&a);
	connect_addr_dispose(&fb);

	/* A container: no CID, exec. So is a failing incus, and a CID that is no guest's. */
	static const char *const no_cid[] = {"echo\n",
	                                     "echo 'Error: not found' >&2; exit 1\n",
	                                     "echo 2\n",
	                                     "echo 42abc\n",
	                                     "echo 4294967295\n",
	                                     "exec sleep 0\n"};
	for (size_t i = 0; i < ELEMENTSOF(no_cid); i++) {
		write_script(script, no_cid[i]);
		ck_assert_int_eq(connect_incus_resolve(script, "c1", 7340, &a, &fb, &e), 0);
		ck_assert_msg(a.kind == CONNECT_EXEC, "case %zu", i);
		ck_assert_ptr_null(fb.argv);
		connect_addr_dispose(&a);
	}
	ck_assert_int_lt(connect_incus_resolve(script, "--all", 7340, &a, &fb, &e), 0);
	ck_assert_int_lt(connect_incus_resolve(script, "a b", 7340, &a, &fb, &e), 0);
	ck_assert_int_eq(connect_incus_resolve(script, "remote:vm-1.x", 7340, &a, &fb, &e), 0);
	connect_addr_dispose(&a);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_exec_stream)
{
	char *cat[] = {"cat", NULL};
	char *fail[] = {"sh", "-c", "exit 9", NULL};
	struct connect_addr a = {.kind = CONNECT_EXEC};
	struct connect_stream s;
	char buf[16] = {0};
	struct err e;
	int status;

	/* Bytes go through the command and back; its end is reaped. */
	a.argv = cat;
	ck_assert_int_eq(connect_open(&a, frame_io_deadline(5000), &s, &e), 0);
	ck_assert(fcntl(s.fd, F_GETFL) & O_NONBLOCK);
	ck_assert(fcntl(s.fd, F_GETFD) & FD_CLOEXEC);
	ck_assert_int_eq(write(s.fd, "ping", 4), 4);
	for (ssize_t n = 0, got = 0; got<4; got += n> 0 ? n : 0)
		n = read(s.fd, buf + got, sizeof(buf) - 1 - (size_t)got);
	ck_assert_str_eq(buf, "ping");
	status = connect_stream_dispose(&s, 2000);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* A command that ended is named in the error. */
	a.argv = fail;
	ck_assert_int_eq(connect_open(&a, frame_io_deadline(5000), &s, &e), 0);
	err_set(&e, ERR_FAILED, ECONNRESET, "the agent closed the connection");
	connect_stream_explain(&s, &e);
	ck_assert_str_eq(e.msg, "the agent closed the connection (the exec command exited with "
	                        "status 9)");
	connect_stream_dispose(&s, 2000);

	/* A command that ignores the end of its input is stopped. */
	char *stubborn[] = {"sh", "-c", "trap '' HUP; exec sleep 60", NULL};
	a.argv = stubborn;
	ck_assert_int_eq(connect_open(&a, frame_io_deadline(5000), &s, &e), 0);
	status = connect_stream_dispose(&s, 100);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}
END_TEST

/*
 * A hostile guest's stderr through the exec transport: a title change (OSC), a screen clear
 * (CSI), an 8-bit CSI, a bell and a fake progress line reach our stderr neutralised, each line
 * marked as the command's.
 */
START_TEST(test_exec_stderr_filtered)
{
	char *noisy[] = {"sh", "-c",
	                 "printf '\033]0;owned\007\033[2J\302\2332J\nsandbox-ctl: ready\n"
	                 "tail without newline' >&2; exit 0",
	                 NULL};
	struct connect_addr a = {.kind = CONNECT_EXEC, .argv = noisy};
	char path[] = "/tmp/test_connect_stderr.XXXXXX";
	struct connect_stream s;
	char buf[4096] = {0};
	int saved, fd, r;
	struct err e;
	ssize_t n;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	r = connect_open(&a, frame_io_deadline(5000), &s, &e);
	if (r == 0)
		connect_stream_dispose(&s, 2000);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ck_assert_int_eq(r, 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	ck_assert_msg(!memchr(buf, '\033', (size_t)n), "an escape came through: %s", buf);
	ck_assert_ptr_null(memchr(buf, '\007', (size_t)n));
	ck_assert_ptr_null(strstr(buf, "\302\233"));
	ck_assert_msg(strncmp(buf, "sandbox-ctl: ready", 18) &&
	                  !strstr(buf, "\nsandbox-ctl: ready"),
	              "a fake progress line: %s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "sandbox-ctl: exec: sandbox-ctl: ready\n"));
	ck_assert_ptr_nonnull(strstr(buf, "sandbox-ctl: exec: tail without newline\n"));
}
END_TEST

/*
 * An exec command that fails before any channel (`incus exec` on a missing instance): its
 * last line of stderr, cleaned, ends the error, so a controller keeping the tail sees why.
 */
START_TEST(test_exec_failure_says_why)
{
	char *failing[] = {
	    "sh", "-c",
	    "echo 'first line' >&2; printf 'Error: Instance not found\033[2J\n' >&2; "
	    "exit 1",
	    NULL};
	struct connect_addr a = {.kind = CONNECT_EXEC, .argv = failing};
	struct connect_stream s;
	char buf[16];
	struct err e;
	int saved, devnull;

	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	saved = dup(STDERR_FILENO);
	dup2(devnull, STDERR_FILENO);
	ck_assert_int_eq(connect_open(&a, frame_io_deadline(5000), &s, &e), 0);
	/* The command is gone: reading its end sees EOF, as a handshake would. */
	while (read(s.fd, buf, sizeof(buf)) < 0 && errno == EAGAIN)
		usleep(10000);
	err_set(&e, ERR_FAILED, ECONNRESET, "the agent closed the connection during the handshake");
	connect_stream_explain(&s, &e);
	connect_stream_dispose(&s, 2000);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(devnull);
	ck_assert_msg(strstr(e.msg, "(the exec command exited with status 1)"), "%s", e.msg);
	ck_assert_msg(strstr(e.msg, "; it said: Error: Instance not found?[2J"), "%s", e.msg);
	ck_assert_ptr_null(strchr(e.msg, '\033'));
}
END_TEST

START_TEST(test_serial_pty)
{
	struct connect_stream s;
	struct connect_addr a = {.kind = CONNECT_SERIAL};
	int master, slave;
	char name[64], buf[8] = {0};
	struct err e;

	/* qemu's -chardev pty: raw bytes both ways, no echo, no line discipline. */
	ck_assert_int_eq(openpty(&master, &slave, name, NULL, NULL), 0);
	a.path = name;
	ck_assert_int_eq(connect_open(&a, frame_io_deadline(5000), &s, &e), 0);
	ck_assert_int_eq(write(master, "\xff\xff\r\x03", 4), 4);
	for (ssize_t n = 0, got = 0; got<4; got += n> 0 ? n : 0)
		n = read(s.fd, buf + got, 4 - (size_t)got);
	ck_assert_int_eq(memcmp(buf, "\xff\xff\r\x03", 4), 0);
	connect_stream_dispose(&s, 0);
	close(slave);
	close(master);

	a.path = "/etc/passwd";
	ck_assert_int_lt(connect_open(&a, frame_io_deadline(5000), &s, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "neither a socket nor a character device"));
}
END_TEST

START_TEST(test_string_lossy)
{
	struct json_object *j;

	j = output_string_lossy("caf\xc3\xa9 \xe2\x9c\x93", 9);
	ck_assert_str_eq(json_object_get_string(j), "caf\xc3\xa9 \xe2\x9c\x93");
	json_object_put(j);
	/* Invalid bytes, a cut sequence, overlong forms and surrogates become U+FFFD each. */
	j = output_string_lossy("a\xff"
	                        "b\xc3",
	                        4);
	ck_assert_str_eq(json_object_get_string(j), "a\xef\xbf\xbd"
	                                            "b\xef\xbf\xbd");
	json_object_put(j);
	j = output_string_lossy("\xc0\xaf\xed\xa0\x80", 5);
	ck_assert_int_eq(json_object_get_string_len(j), 15);
	json_object_put(j);
	j = output_string_lossy("", 0);
	ck_assert_str_eq(json_object_get_string(j), "");
	json_object_put(j);
}
END_TEST

/* output_utf8_valid() accepts exactly what output_string_lossy() keeps unchanged. */
START_TEST(test_utf8_valid)
{
	static const char *const good[] = {"",
	                                   "app/config.ru",
	                                   "caf\xc3\xa9",
	                                   "\xe2\x9c\x93",
	                                   "\xf0\x9f\x90\xb3",
	                                   "\xf4\x8f\xbf\xbf"};
	static const char *const bad[] = {
	    "a\xff", "b\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x9c", "\x80"};

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		ck_assert_msg(output_utf8_valid(good[i], strlen(good[i])), "good[%zu]", i);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(!output_utf8_valid(bad[i], strlen(bad[i])), "bad[%zu]", i);
	/* A cut sequence at the end of the length given, whatever follows it. */
	ck_assert(!output_utf8_valid("\xc3\xa9", 1));
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		struct json_object *j = output_string_lossy(good[i], strlen(good[i]));
		ck_assert_str_eq(json_object_get_string(j), good[i]);
		json_object_put(j);
	}
}
END_TEST

static Suite *connect_suite(void)
{
	Suite *s = suite_create("connect");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_addr_parse);
	tcase_add_test(tc, test_addr_instance);
	tcase_add_test(tc, test_fc_reply);
	tcase_add_test(tc, test_incus_resolve);
	tcase_add_test(tc, test_exec_stream);
	tcase_add_test(tc, test_exec_stderr_filtered);
	tcase_add_test(tc, test_exec_failure_says_why);
	tcase_add_test(tc, test_serial_pty);
	tcase_add_test(tc, test_string_lossy);
	tcase_add_test(tc, test_utf8_valid);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(connect_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
