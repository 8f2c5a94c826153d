/* SPDX-License-Identifier: Apache-2.0 */
#include "step_inputs.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child_env.h"
#include "cleanup.h"
#include "strv.h"
#include "tree_carry.h"

static void feed(crypto_generichash_state *h, const void *data, size_t len)
{
	tree_carry_digest_feed(h, data, len);
}

static void feed_str(crypto_generichash_state *h, const char *s)
{
	feed(h, s, strlen(s));
}

/* The environment: every entry, a secret's name only. */
static void feed_env(crypto_generichash_state *h, const struct boot_plan *p)
{
	for (size_t i = 0; p->env && p->env[i]; i++) {
		size_t nl = strv_env_name_len(p->env[i]);
		_cleanup_free_ char *name = strndup(p->env[i], nl);
		const char *value = p->env[i][nl] ? p->env[i] + nl + 1 : "";

		if (!name)
			continue;
		if (strv_contains(p->secret_env_names, name) || child_env_name_looks_secret(name) ||
		    child_env_value_has_userinfo(value))
			feed_str(h, name);
		else
			feed_str(h, p->env[i]);
	}
}

/*
 * One SQLite database file, as db:prepare last left it: its device and inode, and the schema
 * cookie of its header, which every change of the schema moves (a migration, a rollback, a
 * schema load; an emptied file or one made again by db:create starts over). -1 when it is not
 * a regular file or holds no SQLite header.
 */
static int feed_sqlite(crypto_generichash_state *h, const char *path)
{
	static const char magic[16] = "SQLite format 3";
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	unsigned char head[100];
	struct stat st;
	uint64_t id[3];

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    memcmp(head, magic, sizeof(magic)) != 0)
		return -1;
	id[0] = (uint64_t)st.st_dev;
	id[1] = (uint64_t)st.st_ino;
	id[2] = ((uint64_t)head[40] << 24) | ((uint64_t)head[41] << 16) |
	        ((uint64_t)head[42] << 8) | head[43];
	feed_str(h, path);
	feed(h, id, sizeof(id));
	return 0;
}

/*
 * The boot's throwaway database, when it is the environment's only one, named primary, with
 * Rails' own paths for its schema and migrations (those the group's inputs digest), and a
 * SQLite file the plan placed in the workspace: its identity. -1 otherwise (a server
 * database, several databases, one the app's own environment names or that got no throwaway
 * database, custom migrations_paths, a file missing or not SQLite): the step always runs.
 */
static int feed_databases(crypto_generichash_state *h, const struct boot_plan *p)
{
	const struct database_entry *d = p->db.n_entries == 1 ? &p->db.entries[0] : NULL;
	const char *path = d && d->url && strncmp(d->url, "sqlite3:", 8) == 0 ? d->url + 8 : NULL;

	if (!d || p->db.n_unplanned || p->db.custom_paths || d->set_by_file ||
	    strcmp(d->name, "primary") != 0 || !path || path[0] != '/')
		return -1;
	return feed_sqlite(h, path);
}

int step_inputs_digest(const struct boot_plan *p, const struct plan_step *s, char *hex, char *what,
                       size_t what_len)
{
	const struct tree_carry_group *g = tree_carry_group_of_command(s->command);
	_cleanup_close_ int dfd = -1;
	crypto_generichash_state h;
	unsigned char out[STEP_INPUTS_HEX_LEN / 2];
	size_t used = 0;
	bool any = false;

	if (what && what_len)
		what[0] = '\0';
	if (!g)
		return 0;
	dfd = open(p->app_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	crypto_generichash_init(&h, NULL, 0, sizeof(out));
	feed_str(&h, "sandbox step inputs v2");
	feed_str(&h, s->command);
	feed_env(&h, p);
	for (const char *const *in = g->inputs; *in; in++) {
		unsigned char d[TREE_CARRY_DIGEST_BYTES];
		bool present;

		if (tree_carry_input_digest(dfd, *in, d, &present) < 0)
			return 0;
		feed_str(&h, *in);
		feed_str(&h, present ? "present" : "missing");
		feed(&h, d, sizeof(d));
		if (present) {
			any = true;
			if (what && used < what_len)
				used += (size_t)snprintf(what + used, what_len - used, "%s%s",
				                         used ? ", " : "", *in);
		}
	}
	if (!any)
		return 0;
	for (const char *const *o = g->outputs; *o; o++) {
		feed_str(&h, *o);
		feed_str(&h, tree_carry_dir_present(dfd, *o) ? "present" : "missing");
	}
	if (g->databases && feed_databases(&h, p) < 0)
		return 0;
	crypto_generichash_final(&h, out, sizeof(out));
	sodium_bin2hex(hex, STEP_INPUTS_HEX_LEN + 1, out, sizeof(out));
	return 1;
}
