/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A boot's limits at work (docs/design.md, "Limits"): set on its process set before the first
 * step, watched while each step runs (refused forks, the workspace's disk budget), and read
 * back when a step or the server ends (out-of-memory kills), so the failure says which limit
 * it ran into: "`CMD` was killed: out of memory (limit 64 MiB)".
 */
#ifndef SA_BOOT_LIMITS_H
#define SA_BOOT_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

#include "boot_disk.h"
#include "boot_plan.h"
#include "boot_state.h"
#include "procset.h"

/* How long a step's wait may last between two looks at its limits. */
#define BOOT_LIMITS_LOOK_MS 200

/*
 * Set the plan's limits on the set (its cgroups named set_name). A limit that was asked for
 * and cannot be set fails (ERR_FAILED); a default that cannot be set is skipped, with a line
 * in *notes saying so.
 */
int boot_limits_apply(const struct boot_plan *p, struct procset *ps, const char *set_name,
                      char ***notes, struct err *err);

/* The limits into state.json's "limits". */
void boot_limits_state(const struct boot_plan *p, struct boot_state *st);

/* One step's view of the limits: the counters when it began, when to look again. */
struct boot_limits_watch {
	uint64_t oom_base, forks_base;
	uint64_t next_look_ms; /* the counters are read at most every BOOT_LIMITS_LOOK_MS */
};

void boot_limits_watch_begin(const struct boot_plan *p, const struct procset *ps,
                             struct boot_limits_watch *w);
/*
 * Look at the limits while the step `command` runs, at most every BOOT_LIMITS_LOOK_MS (final:
 * it has ended, decide now); disk: the boot's budget, or NULL: -1 with err set, and *ret_hit "pids"
 * or "disk", when the step ran into one and must be stopped; 0 otherwise.
 */
int boot_limits_watch_check(const struct boot_plan *p, const struct procset *ps,
                            struct boot_disk_budget *disk, struct boot_limits_watch *w,
                            const char *command, bool final, const char **ret_hit, struct err *err);
/*
 * The step `command` ended with status (a wait status) and a process of the set was killed for
 * memory meanwhile: err says so ("`CMD` was killed: out of memory (limit 64 MiB)") and true is
 * returned.
 */
bool boot_limits_explain(const struct boot_plan *p, const struct procset *ps,
                         const struct boot_limits_watch *w, const char *command, int status,
                         struct err *err);

#endif
