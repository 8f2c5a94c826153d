/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Throwaway databases (docs/platform-contract.md, "Throwaway databases"): read the app's own
 * config/database.yml without running it (ERB tags blanked), expand anchors and merge keys
 * with a cap, and give each database of the booted environment a throwaway URL.
 */
#ifndef SA_DATABASE_CONFIG_H
#define SA_DATABASE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define DATABASE_CONFIG_MAX (256 * 1024)

struct database_entry {
	char *name;     /* "primary" or the entry's name */
	char *adapter;  /* as written: sqlite3, postgresql, postgis, mysql2, trilogy */
	char *variable; /* DATABASE_URL or <NAME>_DATABASE_URL */
	char *url;
	bool set_by_file; /* file_env sets variable: the app uses that, url is not in env */
};

struct database_plan {
	struct database_entry *entries;
	size_t n_entries;
	char **env; /* "NAME=VALUE": the URLs not set by the file, SKIP_TEST_DATABASE=1 */
	bool wants_postgresql; /* some entry uses postgresql/postgis */
	bool wants_mysql;
	/* Databases of the environment that got no entry (no adapter but through ERB, one we do
	 * not know, in memory, a name no variable can hold): the app's own. */
	size_t n_unplanned;
	bool custom_paths; /* some entry sets migrations_paths or schema_dump */
};

struct database_request {
	const char *rails_env;  /* the environment being booted (e.g. "development") */
	const char *workspace;  /* sqlite3 files go to <workspace>/db/ */
	const char *session_id; /* its first 8 characters name server databases */
	char *const *file_env;  /* "NAME=VALUE" the file sets: those variables are left alone */
};

/*
 * Blank every ERB tag (<% %>, <%= %>, <%# %>, <%- -%>) in place, keeping newlines so line
 * numbers still match the file. A tag that starts a mapping key (only indentation before it,
 * a ':' later on the line) is filled with '_' rather than spaces, so the line keeps a key and
 * the document keeps its shape. "<%%" is ERB's literal "<%" and is left alone.
 */
void database_config_blank_erb(char *buf, size_t len);

/* Resolve from a database.yml document (buf may be NULL: no file, no databases). */
int database_config_plan_from_yaml(const char *buf, size_t len, const struct database_request *req,
                                   struct database_plan *ret, struct err *err);
/* Read APP_DIR/config/database.yml (no links followed, capped; missing is fine) and resolve. */
int database_config_plan_resolve(const char *app_dir, const struct database_request *req,
                                 struct database_plan *ret, struct err *err);
void database_config_plan_dispose(struct database_plan *p);

#endif
