/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checking a commit out beside the app directory and swapping it in (docs/checkout.md).
 *
 * For the app directory /workspace/app the stage is /workspace/.app.checkout-new: a fresh
 * non-bare repository (root-owned, 0700 while it is built) that receives the objects (a pack
 * from the host through checkout_stage_repo() and git_pack_receiver_*, or a fetch of its own
 * through checkout_stage_fetch()), is checked out at the commit with a detached HEAD and `origin`
 * set to the clone URL without credentials, is given to the run user, fsync'ed, and then swapped
 * with the app directory by dir_swap.h (the names beside it, the swap and its recovery are
 * dir_swap's, shared with pushed trees): renameat2(RENAME_EXCHANGE) where the filesystem has
 * it, else two renames (app -> .app.checkout-old, stage -> app) with a window in which the app
 * directory is missing, which checkout_stage_recover() closes. The old tree ends up at
 * .app.checkout-old and is removed. The app directory is always a real directory, never a
 * symbolic link.
 *
 * Before anything is written, the commit's tree is checked: no entry may lie beneath a
 * symbolic link of the same tree (compared case-insensitively), no name may be "", ".", "..",
 * ".git" (any case), and no two entries may share a name; libgit2 writes every file with
 * O_EXCL|O_NOFOLLOW into the fresh stage, so nothing is ever written through a link. Symbolic
 * links stay symbolic links (core.symlinks, as probed by libgit2 on the stage's filesystem).
 *
 * One checkout of an app directory at a time: the caller holds the boot lock.
 */
#ifndef SA_CHECKOUT_STAGE_H
#define SA_CHECKOUT_STAGE_H

#include <git2.h>
#include <stdbool.h>
#include <sys/types.h>

#include "dir_swap.h"
#include "err.h"
#include "git_fetch.h"
#include "tree_carry.h"

enum checkout_flags {
	/* Swap with two renames even where RENAME_EXCHANGE works (to test that path). */
	CHECKOUT_NO_EXCHANGE = DIR_SWAP_NO_EXCHANGE,
};

/*
 * Test hook, called at the named points: "staged" (tree checked out, owned, moded),
 * "fsynced" (and flushed to disk), "carried" (what the old tree built from unchanged lockfiles
 * moved in, tree_carry.h; not on a first checkout), then dir_swap's: "before-swap", "renamed-old"
 * (two-rename swap only: the app directory has just been renamed away), "after-swap" (the new tree
 * is the app directory; the old one is not removed yet). A test kills the process there.
 */
typedef dir_swap_hook_fn checkout_hook_fn;
/* A ready hook: raise(SIGKILL) when point equals the string userdata. */
void checkout_stage_hook_kill_at(void *userdata, const char *point);

struct checkout_target {
	const char *app_dir;   /* absolute; its parent must exist */
	const char *clone_url; /* origin's URL (refused when it carries credentials); NULL: none */
	uid_t uid;             /* owner of the new tree; (uid_t)-1 leaves it to the caller */
	gid_t gid;             /* (gid_t)-1 likewise */
	mode_t mode;           /* the app directory's mode; 0: the old one's, else 0755 */
	unsigned int flags;    /* enum checkout_flags */
	checkout_hook_fn hook; /* NULL in production */
	void *hook_userdata;
};

/* dir_swap's methods and recoveries under the names the checkout API has always used. */
enum checkout_swap_method {
	CHECKOUT_SWAP_FIRST = DIR_SWAP_FIRST,       /* there was no app directory: one rename */
	CHECKOUT_SWAP_EXCHANGE = DIR_SWAP_EXCHANGE, /* renameat2(RENAME_EXCHANGE) */
	CHECKOUT_SWAP_RENAMES = DIR_SWAP_RENAMES,   /* two renames (no exchange there) */
};

struct checkout_result {
	git_oid commit;
	int method;         /* enum checkout_swap_method */
	bool old_tree_left; /* checkout_stage_fetch(): the old tree could not be removed yet;
	                       checkout_stage_recover() retries */
	struct tree_carry_report carry; /* what moved from the old tree (tree_carry.h) */
};

enum checkout_recovery {
	CHECKOUT_RECOVER_NONE = DIR_SWAP_RECOVER_NONE,
	CHECKOUT_RECOVER_CLEANED = DIR_SWAP_RECOVER_CLEANED,
	CHECKOUT_RECOVER_FINISHED = DIR_SWAP_RECOVER_FINISHED,
	CHECKOUT_RECOVER_RESTORED = DIR_SWAP_RECOVER_RESTORED,
};

struct checkout_stage;

/*
 * Recover from any interrupted checkout of t->app_dir (checkout_stage_recover), then create the
 * stage with a fresh repository in it. The existing app directory, if any, must be a directory
 * (not a symbolic link).
 */
int checkout_stage_begin(const struct checkout_target *t, struct checkout_stage **ret,
                         struct err *err);
/* The stage's repository: receive a pack into it or fetch into it, then checkout_stage_checkout. */
git_repository *checkout_stage_repo(struct checkout_stage *s);
/* The stage's path (parent/.base.checkout-new). */
const char *checkout_stage_path(const struct checkout_stage *s);
/*
 * Check commit's tree (see above), detach HEAD at it, check it out, set `origin`, hand the tree
 * to uid:gid, set the mode, flush it to disk. The commit must already be in the repository.
 */
int checkout_stage_checkout(struct checkout_stage *s, const git_oid *commit, struct err *err);
/*
 * Carry what the old tree built from unchanged lockfiles into the stage (tree_carry.h; its
 * decisions in ret->carry and the log) and swap the checked-out stage in as the app directory.
 * The old tree waits beside it (.app.checkout-old) until checkout_stage_old_remove() or
 * checkout_stage_free(), so a caller can answer before removing it.
 */
int checkout_stage_swap(struct checkout_stage *s, struct checkout_result *ret, struct err *err);
/* Remove the old tree a swap left: true when it could not be removed yet (recovery retries). */
bool checkout_stage_old_remove(struct checkout_stage *s);
/*
 * Release: a stage that was not swapped in is removed; the old tree of one that was goes on a
 * thread of its own (dir_swap_old_discard), the caller does not wait for it.
 * Accepts NULL.
 */
void checkout_stage_free(struct checkout_stage *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct checkout_stage *, checkout_stage_free)
#define _cleanup_checkout_stage_ _cleanup_(checkout_stage_freep)

/*
 * The guest-side fetch: begin, git_fetch_ref() into the stage with spec (the token stays in the
 * caller's memory and the fetch's wiped header), checkout, swap. Any failure before the swap
 * leaves the app directory as it was. ret_fetch may be NULL.
 */
int checkout_stage_fetch(const struct checkout_target *t, const struct git_fetch_spec *spec,
                         struct git_fetch_result *ret_fetch, struct checkout_result *ret,
                         struct err *err);

/*
 * Finish or undo an interrupted checkout (or tree push) of app_dir: dir_swap_recover() for
 * app_dir (see there). A later run calls it before anything else touches the app directory;
 * checkout_stage_begin does. ret may be NULL.
 */
int checkout_stage_recover(const char *app_dir, enum checkout_recovery *ret, struct err *err);

#endif
