/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the config/database.yml reader: ERB blanking, libyaml, alias and merge-key expansion
 * under its cap, and URL naming. Each input is read for several environments, so every
 * section of a seed is exercised and the seeds stay plain database.yml files.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "database_config.h"
#include "err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_as(const uint8_t *data, size_t size, const char *rails_env)
{
	static char *const file_env[] = {"ANIMALS_DATABASE_URL=sqlite3:/x.sqlite3", NULL};
	struct database_request req = {
	    .rails_env = rails_env,
	    .workspace = "/workspace",
	    .session_id = "0123456789abcdef0123456789abcdef",
	    .file_env = file_env,
	};
	struct database_plan plan;
	struct err e;

	err_clear(&e);
	if (database_config_plan_from_yaml((const char *)data, size, &req, &plan, &e) < 0) {
		/* a failure always says why */
		if (e.cls == ERR_NONE || e.msg[0] == '\0')
			abort();
		return;
	}
	for (size_t i = 0; plan.env && plan.env[i]; i++)
		if (!strchr(plan.env[i], '='))
			abort();
	for (size_t i = 0; i < plan.n_entries; i++) {
		const char *url = plan.entries[i].url;
		/* server database names stay within the servers' limits */
		const char *path = strstr(url, ":///");
		if (path && strlen(path + 4) > 64)
			abort();
		if (!plan.entries[i].variable || !plan.entries[i].name)
			abort();
	}
	database_config_plan_dispose(&plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const envs[] = {"development", "production", "shards", "list"};

	for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++)
		read_as(data, size, envs[i]);
	return 0;
}
