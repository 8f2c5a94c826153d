/* SPDX-License-Identifier: Apache-2.0 */
/*
 * listen_check against real listeners on loopback: python3 -m http.server started with
 * proc_spawn, and sockets the test process opens itself (a listener held by a pid that is not
 * in the list is foreign). Every python server is stopped by pid before the test returns.
 */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "listen_check.h"
#include "proc.h"

#define PYTHON "/usr/bin/python3"

static char served_dir[] = "/tmp/test-listen-XXXXXX";

#include "test_watchdog.h"

static void setup(void)
{
	test_watchdog_start();
	ck_assert_ptr_nonnull(mkdtemp(served_dir));
}

static void teardown(void)
{
	rmdir(served_dir);
}

static uint16_t free_port(void)
{
	uint16_t port = 0;
	struct err e;

	ck_assert_msg(listen_check_pick_free_port(&port, &e) == 0, "%s", e.msg);
	ck_assert_uint_gt(port, 0);
	return port;
}

static pid_t start_server(const char *bind_addr, uint16_t port)
{
	static char *const env[] = {(char *)"PATH=/usr/bin:/bin", owner_env, NULL};
	char cmd[256];
	struct err e;
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "exec " PYTHON " -m http.server --bind %s %u", bind_addr,
	         (unsigned)port);
	struct proc_spec spec = {.command = cmd,
	                         .cwd = served_dir,
	                         .env = env,
	                         .output_fd = -1,
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	err_clear(&e);
	ck_assert_msg(proc_spawn(&spec, &pid, &e) == 0, "%s", e.msg);
	return pid;
}

static void stop_server(pid_t pid)
{
	int status;

	ck_assert_int_eq(proc_signal(pid, proc_start_time(pid), SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

static bool taken(uint16_t port)
{
	bool ret = false;
	struct err e;

	ck_assert_msg(listen_check_port_taken(port, &ret, &e) == 0, "%s", e.msg);
	return ret;
}

static enum listen_state check(uint16_t port, const pid_t *pids, size_t n)
{
	enum listen_state st = LISTEN_NONE;
	struct err e;

	ck_assert_msg(listen_check(port, pids, n, &st, &e) == 0, "%s", e.msg);
	return st;
}

/* Poll until someone listens on port (bounded: 20 s), then return what we see. */
static enum listen_state wait_listening(uint16_t port, const pid_t *pids, size_t n)
{
	enum listen_state st = LISTEN_NONE;
	struct err e;

	for (int i = 0; i < 2000; i++) {
		ck_assert_msg(listen_check(port, pids, n, &st, &e) == 0, "%s", e.msg);
		if (st != LISTEN_NONE)
			return st;
		if (n && waitpid(pids[0], NULL, WNOHANG) != 0)
			ck_abort_msg("the server exited before listening");
		usleep(10000);
	}
	return st;
}

/*
 * A server on a free port, listening. The port can be taken by another process between the
 * pick and the server's bind (a connection anywhere on the machine may draw it); a server that
 * exits before it listens is started again on a new port, three times at most.
 */
static pid_t serve(const char *bind_addr, uint16_t *ret_port)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		uint16_t port = free_port();
		pid_t pid = start_server(bind_addr, port);

		for (int i = 0; i < 2000; i++) {
			if (check(port, &pid, 1) != LISTEN_NONE) {
				*ret_port = port;
				return pid;
			}
			if (waitpid(pid, NULL, WNOHANG) == pid)
				break;
			usleep(10000);
		}
		if (kill(pid, 0) == 0)
			ck_abort_msg("the server did not listen on %s port %u in 20 s", bind_addr,
			             (unsigned)port);
		fprintf(stderr, "the server exited before listening on %s port %u; another port\n",
		        bind_addr, (unsigned)port);
	}
	ck_abort_msg("the server exited before listening on %s, three times", bind_addr);
	return -1;
}

/* A listening socket of the test process itself. */
static int listen_on(int family, const char *addr, uint16_t port, bool freebind)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	ck_assert_int_ge(fd, 0);
	if (freebind)
		ck_assert_int_eq(setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)), 0);
	if (family == AF_INET) {
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
		ck_assert_int_eq(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
		ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	} else {
		struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
		ck_assert_int_eq(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)), 0);
		ck_assert_int_eq(inet_pton(AF_INET6, addr, &sa.sin6_addr), 1);
		ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	ck_assert_int_eq(listen(fd, 4), 0);
	return fd;
}

START_TEST(test_server_on_ipv4_loopback_is_ours)
{
	uint16_t port, ports[8];
	pid_t server = serve("127.0.0.1", &port);
	pid_t other = getpid();

	ck_assert_int_eq(check(port, &server, 1), LISTEN_OURS);
	/* The same listener seen from a set that does not hold it. */
	ck_assert_int_eq(check(port, &other, 1), LISTEN_FOREIGN);
	ck_assert_int_eq(check(port, NULL, 0), LISTEN_FOREIGN);
	ck_assert_uint_eq(listen_check_ports_of(&server, 1, ports, 8), 1);
	ck_assert_uint_eq(ports[0], port);
	ck_assert_uint_eq(listen_check_ports_of(&server, 1, ports, 0), 0);
	/* It listens on port, not on port + 1. */
	ck_assert_int_eq(check((uint16_t)(port + 1), &server, 1) == LISTEN_OURS, 0);
	stop_server(server);
	ck_assert_int_eq(check(port, &server, 1), LISTEN_NONE);
}
END_TEST

START_TEST(test_server_on_ipv6_loopback_only)
{
	uint16_t port;
	pid_t server = serve("::1", &port);

	ck_assert_int_eq(check(port, &server, 1), LISTEN_OURS_V6_ONLY);
	stop_server(server);
}
END_TEST

START_TEST(test_server_on_ipv6_any_is_dual_stack)
{
	uint16_t port;
	pid_t server = serve("::", &port);

	ck_assert_int_eq(check(port, &server, 1), LISTEN_OURS);
	stop_server(server);
}
END_TEST

START_TEST(test_foreign_listener_on_loopback_wins_over_ours_on_v6)
{
	uint16_t port = free_port();
	int foreign = listen_on(AF_INET, "127.0.0.1", port, false);
	pid_t server = start_server("::1", port);

	/* 127.0.0.1:port reaches the test's socket, not the server. */
	ck_assert_int_eq(wait_listening(port, &server, 1), LISTEN_FOREIGN);
	stop_server(server);
	ck_assert_int_eq(check(port, &server, 1), LISTEN_FOREIGN);
	close(foreign);
	ck_assert_int_eq(check(port, &server, 1), LISTEN_NONE);
}
END_TEST

START_TEST(test_own_sockets_by_address)
{
	pid_t self = getpid(), none = 0;
	uint16_t port = free_port();
	int fd;

	ck_assert_int_eq(check(port, &self, 1), LISTEN_NONE);
	ck_assert(!taken(port));

	/* The cheap question (any listener on the port?) says yes on every address. */
	fd = listen_on(AF_INET, "127.0.0.2", port, false); /* all of 127/8 is loopback */
	ck_assert(taken(port));
	ck_assert_int_eq(check(port, &self, 1), LISTEN_OURS);
	ck_assert_int_eq(check(port, &none, 1), LISTEN_FOREIGN);
	close(fd);
	ck_assert(!taken(port));

	fd = listen_on(AF_INET, "0.0.0.0", port, false);
	ck_assert(taken(port));
	ck_assert_int_eq(check(port, &self, 1), LISTEN_OURS);
	close(fd);

	/* TEST-NET-1 with IP_FREEBIND: a listener on an address that is not loopback or any. */
	fd = listen_on(AF_INET, "192.0.2.7", port, true);
	ck_assert(taken(port));
	ck_assert_int_eq(check(port, &self, 1), LISTEN_OURS_OTHER_ADDR);
	close(fd);

	fd = listen_on(AF_INET6, "::1", port, false);
	ck_assert(taken(port));
	ck_assert_int_eq(check(port, &self, 1), LISTEN_OURS_V6_ONLY);
	close(fd);
	ck_assert_int_eq(check(port, &self, 1), LISTEN_NONE);
	ck_assert(!taken(port));
}
END_TEST

/*
 * More listeners than one sock_diag datagram holds (about a hundred each): the dump is read to
 * its end, so every one of them is seen, the last as well as the first.
 */
START_TEST(test_many_listeners_span_several_datagrams)
{
	enum { N = 400 };
	pid_t self = getpid();
	uint16_t want[N], *got = calloc(N + 8, sizeof(*got));
	int fds[N];
	size_t n;

	ck_assert_ptr_nonnull(got);
	/* Room for N descriptors besides the test's own. */
	struct rlimit rl;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < N + 64) {
		rl.rlim_cur = rl.rlim_max < N + 64 ? rl.rlim_max : N + 64;
		ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
		if (rl.rlim_cur < N + 64) {
			fprintf(stderr,
			        "test_many_listeners_span_several_datagrams: the open-file "
			        "limit is below %d; not run\n",
			        N + 64);
			free(got);
			return;
		}
	}
	for (int i = 0; i < N; i++) {
		struct sockaddr_in sa = {.sin_family = AF_INET,
		                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t len = sizeof(sa);

		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_int_ge(fds[i], 0);
		ck_assert_int_eq(bind(fds[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
		ck_assert_int_eq(listen(fds[i], 1), 0);
		ck_assert_int_eq(getsockname(fds[i], (struct sockaddr *)&sa, &len), 0);
		want[i] = ntohs(sa.sin_port);
	}
	n = listen_check_ports_of(&self, 1, got, N + 8);
	ck_assert_uint_eq(n, N);
	for (int i = 0; i < N; i++) {
		bool found = false;

		for (size_t j = 0; j < n && !found; j++)
			found = got[j] == want[i];
		ck_assert_msg(found, "port %u (listener %d of %d) was not seen", (unsigned)want[i],
		              i + 1, N);
	}
	ck_assert(taken(want[0]));
	ck_assert(taken(want[N - 1]));
	ck_assert_int_eq(check(want[N - 1], &self, 1), LISTEN_OURS);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	free(got);
}
END_TEST

START_TEST(test_pick_free_port)
{
	uint16_t a = free_port();
	pid_t self = getpid();
	uint16_t ports[4];
	int fd;

	/* Free on every address: 0.0.0.0, "::" (here v6-only) and loopback may each take it. */
	fd = listen_on(AF_INET, "0.0.0.0", a, false);
	ck_assert_uint_eq(listen_check_ports_of(&self, 1, ports, 4), 1);
	ck_assert_uint_eq(ports[0], a);
	close(fd);
	fd = listen_on(AF_INET6, "::", a, false);
	ck_assert_int_eq(check(a, &self, 1), LISTEN_OURS);
	close(fd);
	fd = listen_on(AF_INET, "127.0.0.1", a, false);
	ck_assert_int_eq(check(a, &self, 1), LISTEN_OURS);
	close(fd);
}
END_TEST

/*
 * In a network namespace of its own (this test's process only) with two ephemeral ports, one
 * of them held on 127.0.0.2: the pick must give the other every time, since an app binding
 * 0.0.0.0 could not have the held one. The held one is 40001: bind() to port 0 tries odd
 * ports first, and on 127.0.0.1 alone the held port would not conflict.
 */
START_TEST(test_pick_avoids_a_port_held_on_another_address)
{
	struct ifreq ifr = {0};
	int fd, sock, held;

	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr,
		        "test_pick_avoids_a_port_held_on_another_address: unshare: %s; not "
		        "run\n",
		        strerror(errno));
		return;
	}
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(sock, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ck_assert_int_eq(ioctl(sock, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	ck_assert_int_eq(ioctl(sock, SIOCSIFFLAGS, &ifr), 0);
	close(sock);
	fd = open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "40000 40001", 11), 11);
	close(fd);
	held = listen_on(AF_INET, "127.0.0.2", 40001, false);
	for (int i = 0; i < 20; i++)
		ck_assert_uint_eq(free_port(), 40000);
	close(held);
}
END_TEST

static Suite *listen_suite(void)
{
	Suite *s = suite_create("listen_check");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_server_on_ipv4_loopback_is_ours);
	tcase_add_test(tc, test_server_on_ipv6_loopback_only);
	tcase_add_test(tc, test_server_on_ipv6_any_is_dual_stack);
	tcase_add_test(tc, test_foreign_listener_on_loopback_wins_over_ours_on_v6);
	tcase_add_test(tc, test_own_sockets_by_address);
	tcase_add_test(tc, test_many_listeners_span_several_datagrams);
	tcase_add_test(tc, test_pick_free_port);
	tcase_add_test(tc, test_pick_avoids_a_port_held_on_another_address);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(listen_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
