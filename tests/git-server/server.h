/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the C unit tests: the git smart-HTTP server of tests/git-server/start.sh (lighttpd with
 * HTTP Basic authentication in front of git http-backend), the fixture repositories of
 * fixture.sh, and a check that no process shows a secret in its argv or environment.
 * Header-only; included by tests/unit/test_*.c, run from the source tree's root (tests/run.sh).
 */
#ifndef SA_TEST_GIT_SERVER_H
#define SA_TEST_GIT_SERVER_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scrub.h"

#define TS_SCRIPTS "tests/git-server"

struct test_server {
	char dir[256];
	char url[256]; /* http://127.0.0.1:PORT/git */
	char user[64];
	char token[128];
};

/* Run argv with stdin_data on stdin; stdout into out (NUL-terminated). Returns exit status. */
static inline int ts_run(char *const argv[], const char *stdin_data, char *out, size_t out_len)
{
	int in[2], outp[2], status = -1;
	size_t got = 0;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	if (stdin_data && write(in[1], stdin_data, strlen(stdin_data)) < 0)
		status = -1;
	close(in[1]);
	for (;;) {
		ssize_t n =
		    read(outp[0], out ? out + got : (char[256]){0}, out ? out_len - 1 - got : 255);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out)
			got += (size_t)n;
		if (out && got >= out_len - 1)
			break;
	}
	if (out)
		out[got] = '\0';
	close(outp[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A token that URL-encodes and base64-encodes differently from itself. */
static inline void ts_make_token(char *buf, size_t len)
{
	unsigned char r[12];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, r, sizeof(r)), (ssize_t)sizeof(r));
	close(fd);
	snprintf(buf, len, "tok+en/%02x%02x%02x%02x%02x%02x=x%02x%02x%02x%02x%02x%02x", r[0], r[1],
	         r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]);
}

static inline void ts_start(struct test_server *s)
{
	char *argv[] = {TS_SCRIPTS "/start.sh", s->dir, s->user, NULL};
	char in[160];
	size_t n;

	if (access(TS_SCRIPTS "/start.sh", X_OK) != 0)
		ck_abort_msg("run from the source tree's root: %s/start.sh not found", TS_SCRIPTS);
	snprintf(s->dir, sizeof(s->dir), "/tmp/test-git-server.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(s->dir));
	snprintf(s->user, sizeof(s->user), "x-access-token");
	ts_make_token(s->token, sizeof(s->token));
	snprintf(in, sizeof(in), "%s\n", s->token);
	ck_assert_msg(ts_run(argv, in, s->url, sizeof(s->url)) == 0,
	              "the git server did not start (lighttpd installed? see %s/error.log)",
	              s->dir);
	n = strlen(s->url);
	while (n && (s->url[n - 1] == '\n' || s->url[n - 1] == '\r'))
		s->url[--n] = '\0';
	ck_assert_msg(strncmp(s->url, "http://127.0.0.1:", 17) == 0, "start.sh printed '%s'",
	              s->url);
}

static inline void ts_stop(struct test_server *s)
{
	char *argv[] = {TS_SCRIPTS "/stop.sh", s->dir, NULL};
	char cmd[300];

	if (!s->dir[0])
		return;
	ts_run(argv, NULL, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", s->dir);
}

/* Fixture ids: KEY=VALUE lines as fixture.sh prints them. */
struct ts_ids {
	char text[2048];
};

static inline const char *ts_id(const struct ts_ids *ids, const char *key)
{
	static char val[8][64];
	static int slot;
	char pat[64];
	const char *p;
	char *v = val[slot++ % 8];

	snprintf(pat, sizeof(pat), "%s=", key);
	for (p = ids->text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, pat, strlen(pat)) == 0) {
			size_t n = strcspn(p + strlen(pat), "\n");

			snprintf(v, 64, "%.*s", (int)n, p + strlen(pat));
			return v;
		}
	}
	ck_abort_msg("fixture id %s missing", key);
	return NULL;
}

/* fixture.sh REPOS NAME [KIND ARG] into the server's repositories, or into any directory. */
static inline void ts_fixture(const char *repos, const char *name, const char *kind,
                              const char *arg, struct ts_ids *ids)
{
	char *argv[] = {
	    TS_SCRIPTS "/fixture.sh", (char *)repos, (char *)name, (char *)kind, (char *)arg, NULL};

	ck_assert_msg(ts_run(argv, NULL, ids->text, sizeof(ids->text)) == 0, "fixture.sh %s %s",
	              name, kind ? kind : "");
}

static inline void ts_repos(const struct test_server *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s/repos", s->dir);
}

/* Read a whole file; NULL when it cannot be read. */
static inline char *ts_slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, len = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (len + 4096 > cap) {
			cap = (cap + 4096) * 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

/*
 * What to look for: the scrubber with the secret (raw, URL-encoded, base64 at every
 * alignment) and one without it. The scrubber also masks anything shaped like a GitHub token;
 * comparing with the second one leaves those out, so a machine's own GITHUB_TOKEN is no hit.
 */
struct ts_secret {
	struct scrubber *with;
	struct scrubber *without;
};

static inline void ts_secret_init(struct ts_secret *t, const char *user, const char *token)
{
	char pair[256];

	t->with = scrub_new();
	t->without = scrub_new();
	ck_assert_ptr_nonnull(t->with);
	ck_assert_ptr_nonnull(t->without);
	ck_assert_int_eq(scrub_add(t->with, token, strlen(token)), 0);
	/* "user:token" too: its base64 is the Authorization header's value. */
	snprintf(pair, sizeof(pair), "%s:%s", user, token);
	ck_assert_int_eq(scrub_add(t->with, pair, strlen(pair)), 0);
	ck_assert_int_eq(scrub_add(t->without, "not-the-secret-0123456789", 25), 0);
}

static inline void ts_secret_dispose(struct ts_secret *t)
{
	scrub_free(t->with);
	scrub_free(t->without);
}

/* Does buf hold the secret in any form the scrubber knows? */
static inline bool ts_holds_secret(const struct ts_secret *t, const char *buf, size_t len)
{
	size_t a_len, b_len;
	char *a, *b;
	bool differs;

	if (!len)
		return false;
	a = scrub_string(t->with, buf, len, &a_len);
	b = scrub_string(t->without, buf, len, &b_len);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	differs = a_len != b_len || memcmp(a, b, a_len) != 0;
	free(a);
	free(b);
	return differs;
}

/*
 * Walk every file below dir (no links followed) and return how many hold the secret; the
 * first one's path goes to first. Counts the files read in *ret_files.
 */
static inline int ts_scan_tree(const struct ts_secret *sc, const char *dir, char *first,
                               size_t first_len, int *ret_files)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int hits = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			hits += ts_scan_tree(sc, path, hits ? NULL : first, first_len, ret_files);
		} else if (S_ISREG(st.st_mode)) {
			size_t len = 0;
			char *buf = ts_slurp(path, &len);

			(*ret_files)++;
			if (buf && ts_holds_secret(sc, buf, len)) {
				if (!hits && first)
					snprintf(first, first_len, "%s", path);
				hits++;
			}
			free(buf);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlink(path, target, sizeof(target));

			if (n > 0 && ts_holds_secret(sc, target, (size_t)n)) {
				if (!hits && first)
					snprintf(first, first_len, "%s", path);
				hits++;
			}
		}
	}
	closedir(d);
	return hits;
}

/*
 * One pass over /proc: every process's cmdline and environ. Returns how many show the secret;
 * *ret_seen counts the processes read.
 */
static inline int ts_scan_procs(const struct ts_secret *sc, int *ret_seen, char *first,
                                size_t first_len)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int hits = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		static const char *const files[] = {"cmdline", "environ"};

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		for (size_t i = 0; i < 2; i++) {
			char path[64];
			size_t len = 0;
			char *buf;

			snprintf(path, sizeof(path), "/proc/%s/%s", de->d_name, files[i]);
			buf = ts_slurp(path, &len);
			if (!buf)
				continue;
			if (i == 0)
				(*ret_seen)++;
			if (ts_holds_secret(sc, buf, len)) {
				if (!hits && first)
					snprintf(first, first_len, "%s", path);
				hits++;
			}
			free(buf);
		}
	}
	closedir(d);
	return hits;
}

#endif
