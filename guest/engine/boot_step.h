/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running one step of a boot: `sh -c CMD` in the app directory, in its own process group and
 * the boot's process set, stdin /dev/null, its output scrubbed and appended to the step's log
 * after a "$ CMD" line, bounded by the step's timeout and the boot's deadline. Whatever the
 * step leaves behind (daemons included) is stopped afterwards: a setup command is not a way to
 * start services.
 */
#ifndef SA_BOOT_STEP_H
#define SA_BOOT_STEP_H

#include <stdint.h>

#include "boot_disk.h"
#include "boot_plan.h"
#include "procset.h"

/* Progress, as it happens (the daemon streams these to the host). */
struct boot_observer {
	/* phase: "started", "done", "skipped", "failed", "ready"; detail may be NULL. */
	void (*phase)(void *userdata, const char *step, const char *phase, const char *detail);
	/* A step's scrubbed output, as it is written to its log. */
	void (*output)(void *userdata, const char *step, const char *buf, size_t len);
	void *userdata;
};

struct step_context {
	const struct boot_plan *plan;
	struct procset *procs;
	const struct boot_observer *obs;
	uint64_t deadline_ms; /* monotonic, the whole boot's */
	unsigned grace_ms;
	int signal_fd; /* signalfd of SIGTERM/SIGINT/SIGHUP: the boot is being stopped; or -1 */
	const char **limit_hit; /* set to "memory", "pids" or "disk" when a step ran into it */
	struct boot_disk_budget *disk; /* the workspace's disk budget, or NULL */
	int64_t *command_ms; /* out, or NULL: how long the last step's command ran (exec to exit) */
	/* Called once the step's command runs (exec'd), or NULL: work to do beside it. */
	void (*spawned)(void *userdata);
	void *spawned_userdata;
};

/*
 * A signal asking the boot to stop arrived (read from ctx->signal_fd): fills err with
 * "interrupted by SIGTERM" and returns true.
 */
bool boot_step_interrupted(const struct step_context *ctx, struct err *err);

/*
 * What an exit status of 126 or 127 means, for a command run with env: ": a program it runs
 * was not found on PATH (PATH)" or ": ... is not executable ..."; "" for any other status. how
 * is proc_describe_status()'s text ("exited with status 127").
 */
void boot_step_explain_exit(const char *how, char *const *env, char *buf, size_t len);

/* Report a phase to the observer; detail passes through the plan's scrubber first. */
void boot_step_observe(const struct boot_plan *p, const struct boot_observer *obs, const char *step,
                       const char *phase, const char *detail);

/*
 * Run command as step `name`, output to log_path. env is the full environment. Returns 0 when
 * the command exited 0; else ERR_FAILED: "`CMD` exited with status N", "... timed out after N
 * s", "the boot's deadline (N s) passed during ...".
 */
int boot_step_run(const struct step_context *ctx, const char *name, const char *command,
                  char *const *env, unsigned timeout_s, const char *log_path, struct err *err);

/* Run command and capture its scrubbed stdout (capped) instead of logging it. */
int boot_step_capture(const struct step_context *ctx, const char *name, const char *command,
                      char *const *env, unsigned timeout_s, const char *log_path, char **ret_out,
                      struct err *err);

#endif
