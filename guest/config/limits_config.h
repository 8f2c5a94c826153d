/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A boot's limits (docs/sandbox-yml.md, "limits"; docs/boot-spec.md): memory, processes, CPU
 * weight and the workspace's disk budget, asked for by the spec, by `limits:` in sandbox.yml and
 * by the daemon's options (which reach every boot as SANDBOX_AGENT_LIMIT_MEMORY, _PIDS,
 * _CPU_WEIGHT and _DISK in its environment). Each limit is the smallest of those given, else
 * its default; a default the machine cannot enforce is skipped with a note, a limit asked for
 * fails the boot.
 */
#ifndef SA_LIMITS_CONFIG_H
#define SA_LIMITS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "cgroup_limits.h"
#include "err.h"

#define LIMITS_DEFAULT_MEMORY (4ULL << 30) /* 4 GiB */
#define LIMITS_DEFAULT_PIDS 4096
#define LIMITS_DEFAULT_CPU_WEIGHT 100     /* everyone's share */
#define LIMITS_DEFAULT_DISK (20ULL << 30) /* 20 GiB */
#define LIMITS_MEMORY_MIN (8ULL << 20)
#define LIMITS_PIDS_MIN 8
#define LIMITS_PIDS_MAX 4194304
#define LIMITS_CPU_WEIGHT_MAX 10000
#define LIMITS_DISK_MIN (1ULL << 20)

/* What one source asks for; 0: not given. */
struct limits_request {
	uint64_t memory, pids, disk;
	unsigned cpu_weight;
};

/* The keys of a `limits` mapping, for "did you mean" (NULL-terminated). */
extern const char *const limits_config_keys[];

/*
 * One key's value as text ("2GiB", "512"): ERR_REFUSED "`memory` must be a size of at least
 * 8 MiB (e.g. 512MiB, 2GiB)"; -ENOENT (nothing set) for a key that is not one of ours.
 */
int limits_config_set(struct limits_request *r, const char *key, const char *text, struct err *err);

/* SANDBOX_AGENT_LIMIT_MEMORY for "memory", ...; NULL for a key that is not ours. */
const char *limits_config_env_name(const char *key);

/* The limits a boot runs with. */
struct boot_limits {
	struct cgroup_limits cg; /* memory, pids, cpu weight */
	uint64_t disk;           /* bytes the workspace may use; 0: unchecked */
	/* Which were asked for (1 << CGROUP_LIMITS_*; disk: LIMITS_ASKED_DISK), not defaults. */
	unsigned asked;
};
#define LIMITS_ASKED_DISK (1u << CGROUP_LIMITS_N)

/*
 * The smallest of spec, file (either may be NULL) and the daemon's SANDBOX_AGENT_LIMIT_*
 * variables in caller_env, else the defaults. A malformed variable is refused (ERR_REFUSED,
 * naming it).
 */
int limits_config_resolve(const struct limits_request *spec, const struct limits_request *file,
                          char *const *caller_env, struct boot_limits *ret, struct err *err);

struct json_object;
/* {"memory": N, "memory_text": "2 GiB", "pids": N, "cpu_weight": N, "disk": N, "disk_text"} */
struct json_object *limits_config_to_json(const struct boot_limits *l);

#endif
