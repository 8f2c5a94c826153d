/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The boot's state on disk: state.json (0600, in the engine's directory), written atomically
 * after every phase, so `--status`, `--stop`, `--from STEP` and a restarted daemon find what a
 * boot did and what it left running; and the lock that refuses two boots of one app at once.
 */
#ifndef SA_BOOT_STATE_H
#define SA_BOOT_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define BOOT_STATE_FILE "state.json"
#define BOOT_LOCK_FILE "lock"

/* One phase of a boot as the platform shows it: preflight, toolchain, each step, manifest, start.
 */
struct boot_phase {
	char *name;
	char *log;    /* its log file, or NULL */
	char *status; /* "pending", "running", "succeeded", "failed", "skipped" */
	char *detail; /* why it failed or was skipped, or NULL */
	char *inputs; /* an installer step's inputs digest when it last succeeded (step_inputs.h) */
	int64_t started_ms, finished_ms; /* unix time in ms; 0: not yet */
	int64_t app_ms; /* of the duration, the app's own: its command running (exec to exit; the
	                   server: started to answering); -1: none (the engine's own phases) */
};

struct boot_state {
	char *status; /* "booting" ("running" in the spec shape's file), "ready", "failed",
	                 "stopped" */
	char *step;   /* the step running, or the one that failed */
	char *reason; /* failure cause, scrubbed */
	char *shape;
	char *app_dir;
	char *runtime_path;
	char *session_id;
	char *cgroup;     /* the process set's cgroup ("" for the fallback) */
	char *boot_id;    /* 16 hex digits, new for every boot (a resume and a restart too) */
	char *limits;     /* JSON text of the limits the boot runs with (limits_config_to_json) */
	char *limit_hit;  /* "memory", "pids", "disk": the limit a failure ran into, or NULL */
	char *egress;     /* JSON text: the egress rules' outcome (boot_egress.h) */
	char **completed; /* steps that finished, in order */
	char **skipped;   /* steps skipped (their reason is in their log) */
	unsigned port;
	pid_t boot_pid;
	uint64_t boot_start;
	pid_t supervisor_pid;
	uint64_t supervisor_start;
	pid_t server_pid;
	uint64_t server_start;
	int64_t updated_ms; /* unix ms of the last save */
	/* What the platform reads from a spec boot's state.json (docs/boot-spec.md). */
	char *mode, *kind;
	char *recorded_steps; /* JSON text of the spec's recorded_steps, or NULL */
	char *resumed_from;   /* --from STEP */
	bool restarted;       /* --restart */
	bool kept;            /* failed with keep_on_failure: its processes were left running */
	int64_t started_ms, finished_ms; /* unix ms; finished_ms 0 while running */
	struct boot_phase *phases;
	size_t n_phases;
	/* Only in what boot_observe() derives (never saved): */
	char *cause;             /* a failure's kind: "boot_failed", "boot_interrupted",
	                            "server_exited"; NULL unless status is "failed" */
	char *server_exit;       /* "exited with status 3", "was killed by signal SIGKILL" */
	int64_t server_ended_ms; /* unix ms, 0 when unknown */
	char *server_log_tail;   /* the last lines of its log */
	/*
	 * What boot_state_save() and boot_state_to_json() keep from one call to the next
	 * (boot_state_dispose() frees them): the document, updated in place, with the text buffer
	 * json-c keeps in it; the tokener for the JSON text fields; the line written. A save at
	 * every phase then reuses its memory instead of building and freeing a hundred objects and
	 * growing a buffer from 32 bytes each time (with musl's allocator, fresh pages and their
	 * faults every time).
	 */
	struct json_object *saved_doc;
	struct json_tokener *saved_tok;
	char *saved_line;
	size_t saved_line_cap;
};

/* Append a pending phase (name, log may be NULL). */
int boot_state_phase_add(struct boot_state *s, const char *name, const char *log);
/*
 * A phase moves to status ("running", "succeeded", "failed", "skipped") at now_ms; detail may
 * be NULL. Unknown names are ignored.
 */
void boot_state_phase_set(struct boot_state *s, const char *name, const char *status,
                          const char *detail, int64_t now_ms);
/* The phase of that name, or NULL. */
struct boot_phase *boot_state_phase_find(struct boot_state *s, const char *name);

/* Returns 0, or 1 when there is no state yet (ret zeroed). */
int boot_state_load(const char *state_dir, struct boot_state *ret, struct err *err);
int boot_state_save(const char *state_dir, struct boot_state *s, struct err *err);
void boot_state_dispose(struct boot_state *s);
int boot_state_set(char **field, const char *value);
/* The state as a JSON document (for --status), from s's kept document; the caller frees it. */
char *boot_state_to_json(struct boot_state *s);

/*
 * Take the app's boot lock (flock on STATE_DIR/lock, close-on-exec). A boot already in
 * progress: ERR_REFUSED "a boot of this app is already in progress (pid N)".
 */
int boot_state_lock_acquire(const char *state_dir, int *ret_fd, struct err *err);

#endif
