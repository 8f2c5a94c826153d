/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vsock_echo: proves AF_VSOCK loopback inside the test VM (never run it on a machine whose
 * vsock leads to a real hypervisor: there CID 1 is not loopback).
 *
 *   vsock_echo [PORT [BYTES]]
 *
 * Listens on VMADDR_CID_ANY:PORT, forks a child that accepts one connection and echoes it,
 * connects to CID 1 (VMADDR_CID_LOCAL) PORT, sends BYTES of a pattern, reads them back and
 * compares. The child reports the peer's CID, which must be 1. Prints one line with the
 * figures; exit 0 when every byte came back in order, 1 otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#ifndef VMADDR_CID_LOCAL
#define VMADDR_CID_LOCAL 1
#endif

#define CHUNK 65536

/* Byte i of the stream: not periodic in any power of two, so a dropped or repeated chunk shows. */
static unsigned char pattern_at(uint64_t i)
{
	return (unsigned char)(((i * 2654435761u) >> 13) ^ (i / 251));
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int file_write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The child: accept one connection, check the peer, echo until end of file. */
static int echo_one(int lfd)
{
	struct sockaddr_vm peer = {0};
	socklen_t len = sizeof(peer);
	unsigned char buf[CHUNK];
	int fd;

	fd = accept4(lfd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
	if (fd < 0) {
		perror("vsock_echo: accept");
		return 1;
	}
	if (peer.svm_cid != VMADDR_CID_LOCAL) {
		fprintf(stderr, "vsock_echo: peer CID %u, expected %u\n", peer.svm_cid,
		        VMADDR_CID_LOCAL);
		return 1;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			perror("vsock_echo: echo read");
			return 1;
		}
		if (n == 0)
			break;
		if (file_write_all(fd, buf, (size_t)n) < 0) {
			perror("vsock_echo: echo write");
			return 1;
		}
	}
	close(fd);
	return 0;
}

/* The parent: send the pattern and check what comes back, both directions in one poll loop. */
static int send_and_check(int fd, uint64_t total)
{
	unsigned char out[CHUNK], in[CHUNK];
	uint64_t sent = 0, got = 0;

	while (got < total) {
		struct pollfd p = {.fd = fd, .events = POLLIN | (sent < total ? POLLOUT : 0)};
		if (poll(&p, 1, 10000) <= 0) {
			fprintf(stderr,
			        "vsock_echo: stalled after %" PRIu64 " of %" PRIu64 " bytes\n", got,
			        total);
			return -1;
		}
		if ((p.revents & POLLOUT) && sent < total) {
			size_t n = total - sent < CHUNK ? (size_t)(total - sent) : CHUNK;
			ssize_t w;
			for (size_t i = 0; i < n; i++)
				out[i] = pattern_at(sent + i);
			w = send(fd, out, n, MSG_DONTWAIT);
			if (w < 0 && errno != EAGAIN && errno != EINTR) {
				perror("vsock_echo: send");
				return -1;
			}
			if (w > 0)
				sent += (uint64_t)w;
			if (sent == total)
				shutdown(fd, SHUT_WR);
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = recv(fd, in, sizeof(in), MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				fprintf(stderr,
				        "vsock_echo: the echo ended after %" PRIu64 " bytes\n",
				        got);
				return -1;
			}
			for (ssize_t i = 0; i < r; i++)
				if (in[i] != pattern_at(got + (uint64_t)i)) {
					fprintf(stderr, "vsock_echo: byte %" PRIu64 " differs\n",
					        got + (uint64_t)i);
					return -1;
				}
			got += (uint64_t)r;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned port = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 5000;
	uint64_t total = argc > 2 ? strtoull(argv[2], NULL, 10) : 16u << 20;
	struct sockaddr_vm addr = {.svm_family = AF_VSOCK, .svm_port = port};
	int lfd, fd, status = 0;
	double start, ms;
	pid_t child;

	lfd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		perror("vsock_echo: socket(AF_VSOCK)");
		return 1;
	}
	addr.svm_cid = VMADDR_CID_ANY;
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 1) < 0) {
		perror("vsock_echo: bind/listen");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("vsock_echo: fork");
		return 1;
	}
	if (child == 0)
		_exit(echo_one(lfd));
	close(lfd);

	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	addr.svm_cid = VMADDR_CID_LOCAL;
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror("vsock_echo: connect to CID 1");
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	start = now_ms();
	if (send_and_check(fd, total) < 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	ms = now_ms() - start;
	close(fd);
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "vsock_echo: the echo side failed\n");
		return 1;
	}
	printf("vsock_echo: %" PRIu64 " bytes echoed over CID 1 port %u in %.1f ms (%.1f MiB/s "
	       "each way), peer CID 1\n",
	       total, port, ms, ms > 0 ? total / 1048576.0 / (ms / 1e3) : 0.0);
	return 0;
}
