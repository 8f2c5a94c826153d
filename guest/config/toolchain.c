/* SPDX-License-Identifier: Apache-2.0 */
#include "toolchain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "log.h"
#include "strv.h"

#define VERSION_FILE_MAX 4096
#define VERSION_MAX 64

struct lang {
	const char *name;      /* "ruby" */
	const char *tool_name; /* the name in .tool-versions */
	const char *root_var;  /* RBENV_ROOT */
	const char *root_default;
	const char *home_default; /* below HOME, or NULL */
	const char *versions_sub; /* "versions" below the root, or "" */
	const char *version_var;  /* RBENV_VERSION, or NULL */
	const char *files[3];     /* the checkout's own version files */
};

static const struct lang langs[] = {
    {"ruby",
     "ruby",
     "RBENV_ROOT",
     "/usr/local/rbenv",
     ".rbenv",
     "versions",
     "RBENV_VERSION",
     {".ruby-version", NULL}},
    {"node",
     "nodejs",
     "NODENV_ROOT",
     "/usr/local/nodenv",
     ".nodenv",
     "versions",
     "NODENV_VERSION",
     {".node-version", ".nvmrc", NULL}},
    {"bun",
     "bun",
     "BUN_VERSIONS_ROOT",
     "/usr/local/bun/versions",
     NULL,
     "",
     NULL,
     {".bun-version", NULL}},
};

/* [0-9A-Za-z._-]+, not starting with '.' or '-': safe as a directory name. */
static bool version_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > VERSION_MAX || v[0] == '.' || v[0] == '-')
		return false;
	for (; *v; v++)
		if (!((*v >= '0' && *v <= '9') || (*v >= 'a' && *v <= 'z') ||
		      (*v >= 'A' && *v <= 'Z') || *v == '.' || *v == '_' || *v == '-'))
			return false;
	return true;
}

/* First word of the first non-comment line, without a "ruby-" or "v" prefix. */
static char *first_version(const char *text, const char *lang)
{
	const char *p = text;

	while (p && *p) {
		const char *end;
		size_t skip;
		p += strspn(p, " \t\r\n");
		if (*p == '#') {
			p = strchr(p, '\n');
			continue;
		}
		end = p + strcspn(p, " \t\r\n#");
		if (end == p)
			return NULL;
		skip = 0;
		if ((size_t)(end - p) > strlen(lang) + 1 && strncmp(p, lang, strlen(lang)) == 0 &&
		    p[strlen(lang)] == '-')
			skip = strlen(lang) + 1;
		else if (p[0] == 'v' && p[1] >= '0' && p[1] <= '9')
			skip = 1;
		return strndup(p + skip, (size_t)(end - p) - skip);
	}
	return NULL;
}

/* The version .tool-versions names for tool, or NULL. */
static char *tool_versions_lookup(const char *text, const char *tool)
{
	size_t tl = strlen(tool);

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		const char *p = line + strspn(line, " \t");
		if (strncmp(p, tool, tl) == 0 && (p[tl] == ' ' || p[tl] == '\t')) {
			p += tl + strspn(p + tl, " \t");
			return strndup(p, strcspn(p, " \t\r\n#"));
		}
		line = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static const struct lang *lang_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(langs); i++)
		if (strcmp(langs[i].name, name) == 0)
			return &langs[i];
	return NULL;
}

char *toolchain_checkout_version(const char *app_dir, const char *lang_name)
{
	const struct lang *l = lang_find(lang_name);
	_cleanup_close_ int dfd = -1;
	struct err ignored;

	if (!l)
		return NULL;
	dfd = open(app_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	for (size_t i = 0; l->files[i]; i++) {
		_cleanup_free_ char *buf = NULL;
		char *v;
		if (file_read_capped(dfd, l->files[i], VERSION_FILE_MAX,
		                     READ_NOFOLLOW | READ_MISSING_OK, &buf, NULL, &ignored) != 0 ||
		    !buf)
			continue;
		v = first_version(buf, l->name);
		if (v && version_ok(v))
			return v;
		if (v)
			log_debug("%s names %s version '%s', which cannot be selected", l->files[i],
			          l->name, v);
		free(v);
	}
	{
		_cleanup_free_ char *buf = NULL;
		char *v;
		if (file_read_capped(dfd, ".tool-versions", VERSION_FILE_MAX,
		                     READ_NOFOLLOW | READ_MISSING_OK, &buf, NULL, &ignored) != 0 ||
		    !buf)
			return NULL;
		v = tool_versions_lookup(buf, l->tool_name);
		if (v && version_ok(v))
			return v;
		free(v);
	}
	return NULL;
}

/* Compare dotted versions numerically where both parts are numbers. */
static int version_cmp(const char *a, const char *b)
{
	return strverscmp(a, b);
}

char *toolchain_match(const char *versions_dir, const char *want)
{
	_cleanup_closedir_ DIR *d = opendir(versions_dir);
	size_t wl = strlen(want);
	char *best = NULL;
	struct dirent *de;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		if (n[0] == '.' || !version_ok(n))
			continue;
		if (strcmp(n, want) == 0) {
			free(best);
			return strdup(n);
		}
		if (strncmp(n, want, wl) == 0 && n[wl] == '.' &&
		    (!best || version_cmp(n, best) > 0)) {
			free(best);
			best = strdup(n);
		}
	}
	return best;
}

/* What is installed, for the error message: "3.1.2, 3.2.0" (or "none"). */
static void installed_list(const char *versions_dir, char *buf, size_t len)
{
	_cleanup_closedir_ DIR *d = opendir(versions_dir);
	struct dirent *de;
	size_t used = 0;

	buf[0] = '\0';
	while (d && (de = readdir(d)) && used + 2 < len) {
		if (de->d_name[0] == '.' || !version_ok(de->d_name))
			continue;
		used +=
		    (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", de->d_name);
	}
	if (!buf[0])
		snprintf(buf, len, "none");
}

static char *manager_versions_dir(const struct lang *l, char *const *caller_env, const char *home)
{
	const char *root = strv_env_get(caller_env, l->root_var);
	char *dir = NULL;
	struct stat st;

	if (root && *root) {
		if (asprintf(&dir, "%s%s%s", root, *l->versions_sub ? "/" : "", l->versions_sub) <
		    0)
			return NULL;
		return dir;
	}
	if (asprintf(&dir, "%s%s%s", l->root_default, *l->versions_sub ? "/" : "",
	             l->versions_sub) < 0)
		return NULL;
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return dir;
	free(dir);
	dir = NULL;
	if (home && l->home_default &&
	    asprintf(&dir, "%s/%s/%s", home, l->home_default, l->versions_sub) < 0)
		return NULL;
	return dir;
}

static int path_prepend(char ***env, const char *bin, struct err *err)
{
	const char *path = strv_env_get(*env, "PATH");
	_cleanup_free_ char *np = NULL;

	if (asprintf(&np, "%s%s%s", bin, path && *path ? ":" : "", path ? path : "") < 0 ||
	    strv_env_set(env, "PATH", np) < 0)
		return err_oom(err);
	return 0;
}

static int select_one(const struct lang *l, const char *want, bool from_spec,
                      char *const *caller_env, const char *home, char ***env, char **ret,
                      struct err *err)
{
	_cleanup_free_ char *vdir = manager_versions_dir(l, caller_env, home);
	_cleanup_free_ char *pick = NULL;
	_cleanup_free_ char *bin = NULL;
	char have[512];
	struct stat st;

	*ret = NULL;
	if (!version_ok(want))
		return err_set(err, ERR_REFUSED, EINVAL, "%s version '%s' is not a version name",
		               l->name, want);
	if (!vdir || stat(vdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		if (from_spec)
			return err_set(err, ERR_REFUSED, ENOENT,
			               "%s %s was asked for, but this image has no %s version "
			               "manager (%s)",
			               l->name, want, l->name, vdir ? vdir : l->root_var);
		log_debug("no %s version manager: using the system's %s", l->name, l->name);
		return 0;
	}
	pick = toolchain_match(vdir, want);
	if (!pick) {
		installed_list(vdir, have, sizeof(have));
		return err_set(err, ERR_REFUSED, ENOENT,
		               "%s %s is not installed in this image (installed: %s)", l->name,
		               want, have);
	}
	if (asprintf(&bin, "%s/%s/bin", vdir, pick) < 0)
		return err_oom(err);
	if (path_prepend(env, bin, err) < 0)
		return -1;
	if (l->version_var && strv_env_set(env, l->version_var, pick) < 0)
		return err_oom(err);
	*ret = TAKE_PTR(pick);
	return 0;
}

int toolchain_select(const char *app_dir, const struct boot_toolchain *spec,
                     char *const *caller_env, const char *home, char ***env,
                     struct toolchain_choice *ret, struct err *err)
{
	struct toolchain_choice c = {0};
	char **slots[] = {&c.ruby, &c.node, &c.bun};
	const char *asked[] = {spec ? spec->ruby : NULL, spec ? spec->node : NULL,
	                       spec ? spec->bun : NULL};

	for (size_t i = 0; i < ELEMENTSOF(langs); i++) {
		_cleanup_free_ char *from_checkout = NULL;
		const char *want = asked[i];

		if (!want)
			want = from_checkout = toolchain_checkout_version(app_dir, langs[i].name);
		if (!want)
			continue;
		if (select_one(&langs[i], want, asked[i] != NULL, caller_env, home, env, slots[i],
		               err) < 0) {
			if (!asked[i])
				err_wrap(err, "the checkout names its versions");
			toolchain_choice_dispose(&c);
			return -1;
		}
	}
	*ret = c;
	return 0;
}

void toolchain_choice_dispose(struct toolchain_choice *c)
{
	free(c->ruby);
	free(c->node);
	free(c->bun);
	c->ruby = c->node = c->bun = NULL;
}
