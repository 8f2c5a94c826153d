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

struct boot_state {
	char *status; /* "booting", "ready", "failed", "stopped" */
	char *step;   /* the step running, or the one that failed */
	char *reason; /* failure cause, scrubbed */
	char *shape;
	char *app_dir;
	char *runtime_path;
	char *session_id;
	char *cgroup;     /* the process set's cgroup ("" for the fallback) */
	char **completed; /* steps that finished, in order */
	char **skipped;   /* steps skipped (their reason is in their log) */
	unsigned port;
	pid_t boot_pid;
	uint64_t boot_start;
	pid_t supervisor_pid;
	uint64_t supervisor_start;
	pid_t server_pid;
	uint64_t server_start;
	int64_t started_at; /* unix seconds */
	int64_t updated_at;
	/* Only in --status, when the server is found gone after it was ready (never saved): */
	char *server_exit;       /* "exited with status 3", "was killed by signal SIGKILL" */
	int64_t server_ended_at; /* unix seconds, 0 when unknown */
	char *server_log_tail;   /* the last lines of its log */
};

/* Returns 0, or 1 when there is no state yet (ret zeroed). */
int boot_state_load(const char *state_dir, struct boot_state *ret, struct err *err);
int boot_state_save(const char *state_dir, struct boot_state *s, struct err *err);
void boot_state_dispose(struct boot_state *s);
int boot_state_set(char **field, const char *value);
/* The state as a JSON document (for --status); the caller frees it. */
char *boot_state_to_json(const struct boot_state *s);

/*
 * Take the app's boot lock (flock on STATE_DIR/lock, close-on-exec). A boot already in
 * progress: ERR_REFUSED "a boot of this app is already in progress (pid N)".
 */
int boot_state_lock_acquire(const char *state_dir, int *ret_fd, struct err *err);

#endif
