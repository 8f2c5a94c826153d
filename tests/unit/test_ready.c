/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The readiness probe against a real HTTP server on loopback (tests/data/ready_server.py,
 * run with /usr/bin/python3 and killed at the end of each test).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "ready.h"

#define SERVER_SCRIPT "tests/data/ready_server.py"

struct server {
	pid_t pid;
	uint16_t port;
};

static void server_start(struct server *s, const char *addr)
{
	pid_t self = getpid();
	char line[32] = "";
	int p[2];
	FILE *f;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	s->pid = fork();
	ck_assert_int_ge(s->pid, 0);
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != self)
			_exit(1);
		dup2(p[1], STDOUT_FILENO);
		execl("/usr/bin/python3", "python3", SERVER_SCRIPT, addr, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(fgets(line, sizeof(line), f) != NULL, "the test server did not start");
	fclose(f);
	s->port = (uint16_t)atoi(line);
	ck_assert_uint_gt(s->port, 0);
}

static void server_stop(struct server *s)
{
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
}

static long probe_ok(const char *host, uint16_t port, const char *path)
{
	long status = -1;
	struct err e;

	err_clear(&e);
	ck_assert_msg(ready_probe(host, port, path, &status, NULL, &e) == 0, "%s", e.msg);
	return status;
}

START_TEST(test_statuses)
{
	struct server s;

	server_start(&s, "127.0.0.1");
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/status/200"), 200);
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/status/401"), 401);
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/status/405"), 405);
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/status/503"), 503);
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/status/404"), 404);
	/* A path without its slash gets one. */
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "status/204"), 204);
	/* A body is read and dropped. */
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/big"), 200);
	server_stop(&s);
}
END_TEST

START_TEST(test_headers_and_redirects)
{
	struct server s;

	server_start(&s, "127.0.0.1");
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/accept"), 200);
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/host"), 200);
	/* Redirects are reported, not followed. */
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/redirect"), 302);
	server_stop(&s);
}
END_TEST

START_TEST(test_proxy_environment_ignored)
{
	struct server s;

	server_start(&s, "127.0.0.1");
	/* A proxy that does not exist: the probe must not try it. */
	setenv("http_proxy", "http://127.0.0.1:9", 1);
	setenv("HTTP_PROXY", "http://127.0.0.1:9", 1);
	setenv("ALL_PROXY", "http://127.0.0.1:9", 1);
	unsetenv("NO_PROXY");
	unsetenv("no_proxy");
	ck_assert_int_eq(probe_ok("127.0.0.1", s.port, "/status/200"), 200);
	server_stop(&s);
}
END_TEST

START_TEST(test_ipv6_literal)
{
	struct server s;

	server_start(&s, "::1");
	ck_assert_int_eq(probe_ok("::1", s.port, "/status/405"), 405);
	ck_assert_int_eq(probe_ok("[::1]", s.port, "/host"), 200);
	server_stop(&s);
}
END_TEST

/* The peer's part of a request: about the server's own delay, and nothing without an answer. */
START_TEST(test_answer_time)
{
	struct server s;
	long status = -1;
	int64_t us = -1;
	struct err e;

	server_start(&s, "127.0.0.1");
	err_clear(&e);
	ck_assert_msg(ready_probe("127.0.0.1", s.port, "/delay/500", &status, &us, &e) == 0, "%s",
	              e.msg);
	ck_assert_int_eq(status, 200);
	ck_assert_int_ge(us, 500000);
	ck_assert_int_lt(us, 1900000);
	ck_assert_msg(ready_probe("127.0.0.1", s.port, "/status/200", &status, &us, &e) == 0, "%s",
	              e.msg);
	ck_assert_int_lt(us, 500000);
	us = -1;
	ck_assert_int_lt(ready_probe("127.0.0.1", s.port, "/hangup", &status, &us, &e), 0);
	ck_assert_int_eq(us, 0);
	server_stop(&s);
}
END_TEST

START_TEST(test_connection_refused)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	long status = -1;
	struct err e;
	uint16_t port;
	char url[64];

	/* A port that was just free: bound, then released. */
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	err_clear(&e);
	ck_assert_int_lt(ready_probe("127.0.0.1", port, "/up", &status, NULL, &e), 0);
	ck_assert_int_eq(status, 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_int_eq(e.code, ECONNREFUSED);
	snprintf(url, sizeof(url), "GET http://127.0.0.1:%u/up: connection refused", port);
	ck_assert_str_eq(e.msg, url);
}
END_TEST

START_TEST(test_timeout_and_hangup)
{
	struct server s;
	long status = -1;
	struct err e;

	server_start(&s, "127.0.0.1");
	err_clear(&e);
	ck_assert_int_lt(ready_probe("127.0.0.1", s.port, "/slow", &status, NULL, &e), 0);
	ck_assert_int_eq(status, 0);
	ck_assert_int_eq(e.code, ETIMEDOUT);
	ck_assert_msg(strstr(e.msg, "no answer within 2000 ms"), "%s", e.msg);

	err_clear(&e);
	status = -1;
	ck_assert_int_lt(ready_probe("127.0.0.1", s.port, "/hangup", &status, NULL, &e), 0);
	ck_assert_int_eq(status, 0);
	ck_assert_msg(strstr(e.msg, "closed the connection without answering") ||
	                  strstr(e.msg, "reset"),
	              "%s", e.msg);
	server_stop(&s);
}
END_TEST

START_TEST(test_status_ok)
{
	ck_assert(ready_status_ok(200));
	ck_assert(ready_status_ok(401));
	ck_assert(ready_status_ok(405));
	ck_assert(!ready_status_ok(0));
	ck_assert(!ready_status_ok(204));
	ck_assert(!ready_status_ok(302));
	ck_assert(!ready_status_ok(404));
	ck_assert(!ready_status_ok(500));
}
END_TEST

static Suite *ready_suite(void)
{
	Suite *s = suite_create("ready");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_statuses);
	tcase_add_test(tc, test_headers_and_redirects);
	tcase_add_test(tc, test_proxy_environment_ignored);
	tcase_add_test(tc, test_ipv6_literal);
	tcase_add_test(tc, test_answer_time);
	tcase_add_test(tc, test_connection_refused);
	tcase_add_test(tc, test_timeout_and_hangup);
	tcase_add_test(tc, test_status_ok);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	struct err e;
	int failed;

	err_clear(&e);
	if (ready_init(&e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return EXIT_FAILURE;
	}
	sr = srunner_create(ready_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
