/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor: a small process that outlives sandbox-app-boot and the exec session that
 * started it (decisions.md, "Processes"). It is a child subreaper, holds none of the caller's
 * descriptors, owns the server's process group, passes the server's output through the
 * scrubber into server.log (capped and rotated), keeps the forwarder up, and records a server
 * exit in supervisor.json (status, log tail) instead of restarting it.
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
	const struct scrubber *scrub;
	const char *cgroup_path; /* the boot's process set ("" for the fallback) */
	const char *listen_addr; /* forwarder; NULL: no forwarder */
	uint16_t listen_port;
	uint16_t target_port;
	unsigned long log_max_bytes; /* rotate server.log beyond this (one .1 kept) */
};

struct supervisor_info {
	pid_t supervisor_pid;
	uint64_t supervisor_start;
	pid_t server_pid; /* == its process group */
	uint64_t server_start;
};

/*
 * Start the supervisor, detached (own session, no inherited descriptors, cwd /), and have it
 * start the server. Returns once the server has been spawned (or failed to spawn, or the
 * forwarder's port could not be bound: ERR_FAILED with the reason).
 */
int supervisor_start(const struct supervisor_spec *spec, struct supervisor_info *ret,
                     struct err *err);

/*
 * Read supervisor.json: whether the server is still running, or how it ended.
 * *ret_exited: 1 when the server exited, with its description in buf.
 */
int supervisor_read_status(const char *status_path, int *ret_exited, char *buf, size_t len,
                           struct err *err);

#endif
