/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spec shape: `sandbox-app-boot --spec FILE` (docs/platform-contract.md, "The spec file"),
 * parsed with json-c. Schema: docs/boot-spec.md. Unknown keys are ignored. Every refusal has
 * class ERR_REFUSED and names the key: "spec: `steps[2].name` must match [a-z][a-z0-9_]{0,39}".
 */
#ifndef SA_BOOT_SPEC_H
#define SA_BOOT_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "egress_config.h"
#include "err.h"
#include "limits_config.h"

#define BOOT_SPEC_MAX (1024 * 1024)
#define BOOT_STEP_DEFAULT_TIMEOUT 600
/* Every timeout in the spec is 1 to this many seconds (a day). */
#define BOOT_SPEC_TIMEOUT_MAX 86400
#define BOOT_SPEC_MAX_STEPS 256

struct boot_step {
	char *name;
	char *command;    /* NULL only for a skipped step that gave none */
	unsigned timeout; /* seconds; 0 = not given */
	char *skip;       /* reason the step is skipped, or NULL */
	char *if_task;    /* Rails task that must exist, or NULL */
};

struct boot_toolchain {
	char *ruby; /* version or NULL */
	char *node;
	char *bun;
	char **services; /* NULL-terminated, may be NULL */
	unsigned timeout;
};

struct boot_spec {
	int version;
	char *app_dir;
	char *manifest_path;
	unsigned port;
	unsigned listen_port;      /* 0 = not given */
	unsigned timeout;          /* whole boot, seconds */
	struct boot_step manifest; /* name "manifest" */
	struct boot_step start;    /* name "start" */
	char *user;                /* NULL = run as the caller */
	struct boot_toolchain toolchain;
	char **directories;  /* absolute paths */
	char **env;          /* "NAME=VALUE" */
	char **secret_names; /* names that must be in the caller's environment */
	struct boot_step *steps;
	size_t n_steps;
	char *start_url; /* NULL = not given */
	bool keep_on_failure;
	char *mode;
	char *kind;
	char *recorded_steps;         /* the spec's recorded_steps array as JSON text, or NULL */
	struct limits_request limits; /* `limits`, 0 where not given */
	struct egress_request egress; /* `egress` */
};

/* ret is filled only on success; release it with boot_spec_dispose. */
int boot_spec_parse(const char *buf, size_t len, struct boot_spec *ret, struct err *err);
/*
 * Reads the file (no links followed, regular files only, size capped) and parses it. When we
 * are root the file must be root-owned with no group or other permission bits (0600 or 0400).
 */
int boot_spec_load(const char *path, struct boot_spec *ret, struct err *err);
void boot_spec_dispose(struct boot_spec *s);
/* `manifest`, `start` or the entry of `steps` with that name; NULL when there is none. */
const struct boot_step *boot_spec_find_step(const struct boot_spec *s, const char *name);
/* [a-z][a-z0-9_]{0,39} and not a reserved name (checkout preflight toolchain manifest start). */
bool boot_spec_step_name_valid(const char *name);

#endif
