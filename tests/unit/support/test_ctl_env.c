/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled once, linked into every unit test (tests/unit/support/test_ctl_env.h). */
#include "test_ctl_env.h"

char ctl_bin[PATH_MAX], self_bin[PATH_MAX];
void ctl_find_binaries(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	snprintf(self_bin, sizeof(self_bin), "%s", exe);
	snprintf(ctl_bin, sizeof(ctl_bin), "%s/sandbox-ctl", dirname(dirname(exe)));
}

char *ctl_read_fd(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	for (;;) {
		ssize_t n;
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

char *ctl_read_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *s;

	if (fd < 0)
		return strdup("");
	s = ctl_read_fd(fd);
	close(fd);
	return s;
}

void ctl_run_dispose(struct ctl_run *r)
{
	free(r->out);
	free(r->err);
	json_object_put(r->json);
	memset(r, 0, sizeof(*r));
}

pid_t ctl_spawn(struct ctl_env *e, const char *input, char *const *argv,
                const char *const *extra_env, int *out_fd, int *err_fd)
{
	int in[2], out[2], err[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(err, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *args[64];
		size_t n = 0;
		args[n++] = ctl_bin;
		args[n++] = "--key";
		args[n++] = e->key;
		args[n++] = "--known-guests";
		args[n++] = e->pins;
		args[n++] = "--timeout";
		args[n++] = "10";
		for (size_t i = 0; argv[i] && n < 63; i++)
			args[n++] = argv[i];
		args[n] = NULL;
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		setenv("HOME", e->dir, 1);
		for (size_t i = 0; extra_env && extra_env[i]; i++)
			putenv((char *)extra_env[i]);
		execv(ctl_bin, args);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (input)
		(void)file_write_all(in[1], input, strlen(input));
	close(in[1]);
	*out_fd = out[0];
	*err_fd = err[0];
	return pid;
}

struct ctl_run ctl_finish(pid_t pid, int out_fd, int err_fd)
{
	struct ctl_run r = {0};
	int status;

	/* stderr is small; read stdout first, then stderr (both end when the process does). */
	r.out = ctl_read_fd(out_fd);
	r.err = ctl_read_fd(err_fd);
	close(out_fd);
	close(err_fd);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "sandbox-ctl died: %d", status);
	r.rc = WEXITSTATUS(status);
	r.json = json_tokener_parse(r.out);
	return r;
}

struct ctl_run ctl_run_env(struct ctl_env *e, const char *input, const char *const *extra_env,
                           char *const *argv)
{
	int out_fd, err_fd;
	pid_t pid = ctl_spawn(e, input, argv, extra_env, &out_fd, &err_fd);

	return ctl_finish(pid, out_fd, err_fd);
}

const char *ctl_str(const struct ctl_run *r, const char *key)
{
	struct json_object *v;

	if (!r->json || !json_object_object_get_ex(r->json, key, &v))
		return "";
	return json_object_get_string(v);
}

int64_t ctl_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return -12345;
	return json_object_get_int64(v);
}

struct json_object *ctl_obj(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

const char *ctl_last_line(const struct ctl_run *r)
{
	size_t n = strlen(r->err);
	const char *p;

	while (n > 0 && r->err[n - 1] == '\n')
		n--;
	p = r->err + n;
	while (p > r->err && p[-1] != '\n')
		p--;
	r->err[n] = '\0';
	return p;
}

size_t ctl_count(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

size_t ctl_count_lines(const char *s, const char *line)
{
	size_t n = 0, len = strlen(line);

	for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == '\0'))
			n++;
	return n;
}

void ctl_env_setup(struct ctl_env *e)
{
	struct ctl_run r;
	char path[PATH_MAX * 2];
	_cleanup_free_ char *line = NULL;
	struct err err;
	size_t len;

	memset(e, 0, sizeof(*e));
	ctl_find_binaries();
	snprintf(e->dir, sizeof(e->dir), "/tmp/ctl-test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(e->dir));
	snprintf(e->key, sizeof(e->key), "%s/host_key", e->dir);
	snprintf(e->pins, sizeof(e->pins), "%s/known_guests", e->dir);
	snprintf(e->report, sizeof(e->report), "%s/report", e->dir);
	snprintf(e->sock, sizeof(e->sock), "%s/agent.sock", e->dir);
	snprintf(e->tree, sizeof(e->tree), "%s/tree", e->dir);

	/* The host key, made by the command under test. */
	r = CTL_RUN(e, NULL, "keygen");
	ck_assert_msg(r.rc == 0, "keygen: %s", r.err);
	snprintf(e->host_fp, sizeof(e->host_fp), "%s", ctl_str(&r, "fingerprint"));
	ctl_run_dispose(&r);
	snprintf(path, sizeof(path), "%s.pub", e->key);
	ck_assert_int_eq(file_read_capped(AT_FDCWD, path, 4096, 0, &line, &len, &err), 0);
	ck_assert_int_eq(keys_parse_public(line, e->host_pk, NULL, &err), 0);
	snprintf(path, sizeof(path), "%s/host.pub", e->dir);
	ck_assert_int_eq(file_write_atomic(path, line, len, 0644, (uid_t)-1, (gid_t)-1, &err), 0);

	ck_assert_int_eq(keys_generate(&e->guest, &err), 0);
	keys_fingerprint(e->guest->pk, e->guest_fp);
	snprintf(path, sizeof(path), "%s/guest_key", e->dir);
	ck_assert_int_eq(keys_save(e->guest, path, &err), 0);

	e->cfg.key = e->guest;
	e->cfg.host_pk = e->host_pk;
	e->cfg.tree_dir = e->tree;
	e->cfg.report_fd = open(e->report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(e->cfg.report_fd, 0);
}

void ctl_env_server(struct ctl_env *e, pid_t pid)
{
	ck_assert_int_gt(pid, 0);
	ck_assert_uint_lt(e->n_servers, ELEMENTSOF(e->servers));
	e->servers[e->n_servers++] = pid;
}

void ctl_env_teardown(struct ctl_env *e)
{
	char cmd[PATH_MAX + 16];

	for (size_t i = 0; i < e->n_servers; i++) {
		kill(e->servers[i], SIGKILL);
		waitpid(e->servers[i], NULL, 0);
	}
	if (e->cfg.report_fd >= 0)
		close(e->cfg.report_fd);
	keys_free(e->guest);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	(void)!system(cmd);
}

char *ctl_report(struct ctl_env *e)
{
	return ctl_read_file(e->report);
}

char *ctl_report_wait(struct ctl_env *e, const char *needle)
{
	for (int i = 0; i < 1000; i++) {
		char *s = ctl_report(e);
		if (strstr(s, needle))
			return s;
		free(s);
		usleep(10000);
	}
	return ctl_report(e);
}

char *ctl_report_wait_lines(struct ctl_env *e, const char *line, size_t n)
{
	for (int i = 0; i < 1000; i++) {
		char *s = ctl_report(e);
		if (ctl_count_lines(s, line) >= n)
			return s;
		free(s);
		usleep(10000);
	}
	return ctl_report(e);
}
