/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Publishing the work done in a checkout as a branch (docs/protocol.md §7.9; docs/design.md,
 * "Channel"): the guest makes a commit of the working tree, the host pushes it.
 *
 * Guest side. The checkout belongs to the run user and the app can write all of it, .git too,
 * so it is opened without trusting it: `<app>/.git` must be a real directory (no gitfile, no
 * symbolic link, no `commondir`), it is opened with git_repository_open_bare(), which does not
 * run libgit2's owner check (the daemon is root, the checkout is the run user's: no
 * safe.directory and no process-wide GIT_OPT_SET_OWNER_VALIDATION needed), and its work tree
 * is set to the app directory by us, so `core.worktree` is never followed (it is refused).
 * A checkout that configures filter drivers (`filter.<name>.clean|smudge|process`) is refused
 * (docs/platform-contract.md): libgit2 would not run them, so the commit would not be what git
 * makes. libgit2 runs no hooks and has no fsmonitor.
 *
 * Nothing is written into the checkout: an in-memory object database (libgit2's mempack) is
 * put in front of the repository's own, so new blobs, trees and the commit live in memory
 * until the repository is freed; the index is a fresh in-memory one read from HEAD's tree, so
 * `.git/index` and HEAD are untouched. Every change of the work tree is staged: files added
 * (respecting .gitignore), modified and deleted. The commit's parent is HEAD.
 *
 * Host side. git_publish_push() pushes a commit of a private repository to refs/heads/<branch>
 * at the clone URL it is given (the spec's; never one read from the checkout), through an
 * anonymous remote (no insteadOf rewriting, no redirects, no proxy), the token only in an
 * `Authorization: Basic` custom header in guarded memory. The push is never forced: a branch
 * that exists is updated only when the commit is a fast-forward of it, else refused.
 */
#ifndef SA_GIT_PUBLISH_H
#define SA_GIT_PUBLISH_H

#include <git2.h>
#include <stddef.h>

#include "err.h"

#define GIT_PUBLISH_DEFAULT_MESSAGE "Changes made in the sandbox"

/*
 * Open the checkout in work_dir for publishing (see above): the checks, then the in-memory
 * object database in front of the repository's. The repository is the caller's to free.
 */
int git_publish_open(const char *work_dir, git_repository **ret_repo, struct err *err);

/*
 * Commit every change of repo's work tree (opened by git_publish_open) with HEAD as parent,
 * author and committer name <email> now; message NULL or "": GIT_PUBLISH_DEFAULT_MESSAGE. HEAD
 * does not move. *ret_base gets HEAD's commit, *ret_commit the new one. A work tree without
 * changes is refused (ENODATA).
 */
int git_publish_commit(git_repository *repo, const char *name, const char *email,
                       const char *message, git_oid *ret_base, git_oid *ret_commit,
                       struct err *err);

/* Check a branch name as given to publish ("feature/x"; not "refs/...", not starting '-'). */
int git_publish_branch_check(const char *branch, struct err *err);

struct git_publish_push_spec {
	const char *clone_url; /* the spec's; checked like a fetch's (git_fetch_url_check) */
	const char *branch;    /* pushed as refs/heads/<branch> */
	const char *username;  /* NULL: GIT_FETCH_DEFAULT_USER */
	const char *token;     /* token_len bytes, the caller's (guarded) memory; 0: none */
	size_t token_len;
};

/*
 * Push commit (in repo, a private bare repository) to refs/heads/<branch> at spec->clone_url.
 * A refused token: ERR_REFUSED, EACCES ("authentication failed for URL ..."); a branch that
 * exists and is not an ancestor of commit: ERR_REFUSED, EEXIST; the remote refusing the
 * update: ERR_REFUSED, EPERM with the remote's reason. Messages never carry the token.
 */
int git_publish_push(git_repository *repo, const git_oid *commit,
                     const struct git_publish_push_spec *spec, struct err *err);

#endif
