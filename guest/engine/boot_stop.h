/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stopping a boot, and discarding it: the one policy behind `sandbox-app-boot --stop` /
 * `--discard` and the daemon's stop operation (docs/layout.md, "Stopping and discarding").
 */
#ifndef SA_BOOT_STOP_H
#define SA_BOOT_STOP_H

#include <stdbool.h>

#include "boot_plan.h"
#include "err.h"

struct boot_stop_request {
	const char *state_dir; /* the boot's state directory */
	const char *what;      /* named in a refusal: the app directory or the spec */
	/*
	 * Directory shape: the app asked for. A workspace holds one app's boot; when its state
	 * names another app, nothing is stopped (ERR_REFUSED). NULL: not checked.
	 */
	const char *app_dir;
	unsigned grace_ms; /* 0: BOOT_DEFAULT_GRACE_MS */
	bool discard;
	/*
	 * discard: how to find the boot's configuration again (its databases and workspace);
	 * copied, with dry_run and for_cleanup set. When it no longer loads,
	 * fallback_workspace (may be NULL: nothing more) is removed all the same.
	 */
	const struct boot_options *options;
	const char *fallback_workspace;
};

/*
 * Stop every process of the boot (a boot in progress is told to stop and waited for), then,
 * with discard, drop its throwaway databases and remove its workspace (renamed aside first).
 * A discard is refused (ERR_REFUSED, nothing removed) unless state_dir holds a boot's state.
 * Errors read "Sandbox stop failed: ...", "Sandbox discard failed: ..." or "Sandbox discard
 * refused: ...". A database that could not be dropped does not fail the discard: it is
 * reported in ret_warning (cls ERR_NONE when there is none).
 */
int boot_stop_run(const struct boot_stop_request *rq, struct err *ret_warning, struct err *err);

#endif
