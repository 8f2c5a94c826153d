/* SPDX-License-Identifier: Apache-2.0 */
#include "tree_carry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sodium.h>
#include <unistd.h>

#include "file.h"
#include "fs_safe.h"
#include "log.h"
#include "strv.h"

static const char *const node_inputs[] = {"package.json",
                                          "package-lock.json",
                                          "npm-shrinkwrap.json",
                                          "yarn.lock",
                                          "pnpm-lock.yaml",
                                          "bun.lockb",
                                          "bun.lock",
                                          ".npmrc",
                                          ".yarnrc.yml",
                                          ".nvmrc",
                                          ".node-version",
                                          NULL};
static const char *const node_outputs[] = {"node_modules", NULL};
static const char *const no_caches[] = {NULL}; /* also: no outputs */
static const char *const node_installers[] = {"npm ci",       "npm install", "npm i",
                                              "yarn install", "yarn",        "pnpm install",
                                              "pnpm i",       "bun install", NULL};

static const char *const ruby_inputs[] = {
    "Gemfile", "Gemfile.lock", "gems.rb", "gems.locked", ".ruby-version", ".tool-versions", NULL};
static const char *const ruby_outputs[] = {"vendor/bundle", ".bundle", NULL};
/* bootsnap's and the asset pipeline's caches (both check what they cache). */
static const char *const ruby_caches[] = {"tmp/cache", NULL};
static const char *const ruby_installers[] = {"bundle install", "bundle", NULL};

/*
 * `db:prepare`: what it reads (the schema, every migration, the seeds, the database settings
 * and the adapter's version). What it builds is no directory of the tree but the boot's
 * throwaway databases, which stay in the workspace across checkouts (step_inputs.c).
 */
static const char *const db_inputs[] = {
    "db/schema.rb",        "db/structure.sql", "db/seeds.rb", "db/migrate/",
    "config/database.yml", "Gemfile.lock",     NULL};
static const char *const db_steps[] = {"bin/rails db:prepare",         "rails db:prepare",
                                       "bundle exec rails db:prepare", "bin/rake db:prepare",
                                       "bundle exec rake db:prepare",  NULL};

const struct tree_carry_group tree_carry_groups[] = {
    {"node", node_inputs, node_outputs, no_caches, node_installers, false},
    {"ruby", ruby_inputs, ruby_outputs, ruby_caches, ruby_installers, false},
    {"database", db_inputs, no_caches, no_caches, db_steps, true},
    {NULL, NULL, NULL, NULL, NULL, false},
};

static int open_dir_at(int dfd, const char *name)
{
	return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/*
 * Open the parent directory of the relative path below dfd, one component at a time without
 * following links; *ret_name points at the last component in path. create: make missing
 * parents (0755, uid:gid). -errno (ELOOP/ENOTDIR for a link or a file on the way).
 */
static int open_parent(int dfd, const char *path, bool create, uid_t uid, gid_t gid,
                       const char **ret_name)
{
	char comp[NAME_MAX + 1];
	const char *p = path, *slash;
	int fd = dup(dfd);

	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		size_t n = (size_t)(slash - p);
		int next;

		if (n == 0 || n > NAME_MAX) {
			close(fd);
			return -EINVAL;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		next = open_dir_at(fd, comp);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
				int e = -errno;
				close(fd);
				return e;
			}
			next = open_dir_at(fd, comp);
			if (next >= 0 && uid != (uid_t)-1 && fchown(next, uid, gid) < 0) {
				int e = -errno;
				close(next);
				close(fd);
				return e;
			}
		}
		if (next < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*ret_name = p;
	return fd;
}

bool tree_carry_dir_present(int dfd, const char *path)
{
	_cleanup_close_ int parent = -1;
	const char *name;
	struct stat st;

	parent = open_parent(dfd, path, false, (uid_t)-1, (gid_t)-1, &name);
	return parent >= 0 && fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

void tree_carry_digest_feed(crypto_generichash_state *h, const void *data, size_t len)
{
	uint64_t n = len;

	crypto_generichash_update(h, (const unsigned char *)&n, sizeof(n));
	crypto_generichash_update(h, data, len);
}

/* One regular file's name and bytes into h; *budget is what the input may still read. */
static int digest_file(crypto_generichash_state *h, int parent, const char *name, size_t *budget)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct err e;
	int r = file_read_capped(parent, name, *budget, READ_NOFOLLOW | READ_MISSING_OK, &buf, &len,
	                         &e);

	if (r < 0)
		return -EINVAL;
	tree_carry_digest_feed(h, name, strlen(name));
	tree_carry_digest_feed(h, r == 0 ? "present" : "missing", 7);
	tree_carry_digest_feed(h, buf ? buf : "", len);
	*budget -= len;
	return r == 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's regular files, one level down, in name order; anything else refuses it. */
static int digest_dir(crypto_generichash_state *h, int parent, const char *name, size_t *budget)
{
	_cleanup_strv_ char **names = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_closedir_ DIR *d = NULL;
	size_t n = 0;
	struct dirent *de;
	int list_fd;

	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	list_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (list_fd < 0)
		return -errno;
	d = fdopendir(list_fd);
	if (!d) {
		int e = -errno;
		close(list_fd);
		return e;
	}
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n >= TREE_CARRY_MAX_DIR_FILES || strv_push(&names, de->d_name) < 0)
			return -E2BIG;
		n++;
	}
	if (errno)
		return -errno; /* a listing cut short is no listing */
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	tree_carry_digest_feed(h, "directory", 9);
	for (size_t i = 0; i < n; i++)
		if (digest_file(h, fd, names[i], budget) != 1)
			return -EINVAL; /* a link, a directory, a file over the cap */
	return 1;
}

int tree_carry_input_digest(int dfd, const char *input, unsigned char out[TREE_CARRY_DIGEST_BYTES],
                            bool *ret_present)
{
	size_t len = strlen(input), budget = TREE_CARRY_MAX_INPUT_BYTES;
	bool is_dir = len > 1 && input[len - 1] == '/';
	_cleanup_free_ char *path = is_dir ? strndup(input, len - 1) : strdup(input);
	_cleanup_close_ int parent = -1;
	crypto_generichash_state h;
	const char *name;
	int r;

	*ret_present = false;
	if (!path)
		return -ENOMEM;
	crypto_generichash_init(&h, NULL, 0, TREE_CARRY_DIGEST_BYTES);
	tree_carry_digest_feed(&h, input, len);
	parent = open_parent(dfd, path, false, (uid_t)-1, (gid_t)-1, &name);
	if (parent == -ENOENT)
		r = 0;
	else if (parent < 0)
		return parent;
	else
		r = is_dir ? digest_dir(&h, parent, name, &budget)
		           : digest_file(&h, parent, name, &budget);
	if (r < 0)
		return r;
	*ret_present = r == 1;
	crypto_generichash_final(&h, out, TREE_CARRY_DIGEST_BYTES);
	return 0;
}

/* 1: the input is the same in both trees (both missing counts), 0: it differs, -errno. */
static int same_input(int old_fd, int new_fd, const char *name, bool *ret_present)
{
	unsigned char a[TREE_CARRY_DIGEST_BYTES], b[TREE_CARRY_DIGEST_BYTES];
	bool pa, pb;

	if (tree_carry_input_digest(old_fd, name, a, &pa) < 0 ||
	    tree_carry_input_digest(new_fd, name, b, &pb) < 0)
		return -EINVAL;
	*ret_present = pa || pb;
	return pa == pb && memcmp(a, b, sizeof(a)) == 0;
}

/*
 * Whether the group's inputs are unchanged; why says which (the first changed one, or the
 * ones compared). 1: unchanged, 0: changed or none present.
 */
static int group_unchanged(int old_fd, int new_fd, const struct tree_carry_group *g, char *why,
                           size_t len)
{
	size_t used = 0;
	bool any = false;

	why[0] = '\0';
	for (const char *const *in = g->inputs; *in; in++) {
		bool present = false;
		int r = same_input(old_fd, new_fd, *in, &present);

		if (r < 0) {
			snprintf(why, len, "%s cannot be compared (a link, or too large)", *in);
			return 0;
		}
		if (r == 0) {
			snprintf(why, len, "%s changed", *in);
			return 0;
		}
		if (present) {
			any = true;
			used += (size_t)snprintf(why + used, used < len ? len - used : 0, "%s%s",
			                         used ? ", " : "", *in);
		}
	}
	if (!any)
		return 0;
	if (used < len)
		snprintf(why + used, len - used, " unchanged");
	return 1;
}

/* Move one directory; on refusal why says what stopped it. */
static bool carry_one(int old_fd, int new_fd, const char *path, uid_t uid, gid_t gid, char *why,
                      size_t len)
{
	_cleanup_close_ int src = -1, dst = -1;
	const char *sname, *dname;
	struct stat st, nst, dst_st;
	int fd;

	fd = open_parent(old_fd, path, false, (uid_t)-1, (gid_t)-1, &sname);
	if (fd < 0) {
		if (fd != -ENOENT)
			snprintf(why, len,
			         "a parent of %s in the old tree is a link or not a directory",
			         path);
		return false;
	}
	src = fd;
	if (fstatat(src, sname, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false; /* the old tree has none: nothing to carry */
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "%s in the old tree is not a directory (a link?)", path);
		return false;
	}
	if (st.st_uid != uid) {
		snprintf(why, len, "%s in the old tree belongs to uid %u, not the app's %u", path,
		         (unsigned)st.st_uid, (unsigned)uid);
		return false;
	}
	if (fstatat(new_fd, ".", &nst, 0) < 0 || nst.st_dev != st.st_dev) {
		snprintf(why, len, "%s is on another filesystem than the new tree", path);
		return false;
	}
	fd = open_parent(new_fd, path, true, uid, gid, &dname);
	if (fd < 0) {
		snprintf(why, len, "a parent of %s in the new tree is a link or not a directory",
		         path);
		return false;
	}
	dst = fd;
	if (fstatat(dst, dname, &dst_st, AT_SYMLINK_NOFOLLOW) == 0) {
		snprintf(why, len, "the new tree has its own %s", path);
		return false;
	}
	if (fs_safe_rename_at(src, sname, dst, dname, RENAME_NOREPLACE) < 0) {
		snprintf(why, len, "moving %s failed: %s", path, strerror(errno));
		return false;
	}
	return true;
}

static struct tree_carry_entry *report_add(struct tree_carry_report *rep, const char *path)
{
	struct tree_carry_entry *e;

	if (rep->n >= TREE_CARRY_MAX_ENTRIES)
		return NULL;
	e = &rep->e[rep->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->path, sizeof(e->path), "%s", path);
	return e;
}

/* Carry (or report as built again) each of dirs; same: the group's inputs are unchanged. */
static void carry_dirs(int old_fd, int new_fd, const char *const *dirs, bool same, const char *why,
                       uid_t uid, gid_t gid, struct tree_carry_report *rep)
{
	for (const char *const *d = dirs; *d; d++) {
		struct tree_carry_entry *e;
		char stop[192] = "";
		bool moved;

		if (!same && !tree_carry_dir_present(old_fd, *d))
			continue;
		moved = same && carry_one(old_fd, new_fd, *d, uid, gid, stop, sizeof(stop));
		if (same && !moved && !stop[0])
			continue; /* the old tree had none */
		e = report_add(rep, *d);
		if (!e)
			return;
		e->moved = moved;
		if (!same)
			snprintf(e->why, sizeof(e->why), "%s: built again", why);
		else if (moved)
			snprintf(e->why, sizeof(e->why), "%s", why);
		else
			snprintf(e->why, sizeof(e->why), "%s: built again", stop);
		log_debug("carry-over of %s: %s (%s)", *d, moved ? "moved" : "not moved", e->why);
	}
}

void tree_carry_run(int old_fd, int new_fd, uid_t uid, gid_t gid, struct tree_carry_report *rep)
{
	struct stat root;

	memset(rep, 0, sizeof(*rep));
	if (fstat(old_fd, &root) < 0)
		return;
	if (uid == (uid_t)-1) {
		uid = root.st_uid;
		gid = root.st_gid;
	}
	for (const struct tree_carry_group *g = tree_carry_groups; g->name; g++) {
		char why[160];
		bool same;

		if (!g->outputs[0] && !g->caches[0])
			continue; /* nothing of the tree to carry (db:prepare's database) */
		same = group_unchanged(old_fd, new_fd, g, why, sizeof(why)) == 1;

		if (!why[0])
			continue; /* neither tree uses this group */
		carry_dirs(old_fd, new_fd, g->outputs, same, why, uid, gid, rep);
		carry_dirs(old_fd, new_fd, g->caches, same, why, uid, gid, rep);
	}
}

void tree_carry_report_format(const struct tree_carry_report *rep, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < rep->n && used < len; i++)
		used += (size_t)snprintf(
		    buf + used, len - used, "%s%s %s (%s)", i ? "; " : "", rep->e[i].path,
		    rep->e[i].moved ? "carried over" : "not carried", rep->e[i].why);
}

static bool plain_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("_=.,:/@+-", c);
}

const struct tree_carry_group *tree_carry_group_of_command(const char *command)
{
	while (command && *command == ' ')
		command++;
	if (!command || !*command)
		return NULL;
	for (const char *p = command; *p; p++)
		if (*p != ' ' && !plain_word_char(*p))
			return NULL;
	for (const struct tree_carry_group *g = tree_carry_groups; g->name; g++)
		for (const char *const *in = g->installers; *in; in++) {
			size_t n = strlen(*in);
			if (strncmp(command, *in, n) == 0 &&
			    (command[n] == '\0' || command[n] == ' ') &&
			    /* "bundle exec rake" or "npm i --x" are not "bundle"/"npm i" + options
			     */
			    (command[n] == '\0' || command[n + strspn(command + n, " ")] == '-' ||
			     command[n + strspn(command + n, " ")] == '\0'))
				return g;
		}
	return NULL;
}
