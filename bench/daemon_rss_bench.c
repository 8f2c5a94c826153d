/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The idle daemon's resident memory (docs/daemon.md, "Memory"): `sandbox-agent serve` on a unix
 * socket in a directory of its own, its VmRSS (with the anonymous and file-backed parts) once
 * it listens, then with 1 and with 4 idle connections, and after 100 more came and went. Each
 * connection is a host that did what sandbox-ctl does before it waits on a followed stream: the
 * handshake, the guest's hello, one `status` request answered; then it holds the connection open
 * and sends nothing.
 *
 *   daemon_rss_bench [--agent PATH] [--settle MS]
 *
 * Goals (issue 16): <= 1 MiB idle, at most 1 MiB more per idle connection. Needs root (the
 * daemon's unix socket takes uid 0 peers only). Stops only the daemon it started, by its pid.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "file.h"
#include "frame_io.h"
#include "keys.h"
#include "msg.h"

#define TIMEOUT_MS 10000
#define CONNS_MAX 4
#define CHURN 100
#define GOAL_IDLE_KIB 1024
#define GOAL_PER_CONN_KIB 1024

struct rss {
	long total, anon, file; /* KiB */
};

struct host_conn {
	struct frame_io *io;
	struct channel *ch;
	int fd;
};

static char dir[] = "/tmp/daemon-rss-bench.XXXXXX";
static pid_t daemon_pid = -1;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* The daemon this program started, by its pid, then its directory. */
static void cleanup(void)
{
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
		daemon_pid = -1;
	}
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

_noreturn_ static void die(const char *what, const struct err *e)
{
	fprintf(stderr, "daemon_rss_bench: %s: %s\n", what, e ? e->msg : strerror(errno));
	cleanup();
	exit(1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long status_kib(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static struct rss rss_of(pid_t pid)
{
	char path[64], buf[4096];
	struct rss r;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path, NULL);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		die(path, NULL);
	buf[n] = '\0';
	r.total = status_kib(buf, "VmRSS:");
	r.anon = status_kib(buf, "RssAnon:");
	r.file = status_kib(buf, "RssFile:");
	return r;
}

static void start_daemon(const char *agent, const char *sock)
{
	char ak[256], key[256], state[256], logf[256];

	snprintf(ak, sizeof(ak), "%s/authorized_keys", dir);
	snprintf(key, sizeof(key), "%s/guest_key", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(logf, sizeof(logf), "%s/daemon.log", dir);
	daemon_pid = fork();
	if (daemon_pid < 0)
		die("fork", NULL);
	if (daemon_pid == 0) {
		int fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 2) < 0 || dup2(fd, 1) < 0)
			_exit(127);
		execl(agent, agent, "serve", "--unix", sock, "--authorized-keys", ak,
		      "--authorized-keys-dir", "", "--key", key, "--state-dir", state,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;
		int status;

		if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode))
			return;
		if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			fprintf(stderr,
			        "daemon_rss_bench: %s serve exited (status %d); its log: %s\n",
			        agent, status, logf);
			exit(1);
		}
		sleep_ms(25);
	}
	errno = ETIMEDOUT;
	die("waiting for the daemon's socket", NULL);
}

/* One host: handshake, hello, one status request answered; the connection stays open. */
static void host_connect(struct host_conn *hc, const char *sock, const struct keypair *host_key,
                         const uint8_t guest_pk[KEYS_PUBLIC_LEN])
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	bool answered = false;
	struct err e;
	struct msg m;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	hc->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (hc->fd < 0 || connect(hc->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect", NULL);
	if (frame_io_new(hc->fd, &hc->io, &e) < 0 ||
	    channel_handshake_host(hc->io, host_key, guest_pk, TIMEOUT_MS, &hc->ch, &e) < 0)
		die("handshake", &e);
	m = (struct msg){.type = MSG_STATUS, .flags = MSG_F_END, .stream = 1};
	m.json = json_object_new_object();
	json_object_object_add(m.json, "app_dir", json_object_new_string(dir));
	if (channel_send(hc->ch, &m, TIMEOUT_MS, &e) < 0)
		die("sending status", &e);
	msg_dispose(&m);
	while (!answered) {
		int r = channel_recv(hc->ch, &m, TIMEOUT_MS, &e);

		if (r < 0)
			die("reading the daemon's reply", &e);
		if (r == 0) {
			errno = ECONNRESET;
			die("the daemon closed the connection", NULL);
		}
		answered = m.stream == 1 && (m.flags & MSG_F_END);
		msg_dispose(&m);
	}
}

static void host_disconnect(struct host_conn *hc)
{
	struct err e;

	channel_close(hc->ch, TIMEOUT_MS, &e);
	channel_free(hc->ch);
	frame_io_free(hc->io);
	close(hc->fd);
}

static void row(const char *what, struct rss r)
{
	printf("  %-22s %6ld KiB  (anonymous %ld, file-backed %ld)\n", what, r.total, r.anon,
	       r.file);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"agent", required_argument, NULL, 'a'},
	    {"settle", required_argument, NULL, 's'},
	    {0},
	};
	const char *agent = "build/sandbox-agent";
	struct host_conn conns[CONNS_MAX];
	struct keypair *host_key, *guest_key;
	struct rss idle, one, four, after;
	char path[256], sock[256], *line;
	long settle = 300;
	struct err e;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'a')
			agent = optarg;
		else if (c == 's')
			settle = strtol(optarg, NULL, 10);
		else
			return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr,
		        "daemon_rss_bench: needs root (the daemon takes uid 0 peers only)\n");
		return 2;
	}
	if (!mkdtemp(dir))
		die("mkdtemp", NULL);
	atexit(cleanup);
	/* The host's key, authorized; the guest's key, made here so its public half is known. */
	if (keys_sodium_init(&e) < 0 || keys_generate(&host_key, &e) < 0 ||
	    keys_generate(&guest_key, &e) < 0)
		die("keys", &e);
	line = keys_format_public(host_key->pk, "bench");
	snprintf(path, sizeof(path), "%s/authorized_keys", dir);
	if (!line ||
	    file_write_replace(path, line, strlen(line), 0600, (uid_t)-1, (gid_t)-1, &e) < 0)
		die("authorized_keys", &e);
	free(line);
	snprintf(path, sizeof(path), "%s/guest_key", dir);
	if (keys_save(guest_key, path, &e) < 0)
		die("guest key", &e);
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);

	start_daemon(agent, sock);
	sleep_ms(settle);
	idle = rss_of(daemon_pid);
	host_connect(&conns[0], sock, host_key, guest_key->pk);
	sleep_ms(settle);
	one = rss_of(daemon_pid);
	for (int i = 1; i < CONNS_MAX; i++)
		host_connect(&conns[i], sock, host_key, guest_key->pk);
	sleep_ms(settle);
	four = rss_of(daemon_pid);

	for (int i = 0; i < CONNS_MAX; i++)
		host_disconnect(&conns[i]);
	/* Connections come and go: what stays after CHURN more, each closed. */
	for (int i = 0; i < CHURN; i++) {
		struct host_conn hc;

		host_connect(&hc, sock, host_key, guest_key->pk);
		host_disconnect(&hc);
	}
	sleep_ms(settle);
	after = rss_of(daemon_pid);
	printf("%s serve on a unix socket, resident (VmRSS):\n", agent);
	row("idle", idle);
	row("1 idle connection", one);
	row("4 idle connections", four);
	row("after 100 more, closed", after);
	printf("  idle %ld KiB (goal <= %d KiB): %s\n", idle.total, GOAL_IDLE_KIB,
	       idle.total <= GOAL_IDLE_KIB ? "met" : "NOT met");
	printf("  per idle connection: %ld KiB for the first, %ld KiB each over 4 (goal <= %d "
	       "KiB): %s\n",
	       one.total - idle.total, (four.total - idle.total) / CONNS_MAX, GOAL_PER_CONN_KIB,
	       one.total - idle.total <= GOAL_PER_CONN_KIB &&
	               (four.total - idle.total) / CONNS_MAX <= GOAL_PER_CONN_KIB
	           ? "met"
	           : "NOT met");
	printf("figure: idle daemon (`%s serve --unix`) resident memory; per idle connection | "
	       "%ld KiB (%ld KiB anonymous, the rest the binary's own pages); %ld KiB once 100 "
	       "connections came and went; +%ld KiB for the first connection, +%ld each over 4 | "
	       "<= 1 MiB; <= +1 MiB\n",
	       agent, idle.total, idle.anon, after.total, one.total - idle.total,
	       (four.total - idle.total) / CONNS_MAX);
	keys_free(host_key);
	keys_free(guest_key);
	return 0;
}
