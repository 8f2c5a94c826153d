/* SPDX-License-Identifier: Apache-2.0 */
#include "checkout_stage.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "git_pack.h"
#include "log.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* renameat2(2) through the system call: musl (the static build) has no wrapper. */
static int rename2(int olddfd, const char *oldname, int newdfd, const char *newname, unsigned flags)
{
	return (int)syscall(SYS_renameat2, olddfd, oldname, newdfd, newname, flags);
}

#define STAGE_SUFFIX ".checkout-new"
#define OLD_SUFFIX ".checkout-old"
/* Directory levels a walk descends, one open descriptor each. */
#define WALK_DEPTH_MAX 512

struct checkout_stage {
	char *app_dir;
	char *base;       /* "app" */
	char *stage_name; /* ".app.checkout-new" */
	char *old_name;   /* ".app.checkout-old" */
	char *stage_path; /* "/workspace/.app.checkout-new" */
	char *clone_url;
	int parent_fd;
	int stage_fd;
	uid_t uid;
	gid_t gid;
	mode_t mode;
	unsigned int flags;
	checkout_hook_fn hook;
	void *hook_userdata;
	git_repository *repo;
	git_oid commit;
	bool checked_out;
	bool swapped;
};

void checkout_hook_kill_at(void *userdata, const char *point)
{
	if (userdata && strcmp(userdata, point) == 0)
		raise(SIGKILL);
}

static void hook(struct checkout_stage *s, const char *point)
{
	log_debug("checkout of %s: %s", s->app_dir, point);
	if (s->hook)
		s->hook(s->hook_userdata, point);
}

/*
 * Remove name (relative to dfd) and everything below it without following a symbolic link:
 * every directory is opened with O_NOFOLLOW relative to its parent's descriptor, so a link
 * swapped in by the tree's owner is unlinked, never entered. Does not cross into another
 * filesystem (EXDEV) and gives up below WALK_DEPTH_MAX levels (ELOOP). A missing name is fine.
 */
static int remove_tree_at(int dfd, const char *name, dev_t dev, int depth)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	struct stat st;
	int r = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (st.st_dev != dev)
		return -EXDEV;
	if (depth >= WALK_DEPTH_MAX)
		return -ELOOP;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP) /* replaced meanwhile */
			return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
		return errno == ENOENT ? 0 : -errno;
	}
	/* A read-only directory (a module cache) must be writable to be emptied; no-op as root. */
	if ((st.st_mode & 0700) != 0700 && fchmod(fd, (st.st_mode | 0700) & 07777) < 0)
		log_debug("making %s writable to remove it: %m", name);
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1;
	while ((de = readdir(d))) {
		int k;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		k = remove_tree_at(dirfd(d), de->d_name, dev, depth + 1);
		if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	if (r < 0)
		return r;
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int remove_tree(int parent_fd, const char *name)
{
	struct stat st;

	if (fstat(parent_fd, &st) < 0)
		return -errno;
	return remove_tree_at(parent_fd, name, st.st_dev, 0);
}

/* chown everything below the directory fd (which this takes over), never following a link. */
static int chown_tree_fd(int fd, uid_t uid, gid_t gid, int depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth >= WALK_DEPTH_MAX) {
		close(fd);
		return -ELOOP;
	}
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((de = readdir(d)) && r == 0) {
		struct stat st;
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fchownat(dirfd(d), de->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			r = -errno;
			break;
		}
		r = chown_tree_fd(sub, uid, gid, depth + 1);
	}
	closedir(d);
	return r;
}

static int fsync_dir(int fd, const char *what, struct err *err)
{
	if (fsync(fd) < 0)
		return err_errno(err, "flushing %s to disk", what);
	return 0;
}

/* Split an absolute app directory into its parent and last component; names beside it. */
static int split_app_dir(const char *app_dir, char **ret_dir, char **ret_parent, char **ret_base,
                         struct err *err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_free_ char *parent = NULL;
	char *slash;
	size_t n;

	if (!app_dir || app_dir[0] != '/')
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the app directory must be an absolute path");
	dir = strdup(app_dir);
	if (!dir)
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	slash = strrchr(dir, '/');
	if (!slash[1] || strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "%s cannot be an app directory", app_dir);
	if (strlen(slash + 1) + strlen(STAGE_SUFFIX) + 1 > NAME_MAX)
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "the name of %s is too long",
		               app_dir);
	parent = slash == dir ? strdup("/") : strndup(dir, slash - dir);
	if (!parent)
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	*ret_base = strdup(slash + 1);
	if (!*ret_base)
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	*ret_parent = TAKE_PTR(parent);
	*ret_dir = TAKE_PTR(dir);
	return 0;
}

static bool exists_at(int dfd, const char *name, struct stat *st)
{
	struct stat tmp;

	return fstatat(dfd, name, st ? st : &tmp, AT_SYMLINK_NOFOLLOW) == 0;
}

static int recover_at(int parent_fd, const char *app_dir, const char *base, const char *stage,
                      const char *old, enum checkout_recovery *ret, struct err *err)
{
	bool have_app = exists_at(parent_fd, base, NULL);
	bool have_new = exists_at(parent_fd, stage, NULL);
	bool have_old = exists_at(parent_fd, old, NULL);
	enum checkout_recovery action = CHECKOUT_RECOVER_NONE;
	int r;

	if (!have_app && have_new && have_old) {
		/* Between the two renames of a swap: the stage was complete (it was fsync'ed
		 * before the app directory moved). Finish the swap. */
		if (rename2(parent_fd, stage, parent_fd, base, RENAME_NOREPLACE) < 0)
			return err_errno(err, "finishing the interrupted swap of %s", app_dir);
		action = CHECKOUT_RECOVER_FINISHED;
		have_app = true;
		have_new = false;
	} else if (!have_app && have_old) {
		if (rename2(parent_fd, old, parent_fd, base, RENAME_NOREPLACE) < 0)
			return err_errno(err, "restoring %s after an interrupted swap", app_dir);
		action = CHECKOUT_RECOVER_RESTORED;
		have_app = true;
		have_old = false;
	}
	if (have_new) {
		r = remove_tree(parent_fd, stage);
		if (r < 0) {
			errno = -r;
			return err_errno(err, "removing the unfinished checkout %s beside %s",
			                 stage, app_dir);
		}
		if (action == CHECKOUT_RECOVER_NONE)
			action = CHECKOUT_RECOVER_CLEANED;
	}
	if (have_old) {
		r = remove_tree(parent_fd, old);
		if (r < 0) {
			errno = -r;
			return err_errno(err, "removing the old tree %s beside %s", old, app_dir);
		}
		if (action == CHECKOUT_RECOVER_NONE)
			action = CHECKOUT_RECOVER_CLEANED;
	}
	if (action != CHECKOUT_RECOVER_NONE) {
		r = fsync_dir(parent_fd, "the app directory's parent", err);
		if (r < 0)
			return r;
		log_debug("recovered %s: %d", app_dir, (int)action);
	}
	if (ret)
		*ret = action;
	return 0;
}

static int side_names(const char *base, char **ret_stage, char **ret_old, struct err *err)
{
	if (asprintf(ret_stage,
	             "."
	             "%s" STAGE_SUFFIX,
	             base) < 0) {
		*ret_stage = NULL;
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	}
	if (asprintf(ret_old,
	             "."
	             "%s" OLD_SUFFIX,
	             base) < 0) {
		*ret_old = NULL;
		free(*ret_stage);
		*ret_stage = NULL;
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	}
	return 0;
}

int checkout_recover(const char *app_dir, enum checkout_recovery *ret, struct err *err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_free_ char *parent = NULL;
	_cleanup_free_ char *base = NULL;
	_cleanup_free_ char *stage = NULL;
	_cleanup_free_ char *old = NULL;
	_cleanup_close_ int pfd = -1;
	int r;

	r = split_app_dir(app_dir, &dir, &parent, &base, err);
	if (r < 0)
		return r;
	r = side_names(base, &stage, &old, err);
	if (r < 0)
		return r;
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return err_errno(err, "opening %s", parent);
	return recover_at(pfd, dir, base, stage, old, ret, err);
}

void checkout_stage_free(struct checkout_stage *s)
{
	if (!s)
		return;
	if (s->repo)
		git_repository_free(s->repo);
	if (s->stage_fd >= 0)
		close(s->stage_fd);
	if (!s->swapped && s->parent_fd >= 0 && s->stage_name) {
		int r = remove_tree(s->parent_fd, s->stage_name);

		if (r < 0)
			log_debug("removing the stage %s: %s", s->stage_path, strerror(-r));
	}
	if (s->parent_fd >= 0)
		close(s->parent_fd);
	free(s->app_dir);
	free(s->base);
	free(s->stage_name);
	free(s->old_name);
	free(s->stage_path);
	free(s->clone_url);
	free(s);
}

static int stage_config(git_repository *repo, struct err *err)
{
	_cleanup_git_config_ git_config *cfg = NULL;
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
	/* Refuse the NTFS and HFS+ spellings of ".git" too (libgit2 checks paths with these). */
	rc = git_config_set_bool(cfg, "core.protectNTFS", 1);
	if (rc >= 0)
		rc = git_config_set_bool(cfg, "core.protectHFS", 1);
	if (rc < 0)
		return git_fetch_err(err, rc, "writing the stage's config");
	return 0;
}

int checkout_stage_begin(const struct checkout_target *t, struct checkout_stage **ret,
                         struct err *err)
{
	_cleanup_checkout_stage_ struct checkout_stage *s = NULL;
	_cleanup_free_ char *parent = NULL;
	struct stat st;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	s->parent_fd = -1;
	s->stage_fd = -1;
	s->uid = t->uid;
	s->gid = t->gid;
	s->flags = t->flags;
	s->hook = t->hook;
	s->hook_userdata = t->hook_userdata;

	r = split_app_dir(t->app_dir, &s->app_dir, &parent, &s->base, err);
	if (r < 0)
		return r;
	r = side_names(s->base, &s->stage_name, &s->old_name, err);
	if (r < 0)
		return r;
	if (asprintf(&s->stage_path, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "",
	             s->stage_name) < 0) {
		s->stage_path = NULL;
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	}
	if (t->clone_url) {
		r = git_fetch_url_check(t->clone_url, false, err);
		if (r < 0)
			return err_wrap(err, "origin for %s", s->app_dir);
		s->clone_url = strdup(t->clone_url);
		if (!s->clone_url)
			return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	}

	s->parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->parent_fd < 0)
		return err_errno(err, "opening %s, the app directory's parent", parent);
	r = recover_at(s->parent_fd, s->app_dir, s->base, s->stage_name, s->old_name, NULL, err);
	if (r < 0)
		return r;

	s->mode = t->mode & 07777;
	if (exists_at(s->parent_fd, s->base, &st)) {
		if (!S_ISDIR(st.st_mode))
			return err_set(
			    err, ERR_REFUSED, ENOTDIR,
			    "%s is not a directory (a symbolic link?): refusing to replace it",
			    s->app_dir);
		if (!s->mode)
			s->mode = st.st_mode & 07777;
	}
	if (!s->mode)
		s->mode = 0755;

	/* Root's alone while it is built; handed over once complete. */
	if (mkdirat(s->parent_fd, s->stage_name, 0700) < 0)
		return err_errno(err, "creating the stage %s", s->stage_path);
	s->stage_fd =
	    openat(s->parent_fd, s->stage_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->stage_fd < 0)
		return err_errno(err, "opening the stage %s", s->stage_path);
	r = git_fetch_repo_init(s->stage_path, false, &s->repo, err);
	if (r < 0)
		return r;
	r = stage_config(s->repo, err);
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
	return s->stage_path;
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
	_cleanup_git_remote_ git_remote *origin = NULL;
	git_checkout_options co;
	int r;

	if (s->checked_out || s->swapped)
		return err_set(err, ERR_FAILED, EINVAL, "the stage %s is already checked out",
		               s->stage_path);
	r = git_pack_verify_commit(s->repo, commit, err);
	if (r < 0)
		return err_wrap(err, "checking out into %s", s->stage_path);
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
		                s->stage_path);
	}
	if (s->clone_url) {
		git_remote_create_options ro;

		/* The URL as given: no insteadOf rewriting (which also leaks in libgit2 1.5). */
		r = git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
		if (r < 0)
			return git_fetch_err(err, r, "initializing libgit2 options");
		ro.repository = s->repo;
		ro.name = "origin";
		ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF;
		r = git_remote_create_with_opts(&origin, s->clone_url, &ro);
		if (r < 0)
			return git_fetch_err(err, r, "setting origin");
	}
	/* Done with libgit2: no descriptor of it stays open across the hand-over and the swap. */
	git_repository_free(s->repo);
	s->repo = NULL;
	s->commit = *commit;

	if (s->uid != (uid_t)-1 || s->gid != (gid_t)-1) {
		int fd = fcntl(s->stage_fd, F_DUPFD_CLOEXEC, 3);

		r = fd < 0 ? -errno : chown_tree_fd(fd, s->uid, s->gid, 0);
		if (r >= 0 && fchown(s->stage_fd, s->uid, s->gid) < 0)
			r = -errno;
		if (r < 0) {
			errno = -r;
			return err_errno(err, "giving %s to %d:%d", s->stage_path, (int)s->uid,
			                 (int)s->gid);
		}
	}
	if (fchmod(s->stage_fd, s->mode) < 0)
		return err_errno(err, "setting the mode of %s", s->stage_path);
	s->checked_out = true;
	hook(s, "staged");

	if (syncfs(s->stage_fd) < 0)
		return err_errno(err, "flushing %s to disk", s->stage_path);
	hook(s, "fsynced");
	return 0;
}

static void remove_old(struct checkout_stage *s, struct checkout_result *res)
{
	int r = remove_tree(s->parent_fd, s->old_name);

	if (r < 0) {
		log_debug("removing the old tree %s beside %s: %s", s->old_name, s->app_dir,
		          strerror(-r));
		res->old_tree_left = true;
	}
}

static int swap_renames(struct checkout_stage *s, struct err *err)
{
	int r;

	if (rename2(s->parent_fd, s->base, s->parent_fd, s->old_name, RENAME_NOREPLACE) < 0)
		return err_errno(err, "moving %s aside", s->app_dir);
	/* The window: the app directory is missing until the next rename. */
	r = fsync_dir(s->parent_fd, "the app directory's parent", err);
	if (r < 0)
		goto undo;
	hook(s, "renamed-old");
	if (rename2(s->parent_fd, s->stage_name, s->parent_fd, s->base, RENAME_NOREPLACE) < 0) {
		r = err_errno(err, "moving the new tree into %s", s->app_dir);
		goto undo;
	}
	return 0;
undo:
	if (rename2(s->parent_fd, s->old_name, s->parent_fd, s->base, RENAME_NOREPLACE) < 0)
		log_debug("putting %s back: %m", s->app_dir);
	return r;
}

int checkout_stage_swap(struct checkout_stage *s, struct checkout_result *ret, struct err *err)
{
	struct checkout_result res = {0};
	int r;

	if (!s->checked_out || s->swapped)
		return err_set(err, ERR_FAILED, EINVAL, "the stage %s is not ready to swap in",
		               s->stage_path);
	res.commit = s->commit;
	hook(s, "before-swap");
	if (!exists_at(s->parent_fd, s->base, NULL)) {
		if (rename2(s->parent_fd, s->stage_name, s->parent_fd, s->base, RENAME_NOREPLACE) <
		    0)
			return err_errno(err, "moving the new tree into %s", s->app_dir);
		res.method = CHECKOUT_SWAP_FIRST;
	} else if (!(s->flags & CHECKOUT_NO_EXCHANGE) &&
	           rename2(s->parent_fd, s->stage_name, s->parent_fd, s->base, RENAME_EXCHANGE) ==
	               0) {
		res.method = CHECKOUT_SWAP_EXCHANGE;
	} else {
		if (!(s->flags & CHECKOUT_NO_EXCHANGE) && errno != EINVAL && errno != ENOSYS &&
		    errno != EOPNOTSUPP)
			return err_errno(err, "swapping the new tree with %s", s->app_dir);
		r = swap_renames(s, err);
		if (r < 0)
			return r;
		res.method = CHECKOUT_SWAP_RENAMES;
	}
	s->swapped = true;
	/* The swap is done whatever fsync says; a failure only weakens it against power loss. */
	if (fsync(s->parent_fd) < 0)
		log_debug("flushing the parent of %s: %m", s->app_dir);
	hook(s, "after-swap");

	/* After an exchange the stage's name holds the old tree: give it the old tree's name. */
	if (res.method == CHECKOUT_SWAP_EXCHANGE &&
	    rename2(s->parent_fd, s->stage_name, s->parent_fd, s->old_name, RENAME_NOREPLACE) < 0) {
		log_debug("renaming the old tree of %s: %m", s->app_dir);
		if (remove_tree(s->parent_fd, s->stage_name) < 0)
			res.old_tree_left = true;
	}
	if (res.method != CHECKOUT_SWAP_FIRST)
		remove_old(s, &res);
	*ret = res;
	return 0;
}

int checkout_fetch(const struct checkout_target *t, const struct git_fetch_spec *spec,
                   struct git_fetch_result *ret_fetch, struct checkout_result *ret, struct err *err)
{
	_cleanup_checkout_stage_ struct checkout_stage *s = NULL;
	struct git_fetch_result fr;
	int r;

	r = checkout_stage_begin(t, &s, err);
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
	if (ret_fetch)
		*ret_fetch = fr;
	return 0;
}
