/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The diff of a session (docs/sessions.md, "The diff"), taken with libgit2, never the git
 * program: the checkout's work tree (untracked files included, as `git add --intent-to-add
 * --all` would) against a base commit, in git's patch format. Nothing of the checkout runs:
 * libgit2 runs no hooks, no fsmonitor, no external diff and no textconv, and it cannot run
 * filter drivers; when the checkout's config defines one (filter.<name>.clean|smudge|process),
 * SESSION_DIFF_FILTER_SENTENCE takes the diff's place, as the diff would not be git's.
 *
 * The checkout is opened as git_publish_open() does: `.git` must be a real directory (no
 * gitfile, no link, no commondir), opened bare with the work tree set by us; the system and
 * global git configuration are not read; submodules are not looked into.
 *
 * Pathspecs are git's: "PATH" (a file, a directory prefix or a glob whose `*` also matches
 * '/'), with ":(exclude)PATH", ":!PATH" or ":^PATH" to leave paths out. With no positive
 * pathspec every path counts.
 */
#ifndef SA_SESSION_DIFF_H
#define SA_SESSION_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define SESSION_DIFF_FILTER_SENTENCE                                                               \
	"The diff is not shown: the checkout's git configuration defines filter drivers, which "   \
	"the sandbox does not run.\n"
#define SESSION_DIFF_TRUNCATED "(diff truncated)\n"
/* The id of git's empty tree: the base of a checkout whose HEAD has no commit yet. */
#define SESSION_DIFF_EMPTY_TREE "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

/* pathspecs say path is left out of the diff. */
bool session_diff_path_excluded(char *const *pathspecs, const char *path);

/* HEAD's commit id (40 hex digits) in ret, or SESSION_DIFF_EMPTY_TREE when HEAD is unborn. */
int session_diff_head(const char *checkout, char ret[41], struct err *err);

/*
 * The patch of base (a commit or tree id, 40 hex digits) against the work tree, as a heap
 * string of at most max bytes: past max the last whole line that fits is followed by
 * SESSION_DIFF_TRUNCATED (which is counted in max). With filter drivers: the sentence.
 */
int session_diff_text(const char *checkout, const char *base, char *const *pathspecs, size_t max,
                      char **ret, size_t *ret_len, struct err *err);

#endif
