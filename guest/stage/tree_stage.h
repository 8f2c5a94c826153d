/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tree pushed by the host (docs/protocol.md "Pushing a tree"), staged beside the app
 * directory and swapped in with one rename (dir_swap.h) once it is complete.
 *
 * Entries arrive in order: a directory, a symbolic link, or a file followed by exactly its
 * size in data. Every entry is created relative to the stage's descriptor, one component at a
 * time: intermediate directories are opened with O_NOFOLLOW|O_DIRECTORY, files are created
 * with O_CREAT|O_EXCL|O_NOFOLLOW, so nothing is ever written through a symbolic link and no
 * entry replaces another. Refused: absolute paths, "", "." and ".." components, modes with
 * anything but permission bits (setuid, setgid, sticky), duplicate entries, and symbolic link
 * targets that are absolute or lead out of the tree (checked by spelling when the link is
 * made, and by the kernel with RESOLVE_BENEATH once the whole tree is there, since a target
 * may pass through another link). The stage is root's (0700) while it is built; at the end the
 * tree is given to the run user, flushed to disk and swapped in. A stage that is not finished
 * is removed.
 */
#ifndef SA_TREE_STAGE_H
#define SA_TREE_STAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dir_swap.h"
#include "err.h"

#define TREE_STAGE_PATH_MAX 4096
#define TREE_STAGE_DEPTH_MAX 128
#define TREE_STAGE_ENTRIES_MAX 1000000

enum tree_entry_kind {
	TREE_ENTRY_FILE = 1,
	TREE_ENTRY_DIR = 2,
	TREE_ENTRY_SYMLINK = 3,
};

/* "file", "dir", "symlink" -> the kind; anything else -> -1. */
int tree_stage_entry_kind_from_string(const char *s);

struct tree_stage_target {
	const char *app_dir; /* absolute; its parent must exist */
	uid_t uid;           /* owner of the new tree; (uid_t)-1: root's */
	gid_t gid;
	mode_t mode;           /* the app directory's mode; 0: the old one's, else 0755 */
	unsigned flags;        /* enum dir_swap_flags */
	dir_swap_hook_fn hook; /* tests only */
	void *hook_userdata;
};

struct tree_stage_result {
	uint64_t entries;
	uint64_t bytes;
	int method; /* enum dir_swap_method */
};

struct tree_stage;

/* Recover an interrupted swap of the app directory, then create an empty stage beside it. */
int tree_stage_begin(const struct tree_stage_target *t, struct tree_stage **ret, struct err *err);
/*
 * The next entry. size is for files (their data follows through tree_stage_data()), target for
 * symbolic links. Refusals are ERR_REFUSED and name the entry; the stage is then unusable.
 */
int tree_stage_entry(struct tree_stage *s, const char *path, enum tree_entry_kind kind,
                     unsigned mode, uint64_t size, const char *target, struct err *err);
/* The next bytes of the current file; more than its size is refused. */
int tree_stage_data(struct tree_stage *s, const void *buf, size_t len, struct err *err);
/*
 * The end: the last file must be complete and the totals must match (entries: every entry;
 * bytes: the files' sizes). Then the tree is checked, given to the run user, flushed, and
 * swapped in. The old tree waits beside it (.app.checkout-old) until tree_stage_old_remove() or
 * tree_stage_free(), so a caller can answer before removing it.
 */
int tree_stage_finish(struct tree_stage *s, uint64_t entries, uint64_t bytes,
                      struct tree_stage_result *ret, struct err *err);
/* Remove the old tree a swap left: true when it could not be removed yet (recovery retries). */
bool tree_stage_old_remove(struct tree_stage *s);
/*
 * Release: a stage that was not swapped in is removed; the old tree of one that was goes on a
 * thread of its own (dir_swap_old_discard), the caller does not wait for it. Accepts NULL.
 */
void tree_stage_free(struct tree_stage *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct tree_stage *, tree_stage_free)
#define _cleanup_tree_stage_ _cleanup_(tree_stage_freep)

/*
 * Would a link at path (relative to the tree's root) with this target stay inside the tree,
 * judged by spelling alone? Absolute targets never do.
 */
bool tree_stage_target_inside(const char *path, const char *target);

#endif
