/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sandbox-agent serve`: the daemon the host's sandbox-ctl talks to (docs/protocol.md,
 * docs/daemon.md). One single-threaded poll() loop serves every connection, on every transport
 * at once (vsock, unix sockets, a virtio-serial port, or stdin/stdout); boots and stops run in
 * child processes (the boot runner, a fresh `sandbox-agent serve --runner`) that report
 * through a socket, so the daemon stays responsive and a boot outlives the connection that
 * started it, and the daemon itself.
 */
#ifndef SA_SERVE_H
#define SA_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

#include "serve_config.h"

/* Run the daemon until SIGTERM/SIGINT (or, with --stdio, the end of the session). */
int serve_run(const struct serve_config *cfg, struct err *err);

/* Load the guest's key from path, generating (and saving, 0600) one when there is none. */
struct keypair;
int serve_key_load_or_create(const char *path, struct keypair **ret, bool *ret_created,
                             struct err *err);

#endif
