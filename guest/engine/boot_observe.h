/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a boot is doing now: its state.json checked against the processes it names. One
 * derivation for `sandbox-app-boot --status` and the daemon's `status`, so both use the same
 * words: `none`, `booting`, `ready`, `failed`, `stopped`, and for a failure its kind in `cause`
 * (`boot_failed`, `boot_interrupted`, `server_exited`).
 */
#ifndef SA_BOOT_OBSERVE_H
#define SA_BOOT_OBSERVE_H

#include <stdbool.h>

#include "boot_state.h"
#include "err.h"

/*
 * Load state_dir's state and derive what holds now. in_progress: the caller knows a boot of
 * this app is running (the daemon's own job), whatever the file says. Returns 0, or 1 when the
 * app has no state yet (ret->status is then "booting" or "none").
 */
int boot_observe(const char *state_dir, bool in_progress, struct boot_state *ret, struct err *err);

/* --status: the observed state as one JSON document; the caller frees it. */
int boot_observe_json(const char *state_dir, char **ret_json, struct err *err);

#endif
