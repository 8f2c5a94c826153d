/* SPDX-License-Identifier: Apache-2.0 */
#include "checkout_stage.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_safe.h"
#include "git_pack.h"
#include "log.h"
#include "tree_carry.h"

struct checkout_stage {
	struct dir_swap sw; /* the app directory, the stage's name beside it, the swap */
	char *clone_url;
	int stage_fd;
	uid_t uid;
	gid_t gid;
	mode_t mode;
	git_repository *repo;
	git_oid commit;
	bool checked_out;
	bool swapped;
};

void checkout_stage_hook_kill_at(void *userdata, const char *point)
{
	if (userdata && strcmp(userdata, point) == 0)
		raise(SIGKILL);
}

/* The checkout's own points; the swap's ("before-swap", ...) come from dir_swap. */
static void hook(struct checkout_stage *s, const char *point)
{
	log_debug("checkout of %s: %s", s->sw.dir, point);
	if (s->sw.hook)
		s->sw.hook(s->sw.hook_userdata, point);
}

int checkout_stage_recover(const char *app_dir, enum checkout_recovery *ret, struct err *err)
{
	_cleanup_(dir_swap_dispose) struct dir_swap sw = {.parent_fd = -1};
	enum dir_swap_recovery action;
	int r;

	r = dir_swap_init(&sw, app_dir, 0, NULL, NULL, err);
	if (r < 0)
		return r;
	r = dir_swap_recover(&sw, &action, err);
	if (r < 0)
		return r;
	if (ret)
		*ret = (enum checkout_recovery)action;
	return 0;
}

void checkout_stage_free(struct checkout_stage *s)
{
	if (!s)
		return;
	if (s->repo)
		git_repository_free(s->repo);
	if (s->stage_fd >= 0)
		close(s->stage_fd);
	if (!s->swapped)
		dir_swap_stage_discard(&s->sw);
	else
		(void)dir_swap_old_discard(&s->sw);
	dir_swap_dispose(&s->sw);
	free(s->clone_url);
	free(s);
}

/*
 * The stage's own settings, written in one go (a config transaction: one rewrite of the file,
 * not one per key): the NTFS and HFS+ spellings of ".git" refused too (libgit2 checks paths
 * with these), and origin at clone_url (NULL: none) with git's default fetch refspec. The
 * URL as given: no insteadOf rewriting (which also leaks in libgit2 1.5).
 */
static int stage_config(git_repository *repo, const char *clone_url, struct err *err)
{
	_cleanup_git_config_ git_config *cfg = NULL;
	git_transaction *tx = NULL;
	int symlinks = 1;
	int rc;

	rc = git_repository_config(&cfg, repo);
	if (rc < 0)
		return git_fetch_err(err, rc, "opening the stage's config");
	/* libgit2 probed the filesystem at init and wrote core.symlinks=false where links cannot
	 * be made; there links are checked out as small files holding the target. */
	if (git_config_get_bool(&symlinks, cfg, "core.symlinks") < 0) {
		git_error_clear();
		symlinks = 1;
	}
	if (!symlinks)
		log_debug("the stage's filesystem has no symbolic links: links become files");
	rc = git_config_lock(&tx, cfg);
	if (rc >= 0)
		rc = git_config_set_bool(cfg, "core.protectNTFS", 1);
	if (rc >= 0)
		rc = git_config_set_bool(cfg, "core.protectHFS", 1);
	if (rc >= 0 && clone_url)
		rc = git_config_set_string(cfg, "remote.origin.url", clone_url);
	if (rc >= 0 && clone_url)
		rc = git_config_set_string(cfg, "remote.origin.fetch",
		                           "+refs/heads/*:refs/remotes/origin/*");
	if (rc >= 0)
		rc = git_transaction_commit(tx);
	git_transaction_free(tx);
	if (rc < 0)
		return git_fetch_err(err, rc, "writing the stage's config");
	return 0;
}

int checkout_stage_begin(const struct checkout_target *t, struct checkout_stage **ret,
                         struct err *err)
{
	_cleanup_checkout_stage_ struct checkout_stage *s = NULL;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return err_oom(err);
	s->sw.parent_fd = -1;
	s->stage_fd = -1;
	if (t->clone_url) {
		r = git_fetch_url_check(t->clone_url, false, err);
		if (r < 0)
			return err_wrap(err, "origin for %s", t->app_dir);
		s->clone_url = strdup(t->clone_url);
		if (!s->clone_url)
			return err_oom(err);
	}
	s->uid = t->uid;
	s->gid = t->gid;
	r = dir_swap_init(&s->sw, t->app_dir, t->flags, t->hook, t->hook_userdata, err);
	if (r < 0)
		return r;
	/* Root's alone while it is built; handed over once complete. */
	r = dir_swap_stage_create(&s->sw, t->mode, 07777, &s->mode, &s->stage_fd, err);
	if (r < 0)
		return r;
	r = git_fetch_repo_init(s->sw.new_path, false, &s->repo, err);
	if (r < 0)
		return r;
	r = stage_config(s->repo, s->clone_url, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

git_repository *checkout_stage_repo(struct checkout_stage *s)
{
	return s->repo;
}

const char *checkout_stage_path(const struct checkout_stage *s)
{
	return s->sw.new_path;
}

/*
 * The tree check: every path of the commit (exact, for duplicates) and every symbolic link
 * (lower-cased, so a case-folding filesystem cannot turn "Link/x" into a write through "link").
 */
struct tree_paths {
	char **paths;
	size_t n, cap;
	char **links;
	size_t n_links, cap_links;
	char bad[PATH_MAX];
	const char *why;
};

static void tree_paths_dispose(struct tree_paths *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->paths[i]);
	for (size_t i = 0; i < t->n_links; i++)
		free(t->links[i]);
	free(t->paths);
	free(t->links);
}

static int push_str(char ***v, size_t *n, size_t *cap, char *s)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		char **nv = reallocarray(*v, ncap, sizeof(char *));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = s;
	return 0;
}

static bool bad_name(const char *name)
{
	return !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	       strcasecmp(name, ".git") == 0 || strchr(name, '/');
}

static void lower(char *p)
{
	for (; *p; p++)
		*p = (char)tolower((unsigned char)*p);
}

static int collect_entry(const char *root, const git_tree_entry *e, void *payload)
{
	struct tree_paths *t = payload;
	const char *name = git_tree_entry_name(e);
	char *p, *l;

	if (bad_name(name)) {
		snprintf(t->bad, sizeof(t->bad), "%s%s", root, name);
		t->why = "has a name git refuses to check out";
		return -1;
	}
	if (strlen(root) + strlen(name) >= PATH_MAX) {
		snprintf(t->bad, sizeof(t->bad), "%.200s...", root);
		t->why = "is longer than PATH_MAX";
		return -1;
	}
	if (asprintf(&p, "%s%s", root, name) < 0)
		return -1;
	if (push_str(&t->paths, &t->n, &t->cap, p) < 0) {
		free(p);
		return -1;
	}
	if (git_tree_entry_filemode(e) != GIT_FILEMODE_LINK)
		return 0;
	l = strdup(p);
	if (!l)
		return -1;
	lower(l);
	if (push_str(&t->links, &t->n_links, &t->cap_links, l) < 0) {
		free(l);
		return -1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is a proper prefix (a parent directory) of path a symbolic link of the tree? */
static bool beneath_link(const struct tree_paths *t, const char *path)
{
	char key[PATH_MAX];
	const char *k = key;

	snprintf(key, sizeof(key), "%s", path);
	lower(key);
	for (char *slash = strchr(key, '/'); slash; slash = strchr(slash + 1, '/')) {
		bool hit;

		*slash = '\0';
		hit = bsearch(&k, t->links, t->n_links, sizeof(char *), cmp_str) != NULL;
		*slash = '/';
		if (hit)
			return true;
	}
	return false;
}

/*
 * Refuse a tree that could make a checkout write outside the stage or through a link: an entry
 * beneath a symbolic link of the same tree, two entries with one name, a forbidden name.
 */
static int check_tree(git_repository *repo, const git_oid *commit, struct err *err)
{
	_cleanup_git_commit_ git_commit *c = NULL;
	_cleanup_git_tree_ git_tree *tree = NULL;
	struct tree_paths t = {0};
	char id[GIT_OID_HEXSZ + 1];
	int rc;

	git_oid_tostr(id, sizeof(id), commit);
	rc = git_commit_lookup(&c, repo, commit);
	if (rc >= 0)
		rc = git_commit_tree(&tree, c);
	if (rc < 0)
		return git_fetch_err(err, rc, "reading the commit to check out");
	rc = git_tree_walk(tree, GIT_TREEWALK_PRE, collect_entry, &t);
	if (rc < 0) {
		if (t.why)
			rc = err_set(err, ERR_REFUSED, EPERM, "refusing to check out %s: %s %s", id,
			             t.bad, t.why);
		else
			rc = git_fetch_err(err, rc, "walking the commit's tree");
		goto out;
	}
	if (t.n)
		qsort(t.paths, t.n, sizeof(char *), cmp_str);
	for (size_t i = 1; i < t.n; i++)
		if (strcmp(t.paths[i - 1], t.paths[i]) == 0) {
			rc = err_set(err, ERR_REFUSED, EPERM,
			             "refusing to check out %s: two entries are named %s", id,
			             t.paths[i]);
			goto out;
		}
	if (t.n_links)
		qsort(t.links, t.n_links, sizeof(char *), cmp_str);
	for (size_t i = 0; i < t.n && t.n_links; i++)
		if (beneath_link(&t, t.paths[i])) {
			rc = err_set(
			    err, ERR_REFUSED, EPERM,
			    "refusing to check out %s: %s lies beneath a symbolic link of the "
			    "same tree, and writing it would follow the link",
			    id, t.paths[i]);
			goto out;
		}
	rc = 0;
out:
	tree_paths_dispose(&t);
	return rc;
}

int checkout_stage_checkout(struct checkout_stage *s, const git_oid *commit, struct err *err)
{
	git_checkout_options co;
	int r;

	if (s->checked_out || s->swapped)
		return err_set(err, ERR_FAILED, EINVAL, "the stage %s is already checked out",
		               s->sw.new_path);
	r = git_pack_verify_commit(s->repo, commit, err);
	if (r < 0)
		return err_wrap(err, "checking out into %s", s->sw.new_path);
	r = check_tree(s->repo, commit, err);
	if (r < 0)
		return r;

	r = git_repository_set_head_detached(s->repo, commit);
	if (r < 0)
		return git_fetch_err(err, r, "detaching HEAD at the commit");
	r = git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	if (r < 0)
		return git_fetch_err(err, r, "initializing libgit2 options");
	co.checkout_strategy = GIT_CHECKOUT_FORCE;
	co.dir_mode = 0755;
	/* Every file is new in a fresh stage: never open an existing one, never through a link. */
	co.file_open_flags = O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC;
	r = git_checkout_head(s->repo, &co);
	if (r < 0) {
		git_fetch_err(err, r, "libgit2");
		return err_wrap(err, "checking out %s into %s", git_oid_tostr_s(commit),
		                s->sw.new_path);
	}
	/* Done with libgit2: no descriptor of it stays open across the hand-over and the swap. */
	git_repository_free(s->repo);
	s->repo = NULL;
	s->commit = *commit;

	if (s->uid != (uid_t)-1 || s->gid != (gid_t)-1) {
		r = fs_safe_tree_chown_fd(s->stage_fd, s->uid, s->gid, s->sw.new_path, err);
		if (r < 0)
			return r;
	}
	if (fchmod(s->stage_fd, s->mode) < 0)
		return err_errno(err, "setting the mode of %s", s->sw.new_path);
	s->checked_out = true;
	hook(s, "staged");

	if (syncfs(s->stage_fd) < 0)
		return err_errno(err, "flushing %s to disk", s->sw.new_path);
	hook(s, "fsynced");
	return 0;
}

/* What the old tree built from unchanged lockfiles moves into the stage (tree_carry.h). */
static void carry_from_old_tree(struct checkout_stage *s, struct tree_carry_report *rep)
{
	_cleanup_close_ int old_fd = -1;
	char line[1024];

	memset(rep, 0, sizeof(*rep));
	old_fd =
	    openat(s->sw.parent_fd, s->sw.base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (old_fd < 0)
		return; /* a first checkout, or not a directory (the swap refuses that) */
	tree_carry_run(old_fd, s->stage_fd, s->uid, s->gid, rep);
	tree_carry_report_format(rep, line, sizeof(line));
	if (line[0])
		log_info("checkout of %s: %s", s->sw.dir, line);
	hook(s, "carried");
}

int checkout_stage_swap(struct checkout_stage *s, struct checkout_result *ret, struct err *err)
{
	struct checkout_result res = {0};
	int r;

	if (!s->checked_out || s->swapped)
		return err_set(err, ERR_FAILED, EINVAL, "the stage %s is not ready to swap in",
		               s->sw.new_path);
	res.commit = s->commit;
	carry_from_old_tree(s, &res.carry);
	r = dir_swap_exchange(&s->sw, &res.method, err);
	if (r < 0)
		return r;
	s->swapped = true;
	*ret = res;
	return 0;
}

bool checkout_stage_old_remove(struct checkout_stage *s)
{
	return dir_swap_old_remove(&s->sw);
}

int checkout_stage_fetch(const struct checkout_target *t, const struct git_fetch_spec *spec,
                         struct git_fetch_result *ret_fetch, struct checkout_result *ret,
                         struct err *err)
{
	_cleanup_checkout_stage_ struct checkout_stage *s = NULL;
	/* A runner's: its process ends with the answer, and a thread with it. */
	struct checkout_target own = *t;
	struct git_fetch_result fr;
	int r;

	own.flags |= DIR_SWAP_NO_THREADS;
	r = checkout_stage_begin(&own, &s, err);
	if (r < 0)
		return r;
	r = git_fetch_ref(s->repo, spec, &fr, err);
	if (r < 0)
		return r;
	r = checkout_stage_checkout(s, &fr.commit, err);
	if (r < 0)
		return r;
	r = checkout_stage_swap(s, ret, err);
	if (r < 0)
		return r;
	ret->old_tree_left = checkout_stage_old_remove(s);
	if (ret_fetch)
		*ret_fetch = fr;
	return 0;
}
