/* SPDX-License-Identifier: Apache-2.0 */
#include "git_publish.h"

#include <errno.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "git_fetch.h"
#include "log.h"

#define AUTH_PREFIX "Authorization: Basic "
/* Above the loose (1) and pack (2) backends: new objects are written here, in memory. */
#define MEMPACK_PRIORITY 1000

DEFINE_TRIVIAL_CLEANUP_FUNC(git_index *, git_index_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_signature *, git_signature_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_config_entry *, git_config_entry_free)

static int lg2(struct err *err, int rc, const char *what)
{
	const git_error *e = git_error_last();

	return err_set(err, ERR_FAILED, rc == GIT_ENOTFOUND ? ENOENT : EIO, "%s: %s", what,
	               e && e->message ? e->message : "unknown libgit2 error");
}

/* filter.<name>.clean|smudge|process, or core.worktree (config names are lower case). */
static bool config_name_refused(const char *name)
{
	const char *dot;

	if (strcmp(name, "core.worktree") == 0)
		return true;
	if (strncmp(name, "filter.", 7) != 0)
		return false;
	dot = strrchr(name, '.');
	return dot > name + 6 && (strcmp(dot, ".clean") == 0 || strcmp(dot, ".smudge") == 0 ||
	                          strcmp(dot, ".process") == 0);
}

/*
 * Refuse what would make the commit differ from git's, or read outside the work tree. A plain
 * walk over every entry, not a regex (libgit2's pcre2 matching leaks its match frames here).
 */
static int config_check(git_repository *repo, const char *work_dir, struct err *err)
{
	_cleanup_git_config_ git_config *cfg = NULL;
	git_config_iterator *it = NULL;
	git_config_entry *e;
	char bad[256] = "";
	int rc;

	rc = git_repository_config_snapshot(&cfg, repo);
	if (rc >= 0)
		rc = git_config_iterator_new(&it, cfg);
	if (rc < 0)
		return lg2(err, rc, "reading the checkout's git config");
	while (!bad[0] && git_config_next(&e, it) == 0)
		if (config_name_refused(e->name))
			snprintf(bad, sizeof(bad), "%s", e->name);
	git_config_iterator_free(it);
	if (strncmp(bad, "filter.", 7) == 0)
		return err_set(err, ERR_REFUSED, EPERM,
		               "%s configures a filter driver (%s): remove it from .git/config to "
		               "publish",
		               work_dir, bad);
	if (bad[0])
		return err_set(err, ERR_REFUSED, EPERM,
		               "%s sets core.worktree: remove it from .git/config to publish",
		               work_dir);
	return 0;
}

int git_publish_open(const char *work_dir, git_repository **ret_repo, struct err *err)
{
	_cleanup_git_repository_ git_repository *repo = NULL;
	_cleanup_git_odb_ git_odb *odb = NULL;
	_cleanup_free_ char *gitdir = NULL;
	_cleanup_free_ char *commondir = NULL;
	git_odb_backend *mem = NULL;
	struct stat st;
	int rc;

	if (asprintf(&gitdir, "%s/.git", work_dir) < 0)
		return err_oom(err);
	if (lstat(work_dir, &st) < 0)
		return err_errno(err, "cannot publish %s", work_dir);
	if (!S_ISDIR(st.st_mode))
		return err_set(err, ERR_REFUSED, ENOTDIR, "cannot publish %s: not a directory",
		               work_dir);
	if (lstat(gitdir, &st) < 0)
		return errno == ENOENT ? err_set(err, ERR_REFUSED, ENOENT,
		                                 "%s is not a git checkout: there is no .git "
		                                 "directory (check the app out from a spec first)",
		                                 work_dir)
		                       : err_errno(err, "cannot publish %s", work_dir);
	if (!S_ISDIR(st.st_mode))
		return err_set(
		    err, ERR_REFUSED, EPERM,
		    "%s/.git is not a directory (a gitfile or a link): cannot publish it",
		    work_dir);
	if (asprintf(&commondir, "%s/commondir", gitdir) < 0)
		return err_oom(err);
	if (lstat(commondir, &st) == 0)
		return err_set(
		    err, ERR_REFUSED, EPERM,
		    "%s/.git has a commondir file (a linked work tree): cannot publish it",
		    work_dir);
	rc = git_repository_open_bare(&repo, gitdir);
	if (rc < 0) {
		lg2(err, rc, "libgit2");
		return err_wrap(err, "opening the checkout %s", work_dir);
	}
	rc = git_repository_set_workdir(repo, work_dir, 0);
	if (rc < 0)
		return lg2(err, rc, "setting the work tree");
	if (config_check(repo, work_dir, err) < 0)
		return err_ret(err);
	rc = git_repository_odb(&odb, repo);
	if (rc >= 0)
		rc = git_mempack_new(&mem);
	if (rc >= 0) {
		rc = git_odb_add_backend(odb, mem, MEMPACK_PRIORITY);
		if (rc < 0)
			mem->free(mem);
	}
	if (rc < 0)
		return lg2(err, rc, "setting up the in-memory object database");
	*ret_repo = TAKE_PTR(repo);
	return 0;
}

int git_publish_commit(git_repository *repo, const char *name, const char *email,
                       const char *message, git_oid *ret_base, git_oid *ret_commit, struct err *err)
{
	_cleanup_git_reference_ git_reference *head = NULL;
	_cleanup_git_commit_ git_commit *parent = NULL;
	_cleanup_git_tree_ git_tree *base_tree = NULL;
	_cleanup_git_tree_ git_tree *tree = NULL;
	_cleanup_(git_index_freep) git_index *idx = NULL;
	_cleanup_(git_signature_freep) git_signature *sig = NULL;
	const git_commit *parents[1];
	git_oid tree_id, id;
	int rc;

	if (!name || !name[0] || !email || !email[0] || strpbrk(name, "<>\n") ||
	    strpbrk(email, "<>\n "))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the author needs a name and an email address (\"Name <email>\")");
	rc = git_repository_head(&head, repo);
	if (rc < 0) {
		lg2(err, rc, "libgit2");
		return err_wrap(err, "reading the checkout's HEAD");
	}
	rc = git_reference_peel((git_object **)&parent, head, GIT_OBJECT_COMMIT);
	if (rc >= 0)
		rc = git_commit_tree(&base_tree, parent);
	if (rc < 0)
		return lg2(err, rc, "reading HEAD's commit");

	/* A fresh index from HEAD's tree: the user's .git/index is neither read nor written. */
	rc = git_index_new(&idx);
	if (rc >= 0)
		rc = git_repository_set_index(repo, idx);
	if (rc >= 0)
		rc = git_index_read_tree(idx, base_tree);
	if (rc >= 0)
		rc = git_index_add_all(idx, NULL, GIT_INDEX_ADD_DEFAULT, NULL, NULL);
	if (rc >= 0)
		rc = git_index_update_all(idx, NULL, NULL, NULL);
	if (rc >= 0)
		rc = git_index_write_tree(&tree_id, idx);
	if (rc < 0)
		return lg2(err, rc, "staging the work tree's changes");
	if (git_oid_equal(&tree_id, git_tree_id(base_tree)))
		return err_set(err, ERR_REFUSED, ENODATA,
		               "nothing to publish: the work tree has no changes since commit %s",
		               git_oid_tostr_s(git_commit_id(parent)));
	rc = git_tree_lookup(&tree, repo, &tree_id);
	if (rc >= 0)
		rc = git_signature_now(&sig, name, email);
	if (rc < 0)
		return lg2(err, rc, "preparing the commit");
	parents[0] = parent;
	rc = git_commit_create(&id, repo, NULL, sig, sig, NULL,
	                       message && message[0] ? message : GIT_PUBLISH_DEFAULT_MESSAGE, tree,
	                       1, parents);
	if (rc < 0)
		return lg2(err, rc, "writing the commit");
	*ret_base = *git_commit_id(parent);
	*ret_commit = id;
	return 0;
}

int git_publish_branch_check(const char *branch, struct err *err)
{
	char full[GIT_FETCH_REF_MAX];
	int valid = 0, n;

	if (!branch || !branch[0] || branch[0] == '-' || strncmp(branch, "refs/", 5) == 0 ||
	    strpbrk(branch, ":*?[\\ "))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "'%s' is not a branch name (give the short name: feature/x)",
		               branch ? branch : "");
	n = snprintf(full, sizeof(full), "refs/heads/%s", branch);
	if (n < 0 || (size_t)n >= sizeof(full) || git_reference_name_is_valid(&valid, full) < 0 ||
	    !valid)
		return err_set(err, ERR_REFUSED, EINVAL, "'%s' is not a valid branch name", branch);
	return 0;
}

/* ---- the push ---- */

struct push_ctx {
	const char *url;
	const char *branch;
	char refused[512]; /* the remote's reason, when it refused the update */
};

static int on_update(const char *refname, const char *status, void *payload)
{
	struct push_ctx *p = payload;

	if (status && !p->refused[0])
		snprintf(p->refused, sizeof(p->refused), "%s: %s", refname, status);
	return 0;
}

/* Connected, the refs advertised, the pack not sent yet: see git_fetch_nodelay(). */
static int on_negotiation(const git_push_update **updates, size_t len, void *payload)
{
	(void)updates;
	(void)len;
	(void)payload;
	git_fetch_nodelay();
	return 0;
}

/* Word a failed push; the token and the header never appear. */
static int push_err(struct err *err, int rc, const struct push_ctx *p, const char *header,
                    const struct git_publish_push_spec *spec)
{
	const git_error *e = git_error_last();
	const char *msg = e && e->message ? e->message : "unknown libgit2 error";

	if (rc == GIT_EAUTH || strstr(msg, "status code: 401"))
		return err_set(err, ERR_REFUSED, EACCES,
		               "authentication failed for %s: %s (check that the token is valid "
		               "and may push to the repository)",
		               p->url,
		               spec->token_len ? "the server refused the token"
		                               : "the server requires a token and none was given");
	if (strstr(msg, "status code: 403"))
		return err_set(err, ERR_REFUSED, EACCES,
		               "pushing to %s was refused (HTTP 403): the token may not push to "
		               "the repository",
		               p->url);
	if (strstr(msg, "status code: 404"))
		return err_set(err, ERR_REFUSED, ENOENT,
		               "repository %s not found (HTTP 404), or the token may not reach it",
		               p->url);
	if (rc == GIT_ENONFASTFORWARD || strstr(msg, "non-fastforward") ||
	    strstr(msg, "not present locally"))
		return err_set(err, ERR_REFUSED, EEXIST,
		               "branch %s already exists at %s and the commit does not build on "
		               "it: publish to a new branch (publishing never force-pushes)",
		               p->branch, p->url);
	if ((spec->token_len && memmem(msg, strlen(msg), spec->token, spec->token_len)) ||
	    (header && strstr(msg, header + strlen(AUTH_PREFIX))))
		msg = "libgit2 failed with a message that quoted the credential (withheld)";
	return err_set(err, ERR_FAILED, EIO, "pushing branch %s to %s: %s", p->branch, p->url, msg);
}

static void auth_header_freep(char **h)
{
	if (*h)
		sodium_free(*h);
}

int git_publish_push(git_repository *repo, const git_oid *commit,
                     const struct git_publish_push_spec *spec, struct err *err)
{
	const char *user =
	    spec->username && spec->username[0] ? spec->username : GIT_FETCH_DEFAULT_USER;
	_cleanup_git_remote_ git_remote *remote = NULL;
	_cleanup_git_reference_ git_reference *ref = NULL;
	git_remote_create_options co;
	git_push_options po;
	struct push_ctx p = {.url = spec->clone_url, .branch = spec->branch};
	char local[GIT_FETCH_REF_MAX], refspec[2 * GIT_FETCH_REF_MAX + 2];
	_cleanup_(auth_header_freep) char *header = NULL;
	char *specs[1] = {refspec}, *hdrs[1];
	git_strarray refspecs = {specs, 1};
	int rc;

	if (git_fetch_url_check(spec->clone_url, spec->token_len > 0, err) < 0 ||
	    git_publish_branch_check(spec->branch, err) < 0)
		return err_ret(err);
	/* The header is built (and the token checked) before anything is written. */
	if (spec->token_len &&
	    git_fetch_auth_header(user, spec->token, spec->token_len, &header, err) < 0)
		return err_ret(err);
	/* libgit2 pushes refs, not ids: a private ref in the private repository. */
	snprintf(local, sizeof(local), "refs/heads/%s", spec->branch);
	snprintf(refspec, sizeof(refspec), "%s:%s", local, local);
	rc = git_reference_create(&ref, repo, local, commit, 1, "publish");
	if (rc < 0)
		return lg2(err, rc, "preparing the push");
	if (git_remote_create_options_init(&co, GIT_REMOTE_CREATE_OPTIONS_VERSION) < 0 ||
	    git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION) < 0)
		return lg2(err, -1, "initializing libgit2 options");
	co.repository = repo;
	co.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	rc = git_remote_create_with_opts(&remote, spec->clone_url, &co);
	if (rc < 0)
		return lg2(err, rc, "setting up the remote");
	if (header) {
		hdrs[0] = header;
		po.custom_headers.strings = hdrs;
		po.custom_headers.count = 1;
	}
	po.proxy_opts.type = GIT_PROXY_NONE;
	po.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	po.callbacks.push_update_reference = on_update;
	po.callbacks.push_negotiation = on_negotiation;
	po.callbacks.payload = &p;
	log_debug("pushing %s to %s at %s", git_oid_tostr_s(commit), local, spec->clone_url);
	rc = git_remote_push(remote, &refspecs, &po);
	if (rc < 0)
		push_err(err, rc, &p, header, spec);
	else if (p.refused[0])
		rc = err_set(err, ERR_REFUSED, EPERM, "%s refused the push of branch %s: %s",
		             spec->clone_url, spec->branch, p.refused);
	return rc < 0 ? err_ret(err) : 0;
}
