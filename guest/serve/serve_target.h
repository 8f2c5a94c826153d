/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The app directory a tree push or a checkout replaces: the one plumbing both share (which
 * state directory, refused while a boot or checkout of it runs, the boot lock, the owner the
 * new tree is given to, and whether its server still runs the old tree).
 */
#ifndef SA_SERVE_TARGET_H
#define SA_SERVE_TARGET_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"
#include "msg.h"
#include "serve_types.h"

struct serve_target {
	char *app_dir;   /* normalised */
	char *state_dir; /* its boot's */
	int lock_fd;     /* the boot lock, -1 until serve_target_lock() */
};

/*
 * From the request's "app_dir": normalised, its state directory found, refused (EBUSY) while a
 * boot or a checkout of it is in progress; then is "push the tree", "check out", ... (the
 * refusal says what to do when it has finished).
 */
int serve_target_open(struct serve *srv, const struct msg *m, const char *then,
                      struct serve_target *t, struct err *err);
/* The boot lock, as a boot takes it: no boot starts on a tree that is being swapped. */
int serve_target_lock(struct serve_target *t, struct err *err);
void serve_target_unlock(struct serve_target *t);
/* Unlock and free; t is left empty. */
void serve_target_dispose(struct serve_target *t);
/* The user a new tree is given to: the daemon's run user ((uid_t)-1 when there is none). */
void serve_target_owner(const struct serve *srv, uid_t *ret_uid, gid_t *ret_gid);
/*
 * A push or checkout into t refused: logged with what ("tree push", "checkout"), the lock given
 * back, the error sent as the stream's final reply.
 */
int serve_target_refuse(struct conn *c, struct stream *st, struct serve_target *t, const char *what,
                        struct err *err);
/* The boot's server still runs (on the tree just swapped out: the host restarts it). */
bool serve_target_server_running(const struct serve_target *t);

#endif
