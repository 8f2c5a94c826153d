/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sandbox-agent serve --stdio` where a daemon runs: the exec pipe is relayed to that daemon's
 * unix socket, so state that outlives one command (secrets, boots, sessions) lives in the one
 * daemon of the guest. The relay moves ciphertext only: the channel runs end to end.
 */
#ifndef SA_SERVE_RELAY_H
#define SA_SERVE_RELAY_H

#include "err.h"

/*
 * Connect to the daemon's unix socket at path: the socket, 0 when no daemon answers there
 * (missing, or refused: the caller serves the session itself), or a negative value with err.
 */
int serve_relay_connect(const char *path, int *ret_fd, struct err *err);

/* Copy in_fd to sock and sock to out_fd until the daemon closes; half-closes are passed on. */
int serve_relay_run(int sock, int in_fd, int out_fd, struct err *err);

#endif
