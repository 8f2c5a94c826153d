/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A boot plan: everything a boot will do, resolved before anything runs. Both shapes (the
 * directory shape `sandbox-app-boot APP_DIR` and the spec shape `--spec FILE`) and the daemon
 * build one of these; the engine (boot_engine.h) runs it. `--dry-run` prints it.
 *
 * Layout (docs/design.md, "Layout and lifetime"; deviations are documented in docs/layout.md):
 *   directory shape: workspace = parent of APP_DIR (or --workspace)
 *     <workspace>/runtime.json            root, 0600: what the platform reads
 *     <workspace>/.sandbox/               root, 0700: state.json, lock, logs/, secret_key_base
 *     <workspace>/db/                     run user, 0700: sqlite databases
 *     <workspace>/.sandbox-manifest/      run user, 0700: the manifest's scratch file
 *   spec shape: the engine's directory is the spec's directory; runtime.json at manifest_path.
 */
#ifndef SA_BOOT_PLAN_H
#define SA_BOOT_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "boot_spec.h"
#include "database_config.h"
#include "egress_config.h"
#include "err.h"
#include "limits_config.h"
#include "proc.h"
#include "scrub.h"
#include "toolchain.h"

#define BOOT_DEFAULT_TIMEOUT 600
#define BOOT_DEFAULT_GRACE_MS 10000
#define BOOT_DEFAULT_LISTEN_ADDR "0.0.0.0"
#define BOOT_DEFAULT_LISTEN_PORT 8080
#define BOOT_DEFAULT_CACHE_ROOT "/var/cache/sandbox-app-runtime"
/* Image scripts start-NAME that start the services a boot asks for (boot_services.c). */
#define BOOT_DEFAULT_SERVICES_DIR "/usr/local/lib/sandbox-app-runtime/services"
#define BOOT_DEFAULT_USER "sandbox"
#define BOOT_LOG_MAX_BYTES (8UL * 1024 * 1024)

enum boot_shape {
	BOOT_SHAPE_DIRECTORY,
	BOOT_SHAPE_SPEC,
};

/* What the caller asked for (command-line options, or a daemon request). */
struct boot_options {
	enum boot_shape shape;
	const char *app_dir;   /* directory shape */
	const char *spec_path; /* spec shape */
	const char *workspace; /* NULL: parent of app_dir */
	const char *user;      /* NULL: "sandbox" when it exists, else the caller; "" = caller */
	char **pass_env;       /* --pass-env names */
	unsigned timeout;      /* seconds; 0: the spec's or BOOT_DEFAULT_TIMEOUT */
	const char *listen_addr;
	unsigned listen_port; /* 0: default (spec listen_port, else 8080) */
	int no_forward;       /* do not run the 0.0.0.0:8080 forwarder */
	unsigned grace_ms;
	const char *cache_root;
	const char *services_dir; /* NULL: BOOT_DEFAULT_SERVICES_DIR */
	const char *from_step;    /* --from STEP */
	bool restart;             /* --restart: manifest and start again */
	char *const *caller_env;
	bool dry_run;     /* resolve only: create nothing, generate nothing on disk */
	bool for_cleanup; /* for --stop/--discard: secrets and toolchains need not be present */
	/*
	 * Out, or NULL: lines for the repository author (sandbox.yml warnings, and where a
	 * syntax error is), appended as they are found, on success and on failure alike.
	 */
	char ***notes;
};

struct plan_step {
	char *name; /* "setup", "manifest", "start", or the spec's step name */
	char *command;
	unsigned timeout; /* seconds; 0: only the boot's deadline */
	char *skip;       /* reason, or NULL */
	char *if_task;
	char *log_path;
	char **env; /* the step's environment (manifest and start: with PORT added at run time) */
};

struct boot_plan {
	enum boot_shape shape;
	char *app_dir;
	char *workspace;
	char *state_dir;
	char *logs_dir;
	char *runtime_path;
	char *manifest_scratch_dir;
	char *manifest_scratch; /* $ACTION_AGENT_SANDBOX_MANIFEST */
	char *db_dir;
	char *cache_root;
	char *services_dir; /* the image's start-NAME scripts for services */
	char *session_id;
	char *rails_env;
	struct run_user user;
	struct plan_step *steps; /* setup steps, in order */
	size_t n_steps;
	struct plan_step manifest;
	struct plan_step start;
	char **env;              /* base environment of every command (no PORT) */
	char **secret_env_names; /* names whose values are secrets (masked in the plan) */
	struct database_plan db;
	unsigned port;     /* the app's port; 0: pick a free one at run time */
	char *listen_addr; /* NULL: no forwarder */
	unsigned listen_port;
	char *start_url; /* spec: must answer below 500 before ready */
	bool check_up;   /* directory shape: GET /up through the forwarder must be 200 */
	unsigned timeout;
	unsigned grace_ms;
	char **directories;              /* spec */
	struct boot_toolchain toolchain; /* what the spec asked for */
	struct toolchain_choice tools;   /* what was selected */
	bool keep_on_failure;
	char *mode, *kind;         /* spec: informational, shown in state.json */
	char *recorded_steps;      /* spec: its recorded_steps (JSON text), first in state.json */
	struct scrubber *scrub;    /* every known secret value */
	char **warnings;           /* sandbox.yml's warnings, as in boot_options.notes */
	struct boot_limits limits; /* memory, pids, CPU weight, disk budget (limits_config.h) */
	struct boot_egress egress; /* the proxy the app's and agent's users may reach */
};

int boot_plan_build(const struct boot_options *o, struct boot_plan *ret, struct err *err);
/* The plan as JSON (for --dry-run): secret values are never printed. */
char *boot_plan_to_json(const struct boot_plan *p);
void boot_plan_dispose(struct boot_plan *p);
/* The index of a step by name (setup steps, then manifest, start), or -1. */
int boot_plan_step_index(const struct boot_plan *p, const char *name);

#endif
