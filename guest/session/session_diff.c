/* SPDX-License-Identifier: Apache-2.0 */
#include "session_diff.h"

#include <errno.h>
#include <fnmatch.h>
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "git_fetch.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(git_diff *, git_diff_free)
#define _cleanup_git_diff_ _cleanup_(git_diff_freep)

static int lg2(struct err *err, int rc, const char *what)
{
	const git_error *e = git_error_last();

	return err_set(err, ERR_FAILED, rc == GIT_ENOTFOUND ? ENOENT : EIO, "%s: %s", what,
	               e && e->message ? e->message : "unknown libgit2 error");
}

/* The pattern of a pathspec, and whether it excludes. */
static const char *pathspec_parse(const char *spec, bool *exclude)
{
	*exclude = false;
	if (spec[0] != ':')
		return spec;
	if (spec[1] == '!' || spec[1] == '^') {
		*exclude = true;
		return spec + 2;
	}
	if (spec[1] == '/')
		return spec + 2;
	if (spec[1] == '(') {
		const char *end = strchr(spec, ')');
		size_t n;

		if (!end)
			return spec;
		/* Magic words, comma-separated: only "exclude" changes what we do. */
		for (const char *w = spec + 2; w < end; w += n + 1) {
			n = strcspn(w, ",)");
			if ((n == 7 && strncmp(w, "exclude", 7) == 0) || (n == 1 && w[0] == '!'))
				*exclude = true;
		}
		return end + 1;
	}
	return spec + 1;
}

static bool pattern_matches(const char *pat, const char *path)
{
	size_t n = strlen(pat);

	if (n == 0 || strcmp(pat, ".") == 0)
		return true;
	if (pat[n - 1] == '/')
		return strncmp(path, pat, n) == 0;
	if (strncmp(path, pat, n) == 0 && (path[n] == '\0' || path[n] == '/'))
		return true;
	return fnmatch(pat, path, 0) == 0;
}

bool session_diff_path_excluded(char *const *pathspecs, const char *path)
{
	bool any_positive = false, included = false;

	for (size_t i = 0; pathspecs && pathspecs[i]; i++) {
		bool exclude;
		const char *pat = pathspec_parse(pathspecs[i], &exclude);

		if (exclude) {
			if (pattern_matches(pat, path))
				return true;
		} else {
			any_positive = true;
			if (pattern_matches(pat, path))
				included = true;
		}
	}
	return any_positive && !included;
}

static int diff_init(struct err *err)
{
	static const git_config_level_t levels[] = {GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG,
	                                            GIT_CONFIG_LEVEL_GLOBAL,
	                                            GIT_CONFIG_LEVEL_PROGRAMDATA};
	int rc = git_libgit2_init();

	if (rc < 0)
		return lg2(err, rc, "initializing libgit2");
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		rc = git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, levels[i], "");
		if (rc < 0) {
			git_libgit2_shutdown();
			return lg2(err, rc, "clearing libgit2's config search path");
		}
	}
	return 0;
}

static int checkout_open(const char *checkout, git_repository **ret, struct err *err)
{
	_cleanup_git_repository_ git_repository *repo = NULL;
	_cleanup_free_ char *gitdir = NULL, *commondir = NULL;
	struct stat st;
	int rc;

	if (asprintf(&gitdir, "%s/.git", checkout) < 0 ||
	    asprintf(&commondir, "%s/.git/commondir", checkout) < 0)
		return err_oom(err);
	if (lstat(checkout, &st) < 0)
		return err_errno(err, "cannot open the checkout %s", checkout);
	if (!S_ISDIR(st.st_mode))
		return err_set(err, ERR_FAILED, ENOTDIR, "the checkout %s is not a directory",
		               checkout);
	if (lstat(gitdir, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_set(err, ERR_FAILED, ENOENT,
		               "%s is not a git checkout (no .git directory, or it is a gitfile or "
		               "a link)",
		               checkout);
	if (lstat(commondir, &st) == 0)
		return err_set(err, ERR_FAILED, EPERM,
		               "%s/.git has a commondir file (a linked work tree)", checkout);
	rc = git_repository_open_bare(&repo, gitdir);
	if (rc < 0) {
		lg2(err, rc, "libgit2");
		return err_wrap(err, "opening the checkout %s", checkout);
	}
	rc = git_repository_set_workdir(repo, checkout, 0);
	if (rc < 0)
		return lg2(err, rc, "setting the work tree");
	*ret = TAKE_PTR(repo);
	return 0;
}

int session_diff_head(const char *checkout, char ret[41], struct err *err)
{
	_cleanup_git_repository_ git_repository *repo = NULL;
	git_oid oid;
	int rc;

	if (diff_init(err) < 0)
		return err_ret(err);
	if (checkout_open(checkout, &repo, err) < 0) {
		rc = err_ret(err);
		goto out;
	}
	rc = git_reference_name_to_id(&oid, repo, "HEAD");
	if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH) {
		snprintf(ret, 41, "%s", SESSION_DIFF_EMPTY_TREE);
		rc = 0;
	} else if (rc < 0) {
		rc = lg2(err, rc, "reading the checkout's HEAD");
	} else {
		git_oid_tostr(ret, 41, &oid);
		rc = 0;
	}
out:
	git_repository_free(TAKE_PTR(repo));
	git_libgit2_shutdown();
	return rc;
}

/* filter.<name>.clean|smudge|process in the checkout's own config (plain walk, no regex). */
static int has_filter_driver(git_repository *repo, bool *ret, struct err *err)
{
	_cleanup_git_config_ git_config *cfg = NULL;
	git_config_iterator *it = NULL;
	git_config_entry *e;
	int rc;

	*ret = false;
	rc = git_repository_config_snapshot(&cfg, repo);
	if (rc >= 0)
		rc = git_config_iterator_new(&it, cfg);
	if (rc < 0)
		return lg2(err, rc, "reading the checkout's git config");
	while (!*ret && git_config_next(&e, it) == 0) {
		const char *dot;

		if (strncmp(e->name, "filter.", 7) != 0)
			continue;
		dot = strrchr(e->name, '.');
		if (dot > e->name + 6 &&
		    (strcmp(dot, ".clean") == 0 || strcmp(dot, ".smudge") == 0 ||
		     strcmp(dot, ".process") == 0))
			*ret = true;
	}
	git_config_iterator_free(it);
	return 0;
}

struct diff_out {
	char *buf;
	size_t len, cap, max;
	char *const *pathspecs;
	const git_diff_delta *last_delta;
	bool skip, truncated, oom;
};

static bool out_put(struct diff_out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 8192;
		char *nb;

		while (cap < o->len + n + 1)
			cap *= 2;
		nb = realloc(o->buf, cap);
		if (!nb) {
			o->oom = true;
			return false;
		}
		o->buf = nb;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
	return true;
}

static int diff_line(const git_diff_delta *delta, const git_diff_hunk *hunk,
                     const git_diff_line *line, void *payload)
{
	struct diff_out *o = payload;
	bool origin = line->origin == GIT_DIFF_LINE_CONTEXT ||
	              line->origin == GIT_DIFF_LINE_ADDITION ||
	              line->origin == GIT_DIFF_LINE_DELETION;
	size_t n = line->content_len + (origin ? 1 : 0);
	size_t room =
	    o->max > strlen(SESSION_DIFF_TRUNCATED) ? o->max - strlen(SESSION_DIFF_TRUNCATED) : 0;

	(void)hunk;
	if (delta != o->last_delta) {
		o->last_delta = delta;
		o->skip = (delta->new_file.path &&
		           session_diff_path_excluded(o->pathspecs, delta->new_file.path)) ||
		          (delta->old_file.path &&
		           session_diff_path_excluded(o->pathspecs, delta->old_file.path));
	}
	if (o->skip)
		return 0;
	/* Every line is whole or not there; the truncation line always fits after them. */
	if (o->len + n > room) {
		o->truncated = true;
		return 1;
	}
	if (origin) {
		char c = line->origin;

		if (!out_put(o, &c, 1))
			return -1;
	}
	if (!out_put(o, line->content, line->content_len))
		return -1;
	return 0;
}

static int diff_run(git_repository *repo, const char *base, char *const *pathspecs, size_t max,
                    char **ret, size_t *ret_len, struct err *err)
{
	_cleanup_git_object_ git_object *obj = NULL;
	_cleanup_git_tree_ git_tree *tree = NULL;
	_cleanup_git_diff_ git_diff *diff = NULL;
	git_diff_options opts;
	struct diff_out o = {.max = max, .pathspecs = pathspecs};
	git_oid oid;
	int rc;

	if (git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION) < 0)
		return lg2(err, -1, "setting up the diff");
	if (git_oid_fromstr(&oid, base) < 0)
		return err_set(err, ERR_FAILED, EINVAL,
		               "the base commit '%.64s' is not an object id", base);
	if (strcmp(base, SESSION_DIFF_EMPTY_TREE) != 0) {
		rc = git_object_lookup(&obj, repo, &oid, GIT_OBJECT_ANY);
		if (rc >= 0)
			rc = git_object_peel((git_object **)&tree, obj, GIT_OBJECT_TREE);
		if (rc < 0)
			return lg2(err, rc, "looking up the base commit");
	}
	opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
	             GIT_DIFF_SHOW_UNTRACKED_CONTENT | GIT_DIFF_INCLUDE_TYPECHANGE;
	opts.ignore_submodules = GIT_SUBMODULE_IGNORE_ALL;
	rc = git_diff_tree_to_workdir_with_index(&diff, repo, tree, &opts);
	if (rc < 0)
		return lg2(err, rc, "taking the diff");
	rc = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, diff_line, &o);
	if (o.oom) {
		free(o.buf);
		return err_oom(err);
	}
	if (rc < 0 && !o.truncated) {
		free(o.buf);
		return lg2(err, rc, "printing the diff");
	}
	if (o.truncated) {
		if (!out_put(&o, SESSION_DIFF_TRUNCATED, strlen(SESSION_DIFF_TRUNCATED))) {
			free(o.buf);
			return err_oom(err);
		}
	}
	if (!o.buf && !out_put(&o, "", 0))
		return err_oom(err);
	*ret = o.buf;
	*ret_len = o.len;
	return 0;
}

int session_diff_text(const char *checkout, const char *base, char *const *pathspecs, size_t max,
                      char **ret, size_t *ret_len, struct err *err)
{
	_cleanup_git_repository_ git_repository *repo = NULL;
	bool filters = false;
	int rc;

	if (diff_init(err) < 0)
		return err_ret(err);
	rc = checkout_open(checkout, &repo, err);
	if (rc >= 0)
		rc = has_filter_driver(repo, &filters, err);
	if (rc >= 0 && filters) {
		*ret = strdup(SESSION_DIFF_FILTER_SENTENCE);
		*ret_len = strlen(SESSION_DIFF_FILTER_SENTENCE);
		rc = *ret ? 0 : err_oom(err);
	} else if (rc >= 0) {
		rc = diff_run(repo, base, pathspecs, max, ret, ret_len, err);
	}
	git_repository_free(TAKE_PTR(repo));
	git_libgit2_shutdown();
	return rc;
}
