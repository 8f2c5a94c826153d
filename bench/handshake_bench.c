/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The channel's speed: handshake latency over a socketpair (a forked guest serving one session
 * after another on the same stream, as on a virtio-serial port), and encrypted throughput
 * against a raw copy over a unix socket in the same run.
 *
 *   handshake_bench [-n HANDSHAKES] [-m MIB]
 *
 * Goals (issue 4): a handshake under 2 ms; pushing at 80 % of a raw copy or better.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "authkeys.h"
#include "channel.h"
#include "file.h"
#include "frame_io.h"
#include "keys.h"
#include "msg.h"

#define TIMEOUT_MS 30000

static struct keypair *host_key, *guest_key;
static struct authkeys *authorized;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct err *e)
{
	fprintf(stderr, "handshake_bench: %s: %s\n", what, e ? e->msg : strerror(errno));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Guest: serve sessions on fd until the stream ends; count the data bytes it received. */
_noreturn_ static void guest_serve(int fd)
{
	struct frame_io *io;
	struct err e;

	if (frame_io_new(fd, &io, &e) < 0)
		die("frame_io_new", &e);
	for (;;) {
		struct channel *ch;
		uint64_t bytes = 0;
		struct msg m;
		int r;

		if (channel_handshake_guest(io, guest_key, authorized, TIMEOUT_MS, &ch, NULL, &e) <
		    0) {
			if (e.code == ECONNRESET)
				_exit(0); /* the host is done */
			die("guest handshake", &e);
		}
		while ((r = channel_recv(ch, &m, -1, &e)) == 1) {
			bytes += m.data_len;
			msg_dispose(&m);
		}
		if (r < 0)
			die("guest receive", &e);
		m = (struct msg){.type = MSG_OK, .flags = MSG_F_END, .stream = 1};
		m.json = json_object_new_object();
		json_object_object_add(m.json, "bytes", json_object_new_int64((int64_t)bytes));
		if (channel_send(ch, &m, TIMEOUT_MS, &e) < 0 ||
		    channel_close(ch, TIMEOUT_MS, &e) < 0)
			die("guest send", &e);
		msg_dispose(&m);
		channel_free(ch);
	}
}

/* Host: one session; the payload (if any) in messages of chunk bytes; returns seconds spent
 * in the handshake and, in *xfer, from the first message to the guest's acknowledgement. */
static double host_session(struct frame_io *io, const uint8_t *buf, size_t chunk, size_t total,
                           double *xfer)
{
	struct channel *ch;
	struct err e;
	struct msg m;
	double t0 = now(), t1, t2;
	int64_t got = -1;

	if (channel_handshake_host(io, host_key, guest_key->pk, TIMEOUT_MS, &ch, &e) < 0)
		die("host handshake", &e);
	t1 = now();
	for (size_t sent = 0; sent < total; sent += chunk) {
		m = (struct msg){.type = MSG_TREE_PUSH_DATA,
		                 .stream = 1,
		                 .data = buf,
		                 .data_len = total - sent < chunk ? total - sent : chunk};
		if (channel_send(ch, &m, TIMEOUT_MS, &e) < 0)
			die("host send", &e);
	}
	if (channel_close(ch, TIMEOUT_MS, &e) < 0)
		die("host close", &e);
	while (channel_recv(ch, &m, TIMEOUT_MS, &e) == 1) {
		msg_get_int64(&m, "bytes", &got);
		msg_dispose(&m);
	}
	t2 = now();
	if (got != (int64_t)total) {
		fprintf(stderr, "handshake_bench: the guest received %lld of %zu bytes\n",
		        (long long)got, total);
		exit(1);
	}
	channel_free(ch);
	if (xfer)
		*xfer = t2 - t1;
	return t1 - t0;
}

static pid_t fork_guest(int fd, int other)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork", NULL);
	if (pid == 0) {
		close(other);
		guest_serve(fd);
	}
	close(fd);
	return pid;
}

static void bench_handshakes(int n)
{
	struct frame_io *io;
	double *lat = calloc((size_t)n, sizeof(double));
	struct err e;
	int sv[2], status;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair", NULL);
	pid = fork_guest(sv[1], sv[0]);
	if (frame_io_new(sv[0], &io, &e) < 0)
		die("frame_io_new", &e);
	for (int i = 0; i < n; i++)
		lat[i] = host_session(io, NULL, 1, 0, NULL);
	frame_io_free(io);
	close(sv[0]);
	waitpid(pid, &status, 0);
	qsort(lat, (size_t)n, sizeof(double), cmp_double);
	printf("handshake over a socketpair (host side, %d sessions on one stream):\n", n);
	printf("  median %.3f ms, p90 %.3f ms, min %.3f ms, max %.3f ms (goal: under 2 ms)\n",
	       lat[n / 2] * 1e3, lat[n * 9 / 10] * 1e3, lat[0] * 1e3, lat[n - 1] * 1e3);
	printf(
	    "figure: channel handshake over a socketpair (host side, median of %d) | %.2f ms (p90 "
	    "%.2f) | < 2 ms\n",
	    n, lat[n / 2] * 1e3, lat[n * 9 / 10] * 1e3);
	free(lat);
}

/* A connected pair over a unix socket bound in a private directory. */
static void unix_pair(int sv[2])
{
	char dir[] = "/tmp/handshake-bench-XXXXXX";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int lfd;

	if (!mkdtemp(dir))
		die("mkdtemp", NULL);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0)
		die("unix socket", NULL);
	sv[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect", NULL);
	sv[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (sv[1] < 0)
		die("accept", NULL);
	close(lfd);
	unlink(sa.sun_path);
	rmdir(dir);
}

/* Raw copy: write total bytes in chunks; the reader acknowledges after end of stream. */
static double raw_copy(const uint8_t *buf, size_t chunk, size_t total)
{
	int sv[2], status;
	double t0;
	char ack;
	pid_t pid;

	unix_pair(sv);
	pid = fork();
	if (pid < 0)
		die("fork", NULL);
	if (pid == 0) {
		static uint8_t rbuf[1 << 20];
		size_t got = 0;
		ssize_t n;
		close(sv[0]);
		while ((n = read(sv[1], rbuf, sizeof(rbuf))) > 0)
			got += (size_t)n;
		(void)!write(sv[1], got == total ? "y" : "n", 1);
		_exit(0);
	}
	close(sv[1]);
	t0 = now();
	for (size_t sent = 0; sent < total; sent += chunk)
		if (file_write_all(sv[0], buf, total - sent < chunk ? total - sent : chunk) < 0)
			die("write", NULL);
	shutdown(sv[0], SHUT_WR);
	if (read(sv[0], &ack, 1) != 1 || ack != 'y')
		die("raw copy lost bytes", NULL);
	t0 = now() - t0;
	close(sv[0]);
	waitpid(pid, &status, 0);
	return t0;
}

static double encrypted_copy(const uint8_t *buf, size_t chunk, size_t total)
{
	struct frame_io *io;
	struct err e;
	int sv[2], status;
	double xfer;
	pid_t pid;

	unix_pair(sv);
	pid = fork_guest(sv[1], sv[0]);
	if (frame_io_new(sv[0], &io, &e) < 0)
		die("frame_io_new", &e);
	host_session(io, buf, chunk, total, &xfer);
	frame_io_free(io);
	close(sv[0]);
	waitpid(pid, &status, 0);
	return xfer;
}

static double best_of(int runs, double (*fn)(const uint8_t *, size_t, size_t), const uint8_t *buf,
                      size_t chunk, size_t total)
{
	double best = 1e9;

	for (int i = 0; i < runs; i++) {
		double t = fn(buf, chunk, total);
		if (t < best)
			best = t;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const size_t chunks[] = {16 * 1024, 64 * 1024, 256 * 1024,
	                                FRAME_PLAINTEXT_MAX - MSG_HEADER_LEN};
	int n = 200, mib = 256, opt;
	size_t total;
	uint8_t *buf;
	struct err e;
	double raw;

	while ((opt = getopt(argc, argv, "n:m:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'm')
			mib = atoi(optarg);
		else {
			fprintf(stderr, "usage: handshake_bench [-n HANDSHAKES] [-m MIB]\n");
			return 2;
		}
	}
	if (n < 1 || mib < 1)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	if (keys_generate(&host_key, &e) < 0 || keys_generate(&guest_key, &e) < 0 ||
	    authkeys_new(NULL, NULL, &authorized, &e) < 0 ||
	    authkeys_add(authorized, host_key->pk, "bench", &e) < 0)
		die("keys", &e);

	bench_handshakes(n);

	total = (size_t)mib << 20;
	buf = malloc(FRAME_PLAINTEXT_MAX);
	for (size_t i = 0; i < FRAME_PLAINTEXT_MAX; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	raw = best_of(3, raw_copy, buf, 1 << 20, total);
	printf("throughput over a unix socket, %d MiB, best of 3:\n", mib);
	printf("  raw copy, 1 MiB writes              %7.0f MiB/s\n", mib / raw);
	for (size_t i = 0; i < ELEMENTSOF(chunks); i++) {
		double t = best_of(3, encrypted_copy, buf, chunks[i], total);
		printf("  encrypted, %4zu KiB messages        %7.0f MiB/s  %3.0f %% of raw\n",
		       chunks[i] >> 10, mib / t, 100.0 * raw / t);
	}
	free(buf);
	authkeys_free(authorized);
	keys_free(host_key);
	keys_free(guest_key);
	return 0;
}
