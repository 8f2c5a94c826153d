/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The boot engine: runs a boot plan (boot_plan.h) from its first step to a ready app, and
 * stops, discards and reports on boots. sandbox-app-boot and the daemon both call it: one
 * pipeline, never two.
 */
#ifndef SA_BOOT_ENGINE_H
#define SA_BOOT_ENGINE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "boot_plan.h"
#include "boot_step.h"
#include "err.h"

struct boot_result {
	char step[64];           /* the failed step's name ("configuration", "setup", ...) */
	char log_path[PATH_MAX]; /* its log, or "" */
	uint64_t log_from;       /* the log's size when this boot began: its lines come after */
	unsigned port;           /* the app's port once started */
	char mcp_path[1024];
	char boot_id[17]; /* this boot's id (state.json's boot_id), "" before it has one */
};

/*
 * Run the plan. On failure err holds the one-line problem (scrubbed), result->step names the
 * step and result->log_path its log; the server is stopped unless the plan keeps it.
 */
int boot_engine_run(struct boot_plan *p, const struct boot_options *o,
                    const struct boot_observer *obs, struct boot_result *result, struct err *err);

/*
 * Stop every process of the boot whose state lives in state_dir; keep the checkout, databases
 * and logs. Returns 0 when nothing is left (also when nothing ran).
 */
int boot_engine_stop(const char *state_dir, unsigned grace_ms, struct err *err);

#endif
