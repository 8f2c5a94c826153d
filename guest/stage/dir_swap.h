/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Swapping a directory built beside another one into its place (docs/design.md, "Channel": "a
 * checkout is swapped in with renameat2(RENAME_EXCHANGE) where the filesystem supports it, else
 * two renames, with the window and the recovery documented"; docs/checkout.md).
 *
 * For the directory /workspace/app the new tree is built at /workspace/.app.checkout-new and
 * the old one ends up at /workspace/.app.checkout-old, then removed (or moved into a box and
 * removed on a thread: dir_swap_old_discard, dir_discard.h). Git checkouts
 * (checkout_stage.c) and pushed trees (tree_stage.c) use the same names, so a recovery by
 * either finishes or undoes an interrupted swap of the other. The caller holds the app's boot
 * lock: one swap of a directory at a time.
 *
 * Methods: no directory yet: one rename; renameat2(RENAME_EXCHANGE) where the filesystem has it;
 * else two renames (app -> .app.checkout-old, stage -> app), between which the directory is
 * missing: dir_swap_recover() closes that window after a crash. The directory is always a real
 * directory, never a symbolic link. Nothing is ever followed through a symbolic link.
 */
#ifndef SA_DIR_SWAP_H
#define SA_DIR_SWAP_H

#include <stdbool.h>
#include <sys/types.h>

#include "dir_discard.h"
#include "err.h"

#define DIR_SWAP_NEW_SUFFIX ".checkout-new"
#define DIR_SWAP_OLD_SUFFIX ".checkout-old"

enum dir_swap_flags {
	/* Swap with two renames even where RENAME_EXCHANGE works (to test that path). */
	DIR_SWAP_NO_EXCHANGE = 1 << 0,
	/*
	 * No thread (a process that ends with its answer, which would end it too): old trees
	 * are removed before the call returns, and leftover boxes are left to the next recovery
	 * of a process that may start one (dir_discard.h).
	 */
	DIR_SWAP_NO_THREADS = 1 << 1,
};

enum dir_swap_method {
	DIR_SWAP_FIRST = 1,    /* there was no directory: one rename */
	DIR_SWAP_EXCHANGE = 2, /* renameat2(RENAME_EXCHANGE) */
	DIR_SWAP_RENAMES = 3,  /* two renames (the filesystem cannot exchange) */
};

enum dir_swap_recovery {
	DIR_SWAP_RECOVER_NONE = 0,     /* nothing was left over */
	DIR_SWAP_RECOVER_CLEANED = 1,  /* the directory was whole; a stage or old tree removed */
	DIR_SWAP_RECOVER_FINISHED = 2, /* an interrupted swap finished: the new tree is in place */
	DIR_SWAP_RECOVER_RESTORED = 3, /* an interrupted swap undone: the old tree is back */
};

/* Called at "before-swap", "renamed-old" (two renames only) and "after-swap"; tests kill there. */
typedef void (*dir_swap_hook_fn)(void *userdata, const char *point);

struct dir_swap {
	char *dir;      /* "/workspace/app", without trailing slashes */
	char *parent;   /* "/workspace" */
	char *base;     /* "app" */
	char *new_name; /* ".app.checkout-new" */
	char *old_name; /* ".app.checkout-old" */
	char *new_path; /* "/workspace/.app.checkout-new" */
	int parent_fd;
	const char *old_tree; /* after a swap: new_name or old_name, where the old tree waits for
	                         dir_swap_old_remove(); NULL: none */
	unsigned flags;       /* enum dir_swap_flags */
	dir_swap_hook_fn hook;
	void *hook_userdata;
};

/*
 * Split dir (absolute) into parent and name and open the parent. Nothing is changed on disk.
 * hook (tests only) may be NULL.
 */
int dir_swap_init(struct dir_swap *s, const char *dir, unsigned flags, dir_swap_hook_fn hook,
                  void *hook_userdata, struct err *err);
void dir_swap_dispose(struct dir_swap *s);

/*
 * Finish or undo an interrupted swap:
 *   directory present: remove the stage and the old tree (CLEANED);
 *   missing, with both: the swap was between its two renames and the stage was complete
 *     (it is flushed before the directory moves): rename it in, remove the old one (FINISHED);
 *   missing, with only the old tree: rename it back (RESTORED);
 *   missing, with only the stage: a first swap that never finished: remove it.
 * What it removes goes through a box (dir_discard.h); the boxes a discard left are removed on
 * a thread, except those a discard is still removing. ret may be NULL.
 */
int dir_swap_recover(struct dir_swap *s, enum dir_swap_recovery *ret, struct err *err);

/*
 * Recover (dir_swap_recover), refuse a directory that is not a real directory, and create the
 * stage, root's and 0700 while it is built; *ret_stage_fd is it, opened. *ret_mode is the mode
 * the new tree gets: want & mode_bits, else the directory's & mode_bits, else 0755.
 */
int dir_swap_stage_create(struct dir_swap *s, mode_t want, mode_t mode_bits, mode_t *ret_mode,
                          int *ret_stage_fd, struct err *err);
/* Remove a stage that is not to be swapped in (a failure is only logged). */
void dir_swap_stage_discard(struct dir_swap *s);

/*
 * Swap the (complete, flushed) stage in as the directory. *ret_method says how. The old tree is
 * left beside it (at old_name, or at new_name when renaming it there failed) for
 * dir_swap_old_remove(), so a caller can answer first and remove it after. Any failure before
 * the swap leaves the directory as it was.
 */
int dir_swap_exchange(struct dir_swap *s, int *ret_method, struct err *err);
/*
 * Remove the old tree a swap left, if any: true when it could not be removed yet (the next
 * recovery retries; a failure is only logged).
 */
bool dir_swap_old_remove(struct dir_swap *s);
/*
 * The same without waiting for it: the old tree goes into a box of its own and is removed on a
 * thread (dir_discard.h), so the caller goes on at once and the name .app.checkout-old is free
 * for the next swap; the hook sees "discarding" on that thread. Where that is not possible it
 * is removed here, as dir_swap_old_remove() does. s may be disposed of at once.
 */
bool dir_swap_old_discard(struct dir_swap *s);

/* Trees are removed with fs_safe_tree_remove_at() (fs_safe.h): never through a link. */

#endif
