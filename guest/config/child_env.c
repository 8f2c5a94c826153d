/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The environment of a boot's commands (docs/platform-contract.md, "The child environment"): the
 * caller's environment minus everything that would point the app at real services or hand it a
 * credential, then the throwaway databases, the file's `env`, the per-sandbox SECRET_KEY_BASE,
 * the shared download caches, the run user's identity and the two variables the platform
 * reads back. Also the per-sandbox SECRET_KEY_BASE file and session ids (libsodium).
 */
#include "child_env.h"
#include "egress_config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "log.h"
#include "strv.h"

/* Exact names (compared case-insensitively, like every name rule here). */
static const char *const dropped_names[] = {
    "DATABASE_URL", "REDIS_URL", "SECRET_KEY_BASE", "RAILS_MASTER_KEY", "RAILS_ENV", "RACK_ENV",
    "PORT", "BUNDLE_GEMFILE", "RUBYOPT", "RUBYLIB", "SSH_AUTH_SOCK", "CLAUDECODE",
    /*
     * Git location variables: the contract names GIT_DIR and GIT_WORK_TREE; the others
     * git(1) lists under "The Git Repository" move the index, the object store or the
     * namespace just as surely, so a caller's repository never leaks into the app's git.
     */
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", NULL};

/* GIT_CONFIG covers GIT_CONFIG, _GLOBAL, _SYSTEM, _NOSYSTEM, _COUNT, _KEY_n, _VALUE_n, ... */
static const char *const dropped_prefixes[] = {"ACTIVE_RECORD_ENCRYPTION_",
                                               "BUNDLE_",
                                               "BUNDLER_",
                                               "GIT_CONFIG",
                                               "ANTHROPIC_",
                                               "CLAUDE_",
                                               "OPENAI_",
                                               "OPEN_AI_",
                                               "OPENROUTER_",
                                               "OPEN_ROUTER_",
                                               "OLLAMA_",
                                               NULL};

static const char *const dropped_suffixes[] = {"_DATABASE_URL", NULL};

/* A name holding one of these anywhere looks like a secret. */
static const char *const secret_words[] = {"SECRET",     "TOKEN",      "PASSWORD", "PASSWD",
                                           "PASSPHRASE", "API_KEY",    "APIKEY",   "PRIVATE_KEY",
                                           "CREDENTIAL", "ACCESS_KEY", "WEBHOOK",  NULL};

/*
 * A name ending in one of these as a whole word (the whole name, or preceded by a character
 * that is not a letter or digit) looks like a secret: FOO_PASS, PASS, DB_PWD, GITHUB_PAT,
 * STRIPE_KEY. COMPASS, OLDPWD, SPAT, PATH, MONKEY and KEYBOARD_LAYOUT do not. The contract
 * says "_KEY at the end"; a bare KEY is taken as a secret too, being no less likely one.
 */
static const char *const secret_end_words[] = {"PASS", "PWD", "PAT", "KEY", NULL};

/* A name ending in these (not necessarily a whole word) looks like a secret: SENTRY_DSN. */
static const char *const secret_suffixes[] = {"DSN", NULL};

const char *const child_env_cache_dirs[] = {
    /* Bundler's user cache: the compact index, git sources and the global gem cache. It is
     * never where gems are installed (that is GEM_HOME / BUNDLE_PATH, left alone). */
    "BUNDLE_USER_CACHE=bundler",
    /* npm's cache directory (_cacache): downloads only; node_modules stays in the app. */
    "npm_config_cache=npm",
    /*
     * Yarn 2+'s global folder: Yarn 4 keeps its global download cache in it. Not
     * YARN_CACHE_FOLDER: Yarn 1 reads it as its download cache, but Yarn 2 and 3 read the
     * same name as the project's own cache folder (.yarn/cache), which under Plug'n'Play is
     * where the app's packages are loaded from and what zero-install repositories commit.
     * Measured: yarn 4.18 moves its cache with YARN_GLOBAL_FOLDER and ignores
     * YARN_CACHE_FOLDER; yarn 3.8 moves .yarn/cache with YARN_CACHE_FOLDER. Yarn 1 keeps
     * its default cache below the run user's HOME.
     */
    "YARN_GLOBAL_FOLDER=yarn",
    /*
     * pnpm's content-addressable store (node_modules hard-links into it; moving it never
     * moves node_modules). pnpm 11+ reads pnpm_config_store_dir. pnpm 10 and older only
     * read npm_config_store_dir, which makes npm print "Unknown env config" on every
     * command, so they keep their default store below HOME. (There is no PNPM_STORE_DIR.)
     */
    "pnpm_config_store_dir=pnpm-store",
    /* Bun's global install cache. */
    "BUN_INSTALL_CACHE_DIR=bun",
    NULL,
};

static bool ascii_alnum(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool has_prefix_ci(const char *s, const char *prefix)
{
	return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static bool has_suffix_ci(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static bool ends_with_word_ci(const char *s, const char *word)
{
	size_t n = strlen(s), m = strlen(word);

	if (!has_suffix_ci(s, word))
		return false;
	return n == m || !ascii_alnum(s[n - m - 1]);
}

bool child_env_name_looks_secret(const char *name)
{
	if (!name)
		return false;
	for (size_t i = 0; secret_words[i]; i++)
		if (strcasestr(name, secret_words[i]))
			return true;
	for (size_t i = 0; secret_suffixes[i]; i++)
		if (has_suffix_ci(name, secret_suffixes[i]))
			return true;
	/*
	 * PWD as a whole word at the end would also match the shell's own PWD (the working
	 * directory), which is no secret and which programs read; that one exact name is kept.
	 * MYSQL_PWD, DB_PWD and a lower-case "pwd" still count.
	 */
	if (strcmp(name, "PWD") == 0)
		return false;
	for (size_t i = 0; secret_end_words[i]; i++)
		if (ends_with_word_ci(name, secret_end_words[i]))
			return true;
	return false;
}

bool child_env_name_is_dropped(const char *name)
{
	if (!name)
		return false;
	for (size_t i = 0; dropped_names[i]; i++)
		if (strcasecmp(name, dropped_names[i]) == 0)
			return true;
	for (size_t i = 0; dropped_prefixes[i]; i++)
		if (has_prefix_ci(name, dropped_prefixes[i]))
			return true;
	for (size_t i = 0; dropped_suffixes[i]; i++)
		if (has_suffix_ci(name, dropped_suffixes[i]))
			return true;
	return child_env_name_looks_secret(name);
}

static bool scheme_char(char c)
{
	return ascii_alnum(c) || c == '+' || c == '-' || c == '.';
}

/*
 * "scheme://user@" anywhere in the value: a scheme character right before "://", then a
 * non-empty userinfo (RFC 3986: no '/', '?', '#') ended by '@'. "https://:pw@host" counts
 * (a password without a user), "https://@host" and "https://host/@scope" do not.
 */
bool child_env_value_has_userinfo(const char *value)
{
	if (!value)
		return false;
	for (const char *p = strstr(value, "://"); p; p = strstr(p + 3, "://")) {
		const char *u = p + 3;
		size_t n;

		if (p == value || !scheme_char(p[-1]))
			continue;
		n = strcspn(u, "/?#@ \t\r\n");
		if (n > 0 && u[n] == '@')
			return true;
	}
	return false;
}

bool child_env_entry_is_dropped(const char *name, const char *value)
{
	return child_env_name_is_dropped(name) || child_env_value_has_userinfo(value);
}

static int env_set_checked(char ***env, const char *name, const char *value, struct err *err)
{
	if (strv_env_set(env, name, value) < 0)
		return err_oom_at(err, "building the environment");
	return 0;
}

/* Set "NAME=VALUE" (a whole entry) unless NAME is skip. */
static int env_set_entry(char ***env, const char *entry, const char *skip, const char *what,
                         struct err *err)
{
	size_t nl = strv_env_name_len(entry);
	_cleanup_free_ char *name = NULL;

	if (nl == 0 || entry[nl] != '=')
		return err_set(err, ERR_REFUSED, EINVAL,
		               "%s holds an entry without NAME=: \"%.40s\"", what, entry);
	name = strndup(entry, nl);
	if (!name)
		return err_oom_at(err, "building the environment");
	if (skip && strcmp(name, skip) == 0)
		return 0;
	return env_set_checked(env, name, entry + nl + 1, err);
}

/* The caller's environment after the rules, keeping opted-in names. */
static int env_filter_caller(char ***env, char *const *caller, char *const *pass_env,
                             struct err *err)
{
	for (size_t i = 0; caller && caller[i]; i++) {
		const char *e = caller[i];
		size_t nl = strv_env_name_len(e);
		_cleanup_free_ char *name = NULL;

		if (nl == 0 || e[nl] != '=')
			continue;
		name = strndup(e, nl);
		if (!name)
			return err_oom_at(err, "building the environment");
		/* PORT never, not even opted in: manifest and start get the engine's. */
		if (strcmp(name, "PORT") == 0)
			continue;
		/* A name listed twice: the first one counts, as getenv() sees it. */
		if (strv_env_get(*env, name))
			continue;
		if (!strv_contains(pass_env, name) &&
		    child_env_entry_is_dropped(name, e + nl + 1)) {
			log_debug("child environment: dropped %s", name);
			continue;
		}
		if (strv_push(env, e) < 0)
			return err_oom_at(err, "building the environment");
	}
	return 0;
}

static int env_set_caches(char ***env, const char *cache_root, char *const *file_env,
                          struct err *err)
{
	size_t rl = strlen(cache_root);

	while (rl > 1 && cache_root[rl - 1] == '/')
		rl--;
	for (size_t i = 0; child_env_cache_dirs[i]; i++) {
		const char *pair = child_env_cache_dirs[i];
		size_t nl = strv_env_name_len(pair);
		_cleanup_free_ char *name = strndup(pair, nl);
		_cleanup_free_ char *path = NULL;

		if (!name)
			return err_oom(err);
		if (strv_env_get(file_env, name))
			continue;
		if (asprintf(&path, "%.*s/%s", (int)rl, cache_root, pair + nl + 1) < 0) {
			path = NULL;
			return err_oom(err);
		}
		if (env_set_checked(env, name, path, err) < 0)
			return err_ret(err);
	}
	return 0;
}

static bool path_below(const char *dir, size_t len, const char *top)
{
	size_t tl = top ? strlen(top) : 0;

	while (tl > 1 && top[tl - 1] == '/')
		tl--;
	return tl > 1 && len >= tl && strncmp(dir, top, tl) == 0 && (len == tl || dir[tl] == '/');
}

/* An sbin folder: the system administrator's tools, on root's PATH only. */
static bool path_is_sbin(const char *dir, size_t len)
{
	return (len >= 5 && memcmp(dir + len - 5, "/sbin", 5) == 0) ||
	       (len >= 6 && memcmp(dir + len - 6, "/sbin/", 6) == 0);
}

int child_env_path_for_user(const char *path, const char *caller_home, char **ret)
{
	_cleanup_free_ char *out = malloc((path ? strlen(path) : 0) + 1);
	size_t n = 0;

	if (!out)
		return -ENOMEM;
	for (const char *s = path ? path : ""; *s;) {
		const char *colon = strchr(s, ':');
		size_t len = colon ? (size_t)(colon - s) : strlen(s);

		/* Relative and empty entries (the working directory), the caller's and root's
		 * own folders, and sbin are not the run user's. */
		if (len > 0 && s[0] == '/' && !path_below(s, len, caller_home) &&
		    !path_below(s, len, "/root") && !path_is_sbin(s, len)) {
			if (n)
				out[n++] = ':';
			memcpy(out + n, s, len);
			n += len;
		}
		s += len + (colon ? 1 : 0);
	}
	out[n] = '\0';
	if (n == 0) {
		free(out);
		out = strdup(CHILD_ENV_USER_PATH);
		if (!out)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(out);
	return 0;
}

int child_env_build(const struct child_env_request *req, char ***ret_env, struct err *err)
{
	_cleanup_strv_ char **env = calloc(1, sizeof(char *));

	if (!env)
		return err_oom_at(err, "building the environment");
	if (env_filter_caller(&env, req->caller_env, req->pass_env, err) < 0)
		return err_ret(err);
	for (size_t i = 0; req->db_env && req->db_env[i]; i++)
		if (env_set_entry(&env, req->db_env[i], "PORT", "the database environment", err) <
		    0)
			return err_ret(err);
	/* The file may set anything (RAILS_ENV, DATABASE_URL, ...) except PORT. */
	for (size_t i = 0; req->file_env && req->file_env[i]; i++)
		if (env_set_entry(&env, req->file_env[i], "PORT", "the file's env", err) < 0)
			return err_ret(err);
	if (req->secret_key_base && !strv_env_get(req->file_env, "SECRET_KEY_BASE"))
		if (env_set_checked(&env, "SECRET_KEY_BASE", req->secret_key_base, err) < 0)
			return err_ret(err);
	if (req->cache_root && env_set_caches(&env, req->cache_root, req->file_env, err) < 0)
		return err_ret(err);
	/* The run user's identity is the engine's to say, and so is its PATH (unless the
	 * file sets one). */
	if (req->home && !strv_env_get(req->file_env, "PATH")) {
		_cleanup_free_ char *path = NULL;
		if (child_env_path_for_user(strv_env_get(env, "PATH"),
		                            strv_env_get(req->caller_env, "HOME"), &path) < 0)
			return err_oom_at(err, "building the environment");
		if (env_set_checked(&env, "PATH", path, err) < 0)
			return err_ret(err);
	}
	if (req->home && env_set_checked(&env, "HOME", req->home, err) < 0)
		return err_ret(err);
	if (req->user && (env_set_checked(&env, "USER", req->user, err) < 0 ||
	                  env_set_checked(&env, "LOGNAME", req->user, err) < 0))
		return err_ret(err);
	/* The proxy is the only way out (egress_config.h): neither caller nor file may bypass. */
	if (req->egress_proxy && egress_config_proxy_env(&env, req->egress_proxy) < 0)
		return err_oom_at(err, "building the environment");
	/* Last, so neither the caller nor the file can point them elsewhere. */
	if (req->manifest_path) {
		if (env_set_checked(&env, "ACTION_AGENT_SANDBOX_MANIFEST", req->manifest_path,
		                    err) < 0)
			return err_ret(err);
	} else {
		strv_env_unset(env, "ACTION_AGENT_SANDBOX_MANIFEST");
	}
	if (req->session_id) {
		if (env_set_checked(&env, "ACTION_AGENT_SANDBOX_SESSION_ID", req->session_id, err) <
		    0)
			return err_ret(err);
	} else {
		strv_env_unset(env, "ACTION_AGENT_SANDBOX_SESSION_ID");
	}
	strv_env_unset(env, "PORT");
	*ret_env = TAKE_PTR(env);
	return 0;
}

int child_env_with_port(char *const *env, unsigned port, char ***ret_env, struct err *err)
{
	_cleanup_strv_ char **copy = NULL;
	char buf[16];

	if (port == 0 || port > 65535)
		return err_set(err, ERR_REFUSED, EINVAL, "port %u is not a TCP port", port);
	copy = env ? strv_copy(env) : calloc(1, sizeof(char *));
	if (!copy)
		return err_oom_at(err, "building the environment");
	snprintf(buf, sizeof(buf), "%u", port);
	if (env_set_checked(&copy, "PORT", buf, err) < 0)
		return err_ret(err);
	*ret_env = TAKE_PTR(copy);
	return 0;
}

#define SECRET_KEY_BASE_BYTES 64
#define SECRET_KEY_BASE_HEX (SECRET_KEY_BASE_BYTES * 2)

struct key_material {
	unsigned char raw[SECRET_KEY_BASE_BYTES];
	char hex[SECRET_KEY_BASE_HEX + 2];
};

static void key_material_wipe(struct key_material *k)
{
	sodium_memzero(k, sizeof(*k));
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

/* Returns 0 and fills k->hex, 1 when the file does not exist, or an error. */
static int secret_key_base_read(const char *path, struct key_material *k, struct err *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t len = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		if (errno == ELOOP)
			return err_set(err, ERR_REFUSED, ELOOP,
			               "SECRET_KEY_BASE file %s is a symbolic link; remove it",
			               path);
		return err_errno(err, "cannot open the SECRET_KEY_BASE file %s", path);
	}
	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat the SECRET_KEY_BASE file %s", path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "SECRET_KEY_BASE file %s is not a regular file; remove it", path);
	if ((st.st_mode & 07777) != 0600 || st.st_uid != geteuid())
		return err_set(err, ERR_REFUSED, EPERM,
		               "SECRET_KEY_BASE file %s has mode %04o and owner %u, expected 0600 "
		               "and %u; remove it to have a new one made",
		               path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
		               (unsigned)geteuid());
	while (len < sizeof(k->hex) - 1) {
		ssize_t n = read(fd, k->hex + len, sizeof(k->hex) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(err, "cannot read the SECRET_KEY_BASE file %s", path);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len != SECRET_KEY_BASE_HEX || !all_hex(k->hex, len))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "SECRET_KEY_BASE file %s does not hold %d hex characters; remove it "
		               "to have a new one made",
		               path, SECRET_KEY_BASE_HEX);
	k->hex[len] = '\0';
	return 0;
}

/*
 * Create the file without ever replacing one: write a temporary file beside it, then link()
 * it into place, which fails with EEXIST when another boot got there first (then that one is
 * read). Returns 0, 1 when the file appeared meanwhile, or an error.
 */
static int secret_key_base_create(const char *path, struct key_material *k, struct err *err)
{
	char tmp[PATH_MAX];
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dfd = -1;
	const char *slash;
	int r = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return err_set(err, ERR_FAILED, ENAMETOOLONG, "path too long: %s", path);
	randombytes_buf(k->raw, sizeof(k->raw));
	sodium_bin2hex(k->hex, sizeof(k->hex), k->raw, sizeof(k->raw));
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "cannot create the SECRET_KEY_BASE file beside %s", path);
	if (fchmod(fd, 0600) < 0)
		r = -errno;
	if (r == 0)
		r = file_write_all(fd, k->hex, SECRET_KEY_BASE_HEX);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && link(tmp, path) < 0)
		r = -errno;
	unlink(tmp);
	if (r == -EEXIST)
		return 1;
	if (r < 0) {
		errno = -r;
		if (r == -ENOSPC || r == -EDQUOT)
			return err_errno(err, "disk full writing the SECRET_KEY_BASE file %s",
			                 path);
		return err_errno(err, "cannot write the SECRET_KEY_BASE file %s", path);
	}
	slash = strrchr(path, '/');
	dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (dir) {
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0)
			(void)fsync(dfd);
	}
	return 0;
}

int child_env_secret_key_base_load(const char *path, char ret[129], struct err *err)
{
	_cleanup_(key_material_wipe) struct key_material k = {0};
	int r;

	if (sodium_init() < 0)
		return err_set(err, ERR_FAILED, 0, "libsodium cannot be initialized");
	/* Two rounds: a concurrent boot may create the file between our read and our link. */
	for (int attempt = 0; attempt < 2; attempt++) {
		r = secret_key_base_read(path, &k, err);
		if (r < 0)
			return r;
		if (r == 0) {
			memcpy(ret, k.hex, SECRET_KEY_BASE_HEX + 1);
			return 0;
		}
		r = secret_key_base_create(path, &k, err);
		if (r < 0)
			return r;
		if (r == 0) {
			memcpy(ret, k.hex, SECRET_KEY_BASE_HEX + 1);
			return 0;
		}
	}
	return err_set(err, ERR_FAILED, EEXIST, "the SECRET_KEY_BASE file %s keeps changing", path);
}

void child_env_session_id_generate(char ret[33])
{
	unsigned char raw[16];

	/* sodium_init() failing leaves randombytes on its default source, which still works. */
	if (sodium_init() < 0)
		log_debug("libsodium cannot be initialized; using its default random source");
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(ret, 33, raw, sizeof(raw));
	sodium_memzero(raw, sizeof(raw));
}
