/* SPDX-License-Identifier: Apache-2.0 */
#include "step_inputs.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "child_env.h"
#include "cleanup.h"
#include "file.h"
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
	feed_str(&h, "sandbox step inputs v1");
	feed_str(&h, s->command);
	feed_env(&h, p);
	for (const char *const *in = g->inputs; *in; in++) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;
		struct err e;
		int r = file_read_capped(dfd, *in, TREE_CARRY_MAX_INPUT_BYTES,
		                         READ_NOFOLLOW | READ_MISSING_OK, &buf, &len, &e);

		if (r < 0)
			return 0;
		feed_str(&h, *in);
		feed_str(&h, r == 0 ? "present" : "missing");
		if (r == 0) {
			feed(&h, buf ? buf : "", len);
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
	crypto_generichash_final(&h, out, sizeof(out));
	sodium_bin2hex(hex, STEP_INPUTS_HEX_LEN + 1, out, sizeof(out));
	return 1;
}
