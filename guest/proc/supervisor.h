/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor: a small process that outlives sandbox-app-boot and the exec session that
 * started it (docs/design.md, "Processes"). It is a child subreaper, holds none of the caller's
 * descriptors, owns the server's process group, passes the server's output through the
 * scrubber into server.log (capped and rotated), keeps the forwarder up, and records a server
 * exit in supervisor.json (status, log tail) instead of restarting it.
 *
 * Lifetime: a supervisor prepared and not yet launched (supervisor_prepare()) exits at once,
 * having started and written nothing, at an end-of-file from its caller or a signal (TERM, INT,
 * HUP, CHLD). Once launched, the supervisor runs until it is sent SIGTERM (or SIGINT), also
 * after the server exited. It stays because it is the subreaper the boot's orphans (daemons that
 * double-fork) are re-parented to: it reaps them, and without a cgroup "the boot's processes" are
 * its descendants. The forwarder stays bound meanwhile, so nobody else takes the port; connections
 * to a server that is gone are reset. On SIGTERM it sends TERM to the server's group, waits up
 * to grace_ms for the server, then stops whatever is left of the boot's process set (TERM, the
 * rest of the grace period, KILL), writes the final state and exits 0. SIGHUP is ignored.
 *
 * supervisor.json (0600, replaced atomically):
 *   {"supervisor_pid": N, "supervisor_start": T, "server_pid": N, "server_start": T,
 *    "state": "running" | "exited", "status": "exited with status 1" | null,
 *    "exit_code": 1 | null, "signal": "SIGKILL" | null, "stopped": bool (by SIGTERM to us),
 *    "supervisor": "running" | "exited", "log_tail": "last 20 lines, scrubbed" | null, "log_error":
 * "disk full writing ..." | null, "forward": {"listen": "0.0.0.0:8080", "target": 3000} | null}
 * Start times are field 22 of /proc/PID/stat (proc_start_time()). After the server is spawned
 * (so the server keeps the caller's limit) the supervisor raises its own soft RLIMIT_NOFILE to
 * 8192 (or the hard limit) for the forwarder's connections.
 *
 * The supervisor is a fork of the caller without exec: it keeps the scrubber's secrets from the
 * caller's memory. Call supervisor_start() or supervisor_prepare() while the caller runs no other
 * threads that hold locks the supervisor needs (glibc's malloc is safe either way).
 */
#ifndef SA_SUPERVISOR_H
#define SA_SUPERVISOR_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "proc.h"
#include "scrub.h"

struct supervisor_spec {
	const char *command; /* the start command */
	const char *cwd;
	char *const *env; /* including PORT */
	const struct run_user *user;
	const char *log_path;    /* server.log */
	const char *status_path; /* supervisor.json, written atomically */
	struct scrubber *scrub;  /* the supervisor's copy gets supervisor_launch()'s secret */
	const char *cgroup_path; /* the boot's process set ("" for the fallback) */
	const char *listen_addr; /* forwarder; NULL: no forwarder */
	uint16_t listen_port;
	uint16_t target_port;
	unsigned long log_max_bytes; /* rotate server.log beyond this (one .1 kept); 0: never */
	unsigned grace_ms;           /* TERM -> KILL when stopping; 0: SUPERVISOR_GRACE_MS */
};

#define SUPERVISOR_GRACE_MS 10000u
#define SUPERVISOR_TAIL_LINES 20
#define SUPERVISOR_TAIL_CHARS 500

struct supervisor_info {
	pid_t supervisor_pid;
	uint64_t supervisor_start;
	pid_t server_pid; /* == its process group */
	uint64_t server_start;
	uint64_t server_spawned_us; /* CLOCK_MONOTONIC (clock_now_us()): its exec began */
};

/*
 * Start the supervisor, detached (own session, re-parented away from the caller, no inherited
 * descriptors, stdin/stdout/stderr on /dev/null, cwd /), and have it start the server. Returns
 * once the server has been spawned (or failed to spawn, or the forwarder's port could not be
 * bound, e.g. "port 8080 is in use", or supervisor.json could not be written: ERR_FAILED with
 * the reason, and no supervisor is left running). supervisor_prepare() then
 * supervisor_launch() without a secret.
 */
int supervisor_start(const struct supervisor_spec *spec, struct supervisor_info *ret,
                     struct err *err);

/*
 * The same in two halves, so that what the supervisor's start costs (two forks, its set-up and
 * their page faults) runs beside the manifest instead of after it. supervisor_prepare() forks
 * the supervisor, which sets itself up and waits; it returns once the supervisor is forked, with
 * its pid and start time in *ret (a caller that reaps or stops processes knows it from then
 * on). The spec is the supervisor's copy as it is now. supervisor_launch() has it bind the
 * forwarder's port, open the log and start the server, then add secret (the MCP token, known
 * only once the manifest ran; NULL for none) to its scrubber before it reads any of the
 * server's output: its result is supervisor_start()'s; a supervisor that ended before the go
 * (killed meanwhile) started nothing, and the error's code is then ESRCH: a caller may start one
 * afresh. A supervisor that reports a failure is reaped. supervisor_dismiss() ends a prepared
 * supervisor that will not be launched; it has started nothing and writes nothing. Both consume the
 * pending supervisor; a dismiss of one launched or never prepared does nothing. A spec without a
 * scrubber ignores the secret.
 */
struct supervisor_pending {
	pid_t pid;
	uint64_t start;
	int fd; /* the socket to it; -1 once launched or dismissed */
};
#define SUPERVISOR_PENDING_INIT                                                                    \
	{                                                                                          \
		.pid = 0, .start = 0, .fd = -1                                                     \
	}

int supervisor_prepare(const struct supervisor_spec *spec, struct supervisor_pending *ret,
                       struct err *err);
int supervisor_launch(struct supervisor_pending *pending, const char *secret,
                      struct supervisor_info *ret, struct err *err);
void supervisor_dismiss(struct supervisor_pending *pending);

/*
 * Read supervisor.json: whether the server is still running, or how it ended.
 * *ret_exited: 1 when the server exited, with its description in buf ("exited with status 1",
 * "was killed by signal SIGKILL"); 0 with "running" in buf while it runs. A file that still says
 * running while neither the supervisor nor the server exists (the supervisor was killed) reads
 * as exited, "exited (not recorded: its supervisor is gone)".
 */
int supervisor_read_status(const char *status_path, int *ret_exited, char *buf, size_t len,
                           struct err *err);

/*
 * The supervisor supervisor.json names (its pid and start time, as it wrote them when it
 * started): for a stop that finds none in state.json, whose save after the supervisor's start
 * never happened (the engine was killed in between). -1 with err when the file is missing,
 * malformed, or names none; the caller checks that the process is still that one (proc_is).
 */
int supervisor_read_identity(const char *status_path, pid_t *ret_pid, uint64_t *ret_start,
                             struct err *err);

#endif
