/* SPDX-License-Identifier: Apache-2.0 */
/*
 * git_fetch and git_pack against a real git smart-HTTP server (lighttpd + git http-backend,
 * tests/git-server/) that requires the token through HTTP Basic authentication.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../git-server/server.h"
#include "git_fetch.h"
#include "git_pack.h"

static struct test_server srv;
static struct ts_ids ids;
static char app_url[320];
static char tmpdir[64];

static void suite_setup(void)
{
	char repos[300];

	ts_start(&srv);
	ts_repos(&srv, repos, sizeof(repos));
	ts_fixture(repos, "app", NULL, NULL, &ids);
	snprintf(app_url, sizeof(app_url), "%s/app.git", srv.url);
}

static void suite_teardown(void)
{
	ts_stop(&srv);
}

static void setup(void)
{
	struct err e;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_git_fetch.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	ck_assert_msg(git_fetch_global_init(NULL, &e) == 0, "%s", e.msg);
}

static void teardown(void)
{
	char cmd[128];

	git_fetch_global_shutdown();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *tpath(const char *name)
{
	static char buf[4][300];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 300, "%s/%s", tmpdir, name);
	return p;
}

static git_repository *fresh_repo(const char *name, bool bare)
{
	git_repository *repo = NULL;
	struct err e;

	ck_assert_int_eq(mkdir(tpath(name), 0700), 0);
	ck_assert_msg(git_fetch_repo_init(tpath(name), bare, &repo, &e) == 0, "%s", e.msg);
	return repo;
}

static struct git_fetch_spec spec_for(const char *ref)
{
	struct git_fetch_spec s = {
	    .clone_url = app_url,
	    .ref = ref,
	    .username = srv.user,
	    .token = srv.token,
	    .token_len = strlen(srv.token),
	};
	return s;
}

static void assert_oid(const git_oid *id, const char *hex)
{
	char got[GIT_OID_HEXSZ + 1];

	git_oid_tostr(got, sizeof(got), id);
	ck_assert_str_eq(got, hex);
}

static void fetch_ok(git_repository *repo, const char *ref, struct git_fetch_result *res)
{
	struct git_fetch_spec s = spec_for(ref);
	struct err e;

	ck_assert_msg(git_fetch_ref(repo, &s, res, &e) == 0, "fetch %s: %s", ref ? ref : "(null)",
	              e.msg);
}

static void assert_ref(git_repository *repo, const char *name, const char *hex)
{
	git_oid id;

	ck_assert_msg(git_reference_name_to_id(&id, repo, name) == 0, "ref %s missing", name);
	assert_oid(&id, hex);
}

START_TEST(test_fetch_branch)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", true);
	struct git_fetch_result res;

	fetch_ok(repo, "main", &res);
	ck_assert_int_eq(res.kind, GIT_FETCH_BRANCH);
	assert_oid(&res.commit, ts_id(&ids, "c4"));
	assert_oid(&res.tip, ts_id(&ids, "c4"));
	ck_assert_str_eq(res.remote_ref, "refs/heads/main");
	ck_assert_str_eq(res.local_ref, "refs/remotes/origin/main");
	assert_ref(repo, "refs/remotes/origin/main", ts_id(&ids, "c4"));
	ck_assert_uint_gt(res.received_objects, 0);
	ck_assert_uint_gt(res.received_bytes, 512 * 1024);
	/* Only the ref asked for: no other branch, no tags followed. */
	ck_assert_int_ne(
	    git_reference_name_to_id(&(git_oid){{0}}, repo, "refs/remotes/origin/feature"), 0);
	ck_assert_int_ne(git_reference_name_to_id(&(git_oid){{0}}, repo, "refs/tags/v1"), 0);
}
END_TEST

START_TEST(test_fetch_full_branch_name_and_default)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", true);
	struct git_fetch_result res;

	fetch_ok(repo, "refs/heads/feature", &res);
	ck_assert_int_eq(res.kind, GIT_FETCH_BRANCH);
	assert_oid(&res.commit, ts_id(&ids, "feature"));
	assert_ref(repo, "refs/remotes/origin/feature", ts_id(&ids, "feature"));

	fetch_ok(repo, NULL, &res);
	ck_assert_str_eq(res.remote_ref, "refs/heads/main");
	assert_oid(&res.commit, ts_id(&ids, "c4"));
	fetch_ok(repo, "HEAD", &res);
	assert_oid(&res.commit, ts_id(&ids, "c4"));
}
END_TEST

START_TEST(test_fetch_tags)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", true);
	struct git_fetch_result res;

	/* Annotated: the ref keeps the tag object, the commit is what it points to. */
	fetch_ok(repo, "v1", &res);
	ck_assert_int_eq(res.kind, GIT_FETCH_TAG);
	assert_oid(&res.tip, ts_id(&ids, "tag_v1"));
	assert_oid(&res.commit, ts_id(&ids, "c2"));
	ck_assert_str_eq(res.local_ref, "refs/tags/v1");
	assert_ref(repo, "refs/tags/v1", ts_id(&ids, "tag_v1"));

	/* Lightweight. */
	fetch_ok(repo, "refs/tags/v0", &res);
	ck_assert_int_eq(res.kind, GIT_FETCH_TAG);
	assert_oid(&res.tip, ts_id(&ids, "c1"));
	assert_oid(&res.commit, ts_id(&ids, "c1"));
}
END_TEST

START_TEST(test_fetch_commit_ids)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", true);
	struct git_fetch_result res;

	/* The tip of a branch: fetched through that branch. */
	fetch_ok(repo, ts_id(&ids, "feature"), &res);
	ck_assert_int_eq(res.kind, GIT_FETCH_BRANCH);
	ck_assert_str_eq(res.remote_ref, "refs/heads/feature");
	assert_oid(&res.commit, ts_id(&ids, "feature"));

	/* What an annotated tag points to: through the tag. */
	fetch_ok(repo, ts_id(&ids, "c2"), &res);
	ck_assert_int_eq(res.kind, GIT_FETCH_TAG);
	ck_assert_str_eq(res.remote_ref, "refs/tags/v1");
	assert_oid(&res.commit, ts_id(&ids, "c2"));
}
END_TEST

START_TEST(test_fetch_inner_commit)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", true);
	struct git_fetch_result res;

	/* c3 is the tip of nothing: every branch and tag is fetched, and c3 found among them. */
	fetch_ok(repo, ts_id(&ids, "c3"), &res);
	ck_assert_int_eq(res.kind, GIT_FETCH_COMMIT);
	assert_oid(&res.commit, ts_id(&ids, "c3"));
	assert_oid(&res.tip, ts_id(&ids, "c3"));
	ck_assert_str_eq(res.local_ref, "");
	ck_assert_str_eq(res.remote_ref, "");
}
END_TEST

/* Every path below dir with its type, size and modification time, sorted. */
static void snapshot_into(const char *dir, const char *rel, FILE *out)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		char path[4096], sub[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name);
		ck_assert_int_eq(lstat(path, &st), 0);
		fprintf(out, "%s %o %lld %lld.%09ld\n", sub, st.st_mode, (long long)st.st_size,
		        (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		if (S_ISDIR(st.st_mode))
			snapshot_into(path, sub, out);
	}
	closedir(d);
}

static char *snapshot(const char *dir)
{
	char cmd[600], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	FILE *sorted;
	char *out = NULL;
	size_t out_len = 0;

	ck_assert_ptr_nonnull(f);
	snapshot_into(dir, "", f);
	fclose(f);
	/* readdir order is stable for an unchanged directory; sorting makes it obvious. */
	snprintf(cmd, sizeof(cmd), "%s/snapshot", tmpdir);
	sorted = fopen(cmd, "we");
	ck_assert_ptr_nonnull(sorted);
	fwrite(buf, 1, len, sorted);
	fclose(sorted);
	free(buf);
	snprintf(cmd, sizeof(cmd), "sort -o '%s/snapshot' '%s/snapshot'", tmpdir, tmpdir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/snapshot", tmpdir);
	out = ts_slurp(cmd, &out_len);
	unlink(cmd);
	return out;
}

START_TEST(test_wrong_token)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", false);
	struct git_fetch_spec s = spec_for("main");
	const char *wrong = "wrong-token-0123456789";
	_cleanup_free_ char *before = snapshot(tpath("r"));
	_cleanup_free_ char *after = NULL;
	struct git_fetch_result res;
	struct err e;

	s.token = wrong;
	s.token_len = strlen(wrong);
	ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, EACCES);
	ck_assert_msg(strstr(e.msg, "authentication failed for ") && strstr(e.msg, app_url), "%s",
	              e.msg);
	ck_assert_ptr_null(strstr(e.msg, wrong));
	ck_assert_ptr_null(strstr(e.msg, srv.token));
	after = snapshot(tpath("r"));
	ck_assert_str_eq(before, after);

	/* No token at all. */
	s.token = NULL;
	s.token_len = 0;
	ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
	ck_assert_int_eq(e.code, EACCES);
	ck_assert_msg(strstr(e.msg, "requires a token"), "%s", e.msg);
	free(after);
	after = snapshot(tpath("r"));
	ck_assert_str_eq(before, after);
}
END_TEST

START_TEST(test_missing_ref)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", false);
	_cleanup_free_ char *before = snapshot(tpath("r"));
	_cleanup_free_ char *after = NULL;
	struct git_fetch_spec s = spec_for("no-such-branch");
	struct git_fetch_result res;
	struct err e;

	ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_msg(strstr(e.msg, "'no-such-branch' not found at ") && strstr(e.msg, app_url),
	              "%s", e.msg);
	after = snapshot(tpath("r"));
	ck_assert_str_eq(before, after);

	s.ref = "refs/tags/nope";
	ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_msg(strstr(e.msg, "'refs/tags/nope' not found"), "%s", e.msg);

	/* A commit id nobody has: everything is fetched, then the answer is clear. */
	s.ref = "0123456789abcdef0123456789abcdef01234567";
	ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_msg(strstr(e.msg, "commit 0123456789abcdef0123456789abcdef01234567 not found"),
	              "%s", e.msg);

	/* A repository that does not exist. */
	snprintf(app_url, sizeof(app_url), "%s/nothing.git", srv.url);
	s = spec_for("main");
	ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_msg(strstr(e.msg, "not found (HTTP 404)"), "%s", e.msg);
}
END_TEST

START_TEST(test_redirect_to_other_host_refused)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", true);
	struct git_fetch_spec s = spec_for("main");
	struct git_fetch_result res;
	char moved[400];
	struct err e;

	/* /offsite/ answers with a 301 to another host name: the header must not go there. */
	snprintf(moved, sizeof(moved), "%.*s/offsite/app.git", (int)(strlen(srv.url) - 4), srv.url);
	s.clone_url = moved;
	ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_msg(strstr(e.msg, moved) && strstr(e.msg, "cannot redirect from '127.0.0.1' to "
	                                                    "'localhost'"),
	              "%s", e.msg);
	ck_assert_ptr_null(strstr(e.msg, srv.token));

	/* libgit2 follows a redirect on the same host (the header stays with that host). */
	snprintf(moved, sizeof(moved), "%.*s/moved/app.git", (int)(strlen(srv.url) - 4), srv.url);
	s.clone_url = moved;
	ck_assert_msg(git_fetch_ref(repo, &s, &res, &e) == 0, "%s", e.msg);
	assert_oid(&res.commit, ts_id(&ids, "c4"));
}
END_TEST

START_TEST(test_refusals)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", true);
	static const char *const bad_urls[] = {
	    "https://x-access-token:secret@github.com/o/r.git",
	    "https://user@github.com/o/r.git",
	    "http://github.com/o/r.git",
	    "file:///srv/r.git",
	    "/srv/r.git",
	    "ftp://github.com/o/r.git",
	    "https://github.com/o/r .git",
	    "",
	};
	static const char *const bad_refs[] = {"a:b",  "refs/heads/*", "-x", "+main",
	                                       "a..b", "main.lock",    "a b"};
	struct git_fetch_result res;
	struct err e;

	for (size_t i = 0; i < ELEMENTSOF(bad_urls); i++) {
		struct git_fetch_spec s = spec_for("main");

		s.clone_url = bad_urls[i];
		ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
		ck_assert_msg(e.cls == ERR_REFUSED, "%s: %s", bad_urls[i], e.msg);
		ck_assert_ptr_null(strstr(e.msg, "secret"));
	}
	ck_assert_int_lt(git_fetch_url_check("https://u:p@h/r.git", false, &e), 0);
	ck_assert_msg(strstr(e.msg, "carries credentials"), "%s", e.msg);
	/* Without a token, plain http and local paths are fine; loopback http with one too. */
	ck_assert_int_eq(git_fetch_url_check("http://github.com/o/r.git", false, &e), 0);
	ck_assert_int_eq(git_fetch_url_check("/srv/r.git", false, &e), 0);
	ck_assert_int_eq(git_fetch_url_check("http://127.0.0.1:8080/r.git", true, &e), 0);
	ck_assert_int_eq(git_fetch_url_check("http://[::1]:8080/r.git", true, &e), 0);
	ck_assert_int_eq(git_fetch_url_check("https://github.com/o/r.git", true, &e), 0);
	ck_assert_int_lt(git_fetch_url_check("http://127.0.0.1.evil.example/r.git", true, &e), 0);

	for (size_t i = 0; i < ELEMENTSOF(bad_refs); i++) {
		struct git_fetch_spec s = spec_for(bad_refs[i]);

		ck_assert_int_lt(git_fetch_ref(repo, &s, &res, &e), 0);
		ck_assert_msg(e.cls == ERR_REFUSED && e.code == EINVAL, "%s: %s", bad_refs[i],
		              e.msg);
	}
	ck_assert_int_eq(git_fetch_ref_check("feature/x-1.2", &e), 0);
	ck_assert_int_eq(git_fetch_ref_check(NULL, &e), 0);
}
END_TEST

struct sampler {
	struct ts_secret secret;
	int calls;
	int procs_seen;
	int hits;
	char first[128];
	/* The thread that looks all along. */
	volatile int stop;
	int thread_scans;
	int thread_seen;
	int thread_hits;
	char thread_first[128];
};

static void *sample_loop(void *arg)
{
	struct sampler *s = arg;

	while (!s->stop) {
		s->thread_hits +=
		    ts_scan_procs(&s->secret, &s->thread_seen,
		                  s->thread_hits ? NULL : s->thread_first, sizeof(s->thread_first));
		s->thread_scans++;
	}
	return NULL;
}

/* The fetch's progress callback: look at every process while objects are arriving. */
static int sample_procs(void *userdata, unsigned int received, unsigned int total, size_t bytes)
{
	struct sampler *s = userdata;

	/* The server waits while we look, so its processes are alive; enough looks are enough. */
	if (s->calls++ < 400)
		s->hits += ts_scan_procs(&s->secret, &s->procs_seen, s->hits ? NULL : s->first,
		                         sizeof(s->first));
	return 0;
}

START_TEST(test_token_nowhere)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", false);
	struct git_fetch_spec s = spec_for("main");
	struct git_fetch_result res;
	struct sampler smp = {0};
	char first[4096] = "", leak_env[300], b64[200];
	int files = 0, seen = 0;
	struct err e;
	pid_t pid;

	pthread_t thread;

	ts_secret_init(&smp.secret, srv.user, srv.token);
	s.progress = sample_procs;
	s.userdata = &smp;
	/* One thread looks at every process all along; the progress callback looks too, while
	 * objects arrive. Three fetches: a branch, a tag, and a commit that fetches everything. */
	ck_assert_int_eq(pthread_create(&thread, NULL, sample_loop, &smp), 0);
	ck_assert_msg(git_fetch_ref(repo, &s, &res, &e) == 0, "%s", e.msg);
	s.ref = "v1";
	ck_assert_msg(git_fetch_ref(repo, &s, &res, &e) == 0, "%s", e.msg);
	s.ref = ts_id(&ids, "c3");
	ck_assert_msg(git_fetch_ref(repo, &s, &res, &e) == 0, "%s", e.msg);
	smp.stop = 1;
	ck_assert_int_eq(pthread_join(thread, NULL), 0);
	git_repository_free(TAKE_PTR(repo));

	ck_assert_int_gt(smp.calls, 0);
	ck_assert_int_gt(smp.procs_seen, 1);
	ck_assert_int_gt(smp.thread_scans, 0);
	ck_assert_msg(smp.hits == 0, "the token showed in %s during the fetch", smp.first);
	ck_assert_msg(smp.thread_hits == 0, "the token showed in %s during the fetch",
	              smp.thread_first);

	/* Every file of the repository: config, HEAD, refs, reflogs (logs/), packs, index. */
	ck_assert_int_eq(ts_scan_tree(&smp.secret, tpath("r"), first, sizeof(first), &files), 0);
	ck_assert_int_gt(files, 5);
	ck_assert_msg(access(tpath("r/.git/logs/refs/remotes/origin/main"), F_OK) == 0,
	              "the fetch wrote no reflog to look at");

	/* The detectors do find the forms they look for. */
	{
		char pair[200];
		FILE *f = fopen(tpath("r/.git/planted"), "we");

		snprintf(pair, sizeof(pair), "%s:%s", srv.user, srv.token);
		sodium_bin2base64(b64, sizeof(b64), (const unsigned char *)pair, strlen(pair),
		                  sodium_base64_VARIANT_ORIGINAL);
		ck_assert_ptr_nonnull(f);
		fprintf(f, "Authorization: Basic %s\n", b64);
		fclose(f);
		files = 0;
		ck_assert_int_eq(
		    ts_scan_tree(&smp.secret, tpath("r"), first, sizeof(first), &files), 1);
		ck_assert_str_eq(first, tpath("r/.git/planted"));
	}
	snprintf(leak_env, sizeof(leak_env), "LEAK=%s", b64);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = {"sleep", "60", NULL};
		char *envp[] = {leak_env, NULL};

		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	/* The child shows the planted variable once it has exec'ed; look until it does. */
	for (int i = 0; i < 1000; i++) {
		char path[64], *buf;
		size_t len = 0;

		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		buf = ts_slurp(path, &len);
		if (buf && strstr(buf, "sleep")) {
			free(buf);
			break;
		}
		free(buf);
		usleep(1000);
	}
	ck_assert_int_ge(ts_scan_procs(&smp.secret, &seen, NULL, 0), 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ts_secret_dispose(&smp.secret);
}
END_TEST

/*
 * Count where needle occurs in this process's writable memory. The needle is kept XOR-masked
 * so the search itself does not plant it.
 */
static int memory_hits(const unsigned char *masked, size_t n, unsigned char mask)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	char line[512];
	int hits = 0;

	ck_assert_ptr_nonnull(maps);
	ck_assert_int_ge(mem, 0);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perms[8];
		unsigned char *buf;

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
		    perms[1] != 'w' || strstr(line, "[vvar]") || hi - lo > (1UL << 30))
			continue;
		buf = malloc(hi - lo);
		ck_assert_ptr_nonnull(buf);
		if (pread(mem, buf, hi - lo, (off_t)lo) == (ssize_t)(hi - lo)) {
			for (size_t i = 0; i + n <= hi - lo; i++) {
				size_t k = 0;

				while (k < n && (buf[i + k] ^ mask) == masked[k])
					k++;
				if (k == n)
					hits++;
			}
		}
		sodium_memzero(buf, hi - lo);
		free(buf);
	}
	fclose(maps);
	close(mem);
	return hits;
}

START_TEST(test_header_wiped_from_memory)
{
	_cleanup_git_repository_ git_repository *repo = fresh_repo("r", true);
	struct git_fetch_spec s = spec_for("main");
	struct git_fetch_result res;
	unsigned char masked[200];
	char pair[200], b64[200];
	size_t n;
	struct err e;

	ck_assert_msg(git_fetch_ref(repo, &s, &res, &e) == 0, "%s", e.msg);
	git_repository_free(TAKE_PTR(repo));

	snprintf(pair, sizeof(pair), "%s:%s", srv.user, srv.token);
	sodium_bin2base64(b64, sizeof(b64), (const unsigned char *)pair, strlen(pair),
	                  sodium_base64_VARIANT_ORIGINAL);
	n = strlen(b64);
	for (size_t i = 0; i < n; i++)
		masked[i] = (unsigned char)b64[i] ^ 0x5a;
	sodium_memzero(b64, sizeof(b64));
	sodium_memzero(pair, sizeof(pair));

	/* The header's value existed only in the fetch's guarded buffer and libgit2's copies. */
	ck_assert_int_eq(memory_hits(masked, n, 0x5a), 0);

	/* And the search finds it where it is. */
	{
		char *planted = malloc(n + 1);

		ck_assert_ptr_nonnull(planted);
		for (size_t i = 0; i < n; i++)
			planted[i] = (char)(masked[i] ^ 0x5a);
		planted[n] = '\0';
		ck_assert_int_ge(memory_hits(masked, n, 0x5a), 1);
		sodium_memzero(planted, n);
		free(planted);
	}
}
END_TEST

/*
 * Blocks libgit2 frees are wiped, large ones too (their whole pages are given back rather than
 * zeroed): a marker written at the start, on the inner pages and at the end of blocks of 40 and
 * 100 KiB (from the heap) and 256 KiB (mapped of its own by glibc) is gone once they are freed,
 * and a block allocated just after the heap ones is left as it was.
 */
START_TEST(test_large_blocks_wiped)
{
	static const char marker[] = "large-block-marker-7c1f";
	static const size_t sizes[] = {40 * 1024, 100 * 1024, 256 * 1024};
	size_t n = sizeof(marker) - 1;
	unsigned char masked[sizeof(marker)];

	for (size_t i = 0; i < n; i++)
		masked[i] = (unsigned char)marker[i] ^ 0x5a;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t size = sizes[k];
		git_buf b = {0};
		char *data = calloc(1, size), *guard;

		ck_assert_ptr_nonnull(data);
		for (size_t off = 0; off + n <= size; off += 8192)
			memcpy(data + off, marker, n);
		memcpy(data + size - n, marker, n);
		ck_assert_int_eq(git_buf_set(&b, data, size), 0); /* libgit2's allocator */
		sodium_memzero(data, size);
		free(data);
		guard = malloc(4096);
		ck_assert_ptr_nonnull(guard);
		memset(guard, 'g', 4096);
		ck_assert_int_ge(memory_hits(masked, n, 0x5a), (int)(size / 8192));
		git_buf_dispose(&b);
		ck_assert_int_eq(memory_hits(masked, n, 0x5a), 0);
		for (size_t i = 0; i < 4096; i++)
			ck_assert_int_eq(guard[i], 'g');
		free(guard);
	}
}
END_TEST

START_TEST(test_user_config_ignored)
{
	struct git_fetch_global_opts o = {.user_config = true};
	_cleanup_git_config_ git_config *cfg = NULL;
	git_buf v = {0};
	FILE *f;
	struct err e;

	f = fopen(tpath(".gitconfig"), "we");
	ck_assert_ptr_nonnull(f);
	fputs("[user]\n\tname = FromHome\n", f);
	fclose(f);
	setenv("HOME", tmpdir, 1);
	setenv("XDG_CONFIG_HOME", tpath("xdg"), 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);

	/* The fixture's init cleared the search path; start again with the user's config. */
	git_fetch_global_shutdown();
	ck_assert_msg(git_fetch_global_init(&o, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(git_config_open_default(&cfg), 0);
	ck_assert_int_eq(git_config_get_string_buf(&v, cfg, "user.name"), 0);
	ck_assert_str_eq(v.ptr, "FromHome");
	git_buf_dispose(&v);
	git_config_free(TAKE_PTR(cfg));

	git_fetch_global_shutdown();
	ck_assert_msg(git_fetch_global_init(NULL, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(git_config_open_default(&cfg), 0);
	ck_assert_int_eq(git_config_get_string_buf(&v, cfg, "user.name"), GIT_ENOTFOUND);
}
END_TEST

START_TEST(test_ca_locations)
{
	struct git_fetch_global_opts o = {.ca_file = "/nonexistent/ca.pem"};
	struct err e;

	git_fetch_global_shutdown();
	ck_assert_int_lt(git_fetch_global_init(&o, &e), 0);
	ck_assert_msg(strstr(e.msg, "/nonexistent/ca.pem"), "%s", e.msg);
	if (access("/etc/ssl/certs/ca-certificates.crt", R_OK) == 0) {
		o.ca_file = "/etc/ssl/certs/ca-certificates.crt";
		ck_assert_msg(git_fetch_global_init(&o, &e) == 0, "%s", e.msg);
	} else {
		ck_assert_msg(git_fetch_global_init(NULL, &e) == 0, "%s", e.msg);
	}
}
END_TEST

struct membuf {
	unsigned char *data;
	size_t len, cap;
	int stop_after; /* > 0: fail the n-th call */
	int calls;
};

static int to_membuf(void *userdata, const void *buf, size_t len)
{
	struct membuf *m = userdata;

	if (m->stop_after && ++m->calls >= m->stop_after)
		return -1;
	if (m->len + len > m->cap) {
		m->cap = (m->len + len) * 2;
		m->data = realloc(m->data, m->cap);
		ck_assert_ptr_nonnull(m->data);
	}
	memcpy(m->data + m->len, buf, len);
	m->len += len;
	return 0;
}

static int receive_flags(git_repository *repo, unsigned flags, const struct membuf *m, size_t upto,
                         size_t chunk, const git_oid *tip, const char *ref, git_oid *ret_commit,
                         struct git_pack_stats *st, struct err *e)
{
	_cleanup_git_pack_receiver_ struct git_pack_receiver *r = NULL;
	int rc;

	rc = git_pack_receiver_new(repo, flags, &r, e);
	if (rc < 0)
		return rc;
	for (size_t off = 0; off < upto; off += chunk) {
		rc = git_pack_receiver_append(r, m->data + off,
		                              upto - off < chunk ? upto - off : chunk, e);
		if (rc < 0)
			return rc;
	}
	return git_pack_receiver_finish(r, tip, ref, ret_commit, st, e);
}

static int receive(git_repository *repo, const struct membuf *m, size_t upto, size_t chunk,
                   const git_oid *tip, const char *ref, git_oid *ret_commit,
                   struct git_pack_stats *st, struct err *e)
{
	return receive_flags(repo, 0, m, upto, chunk, tip, ref, ret_commit, st, e);
}

static void tree_of(git_repository *repo, const git_oid *commit, git_oid *ret)
{
	git_commit *c = NULL;

	ck_assert_int_eq(git_commit_lookup(&c, repo, commit), 0);
	*ret = *git_commit_tree_id(c);
	git_commit_free(c);
}

static void fsck(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "git -C '%s' fsck --full --strict --no-dangling >/dev/null 2>&1",
	         dir);
	ck_assert_msg(system(cmd) == 0, "git fsck found problems in %s", dir);
}

START_TEST(test_pack_roundtrip)
{
	_cleanup_git_repository_ git_repository *host = fresh_repo("host", true);
	_cleanup_git_repository_ git_repository *guest = fresh_repo("guest", false);
	struct membuf m = {0};
	struct git_fetch_result res;
	struct git_pack_stats out, in;
	git_oid commit, t1, t2;
	struct err e;

	fetch_ok(host, "main", &res);
	ck_assert_msg(git_pack_write(host, &res.tip, NULL, 0, to_membuf, &m, &out, &e) == 0, "%s",
	              e.msg);
	ck_assert_uint_eq(out.bytes, m.len);
	ck_assert_uint_gt(out.objects, 10);
	ck_assert_int_eq(memcmp(m.data, "PACK", 4), 0);

	ck_assert_msg(receive(guest, &m, m.len, 1000, &res.tip, res.local_ref, &commit, &in, &e) ==
	                  0,
	              "%s", e.msg);
	ck_assert(git_oid_equal(&commit, &res.commit));
	ck_assert_uint_eq(in.objects, out.objects);
	ck_assert_uint_eq(in.bytes, m.len);
	assert_ref(guest, "refs/remotes/origin/main", ts_id(&ids, "c4"));
	tree_of(host, &res.commit, &t1);
	tree_of(guest, &commit, &t2);
	ck_assert(git_oid_equal(&t1, &t2));
	/* The whole history came along: c1 is there. */
	{
		git_oid c1;
		git_commit *c = NULL;

		ck_assert_int_eq(git_oid_fromstr(&c1, ts_id(&ids, "c1")), 0);
		ck_assert_int_eq(git_commit_lookup(&c, guest, &c1), 0);
		git_commit_free(c);
	}
	fsck(tpath("guest"));
	free(m.data);
}
END_TEST

START_TEST(test_pack_tag_and_have)
{
	_cleanup_git_repository_ git_repository *host = fresh_repo("host", true);
	_cleanup_git_repository_ git_repository *guest = fresh_repo("guest", true);
	_cleanup_git_repository_ git_repository *empty = fresh_repo("empty", true);
	struct membuf full = {0}, delta = {0};
	struct git_fetch_result v1, main_res;
	struct git_pack_stats st_full, st_delta;
	git_oid commit;
	struct err e;

	fetch_ok(host, "v1", &v1);
	fetch_ok(host, "main", &main_res);

	/* The annotated tag travels as the tag object plus its commit's history. */
	ck_assert_msg(git_pack_write(host, &v1.tip, NULL, 0, to_membuf, &full, &st_full, &e) == 0,
	              "%s", e.msg);
	ck_assert_msg(
	    receive(guest, &full, full.len, 65536, &v1.tip, "refs/tags/v1", &commit, NULL, &e) == 0,
	    "%s", e.msg);
	assert_oid(&commit, ts_id(&ids, "c2"));
	assert_ref(guest, "refs/tags/v1", ts_id(&ids, "tag_v1"));

	/* A re-sync: only what c2 does not already have, which the guest can index. */
	ck_assert_msg(git_pack_write(host, &main_res.tip, &v1.commit, 1, to_membuf, &delta,
	                             &st_delta, &e) == 0,
	              "%s", e.msg);
	ck_assert_uint_lt(st_delta.objects, st_full.objects);
	ck_assert_uint_lt(delta.len, full.len / 4); /* the 512 KiB blob is not sent again */
	ck_assert_msg(
	    receive(guest, &delta, delta.len, 4096, &main_res.tip, NULL, &commit, NULL, &e) == 0,
	    "%s", e.msg);
	assert_oid(&commit, ts_id(&ids, "c4"));
	fsck(tpath("guest"));

	/* The same partial pack cannot stand alone, whether the repository is asked or not. */
	ck_assert_int_lt(
	    receive(empty, &delta, delta.len, 4096, &main_res.tip, NULL, &commit, NULL, &e), 0);
	ck_assert_int_lt(receive_flags(empty, GIT_PACK_INTO_EMPTY, &delta, delta.len, 4096,
	                               &main_res.tip, NULL, &commit, NULL, &e),
	                 0);
	/* Taken as into an empty repository, a whole pack stands alone (as a checkout's stage takes
	 * it); into guest, which has c2, the partial one needed the repository's objects. */
	ck_assert_msg(receive_flags(empty, GIT_PACK_INTO_EMPTY, &full, full.len, 4096, &v1.tip,
	                            NULL, &commit, NULL, &e) == 0,
	              "%s", e.msg);
	assert_oid(&commit, ts_id(&ids, "c2"));
	fsck(tpath("empty"));
	free(full.data);
	free(delta.data);
}
END_TEST

static int count_packs(const char *dir)
{
	char path[400];
	DIR *d;
	struct dirent *de;
	int n = 0;

	snprintf(path, sizeof(path), "%s/objects/pack", dir);
	d = opendir(path);
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

START_TEST(test_pack_broken_streams)
{
	_cleanup_git_repository_ git_repository *host = fresh_repo("host", true);
	_cleanup_git_repository_ git_repository *guest = fresh_repo("guest", true);
	struct membuf m = {0}, stopped = {.stop_after = 3};
	struct git_fetch_result res;
	git_oid commit, other;
	struct err e;

	fetch_ok(host, "main", &res);
	ck_assert_int_eq(git_pack_write(host, &res.tip, NULL, 0, to_membuf, &m, NULL, &e), 0);

	/* Cut short: refused at the end, and no pack file stays behind. */
	ck_assert_int_lt(receive(guest, &m, m.len / 2, 4096, &res.tip, NULL, &commit, NULL, &e), 0);
	ck_assert_int_eq(count_packs(tpath("guest")), 0);
	/* Nothing at all. */
	ck_assert_int_lt(receive(guest, &m, 0, 4096, &res.tip, NULL, &commit, NULL, &e), 0);
	ck_assert_int_eq(e.code, ENODATA);
	/* A flipped byte in the middle. */
	m.data[m.len / 2] ^= 0xff;
	ck_assert_int_lt(receive(guest, &m, m.len, 4096, &res.tip, NULL, &commit, NULL, &e), 0);
	ck_assert_int_eq(count_packs(tpath("guest")), 0);
	m.data[m.len / 2] ^= 0xff;
	/* A whole pack that lacks the tip asked for. */
	ck_assert_int_eq(git_oid_fromstr(&other, "0123456789abcdef0123456789abcdef01234567"), 0);
	ck_assert_int_lt(receive(guest, &m, m.len, 4096, &other, NULL, &commit, NULL, &e), 0);
	ck_assert_msg(strstr(e.msg, "did not arrive"), "%s", e.msg);

	/* The sink stops the stream. */
	ck_assert_int_lt(git_pack_write(host, &res.tip, NULL, 0, to_membuf, &stopped, NULL, &e), 0);
	ck_assert_int_eq(e.code, EPIPE);
	free(m.data);
	free(stopped.data);
}
END_TEST

/*
 * The daemon sets libgit2 up only while a pack is taken in: the checks of a request's ref and
 * commit must hold without it (libgit2 records a refusal through an allocator it has not set).
 */
START_TEST(test_checks_without_setup)
{
	struct err e;
	git_oid oid;

	ck_assert_int_lt(git_fetch_ref_check("refs/heads/a..b", &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_lt(git_fetch_ref_check("a b", &e), 0);
	ck_assert_int_eq(git_fetch_ref_check("refs/heads/feature/x-1.2", &e), 0);
	ck_assert_int_lt(git_fetch_oid_parse(&oid, "zz"
	                                           "0123456789abcdef0123456789abcdef012345"),
	                 0);
	ck_assert_int_lt(git_fetch_oid_parse(&oid, "0123456789abcdef"), 0);
	ck_assert_int_lt(git_fetch_oid_parse(&oid, NULL), 0);
	ck_assert_int_eq(git_fetch_oid_parse(&oid, "0123456789abcdef0123456789ABCDEF01234567"), 0);
	ck_assert_int_eq(oid.id[0], 0x01);
	/* Nothing stays set up: a later set-up installs its allocator first. */
	ck_assert_int_eq(git_libgit2_init(), 1);
	git_libgit2_shutdown();
}
END_TEST

static bool nodelay(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	return getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0 && v;
}

/*
 * git_fetch_nodelay() turns Nagle off on the process's TCP sockets: a connected pair on
 * loopback, one of them moved past a hole of more than 30 closed descriptors; other descriptors (a
 * unix socket, a file) are left as they are.
 */
START_TEST(test_nodelay)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), cl, peer, far, u[2];
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(connect(cl, (struct sockaddr *)&sa, sizeof(sa)), 0);
	peer = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(peer, 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u), 0);
	far = fcntl(peer, F_DUPFD_CLOEXEC, peer + 40);
	ck_assert_int_ge(far, peer + 40);
	ck_assert(!nodelay(cl) && !nodelay(far));

	git_fetch_nodelay();
	ck_assert(nodelay(cl));
	ck_assert(nodelay(peer));
	ck_assert(nodelay(far));
	ck_assert(nodelay(l)); /* a listener is a TCP socket too: harmless */
	ck_assert(!nodelay(u[0]) && !nodelay(fd));
	close(far);
	close(peer);
	close(cl);
	close(l);
	close(u[0]);
	close(u[1]);
	close(fd);
}
END_TEST

static Suite *git_fetch_suite(void)
{
	Suite *s = suite_create("git_fetch");
	TCase *tc = tcase_create("core");
	TCase *bare = tcase_create("without setup");

	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(bare, test_checks_without_setup);
	tcase_add_test(bare, test_nodelay);
	suite_add_tcase(s, bare);
	tcase_add_test(tc, test_fetch_branch);
	tcase_add_test(tc, test_fetch_full_branch_name_and_default);
	tcase_add_test(tc, test_fetch_tags);
	tcase_add_test(tc, test_fetch_commit_ids);
	tcase_add_test(tc, test_fetch_inner_commit);
	tcase_add_test(tc, test_wrong_token);
	tcase_add_test(tc, test_missing_ref);
	tcase_add_test(tc, test_redirect_to_other_host_refused);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_token_nowhere);
	tcase_add_test(tc, test_header_wiped_from_memory);
	tcase_add_test(tc, test_large_blocks_wiped);
	tcase_add_test(tc, test_user_config_ignored);
	tcase_add_test(tc, test_ca_locations);
	tcase_add_test(tc, test_pack_roundtrip);
	tcase_add_test(tc, test_pack_tag_and_have);
	tcase_add_test(tc, test_pack_broken_streams);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(git_fetch_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
