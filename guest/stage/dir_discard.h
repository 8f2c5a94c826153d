/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An old tree removed on a thread of its own, so that whoever swapped it out goes on at once
 * (docs/checkout.md, step 5 and "Recovery").
 *
 * The tree is moved into a box beside the directory it was swapped out of: for /workspace/app,
 * /workspace/.app.checkout-trash.<16 random hex digits>/tree. The box is root's, mode 0700, and
 * the thread holds a flock() on it until the box and the tree are gone: the app, whose tree it
 * was, can neither open the box nor take that lock, and the tree is reached through the box's
 * descriptor, never by a name in the parent. A box whose lock nobody holds is left over (its
 * process ended): the next recovery of that directory removes it, again on a thread. A box that
 * cannot be emptied is renamed <box>.left, with a warning, and no sweep takes it again. A boot with
 * a disk budget waits, a bounded time, for the boxes of its app before its first step
 * (dir_discard_wait): bytes on their way out are not the app's use.
 */
#ifndef SA_DIR_DISCARD_H
#define SA_DIR_DISCARD_H

#include <stdbool.h>

#define DIR_DISCARD_INFIX ".checkout-trash."
#define DIR_DISCARD_ID_LEN 16 /* the hex digits after it */
/* A box that could not be emptied, set aside: no sweep takes it again. */
#define DIR_DISCARD_LEFT_SUFFIX ".left"

/* Tests only: called with "discarding" on the thread, before it removes anything. */
typedef void (*dir_discard_hook_fn)(void *userdata, const char *point);

/*
 * Move name (below parent_fd, swapped out of the directory base) into a new box and remove it
 * on a thread, or here with wait. Where the box, the move or the thread is not possible, name
 * is removed here and now. True when something is left for the next recovery (in a box, or at
 * name when not even the box was possible).
 */
bool dir_discard_start(int parent_fd, const char *base, const char *name, bool wait,
                       dir_discard_hook_fn hook, void *hook_userdata);
/* Remove name below parent_fd here and now (a failure is only logged): true when some is left. */
bool dir_discard_now(int parent_fd, const char *name);

/*
 * The boxes of base below parent_fd that nobody holds (at most 16 a sweep), removed one after
 * the other on one thread (here, where no thread starts). what names the directory in the log.
 */
void dir_discard_sweep(int parent_fd, const char *base, const char *what);

/*
 * Wait until no box beside the directory dir (absolute) is held, at most timeout_ms: true when
 * none is (or there is none), false when one still is at the end.
 */
bool dir_discard_wait(const char *dir, unsigned timeout_ms);

#endif
