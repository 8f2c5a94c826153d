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
	uint64_t n = len;

	crypto_generichash_update(h, (const unsigned char *)&n, sizeof(n));
	crypto_generichash_update(h, data, len);
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

/* An object's identity (present, device, inode), or its absence. */
static void feed_id(crypto_generichash_state *h, const struct stat *st)
{
	uint64_t id[2] = {st ? (uint64_t)st->st_dev : 0, st ? (uint64_t)st->st_ino : 0};

	feed_str(h, st ? "present" : "missing");
	feed(h, id, sizeof(id));
}

/*
 * The boot's throwaway databases, when every one is a SQLite file the plan placed in the
 * workspace and it exists: their paths and identities. -1 otherwise (a server database, one
 * the app's own environment names, none, or a file missing): the step always runs.
 */
static int feed_databases(crypto_generichash_state *h, const struct boot_plan *p)
{
	if (p->db.n_entries == 0)
		return -1;
	for (size_t i = 0; i < p->db.n_entries; i++) {
		const struct database_entry *d = &p->db.entries[i];
		const char *path =
		    d->url && strncmp(d->url, "sqlite3:", 8) == 0 ? d->url + 8 : NULL;
		struct stat st;

		if (d->set_by_file || !path || path[0] != '/' || lstat(path, &st) < 0 ||
		    !S_ISREG(st.st_mode))
			return -1;
		feed_str(h, path);
		feed_id(h, &st);
	}
	return 0;
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
	/* What it built, as the very objects it built: a tree's own copy is not the same. */
	for (const char *const *o = g->outputs; *o; o++) {
		struct stat st;
		bool present = tree_carry_output_stat(dfd, *o, &st) == 1;

		feed_str(&h, *o);
		feed_id(&h, present ? &st : NULL);
	}
	if (g->databases && feed_databases(&h, p) < 0)
		return 0;
	crypto_generichash_final(&h, out, sizeof(out));
	sodium_bin2hex(hex, STEP_INPUTS_HEX_LEN + 1, out, sizeof(out));
	return 1;
}
