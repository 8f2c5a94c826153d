/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The baseline of bench/push_bench.sh: a raw copy of a tree over a unix socket, with no
 * encryption, no checks and no staging. A sender walks SRC (sorted names, like sandbox-ctl
 * push), reads each file and writes a plain record to the socket (path length, path, size,
 * data); a forked reader creates each directory and file under DEST (which must not exist)
 * and writes the data into it, then acknowledges. Prints the seconds from the start of the walk
 * to the acknowledgement, the entries and bytes copied, and the CPU seconds of both ends.
 * --reader-cpu N keeps the reader on CPU N (the sender stays where its caller put it, `taskset`
 * in bench/push_bench.sh): the two ends on CPUs of their own, as the bench places the push's.
 *
 *   push_raw [--reader-cpu N] SRC DEST
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define PATH_MAX_LEN 4096

struct rec {
	uint32_t path_len;
	uint32_t is_dir;
	uint64_t size;
};

static void die(const char *what)
{
	fprintf(stderr, "push_raw: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_sec(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write");
		p += n;
		len -= (size_t)n;
	}
}

/* Read exactly len bytes; false at a clean end of stream before the first byte. */
static bool read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read");
		if (n == 0) {
			if (got == 0)
				return false;
			errno = EPROTO;
			die("truncated stream");
		}
		got += (size_t)n;
	}
	return true;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t entries, bytes;

static void send_tree(int sock, int dirfd, const char *rel, uint8_t *buf)
{
	DIR *d = fdopendir(dirfd);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		die("fdopendir");
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap &&
		    !(names = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*names))))
			die("realloc");
		names[n++] = strdup(de->d_name);
	}
	qsort(names, n, sizeof(*names), compare_names);
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX_LEN];
		struct stat st;
		struct rec r;
		int len = rel ? snprintf(path, sizeof(path), "%s/%s", rel, names[i])
		              : snprintf(path, sizeof(path), "%s", names[i]);

		if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			die("fstatat");
		r = (struct rec){.path_len = (uint32_t)len, .is_dir = S_ISDIR(st.st_mode)};
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			if (sub < 0)
				die("openat");
			write_all(sock, &r, sizeof(r));
			write_all(sock, path, (size_t)len);
			entries++;
			send_tree(sock, sub, path, buf);
		} else if (S_ISREG(st.st_mode)) {
			int fd = openat(dirfd, names[i], O_RDONLY | O_NOFOLLOW);
			uint64_t left = (uint64_t)st.st_size;
			if (fd < 0)
				die("openat");
			r.size = left;
			write_all(sock, &r, sizeof(r));
			write_all(sock, path, (size_t)len);
			while (left > 0) {
				ssize_t got = read(fd, buf, left > CHUNK ? CHUNK : left);
				if (got <= 0)
					die("read a file");
				write_all(sock, buf, (size_t)got);
				left -= (uint64_t)got;
			}
			close(fd);
			entries++;
			bytes += (uint64_t)st.st_size;
		}
		free(names[i]);
	}
	free(names);
	closedir(d);
}

/* The reader: records from sock, entries under dest_fd. */
static void receive_tree(int sock, int dest_fd)
{
	static uint8_t buf[CHUNK];
	char path[PATH_MAX_LEN + 1];
	struct rec r;

	while (read_all(sock, &r, sizeof(r))) {
		if (r.path_len == 0 || r.path_len > PATH_MAX_LEN) {
			errno = EPROTO;
			die("bad record");
		}
		read_all(sock, path, r.path_len);
		path[r.path_len] = '\0';
		if (r.is_dir) {
			if (mkdirat(dest_fd, path, 0755) < 0)
				die("mkdirat");
			continue;
		}
		int fd = openat(dest_fd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
		if (fd < 0)
			die("create a file");
		for (uint64_t left = r.size; left > 0;) {
			size_t want = left > CHUNK ? CHUNK : (size_t)left;
			ssize_t n = read(sock, buf, want);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				die("read data");
			write_all(fd, buf, (size_t)n);
			left -= (uint64_t)n;
		}
		if (close(fd) < 0)
			die("close");
	}
	write_all(sock, "y", 1);
}

/* A connected pair over a unix socket bound in a private directory. */
static void unix_pair(int sv[2])
{
	char dir[] = "/tmp/push-raw-XXXXXX";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int lfd;

	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0)
		die("unix socket");
	sv[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* The sender's buffer as sandbox-ctl sets it (host/connect_unix.c): the same transport. */
	if (sv[0] >= 0 &&
	    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &(int){4 * 1024 * 1024}, sizeof(int)) < 0)
		(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &(int){4 * 1024 * 1024},
		                 sizeof(int));
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	sv[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (sv[1] < 0)
		die("accept");
	close(lfd);
	unlink(sa.sun_path);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	static uint8_t buf[CHUNK];
	struct rusage self, child;
	int sv[2], src_fd, status;
	double t0;
	char ack;
	pid_t pid;
	int reader_cpu = -1;

	if (argc == 5 && strcmp(argv[1], "--reader-cpu") == 0) {
		char *end;
		long n = strtol(argv[2], &end, 10);
		if (*argv[2] == '\0' || *end != '\0' || n < 0 || n >= CPU_SETSIZE) {
			fprintf(stderr, "push_raw: --reader-cpu %s: not a CPU number\n", argv[2]);
			return 2;
		}
		reader_cpu = (int)n;
		argv += 2;
		argc -= 2;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: push_raw [--reader-cpu N] SRC DEST\n");
		return 2;
	}
	t0 = now();
	if (mkdir(argv[2], 0755) < 0)
		die(argv[2]);
	unix_pair(sv);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int dest_fd;

		if (reader_cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(reader_cpu, &set);
			if (sched_setaffinity(0, sizeof(set), &set) < 0) {
				fprintf(stderr, "push_raw: cannot run the reader on CPU %d: %s\n",
				        reader_cpu, strerror(errno));
				_exit(1);
			}
		}
		dest_fd = open(argv[2], O_RDONLY | O_DIRECTORY);
		if (dest_fd < 0)
			die(argv[2]);
		close(sv[0]);
		receive_tree(sv[1], dest_fd);
		_exit(0);
	}
	close(sv[1]);
	src_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (src_fd < 0)
		die(argv[1]);
	send_tree(sv[0], src_fd, NULL, buf);
	shutdown(sv[0], SHUT_WR);
	if (read(sv[0], &ack, 1) != 1 || ack != 'y') {
		errno = EPROTO;
		die("the reader did not acknowledge");
	}
	waitpid(pid, &status, 0);
	t0 = now() - t0;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &child);
	printf("%.6f %llu %llu %.6f\n", t0, (unsigned long long)entries, (unsigned long long)bytes,
	       tv_sec(self.ru_utime) + tv_sec(self.ru_stime) + tv_sec(child.ru_utime) +
	           tv_sec(child.ru_stime));
	return 0;
}
