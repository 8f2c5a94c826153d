/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sharing the checkout with the claude user (docs/sessions.md, "The checkout"): every
 * directory and regular file the app user owns gets group read and write (and group execute
 * where the owner has it; directories get setgid too), so the CLI, a member of the app user's
 * group, can edit the tree and what it creates stays in that group. Done AS THE APP USER: a
 * link planted in the checkout can only lead to what that user could change anyway. Links are
 * never followed, other file systems are not entered, nothing is deeper than 256 levels.
 */
#ifndef SA_SESSION_CHECKOUT_H
#define SA_SESSION_CHECKOUT_H

#include "err.h"
#include "proc.h"

/* In this process, as whoever runs it. */
int session_checkout_share(const char *checkout, struct err *err);
/* In a child as app_user (NULL: as the caller). */
int session_checkout_share_as(const char *checkout, const struct run_user *app_user,
                              struct err *err);

#endif
