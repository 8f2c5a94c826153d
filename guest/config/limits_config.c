/* SPDX-License-Identifier: Apache-2.0 */
/* Limits from three sources resolved into one; sizes through cgroup_limits_parse_size(). */
#include "limits_config.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

const char *const limits_config_keys[] = {"memory", "pids", "cpu_weight", "disk", NULL};

static const char *const env_names[] = {"SANDBOX_AGENT_LIMIT_MEMORY", "SANDBOX_AGENT_LIMIT_PIDS",
                                        "SANDBOX_AGENT_LIMIT_CPU_WEIGHT",
                                        "SANDBOX_AGENT_LIMIT_DISK", NULL};

const char *limits_config_env_name(const char *key)
{
	for (size_t i = 0; limits_config_keys[i]; i++)
		if (!strcmp(key, limits_config_keys[i]))
			return env_names[i];
	return NULL;
}

static int count(const char *text, uint64_t min, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!text || *text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int limits_config_set(struct limits_request *r, const char *key, const char *text, struct err *err)
{
	struct err why;
	uint64_t v;

	if (!strcmp(key, "memory") || !strcmp(key, "disk")) {
		bool mem = key[0] == 'm';
		uint64_t min = mem ? LIMITS_MEMORY_MIN : LIMITS_DISK_MIN;

		if (cgroup_limits_parse_size(text, &v, &why) < 0 || v < min)
			return err_set(
			    err, ERR_REFUSED, EINVAL,
			    "`%s` must be a size of at least %s (e.g. 512MiB, 2GiB), not "
			    "`%.40s`",
			    key, mem ? "8 MiB" : "1 MiB", text ? text : "");
		*(mem ? &r->memory : &r->disk) = v;
		return 0;
	}
	if (!strcmp(key, "pids")) {
		if (count(text, LIMITS_PIDS_MIN, LIMITS_PIDS_MAX, &v) < 0)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "`pids` must be a number of processes from %d to %d, not "
			               "`%.40s`",
			               LIMITS_PIDS_MIN, LIMITS_PIDS_MAX, text ? text : "");
		r->pids = v;
		return 0;
	}
	if (!strcmp(key, "cpu_weight")) {
		if (count(text, 1, LIMITS_CPU_WEIGHT_MAX, &v) < 0)
			return err_set(
			    err, ERR_REFUSED, EINVAL,
			    "`cpu_weight` must be a number from 1 to %d (100 is an equal "
			    "share), not `%.40s`",
			    LIMITS_CPU_WEIGHT_MAX, text ? text : "");
		r->cpu_weight = (unsigned)v;
		return 0;
	}
	return -ENOENT;
}

/* The smaller of two values where 0 means "not given". */
static uint64_t smallest(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

int limits_config_resolve(const struct limits_request *spec, const struct limits_request *file,
                          char *const *caller_env, struct boot_limits *ret, struct err *err)
{
	struct limits_request daemon = {0}, all = {0};
	const struct limits_request *src[] = {spec, file, &daemon};

	for (size_t i = 0; env_names[i]; i++) {
		const char *v = strv_env_get(caller_env, env_names[i]);

		if (v && *v && limits_config_set(&daemon, limits_config_keys[i], v, err) < 0)
			return err_wrap(err, "%s", env_names[i]);
	}
	for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
		if (!src[i])
			continue;
		all.memory = smallest(all.memory, src[i]->memory);
		all.pids = smallest(all.pids, src[i]->pids);
		all.disk = smallest(all.disk, src[i]->disk);
		all.cpu_weight = (unsigned)smallest(all.cpu_weight, src[i]->cpu_weight);
	}
	memset(ret, 0, sizeof(*ret));
	ret->asked = (all.memory ? 1u << CGROUP_LIMITS_MEMORY : 0) |
	             (all.pids ? 1u << CGROUP_LIMITS_PIDS : 0) |
	             (all.cpu_weight ? 1u << CGROUP_LIMITS_CPU : 0) |
	             (all.disk ? LIMITS_ASKED_DISK : 0);
	ret->cg.memory_max = all.memory ? all.memory : LIMITS_DEFAULT_MEMORY;
	ret->cg.pids_max = all.pids ? all.pids : LIMITS_DEFAULT_PIDS;
	ret->cg.cpu_weight = all.cpu_weight ? all.cpu_weight : LIMITS_DEFAULT_CPU_WEIGHT;
	ret->disk = all.disk ? all.disk : LIMITS_DEFAULT_DISK;
	return 0;
}

struct json_object *limits_config_to_json(const struct boot_limits *l)
{
	struct json_object *o = json_object_new_object();
	char text[32];

	if (!o)
		return NULL;
	json_object_object_add(o, "memory", json_object_new_int64((int64_t)l->cg.memory_max));
	cgroup_limits_format_size(l->cg.memory_max, text, sizeof(text));
	json_object_object_add(o, "memory_text", json_object_new_string(text));
	json_object_object_add(o, "pids", json_object_new_int64((int64_t)l->cg.pids_max));
	json_object_object_add(o, "cpu_weight", json_object_new_int((int)l->cg.cpu_weight));
	json_object_object_add(o, "disk", json_object_new_int64((int64_t)l->disk));
	cgroup_limits_format_size(l->disk, text, sizeof(text));
	json_object_object_add(o, "disk_text", json_object_new_string(text));
	return o;
}
