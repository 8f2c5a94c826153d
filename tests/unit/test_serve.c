/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sandbox-agent serve` as a real process (build/sandbox-agent next to this test's binary),
 * driven by the small host in test_serve_client.h over a unix socket, stdin/stdout (a
 * socketpair, and two pipes) and a pty standing in for the virtio-serial port. The boots are
 * real boots of tests/data/pyapp. Never AF_VSOCK here (docs/test-machines.md).
 */
#include <check.h>
#include <arpa/inet.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>

#include "test_serve_client.h"

#define BOOT_SECRET "boot-secret-7f3a9c1e5b2d"
#define FETCH_SECRET "fetch-secret-2d8e4a6c0f9b"

static char tmp[256];
static char agent[PATH_MAX];
static char root[PATH_MAX]; /* the source tree: tests/data/pyapp is there */
static char sock_path[512];
static char ws_app[512]; /* the app directory the tests push and boot */
static struct keypair *host_key, *other_key;
static pid_t daemon_pid = -1;
static int listen_port;

static void sh(const char *fmt, ...) _printf_(1, 2);
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

static int free_port(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	socklen_t len = sizeof(ss);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;

	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sin, sizeof(*sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	port = ntohs(sin->sin_port);
	close(fd);
	return port;
}

static void write_pub(const char *path, const struct keypair *kp)
{
	char *line = keys_format_public(kp->pk, "test host");
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", line);
	fclose(f);
	chmod(path, 0644);
	free(line);
}

static void setup(void)
{
	char self[PATH_MAX];
	struct err err;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	snprintf(agent, sizeof(agent), "%s/../sandbox-agent", dirname(self));
	ck_assert_msg(access(agent, X_OK) == 0, "%s is missing: make first", agent);
	{
		char up[PATH_MAX + 16];
		snprintf(up, sizeof(up), "%s/../..", self);
		ck_assert_ptr_nonnull(realpath(up, root));
	}
	snprintf(tmp, sizeof(tmp), "/tmp/test_serve.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	chmod(tmp, 0755); /* the app runs as the sandbox user */
	snprintf(sock_path, sizeof(sock_path), "%s/agent.sock", tmp);
	snprintf(ws_app, sizeof(ws_app), "%s/ws/app", tmp);
	sh("mkdir -p %s/ws %s/authorized_keys.d && chmod 755 %s/ws %s/authorized_keys.d", tmp, tmp,
	   tmp, tmp);
	ck_assert_int_eq(keys_generate(&host_key, &err), 0);
	ck_assert_int_eq(keys_generate(&other_key, &err), 0);
	{
		char path[600];
		snprintf(path, sizeof(path), "%s/authorized_keys", tmp);
		write_pub(path, host_key);
	}
	listen_port = free_port();
	daemon_pid = -1;
}

static void stop_app(void)
{
	char cmd[1024];

	/* Best effort: whatever a failed test left running. */
	snprintf(cmd, sizeof(cmd), "%s/sandbox-app-boot --stop --grace 1000 %s >/dev/null 2>&1",
	         dirname(strdupa(agent)), ws_app);
	(void)!system(cmd);
}

static void kill_daemon(void)
{
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	daemon_pid = -1;
}

static void teardown(void)
{
	kill_daemon();
	stop_app();
	keys_free(host_key);
	keys_free(other_key);
	host_key = other_key = NULL;
	if (!getenv("KEEP_TMP"))
		sh("rm -rf %s", tmp);
}

/* The daemon's command line; extra arguments replace the unix transport when given. */
static void daemon_argv(char **argv, size_t cap, const char *transport, const char *arg)
{
	static char ak[600], akd[600], key[600], state[600], listen[64], cache[600];
	size_t i = 0;

	snprintf(ak, sizeof(ak), "%s/authorized_keys", tmp);
	snprintf(akd, sizeof(akd), "%s/authorized_keys.d", tmp);
	snprintf(key, sizeof(key), "%s/guest_key", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", listen_port);
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	argv[i++] = agent;
	argv[i++] = "serve";
	argv[i++] = (char *)transport;
	if (arg)
		argv[i++] = (char *)arg;
	argv[i++] = "--authorized-keys";
	argv[i++] = ak;
	argv[i++] = "--authorized-keys-dir";
	argv[i++] = akd;
	argv[i++] = "--key";
	argv[i++] = key;
	argv[i++] = "--state-dir";
	argv[i++] = state;
	argv[i++] = "--listen";
	argv[i++] = listen;
	argv[i++] = "--grace";
	argv[i++] = "1000";
	argv[i++] = "--cache-root";
	argv[i++] = cache;
	argv[i++] = "--handshake-timeout";
	argv[i++] = "2000";
	argv[i++] = "-v";
	argv[i] = NULL;
	ck_assert_uint_lt(i, cap);
}

/* Start the daemon with stdin/stdout as given (-1: /dev/null) and wait for its READY=1. */
static pid_t spawn_daemon(const char *transport, const char *arg, int in, int out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *argv[40], buf[256], logpath[600];
	struct pollfd p;
	int nfd;
	pid_t pid;
	ssize_t n;

	daemon_argv(argv, ELEMENTSOF(argv), transport, arg);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", tmp);
	unlink(sa.sun_path);
	nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(nfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(logpath, sizeof(logpath), "%s/daemon.log", tmp);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int log = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		dup2(in >= 0 ? in : nul, 0);
		dup2(out >= 0 ? out : nul, 1);
		dup2(log, 2);
		setenv("NOTIFY_SOCKET", sa.sun_path, 1);
		setenv("INVOCATION_ID", "0123456789abcdef", 1);
		execv(agent, argv);
		_exit(127);
	}
	/* Not a timing assertion: a bound on waiting for the daemon to say it is ready. */
	p = (struct pollfd){.fd = nfd, .events = POLLIN};
	ck_assert_msg(poll(&p, 1, 20000) == 1, "the daemon never sent READY=1");
	n = recv(nfd, buf, sizeof(buf) - 1, 0);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_ptr_nonnull(strstr(buf, "READY=1"));
	close(nfd);
	return pid;
}

static void start_daemon(void)
{
	daemon_pid = spawn_daemon("--unix", sock_path, -1, -1);
}

static void connect_ok(struct client *c, const struct keypair *key)
{
	ssize_t i;

	ck_assert_msg(client_connect(c, sock_path, key) == 0, "%s", c->err.msg);
	i = client_wait_type(c, 0, MSG_HELLO, 0, CLIENT_TIMEOUT_MS);
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(got_string(&c->inbox[i], "agent"), "sandbox-agent");
	client_send(c, MSG_HELLO, 0, 0, jobj("client", "test_serve", "version", "0", NULL), NULL,
	            0);
}

static void expect_ok(const struct got *g)
{
	ck_assert_ptr_nonnull(g);
	ck_assert_msg(g->type == MSG_OK, "expected ok, got %s: %s", msg_type_name(g->type),
	              g->json ? json_object_to_json_string(g->json) : "");
}

static void expect_refused(const struct got *g)
{
	ck_assert_ptr_nonnull(g);
	ck_assert_msg(g->type == MSG_ERROR, "expected an error, got %s", msg_type_name(g->type));
	ck_assert_str_eq(got_string(g, "class"), "refused");
}

/* An app source: the pyapp with setup steps of our choosing. */
static void make_src(const char *name, const char *setup)
{
	sh("rm -rf %s/%s && cp -a %s/tests/data/pyapp %s/%s", tmp, name, root, tmp, name);
	sh("printf 'setup: %s\\nmanifest: /usr/bin/python3 manifest.py\\nstart: exec "
	   "/usr/bin/python3 "
	   "server.py\\n' >%s/%s/.activeagents/sandbox.yml",
	   setup, tmp, name);
}

static json_object *app_req(void)
{
	return jobj("app_dir", ws_app, NULL);
}

static const char *status_of(struct client *c, struct got **ret)
{
	struct got *g = client_request(c, MSG_STATUS, app_req(), NULL, 0);

	expect_ok(g);
	if (ret)
		*ret = g;
	return got_string(g, "status");
}

/* Run a boot on a new stream; the result (END) and the stream's id. */
static struct got *boot(struct client *c, json_object *req, uint32_t *ret_stream)
{
	uint32_t st = client_send(c, MSG_BOOT_START, MSG_F_END, NEW_STREAM, req, NULL, 0);
	ssize_t i = client_wait_end(c, st, CLIENT_TIMEOUT_MS);

	ck_assert_msg(i >= 0, "no boot result: %s", c->err.msg);
	if (ret_stream)
		*ret_stream = st;
	return &c->inbox[i];
}

/* What the daemon sends for req, the first message at offset expect. */
static char *logs_read_req(struct client *c, json_object *req, int64_t expect)
{
	uint32_t st;
	ssize_t end;
	size_t len = 0;
	char *out = malloc(1);

	st = client_send(c, MSG_LOGS, 0, NEW_STREAM, req, NULL, 0);
	end = client_wait_end(c, st, CLIENT_TIMEOUT_MS);
	ck_assert_msg(end >= 0, "logs never ended: %s", c->err.msg);
	for (size_t i = 0; i <= (size_t)end; i++) {
		struct got *g = &c->inbox[i];
		if (g->stream != st)
			continue;
		ck_assert_int_eq(g->type, MSG_LOGS_DATA);
		/* Offsets follow each other: nothing lost, nothing twice. */
		ck_assert_int_eq(got_int(g, "offset"), expect);
		expect += (int64_t)g->len;
		out = realloc(out, len + g->len + 1);
		memcpy(out + len, g->data, g->len);
		len += g->len;
	}
	out[len] = '\0';
	return out;
}

/* The whole of a log, or from offset, as the daemon sends it. */
static char *logs_read(struct client *c, const char *log, int64_t offset, bool follow)
{
	json_object *req = jobj("app_dir", ws_app, "log", log, NULL);

	json_object_object_add(req, "offset", json_object_new_int64(offset));
	json_object_object_add(req, "follow", json_object_new_boolean(follow));
	return logs_read_req(c, req, offset);
}

/* The last lines of a log: what the daemon sends for "tail", which must start at expect. */
static char *logs_tail(struct client *c, const char *log, int64_t lines, int64_t expect)
{
	json_object *req = jobj("app_dir", ws_app, "log", log, NULL);

	json_object_object_add(req, "tail", json_object_new_int64(lines));
	return logs_read_req(c, req, expect);
}

/* Every regular file below dir, searched for needle. */
static bool found_in_files(const char *dir, const char *needle)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "grep -rqF -- '%s' %s 2>/dev/null", needle, dir);
	return system(cmd) == 0;
}

static bool found_in_file(const char *path, const char *needle)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "grep -qF -- '%s' %s 2>/dev/null", needle, path);
	return system(cmd) == 0;
}

/* In the argv of any process, or (environ) in the environment of any but skip_pid's group. */
static bool found_in_procs(const char *needle, const char *what, pid_t only_pid)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool found = false;

	while (d && (de = readdir(d)) && !found) {
		char path[300], buf[65536];
		ssize_t n;
		int fd;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (only_pid > 0 && atoi(de->d_name) != only_pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/%s", de->d_name, what);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		close(fd);
		found = n > 0 && memmem(buf, (size_t)n, needle, strlen(needle));
	}
	if (d)
		closedir(d);
	return found;
}

static pid_t server_pid(void)
{
	char path[600];
	json_object *o, *v;
	pid_t pid = -1;

	snprintf(path, sizeof(path), "%s/ws/.sandbox/state.json", tmp);
	o = json_object_from_file(path);
	if (o && json_object_object_get_ex(o, "server_pid", &v))
		pid = json_object_get_int(v);
	json_object_put(o);
	return pid;
}

static void put_secrets(struct client *c)
{
	json_object *req = jobj("name", "SERVE_BOOT_TOKEN", "scope", "boot", NULL);
	struct got *g;

	g = client_request(c, MSG_SECRETS_PUT, req, BOOT_SECRET, strlen(BOOT_SECRET));
	expect_ok(g);
	ck_assert_str_eq(got_string(g, "name"), "SERVE_BOOT_TOKEN");
	ck_assert_str_eq(got_string(g, "replaced"), "false");
	req = jobj("name", "SERVE_FETCH_TOKEN", "scope", "fetch", NULL);
	expect_ok(client_request(c, MSG_SECRETS_PUT, req, FETCH_SECRET, strlen(FETCH_SECRET)));
	/* A bad scope is refused, and says so. */
	req = jobj("name", "X", "scope", "everywhere", NULL);
	expect_refused(client_request(c, MSG_SECRETS_PUT, req, "v", 1));
}

/* secrets, a tree, a boot to ready with its events, runtime.json, logs, status, stop. */
static void full_boot(struct client *c)
{
	struct got *g;
	uint32_t st;
	bool saw_setup = false, saw_ready = false, saw_log = false;
	char *all, *tail;
	size_t half;
	pid_t srv;

	put_secrets(c);
	make_src("src", "[\"echo setting up\", \"echo token=$SERVE_BOOT_TOKEN\"]");
	{
		char src[600];
		snprintf(src, sizeof(src), "%s/src", tmp);
		g = client_push_tree(c, ws_app, src);
	}
	expect_ok(g);
	ck_assert_str_eq(got_string(g, "swapped"), "true");

	g = boot(c, app_req(), &st);
	ck_assert_int_eq(g->type, MSG_BOOT_RESULT);
	ck_assert_msg(strcmp(got_string(g, "status"), "ready") == 0, "boot failed: %s",
	              got_string(g, "reason"));
	ck_assert_int_eq(got_int(g, "exit"), 0);
	ck_assert_ptr_null(strstr(json_object_to_json_string(g->json), "mcp_token"));
	for (size_t i = 0; i < c->n; i++) {
		struct got *e = &c->inbox[i];
		if (e->stream != st)
			continue;
		if (e->type == MSG_BOOT_EVENT && strcmp(got_string(e, "phase"), "setup") == 0 &&
		    strcmp(got_string(e, "status"), "started") == 0)
			saw_setup = true;
		if (e->type == MSG_BOOT_EVENT && strcmp(got_string(e, "phase"), "ready") == 0)
			saw_ready = true;
		if (e->type == MSG_BOOT_LOG && memmem(e->data, e->len, "setting up", 10)) {
			saw_log = true;
			ck_assert_str_eq(got_string(e, "log"), "setup");
		}
		/* Scrubbed before it left the guest. */
		ck_assert_ptr_null(memmem(e->data, e->len, BOOT_SECRET, strlen(BOOT_SECRET)));
	}
	ck_assert(saw_setup);
	ck_assert(saw_ready);
	ck_assert(saw_log);

	g = client_request(c, MSG_RUNTIME_READ, app_req(), NULL, 0);
	expect_ok(g);
	{
		json_object *rt, *v;
		ck_assert(json_object_object_get_ex(g->json, "runtime", &rt));
		ck_assert(json_object_object_get_ex(rt, "mcp_path", &v));
		ck_assert_str_eq(json_object_get_string(v), "/mcp");
		ck_assert(json_object_object_get_ex(rt, "mcp_token", &v));
	}

	all = logs_read(c, "setup", 0, false);
	ck_assert_ptr_nonnull(strstr(all, "setting up"));
	ck_assert_ptr_nonnull(strstr(all, "token=[REDACTED]"));
	half = strlen(all) / 2;
	tail = logs_read(c, "setup", (int64_t)half, false);
	ck_assert_str_eq(tail, all + half);
	free(tail);
	/* The last two lines, and more lines than the log has: all of it. */
	{
		size_t n = strlen(all), start;
		ck_assert(n > 2 && all[n - 1] == '\n');
		start = n - 1;
		for (int lines = 0; start > 0; start--)
			if (all[start - 1] == '\n' && ++lines == 2)
				break;
		tail = logs_tail(c, "setup", 2, (int64_t)start);
		ck_assert_str_eq(tail, all + start);
		free(tail);
		tail = logs_tail(c, "setup", 100000, 0);
		ck_assert_str_eq(tail, all);
		free(tail);
		tail = logs_tail(c, "setup", 0, (int64_t)n);
		ck_assert_str_eq(tail, "");
		free(tail);
	}
	free(all);
	/* A log that does not exist: refused, naming the ones that do. */
	{
		json_object *req = jobj("app_dir", ws_app, "log", "setpu", NULL);
		char want[700];
		g = client_request(c, MSG_LOGS, req, NULL, 0);
		expect_refused(g);
		ck_assert_int_eq(got_int(g, "code"), ENOENT);
		snprintf(want, sizeof(want), "no log named 'setpu' for %s: its logs are ", ws_app);
		ck_assert_msg(strstr(got_string(g, "msg"), want), "%s", got_string(g, "msg"));
		ck_assert_msg(strstr(got_string(g, "msg"), "setup"), "%s", got_string(g, "msg"));
	}

	ck_assert_str_eq(status_of(c, &g), "ready");
	ck_assert_int_eq(got_int(g, "port") > 0, 1);

	/* The boot secret reached the app, by name; nothing else of ours did. */
	srv = server_pid();
	ck_assert_int_gt(srv, 1);
	ck_assert(found_in_procs("SERVE_BOOT_TOKEN=" BOOT_SECRET, "environ", srv));
	ck_assert(!found_in_procs(FETCH_SECRET, "environ", -1));
	ck_assert(!found_in_procs("NOTIFY_SOCKET=", "environ", srv));
	ck_assert(!found_in_procs("INVOCATION_ID=", "environ", srv));
	/* And no secret is in any command line, state file, log or the daemon's own log. */
	ck_assert(!found_in_procs(BOOT_SECRET, "cmdline", -1));
	ck_assert(!found_in_procs(FETCH_SECRET, "cmdline", -1));
	{
		char path[600];
		snprintf(path, sizeof(path), "%s/ws", tmp);
		ck_assert(!found_in_files(path, BOOT_SECRET));
		ck_assert(!found_in_files(path, FETCH_SECRET));
		snprintf(path, sizeof(path), "%s/state", tmp);
		ck_assert(!found_in_files(path, BOOT_SECRET));
		snprintf(path, sizeof(path), "%s/daemon.log", tmp);
		ck_assert(!found_in_file(path, BOOT_SECRET));
		ck_assert(!found_in_file(path, FETCH_SECRET));
		/* The host key's fingerprint is logged with the connection. */
		{
			char fp[KEYS_FINGERPRINT_MAX];
			keys_fingerprint(host_key->pk, fp);
			ck_assert(found_in_file(path, fp));
		}
	}

	g = client_request(c, MSG_STOP, app_req(), NULL, 0);
	expect_ok(g);
	ck_assert_str_eq(got_string(g, "stopped"), "true");
	ck_assert_str_eq(status_of(c, NULL), "stopped");
	ck_assert(!found_in_procs("SERVE_BOOT_TOKEN=", "environ", -1));
	/* Its runtime.json is stale now: the runtime is gone, and the reply says why. */
	g = client_request(c, MSG_RUNTIME_READ, app_req(), NULL, 0);
	ck_assert_int_eq(g->type, MSG_ERROR);
	ck_assert_int_eq(got_int(g, "code"), ENOENT);
	ck_assert_str_eq(got_string(g, "msg"), "the app's runtime is gone: its server is not "
	                                       "running (last boot: stopped)");
	/* A tail reaches back into the rotated part; a last line without its newline counts. */
	sh("printf 'a\\nb\\n' >%s/ws/.sandbox/logs/rot.log.1 && printf 'c\\nd' "
	   ">%s/ws/.sandbox/logs/rot.log",
	   tmp, tmp);
	{
		static const char *const want[] = {"",        "d",          "c\nd",
		                                   "b\nc\nd", "a\nb\nc\nd", "a\nb\nc\nd"};
		for (size_t i = 0; i < ELEMENTSOF(want); i++) {
			char *got = logs_tail(c, "rot", (int64_t)i, 7 - (int64_t)strlen(want[i]));
			ck_assert_msg(strcmp(got, want[i]) == 0, "tail %zu: \"%s\"", i, got);
			free(got);
		}
	}
}

START_TEST(test_unix_full_boot)
{
	struct client c;

	start_daemon();
	connect_ok(&c, host_key);
	full_boot(&c);
	client_free(&c);
}
END_TEST

/* Over stdin/stdout, as under `incus exec ... sandbox-agent serve --stdio`: one socket. */
START_TEST(test_stdio_full_boot)
{
	struct client c;
	int sp[2], status;
	ssize_t i;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	daemon_pid = spawn_daemon("--stdio", NULL, sp[1], sp[1]);
	close(sp[1]);
	ck_assert_msg(client_start(&c, sp[0], sp[0], host_key) == 0, "%s", c.err.msg);
	i = client_wait_type(&c, 0, MSG_HELLO, 0, CLIENT_TIMEOUT_MS);
	ck_assert_int_ge(i, 0);
	full_boot(&c);
	/* The session ends: so does the daemon, cleanly. */
	channel_close(c.ch, 1000, &c.err);
	ck_assert_int_eq(client_pull(&c, 10000), 0);
	ck_assert_int_eq(waitpid(daemon_pid, &status, 0), daemon_pid);
	daemon_pid = -1;
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	client_free(&c);
}
END_TEST

/* Two pipes, as most exec transports give them. */
START_TEST(test_stdio_pipes)
{
	struct client c;
	int to[2], from[2], status;
	struct got *g;
	json_object *ping = json_object_new_object();

	ck_assert_int_eq(pipe2(to, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(from, O_CLOEXEC), 0);
	daemon_pid = spawn_daemon("--stdio", NULL, to[0], from[1]);
	close(to[0]);
	close(from[1]);
	ck_assert_msg(client_start(&c, from[0], to[1], host_key) == 0, "%s", c.err.msg);
	ck_assert_int_ge(client_wait_type(&c, 0, MSG_HELLO, 0, CLIENT_TIMEOUT_MS), 0);
	json_object_object_add(ping, "t", json_object_new_int(42));
	client_send(&c, MSG_PING, 0, 0, ping, NULL, 0);
	{
		ssize_t i = client_wait_type(&c, 0, MSG_PONG, 0, CLIENT_TIMEOUT_MS);
		ck_assert_msg(i >= 0, "no pong: %s", c.err.msg);
		g = &c.inbox[i];
	}
	ck_assert_int_eq(got_int(g, "t"), 42);
	ck_assert_str_eq(status_of(&c, NULL), "none");
	/* An unknown operation is answered, not fatal. */
	g = client_request(&c, 0x0999, json_object_new_object(), NULL, 0);
	ck_assert_int_eq(g->type, MSG_ERROR);
	ck_assert_int_eq(got_int(g, "code"), EOPNOTSUPP);
	channel_close(c.ch, 1000, &c.err);
	ck_assert_int_eq(client_pull(&c, 10000), 0);
	ck_assert_int_eq(waitpid(daemon_pid, &status, 0), daemon_pid);
	daemon_pid = -1;
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	client_free(&c);
}
END_TEST

/* A key not listed gets nothing: no session, no child process, cut off. */
START_TEST(test_unlisted_key_refused)
{
	struct client c;
	char path[600], buf[64];
	struct pollfd p;
	int fd;

	start_daemon();
	ck_assert_int_lt(client_connect(&c, sock_path, other_key), 0);
	ck_assert_int_eq(c.err.code, EKEYREJECTED);
	client_free(&c);
	/* Nothing ran on its behalf. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", daemon_pid, daemon_pid);
	{
		FILE *f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(fgetc(f), EOF);
		fclose(f);
	}
	/* The refusal is logged with the key's fingerprint. */
	{
		char fp[KEYS_FINGERPRINT_MAX];
		keys_fingerprint(other_key->pk, fp);
		snprintf(path, sizeof(path), "%s/daemon.log", tmp);
		ck_assert(found_in_file(path, fp));
	}
	/* A peer that never completes a handshake is closed at the deadline (2 s here). */
	fd = unix_connect(sock_path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	ck_assert_int_eq(poll(&p, 1, 20000), 1);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 0);
	close(fd);
	/* The daemon still serves the listed key. */
	connect_ok(&c, host_key);
	client_free(&c);
}
END_TEST

START_TEST(test_authorized_keys_dir_live)
{
	struct client c;
	char path[600];

	start_daemon();
	ck_assert_int_lt(client_connect(&c, sock_path, other_key), 0);
	client_free(&c);
	snprintf(path, sizeof(path), "%s/authorized_keys.d/other.pub", tmp);
	write_pub(path, other_key);
	connect_ok(&c, other_key);
	client_free(&c);
	unlink(path);
	ck_assert_int_lt(client_connect(&c, sock_path, other_key), 0);
	ck_assert_int_eq(c.err.code, EKEYREJECTED);
	client_free(&c);
}
END_TEST

static struct got *push_entries(struct client *c, json_object **entries, size_t n)
{
	uint32_t st = client_send(c, MSG_TREE_PUSH_BEGIN, 0, NEW_STREAM, app_req(), NULL, 0);
	json_object *end = json_object_new_object();
	ssize_t i;

	for (size_t k = 0; k < n; k++)
		client_send(c, MSG_TREE_PUSH_ENTRY, 0, st, entries[k], NULL, 0);
	json_object_object_add(end, "entries", json_object_new_int64((int64_t)n));
	json_object_object_add(end, "bytes", json_object_new_int64(0));
	client_send(c, MSG_TREE_PUSH_END, MSG_F_END, st, end, NULL, 0);
	i = client_wait_end(c, st, CLIENT_TIMEOUT_MS);
	return i < 0 ? NULL : &c->inbox[i];
}

static json_object *entry(const char *path, const char *kind, const char *target)
{
	json_object *e = jobj("path", path, "kind", kind, NULL);

	if (target)
		json_object_object_add(e, "target", json_object_new_string(target));
	if (strcmp(kind, "file") == 0)
		json_object_object_add(e, "size", json_object_new_int(0));
	return e;
}

START_TEST(test_tree_push_escapes)
{
	struct client c;
	json_object *e[2];
	struct got *g;
	char path[600];
	struct stat st;
	struct passwd *pw = getpwnam("sandbox");

	start_daemon();
	connect_ok(&c, host_key);
	make_src("src", "[\"true\"]");
	snprintf(path, sizeof(path), "%s/src", tmp);
	expect_ok(client_push_tree(&c, ws_app, path));

	e[0] = entry("../escape", "file", NULL);
	expect_refused(push_entries(&c, e, 1));
	e[0] = entry("config", "dir", NULL);
	e[1] = entry("config/l", "symlink", "../../../etc");
	expect_refused(push_entries(&c, e, 2));
	e[0] = entry("abs", "symlink", "/etc/shadow");
	expect_refused(push_entries(&c, e, 1));

	/* Nothing of them arrived; the tree pushed before is still there. */
	snprintf(path, sizeof(path), "%s/../escape", ws_app);
	ck_assert_int_lt(lstat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/config", ws_app);
	ck_assert_int_lt(lstat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/server.py", ws_app);
	ck_assert_int_eq(lstat(path, &st), 0);

	/* A normal tree replaces it whole, owned by the run user. */
	e[0] = entry("new.txt", "file", NULL);
	e[1] = entry("link", "symlink", "new.txt");
	g = push_entries(&c, e, 2);
	expect_ok(g);
	ck_assert_int_lt(lstat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/link", ws_app);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(lstat(ws_app, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	if (pw)
		ck_assert_uint_eq(st.st_uid, pw->pw_uid);
	client_free(&c);
}
END_TEST

/*
 * The connection drops mid-boot: the boot goes on; a new connection follows the log to the end
 * while another asks for the status; then the daemon is killed and restarted while the app
 * runs, and the new one still knows the app is ready.
 */
START_TEST(test_reconnect_and_restart)
{
	struct client c, c2;
	uint32_t st;
	char *log, src[600];
	const char *state;

	start_daemon();
	connect_ok(&c, host_key);
	make_src("src", "[\"echo one\", \"sleep 1\", \"echo two\"]");
	snprintf(src, sizeof(src), "%s/src", tmp);
	expect_ok(client_push_tree(&c, ws_app, src));
	st = client_send(&c, MSG_BOOT_START, MSG_F_END, NEW_STREAM, app_req(), NULL, 0);
	ck_assert_int_ge(client_wait_type(&c, st, MSG_BOOT_EVENT, 0, CLIENT_TIMEOUT_MS), 0);
	client_free(&c); /* dropped, no close message */

	connect_ok(&c, host_key);
	connect_ok(&c2, host_key);
	state = status_of(&c2, NULL);
	ck_assert_msg(strcmp(state, "booting") == 0 || strcmp(state, "ready") == 0, "state %s",
	              state);
	log = logs_read(&c, "setup", 0, true);
	ck_assert_ptr_nonnull(strstr(log, "one"));
	ck_assert_ptr_nonnull(strstr(log, "two"));
	free(log);
	ck_assert_str_eq(status_of(&c, NULL), "ready");
	ck_assert_str_eq(status_of(&c2, NULL), "ready");
	client_free(&c);
	client_free(&c2);

	/* A second boot of the app it knows does not write its list of apps again. */
	{
		char apps[600];
		struct stat before, after;

		snprintf(apps, sizeof(apps), "%s/state/apps.json", tmp);
		ck_assert_int_eq(stat(apps, &before), 0);
		connect_ok(&c, host_key);
		st = client_send(&c, MSG_BOOT_START, MSG_F_END, NEW_STREAM, app_req(), NULL, 0);
		ck_assert_int_ge(client_wait_type(&c, st, MSG_BOOT_RESULT, 0, CLIENT_TIMEOUT_MS),
		                 0);
		ck_assert_int_eq(stat(apps, &after), 0);
		ck_assert_uint_eq(before.st_ino, after.st_ino);
		ck_assert_str_eq(status_of(&c, NULL), "ready");
		client_free(&c);
	}

	kill_daemon();
	start_daemon();
	connect_ok(&c, host_key);
	ck_assert_str_eq(status_of(&c, NULL), "ready");
	expect_ok(client_request(&c, MSG_STOP, app_req(), NULL, 0));
	ck_assert_str_eq(status_of(&c, NULL), "stopped");
	client_free(&c);
}
END_TEST

/* A stop while the boot runs ends it (its stream gets the failed result); discard removes it. */
START_TEST(test_stop_mid_boot_and_discard)
{
	struct client c;
	struct got *g;
	json_object *req;
	uint32_t st;
	ssize_t end;
	char src[600], ws[600];
	struct stat sb;

	start_daemon();
	connect_ok(&c, host_key);
	make_src("src", "[\"echo waiting\", \"sleep 60\"]");
	snprintf(src, sizeof(src), "%s/src", tmp);
	expect_ok(client_push_tree(&c, ws_app, src));
	st = client_send(&c, MSG_BOOT_START, MSG_F_END, NEW_STREAM, app_req(), NULL, 0);
	ck_assert_int_ge(client_wait_type(&c, st, MSG_BOOT_LOG, 0, CLIENT_TIMEOUT_MS), 0);
	/* A second boot of the same app meanwhile is refused. */
	expect_refused(client_request(&c, MSG_BOOT_START, app_req(), NULL, 0));
	g = client_request(&c, MSG_STOP, app_req(), NULL, 0);
	expect_ok(g);
	end = client_wait_end(&c, st, CLIENT_TIMEOUT_MS);
	ck_assert_int_ge(end, 0);
	g = &c.inbox[end];
	ck_assert_int_eq(g->type, MSG_BOOT_RESULT);
	ck_assert_str_eq(got_string(g, "status"), "failed");
	ck_assert_str_ne(status_of(&c, NULL), "booting");
	ck_assert(!found_in_procs("sleep 60", "cmdline", -1));

	req = app_req();
	json_object_object_add(req, "discard", json_object_new_boolean(true));
	g = client_request(&c, MSG_STOP, req, NULL, 0);
	expect_ok(g);
	ck_assert_str_eq(got_string(g, "discarded"), "true");
	snprintf(ws, sizeof(ws), "%s/ws", tmp);
	ck_assert_int_lt(lstat(ws, &sb), 0);
	ck_assert_str_eq(status_of(&c, NULL), "none");
	client_free(&c);
}
END_TEST

/* A pty stands in for the virtio-serial port: sessions one after another, garbage between. */
START_TEST(test_serial_sessions)
{
	struct client c;
	struct termios t;
	int master;
	char *slave;

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	slave = ptsname(master);
	ck_assert_ptr_nonnull(slave);
	ck_assert_int_eq(tcgetattr(master, &t), 0);
	cfmakeraw(&t);
	ck_assert_int_eq(tcsetattr(master, TCSANOW, &t), 0);
	daemon_pid = spawn_daemon("--serial", slave, -1, -1);

	for (int round = 0; round < 2; round++) {
		/* Whatever a dropped session left in the pipe is skipped up to the marker. */
		ck_assert_int_eq(write(master, "\x00\x00\x01\x00noise", 9), 9);
		int fd = dup(master);
		ck_assert_msg(client_start(&c, fd, fd, host_key) == 0, "round %d: %s", round,
		              c.err.msg);
		ck_assert_int_ge(client_wait_type(&c, 0, MSG_HELLO, 0, CLIENT_TIMEOUT_MS), 0);
		ck_assert_str_eq(status_of(&c, NULL), "none");
		channel_close(c.ch, 1000, &c.err);
		ck_assert_int_eq(client_pull(&c, 10000), 0);
		client_free(&c);
	}
	close(master);
}
END_TEST

static Suite *serve_suite(void)
{
	Suite *s = suite_create("serve");
	TCase *tc = tcase_create("daemon");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_unlisted_key_refused);
	tcase_add_test(tc, test_authorized_keys_dir_live);
	tcase_add_test(tc, test_stdio_pipes);
	tcase_add_test(tc, test_serial_sessions);
	tcase_add_test(tc, test_tree_push_escapes);
	tcase_add_test(tc, test_unix_full_boot);
	tcase_add_test(tc, test_stdio_full_boot);
	tcase_add_test(tc, test_reconnect_and_restart);
	tcase_add_test(tc, test_stop_mid_boot_and_discard);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (geteuid() != 0 || !getpwnam("sandbox")) {
		/* Boots run apps as the sandbox user, as root would: both are needed. */
		printf("Running suite(s): serve\n0%%: Checks: 0, Failures: 0, Errors: 0\n");
		printf("skipped: needs root and the sandbox user\n");
		return EXIT_SUCCESS;
	}
	sr = srunner_create(serve_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
