/* SPDX-License-Identifier: Apache-2.0 */
#include "boot_services.h"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "strv.h"

#define PG_CONF_ROOT "/etc/postgresql"

/* Run a fixed command (no secrets in it) and wait; output goes to our stderr at debug level. */
static int run_wait(const char *command, const struct run_user *user, char *const *env,
                    struct err *err)
{
	struct proc_spec spec = {
	    .command = command,
	    .cwd = "/",
	    .env = env,
	    .user = user,
	    .output_fd = -1,
	    .procs_fd = -1,
	    .keep_fd = -1,
	};
	char how[64];
	int status;
	pid_t pid;

	if (proc_spawn(&spec, &pid, err) < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return err_errno(err, "waitpid");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	proc_describe_status(status, how, sizeof(how));
	return err_set(err, ERR_FAILED, 0, "`%s` %s", command, how);
}

static bool pg_name_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 63)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-' || *s == '.'))
			return false;
	return true;
}

/* The first cluster under /etc/postgresql/VERSION/NAME. */
static int pg_find_cluster(char *ver, size_t vl, char *name, size_t nl)
{
	_cleanup_closedir_ DIR *d = opendir(PG_CONF_ROOT);
	struct dirent *de;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char sub[512];
		_cleanup_closedir_ DIR *cd = NULL;
		struct dirent *ce;

		if (de->d_name[0] == '.' || !pg_name_ok(de->d_name))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", PG_CONF_ROOT, de->d_name);
		cd = opendir(sub);
		while (cd && (ce = readdir(cd))) {
			if (ce->d_name[0] == '.' || !pg_name_ok(ce->d_name))
				continue;
			snprintf(ver, vl, "%s", de->d_name);
			snprintf(name, nl, "%s", ce->d_name);
			return 1;
		}
	}
	return 0;
}

static int postgresql_start(const struct boot_plan *p, struct err *err)
{
	char ver[64], name[64], cmd[512], self[64];
	const char *role = p->user.name;
	struct run_user pg = {0};
	char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", NULL};
	int r;

	if (!pg_find_cluster(ver, sizeof(ver), name, sizeof(name))) {
		log_debug("no local PostgreSQL cluster under %s", PG_CONF_ROOT);
		return 0;
	}
	if (geteuid() != 0) {
		log_debug("not root: leaving PostgreSQL %s/%s as it is", ver, name);
		return 0;
	}
	/* Starting a running cluster fails with status 2: check first. */
	snprintf(cmd, sizeof(cmd),
	         "pg_ctlcluster %s %s status >/dev/null 2>&1 || pg_ctlcluster %s %s start", ver,
	         name, ver, name);
	if (run_wait(cmd, NULL, env, err) < 0)
		return err_wrap(err, "cannot start PostgreSQL %s/%s", ver, name);
	if (!role) {
		struct passwd *pw = getpwuid(geteuid());
		snprintf(self, sizeof(self), "%s", pw ? pw->pw_name : "root");
		role = self;
	}
	if (!pg_name_ok(role))
		return err_set(err, ERR_FAILED, EINVAL,
		               "the run user's name cannot be a PostgreSQL role: %s", role);
	r = proc_user_lookup("postgres", &pg, err);
	if (r < 0)
		return err_wrap(err, "PostgreSQL is installed but");
	snprintf(cmd, sizeof(cmd),
	         "psql -X -q -v ON_ERROR_STOP=1 -c 'DO $$ BEGIN CREATE ROLE \"%s\" LOGIN CREATEDB; "
	         "EXCEPTION WHEN duplicate_object THEN ALTER ROLE \"%s\" LOGIN CREATEDB; END $$'",
	         role, role);
	r = run_wait(cmd, &pg, env, err);
	proc_user_dispose(&pg);
	if (r < 0)
		return err_wrap(err, "cannot give %s a PostgreSQL role", role);
	return 0;
}

/* The platform's service names and Debian's init scripts for them. */
static const struct {
	const char *name;
	const char *init_script;
} known_services[] = {
    {"mysql", "mariadb"}, /* mysql2 and trilogy URLs: MariaDB in the image */
    {"mariadb", "mariadb"},
    {"redis", "redis-server"},
    {"redis-server", "redis-server"},
};

/*
 * A service an app needs, started unless it runs: the image's own start script
 * (SERVICES_DIR/start-NAME) when there is one, else PostgreSQL's clusters, else the Debian
 * init script the name stands for.
 */
static int service_start(const struct boot_plan *p, const char *service, struct err *err)
{
	char script[256], cmd[600];
	char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", NULL};
	const char *init = service;
	struct stat st;

	if (!pg_name_ok(service))
		return err_set(err, ERR_REFUSED, EINVAL, "bad service name %s", service);
	snprintf(script, sizeof(script), "%s/start-%s", p->services_dir, service);
	if (stat(script, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	    !(st.st_mode & 022) && (st.st_mode & 0100)) {
		if (run_wait(script, NULL, env, err) < 0)
			return err_wrap(err, "cannot start %s", service);
		return 0;
	}
	if (strcmp(service, "postgresql") == 0)
		return postgresql_start(p, err);
	for (size_t i = 0; i < ELEMENTSOF(known_services); i++)
		if (strcmp(service, known_services[i].name) == 0)
			init = known_services[i].init_script;
	snprintf(script, sizeof(script), "/etc/init.d/%s", init);
	if (stat(script, &st) < 0)
		return err_set(err, ERR_REFUSED, ENOENT,
		               "the service %s is not installed in this image (no %s/start-%s, no "
		               "%s)",
		               service, p->services_dir, service, script);
	snprintf(cmd, sizeof(cmd), "%s status >/dev/null 2>&1 || %s start", script, script);
	if (run_wait(cmd, NULL, env, err) < 0)
		return err_wrap(err, "cannot start %s", service);
	return 0;
}

static bool listed(char *const *v, const char *a, const char *b)
{
	for (; v && *v; v++)
		if (strcmp(*v, a) == 0 || (b && strcmp(*v, b) == 0))
			return true;
	return false;
}

/* The services' start, and the caller's hook once before the first of them. */
struct services_start {
	const struct boot_plan *p;
	void (*before)(void *userdata);
	void *userdata;
};

static int services_start_one(struct services_start *r, const char *service, struct err *err)
{
	if (r->before) {
		r->before(r->userdata);
		r->before = NULL;
	}
	return service_start(r->p, service, err);
}

int boot_services_start(const struct boot_plan *p, void (*before)(void *userdata), void *userdata,
                        struct err *err)
{
	struct services_start r = {.p = p, .before = before, .userdata = userdata};
	char *const *asked = p->toolchain.services;

	for (size_t i = 0; asked && asked[i]; i++)
		if (services_start_one(&r, asked[i], err) < 0)
			return -1;
	/* What config/database.yml asks for, unless the spec named it already. */
	if (p->db.wants_postgresql && !listed(asked, "postgresql", NULL) &&
	    services_start_one(&r, "postgresql", err) < 0)
		return -1;
	if (p->db.wants_mysql && !listed(asked, "mysql", "mariadb")) {
		struct stat st;
		/* Only where the image has it: an app may point at a server of its own. */
		if (stat("/etc/init.d/mariadb", &st) == 0 &&
		    services_start_one(&r, "mysql", err) < 0)
			return -1;
	}
	return 0;
}

int boot_services_drop_databases(const struct boot_plan *p, struct err *err)
{
	char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", NULL};
	struct run_user pg = {0};
	int r = 0;

	for (size_t i = 0; i < p->db.n_entries; i++) {
		const char *url = p->db.entries[i].url;
		const char *db;
		char cmd[512];

		if (strncmp(url, "postgresql:///", 14) != 0 && strncmp(url, "postgis:///", 11) != 0)
			continue;
		db = strstr(url, ":///") + 4;
		if (!pg_name_ok(db))
			continue;
		if (!pg.name && proc_user_lookup("postgres", &pg, err) < 0)
			return -1;
		snprintf(cmd, sizeof(cmd), "psql -X -q -c 'DROP DATABASE IF EXISTS \"%s\"'", db);
		if (run_wait(cmd, &pg, env, err) < 0)
			r = -1;
	}
	proc_user_dispose(&pg);
	return r;
}
