/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --discard: stop the boot, drop its throwaway server databases and remove the workspace,
 * renamed aside first (`.NAME.discard.PID` beside it) and then deleted, so an interrupted
 * discard never leaves half a workspace in place; the next discard removes such leftovers.
 * A workspace that is a mount point is emptied in place instead.
 */
#ifndef SA_WORKSPACE_DISCARD_H
#define SA_WORKSPACE_DISCARD_H

#include "err.h"

int workspace_discard(const char *workspace, struct err *err);

#endif
