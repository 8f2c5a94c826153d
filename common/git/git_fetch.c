/* SPDX-License-Identifier: Apache-2.0 */
#include "git_fetch.h"

#include <ctype.h>
#include <errno.h>
#include <git2/sys/alloc.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define AUTH_PREFIX "Authorization: Basic "
#define URL_MAX 4096

/*
 * libgit2's allocator with one change: every block is wiped before it goes back to malloc, so
 * the copies libgit2 makes of the Authorization header (the connect options, each HTTP request
 * buffer) do not linger in freed heap. Sizes come from malloc_usable_size(), so blocks that
 * libgit2 allocated before this allocator was installed are handled alike.
 */
static void wipe_block(void *ptr)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t n = ptr ? malloc_usable_size(ptr) : 0;
	uintptr_t in = ((uintptr_t)ptr + page - 1) & ~(page - 1);
	uintptr_t end = ((uintptr_t)ptr + n) & ~(page - 1);

	/*
	 * A large block's whole pages are given back instead of zeroed (MADV_DONTNEED: they read
	 * as zeros from then on), so pages it never touched are not faulted in to be zeroed; the
	 * kernel has them, as it has a block of 128 KiB or more that glibc's free() unmaps. The
	 * partial pages at its ends are zeroed.
	 */
	if (n >= 8 * page && madvise((void *)in, end - in, MADV_DONTNEED) == 0) {
		sodium_memzero((void *)end, (uintptr_t)ptr + n - end);
		n = in - (uintptr_t)ptr;
	}
	sodium_memzero(ptr, n);
}

static void *wipe_malloc(size_t n, const char *file, int line)
{
	void *p = malloc(n);

	if (!p)
		git_error_set_oom();
	return p;
}

static void *wipe_calloc(size_t nelem, size_t elsize, const char *file, int line)
{
	void *p = calloc(nelem, elsize);

	if (!p)
		git_error_set_oom();
	return p;
}

static char *wipe_substrdup(const char *str, size_t n, const char *file, int line)
{
	char *p;

	if (n == SIZE_MAX) {
		git_error_set_oom();
		return NULL;
	}
	p = wipe_malloc(n + 1, file, line);
	if (!p)
		return NULL;
	memcpy(p, str, n);
	p[n] = '\0';
	return p;
}

static char *wipe_strdup(const char *str, const char *file, int line)
{
	return wipe_substrdup(str, strlen(str), file, line);
}

static char *wipe_strndup(const char *str, size_t n, const char *file, int line)
{
	return wipe_substrdup(str, strnlen(str, n), file, line);
}

static void *wipe_realloc(void *ptr, size_t size, const char *file, int line)
{
	size_t old;
	void *p;

	if (!ptr)
		return wipe_malloc(size, file, line);
	/* Always move, so the old block can be wiped; never shrink in place. */
	p = wipe_malloc(size ? size : 1, file, line);
	if (!p)
		return NULL;
	old = malloc_usable_size(ptr);
	memcpy(p, ptr, old < size ? old : size);
	wipe_block(ptr);
	free(ptr);
	return p;
}

static void *wipe_reallocarray(void *ptr, size_t nelem, size_t elsize, const char *file, int line)
{
	size_t n;

	if (__builtin_mul_overflow(nelem, elsize, &n)) {
		git_error_set_oom();
		return NULL;
	}
	return wipe_realloc(ptr, n, file, line);
}

static void *wipe_mallocarray(size_t nelem, size_t elsize, const char *file, int line)
{
	return wipe_reallocarray(NULL, nelem, elsize, file, line);
}

static void wipe_free(void *ptr)
{
	wipe_block(ptr);
	free(ptr);
}

static git_allocator wipe_allocator = {
    .gmalloc = wipe_malloc,
    .gcalloc = wipe_calloc,
    .gstrdup = wipe_strdup,
    .gstrndup = wipe_strndup,
    .gsubstrdup = wipe_substrdup,
    .grealloc = wipe_realloc,
    .greallocarray = wipe_reallocarray,
    .gmallocarray = wipe_mallocarray,
    .gfree = wipe_free,
};

static int lg2_err(struct err *err, int rc, const char *what)
{
	const git_error *e = git_error_last();
	const char *msg = e && e->message ? e->message : "unknown libgit2 error";
	int cls = ERR_FAILED, code = EIO;

	if (rc == GIT_EAUTH) {
		cls = ERR_REFUSED;
		code = EACCES;
	} else if (rc == GIT_ENOTFOUND) {
		code = ENOENT;
	} else if (rc == GIT_EEXISTS) {
		code = EEXIST;
	}
	return err_set(err, cls, code, "%s: %s", what, msg);
}

int git_fetch_err(struct err *err, int rc, const char *what)
{
	return lg2_err(err, rc, what);
}

int git_fetch_global_init(const struct git_fetch_global_opts *opts, struct err *err)
{
	static const int levels[] = {GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG,
	                             GIT_CONFIG_LEVEL_GLOBAL, GIT_CONFIG_LEVEL_PROGRAMDATA};
	struct git_fetch_global_opts none = {0};
	int rc;

	if (!opts)
		opts = &none;
	if (sodium_init() < 0)
		return err_set(err, ERR_FAILED, 0, "libsodium could not be initialized");
	if (!opts->no_wipe_allocator) {
		rc = git_libgit2_opts(GIT_OPT_SET_ALLOCATOR, &wipe_allocator);
		if (rc < 0)
			return lg2_err(err, rc, "installing libgit2's allocator");
	}
	rc = git_libgit2_init();
	if (rc < 0)
		return lg2_err(err, rc, "initializing libgit2");
#ifdef SA_CA_BUNDLE
	/*
	 * The system's bundle, as libgit2's own default would be: missing or unreadable, no CA
	 * (HTTPS then fails to verify, and says so), never an error here.
	 */
	if (!opts->ca_file && !opts->ca_dir && !opts->local_only &&
	    access(SA_CA_BUNDLE, R_OK) == 0 &&
	    git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, SA_CA_BUNDLE, NULL) < 0)
		log_warn("cannot load the CA certificates of %s: HTTPS will not verify",
		         SA_CA_BUNDLE);
#endif
	if (opts->ca_file || opts->ca_dir) {
		rc = git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, opts->ca_file, opts->ca_dir);
		if (rc < 0) {
			lg2_err(err, rc, "loading CA certificates");
			err_wrap(err, "setting the CA locations (%s, %s)",
			         opts->ca_file ? opts->ca_file : "-",
			         opts->ca_dir ? opts->ca_dir : "-");
			goto fail;
		}
	}
	if (!opts->user_config) {
		for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
			rc = git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, levels[i], "");
			if (rc < 0) {
				lg2_err(err, rc, "clearing libgit2's config search path");
				goto fail;
			}
		}
	}
	return 0;
fail:
	/* Nothing to pair with a shutdown on failure. */
	git_libgit2_shutdown();
	return err_ret(err);
}

void git_fetch_global_shutdown(void)
{
	git_libgit2_shutdown();
}

static bool is_loopback_host(const char *host, size_t len)
{
	if (len == 9 && strncasecmp(host, "localhost", 9) == 0)
		return true;
	if (len == 5 && memcmp(host, "[::1]", 5) == 0)
		return true;
	if (len >= 4 && memcmp(host, "127.", 4) == 0) {
		for (size_t i = 4; i < len; i++)
			if (!isdigit((unsigned char)host[i]) && host[i] != '.')
				return false;
		return true;
	}
	return false;
}

int git_fetch_url_check(const char *url, bool with_token, struct err *err)
{
	const char *auth, *end, *host_end;
	bool https;

	if (!url || !*url)
		return err_set(err, ERR_REFUSED, EINVAL, "the clone URL is empty");
	if (strlen(url) > URL_MAX)
		return err_set(err, ERR_REFUSED, EINVAL, "the clone URL is longer than %d bytes",
		               URL_MAX);
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "the clone URL contains a space or a control character");

	if (url[0] == '/' || strncmp(url, "file://", 7) == 0) {
		if (with_token)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "a token is only sent over https (or http to a loopback "
			               "address), not to %s",
			               url);
		return 0;
	}
	if (strncmp(url, "https://", 8) == 0) {
		https = true;
		auth = url + 8;
	} else if (strncmp(url, "http://", 7) == 0) {
		https = false;
		auth = url + 7;
	} else {
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the clone URL must start with https:// (is %.40s...)", url);
	}
	end = auth + strcspn(auth, "/?#");
	if (memchr(auth, '@', end - auth))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the clone URL carries credentials (user@ or user:token@ before the "
		               "host): pass them as username and token instead");
	if (end == auth)
		return err_set(err, ERR_REFUSED, EINVAL, "the clone URL has no host");
	if (*auth == '[') {
		host_end = memchr(auth, ']', end - auth);
		if (!host_end)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "the clone URL's host is malformed");
		host_end++;
	} else {
		host_end = memchr(auth, ':', end - auth);
		if (!host_end)
			host_end = end;
	}
	if (!https && with_token && !is_loopback_host(auth, host_end - auth))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "a token is only sent over https (or http to a loopback address), "
		               "not to %s",
		               url);
	return 0;
}

static bool is_commit_id(const char *s)
{
	size_t n = strspn(s, "0123456789abcdefABCDEF");

	return n == GIT_OID_HEXSZ && s[n] == '\0';
}

static bool is_default_ref(const char *ref)
{
	return !ref || !*ref || strcmp(ref, "HEAD") == 0;
}

int git_fetch_ref_check(const char *ref, struct err *err)
{
	char full[GIT_FETCH_REF_MAX];
	int valid = 0;

	if (is_default_ref(ref) || is_commit_id(ref))
		return 0;
	if (strlen(ref) >= GIT_FETCH_REF_MAX - 16)
		return err_set(err, ERR_REFUSED, EINVAL, "the ref is longer than %d bytes",
		               GIT_FETCH_REF_MAX - 16);
	if (ref[0] == '-' || ref[0] == '+' || strpbrk(ref, ":*"))
		return err_set(err, ERR_REFUSED, EINVAL, "'%s' is not a valid ref name", ref);
	if (strncmp(ref, "refs/", 5) == 0)
		snprintf(full, sizeof(full), "%s", ref);
	else
		snprintf(full, sizeof(full), "refs/heads/%s", ref);
	/* libgit2 records a refusal through its allocator: set up for the check. */
	if (git_libgit2_init() < 0)
		return err_set(err, ERR_FAILED, EIO, "initializing libgit2 to check a ref name");
	int rc = git_reference_name_is_valid(&valid, full);
	git_libgit2_shutdown();
	if (rc < 0 || !valid)
		return err_set(err, ERR_REFUSED, EINVAL, "'%s' is not a valid ref name", ref);
	return 0;
}

int git_fetch_oid_parse(git_oid *out, const char *hex)
{
	return hex && is_commit_id(hex) && git_oid_fromstr(out, hex) == 0 ? 0 : -1;
}

int git_fetch_repo_init(const char *dir, bool bare, git_repository **ret_repo, struct err *err)
{
	git_repository_init_options o;
	_cleanup_git_repository_ git_repository *repo = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int rc;

	d = opendir(dir);
	if (!d)
		return err_errno(err, "opening %s for a new repository", dir);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			return err_set(err, ERR_FAILED, ENOTEMPTY,
			               "%s is not empty: a fetch needs a fresh repository", dir);

	rc = git_repository_init_options_init(&o, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
	if (rc < 0)
		return lg2_err(err, rc, "initializing libgit2 options");
	/* No MKPATH, no external template: only what libgit2 itself writes. */
	o.flags = GIT_REPOSITORY_INIT_NO_REINIT | (bare ? GIT_REPOSITORY_INIT_BARE : 0);
	o.mode = GIT_REPOSITORY_INIT_SHARED_UMASK;
	o.initial_head = "main";
	rc = git_repository_init_ext(&repo, dir, &o);
	if (rc < 0) {
		lg2_err(err, rc, "libgit2");
		return err_wrap(err, "creating a repository in %s", dir);
	}
	*ret_repo = TAKE_PTR(repo);
	return 0;
}

/*
 * The credential: "Authorization: Basic base64(user:token)" in guarded memory, plus what
 * error messages must never show.
 */
struct fetch_auth {
	char *header;    /* sodium_malloc, NUL-terminated; NULL when no token */
	const char *b64; /* inside header */
	const char *token;
	size_t token_len;
	char *strings[1];
	git_strarray headers;
};

static void fetch_auth_dispose(struct fetch_auth *a)
{
	if (a->header)
		sodium_free(a->header);
	a->header = NULL;
	a->b64 = NULL;
	a->strings[0] = NULL;
}

int git_fetch_auth_header(const char *user, const char *token, size_t token_len, char **ret,
                          struct err *err)
{
	size_t ulen = strlen(user), plain_len, b64_len, hlen;
	char *plain, *header;

	if (!token)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the token length is set but not the token");
	if (!ulen || strpbrk(user, ":\r\n"))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the username is empty or contains ':' or a line break");
	if (memchr(token, '\0', token_len) || memchr(token, '\n', token_len) ||
	    memchr(token, '\r', token_len))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the token contains a NUL byte or a line break");
	if (token_len > 64 * 1024 || ulen > 1024)
		return err_set(err, ERR_REFUSED, EINVAL, "the token or username is too long");

	plain_len = ulen + 1 + token_len;
	plain = sodium_malloc(plain_len);
	if (!plain)
		return err_set(err, ERR_FAILED, ENOMEM, "allocating guarded memory for the token");
	memcpy(plain, user, ulen);
	plain[ulen] = ':';
	memcpy(plain + ulen + 1, token, token_len);

	b64_len = sodium_base64_ENCODED_LEN(plain_len, sodium_base64_VARIANT_ORIGINAL);
	hlen = strlen(AUTH_PREFIX) + b64_len;
	header = sodium_malloc(hlen);
	if (!header) {
		sodium_free(plain);
		return err_set(err, ERR_FAILED, ENOMEM, "allocating guarded memory for the token");
	}
	memcpy(header, AUTH_PREFIX, strlen(AUTH_PREFIX));
	sodium_bin2base64(header + strlen(AUTH_PREFIX), b64_len, (const unsigned char *)plain,
	                  plain_len, sodium_base64_VARIANT_ORIGINAL);
	sodium_free(plain);
	*ret = header;
	return 0;
}

static int fetch_auth_build(const struct git_fetch_spec *spec, struct fetch_auth *a,
                            struct err *err)
{
	memset(a, 0, sizeof(*a));
	a->token = spec->token;
	a->token_len = spec->token_len;
	if (!spec->token_len)
		return 0;
	if (git_fetch_auth_header(spec->username ? spec->username : GIT_FETCH_DEFAULT_USER,
	                          spec->token, spec->token_len, &a->header, err) < 0)
		return err_ret(err);
	a->b64 = a->header + strlen(AUTH_PREFIX);
	a->strings[0] = a->header;
	a->headers.strings = a->strings;
	a->headers.count = 1;
	return 0;
}

/* Drop a message that shows the credential; libgit2 quotes a malformed header verbatim. */
static void redact(struct err *err, const struct fetch_auth *a)
{
	if (!a->token_len)
		return;
	if (memmem(err->msg, strlen(err->msg), a->token, a->token_len) ||
	    (a->b64 && strstr(err->msg, a->b64)))
		err_reword(err,
		           "libgit2 failed with a message that quoted the credential (withheld)");
}

/* Word a failure to reach or list the remote; the cause goes last. */
static int connect_err(struct err *err, int rc, const char *url, const char *user,
                       const struct fetch_auth *a)
{
	const git_error *e = git_error_last();
	const char *msg = e && e->message ? e->message : "";

	if (rc == GIT_EAUTH || strstr(msg, "status code: 401"))
		return err_set(
		    err, ERR_REFUSED, EACCES,
		    "authentication failed for %s: %s (check that the token is valid and "
		    "may read the repository)",
		    url,
		    a->token_len ? "the server refused the token"
		                 : "the server requires a token and none was given");
	if (strstr(msg, "status code: 403"))
		return err_set(err, ERR_REFUSED, EACCES,
		               "access to %s was refused (HTTP 403): the token may not read the "
		               "repository",
		               url);
	if (strstr(msg, "status code: 404"))
		return err_set(err, ERR_REFUSED, ENOENT,
		               "repository %s not found (HTTP 404), or the token may not read it",
		               url);
	lg2_err(err, rc, "libgit2");
	redact(err, a);
	return err_wrap(err, "connecting to %s as %s", url, user);
}

struct resolved {
	int kind;
	bool fetch_all;
	bool want_commit; /* the caller asked for a commit id */
	git_oid want;
	char remote_ref[GIT_FETCH_REF_MAX];
	char local_ref[GIT_FETCH_REF_MAX];
};

static const git_remote_head *find_head(const git_remote_head **heads, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(heads[i]->name, name) == 0)
			return heads[i];
	return NULL;
}

static int set_ref(struct resolved *r, const char *remote_ref, struct err *err)
{
	int n;

	if (strncmp(remote_ref, "refs/heads/", 11) == 0) {
		r->kind = GIT_FETCH_BRANCH;
		n = snprintf(r->local_ref, sizeof(r->local_ref), "refs/remotes/origin/%s",
		             remote_ref + 11);
	} else {
		/* Tags and other refs (refs/pull/1/head) keep their own name. */
		r->kind =
		    strncmp(remote_ref, "refs/tags/", 10) == 0 ? GIT_FETCH_TAG : GIT_FETCH_BRANCH;
		n = snprintf(r->local_ref, sizeof(r->local_ref), "%s", remote_ref);
	}
	if (n < 0 || (size_t)n >= sizeof(r->local_ref) ||
	    strlen(remote_ref) >= sizeof(r->remote_ref))
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "the ref %s is too long",
		               remote_ref);
	snprintf(r->remote_ref, sizeof(r->remote_ref), "%s", remote_ref);
	return 0;
}

/* A commit id: the branch or tag whose tip it is, else every branch and tag. */
static int resolve_commit(const git_remote_head **heads, size_t n, const char *ref,
                          struct resolved *r, struct err *err)
{
	static const char *const prefixes[] = {"refs/heads/", "refs/tags/"};
	char name[GIT_FETCH_REF_MAX];

	if (git_oid_fromstr(&r->want, ref) < 0)
		return err_set(err, ERR_REFUSED, EINVAL, "'%s' is not a commit id", ref);
	r->want_commit = true;
	for (size_t p = 0; p < ELEMENTSOF(prefixes); p++) {
		for (size_t i = 0; i < n; i++) {
			size_t len = strlen(heads[i]->name);

			if (strncmp(heads[i]->name, prefixes[p], strlen(prefixes[p])) != 0 ||
			    !git_oid_equal(&heads[i]->oid, &r->want))
				continue;
			/* "refs/tags/v1^{}" is the commit an annotated tag v1 points to. */
			if (len > 3 && strcmp(heads[i]->name + len - 3, "^{}") == 0) {
				if (len - 3 >= sizeof(name))
					continue;
				memcpy(name, heads[i]->name, len - 3);
				name[len - 3] = '\0';
				return set_ref(r, name, err);
			}
			return set_ref(r, heads[i]->name, err);
		}
	}
	r->kind = GIT_FETCH_COMMIT;
	r->fetch_all = true;
	return 0;
}

static int resolve_ref(const git_remote_head **heads, size_t n, const char *ref, const char *url,
                       struct resolved *r, struct err *err)
{
	char name[GIT_FETCH_REF_MAX];
	const git_remote_head *h;

	memset(r, 0, sizeof(*r));
	if (is_default_ref(ref)) {
		h = find_head(heads, n, "HEAD");
		if (h && h->symref_target && strncmp(h->symref_target, "refs/heads/", 11) == 0 &&
		    find_head(heads, n, h->symref_target))
			return set_ref(r, h->symref_target, err);
		/* No symref advertised: the branch with HEAD's commit. */
		for (size_t i = 0; h && i < n; i++)
			if (strncmp(heads[i]->name, "refs/heads/", 11) == 0 &&
			    git_oid_equal(&heads[i]->oid, &h->oid))
				return set_ref(r, heads[i]->name, err);
		return err_set(err, ERR_REFUSED, ENOENT,
		               "%s has no default branch (HEAD): name a branch, tag or commit",
		               url);
	}
	if (strncmp(ref, "refs/", 5) == 0) {
		if (find_head(heads, n, ref))
			return set_ref(r, ref, err);
		return err_set(err, ERR_REFUSED, ENOENT, "ref '%s' not found at %s", ref, url);
	}
	snprintf(name, sizeof(name), "refs/heads/%s", ref);
	if (find_head(heads, n, name))
		return set_ref(r, name, err);
	snprintf(name, sizeof(name), "refs/tags/%s", ref);
	if (find_head(heads, n, name))
		return set_ref(r, name, err);
	if (is_commit_id(ref))
		return resolve_commit(heads, n, ref, r, err);
	return err_set(err, ERR_REFUSED, ENOENT,
	               "ref '%s' not found at %s: no branch or tag by that name (a commit is "
	               "named by its full 40-digit id)",
	               ref, url);
}

static int on_transfer(const git_indexer_progress *stats, void *payload)
{
	const struct git_fetch_spec *spec = payload;

	if (!spec->progress)
		return 0;
	return spec->progress(spec->userdata, stats->received_objects, stats->total_objects,
	                      stats->received_bytes);
}

/* After the fetch: the tip the local ref points to, peeled to its commit. */
static int read_result(git_repository *repo, const struct resolved *r, const char *url,
                       struct git_fetch_result *res, struct err *err)
{
	_cleanup_git_object_ git_object *tip = NULL;
	_cleanup_git_object_ git_object *commit = NULL;
	git_oid id;
	int rc;

	if (r->fetch_all) {
		rc = git_object_lookup(&commit, repo, &r->want, GIT_OBJECT_COMMIT);
		if (rc < 0)
			return err_set(err, ERR_REFUSED, ENOENT,
			               "commit %s not found at %s: it is in no branch or tag there",
			               git_oid_tostr_s(&r->want), url);
		res->tip = r->want;
		res->commit = r->want;
		return 0;
	}
	rc = git_reference_name_to_id(&id, repo, r->local_ref);
	if (rc < 0) {
		lg2_err(err, rc, "libgit2");
		return err_wrap(err, "reading %s after fetching it from %s", r->local_ref, url);
	}
	rc = git_object_lookup(&tip, repo, &id, GIT_OBJECT_ANY);
	if (rc >= 0)
		rc = git_object_peel(&commit, tip, GIT_OBJECT_COMMIT);
	if (rc < 0)
		return err_set(err, ERR_REFUSED, EINVAL, "%s at %s does not point to a commit",
		               r->remote_ref, url);
	res->tip = id;
	res->commit = *git_object_id(commit);
	if (r->want_commit && !git_oid_equal(&res->commit, &r->want))
		return err_set(err, ERR_FAILED, EAGAIN,
		               "%s at %s moved while fetching: it no longer points to %s",
		               r->remote_ref, url, git_oid_tostr_s(&r->want));
	return 0;
}

void git_fetch_nodelay(void)
{
	static const int one = 1;

	/*
	 * setsockopt() fails on anything but a TCP socket. The kernel hands out the lowest free
	 * descriptor, so libgit2's socket is in the first hole or below: past 64 closed
	 * descriptors in a row there is nothing more of ours.
	 */
	for (int fd = 0, closed = 0; closed < 64; fd++)
		closed = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 &&
		                 errno == EBADF
		             ? closed + 1
		             : 0;
}

int git_fetch_ref(git_repository *repo, const struct git_fetch_spec *spec,
                  struct git_fetch_result *ret, struct err *err)
{
	git_remote_create_options co;
	git_remote_connect_options conn;
	git_fetch_options fo;
	_cleanup_git_remote_ git_remote *remote = NULL;
	const char *user = spec->username ? spec->username : GIT_FETCH_DEFAULT_USER;
	const git_remote_head **heads = NULL;
	const git_indexer_progress *stats;
	struct git_fetch_result res = {0};
	struct fetch_auth auth;
	struct resolved r;
	char spec_buf[2][2 * GIT_FETCH_REF_MAX + 2];
	char *specs[2];
	git_strarray refspecs = {specs, 0};
	size_t n = 0;
	int rc;

	rc = git_fetch_url_check(spec->clone_url, spec->token_len > 0, err);
	if (rc < 0)
		return rc;
	rc = git_fetch_ref_check(spec->ref, err);
	if (rc < 0)
		return rc;
	/* The _init functions, not the macros, which leave fields out (-Wextra). */
	if (git_remote_create_options_init(&co, GIT_REMOTE_CREATE_OPTIONS_VERSION) < 0 ||
	    git_remote_connect_options_init(&conn, GIT_REMOTE_CONNECT_OPTIONS_VERSION) < 0 ||
	    git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION) < 0)
		return lg2_err(err, -1, "initializing libgit2 options");
	rc = fetch_auth_build(spec, &auth, err);
	if (rc < 0)
		return rc;

	/* Anonymous: no name, nothing written to config; no insteadOf rewriting. */
	co.repository = repo;
	co.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	rc = git_remote_create_with_opts(&remote, spec->clone_url, &co);
	if (rc < 0) {
		lg2_err(err, rc, "libgit2");
		err_wrap(err, "setting up the remote %s", spec->clone_url);
		goto out;
	}

	conn.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	conn.proxy_opts.type = GIT_PROXY_NONE;
	conn.custom_headers = auth.headers;
	rc = git_remote_connect_ext(remote, GIT_DIRECTION_FETCH, &conn);
	if (rc < 0) {
		connect_err(err, rc, spec->clone_url, user, &auth);
		goto out;
	}
	rc = git_remote_ls(&heads, &n, remote);
	if (rc < 0) {
		connect_err(err, rc, spec->clone_url, user, &auth);
		goto out;
	}
	rc = resolve_ref(heads, n, spec->ref, spec->clone_url, &r, err);
	if (rc < 0)
		goto out;
	git_fetch_nodelay();

	if (r.fetch_all) {
		specs[0] = "+refs/heads/*:refs/remotes/origin/*";
		specs[1] = "+refs/tags/*:refs/tags/*";
		refspecs.count = 2;
	} else {
		snprintf(spec_buf[0], sizeof(spec_buf[0]), "+%s:%s", r.remote_ref, r.local_ref);
		specs[0] = spec_buf[0];
		refspecs.count = 1;
	}
	log_debug("fetching %s from %s", r.fetch_all ? "all branches and tags" : r.remote_ref,
	          spec->clone_url);

	fo.callbacks.transfer_progress = on_transfer;
	fo.callbacks.payload = (void *)spec;
	fo.update_fetchhead = 0;
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	fo.prune = GIT_FETCH_NO_PRUNE;
	fo.proxy_opts.type = GIT_PROXY_NONE;
	fo.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	fo.custom_headers = auth.headers;
	rc = git_remote_fetch(remote, &refspecs, &fo, NULL);
	if (rc < 0) {
		if (rc == GIT_EUSER) {
			err_set(err, ERR_FAILED, ECANCELED, "fetching %s from %s: cancelled",
			        r.fetch_all ? spec->ref : r.remote_ref, spec->clone_url);
			goto out;
		}
		connect_err(err, rc, spec->clone_url, user, &auth);
		err_wrap(err, "fetching %s", r.fetch_all ? spec->ref : r.remote_ref);
		goto out;
	}

	res.kind = r.kind;
	snprintf(res.remote_ref, sizeof(res.remote_ref), "%s", r.remote_ref);
	snprintf(res.local_ref, sizeof(res.local_ref), "%s", r.local_ref);
	rc = read_result(repo, &r, spec->clone_url, &res, err);
	if (rc < 0)
		goto out;
	stats = git_remote_stats(remote);
	if (stats) {
		res.received_objects = stats->received_objects;
		res.received_bytes = stats->received_bytes;
	}
	*ret = res;
	rc = 0;
out:
	fetch_auth_dispose(&auth);
	return rc < 0 ? err_ret(err) : 0;
}
