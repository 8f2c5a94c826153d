/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled once, linked into every unit test (tests/unit/support/test_ctl_guest.h). */
#include "test_ctl_guest.h"

void fg_report(const struct fg_config *cfg, const char *fmt, ...)
{
	char line[8192];
	va_list ap;
	int n;

	if (cfg->report_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)file_write_all(cfg->report_fd, line, (size_t)n);
}

void fg_log_text(char *buf)
{
	for (int i = 0; i < FG_LOG_LINES; i++)
		snprintf(buf + (size_t)i * FG_LOG_LINE_LEN, FG_LOG_LINE_LEN + 1,
		         "setup line %06d\n", i);
}

int fg_send(struct channel *ch, uint16_t type, uint16_t flags, uint32_t stream,
            struct json_object *json, const void *data, size_t len)
{
	struct msg m = {.type = type,
	                .flags = flags,
	                .stream = stream,
	                .json = json,
	                .data = data,
	                .data_len = len};
	struct err e;
	int r = channel_send(ch, &m, FG_TIMEOUT_MS, &e);

	json_object_put(json);
	return r;
}

struct json_object *fg_obj(const char *json_text)
{
	return json_tokener_parse(json_text);
}

int fg_error(struct channel *ch, uint32_t stream, int code, const char *cls, const char *text)
{
	struct json_object *j = json_object_new_object();

	json_object_object_add(j, "code", json_object_new_int(code));
	json_object_object_add(j, "class", json_object_new_string(cls));
	json_object_object_add(j, "msg", json_object_new_string(text));
	return fg_send(ch, MSG_ERROR, MSG_F_END, stream, j, NULL, 0);
}

int fg_push_msg(struct channel *ch, struct fg_state *st, const struct msg *m)
{
	const struct fg_config *cfg = st->cfg;
	char path[PATH_MAX * 2];
	int64_t v;

	switch (m->type) {
	case MSG_TREE_PUSH_BEGIN:
		st->push_stream = m->stream;
		st->entries = st->bytes = 0;
		st->data_seen = false;
		st->file_fd = -1;
		snprintf(st->staging, sizeof(st->staging), "%s.staging", cfg->tree_dir);
		snprintf(path, sizeof(path), "rm -rf '%s' && mkdir -p '%s'", st->staging,
		         st->staging);
		if (system(path) != 0)
			return fg_error(ch, m->stream, EIO, "failed", "cannot stage");
		fg_report(cfg, "push-begin %s",
		          json_object_to_json_string_ext(m->json, JSON_C_TO_STRING_PLAIN));
		return 0;
	case MSG_TREE_PUSH_ENTRY: {
		const char *p = msg_get_string(m, "path"), *kind = msg_get_string(m, "kind");
		int64_t mode = 0644;
		msg_get_int64(m, "mode", &mode);
		if (!p || !kind || strstr(p, "..") || p[0] == '/')
			return fg_error(ch, m->stream, EINVAL, "refused", "bad entry");
		snprintf(path, sizeof(path), "%s/%s", st->staging, p);
		st->entries++;
		if (strcmp(kind, "dir") == 0) {
			if (mkdir(path, (mode_t)mode) < 0 || chmod(path, (mode_t)mode) < 0)
				return fg_error(ch, m->stream, errno, "failed", "mkdir");
		} else if (strcmp(kind, "symlink") == 0) {
			if (symlink(msg_get_string(m, "target") ?: "", path) < 0)
				return fg_error(ch, m->stream, errno, "failed", "symlink");
		} else {
			if (st->file_fd >= 0)
				close(st->file_fd);
			st->file_fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			if (st->file_fd < 0 || fchmod(st->file_fd, (mode_t)mode) < 0)
				return fg_error(ch, m->stream, errno, "failed", "create");
			st->file_left = 0;
			msg_get_int64(m, "size", &st->file_left);
		}
		return 0;
	}
	case MSG_TREE_PUSH_DATA:
		if (!st->data_seen) {
			st->data_seen = true;
			snprintf(path, sizeof(path), "%s.on-data", cfg->tree_dir);
			if (access(path, X_OK) == 0 && system(path) != 0)
				return fg_error(ch, m->stream, EIO, "failed",
				                "the on-data hook failed");
		}
		if (st->file_fd < 0 || (int64_t)m->data_len > st->file_left ||
		    file_write_all(st->file_fd, m->data, m->data_len) < 0)
			return fg_error(ch, m->stream, EPROTO, "failed", "data out of place");
		st->file_left -= (int64_t)m->data_len;
		st->bytes += (int64_t)m->data_len;
		return 0;
	case MSG_TREE_PUSH_END: {
		struct json_object *ok = json_object_new_object();
		if (st->file_fd >= 0)
			close(st->file_fd);
		st->file_fd = -1;
		if (!msg_get_int64(m, "entries", &v) || v != st->entries ||
		    !msg_get_int64(m, "bytes", &v) || v != st->bytes) {
			json_object_put(ok);
			return fg_error(ch, m->stream, EPROTO, "failed", "counts differ");
		}
		snprintf(path, sizeof(path), "rm -rf '%s' && mv '%s' '%s'", cfg->tree_dir,
		         st->staging, cfg->tree_dir);
		if (system(path) != 0) {
			json_object_put(ok);
			return fg_error(ch, m->stream, EIO, "failed", "cannot swap");
		}
		fg_report(cfg, "push-end %lld %lld", (long long)st->entries, (long long)st->bytes);
		json_object_object_add(ok, "entries", json_object_new_int64(st->entries));
		json_object_object_add(ok, "bytes", json_object_new_int64(st->bytes));
		json_object_object_add(ok, "swapped", json_object_new_boolean(true));
		return fg_send(ch, MSG_OK, MSG_F_END, m->stream, ok, NULL, 0);
	}
	}
	return 0;
}

int fg_event(struct channel *ch, uint32_t stream, const char *phase, const char *step,
             const char *status)
{
	struct json_object *j = json_object_new_object();

	json_object_object_add(j, "phase", json_object_new_string(phase));
	if (step)
		json_object_object_add(j, "step", json_object_new_string(step));
	json_object_object_add(j, "status", json_object_new_string(status));
	json_object_object_add(j, "at", json_object_new_int64(1700000000000));
	return fg_send(ch, MSG_BOOT_EVENT, 0, stream, j, NULL, 0);
}

int fg_boot(struct channel *ch, struct fg_state *st, const struct msg *m)
{
	const char *app = msg_get_string(m, "app_dir") ?: "spec";
	static const char log[] = "$ echo hi\nhi\n";
	uint32_t s = m->stream;

	fg_report(st->cfg, "boot %s",
	          json_object_to_json_string_ext(m->json, JSON_C_TO_STRING_PLAIN));
	if (strstr(app, "refuse"))
		return fg_error(ch, s, EBUSY, "refused",
		                "a boot of /workspace/app is already in progress");
	fg_event(ch, s, "config", NULL, "started");
	fg_event(ch, s, "config", NULL, "done");
	fg_event(ch, s, "setup", "echo", "started");
	fg_send(ch, MSG_BOOT_LOG, 0, s, fg_obj("{\"log\": \"setup\", \"offset\": 0}"), log,
	        sizeof(log) - 1);
	if (strstr(app, "slow"))
		return 0; /* no result: the boot goes on until the controller gives up waiting */
	if (strstr(app, "fail")) {
		fg_event(ch, s, "setup", "echo", "failed");
		return fg_send(ch, MSG_BOOT_RESULT, MSG_F_END, s,
		               fg_obj("{\"status\": \"failed\", \"exit\": 1, \"reason\": \"`false` "
		                      "exited with status 1\"}"),
		               NULL, 0);
	}
	fg_event(ch, s, "setup", "echo", "done");
	fg_event(ch, s, "server", NULL, "started");
	fg_event(ch, s, "ready", NULL, "done");
	return fg_send(ch, MSG_BOOT_RESULT, MSG_F_END, s,
	               fg_obj("{\"status\": \"ready\", \"exit\": 0, \"runtime\": {\"mcp_url\": "
	                      "\"http://10.0.0.2:8080/mcp\", \"mcp_path\": \"/mcp\"}}"),
	               NULL, 0);
}

/*
 * A hostile guest's logs: max ignored, the stream never ended. Endless: FG_CHUNK bytes per
 * message as fast as the host takes them; trickle: one line every 100 ms, each message a
 * fresh reply within any per-message timeout. Bounded here (FG_HOSTILE_BYTES, 30 s) so a
 * host that does not defend itself still ends the test.
 */
int fg_logs_hostile(struct channel *ch, const struct msg *m, bool trickle)
{
	static char chunk[FG_CHUNK];
	int64_t offset = 0, sent = 0, started = frame_io_now_ms();
	int r = 0;

	memset(chunk, 'x', sizeof(chunk));
	msg_get_int64(m, "offset", &offset);
	while (r == 0 && sent < FG_HOSTILE_BYTES && frame_io_now_ms() - started < 30000) {
		size_t n = trickle ? FG_LOG_LINE_LEN : sizeof(chunk);
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "log", json_object_new_string("setup"));
		json_object_object_add(j, "offset", json_object_new_int64(offset + sent));
		json_object_object_add(j, "skipped", json_object_new_int64(0));
		r = fg_send(ch, MSG_LOGS_DATA, 0, m->stream, j, chunk, n);
		sent += (int64_t)n;
		if (trickle)
			poll(NULL, 0, 100);
	}
	return r;
}

int fg_logs(struct channel *ch, struct fg_state *st, const struct msg *m)
{
	static char text[FG_LOG_LINES * FG_LOG_LINE_LEN + 1];
	int64_t offset = 0, max = -1, tail, total = FG_LOG_LINES * FG_LOG_LINE_LEN;
	struct json_object *follow_j = NULL;
	bool follow = false;
	int r;

	fg_log_text(text);
	if (strstr(msg_get_string(m, "app_dir") ?: "", "endless"))
		return fg_logs_hostile(ch, m, false);
	if (strstr(msg_get_string(m, "app_dir") ?: "", "trickle"))
		return fg_logs_hostile(ch, m, true);
	msg_get_int64(m, "offset", &offset);
	msg_get_int64(m, "max", &max);
	if (m->json && json_object_object_get_ex(m->json, "follow", &follow_j))
		follow = json_object_get_boolean(follow_j);
	fg_report(st->cfg, "logs %s",
	          json_object_to_json_string_ext(m->json, JSON_C_TO_STRING_PLAIN));
	if (strcmp(msg_get_string(m, "log") ?: "", "setup") != 0) {
		char text_err[256];
		snprintf(text_err, sizeof(text_err),
		         "no log named '%.64s' for %.64s: its logs are setup",
		         msg_get_string(m, "log") ?: "", msg_get_string(m, "app_dir") ?: "");
		return fg_error(ch, m->stream, ENOENT, "refused", text_err);
	}
	if (msg_get_int64(m, "tail", &tail)) {
		/* The start of the last tail lines (every line is FG_LOG_LINE_LEN bytes). */
		offset = tail >= FG_LOG_LINES ? 0 : total - tail * FG_LOG_LINE_LEN;
	}
	if (offset > total)
		offset = total;
	if (max >= 0 && offset + max < total)
		total = offset + max;
	do {
		int64_t n = total - offset > FG_CHUNK ? FG_CHUNK : total - offset;
		struct json_object *j = json_object_new_object();
		bool last = offset + n >= total && !follow;
		json_object_object_add(j, "log", json_object_new_string("setup"));
		json_object_object_add(j, "offset", json_object_new_int64(offset));
		json_object_object_add(j, "skipped", json_object_new_int64(0));
		r = fg_send(ch, MSG_LOGS_DATA, last ? MSG_F_END : 0, m->stream, j, text + offset,
		            (size_t)n);
		offset += n;
	} while (r == 0 && offset < total);
	return r;
}

/*
 * A hostile guest's publish: the pack is tests/data/hostile/delta-bomb.pack (167 bytes whose
 * delta resolves into a 1 GiB blob), then ok with made-up commit ids.
 */
int fg_publish(struct channel *ch, const struct msg *m)
{
	static char pack[4096];
	FILE *f = fopen("tests/data/hostile/delta-bomb.pack", "rb");
	size_t n = f ? fread(pack, 1, sizeof(pack), f) : 0;
	int r;

	if (f)
		fclose(f);
	if (n == 0)
		return fg_error(ch, m->stream, ENOENT, "failed", "no delta-bomb.pack here");
	r = fg_send(ch, MSG_PUBLISH_DATA, 0, m->stream, NULL, pack, n);
	if (r == 0)
		r = fg_send(ch, MSG_OK, MSG_F_END, m->stream,
		            fg_obj("{\"commit\": \"1111111111111111111111111111111111111111\", "
		                   "\"base\": \"2222222222222222222222222222222222222222\"}"),
		            NULL, 0);
	return r;
}

int fg_message(struct channel *ch, struct fg_state *st, const struct msg *m)
{
	const struct fg_config *cfg = st->cfg;
	char value[256], path[PATH_MAX + 16];

	switch (m->type) {
	case MSG_HELLO:
		fg_report(cfg, "hello %s",
		          json_object_to_json_string_ext(m->json, JSON_C_TO_STRING_PLAIN));
		return 0;
	case MSG_PING:
		return fg_send(ch, MSG_PONG, 0, 0, json_object_get(m->json), NULL, 0);
	case MSG_SECRETS_PUT: {
		const char *name = msg_get_string(m, "name"), *scope = msg_get_string(m, "scope");
		struct json_object *ok = json_object_new_object(), *pe = NULL;
		bool replaced = false;
		if (!name || !scope) {
			json_object_put(ok);
			return fg_error(ch, m->stream, EINVAL, "refused", "name and scope, please");
		}
		for (size_t i = 0; i < st->n_names; i++)
			replaced |= strcmp(st->names[i], name) == 0;
		if (!replaced && st->n_names < 32)
			snprintf(st->names[st->n_names++], sizeof(st->names[0]), "%s", name);
		snprintf(value, sizeof(value), "%.*s", (int)(m->data_len > 200 ? 200 : m->data_len),
		         m->data ? (const char *)m->data : "");
		json_object_object_get_ex(m->json, "pass_env", &pe);
		fg_report(cfg, "secret %s %s %s pass_env=%d json=%s", name, scope, value,
		          pe ? json_object_get_boolean(pe) : -1,
		          json_object_to_json_string_ext(m->json, JSON_C_TO_STRING_PLAIN));
		json_object_object_add(ok, "name", json_object_new_string(name));
		json_object_object_add(ok, "scope", json_object_new_string(scope));
		json_object_object_add(ok, "replaced", json_object_new_boolean(replaced));
		return fg_send(ch, MSG_OK, MSG_F_END, m->stream, ok, NULL, 0);
	}
	case MSG_SECRETS_DROP:
		fg_report(cfg, "drop %s",
		          json_object_to_json_string_ext(m->json, JSON_C_TO_STRING_PLAIN));
		return fg_send(ch, MSG_OK, MSG_F_END, m->stream, fg_obj("{\"dropped\": 1}"), NULL,
		               0);
	case MSG_TREE_PUSH_BEGIN:
	case MSG_TREE_PUSH_ENTRY:
	case MSG_TREE_PUSH_DATA:
	case MSG_TREE_PUSH_END:
		return fg_push_msg(ch, st, m);
	case MSG_BOOT_START:
		return fg_boot(ch, st, m);
	case MSG_STATUS:
		fg_report(cfg, "status %s",
		          json_object_to_json_string_ext(m->json, JSON_C_TO_STRING_PLAIN));
		/*
		 * A test's hook, "<tree_dir>.on-status", run before the answer: sandbox-ctl push
		 * asks for the status after its walk and before the first entry, so the hook can
		 * change the source tree in between.
		 */
		snprintf(path, sizeof(path), "%s.on-status", cfg->tree_dir);
		if (access(path, X_OK) == 0 && system(path) != 0)
			return fg_error(ch, m->stream, EIO, "failed", "the on-status hook failed");
		if (strstr(msg_get_string(m, "app_dir") ?: "", "busy"))
			return fg_send(ch, MSG_OK, MSG_F_END, m->stream,
			               fg_obj("{\"status\": \"booting\", \"phase\": \"setup\"}"),
			               NULL, 0);
		return fg_send(ch, MSG_OK, MSG_F_END, m->stream,
		               fg_obj("{\"status\": \"ready\", \"phase\": \"ready\", \"since\": 1, "
		                      "\"logs\": {\"setup\": 162000}}"),
		               NULL, 0);
	case MSG_LOGS:
		return fg_logs(ch, st, m);
	case MSG_CANCEL:
		fg_report(cfg, "cancel %u", m->stream);
		return fg_error(ch, m->stream, ECANCELED, "failed", "cancelled");
	case MSG_STOP:
		fg_report(cfg, "stop %s",
		          json_object_to_json_string_ext(m->json, JSON_C_TO_STRING_PLAIN));
		return fg_send(ch, MSG_OK, MSG_F_END, m->stream, fg_obj("{\"stopped\": true}"),
		               NULL, 0);
	case MSG_PUBLISH_COMMIT:
		fg_report(cfg, "publish");
		return fg_publish(ch, m);
	case MSG_RUNTIME_READ:
		if (strstr(msg_get_string(m, "app_dir") ?: "", "gone"))
			return fg_error(
			    ch, m->stream, ENOENT, "failed",
			    "the app's runtime is gone: its server is not running (last "
			    "boot: stopped)");
		return fg_send(ch, MSG_OK, MSG_F_END, m->stream,
		               fg_obj("{\"runtime\": {\"mcp_url\": \"http://10.0.0.2:8080/mcp\", "
		                      "\"mcp_token\": \"aa_token\"}}"),
		               NULL, 0);
	default:
		if (m->stream == 0)
			return 0;
		return fg_error(ch, m->stream, EOPNOTSUPP, "refused", "not supported");
	}
}

void fg_session(struct channel *ch, struct fg_state *st)
{
	struct err e;

	fg_send(
	    ch, MSG_HELLO, 0, 0,
	    fg_obj("{\"agent\": \"sandbox-agent\", \"version\": \"0.1.0-test\", "
	           "\"capabilities\": [\"secrets\", \"tree.push\", \"boot\", \"status\", "
	           "\"logs\", \"stop\", \"runtime.read\", \"publish\"], \"max_payload\": 1048576, "
	           "\"instance\": \"fake\"}"),
	    NULL, 0);
	for (;;) {
		struct msg m;
		int r = channel_recv(ch, &m, -1, &e);
		if (r == 0) {
			fg_report(st->cfg, "closed");
			channel_close(ch, FG_TIMEOUT_MS, &e);
			return;
		}
		if (r < 0) {
			fg_report(st->cfg, "err %s", e.msg);
			return;
		}
		r = fg_message(ch, st, &m);
		msg_dispose(&m);
		if (r < 0) {
			fg_report(st->cfg, "send-err");
			return;
		}
	}
}

void fg_serve_fd(int fd, const struct fg_config *cfg, int sessions)
{
	struct fg_state st = {.cfg = cfg, .file_fd = -1};
	struct authkeys *ak = NULL;
	struct frame_io *io = NULL;
	struct err e;

	if (authkeys_new(NULL, NULL, &ak, &e) < 0 ||
	    authkeys_add(ak, cfg->host_pk, "host", &e) < 0 || frame_io_new(fd, &io, &e) < 0) {
		fg_report(cfg, "setup-err %s", e.msg);
		authkeys_free(ak);
		return;
	}
	for (int i = 0; sessions < 0 || i < sessions; i++) {
		struct channel *ch = NULL;
		char fp[KEYS_FINGERPRINT_MAX];
		if (channel_handshake_guest(io, cfg->key, ak, FG_TIMEOUT_MS, &ch, fp, &e) < 0) {
			fg_report(cfg, "hs-err %s [%s]", e.msg, fp);
			if (io->eof || sessions >= 0)
				break;
			continue;
		}
		fg_report(cfg, "hs-ok %s", channel_peer_fingerprint(ch));
		fg_session(ch, &st);
		channel_free(ch);
		if (io->eof)
			break;
	}
	frame_io_free(io);
	authkeys_free(ak);
}

int fg_listen(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
		return -1;
	return fd;
}

pid_t fg_serve_unix(const char *path, const struct fg_config *cfg)
{
	int lfd = fg_listen(path);
	pid_t pid;

	if (lfd < 0)
		return -1;
	pid = fork();
	if (pid != 0) {
		close(lfd);
		return pid;
	}
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		fg_serve_fd(c, cfg, 1);
		close(c);
	}
}

pid_t fg_serve_fc(const char *path, const struct fg_config *cfg, int silent_closes,
                  const char *reply)
{
	int lfd = fg_listen(path);
	pid_t pid;

	if (lfd < 0)
		return -1;
	pid = fork();
	if (pid != 0) {
		close(lfd);
		return pid;
	}
	for (int n = 0;; n++) {
		char line[128];
		size_t len = 0;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		while (len < sizeof(line) - 1 && read(c, line + len, 1) == 1 && line[len++] != '\n')
			;
		line[len] = '\0';
		fg_report(cfg, "fc %.*s", (int)(len ? len - 1 : 0), line);
		if (n < silent_closes) {
			close(c); /* nothing listens on that port yet */
			continue;
		}
		(void)file_write_all(c, reply, strlen(reply));
		if (strncmp(reply, "OK ", 3) == 0)
			fg_serve_fd(c, cfg, 1);
		close(c);
	}
}

bool fg_pump(int from, int to)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n <= 0)
		return n < 0 && errno == EINTR;
	return file_write_all(to, buf, (size_t)n) == 0;
}

pid_t fg_serve_serial(const char *path, const struct fg_config *cfg)
{
	static const char noise[] = "\x00\x00\x00\x30garbage of a session that was cut off\r\n";
	int lfd = fg_listen(path), port[2];
	pid_t pid, guest;

	if (lfd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, port) < 0)
		return -1;
	pid = fork();
	if (pid != 0) {
		close(lfd);
		close(port[0]);
		close(port[1]);
		return pid;
	}
	guest = fork();
	if (guest == 0) {
		close(lfd);
		close(port[0]);
		fg_serve_fd(port[1], cfg, -1);
		_exit(0);
	}
	close(port[1]);
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		(void)file_write_all(port[0], noise, sizeof(noise) - 1);
		(void)file_write_all(c, "login: ", 7);
		for (;;) {
			struct pollfd p[2] = {{.fd = c, .events = POLLIN},
			                      {.fd = port[0], .events = POLLIN}};
			if (poll(p, 2, -1) < 0)
				continue;
			if (p[0].revents && !fg_pump(c, port[0]))
				break;
			if (p[1].revents && !fg_pump(port[0], c))
				break;
		}
		close(c);
	}
}

int fg_stdio_main(const char *dir, const char *report)
{
	char path[PATH_MAX];
	struct keypair *kp = NULL;
	_cleanup_free_ char *line = NULL;
	uint8_t host_pk[KEYS_PUBLIC_LEN];
	struct fg_config cfg;
	char tree[PATH_MAX];
	size_t len;
	struct err e;

	snprintf(path, sizeof(path), "%s/guest_key", dir);
	if (keys_load(path, &kp, &e) < 0) {
		fprintf(stderr, "fake guest: %s\n", e.msg);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/host.pub", dir);
	if (file_read_capped(AT_FDCWD, path, 4096, 0, &line, &len, &e) < 0 ||
	    keys_parse_public(line, host_pk, NULL, &e) < 0) {
		fprintf(stderr, "fake guest: %s\n", e.msg);
		return 1;
	}
	snprintf(tree, sizeof(tree), "%s/tree", dir);
	cfg = (struct fg_config){.key = kp, .host_pk = host_pk, .tree_dir = tree};
	cfg.report_fd = open(report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	fprintf(stderr, "fake guest: serving on stdin/stdout\n");
	fg_serve_fd(STDIN_FILENO, &cfg, 1);
	keys_free(kp);
	return 0;
}

int fg_relay_main(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool in_open = true;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("relay");
		return 1;
	}
	for (;;) {
		struct pollfd p[2] = {{.fd = in_open ? STDIN_FILENO : -1, .events = POLLIN},
		                      {.fd = s, .events = POLLIN}};
		if (poll(p, 2, -1) < 0)
			continue;
		if (p[0].revents && !fg_pump(STDIN_FILENO, s)) {
			in_open = false;
			shutdown(s, SHUT_WR);
		}
		if (p[1].revents && !fg_pump(s, STDOUT_FILENO))
			return 0;
	}
}
