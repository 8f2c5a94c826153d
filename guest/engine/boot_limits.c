/* SPDX-License-Identifier: Apache-2.0 */
/* Limits set, watched and explained; the kernel does the limiting (cgroup_limits.c). */
#include "boot_limits.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "boot_disk.h"
#include "clock.h"
#include "log.h"
#include "strv.h"

static const char *const limit_keys[CGROUP_LIMITS_N] = {"memory", "pids", "cpu_weight"};

int boot_limits_apply(const struct boot_plan *p, struct procset *ps, const char *set_name,
                      char ***notes, struct err *err)
{
	const struct cgroup_limits *all = &p->limits.cg;

	for (int c = 0; c < CGROUP_LIMITS_N; c++) {
		struct cgroup_limits one = {0};
		struct err e;

		if (c == CGROUP_LIMITS_MEMORY)
			one.memory_max = all->memory_max;
		else if (c == CGROUP_LIMITS_PIDS)
			one.pids_max = all->pids_max;
		else
			one.cpu_weight = all->cpu_weight;
		if (procset_limit(ps, set_name, &one, &e) == 0)
			continue;
		if (p->limits.asked & (1u << c)) {
			*err = e;
			return err_wrap(err, "cannot set limits.%s", limit_keys[c]);
		}
		log_warn("the default %s limit is not enforced: %s", limit_keys[c], e.msg);
		if (notes) {
			char *line = NULL;
			if (asprintf(&line, "warning: the default limits.%s is not enforced: %s",
			             limit_keys[c], e.msg) >= 0 &&
			    strv_consume(notes, line) < 0)
				log_debug("out of memory keeping a note");
		}
	}
	return 0;
}

void boot_limits_state(const struct boot_plan *p, struct boot_state *st)
{
	struct json_object *o = limits_config_to_json(&p->limits);

	if (o && boot_state_set(&st->limits, json_object_to_json_string_ext(o, 0)) < 0)
		log_debug("out of memory recording the limits");
	json_object_put(o);
}

void boot_limits_watch_begin(const struct boot_plan *p, const struct procset *ps,
                             struct boot_limits_watch *w)
{
	struct cgroup_limits_hits h;

	procset_limit_hits(ps, &h);
	w->oom_base = h.oom_kills;
	w->forks_base = h.forks_denied;
}

static int disk_error(const struct boot_plan *p, const char *command, uint64_t used,
                      struct err *err)
{
	char used_s[32], max_s[32];

	cgroup_limits_format_size(used, used_s, sizeof(used_s));
	cgroup_limits_format_size(p->limits.disk, max_s, sizeof(max_s));
	return err_set(err, ERR_FAILED, EDQUOT,
	               "`%s` was stopped: the workspace %s uses %s, over its disk budget of %s "
	               "(limits.disk); remove what the step does not need to keep, or raise "
	               "limits.disk",
	               command, p->workspace, used_s, max_s);
}

int boot_limits_watch_check(const struct boot_plan *p, const struct procset *ps,
                            struct boot_disk_budget *disk, struct boot_limits_watch *w,
                            const char *command, bool final, const char **ret_hit, struct err *err)
{
	struct cgroup_limits_hits h;
	uint64_t now = clock_now_ms(), used = 0;

	if (!final && now < w->next_look_ms)
		return 0;
	w->next_look_ms = now + BOOT_LIMITS_LOOK_MS;
	procset_limit_hits(ps, &h);
	if (h.forks_denied > w->forks_base) {
		*ret_hit = "pids";
		return err_set(
		    err, ERR_FAILED, EAGAIN,
		    "`%s` was stopped: it ran into the process limit (%llu processes, "
		    "limits.pids) and a fork was refused (a fork bomb, or too many parallel "
		    "jobs); lower its parallelism, or raise limits.pids",
		    command, (unsigned long long)h.now.pids_max);
	}
	if (disk && boot_disk_budget_check(disk, final, &used) > 0) {
		*ret_hit = "disk";
		return disk_error(p, command, used, err);
	}
	return 0;
}

bool boot_limits_explain(const struct boot_plan *p, const struct procset *ps,
                         const struct boot_limits_watch *w, const char *command, int status,
                         struct err *err)
{
	struct cgroup_limits_hits h;
	char limit[32], how[64];

	(void)p;
	procset_limit_hits(ps, &h);
	if (h.oom_kills <= w->oom_base)
		return false;
	cgroup_limits_format_size(h.now.memory_max, limit, sizeof(limit));
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		snprintf(how, sizeof(how), "was killed");
	else
		proc_describe_status(status, how, sizeof(how));
	err_set(err, ERR_FAILED, ENOMEM,
	        "`%s` %s: out of memory (limit %s, limits.memory); the kernel killed %llu "
	        "process%s of it for memory; make it use less, or raise limits.memory",
	        command, how, limit, (unsigned long long)(h.oom_kills - w->oom_base),
	        h.oom_kills - w->oom_base == 1 ? "" : "es");
	return true;
}
