/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where sessions live (docs/sessions.md, "Files"): ROOT (/workspace/claude) and ROOT/sessions,
 * root's and 0700 (made so when missing), and one directory ROOT/sessions/<digits> per session,
 * made by the caller, which must own it with mode 0700. ROOT/base_commit holds the commit the
 * sandbox's first session started from; ROOT/session.lock is held (flock) by the process that
 * runs a session, for as long as it runs.
 */
#ifndef SA_SESSION_DIR_H
#define SA_SESSION_DIR_H

#include <stdbool.h>

#include "err.h"

#define SESSION_DIR_ROOT "/workspace/claude"

/*
 * Open the session directory dir, which must be exactly ROOT/sessions/<digits> (no links on
 * the way, owned by us, mode 0700, as are ROOT and ROOT/sessions). create_parents: make ROOT
 * and ROOT/sessions (0700) when missing, and make them 0700 when they are ours but not yet. Returns
 * an O_DIRECTORY descriptor; ERR_REFUSED when dir is not such a directory.
 */
int session_dir_open(const char *root, const char *dir, bool create_parents, struct err *err);

/* Take ROOT/session.lock without waiting: the descriptor, or ERR_REFUSED when it is held. */
int session_dir_lock(const char *root, struct err *err);

/*
 * Open dir's prompt.txt for reading: ERR_REFUSED "there is no prompt.txt" when missing,
 * "prompt.txt is a symbolic link", or "prompt.txt is not a regular file".
 */
int session_dir_open_prompt(int dirfd, struct err *err);

/* The session was started already: its status.json exists. */
bool session_dir_started(int dirfd);

/*
 * ROOT/base_commit: read it into ret (40 hex digits), or, when there is none, write base
 * there (root's, 0600) and copy it to ret. base may be NULL (only read; returns 1 if none).
 */
int session_dir_base_commit(const char *root, const char *base, char ret[41], struct err *err);

#endif
